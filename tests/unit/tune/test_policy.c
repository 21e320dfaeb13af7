/* SPDX-License-Identifier: MIT */
/* test_policy.c — the policy parser: every error class names file:line. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/userfile.h"
#include "tune/policy.h"
#include "tune/policy_test.h"
#include "test_util.h"

static char dir[64];

static int setup(void **state)
{
	(void)state;
	return test_tmpdir(dir, sizeof(dir)) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	test_rmrf(dir);
	return 0;
}

/* Write name with content in the temp dir; return its path (static). */
static const char *put(const char *name, const char *content)
{
	static char path[256];

	assert_int_equal(test_write(dir, name, content), 0);
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	chmod(path, 0644);
	return path;
}

/* Loading path fails with code, and the message contains want. */
static void expect_error(const char *path, int code, const char *want)
{
	struct nt_err err = { 0 };
	struct policy *p = policy_load(path, 0, &err);

	if (p)
		fail_msg("%s loaded, expected '%s'", path, want);
	if (err.code != code || !strstr(err.msg, want))
		fail_msg("got %d '%s', expected %d '%s'", err.code, err.msg, code, want);
	test_checked();
}

static void test_shipped_policies(void **state)
{
	static const char *const files[] = { "policies/baseline.conf", "policies/gpu-train.conf",
					     "contrib/examples/cross-numa.conf", "policies/gpu-shared.conf" };
	struct nt_err err = { 0 };
	char path[4096];

	(void)state;
	for (size_t i = 0; i < 4; i++) {
		struct policy *p = policy_load(test_path(path, sizeof(path), files[i]), 0, &err);

		if (!p)
			fail_msg("%s", err.msg);
		assert_non_null(policy_get(p, "main", "summary"));
		if (i == 0)
			assert_true(policy_is_empty(p));
		if (i == 1) {
			assert_string_equal(policy_get(p, "affinity", "mode"), "gpu-local");
			assert_string_equal(policy_get(p, "thp", "defrag"), "defer+madvise");
			assert_int_equal(policy_get_int(p, "sched", "numa_balancing", -1), 0);
		}
		if (i == 2)
			assert_non_null(strstr(policy_get(p, "main", "summary"), "DELIBERATELY BAD"));
		if (i == 3) {
			/* binding only: no key the Slurm plugin counts as host-wide
			 * (a scope from KS_JOB on: the job cgroup, host files, IRQs) */
			assert_string_equal(policy_get(p, "affinity", "mode"), "gpu-local");
			for (unsigned k = 0; k < knob_count; k++)
				if (knob_table[k].scope >= KS_JOB && policy_value(p, (enum knob_id)k))
					fail_msg("gpu-shared.conf sets [%s] %s, a host-wide key", knob_table[k].section,
						 knob_table[k].key);
		}
		policy_free(p);
	}
}

static void test_values_and_comments(void **state)
{
	struct nt_err err = { 0 };
	struct policy *p;
	const char *path = put("ok.conf",
		"\xef\xbb\xbf# a comment\n"
		"; another\n"
		"[main]\n"
		"summary =  spaces are trimmed  \n"
		"\n"
		"[ thp ]\r\n"
		"enabled=never\r\n"
		"[sched]\n"
		"nice = -5\n"
		"[sysctl]\n"
		"vm.swappiness = 10\n"
		"[affinity]\n"
		"housekeeping = 0,36\n");

	(void)state;
	p = policy_load(path, 0, &err);
	if (!p)
		fail_msg("%s", err.msg);
	assert_string_equal(policy_get(p, "main", "summary"), "spaces are trimmed");
	assert_string_equal(policy_get(p, "thp", "enabled"), "never");
	assert_int_equal(policy_get_int(p, "sched", "nice", 0), -5);
	assert_int_equal(policy_get_int(p, "sysctl", "vm.swappiness", 0), 10);
	assert_string_equal(policy_get(p, "affinity", "housekeeping"), "0,36");
	assert_null(policy_get(p, "thp", "defrag"));
	assert_int_equal(p->v[knob_find("thp", "enabled")].line, 7);
	assert_false(policy_is_empty(p));
	policy_free(p);
	policy_free(NULL);
}

