/* ab.c — see ab.h.
 *
 * Divisions: specs; defaults and files; one trial (apply, run watched, read
 * its figure and counters, revert); the schedule and the statistics; output.
 */
#include "ab/ab.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ab/abwatch.h"
#include "tune/apply.h"
#include "base/fsroot.h"
#include "observe/observe.h"
#include "tune/plan.h"
#include "tune/policy.h"
#include "observe/sampler.h"
#include "observe/tlb.h"
#include "machine/topo.h"
#include "base/userfile.h"

/* ---- specs ------------------------------------------------------------- */

void ab_arm_release(struct ab_arm *arm)
{
	free(arm->policy);
	for (int i = 0; i < AB_MAX_ARGS && arm->argv[i]; i++)
		free(arm->argv[i]);
	memset(arm->argv, 0, sizeof(arm->argv));
	arm->policy = NULL;
}

int ab_parse_spec(const char *spec, struct ab_arm *arm, struct nt_err *err)
{
	/* policy=FILE[,cmd=COMMAND ARGS...]: cmd= is last and takes the rest
	 * (split on spaces; no shell ever sees it) */
	const char *cmd = !strncmp(spec, "cmd=", 4) ? spec : strstr(spec, ",cmd=");
	size_t head = cmd ? (size_t)(cmd - spec) : strlen(spec);
	char *copy = strndup(spec, head), *item, *save = NULL;
	int r = 0, n = 0;

	if (!copy)
		return err_set(err, -ENOMEM, "out of memory");
	for (item = strtok_r(copy, ",", &save); item && !r; item = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(item, '=');

		if (!eq) {
			r = err_set(err, -EINVAL, "spec '%s': expected key=value (policy=FILE, cmd=COMMAND)", spec);
			break;
		}
		*eq = '\0';
		if (strcmp(item, "policy")) {
			r = err_set(err, -EINVAL, "spec '%s': unknown key '%s' (policy, cmd)", spec, item);
			break;
		}
		free(arm->policy);
		arm->policy = strdup(eq + 1);
		if (!arm->policy)
			r = err_set(err, -ENOMEM, "out of memory");
	}
	free(copy);
	if (r || !cmd)
		return r;
	cmd += cmd[0] == ',' ? 5 : 4;
	copy = strdup(cmd);
	if (!copy)
		return err_set(err, -ENOMEM, "out of memory");
	for (item = strtok_r(copy, " ", &save); item && n < AB_MAX_ARGS - 1; item = strtok_r(NULL, " ", &save))
		if (!(arm->argv[n++] = strdup(item)))
			r = err_set(err, -ENOMEM, "out of memory");
	free(copy);
	if (!n && !r)
		r = err_set(err, -EINVAL, "spec '%s': cmd= is empty", spec);
	return r;
}

/* ---- defaults and files ------------------------------------------------ */

void ab_config_defaults(struct ab_config *cfg)
{
	cfg->trials = 8;
	cfg->steps = 30;
	cfg->warmup = 3;
	cfg->batch = 2048;
	cfg->threshold = 0.02;
	cfg->alpha = 0.05;
	cfg->budget_s = 300;
	cfg->seed = 1;
	cfg->skip_steps = 1;
	cfg->metric_kind = ABFIG_THROUGHPUT;
}

/* name next to the running program into buf, when it is there and
 * executable; else name itself (found along PATH when run). */
static void find_sibling(const char *name, char *buf, size_t size)
{
	ssize_t n = readlink("/proc/self/exe", buf, size - 1);
	char *slash;

	if (n > 0) {
		buf[n] = '\0';
		slash = strrchr(buf, '/');
		if (slash && (size_t)(slash - buf) + strlen(name) + 2 < size) {
			strcpy(slash + 1, name);
			if (access(buf, X_OK) == 0)
				return;
		}
	}
	snprintf(buf, size, "%s", name);
}

int ab_files_make(struct ab_files *f, const char *prefix, struct ab_config *cfg, struct nt_err *err)
{
	snprintf(f->work, sizeof(f->work), "/tmp/%s-XXXXXX", prefix);
	if (!mkdtemp(f->work))
		return err_set(err, -errno, "mkdtemp: %s", strerror(errno));
	snprintf(f->state, sizeof(f->state), "%s/state", f->work);
	find_sibling("nodetune", f->nodetune, sizeof(f->nodetune));
	find_sibling("nodetune-harness", f->harness, sizeof(f->harness));
	cfg->nodetune = f->nodetune;
	cfg->harness = f->harness;
	cfg->state_dir = f->state;
	cfg->work_dir = f->work;
	return 0;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(path);
}

