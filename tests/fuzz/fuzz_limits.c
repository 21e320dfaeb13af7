/* fuzz_limits.c — libFuzzer target: site limits (limits.h) over arbitrary
 * bytes, then a fixed policy checked against what parsed.  Every limit
 * set lies in its row's range (the share in 0..100) and names a line; a
 * refusal is a negative errno with a one-line message; a check returns 0
 * or -EPERM with one. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "tune/limits.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int has_ctrl(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20)
			return 1;
	return 0;
}

static const char policy_text[] = "[sysctl]\nvm.min_free_kbytes = 2097152\nvm.swappiness = 10\n"
				  "[hugetlb]\npages_2m = 1024\npages_1g = 4\n[sched]\nnice = -5\n";

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
		if (l->knob[k].set && (knob_table[k].type != KT_INT || l->knob[k].max < knob_table[k].min ||
				       l->knob[k].max > knob_table[k].max || l->knob[k].line < 1))
			__builtin_trap();
	if (l->hugetlb_share.set && (l->hugetlb_share.max < 0 || l->hugetlb_share.max > 100))
		__builtin_trap();
	if (p) {
		rc = limits_check(l, p, &t, &err);
		if (rc != 0 && (rc != -EPERM || has_ctrl(err.msg)))
			__builtin_trap();
	}
	limits_free(l);
	return 0;
}
