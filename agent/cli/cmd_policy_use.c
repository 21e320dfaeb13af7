/* SPDX-License-Identifier: MIT */
/* cmd_policy_use.c — `nodetune policy use NAME`: switch the daemon to the
 * policy NAME (tuned-adm profile).
 *
 * The daemon's policy is one file, /etc/nodetune/policy.conf (the unit's
 * ExecStart --policy; below --sysroot DIR with --sysroot).  use writes it
 * as "[main] include = NAME" to a temporary file beside it, checks that
 * file as the daemon checks a policy on reload (load with the trust rule,
 * the site limits, a plan on this machine), renames it over the old one,
 * and signals the daemon on the status socket to reload.
 *
 * The reload is SIGHUP to the process the kernel names as the socket's
 * owner (SO_PEERCRED), checked to be root's (or ours) and a nodetune: the
 * unit's ExecReload is `kill -HUP $MAINPID`, the same signal to the same
 * process, so this is `systemctl reload nodetune` without needing systemd
 * (a Kubernetes pod, a daemon started by hand); the pid comes from the
 * kernel, never from a file someone could write.  The daemon's status then
 * says whether it took the policy (its reload counters): a refusal puts
 * the old file back, exit 3.
 *
 * Divisions: the file; the reload; the verb.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "base/log.h"
#include "daemon/ctlsock.h"
#include "daemon/daemon.h"
#include "tune/limits.h"

static const struct opt_row use_opts[] = {
	{ OPT_SYSROOT, OPT_OPTIONAL, "write DIR/etc/nodetune/policy.conf and check the policy against DIR's files" },
	{ OPT_TOPOLOGY, OPT_OPTIONAL, NULL },
	{ OPT_LIMITS, OPT_OPTIONAL, NULL },
	{ OPT_SOCKET, OPT_OPTIONAL, NULL },
	{ OPT_JSON, OPT_REFUSED, "use prints two lines; `policy active --json` and `status --json` show the result" },
	OPT_TABLE_END,
};

const struct verb_spec policy_use_spec = {
	use_opts, VERB_ONE_WORD,
	"nodetune policy use NAME [--sysroot DIR] [--topology FILE.xml]\n"
	"                         [--limits FILE] [--socket PATH]",
	"switch the daemon's policy to NAME (checked) and reload it",
	"Checks NAME as the daemon does on reload (found on the policy path, trusted,\n"
	"within the site limits, planned on this machine), then writes\n"
	"/etc/nodetune/policy.conf as '[main] include = NAME' atomically and signals\n"
	"the daemon on --socket to reload (SIGHUP, what `systemctl reload nodetune`\n"
	"sends), waiting for its status to say it took it.  An invalid NAME: one line,\n"
	"exit 2, nothing written.  No daemon: the file is written, used when it starts.",
};

/* ---- the file ----------------------------------------------------------- */

/* The text use writes for name. */
static void use_text(const char *name, char *buf, size_t size)
{
	snprintf(buf, size,
		 "# The daemon's policy, written by `nodetune policy use %s`: the policy\n"
		 "# %s on the policy path (`nodetune policy show %s`).  Keys below\n"
		 "# include = override it; `nodetune policy use NAME` replaces this file.\n"
		 "[main]\ninclude = %s\n", name, name, name, name);
}

/* Write text to a new file beside path (mode 0644, synced); its name into
 * tmp.  0 or -errno. */
static int write_beside(const char *path, const char *text, char *tmp, size_t size)
{
	size_t len = strlen(text);
	int fd, r = 0;

	snprintf(tmp, size, "%s.new-XXXXXX", path);
	fd = mkstemp(tmp);
	if (fd < 0)
		return -errno;
	if (fchmod(fd, 0644) < 0 || write(fd, text, len) != (ssize_t)len || fsync(fd) < 0)
		r = errno ? -errno : -EIO;
	if (close(fd) < 0 && !r)
		r = -errno;
	if (r < 0)
		unlink(tmp);
	return r;
}

/* The content of path (at most 64 KiB: a policy.conf) into a new string;
 * NULL when it cannot be read (none there yet). */
static char *slurp(const char *path)
{
	FILE *f = fopen(path, "re");
	char *buf = f ? calloc(1, 65537) : NULL;

	if (buf && fread(buf, 1, 65536, f) == 65536 && !feof(f)) {
		free(buf);
		buf = NULL;
	}
	if (f)
		fclose(f);
	return buf;
}

/* Put old back at path (atomically, as it was written).  0 or -errno. */
static int put_back(const char *path, const char *old)
{
	char tmp[4200];
	int r = old ? write_beside(path, old, tmp, sizeof(tmp)) : -ENOENT;

	if (r == 0 && rename(tmp, path) < 0) {
		r = -errno;
		unlink(tmp);
	}
	return r;
}

/* The daemon's checks on reload, on the file at path: load (trusted),
 * site limits, a plan on x's machine.  0, or -errno with err. */
static int check_as_daemon(const char *path, const struct ctx *x, const struct opts *o, struct nt_err *err)
{
	struct policy *p = policy_load(path, policy_trust_flags(), err);
	struct plan *pl = NULL;
	int r;

	if (!p)
		return err->code ? err->code : -EINVAL;
	r = limits_check_file(o->limits, policy_trust_flags(), p, x->topo, err);
	if (r == 0 && !(pl = plan_build(p, x->topo, 0, x->root, err)))
		r = err->code ? err->code : -EINVAL;
	plan_free(pl);
	policy_free(p);
	return r;
}

/* ---- the reload --------------------------------------------------------- */

