/* SPDX-License-Identifier: MIT */
/* test_fleet.c — the rollout state machine (fleet.h) step by step: send,
 * verify, pass, done; a failure and a gate regression roll back; a lost host
 * is skipped at the timeout, named when the rollout ends done; abort;
 * shadow; an abort where the controller
 * left a host as it was (kept: its desired from before did not verify),
 * said at the end and kept through the document. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "fleet/fleet.h"
#include "nt_clock.h"
#include "fleet_fixture.h"
#include "test_util.h"


/* What the store shows of every host: obs[w][i]. */
struct world {
	struct fleet_observed *obs[FLEET_WAVES_MAX];
	int64_t rev;
};

static void world_init(struct world *wd, const struct fleet_rollout *r)
{
	memset(wd, 0, sizeof(*wd));
	wd->rev = 100;
	for (unsigned w = 0; w < r->n_waves; w++) {
		wd->obs[w] = calloc(r->waves[w].n, sizeof(struct fleet_observed));
		for (unsigned i = 0; i < r->waves[w].n; i++)
			wd->obs[w][i].alive = true;
	}
}

/* The end of a scene: the world's observations and the rollout freed. */
static void scene_free(struct world *wd, struct fleet_rollout *r)
{
	for (unsigned w = 0; w < r->n_waves; w++)
		free(wd->obs[w]);
	fleet_rollout_release(r);
}

/* One step; the writes land in the world (a desired key gets a revision). */
static int step(struct fleet_rollout *r, struct world *wd, double now, bool abort)
{
	struct fleet_rollout next;
	struct fleet_write *w;
	unsigned n;
	int rc = fleet_step(r, wd->obs, now, abort, &next, &w, &n);

	if (rc != 1)
		return rc;
	for (unsigned k = 0; k < n; k++) {
		struct fleet_observed *o = &wd->obs[w[k].wave][w[k].index];

		if (w[k].kind == FLEET_W_PUT_SHADOW) {
			o->has_shadow = true;
			o->shadow_rev = ++wd->rev;
			continue;
		}
		o->has_desired = true;
		o->desired_rev = ++wd->rev;
		memset(&o->desired, 0, sizeof(o->desired));
		snprintf(o->desired.rollout, sizeof(o->desired.rollout), "%s",
			 w[k].kind == FLEET_W_RESTORE_DESIRED ? "old" : r->name);
		snprintf(o->desired.sha256, sizeof(o->desired.sha256), "%s", w[k].kind == FLEET_W_RESTORE_DESIRED ? "" : SHA_A);
		o->desired.mode = w[k].kind == FLEET_W_RESTORE_DESIRED ? FLEET_MODE_LOCAL : w[k].mode;
	}
	free(w);
	fleet_rollout_release(r);
	*r = next;
	return 1;
}

/* Host (w, i) answers its desired key: state s (gate: verdict). */
static void answer(struct world *wd, unsigned w, unsigned i, enum fleet_hstate s, const char *verdict)
{
	struct fleet_observed *o = &wd->obs[w][i];

	o->has_status = true;
	o->status.desired_rev = o->desired_rev;
	o->status.state = s;
	snprintf(o->status.sha256, sizeof(o->status.sha256), "%s", o->desired.sha256);
	snprintf(o->status.verdict, sizeof(o->status.verdict), "%s", verdict ? verdict : "");
	snprintf(o->status.explanation, sizeof(o->status.explanation), "%s", verdict ? "thp_fault_alloc up" : "");
	o->status.ratio = 1.3;
}

static void answer_wave(struct world *wd, const struct fleet_rollout *r, unsigned w, enum fleet_hstate s)
{
	for (unsigned i = 0; i < r->waves[w].n; i++)
		answer(wd, w, i, s, NULL);
}

