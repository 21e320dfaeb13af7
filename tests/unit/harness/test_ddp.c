/* SPDX-License-Identifier: MIT */
/* test_ddp.c — bucketing, readiness, rebuild and accumulation of the DDP
 * reducer in one process (multi-rank equivalence is an integration test
 * under mpirun). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "ddp.h"

/* sizes in floats: a, b 1 MiB; c 2 MiB; d, f 256 B; e 16 MiB */
static struct model_param params[] = {
	{ "a", 0, 262144 }, { "b", 262144, 262144 }, { "c", 524288, 524288 },
	{ "d", 1048576, 64 }, { "e", 1048640, 4194304 }, { "f", 5242944, 64 },
};
#define NP 6
#define NW 5243008

static struct comm one(void)
{
	struct comm c;
	struct nt_err err;

	assert_int_equal(comm_init(&c, "none", NULL, NULL, 10, &err), 0);
	return c;
}

static void test_bucket_caps(void **state)
{
	static float g[NW];
	struct comm c = one();
	struct ddp_config cfg = { 25, 1, true, 10, 0 };
	struct ddp *d;

	(void)state;
	d = ddp_create(&cfg, &c, params, NP, g);
	/* reverse order f e d c b a: the 1 MiB first bucket takes [f] (e would
	 * overflow it); the 25 MiB cap takes the other 20 MiB: [e d c b a] */
	assert_int_equal(ddp_bucket_count(d), 2);
	ddp_free(d);
	cfg.bucket_mb = 2;
	cfg.first_bucket_mb = 1;
	d = ddp_create(&cfg, &c, params, NP, g);
	/* 2 MiB cap: [f], [e] (larger than the cap: alone), [d] (d + c is 64
	 * floats over 2 MiB), [c], [b a] */
	assert_int_equal(ddp_bucket_count(d), 5);
	ddp_free(d);
}

/* The plan the CPU and GPU reducers share: where each bucket ends. */
static void test_plan_boundaries(void **state)
{
	const int rev[NP] = { 5, 4, 3, 2, 1, 0 }, fwd[NP] = { 0, 1, 2, 3, 4, 5 };
	int end[NP];

	(void)state;
	/* as in test_bucket_caps: [f] [e] [d] [c] [b a] */
	assert_int_equal(ddp_plan_buckets(params, NP, rev, 1, 2, end), 5);
	assert_int_equal(end[0], 1);
	assert_int_equal(end[1], 2);
	assert_int_equal(end[2], 3);
	assert_int_equal(end[3], 4);
	assert_int_equal(end[4], 6);
	/* forward: a fills the first MiB; [b], [c], [d], [e] alone, [f] */
	assert_int_equal(ddp_plan_buckets(params, NP, fwd, 1, 2, end), 6);
	/* one cap above everything: the first bucket, then all the rest */
	assert_int_equal(ddp_plan_buckets(params, NP, rev, 1, 100, end), 2);
	assert_int_equal(end[0], 1);
	assert_int_equal(end[1], NP);
	/* caps below every parameter: one bucket each */
	assert_int_equal(ddp_plan_buckets(params, NP, rev, 0.0001, 0.0001, end), NP);
	for (int i = 0; i < NP; i++)
		assert_int_equal(end[i], i + 1);
}

static void test_reduce_and_rebuild(void **state)
{
	static float g[NW];
	struct comm c = one();
	struct ddp_config cfg = { 2, 1, true, 10, 0 };
	struct ddp *d = ddp_create(&cfg, &c, params, NP, g);
	double exposed, comm_ms;
	struct nt_err err;
	static const int ready[NP] = { 0, 1, 2, 3, 4, 5 };  /* the opposite of the guess */

	(void)state;
	for (size_t i = 0; i < NW; i++)
		g[i] = (float)(i % 7);
	ddp_begin(d, true);
	for (int i = 0; i < NP; i++)
		ddp_on_ready(d, ready[i]);
	assert_int_equal(ddp_finish(d, &exposed, &comm_ms, &err), 0);
	for (size_t i = 0; i < NW; i += 4099)
		assert_true(g[i] == (float)(i % 7));        /* world 1: the average is the value */
	ddp_rebuild(d);
	/* rebuilt in ready order a b c d e f: [a] fills the 1 MiB first bucket;
	 * then b + c, c + d and d + e each overflow 2 MiB: [b] [c] [d] [e] [f] */
	assert_int_equal(ddp_bucket_count(d), 6);

	/* accumulation micro-batch: nothing is reduced, nothing waits */
	ddp_begin(d, false);
	for (int i = 0; i < NP; i++)
		ddp_on_ready(d, i);
	ddp_begin(d, true);
	for (int i = 0; i < NP; i++)
		ddp_on_ready(d, i);
	assert_int_equal(ddp_finish(d, &exposed, &comm_ms, &err), 0);
	ddp_free(d);
	ddp_free(NULL);
}

static void test_no_overlap_reduces_after_backward(void **state)
{
	static float g[NW];
	struct comm c = one();
	struct ddp_config cfg = { 2, 1, false, 10, 0 };
	struct ddp *d = ddp_create(&cfg, &c, params, NP, g);
	double exposed, comm_ms;
	struct nt_err err;

	(void)state;
	ddp_begin(d, true);
	for (int i = NP - 1; i >= 0; i--)
		ddp_on_ready(d, i);
	assert_int_equal(ddp_finish(d, &exposed, &comm_ms, &err), 0);
	ddp_free(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bucket_caps),
		cmocka_unit_test(test_plan_boundaries),
		cmocka_unit_test(test_reduce_and_rebuild),
		cmocka_unit_test(test_no_overlap_reduces_after_backward),
	};

	return cmocka_run_group_tests_name("ddp", tests, NULL, NULL);
}
