/* SPDX-License-Identifier: MIT */
/* test_svg.c — the picture of a machine and a plan: one group per GPU, NIC
 * and NUMA node, one pairing per GPU (its nearest NIC) or per rank (the
 * rank's NIC), each PU once, ranks' colours on their CPUs, text from the
 * topology escaped, nothing that fetches or runs anything.
 *
 * Counts follow from the fixtures (tests/fixtures/topologies/gen-fixtures.py:
 * the HGX has 8 GPUs, 9 NICs, 2 nodes of 48 PUs; the MI300 4 GPUs, 1 NIC,
 * NUMA nodes 0 and 8), not from the writer. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tune/plan.h"
#include "tune/policy.h"
#include "tune/svg.h"
#include "test_util.h"

#define HGX "tests/fixtures/topologies/hgx-2s8g8n-synthetic.xml"
#define EPYC "tests/fixtures/topologies/epyc-2s-numa0-8-mi300-synthetic.xml"

static struct topo *load(const char *path)
{
	struct nt_err err = { 0 };
	struct topo *t = topo_load_xml(path, &err);

	if (!t)
		fail_msg("%s: %s", path, err.msg);
	return t;
}

/* The document for t and pl, as a string (free it). */
static char *picture(const struct topo *t, const struct plan *pl)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(svg_write_machine(f, t, pl), 0);
	fclose(f);
	return buf;
}

static unsigned count(const char *s, const char *what)
{
	unsigned n = 0;

	for (const char *p = s; (p = strstr(p, what)); p += strlen(what))
		n++;
	return n;
}

static void assert_self_contained(const char *svg)
{
	assert_int_equal(strncmp(svg, "<?xml", 5), 0);
	assert_int_equal(count(svg, "<svg "), 1);
	assert_int_equal(count(svg, "</svg>\n"), 1);
	assert_int_equal(count(svg, "<script"), 0);
	assert_int_equal(count(svg, "href"), 0);
	assert_int_equal(count(svg, "url("), 0);
	assert_int_equal(count(svg, "http"), 1); /* the xmlns alone */
}

static void test_machine(void **state)
{
	char path[4096];
	struct topo *t = load(test_path(path, sizeof(path), HGX));
	char *svg = picture(t, NULL);

	(void)state;
	assert_self_contained(svg);
	assert_int_equal(count(svg, "<g class=\"gpu\""), 8);
	assert_int_equal(count(svg, "<g class=\"nic\""), 9);
	assert_int_equal(count(svg, "<g class=\"numa\""), 2);
	assert_int_equal(count(svg, "<g class=\"package\""), 2);
	assert_int_equal(count(svg, "<g class=\"switch\""), 8);   /* one per GPU/NIC pair */
	assert_int_equal(count(svg, "<rect class=\"pu"), 96);
	assert_int_equal(count(svg, "<path class=\"pair\""), 8);
	assert_int_equal(count(svg, ">PIX</text>"), 8);
	assert_non_null(strstr(svg, "<title>GPU 0 - ibp26s0 (PIX)</title>"));
	free(svg);
	topo_free(t);
}

static void test_epyc_links(void **state)
{
	char path[4096];
	struct topo *t = load(test_path(path, sizeof(path), EPYC));
	char *svg = picture(t, NULL);

	(void)state;
	assert_int_equal(count(svg, "<g class=\"gpu\""), 4);
	assert_int_equal(count(svg, "<g class=\"nic\""), 1);
	assert_non_null(strstr(svg, "NUMA node 8 "));
	assert_int_equal(count(svg, ">SYS</text>"), 2);
	assert_int_equal(count(svg, ">PHB</text>"), 1);
	assert_int_equal(count(svg, ">NODE</text>"), 1);
	free(svg);
	topo_free(t);
}

static void test_plan_ranks(void **state)
{
	char path[4096];
	struct nt_err err = { 0 };
	struct topo *t = load(test_path(path, sizeof(path), HGX));
	struct policy *p = policy_load(test_path(path, sizeof(path), "policies/gpu-train.conf"), 0, &err);
	struct plan *pl;
	char *svg;

	(void)state;
	assert_non_null(p);
	pl = plan_build(p, t, 2, NULL, &err);
	if (!pl)
		fail_msg("%s", err.msg);
	svg = picture(t, pl);
	assert_self_contained(svg);
	/* two ranks: two pairings in their colours, their GPUs marked, each
	 * rank's CPUs filled with its colour (and no other CPU) */
	assert_int_equal(count(svg, "<path class=\"pair\""), 2);
	assert_int_equal(count(svg, "style=\"stroke:#1f77b4\"><title>GPU 0 - ibp26s0"), 1);
	assert_non_null(strstr(svg, "GPU 1 · rank 1"));
	assert_int_equal(count(svg, "style=\"fill:#1f77b4\"><title>CPU"),
			 (unsigned)hwloc_bitmap_weight(pl->ranks[0].cpus));
	assert_int_equal(count(svg, "style=\"fill:#ff7f0e\"><title>CPU"),
			 (unsigned)hwloc_bitmap_weight(pl->ranks[1].cpus));
	assert_int_equal(count(svg, "(housekeeping)"), (unsigned)hwloc_bitmap_weight(pl->housekeeping));
	free(svg);
	plan_free(pl);
	policy_free(p);
	topo_free(t);
}

/* A file name with XML's special characters, a control character and a
 * byte outside UTF-8: the source in <title> escaped. */
static void test_escaped(void **state)
{
	char dir[64], src[4096], path[4200], cmd[8600];
	struct topo *t;
	char *svg;

	(void)state;
	assert_non_null(test_tmpdir(dir, sizeof(dir)));
	snprintf(path, sizeof(path), "%s/a<b>&c.xml", dir);
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", test_path(src, sizeof(src), EPYC), path);
	assert_int_equal(system(cmd), 0);
	t = load(path);
	svg = picture(t, NULL);
	assert_non_null(strstr(svg, "a&lt;b&gt;&amp;c.xml</title>"));
	assert_null(strstr(svg, "a<b"));
	free(svg);
	topo_free(t);
	/* a newline and a byte that is no UTF-8: '?', the document well-formed */
	snprintf(path, sizeof(path), "%s/x\ny\xff.xml", dir);
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", src, path);
	assert_int_equal(system(cmd), 0);
	t = load(path);
	svg = picture(t, NULL);
	assert_non_null(strstr(svg, "/x?y?.xml</title>"));
	free(svg);
	topo_free(t);
	test_rmrf(dir);
}

static void test_write_failure(void **state)
{
	char path[4096];
	struct topo *t = load(test_path(path, sizeof(path), HGX));
	FILE *f = fopen("/dev/full", "w");

	(void)state;
	assert_non_null(f);
	setvbuf(f, NULL, _IONBF, 0);
	assert_int_equal(svg_write_machine(f, t, NULL), -EIO);
	fclose(f);
	topo_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_machine),
		cmocka_unit_test(test_epyc_links),
		cmocka_unit_test(test_plan_ranks),
		cmocka_unit_test(test_escaped),
		cmocka_unit_test(test_write_failure),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
