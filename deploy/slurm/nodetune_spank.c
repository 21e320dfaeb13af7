/* SPDX-License-Identifier: MIT */
/* nodetune_spank.c — the Slurm SPANK plugin: `srun/sbatch/salloc
 * --nodetune=POLICY` does for each local task what `nodetune exec` does
 * under mpirun, and tunes the node for a job that owns it.  Built over
 * libnodetune (the same planner and binder as exec), not over the CLI.
 *
 * Divisions:
 *   1. configuration (plugstack.conf arguments), the option, init: no
 *      policy_dirs= and the plugin refuses to start
 *   2. reading a policy as the job's user, from the policy directories
 *      (the checks themselves, callable without Slurm: spank_check.h)
 *   3. running nodetune under a timeout; whether the job owns the node
 *      (slurmctld's word, through Slurm's API)
 *   4. the prolog's outcome, which the job's steps read
 *   5. remote: check the policy before the step starts (init_post_opt),
 *      bind each task (task_init, in the task, after task/affinity)
 *   6. job prolog/epilog (slurmd, root): the node's settings for a job
 *      that owns the node and while no other job's are on it, applied from
 *      a checked copy in the job's state dir, reverted from it; a revert
 *      that failed is retried at the next job's prolog (tune/jobstate.h)
 *
 * Trust: the value of --nodetune reaches the node in the job's
 * environment, which the user controls, so the node trusts nothing about
 * it: wherever it runs as root (prolog, slurmstepd) the plugin resolves and
 * reads the file again with the job user's file-system identity (uid, gid
 * and groups from slurmd's job credential, base/asuser.h), only beneath the
 * allow-listed policy_dirs, only a root-owned file that is not group or
 * world-writable; whatever fails to resolve or open gives one and the same
 * line, so no answer tells which root-only paths exist or quotes their
 * bytes.  The prolog writes the policy it checked (with the job's own
 * cgroup name) into the job's 0700 state dir and applies that copy.
 *
 * Failures: a bad --nodetune fails at srun/sbatch/salloc with one line;
 * on the node it fails the step's tasks, with the line on the task's
 * stderr (the user's output) and in slurmd's log.  The prolog never fails
 * (a failing prolog drains the node): it records its outcome in the state
 * dir, and the job's tasks fail with the reason when it could not apply.
 * Nothing here exits or crashes slurmd.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <numa.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>
#include <slurm/spank.h>

#include "base/asuser.h"
#include "base/child.h"
#include "base/cpulist.h"
#include "base/parse.h"
#include "base/userfile.h"
#include "machine/gres.h"
#include "machine/knob.h"
#include "machine/topo.h"
#include "tune/bind.h"
#include "tune/jobstate.h"
#include "tune/plan.h"
#include "tune/policy.h"

#include "spank_check.h"

SPANK_PLUGIN(nodetune, 1);

/* spank_check.h mirrors Slurm's shared values without slurm.h */
_Static_assert(SPANK_SHARED_NONE == JOB_SHARED_NONE && SPANK_SHARED_OK == JOB_SHARED_OK &&
	       SPANK_SHARED_USER == JOB_SHARED_USER && SPANK_SHARED_MCS == JOB_SHARED_MCS &&
	       SPANK_SHARED_UNSET == NO_VAL16, "spank_check.h's enum spank_shared differs from slurm.h");

/* ---- 1. configuration, the option, init ----------------------------------- */

/* The nodetune= default: the binary `make install` puts in PREFIX/bin (the
 * Makefile passes -DNODETUNE_BIN from PREFIX). */
#ifndef NODETUNE_BIN
#define NODETUNE_BIN "/usr/local/bin/nodetune"
#endif

/* plugstack.conf: required PREFIX/lib/slurm/nodetune_spank.so ARG... */
static struct {
	char default_policy[PATH_MAX]; /* default=NAME: for jobs without --nodetune */
	char policy_dirs[PATH_MAX];    /* policy_dirs=DIR[:DIR...]: the allow-list (required) */
	char topology[PATH_MAX];       /* topology=FILE.xml: plan against it (tests) */
	char state_dir[PATH_MAX];      /* state_dir=DIR: per-job state (/run/nodetune/slurm) */
	char nodetune[PATH_MAX];       /* nodetune=PATH: the binary for apply/revert */
	char timeout[16];              /* timeout=DURATION: for apply and revert */
} cfg = { "", "", "", "/" JOBSTATE_DIR, NODETUNE_BIN, "60" };

static char arg_policy[PATH_MAX];      /* --nodetune as given */
static bool arg_given;

/* remote: what init_post_opt checked, for task_init */
static struct policy *step_policy;
static struct topo *step_topo;
static char step_error[PATH_MAX + 1200];  /* a problem found before the tasks: they fail */
static char step_note[2048];              /* said once on task 0's stderr */
static bool step_shared;                  /* the job does not own the node */

static int opt_nodetune(int val, const char *optarg, int remote)
{
	(void)val, (void)remote;
	if (!optarg || !optarg[0] || strlen(optarg) >= sizeof(arg_policy)) {
		slurm_error("nodetune: --nodetune: expected a policy name or file");
		return -1;
	}
	snprintf(arg_policy, sizeof(arg_policy), "%s", optarg);
	arg_given = true;
	return 0;
}

