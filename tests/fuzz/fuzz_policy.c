/* fuzz_policy.c — libFuzzer target: the policy parser (INI, every key's
 * validator, the cross-key rules) over arbitrary bytes, through
 * policy_parse_buffer, the same parser policy_load runs on a file's
 * content.  A policy that parses must answer every accessor. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "machine/knob.h"
#include "tune/policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

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
	policy_free(p);
	return 0;
}
