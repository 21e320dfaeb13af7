/* SPDX-License-Identifier: MIT */
/* steps.h — step reports: how any job tells nodetune about its steps.
 *
 * The protocol (DESIGN.md "Any job, not only the harness"): nodetune passes
 * the job NODETUNE_STEP_FILE (a path: a FIFO or a regular file) and, where it
 * can, NODETUNE_STEP_FD (a descriptor open for appending); the job writes one
 * JSON object per line, each in one write() (a line of at most
 * STEPS_LINE_MAX bytes: below PIPE_BUF, so the lines of several ranks never
 * interleave):
 *
 *   {"step": N, "t": SECONDS, "samples": K, "rank": R,
 *    "phases": {"data": SECONDS, "forward": SECONDS, ...}}
 *
 * step (a whole number) and t (the step's wall time in seconds, finite,
 * >= 0) are required; samples (>= 0, default 0: unknown), rank (a whole
 * number, default 0) and phases (at most STEPS_PHASES_MAX names of
 * [a-z0-9_], 1-32 bytes, each a time in seconds) are optional; other keys
 * are ignored, so the protocol can grow.  contrib/python/nodetune_steps.py
 * writes it for a Python loop; nodetune-harness writes it too.
 *
 * Owns: parsing a line and collecting a whole report.  Everything here is
 * untrusted input (a job writes it): a bad line is refused with its line
 * number and why, never half taken; memory stays bounded.
 */
#ifndef NODETUNE_STEPS_H
#define NODETUNE_STEPS_H

#include <stddef.h>

#include "base/log.h"

#define STEPS_ENV_FILE "NODETUNE_STEP_FILE"
#define STEPS_ENV_FD "NODETUNE_STEP_FD"
#define STEPS_LINE_MAX 4000          /* bytes, newline excluded (PIPE_BUF is 4096) */
#define STEPS_PHASES_MAX 16
#define STEPS_NAME_MAX 33            /* a phase name, NUL included */
#define STEPS_MAX 10000000           /* steps one report may hold */
#define STEPS_RANK_MAX 65535

struct step_report {
	long long step;
	double t;                        /* seconds */
	double samples;                  /* 0: not given */
	int rank;
	unsigned n_phases;
	char phase[STEPS_PHASES_MAX][STEPS_NAME_MAX];
	double phase_s[STEPS_PHASES_MAX];
};

/* A whole report, as read from a step file. */
struct steps {
	struct step_report *r;           /* in the order written */
	size_t n;
	unsigned bad_lines;              /* lines refused (first one in first_bad) */
	char first_bad[256];
	int max_rank;                    /* -1: no step */
};

/* Parse buf[0..len): lines separated by '\n' (a last line without one is
 * taken: the job may have been stopped as it wrote it, or not).  Bad lines
 * are counted and the first one said in first_bad ("NAME:LINE: why"), not
 * fatal: a job's report is evidence, not configuration.  Returns 0 with
 * *ret (free with steps_release), -E2BIG past STEPS_MAX steps, -ENOMEM. */
int steps_parse(const char *buf, size_t len, const char *name, struct steps *ret, struct nt_err *err);

/* Read path (a regular file or a FIFO already at EOF; at most
 * max_bytes) and parse it.  -errno with err for a file that cannot be
 * read. */
int steps_read(const char *path, size_t max_bytes, struct steps *ret, struct nt_err *err);

void steps_release(struct steps *s);

#endif