static void test_step_happy_path(void **state)
{
	struct fleet_rollout r;
	struct world wd;

	(void)state;
	plan(&r, 4, 2, "1/class,100%");
	r.state = FLEET_RUNNING;
	world_init(&wd, &r);
	assert_int_equal(step(&r, &wd, 1, false), 1);                      /* wave 0 sent */
	assert_int_equal(r.waves[0].state, FLEET_W_APPLYING);
	assert_int_equal(r.waves[0].hosts[0].state, FLEET_R_SENT);
	assert_int_equal(wd.obs[1][0].desired_rev, 0);                    /* wave 1 untouched */
	assert_int_equal(step(&r, &wd, 2, false), 0);                      /* nothing answered: wait */
	answer(&wd, 0, 0, FLEET_H_DRIFT, NULL);
	assert_int_equal(step(&r, &wd, 2, false), 0);                      /* drift is not verified */
	answer_wave(&wd, &r, 0, FLEET_H_VERIFIED);
	assert_int_equal(step(&r, &wd, 3, false), 1);                      /* both verified: passed */
	assert_int_equal(r.waves[0].state, FLEET_W_PASSED);
	assert_int_equal(r.wave, 1);
	assert_int_equal(step(&r, &wd, 4, false), 1);                      /* wave 1 sent */
	answer_wave(&wd, &r, 1, FLEET_H_VERIFIED);
	assert_int_equal(step(&r, &wd, 5, false), 1);
	assert_int_equal(r.state, FLEET_DONE);
	assert_int_equal(step(&r, &wd, 6, false), 0);                      /* final: no more steps */
	/* the document survives the store */
	{
		struct fleet_rollout back;
		struct nt_err err = { 0 };
		char *s = fleet_rollout_json(&r);

		assert_int_equal(fleet_doc_parse_rollout("k", s, strlen(s), &back, &err), 0);
		assert_int_equal(back.state, FLEET_DONE);
		assert_string_equal(back.gate, "");
		assert_int_equal(back.n_waves, 2);
		assert_int_equal(back.n_events, r.n_events);
		assert_true(back.events[0].t == r.events[0].t);
		fleet_rollout_release(&back);
		free(s);
	}
	scene_free(&wd, &r);
}

static void test_step_failure_rolls_back(void **state)
{
	struct fleet_rollout r;
	struct world wd;

	(void)state;
	plan(&r, 4, 2, "1/class,100%");
	world_init(&wd, &r);
	step(&r, &wd, 1, false);
	answer(&wd, 0, 0, FLEET_H_VERIFIED, NULL);
	answer(&wd, 0, 1, FLEET_H_INVALID, NULL);
	assert_int_equal(step(&r, &wd, 2, false), 1);
	assert_int_equal(r.state, FLEET_ROLLING_BACK);
	assert_int_equal(r.waves[0].state, FLEET_W_FAILED);                 /* the wave that failed */
	assert_int_equal(r.waves[0].hosts[0].state, FLEET_R_RESTORING);
	assert_int_equal(r.waves[1].hosts[0].state, FLEET_R_PENDING);      /* never touched */
	assert_int_equal(wd.obs[0][0].desired.mode, FLEET_MODE_LOCAL);
	answer_wave(&wd, &r, 0, FLEET_H_VERIFIED);
	assert_int_equal(step(&r, &wd, 3, false), 1);
	assert_int_equal(r.state, FLEET_ROLLED_BACK);
	assert_non_null(strstr(r.reason, "invalid"));
	assert_string_equal(r.events[r.n_events - 1].what, "rolled-back: every host touched runs its old policy again");
	scene_free(&wd, &r);
}

static void test_step_gate_regression(void **state)
{
	struct fleet_rollout r;
	struct world wd;

	(void)state;
	plan(&r, 4, 2, "1/class,100%");
	snprintf(r.gate, sizeof(r.gate), "job");
	world_init(&wd, &r);
	step(&r, &wd, 1, false);
	assert_int_equal(r.waves[0].state, FLEET_W_GATING);
	assert_non_null(strstr(r.events[r.n_events - 1].what, "gating on 2 host(s)"));
	assert_int_equal(wd.obs[0][0].desired.mode, FLEET_MODE_GATE);
	answer(&wd, 0, 0, FLEET_H_GATED, "no-difference");
	assert_int_equal(step(&r, &wd, 2, false), 1);                      /* one verdict in: recorded */
	assert_int_equal(r.waves[0].hosts[0].state, FLEET_R_GATE_PASSED);
	answer(&wd, 0, 1, FLEET_H_GATED, "regression");
	assert_int_equal(step(&r, &wd, 3, false), 1);
	assert_int_equal(r.state, FLEET_ROLLING_BACK);
	assert_non_null(strstr(r.reason, "regression"));
	assert_non_null(strstr(r.reason, "thp_fault_alloc up"));
	assert_string_equal(r.waves[0].hosts[1].verdict, "regression");
	assert_int_equal(wd.obs[1][0].desired_rev, 0);                    /* no host beyond the canaries */
	answer_wave(&wd, &r, 0, FLEET_H_VERIFIED);
	step(&r, &wd, 4, false);
	assert_int_equal(r.state, FLEET_ROLLED_BACK);
	scene_free(&wd, &r);

	/* every canary passes: the wave goes on for good, in apply mode */
	plan(&r, 2, 2, "1/class,100%");
	snprintf(r.gate, sizeof(r.gate), "job");
	r.allow_inconclusive = true;
	world_init(&wd, &r);
	step(&r, &wd, 1, false);
	answer(&wd, 0, 0, FLEET_H_GATED, "improvement");
	answer(&wd, 0, 1, FLEET_H_GATED, "inconclusive");
	step(&r, &wd, 2, false);
	step(&r, &wd, 2, false);
	assert_int_equal(r.waves[0].state, FLEET_W_APPLYING);
	assert_int_equal(wd.obs[0][0].desired.mode, FLEET_MODE_APPLY);
	scene_free(&wd, &r);
}

