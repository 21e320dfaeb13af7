/* SPDX-License-Identifier: MIT */
/* test_discover.c — warnings and the JSON document of `nodetune discover`. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <unistd.h>

#include "machine/discover.h"
#include "machine/discover_test.h"
#include "test_util.h"

static struct topo *load(const char *rel)
{
	char path[4096];
	struct nt_err err = { 0 };
	struct topo *t = topo_load_xml(test_path(path, sizeof(path), rel), &err);

	if (!t)
		fail_msg("%s", err.msg);
	return t;
}

static void load_ks(const char *rel, struct kstate *ks)
{
	char path[4096];
	struct nt_err err = { 0 };
	struct fsroot *root = fsroot_open(test_path(path, sizeof(path), rel));

	assert_non_null(root);
	assert_int_equal(kstate_read(root, ks, &err), 0);
	fsroot_free(root);
}

#define HGX "tests/fixtures/topologies/hgx-2s8g8n-synthetic.xml"
#define EPYC "tests/fixtures/topologies/epyc-2s-numa0-8-mi300-synthetic.xml"

static unsigned codes(const struct topo *t, const struct kstate *ks, const char *code)
{
	struct discover_warning w[32];
	unsigned n = discover_warnings(t, ks, w, 32), c = 0;

	assert_true(n <= 32);
	for (unsigned i = 0; i < n; i++)
		c += !strcmp(w[i].code, code);
	return c;
}

static void test_warnings_untuned_gpu_host(void **state)
{
	struct topo *t = load(HGX);
	struct kstate ks;

	(void)state;
	load_ks("tests/fixtures/sysroot/gpu-host-untuned", &ks);
	assert_int_equal(discover_warnings(t, &ks, NULL, 0), 4);
	assert_int_equal(codes(t, &ks, "governor"), 1);   /* powersave: doctor flags it too */
	assert_int_equal(codes(t, &ks, "thp-defrag-always"), 1);
	assert_int_equal(codes(t, &ks, "numa-balancing-on"), 1);
	assert_int_equal(codes(t, &ks, "swap-on"), 1);
	assert_int_equal(codes(t, &ks, "gpu-nic-remote"), 0); /* each GPU has its NIC */
	kstate_release(&ks);
	topo_free(t);
}

static void test_warnings_tuned_gpu_host(void **state)
{
	struct topo *t = load(HGX);
	struct kstate ks;

	(void)state;
	load_ks("tests/fixtures/sysroot/gpu-host-tuned", &ks);
	assert_int_equal(discover_warnings(t, &ks, NULL, 0), 0);
	kstate_release(&ks);
	topo_free(t);
}

static void test_warning_remote_nic(void **state)
{
	struct topo *t = load(EPYC);
	struct discover_warning w[4];

	(void)state;
	/* GPUs 2 and 3 are on node 8, the only NIC on node 0 */
	assert_int_equal(discover_warnings(t, NULL, w, 4), 2);
	assert_string_equal(w[0].code, "gpu-nic-remote");
	assert_non_null(strstr(w[0].msg, "GPU 2 (0000:85:00.0) is on NUMA node 8"));
	assert_non_null(strstr(w[0].msg, "ens1f0np0 (0000:41:00.0) is on node 0"));
	assert_non_null(strstr(w[1].msg, "GPU 3 (0000:a5:00.0)"));
	/* max bounds what is written, not what is counted */
	assert_int_equal(discover_warnings(t, NULL, w, 1), 2);
	topo_free(t);
}

static void test_numa_balancing_needs_multi_node_gpu_host(void **state)
{
	struct nt_err err = { 0 };
	struct topo *one = topo_load_synthetic("numa:1 core:4 pu:1", &err);
	struct topo *two_no_gpu = topo_load_synthetic("pack:2 numa:1 core:4 pu:1", &err);
	struct kstate ks;

	(void)state;
	load_ks("tests/fixtures/sysroot/gpu-host-untuned", &ks);
	assert_int_equal(codes(one, &ks, "numa-balancing-on"), 0);
	assert_int_equal(codes(two_no_gpu, &ks, "numa-balancing-on"), 0);
	assert_int_equal(codes(one, &ks, "swap-on"), 1);
	kstate_release(&ks);
	topo_free(one);
	topo_free(two_no_gpu);
}

