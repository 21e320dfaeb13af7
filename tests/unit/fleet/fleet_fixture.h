/* SPDX-License-Identifier: MIT */
/* fleet_fixture.h — a rollout planned over constructed hosts, shared by the
 * fleet group's unit tests (test_fleet_doc.c, test_fleet.c). */
#ifndef NODETUNE_TEST_FLEET_FIXTURE_H
#define NODETUNE_TEST_FLEET_FIXTURE_H

#include "fleet/fleet.h"

#define SHA_A "d3e1903f8febb83c3233ce6f6d03cac9247ee198c691be41fc76d00a64f0f0b1"

/* n hosts h0.. of `classes` classes (round-robin) into r's waves. */
static inline void plan(struct fleet_rollout *r, unsigned n, unsigned classes, const char *spec)
{
	struct fleet_member *m = calloc(n, sizeof(*m));
	struct fleet_wave_spec w[FLEET_WAVES_MAX];
	struct nt_err err = { 0 };
	unsigned nw;

	assert_non_null(m);
	for (unsigned i = 0; i < n; i++) {
		snprintf(m[i].host, sizeof(m[i].host), "h%03u", i);
		snprintf(m[i].class_id, sizeof(m[i].class_id), "c%u", i % classes);
	}
	memset(r, 0, sizeof(*r));
	snprintf(r->name, sizeof(r->name), "r");
	snprintf(r->sha256, sizeof(r->sha256), "%s", SHA_A);
	r->wave_timeout = 10;
	assert_int_equal(fleet_waves_parse(spec, w, &nw, &err), 0);
	assert_int_equal(fleet_plan_waves(r, m, n, w, nw, &err), 0);
	free(m);
}

#endif