/* A canary that refuses the gate (it lists no such name): the rollout
 * rolls back with the host's reason, and the record keeps the gate's name. */
static void test_step_gate_refused(void **state)
{
	struct fleet_rollout r, back;
	struct nt_err err = { 0 };
	struct world wd;
	char *s;

	(void)state;
	plan(&r, 2, 1, "1/class,100%");
	snprintf(r.gate, sizeof(r.gate), "nosuch");
	world_init(&wd, &r);
	step(&r, &wd, 1, false);
	assert_int_equal(wd.obs[0][0].desired.mode, FLEET_MODE_GATE);
	answer(&wd, 0, 0, FLEET_H_INVALID, NULL);
	snprintf(wd.obs[0][0].status.error, sizeof(wd.obs[0][0].status.error),
		 "gate refused: unknown gate 'nosuch' (no /etc/nodetune/gates.d/nosuch.conf)");
	step(&r, &wd, 2, false);
	assert_int_equal(r.state, FLEET_ROLLING_BACK);
	assert_non_null(strstr(r.reason, "gate refused: unknown gate 'nosuch'"));
	s = fleet_rollout_json(&r);
	assert_int_equal(fleet_doc_parse_rollout("k", s, strlen(s), &back, &err), 0);
	assert_string_equal(back.gate, "nosuch");
	fleet_rollout_release(&back);
	free(s);
	scene_free(&wd, &r);
}

static void test_step_lost_host_and_timeout(void **state)
{
	struct fleet_rollout r;
	struct world wd;

	(void)state;
	plan(&r, 2, 1, "100%");
	world_init(&wd, &r);
	step(&r, &wd, 100, false);
	answer(&wd, 0, 0, FLEET_H_VERIFIED, NULL);
	wd.obs[0][1].alive = false;                                        /* its lease expired */
	step(&r, &wd, 101, false);
	assert_int_equal(r.state, FLEET_RUNNING);                           /* waits for the timeout */
	assert_int_equal(step(&r, &wd, 105, false), 0);
	assert_int_equal(step(&r, &wd, 111, false), 1);                     /* past 10 s: lost, skipped */
	assert_int_equal(r.waves[0].hosts[1].state, FLEET_R_LOST);
	step(&r, &wd, 111, false);
	assert_int_equal(r.state, FLEET_DONE);
	/* done, the host skipped named (it converges through its class's record) */
	assert_string_equal(r.reason, "done; skipped (lease expired): h001");
	assert_non_null(strstr(r.events[r.n_events - 1].what, "skipped (lease expired): h001"));
	scene_free(&wd, &r);

	/* alive but never verified: the wave fails at the timeout */
	plan(&r, 2, 1, "100%");
	world_init(&wd, &r);
	step(&r, &wd, 100, false);
	answer(&wd, 0, 0, FLEET_H_VERIFIED, NULL);
	step(&r, &wd, 111, false);
	assert_int_equal(r.state, FLEET_ROLLING_BACK);
	assert_non_null(strstr(r.reason, "timed out"));
	scene_free(&wd, &r);
}

