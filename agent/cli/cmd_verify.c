/* SPDX-License-Identifier: MIT */
/* cmd_verify.c — `nodetune verify`: the drift between a policy's plan and
 * the host (verify.h finds it; this prints it). */
#include <stdio.h>

#include "cli.h"
#include "base/log.h"
#include "tune/verify.h"

static const struct opt_row verify_opts[] = {
	{ OPT_POLICY, OPT_REQUIRED, NULL },
	{ OPT_RANKS, OPT_OPTIONAL, NULL },
	{ OPT_TOPOLOGY, OPT_OPTIONAL, NULL },
	{ OPT_SYNTHETIC, OPT_OPTIONAL, NULL },
	{ OPT_SYSROOT, OPT_OPTIONAL, NULL },
	{ OPT_JSON, OPT_OPTIONAL, NULL },
	OPT_TABLE_END,
};

const struct verb_spec verify_spec = {
	verify_opts, VERB_NO_COMMAND,
	"nodetune verify --policy FILE|NAME [-n N]\n"
	"                       [--topology FILE.xml | --synthetic DESC] [--sysroot DIR]\n"
	"                       [--json]",
	"compare the host with the plan (exit 1 on drift)",
	"Read back every host setting, device IRQ affinity and the job cgroup the\n"
	"policy's plan asks for; list each drift as path, expected, actual; exit 1\n"
	"when there is one.",
};

static int print_drift_json(const struct plan *pl, const struct verify_result *rep)
{
	json_t *drift = json_array();

	for (unsigned i = 0; drift && i < rep->n; i++)
		json_array_append_new(drift, plan_setting_json(rep->drift[i].knob,
							       rep->drift[i].kind == VERIFY_CGROUP ? NULL : rep->drift[i].path,
							       rep->drift[i].actual, rep->drift[i].expected));
	return print_json("verify", drift ? json_pack("{s:s, s:i, s:o}", "policy", pl->policy_path, "checked", rep->checked,
					    "drift", drift)
				: NULL);
}

static void print_drift_text(const struct plan *pl, const struct verify_result *rep)
{
	for (unsigned i = 0; i < rep->n; i++) {
		const struct verify_drift *d = &rep->drift[i];

		if (d->kind == VERIFY_CGROUP)
			printf("drift: cgroup %s: expected to exist, missing\n", d->expected);
		else
			printf("drift: /%s: expected %s, actual %s\n", d->path, d->expected, d->actual);
	}
	printf("%s: %u setting%s checked, %u drifted\n", pl->policy_path, rep->checked,
	       rep->checked == 1 ? "" : "s", rep->n);
}

int cmd_verify(struct opts *o)
{
	struct verify_result rep = { 0 };
	struct nt_err err = { 0 };
	struct ctx x;
	int rc = ctx_load(&x, o, o->ranks, true);

	if (rc >= 0)
		return rc;
	rc = 0;
	if (!x.root) {
		log_msg(LOG_ERR, "--topology/--synthetic describe another machine: verify needs this host or --sysroot DIR");
		ctx_release(&x);
		return EXIT_USAGE;
	}
	if (verify_plan(x.plan, x.root, &rep, &err) < 0) {
		log_msg(LOG_ERR, "%s", err.msg);
		ctx_release(&x);
		return exit_code_for(err.code);
	}
	if (o->json)
		rc = print_drift_json(x.plan, &rep);
	else
		print_drift_text(x.plan, &rep);
	/* plan's notes are plan's output; here, with -v only */
	for (unsigned i = 0; i < x.plan->n_notes; i++)
		log_msg(LOG_INFO, "note: %s", x.plan->notes[i]);
	ctx_release(&x);
	rc = finish_stdout(rc);
	if (!rc && rep.n)
		rc = EXIT_PROBLEM;
	verify_result_release(&rep);
	return rc;
}