static struct spank_option nodetune_opt = {
	"nodetune", "POLICY",
	"bind each task next to its GPU, and for a job that owns the node (--exclusive) tune the node, "
	"with nodetune policy POLICY (a NAME or a file in the site's policy directories; 'none': nothing)",
	1, 0, opt_nodetune,
};

/* Every callback gets the plugstack.conf arguments: slurmd's job prolog
 * and epilog run without slurm_spank_init.  Unknown ones are said (from
 * init, or from the prolog/epilog). */
static void parse_args(int ac, char **av, bool say)
{
	static const struct { const char *key; char *dst; size_t size; } keys[] = {
		{ "default=", cfg.default_policy, PATH_MAX }, { "policy_dirs=", cfg.policy_dirs, PATH_MAX },
		{ "topology=", cfg.topology, PATH_MAX }, { "state_dir=", cfg.state_dir, PATH_MAX },
		{ "nodetune=", cfg.nodetune, PATH_MAX }, { "timeout=", cfg.timeout, sizeof(cfg.timeout) },
	};

	for (int i = 0; i < ac; i++) {
		size_t k = 0;

		for (; k < sizeof(keys) / sizeof(keys[0]); k++) {
			size_t n = strlen(keys[k].key);

			if (!strncmp(av[i], keys[k].key, n) && strlen(av[i] + n) < keys[k].size) {
				snprintf(keys[k].dst, keys[k].size, "%s", av[i] + n);
				break;
			}
		}
		if (k == sizeof(keys) / sizeof(keys[0]) && say)
			slurm_error("nodetune: plugstack.conf: unknown argument '%s' ignored (known: default= "
				    "policy_dirs= topology= state_dir= nodetune= timeout=)", av[i]);
	}
}

/* timeout= a duration (nt_duration.h: 90, 90s, 2m), whole seconds from 1
 * to 3600, else the default 60 */
static int cfg_timeout(void)
{
	double t;

	return nt_duration_parse(cfg.timeout, 1, 3600, &t) < 0 ? 60 : (int)(t + 0.5);
}

/* Without policy_dirs= any file on the node could be named: the plugin
 * refuses to start.  slurmd says so once in its log (and keeps running:
 * its prolog and epilog then do nothing); srun, sbatch and salloc fail
 * with the line, as does a step on the node. */
int slurm_spank_init(spank_t sp, int ac, char **av)
{
	parse_args(ac, av, true);
	if (!cfg.policy_dirs[0]) {
		slurm_error("nodetune: plugstack.conf: no policy_dirs=DIR[:DIR...]: the plugin refuses to start "
			    "(--nodetune could name any file on the node)");
		return spank_context() == S_CTX_SLURMD ? 0 : -1;
	}
	if (spank_context() == S_CTX_SLURMD)
		return 0;
	if (spank_option_register(sp, &nodetune_opt) != ESPANK_SUCCESS)
		slurm_error("nodetune: cannot register --nodetune");
	return 0;
}

/* ---- 2. reading a policy as the job's user -------------------------------- */

/* Read --nodetune=value as user u from the policy directories
 * (spank_check.h). */
static struct policy *policy_for_user(const char *value, const char *cwd, const struct asuser *u,
				      struct nt_err *err)
{
	return spank_check_policy(cfg.policy_dirs, value, cwd, u, NULL, NULL, err);
}

/* The value in effect: --nodetune, else the site default; NULL for none. */
static const char *policy_value_in_effect(void)
{
	const char *v = arg_given ? arg_policy : cfg.default_policy[0] ? cfg.default_policy : NULL;

	return v && strcmp(v, "none") ? v : NULL;
}

/* ---- 3. running nodetune under a timeout; whether the job owns the node ---- */

static long ms_since(const struct timespec *t0)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (now.tv_sec - t0->tv_sec) * 1000L + (now.tv_nsec - t0->tv_nsec) / 1000000;
}

/* Hand each whole line in buf[0..*used) to line(ctx), keeping the rest; a
 * full buffer without a newline goes as one line. */
static void split_lines(char *buf, size_t size, size_t *used, void (*line)(const char *, void *), void *ctx)
{
	char *nl;

	buf[*used] = '\0';
	while ((nl = strchr(buf, '\n')) || *used == size - 1) {
		size_t take = nl ? (size_t)(nl - buf) + 1 : *used;

		if (nl)
			*nl = '\0';
		line(buf, ctx);
		memmove(buf, buf + take, *used - take + 1);
		*used -= take;
	}
}

/* Reap pid, killing its process group once limit_ms have passed since t0
 * (at once when killed).  Returns the exit status, 128 + the signal that
 * ended it, or -ETIME when it was killed. */