static void test_unknown_section_and_key(void **state)
{
	(void)state;
	expect_error(put("s.conf", "[main]\nsummary = x\n\n[afinity]\nmode = numa\n"), -EINVAL,
		     "s.conf:4: unknown section [afinity] (did you mean [affinity]?)");
	expect_error(put("k.conf", "[affinity]\nmod = numa\n"), -EINVAL,
		     "k.conf:2: unknown key 'mod' in [affinity] (did you mean 'mode'?)");
	expect_error(put("k2.conf", "[thp]\ncompletely_unrelated = 1\n"), -EINVAL,
		     "k2.conf:2: unknown key 'completely_unrelated' in [thp]");
	expect_error(put("sc.conf", "[sysctl]\nvm.swapiness = 10\n"), -EINVAL,
		     "sc.conf:2: sysctl 'vm.swapiness' is not on the allow-list (did you mean 'vm.swappiness'?)");
	expect_error(put("sc2.conf", "[sysctl]\nkernel.panic = 1\n"), -EINVAL,
		     "sc2.conf:2: sysctl 'kernel.panic' is not on the allow-list");
}

static void test_bad_values(void **state)
{
	(void)state;
	expect_error(put("v1.conf", "[thp]\nenabled = sometimes\n"), -EINVAL,
		     "v1.conf:2: [thp] enabled: 'sometimes' is not one of always, madvise, never");
	expect_error(put("v2.conf", "[sched]\nnice = 20\n"), -EINVAL,
		     "v2.conf:2: [sched] nice: '20' is not an integer from -20 to 19");
	expect_error(put("v3.conf", "[hugetlb]\npages_2m = lots\n"), -EINVAL, "v3.conf:2: [hugetlb] pages_2m");
	expect_error(put("v4.conf", "[affinity]\nhousekeeping = 3-1\n"), -EINVAL,
		     "v4.conf:2: [affinity] housekeeping: '3-1' is not auto, none or a CPU list");
	expect_error(put("v5.conf", "[cgroup]\nname = ../escape\n"), -EINVAL, "v5.conf:2: [cgroup] name");
	expect_error(put("v6.conf", "[main]\nsummary =\n"), -EINVAL, "v6.conf:2: [main] summary: empty value");
	expect_error(put("v7.conf", "[sched]\npriority = 10\n"), -EINVAL,
		     "v7.conf:2: [sched] priority needs policy = fifo or rr");
	expect_error(put("v8.conf", "[sched]\npolicy = fifo\n"), -EINVAL, "v8.conf:2: [sched] policy = fifo needs a priority");
}

static void test_syntax(void **state)
{
	(void)state;
	expect_error(put("x1.conf", "enabled = always\n"), -EINVAL, "x1.conf:1: key 'enabled' before any [section]");
	expect_error(put("x2.conf", "[thp]\njust words\n"), -EINVAL,
		     "x2.conf:2: expected 'key = value', '[section]' or a comment");
	expect_error(put("x3.conf", "[thp\nenabled = always\n"), -EINVAL, "x3.conf:1: malformed section header");
	expect_error(put("x4.conf", "[thp] trailing\n"), -EINVAL, "x4.conf:1: malformed section header");
	expect_error(put("x5.conf", "[thp]\nen abled = always\n"), -EINVAL, "x5.conf:2: malformed key");
}

static void test_duplicate_key(void **state)
{
	(void)state;
	expect_error(put("d.conf", "[thp]\nenabled = always\ndefrag = madvise\n\nenabled = never\n"), -EINVAL,
		     "d.conf:5: duplicate key 'enabled' in [thp] (first set at line 2)");
}

static void test_huge_line_and_binary(void **state)
{
	char *big = malloc(POLICY_MAX_LINE + 64);
	char bin[32] = "[thp]\nenabled = al\0ways\n";

	(void)state;
	snprintf(big, POLICY_MAX_LINE + 64, "[main]\nsummary = ");
	memset(big + strlen(big), 'x', POLICY_MAX_LINE);
	big[POLICY_MAX_LINE + 20] = '\n';
	big[POLICY_MAX_LINE + 21] = '\0';
	expect_error(put("huge.conf", big), -EINVAL, "huge.conf:2: line longer than 4096 bytes");
	free(big);

	/* a NUL byte: test_write stops at it, so write the bytes by hand */
	{
		char path[256];
		FILE *f;

		snprintf(path, sizeof(path), "%s/bin.conf", dir);
		f = fopen(path, "w");
		fwrite(bin, 1, 24, f);
		fclose(f);
		expect_error(path, -EINVAL, "bin.conf:2: binary data (a NUL byte): not a policy file");
	}
	expect_error(put("ctl.conf", "[thp]\nenabled = \x01" "always\n"), -EINVAL, "ctl.conf:2: control character 0x01");
	expect_error("/bin/sh", -EINVAL, "/bin/sh:1:");
}

