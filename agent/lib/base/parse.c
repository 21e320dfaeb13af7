/* SPDX-License-Identifier: MIT */
/* parse.c — see parse.h. */
#include "base/parse.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

int parse_u64(const char *s, uint64_t max, uint64_t *ret)
{
	unsigned long long v;
	char *end;

	if (!s || !isdigit((unsigned char)s[0]))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (*end != '\0')
		return -EINVAL;
	if (errno == ERANGE || v > max)
		return -ERANGE;
	*ret = v;
	return 0;
}

int parse_int(const char *s, int min, int max, int *ret)
{
	long v;
	char *end;

	if (!s || !(isdigit((unsigned char)s[0]) ||
		    (s[0] == '-' && isdigit((unsigned char)s[1]))))
		return -EINVAL;
	errno = 0;
	v = strtol(s, &end, 10);
	if (*end != '\0')
		return -EINVAL;
	if (errno == ERANGE || v < min || v > max)
		return -ERANGE;
	*ret = (int)v;
	return 0;
}

int parse_duration(const char *s, double bare_unit_s, double min_s, double max_s, double *ret_s)
{
	static const struct { const char *name; double s; } units[] = {
		{ "ms", 1e-3 }, { "s", 1 }, { "m", 60 }, { "h", 3600 },
	};
	size_t n = 0, digits = 0;
	double unit = bare_unit_s, v;
	char num[32];

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

		for (; k < sizeof(units) / sizeof(units[0]) && strcmp(s + n, units[k].name); k++)
			;
		if (k == sizeof(units) / sizeof(units[0]))
			return -EINVAL;
		unit = units[k].s;
	}
	if (n >= sizeof(num))
		return -ERANGE;     /* 32 digits and more: no duration of ours */
	memcpy(num, s, n);
	num[n] = '\0';
	v = strtod(num, NULL) * unit;     /* digits and one '.': strtod takes all of it */
	if (!(v >= min_s && v <= max_s))
		return -ERANGE;
	*ret_s = v;
	return 0;
}
