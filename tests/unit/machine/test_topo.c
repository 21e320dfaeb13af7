/* SPDX-License-Identifier: MIT */
/* test_topo.c — discovery of packages, NUMA nodes, GPUs and NICs.
 *
 * Expected values for ../shared/topologies were read with hwloc's own tools
 * (`lstopo-no-graphics -i FILE -p`, `hwloc-calc -i FILE -I pu node:N`), not
 * with nodetune; those for the project's fixtures follow from how
 * tests/fixtures/topologies/gen-fixtures.py builds them.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "base/cpulist.h"
#include "machine/topo.h"
#include "machine/topo_test.h"
#include "test_util.h"

struct dev_expect {
	const char *bus;
	int numa;
	const char *cpus;
	const char *name;       /* GPU model, or NIC name */
	const char *nearest;    /* GPUs: nearest NIC name, NULL when none */
};

struct topo_expect {
	const char *file;
	unsigned packages, cores, pus, n_numa;
	unsigned numa_os[4];
	const char *numa_cpus[4];
	unsigned n_gpus;
	const char *gpu_vendor;
	struct dev_expect gpus[16];
	unsigned n_nics;
	struct dev_expect nics[10];
	const char *links[16];  /* each GPU's PCIe path to its nearest NIC (as the XML's tree shows) */
	uint64_t dist[16];      /* the NUMALatency matrix of the XML; all 0: none */
};

static void assert_cpulist(hwloc_const_bitmap_t set, const char *want)
{
	char *s = cpulist_format_alloc(set);

	assert_non_null(s);
	assert_string_equal(s, want);
	free(s);
}

static void check_expect(const struct topo_expect *e, const char *path)
{
	struct nt_err err = { 0 };
	struct topo *t = topo_load_xml(path, &err);

	if (!t)
		fail_msg("%s: %s", path, err.msg);
	assert_int_equal(t->packages, e->packages);
	assert_int_equal(t->cores, e->cores);
	assert_int_equal(t->pus, e->pus);
	assert_int_equal(t->n_numa, e->n_numa);
	for (unsigned i = 0; i < e->n_numa; i++) {
		assert_int_equal(t->numa[i].os_index, e->numa_os[i]);
		assert_cpulist(t->numa[i].cpus, e->numa_cpus[i]);
		assert_ptr_equal(topo_numa_by_os(t, e->numa_os[i]), &t->numa[i]);
	}
	assert_int_equal(t->n_gpus, e->n_gpus);
	for (unsigned i = 0; i < e->n_gpus; i++) {
		const struct topo_dev *d = &t->gpus[i];

		assert_string_equal(d->pci_bus_id, e->gpus[i].bus);
		assert_int_equal(d->numa_node, e->gpus[i].numa);
		assert_cpulist(d->cpus, e->gpus[i].cpus);
		assert_string_equal(d->vendor, e->gpu_vendor);
		if (e->gpus[i].name)
			assert_string_equal(d->name, e->gpus[i].name);
		if (e->gpus[i].nearest)
			assert_string_equal(t->nics[d->nearest_nic].name, e->gpus[i].nearest);
		else
			assert_int_equal(d->nearest_nic, t->n_nics ? d->nearest_nic : -1);
	}
	for (unsigned i = 0; i < e->n_gpus; i++)
		if (e->links[i] || !t->n_nics)
			assert_string_equal(topo_link_name(t->gpus[i].nic_link), e->links[i] ? e->links[i] : "-");
	if (!e->dist[0])
		assert_null(t->numa_dist);
	for (unsigned i = 0; e->dist[0] && i < e->n_numa * e->n_numa; i++)
		assert_int_equal(t->numa_dist[i], e->dist[i]);
	assert_int_equal(t->n_nics, e->n_nics);
	for (unsigned i = 0; i < e->n_nics; i++) {
		assert_string_equal(t->nics[i].pci_bus_id, e->nics[i].bus);
		assert_int_equal(t->nics[i].numa_node, e->nics[i].numa);
		assert_cpulist(t->nics[i].cpus, e->nics[i].cpus);
		assert_string_equal(t->nics[i].name, e->nics[i].name);
	}
	topo_free(t);
}

