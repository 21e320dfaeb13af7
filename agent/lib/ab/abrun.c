/* SPDX-License-Identifier: MIT */
/* abrun.c — see abrun.h.
 *
 * Divisions: the host's counters; the command line of a trial; the
 * policy applied and reverted; the job forked, watched and waited for; its
 * figure and counters; one trial; the stop signals.
 */
#include "ab/abrun.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/child.h"
#include "base/fsroot.h"
#include "base/userfile.h"
#include "machine/topo.h"
#include "observe/obs.h"
#include "observe/sampler.h"
#include "tune/apply.h"
#include "tune/limits.h"
#include "tune/plan.h"
#include "tune/policy.h"
#include "nt_clock.h"

/* ---- the host's counters ----------------------------------------------- */

/* host counters from vmstat: sampler's rows */
static const struct {
	enum ab_counter c;
	enum sampler_vm sv;
} vm_rows[] = {
	{ AB_C_COMPACT_STALL, SV_COMPACT_STALL },
	{ AB_C_NUMA_HINT_FAULTS, SV_NUMA_HINT_FAULTS },
	{ AB_C_NUMA_PAGES_MIGRATED, SV_NUMA_PAGES_MIGRATED },
	{ AB_C_NUMA_MISS, SV_NUMA_MISS },
};

/* Mark c not countable here (the first reason given stays). */
static void not_countable(struct ab_result *res, int c, const char *why)
{
	if (!res->not_countable[c][0])
		snprintf(res->not_countable[c], sizeof(res->not_countable[c]), "%s", why);
}

/* The host counters' running totals into out; the ones this host cannot
 * produce are marked in res. */
static void host_counters(const struct tlb_counter *tlb, double out[AB_COUNTERS], struct ab_result *res)
{
	struct fsroot *root = fsroot_open("/");
	uint64_t v;
	struct obs_psi psi;

	memset(out, 0, sizeof(double) * AB_COUNTERS);
	if (!root)
		return;
	if (tlb_counter_read(tlb, &v) == 0)
		out[AB_C_TLB_SHOOTDOWNS] = (double)v;
	else
		not_countable(res, AB_C_TLB_SHOOTDOWNS, tlb->why);
	for (size_t i = 0; i < sizeof(vm_rows) / sizeof(vm_rows[0]); i++) {
		int64_t x = obs_vmstat(root, sampler_vm_counters[vm_rows[i].sv].name);

		if (x >= 0)
			out[vm_rows[i].c] = (double)x;
		else
			not_countable(res, vm_rows[i].c, "not in /proc/vmstat (a kernel without it)");
	}
	obs_read_psi(root, &psi);
	if (psi.present)
		out[AB_C_CPU_PRESSURE_MS] = psi.cpu_some_us / 1000.0;
	else
		not_countable(res, AB_C_CPU_PRESSURE_MS, "no /proc/pressure (a kernel without CONFIG_PSI, or psi=0)");
	fsroot_free(root);
}

static char *fmt_int(int v)
{
	char *s = NULL;

	return asprintf(&s, "%d", v) < 0 ? NULL : s;
}

/* ---- the command line of a trial ---------------------------------------- */

/* The default workload's world size: two ranks of the harness, which is
 * what a 2-CPU machine without a GPU can run side by side. */
#define AB_DEFAULT_WORLD 2
#define AB_DEFAULT_WORLD_STR "2"

