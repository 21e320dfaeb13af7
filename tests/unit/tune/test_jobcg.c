/* SPDX-License-Identifier: MIT */
/* test_jobcg.c — the job cgroup through libcgroup on this live host; the
 * result is checked in the cgroup file system and /proc, not through
 * libcgroup.  Skipped (with the reason) where the host permits no cgroups. */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "tune/jobcg.h"
#include "test_util.h"

/* Directory of controller's hierarchy (v1 mount with that option, else the
 * v2 mount), or "" */
static void hierarchy(const char *controller, char *out, size_t size)
{
	char line[1024], v2[512] = "";
	FILE *f = fopen("/proc/self/mounts", "r");

	out[0] = '\0';
	while (f && fgets(line, sizeof(line), f)) {
		char dev[256], mnt[512], type[32], opts[512];

		if (sscanf(line, "%255s %511s %31s %511s", dev, mnt, type, opts) != 4)
			continue;
		if (!strcmp(type, "cgroup2"))
			snprintf(v2, sizeof(v2), "%s", mnt);
		if (strcmp(type, "cgroup"))
			continue;
		for (char *o = strtok(opts, ","); o; o = strtok(NULL, ","))
			if (!strcmp(o, controller))
				snprintf(out, size, "%s", mnt);
	}
	if (f)
		fclose(f);
	if (!out[0])
		snprintf(out, size, "%s", v2);
}

static void test_create_attach_delete(void **state)
{
	char name[64], why[256], base[512], path[700], buf[256], id[JOBCG_ID_MAX], other[JOBCG_ID_MAX];
	struct nt_err err = { 0 };
	FILE *f;
	pid_t pid;
	int status;

	(void)state;
	if (geteuid() != 0)
		test_skip_host("root", "not root: creating cgroups needs root");
	/* whether the host can is read from /sys/fs/cgroup, not asked of jobcg */
	if (!test_host_has_controller("cpuset"))
		test_skip_host("cgroup-cpuset", "no cpuset controller on this host (/sys/fs/cgroup)");
	if (!jobcg_available(why, sizeof(why)))
		fail_msg("the host has a cpuset controller, but jobcg_available says: %s", why);
	hierarchy("cpuset", base, sizeof(base));
	assert_true(base[0] != '\0');
	snprintf(name, sizeof(name), "nodetune-unit-%d", (int)getpid());
	assert_false(jobcg_exists(name));
	if (jobcg_create(name, "0", "0", 200, id, &err) < 0)
		fail_msg("%s", err.msg);
	assert_true(jobcg_exists(name));
	assert_non_null(strstr(id, "cpuset="));
	assert_true(jobcg_is(name, id));
	snprintf(path, sizeof(path), "%s/%s/cpuset.cpus", base, name);
	f = fopen(path, "r");
	assert_non_null(f);
	assert_non_null(fgets(buf, sizeof(buf), f));
	fclose(f);
	assert_string_equal(buf, "0\n");
	hierarchy("cpu", base, sizeof(base));
	snprintf(path, sizeof(path), "%s/%s/cpu.shares", base, name);
	if (access(path, F_OK) == 0) {
		f = fopen(path, "r");
		assert_non_null(fgets(buf, sizeof(buf), f));
		fclose(f);
		assert_string_equal(buf, "2048\n");   /* weight 200 -> 200 * 1024 / 100 */
	}

	/* never take over an existing group, nor touch it */
	memcpy(other, id, sizeof(id));
	assert_int_equal(jobcg_create(name, "0", "0", 0, other, &err), -EEXIST);
	assert_non_null(strstr(err.msg, "exists already and is not ours"));
	assert_string_equal(other, id);
	assert_true(jobcg_is(name, id));
	/* a group of that name with another identity is not deleted */
	assert_false(jobcg_is(name, "cpuset=0.0:1:0.0"));
	assert_false(jobcg_is(name, ""));
	assert_false(jobcg_is(name, NULL));
	assert_int_equal(jobcg_delete(name, "cpuset=0.0:1:0.0", &err), -ESTALE);
	assert_non_null(strstr(err.msg, "not the group this journal recorded"));
	assert_true(jobcg_exists(name));

	pid = fork();
	if (pid == 0) {
		pause();
		_exit(0);
	}
	if (jobcg_attach(name, pid, &err) < 0)
		fail_msg("%s", err.msg);
	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	f = fopen(path, "r");
	assert_non_null(f);
	bool found = false;

	while (fgets(buf, sizeof(buf), f))
		found |= strstr(buf, name) != NULL;
	fclose(f);
	assert_true(found);
	/* deleting with a task inside moves it out first */
	assert_int_equal(jobcg_delete(name, id, &err), 0);
	assert_false(jobcg_exists(name));
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	assert_int_equal(jobcg_delete(name, id, &err), 0);  /* already gone: fine */
	assert_int_equal(jobcg_attach(name, getpid(), &err), -ENOENT);
}

/* The race L5 was: a group made under the name between a check and the
 * create was adopted.  A directory of the name made first (by someone
 * else, or in that window) is refused by the create's own mkdir, and it
 * is not touched; what the create made before it met it is undone. */
static void test_existing_directory_refused(void **state)
{
	char name[64], cpuset[512], cpu[512], path[700], mine[700], id[JOBCG_ID_MAX] = "untouched";
	struct nt_err err = { 0 };
	struct stat before, after;

	(void)state;
	if (geteuid() != 0 || !test_host_has_controller("cpuset"))
		test_skip_host("cgroup-cpuset", "needs root and a cpuset controller");
	hierarchy("cpuset", cpuset, sizeof(cpuset));
	hierarchy("cpu", cpu, sizeof(cpu));
	snprintf(name, sizeof(name), "nodetune-unit-theirs-%d", (int)getpid());
	snprintf(path, sizeof(path), "%s/%s", cpuset, name);
	assert_int_equal(mkdir(path, 0755), 0);
	assert_int_equal(stat(path, &before), 0);
	assert_int_equal(jobcg_create(name, "0", "0", 100, id, &err), -EEXIST);
	assert_non_null(strstr(err.msg, "exists already and is not ours"));
	assert_string_equal(id, "untouched");
	assert_int_equal(stat(path, &after), 0);
	assert_int_equal(before.st_ino, after.st_ino);
	assert_int_equal(rmdir(path), 0);
	if (!cpu[0] || !strcmp(cpu, cpuset))
		return;   /* one hierarchy: no second directory to meet */
	/* theirs in the cpu hierarchy only: the cpuset directory made first is undone */
	snprintf(path, sizeof(path), "%s/%s", cpu, name);
	snprintf(mine, sizeof(mine), "%s/%s", cpuset, name);
	assert_int_equal(mkdir(path, 0755), 0);
	assert_int_equal(jobcg_create(name, "0", "0", 100, id, &err), -EEXIST);
	assert_int_equal(access(mine, F_OK), -1);
	assert_int_equal(access(path, F_OK), 0);
	assert_int_equal(rmdir(path), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_create_attach_delete),
		cmocka_unit_test(test_existing_directory_refused),
	};

	return cmocka_run_group_tests_name("jobcg", tests, NULL, NULL);
}
