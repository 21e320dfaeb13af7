/* jobcg.c — see jobcg.h. */
#include "tune/jobcg.h"

#include <errno.h>
#include <libcgroup.h>
#include <stdio.h>
#include <string.h>

static int jobcg_init(void)
{
	static int done, result;

	if (!done) {
		result = cgroup_init();
		done = 1;
	}
	return result;
}

/* Is the cpu controller mounted as cgroup v1 (then cpu.shares)? */
static bool cpu_on_v1(void)
{
	char line[1024];
	bool v1 = false;
	FILE *f = fopen("/proc/self/mounts", "re");

	if (!f)
		return false;
	while (!v1 && fgets(line, sizeof(line), f)) {
		char dev[256], mnt[512], type[32], opts[512];

		if (sscanf(line, "%255s %511s %31s %511s", dev, mnt, type, opts) != 4 || strcmp(type, "cgroup"))
			continue;
		for (char *o = strtok(opts, ","); o; o = strtok(NULL, ","))
			if (!strcmp(o, "cpu"))
				v1 = true;
	}
	fclose(f);
	return v1;
}

bool jobcg_available(char *why, size_t size)
{
	int r = jobcg_init();

	if (r) {
		snprintf(why, size, "libcgroup cannot initialise: %s", cgroup_strerror(r));
		return false;
	}
	return true;
}

static struct cgroup *jobcg_new(const char *name, bool with_cpu)
{
	struct cgroup *cg = cgroup_new_cgroup(name);

	if (!cg)
		return NULL;
	if (!cgroup_add_controller(cg, "cpuset") || (with_cpu && !cgroup_add_controller(cg, "cpu"))) {
		cgroup_free(&cg);
		return NULL;
	}
	return cg;
}

/* The existing group name, loaded.  NULL when it does not exist
 * (*missing) or libcgroup failed (err set). */
static struct cgroup *jobcg_load(const char *name, bool *missing, struct nt_err *err)
{
	struct cgroup *cg;
	int r;

	*missing = false;
	if ((r = jobcg_init())) {
		err_set(err, -ENODEV, "cgroup %s: libcgroup: %s", name, cgroup_strerror(r));
		return NULL;
	}
	cg = cgroup_new_cgroup(name);
	if (!cg) {
		err_set(err, -ENOMEM, "out of memory");
		return NULL;
	}
	if (cgroup_get_cgroup(cg)) {
		cgroup_free(&cg);
		*missing = true;
		return NULL;
	}
	return cg;
}

bool jobcg_exists(const char *name)
{
	bool missing;
	struct cgroup *cg = jobcg_load(name, &missing, NULL);
	bool found = cg != NULL;

	cgroup_free(&cg);   /* sets cg to NULL */
	return found;
}

int jobcg_create(const char *name, const char *cpus, const char *mems, unsigned weight,
		 struct nt_err *err)
{
	struct cgroup_controller *ctl;
	struct cgroup *cg;
	char val[32];
	int r;

	if ((r = jobcg_init()))
		return err_set(err, -ENODEV, "cgroup %s: libcgroup: %s", name, cgroup_strerror(r));
	if (jobcg_exists(name))
		return err_set(err, -EEXIST, "cgroup %s exists already and is not ours; choose another [cgroup] name",
			       name);
	cg = jobcg_new(name, weight > 0);
	if (!cg)
		return err_set(err, -ENOMEM, "cgroup %s: cannot set up controllers", name);
	ctl = cgroup_get_controller(cg, "cpuset");
	cgroup_add_value_string(ctl, "cpuset.cpus", cpus);
	cgroup_add_value_string(ctl, "cpuset.mems", mems);
	if (weight) {
		bool v1 = cpu_on_v1();

		snprintf(val, sizeof(val), "%u", v1 ? weight * 1024 / 100 : weight);
		cgroup_add_value_string(cgroup_get_controller(cg, "cpu"),
					v1 ? "cpu.shares" : "cpu.weight", val);
	}
	r = cgroup_create_cgroup(cg, 0);
	cgroup_free(&cg);
	if (r)
		return err_set(err, -EIO, "cgroup %s: create: %s", name, cgroup_strerror(r));
	return 0;
}

int jobcg_attach(const char *name, pid_t pid, struct nt_err *err)
{
	bool missing;
	struct cgroup *cg = jobcg_load(name, &missing, err);
	int r;

	if (!cg)
		return missing ? err_set(err, -ENOENT, "cgroup %s does not exist (create it with `nodetune apply`)", name)
			       : err->code;
	r = cgroup_attach_task_pid(cg, pid);
	cgroup_free(&cg);
	if (r)
		return err_set(err, -EIO, "cgroup %s: attach pid %d: %s", name, (int)pid, cgroup_strerror(r));
	return 0;
}

int jobcg_delete(const char *name, struct nt_err *err)
{
	bool missing;
	struct cgroup *cg = jobcg_load(name, &missing, err);
	int r;

	if (!cg)
		return missing ? 0 : err->code;
	r = cgroup_delete_cgroup(cg, 1);
	cgroup_free(&cg);
	if (r)
		return err_set(err, -EIO, "cgroup %s: delete: %s", name, cgroup_strerror(r));
	return 0;
}
