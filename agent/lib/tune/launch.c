/* SPDX-License-Identifier: MIT */
/* launch.c — binding and starting local ranks (see launch.h).
 *
 * Divisions: the launchers' environment; the PATH look-up; one rank (bind,
 * exec); run's launcher (fork N, pass signals on, wait).
 */
#include "tune/launch.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tune/bind.h"
#include "base/parse.h"

/* ---- the launchers' environment ---------------------------------------- */

/* The first of names that is set, as a number in [min, max]: 1 with *ret
 * and *ret_name; 0 when none is set; -EINVAL with err. */
static int env_uint(const char *const *names, unsigned min, unsigned max, unsigned *ret, const char **ret_name,
		    struct nt_err *err)
{
	for (; *names; names++) {
		const char *v = getenv(*names);
		size_t len;
		char buf[32];
		uint64_t n;

		if (!v)
			continue;
		/* SLURM_TASKS_PER_NODE looks like "2(x3),1": the first count;
		 * any other variable is one number and nothing else */
		len = strlen(v);
		if (!strcmp(*names, "SLURM_TASKS_PER_NODE") && strchr("(,", v[strspn(v, "0123456789")]))
			len = strspn(v, "0123456789");
		if (len < sizeof(buf))
			snprintf(buf, sizeof(buf), "%.*s", (int)len, v);
		if (len >= sizeof(buf) || parse_u64(buf, max, &n) < 0 || n < min)
			return err_set(err, -EINVAL, "%s='%s': expected a whole number from %u to %u", *names, v,
				       min, max);
		*ret = (unsigned)n;
		*ret_name = *names;
		return 1;
	}
	return 0;
}

int launch_local_rank(unsigned *ret, const char **ret_name, struct nt_err *err)
{
	static const char *const vars[] = { "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID", "LOCAL_RANK", NULL };

	return env_uint(vars, 0, PLAN_MAX_RANKS - 1, ret, ret_name, err);
}

int launch_local_size(unsigned *ret, const char **ret_name, struct nt_err *err)
{
	static const char *const vars[] = {
		"OMPI_COMM_WORLD_LOCAL_SIZE", "LOCAL_WORLD_SIZE", "SLURM_NTASKS_PER_NODE", "SLURM_TASKS_PER_NODE", NULL,
	};

	return env_uint(vars, 1, PLAN_MAX_RANKS, ret, ret_name, err);
}

/* ---- the PATH look-up -------------------------------------------------- */

bool launch_command_found(const char *cmd)
{
	const char *path = getenv("PATH");
	char buf[4096];

	if (strchr(cmd, '/'))
		return access(cmd, X_OK) == 0;
	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	while (*path) {
		size_t n = strcspn(path, ":");

		snprintf(buf, sizeof(buf), "%.*s/%s", (int)n, n ? path : ".", cmd);
		if (access(buf, X_OK) == 0)
			return true;
		path += n + (path[n] == ':');
	}
	return false;
}

/* ---- one rank ---------------------------------------------------------- */

int launch_bind_and_exec(const struct plan *pl, unsigned local_rank, char *const *command, note_fn note,
			 void *arg, int *ret_status, struct nt_err *err)
{
	struct nt_err berr = { 0 };
	char warn[256];
	int r;

	r = bind_rank(pl, local_rank, warn, sizeof(warn), &berr);
	if (r < 0) {
		*ret_status = LAUNCH_EXIT_RUNTIME;
		return err_set(err, r, "local rank %u: %s", local_rank, berr.msg);
	}
	if (warn[0])
		notef(note, arg, LOG_WARNING, "local rank %u: %s", local_rank, warn);
	fflush(NULL);
	execvp(command[0], command);
	r = -errno;
	*ret_status = r == -ENOENT || r == -EACCES ? LAUNCH_EXIT_USAGE : LAUNCH_EXIT_RUNTIME;
	return err_set(err, r, "%s: %s", command[0], nt_strerror(-r));
}

/* ---- run's launcher ---------------------------------------------------- */

static volatile sig_atomic_t launch_signal;

static void launch_on_signal(int sig)
{
	launch_signal = sig;
}

/* In the forked rank i of n: never returns. */
static void rank_main(const struct plan *pl, unsigned i, unsigned n, char *const *command, note_fn note,
		      void *arg)
{
	struct nt_err err = { 0 };
	char v[16];
	int status;

	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGHUP, SIG_DFL);
	snprintf(v, sizeof(v), "%u", i);
	setenv("LOCAL_RANK", v, 1);
	snprintf(v, sizeof(v), "%u", n);
	setenv("LOCAL_WORLD_SIZE", v, 1);
	launch_bind_and_exec(pl, i, command, note, arg, &status, &err);
	notef(note, arg, LOG_ERR, "%s", err.msg);
	_exit(status);
}

/* Wait for the alive ranks of pids[0..n), passing a caught signal on;
 * returns the worst status, at least worst. */
static int wait_ranks(pid_t *pids, unsigned n, unsigned alive, int worst, note_fn note, void *arg)
{
	while (alive) {
		int status, code;
		pid_t p = wait(&status);

		if (p < 0 && errno == EINTR) {
			for (unsigned i = 0; i < n; i++)
				if (pids[i] > 0)
					kill(pids[i], launch_signal);
			continue;
		}
		if (p < 0)
			break;
		for (unsigned i = 0; i < n; i++)
			if (pids[i] == p)
				pids[i] = 0;
		alive--;
		code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
		if (code > worst)
			worst = code;
		if (code)
			notef(note, arg, LOG_WARNING, "a rank (pid %d) ended with status %d", (int)p, code);
	}
	return worst;
}

int launch_ranks(const struct plan *pl, char *const *command, note_fn note, void *arg, int *ret_worst,
		 struct nt_err *err)
{
	struct sigaction sa = { .sa_handler = launch_on_signal };
	unsigned n = pl->n_ranks, alive = 0;
	pid_t *pids;
	int worst = 0;

	fflush(NULL);
	pids = calloc(n, sizeof(*pids));
	if (!pids)
		return err_set(err, -ENOMEM, "out of memory");
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	for (unsigned i = 0; i < n; i++) {
		pids[i] = fork();
		if (pids[i] == 0)
			rank_main(pl, i, n, command, note, arg);
		if (pids[i] < 0) {
			notef(note, arg, LOG_ERR, "fork: %s", nt_strerror(errno));
			worst = LAUNCH_EXIT_RUNTIME;
			break;
		}
		alive++;
	}
	*ret_worst = wait_ranks(pids, n, alive, worst, note, arg);
	free(pids);
	return 0;
}
