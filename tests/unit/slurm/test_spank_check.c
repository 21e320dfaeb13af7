/* SPDX-License-Identifier: MIT */
/* test_spank_check.c — the SPANK plugin's checks without Slurm
 * (deploy/slurm/spank_check.h): a --nodetune value resolved beneath the
 * policy directories and nowhere else; the trust rule (not root's, group-
 * or world-writable); the policy read as the job's user, each refusal's
 * line; the Slurm release; whether a job owns the node for each shared
 * value slurmctld gives (--exclusive, --oversubscribe, --exclusive=user,
 * the partition's OverSubscribe=), and when slurmctld cannot be asked; a
 * step's GPUs from SLURM_STEP_GPUS, else CUDA_VISIBLE_DEVICES, else
 * GPU_DEVICE_ORDINAL.  test_slurm.sh runs the plugin in a live Slurm. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "spank_check.h"
#include "test_util.h"

#define HGX "tests/fixtures/topologies/hgx-2s8g8n-synthetic.xml"
#define GOOD "[main]\nsummary = a test policy\n"

struct fx {
	char dir[64];           /* DIR: the test's own */
	char pol[128];          /* DIR/policies: the allow-listed directory */
	char dirs[512];         /* the policy_dirs= value: DIR/nowhere:DIR/policies:DIR/second */
};

static int setup(void **state)
{
	static struct fx fx;
	char path[256];

	if (!test_tmpdir(fx.dir, sizeof(fx.dir)) || chmod(fx.dir, 0755) < 0)
		return -1;
	snprintf(fx.pol, sizeof(fx.pol), "%s/policies", fx.dir);
	snprintf(fx.dirs, sizeof(fx.dirs), "%s/nowhere:%s:%s/second", fx.dir, fx.pol, fx.dir);
	test_write(fx.dir, "policies/good.conf", GOOD);
	test_write(fx.dir, "policies/plain", GOOD);                /* a NAME without .conf */
	test_write(fx.dir, "policies/plain.conf", "[main]\nsummary = the .conf one\n");
	test_write(fx.dir, "second/other.conf", GOOD);
	test_write(fx.dir, "second/good.conf", "[main]\nsummary = the second directory's\n");
	test_write(fx.dir, "policiez/beside.conf", GOOD);          /* beside policies/: not in it */
	test_write(fx.dir, "outside.conf", GOOD);
	snprintf(path, sizeof(path), "%s/policies/link.conf", fx.dir);
	if (symlink("../outside.conf", path) < 0)
		return -1;
	*state = &fx;
	return 0;
}

static int teardown(void **state)
{
	struct fx *fx = *state;

	test_rmrf(fx->dir);
	return 0;
}

/* ---- the value shown ------------------------------------------------------ */

static void test_shown(void **state)
{
	char buf[96], long_value[200];

	(void)state;
	assert_string_equal(spank_check_shown("a\tb\x7f\x1f~ z", buf), "a?b??~ z");
	memset(long_value, 'x', sizeof(long_value) - 1);
	long_value[sizeof(long_value) - 1] = '\0';
	assert_int_equal(strlen(spank_check_shown(long_value, buf)), 95);
	assert_string_equal(spank_check_shown("", buf), "");
}

/* ---- beneath the policy directories --------------------------------------- */

static void test_in_dirs(void **state)
{
	struct fx *fx = *state;
	char p[512], dirs[600];

	snprintf(p, sizeof(p), "%s/good.conf", fx->pol);
	assert_true(spank_check_in_dirs(fx->dirs, p));
	assert_true(spank_check_in_dirs(fx->pol, p));
	/* a directory that does not resolve is passed over, not the end */
	snprintf(dirs, sizeof(dirs), "%s/nowhere:%s", fx->dir, fx->pol);
	assert_true(spank_check_in_dirs(dirs, p));
	/* policiez/ begins with policies' name: not beneath it */
	snprintf(p, sizeof(p), "%s/policiez/beside.conf", fx->dir);
	assert_false(spank_check_in_dirs(fx->pol, p));
	/* the directory itself is not a file beneath it */
	assert_false(spank_check_in_dirs(fx->pol, fx->pol));
	snprintf(p, sizeof(p), "%s/outside.conf", fx->dir);
	assert_false(spank_check_in_dirs(fx->dirs, p));
	/* "/" holds every absolute path; "/x" (not there) holds nothing */
	assert_true(spank_check_in_dirs("/", p));
	assert_true(spank_check_in_dirs("/tmp", p));
	assert_false(spank_check_in_dirs("/nonexistent-nodetune", "/nonexistent-nodetune/a"));
	assert_false(spank_check_in_dirs("", p));
	/* a directory named through a link counts as its target */
	snprintf(p, sizeof(p), "%s/pol-link", fx->dir);
	assert_int_equal(symlink(fx->pol, p), 0);
	snprintf(dirs, sizeof(dirs), "%s/good.conf", fx->pol);
	assert_true(spank_check_in_dirs(p, dirs));
	unlink(p);
}

