/* SPDX-License-Identifier: MIT */
/* cmd_observe.c — `nodetune observe`: host and process counters at an
 * interval (observe/observe.h runs the loop; this checks the options and prints
 * each record). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "tune/launch.h"
#include "base/log.h"
#include "observe/observe.h"

static const struct opt_row observe_opts[] = {
	{ OPT_PID, OPT_OPTIONAL, NULL },
	{ OPT_INTERVAL, OPT_OPTIONAL, NULL },
	{ OPT_DURATION, OPT_OPTIONAL, NULL },
	{ OPT_JSON, OPT_OPTIONAL, NULL },
	OPT_TABLE_END,
};

const struct verb_spec observe_spec = {
	observe_opts, VERB_COMMAND_OPTIONAL,
	"nodetune observe [--pid PID[,PID...]] [--interval DURATION]\n"
	"                        [--duration DURATION] [--json] [-- CMD...]",
	"sample host and process counters at an interval",
	"Every --interval (default 100 ms) one record of what changed: per-CPU %usr and\n"
	"%sys, vmstat (THP faults, compaction, NUMA hinting faults and migrations,\n"
	"faults), TLB shootdowns and device IRQs, PSI; every 50th sample the memory\n"
	"cgroup count against live directories and cgroup throttling.  For each process\n"
	"of --pid, or of the command started (and their descendants, such as mpirun's\n"
	"ranks): its threads' CPU, voluntary and involuntary switches, run-queue wait\n"
	"and CPUs used.  --json: one JSON object per line.  Stops after --duration\n"
	"(default 10 s with neither --pid nor a command), when the processes are gone,\n"
	"or on SIGINT.  With a command, exits with its status.  A command also gets\n"
	"NODETUNE_STEP_FILE and NODETUNE_STEP_FD, where it may report its steps (one JSON\n"
	"line per step and rank: contrib/python/nodetune_steps.py); each record then\n"
	"says the steps that ended in it, their median and their longest time.",
};

/* What print_record needs: the options, and the interval's steps. */
struct observe_ctx {
	const struct opts *o;
	struct observe_steps steps;
	bool with_steps;
};

/* One record on stdout, a line of JSON or of text, flushed: 0, or -EIO. */
static int print_record(const struct sampler *s, const struct sampler_snap *a, const struct sampler_snap *b,
			void *arg)
{
	const struct observe_ctx *ctx = arg;
	const struct opts *o = ctx->o;
	int r = 0;

	if (o->json) {
		json_t *rec = cli_schema_doc("observe", sampler_record(s, a, b));

		if (ctx->with_steps && rec)
			json_object_set_new(rec, "steps", json_pack("{s:i, s:f, s:f, s:I, s:i}", "n", (int)ctx->steps.n,
				"p50_ms", ctx->steps.p50_ms, "max_ms", ctx->steps.max_ms,
				"total", (json_int_t)ctx->steps.total, "bad_lines", (int)ctx->steps.bad_lines));
		if (json_dumpf(rec, stdout, JSON_COMPACT | JSON_REAL_PRECISION(6)) < 0 || putchar('\n') == EOF)
			r = -EIO;
		json_decref(rec);
	} else {
		char line[1024];

		sampler_line(s, a, b, line, sizeof(line));
		if (ctx->with_steps && ctx->steps.n) {
			size_t len = strlen(line);

			snprintf(line + len, sizeof(line) - len, "  steps %u p50 %.1f ms max %.1f ms", ctx->steps.n,
				 ctx->steps.p50_ms, ctx->steps.max_ms);
		}
		if (puts(line) == EOF)
			r = -EIO;
	}
	fflush(stdout);
	return r;
}

int cmd_observe(struct opts *o)
{
	struct observe_ctx ctx = { .o = o, .with_steps = o->command != NULL };
	struct observe_config cfg = {
		.pids = o->pids.pid, .n_pids = o->pids.n, .command = o->command, .interval_ms = o->interval_ms,
		.duration_s = o->duration_s, .record = print_record, .note = cli_note, .arg = &ctx,
	};
	struct nt_err err = { 0 };
	char dir[] = "/tmp/nodetune-observe-XXXXXX", path[64];
	int status = 0, r;

	if (o->command && o->pids.n) {
		log_msg(LOG_ERR, "--pid and a command exclude each other");
		return EXIT_USAGE;
	}
	for (int i = 0; i < o->pids.n; i++)
		if (kill(o->pids.pid[i], 0) < 0 && errno == ESRCH) {
			log_msg(LOG_ERR, "--pid %d: no such process", o->pids.pid[i]);
			return EXIT_USAGE;
		}
	if (o->command && !launch_command_found(o->command[0])) {
		log_msg(LOG_ERR, "%s: command not found", o->command[0]);
		return EXIT_USAGE;
	}
	/* the command's step reports: a file of its own, removed after */
	if (o->command && mkdtemp(dir)) {
		snprintf(path, sizeof(path), "%s/steps", dir);
		cfg.step_file = path;
		cfg.steps = &ctx.steps;
	} else if (o->command) {
		log_msg(LOG_WARNING, "mkdtemp %s: %s (no step reports)", dir, nt_strerror(errno));
		ctx.with_steps = false;
	}
	r = observe_run(&cfg, &status, &err);
	if (cfg.step_file) {
		unlink(path);
		rmdir(dir);
	}
	if (r < 0 && err.msg[0])
		log_msg(LOG_ERR, "%s", err.msg);
	/* with a command, its status, as time(1) gives it */
	return finish_stdout(r < 0 ? EXIT_RUNTIME : status);
}