/* ---- the project's fixtures -------------------------------------------- */

#define HGX0 "0-23,48-71"
#define HGX1 "24-47,72-95"
static const struct topo_expect hgx = {
	.file = "tests/fixtures/topologies/hgx-2s8g8n-synthetic.xml",
	.packages = 2, .cores = 48, .pus = 96, .n_numa = 2,
	.numa_os = { 0, 1 }, .numa_cpus = { HGX0, HGX1 },
	.n_gpus = 8, .gpu_vendor = "nvidia",
	.gpus = {
		{ "0000:1b:00.0", 0, HGX0, "NVIDIA H100 80GB HBM3", "ibp26s0" },
		{ "0000:2d:00.0", 0, HGX0, "NVIDIA H100 80GB HBM3", "ibp44s0" },
		{ "0000:3f:00.0", 0, HGX0, "NVIDIA H100 80GB HBM3", "ibp62s0" },
		{ "0000:51:00.0", 0, HGX0, "NVIDIA H100 80GB HBM3", "ibp80s0" },
		{ "0000:9d:00.0", 1, HGX1, "NVIDIA H100 80GB HBM3", "ibp156s0" },
		{ "0000:ae:00.0", 1, HGX1, "NVIDIA H100 80GB HBM3", "ibp173s0" },
		/* no CUDA/NVML osdev: still GPUs, named from PCI */
		{ "0000:bf:00.0", 1, HGX1, "GH100 [H100 SXM5 80GB]", "ibp190s0" },
		{ "0000:d0:00.0", 1, HGX1, "GH100 [H100 SXM5 80GB]", "ibp207s0" },
	},
	/* the ASPEED BMC VGA at 0000:03:00.0 is not a GPU */
	.n_nics = 9,
	.nics = {
		{ "0000:02:00.0", 0, HGX0, "eno1", NULL },
		{ "0000:1a:00.0", 0, HGX0, "ibp26s0", NULL },
		{ "0000:2c:00.0", 0, HGX0, "ibp44s0", NULL },
		{ "0000:3e:00.0", 0, HGX0, "ibp62s0", NULL },
		{ "0000:50:00.0", 0, HGX0, "ibp80s0", NULL },
		{ "0000:9c:00.0", 1, HGX1, "ibp156s0", NULL },
		{ "0000:ad:00.0", 1, HGX1, "ibp173s0", NULL },
		{ "0000:be:00.0", 1, HGX1, "ibp190s0", NULL },
		{ "0000:cf:00.0", 1, HGX1, "ibp207s0", NULL },
	},
	/* each GPU and its NIC: two downstream ports of one switch */
	.links = { "PIX", "PIX", "PIX", "PIX", "PIX", "PIX", "PIX", "PIX" },
};

static const struct topo_expect epyc = {
	.file = "tests/fixtures/topologies/epyc-2s-numa0-8-mi300-synthetic.xml",
	.packages = 2, .cores = 32, .pus = 32, .n_numa = 2,
	.numa_os = { 0, 8 }, .numa_cpus = { "0-15", "16-31" },
	.n_gpus = 4, .gpu_vendor = "amd",
	/* each GPU hangs below an L3: its CPUs are narrower than its node */
	.gpus = {
		{ "0000:05:00.0", 0, "0-7", "Aqua Vanjaram [Instinct MI300X]", "ens1f0np0" },
		{ "0000:25:00.0", 0, "8-15", "Aqua Vanjaram [Instinct MI300X]", "ens1f0np0" },
		{ "0000:85:00.0", 8, "16-23", "Aqua Vanjaram [Instinct MI300X]", "ens1f0np0" },
		{ "0000:a5:00.0", 8, "24-31", "AMD Instinct MI300X", "ens1f0np0" },
	},
	.n_nics = 1,
	.nics = { { "0000:41:00.0", 0, "0-7", "ens1f0np0", NULL } },
	/* GPU 0 shares the NIC's host bridge; GPU 1 is under another L3 of
	 * package 0; GPUs 2 and 3 are on package 1 */
	.links = { "PHB", "NODE", "SYS", "SYS" },
};

static void test_fixture_hgx(void **state)
{
	char path[4096];

	(void)state;
	check_expect(&hgx, test_path(path, sizeof(path), hgx.file));
}