static void test_resolve_name(void **state)
{
	struct fx *fx = *state;
	char real[PATH_MAX], want[PATH_MAX];

	/* NAME.conf in the first directory that has it */
	assert_int_equal(spank_check_resolve(fx->dirs, "good", NULL, real), 0);
	snprintf(want, sizeof(want), "%s/good.conf", fx->pol);
	assert_string_equal(real, want);
	/* NAME itself before NAME.conf */
	assert_int_equal(spank_check_resolve(fx->dirs, "plain", NULL, real), 0);
	snprintf(want, sizeof(want), "%s/plain", fx->pol);
	assert_string_equal(real, want);
	assert_int_equal(spank_check_resolve(fx->dirs, "plain.conf", NULL, real), 0);
	snprintf(want, sizeof(want), "%s/plain.conf", fx->pol);
	assert_string_equal(real, want);
	/* the second directory's */
	assert_int_equal(spank_check_resolve(fx->dirs, "other", NULL, real), 0);
	snprintf(want, sizeof(want), "%s/second/other.conf", fx->dir);
	assert_string_equal(real, want);
	/* none has it; a link out of the directory is not taken */
	assert_int_equal(spank_check_resolve(fx->dirs, "missing", NULL, real), -ENOENT);
	assert_int_equal(spank_check_resolve(fx->dirs, "link", NULL, real), -ENOENT);
	assert_int_equal(spank_check_resolve(fx->dirs, "..", NULL, real), -ENOENT);
}

static void test_resolve_path(void **state)
{
	struct fx *fx = *state;
	char real[PATH_MAX], want[PATH_MAX], v[512], here[PATH_MAX];
	int r, r2, r3;

	snprintf(want, sizeof(want), "%s/good.conf", fx->pol);
	assert_int_equal(spank_check_resolve(fx->dirs, want, NULL, real), 0);
	assert_string_equal(real, want);
	/* relative to an absolute cwd */
	assert_int_equal(spank_check_resolve(fx->dirs, "policies/good.conf", fx->dir, real), 0);
	assert_string_equal(real, want);
	assert_int_equal(spank_check_resolve(fx->dirs, "./good.conf", fx->pol, real), 0);
	assert_string_equal(real, want);
	/* no cwd, or a relative one: a relative value does not resolve */
	assert_int_equal(spank_check_resolve(fx->dirs, "policies/good.conf", NULL, real), -ENOENT);
	assert_int_equal(spank_check_resolve(fx->dirs, "policies/good.conf", "tmp", real), -ENOENT);
	assert_int_equal(spank_check_resolve(fx->dirs, "./good.conf", "", real), -ENOENT);
	/* ... even where the process's own directory would resolve it */
	assert_non_null(getcwd(here, sizeof(here)));
	assert_int_equal(chdir(fx->dir), 0);
	r = spank_check_resolve(fx->dirs, "./good.conf", "policies", real);
	r2 = spank_check_resolve(fx->dirs, "policies/good.conf", ".", real);
	r3 = spank_check_resolve(fx->dirs, "./policies/good.conf", NULL, real);
	assert_int_equal(chdir(here), 0);
	assert_int_equal(r, -ENOENT);
	assert_int_equal(r2, -ENOENT);
	assert_int_equal(r3, -ENOENT);
	/* an absolute value needs no cwd, not even a relative one */
	assert_int_equal(spank_check_resolve(fx->dirs, want, "tmp", real), 0);
	/* outside: beside, above, through a link, through .. */
	snprintf(v, sizeof(v), "%s/policiez/beside.conf", fx->dir);
	assert_int_equal(spank_check_resolve(fx->pol, v, NULL, real), -EPERM);
	snprintf(v, sizeof(v), "%s/outside.conf", fx->dir);
	assert_int_equal(spank_check_resolve(fx->dirs, v, NULL, real), -EPERM);
	snprintf(v, sizeof(v), "%s/link.conf", fx->pol);
	assert_int_equal(spank_check_resolve(fx->dirs, v, NULL, real), -EPERM);
	assert_int_equal(spank_check_resolve(fx->dirs, "policies/../outside.conf", fx->dir, real), -EPERM);
	/* not there: realpath's errno */
	snprintf(v, sizeof(v), "%s/missing.conf", fx->pol);
	assert_int_equal(spank_check_resolve(fx->dirs, v, NULL, real), -ENOENT);
}

