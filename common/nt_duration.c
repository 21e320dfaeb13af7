/* SPDX-License-Identifier: MIT */
/* nt_duration.c — see nt_duration.h. */
#include "nt_duration.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The units, by what one counts in seconds; a divisor for ms, so that
 * "200ms" is the double nearest 0.2, as the literal 0.2 of a range is. */
static const struct unit {
	const char *name;
	double mul, div;
	double examples[5];           /* round values of this unit, the likeliest first */
} units[] = {
	{ "ms", 1, 1000, { 100, 250, 500, 50, 10 } },
	{ "s", 1, 1, { 30, 10, 5, 2, 1 } },
	{ "m", 60, 1, { 5, 10, 1, 30, 2 } },
	{ "h", 3600, 1, { 1, 4, 2, 12, 24 } },
};

#define N_UNITS (sizeof(units) / sizeof(units[0]))

int nt_duration_parse(const char *s, double min_s, double max_s, double *ret_s)
{
	const struct unit *u = &units[1];     /* a bare number: seconds */
	size_t n = 0, digits = 0;
	char num[32];
	double v;

	if (!s)
		return -EINVAL;
	for (; isdigit((unsigned char)s[n]); n++)
		digits++;
	if (s[n] == '.')
		for (n++; isdigit((unsigned char)s[n]); n++)
			digits++;
	if (!digits || !isdigit((unsigned char)s[0]))
		return -EINVAL;
	if (s[n]) {
		size_t k = 0;

		for (; k < N_UNITS && strcmp(s + n, units[k].name); k++)
			;
		if (k == N_UNITS)
			return -EINVAL;
		u = &units[k];
	}
	if (n >= sizeof(num))
		return -ERANGE;     /* 32 digits and more: no duration of ours */
	memcpy(num, s, n);
	num[n] = '\0';
	v = strtod(num, NULL) * u->mul / u->div;     /* digits and one '.': strtod takes all of it */
	if (!(v >= min_s && v <= max_s))
		return -ERANGE;
	*ret_s = v;
	return 0;
}

void nt_duration_format(double sec, char *buf, size_t size)
{
	if (sec < 1)
		snprintf(buf, size, "%gms", sec * 1e3);
	else if (sec < 60 || sec != (long long)(sec / 60) * 60.0)
		snprintf(buf, size, "%gs", sec);
	else if (sec < 3600 || sec != (long long)(sec / 3600) * 3600.0)
		snprintf(buf, size, "%gm", sec / 60);
	else
		snprintf(buf, size, "%gh", sec / 3600);
}

/* Append to buf (at *len) the first round value of u within [min_s,
 * max_s], after sep.  Returns whether one was. */
static int add_example(const struct unit *u, double min_s, double max_s, const char *sep, char *buf, size_t size,
		       size_t *len)
{
	for (size_t i = 0; i < sizeof(u->examples) / sizeof(u->examples[0]); i++) {
		char ex[32];
		double v;

		snprintf(ex, sizeof(ex), "%g%s", u->examples[i], u->name);
		if (nt_duration_parse(ex, min_s, max_s, &v) == 0 && *len < size) {
			*len += (size_t)snprintf(buf + *len, size - *len, "%s%s", sep, ex);
			return 1;
		}
	}
	return 0;
}

void nt_duration_expected(double min_s, double max_s, char *buf, size_t size)
{
	char lo[32], hi[32];
	size_t len;
	int n = 0;

	nt_duration_format(min_s, lo, sizeof(lo));
	nt_duration_format(max_s, hi, sizeof(hi));
	len = (size_t)snprintf(buf, size, "a duration from %s to %s (e.g. ", lo, hi);
	for (size_t k = 0; k < N_UNITS && n < 3; k++)
		n += add_example(&units[k], min_s, max_s, n ? ", " : "", buf, size, &len);
	if (!n && len < size)
		len += (size_t)snprintf(buf + len, size - len, "%s", lo);
	if (len < size)
		snprintf(buf + len, size - len, "; a bare number counts seconds)");
}