/* argv of the trial's workload; strings it allocates go into bufs */
static void build_argv(const struct ab_config *cfg, const struct ab_arm *arm, char **argv, char *bufs[], int *n_bufs)
{
	int n = 0;

	if (arm->argv[0]) {
		for (int i = 0; arm->argv[i]; i++)
			argv[n++] = arm->argv[i];
		argv[n] = NULL;
		return;
	}
	/* the default workload: the harness, world 2, each rank bound by
	 * nodetune; it reports its steps like any job */
	argv[n++] = "mpirun";
	argv[n++] = "-np";
	argv[n++] = AB_DEFAULT_WORLD_STR;
	if (geteuid() == 0)
		argv[n++] = "--allow-run-as-root";
	argv[n++] = "--oversubscribe";
	/* one host's shared memory, named: Open MPI otherwise probes its
	 * network transports (UCX, OFI, openib) at every start, 0.45 s to a
	 * rank's first step against 0.24 s, so a trial took 1.53 s against
	 * 1.33 s (RESULTS §17); the steps are as fast.  vader is the
	 * shared-memory BTL's name up to 4.1, an alias of sm in 5.0 */
	argv[n++] = "--mca";
	argv[n++] = "pml";
	argv[n++] = "ob1";
	argv[n++] = "--mca";
	argv[n++] = "btl";
	argv[n++] = "self,vader";
	if (arm->policy) {
		argv[n++] = (char *)cfg->nodetune;
		argv[n++] = "exec";
		argv[n++] = "--policy";
		argv[n++] = arm->policy;
		argv[n++] = "--";
	}
	argv[n++] = (char *)cfg->harness;
	argv[n++] = "--quiet";
	argv[n++] = "--steps";
	argv[n++] = bufs[(*n_bufs)++] = fmt_int(cfg->steps);
	argv[n++] = "--warmup";
	argv[n++] = bufs[(*n_bufs)++] = fmt_int(cfg->warmup);
	argv[n++] = "--batch";
	argv[n++] = bufs[(*n_bufs)++] = fmt_int(cfg->batch);
	argv[n] = NULL;
}

static void tail_of(const char *path, char *out, size_t size)
{
	FILE *f = fopen(path, "r");
	long len;
	size_t n;

	out[0] = '\0';
	if (!f)
		return;
	fseek(f, 0, SEEK_END);
	len = ftell(f);
	fseek(f, len > (long)size - 1 ? len - (long)size + 1 : 0, SEEK_SET);
	n = fread(out, 1, size - 1, f);
	while (n > 0 && (out[n - 1] == '\n' || out[n - 1] == ' '))
		n--;
	out[n] = '\0';
	fclose(f);
	for (char *p = out; *p; p++)
		if (*p == '\n' && p[1])
			*p = '|';
}

/* ---- the policy, applied and reverted ---------------------------------- */

/* The policy file path, loaded, and the machine the trials apply to;
 * checked against the site limits (cfg->limits) there.  0 with *ret_p and
 * *ret_t, or -errno with err (nothing returned). */
static int arm_policy_load(const struct ab_config *cfg, const char *path, struct policy **ret_p, struct topo **ret_t,
			   struct nt_err *err)
{
	struct policy *p = policy_load(path, policy_trust_flags(), err);
	struct topo *t = NULL;
	int r;

	if (!p)
		return err->code;
	t = cfg->topology ? topo_load_xml(cfg->topology, err) : topo_load_host(cfg->sysroot, err);
	r = t ? limits_check_file(cfg->limits, policy_trust_flags(), p, t, err) : err->code;
	if (r < 0) {
		policy_free(p);
		topo_free(t);
		return r;
	}
	*ret_p = p;
	*ret_t = t;
	return 0;
}

int abrun_policy_check(const struct ab_config *cfg, const char *path, struct nt_err *err)
{
	struct policy *p;
	struct topo *t;
	int r = arm_policy_load(cfg, path, &p, &t, err);

	if (r == 0) {
		policy_free(p);
		topo_free(t);
	}
	return r;
}

/* Apply the arm's policy (if any; within the site limits, checked again
 * here since bisect writes new ones) into cfg->state_dir's journal. */
static int trial_apply(const struct ab_config *cfg, const struct ab_arm *arm, struct nt_err *err)
{
	struct policy *p;
	struct topo *t;
	struct fsroot *root;
	struct plan *pl;
	struct apply_changes rep = { 0 };
	int r;

	if (!arm->policy)
		return 0;
	if ((r = arm_policy_load(cfg, arm->policy, &p, &t, err)) < 0)
		return r;
	root = fsroot_open(cfg->sysroot ? cfg->sysroot : "/");
	if (!root) {
		r = err_set(err, -errno, "%s: %s", cfg->sysroot ? cfg->sysroot : "/", nt_strerror(errno));
		policy_free(p);
		topo_free(t);
		return r;
	}
	/* the default workload's ranks, or the plan's default for a command
	 * of the user's (whose rank count is not ours to know) */
	pl = plan_build(p, t, arm->argv[0] ? 0 : AB_DEFAULT_WORLD, root, err);
	/* the trial's job runs in its trial cgroup, never in the policy's
	 * job cgroup: that group would hold nothing, and under a daemon
	 * running the same policy it is the daemon's (a gate's arm A), which
	 * apply refuses to take as its own */
	if (pl)
		pl->cgroup[0] = '\0';
	r = pl ? apply_plan(pl, root, cfg->state_dir, false, &rep, err) : err->code;
	apply_changes_release(&rep);
	plan_free(pl);
	fsroot_free(root);
	topo_free(t);
	policy_free(p);
	return r;
}

