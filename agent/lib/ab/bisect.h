/* SPDX-License-Identifier: MIT */
/* bisect.h — knob-level delta debugging between a good and a bad policy.
 *
 * The delta is every knob whose value differs between the two (after their
 * includes are resolved; [main] keys are not knobs).  A candidate is the good
 * policy with a subset of the delta taken from the bad one; the test is an
 * A/B of the good policy against the candidate, and a `regression` verdict
 * is a failure.  ddmin (Zeller and Hildebrandt, "Simplifying and Isolating
 * Failure-Inducing Input", 2002) then finds a 1-minimal failing subset: no
 * single knob of it can be dropped and still reproduce the regression.  That
 * finds interactions too (two knobs that regress only together).
 *
 * The trial runner (struct bisect_run) owns one bisection's tests: it writes
 * each candidate into the A/B's work directory, runs the A/B (spending the
 * bisection's alpha over its tests), and keeps a JSON record of each test.
 * Progress lines go to the caller's callback; nothing here prints.
 */
#ifndef NODETUNE_BISECT_H
#define NODETUNE_BISECT_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "ab/ab.h"
#include "base/log.h"
#include "tune/policy.h"

#define BISECT_MAX 64

enum { BISECT_PASS = 0, BISECT_FAIL = 1, BISECT_UNRESOLVED = 2 };

/* Test the subset `set` (bit i: delta i).  BISECT_PASS, BISECT_FAIL,
 * BISECT_UNRESOLVED (the candidate could not be tested, e.g. an invalid
 * combination), or -errno to abort. */
typedef int (*bisect_test_fn)(uint64_t set, void *ctx);

/* "section.key, section.key" of the deltas in set (bit i: idx[i]), into
 * buf (truncated to size; "" for none). */
void bisect_knob_list(char *buf, size_t size, const int idx[], int n, uint64_t set);

/* One bisection: its A/B configuration, the two policies and their delta,
 * and what its tests found.  Fill it with bisect_run_init. */
struct bisect_run {
	struct ab_config *cfg;        /* arm[0] the good policy; arm[1] each candidate */
	const struct policy *good, *bad;
	int idx[BISECT_MAX], n;       /* the delta (knob_table indexes) */
	int tests;                    /* A/B tests run so far */
	double alpha;                 /* the bisection's, spent over its tests */
	json_t *log;                  /* one record per test, in order (owned) */
	char msg[4096];               /* why the last test failed ("" none) */
	void (*progress)(const char *line, void *arg);   /* one line per test; may be NULL */
	void *arg;
};

/* Set up b for good (loaded from good_path) against bad, testing with cfg
 * (its defaults and options set; cfg->alpha is the whole bisection's): the
 * delta into b->idx and b->n (0: nothing to bisect), cfg->arm[0] the good
 * policy, cfg->regression_only.  The policies and cfg must outlive b.
 * 0, or -ENOMEM with err; release b either way. */
int bisect_run_init(struct bisect_run *b, struct ab_config *cfg, const char *good_path,
		    const struct policy *good, const struct policy *bad, struct nt_err *err);

/* Test the whole delta, and when it reproduces the regression, narrow it
 * with ddmin.  cfg's work directory must exist (ab_files_make).  0 with
 * *ret_reproduced and *ret_culprits (bit i: b->idx[i]; 0 when not
 * reproduced), or -errno with err (an A/B failed: the arm's failure; no
 * policy is left applied), outputs untouched then. */
int bisect_search(struct bisect_run *b, uint64_t *ret_culprits, bool *ret_reproduced, struct nt_err *err);

/* Free b's log; a zeroed b is a no-op. */
void bisect_run_release(struct bisect_run *b);

#endif