static int reap_until(pid_t pid, const struct timespec *t0, long limit_ms, bool killed)
{
	const struct timespec tick = { 0, 20 * 1000000 };
	int status = 0;
	pid_t w;

	if (killed)
		kill(-pid, SIGKILL);
	while ((w = waitpid(pid, &status, killed ? 0 : WNOHANG)) != pid) {
		if (w < 0 && errno != EINTR)
			return -ECHILD;
		if (!killed && ms_since(t0) >= limit_ms) {
			kill(-pid, SIGKILL);
			killed = true;
		} else if (!killed) {
			nanosleep(&tick, NULL);
		}
	}
	if (killed)
		return -ETIME;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* Run argv (argv[0] a full path; stdin /dev/null, stdout and stderr into a
 * pipe, no other fd, in its own process group), each output line to line(ctx); killed
 * with its group after timeout_s, whether it still writes or not.  Returns
 * the exit status (127: could not be run), 128 + the signal that ended it,
 * -ETIME on the timeout, or -errno when it could not be started. */
static int run_cmd(const char *const *argv, int timeout_s, void (*line)(const char *, void *), void *ctx)
{
	struct timespec t0;
	char buf[4096];
	size_t used = 0;
	bool timed_out = false;
	int fds[2];
	pid_t pid;

	if (pipe2(fds, O_CLOEXEC) < 0)
		return -errno;
	if ((pid = fork()) < 0) {
		close(fds[0]);
		close(fds[1]);
		return -EAGAIN;
	}
	if (pid == 0) {
		int null = open("/dev/null", O_RDONLY);

		setpgid(0, 0);
		dup2(null, STDIN_FILENO);
		dup2(fds[1], STDOUT_FILENO);
		dup2(fds[1], STDERR_FILENO);
		/* nothing of slurmd's or slurmstepd's beyond 0, 1 and 2 */
		child_close_from(CHILD_FIRST_FD);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	close(fds[1]);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		struct pollfd pfd = { .fd = fds[0], .events = POLLIN };
		long left_ms = timeout_s * 1000L - ms_since(&t0);
		ssize_t n;

		if ((timed_out = left_ms <= 0))
			break;
		if (poll(&pfd, 1, (int)left_ms) < 0 && errno != EINTR)
			break;
		if (!(pfd.revents & (POLLIN | POLLHUP)))
			continue;
		n = read(fds[0], buf + used, sizeof(buf) - 1 - used);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		used += (size_t)n;
		split_lines(buf, sizeof(buf), &used, line, ctx);
	}
	if (used)
		line(buf, ctx);
	close(fds[0]);
	return reap_until(pid, &t0, timeout_s * 1000L, timed_out);
}

/* nodetune's lines: into slurmd's log, the last one kept (the reason) */
static void nodetune_line(const char *l, void *last)
{
	slurm_info("nodetune: %s", l);
	snprintf(last, 512, "%.500s", l);
}

/* Run `nodetune VERB ARGS...` under the timeout.  Returns run_cmd's
 * result; *last (512 bytes) its last line, or why it did not run. */
static int run_nodetune(const char *const *args, char *last)
{
	const char *argv[16] = { cfg.nodetune };
	int r;

	for (int i = 0; args[i] && i < 14; i++)
		argv[i + 1] = args[i];
	last[0] = '\0';
	r = run_cmd(argv, cfg_timeout(), nodetune_line, last);
	if (r == 127 || r == -EAGAIN || (r < 0 && r != -ETIME))
		snprintf(last, 512, "%.400s could not be run (plugstack.conf nodetune=)", cfg.nodetune);
	else if (r == -ETIME)
		snprintf(last, 512, "timed out after %d s (plugstack.conf timeout=), killed", cfg_timeout());
	return r;
}

/* Is the Slurm running this plugin the release it was built for?
 * (spank_check_release).  true, or false with why. */
static bool same_release(spank_t sp, char *why, size_t size)
{
	char *major = NULL, *minor = NULL;

	if (spank_get_item(sp, S_SLURM_VERSION_MAJOR, &major) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_SLURM_VERSION_MINOR, &minor) != ESPANK_SUCCESS)
		major = minor = NULL;
	return spank_check_release(major, minor, SLURM_VERSION_MAJOR(SLURM_VERSION_NUMBER),
				   SLURM_VERSION_MINOR(SLURM_VERSION_NUMBER), why, size);
}

/* Does job own this node?  slurmctld's word through Slurm's API,
 * slurm_load_job: the job's shared field, which slurmctld derives from the
 * job's --exclusive (or its partition's OverSubscribe=EXCLUSIVE) and
 * nothing the user wrote as text (the job name, the comment: the old
 * parse of `scontrol show job -o` took a name 'x OverSubscribe=NO' for the
 * field).  The decision is spank_check_owns_node's: only JOB_SHARED_NONE
 * owns the node.
 *
 * slurm_load_job is the one in the process that loaded the plugin
 * (slurmstepd's libslurmfull, which also gives slurm_error and spank_*:
 * its configuration and authentication are slurmd's), not a libslurm
 * linked here, which would bring a second copy of Slurm's globals into
 * slurmstepd.  The SPANK API itself says nothing of exclusivity in the
 * prolog, and the prolog's environment carries nothing of it either.
 * Returns 1, 0 (why says why not), or -errno when slurmctld could not tell
 * (why). */
static int job_owns_node(spank_t sp, uint32_t job, char *why, size_t size)
{
	job_info_msg_t *msg = NULL;
	uint16_t shared = NO_VAL16;
	bool found = false;

	if (!same_release(sp, why, size))
		return -EPROTO;
	if (slurm_load_job(&msg, job, SHOW_ALL) != SLURM_SUCCESS || !msg)
		return spank_check_owns_node(job, slurm_strerror(slurm_get_errno()), false, shared, why, size);
	for (uint32_t i = 0; i < msg->record_count && !found; i++)
		if ((found = msg->job_array[i].job_id == job))
			shared = msg->job_array[i].shared;
	slurm_free_job_info_msg(msg);
	return spank_check_owns_node(job, NULL, found, shared, why, size);
}