static int trial_revert(const struct ab_config *cfg, struct nt_err *err)
{
	struct apply_changes rep = { 0 };
	int r = apply_revert(cfg->state_dir, cfg->sysroot, &rep, err);

	apply_changes_release(&rep);
	return r;
}

/* The files of one trial in the work dir, named for its label. */
struct trial_files {
	char label[32];
	char steps[4096];             /* NODETUNE_STEP_FILE */
	char out[4096];
	char err[4096];
};

static void trial_files_name(const struct ab_config *cfg, const struct ab_arm *arm, int index, struct trial_files *f)
{
	/* index < 0: the arm's warm-up trial */
	if (index < 0)
		snprintf(f->label, sizeof(f->label), "warmup-%s", arm->name);
	else
		snprintf(f->label, sizeof(f->label), "trial-%03d-%s", index, arm->name);
	snprintf(f->steps, sizeof(f->steps), "%s/%s.steps", cfg->work_dir, f->label);
	snprintf(f->out, sizeof(f->out), "%s/%s.out", cfg->work_dir, f->label);
	snprintf(f->err, sizeof(f->err), "%s/%s.err", cfg->work_dir, f->label);
}

/* ---- the job: forked, watched, waited for ------------------------------- */

/* A signal that stops the experiment (SIGINT, SIGTERM, SIGHUP): the job
 * is stopped, its policy reverted, and ab_run returns -EINTR. */
static volatile sig_atomic_t ab_stop;

static void on_stop(int sig)
{
	ab_stop = sig;
}

/* Of our environment, what a job run as another user (--as-user) keeps:
 * the locale, the time zone, the terminal and the simulated host's root;
 * nothing else of root's (sudo's env_reset) */
static bool kept_for_user(const char *e)
{
	static const char *const keep[] = { "LANG=", "LANGUAGE=", "LC_", "TZ=", "TERM=", "NODETUNE_SYSROOT=" };

	for (size_t i = 0; i < sizeof(keep) / sizeof(keep[0]); i++)
		if (!strncmp(e, keep[i], strlen(keep[i])))
			return true;
	return false;
}

/* The job's environment: ours (for --as-user: the kept part, a plain PATH
 * and the user's HOME, USER, LOGNAME and SHELL), with the step report's
 * file and fd, built before fork (the child only execs).  NULL on ENOMEM. */
static char **job_env(const struct ab_config *cfg, const struct trial_files *f, int fd, char *bufs[2])
{
	extern char **environ;
	size_t n = 0, k = 0;
	char **env;

	while (environ[n])
		n++;
	env = calloc(n + 8, sizeof(*env));
	if (!env || asprintf(&bufs[0], STEPS_ENV_FILE "=%s", f->steps) < 0)
		return free(env), NULL;
	if (asprintf(&bufs[1], STEPS_ENV_FD "=%d", fd) < 0)
		return free(bufs[0]), free(env), NULL;
	for (size_t i = 0; i < n; i++)
		if (strncmp(environ[i], STEPS_ENV_FILE "=", sizeof(STEPS_ENV_FILE)) &&
		    strncmp(environ[i], STEPS_ENV_FD "=", sizeof(STEPS_ENV_FD)) &&
		    (!cfg->as_user || kept_for_user(environ[i])))
			env[k++] = environ[i];
	if (cfg->as_user) {
		env[k++] = "PATH=/usr/local/bin:/usr/bin:/bin";
		for (size_t i = 0; i < 4; i++)
			env[k++] = (char *)cfg->as_env[i];
	}
	env[k++] = bufs[0];
	env[k++] = bufs[1];
	env[k] = NULL;
	return env;
}

/* In the child, with its files open: become cfg's user (--as-user), in
 * that order (groups, gid, uid: the uid last, since it takes the right
 * to change the others), gain no privilege by exec, and die with ab
 * (SIGKILL).  0 or -errno. */