static void test_include_override(void **state)
{
	struct nt_err err = { 0 };
	struct policy *p;
	const char *child;

	(void)state;
	put("base.conf", "[main]\nsummary = base\n[thp]\nenabled = always\ndefrag = madvise\n");
	put("sub/mid.conf", "[main]\ninclude = ../base.conf\n[thp]\ndefrag = never\n[sched]\nnice = 1\n");
	child = put("sub/child.conf", "[main]\nsummary = child\ninclude = mid.conf\n[thp]\nenabled = madvise\n");
	p = policy_load(child, 0, &err);
	if (!p)
		fail_msg("%s", err.msg);
	assert_string_equal(policy_get(p, "main", "summary"), "child");  /* child overrides */
	assert_string_equal(policy_get(p, "thp", "enabled"), "madvise");
	assert_string_equal(policy_get(p, "thp", "defrag"), "never");    /* from mid */
	assert_int_equal(policy_get_int(p, "sched", "nice", 0), 1);
	assert_non_null(strstr(p->v[knob_find("thp", "defrag")].file, "mid.conf"));
	/* include = is the outermost file's own, not a parent's */
	assert_string_equal(policy_get(p, "main", "include"), "mid.conf");
	policy_free(p);
	assert_no_leak(20, policy_free(policy_load(child, 0, &err)));

	/* several parents: later ones override earlier ones */
	put("a.conf", "[thp]\nenabled = always\n");
	put("b.conf", "[thp]\nenabled = never\n");
	p = policy_load(put("ab.conf", "[main]\ninclude = a.conf, b.conf\n"), 0, &err);
	assert_non_null(p);
	assert_string_equal(policy_get(p, "thp", "enabled"), "never");
	policy_free(p);
}

static void test_include_errors(void **state)
{
	(void)state;
	expect_error(put("m.conf", "[main]\n\ninclude = missing.conf\n"), -ENOENT,
		     "m.conf:3: include '");
	expect_error(put("m.conf", "[main]\ninclude = missing.conf\n"), -ENOENT, "missing.conf': no such file or directory");
	put("c1.conf", "[main]\ninclude = c2.conf\n");
	put("c2.conf", "[main]\ninclude = c3.conf\n");
	put("c3.conf", "[main]\ninclude = c1.conf\n");
	expect_error(put("c1.conf", "[main]\ninclude = c2.conf\n"), -EINVAL, "c3.conf:2: include cycle: ");
	expect_error(put("self.conf", "[main]\ninclude = self.conf\n"), -EINVAL, "self.conf:2: include cycle: ");
	/* an error inside an included file names that file */
	put("badparent.conf", "[thp]\nenabled = 7\n");
	expect_error(put("kid.conf", "[main]\ninclude = badparent.conf\n"), -EINVAL, "badparent.conf:2: [thp] enabled");
}

static void test_file_errors(void **state)
{
	char path[256];

	(void)state;
	snprintf(path, sizeof(path), "%s/nope.conf", dir);
	expect_error(path, -ENOENT, "nope.conf: no such file or directory");
	expect_error(dir, -EISDIR, "is a directory");
	expect_error("/dev/null", -EINVAL, "not a regular file");
}