/* The daemon's reload counters from its status: reloads + failures in
 * *ret_done, failures in *ret_failed.  0, or -errno (no daemon). */
static int reload_counts(const char *socket, long long *ret_done, long long *ret_failed, struct nt_err *err)
{
	char *reply = NULL;
	json_t *doc;
	int r = ctlsock_query(socket, "status", 2000, &reply, err);

	if (r < 0)
		return r;
	doc = json_loads(reply, 0, NULL);
	free(reply);
	*ret_failed = json_integer_value(json_object_get(doc, "reload_failures"));
	*ret_done = json_integer_value(json_object_get(doc, "reloads")) + *ret_failed;
	json_decref(doc);
	return 0;
}

/* Is pid a nodetune process owned by uid (root, or us)? */
static bool is_our_daemon(pid_t pid, uid_t uid)
{
	char path[64], comm[32] = "";
	FILE *f;

	if (pid <= 0 || (uid != 0 && uid != geteuid()))
		return false;
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	if (!(f = fopen(path, "re")))
		return false;
	if (!fgets(comm, sizeof(comm), f))
		comm[0] = '\0';
	fclose(f);
	return !strcmp(comm, "nodetune\n");
}

/* SIGHUP to the daemon on socket, then wait (up to 10 s) for its status
 * to count the reload.  0 (taken), 1 (no daemon answers), -EREMOTEIO
 * (refused: its log says why) or -errno, with err. */
static int reload_daemon(const char *socket, struct nt_err *err)
{
	long long before, failed0, now, failed;
	pid_t pid;
	uid_t uid;
	int r = reload_counts(socket, &before, &failed0, err);

	if (r == -ENOENT || r == -ECONNREFUSED)
		return 1;
	if (r < 0 || (r = ctlsock_peer(socket, &pid, &uid, err)) < 0)
		return r;
	if (!is_our_daemon(pid, uid))
		return err_set(err, -EPERM, "%s: its owner (pid %d, uid %u) is not a nodetune daemon of root's: not signalled",
			       socket, (int)pid, (unsigned)uid);
	if (kill(pid, SIGHUP) < 0)
		return err_set(err, -errno, "SIGHUP to the daemon (pid %d): %s", (int)pid, strerror(errno));
	for (int i = 0; i < 200; i++) {
		struct timespec ts = { 0, 50 * 1000 * 1000 };

		nanosleep(&ts, NULL);
		if ((r = reload_counts(socket, &now, &failed, err)) < 0)
			return r;
		if (now > before)
			return failed > failed0 ? err_set(err, -EREMOTEIO, "the daemon (pid %d) refused the new policy (its log says why)",
							  (int)pid) : 0;
	}
	return err_set(err, -ETIMEDOUT, "the daemon (pid %d) did not reload within 10 s", (int)pid);
}

/* ---- the verb ----------------------------------------------------------- */

/* Write text over path atomically, after checking it (in a file beside
 * it).  0, or an exit code (said; path untouched). */
static int install_policy(const char *path, const char *text, const struct ctx *x, const struct opts *o)
{
	char tmp[4200];
	struct nt_err err = { 0 };
	int r = write_beside(path, text, tmp, sizeof(tmp));

	if (r < 0) {
		log_msg(LOG_ERR, "%s: %s", tmp, strerror(-r));
		return exit_code_for(r);
	}
	r = check_as_daemon(tmp, x, o, &err);
	if (r == 0 && rename(tmp, path) < 0)
		r = err_set(&err, -errno, "rename %s to %s: %s", tmp, path, strerror(errno));
	if (r < 0) {
		unlink(tmp);
		log_msg(LOG_ERR, "%s", err.msg);
		return r == -EPERM || r == -EINVAL || r == -ENOENT ? EXIT_USAGE : exit_code_for(r);
	}
	return 0;
}

int cmd_policy_use(struct opts *o)
{
	const char *socket = o->socket ? o->socket : CTLSOCK_DEFAULT_PATH;
	char path[4096], found[4096], text[1024], *old;
	struct nt_err err = { 0 };
	struct ctx x;
	int rc, r;

	if (!policy_is_name(o->word)) {
		log_msg(LOG_ERR, "'%s' is not a policy NAME (it has a '/' or ends in .conf): the daemon's policy is named, see `nodetune policy list`",
			o->word);
		return EXIT_USAGE;
	}
	if (policy_find(policy_search_path(), o->word, policy_trust_flags(), found, sizeof(found), &err) < 0) {
		log_msg(LOG_ERR, "%s", err.msg);
		return EXIT_USAGE;
	}
	if ((rc = ctx_load(&x, o, 0, true)) >= 0)
		return rc;
	snprintf(path, sizeof(path), "%s%s", o->sysroot ? o->sysroot : "", DAEMON_DEFAULT_POLICY);
	old = slurp(path);
	use_text(o->word, text, sizeof(text));
	rc = install_policy(path, text, &x, o);
	ctx_release(&x);
	if (rc) {
		free(old);
		return rc;
	}
	printf("%s: include = %s\n", path, o->word);
	r = reload_daemon(socket, &err);
	if (r == 1)
		printf("no daemon answers on %s: it takes %s when it starts\n", socket, o->word);
	else if (r == 0)
		printf("the daemon on %s reloaded: it runs %s\n", socket, o->word);
	if (r < 0) {
		log_msg(LOG_ERR, "%s; %s", err.msg, put_back(path, old) == 0 ? "the old policy file put back" : "the old policy file could not be put back");
		free(old);
		return EXIT_RUNTIME;
	}
	free(old);
	return finish_stdout(0);
}