static void test_step_abort_keeps_a_host(void **state)
{
	struct fleet_rollout r, back;
	struct nt_err err = { 0 };
	struct world wd;
	char *s;

	(void)state;
	plan(&r, 2, 1, "100%");
	world_init(&wd, &r);
	step(&r, &wd, 1, false);
	step(&r, &wd, 2, true);
	assert_int_equal(r.state, FLEET_ROLLING_BACK);
	/* what fleet_ctl_keep_unverified does before the restores are written */
	r.waves[0].hosts[0].state = FLEET_R_KEPT;
	snprintf(r.waves[0].hosts[0].prev_refused, sizeof(r.waves[0].hosts[0].prev_refused), "unsigned");
	s = fleet_rollout_json(&r);
	assert_int_equal(fleet_doc_parse_rollout("k", s, strlen(s), &back, &err), 0);
	assert_int_equal(back.waves[0].hosts[0].state, FLEET_R_KEPT);
	assert_string_equal(back.waves[0].hosts[0].prev_refused, "unsigned");
	assert_string_equal(back.waves[0].hosts[1].prev_refused, "");
	fleet_rollout_release(&back);
	free(s);
	answer(&wd, 0, 1, FLEET_H_VERIFIED, NULL);                   /* only h001 was restored */
	step(&r, &wd, 3, true);
	assert_int_equal(r.state, FLEET_ABORTED);
	assert_non_null(strstr(r.events[r.n_events - 1].what, "but 1 left as it was"));
	scene_free(&wd, &r);
}

static void test_step_abort_and_shadow(void **state)
{
	struct fleet_rollout r;
	struct world wd;

	(void)state;
	plan(&r, 4, 2, "1/class,100%");
	world_init(&wd, &r);
	step(&r, &wd, 1, false);
	assert_non_null(strstr(r.events[r.n_events - 1].what, "wave 0 (1/class) sent to 2 host(s): h000 h001"));
	step(&r, &wd, 2, true);
	assert_int_equal(r.state, FLEET_ROLLING_BACK);
	assert_int_equal(r.goal, FLEET_ABORTED);
	assert_int_equal(r.waves[0].state, FLEET_W_APPLYING);               /* aborted, not failed */
	answer_wave(&wd, &r, 0, FLEET_H_VERIFIED);
	step(&r, &wd, 3, true);
	assert_int_equal(r.state, FLEET_ABORTED);
	scene_free(&wd, &r);

	plan(&r, 2, 2, "100%");
	r.shadow = true;
	world_init(&wd, &r);
	step(&r, &wd, 1, false);
	assert_true(wd.obs[0][0].has_shadow);
	assert_int_equal(wd.obs[0][0].desired_rev, 0);                     /* no desired key written */
	for (unsigned i = 0; i < 2; i++) {
		wd.obs[0][i].has_status = true;
		wd.obs[0][i].status.shadow_rev = wd.obs[0][i].shadow_rev;
		snprintf(wd.obs[0][i].status.shadow_sha, sizeof(wd.obs[0][i].status.shadow_sha), SHA_A);
		wd.obs[0][i].status.shadow_valid = i == 0;
	}
	step(&r, &wd, 2, false);
	assert_int_equal(r.state, FLEET_DONE);
	assert_non_null(strstr(r.reason, "1 with an invalid plan"));
	scene_free(&wd, &r);
}

/* A canary's regression rolls back; both canaries then lose their lease
 * and time out: one host's note (its gate's explanation) is replaced. */
static void gate_then_lost(void)
{
	struct fleet_rollout r;
	struct world wd;

	plan(&r, 2, 1, "100%");
	snprintf(r.gate, sizeof(r.gate), "job");
	world_init(&wd, &r);
	step(&r, &wd, 1, false);
	answer(&wd, 0, 0, FLEET_H_GATED, "regression");
	assert_int_equal(step(&r, &wd, 2, false), 1);
	assert_int_equal(r.state, FLEET_ROLLING_BACK);
	assert_string_equal(r.waves[0].hosts[0].note, "thp_fault_alloc up");
	wd.obs[0][0].alive = wd.obs[0][1].alive = false;
	assert_int_equal(step(&r, &wd, 20, false), 1);
	assert_int_equal(r.waves[0].hosts[0].state, FLEET_R_LOST);
	assert_non_null(strstr(r.waves[0].hosts[0].note, "its lease expired"));
	scene_free(&wd, &r);
}

/* The edges: the clocks; a wave timeout of 1 s; a host lost at the
 * timeout says so in its note; a shadow host alive but silent past the
 * timeout is one without an answer; a note replaced leaks nothing. */
