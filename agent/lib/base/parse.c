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

int parse_double(const char *s, double min, double max, double *ret)
{
	char *end;
	double v;

	if (!s || !(s[0] == '.' || s[0] == '-' || s[0] == '+' || isdigit((unsigned char)s[0])))
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (end == s || *end != '\0')
		return -EINVAL;
	if (errno == ERANGE || !(v >= min && v <= max))
		return -ERANGE;
	*ret = v;
	return 0;
}
