/* SPDX-License-Identifier: MIT */
/* recommend.h — which shipped policy fits this node (`nodetune policy
 * recommend`, F11 of the first-hour review: tuned-adm recommend).
 *
 * Facts are read read-only below an fsroot (so --sysroot works on captured
 * trees): GPUs from the topology; whether a Slurm node may be shared
 * (etc/slurm/slurm.conf: the partitions that hold this node and their
 * OverSubscribe=); whether a kubelet runs here and its CPU manager policy
 * (var/lib/kubelet/cpu_manager_state, else var/lib/kubelet/config.yaml's
 * cpuManagerPolicy; etc/kubernetes/kubelet.conf says a kubelet is there).
 * The decision is a pure function of the facts: one row per rule, first
 * match wins, each with its reason.
 */
#ifndef NODETUNE_RECOMMEND_H
#define NODETUNE_RECOMMEND_H

#include <stdbool.h>

#include "base/fsroot.h"
#include "base/log.h"
#include "machine/topo.h"

enum rec_slurm {
	REC_SLURM_NONE,        /* no etc/slurm/slurm.conf */
	REC_SLURM_EXCLUSIVE,   /* every partition of this node: OverSubscribe=EXCLUSIVE */
	REC_SLURM_SHARED,      /* a partition of this node lets jobs share it */
};

enum rec_kubelet {
	REC_KUBELET_NONE,      /* no kubelet state or configuration */
	REC_KUBELET_SHARED,    /* a kubelet, CPU manager none (or unset): pods float over the CPUs */
	REC_KUBELET_STATIC,    /* a kubelet with the static CPU manager: it pins containers' CPUs */
};

struct rec_facts {
	unsigned gpus;
	enum rec_slurm slurm;
	enum rec_kubelet kubelet;
	/* where each fact came from, one line each, for the reasons shown */
	char gpus_src[128], slurm_src[512], kubelet_src[512];
};

enum rec_policy { REC_BASELINE, REC_GPU_TRAIN, REC_GPU_SHARED, REC_POLICY_COUNT };

/* The policy NAME of p ("gpu-train"). */
const char *recommend_name(enum rec_policy p);

/* The decision, a pure function of f: the policy, and in *ret_why (static
 * text, never NULL) the rule that chose it. */
enum rec_policy recommend_decide(const struct rec_facts *f, const char **ret_why);

/* Read the facts below root (t gives the GPUs).  Returns 0 with *ret
 * filled, or -EINVAL for a file that cannot be read as what it should be
 * (err names it), -ENOMEM; *ret is untouched on error.  A file that is
 * absent is a fact ("no kubelet"), not an error. */
int recommend_facts(const struct fsroot *root, const struct topo *t, struct rec_facts *ret, struct nt_err *err);

/* Does the Slurm hostlist expression expr ("gpu[01-04,07],login1", "ALL")
 * name host?  Exposed for its unit test. */
bool recommend_hostlist_has(const char *expr, const char *host);

#endif
