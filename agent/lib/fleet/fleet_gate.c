/* SPDX-License-Identifier: MIT */
/* fleet_gate.c — see fleet_gate.h.
 *
 * Divisions: ab's report; the command line; the child, started, read,
 * stopped; a gate a dead daemon left.
 */
#include <errno.h>
#include <stdatomic.h>
#include <ftw.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "fleet/fleet_gate.h"
#include "fleet/fleet_gate_test.h"
#include "base/child.h"
#include "base/textbuf.h"
#include "tune/apply.h"
#include "tune/sdunit.h"

#define GATE_OUTPUT_MAX (4u << 20)

int fleet_gate_parse(const char *buf, size_t len, struct fleet_gate_result *ret, struct nt_err *err)
{
	struct fleet_gate_result g = { 0 };
	json_error_t je;
	json_t *o = json_loadb(buf, len, 0, &je), *v, *ex, *e;
	const char *sv;
	size_t i, n = 0;
	int r = 0;

	if (!json_is_object(o)) {
		json_decref(o);
		return err_set(err, -EINVAL, "ab's output is not a JSON object");
	}
	sv = json_string_value(json_object_get(o, "schema"));
	v = json_object_get(o, "verdict");
	if (!sv || strcmp(sv, FLEET_GATE_AB_SCHEMA))
		r = err_set(err, -EINVAL, "ab's output is not a report of schema %s (it says '%.40s')",
			    FLEET_GATE_AB_SCHEMA, sv ? sv : "none");
	else if (!json_is_string(v) || json_string_length(v) >= sizeof(g.verdict))
		r = err_set(err, -EINVAL, "ab's output has no verdict");
	else if (!strcmp(json_string_value(v), "error"))
		r = err_set(err, -EIO, "ab failed: %.400s", json_string_value(json_object_get(o, "error")) ?: "?");
	if (r == 0) {
		snprintf(g.verdict, sizeof(g.verdict), "%s", json_string_value(v));
		g.ratio = json_number_value(json_object_get(o, "ratio"));
		g.ci_lo = json_number_value(json_object_get(o, "ci_low"));
		g.ci_hi = json_number_value(json_object_get(o, "ci_high"));
		ex = json_object_get(o, "explanations");
		json_array_foreach(json_is_array(ex) ? ex : NULL, i, e) {
			const char *c = json_string_value(json_object_get(e, "counter"));
			const char *m = json_string_value(json_object_get(e, "mechanism"));

			if (c && n < sizeof(g.explanation) - 1 && i < 3)
				n += (size_t)snprintf(g.explanation + n, sizeof(g.explanation) - n, "%s%s (%s)",
						      n ? "; " : "", c, m ? m : "");
		}
		textbuf_printable(g.verdict);
		textbuf_printable(g.explanation);
		*ret = g;
	}
	json_decref(o);
	return r;
}

/* ---- the command line ------------------------------------------------- */

#define GATE_FIXED_ARGS 16           /* nodetune ab, the options, "--" */

/* The argv of the ab run (strings in store, which outlives argv). */
static int gate_argv(const struct fleet_gate_request *q, char store[9][4200], char **argv, size_t max)
{
	size_t n = 0;

	argv[n++] = "nodetune";
	argv[n++] = "ab";
	snprintf(store[0], sizeof(store[0]), "--a=policy=%s", q->current);
	snprintf(store[1], sizeof(store[1]), "--b=policy=%s", q->candidate);
	argv[n++] = store[0];
	argv[n++] = store[1];
	if (q->sysroot) {
		snprintf(store[2], sizeof(store[2]), "--sysroot=%s", q->sysroot);
		argv[n++] = store[2];
	}
	if (q->topology) {
		snprintf(store[3], sizeof(store[3]), "--topology=%s", q->topology);
		argv[n++] = store[3];
	}
	if (q->budget_s > 0) {
		snprintf(store[4], sizeof(store[4]), "--budget=%g", q->budget_s);
		argv[n++] = store[4];
	}
	snprintf(store[5], sizeof(store[5]), "--trial-dir=%s", q->trial_dir);
	argv[n++] = store[5];
	if (q->user) {
		snprintf(store[6], sizeof(store[6]), "--as-user=%s", q->user);
		argv[n++] = store[6];
	}
	if (q->limits) {
		snprintf(store[7], sizeof(store[7]), "--limits=%s", q->limits);
		argv[n++] = store[7];
	}
	if (q->alpha > 0) {
		snprintf(store[8], sizeof(store[8]), "--alpha=%.17g", q->alpha);
		argv[n++] = store[8];
	}
	argv[n++] = "--json";
	argv[n++] = "--";
	for (size_t i = 0; q->argv[i]; i++) {
		if (n + 1 >= max)
			return -E2BIG;
		argv[n++] = q->argv[i];
	}
	argv[n] = NULL;
	return 0;
}

