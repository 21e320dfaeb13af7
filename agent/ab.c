/* ab.c — see ab.h.
 *
 * Divisions: specs; one trial (apply, run, read metric and counters,
 * revert); the schedule and the statistics; output.
 */
#include "ab.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "apply.h"
#include "fsroot.h"
#include "observe.h"
#include "plan.h"
#include "policy.h"
#include "tlb.h"
#include "topo.h"
#include "userfile.h"

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

/* ---- one trial --------------------------------------------------------- */

struct trial {
	int arm;
	double metric;
	double *steps;                /* per-step total ms (harness) */
	double *phase[5];             /* data wait, fwd, bwd, exposed comm, opt */
	int n_steps;
	double skew;                  /* slowest/fastest rank's compute; 0 without ranks */
	int slowest;
	double counter[AB_COUNTERS];  /* per step */
};

static const struct {
	const char *name;
	const char *mechanism;
} counters[AB_COUNTERS] = {
	[AB_C_INVOL_SWITCHES] = { "involuntary_switches", "CPU contention" },
	[AB_C_RUNQ_WAIT_MS] = { "runqueue_wait_ms", "CPU contention" },
	[AB_C_TLB_SHOOTDOWNS] = { "tlb_shootdowns", "munmap/madvise churn" },
	[AB_C_COMPACT_STALL] = { "compact_stall", "THP compaction" },
	[AB_C_NUMA_HINT_FAULTS] = { "numa_hint_faults", "automatic NUMA balancing" },
	[AB_C_NUMA_PAGES_MIGRATED] = { "numa_pages_migrated", "automatic NUMA balancing" },
	[AB_C_MINOR_FAULTS] = { "minor_faults", "allocation churn (page faults)" },
	[AB_C_NUMA_MISS] = { "numa_miss", "placement (remote memory)" },
	[AB_C_CPU_MIGRATIONS] = { "cpu_migrations", "lost affinity" },
	[AB_C_CONTEXT_SWITCHES] = { "context_switches", "CPU contention" },
	[AB_C_CPU_PRESSURE_MS] = { "cpu_pressure_ms", "CPU contention (PSI: runnable, no CPU)" },
	[AB_C_NR_THROTTLED] = { "nr_throttled", "cgroup CPU quota" },
	[AB_C_PAGE_FAULTS] = { "page_faults", "allocation churn (page faults)" },
};

/* counters of the trial's process tree from perf events (obs_perf order) */
static const enum ab_counter perf_slot[OBS_PERF_N] = {
	AB_C_CPU_MIGRATIONS, AB_C_CONTEXT_SWITCHES, AB_C_PAGE_FAULTS,
};

/* host counters from vmstat */
static const struct {
	enum ab_counter c;
	const char *key;
} vm_rows[] = {
	{ AB_C_COMPACT_STALL, "compact_stall" },
	{ AB_C_NUMA_HINT_FAULTS, "numa_hint_faults" },
	{ AB_C_NUMA_PAGES_MIGRATED, "numa_pages_migrated" },
	{ AB_C_NUMA_MISS, "numa_miss" },
};

const char *ab_counter_name(enum ab_counter c)
{
	return (unsigned)c < AB_COUNTERS ? counters[c].name : "?";
}

static bool perf_counter(int c)
{
	for (int k = 0; k < OBS_PERF_N; k++)
		if (perf_slot[k] == (enum ab_counter)c)
			return true;
	return false;
}

/* Mark c not countable here (the first reason given stays). */
static void not_countable(struct ab_result *res, enum ab_counter c, const char *why)
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
		int64_t x = obs_vmstat(root, vm_rows[i].key);

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
	out[AB_C_NR_THROTTLED] = (double)obs_total_throttled(root);
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

