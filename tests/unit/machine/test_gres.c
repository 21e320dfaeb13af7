/* SPDX-License-Identifier: MIT */
/* test_gres.c — Slurm's view of the GPUs: the gres.conf lines, the device
 * numbering, the device-number -> GPU mapping the SPANK plugin uses, and
 * what the module refuses or leaves out.
 *
 * The expected lines in tests/fixtures/gres/ were derived with hwloc's own
 * tools (tests/fixtures/gres/gen.sh: lstopo-no-graphics and hwloc-calc), not
 * with nodetune; test_slurm.sh makes the same comparison through the CLI.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "machine/gres.h"
#include "machine/topo.h"
#include "test_util.h"

#define HGX "tests/fixtures/topologies/hgx-2s8g8n-synthetic.xml"
#define MI300 "tests/fixtures/topologies/epyc-2s-numa0-8-mi300-synthetic.xml"

static struct topo *xml(const char *rel)
{
	char path[4096];
	struct nt_err err = { 0 };
	struct topo *t = topo_load_xml(test_path(path, sizeof(path), rel), &err);

	if (!t)
		fail_msg("%s: %s", rel, err.msg);
	return t;
}

static struct gres *build(const struct topo *t)
{
	struct nt_err err = { 0 };
	struct gres *g = gres_build(t, &err);

	if (!g)
		fail_msg("%s: %s", t->source, err.msg);
	return g;
}

/* gres_print's output (caller frees). */
static char *print(const struct gres *g, const struct topo *t)
{
	char *buf = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&buf, &size);

	assert_non_null(f);
	assert_int_equal(gres_print(f, g, t), 0);
	assert_int_equal(fclose(f), 0);
	return buf;
}

/* The lines of text that are not comments, as one string (caller frees). */
static char *uncommented(const char *text)
{
	char *out = calloc(1, strlen(text) + 1), *o = out;

	assert_non_null(out);
	for (const char *l = text; *l;) {
		const char *nl = strchr(l, '\n');
		size_t len = nl ? (size_t)(nl - l + 1) : strlen(l);

		if (*l != '#') {
			memcpy(o, l, len);
			o += len;
		}
		l += len;
	}
	return out;
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf;
	long n;

	if (!f)
		fail_msg("%s: %s", path, strerror(errno));
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	buf = calloc(1, (size_t)n + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	return buf;
}

/* The Name=gpu lines for xml_path equal tests/fixtures/gres/NAME.conf. */
static void check_fixture(const char *xml_path, const char *name)
{
	char want_path[4096], rel[256];
	struct nt_err err = { 0 };
	struct topo *t = topo_load_xml(xml_path, &err);
	struct gres *g;
	char *text, *got, *want;

	if (!t)
		fail_msg("%s: %s", xml_path, err.msg);
	snprintf(rel, sizeof(rel), "tests/fixtures/gres/%s.conf", name);
	want = slurp(test_path(want_path, sizeof(want_path), rel));
	g = build(t);
	text = print(g, t);
	got = uncommented(text);
	if (strcmp(got, want))
		fail_msg("%s: got\n%swant\n%s", name, got, want);
	free(want);
	free(got);
	free(text);
	gres_free(g);
	topo_free(t);
}

static void test_fixtures(void **state)
{
	char path[4096];

	(void)state;
	check_fixture(test_path(path, sizeof(path), HGX), "hgx-2s8g8n-synthetic");
	check_fixture(test_path(path, sizeof(path), MI300), "epyc-2s-numa0-8-mi300-synthetic");
}

static void test_shared_topologies(void **state)
{
	static const char *const names[] = {
		"32em64t-2n8c2t-pci-normalio", "96em64t-4n4d3ca2co-pci", "g4dnmetal", "nvidiaDGX2",
		"power8gpudistances",
	};
	unsigned tested = 0, missing = 0;

	(void)state;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		char path[4096];

		snprintf(path, sizeof(path), "%s/../shared/topologies/%s.xml", test_srcdir(), names[i]);
		if (access(path, R_OK) < 0) {
			missing++;
			continue;
		}
		check_fixture(path, names[i]);
		tested++;
	}
	if (missing) {
		/* each file it has was checked above; one missing is a skip
		 * (under CI=true a failure), never a silent pass */
		test_need("../shared", "%u of the ../shared/topologies files are absent (%u checked)", missing, tested);
	}
}

/* Device numbers follow PCI bus order within a vendor: NVIDIA's are the N
 * of /dev/nvidiaN, AMD's of /dev/dri/renderD(128+N). */
static void test_device_numbering(void **state)
{
	struct topo *t = xml(HGX);
	struct gres *g = build(t);
	char file[48];

	(void)state;
	assert_int_equal(g->n_gpus, t->n_gpus);
	for (unsigned i = 0; i < g->n_gpus; i++) {
		assert_int_equal(g->gpus[i].gpu, i);
		assert_int_equal(g->gpus[i].dev_num, (int)i);
		snprintf(file, sizeof(file), "/dev/nvidia%u", i);
		assert_string_equal(g->gpus[i].file, file);
		if (i > 0)
			assert_true(strcmp(t->gpus[i - 1].pci_bus_id, t->gpus[i].pci_bus_id) < 0);
	}
	assert_string_equal(g->gpus[0].cores, "0-23");
	assert_string_equal(g->gpus[7].cores, "24-47");
	gres_free(g);
	topo_free(t);

	t = xml(MI300);
	g = build(t);
	assert_int_equal(g->n_gpus, 4);
	for (unsigned i = 0; i < g->n_gpus; i++) {
		assert_string_equal(t->gpus[i].vendor, "amd");
		assert_int_equal(g->gpus[i].dev_num, (int)i);
		snprintf(file, sizeof(file), "/dev/dri/renderD%u", 128 + i);
		assert_string_equal(g->gpus[i].file, file);
	}
	gres_free(g);
	topo_free(t);
}

