/* nodetune_spank.c — the Slurm SPANK plugin: `srun/sbatch/salloc
 * --nodetune=POLICY` does for each local task what `nodetune exec` does
 * under mpirun, and tunes the node for the job.  Built over libnodetune
 * (the same planner and binder as exec), not over the CLI.
 *
 * Divisions:
 *   1. configuration (plugstack.conf arguments) and the option
 *   2. finding and checking the policy
 *   3. remote: check the policy as root before the step starts
 *      (init_post_opt), bind each task (task_init, in the task, after
 *      task/affinity has set its mask)
 *   4. job prolog/epilog (slurmd, root): `nodetune apply` into the job's
 *      state dir, `nodetune revert` from it
 *
 * Failures: a bad --nodetune (missing file, invalid policy, a file root
 * must not trust) fails the step in init_post_opt with one line naming the
 * file, on the user's terminal (srun) and in slurmd's log; the prolog only
 * logs it (a failing prolog would drain the node) and applies nothing.
 * Nothing here exits or crashes slurmd: a bad plugstack argument is logged
 * and ignored.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <numa.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <slurm/spank.h>

#include "tune/bind.h"
#include "base/cpulist.h"
#include "machine/gres.h"
#include "tune/plan.h"
#include "tune/policy.h"
#include "machine/topo.h"

SPANK_PLUGIN(nodetune, 1);

/* ---- 1. configuration and the option -------------------------------------- */

/* The nodetune= default: the binary `make install` puts in PREFIX/bin (the
 * Makefile passes -DNODETUNE_BIN from PREFIX). */
#ifndef NODETUNE_BIN
#define NODETUNE_BIN "/usr/local/bin/nodetune"
#endif

/* plugstack.conf: required PREFIX/lib/slurm/nodetune_spank.so ARG... */
static struct {
	char default_policy[PATH_MAX]; /* default=FILE: for jobs without --nodetune */
	char policy_dirs[PATH_MAX];    /* policy_dirs=DIR[:DIR...]: the allow-list */
	char topology[PATH_MAX];       /* topology=FILE.xml: plan against it (tests) */
	char state_dir[PATH_MAX];      /* state_dir=DIR: per-job state (/run/nodetune/slurm) */
	char nodetune[PATH_MAX];       /* nodetune=PATH: the binary for apply/revert */
} cfg = { "", "", "", "/run/nodetune/slurm", NODETUNE_BIN };

static char arg_policy[PATH_MAX];      /* --nodetune as given */
static bool arg_given;

/* remote: what init_post_opt checked, for task_init */
static struct policy *step_policy;
static struct topo *step_topo;
static char step_error[PATH_MAX + 1200];          /* a problem found before the tasks */

static int opt_nodetune(int val, const char *optarg, int remote)
{
	(void)val, (void)remote;
	if (!optarg || !optarg[0] || strlen(optarg) >= sizeof(arg_policy)) {
		slurm_error("nodetune: --nodetune: expected a policy file or name");
		return -1;
	}
	snprintf(arg_policy, sizeof(arg_policy), "%s", optarg);
	arg_given = true;
	return 0;
}

static struct spank_option nodetune_opt = {
	"nodetune", "POLICY",
	"bind each task next to its GPU and tune the node for the job with nodetune policy POLICY "
	"(a file, or a name from the site's policy directories; 'none': nothing)",
	1, 0, opt_nodetune,
};

/* Every callback gets the plugstack.conf arguments: slurmd's job prolog
 * and epilog run without slurm_spank_init.  Unknown ones are said once
 * per process (from init, or from the prolog/epilog). */
