/* SPDX-License-Identifier: MIT */
/* cmd_plan.c — `nodetune plan`: what a policy would do (changes nothing). */
#include <stdio.h>

#include "cli.h"

static const struct opt_row plan_opts[] = {
	{ OPT_POLICY, OPT_REQUIRED, NULL },
	{ OPT_RANKS, OPT_OPTIONAL, NULL },
	{ OPT_TOPOLOGY, OPT_OPTIONAL, NULL },
	{ OPT_SYNTHETIC, OPT_OPTIONAL, NULL },
	{ OPT_SYSROOT, OPT_OPTIONAL, NULL },
	{ OPT_JSON, OPT_OPTIONAL, NULL },
	OPT_TABLE_END,
};

const struct verb_spec plan_spec = {
	plan_opts, VERB_NO_COMMAND,
	"nodetune plan --policy FILE|NAME [-n N]\n"
	"                     [--topology FILE.xml | --synthetic DESC] [--sysroot DIR]\n"
	"                     [--json]",
	"what a policy would do for N local ranks (changes nothing)",
	"Per local rank its GPU, CPUs, memory nodes and NIC; host settings with their\n"
	"current and wanted values; the job cgroup; device IRQ moves; and the fallbacks\n"
	"taken.  --ranks defaults to one per GPU (1 without GPUs).",
};

int cmd_plan(struct opts *o)
{
	struct ctx x;
	int rc = ctx_load(&x, o, o->ranks, true);

	if (rc >= 0)
		return rc;
	rc = 0;
	if (o->json)
		rc = print_json("plan", plan_json(x.plan));
	else if (plan_print(stdout, x.plan, x.topo) < 0)
		rc = EXIT_RUNTIME;
	ctx_release(&x);
	return finish_stdout(rc);
}