static void test_fixture_epyc(void **state)
{
	char path[4096];

	(void)state;
	check_expect(&epyc, test_path(path, sizeof(path), epyc.file));
}

static void test_fixture_nic_rdma(void **state)
{
	struct nt_err err;
	char path[4096];
	struct topo *t;

	(void)state;
	t = topo_load_xml(test_path(path, sizeof(path), hgx.file), &err);
	assert_non_null(t);
	assert_string_equal(t->nics[0].rdma, "");
	assert_string_equal(t->nics[1].rdma, "mlx5_0");
	assert_string_equal(t->nics[8].rdma, "mlx5_7");
	topo_free(t);
}

/* ---- ../shared/topologies: real machines ---------------------------------- */

#define E32_0 "0-7,16-23"
#define E32_1 "8-15,24-31"
static const struct topo_expect shared_32em64t = {
	.file = "32em64t-2n8c2t-pci-normalio.xml",
	.packages = 2, .cores = 16, .pus = 32, .n_numa = 2,
	.numa_os = { 0, 1 }, .numa_cpus = { E32_0, E32_1 },
	/* 3D controllers 03:00.0, 83:00.0, 84:00.0 (cuda0); not the Matrox
	 * VGA 05:03.0 nor the AMD VGA 84:00.1 (OpenCL only) */
	.n_gpus = 3, .gpu_vendor = "nvidia",
	.gpus = {
		{ "0000:03:00.0", 0, E32_0, NULL, "ib0" },
		{ "0000:83:00.0", 1, E32_1, NULL, "ib0" },
		{ "0000:84:00.0", 1, E32_1, "Tesla K40m", "ib0" },
	},
	.n_nics = 3,
	.nics = {
		{ "0000:04:00.0", 1, E32_1, "ib0", NULL },
		{ "0000:81:00.0", 1, E32_1, "eth0", NULL },
		{ "0000:81:00.1", 1, E32_1, "eth1", NULL },
	},
	/* ib0 sits below 84:00.0's root port 80:03.0; 83:00.0 is on the
	 * next root port of the same host bridge; 03:00.0 on package 0 */
	.links = { "SYS", "PHB", "PIX" },
	.dist = { 10, 20, 20, 10 },
};

static const struct topo_expect shared_96em64t = {
	.file = "96em64t-4n4d3ca2co-pci.xml",
	.packages = 16, .cores = 96, .pus = 96, .n_numa = 4,
	.numa_os = { 0, 1, 2, 3 }, .numa_cpus = { "0-23", "24-47", "48-71", "72-95" },
	.n_gpus = 0, .gpu_vendor = "", /* the ATI ES1000 board VGA is not a GPU */
	.n_nics = 8,
	.nics = {
		{ "0000:02:00.0", 0, "0-23", "eth0", NULL },
		{ "0000:02:00.1", 0, "0-23", "eth1", NULL },
		{ "0000:32:00.0", 1, "24-47", "eth2", NULL },
		{ "0000:32:00.1", 1, "24-47", "eth3", NULL },
		{ "0000:62:00.0", 2, "48-71", "eth4", NULL },
		{ "0000:62:00.1", 2, "48-71", "eth5", NULL },
		{ "0000:92:00.0", 3, "72-95", "eth6", NULL },
		{ "0000:92:00.1", 3, "72-95", "eth7", NULL },
	},
	.dist = { 10, 26, 26, 26, 26, 10, 26, 26, 26, 26, 10, 26, 26, 26, 26, 10 },
};

