/* SPDX-License-Identifier: MIT */
/* test_recommend.c — the decision as a table of fact combinations, Slurm
 * hostlists, and the facts read from small trees below an fsroot. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "machine/recommend.h"
#include "test_util.h"

static void test_decide_table(void **state)
{
	static const struct {
		unsigned gpus;
		enum rec_slurm slurm;
		enum rec_kubelet kubelet;
		const char *want, *why;
	} rows[] = {
		{ 0, REC_SLURM_NONE, REC_KUBELET_NONE, "baseline", "no GPU" },
		{ 0, REC_SLURM_SHARED, REC_KUBELET_NONE, "baseline", "no GPU" },
		{ 0, REC_SLURM_NONE, REC_KUBELET_STATIC, "baseline", "no GPU" },
		{ 8, REC_SLURM_NONE, REC_KUBELET_NONE, "gpu-train", "one job owns" },
		{ 8, REC_SLURM_EXCLUSIVE, REC_KUBELET_NONE, "gpu-train", "one job owns" },
		{ 8, REC_SLURM_SHARED, REC_KUBELET_NONE, "gpu-shared", "Slurm may put other jobs" },
		{ 1, REC_SLURM_NONE, REC_KUBELET_SHARED, "gpu-shared", "pods share the node" },
		{ 8, REC_SLURM_EXCLUSIVE, REC_KUBELET_SHARED, "gpu-shared", "pods share the node" },
		{ 8, REC_SLURM_NONE, REC_KUBELET_STATIC, "baseline", "static CPU manager" },
		{ 8, REC_SLURM_SHARED, REC_KUBELET_STATIC, "baseline", "static CPU manager" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct rec_facts f = { .gpus = rows[i].gpus, .slurm = rows[i].slurm, .kubelet = rows[i].kubelet };
		const char *why = NULL;
		const char *got = recommend_name(recommend_decide(&f, &why));

		if (strcmp(got, rows[i].want) || !why || !strstr(why, rows[i].why))
			fail_msg("row %zu: got %s (%s), want %s (%s)", i, got, why ? why : "(null)", rows[i].want, rows[i].why);
		test_checked();
	}
}

static void test_hostlist(void **state)
{
	(void)state;
	assert_true(recommend_hostlist_has("gpu[01-04,07]", "gpu03"));
	assert_true(recommend_hostlist_has("gpu[01-04,07]", "gpu07"));
	assert_false(recommend_hostlist_has("gpu[01-04,07]", "gpu05"));
	assert_true(recommend_hostlist_has("login1,gpu[1-2]x", "gpu2x"));
	assert_false(recommend_hostlist_has("login1,gpu[1-2]x", "gpu2"));
	assert_true(recommend_hostlist_has("login1,node7", "node7"));
	assert_false(recommend_hostlist_has("node70", "node7"));
	assert_true(recommend_hostlist_has("ALL", "anything"));
	assert_false(recommend_hostlist_has("", "node7"));
}

/* Facts from a tree: hostname, slurm.conf, kubelet files as given. */
static int facts_in(const char *const files[][2], size_t n, unsigned gpus, struct rec_facts *f, struct nt_err *err)
{
	char dir[256];
	struct topo t = { .n_gpus = gpus };
	struct fsroot *root;
	int r;

	assert_non_null(test_tmpdir(dir, sizeof(dir)));
	for (size_t i = 0; i < n; i++)
		assert_int_equal(test_write(dir, files[i][0], files[i][1]), 0);
	root = fsroot_open(dir);
	assert_non_null(root);
	r = recommend_facts(root, &t, f, err);
	fsroot_free(root);
	test_rmrf(dir);
	return r;
}

static void test_facts_slurm(void **state)
{
	static const char *const shared[][2] = {
		{ "proc/sys/kernel/hostname", "gpu03.cluster\n" },
		{ "etc/slurm/slurm.conf", "NodeName=gpu[01-08] Gres=gpu:8\n"
					  "PartitionName=debug Nodes=login1 OverSubscribe=EXCLUSIVE\n"
					  "PartitionName=batch Nodes=gpu[01-08] Default=YES  # OverSubscribe=EXCLUSIVE\n" },
	};
	static const char *const exclusive[][2] = {
		{ "proc/sys/kernel/hostname", "gpu03\n" },
		{ "etc/slurm/slurm.conf", "PartitionName=debug Nodes=login1\n"
					  "partitionname=batch nodes=gpu[01-08] oversubscribe=exclusive\n" },
	};
	struct nt_err err = { 0 };
	struct rec_facts f;
	const char *why;

	(void)state;
	assert_int_equal(facts_in(shared, 2, 8, &f, &err), 0);
	assert_int_equal(f.slurm, REC_SLURM_SHARED);   /* batch has no OverSubscribe: NO, jobs may share */
	assert_non_null(strstr(f.slurm_src, "gpu03: 1 partition, 1 letting jobs share"));
	assert_string_equal(recommend_name(recommend_decide(&f, &why)), "gpu-shared");
	assert_int_equal(facts_in(exclusive, 2, 8, &f, &err), 0);
	assert_int_equal(f.slurm, REC_SLURM_EXCLUSIVE);
	assert_int_equal(f.kubelet, REC_KUBELET_NONE);
	assert_string_equal(recommend_name(recommend_decide(&f, &why)), "gpu-train");
}

static void test_facts_kubelet(void **state)
{
	static const char *const state_static[][2] = {
		{ "var/lib/kubelet/cpu_manager_state",
		  "{\"policyName\":\"static\",\"defaultCpuSet\":\"0-1,48-49\",\"checksum\":1353318690}\n" },
	};
	static const char *const config_none[][2] = {
		{ "var/lib/kubelet/config.yaml", "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n" },
	};
	static const char *const config_static[][2] = {
		{ "var/lib/kubelet/config.yaml", "kind: KubeletConfiguration\ncpuManagerPolicy: \"static\"\n" },
	};
	static const char *const garbage[][2] = {
		{ "var/lib/kubelet/cpu_manager_state", "not json\n" },
	};
	struct nt_err err = { 0 };
	struct rec_facts f;

	(void)state;
	assert_int_equal(facts_in(state_static, 1, 8, &f, &err), 0);
	assert_int_equal(f.kubelet, REC_KUBELET_STATIC);
	assert_non_null(strstr(f.kubelet_src, "cpu_manager_state: CPU manager policy static"));
	assert_int_equal(facts_in(config_none, 1, 8, &f, &err), 0);
	assert_int_equal(f.kubelet, REC_KUBELET_SHARED);
	assert_non_null(strstr(f.kubelet_src, "config.yaml: CPU manager policy none (unset)"));
	assert_int_equal(facts_in(config_static, 1, 8, &f, &err), 0);
	assert_int_equal(f.kubelet, REC_KUBELET_STATIC);
	assert_int_equal(facts_in(garbage, 1, 8, &f, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "cpu_manager_state: not a CPU manager checkpoint"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_decide_table),
		cmocka_unit_test(test_hostlist),
		cmocka_unit_test(test_facts_slurm),
		cmocka_unit_test(test_facts_kubelet),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
