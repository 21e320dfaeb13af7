/* SPDX-License-Identifier: MIT */
/* cmd_policy_recommend.c — `nodetune policy recommend`: the shipped policy
 * that fits this node, from discover's facts, and why (machine/recommend.h
 * reads the facts and decides). */
#include <stdio.h>

#include "cli.h"
#include "base/log.h"
#include "machine/recommend.h"

static const struct opt_row recommend_opts[] = {
	{ OPT_TOPOLOGY, OPT_OPTIONAL, NULL },
	{ OPT_SYSROOT, OPT_OPTIONAL, NULL },
	{ OPT_JSON, OPT_OPTIONAL, NULL },
	OPT_TABLE_END,
};

const struct verb_spec policy_recommend_spec = {
	recommend_opts, VERB_NO_COMMAND,
	"nodetune policy recommend [--topology FILE.xml --sysroot DIR] [--json]",
	"the shipped policy that fits this node, and why",
	"Reads, read-only: the GPUs (the topology), whether Slurm may share the node\n"
	"(/etc/slurm/slurm.conf: the partitions holding this node, their OverSubscribe=),\n"
	"and whether a kubelet runs here with the static CPU manager\n"
	"(/var/lib/kubelet/cpu_manager_state or config.yaml,\n"
	"/etc/kubernetes/kubelet.conf).\n"
	"No GPU, or the static CPU manager: baseline.  A node shared by pods or Slurm\n"
	"jobs: gpu-shared.  A GPU node one job owns: gpu-train.  With --sysroot, the\n"
	"files are read below DIR (a captured tree).  `nodetune policy use NAME` then\n"
	"switches the daemon to it.",
};

int cmd_policy_recommend(struct opts *o)
{
	struct rec_facts f;
	struct nt_err err = { 0 };
	const char *why;
	enum rec_policy p;
	struct ctx x;
	int rc = ctx_load(&x, o, 0, true), r;

	if (rc >= 0)
		return rc;
	if (!x.root) {
		log_msg(LOG_ERR, "--topology describes another machine: give --sysroot DIR for its files");
		ctx_release(&x);
		return EXIT_USAGE;
	}
	r = recommend_facts(x.root, x.topo, &f, &err);
	ctx_release(&x);
	if (r < 0) {
		log_msg(LOG_ERR, "%s", err.msg);
		return exit_code_for(r);
	}
	p = recommend_decide(&f, &why);
	if (o->json)
		return finish_stdout(print_json("policy.recommend", json_pack("{s:s, s:s, s:[{s:s, s:i, s:s}, {s:s, s:s, s:s}, {s:s, s:s, s:s}]}",
			"policy", recommend_name(p), "why", why, "facts",
			"fact", "gpus", "value", (int)f.gpus, "source", f.gpus_src,
			"fact", "slurm", "value", f.slurm == REC_SLURM_NONE ? "none" : f.slurm == REC_SLURM_SHARED ? "shared" : "exclusive",
			"source", f.slurm_src,
			"fact", "kubelet", "value", f.kubelet == REC_KUBELET_NONE ? "none" : f.kubelet == REC_KUBELET_STATIC ?
			"static-cpu-manager" : "shared", "source", f.kubelet_src)));
	printf("recommend: %s\n", recommend_name(p));
	printf("  GPUs:    %s\n  Slurm:   %s\n  kubelet: %s\n", f.gpus_src, f.slurm_src, f.kubelet_src);
	printf("why: %s\n", why);
	return finish_stdout(0);
}