/* ---- the trust rule ------------------------------------------------------- */

static void test_trusted(void **state)
{
	struct stat st = { .st_uid = 0, .st_mode = S_IFREG | 0644 };
	char why[512] = "";

	(void)state;
	assert_int_equal(spank_check_trusted(&st, why, sizeof(why)), 0);
	st.st_mode = S_IFREG | 0755;
	assert_int_equal(spank_check_trusted(&st, why, sizeof(why)), 0);
	st.st_mode = S_IFREG | 0400;
	assert_int_equal(spank_check_trusted(&st, why, sizeof(why)), 0);
	assert_string_equal(why, "");
	/* group-writable */
	st.st_mode = S_IFREG | 0664;
	assert_int_equal(spank_check_trusted(&st, why, sizeof(why)), -EKEYREJECTED);
	assert_string_equal(why, "writable by group or others (uid 0, mode 0664): the node applies policies as root "
			    "and takes only files owned by root and not writable by group or others");
	/* world-writable, with the set-gid bit shown */
	st.st_mode = S_IFREG | 02646;
	assert_int_equal(spank_check_trusted(&st, why, sizeof(why)), -EKEYREJECTED);
	assert_non_null(strstr(why, "writable by group or others (uid 0, mode 2646)"));
	/* not root's, though read-only */
	st.st_uid = 1000;
	st.st_mode = S_IFREG | 0444;
	assert_int_equal(spank_check_trusted(&st, why, sizeof(why)), -EKEYREJECTED);
	assert_non_null(strstr(why, "not owned by root (uid 1000, mode 0444)"));
	st.st_uid = 1;
	st.st_mode = S_IFREG | 0666;
	assert_int_equal(spank_check_trusted(&st, why, sizeof(why)), -EKEYREJECTED);
	assert_non_null(strstr(why, "not owned by root (uid 1, mode 0666)"));
}

/* ---- the policy read as the job's user ------------------------------------ */

static struct asuser me(void)
{
	struct asuser u;

	asuser_lookup(geteuid(), getegid(), &u);
	return u;
}

static void test_policy(void **state)
{
	struct fx *fx = *state;
	struct nt_err err = { 0 };
	struct asuser u = me();
	struct policy *p;
	char *buf = NULL, want[PATH_MAX];
	size_t len = 0;

	p = spank_check_policy(fx->dirs, "good", NULL, &u, &buf, &len, &err);
	if (!p && geteuid() != 0)
		test_skip_host("root", "the node takes only root's policy files, and this test is not root");
	assert_non_null(p);
	snprintf(want, sizeof(want), "%s/good.conf", fx->pol);
	assert_string_equal(p->path, want);
	assert_int_equal(len, strlen(GOOD));
	assert_memory_equal(buf, GOOD, len);
	free(buf);
	policy_free(p);
	/* no buffer asked: the policy alone */
	p = spank_check_policy(fx->dirs, "other", NULL, &u, NULL, NULL, &err);
	assert_non_null(p);
	policy_free(p);
}

/* value's refusal: NULL, -EPERM, err's line equals want */
static void refused(const struct fx *fx, const char *value, const struct asuser *u, const char *want)
{
	struct nt_err err = { 0 };
	char *buf = (char *)"untouched";
	size_t len = 7;
	struct policy *p = spank_check_policy(fx->dirs, value, fx->dir, u, &buf, &len, &err);

	assert_null(p);
	assert_int_equal(err.code, -EPERM);
	assert_string_equal(err.msg, want);
	assert_string_equal(buf, "untouched");
	assert_int_equal(len, 7);
}

/* the line of a value that names no allowed file */
static const char *not_allowed(const struct fx *fx, const char *shown, char *buf, size_t size)
{
	snprintf(buf, size, "--nodetune=%s: not an allowed policy (a NAME or a file you can read in %s)", shown,
		 fx->dirs);
	return buf;
}

