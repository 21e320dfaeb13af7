/* SPDX-License-Identifier: MIT */
/* observe.h — the observer's loop: sample host and process counters at an
 * interval (sampler.h) and hand each record to a callback, for a while, for
 * the life of some processes, or for the life of a command it starts.
 *
 * Owns: the schedule (absolute deadlines on CLOCK_MONOTONIC, so intervals
 * do not drift), the command it starts, and SIGINT/SIGTERM while it runs
 * (passed on to that command; the previous handlers are restored when it
 * returns).  Promises: it never prints; records go to cfg->record and
 * messages for the user to cfg->note; the last record is taken after the
 * command or the processes ended, so their final counters are in it.
 */
#ifndef NODETUNE_OBSERVE_H
#define NODETUNE_OBSERVE_H

#include "base/log.h"
#include "base/log.h"
#include "observe/sampler.h"

#define OBSERVE_INTERVAL_MS_DEFAULT 100
#define OBSERVE_DURATION_S_DEFAULT 10.0   /* with neither pids nor a command */

struct observe_config {
	const char *root;             /* the tree read; NULL: "/" */
	const int *pids;              /* follow these processes (and their descendants) */
	int n_pids;                   /* 0..SAMPLER_MAX_PIDS */
	char *const *command;         /* or start this one (NULL-terminated; NULL: none) */
	unsigned interval_ms;         /* 0: OBSERVE_INTERVAL_MS_DEFAULT */
	double duration_s;            /* stop after this; 0: OBSERVE_DURATION_S_DEFAULT with neither
				       * pids nor a command, else until they end */
	/* One record: what changed from a to b.  A negative return stops the
	 * loop and is returned by observe_run (a failed write). */
	int (*record)(const struct sampler *s, const struct sampler_snap *a, const struct sampler_snap *b,
		      void *arg);
	/* A message for the user (syslog level); may be NULL.  Also called in
	 * the started command's child when its exec fails. */
	note_fn note;
	void *arg;
	/* With a command: its step reports (steps.h).  The command gets
	 * NODETUNE_STEP_FILE (this path, made afresh) and NODETUNE_STEP_FD, and
	 * before each record *steps says what it reported in the interval.
	 * NULL: none. */
	const char *step_file;
	struct observe_steps *steps;
};

/* A record's step reports: the steps that ended in the interval. */
struct observe_steps {
	unsigned n;                   /* lines (a step of each rank) */
	double p50_ms, max_ms;        /* of their times (0 without any) */
	unsigned long total;          /* lines since the start */
	unsigned bad_lines;           /* refused since the start */
};

/* Run the loop until the duration is reached (a started command is then
 * waited for), the processes are gone, the command exited, or SIGINT or
 * SIGTERM arrived (the command is then sent SIGTERM and waited for).  The
 * counters this host cannot produce are noted once (LOG_NOTICE) before the
 * first record.  Returns 0 with *ret_status the command's exit status (128
 * + S when killed by signal S; 127 when it could not be exec'd; 0 without a
 * command); record's negative value (err untouched); or -errno with err
 * when the command cannot be forked or the root not opened.  cfg->pids
 * and cfg->command are not changed. */
int observe_run(const struct observe_config *cfg, int *ret_status, struct nt_err *err);

#endif