static void test_trusted_only(void **state)
{
	struct nt_err err = { 0 };
	struct policy *p;
	char path[256];

	(void)state;
	snprintf(path, sizeof(path), "%s", put("ww.conf", "[thp]\nenabled = never\n"));
	chmod(path, 0666);
	assert_null(policy_load(path, POLICY_TRUSTED_ONLY, &err));
	assert_int_equal(err.code, -EPERM);
	assert_non_null(strstr(err.msg, "writable by group or others"));
	chmod(path, 0644);
	if (geteuid() != 0) {
		test_skip_host("root", "not root: chown to another owner needs root");
	}
	assert_int_equal(chown(path, 65534, 65534), 0);
	assert_null(policy_load(path, POLICY_TRUSTED_ONLY, &err));
	assert_int_equal(err.code, -EPERM);
	assert_non_null(strstr(err.msg, "not owned by root (uid 65534"));
	/* an untrusted included file is refused too, at the include line */
	p = policy_load(put("inc-untrusted.conf", "[main]\ninclude = ww.conf\n"), POLICY_TRUSTED_ONLY, &err);
	assert_null(p);
	assert_non_null(strstr(err.msg, "inc-untrusted.conf:2: include"));
	assert_int_equal(chown(path, 0, 0), 0);
	err = (struct nt_err){ 0 };
	p = policy_load(path, POLICY_TRUSTED_ONLY, &err);
	if (!p)
		fail_msg("%s", err.msg);
	assert_string_equal(err.msg, "");          /* a load that succeeds leaves err alone */
	assert_int_equal(err.code, 0);
	policy_free(p);
}

/* The trust rule: POLICY_TRUSTED_ONLY as root, nothing for anyone else
 * (checked in a child that drops to nobody's uid). */