static void test_policy_refused(void **state)
{
	struct fx *fx = *state;
	struct asuser u = me(), nobody = { .uid = 65534, .gid = 65534 };
	char want[2048], path[512], big[512];
	FILE *f;

	if (geteuid() != 0)
		test_skip_host("root", "root's and others' files and a second user need root");
	/* group-writable, and the mode of the file not changed by the check */
	test_write(fx->pol, "gw.conf", GOOD);
	snprintf(path, sizeof(path), "%s/gw.conf", fx->pol);
	assert_int_equal(chmod(path, 0664), 0);
	snprintf(want, sizeof(want), "--nodetune=gw: %s: writable by group or others (uid 0, mode 0664): the node "
		 "applies policies as root and takes only files owned by root and not writable by group or others",
		 path);
	refused(fx, "gw", &u, want);
	/* world-writable */
	assert_int_equal(chmod(path, 0646), 0);
	snprintf(want, sizeof(want), "--nodetune=policies/gw.conf: %s: writable by group or others (uid 0, mode "
		 "0646): the node applies policies as root and takes only files owned by root and not writable by "
		 "group or others", path);
	refused(fx, "policies/gw.conf", &u, want);
	/* not root's */
	test_write(fx->pol, "users.conf", GOOD);
	snprintf(path, sizeof(path), "%s/users.conf", fx->pol);
	assert_int_equal(chown(path, 65534, 65534), 0);
	assert_int_equal(chmod(path, 0644), 0);
	snprintf(want, sizeof(want), "--nodetune=users: %s: not owned by root (uid 65534, mode 0644): the node "
		 "applies policies as root and takes only files owned by root and not writable by group or others",
		 path);
	refused(fx, "users", &u, want);
	/* too large: the same form of line, the reason userfile_read's */
	snprintf(big, sizeof(big), "%s/big.conf", fx->pol);
	f = fopen(big, "w");
	assert_non_null(f);
	assert_int_equal(fseek(f, POLICY_MAX_SIZE, SEEK_SET), 0);
	fputc('\n', f);
	assert_int_equal(fclose(f), 0);
	snprintf(want, sizeof(want), "--nodetune=big: %s: too large for a policy file (%u bytes, limit %u)", big,
		 POLICY_MAX_SIZE + 1, POLICY_MAX_SIZE);
	refused(fx, "big", &u, want);
	/* one and the same line: missing, outside, beside, through a link,
	 * and a file the user cannot read (root's 0600, read as nobody) */
	refused(fx, "missing", &u, not_allowed(fx, "missing", want, sizeof(want)));
	refused(fx, "outside.conf", &u, not_allowed(fx, "outside.conf", want, sizeof(want)));
	refused(fx, "policiez/beside.conf", &u, not_allowed(fx, "policiez/beside.conf", want, sizeof(want)));
	refused(fx, "link", &u, not_allowed(fx, "link", want, sizeof(want)));
	snprintf(path, sizeof(path), "%s/good.conf", fx->pol);
	assert_int_equal(chmod(path, 0600), 0);
	refused(fx, "good", &nobody, not_allowed(fx, "good", want, sizeof(want)));
	assert_int_equal(chmod(path, 0644), 0);
	/* the user's bytes shown printable */
	refused(fx, "a\nb", &u, not_allowed(fx, "a?b", want, sizeof(want)));
}

static void test_policy_parse(void **state)
{
	struct fx *fx = *state;
	struct nt_err err = { 0 };
	struct asuser u = me();
	char path[512];

	if (geteuid() != 0)
		test_skip_host("root", "the node takes only root's policy files, and this test is not root");
	/* an include=: said in the user's terms */
	test_write(fx->pol, "inc.conf", "[main]\ninclude = good\n");
	assert_null(spank_check_policy(fx->dirs, "inc", NULL, &u, NULL, NULL, &err));
	snprintf(path, sizeof(path), "%s/inc.conf", fx->pol);
	assert_non_null(strstr(err.msg, path));
	assert_non_null(strstr(err.msg, ": include= is not taken in a --nodetune policy (the node applies this file "
			       "alone); ask for a self-contained one"));
	assert_null(strstr(err.msg, "given as a buffer"));
	/* another parse error is the parser's own */
	memset(&err, 0, sizeof(err));
	test_write(fx->pol, "bad.conf", "[main]\nnot a key line\n");
	assert_null(spank_check_policy(fx->dirs, "bad", NULL, &u, NULL, NULL, &err));
	assert_int_not_equal(err.code, 0);
	assert_null(strstr(err.msg, "include="));
}

