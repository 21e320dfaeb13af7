/* SPDX-License-Identifier: MIT */
/* doctor.h — named hazards on a host, each with its evidence and a fix.
 *
 * The hazards come from the stories nodetune exists for (DESIGN.md): zombie
 * memory cgroups, a core saturated in kernel time while the average looks
 * fine, THP defrag=always, automatic NUMA balancing on a multi-node host,
 * device IRQs on CPUs that ranks use, a CPU governor other than
 * performance, swap, cgroup CPU throttling.  Every check is one row of a
 * table in doctor.c. */
#ifndef NODETUNE_DOCTOR_H
#define NODETUNE_DOCTOR_H

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

#include "base/fsroot.h"
#include "machine/kstate.h"
#include "tune/plan.h"
#include "machine/topo.h"

struct doctor_hazard {
	char code[32];
	char summary[256];
	char evidence[512];
	char fix[512];
};

#define DOCTOR_MAX_NOTES 16

/* The counters the hazards and the A/B engine rest on that a host may not
 * produce (a VM's hypervisor flushing TLBs itself, a kernel without PSI,
 * perf events refused): countable or not, and from where or why not. */
enum doctor_counter { DC_TLB, DC_PSI, DC_PERF, DC_N };

struct doctor_counter_state {
	bool countable;
	char detail[320];             /* its source, or why it is not countable */
};

struct doctor_findings {
	struct doctor_hazard *hazards;
	unsigned n;
	unsigned checks;              /* checks that ran */
	char *notes[DOCTOR_MAX_NOTES];  /* checks skipped: "CODE: why" */
	unsigned n_notes;
	struct doctor_counter_state counters[DC_N];
};

struct doctor_config {
	double window_s;              /* per-core %sys: how long to sample (live) */
	double interval_s;            /* and how often */
	const struct plan *plan;      /* optional: rank CPUs, for the IRQ check */
};

/* Run every check.  Returns 0 (rep filled; release it), or -errno with err
 * for unreadable or garbage input. */
int doctor_run(const struct fsroot *root, const struct topo *t, const struct kstate *ks,
	       const struct doctor_config *cfg, struct doctor_findings *rep, struct nt_err *err);

void doctor_findings_release(struct doctor_findings *rep);

/* The hazards doctor checks, in its order: i < doctor_hazard_count().
 * doctor_hazard_code returns row i's code ("governor"), or NULL past the
 * end, and fills what a policy sets to fix it: *ret_knob the key (a row of
 * knob_table) and *ret_value its value, or KNOB_COUNT and NULL where no
 * policy key can (zombie memcgs, throttling quotas: the fix text says what
 * to do).  policies/gpu-train.conf sets every one (its unit test checks). */
unsigned doctor_hazard_count(void);
const char *doctor_hazard_code(unsigned i, enum knob_id *ret_knob, const char **ret_value);

/* The findings as JSON: checks, hazards, skipped (why, per check), counters.
 * NULL: out of memory. */
json_t *doctor_json(const struct doctor_findings *rep);

/* The findings as text to out: the hazards with evidence and fix, the
 * checks skipped (one line each, why), and with counters the counters'
 * self-report, said of tree (a captured tree's path) or, NULL, of this
 * host.  Returns 0, or -EIO when out failed. */
int doctor_print(FILE *out, const struct doctor_findings *rep, const char *tree, bool counters);

#endif
