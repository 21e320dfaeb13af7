/* SPDX-License-Identifier: MIT */
/* fuzz_gates.c — libFuzzer target: a gate file (gates.h) over arbitrary
 * bytes.  A parse that succeeds holds an absolute command, argc entries
 * then NULL, arguments without control characters, a valid user name and
 * a budget in range; a refusal is a negative errno with a one-line
 * message. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "fleet/gates.h"
#include "fleet/gates_test.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int has_ctrl(const char *s)
{
	for (; *s; s++)
		if (((unsigned char)*s < 0x20 && *s != '\t') || *s == 0x7f)
			return 1;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct nt_err err = { 0 };
	struct gate g;
	int rc = gates_parse((const char *)data, size, "g.conf", &g, &err);

	if (rc < 0) {
		if (err.code != rc || has_ctrl(err.msg))
			__builtin_trap();
		return 0;
	}
	if (g.argc < 1 || g.argc > GATE_ARGS_MAX || g.argv[0][0] != '/' || g.argv[g.argc] ||
	    !(g.budget_s >= 1 && g.budget_s <= GATE_MAX_BUDGET_S) || !g.user[0])
		__builtin_trap();
	for (unsigned i = 0; i < g.argc; i++)
		if (!g.argv[i] || has_ctrl(g.argv[i]))
			__builtin_trap();
	gates_release(&g);
	return 0;
}