static void test_json_document(void **state)
{
	struct topo *t = load(EPYC);
	json_t *doc = discover_json(t, NULL), *g, *n;

	(void)state;
	assert_non_null(doc);
	assert_int_equal(json_integer_value(json_object_get(doc, "packages")), 2);
	assert_int_equal(json_integer_value(json_object_get(doc, "cores")), 32);
	assert_int_equal(json_integer_value(json_object_get(doc, "pus")), 32);
	assert_true(json_is_null(json_object_get(doc, "kernel")));
	n = json_array_get(json_object_get(doc, "numa_nodes"), 1);
	assert_int_equal(json_integer_value(json_object_get(n, "os_index")), 8);
	assert_string_equal(json_string_value(json_object_get(n, "cpus")), "16-31");
	assert_int_equal(json_integer_value(json_object_get(n, "memory_bytes")), 811748818944LL);
	g = json_array_get(json_object_get(doc, "gpus"), 3);
	assert_int_equal(json_integer_value(json_object_get(g, "index")), 3);
	assert_string_equal(json_string_value(json_object_get(g, "pci_bus_id")), "0000:a5:00.0");
	assert_string_equal(json_string_value(json_object_get(g, "vendor")), "amd");
	assert_int_equal(json_integer_value(json_object_get(g, "numa_node")), 8);
	assert_string_equal(json_string_value(json_object_get(g, "cpus")), "24-31");
	assert_string_equal(json_string_value(json_object_get(g, "name")), "AMD Instinct MI300X");
	n = json_array_get(json_object_get(doc, "nics"), 0);
	assert_string_equal(json_string_value(json_object_get(n, "name")), "ens1f0np0");
	assert_string_equal(json_string_value(json_object_get(n, "rdma_device")), "bnxt_re0");
	assert_int_equal(json_array_size(json_object_get(doc, "warnings")), 2);
	json_decref(doc);
	topo_free(t);
}

static void test_json_kernel(void **state)
{
	struct topo *t = load(HGX);
	struct kstate ks;
	json_t *doc, *k, *hp;

	(void)state;
	load_ks("tests/fixtures/sysroot/gpu-host-tuned", &ks);
	ks.numa_balancing = -1;    /* unknown becomes null */
	ks.hugepages[0].node = -1; /* the global pool (no per-node pools): null */
	t->gpus[1].numa_node = -1; /* a device whose locality spans nodes: null */
	t->nics[2].numa_node = -1;
	doc = discover_json(t, &ks);
	k = json_object_get(doc, "kernel");
	assert_string_equal(json_string_value(json_object_get(k, "thp_enabled")), "madvise");
	assert_string_equal(json_string_value(json_object_get(k, "thp_defrag")), "defer+madvise");
	assert_true(json_is_null(json_object_get(k, "numa_balancing")));
	assert_string_equal(json_string_value(json_object_get(k, "governor")), "performance");
	assert_string_equal(json_string_value(json_object_get(k, "isolated_cpus")), "2-3");
	assert_string_equal(json_string_value(json_object_get(k, "nohz_full")), "2-3");
	assert_int_equal(json_integer_value(json_object_get(k, "swap_total_bytes")), 0);
	assert_int_equal(json_integer_value(json_object_get(k, "cgroup_version")), 1);
	assert_true(json_is_null(json_object_get(json_array_get(json_object_get(k, "hugepages"), 0), "node")));
	assert_true(json_is_null(json_object_get(json_array_get(json_object_get(doc, "gpus"), 1), "numa_node")));
	assert_true(json_is_null(json_object_get(json_array_get(json_object_get(doc, "nics"), 2), "numa_node")));
	assert_int_equal(json_integer_value(json_object_get(json_array_get(json_object_get(doc, "gpus"), 2),
							     "numa_node")), 0);
	hp = json_array_get(json_object_get(k, "hugepages"), 1);
	assert_int_equal(json_integer_value(json_object_get(hp, "node")), 0);
	assert_int_equal(json_integer_value(json_object_get(hp, "size_kb")), 1048576);
	assert_int_equal(json_integer_value(json_object_get(hp, "total")), 16);
	assert_int_equal(json_integer_value(json_object_get(hp, "free")), 16);
	json_decref(doc);
	kstate_release(&ks);
	topo_free(t);
}

