/* SPDX-License-Identifier: MIT */
/* cpulist.c — see cpulist.h. */
#include "base/cpulist.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int parse_index(const char **pp, unsigned *ret)
{
	const char *p = *pp;
	unsigned long v = 0;

	if (!isdigit((unsigned char)*p))
		return -EINVAL;
	while (isdigit((unsigned char)*p)) {
		v = v * 10 + (unsigned long)(*p - '0');
		if (v > CPULIST_MAX)
			return -EINVAL;
		p++;
	}
	*pp = p;
	*ret = (unsigned)v;
	return 0;
}

int cpulist_parse(const char *s, hwloc_bitmap_t set)
{
	hwloc_bitmap_t tmp;
	const char *p = s;
	size_t len = strlen(s);
	int err = -EINVAL;

	tmp = hwloc_bitmap_alloc();
	if (!tmp)
		return -ENOMEM;
	if (len && s[len - 1] == '\n')
		len--;
	while ((size_t)(p - s) < len) {
		unsigned lo, hi;

		if (parse_index(&p, &lo) < 0)
			goto out_free;
		hi = lo;
		if (*p == '-') {
			p++;
			if (parse_index(&p, &hi) < 0 || hi < lo)
				goto out_free;
		}
		hwloc_bitmap_set_range(tmp, lo, (int)hi);
		if ((size_t)(p - s) == len)
			break;
		if (*p != ',' || (size_t)(p + 1 - s) == len)
			goto out_free;
		p++;
	}
	hwloc_bitmap_copy(set, tmp);
	err = 0;
out_free:
	hwloc_bitmap_free(tmp);
	return err;
}

int cpulist_format(hwloc_const_bitmap_t set, char *buf, size_t size)
{
	int n;

	if (size == 0)
		return -ENOSPC;
	buf[0] = '\0';
	if (hwloc_bitmap_weight(set) < 0)
		return -EINVAL;
	if (hwloc_bitmap_iszero(set))
		return 0;
	n = hwloc_bitmap_list_snprintf(buf, size, set);
	if (n < 0)
		return -EINVAL;
	return (size_t)n >= size ? -ENOSPC : 0;
}

char *cpulist_format_alloc(hwloc_const_bitmap_t set)
{
	char *s = NULL;

	if (hwloc_bitmap_weight(set) < 0)
		return NULL;
	if (hwloc_bitmap_iszero(set))
		return strdup("");
	if (hwloc_bitmap_list_asprintf(&s, set) < 0)
		return NULL;
	return s;
}