/* ---- the Slurm release ---------------------------------------------------- */

static void test_release(void **state)
{
	char why[256] = "";

	(void)state;
	assert_true(spank_check_release("22", "05", 22, 5, why, sizeof(why)));
	assert_true(spank_check_release("22", "5", 22, 5, why, sizeof(why)));
	assert_true(spank_check_release("255", "0", 255, 0, why, sizeof(why)));
	assert_string_equal(why, "");
	assert_false(spank_check_release(NULL, "05", 22, 5, why, sizeof(why)));
	assert_string_equal(why, "slurmd does not say its Slurm release (the plugin was built for 22.05)");
	assert_false(spank_check_release("22", NULL, 22, 5, why, sizeof(why)));
	assert_string_equal(why, "slurmd does not say its Slurm release (the plugin was built for 22.05)");
	assert_false(spank_check_release("23", "02", 22, 5, why, sizeof(why)));
	assert_string_equal(why, "the plugin was built for Slurm 22.05, this node runs 23.02: rebuild it against "
			    "this Slurm's headers");
	assert_false(spank_check_release("22", "06", 22, 5, why, sizeof(why)));
	assert_false(spank_check_release("21", "05", 22, 5, why, sizeof(why)));
	assert_false(spank_check_release("22", "04", 22, 5, why, sizeof(why)));
	assert_false(spank_check_release("x", "05", 22, 5, why, sizeof(why)));
	assert_false(spank_check_release("22", "5x", 22, 5, why, sizeof(why)));
	assert_false(spank_check_release("278", "05", 22, 5, why, sizeof(why)));
	/* above 255: refused by the parse, whatever was built */
	assert_false(spank_check_release("256", "0", 256, 0, why, sizeof(why)));
	assert_string_equal(why, "the plugin was built for Slurm 256.00, this node runs 256.0: rebuild it against "
			    "this Slurm's headers");
}

/* ---- whether the job owns the node ---------------------------------------- */

static void test_owns_node(void **state)
{
	char why[512] = "";

	(void)state;
	/* --exclusive (or the partition's OverSubscribe=EXCLUSIVE) */
	assert_int_equal(spank_check_owns_node(42, NULL, true, SPANK_SHARED_NONE, why, sizeof(why)), 1);
	assert_string_equal(why, "");
	/* --oversubscribe, a partition's OverSubscribe=YES */
	assert_int_equal(spank_check_owns_node(42, NULL, true, SPANK_SHARED_OK, why, sizeof(why)), 0);
	assert_string_equal(why, "job 42 shares the node with other jobs (OverSubscribe=YES; submit with --exclusive)");
	/* --exclusive=user: the user's other jobs may share it */
	assert_int_equal(spank_check_owns_node(43, NULL, true, SPANK_SHARED_USER, why, sizeof(why)), 0);
	assert_string_equal(why, "job 43 shares the node with other jobs (OverSubscribe=USER; submit with --exclusive)");
	/* --exclusive=mcs */
	assert_int_equal(spank_check_owns_node(44, NULL, true, SPANK_SHARED_MCS, why, sizeof(why)), 0);
	assert_string_equal(why, "job 44 shares the node with other jobs (OverSubscribe=MCS; submit with --exclusive)");
	/* nothing asked: the partition's OverSubscribe=NO or FORCE decides,
	 * and either lets other jobs on */
	assert_int_equal(spank_check_owns_node(45, NULL, true, SPANK_SHARED_UNSET, why, sizeof(why)), 0);
	assert_string_equal(why, "job 45 shares the node with other jobs (OverSubscribe=OK; submit with --exclusive)");
	assert_int_equal(spank_check_owns_node(45, NULL, true, 4, why, sizeof(why)), 0);
	/* slurmctld not asked (down, or no answer), or not knowing the job */
	assert_int_equal(spank_check_owns_node(46, "Unable to contact slurm controller", true, SPANK_SHARED_NONE, why,
					       sizeof(why)), -EIO);
	assert_string_equal(why, "slurmctld could not be asked whether job 46 owns the node (slurm_load_job: Unable "
			    "to contact slurm controller)");
	assert_int_equal(spank_check_owns_node(47, NULL, false, SPANK_SHARED_NONE, why, sizeof(why)), -ENOENT);
	assert_string_equal(why, "slurmctld does not know job 47");
	/* the words themselves */
	assert_string_equal(spank_check_shared_word(SPANK_SHARED_NONE), "NO");
	assert_string_equal(spank_check_shared_word(SPANK_SHARED_OK), "YES");
	assert_string_equal(spank_check_shared_word(SPANK_SHARED_USER), "USER");
	assert_string_equal(spank_check_shared_word(SPANK_SHARED_MCS), "MCS");
	assert_string_equal(spank_check_shared_word(SPANK_SHARED_UNSET), "OK");
}