/* ---- 4. the prolog's outcome, read by the job's steps ---------------------- */

#define OUTCOME_FAILED "failed: "   /* the tasks fail with the rest of the line */
#define OUTCOME_SHARED "shared: "   /* task 0 says the rest of the line */
#define OUTCOME_NODE_SHARED "node-shared: "   /* the same, and the job does not
					       * own the node: the tasks are
					       * bound within Slurm's CPUs */

/* The job's state dir: state_dir/JOBID.  0, or -1 (said). */
static int job_state_dir(uint32_t job, char *buf, size_t size)
{
	if (job == 0) {
		slurm_error("nodetune: no job id");
		return -1;
	}
	if ((size_t)snprintf(buf, size, "%s/%u", cfg.state_dir, job) >= size) {
		slurm_error("nodetune: state_dir %s: too long", cfg.state_dir);
		return -1;
	}
	return 0;
}

/* Write name (0600) in dir, replacing it.  0 or -errno. */
static int write_state_file(const char *dir, const char *name, const char *text, size_t len)
{
	char path[PATH_MAX + 32];
	int fd, r = 0;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	if (write(fd, text, len) != (ssize_t)len)
		r = -EIO;
	if (close(fd) < 0 && r == 0)
		r = -errno;
	return r;
}

static void outcome_write(const char *dir, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void outcome_write(const char *dir, const char *fmt, ...)
{
	char line[2048];
	va_list ap;
	int n, r;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	n = n > (int)sizeof(line) - 2 ? (int)sizeof(line) - 2 : n;
	line[n++] = '\n';
	if ((r = write_state_file(dir, "outcome", line, (size_t)n)) < 0)
		slurm_error("nodetune: %s/outcome: %s", dir, strerror(-r));
	else if (strncmp(line, "applied", 7))
		slurm_info("nodetune: prolog: %.*s", n - 1, line);
}

/* The outcome the prolog left for job (one line, into out), or "". */
static void outcome_read(uint32_t job, char *out, size_t size)
{
	char dir[PATH_MAX], path[PATH_MAX + 16];
	ssize_t n = 0;
	int fd;

	out[0] = '\0';
	if (job_state_dir(job, dir, sizeof(dir)) < 0)
		return;
	snprintf(path, sizeof(path), "%s/outcome", dir);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) < 0)
		return;
	n = read(fd, out, size - 1);
	close(fd);
	out[n > 0 ? n : 0] = '\0';
	out[strcspn(out, "\n")] = '\0';
}

/* ---- 5. remote: check, then bind each task -------------------------------- */

/* The step's working directory from its environment, for a relative
 * --nodetune (init_post_opt runs before slurmstepd's chdir). */
static void step_cwd(spank_t sp, char *buf, size_t size)
{
	if (spank_getenv(sp, "PWD", buf, (int)size) != ESPANK_SUCCESS || buf[0] != '/')
		if (spank_getenv(sp, "SLURM_SUBMIT_DIR", buf, (int)size) != ESPANK_SUCCESS)
			buf[0] = '\0';
}

/* The step's user: uid, gid and groups from slurmd's job credential. */
static int step_user(spank_t sp, struct asuser *u)
{
	gid_t *gids = NULL;
	int n = 0;

	memset(u, 0, sizeof(*u));
	if (spank_get_item(sp, S_JOB_UID, &u->uid) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_GID, &u->gid) != ESPANK_SUCCESS)
		return -ENOENT;
	if (spank_get_item(sp, S_JOB_SUPPLEMENTARY_GIDS, &gids, &n) != ESPANK_SUCCESS || !gids || n <= 0)
		return asuser_lookup(u->uid, u->gid, u);
	u->n_groups = n < ASUSER_MAX_GROUPS ? n : ASUSER_MAX_GROUPS;
	memcpy(u->groups, gids, (size_t)u->n_groups * sizeof(gid_t));
	return 0;
}

/* Where the option is given (srun, sbatch, salloc; the user's own
 * process): the same checks as on the node, so that a bad --nodetune fails
 * at once with one line on the user's terminal. */
static int check_locally(const char *value)
{
	char cwd[PATH_MAX];
	struct nt_err err = { 0 };
	struct asuser self;
	struct policy *p;

	if (!getcwd(cwd, sizeof(cwd)))
		cwd[0] = '\0';
	asuser_lookup(geteuid(), getegid(), &self);
	if (!(p = policy_for_user(value, cwd, &self, &err))) {
		slurm_error("nodetune: %s", err.msg);
		return -1;
	}
	policy_free(p);
	return 0;
}

/* On the node, as root before the step starts: the policy read as the
 * job's user, and what the job's prolog did.  A problem is kept for
 * task_init, which says it on the task's stderr and fails the task. */