static int drop_to_user(const struct ab_config *cfg)
{
	if (!cfg->as_user)
		return 0;
	if (cfg->as_uid == 0 || cfg->as_gid == 0 || setgroups(1, &cfg->as_gid) < 0 || setgid(cfg->as_gid) < 0 ||
	    setuid(cfg->as_uid) < 0 || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return errno ? -errno : -EPERM;
	/* a uid that can go back to root would be no drop at all */
	if (setuid(0) == 0 || getuid() != cfg->as_uid || geteuid() != cfg->as_uid)
		return -EPERM;
	/* a job of another user's ends with ab, even an ab killed -9 (the
	 * fleet's gate): set after setuid, which clears it */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
		return -errno;
	return 0;
}

/* In the child: write "nodetune ab: WHAT: DESCRIPTION" to fd 2, the
 * description's first letter in lower case as nt_strerror's, and
 * _exit(code) (126: not run; 127: the command could not be executed, as a
 * shell says); no stdio (only async-signal-safe calls after fork). */
static _Noreturn void child_fail(const char *what, int e, int code)
{
	const char *d = child_strerror(e);
	bool lower = d[0] >= 'A' && d[0] <= 'Z' && !(d[1] >= 'A' && d[1] <= 'Z');
	char first[2] = { lower ? (char)(d[0] - 'A' + 'a') : d[0], '\0' };
	const char *parts[] = { "nodetune ab: ", what, ": ", first, d[0] ? d + 1 : "", "\n" };

	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
		if (write(2, parts[i], strlen(parts[i])) < 0)
			break;
	_exit(code);
}

/* In the child: fd (opened here, -1 on failure) made target; else fail
 * naming path. */
static void child_output(const char *path, int target)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644), r;

	if (fd < 0 || (r = child_move_fd(fd, target)) < 0)
		child_fail(path, fd < 0 ? errno : -r, 126);
}

/* In the forked child: a session of its own (no controlling terminal; a
 * stop reaches the whole job through its process group), its trial
 * cgroup, wait until the parent watches, then exec argv with stdin from
 * /dev/null, stdout and stderr in the trial's files, the step report's fd
 * as CHILD_FIRST_FD and no other fd of ours (child_detach), as cfg's user
 * when it names one (after the cgroup, before exec).  Only
 * async-signal-safe calls.  Never returns. */
static _Noreturn void exec_workload(const struct ab_config *cfg, char **argv, char **env, const struct trial_files *f,
				    int steps_fd, int go[2], const struct abwatch *w)
{
	char x;
	int r;

	if (setsid() < 0)
		child_fail("setsid", errno, 126);
	close(go[1]);
	if (abwatch_child(w) < 0 || read(go[0], &x, 1) != 1)
		_exit(126);
	/* the step fd first: it may be 1 or 2 when ab started with those closed */
	if ((r = child_move_fd(steps_fd, CHILD_FIRST_FD)) < 0)
		child_fail("the step report's fd", -r, 126);
	child_output(f->out, 1);
	child_output(f->err, 2);
	if ((r = child_detach(CHILD_FIRST_FD)) < 0)
		child_fail("detaching the job", -r, 126);
	if ((r = drop_to_user(cfg)) < 0)
		child_fail("--as-user: cannot become that user", -r, 126);
	execvpe(argv[0], argv, env);
	r = errno;
	child_fail(argv[0], r, 127);
}

/* Wait for the job, sampling the watch every 100 ms; on a stop signal,
 * SIGTERM to its process group, SIGKILL 3 s later. */
static int wait_job(pid_t pid, struct abwatch *w)
{
	double stopped = 0;
	int status;

	for (;;) {
		pid_t r = waitpid(pid, &status, WNOHANG);

		if (r == pid)
			return status;
		if (r < 0 && errno != EINTR)
			return -1;
		if (ab_stop && !stopped) {
			kill(-pid, SIGTERM);
			stopped = nt_mono_s();
		} else if (stopped && nt_mono_s() - stopped > 3) {
			kill(-pid, SIGKILL);
		}
		abwatch_tick(w);
		nanosleep(&(struct timespec){ 0, 100 * 1000 * 1000 }, NULL);
	}
}

/* Run argv to its end in its trial cgroup, watched: the host counters
 * before and after into c0 and c1, the watch into t->watch, the wall time
 * into t->wall, the wait status (-1: it did not run) into *ret_status.
 * 0, or -errno with err when it could not be started (nothing run). */