/* ---- the step's GPUs ------------------------------------------------------ */

/* a task's environment: NULL-terminated name, value pairs */
static int fake_getenv(void *ctx, const char *name, char *buf, size_t size)
{
	for (const char *const *e = ctx; e[0]; e += 2)
		if (!strcmp(e[0], name)) {
			snprintf(buf, size, "%s", e[1]);
			return 0;
		}
	snprintf(buf, size, "%s", "stale bytes of an earlier variable");
	return -ENOENT;
}

/* spank_check_gpus over env: the count, or -errno; gpus and *from set */
static int gpus_of(const struct topo *t, const char *const *env, unsigned *gpus, unsigned max, const char **from,
		   struct nt_err *err)
{
	memset(gpus, 0xff, sizeof(unsigned) * 8);
	*from = "not set";
	return spank_check_gpus(t, fake_getenv, (void *)env, gpus, max, from, err);
}

static void test_gpus(void **state)
{
	char path[4096];
	struct nt_err err = { 0 };
	struct topo *t = topo_load_xml(test_path(path, sizeof(path), HGX), &err);
	unsigned gpus[8], n_gpus;
	const char *from;

	(void)state;
	assert_non_null(t);
	assert_int_equal(t->n_gpus, 8);
	/* Slurm's own list first */
	assert_int_equal(gpus_of(t, (const char *const[]){ "SLURM_STEP_GPUS", "2,3", "CUDA_VISIBLE_DEVICES", "0",
							  NULL }, gpus, 8, &from, &err), 2);
	assert_string_equal(from, "SLURM_STEP_GPUS");
	assert_int_equal(gpus[0], 2);
	assert_int_equal(gpus[1], 3);
	/* no SLURM_STEP_GPUS, or an empty one: CUDA_VISIBLE_DEVICES */
	assert_int_equal(gpus_of(t, (const char *const[]){ "CUDA_VISIBLE_DEVICES", "5", "GPU_DEVICE_ORDINAL", "1",
							  NULL }, gpus, 8, &from, &err), 1);
	assert_string_equal(from, "CUDA_VISIBLE_DEVICES");
	assert_int_equal(gpus[0], 5);
	assert_int_equal(gpus_of(t, (const char *const[]){ "SLURM_STEP_GPUS", "", "CUDA_VISIBLE_DEVICES", "7,6",
							  NULL }, gpus, 8, &from, &err), 2);
	assert_string_equal(from, "CUDA_VISIBLE_DEVICES");
	assert_int_equal(gpus[0], 7);
	assert_int_equal(gpus[1], 6);
	/* neither: GPU_DEVICE_ORDINAL (empty commas skipped) */
	assert_int_equal(gpus_of(t, (const char *const[]){ "CUDA_VISIBLE_DEVICES", "", "GPU_DEVICE_ORDINAL", "1,,0",
							  NULL }, gpus, 8, &from, &err), 2);
	assert_string_equal(from, "GPU_DEVICE_ORDINAL");
	assert_int_equal(gpus[0], 1);
	assert_int_equal(gpus[1], 0);
	/* none set: all of the machine's */
	assert_int_equal(gpus_of(t, (const char *const[]){ "OTHER", "1", NULL }, gpus, 8, &from, &err), 0);
	assert_null(from);
	/* at most max stored, every word checked */
	assert_int_equal(gpus_of(t, (const char *const[]){ "SLURM_STEP_GPUS", "0,1,2", NULL }, gpus, 2, &from, &err),
			 2);
	assert_int_equal(gpus[1], 1);
	assert_int_equal(gpus[2], 0xffffffffu);
	assert_int_equal(gpus_of(t, (const char *const[]){ "SLURM_STEP_GPUS", "0,1,9", NULL }, gpus, 2, &from, &err),
			 -EINVAL);
	/* a word that is not a GPU of the machine */
	memset(&err, 0, sizeof(err));
	assert_int_equal(gpus_of(t, (const char *const[]){ "CUDA_VISIBLE_DEVICES", "8", NULL }, gpus, 8, &from, &err),
			 -EINVAL);
	assert_int_equal(err.code, -EINVAL);
	snprintf(path, sizeof(path), "CUDA_VISIBLE_DEVICES=8: '8' is not a GPU of %s", t->source);
	assert_string_equal(err.msg, path);
	assert_int_equal(gpus_of(t, (const char *const[]){ "GPU_DEVICE_ORDINAL", "1x", NULL }, gpus, 8, &from, &err),
			 -EINVAL);
	assert_int_equal(gpus_of(t, (const char *const[]){ "GPU_DEVICE_ORDINAL", "-1", NULL }, gpus, 8, &from, &err),
			 -EINVAL);
	assert_int_equal(gpus_of(t, (const char *const[]){ "GPU_DEVICE_ORDINAL", "4294967296", NULL }, gpus, 8, &from,
				 &err), -EINVAL);
	assert_int_equal(gpus_of(t, (const char *const[]){ "SLURM_STEP_GPUS", "GPU-1a2b", NULL }, gpus, 8, &from,
				 &err), -EINVAL);
	assert_int_equal(gpus_of(t, (const char *const[]){ "SLURM_STEP_GPUS", " 1", NULL }, gpus, 8, &from, &err), 1);
	/* nothing kept: gres_build's view freed on every return */
	assert_no_leak(20, gpus_of(t, (const char *const[]){ "SLURM_STEP_GPUS", "1,2", NULL }, gpus, 8, &from, &err));
	assert_no_leak(20, gpus_of(t, (const char *const[]){ "SLURM_STEP_GPUS", "1,12", NULL }, gpus, 8, &from, &err));
	/* a machine without GPUs: a variable set changes nothing */
	n_gpus = t->n_gpus;
	t->n_gpus = 0;
	assert_int_equal(gpus_of(t, (const char *const[]){ "CUDA_VISIBLE_DEVICES", "99", NULL }, gpus, 8, &from, &err),
			 0);
	assert_string_equal(from, "CUDA_VISIBLE_DEVICES");
	t->n_gpus = n_gpus;
	topo_free(t);
}

