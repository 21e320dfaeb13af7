/* SPDX-License-Identifier: MIT */
/* cmd_keys.c — `nodetune keys`: every policy key. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "machine/knob.h"
#include "tune/limits.h"

#define KEY_WIDTH 34     /* "[sysctl] vm.dirty_background_ratio" */

static const struct opt_row keys_opts[] = {
	{ OPT_MARKDOWN, OPT_OPTIONAL, NULL },
	{ OPT_JSON, OPT_OPTIONAL, NULL },
	OPT_TABLE_END,
};

const struct verb_spec keys_spec = {
	keys_opts, VERB_NO_COMMAND,
	"nodetune keys [--markdown | --json]",
	"list every policy key",
	"Every policy key with what it does; --markdown prints the reference table\n"
	"(section, values, scope, file written) kept in docs/policy-keys.md; --json the\n"
	"same columns as objects {knob, section, key, values, scope, path, help, limit}.",
};

/* The plain list: a key and its values on one line, under KEY and VALUES,
 * its meaning below, indented; everything wrapped to 79 columns. */
static int keys_print_text(void)
{
	printf("%-*s %s\n", KEY_WIDTH, "KEY", "VALUES");
	for (unsigned i = 0; i < knob_count; i++) {
		char key[96], values[256];

		snprintf(key, sizeof(key), "[%s] %s", knob_table[i].section, knob_table[i].key);
		knob_values_text(&knob_table[i], values, sizeof(values));
		printf("%-*s ", KEY_WIDTH, key);
		opts_print_wrapped(stdout, values, (int)strlen(key) > KEY_WIDTH ? (int)strlen(key) + 1 : KEY_WIDTH + 1,
				   KEY_WIDTH + 1);
		printf("    ");
		opts_print_wrapped(stdout, knob_table[i].help, 4, 4);
	}
	return finish_stdout(0);
}

int cmd_keys(struct opts *o)
{
	if (o->markdown && o->json) {
		log_msg(LOG_ERR, "--markdown and --json are mutually exclusive");
		return EXIT_USAGE;
	}
	if (o->json) {
		json_t *arr = json_array();

		/* how limits.conf may bound the key (absent: it cannot) */
		static const char *const dir[] = { [LIMIT_NONE] = NULL, [LIMIT_CEILING] = "ceiling",
						   [LIMIT_FLOOR] = "floor", [LIMIT_ALLOWED] = "allowed" };

		for (unsigned i = 0; arr && i < knob_count; i++) {
			struct knob_ref r;
			char id[128];

			knob_reference(&knob_table[i], &r);
			json_array_append_new(arr, json_pack("{s:s, s:s, s:s, s:s, s:s, s:s?, s:s, s:s*}", "knob",
				knob_name(i, id, sizeof(id)), "section", knob_table[i].section, "key", knob_table[i].key,
				"values", r.values, "scope", r.scope, "path", *r.path ? r.path : NULL, "help",
				knob_table[i].help, "limit", dir[limits_direction((enum knob_id)i)]));
		}
		return finish_stdout(print_json("keys", json_pack("{s:o}", "keys", arr)));
	}
	if (o->markdown) {
		knob_print_reference(stdout);
		return finish_stdout(0);
	}
	return keys_print_text();
}