/* ---- the child: started, read, stopped ---------------------------------- */

struct fleet_gate {
	pid_t pid;                   /* 0: reaped, or ab runs in unit */
	char unit[SDUNIT_NAME_MAX];  /* "": ab is our child */
	char report[4200];           /* "": not kept */
	int fd;                      /* ab's stdout; -1: closed */
	char *out;
	size_t len, cap;
};

/* ab's run time beyond its budget: the last trial, its revert, the stop */
#define GATE_UNIT_SLACK_S 300

/* Under systemd (the daemon in its unit, own), ab runs as a transient
 * service of its own, outside the daemon's sandbox, so that it can become
 * the gate's user and its job sees the GPUs, the network and the user's
 * files; it is stopped when the daemon's unit stops or dies (BindsTo=),
 * when its budget is long past (RuntimeMaxSec=), or by fleet_gate_free.
 * Its stdout is the pipe's end wfd; its stderr the daemon's (the journal). */
static int gate_start_unit(const struct fleet_gate_request *q, char **argv, const char *own, int wfd,
			   struct fleet_gate *g, struct nt_err *err)
{
	static atomic_uint seq;   /* the simulator ticks hosts from several threads */
	char exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	double budget = q->budget_s > 0 ? q->budget_s : 300;
	struct sdunit_spec s = {
		.name = g->unit, .description = "nodetune gate: an A/B test of a rollout's policy",
		.argv = argv, .stdout_fd = wfd, .stderr_fd = 2, .bind_to = own,
		.runtime_max_usec = (uint64_t)((budget + GATE_UNIT_SLACK_S) * 1e6),
		.timeout_stop_usec = 15 * 1000000ull, .delegate = true,
	};

	if (n <= 0)
		return err_set(err, -errno, "/proc/self/exe: %s", nt_strerror(errno));
	exe[n] = '\0';
	argv[0] = exe;
	snprintf(g->unit, sizeof(g->unit), "nodetune-gate-%d-%u.service", (int)getpid(), atomic_fetch_add(&seq, 1) + 1);
	return sdunit_start(&s, err);
}

int fleet_gate_start(const struct fleet_gate_request *q, struct fleet_gate **ret, struct nt_err *err)
{
	char store[9][4200], *argv[GATE_FIXED_ARGS + 80], own[SDUNIT_NAME_MAX];
	struct fleet_gate *g;
	pid_t parent = getpid();
	int pfd[2], r;

	if (!q->argv || !q->argv[0] || !q->trial_dir)
		return err_set(err, -EINVAL, "a gate needs a job and a trial directory");
	if (gate_argv(q, store, argv, sizeof(argv) / sizeof(argv[0])) < 0)
		return err_set(err, -E2BIG, "the gate's job has too many arguments");
	if (!(g = calloc(1, sizeof(*g))))
		return err_set(err, -ENOMEM, "out of memory");
	if (q->report)
		snprintf(g->report, sizeof(g->report), "%s", q->report);
	if (pipe2(pfd, O_CLOEXEC) < 0) {
		r = -errno;
		free(g);
		return err_set(err, r, "pipe: %s", nt_strerror(-r));
	}
	if (sdunit_own(own, sizeof(own))) {
		r = gate_start_unit(q, argv, own, pfd[1], g, err);
		close(pfd[1]);
		g->fd = pfd[0];
		if (r < 0) {
			g->unit[0] = '\0';
			fleet_gate_free(g);
			return r;
		}
		goto started;
	}
	g->pid = fork();
	if (g->pid < 0) {
		r = -errno;
		close(pfd[0]);
		close(pfd[1]);
		free(g);
		return err_set(err, r, "fork: %s", nt_strerror(-r));
	}
	if (g->pid == 0) {
		sigset_t none;

		/* the daemon dies (kill -9 too): ab stops the job and reverts */
		if (prctl(PR_SET_PDEATHSIG, SIGTERM) < 0 || getppid() != parent)
			_exit(127);
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);   /* the daemon blocks its signals */
		/* only async-signal-safe calls here (the daemon has threads).
		 * ab owns nothing of the daemon's: its own session, stdin
		 * /dev/null, its stdout our pipe, stderr the daemon's log, no
		 * other fd (the store's sockets, the journal, the status
		 * socket); ab sets NODETUNE_SYSROOT for the job from --sysroot */
		if (child_move_fd(pfd[1], 1) < 0 || child_detach(-1) < 0)
			_exit(127);
		execv("/proc/self/exe", argv);
		_exit(127);
	}
	close(pfd[1]);
	g->fd = pfd[0];
started:
	if (fcntl(g->fd, F_SETFL, O_NONBLOCK) < 0) {
		r = -errno;
		fleet_gate_free(g);
		return err_set(err, r, "fcntl: %s", nt_strerror(-r));
	}
	*ret = g;
	return 0;
}