/* What the plugin does with SLURM_STEP_GPUS=3,5: device numbers -> GPUs. */
static void test_gpu_by_dev_num(void **state)
{
	struct topo *t = xml(HGX);
	struct gres *g = build(t);

	(void)state;
	for (int n = 0; n < 8; n++)
		assert_int_equal(gres_gpu_by_dev_num(g, t, n), n);
	assert_int_equal(gres_gpu_by_dev_num(g, t, 8), -1);   /* no /dev/nvidia8 here */
	assert_int_equal(gres_gpu_by_dev_num(g, t, -1), -1);
	assert_int_equal(gres_gpu_by_dev_num(g, t, 128), -1); /* a render node number is no device number */
	gres_free(g);
	topo_free(t);

	t = xml(MI300);
	g = build(t);
	assert_int_equal(gres_gpu_by_dev_num(g, t, 2), 2);
	assert_int_equal(gres_gpu_by_dev_num(g, t, 4), -1);
	gres_free(g);
	topo_free(t);
}

/* A GPU of another vendor has no device file: it is left out of the lines
 * with a comment, takes no number, and the GPUs after it keep counting
 * from where their vendor was; a device number of a vendor other than the
 * first GPU's maps to nothing. */
static void test_other_vendors(void **state)
{
	struct topo *t = xml(HGX);
	struct gres *g;
	char *text, *got;

	(void)state;
	snprintf(t->gpus[2].vendor, sizeof(t->gpus[2].vendor), "unknown");
	snprintf(t->gpus[6].vendor, sizeof(t->gpus[6].vendor), "amd");
	g = build(t);
	assert_int_equal(g->gpus[2].dev_num, -1);
	assert_string_equal(g->gpus[2].file, "");
	assert_string_equal(g->gpus[3].file, "/dev/nvidia2");
	assert_string_equal(g->gpus[6].file, "/dev/dri/renderD128");
	assert_string_equal(g->gpus[7].file, "/dev/nvidia5");
	assert_int_equal(gres_gpu_by_dev_num(g, t, 2), 3);
	assert_int_equal(gres_gpu_by_dev_num(g, t, 5), 7);
	assert_int_equal(gres_gpu_by_dev_num(g, t, 6), -1);
	text = print(g, t);
	assert_non_null(strstr(text, "# GPU 2: 0000:3f:00.0 NVIDIA H100 80GB HBM3, CPUs 0-23,48-71\n"
				     "# (vendor unknown: no device file known, left out)\n"));
	got = uncommented(text);
	assert_null(strstr(got, "/dev/nvidia6"));
	assert_non_null(strstr(got, "Name=gpu File=/dev/dri/renderD128 Cores=24-47\n"));
	free(got);
	free(text);
	gres_free(g);

	/* the first GPU is AMD: NVIDIA device numbers map to nothing */
	snprintf(t->gpus[0].vendor, sizeof(t->gpus[0].vendor), "amd");
	g = build(t);
	assert_int_equal(gres_gpu_by_dev_num(g, t, 0), 0);
	assert_int_equal(gres_gpu_by_dev_num(g, t, 1), 6);
	assert_int_equal(gres_gpu_by_dev_num(g, t, 2), -1);
	gres_free(g);
	topo_free(t);
}

static void test_no_gpus(void **state)
{
	struct nt_err err = { 0 };
	struct topo *t = topo_load_synthetic("pack:1 core:2 pu:1", &err);
	struct gres *g;
	char *text;

	(void)state;
	if (!t)
		fail_msg("%s", err.msg);
	g = build(t);
	assert_int_equal(g->n_gpus, 0);
	assert_int_equal(gres_gpu_by_dev_num(g, t, 0), -1);
	text = print(g, t);
	assert_non_null(strstr(text, "# no GPUs\n"));
	assert_null(strstr(text, "Name=gpu"));
	free(text);
	gres_free(g);
	topo_free(t);
	gres_free(NULL);
}

/* A stream that cannot be written: -EIO. */
static void test_print_error(void **state)
{
	struct topo *t = xml(HGX);
	struct gres *g = build(t);
	FILE *f = fopen("/dev/null", "r");

	(void)state;
	assert_non_null(f);
	assert_int_equal(gres_print(f, g, t), -EIO);
	fclose(f);
	gres_free(g);
	topo_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fixtures),
		cmocka_unit_test(test_shared_topologies),
		cmocka_unit_test(test_device_numbering),
		cmocka_unit_test(test_gpu_by_dev_num),
		cmocka_unit_test(test_other_vendors),
		cmocka_unit_test(test_no_gpus),
		cmocka_unit_test(test_print_error),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