#define G4_0 "0-23,48-71"
#define G4_1 "24-47,72-95"
static const struct topo_expect shared_g4dn = {
	.file = "g4dnmetal.xml",
	.packages = 2, .cores = 48, .pus = 96, .n_numa = 2,
	.numa_os = { 0, 1 }, .numa_cpus = { G4_0, G4_1 },
	.n_gpus = 8, .gpu_vendor = "nvidia",
	/* the EFA (rdmap197s0) wins over the ENA at equal tree distance */
	.gpus = {
		{ "0000:18:00.0", 0, G4_0, "Tesla T4", "rdmap197s0" },
		{ "0000:19:00.0", 0, G4_0, "Tesla T4", "rdmap197s0" },
		{ "0000:35:00.0", 0, G4_0, "Tesla T4", "rdmap197s0" },
		{ "0000:36:00.0", 0, G4_0, "Tesla T4", "rdmap197s0" },
		{ "0000:e7:00.0", 1, G4_1, "Tesla T4", "rdmap197s0" },
		{ "0000:e8:00.0", 1, G4_1, "Tesla T4", "rdmap197s0" },
		{ "0000:f4:00.0", 1, G4_1, "Tesla T4", "rdmap197s0" },
		{ "0000:f5:00.0", 1, G4_1, "Tesla T4", "rdmap197s0" },
	},
	.n_nics = 2,
	.nics = {
		{ "0000:c5:00.0", 1, G4_1, "rdmap197s0", NULL },
		{ "0000:c6:00.0", 1, G4_1, "eth0", NULL },
	},
	/* the EFA on package 1 under a host bridge of its own */
	.links = { "SYS", "SYS", "SYS", "SYS", "NODE", "NODE", "NODE", "NODE" },
	.dist = { 10, 21, 21, 10 },
};

#define V100 "Tesla V100-SXM3-32GB-H"
static const struct topo_expect shared_dgx2 = {
	.file = "nvidiaDGX2.xml",
	.packages = 2, .cores = 4, .pus = 4, .n_numa = 2,
	.numa_os = { 0, 1 }, .numa_cpus = { "0-1", "24-25" },
	/* 16 V100 with nvml osdevs only; the 12 NVSwitches (class 0x0680) are not GPUs */
	.n_gpus = 16, .gpu_vendor = "nvidia",
	.gpus = {
		{ "0000:34:00.0", 0, "0-1", V100, NULL }, { "0000:36:00.0", 0, "0-1", V100, NULL },
		{ "0000:39:00.0", 0, "0-1", V100, NULL }, { "0000:3b:00.0", 0, "0-1", V100, NULL },
		{ "0000:57:00.0", 0, "0-1", V100, NULL }, { "0000:59:00.0", 0, "0-1", V100, NULL },
		{ "0000:5c:00.0", 0, "0-1", V100, NULL }, { "0000:5e:00.0", 0, "0-1", V100, NULL },
		{ "0000:b7:00.0", 1, "24-25", V100, NULL }, { "0000:b9:00.0", 1, "24-25", V100, NULL },
		{ "0000:bc:00.0", 1, "24-25", V100, NULL }, { "0000:be:00.0", 1, "24-25", V100, NULL },
		{ "0000:e0:00.0", 1, "24-25", V100, NULL }, { "0000:e2:00.0", 1, "24-25", V100, NULL },
		{ "0000:e5:00.0", 1, "24-25", V100, NULL }, { "0000:e7:00.0", 1, "24-25", V100, NULL },
	},
	.n_nics = 0,
	.dist = { 10, 21, 21, 10 },
};

#define P8_0 "0-1,8-9,16-17,24-25"
#define P8_1 "80-81,88-89,96-97,104-105"
#define P100 "Tesla P100-SXM2-16GB"
static const struct topo_expect shared_power8 = {
	.file = "power8gpudistances.xml",
	.packages = 2, .cores = 8, .pus = 16, .n_numa = 2,
	.numa_os = { 0, 1 }, .numa_cpus = { P8_0, P8_1 },
	.n_gpus = 4, .gpu_vendor = "nvidia",
	.gpus = {
		{ "0002:01:00.0", 0, P8_0, P100, NULL }, { "0003:01:00.0", 0, P8_0, P100, NULL },
		{ "000a:01:00.0", 1, P8_1, P100, NULL }, { "000b:01:00.0", 1, P8_1, P100, NULL },
	},
	.n_nics = 0,
	.dist = { 10, 40, 40, 10 },
};

static void check_shared(const struct topo_expect *e)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s/../shared/topologies/%s", test_srcdir(), e->file);
	if (access(path, R_OK) < 0) {
		test_need("../shared", "%s not found (../shared/topologies is absent)", path);
	}
	check_expect(e, path);
}