static void parse_args(int ac, char **av, bool say)
{
	static const struct { const char *key; char *dst; } keys[] = {
		{ "default=", cfg.default_policy }, { "policy_dirs=", cfg.policy_dirs },
		{ "topology=", cfg.topology }, { "state_dir=", cfg.state_dir }, { "nodetune=", cfg.nodetune },
	};

	for (int i = 0; i < ac; i++) {
		size_t k = 0;

		for (; k < sizeof(keys) / sizeof(keys[0]); k++) {
			size_t n = strlen(keys[k].key);

			if (!strncmp(av[i], keys[k].key, n) && strlen(av[i] + n) < PATH_MAX) {
				snprintf(keys[k].dst, PATH_MAX, "%s", av[i] + n);
				break;
			}
		}
		if (k == sizeof(keys) / sizeof(keys[0]) && say)
			slurm_error("nodetune: plugstack.conf: unknown argument '%s' ignored "
				    "(known: default= policy_dirs= topology= state_dir= nodetune=)", av[i]);
	}
}

int slurm_spank_init(spank_t sp, int ac, char **av)
{
	parse_args(ac, av, true);
	if (spank_context() == S_CTX_SLURMD)
		return 0;
	if (spank_option_register(sp, &nodetune_opt) != ESPANK_SUCCESS)
		slurm_error("nodetune: cannot register --nodetune");
	return 0;
}

/* ---- 2. finding and checking the policy ----------------------------------- */

