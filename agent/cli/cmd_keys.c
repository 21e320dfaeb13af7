/* cmd_keys.c — `nodetune keys`: every policy key. */
#include <stdio.h>

#include "cli.h"
#include "machine/knob.h"

static const struct opt_row keys_opts[] = {
	{ OPT_MARKDOWN, OPT_OPTIONAL },
	OPT_TABLE_END,
};

const struct verb_spec keys_spec = {
	keys_opts, VERB_NO_COMMAND,
	"nodetune keys [--markdown]",
	"list every policy key",
	"Every policy key with what it does; --markdown prints the reference table\n"
	"(section, values, scope, file written) kept in docs/policy-keys.md.",
};

int cmd_keys(struct opts *o)
{
	if (o->markdown) {
		knob_print_reference(stdout);
		return finish_stdout(0);
	}
	for (unsigned i = 0; i < knob_count; i++) {
		char key[96];

		snprintf(key, sizeof(key), "[%s] %s", knob_table[i].section, knob_table[i].key);
		printf("%-34s %s\n", key, knob_table[i].help);
	}
	return finish_stdout(0);
}