static void test_shared_32em64t(void **state) { (void)state; check_shared(&shared_32em64t); }
static void test_shared_96em64t(void **state) { (void)state; check_shared(&shared_96em64t); }
static void test_shared_g4dn(void **state) { (void)state; check_shared(&shared_g4dn); }
static void test_shared_dgx2(void **state) { (void)state; check_shared(&shared_dgx2); }
static void test_shared_power8(void **state) { (void)state; check_shared(&shared_power8); }

/* ---- synthetic, rules, bad input ------------------------------------------ */

static void test_synthetic(void **state)
{
	struct nt_err err = { 0 };
	struct topo *t;

	(void)state;
	t = topo_load_synthetic("pack:2 numa:1 core:8 pu:2", &err);
	assert_non_null(t);
	assert_int_equal(t->packages, 2);
	assert_int_equal(t->n_numa, 2);
	assert_int_equal(t->cores, 16);
	assert_int_equal(t->pus, 32);
	assert_int_equal(t->numa[0].os_index, 0);
	assert_int_equal(t->numa[1].os_index, 1);
	assert_cpulist(t->numa[0].cpus, "0-15");
	assert_cpulist(t->numa[1].cpus, "16-31");
	assert_int_equal(t->n_gpus, 0);
	assert_int_equal(t->n_nics, 0);
	topo_free(t);

	t = topo_load_synthetic("numa:4 core:2 pu:1", &err);
	assert_non_null(t);
	assert_int_equal(t->n_numa, 4);
	assert_int_equal(t->pus, 8);
	assert_cpulist(t->numa[3].cpus, "6-7");
	topo_free(t);
}

static void test_synthetic_bad(void **state)
{
	static const char *const bad[] = { "", "pack:x", "banana:2", "pack:2 core:0", "pack:2 pu:2 core:2" };
	struct nt_err err = { 0 };

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_null(topo_load_synthetic(bad[i], &err));
		assert_int_equal(err.code, -EINVAL);
		assert_non_null(strstr(err.msg, "invalid synthetic topology"));
	}
}

static void test_gpu_rule(void **state)
{
	(void)state;
	assert_true(topo_pci_is_gpu(0x10de, 0x0302, false));   /* 3D controller */
	assert_true(topo_pci_is_gpu(0x10de, 0x0300, false));   /* VGA-class NVIDIA */
	assert_false(topo_pci_is_gpu(0x10de, 0x0680, false));  /* NVSwitch bridge */
	assert_false(topo_pci_is_gpu(0x10de, 0x0403, false));  /* NVIDIA HD audio */
	assert_true(topo_pci_is_gpu(0x1002, 0x0380, false));   /* AMD Instinct */
	assert_false(topo_pci_is_gpu(0x1002, 0x0300, false));  /* AMD VGA (ES1000 BMC) */
	assert_false(topo_pci_is_gpu(0x1a03, 0x0300, false));  /* ASPEED BMC */
	assert_false(topo_pci_is_gpu(0x102b, 0x0300, false));  /* Matrox BMC */
	assert_true(topo_pci_is_gpu(0x1a03, 0x0300, true));    /* anything with CUDA/NVML/RSMI */
}

static void test_xml_bad_input(void **state)
{
	char dir[64], path[4200];
	struct nt_err err = { 0 };
	struct {
		const char *name, *content, *msg;
		int code;
	} cases[] = {
		{ "empty.xml", "", "empty file", -EINVAL },
		{ "blank.xml", "  \n\n", "empty file", -EINVAL },
		{ "text.xml", "this is not xml\n", "not XML", -EINVAL },
		{ "html.xml", "<html><body>hello</body></html>\n", "not an hwloc topology", -EINVAL },
		{ "trunc.xml", "<?xml version=\"1.0\"?>\n<topology version=\"2.0\">\n  <object type=\"Machine\" os_index=\"0\" cpu",
		  "truncated", -EINVAL },
		{ "nopu.xml", "<?xml version=\"1.0\"?>\n<topology version=\"2.0\">\n<object type=\"Machine\"></object>\n</topology>\n",
		  "", -EINVAL },
	};

	(void)state;
	assert_non_null(test_tmpdir(dir, sizeof(dir)));
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(test_write(dir, cases[i].name, cases[i].content), 0);
		snprintf(path, sizeof(path), "%s/%s", dir, cases[i].name);
		assert_null(topo_load_xml(path, &err));
		assert_int_equal(err.code, cases[i].code);
		assert_non_null(strstr(err.msg, path));      /* names the file */
		assert_non_null(strstr(err.msg, cases[i].msg));
	}
	snprintf(path, sizeof(path), "%s/missing.xml", dir);
	assert_null(topo_load_xml(path, &err));
	assert_int_equal(err.code, -ENOENT);
	assert_null(topo_load_xml(dir, &err));
	assert_int_equal(err.code, -EISDIR);
	assert_null(topo_load_xml("/dev/null", &err));
	assert_int_equal(err.code, -EINVAL);
	test_rmrf(dir);
}