/* Is path (resolved) beneath one of the allow-listed directories? */
static bool in_policy_dirs(const char *path)
{
	char dirs[PATH_MAX], real[PATH_MAX], *save = NULL;

	snprintf(dirs, sizeof(dirs), "%s", cfg.policy_dirs);
	for (char *d = strtok_r(dirs, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
		size_t n;

		if (!realpath(d, real))
			continue;
		n = strlen(real);
		if (!strncmp(path, real, n) && (path[n] == '/' || (n == 1 && real[0] == '/')))
			return true;
	}
	return false;
}

/* The policy file for value: a path (relative to cwd), or with
 * policy_dirs a bare NAME found there as NAME or NAME.conf.  Returns 0
 * with ret (the resolved path), 1 for "none", or -errno with err naming the
 * file. */
static int policy_resolve(const char *value, const char *cwd, char ret[PATH_MAX], struct nt_err *err)
{
	char path[PATH_MAX * 2];

	if (!strcmp(value, "none"))
		return 1;
	if (!strchr(value, '/') && cfg.policy_dirs[0]) {
		char dirs[PATH_MAX], *save = NULL;

		snprintf(dirs, sizeof(dirs), "%s", cfg.policy_dirs);
		for (char *d = strtok_r(dirs, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
			snprintf(path, sizeof(path), "%s/%s", d, value);
			if (access(path, F_OK) == 0)
				break;
			snprintf(path, sizeof(path), "%s/%s.conf", d, value);
			if (access(path, F_OK) == 0)
				break;
			path[0] = '\0';
		}
		if (!path[0])
			return err_set(err, -ENOENT, "%s: no such policy in %s", value, cfg.policy_dirs);
	} else if (value[0] != '/' && cwd && cwd[0] == '/') {
		snprintf(path, sizeof(path), "%s/%s", cwd, value);
	} else {
		snprintf(path, sizeof(path), "%s", value);
	}
	if (!realpath(path, ret)) {
		int e = -errno;

		return err_set(err, e, "%s: %s", path, strerror(-e));
	}
	if (cfg.policy_dirs[0] && !in_policy_dirs(ret))
		return err_set(err, -EPERM, "%s: not in the site's policy directories (%s)", ret, cfg.policy_dirs);
	return 0;
}

/* Resolve and load (refusing untrusted files when root).  Returns the
 * policy; NULL for "none" or no policy (err->code 0) or on error. */
static struct policy *policy_for_job(const char *value, const char *cwd, char path[PATH_MAX], struct nt_err *err)
{
	int r;

	err->code = 0;
	if (!value || !value[0])
		return NULL;
	r = policy_resolve(value, cwd, path, err);
	if (r)
		return NULL;
	return policy_load(path, policy_trust_flags(), err);
}

/* The value in effect: --nodetune, else the site default. */
static const char *policy_value_in_effect(void)
{
	return arg_given ? arg_policy : cfg.default_policy[0] ? cfg.default_policy : NULL;
}

/* ---- 3. remote: check, then bind each task -------------------------------- */

/* The step's working directory from its environment, for a relative
 * --nodetune (init_post_opt runs before slurmstepd's chdir). */
static void step_cwd(spank_t sp, char *buf, size_t size)
{
	if (spank_getenv(sp, "PWD", buf, (int)size) != ESPANK_SUCCESS || buf[0] != '/')
		if (spank_getenv(sp, "SLURM_SUBMIT_DIR", buf, (int)size) != ESPANK_SUCCESS)
			buf[0] = '\0';
}

/* Where the option is given (srun, sbatch, salloc): the same checks as
 * on the node, root's trust rule included (the node will apply it), so
 * that a bad --nodetune fails at once with one line on the user's
 * terminal.  On the node (remote), as root before the step starts: a
 * problem is kept for task_init, which says it on the task's stderr (the
 * user's output) and fails the task; slurmd's log has it too. */
int slurm_spank_init_post_opt(spank_t sp, int ac, char **av)
{
	char cwd[PATH_MAX], path[PATH_MAX];
	struct nt_err err = { 0 };
	const char *value = policy_value_in_effect();
	struct policy *p;

	(void)ac, (void)av;
	if (!value)
		return 0;
	if (spank_context() == S_CTX_LOCAL || spank_context() == S_CTX_ALLOCATOR) {
		if (!getcwd(cwd, sizeof(cwd)))
			cwd[0] = '\0';
		if (policy_resolve(value, cwd, path, &err) < 0 ||
		    (!strcmp(value, "none") ? 0 : !(p = policy_load(path, POLICY_TRUSTED_ONLY, &err)))) {
			slurm_error("nodetune: --nodetune=%s: %s", value, err.msg);
			return -1;
		}
		if (strcmp(value, "none"))
			policy_free(p);
		return 0;
	}
	if (spank_context() != S_CTX_REMOTE)
		return 0;
	step_cwd(sp, cwd, sizeof(cwd));
	step_policy = policy_for_job(value, cwd, path, &err);
	if (!step_policy && err.code)
		snprintf(step_error, sizeof(step_error), "--nodetune=%s: %s", value, err.msg);
	if (step_policy) {
		step_topo = cfg.topology[0] ? topo_load_xml(cfg.topology, &err) : topo_load_host(NULL, &err);
		if (!step_topo)
			snprintf(step_error, sizeof(step_error), "%s", err.msg);
	}
	if (step_error[0])
		slurm_error("nodetune: %s", step_error);
	return 0;
}

/* The step's GPUs as indexes into t->gpus, from the task's environment:
 * SLURM_STEP_GPUS (Slurm's device numbers, gres.h), else
 * CUDA_VISIBLE_DEVICES, else GPU_DEVICE_ORDINAL.  Returns the count (0: all
 * of the machine's), or -EINVAL with err. */
static int step_gpus(spank_t sp, const struct topo *t, unsigned *gpus, unsigned max, const char **ret_from,
		     struct nt_err *err)
{
	static const char *const vars[] = { "SLURM_STEP_GPUS", "CUDA_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL" };
	char buf[1024], *save = NULL;
	struct gres *g;
	int n = 0;

	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		if (spank_getenv(sp, vars[i], buf, sizeof(buf)) == ESPANK_SUCCESS && buf[0]) {
			*ret_from = vars[i];
			break;
		}
	if (!*ret_from || t->n_gpus == 0)
		return 0;
	if (!(g = gres_build(t, err)))
		return err->code;
	for (char *w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
		char *end;
		long dev = strtol(w, &end, 10);
		int gpu = *end || end == w || dev < 0 || dev > INT_MAX ? -1 : gres_gpu_by_dev_num(g, t, (int)dev);

		if (gpu < 0) {
			gres_free(g);
			return err_set(err, -EINVAL, "%s=%s: '%s' is not a GPU of %s", *ret_from, buf, w, t->source);
		}
		if ((unsigned)n < max)
			gpus[n++] = (unsigned)gpu;
	}
	gres_free(g);
	return n;
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
	if (rk->cpus) {
		for (i = 0; i < (int)numa_all_cpus_ptr->size; i++)
			if (numa_bitmask_isbitset(numa_all_cpus_ptr, (unsigned)i))
				hwloc_bitmap_set(host, (unsigned)i);
		hwloc_bitmap_and(rk->cpus, rk->cpus, host);
		if (hwloc_bitmap_iszero(rk->cpus)) {
			hwloc_bitmap_free(rk->cpus);
			rk->cpus = NULL;
		}
	}
	if (rk->mems) {
		hwloc_bitmap_zero(host);
		for (i = 0; i < (int)numa_all_nodes_ptr->size; i++)
			if (numa_bitmask_isbitset(numa_all_nodes_ptr, (unsigned)i))
				hwloc_bitmap_set(host, (unsigned)i);
		hwloc_bitmap_and(rk->mems, rk->mems, host);
		if (hwloc_bitmap_iszero(rk->mems)) {
			hwloc_bitmap_free(rk->mems);
			rk->mems = NULL;
		}
	}
	hwloc_bitmap_free(host);
}

/* One line for slurmd's log: what this task was given. */
static void log_binding(const struct plan *pl, unsigned rank, unsigned ntasks, const char *gpus_from,
			const char *planned)
{
	const struct plan_rank *rk = &pl->ranks[rank];
	char *now = rk->cpus ? cpulist_format_alloc(rk->cpus) : NULL;
	char *mems = rk->mems ? cpulist_format_alloc(rk->mems) : NULL;
	char gpu[64] = "none";

	if (rk->gpu >= 0)
		snprintf(gpu, sizeof(gpu), "%d (%s)", rk->gpu, step_topo->gpus[rk->gpu].pci_bus_id);
	slurm_info("nodetune: task %u of %u: GPU %s%s%s, CPUs %s (planned %s), mems %s, policy %s", rank, ntasks,
		   gpu, gpus_from ? " from " : "", gpus_from ? gpus_from : "", now ? now : "unchanged", planned,
		   mems ? mems : "unchanged", pl->policy_path);
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
	char warn[512], *planned;

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
	n = step_gpus(sp, step_topo, gpus, PLAN_MAX_RANKS, &gpus_from, &err);
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
	r = bind_rank(pl, (unsigned)task, warn, sizeof(warn), &err);
	if (r < 0)
		slurm_error("nodetune: task %d: %s", task, err.msg);
	else
		log_binding(pl, (unsigned)task, ntasks, gpus_from, planned ? planned : "none");
	free(planned);
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

/* ---- 4. job prolog/epilog: the node's settings for the job ---------------- */

/* Run nodetune with args (NULL-terminated, after the binary), its output
 * lines logged at info.  Returns its exit status, or -1. */
static int run_nodetune(const char *const *args)
{
	const char *argv[16] = { cfg.nodetune };
	char line[1024];
	int fds[2], status = -1;
	pid_t pid;
	FILE *f;

	for (int i = 0; args[i] && i < 14; i++)
		argv[i + 1] = args[i];
	if (pipe2(fds, O_CLOEXEC) < 0)
		return -1;
	pid = fork();
	if (pid < 0) {
		close(fds[0]);
		close(fds[1]);
		return -1;
	}
	if (pid == 0) {
		dup2(fds[1], STDOUT_FILENO);
		dup2(fds[1], STDERR_FILENO);
		execv(argv[0], (char *const *)argv);
		dprintf(STDERR_FILENO, "nodetune: %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(fds[1]);
	if ((f = fdopen(fds[0], "r"))) {
		while (fgets(line, sizeof(line), f)) {
			line[strcspn(line, "\n")] = '\0';
			slurm_info("nodetune: %s", line);
		}
		fclose(f);
	} else {
		close(fds[0]);
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* The job's state dir: state_dir/JOBID.  0, or -1 (said). */
static int job_state_dir(spank_t sp, char *buf, size_t size)
{
	uint32_t job = 0;
	const char *env = getenv("SLURM_JOB_ID");

	if (spank_get_item(sp, S_JOB_ID, &job) != ESPANK_SUCCESS || job == 0)
		job = env ? (uint32_t)strtoul(env, NULL, 10) : 0;
	if (job == 0) {
		slurm_error("nodetune: no job id in the prolog/epilog");
		return -1;
	}
	if ((size_t)snprintf(buf, size, "%s/%u", cfg.state_dir, job) >= size) {
		slurm_error("nodetune: state_dir %s: too long", cfg.state_dir);
		return -1;
	}
	return 0;
}

/* mkdir -p for the base, 0700 for the job's own directory. */
static int make_state_dir(const char *dir)
{
	char p[PATH_MAX];

	snprintf(p, sizeof(p), "%s", dir);
	for (char *s = p + 1; *s; s++)
		if (*s == '/') {
			*s = '\0';
			if (mkdir(p, 0755) < 0 && errno != EEXIST)
				return -errno;
			*s = '/';
		}
	if (mkdir(p, 0700) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

int slurm_spank_job_prolog(spank_t sp, int ac, char **av)
{
	char dir[PATH_MAX], path[PATH_MAX], *optarg = NULL;
	const char *value = cfg.default_policy[0] ? cfg.default_policy : NULL, *cwd;
	struct nt_err err = { 0 };
	struct policy *p;
	int rc;

	parse_args(ac, av, true);
	if (spank_option_getopt(sp, &nodetune_opt, &optarg) == ESPANK_SUCCESS && optarg)
		value = optarg;
	if (!value || job_state_dir(sp, dir, sizeof(dir)) < 0)
		return 0;
	cwd = getenv("SLURM_JOB_WORK_DIR");
	if (!cwd)
		cwd = getenv("SLURM_SUBMIT_DIR");
	/* a bad policy fails the job's steps (init_post_opt), with the
	 * user told why; failing here would drain the node */
	if (!(p = policy_for_job(value, cwd, path, &err))) {
		if (err.code)
			slurm_error("nodetune: prolog: --nodetune=%s: %s (nothing applied)", value, err.msg);
		return 0;
	}
	policy_free(p);
	if ((rc = make_state_dir(dir)) < 0) {
		slurm_error("nodetune: prolog: %s: %s (nothing applied)", dir, strerror(-rc));
		return 0;
	}
	rc = run_nodetune((const char *const[]){ "apply", "--policy", path, "--state-dir", dir, NULL });
	if (rc != 0)
		slurm_error("nodetune: prolog: nodetune apply --policy %s --state-dir %s: exit %d (rolled back)",
			    path, dir, rc);
	return 0;
}

/* Whatever the prolog applied is reverted from the job's state dir, even
 * after a reboot or a crashed job: no option needed, only the dir. */
int slurm_spank_job_epilog(spank_t sp, int ac, char **av)
{
	char dir[PATH_MAX], journal[PATH_MAX + 16], lock[PATH_MAX + 16];
	struct stat st;
	int rc;

	parse_args(ac, av, true);
	if (job_state_dir(sp, dir, sizeof(dir)) < 0 || stat(dir, &st) < 0)
		return 0;
	rc = run_nodetune((const char *const[]){ "revert", "--state-dir", dir, NULL });
	snprintf(journal, sizeof(journal), "%s/journal", dir);
	if (rc != 0 || access(journal, F_OK) == 0) {
		slurm_error("nodetune: epilog: nodetune revert --state-dir %s: exit %d (kept for the next try)", dir,
			    rc);
		return 0;
	}
	snprintf(lock, sizeof(lock), "%s/lock", dir);
	unlink(lock);
	if (rmdir(dir) < 0)
		slurm_error("nodetune: epilog: rmdir %s: %s", dir, strerror(errno));
	return 0;
}
