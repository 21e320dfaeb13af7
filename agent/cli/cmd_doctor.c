/* SPDX-License-Identifier: MIT */
/* cmd_doctor.c — `nodetune doctor`: named hazards on this host, with
 * evidence and a fix (doctor.h finds them). */
#include <stdio.h>

#include "cli.h"
#include "observe/doctor.h"
#include "machine/kstate.h"
#include "base/log.h"

static const struct opt_row doctor_opts[] = {
	{ OPT_POLICY, OPT_OPTIONAL, "also check what matters for this policy's ranks (IRQs on their CPUs): a file or a NAME" },
	{ OPT_RANKS, OPT_OPTIONAL, "the ranks of --policy's plan (default: one per GPU)" },
	{ OPT_TOPOLOGY, OPT_OPTIONAL, NULL },
	{ OPT_SYSROOT, OPT_OPTIONAL, NULL },
	{ OPT_WINDOW, OPT_OPTIONAL, NULL },
	{ OPT_JSON, OPT_OPTIONAL, NULL },
	OPT_TABLE_END,
};

const struct verb_spec doctor_spec = {
	doctor_opts, VERB_NO_COMMAND,
	"nodetune doctor [--sysroot DIR] [--topology FILE.xml]\n"
	"                       [--policy FILE|NAME [-n N]] [--window DURATION] [--json]",
	"hazards on this host, with evidence and a fix (exit 1: any)",
	"Checks: zombie memory cgroups (/proc/cgroups against live memcg directories);\n"
	"a core saturated in kernel time (>= 95% for >= 1 s of a --window of /proc/stat\n"
	"samples every 100 ms, default 2 s) while the average looks fine; THP\n"
	"defrag=always; automatic NUMA balancing on a multi-node host; device IRQs on\n"
	"CPUs the ranks of --policy use; a governor other than performance; swap;\n"
	"cgroup CPU throttling; a Slurm job whose epilog could not revert its settings\n"
	"(/run/nodetune/slurm).  A captured tree may carry proc/stat.series/NNN samples.",
};

int cmd_doctor(struct opts *o)
{
	struct doctor_config cfg = { o->window_s ? o->window_s : 2.0, 0.1, NULL };
	struct doctor_findings rep = { 0 };
	struct nt_err err = { 0 };
	struct kstate ks = { 0 };
	struct ctx x;
	int rc, r;

	rc = ctx_load(&x, o, o->ranks, true);
	if (rc >= 0)
		return rc;
	if (!x.root) {
		log_msg(LOG_ERR, "--topology/--synthetic describe another machine: give --sysroot DIR for its kernel state");
		ctx_release(&x);
		return EXIT_USAGE;
	}
	r = kstate_read(x.root, &ks, &err);
	if (r == 0) {
		cfg.plan = x.plan;
		r = doctor_run(x.root, x.topo, &ks, &cfg, &rep, &err);
	}
	if (r < 0) {
		log_msg(LOG_ERR, "%s", err.msg);
		rc = exit_code_for(r);
	} else if (o->json) {
		rc = print_json("doctor", doctor_json(&rep));
	} else if (doctor_print(stdout, &rep, o->sysroot, o->verbose) < 0) {
		rc = EXIT_RUNTIME;
	} else {
		rc = 0;
	}
	if (rc == 0 && rep.n)
		rc = EXIT_PROBLEM;
	doctor_findings_release(&rep);
	kstate_release(&ks);
	ctx_release(&x);
	return finish_stdout(rc);
}