int slurm_spank_init_post_opt(spank_t sp, int ac, char **av)
{
	char cwd[PATH_MAX], outcome[2048] = "";
	struct nt_err err = { 0 };
	const char *value = policy_value_in_effect();
	struct asuser u;
	uint32_t job = 0;

	(void)ac, (void)av;
	if (!value)
		return 0;
	if (spank_context() == S_CTX_LOCAL || spank_context() == S_CTX_ALLOCATOR)
		return check_locally(value);
	if (spank_context() != S_CTX_REMOTE)
		return 0;
	step_cwd(sp, cwd, sizeof(cwd));
	if (step_user(sp, &u) < 0)
		snprintf(step_error, sizeof(step_error), "no job user from slurmstepd");
	else if (!(step_policy = policy_for_user(value, cwd, &u, &err)))
		snprintf(step_error, sizeof(step_error), "%s", err.msg);
	if (spank_get_item(sp, S_JOB_ID, &job) == ESPANK_SUCCESS)
		outcome_read(job, outcome, sizeof(outcome));
	if (!step_error[0] && !strncmp(outcome, OUTCOME_FAILED, strlen(OUTCOME_FAILED)))
		snprintf(step_error, sizeof(step_error), "%s", outcome + strlen(OUTCOME_FAILED));
	else if (!strncmp(outcome, OUTCOME_SHARED, strlen(OUTCOME_SHARED)))
		snprintf(step_note, sizeof(step_note), "%s", outcome + strlen(OUTCOME_SHARED));
	else if (!strncmp(outcome, OUTCOME_NODE_SHARED, strlen(OUTCOME_NODE_SHARED))) {
		snprintf(step_note, sizeof(step_note), "%s", outcome + strlen(OUTCOME_NODE_SHARED));
		step_shared = true;
	}
	if (step_policy && !step_error[0]) {
		step_topo = cfg.topology[0] ? topo_load_xml(cfg.topology, &err) : topo_load_host(NULL, &err);
		if (!step_topo)
			snprintf(step_error, sizeof(step_error), "%s", err.msg);
	}
	if (step_error[0])
		slurm_error("nodetune: %s", step_error);
	return 0;
}

/* spank_check_gpus's view of the task's environment */
static int task_getenv(void *sp, const char *name, char *buf, size_t size)
{
	return spank_getenv(sp, name, buf, (int)size) == ESPANK_SUCCESS ? 0 : -ENOENT;
}

/* Keep of *set only what allowed has; none left, *set is freed and NULL
 * (the binding of that kind is then left as it was). */
static void keep_within(hwloc_bitmap_t *set, hwloc_const_bitmap_t allowed)
{
	if (!*set)
		return;
	hwloc_bitmap_and(*set, *set, allowed);
	if (hwloc_bitmap_iszero(*set)) {
		hwloc_bitmap_free(*set);
		*set = NULL;
	}
}

/* topology=FILE (tests): the plan is for another machine; keep of each
 * rank's CPUs and memory nodes only what this host has, and leave either
 * alone (Slurm's binding) when nothing is left. */
static void fit_to_host(struct plan *pl, unsigned rank)
{
	struct plan_rank *rk = &pl->ranks[rank];
	hwloc_bitmap_t host = hwloc_bitmap_alloc();
	int i;

	if (!host)
		return;
	for (i = 0; i < (int)numa_all_cpus_ptr->size; i++)
		if (numa_bitmask_isbitset(numa_all_cpus_ptr, (unsigned)i))
			hwloc_bitmap_set(host, (unsigned)i);
	keep_within(&rk->cpus, host);
	hwloc_bitmap_zero(host);
	for (i = 0; i < (int)numa_all_nodes_ptr->size; i++)
		if (numa_bitmask_isbitset(numa_all_nodes_ptr, (unsigned)i))
			hwloc_bitmap_set(host, (unsigned)i);
	keep_within(&rk->mems, host);
	hwloc_bitmap_free(host);
}

/* A job sharing the node: keep of the rank's planned CPUs only those Slurm
 * gave the task (its affinity now, task/affinity's, before the bind), so
 * that it never lands on another job's CPUs; none left, Slurm's binding
 * stays.  *slurm gets Slurm's CPUs for the log. */
static void within_slurm(struct plan *pl, unsigned rank, char **slurm)
{
	struct plan_rank *rk = &pl->ranks[rank];
	hwloc_bitmap_t have;
	cpu_set_t set;

	*slurm = NULL;
	if (sched_getaffinity(0, sizeof(set), &set) < 0 || !(have = hwloc_bitmap_alloc()))
		return;
	for (int i = 0; i < CPU_SETSIZE; i++)
		if (CPU_ISSET(i, &set))
			hwloc_bitmap_set(have, (unsigned)i);
	*slurm = cpulist_format_alloc(have);
	keep_within(&rk->cpus, have);
	hwloc_bitmap_free(have);
}

/* One line for slurmd's log: what this task was given. */
static void log_binding(const struct plan *pl, unsigned rank, unsigned ntasks, const char *gpus_from,
			const char *planned, const char *slurm)
{
	const struct plan_rank *rk = &pl->ranks[rank];
	char *now = rk->cpus ? cpulist_format_alloc(rk->cpus) : NULL;
	char *mems = rk->mems ? cpulist_format_alloc(rk->mems) : NULL;
	char gpu[64] = "none";

	if (rk->gpu >= 0)
		snprintf(gpu, sizeof(gpu), "%d (%s)", rk->gpu, step_topo->gpus[rk->gpu].pci_bus_id);
	slurm_info("nodetune: task %u of %u: GPU %s%s%s, CPUs %s (planned %s%s%s), mems %s, policy %s", rank, ntasks,
		   gpu, gpus_from ? " from " : "", gpus_from ? gpus_from : "", now ? now : "unchanged", planned,
		   slurm ? "; a shared node: within Slurm's " : "", slurm ? slurm : "", mems ? mems : "unchanged",
		   pl->policy_path);
	free(now);
	free(mems);
}