/* Device numbers of two digits: a DGX-2's 16 GPUs (../shared/topologies,
 * hwloc's export of a real one) */
static void test_gpus_dgx2(void **state)
{
	char path[4096];
	struct nt_err err = { 0 };
	struct topo *t;
	unsigned gpus[16];
	const char *from;

	(void)state;
	test_path(path, sizeof(path), "../shared/topologies/nvidiaDGX2.xml");
	if (access(path, R_OK) < 0)
		test_need("../shared", "%s: not here", path);
	t = topo_load_xml(path, &err);
	assert_non_null(t);
	assert_int_equal(t->n_gpus, 16);
	assert_int_equal(gpus_of(t, (const char *const[]){ "CUDA_VISIBLE_DEVICES", "10,15,9", NULL }, gpus, 16, &from,
				 &err), 3);
	assert_int_equal(gpus[0], 10);
	assert_int_equal(gpus[1], 15);
	assert_int_equal(gpus[2], 9);
	assert_int_equal(gpus_of(t, (const char *const[]){ "SLURM_STEP_GPUS", "16", NULL }, gpus, 16, &from, &err),
			 -EINVAL);
	assert_int_equal(gpus_of(t, (const char *const[]){ "SLURM_STEP_GPUS", "a", NULL }, gpus, 16, &from, &err),
			 -EINVAL);
	topo_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_shown),
		cmocka_unit_test(test_in_dirs),
		cmocka_unit_test(test_resolve_name),
		cmocka_unit_test(test_resolve_path),
		cmocka_unit_test(test_trusted),
		cmocka_unit_test(test_policy),
		cmocka_unit_test(test_policy_refused),
		cmocka_unit_test(test_policy_parse),
		cmocka_unit_test(test_release),
		cmocka_unit_test(test_owns_node),
		cmocka_unit_test(test_gpus),
		cmocka_unit_test(test_gpus_dgx2),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