static void test_step_edges(void **state)
{
	struct fleet_rollout r;
	struct world wd;
	double t0 = nt_mono_s();

	(void)state;
	assert_true(t0 > 0 && nt_mono_s() >= t0);
	assert_true(fabs(nt_wall_s() - (double)time(NULL)) < 5);

	plan(&r, 2, 1, "100%");
	r.wave_timeout = 1;
	world_init(&wd, &r);
	step(&r, &wd, 100, false);
	answer(&wd, 0, 0, FLEET_H_VERIFIED, NULL);
	wd.obs[0][1].alive = false;
	assert_int_equal(step(&r, &wd, 100.5, false), 1);                   /* h000 verified, h001 waited for */
	assert_int_equal(r.waves[0].hosts[1].state, FLEET_R_SENT);
	assert_int_equal(step(&r, &wd, 101.5, false), 1);                   /* past 1 s: lost */
	assert_int_equal(r.waves[0].hosts[1].state, FLEET_R_LOST);
	assert_non_null(strstr(r.waves[0].hosts[1].note, "its lease expired"));
	scene_free(&wd, &r);

	plan(&r, 2, 2, "100%");
	r.shadow = true;
	world_init(&wd, &r);
	step(&r, &wd, 1, false);
	wd.obs[0][0].has_status = true;
	wd.obs[0][0].status.shadow_rev = wd.obs[0][0].shadow_rev;
	snprintf(wd.obs[0][0].status.shadow_sha, sizeof(wd.obs[0][0].status.shadow_sha), SHA_A);
	wd.obs[0][0].status.shadow_valid = true;
	assert_int_equal(step(&r, &wd, 2, false), 1);
	assert_int_equal(r.state, FLEET_RUNNING);                           /* h001, alive, not answered */
	assert_int_equal(step(&r, &wd, 12, false), 1);
	assert_int_equal(r.state, FLEET_DONE);
	assert_int_equal(r.waves[0].hosts[1].state, FLEET_R_LOST);
	assert_string_equal(r.reason, "shadow: 1 host(s) answered, 0 with an invalid plan, 1 without an answer");
	assert_int_equal(r.waves[0].state, FLEET_W_FAILED);
	scene_free(&wd, &r);

	/* the heap grows over the first rounds (tcache), then not at all */
	for (int i = 0; i < 10; i++)
		gate_then_lost();
	assert_no_leak(20, gate_then_lost());
}

/* n hosts of one wave named name_len bytes each ("hNNN" then 'x's), but
 * the last, one shorter */
static void long_names(struct fleet_rollout *r, unsigned n, size_t name_len)
{
	plan(r, n, 1, "100%");
	for (unsigned i = 0; i < n; i++) {
		size_t len = i == n - 1 ? name_len - 1 : name_len;
		char *h = r->waves[0].hosts[i].host;

		memset(h + 4, 'x', len - 4);
		h[len] = '\0';
	}
}

/* The bounds of the lists of names in a wave's event (" ..." once past
 * 432 bytes, not at 431) and in a done rollout's reason (no name added
 * once at 432); a canary whose lease expired before the timeout is waited
 * for; a rollback a host does not finish in time fails, saying so. */