static void test_trust_flags(void **state)
{
	pid_t pid;
	int status;

	(void)state;
	if (geteuid() != 0) {
		assert_int_equal(policy_trust_flags(), 0);
		test_skip_host("root", "not root: the root half of the trust rule needs root");
	}
	assert_int_equal(policy_trust_flags(), POLICY_TRUSTED_ONLY);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(setresuid(65534, 65534, 65534) < 0 ? 2 : policy_trust_flags() == 0 ? 0 : 1);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

/* The content of path (malloc'd) and its length. */
static char *read_all(const char *path, size_t *ret_len)
{
	char *buf = calloc(1, 65536);
	FILE *f = fopen(path, "r");

	assert_non_null(buf);
	assert_non_null(f);
	*ret_len = fread(buf, 1, 65535, f);
	fclose(f);
	return buf;
}

/* Every key of a and b has the same value. */
static void assert_same_values(const struct policy *a, const struct policy *b)
{
	for (unsigned k = 0; k < KNOB_COUNT; k++) {
		const char *va = policy_value(a, (enum knob_id)k), *vb = policy_value(b, (enum knob_id)k);

		if (k == KNOB_MAIN_INCLUDE)
			continue;
		if ((va == NULL) != (vb == NULL) || (va && strcmp(va, vb)))
			fail_msg("[%s] %s: '%s' vs '%s'", knob_table[k].section, knob_table[k].key, va ? va : "(unset)",
				 vb ? vb : "(unset)");
	}
}

/* Item 7 of issue 24: a derived policy, flattened, parses as a buffer to
 * the same values as the file with its includes, and the message about a
 * buffer cannot come out of that path. */
static void test_flatten(void **state)
{
	char top[256], *text = NULL, *raw = NULL, long_line[POLICY_MAX_LINE + 16];
	struct nt_err err = { 0 };
	struct policy *file, *flat;
	size_t len = 0, raw_len = 0;

	(void)state;
	put("fl-base.conf", "[main]\nsummary = base\n[thp]\nenabled = never\n[sysctl]\nvm.swappiness = 10\n"
			    "[sched]\npolicy = fifo\npriority = 5\n");
	put("fl-mid.conf", "[main]\ninclude = fl-base.conf\n[sysctl]\nvm.swappiness = 20\nvm.max_map_count = 262144\n");
	snprintf(top, sizeof(top), "%s", put("fl-top.conf", "[main]\ninclude = fl-mid.conf\nsummary = derived\n"
							      "[affinity]\nmode = gpu-local\n"));
	file = policy_load(top, 0, &err);
	if (!file)
		fail_msg("%s", err.msg);
	assert_int_equal(policy_flatten(top, 0, &text, &len, &err), 0);
	assert_int_equal(strlen(text), len);
	assert_null(strstr(text, "\ninclude"));
	assert_non_null(strstr(text, "fl-mid.conf:4\nvm.swappiness = 20\n"));
	flat = policy_parse_buffer(text, len, "flat", &err);
	if (!flat)
		fail_msg("%s\n%s", err.msg, text);
	assert_same_values(file, flat);
	assert_string_equal(policy_get(flat, "sysctl", "vm.swappiness"), "20");
	assert_string_equal(policy_get(flat, "main", "summary"), "derived");
	policy_free(flat);
	policy_free(file);
	free(text);
	/* the raw file as a buffer is what used to reach a user */
	raw = read_all(top, &raw_len);
	assert_null(policy_parse_buffer(raw, raw_len, "raw", &err));
	assert_non_null(strstr(err.msg, "buffer"));
	free(raw);
	/* a flatten error is the file's, never the buffer's */
	put("fl-bad.conf", "[main]\ninclude = fl-missing.conf\n");
	snprintf(top, sizeof(top), "%s/fl-bad.conf", dir);
	assert_int_equal(policy_flatten(top, 0, &text, &len, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "fl-bad.conf:2: include"));
	assert_null(strstr(err.msg, "buffer"));
	/* a longest line and a file name with a newline stay one line each */
	memset(long_line, 'x', sizeof(long_line));
	memcpy(long_line, "[main]\nsummary=", 15);
	long_line[7 + POLICY_MAX_LINE] = '\0';
	put("fl-new\nline.conf", long_line);
	snprintf(top, sizeof(top), "%s/fl-new\nline.conf", dir);
	assert_int_equal(policy_flatten(top, 0, &text, &len, &err), 0);
	flat = policy_parse_buffer(text, len, "flat", &err);
	if (!flat)
		fail_msg("%s", err.msg);
	assert_int_equal(strlen(policy_get(flat, "main", "summary")), POLICY_MAX_LINE - 8);
	policy_free(flat);
	free(text);
}

/* Make the directory dir/sub (0755) and return its path (static, one of two). */
static const char *mkdir_in(const char *sub)
{
	static char paths[2][256];
	static int which;
	char *path = paths[which++ % 2];

	snprintf(path, 256, "%s/%s", dir, sub);
	mkdir(path, 0755);
	chmod(path, 0755);
	return path;
}

/* --policy NAME and include = NAME: found on the search path, first wins. */
static void test_names_and_search_path(void **state)
{
	struct nt_err err = { 0 };
	char search[600], found[4096];
	struct policy *p;

	(void)state;
	assert_true(policy_is_name("gpu-train"));
	assert_false(policy_is_name("gpu-train.conf"));
	assert_false(policy_is_name("./gpu-train"));
	snprintf(search, sizeof(search), "%s:%s", mkdir_in("etc"), mkdir_in("share"));
	put("share/base.conf", "[main]\nsummary = shared base\n[thp]\nenabled = never\n");
	put("share/top.conf", "[main]\nsummary = top\ninclude = base\n[thp]\ndefrag = madvise\n");
	assert_int_equal(policy_find(search, "base", 0, found, sizeof(found), &err), 0);
	assert_non_null(strstr(found, "/share/base.conf"));
	/* /etc's copy wins over the shared one */
	put("etc/base.conf", "[main]\nsummary = site base\n[thp]\nenabled = always\n");
	assert_int_equal(policy_find(search, "base", 0, found, sizeof(found), &err), 0);
	assert_non_null(strstr(found, "/etc/base.conf"));
	assert_int_equal(policy_find(search, "nope", 0, found, sizeof(found), &err), -ENOENT);
	assert_non_null(strstr(err.msg, "no policy named 'nope' in"));
	assert_int_equal(policy_find(search, "bad name", 0, found, sizeof(found), &err), -EINVAL);
	assert_int_equal(policy_find(search, ".hidden", 0, found, sizeof(found), &err), -EINVAL);
	assert_int_equal(policy_find("relative/dir", "base", 0, found, sizeof(found), &err), -EINVAL);
	assert_non_null(strstr(err.msg, "not an absolute directory"));
	/* policy_load resolves a NAME, and include = NAME, through the environment's path */
	setenv(POLICY_PATH_ENV, search, 1);
	p = policy_load("top", 0, &err);
	if (!p)
		fail_msg("%s", err.msg);
	assert_string_equal(p->path, "top");
	assert_non_null(strstr(p->file, "/share/top.conf"));
	assert_string_equal(policy_get(p, "thp", "enabled"), "always");   /* /etc's base */
	assert_string_equal(policy_get(p, "thp", "defrag"), "madvise");
	policy_free(p);
	expect_error(put("inc-missing.conf", "[main]\ninclude = missing\n"), -ENOENT,
		     "inc-missing.conf:2: include 'missing': no policy named 'missing'");
	expect_error("missing", -ENOENT, "no policy named 'missing'");
	unsetenv(POLICY_PATH_ENV);
	assert_ptr_equal(policy_search_path(), policy_path_default);
	assert_int_equal(strncmp(policy_path_default, "/etc/nodetune/policies:", 23), 0);
	assert_non_null(strstr(policy_path_default, ":/usr/share/nodetune/policies"));
}

/* The checkout rule (policy_checkout_dir) on fake paths: a build
 * directory of a tree that proves it is nodetune's source, and nothing
 * else.  Only the tree is real; the binaries named need not exist. */
static void test_checkout_dir(void **state)
{
	char co[300], exe[400], got[400], want[400], small[8] = "keep";

	(void)state;
	snprintf(co, sizeof(co), "%s/co", dir);
	put("co/Makefile", "all:\n");
	put("co/agent/lib/tune/policy.h", "/* */\n");
	mkdir_in("co/policies");
	snprintf(want, sizeof(want), "%s/policies", co);
	snprintf(exe, sizeof(exe), "%s/build/nodetune", co);
	assert_true(policy_checkout_dir(exe, got, sizeof(got)));
	assert_string_equal(got, want);
	snprintf(exe, sizeof(exe), "%s/build/asan/nodetune", co);          /* BUILD=build/asan */
	assert_true(policy_checkout_dir(exe, got, sizeof(got)));
	assert_string_equal(got, want);
	assert_false(policy_checkout_dir(exe, small, sizeof(small)));     /* does not fit: untouched */
	assert_string_equal(small, "keep");
	/* not in a build directory of it */
	static const char *const not_build[] = { "/build/tests/tune/test_policy", "/nodetune", "/bin/nodetune",
						 "/builds/nodetune", "/build/a/b/nodetune" };
	for (size_t i = 0; i < sizeof(not_build) / sizeof(not_build[0]); i++) {
		snprintf(exe, sizeof(exe), "%s%s", co, not_build[i]);
		if (policy_checkout_dir(exe, got, sizeof(got)))
			fail_msg("%s: taken as a checkout's build directory", exe);
	}
	assert_false(policy_checkout_dir("/usr/sbin/nodetune", got, sizeof(got)));      /* installed */
	assert_false(policy_checkout_dir("/usr/local/bin/nodetune", got, sizeof(got)));
	assert_false(policy_checkout_dir("/build/nodetune", got, sizeof(got)));
	assert_false(policy_checkout_dir("build/nodetune", got, sizeof(got)));          /* relative */
	assert_false(policy_checkout_dir("", got, sizeof(got)));
	/* each proof missing, or of the wrong type */
	snprintf(exe, sizeof(exe), "%s/build/nodetune", co);
	static const char *const proofs[] = { "co/Makefile", "co/agent/lib/tune/policy.h" };
	for (size_t i = 0; i < 2; i++) {
		char path[400];

		snprintf(path, sizeof(path), "%s/%s", dir, proofs[i]);
		assert_int_equal(unlink(path), 0);
		assert_false(policy_checkout_dir(exe, got, sizeof(got)));
		assert_int_equal(mkdir(path, 0755), 0);                        /* a directory of that name */
		assert_false(policy_checkout_dir(exe, got, sizeof(got)));
		assert_int_equal(rmdir(path), 0);
		put(proofs[i], "x\n");
	}
	assert_int_equal(rmdir(want), 0);
	assert_false(policy_checkout_dir(exe, got, sizeof(got)));           /* no policies/ */
	put("co/policies", "a file\n");
	assert_false(policy_checkout_dir(exe, got, sizeof(got)));
	assert_int_equal(unlink(want), 0);
	mkdir_in("co/policies");
	assert_true(policy_checkout_dir(exe, got, sizeof(got)));
	/* this test's own binary is deeper in build/: the default path alone */
	assert_ptr_equal(policy_search_path(), policy_path_default);
}

/* A NAME not found: every directory looked in, and how to add one. */
static void test_not_found_message(void **state)
{
	struct nt_err err = { 0 };
	char found[4096];

	(void)state;
	assert_int_equal(policy_find(":/nonexistent-a:/nonexistent-b", "nope", 0, found, sizeof(found), &err),
			 -ENOENT);
	assert_string_equal(err.msg, "no policy named 'nope' in :/nonexistent-a:/nonexistent-b (add nope.conf to "
				     "/nonexistent-a, or set NODETUNE_POLICY_PATH=DIR; nodetune policy list)");
	assert_int_equal(policy_err_not_found("/etc/nodetune/policies:/x", "", &err), -ENOENT);
	assert_string_equal(err.msg, "no policies in /etc/nodetune/policies:/x (add NAME.conf to "
				     "/etc/nodetune/policies, or set NODETUNE_POLICY_PATH=DIR)");
}

static void test_list(void **state)
{
	struct policy_entry *e = NULL;
	struct nt_err err = { 0 };
	char search[600];
	int n;

	(void)state;
	snprintf(search, sizeof(search), "%s:%s:/nonexistent-nodetune", mkdir_in("l1"), mkdir_in("l2"));
	put("l1/b.conf", "[main]\nsummary = b\n");
	put("l2/a.conf", "[main]\nsummary = a\n");
	put("l2/b.conf", "[main]\nsummary = b2\n");
	put("l2/notes.txt", "not a policy\n");
	put("l2/.hidden.conf", "[main]\n");
	n = policy_list(search, 0, &e, &err);
	assert_int_equal(n, 3);
	assert_string_equal(e[0].name, "b");
	assert_false(e[0].shadowed);
	assert_string_equal(e[1].name, "a");
	assert_string_equal(e[2].name, "b");
	assert_true(e[2].shadowed);
	assert_non_null(strstr(e[2].path, "/l2/b.conf"));
	free(e);
}

/* As root, every directory of the path must be root's and not writable by
 * group or others, whether or not the NAME is found before it. */
static void test_untrusted_directory(void **state)
{
	struct policy_entry *e = NULL;
	struct nt_err err = { 0 };
	char search[600], found[4096], file[256];
	const char *open_dir;

	(void)state;
	if (geteuid() != 0) {
		test_skip_host("root", "the trust rule is checked against root's own directories");
	}
	snprintf(search, sizeof(search), "%s:%s", mkdir_in("t1"), open_dir = mkdir_in("t2"));
	put("t1/x.conf", "[main]\nsummary = x\n");
	assert_int_equal(policy_find(search, "x", POLICY_TRUSTED_ONLY, found, sizeof(found), &err), 0);
	chmod(open_dir, 0777);
	assert_int_equal(policy_find(search, "x", POLICY_TRUSTED_ONLY, found, sizeof(found), &err), -EPERM);
	assert_non_null(strstr(err.msg, "refusing the directory"));
	assert_non_null(strstr(err.msg, "mode 0777)"));
	assert_int_equal(policy_list(search, POLICY_TRUSTED_ONLY, &e, &err), -EPERM);
	assert_int_equal(policy_find(search, "x", 0, found, sizeof(found), &err), 0);   /* not root: no rule */
	chmod(open_dir, 0755);
	assert_int_equal(chown(open_dir, 65534, 65534), 0);
	assert_int_equal(policy_find(search, "x", POLICY_TRUSTED_ONLY, found, sizeof(found), &err), -EPERM);
	assert_non_null(strstr(err.msg, "uid 65534"));
	assert_int_equal(chown(open_dir, 0, 0), 0);
	/* a file on the path, even one anyone may write, is no directory: skipped */
	snprintf(file, sizeof(file), "%s", put("t-file", "x\n"));
	chmod(file, 0666);
	snprintf(search, sizeof(search), "%s:%s/t1", file, dir);
	if (policy_find(search, "x", POLICY_TRUSTED_ONLY, found, sizeof(found), &err) < 0)
		fail_msg("%s: %s", search, err.msg);
}

/* The check of userfile_read that truncates the file it vets: the file
 * shrinks between fstat and read. */
static const char *shrink_path;

static int shrink_check(const struct stat *st, char *why, size_t why_size)
{
	(void)st, (void)why, (void)why_size;
	return truncate(shrink_path, 3);
}

/* userfile_read at its edges: a file of exactly max bytes, descriptor 0,
 * a stale errno of EINTR, a file that shrinks under it; and the trust
 * rule's return and reason. */
static void test_userfile_edges(void **state)
{
	char why[320], *buf = NULL;
	size_t len = 0;
	struct stat st = { .st_uid = 0, .st_mode = S_IFREG | 0644 };
	const char *path = put("ten", "0123456789");
	int saved, r;

	(void)state;
	assert_int_equal(userfile_read(path, 10, "a test file", NULL, &buf, &len, why, sizeof(why)), 0);
	assert_int_equal(len, 10);
	free(buf);
	assert_int_equal(userfile_read(path, 9, "a test file", NULL, &buf, &len, why, sizeof(why)), -EFBIG);
	/* each read closes its file: the next descriptor is the one free before */
	saved = dup(2);
	close(saved);
	assert_int_equal(userfile_read(path, 10, "a test file", NULL, &buf, &len, why, sizeof(why)), 0);
	free(buf);
	r = dup(2);
	close(r);
	assert_int_equal(r, saved);
	/* stdin closed: the file opens as descriptor 0, still a file */
	saved = dup(0);
	assert_true(saved > 0);
	close(0);
	buf = NULL;
	r = userfile_read(path, 10, "a test file", NULL, &buf, &len, why, sizeof(why));
	assert_int_equal(dup2(saved, 0), 0);
	close(saved);
	assert_int_equal(r, 0);
	assert_non_null(buf);
	free(buf);
	/* an errno of EINTR left by an earlier call is no interrupted read
	 * (the alarm ends a loop that would spin on it) */
	alarm(20);
	errno = EINTR;
	assert_int_equal(userfile_read(path, 10, "a test file", NULL, &buf, &len, why, sizeof(why)), 0);
	alarm(0);
	assert_int_equal(len, 10);
	assert_memory_equal(buf, "0123456789", 10);
	free(buf);
	/* shrunk to 3 bytes after fstat: the 3 bytes there are */
	buf = NULL;
	shrink_path = path;
	errno = 0;
	assert_int_equal(userfile_read(path, 10, "a test file", shrink_check, &buf, &len, why, sizeof(why)), 0);
	assert_non_null(buf);
	assert_int_equal(len, 3);
	assert_string_equal(buf, "012");
	free(buf);
	/* the trust rule returns 0 exactly, and names what is wrong */
	assert_int_equal(userfile_check_root_owned(&st, "a test file", why, sizeof(why)), 0);
	st.st_mode = S_IFREG | 0666;
	assert_int_equal(userfile_check_root_owned(&st, "a test file", why, sizeof(why)), -EPERM);
	assert_non_null(strstr(why, "refusing a test file writable by group or others (uid 0, mode 0666)"));
	st.st_uid = 1, st.st_mode = S_IFREG | 0644;
	assert_int_equal(userfile_check_root_owned(&st, "a test file", why, sizeof(why)), -EPERM);
	assert_non_null(strstr(why, "not owned by root (uid 1,"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_shipped_policies),
		cmocka_unit_test(test_values_and_comments),
		cmocka_unit_test(test_unknown_section_and_key),
		cmocka_unit_test(test_bad_values),
		cmocka_unit_test(test_syntax),
		cmocka_unit_test(test_duplicate_key),
		cmocka_unit_test(test_huge_line_and_binary),
		cmocka_unit_test(test_include_override),
		cmocka_unit_test(test_include_errors),
		cmocka_unit_test(test_file_errors),
		cmocka_unit_test(test_trusted_only),
		cmocka_unit_test(test_trust_flags),
		cmocka_unit_test(test_flatten),
		cmocka_unit_test(test_names_and_search_path),
		cmocka_unit_test(test_checkout_dir),
		cmocka_unit_test(test_not_found_message),
		cmocka_unit_test(test_list),
		cmocka_unit_test(test_untrusted_directory),
		cmocka_unit_test(test_userfile_edges),
	};

	return cmocka_run_group_tests_name("policy", tests, setup, teardown);
}