static void test_print(void **state)
{
	struct topo *t = load(EPYC);
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	(void)state;
	assert_int_equal(discover_print(f, t, NULL), 0);
	fclose(f);
	assert_non_null(strstr(buf, "2 packages, 2 NUMA nodes, 32 cores, 32 PUs, 4 GPUs, 1 NIC\n"));
	/* nodes, then GPUs with their nearest NIC and the path, then NICs */
	assert_non_null(strstr(buf, "\n8     756.0 GiB   16-31\n"));
	assert_non_null(strstr(buf, "\n2    0000:85:00.0  8     ens1f0np0  SYS   Aqua Vanjaram"));
	assert_non_null(strstr(buf, "\nens1f0np0  0000:41:00.0  0     bnxt_re0\n"));
	assert_non_null(strstr(buf, "kernel: not read"));
	assert_non_null(strstr(buf, "warnings:\n  ! GPU 2 (0000:85:00.0)"));
	free(buf);
	topo_free(t);
}

/* numactl -H's matrix (the XML's NUMALatency 10 21 / 21 10) and each
 * node's free memory from the tree's nodeN/meminfo (the capture's MemFree,
 * 5882952 kB, on both of gpu-host-tuned's nodes) */
static void test_print_distances_free(void **state)
{
	char path[4096];
	struct kstate ks;
	struct topo *t;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	(void)state;
	snprintf(path, sizeof(path), "%s/../shared/topologies/g4dnmetal.xml", test_srcdir());
	if (access(path, R_OK) < 0)
		test_need("../shared", "%s not found (../shared/topologies is absent)", path);
	t = topo_load_xml(path, NULL);
	assert_non_null(t);
	load_ks("tests/fixtures/sysroot/gpu-host-tuned", &ks);
	f = open_memstream(&buf, &len);
	assert_int_equal(discover_print(f, t, &ks), 0);
	fclose(f);
	assert_non_null(strstr(buf, "\nnode distances:\nnode   0   1\n  0:  10  21\n  1:  21  10\n"));
	assert_non_null(strstr(buf, "\nNODE  MEMORY      FREE        CPUS\n"
				 "0     188.5 GiB   5.6 GiB     0-23,48-71\n"));
	assert_non_null(strstr(buf, "\n0    0000:18:00.0  0     rdmap197s0  SYS   Tesla T4\n"));
	free(buf);
	kstate_release(&ks);
	topo_free(t);
}

static void test_print_write_failure(void **state)
{
	struct topo *t = load(EPYC);
	FILE *f = fopen("/dev/full", "w");

	(void)state;
	assert_non_null(f);
	setvbuf(f, NULL, _IONBF, 0);
	assert_int_equal(discover_print(f, t, NULL), -EIO);
	fclose(f);
	topo_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_warnings_untuned_gpu_host),
		cmocka_unit_test(test_warnings_tuned_gpu_host),
		cmocka_unit_test(test_warning_remote_nic),
		cmocka_unit_test(test_numa_balancing_needs_multi_node_gpu_host),
		cmocka_unit_test(test_json_document),
		cmocka_unit_test(test_json_kernel),
		cmocka_unit_test(test_print),
		cmocka_unit_test(test_print_distances_free),
		cmocka_unit_test(test_print_write_failure),
	};

	return cmocka_run_group_tests_name("discover", tests, NULL, NULL);
}