void ab_files_remove(const char *work)
{
	nftw(work, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

int ab_default_command(struct ab_config *cfg, char *const *command)
{
	for (int a = 0; a < 2 && command; a++) {
		if (cfg->arm[a].argv[0])
			continue;
		for (int k = 0; command[k] && k < AB_MAX_ARGS - 1; k++) {
			cfg->arm[a].argv[k] = strdup(command[k]);
			if (!cfg->arm[a].argv[k])
				return -ENOMEM;
		}
	}
	return 0;
}

/* ---- one trial --------------------------------------------------------- */

struct trial {
	int arm;
	double metric;                /* the figure, higher is better */
	double wall;                  /* seconds */
	struct abfig_steps st;        /* the step report merged over ranks (st.n 0: none) */
	double counter[AB_COUNTERS];  /* rates per step (per s without steps); shares as they are */
	struct abw_trial watch;
};

/* The host's counters: name, unit, where read, the mechanism a change
 * points at, and the least change that can explain anything. */
static const struct counter_row {
	const char *name;
	const char *source;
	const char *mechanism;
	double floor;                 /* per step (or s) */
} host_rows[AB_C_TRIAL_FIRST] = {
	[AB_C_TLB_SHOOTDOWNS] = { "tlb_shootdowns", "tlb.h: the host's source", "munmap/madvise churn (TLB shootdowns)",
				  1 },
	[AB_C_COMPACT_STALL] = { "compact_stall", "/proc/vmstat compact_stall", "THP compaction", 0.05 },
	[AB_C_NUMA_HINT_FAULTS] = { "numa_hint_faults", "/proc/vmstat numa_hint_faults", "automatic NUMA balancing",
				    10 },
	[AB_C_NUMA_PAGES_MIGRATED] = { "numa_pages_migrated", "/proc/vmstat numa_pages_migrated",
				       "automatic NUMA balancing", 10 },
	[AB_C_NUMA_MISS] = { "numa_miss", "/proc/vmstat numa_miss", "placement (remote memory)", 10 },
	[AB_C_CPU_PRESSURE_MS] = { "cpu_pressure_ms", "/proc/pressure/cpu some total (the whole host)",
				   "CPU contention (PSI: runnable, no CPU)", 0.5 },
};

/* The trial's own counters (abwatch's rows, in its order): which are
 * counts over the trial (a rate per step or s), and their floors. */
static const struct {
	bool rate;
	double floor;
} trial_rows[ABW_N] = {
	[ABW_THROTTLED_PERIODS] = { true, 0.05 },
	[ABW_THROTTLED_MS] = { true, 0.5 },
	[ABW_CG_CPU_PRESSURE_MS] = { true, 0.5 },
	[ABW_CG_MEM_PRESSURE_MS] = { true, 0.5 },
	[ABW_MEM_EVENTS] = { true, 0.05 },
	[ABW_CG_SWITCHES] = { true, 2 },
	[ABW_CG_MIGRATIONS] = { true, 1 },
	[ABW_CG_FAULTS] = { true, 10 },
	[ABW_FOREIGN_CPU_SHARE] = { false, 0.02 },
	[ABW_IRQ_SHARE] = { false, 0.01 },
	[ABW_AFFINITY_CHANGES] = { false, 0.5 },
};

_Static_assert(AB_COUNTERS - AB_C_TRIAL_FIRST == ABW_N, "ab's trial counters are abwatch's");

const char *ab_counter_name(enum ab_counter c)
{
	if ((unsigned)c < AB_C_TRIAL_FIRST)
		return host_rows[c].name;
	return (unsigned)c < AB_COUNTERS ? abw_rows[c - AB_C_TRIAL_FIRST].name : "?";
}

static const char *counter_mechanism(int c)
{
	return c < AB_C_TRIAL_FIRST ? host_rows[c].mechanism : abw_rows[c - AB_C_TRIAL_FIRST].mechanism;
}

static bool counter_is_rate(int c)
{
	return c < AB_C_TRIAL_FIRST || trial_rows[c - AB_C_TRIAL_FIRST].rate;
}

static double counter_floor(int c)
{
	return c < AB_C_TRIAL_FIRST ? host_rows[c].floor : trial_rows[c - AB_C_TRIAL_FIRST].floor;
}

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

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static char *fmt_int(int v)
{
	char *s = NULL;

	return asprintf(&s, "%d", v) < 0 ? NULL : s;
}

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

/* Apply the arm's policy (if any) and return the journal state dir. */
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
	p = policy_load(arm->policy, policy_trust_flags(), err);
	if (!p)
		return err->code;
	t = cfg->topology ? topo_load_xml(cfg->topology, err) : topo_load_host(cfg->sysroot, err);
	root = fsroot_open(cfg->sysroot ? cfg->sysroot : "/");
	if (!t || !root) {
		policy_free(p);
		topo_free(t);
		fsroot_free(root);
		return t ? err_set(err, -errno, "%s: %s", cfg->sysroot ? cfg->sysroot : "/", strerror(errno)) : err->code;
	}
	/* the default workload's ranks, or the plan's default for a command
	 * of the user's (whose rank count is not ours to know) */
	pl = plan_build(p, t, arm->argv[0] ? 0 : AB_DEFAULT_WORLD, root, err);
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

/* A signal that stops the experiment (SIGINT, SIGTERM, SIGHUP): the job
 * is stopped, its policy reverted, and ab_run returns -EINTR. */
static volatile sig_atomic_t ab_stop;

static void on_stop(int sig)
{
	ab_stop = sig;
}

/* The job's environment: ours, with the step report's file and fd, built
 * before fork (the child only execs).  NULL on ENOMEM. */
static char **job_env(const struct trial_files *f, int fd, char *bufs[2])
{
	extern char **environ;
	size_t n = 0, k = 0;
	char **env;

	while (environ[n])
		n++;
	env = calloc(n + 3, sizeof(*env));
	if (!env || asprintf(&bufs[0], STEPS_ENV_FILE "=%s", f->steps) < 0)
		return free(env), NULL;
	if (asprintf(&bufs[1], STEPS_ENV_FD "=%d", fd) < 0)
		return free(bufs[0]), free(env), NULL;
	for (size_t i = 0; i < n; i++)
		if (strncmp(environ[i], STEPS_ENV_FILE "=", sizeof(STEPS_ENV_FILE)) &&
		    strncmp(environ[i], STEPS_ENV_FD "=", sizeof(STEPS_ENV_FD)))
			env[k++] = environ[i];
	env[k++] = bufs[0];
	env[k++] = bufs[1];
	env[k] = NULL;
	return env;
}

/* In the forked child: its own process group (a stop reaches the whole
 * job), its trial cgroup, wait until the parent watches, then exec argv
 * with stdout and stderr in the trial's files and the step report's fd
 * inherited.  Never returns. */
static _Noreturn void exec_workload(char **argv, char **env, const struct trial_files *f, int steps_fd, int go[2],
				    const struct abwatch *w)
{
	char x;
	int fd;

	setpgid(0, 0);
	close(go[1]);
	if (abwatch_child(w) < 0 || read(go[0], &x, 1) != 1)
		_exit(126);
	fd = open(f->out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd >= 0)
		dup2(fd, 1);
	fd = open(f->err, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd >= 0)
		dup2(fd, 2);
	fcntl(steps_fd, F_SETFD, 0);
	execvpe(argv[0], argv, env);
	fprintf(stderr, "%s: %s\n", argv[0], strerror(errno));
	_exit(127);
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
			stopped = now_s();
		} else if (stopped && now_s() - stopped > 3) {
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
static int run_workload(const struct tlb_counter *tlb, char **argv, const struct trial_files *f, double c0[AB_COUNTERS],
			double c1[AB_COUNTERS], struct trial *t, int *ret_status, struct ab_result *res,
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
		r = root ? err->code : err_set(err, -errno, "/: %s", strerror(errno));
		goto out;
	}
	fd = open(f->steps, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0 || !(env = job_env(f, fd, bufs)) || pipe2(go, O_CLOEXEC) < 0) {
		r = err_set(err, fd < 0 ? -errno : -ENOMEM, "%s: %s", fd < 0 ? f->steps : "trial", strerror(errno));
		abwatch_end(w, &t->watch, &werr);
		goto out;
	}
	host_counters(tlb, c0, res);
	t0 = now_s();
	pid = fork();
	if (pid == 0)
		exec_workload(argv, env, f, fd, go, w);
	close(go[0]);
	if (pid > 0) {
		setpgid(pid, pid);
		if (abwatch_started(w, pid, &werr) < 0)
			log_msg(LOG_DEBUG, "%s: watch: %s", f->label, werr.msg);
	}
	/* the child waits on the pipe; with no child (fork failed) there is
	 * no reader, and a write would raise SIGPIPE */
	if (pid > 0 && write(go[1], "x", 1) != 1)
		kill(pid, SIGKILL);
	close(go[1]);
	if (pid > 0)
		status = wait_job(pid, w);
	t->wall = now_s() - t0;
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

#define AB_MAX_TRIALS 400          /* both arms, warm-ups not counted: the last look */
#define AB_REFUSE_PAIRS 24         /* before a refusal: the sd of 12 pairs is off by 20% (one sd) */
#define AB_OUTPUT_MAX (256u << 20)    /* what --metric reads of a trial's output, and of its step file */

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
		abfig_metric_scan(re, buf, len, &v[i], &n[i], NULL);
		free(buf);
	}
	*ret_n = n[0] + n[1];
	/* stdout's lines when it has any (the job's own log), else stderr's */
	return n[0] ? v[0] : v[1];
}

/* The trial's figure and steps.  0, or a reason it has none (said in res). */
static int trial_figure(const struct ab_config *cfg, const regex_t *re, enum abfig_source want, const struct trial_files *f,
			struct trial *t, const char **why)
{
	struct steps s = { 0 };
	struct nt_err err = { 0 };
	int n;

	if (steps_read(f->steps, AB_OUTPUT_MAX, &s, &err) == 0) {
		abfig_steps_merge(&s, cfg->skip_steps, &t->st, &err);
		steps_release(&s);
	}
	switch (want) {
	case ABFIG_METRIC:
		t->metric = abfig_metric_figure(metric_of_output(re, f, &n), cfg->metric_kind);
		if (!n) {
			*why = "--metric matched no line of its output (stdout, then stderr)";
			return -1;
		}
		return 0;
	case ABFIG_STEPS:
		t->metric = abfig_steps_figure(&t->st);
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
static void trial_counters(struct trial *t, const double c0[AB_COUNTERS], const double c1[AB_COUNTERS],
			   struct ab_result *res)
{
	double per = t->st.n ? t->st.n : t->wall > 0 ? t->wall : 1;

	for (int k = 0; k < AB_C_TRIAL_FIRST; k++)
		t->counter[k] = (c1[k] - c0[k]) / per;
	for (int k = 0; k < ABW_N; k++) {
		int c = AB_C_TRIAL_FIRST + k;

		if (t->watch.why[k][0])
			not_countable(res, c, t->watch.why[k]);
		t->counter[c] = t->watch.v[k] / (trial_rows[k].rate ? per : 1);
	}
}

/* Run one trial of arm a; want: the figure's source (the warm-up trials
 * find it: pass ABFIG_WALL and get it from *ret_source).  0; -errno with
 * err (bad input, or stopped by a signal: -EINTR); 1 when the arm's command
 * failed (res->error filled). */
static int run_trial(const struct ab_config *cfg, const regex_t *re, enum abfig_source want,
		     const struct tlb_counter *tlb, int a, int index, struct trial *t, struct ab_result *res,
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
	r = run_workload(tlb, argv, &f, c0, c1, t, &status, res, err);
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

/* ---- schedule and statistics ------------------------------------------- */

static void trial_free(struct trial *t)
{
	abfig_steps_release(&t->st);
	abw_trial_release(&t->watch);
}

/* Every step of an arm's trials (phase < 0: the step's time; else that
 * phase's), in run order. */
static void pooled(const struct trial *tr, int n, int arm, int phase, double **ret, size_t *ret_n)
{
	size_t total = 0, k = 0;

	for (int i = 0; i < n; i++)
		if (tr[i].arm == arm)
			total += (size_t)tr[i].st.n;
	*ret = calloc(total + 1, sizeof(double));
	for (int i = 0; i < n && *ret; i++)
		if (tr[i].arm == arm)
			for (int s = 0; s < tr[i].st.n; s++)
				(*ret)[k++] = phase < 0 ? tr[i].st.ms[s] : tr[i].st.phase_ms[phase][s];
	*ret_n = k;
}

/* The figure of each trial, arm by arm; the verdict from the pairs: each
 * ABBA (BAAB) block of trials 4b..4b+3 is two adjacent pairs, AB and BA,
 * each one difference of log figures.  Linear drift cancels over the two
 * pairs of a block, the load of the moment within a pair. */
static void analyse_metric(const struct ab_config *cfg, const struct trial *tr, int n, double alpha,
			   struct ab_result *res)
{
	double *m[2], d[512];
	int k[2] = { 0, 0 }, nb = 0;
	struct stats_blocks sb;

	for (int a = 0; a < 2; a++) {
		m[a] = calloc((size_t)n + 1, sizeof(double));
		free(res->metric[a]);
		res->metric[a] = m[a];
	}
	for (int i = 0; i < n && m[0] && m[1]; i++)
		m[tr[i].arm][k[tr[i].arm]++] = tr[i].metric;
	res->trials[0] = k[0];
	res->trials[1] = k[1];
	for (int i = 0; i + 1 < 4 * (n / 4) && nb < 512; i += 2) {
		const struct trial *x = &tr[i], *y = &tr[i + 1];

		if (x->arm != y->arm)
			d[nb++] = x->arm ? log(x->metric) - log(y->metric) : log(y->metric) - log(x->metric);
	}
	res->alpha_used = alpha;
	res->blocks = nb;
	if (stats_block_ratio(d, (size_t)nb, alpha, &sb) < 0) {
		res->verdict = VERDICT_INCONCLUSIVE;
		res->ratio = res->ci_lo = res->ci_hi = res->p = 1;
		return;
	}
	res->ratio = sb.ratio;
	res->ci_lo = sb.ci_lo;
	res->ci_hi = sb.ci_hi;
	res->p = sb.p;
	res->noise = sb.sd;
	/* the typical pair's spread, one outlier pair left out (1.4826 MAD:
	 * the sd of a normal) */
	res->noise_typical = 1.4826 * stats_mad(d, (size_t)nb);
	res->verdict = stats_verdict(res->p, res->ratio, res->ci_lo, res->ci_hi, alpha, cfg->threshold);
}

/* Per-step times: the median, the stalls, the shift between the arms, and
 * the series over time (kept in res, with where each trial ends). */
static void analyse_steps(const struct trial *tr, int n, struct ab_result *res)
{
	double *steps[2];
	size_t ns[2];

	for (int a = 0; a < 2; a++) {
		double med, mad, limit;

		pooled(tr, n, a, -1, &steps[a], &ns[a]);
		/* a job without step reports: no step statistics (0, never
		 * NaN, which JSON cannot carry) */
		med = ns[a] ? stats_median(steps[a], ns[a]) : 0;
		mad = ns[a] ? stats_mad(steps[a], ns[a]) : 0;
		res->step_p50[a] = med;
		limit = fmax(3 * med, med + 10 * mad);
		res->stalls[a] = 0;
		res->stall_ms[a] = 0;
		res->stall_limit[a] = limit;
		for (size_t s = 0; s < ns[a]; s++)
			if (steps[a][s] > limit) {
				res->stalls[a]++;
				res->stall_ms[a] += steps[a][s];
			}
	}
	res->hl_shift_ms = ns[0] && ns[1] ? stats_hodges_lehmann(steps[0], ns[0], steps[1], ns[1]) : 0;
	for (int a = 0; a < 2; a++) {
		int t = 0, end = 0;

		free(res->series[a]);
		free(res->trial_end[a]);
		res->series[a] = steps[a];
		res->n_series[a] = (int)ns[a];
		res->trial_end[a] = calloc((size_t)res->trials[a] + 1, sizeof(int));
		for (int i = 0; i < n && res->trial_end[a]; i++)
			if (tr[i].arm == a)
				res->trial_end[a][t++] = end += tr[i].st.n;
	}
}

/* The mean of phase name's time per step over an arm's steps (a step that
 * did not report it spent 0 ms in it; -1: the arm has no steps).  The mean,
 * not the median: a pause every tenth step is a tenth of its length per
 * step, and would be 0 at the median. */
static double phase_mean(const struct trial *tr, int n, int arm, const char *name)
{
	double sum = 0;
	long steps = 0;

	for (int i = 0; i < n; i++) {
		if (tr[i].arm != arm)
			continue;
		steps += tr[i].st.n;
		for (int p = 0; p < tr[i].st.n_phases; p++)
			if (!strcmp(tr[i].st.phase[p], name))
				for (int s = 0; s < tr[i].st.n; s++)
					sum += tr[i].st.phase_ms[p][s];
	}
	return steps ? sum / (double)steps : -1;
}

/* The phase (by the names the job reported) whose mean per step changed
 * most from A to B. */
static void analyse_phases(const struct trial *tr, int n, struct ab_result *res)
{
	res->grown_phase[0] = '\0';
	res->grown_by_ms = 0;
	for (int i = 0; i < n; i++)
		for (int p = 0; p < tr[i].st.n_phases; p++) {
			const char *name = tr[i].st.phase[p];
			double ma, mb;

			if (!strcmp(name, res->grown_phase))
				continue;
			ma = phase_mean(tr, n, 0, name);
			mb = phase_mean(tr, n, 1, name);
			if (ma >= 0 && mb >= 0 && fabs(mb - ma) > fabs(res->grown_by_ms)) {
				res->grown_by_ms = mb - ma;
				snprintf(res->grown_phase, sizeof(res->grown_phase), "%s", name);
			}
		}
}

/* Stragglers: the skew between ranks, and which rank lags. */
static void analyse_ranks(const struct trial *tr, int n, struct ab_result *res)
{
	for (int a = 0; a < 2; a++) {
		double sk[512];
		int ns_ = 0, votes[64] = { 0 }, best = 0;

		for (int i = 0; i < n && ns_ < 512; i++)
			if (tr[i].arm == a && tr[i].st.skew > 0) {
				sk[ns_++] = tr[i].st.skew;
				if (tr[i].st.slowest >= 0 && tr[i].st.slowest < 64)
					votes[tr[i].st.slowest]++;
			}
		for (int r = 1; r < 64; r++)
			if (votes[r] > votes[best])
				best = r;
		res->rank_skew[a] = ns_ ? stats_median(sk, (size_t)ns_) : 0;
		res->slowest_rank[a] = best;
		res->slowest_share[a] = ns_ ? (double)votes[best] / ns_ : 0;
	}
}

/* The explanations: each countable counter, A's trials against B's.  A
 * counter is claimed only when it moved beyond its own A/A noise (the
 * smaller MAD of the two arms: the spread of the arm that did not change, and its floor) and the rank test says so. */
static void analyse_counters(const struct ab_config *cfg, const struct trial *tr, int n, struct ab_result *res)
{
	res->n_expl = 0;
	for (int c = 0; c < AB_COUNTERS; c++) {
		double ca[512], cb[512];
		int na = 0, nb = 0;
		struct ab_explanation *e;

		if (res->not_countable[c][0])
			continue;       /* a 0 that means "cannot see" explains nothing */
		for (int i = 0; i < n && na < 512 && nb < 512; i++) {
			if (tr[i].arm == 0)
				ca[na++] = tr[i].counter[c];
			else
				cb[nb++] = tr[i].counter[c];
		}
		e = &res->expl[res->n_expl++];
		e->counter = ab_counter_name(c);
		e->mechanism = counter_mechanism(c);
		e->unit = !counter_is_rate(c) ? (c < AB_C_TRIAL_FIRST ? "" : abw_rows[c - AB_C_TRIAL_FIRST].unit)
			  : res->per_step ? "per step" : "per s";
		e->a = stats_median(ca, (size_t)na);
		e->b = stats_median(cb, (size_t)nb);
		e->noise = fmin(stats_mad(ca, (size_t)na), stats_mad(cb, (size_t)nb));
		e->p = stats_mann_whitney(ca, (size_t)na, cb, (size_t)nb, NULL);
		e->claimed = e->p < cfg->alpha && fabs(e->b - e->a) > fmax(2 * e->noise, counter_floor(c));
	}
}

/* The explanations: claimed ones first, by their change over their noise;
 * then the rest by significance. */
static double strength(const struct ab_explanation *x)
{
	return fabs(x->b - x->a) / (x->noise + 1e-9 + 1e-3 * fmax(fabs(x->a), fabs(x->b)));
}

static void rank_explanations(struct ab_result *res)
{
	for (int i = 0; i < res->n_expl; i++)
		for (int j = i + 1; j < res->n_expl; j++) {
			struct ab_explanation *x = &res->expl[i], *y = &res->expl[j];
			bool swap = y->claimed != x->claimed ? y->claimed
				    : x->claimed ? strength(y) > strength(x)
				    : y->p < x->p - 1e-12 || (fabs(y->p - x->p) < 1e-12 && strength(y) > strength(x));

			if (swap) {
				struct ab_explanation t = *x;

				*x = *y;
				*y = t;
			}
		}
}

/* Who else ran on the ranks' CPUs, throttling, IRQs: each arm's watches
 * summed, and the lines that tell them apart. */
static void analyse_evidence(const struct trial *tr, int n, struct ab_result *res)
{
	struct abw_arm arm[2];
	char buf[4096];
	int r;

	for (int a = 0; a < 2; a++)
		abw_arm_init(&arm[a]);
	for (int i = 0; i < n; i++)
		abw_arm_add(&arm[tr[i].arm], &tr[i].watch);
	free(res->evidence);
	buf[0] = '\0';
	r = abw_explain(&arm[0], &arm[1], buf, sizeof(buf));
	res->evidence = (r > 0 || r == -ENOSPC) && buf[0] ? strdup(buf) : NULL;
	for (int a = 0; a < 2; a++) {
		json_decref(res->arm_json[a]);
		res->arm_json[a] = abw_arm_json(&arm[a]);
		abw_arm_release(&arm[a]);
	}
}

/* alpha: the level of this look (see ab_run) */
static void analyse(const struct ab_config *cfg, const struct trial *tr, int n, double alpha, struct ab_result *res)
{
	analyse_metric(cfg, tr, n, alpha, res);
	analyse_steps(tr, n, res);
	analyse_phases(tr, n, res);
	analyse_ranks(tr, n, res);
	analyse_counters(cfg, tr, n, res);
	rank_explanations(res);
	analyse_evidence(tr, n, res);
}

/* What the figure is, in words, for a source. */
static void name_figure(const struct ab_config *cfg, const struct trial *w, struct ab_result *res)
{
	res->per_step = w->st.n > 0;
	switch (res->source) {
	case ABFIG_METRIC:
		snprintf(res->figure, sizeof(res->figure), "--metric (%s)",
			 cfg->metric_kind == ABFIG_TIME ? "a time: 1 / value" : "a throughput");
		break;
	case ABFIG_STEPS:
		snprintf(res->figure, sizeof(res->figure), "%s over the reported steps",
			 w->st.samples > 0 ? "samples/s" : "steps/s");
		break;
	default:
		snprintf(res->figure, sizeof(res->figure), "1 / wall time of a trial");
	}
}

/* Handlers for the stops (SIGINT, SIGTERM, SIGHUP) while trials run. */
static void stops_catch(struct sigaction old[3], bool restore)
{
	static const int sigs[3] = { SIGINT, SIGTERM, SIGHUP };
	struct sigaction sa = { .sa_handler = on_stop };

	sigemptyset(&sa.sa_mask);
	for (int i = 0; i < 3; i++)
		sigaction(sigs[i], restore ? &old[i] : &sa, restore ? NULL : &old[i]);
}

/* The warm-up: one trial of each arm, discarded.  The first runs of an
 * experiment are cold (binaries, page cache, allocator), a one-time effect
 * that ABBA blocks, which cancel linear drift, do not remove.  They also
 * find the figure's source: --metric, else step reports when both wrote
 * one, else the wall time. */
static int warm_up(const struct ab_config *cfg, const regex_t *re, const struct tlb_counter *tlb, struct ab_result *res,
		   struct nt_err *err)
{
	struct trial w[2];
	int r = 0;

	memset(w, 0, sizeof(w));
	for (int a = 0; a < 2 && !r; a++)
		r = run_trial(cfg, re, cfg->metric ? ABFIG_METRIC : ABFIG_WALL, tlb, a, -1 - a, &w[a], res, err);
	if (!r) {
		res->source = cfg->metric ? ABFIG_METRIC : w[0].st.n && w[1].st.n ? ABFIG_STEPS : ABFIG_WALL;
		name_figure(cfg, &w[0], res);
		if (!w[0].st.n != !w[1].st.n)
			log_msg(LOG_WARNING, "only arm %s wrote step reports in its warm-up: both are judged by %s",
				w[0].st.n ? "A" : "B", res->figure);
	}
	trial_free(&w[0]);
	trial_free(&w[1]);
	return r;
}

/* Would an A/A at this noise decide within the budget?  Else refuse: the
 * verdict stays inconclusive and the report says the budget it needs. */
static void needed_budget(const struct ab_config *cfg, double start, double trials_s, double alpha_look,
			  struct ab_result *res)
{
	int need = stats_blocks_needed(res->noise, alpha_look, cfg->threshold);
	double pair_s = res->blocks ? trials_s / res->blocks : 0;

	/* the warm-up and the looks' own time, then the pairs (-1: never) */
	res->needed_s = need == INT_MAX ? -1 : (now_s() - start - trials_s) + need * pair_s;
}

/* Refuse when the budget cannot resolve the threshold at all: when, at the
 * noise seen so far (after AB_REFUSE_PAIRS pairs; the smaller of the sd and
 * the typical pair's spread, since one stalled pair inflates the sd and
 * more pairs dilute it), the interval after every pair the budget still
 * has room for would be wider (its half width) than the threshold.  Then
 * neither a no-difference nor an effect of the threshold's size can be
 * called, only a far larger effect, which would have shown by now.  The
 * point estimate is not used: early on it wanders (an A/A whose first pairs
 * read 0.986, a true 2% slowdown read as 0.991 after 26 pairs).  The budget
 * the report states is the one an A/A at this noise needs. */
static bool refuse(const struct ab_config *cfg, double start, double trials_s, double alpha_look, struct ab_result *res)
{
	double sd = fmin(res->noise, res->noise_typical), pair_s, left, hw = INFINITY;
	int n;

	needed_budget(cfg, start, trials_s, alpha_look, res);
	res->refused = false;
	if (res->verdict != VERDICT_INCONCLUSIVE || res->blocks < AB_REFUSE_PAIRS)
		return false;
	pair_s = trials_s / res->blocks;
	left = cfg->budget_s - (now_s() - start);
	n = res->blocks + (pair_s > 0 && left > 0 ? (int)fmin(left / pair_s, AB_MAX_TRIALS / 2) : 0);
	if (isfinite(sd))
		hw = stats_t_quantile(alpha_look, n - 1) * sd / sqrt(n);
	res->refused = !(hw <= log1p(cfg->threshold));
	return res->refused;
}

/* One block of four trials, ABBA (first 0) or BAAB (first 1), appended to
 * *tr (n used, cap allocated).  Returns 0, or a trial's error (its trial
 * freed, the block cut short). */
static int run_block(const struct ab_config *cfg, const regex_t *re, const struct tlb_counter *tlb, int first,
		     struct trial **tr, int *n, int *cap, struct ab_result *res, struct nt_err *err)
{
	static const int order[4] = { 0, 1, 1, 0 };
	int r = 0;

	for (int k = 0; k < 4 && !r; k++) {
		if (*n == *cap) {
			int c = *cap ? 2 * *cap : 16;
			struct trial *tmp = realloc(*tr, (size_t)c * sizeof(**tr));

			if (!tmp)
				return err_set(err, -ENOMEM, "out of memory");
			*tr = tmp;
			*cap = c;
		}
		r = run_trial(cfg, re, res->source, tlb, order[k] ^ first, *n, &(*tr)[*n], res, err);
		if (r == 0)
			(*n)++;
		else
			trial_free(&(*tr)[*n]);
	}
	return r;
}

/* The blocks to run before the next look, n trials run: the first look
 * after --trials per arm; each later one after half as many trials again,
 * so that the looks grow only with log n. */
static int look_blocks(const struct ab_config *cfg, int n)
{
	return n == 0 ? (cfg->trials + 1) / 2 : (n / 8 > 1 ? n / 8 : 1);
}

/* Every look at the growing data is another chance of a false alarm: alpha
 * is split evenly over the most looks the schedule can take before
 * AB_MAX_TRIALS (Bonferroni: 10 looks at the default 8 trials), so that
 * the experiment's false-alarm rate is at most alpha, however many looks
 * the budget allows. */
static double look_alpha(const struct ab_config *cfg)
{
	int n = 0, k = 0;

	do {
		n += 4 * look_blocks(cfg, n);
		k++;
	} while (n < AB_MAX_TRIALS);
	return cfg->alpha / k;
}

int ab_run(const struct ab_config *cfg, struct ab_result *res, struct nt_err *err)
{
	struct trial *tr = NULL;
	int n = 0, cap = 0, r = 0;
	uint64_t rng = cfg->seed * 0x9e3779b97f4a7c15ull + 1;
	double start = now_s(), trials_s = 0, alpha_look = look_alpha(cfg);
	struct fsroot *host = fsroot_open("/");
	struct tlb_counter tlb = { .source = TLB_SRC_NONE, .why = "/ cannot be opened" };
	struct sigaction old[3];
	regex_t re;

	memset(res, 0, sizeof(*res));
	if (cfg->metric && abfig_metric_compile(cfg->metric, &re, err) < 0) {
		fsroot_free(host);
		return err->code;
	}
	ab_stop = 0;
	stops_catch(old, false);
	/* TLB shootdowns from the source this host has (a probe decides,
	 * once for the experiment), or not countable, said so */
	if (host)
		tlb_counter_open(&tlb, host, tlb_sources_from_env());
	r = warm_up(cfg, cfg->metric ? &re : NULL, &tlb, res, err);
	for (;;) {
		int blocks = look_blocks(cfg, n);

		if (r)
			break;

		for (int b = 0; b < blocks && !r; b++) {
			double t0 = now_s();

			if (n > 0 && b > 0 && now_s() - start > cfg->budget_s)
				break;      /* out of time: look at the whole blocks run */
			rng ^= rng << 13;
			rng ^= rng >> 7;
			rng ^= rng << 17;
			r = run_block(cfg, cfg->metric ? &re : NULL, &tlb, (int)(rng & 1), &tr, &n, &cap, res, err);
			trials_s += now_s() - t0;
		}
		if (r)
			break;
		analyse(cfg, tr, n, alpha_look, res);
		if (res->verdict != VERDICT_INCONCLUSIVE || now_s() - start > cfg->budget_s || n >= AB_MAX_TRIALS)
			break;
		if (refuse(cfg, start, trials_s, alpha_look, res))
			break;
		/* bisect asks only "regression or not": once a slowdown beyond
		 * the threshold is excluded, more trials cannot make it one */
		if (cfg->regression_only && res->ci_lo >= 1 - cfg->threshold)
			break;
	}
	if (!r && res->verdict == VERDICT_INCONCLUSIVE && !res->refused)
		needed_budget(cfg, start, trials_s, alpha_look, res);
	res->elapsed_s = now_s() - start;
	for (int i = 0; i < n; i++)
		trial_free(&tr[i]);
	free(tr);
	tlb_counter_close(&tlb);
	fsroot_free(host);
	if (cfg->metric)
		regfree(&re);
	stops_catch(old, true);
	return r < 0 ? r : 0;
}

void ab_result_release(struct ab_result *res)
{
	for (int a = 0; a < 2; a++) {
		free(res->metric[a]);
		free(res->series[a]);
		free(res->trial_end[a]);
		json_decref(res->arm_json[a]);
	}
	free(res->evidence);
	memset(res, 0, sizeof(*res));
}

/* ---- output ------------------------------------------------------------ */

static json_t *explanations_json(const struct ab_result *res)
{
	json_t *ex = json_array();

	for (int i = 0; i < res->n_expl; i++) {
		const struct ab_explanation *e = &res->expl[i];

		json_array_append_new(ex, json_pack("{s:s, s:s, s:s, s:f, s:f, s:f, s:f, s:b}", "counter", e->counter,
						    "mechanism", e->mechanism, "unit", e->unit, "a", e->a, "b", e->b,
						    "noise", e->noise, "p_value", e->p, "claimed", e->claimed));
	}
	return ex;
}

static json_t *evidence_json(const struct ab_result *res)
{
	json_t *ev = json_array();
	const char *p = res->evidence;

	while (p && *p) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);

		json_array_append_new(ev, json_stringn(p, len));
		p += len + (nl != NULL);
	}
	return ev;
}

json_t *ab_json(const struct ab_config *cfg, const struct ab_result *res)
{
	json_t *doc, *ma, *mb, *nc;

	if (res->error)
		return json_pack("{s:s, s:s}", "verdict", "error", "error", res->error_msg);
	ma = json_array();
	mb = json_array();
	for (int i = 0; i < res->trials[0]; i++)
		json_array_append_new(ma, json_real(res->metric[0][i]));
	for (int i = 0; i < res->trials[1]; i++)
		json_array_append_new(mb, json_real(res->metric[1][i]));
	doc = json_pack("{s:s, s:f, s:f, s:f, s:f, s:i, s:i, s:i, s:f, s:f, s:f, s:o, s:o, s:o}",
			"verdict", stats_verdict_name(res->verdict), "ratio", res->ratio, "ci_low", res->ci_lo,
			"ci_high", res->ci_hi, "p_value", res->p, "trials_a", res->trials[0], "trials_b", res->trials[1],
			"pairs", res->blocks, "noise", res->noise, "hodges_lehmann_step_ms", res->hl_shift_ms,
			"threshold", cfg->threshold,
			"stalls", json_pack("{s:{s:i, s:f, s:f}, s:{s:i, s:f, s:f}, s:s, s:f}",
					    "a", "count", res->stalls[0], "ms", res->stall_ms[0], "step_ms_p50", res->step_p50[0],
					    "b", "count", res->stalls[1], "ms", res->stall_ms[1], "step_ms_p50", res->step_p50[1],
					    "grown_phase", res->grown_phase, "grown_by_ms", res->grown_by_ms),
			"explanations", explanations_json(res),
			"metric", json_pack("{s:s, s:s, s:s, s:o, s:o}", "source", abfig_source_name(res->source),
					    "name", res->figure, "counters", res->per_step ? "per step" : "per s", "a", ma,
					    "b", mb));
	if (!doc)
		return NULL;
	json_object_set_new(doc, "elapsed_s", json_real(res->elapsed_s));
	json_object_set_new(doc, "alpha", json_real(cfg->alpha));
	json_object_set_new(doc, "alpha_last_look", json_real(res->alpha_used));
	json_object_set_new(doc, "refused", json_boolean(res->refused));
	json_object_set_new(doc, "needed_budget_s", res->needed_s > 0 ? json_real(res->needed_s) : json_null());
	json_object_set_new(doc, "evidence", evidence_json(res));
	json_object_set_new(doc, "watch", json_pack("{s:O?, s:O?}", "a", res->arm_json[0], "b", res->arm_json[1]));
	if (res->rank_skew[0] > 0 || res->rank_skew[1] > 0)
		json_object_set_new(doc, "rank_skew", json_pack("{s:f, s:f, s:i, s:i, s:f, s:f}", "a", res->rank_skew[0],
			"b", res->rank_skew[1], "slowest_rank_a", res->slowest_rank[0], "slowest_rank_b",
			res->slowest_rank[1], "slowest_share_a", res->slowest_share[0], "slowest_share_b",
			res->slowest_share[1]));
	nc = json_object();
	for (int c = 0; c < AB_COUNTERS; c++)
		if (res->not_countable[c][0])
			json_object_set_new(nc, ab_counter_name(c), json_string(res->not_countable[c]));
	json_object_set_new(doc, "not_countable", nc);
	return doc;
}

static void print_effect(FILE *out, const struct ab_config *cfg, const struct ab_result *res)
{
	fprintf(out, "verdict: %s (B vs A, threshold %.1f%%, alpha %.2f spent over the looks)\n",
		res->refused ? "inconclusive, refused" : stats_verdict_name(res->verdict), cfg->threshold * 100,
		cfg->alpha);
	fprintf(out, "effect: B/A of %s = %.4f, %.1f%% CI [%.4f, %.4f], p = %.3g (t over %d AB pairs of ABBA blocks), "
		"%d + %d trials, %.0f s\n", res->figure, res->ratio, (1 - res->alpha_used) * 100, res->ci_lo,
		res->ci_hi, res->p, res->blocks, res->trials[0], res->trials[1], res->elapsed_s);
	fprintf(out, "noise: one pair's B/A varies by %.2f%% (sd)", (exp(res->noise) - 1) * 100);
	if (res->needed_s > 0 && res->verdict == VERDICT_INCONCLUSIVE)
		fprintf(out, "; deciding at %.1f%% needs a budget of about %.0f s (--budget)", cfg->threshold * 100,
			res->needed_s);
	else if (res->needed_s < 0 && res->verdict == VERDICT_INCONCLUSIVE)
		fprintf(out, "; no budget decides at %.1f%%", cfg->threshold * 100);
	fputc('\n', out);
	if (res->refused)
		fprintf(out, "refused: the noise exceeds what --threshold %.1f%% can judge within --budget %.0f s; "
			"no verdict is given\n", cfg->threshold * 100, cfg->budget_s);
}

int ab_print(FILE *out, const struct ab_config *cfg, const struct ab_result *res)
{
	int shown = 0;

	if (res->error) {
		fprintf(out, "verdict: error — %s\n", res->error_msg);
		return ferror(out) ? -EIO : 0;
	}
	print_effect(out, cfg, res);
	if (res->n_series[0] || res->n_series[1]) {
		fprintf(out, "steps: p50 A %.2f ms, B %.2f ms; Hodges-Lehmann shift %+.2f ms; largest phase change (mean per step): %s %+.2f ms\n",
			res->step_p50[0], res->step_p50[1], res->hl_shift_ms, res->grown_phase[0] ? res->grown_phase : "-",
			res->grown_by_ms);
		fprintf(out, "stalls (> max(3 x median, median + 10 MAD)): A %d (%.0f ms), B %d (%.0f ms)\n",
			res->stalls[0], res->stall_ms[0], res->stalls[1], res->stall_ms[1]);
	} else {
		fprintf(out, "steps: none reported (no step report, so no stalls or phases: see NODETUNE_STEP_FILE)\n");
	}
	if (res->rank_skew[0] > 0 || res->rank_skew[1] > 0)
		fprintf(out, "ranks: step skew (slowest / fastest) A %.3f, B %.3f; slowest in B: rank %d (%.0f%% of steps)\n",
			res->rank_skew[0], res->rank_skew[1], res->slowest_rank[1], res->slowest_share[1] * 100);
	fprintf(out, "explanations (counters %s of trial, A -> B; claimed beyond their A/A noise):\n",
		res->per_step ? "per step" : "per second");
	for (int i = 0; i < res->n_expl && res->expl[i].claimed; i++, shown++)
		fprintf(out, "  %d. %-22s %10.3f -> %10.3f %s (noise %.3g, p = %.3g)  => %s\n", i + 1, res->expl[i].counter,
			res->expl[i].a, res->expl[i].b, res->expl[i].unit, res->expl[i].noise, res->expl[i].p,
			res->expl[i].mechanism);
	if (!shown)
		fprintf(out, "  (no counter moved beyond its noise)\n");
	if (res->evidence && res->evidence[0]) {
		fprintf(out, "evidence:\n");
		for (const char *p = res->evidence; *p;) {
			const char *nl = strchr(p, '\n');
			int len = nl ? (int)(nl - p) : (int)strlen(p);

			fprintf(out, "  %.*s\n", len, p);
			p += len + (nl != NULL);
		}
	}
	for (int c = 0; c < AB_COUNTERS; c++)
		if (res->not_countable[c][0])
			fprintf(out, "  (%s: not countable on this host: %s)\n", ab_counter_name(c), res->not_countable[c]);
	return ferror(out) ? -EIO : 0;
}