static int run_workload(const struct ab_config *cfg, const struct tlb_counter *tlb, char **argv, const struct trial_files *f, double c0[AB_COUNTERS],
			double c1[AB_COUNTERS], struct ab_trial *t, int *ret_status, struct ab_result *res,
			struct nt_err *err)
{
	struct fsroot *root = fsroot_open("/");
	struct abwatch *w = root ? abwatch_begin(root, f->label, err) : NULL;
	char *bufs[2] = { 0 }, **env = NULL;
	int go[2] = { -1, -1 }, fd = -1, status = -1, r = 0;
	struct nt_err werr = { 0 };
	double t0;
	pid_t pid;

	if (!w) {
		r = root ? err->code : err_set(err, -errno, "/: %s", nt_strerror(errno));
		goto out;
	}
	fd = open(f->steps, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0 || !(env = job_env(cfg, f, CHILD_FIRST_FD, bufs)) || pipe2(go, O_CLOEXEC) < 0) {
		r = err_set(err, fd < 0 ? -errno : -ENOMEM, "%s: %s", fd < 0 ? f->steps : "trial", nt_strerror(errno));
		abwatch_end(w, &t->watch, &werr);
		goto out;
	}
	host_counters(tlb, c0, res);
	t0 = nt_mono_s();
	pid = fork();
	if (pid == 0)
		exec_workload(cfg, argv, env, f, fd, go, w);
	close(go[0]);
	/* no setpgid(pid, pid) here: a group leader cannot setsid() */
	if (pid > 0 && abwatch_started(w, pid, &werr) < 0)
		log_msg(LOG_DEBUG, "%s: watch: %s", f->label, werr.msg);
	/* the child waits on the pipe; with no child (fork failed) there is
	 * no reader, and a write would raise SIGPIPE */
	if (pid > 0 && write(go[1], "x", 1) != 1)
		kill(pid, SIGKILL);
	close(go[1]);
	if (pid > 0)
		status = wait_job(pid, w);
	t->wall = nt_mono_s() - t0;
	host_counters(tlb, c1, res);
	if (abwatch_end(w, &t->watch, &werr) < 0)
		log_msg(LOG_DEBUG, "%s: watch: %s", f->label, werr.msg);
out:
	*ret_status = status;
	if (fd >= 0)
		close(fd);
	free(env);
	free(bufs[0]);
	free(bufs[1]);
	fsroot_free(root);
	return r;
}

/* The arm's command failed: res->error, with the tail of its stderr. */
static void trial_failed(const struct ab_arm *arm, const struct trial_files *f, int status, const char *why,
			 struct ab_result *res)
{
	char tail[600];

	tail_of(f->err, tail, sizeof(tail));
	if (why)
		snprintf(res->error_msg, sizeof(res->error_msg), "arm %s (%s): %s", arm->name, f->label, why);
	else
		snprintf(res->error_msg, sizeof(res->error_msg), "arm %s (%s) failed (%s %d): %s", arm->name, f->label,
			 WIFSIGNALED(status) ? "signal" : "exit",
			 WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status),
			 tail[0] ? tail : "(no output on stderr)");
	res->error = true;
}
#define AB_OUTPUT_MAX (256u << 20)    /* what --metric reads of a trial's output, and of its step file */

/* ---- its figure and counters -------------------------------------------- */

/* --metric over the trial's stdout and stderr: the median value, 0 when
 * no line matched. */
static double metric_of_output(const regex_t *re, const struct trial_files *f, int *ret_n)
{
	const char *paths[2] = { f->out, f->err };
	double v[2] = { 0, 0 };
	int n[2] = { 0, 0 };

	for (int i = 0; i < 2; i++) {
		char *buf, why[320];
		size_t len;

		if (userfile_read(paths[i], AB_OUTPUT_MAX, "a trial's output", NULL, &buf, &len, why, sizeof(why)) < 0)
			continue;
		abfigure_metric_scan(re, buf, len, &v[i], &n[i], NULL);
		free(buf);
	}
	*ret_n = n[0] + n[1];
	/* stdout's lines when it has any (the job's own log), else stderr's */
	return n[0] ? v[0] : v[1];
}

