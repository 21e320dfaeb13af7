/* SPDX-License-Identifier: MIT */
/* observe.c — the observer's loop (see observe.h).
 *
 * Divisions: signals; the command; the loop.
 */
#include "observe/observe.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/stats.h"
#include "base/steps.h"

/* why the loop stopped */
enum { RUNNING, STOP_SIGNAL, STOP_CHILD_EXITED, STOP_RECORD_FAILED };

/* ---- signals ----------------------------------------------------------- */

static volatile sig_atomic_t watch_stop;
static pid_t watch_child;

static void watch_on_signal(int sig)
{
	watch_stop = STOP_SIGNAL;
	if (watch_child > 0)
		kill(watch_child, sig);
}

/* ---- the command ------------------------------------------------------- */

/* Fork and exec cfg->command, with the step report's descriptor (-1:
 * none) inherited: 0 with *ret_pid, or -errno with err. */
static int start_command(const struct observe_config *cfg, int step_fd, pid_t *ret_pid, struct nt_err *err)
{
	pid_t pid = fork();

	if (pid == 0) {
		char fd[16];

		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		if (step_fd >= 0) {
			snprintf(fd, sizeof(fd), "%d", step_fd);
			fcntl(step_fd, F_SETFD, 0);
			setenv(STEPS_ENV_FILE, cfg->step_file, 1);
			setenv(STEPS_ENV_FD, fd, 1);
		}
		execvp(cfg->command[0], cfg->command);
		notef(cfg->note, cfg->arg, LOG_ERR, "%s: %s", cfg->command[0], nt_strerror(errno));
		_exit(127);
	}
	if (pid < 0)
		return err_set(err, -errno, "fork: %s", nt_strerror(errno));
	*ret_pid = pid;
	return 0;
}

/* After the loop: stop the command (on a signal or a failed record) or
 * wait for it to end by itself; *status is its wait status. */
static void finish_command(const struct observe_config *cfg, pid_t pid, double duration, int *status)
{
	if (watch_stop == STOP_CHILD_EXITED)
		return;
	if (watch_stop)
		kill(pid, SIGTERM);
	else if (duration > 0)
		notef(cfg->note, cfg->arg, LOG_NOTICE, "--duration reached; waiting for %s to exit",
			     cfg->command[0]);
	waitpid(pid, status, 0);
}

/* ---- step reports ------------------------------------------------------ */

struct step_tail {
	int fd;                       /* reads the step file; -1 none */
	char buf[STEPS_LINE_MAX * 4];
	size_t len;                   /* bytes of a line not yet ended */
	double *t;                    /* the interval's step times, ms */
	size_t n, cap;
};

/* The lines ended since the last call into cfg->steps. */
static void step_tail_read(const struct observe_config *cfg, struct step_tail *st)
{
	struct observe_steps *w = cfg->steps;
	ssize_t got;

	st->n = 0;
	while (st->fd >= 0 && (got = read(st->fd, st->buf + st->len, sizeof(st->buf) - st->len)) > 0) {
		char *end = memrchr(st->buf, '\n', st->len + (size_t)got);
		size_t done = end ? (size_t)(end - st->buf) + 1 : 0;
		struct nt_err err = { 0 };
		struct steps s;

		st->len += (size_t)got;
		if (!done && st->len == sizeof(st->buf))
			done = st->len;         /* a line past the limit: refused whole */
		if (done && steps_parse(st->buf, done, cfg->step_file, &s, &err) == 0) {
			w->bad_lines += s.bad_lines;
			w->total += s.n;
			for (size_t i = 0; i < s.n; i++) {
				if (st->n == st->cap) {
					double *t = realloc(st->t, (st->cap = st->cap ? 2 * st->cap : 256) * sizeof(*t));

					if (!t)
						break;
					st->t = t;
				}
				st->t[st->n++] = s.r[i].t * 1000;
			}
			steps_release(&s);
		}
		memmove(st->buf, st->buf + done, st->len - done);
		st->len -= done;
	}
	w->n = (unsigned)st->n;
	w->p50_ms = st->n ? stats_median(st->t, st->n) : 0;
	w->max_ms = 0;
	for (size_t i = 0; i < st->n; i++)
		w->max_ms = st->t[i] > w->max_ms ? st->t[i] : w->max_ms;
}