/* Keep what ab wrote in g->report (a temporary file renamed over it), for
 * the operator: the whole A/B report behind the verdict.  Best effort. */
static void keep_report(const struct fleet_gate *g)
{
	char tmp[4300];
	int fd;

	if (!g->report[0])
		return;
	snprintf(tmp, sizeof(tmp), "%s.tmp", g->report);
	unlink(tmp);
	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600)) < 0)
		return;
	if (write(fd, g->out, g->len) == (ssize_t)g->len && fsync(fd) == 0 && close(fd) == 0)
		rename(tmp, g->report);
	else
		close(fd);
	unlink(tmp);
}

int fleet_gate_fd(const struct fleet_gate *g)
{
	return g ? g->fd : -1;
}

/* Read what there is: 0 (more may come), 1 (EOF) or -errno. */
static int gate_read(struct fleet_gate *g)
{
	for (;;) {
		ssize_t n;

		if (g->cap - g->len < 4096) {
			size_t cap = g->cap ? g->cap * 2 : 65536;
			char *b;

			if (cap > GATE_OUTPUT_MAX + 1)
				return -EFBIG;
			if (!(b = realloc(g->out, cap)))
				return -ENOMEM;
			g->out = b;
			g->cap = cap;
		}
		n = read(g->fd, g->out + g->len, g->cap - g->len - 1);
		if (n > 0)
			g->len += (size_t)n;
		else if (n == 0)
			return 1;
		else if (errno == EAGAIN)
			return 0;
		else if (errno != EINTR)
			return -errno;
	}
}

int fleet_gate_step(struct fleet_gate *g, struct fleet_gate_result *ret, struct nt_err *err)
{
	int status = 0, r = gate_read(g);

	if (r == 0)
		return 0;
	close(g->fd);
	g->fd = -1;
	if (r < 0) {
		if (g->pid > 0)
			kill(g->pid, SIGTERM);       /* reaped (or its unit stopped) by fleet_gate_free */
		return err_set(err, r, "reading ab's output: %s", nt_strerror(-r));
	}
	g->out[g->len] = '\0';
	keep_report(g);
	if (g->unit[0]) {
		/* its unit is collected as it ends: what ab wrote is the
		 * result (an ab that failed wrote no verdict) */
		return fleet_gate_parse(g->out, g->len, ret, err) < 0 ? err->code : 1;
	}
	while (waitpid(g->pid, &status, 0) < 0 && errno == EINTR)
		;
	g->pid = 0;
	if (!WIFEXITED(status) || WEXITSTATUS(status) > 1)
		return err_set(err, -EIO, "ab exited with %d (its stderr is in the daemon's log)",
			       WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
	g->out[g->len] = '\0';
	return fleet_gate_parse(g->out, g->len, ret, err) < 0 ? err->code : 1;
}

void fleet_gate_free(struct fleet_gate *g)
{
	int status;

	if (!g)
		return;
	if (g->fd >= 0)
		close(g->fd);
	if (g->unit[0]) {
		struct nt_err e = { 0 };

		/* SIGTERM to ab, which stops the job and reverts; then SIGKILL
		 * to what is left of the unit (TimeoutStopSec=15 s) */
		sdunit_stop(g->unit, 20, &e);
	}
	if (g->pid > 0) {
		kill(g->pid, SIGTERM);
		/* ab stops its job (SIGKILL 3 s after SIGTERM) and reverts:
		 * 10 s covers both with room */
		for (int i = 0; i < 100 && waitpid(g->pid, &status, WNOHANG) == 0; i++)
			nanosleep(&(struct timespec){ 0, 100 * 1000 * 1000 }, NULL);
		if (kill(g->pid, SIGKILL) == 0)
			waitpid(g->pid, &status, 0);
	}
	free(g->out);
	free(g);
}

/* ---- a gate a dead daemon left ------------------------------------------ */

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(path);
}

int fleet_gate_recover(const char *trial_dir, const char *sysroot, double wait_s, struct nt_err *err)
{
	struct apply_changes rep = { 0 };
	char state[4200];
	struct stat st;
	int r, n;

	if (lstat(trial_dir, &st) < 0)
		return 0;
	snprintf(state, sizeof(state), "%s/state", trial_dir);
	/* an ab still running (its daemon's death told it to stop) holds the
	 * journal's lock while it reverts: wait for it, 100 ms at a time */
	for (int i = 0;; i++) {
		err->code = 0;
		r = apply_revert(state, sysroot, &rep, err);
		if (r != -EBUSY || i >= (int)(wait_s * 10))
			break;
		apply_changes_release(&rep);
		nanosleep(&(struct timespec){ 0, 100 * 1000 * 1000 }, NULL);
	}
	n = (int)rep.n;
	apply_changes_release(&rep);
	if (r < 0 && r != -ENOENT)
		return r;
	nftw(trial_dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
	return n;
}