int slurm_spank_task_init(spank_t sp, int ac, char **av)
{
	unsigned gpus[PLAN_MAX_RANKS];
	const char *gpus_from = NULL;
	struct nt_err err = { 0 };
	uint32_t ntasks = 0;
	int task = -1, n, r;
	struct plan *pl;
	char warn[512], *planned, *slurm = NULL;

	(void)ac, (void)av;
	if (step_error[0]) {
		fprintf(stderr, "nodetune: slurm: %s\n", step_error);
		return -1;
	}
	if (!step_policy || !step_topo)
		return 0;
	if (spank_get_item(sp, S_TASK_ID, &task) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_LOCAL_TASK_COUNT, &ntasks) != ESPANK_SUCCESS || task < 0 ||
	    (unsigned)task >= ntasks) {
		slurm_error("nodetune: no local task id or count from slurmstepd");
		return -1;
	}
	if (step_note[0] && task == 0)
		fprintf(stderr, "nodetune: slurm: %s\n", step_note);
	n = spank_check_gpus(step_topo, task_getenv, sp, gpus, PLAN_MAX_RANKS, &gpus_from, &err);
	if (n < 0) {
		slurm_error("nodetune: %s", err.msg);
		return -1;
	}
	pl = plan_build_gpus(step_policy, step_topo, ntasks, gpus, (unsigned)n, NULL, &err);
	if (!pl) {
		slurm_error("nodetune: %s: %s", step_policy->path, err.msg);
		return -1;
	}
	/* Slurm tracks the task in its own cgroup: moving it to the policy's
	 * job cgroup would hide it from proctrack/cgroup */
	pl->cgroup[0] = '\0';
	planned = pl->ranks[task].cpus ? cpulist_format_alloc(pl->ranks[task].cpus) : NULL;
	if (cfg.topology[0])
		fit_to_host(pl, (unsigned)task);
	if (step_shared)
		within_slurm(pl, (unsigned)task, &slurm);
	r = bind_rank(pl, (unsigned)task, warn, sizeof(warn), &err);
	if (r < 0)
		slurm_error("nodetune: task %d: %s", task, err.msg);
	else
		log_binding(pl, (unsigned)task, ntasks, gpus_from, planned ? planned : "none", slurm);
	free(planned);
	free(slurm);
	plan_free(pl);
	return r < 0 ? -1 : 0;
}

int slurm_spank_exit(spank_t sp, int ac, char **av)
{
	(void)sp, (void)ac, (void)av;
	policy_free(step_policy);
	topo_free(step_topo);
	step_policy = NULL;
	step_topo = NULL;
	return 0;
}

/* ---- 6. job prolog/epilog: the node's settings for a job that owns it ------ */

/* mkdir -p (0755) of every directory above path's last '/'.  0 or -errno. */
static int make_parents(const char *path)
{
	char p[PATH_MAX];

	snprintf(p, sizeof(p), "%s", path);
	for (char *s = p + 1; *s; s++)
		if (*s == '/') {
			*s = '\0';
			if (mkdir(p, 0755) < 0 && errno != EEXIST)
				return -errno;
			*s = '/';
		}
	return 0;
}

/* mkdir -p for the base, 0700 for the job's own directory (root's: one
 * that exists must be a directory of root's, not a link). */
static int make_state_dir(const char *dir)
{
	char p[PATH_MAX];
	struct stat st;
	int r;

	snprintf(p, sizeof(p), "%s", dir);
	if ((r = make_parents(p)) < 0)
		return r;
	if (mkdir(p, 0700) < 0 && errno != EEXIST)
		return -errno;
	if (lstat(p, &st) < 0)
		return -errno;
	if (!S_ISDIR(st.st_mode) || st.st_uid != 0)
		return -ENOTDIR;
	return chmod(p, 0700) < 0 ? -errno : 0;
}

/* Does p set anything beyond the tasks' own binding (a host file, IRQs,
 * the job cgroup)? */
static bool policy_host_wide(const struct policy *p)
{
	for (unsigned i = 0; i < knob_count; i++)
		if (knob_table[i].scope >= KS_JOB && policy_value(p, (enum knob_id)i))
			return true;
	return false;
}

/* p as a self-contained policy file, its job cgroup named NAME-JOBID so
 * that no two jobs (nor the daemon) share one.  Returns malloc'd text, or
 * NULL (out of memory). */
static char *policy_text_for_job(const struct policy *p, uint32_t job)
{
	const char *section = "";
	char *text = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&text, &size);

	if (!f)
		return NULL;
	fprintf(f, "# written by the nodetune SPANK prolog for job %u from %s\n", job, p->path);
	for (unsigned i = 0; i < knob_count; i++) {
		const struct knob *k = &knob_table[i];
		const char *v = policy_value(p, (enum knob_id)i);

		if (!v || i == KNOB_MAIN_INCLUDE)
			continue;
		if (strcmp(section, k->section))
			fprintf(f, "[%s]\n", section = k->section);
		if (i == KNOB_CGROUP_NAME)
			fprintf(f, "%s = %s-%u\n", k->key, v, job);
		else
			fprintf(f, "%s = %s\n", k->key, v);
	}
	if (fclose(f) != 0) {
		free(text);
		return NULL;
	}
	return text;
}