static void test_xml_truncated_real_file(void **state)
{
	char dir[64], src[4096], path[4200], *buf;
	struct nt_err err = { 0 };
	FILE *f;
	long len;

	(void)state;
	test_path(src, sizeof(src), hgx.file);
	f = fopen(src, "r");
	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	len = ftell(f);
	rewind(f);
	buf = calloc(1, (size_t)len + 1);
	assert_int_equal(fread(buf, 1, (size_t)len, f), (size_t)len);
	fclose(f);
	buf[len / 2] = '\0'; /* cut in the middle */
	assert_non_null(test_tmpdir(dir, sizeof(dir)));
	test_write(dir, "half.xml", buf);
	snprintf(path, sizeof(path), "%s/half.xml", dir);
	assert_null(topo_load_xml(path, &err));
	assert_int_equal(err.code, -EINVAL);
	assert_non_null(strstr(err.msg, "truncated"));
	free(buf);
	test_rmrf(dir);
}

static void test_host(void **state)
{
	struct nt_err err = { 0 };
	struct topo *t;
	long online = sysconf(_SC_NPROCESSORS_ONLN);

	(void)state;
	t = topo_load_host(NULL, &err);
	if (!t)
		fail_msg("%s", err.msg);
	assert_true(t->pus >= 1);
	assert_int_equal((long)t->pus, online);
	assert_true(t->n_numa >= 1);
	topo_free(t);
	topo_free(NULL);
}

static void test_host_fsroot(void **state)
{
	char path[4096], dir[64];
	struct nt_err err = { 0 };
	struct topo *t;

	(void)state;
	t = topo_load_host(test_path(path, sizeof(path), "tests/fixtures/sysroot/debian12-kvm-2cpu"), &err);
	if (!t)
		fail_msg("%s", err.msg);
	assert_int_equal(t->pus, 2);
	assert_int_equal(t->n_numa, 1);
	assert_cpulist(t->numa[0].cpus, "0-1");
	assert_null(getenv("HWLOC_FSROOT")); /* not left behind */
	topo_free(t);

	/* a kernel-state-only tree has no topology: an error, not this host */
	assert_non_null(test_tmpdir(dir, sizeof(dir)));
	test_write(dir, "sys/kernel/mm/transparent_hugepage/enabled", "[always] madvise never\n");
	assert_null(topo_load_host(dir, &err));
	assert_int_equal(err.code, -EINVAL);
	assert_non_null(strstr(err.msg, "capture-sysroot.sh"));
	test_rmrf(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fixture_hgx),
		cmocka_unit_test(test_fixture_epyc),
		cmocka_unit_test(test_fixture_nic_rdma),
		cmocka_unit_test(test_shared_32em64t),
		cmocka_unit_test(test_shared_96em64t),
		cmocka_unit_test(test_shared_g4dn),
		cmocka_unit_test(test_shared_dgx2),
		cmocka_unit_test(test_shared_power8),
		cmocka_unit_test(test_synthetic),
		cmocka_unit_test(test_synthetic_bad),
		cmocka_unit_test(test_gpu_rule),
		cmocka_unit_test(test_xml_bad_input),
		cmocka_unit_test(test_xml_truncated_real_file),
		cmocka_unit_test(test_host),
		cmocka_unit_test(test_host_fsroot),
	};

	return cmocka_run_group_tests_name("topo", tests, NULL, NULL);
}
