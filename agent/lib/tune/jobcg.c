/* SPDX-License-Identifier: MIT */
/* jobcg.c — see jobcg.h.
 *
 * Divisions: libcgroup and the hierarchies; the identity of a group's
 * directories; create, attach, delete.
 */
#include "tune/jobcg.h"

#include <errno.h>
#include <fcntl.h>
#include <libcgroup.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- libcgroup and the hierarchies ----------------------------------------- */

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

/* ---- the identity of a group's directories ------------------------------- */

/* Where name's directory is in controller ctl's hierarchy.  0, or -ENODEV
 * (not mounted), -ENAMETOOLONG. */
static int dir_of(const char *ctl, const char *name, char *path, size_t size)
{
	char *mnt = NULL;
	int n;

	if (cgroup_get_subsys_mount_point(ctl, &mnt) || !mnt) {
		free(mnt);
		return -ENODEV;
	}
	n = snprintf(path, size, "%s/%s", mnt, name);
	free(mnt);
	return n < (int)size ? 0 : -ENAMETOOLONG;
}

/* "CTL=DEV:INO:BTIME" of ctl's directory path, appended to id (of size
 * JOBCG_ID_MAX, holding *len).  0, -errno (-ENOTDIR: not a directory). */
static int dir_identity(const char *ctl, const char *path, char *id, size_t *len)
{
	struct statx sx;
	int n;

	if (statx(AT_FDCWD, path, AT_SYMLINK_NOFOLLOW, STATX_TYPE | STATX_INO | STATX_BTIME, &sx) < 0)
		return -errno;
	if (!S_ISDIR(sx.stx_mode))
		return -ENOTDIR;
	if (!(sx.stx_mask & STATX_BTIME))
		sx.stx_btime = (struct statx_timestamp){ 0 };
	n = snprintf(id + *len, JOBCG_ID_MAX - *len, "%s%s=%x.%x:%llx:%llx.%x", *len ? "," : "", ctl,
		     sx.stx_dev_major, sx.stx_dev_minor, (unsigned long long)sx.stx_ino,
		     (unsigned long long)sx.stx_btime.tv_sec, sx.stx_btime.tv_nsec);
	if (n < 0 || (size_t)n >= JOBCG_ID_MAX - *len)
		return -ENAMETOOLONG;
	*len += (size_t)n;
	return 0;
}

bool jobcg_is(const char *name, const char *id)
{
	char buf[JOBCG_ID_MAX], now[JOBCG_ID_MAX], path[PATH_MAX], *save = NULL;
	unsigned same = 0;
	size_t len;
	int r;

	if (!id || !id[0] || strlen(id) >= sizeof(buf) || jobcg_init())
		return false;
	strcpy(buf, id);
	for (char *item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(item, '=');

		len = 0;
		if (!eq)
			return false;
		*eq = '\0';
		if (dir_of(item, name, path, sizeof(path)) < 0)
			return false;
		/* a directory gone from one hierarchy is no other group: systemd
		 * removes an empty group of a controller it manages (cpu on
		 * cgroup v1) on daemon-reload, and the daemon, restarted, must
		 * still know its own */
		if ((r = dir_identity(item, path, now, &len)) == -ENOENT)
			continue;
		if (r < 0 || strcmp(strchr(now, '=') + 1, eq + 1))
			return false;
		same++;
	}
	return same > 0;
}

/* ---- create, attach, delete ------------------------------------------------- */

/* The directories of a group: the cpuset's, and the cpu controller's (with
 * a weight) where that is another hierarchy. */
struct jobcg_dirs {
	unsigned n;
	const char *ctl[2];
	char path[2][PATH_MAX];
	bool made[2];
};

/* Remove the directories made here, last first (best effort). */
static void dirs_unmake(struct jobcg_dirs *d)
{
	for (unsigned i = d->n; i-- > 0;)
		if (d->made[i] && rmdir(d->path[i]) == 0)
			d->made[i] = false;
}

/* Make name's directories (d->ctl set), each with mkdir: an existing one
 * is someone else's.  0 with the identity in id; -errno with err, nothing
 * left made. */
static int dirs_make(struct jobcg_dirs *d, const char *name, char id[JOBCG_ID_MAX], struct nt_err *err)
{
	size_t len = 0;
	int r = 0;

	for (unsigned i = 0; i < d->n && r == 0; i++) {
		r = dir_of(d->ctl[i], name, d->path[i], sizeof(d->path[i]));
		if (r < 0) {
			err_set(err, r, "cgroup %s: no %s hierarchy to make it in", name, d->ctl[i]);
			break;
		}
		if (i > 0 && !strcmp(d->path[i], d->path[0])) {   /* one hierarchy (v2) */
			d->n = 1;
			break;
		}
		if (mkdir(d->path[i], 0755) < 0) {
			r = -errno;
			if (r == -EEXIST)
				err_set(err, r, "cgroup %s exists already and is not ours (%s); choose another [cgroup] name",
					name, d->path[i]);
			else
				err_set(err, r, "cgroup %s: mkdir %s: %s", name, d->path[i], nt_strerror(-r));
			break;
		}
		d->made[i] = true;
	}
	for (unsigned i = 0; i < d->n && r == 0; i++)
		if ((r = dir_identity(d->ctl[i], d->path[i], id, &len)) < 0)
			err_set(err, r, "cgroup %s: %s: %s", name, d->path[i], nt_strerror(-r));
	if (r < 0)
		dirs_unmake(d);
	return r;
}

/* Set the values of the group name, whose directories exist: libcgroup's
 * create, which takes an existing directory as made, writes them (and, on
 * v2, enables the controllers in the parent). */
static int set_values(const char *name, const char *cpus, const char *mems, unsigned weight, struct nt_err *err)
{
	struct cgroup_controller *ctl;
	struct cgroup *cg = jobcg_new(name, weight > 0);
	char val[32];
	int r;

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

int jobcg_create(const char *name, const char *cpus, const char *mems, unsigned weight,
		 char ret_id[JOBCG_ID_MAX], struct nt_err *err)
{
	struct jobcg_dirs d = { .n = weight ? 2 : 1, .ctl = { "cpuset", "cpu" } };
	char id[JOBCG_ID_MAX] = "";
	int r;

	if ((r = jobcg_init()))
		return err_set(err, -ENODEV, "cgroup %s: libcgroup: %s", name, cgroup_strerror(r));
	if ((r = dirs_make(&d, name, id, err)) < 0)
		return r;
	if ((r = set_values(name, cpus, mems, weight, err)) < 0) {
		dirs_unmake(&d);
		return r;
	}
	memcpy(ret_id, id, sizeof(id));
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

int jobcg_delete(const char *name, const char *id, struct nt_err *err)
{
	bool missing;
	struct cgroup *cg = jobcg_load(name, &missing, err);
	int r;

	if (!cg)
		return missing ? 0 : err->code;
	if (!jobcg_is(name, id)) {
		cgroup_free(&cg);
		return err_set(err, -ESTALE, "cgroup %s: not the group this journal recorded (removed and made again "
			       "by someone else?): left alone", name);
	}
	r = cgroup_delete_cgroup(cg, 1);
	cgroup_free(&cg);
	if (r)
		return err_set(err, -EIO, "cgroup %s: delete: %s", name, cgroup_strerror(r));
	return 0;
}
