/* SPDX-License-Identifier: MIT */
/* cmd_fleet_keygen.c — `nodetune fleet keygen`: a signing key pair for the
 * fleet's controller (fleet/sign.h): NAME.key (mode 0600, the controller's
 * secret) and NAME.pub (what each host trusts in /etc/nodetune/fleet-keys.d). */
#include <stdio.h>

#include "cli.h"
#include "fleet/sign.h"
#include "base/log.h"

static const struct opt_row keygen_opts[] = {
	{ OPT_OUT, OPT_REQUIRED, NULL },
	{ OPT_NAME, OPT_REQUIRED, "the key pair's name: 1 to 64 of a-z, 0-9, _ and -" },
	{ OPT_JSON, OPT_REFUSED, "keygen writes two files and prints the key id, one line" },
	OPT_TABLE_END,
};

const struct verb_spec fleet_keygen_spec = {
	keygen_opts, VERB_NO_COMMAND,
	"nodetune fleet keygen --out DIR --name NAME",
	"make an Ed25519 key pair that signs the fleet's documents",
	"Write DIR/NAME.key (the secret: mode 0600, for the controller only) and\n"
	"DIR/NAME.pub (to copy into " SIGN_KEYS_DIR "/ on every host, owned by\n"
	"root), and print the key id (the first 8 bytes of the public key's sha256, in\n"
	"hex).  NAME: 1 to 64 of a-z, 0-9, '_' and '-'.  Neither file may exist.\n"
	"More than one .pub may be trusted at once: rotate by adding the new key to the\n"
	"hosts, signing with it, then removing the old one.\n"
	"Exit: 0 written, 2 bad name or directory, or a file exists, 3 a write failed.",
};

int cmd_fleet_keygen(struct opts *o)
{
	struct nt_err err = { 0 };
	char id[SIGN_ID_LEN + 1];

	cli_guard_secrets();
	if (sign_keygen(o->out, o->name, id, &err) < 0) {
		log_msg(LOG_ERR, "%s", err.msg);
		return exit_code_for(err.code);
	}
	printf("%s/%s.key\n%s/%s.pub\nkey id %s\n", o->out, o->name, o->out, o->name, id);
	return finish_stdout(0);
}
