/* SPDX-License-Identifier: MIT */
/* fuzz_limits.c — libFuzzer target: site limits (limits.h) over arbitrary
 * bytes, then a fixed policy checked against what parsed.  Every limit
 * set is on a key with a direction, lies in its row's range (a number; the
 * share in 0..100) or allows some of its row's values and no others (a
 * choice), and names a line; a refusal is a negative errno with a one-line
 * message; a check returns 0 or -EPERM with one. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "tune/limits.h"
#include "tune/limits_test.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int has_ctrl(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20)
			return 1;
	return 0;
}

static const char policy_text[] = "[sysctl]\nvm.min_free_kbytes = 2097152\nvm.swappiness = 10\n"
				  "[hugetlb]\npages_2m = 1024\npages_1g = 4\n[sched]\nnice = -5\n[thp]\nenabled = always\n";

/* Is the limit l set on row k one limits_parse_buffer may produce? */
static int limit_ok(unsigned k, const struct limit *l)
{
	const struct knob *row = &knob_table[k];
	uint64_t all = 0;

	if (l->line < 1)
		return 0;
	switch (limits_direction((enum knob_id)k)) {
	case LIMIT_CEILING:
	case LIMIT_FLOOR:
		return row->type == KT_INT && l->bound >= row->min && l->bound <= row->max;
	case LIMIT_ALLOWED:
		for (int i = 0; row->values[i] && i < 64; i++)
			all |= 1ull << i;
		return row->type == KT_ENUM && l->allowed && !(l->allowed & ~all);
	default:
		return 0;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct policy *p;
	struct topo_numa node = { .os_index = 0, .memory_bytes = 64ull << 30 };
	struct topo t = { .numa = &node, .n_numa = 1 };
	struct nt_err err = { 0 };
	struct limits *l;
	int rc;

	if (!p)
		p = policy_parse_buffer(policy_text, sizeof(policy_text) - 1, "p.conf", NULL);
	l = limits_parse_buffer((const char *)data, size, "limits.conf", &err);
	if (!l) {
		if (err.code >= 0 || has_ctrl(err.msg))
			__builtin_trap();
		return 0;
	}
	for (unsigned k = 0; k < KNOB_COUNT; k++)
		if (l->knob[k].set && !limit_ok(k, &l->knob[k]))
			__builtin_trap();
	if (l->hugetlb_share.set && (l->hugetlb_share.bound < 0 || l->hugetlb_share.bound > 100))
		__builtin_trap();
	if (p) {
		rc = limits_check(l, p, &t, &err);
		if (rc != 0 && (rc != -EPERM || has_ctrl(err.msg)))
			__builtin_trap();
	}
	limits_free(l);
	return 0;
}