/* ---- the loop ---------------------------------------------------------- */

static void timespec_add(struct timespec *t, double s)
{
	t->tv_nsec += (long)(s * 1e9);
	t->tv_sec += t->tv_nsec / 1000000000L;
	t->tv_nsec %= 1000000000L;
}

/* Sample every interval until a stop; pid is the started command (0 none). */
static int sample_loop(const struct observe_config *cfg, struct sampler *s, pid_t pid, double duration, int *status,
		       struct step_tail *st)
{
	double interval = (cfg->interval_ms ? cfg->interval_ms : OBSERVE_INTERVAL_MS_DEFAULT) / 1000.0;
	struct sampler_snap snap[2] = { 0 };
	struct timespec next;
	int cur = 0, r = 0;

	sampler_take(s, &snap[cur]);
	clock_gettime(CLOCK_MONOTONIC, &next);
	while (!watch_stop) {
		timespec_add(&next, interval);
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL) == EINTR && !watch_stop)
			;
		if (pid && waitpid(pid, status, WNOHANG) == pid)
			watch_stop = STOP_CHILD_EXITED;     /* one last sample, then stop */
		sampler_take(s, &snap[!cur]);
		if (cfg->steps)
			step_tail_read(cfg, st);
		r = cfg->record(s, &snap[cur], &snap[!cur], cfg->arg);
		if (r < 0)
			watch_stop = STOP_RECORD_FAILED;
		cur = !cur;
		if ((duration > 0 && snap[cur].t >= duration) || (!pid && cfg->n_pids && !sampler_alive(&snap[cur])))
			break;
	}
	sampler_snap_release(&snap[0]);
	sampler_snap_release(&snap[1]);
	return r < 0 ? r : 0;
}

int observe_run(const struct observe_config *cfg, int *ret_status, struct nt_err *err)
{
	struct sigaction sa = { .sa_handler = watch_on_signal }, old_int, old_term;
	double duration = cfg->duration_s ? cfg->duration_s
			  : cfg->command || cfg->n_pids ? 0 : OBSERVE_DURATION_S_DEFAULT;
	struct step_tail *st = calloc(1, sizeof(*st));
	struct sampler s;
	int r, status = 0, wfd = -1;
	pid_t pid = 0;
	char nc[1024];

	if (!st)
		return err_set(err, -ENOMEM, "out of memory");
	st->fd = -1;
	if (cfg->command && cfg->step_file && cfg->steps) {
		wfd = open(cfg->step_file, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
		st->fd = wfd < 0 ? -1 : open(cfg->step_file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		if (st->fd < 0) {
			r = err_set(err, -errno, "%s: %s", cfg->step_file, nt_strerror(errno));
			if (wfd >= 0)
				close(wfd);
			free(st);
			return r;
		}
	}
	watch_stop = RUNNING;
	watch_child = 0;
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	r = cfg->command ? start_command(cfg, wfd, &pid, err) : 0;
	if (wfd >= 0)
		close(wfd);
	if (r < 0)
		goto out_signals;
	watch_child = pid;
	/* never NULL: sampler_init copies the pids with memcpy, even none */
	r = sampler_init(&s, cfg->root ? cfg->root : "/", pid ? &pid : cfg->pids ? cfg->pids : &pid,
			 pid ? 1 : cfg->n_pids, true);
	if (r < 0) {
		err_set(err, r, "%s: %s", cfg->root ? cfg->root : "/", nt_strerror(-r));
		watch_stop = STOP_SIGNAL;   /* the command goes too */
		goto out_command;
	}
	/* once, before the records: which fields read n/c (null) here */
	if (sampler_uncountable(&s, nc, sizeof(nc)))
		notef(cfg->note, cfg->arg, LOG_NOTICE, "%s", nc);
	r = sample_loop(cfg, &s, pid, duration, &status, st);
	sampler_release(&s);
out_command:
	if (pid)
		finish_command(cfg, pid, duration, &status);
	if (r == 0)   /* the command's status, as time(1) gives it */
		*ret_status = !pid ? 0 : WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
out_signals:
	watch_child = 0;
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	if (st->fd >= 0)
		close(st->fd);
	free(st->t);
	free(st);
	return r;
}
