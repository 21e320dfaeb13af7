/* fleet_gate.c — see fleet_gate.h. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "fleet/fleet_gate.h"
#include "base/textbuf.h"

#define GATE_OUTPUT_MAX (4u << 20)

int fleet_gate_parse(const char *buf, size_t len, struct fleet_gate_result *ret, struct nt_err *err)
{
	struct fleet_gate_result g = { 0 };
	json_error_t je;
	json_t *o = json_loadb(buf, len, 0, &je), *v, *ex, *e;
	size_t i, n = 0;
	int r = 0;

	if (!json_is_object(o)) {
		json_decref(o);
		return err_set(err, -EINVAL, "ab's output is not a JSON object");
	}
	v = json_object_get(o, "verdict");
	if (!json_is_string(v) || json_string_length(v) >= sizeof(g.verdict))
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
		text_printable(g.verdict);
		text_printable(g.explanation);
		*ret = g;
	}
	json_decref(o);
	return r;
}

/* Read fd to its end (bounded) into a new buffer. */
static int slurp(int fd, char **ret, size_t *ret_len)
{
	size_t len = 0, cap = 65536;
	char *buf = malloc(cap + 1);
	ssize_t n;

	if (!buf)
		return -ENOMEM;
	while ((n = read(fd, buf + len, cap - len)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 || len + (size_t)n >= GATE_OUTPUT_MAX) {
			free(buf);
			return n < 0 ? -errno : -EFBIG;
		}
		len += (size_t)n;
		if (len == cap) {
			char *g = realloc(buf, cap * 2 + 1);

			if (!g) {
				free(buf);
				return -ENOMEM;
			}
			buf = g;
			cap *= 2;
		}
	}
	buf[len] = '\0';
	*ret = buf;
	*ret_len = len;
	return 0;
}

/* The argv of the ab run (strings in store, which outlives argv). */
static void gate_argv(const struct fleet_gate_request *q, char store[6][4200], char **argv)
{
	int n = 0;

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
		snprintf(store[5], sizeof(store[5]), "--budget=%g", q->budget_s);
		argv[n++] = store[5];
	}
	argv[n++] = "--json";
	argv[n++] = "--";
	argv[n++] = "sh";
	argv[n++] = "-c";
	argv[n++] = (char *)q->cmd;
	argv[n] = NULL;
}

int fleet_gate_run(const struct fleet_gate_request *q, struct fleet_gate_result *ret, struct nt_err *err)
{
	char store[6][4200], *argv[24], *out = NULL;
	int pfd[2], status = 0, r;
	size_t len = 0;
	pid_t pid;

	gate_argv(q, store, argv);
	if (pipe2(pfd, O_CLOEXEC) < 0)
		return err_set(err, -errno, "pipe: %s", strerror(errno));
	pid = fork();
	if (pid < 0) {
		r = -errno;
		close(pfd[0]);
		close(pfd[1]);
		return err_set(err, r, "fork: %s", strerror(-r));
	}
	if (pid == 0) {
		sigset_t none;

		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);   /* the daemon blocks its signals */
		dup2(pfd[1], 1);
		if (q->sysroot)
			setenv("NODETUNE_SYSROOT", q->sysroot, 1);
		execv("/proc/self/exe", argv);
		_exit(127);
	}
	close(pfd[1]);
	r = slurp(pfd[0], &out, &len);
	close(pfd[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (r < 0)
		return err_set(err, r, "reading ab's output: %s", strerror(-r));
	if (!WIFEXITED(status) || WEXITSTATUS(status) > 1)
		r = err_set(err, -EIO, "ab exited with %d (its stderr is in the daemon's log)",
			    WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
	else
		r = fleet_gate_parse(out, len, ret, err);
	free(out);
	return r;
}
