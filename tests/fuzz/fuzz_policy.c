/* SPDX-License-Identifier: MIT */
/* fuzz_policy.c — libFuzzer target: the policy parser (INI, every key's
 * validator, the cross-key rules) over arbitrary bytes, through
 * policy_parse_buffer, the same parser policy_load runs on a file's
 * content.  A policy that parses must answer every accessor, and its
 * flattened text (policy_to_text, what a controller stores and signs) must
 * parse back to the same value for every key. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "machine/knob.h"
#include "tune/policy.h"
#include "tune/policy_test.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* policy_to_text(p) parses back to p's values. */
static void check_roundtrip(const struct policy *p)
{
	struct nt_err err = { 0 };
	struct policy *back;
	size_t len = 0;
	char *text = policy_to_text(p, &len);

	if (!text)
		return;   /* out of memory */
	back = policy_parse_buffer(text, len, "flat", &err);
	if (!back)
		__builtin_trap();
	for (unsigned i = 0; i < knob_count; i++) {
		const char *a = policy_value(p, (enum knob_id)i), *b = policy_value(back, (enum knob_id)i);

		if ((a == NULL) != (b == NULL) || (a && strcmp(a, b)))
			__builtin_trap();
	}
	policy_free(back);
	free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct nt_err err = { 0 };
	struct policy *p = policy_parse_buffer((const char *)data, size, "fuzz.conf", &err);

	if (!p) {
		/* a refusal is one line naming where: "fuzz.conf:N: ..." */
		if (err.code >= 0 || !memchr(err.msg, '\0', sizeof(err.msg)) || strchr(err.msg, '\n'))
			__builtin_trap();
		return 0;
	}
	for (unsigned i = 0; i < knob_count; i++) {
		const char *v = policy_get(p, knob_table[i].section, knob_table[i].key);

		if (v && knob_table[i].type == KT_INT)
			(void)policy_get_int(p, knob_table[i].section, knob_table[i].key, 0);
	}
	(void)policy_is_empty(p);
	check_roundtrip(p);
	policy_free(p);
	return 0;
}