/* The prolog's steps once the policy is checked and the job owns the
 * node: the copy into dir, apply it.  The outcome is written. */
static void prolog_apply(const struct policy *p, uint32_t job, const char *dir)
{
	char copy[PATH_MAX + 16], journal[PATH_MAX + 16], last[512], undo[512];
	char *text = policy_text_for_job(p, job);
	const char *after = "", *tail = "nothing of the policy is in effect";
	int r;

	snprintf(copy, sizeof(copy), "%s/policy.conf", dir);
	r = text ? write_state_file(dir, "policy.conf", text, strlen(text)) : -ENOMEM;
	free(text);
	if (r < 0) {
		outcome_write(dir, OUTCOME_FAILED "job %u: the node was not tuned: %s: %s", job, copy, strerror(-r));
		return;
	}
	r = run_nodetune((const char *const[]){ "apply", "--policy", copy, "--state-dir", dir, NULL }, last);
	if (r == 0) {
		outcome_write(dir, "applied");
		return;
	}
	snprintf(journal, sizeof(journal), "%s/journal", dir);
	if (r == -ETIME && access(journal, F_OK) == 0) {
		/* killed mid-way, nothing rolled back: undo what it did now */
		if (run_nodetune((const char *const[]){ "revert", "--state-dir", dir, NULL }, undo) == 0) {
			after = "; reverted";
		} else {
			slurm_error("nodetune: prolog: revert after the timeout: %s (the epilog tries again)", undo);
			after = "; its revert failed too";
			tail = "the epilog reverts what it changed";
		}
	} else if (r > 0 && r != 127) {
		after = "; rolled back";   /* nodetune's own failure (exit 2, 3) */
	}
	outcome_write(dir, OUTCOME_FAILED "job %u: the node could not be tuned (nodetune apply: %s%s); %s", job, last,
		      after, tail);
}

/* The state dirs' base (made, 0755) and its lock, waited for: one prolog
 * or epilog at a time decides, applies or reverts on the node.  The fd to
 * close, or -1 (said). */
static int state_lock(const char *who)
{
	char base[PATH_MAX + 2];
	int r;

	snprintf(base, sizeof(base), "%s/", cfg.state_dir);
	if ((r = make_parents(base)) < 0 || (r = jobstate_lock(cfg.state_dir, true)) < 0)
		slurm_error("nodetune: %s: %s/" JOBSTATE_LOCK ": %s (nothing done)", who, cfg.state_dir, strerror(-r));
	return r < 0 ? -1 : r;
}

/* The jobs that have a state dir on this node (jobstate_list).  Their
 * count with *ret (free it), or -errno. */
static int list_jobs(struct jobstate **ret)
{
	struct fsroot *root = fsroot_open("/");
	int n = root ? jobstate_list(root, cfg.state_dir, ret) : -errno;

	fsroot_free(root);
	return n;
}

/* Revert job's settings from its state dir (when it holds a journal) and
 * remove the dir.  A revert that fails keeps the dir with the reason in
 * JOBSTATE_PENDING: the next job's prolog (and the daemon's start) retry
 * it.  who says who tried, for the reason.  0, or -1 (said). */
static int revert_job(uint32_t job, const char *who)
{
	char dir[PATH_MAX], path[PATH_MAX + 16], last[512], why[1024], ex[24] = "";
	int rc, r;

	if (job_state_dir(job, dir, sizeof(dir)) < 0)
		return -1;
	snprintf(path, sizeof(path), "%s/journal", dir);
	if (access(path, F_OK) == 0) {
		rc = run_nodetune((const char *const[]){ "revert", "--state-dir", dir, NULL }, last);
		if (rc != 0 || access(path, F_OK) == 0) {
			if (rc > 0)
				snprintf(ex, sizeof(ex), " (exit %d)", rc);
			snprintf(why, sizeof(why), "%s: nodetune revert: %s%s", who, last, ex);
			slurm_error("nodetune: %s: job %u's settings stay on the node, %s kept; the next job's prolog "
				    "retries", why, job, dir);
			if ((r = jobstate_mark_pending(dir, why)) < 0)
				slurm_error("nodetune: %s/" JOBSTATE_PENDING ": %s", dir, strerror(-r));
			return -1;
		}
	}
	if ((r = jobstate_remove(dir)) < 0)
		slurm_error("nodetune: %s: removing %s: %s", who, dir, strerror(-r));
	return r < 0 ? -1 : 0;
}

/* The jobs whose epilog could not revert them, retried before anything
 * is decided or applied for this one. */
static void prolog_retry(uint32_t job)
{
	struct jobstate *js = NULL;
	char who[64];
	int n = list_jobs(&js);

	if (n < 0 && n != -ENOENT)
		slurm_error("nodetune: prolog: %s: %s (no pending revert retried)", cfg.state_dir, strerror(-n));
	snprintf(who, sizeof(who), "the prolog of job %u (a retry)", job);
	for (int i = 0; i < n; i++)
		if (js[i].pending && revert_job(js[i].job, who) == 0)
			slurm_info("nodetune: prolog: job %u's settings, which its epilog could not revert, are "
				   "reverted", js[i].job);
	free(js);
}