/* argv of the trial's workload; strings it allocates go into bufs */
static void build_argv(const struct ab_config *cfg, const struct ab_arm *arm, const char *json,
		       char **argv, char *bufs[], int *n_bufs)
{
	int n = 0;

	if (arm->argv[0]) {
		bool harness = strstr(arm->argv[0], "nodetune-harness") != NULL, has_json = false;

		for (int i = 0; arm->argv[i]; i++) {
			argv[n++] = arm->argv[i];
			has_json |= !strcmp(arm->argv[i], "--json");
		}
		if (harness && !has_json) {
			argv[n++] = "--json";
			argv[n++] = (char *)json;
		}
		argv[n] = NULL;
		return;
	}
	/* the default workload: the harness, world 2, each rank bound by nodetune */
	argv[n++] = "mpirun";
	argv[n++] = "-np";
	argv[n++] = "2";
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
	argv[n++] = "--json";
	argv[n++] = (char *)json;
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

/* A duration or count of the summary: a finite number >= 0.  Missing or
 * null (a counter the host cannot produce) reads as 0 when optional. */
static int json_nonneg(const json_t *obj, const char *key, bool optional, double *ret)
{
	const json_t *v = json_object_get(obj, key);
	double x;

	if (!v || json_is_null(v)) {
		*ret = 0;
		return optional ? 0 : -EINVAL;
	}
	if (!json_is_number(v))
		return -EINVAL;
	x = json_number_value(v);
	if (!isfinite(x) || x < 0)
		return -EINVAL;
	*ret = x;
	return 0;
}

static const char *const harness_phase[5] = { "data_wait_ms", "fwd_ms", "bwd_ms", "comm_exposed_ms", "opt_ms" };

/* The summary's part of run: the metric, the ranks, the counters. */
static int parse_harness_summary(const json_t *sum, struct ab_harness_run *run, struct nt_err *err)
{
	double world, batch, accum, p50;

	/* throughput at the median step: robust to the occasional stall,
	 * which the stall count reports on its own */
	if (!json_is_object(sum))
		return err_set(err, -EINVAL, "harness JSON: no \"summary\" object");
	if (json_nonneg(sum, "world_size", false, &world) < 0 || json_nonneg(sum, "batch", false, &batch) < 0 ||
	    json_nonneg(sum, "accum", false, &accum) < 0 || json_nonneg(sum, "step_ms_p50", false, &p50) < 0)
		return err_set(err, -EINVAL, "harness JSON: world_size, batch, accum and step_ms_p50 must be numbers >= 0");
	run->metric = p50 > 0 ? world * batch * accum * 1000.0 / p50 : 0;
	if (!isfinite(run->metric) || run->metric <= 0)
		return err_set(err, -EINVAL, "harness JSON: no throughput (world_size x batch x accum / step_ms_p50 is not > 0)");
	if (world > 1) {
		const json_t *slow = json_object_get(sum, "slowest_rank");

		if (json_nonneg(sum, "rank_skew", true, &run->skew) < 0 ||
		    (slow && !json_is_null(slow) &&
		     (!json_is_integer(slow) || json_integer_value(slow) < 0 ||
		      json_integer_value(slow) >= (json_int_t)fmin(world, INT_MAX))))
			return err_set(err, -EINVAL, "harness JSON: rank_skew or slowest_rank out of range");
		run->slowest = slow ? (int)json_integer_value(slow) : 0;
	}
	{
		const json_t *c = json_object_get(sum, "counters");

		if (json_nonneg(c, "involuntary_switches", true, &run->involuntary_switches) < 0 ||
		    json_nonneg(c, "runqueue_wait_ms", true, &run->runqueue_wait_ms) < 0 ||
		    json_nonneg(c, "minor_faults", true, &run->minor_faults) < 0)
			return err_set(err, -EINVAL, "harness JSON: a counter is not a number >= 0");
	}
	return 0;
}

/* The measured (not warm-up) steps of the array into run. */
static int parse_harness_steps(const json_t *steps, struct ab_harness_run *run, struct nt_err *err)
{
	size_t n = json_array_size(steps), i;
	const json_t *s;
	int k = 0;

	if (!json_is_array(steps))
		return err_set(err, -EINVAL, "harness JSON: \"steps\" is not an array");
	if (n > AB_HARNESS_MAX_STEPS)
		return err_set(err, -E2BIG, "harness JSON: %zu steps (at most %d)", n, AB_HARNESS_MAX_STEPS);
	run->steps = calloc(n + 1, sizeof(double));
	for (int p = 0; p < 5; p++)
		run->phase[p] = calloc(n + 1, sizeof(double));
	if (!run->steps || !run->phase[0] || !run->phase[1] || !run->phase[2] || !run->phase[3] || !run->phase[4])
		return err_set(err, -ENOMEM, "out of memory");
	json_array_foreach(steps, i, s) {
		const json_t *warm = json_object_get(s, "warmup");

		if (!json_is_object(s) || (warm && !json_is_boolean(warm)))
			return err_set(err, -EINVAL, "harness JSON: step %zu is not an object with a boolean warmup", i);
		if (json_is_true(warm))
			continue;
		if (json_nonneg(s, "total_ms", false, &run->steps[k]) < 0)
			return err_set(err, -EINVAL, "harness JSON: step %zu: total_ms is not a number >= 0", i);
		for (int p = 0; p < 5; p++)
			if (json_nonneg(s, harness_phase[p], true, &run->phase[p][k]) < 0)
				return err_set(err, -EINVAL, "harness JSON: step %zu: %s is not a number >= 0", i,
					       harness_phase[p]);
		k++;
	}
	if (!k)
		return err_set(err, -EINVAL, "harness JSON: no measured step");
	run->n_steps = k;
	return 0;
}

int ab_parse_harness_json(const char *buf, size_t len, struct ab_harness_run *ret, struct nt_err *err)
{
	struct ab_harness_run run = { 0 };
	json_error_t je;
	json_t *doc;
	int r;

	if (len > AB_HARNESS_JSON_MAX)
		return err_set(err, -E2BIG, "harness JSON: %zu bytes (at most %u)", len, AB_HARNESS_JSON_MAX);
	doc = json_loadb(buf, len, 0, &je);
	if (!doc)
		return err_set(err, -EINVAL, "harness JSON: line %d: %s", je.line, je.text);
	r = json_is_object(doc) ? 0 : err_set(err, -EINVAL, "harness JSON: not an object");
	if (!r)
		r = parse_harness_summary(json_object_get(doc, "summary"), &run, err);
	if (!r)
		r = parse_harness_steps(json_object_get(doc, "steps"), &run, err);
	json_decref(doc);
	if (r < 0) {
		ab_harness_run_release(&run);
		return r;
	}
	*ret = run;
	return 0;
}

void ab_harness_run_release(struct ab_harness_run *run)
{
	free(run->steps);
	run->steps = NULL;
	for (int p = 0; p < 5; p++) {
		free(run->phase[p]);
		run->phase[p] = NULL;
	}
}

/* Read the harness's JSON at path into t: 0, or -errno (logged at debug). */
static int read_harness_json(const char *path, struct trial *t)
{
	struct ab_harness_run run;
	struct nt_err err = { 0 };
	char *buf, why[320];
	size_t len;
	int r = userfile_read(path, AB_HARNESS_JSON_MAX, "a harness JSON summary", NULL, &buf, &len, why, sizeof(why));

	if (r < 0) {
		log_msg(LOG_DEBUG, "%s: %s", path, why);
		return r;
	}
	r = ab_parse_harness_json(buf, len, &run, &err);
	free(buf);
	if (r < 0) {
		log_msg(LOG_DEBUG, "%s: %s", path, err.msg);
		return r;
	}
	t->metric = run.metric;
	t->skew = run.skew;
	t->slowest = run.slowest;
	t->steps = run.steps;
	memcpy(t->phase, run.phase, sizeof(t->phase));
	t->n_steps = run.n_steps;
	t->counter[AB_C_INVOL_SWITCHES] = run.involuntary_switches;
	t->counter[AB_C_RUNQ_WAIT_MS] = run.runqueue_wait_ms;
	t->counter[AB_C_MINOR_FAULTS] = run.minor_faults;
	return 0;
}

/* Apply the arm's policy (if any) and return the journal state dir. */
static int trial_apply(const struct ab_config *cfg, const struct ab_arm *arm, struct nt_err *err)
{
	struct policy *p;
	struct topo *t;
	struct fsroot *root;
	struct plan *pl;
	struct apply_report rep = { 0 };
	int r;

	if (!arm->policy)
		return 0;
	p = policy_load(arm->policy, geteuid() == 0 ? POLICY_TRUSTED_ONLY : 0, err);
	if (!p)
		return err->code;
	t = topo_load_host(NULL, err);
	root = fsroot_open("/");
	if (!t || !root) {
		policy_free(p);
		topo_free(t);
		fsroot_free(root);
		return t ? err_set(err, -errno, "/: %s", strerror(errno)) : err->code;
	}
	pl = plan_build(p, t, t->n_gpus ? t->n_gpus : 2, root, err);
	r = pl ? apply_plan(pl, root, cfg->state_dir, false, &rep, err) : err->code;
	apply_report_release(&rep);
	plan_free(pl);
	fsroot_free(root);
	topo_free(t);
	policy_free(p);
	return r;
}

static int trial_revert(const struct ab_config *cfg, struct nt_err *err)
{
	struct apply_report rep = { 0 };
	int r = apply_revert(cfg->state_dir, NULL, &rep, err);

	apply_report_release(&rep);
	return r;
}

/* Run one trial of arm a.  0; -errno with err (bad input); 1 when the arm's
 * command failed (res->error filled). */
static int run_trial(const struct ab_config *cfg, const struct tlb_counter *tlb, int a, int index, struct trial *t,
		     struct ab_result *res, struct nt_err *err)
{
	const struct ab_arm *arm = &cfg->arm[a];
	char json[4096], out[4096], errf[4096], *argv[AB_MAX_ARGS + 32], *bufs[16] = { 0 }, tail[600];
	double c0[AB_COUNTERS], c1[AB_COUNTERS], t0, wall;
	int n_bufs = 0, status, r, fd, go[2];
	struct obs_perf perf = { .fd = { -1, -1, -1 } };
	uint64_t pc[OBS_PERF_N];
	pid_t pid;

	memset(t, 0, sizeof(*t));
	t->arm = a;
	char label[32];

	/* index < 0: the arm's warm-up trial */
	if (index < 0)
		snprintf(label, sizeof(label), "warmup-%s", arm->name);
	else
		snprintf(label, sizeof(label), "trial-%03d-%s", index, arm->name);
	snprintf(json, sizeof(json), "%s/%s.json", cfg->work_dir, label);
	snprintf(out, sizeof(out), "%s/%s.out", cfg->work_dir, label);
	snprintf(errf, sizeof(errf), "%s/%s.err", cfg->work_dir, label);
	build_argv(cfg, arm, json, argv, bufs, &n_bufs);
	r = trial_apply(cfg, arm, err);
	if (r < 0)
		goto out;
	host_counters(tlb, c0, res);
	t0 = now_s();
	if (pipe2(go, O_CLOEXEC) < 0) {
		r = err_set(err, -errno, "pipe: %s", strerror(errno));
		trial_revert(cfg, err);
		goto out;
	}
	pid = fork();
	if (pid == 0) {
		char x;

		/* wait until the perf counters are attached; they start at exec */
		close(go[1]);
		if (read(go[0], &x, 1) != 1)
			_exit(126);
		fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd >= 0)
			dup2(fd, 1);
		fd = open(errf, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd >= 0)
			dup2(fd, 2);
		execvp(argv[0], argv);
		fprintf(stderr, "%s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(go[0]);
	if (pid > 0) {
		obs_perf_open(&perf, pid);
		if (!perf.ok && !res->perf_note[0])
			snprintf(res->perf_note, sizeof(res->perf_note), "%s", perf.why);
		for (int k = 0; k < OBS_PERF_N && !perf.ok; k++)
			not_countable(res, perf_slot[k], perf.why);
	}
	/* the child waits on the pipe; with no child (fork failed) there is
	 * no reader, and a write would raise SIGPIPE */
	if (pid > 0 && write(go[1], "x", 1) != 1)
		kill(pid, SIGKILL);
	close(go[1]);
	if (pid < 0 || waitpid(pid, &status, 0) < 0)
		status = -1;
	wall = now_s() - t0;
	host_counters(tlb, c1, res);
	if (obs_perf_read(&perf, pc) == 0)
		for (int k = 0; k < OBS_PERF_N; k++)
			c1[perf_slot[k]] = (double)pc[k];     /* c0 is 0 there */
	obs_perf_close(&perf);
	if (trial_revert(cfg, err) < 0 && !r) {
		r = err->code;
		goto out;
	}
	if (status != 0 || (!arm->argv[0] || strstr(arm->argv[0], "nodetune-harness") ? read_harness_json(json, t) < 0 : 0)) {
		tail_of(errf, tail, sizeof(tail));
		snprintf(res->error_msg, sizeof(res->error_msg), "arm %s (%s) failed (%s %d): %s", arm->name, label,
			 WIFSIGNALED(status) ? "signal" : "exit", WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status),
			 tail[0] ? tail : "(no output on stderr)");
		res->error = true;
		r = 1;
		goto out;
	}
	if (!t->n_steps) {          /* a foreign command: its wall time */
		t->metric = 1.0 / wall;
		res->metric_is_wall = true;
		not_countable(res, AB_C_INVOL_SWITCHES, "only the harness reports its training thread's switches");
		not_countable(res, AB_C_RUNQ_WAIT_MS, "only the harness reports its training thread's run-queue wait");
		not_countable(res, AB_C_MINOR_FAULTS, "only the harness reports its minor faults (see page_faults)");
	}
	for (int k = 0; k < AB_COUNTERS; k++)
		if (k != AB_C_INVOL_SWITCHES && k != AB_C_RUNQ_WAIT_MS && k != AB_C_MINOR_FAULTS)
			t->counter[k] = c1[k] - c0[k];
	for (int k = 0; k < AB_COUNTERS; k++)
		t->counter[k] /= t->n_steps ? t->n_steps : 1;
out:
	for (int i = 0; i < n_bufs; i++)
		free(bufs[i]);
	return r;
}

/* ---- schedule and statistics ------------------------------------------- */

static void trial_free(struct trial *t)
{
	free(t->steps);
	for (int p = 0; p < 5; p++)
		free(t->phase[p]);
}

static void pooled(const struct trial *tr, int n, int arm, int phase, double **ret, size_t *ret_n)
{
	size_t total = 0, k = 0;

	for (int i = 0; i < n; i++)
		if (tr[i].arm == arm)
			total += (size_t)tr[i].n_steps;
	*ret = calloc(total + 1, sizeof(double));
	for (int i = 0; i < n; i++)
		if (tr[i].arm == arm)
			for (int s = 0; s < tr[i].n_steps; s++)
				(*ret)[k++] = phase < 0 ? tr[i].steps[s] : tr[i].phase[phase][s];
	*ret_n = k;
}

/* alpha: the level of this look (see ab_run) */
static void analyse(const struct ab_config *cfg, struct trial *tr, int n, double alpha, struct ab_result *res)
{
	static const char *const phases[5] = { "data_wait", "forward", "backward", "exposed_comm", "optimizer" };
	double *m[2], *steps[2];
	size_t ns[2];
	int k[2] = { 0, 0 };

	for (int a = 0; a < 2; a++) {
		m[a] = calloc((size_t)n + 1, sizeof(double));
		free(res->metric[a]);
		res->metric[a] = m[a];
	}
	for (int i = 0; i < n; i++)
		m[tr[i].arm][k[tr[i].arm]++] = tr[i].metric;
	res->trials[0] = k[0];
	res->trials[1] = k[1];
	res->p = stats_mann_whitney(m[0], (size_t)k[0], m[1], (size_t)k[1], NULL);
	stats_bootstrap_ratio(m[0], (size_t)k[0], m[1], (size_t)k[1], 2000, alpha, cfg->seed,
			      &res->ratio, &res->ci_lo, &res->ci_hi);
	res->alpha_used = alpha;
	res->verdict = stats_verdict(res->p, res->ratio, res->ci_lo, res->ci_hi, alpha, cfg->threshold);

	/* per-step times: shift, stalls, the phase that grew */
	for (int a = 0; a < 2; a++) {
		double med, mad, limit;

		pooled(tr, n, a, -1, &steps[a], &ns[a]);
		/* a foreign command has no steps: no step statistics (0, never NaN,
		 * which JSON cannot carry) */
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
	/* the series over time, for the report: kept, with where each trial ends */
	for (int a = 0; a < 2; a++) {
		int t = 0, end = 0;

		free(res->series[a]);
		free(res->trial_end[a]);
		res->series[a] = steps[a];
		res->n_series[a] = (int)ns[a];
		res->trial_end[a] = calloc((size_t)k[a] + 1, sizeof(int));
		for (int i = 0; i < n && res->trial_end[a]; i++)
			if (tr[i].arm == a)
				res->trial_end[a][t++] = end += tr[i].n_steps;
	}
	res->grown_phase[0] = '\0';
	res->grown_by_ms = 0;
	for (int p = 0; p < 5; p++) {
		double *x[2];
		size_t nx[2];

		pooled(tr, n, 0, p, &x[0], &nx[0]);
		pooled(tr, n, 1, p, &x[1], &nx[1]);
		if (nx[0] && nx[1]) {
			double d = stats_median(x[1], nx[1]) - stats_median(x[0], nx[0]);

			if (fabs(d) > fabs(res->grown_by_ms)) {
				res->grown_by_ms = d;
				snprintf(res->grown_phase, sizeof(res->grown_phase), "%s", phases[p]);
			}
		}
		free(x[0]);
		free(x[1]);
	}

	/* stragglers: the skew between ranks, and which rank lags */
	for (int a = 0; a < 2; a++) {
		double sk[512];
		int ns_ = 0, votes[64] = { 0 }, best = 0;

		for (int i = 0; i < n && ns_ < 512; i++)
			if (tr[i].arm == a && tr[i].skew > 0) {
				sk[ns_++] = tr[i].skew;
				if (tr[i].slowest >= 0 && tr[i].slowest < 64)
					votes[tr[i].slowest]++;
			}
		for (int r = 1; r < 64; r++)
			if (votes[r] > votes[best])
				best = r;
		res->rank_skew[a] = ns_ ? stats_median(sk, (size_t)ns_) : 0;
		res->slowest_rank[a] = best;
		res->slowest_share[a] = ns_ ? (double)votes[best] / ns_ : 0;
	}

	/* counters per step, A against B, ranked by significance then effect */
	res->n_expl = 0;
	for (int c = 0; c < AB_COUNTERS; c++) {
		double ca[256], cb[256];
		int na = 0, nb = 0;
		struct ab_explanation *e;

		if (res->not_countable[c][0])
			continue;       /* a 0 that means "cannot see" explains nothing */

		for (int i = 0; i < n && na < 256 && nb < 256; i++) {
			if (tr[i].arm == 0)
				ca[na++] = tr[i].counter[c];
			else
				cb[nb++] = tr[i].counter[c];
		}
		e = &res->expl[res->n_expl++];
		e->counter = counters[c].name;
		e->mechanism = counters[c].mechanism;
		e->a = stats_median(ca, (size_t)na);
		e->b = stats_median(cb, (size_t)nb);
		e->p = stats_mann_whitney(ca, (size_t)na, cb, (size_t)nb, NULL);
	}
	for (int i = 0; i < res->n_expl; i++)
		for (int j = i + 1; j < res->n_expl; j++) {
			struct ab_explanation *x = &res->expl[i], *y = &res->expl[j];
			double ex = fabs(log((x->b + 1e-9) / (x->a + 1e-9))), ey = fabs(log((y->b + 1e-9) / (y->a + 1e-9)));

			if (y->p < x->p - 1e-12 || (fabs(y->p - x->p) < 1e-12 && ey > ex)) {
				struct ab_explanation t = *x;

				*x = *y;
				*y = t;
			}
		}
}

int ab_run(const struct ab_config *cfg, struct ab_result *res, struct nt_err *err)
{
	struct trial *tr = NULL;
	int n = 0, cap = 0, r = 0, looks = 0;
	uint64_t rng = cfg->seed * 0x9e3779b97f4a7c15ull + 1;
	double start = now_s();
	struct fsroot *host = fsroot_open("/");
	struct tlb_counter tlb = { .source = TLB_SRC_NONE, .why = "/ cannot be opened" };

	memset(res, 0, sizeof(*res));
	/* TLB shootdowns from the source this host has (a probe decides,
	 * once for the experiment), or not countable, said so */
	if (host)
		tlb_counter_open(&tlb, host, tlb_sources_from_env());
	/* warm-up: one trial of each arm, discarded.  The first runs of an
	 * experiment are cold (binaries, page cache, allocator), a one-time
	 * effect that ABBA blocks, which cancel linear drift, do not remove. */
	for (int a = 0; a < 2 && !r; a++) {
		struct trial w;

		r = run_trial(cfg, &tlb, a, -1 - a, &w, res, err);
		trial_free(&w);
	}
	for (;;) {
		/* the first look after --trials per arm; each later one after
		 * half as many trials again (n grows geometrically), so that the
		 * number of looks, which divides alpha, grows only with log n */
		int blocks = n == 0 ? (cfg->trials + 1) / 2 : (n / 8 > 1 ? n / 8 : 1);

		if (r)
			break;

		for (int b = 0; b < blocks && !r; b++) {
			if (n > 0 && b > 0 && now_s() - start > cfg->budget_s)
				break;      /* out of time: look at the whole blocks run */
			/* ABBA or BAAB */
			int first;
			static const int order[4] = { 0, 1, 1, 0 };

			rng ^= rng << 13;
			rng ^= rng >> 7;
			rng ^= rng << 17;
			first = (int)(rng & 1);
			for (int k = 0; k < 4 && !r; k++) {
				if (n == cap) {
					struct trial *tmp = realloc(tr, (size_t)(cap = cap ? 2 * cap : 16) * sizeof(*tr));

					if (!tmp) {
						r = err_set(err, -ENOMEM, "out of memory");
						break;
					}
					tr = tmp;
				}
				r = run_trial(cfg, &tlb, order[k] ^ first, n, &tr[n], res, err);
				if (r == 0)
					n++;
				else
					trial_free(&tr[n]);
			}
		}
		if (r)
			break;
		/* every look at the growing data is another chance of a false
		 * alarm: spend alpha over the looks (Bonferroni), which keeps the
		 * experiment's false-alarm rate at or below alpha */
		analyse(cfg, tr, n, cfg->alpha / ++looks, res);
		if (res->verdict != VERDICT_INCONCLUSIVE || now_s() - start > cfg->budget_s || n >= 400)
			break;
		/* bisect asks only "regression or not": once a slowdown beyond
		 * the threshold is excluded, more trials cannot make it one */
		if (cfg->regression_only && res->ci_lo >= 1 - cfg->threshold)
			break;
	}
	res->elapsed_s = now_s() - start;
	for (int i = 0; i < n; i++)
		trial_free(&tr[i]);
	free(tr);
	tlb_counter_close(&tlb);
	fsroot_free(host);
	return r < 0 ? r : 0;
}

void ab_result_release(struct ab_result *res)
{
	for (int a = 0; a < 2; a++) {
		free(res->metric[a]);
		free(res->series[a]);
		free(res->trial_end[a]);
	}
	memset(res, 0, sizeof(*res));
}

/* ---- output ------------------------------------------------------------ */

json_t *ab_json(const struct ab_config *cfg, const struct ab_result *res)
{
	json_t *doc, *ex, *ma, *mb;

	if (res->error)
		return json_pack("{s:s, s:s}", "verdict", "error", "error", res->error_msg);
	ex = json_array();
	ma = json_array();
	mb = json_array();
	for (int i = 0; i < res->trials[0]; i++)
		json_array_append_new(ma, json_real(res->metric[0][i]));
	for (int i = 0; i < res->trials[1]; i++)
		json_array_append_new(mb, json_real(res->metric[1][i]));
	for (int i = 0; i < res->n_expl; i++)
		json_array_append_new(ex, json_pack("{s:s, s:s, s:f, s:f, s:f}", "counter", res->expl[i].counter,
						    "mechanism", res->expl[i].mechanism, "a_per_step", res->expl[i].a,
						    "b_per_step", res->expl[i].b, "p_value", res->expl[i].p));
	doc = json_pack("{s:s, s:f, s:f, s:f, s:f, s:i, s:i, s:f, s:f, s:o, s:o, s:o}",
			"verdict", stats_verdict_name(res->verdict), "ratio", res->ratio, "ci_low", res->ci_lo,
			"ci_high", res->ci_hi, "p_value", res->p, "trials_a", res->trials[0], "trials_b", res->trials[1],
			"hodges_lehmann_step_ms", res->hl_shift_ms, "threshold", cfg->threshold,
			"stalls", json_pack("{s:{s:i, s:f, s:f}, s:{s:i, s:f, s:f}, s:s, s:f}",
					    "a", "count", res->stalls[0], "ms", res->stall_ms[0], "step_ms_p50", res->step_p50[0],
					    "b", "count", res->stalls[1], "ms", res->stall_ms[1], "step_ms_p50", res->step_p50[1],
					    "grown_phase", res->grown_phase, "grown_by_ms", res->grown_by_ms),
			"explanations", ex, "metric", json_pack("{s:s, s:o, s:o}", "name",
								 res->metric_is_wall ? "1/wall_s" : "samples_per_s_at_median_step",
								 "a", ma, "b", mb));
	if (doc) {
		json_object_set_new(doc, "elapsed_s", json_real(res->elapsed_s));
		json_object_set_new(doc, "alpha", json_real(cfg->alpha));
		json_object_set_new(doc, "alpha_last_look", json_real(res->alpha_used));
		if (res->rank_skew[0] > 0 || res->rank_skew[1] > 0)
			json_object_set_new(doc, "rank_skew", json_pack("{s:f, s:f, s:i, s:i, s:f, s:f}", "a", res->rank_skew[0],
				"b", res->rank_skew[1], "slowest_rank_a", res->slowest_rank[0], "slowest_rank_b",
				res->slowest_rank[1], "slowest_share_a", res->slowest_share[0], "slowest_share_b",
				res->slowest_share[1]));
		json_object_set_new(doc, "perf_events", res->perf_note[0] ? json_string(res->perf_note) : json_true());
		{
			json_t *nc = json_object();

			for (int c = 0; c < AB_COUNTERS; c++)
				if (res->not_countable[c][0])
					json_object_set_new(nc, counters[c].name, json_string(res->not_countable[c]));
			json_object_set_new(doc, "not_countable", nc);
		}
	}
	return doc;
}

int ab_print(FILE *out, const struct ab_config *cfg, const struct ab_result *res)
{
	if (res->error) {
		fprintf(out, "verdict: error — %s\n", res->error_msg);
		return ferror(out) ? -EIO : 0;
	}
	fprintf(out, "verdict: %s (B vs A, threshold %.1f%%, alpha %.2f spent over the looks)\n",
		stats_verdict_name(res->verdict), cfg->threshold * 100, cfg->alpha);
	fprintf(out, "effect: B/A %s = %.4f, %.1f%% CI [%.4f, %.4f], Mann-Whitney p = %.3g, %d + %d trials, %.0f s\n",
		res->metric_is_wall ? "speed (1/wall time)" : "samples/s at the median step", res->ratio,
		(1 - res->alpha_used) * 100, res->ci_lo, res->ci_hi, res->p, res->trials[0], res->trials[1], res->elapsed_s);
	if (!res->metric_is_wall) {
		fprintf(out, "steps: p50 A %.2f ms, B %.2f ms; Hodges-Lehmann shift %+.2f ms; largest phase change: %s %+.2f ms\n",
			res->step_p50[0], res->step_p50[1], res->hl_shift_ms, res->grown_phase[0] ? res->grown_phase : "-",
			res->grown_by_ms);
		fprintf(out, "stalls (> max(3 x median, median + 10 MAD)): A %d (%.0f ms), B %d (%.0f ms)\n",
			res->stalls[0], res->stall_ms[0], res->stalls[1], res->stall_ms[1]);
	}
	if (res->rank_skew[0] > 0 || res->rank_skew[1] > 0)
		fprintf(out, "ranks: compute skew (slowest / fastest) A %.3f, B %.3f; slowest in B: rank %d (%.0f%% of trials)\n",
			res->rank_skew[0], res->rank_skew[1], res->slowest_rank[1], res->slowest_share[1] * 100);
	fprintf(out, "explanations (per step, A -> B):\n");
	if (res->perf_note[0])
		fprintf(out, "  (perf events not counted: %s)\n", res->perf_note);
	for (int i = 0; i < res->n_expl && i < 3; i++)
		fprintf(out, "  %d. %-22s %10.3f -> %10.3f  p = %.3g  => %s\n", i + 1, res->expl[i].counter,
			res->expl[i].a, res->expl[i].b, res->expl[i].p, res->expl[i].mechanism);
	for (int c = 0; c < AB_COUNTERS; c++)
		if (res->not_countable[c][0] && !(perf_counter(c) && res->perf_note[0]))
			fprintf(out, "  (%s: not countable on this host: %s)\n", counters[c].name, res->not_countable[c]);
	return ferror(out) ? -EIO : 0;
}