/* The trial's figure and steps.  0, or a reason it has none (said in res). */
static int trial_figure(const struct ab_config *cfg, const regex_t *re, enum abfigure_source want,
			const struct trial_files *f, struct ab_trial *t, const char **why)
{
	struct steps s = { 0 };
	struct nt_err err = { 0 };
	int n;

	if (steps_read(f->steps, AB_OUTPUT_MAX, &s, &err) == 0) {
		abfigure_steps_merge(&s, cfg->skip_steps, &t->st, &err);
		steps_release(&s);
	}
	switch (want) {
	case ABFIGURE_METRIC:
		t->metric = abfigure_metric_figure(metric_of_output(re, f, &n), cfg->metric_kind);
		if (!n) {
			*why = "--metric matched no line of its output (stdout, then stderr)";
			return -1;
		}
		return 0;
	case ABFIGURE_STEPS:
		t->metric = abfigure_steps_figure(&t->st);
		if (!(t->metric > 0)) {
			*why = "no step report this time (its warm-up trial wrote one to NODETUNE_STEP_FILE)";
			return -1;
		}
		return 0;
	default:
		t->metric = 1.0 / t->wall;
		return 0;
	}
}

/* The trial's counters: what grew from c0 to c1 and what its watch saw,
 * per step (per second of trial without steps); shares as they are. */
static void trial_counters(struct ab_trial *t, const double c0[AB_COUNTERS], const double c1[AB_COUNTERS],
			   struct ab_result *res)
{
	double per = t->st.n ? t->st.n : t->wall > 0 ? t->wall : 1;

	for (int k = 0; k < AB_C_TRIAL_FIRST; k++)
		t->counter[k] = (c1[k] - c0[k]) / per;
	for (int k = 0; k < ABWATCH_N; k++) {
		int c = AB_C_TRIAL_FIRST + k;

		if (t->watch.why[k][0])
			not_countable(res, c, t->watch.why[k]);
		t->counter[c] = t->watch.v[k] / (ab_counter_row(c)->rate ? per : 1);
	}
}

/* ---- one trial ---------------------------------------------------------- */

/* Run one trial of arm a; want: the figure's source (the warm-up trials
 * find it: pass ABFIGURE_WALL and get it from *ret_source).  0; -errno with
 * err (bad input, or stopped by a signal: -EINTR); 1 when the arm's command
 * failed (res->error filled). */
int abrun_trial(const struct ab_config *cfg, const regex_t *re, enum abfigure_source want,
		const struct tlb_counter *tlb, int a, int index, struct ab_trial *t, struct ab_result *res,
		struct nt_err *err)
{
	const struct ab_arm *arm = &cfg->arm[a];
	struct trial_files f;
	char *argv[AB_MAX_ARGS + 32], *bufs[16] = { 0 };
	const char *why = NULL;
	double c0[AB_COUNTERS], c1[AB_COUNTERS];
	int n_bufs = 0, status, r;

	memset(t, 0, sizeof(*t));
	t->arm = a;
	trial_files_name(cfg, arm, index, &f);
	build_argv(cfg, arm, argv, bufs, &n_bufs);
	r = trial_apply(cfg, arm, err);
	if (r < 0)
		goto out;
	r = run_workload(cfg, tlb, argv, &f, c0, c1, t, &status, res, err);
	if (r < 0) {
		trial_revert(cfg, err);
		goto out;
	}
	if (trial_revert(cfg, err) < 0) {
		r = err->code;
		goto out;
	}
	if (ab_stop) {
		r = err_set(err, -EINTR, "stopped by signal %d during %s: its job was stopped and its policy reverted",
			    (int)ab_stop, f.label);
		goto out;
	}
	if (status != 0 || trial_figure(cfg, re, want, &f, t, &why) < 0) {
		trial_failed(arm, &f, status, status != 0 ? NULL : why, res);
		r = 1;
		goto out;
	}
	trial_counters(t, c0, c1, res);
out:
	for (int i = 0; i < n_bufs; i++)
		free(bufs[i]);
	return r;
}
void abrun_trial_free(struct ab_trial *t)
{
	abfigure_steps_release(&t->st);
	abwatch_trial_release(&t->watch);
}

/* ---- the stop signals --------------------------------------------------- */

void abrun_stops_catch(struct sigaction old[3], bool restore)
{
	static const int sigs[3] = { SIGINT, SIGTERM, SIGHUP };
	struct sigaction sa = { .sa_handler = on_stop };

	if (!restore)
		ab_stop = 0;
	sigemptyset(&sa.sa_mask);
	for (int i = 0; i < 3; i++)
		sigaction(sigs[i], restore ? &old[i] : &sa, restore ? NULL : &old[i]);
}