/* Is another job's journal in its state dir?  Its values are on the node:
 * this job would journal them as the originals, and the job that ends
 * last would leave the node tuned.  true (why says which), or false. */
static bool other_job_tuned(uint32_t job, char *why, size_t size)
{
	struct jobstate *js = NULL;
	int n = list_jobs(&js);
	bool found = false;

	if (n < 0 && n != -ENOENT) {
		snprintf(why, size, "%.300s cannot be listed (%s), so another job's settings may be on the node",
			 cfg.state_dir, strerror(-n));
		return true;
	}
	for (int i = 0; i < n && !found; i++)
		if ((found = js[i].job != job && js[i].journal))
			snprintf(why, size, "job %u's settings are still on the node (its journal %.300s/%u/journal%s)",
				 js[i].job, cfg.state_dir, js[i].job,
				 js[i].pending ? "; its revert failed, and each job's prolog retries it" : "");
	free(js);
	return found;
}

/* The job's user, from slurmd: uid and gid (the job credential), groups
 * from the user database.  0 or -1 (said). */
static int prolog_user(spank_t sp, struct asuser *u)
{
	uid_t uid;
	gid_t gid;

	if (spank_get_item(sp, S_JOB_UID, &uid) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_GID, &gid) != ESPANK_SUCCESS) {
		slurm_error("nodetune: prolog: no job user from slurmd");
		return -1;
	}
	return asuser_lookup(uid, gid, u);
}

/* Check the job's policy (value) as its user; for a job that owns the node,
 * while no other job's settings are on it, apply it, else say why not. */
static void prolog_job(spank_t sp, uint32_t job, const char *value)
{
	char dir[PATH_MAX], why[512];
	struct nt_err err = { 0 };
	struct asuser u;
	struct policy *p;
	int r;

	if (job_state_dir(job, dir, sizeof(dir)) < 0 || prolog_user(sp, &u) < 0)
		return;
	if ((r = make_state_dir(dir)) < 0) {
		slurm_error("nodetune: prolog: %s: %s (nothing applied)", dir, strerror(-r));
		return;
	}
	if (!(p = policy_for_user(value, getenv("SLURM_JOB_WORK_DIR"), &u, &err))) {
		outcome_write(dir, OUTCOME_FAILED "%s", err.msg);
		return;
	}
	if (job_owns_node(sp, job, why, sizeof(why)) != 1) {
		/* the tasks are bound within the CPUs Slurm gave them */
		if (policy_host_wide(p))
			outcome_write(dir, OUTCOME_NODE_SHARED "host-wide settings of %s not applied, only the tasks "
				      "bound, within the job's CPUs: %s", p->path, why);
		else
			outcome_write(dir, OUTCOME_NODE_SHARED "the tasks bound within the job's CPUs: %s", why);
	} else if (!policy_host_wide(p))
		outcome_write(dir, "applied");   /* nothing for the node: the tasks are bound */
	else if (!other_job_tuned(job, why, sizeof(why)))
		prolog_apply(p, job, dir);
	else
		outcome_write(dir, OUTCOME_SHARED "host-wide settings of %s not applied, only the tasks bound: %s",
			      p->path, why);
	policy_free(p);
}

/* Retry the reverts earlier epilogs could not finish, then check the job's
 * policy and apply it if the job may tune the node.  Never fails: a
 * failing prolog drains the node; the outcome file fails the job's tasks
 * instead. */
int slurm_spank_job_prolog(spank_t sp, int ac, char **av)
{
	const char *value = cfg.default_policy[0] ? cfg.default_policy : NULL;
	char *optarg = NULL;
	uint32_t job = 0;
	int lk;

	parse_args(ac, av, true);
	if (!cfg.policy_dirs[0])
		return 0;   /* refused: said by slurmd's init */
	if (spank_option_getopt(sp, &nodetune_opt, &optarg) == ESPANK_SUCCESS && optarg)
		value = optarg;
	if (value && !strcmp(value, "none"))
		value = NULL;
	if (spank_get_item(sp, S_JOB_ID, &job) != ESPANK_SUCCESS)
		job = 0;
	/* no policy and no state dir: nothing asked, nothing pending */
	if ((!value && access(cfg.state_dir, F_OK) < 0) || (lk = state_lock("prolog")) < 0)
		return 0;
	prolog_retry(job);
	if (value && job)
		prolog_job(sp, job, value);
	close(lk);
	return 0;
}

/* Whatever the prolog applied is reverted from the job's state dir, even
 * after a reboot or a crashed job: no option needed, only the dir.  A
 * revert that fails keeps the dir (and its journal), marked pending, for
 * the next job's prolog or the daemon's start to retry. */
int slurm_spank_job_epilog(spank_t sp, int ac, char **av)
{
	char dir[PATH_MAX];
	uint32_t job = 0;
	struct stat st;
	int lk;

	parse_args(ac, av, true);
	if (spank_get_item(sp, S_JOB_ID, &job) != ESPANK_SUCCESS || job_state_dir(job, dir, sizeof(dir)) < 0 ||
	    lstat(dir, &st) < 0 || !S_ISDIR(st.st_mode) || (lk = state_lock("epilog")) < 0)
		return 0;
	revert_job(job, "the epilog");
	close(lk);
	return 0;
}