static void test_step_bounds(void **state)
{
	struct fleet_rollout r;
	struct world wd;
	const char *ev;

	(void)state;
	/* 8 names of 47 bytes and one of 46, each after a space: 431 bytes */
	long_names(&r, 9, 47);
	world_init(&wd, &r);
	step(&r, &wd, 1, false);
	ev = r.events[r.n_events - 1].what;
	assert_non_null(strstr(ev, "sent to 9 host(s): h000"));
	assert_string_equal(ev + strlen(ev) - 46, r.waves[0].hosts[8].host);   /* the last, no " ..." */
	/* every one lost: the reason lists 48 + 8 x 48 = 432 bytes of them,
	 * then no more */
	scene_free(&wd, &r);
	long_names(&r, 10, 47);
	r.waves[0].hosts[0].host[47] = 'x';
	r.waves[0].hosts[0].host[48] = '\0';
	world_init(&wd, &r);
	step(&r, &wd, 1, false);
	for (unsigned i = 0; i < 10; i++)
		wd.obs[0][i].alive = false;
	assert_int_equal(step(&r, &wd, 12, false), 1);
	assert_int_equal(r.state, FLEET_DONE);
	assert_non_null(strstr(r.reason, r.waves[0].hosts[8].host));
	assert_null(strstr(r.reason, r.waves[0].hosts[9].host));
	assert_string_equal(r.reason + strlen(r.reason) - 4, " ...");
	scene_free(&wd, &r);

	/* a canary gone quiet (its lease expired) before the timeout: waited for */
	plan(&r, 2, 1, "100%");
	snprintf(r.gate, sizeof(r.gate), "job");
	world_init(&wd, &r);
	step(&r, &wd, 1, false);
	wd.obs[0][1].alive = false;
	assert_int_equal(step(&r, &wd, 2, false), 0);
	assert_int_equal(r.waves[0].hosts[1].state, FLEET_R_SENT);
	scene_free(&wd, &r);

	/* a canary that gave no verdict and lost its lease by the timeout
	 * fails the gate: a policy that kills its canary must not pass
	 * (the other canary passed) */
	plan(&r, 2, 1, "100%");
	snprintf(r.gate, sizeof(r.gate), "job");
	world_init(&wd, &r);
	step(&r, &wd, 1, false);
	snprintf(r.waves[0].hosts[1].label, sizeof(r.waves[0].hosts[1].label), "2s-8gpu");
	answer(&wd, 0, 0, FLEET_H_GATED, "no-difference");
	wd.obs[0][1].alive = false;
	assert_int_equal(step(&r, &wd, 2, false), 1);
	assert_int_equal(r.waves[0].hosts[0].state, FLEET_R_GATE_PASSED);
	assert_int_equal(r.state, FLEET_RUNNING);                           /* h001 waited for */
	assert_int_equal(step(&r, &wd, 12, false), 1);
	assert_int_equal(r.state, FLEET_ROLLING_BACK);
	assert_string_equal(r.reason, "canary h001 (2s-8gpu) lost its lease and gave no verdict within 10s");
	assert_int_equal(r.waves[0].state, FLEET_W_FAILED);
	scene_free(&wd, &r);
	/* every canary lost: the first named, and no host sent the policy */
	plan(&r, 2, 1, "100%");
	snprintf(r.gate, sizeof(r.gate), "job");
	world_init(&wd, &r);
	step(&r, &wd, 1, false);
	wd.obs[0][0].alive = wd.obs[0][1].alive = false;
	assert_int_equal(step(&r, &wd, 12, false), 1);
	assert_int_equal(r.state, FLEET_ROLLING_BACK);
	assert_string_equal(r.reason, "canary h000 () lost its lease and gave no verdict within 10s");
	assert_int_not_equal(wd.obs[0][0].desired.mode, FLEET_MODE_APPLY);
	scene_free(&wd, &r);

	/* a rollback h001 (alive) does not finish within the timeout */
	plan(&r, 2, 1, "100%");
	world_init(&wd, &r);
	step(&r, &wd, 1, false);
	answer(&wd, 0, 0, FLEET_H_FAILED, NULL);
	assert_int_equal(step(&r, &wd, 2, false), 1);
	assert_int_equal(r.state, FLEET_ROLLING_BACK);
	answer(&wd, 0, 0, FLEET_H_VERIFIED, NULL);
	assert_int_equal(step(&r, &wd, 20, false), 1);
	assert_int_equal(r.state, FLEET_FAILED);
	assert_string_equal(r.events[r.n_events - 1].what, "failed: h001 did not go back to its old policy");
	scene_free(&wd, &r);

	/* a shadow aborted: nothing to roll back, and said */
	plan(&r, 2, 1, "100%");
	r.shadow = true;
	world_init(&wd, &r);
	step(&r, &wd, 1, false);
	assert_int_equal(step(&r, &wd, 2, true), 1);
	assert_int_equal(r.state, FLEET_ABORTED);
	assert_string_equal(r.events[r.n_events - 1].what, "aborted (shadow: nothing to roll back)");
	scene_free(&wd, &r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_step_happy_path),
		cmocka_unit_test(test_step_failure_rolls_back),
		cmocka_unit_test(test_step_gate_regression),
		cmocka_unit_test(test_step_gate_refused),
		cmocka_unit_test(test_step_lost_host_and_timeout),
		cmocka_unit_test(test_step_abort_and_shadow),
		cmocka_unit_test(test_step_abort_keeps_a_host),
		cmocka_unit_test(test_step_edges),
		cmocka_unit_test(test_step_bounds),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
