/* test_fleet.c — the pure part of the fleet (fleet.h): keys, hardware
 * classes of real topologies (../shared/topologies, skipped when absent),
 * the --waves parser and the wave planner, the store documents and their
 * strict parsers, and the rollout state machine step by step (send, verify,
 * pass, done; a failure and a gate regression roll back; a lost host is
 * skipped at the timeout; abort; shadow). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "fleet/fleet.h"
#include "fleet/fleet_gate.h"
#include "test_util.h"

#define SHA_A "d3e1903f8febb83c3233ce6f6d03cac9247ee198c691be41fc76d00a64f0f0b1"

/* ---- keys and classes ----------------------------------------------------- */

static void test_keys(void **state)
{
	char host[FLEET_NAME_MAX], buf[128];

	(void)state;
	assert_int_equal(fleet_key_parse("/nodetune/hosts/h1", host), FLEET_KEY_HOST);
	assert_string_equal(host, "h1");
	assert_int_equal(fleet_key_parse("/nodetune/hosts/h1/desired", host), FLEET_KEY_DESIRED);
	assert_int_equal(fleet_key_parse("/nodetune/hosts/h-1.a/status", host), FLEET_KEY_STATUS);
	assert_string_equal(host, "h-1.a");
	assert_int_equal(fleet_key_parse("/nodetune/hosts/h1/other", host), FLEET_KEY_OTHER);
	assert_int_equal(fleet_key_parse("/nodetune/hosts/../x", host), FLEET_KEY_OTHER);
	assert_int_equal(fleet_key_parse("/nodetune/rollouts/r", host), FLEET_KEY_OTHER);
	assert_string_equal(fleet_host_key(buf, sizeof(buf), "h2", "shadow"), "/nodetune/hosts/h2/shadow");
	assert_string_equal(fleet_rollout_key(buf, sizeof(buf), "r", true), "/nodetune/rollouts/r/leader");
	assert_false(fleet_name_valid(""));
	assert_false(fleet_name_valid("a/b"));
	assert_false(fleet_name_valid(".hidden"));
	assert_true(fleet_name_valid("gpu-host_07.dc1"));
}

/* The class of a topology file in ../shared/topologies (or the fixtures). */
static bool class_of(const char *rel, struct fleet_class *c)
{
	char path[4096];
	struct nt_err err = { 0 };
	struct topo *t;

	if (access(test_path(path, sizeof(path), rel), R_OK) < 0)
		return false;
	t = topo_load_xml(path, &err);
	assert_non_null(t);
	assert_int_equal(fleet_class_of(t, c), 0);
	topo_free(t);
	return true;
}

static void test_classes(void **state)
{
	static const struct { const char *file, *label; } want[] = {
		{ "../shared/topologies/g4dnmetal.xml", "2s-2n-48c-8gpu-T4" },
		{ "../shared/topologies/nvidiaDGX2.xml", "2s-2n-4c-16gpu-V100" },
		{ "../shared/topologies/96em64t-4n4d3ca2co-pci.xml", "16s-4n-96c-0gpu" },
		{ "tests/fixtures/topologies/hgx-2s8g8n.xml", "2s-2n-48c-8gpu-H100" },
		{ "tests/fixtures/topologies/epyc-2s-numa0-8-mi300.xml", "2s-2n-32c-4gpu-MI300X" },
	};
	struct fleet_class c[5], again;
	unsigned found = 0;

	(void)state;
	for (unsigned i = 0; i < 5; i++) {
		if (!class_of(want[i].file, &c[i])) {
			memset(&c[i], 0, sizeof(c[i]));
			continue;
		}
		found++;
		assert_string_equal(c[i].label, want[i].label);
		assert_int_equal(strlen(c[i].id), FLEET_CLASS_LEN);
		assert_true(class_of(want[i].file, &again));          /* the same shape, the same id */
		assert_string_equal(again.id, c[i].id);
		for (unsigned k = 0; k < i; k++)
			if (c[k].id[0])
				assert_string_not_equal(c[k].id, c[i].id);
	}
	if (found < 3)
		test_need("../shared", "../shared/topologies is absent (%u of 5 topologies found)", found);
}

/* ---- waves ------------------------------------------------------------------ */

static void test_waves_parse(void **state)
{
	struct fleet_wave_spec w[FLEET_WAVES_MAX];
	struct nt_err err = { 0 };
	unsigned n;

	(void)state;
	assert_int_equal(fleet_waves_parse("1/class,1%,10%,50%,100%", w, &n, &err), 0);
	assert_int_equal(n, 5);
	assert_true(w[0].per_class);
	assert_true(w[2].fraction > 0.099 && w[2].fraction < 0.101);
	assert_int_equal(fleet_waves_parse("100%", w, &n, &err), 0);
	assert_int_equal(fleet_waves_parse("1/class,50%", w, &n, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "must be 100%"));
	assert_int_equal(fleet_waves_parse("10%,1/class,100%", w, &n, &err), -EINVAL);
	assert_int_equal(fleet_waves_parse("50%,10%,100%", w, &n, &err), -EINVAL);
	assert_int_equal(fleet_waves_parse("1/class,,100%", w, &n, &err), -EINVAL);
	assert_int_equal(fleet_waves_parse("0%,100%", w, &n, &err), -EINVAL);
	assert_int_equal(fleet_waves_parse("abc", w, &n, &err), -EINVAL);
}

/* n hosts h0.. of `classes` classes (round-robin) into r's waves. */
static void plan(struct fleet_rollout *r, unsigned n, unsigned classes, const char *spec)
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

static void test_plan_waves(void **state)
{
	struct fleet_rollout r;
	unsigned seen[200] = { 0 }, total = 0;

	(void)state;
	plan(&r, 8, 2, "1/class,50%,100%");
	assert_int_equal(r.n_waves, 3);
	assert_int_equal(r.waves[0].n, 2);
	assert_string_not_equal(r.waves[0].hosts[0].class_id, r.waves[0].hosts[1].class_id);
	assert_int_equal(r.waves[1].n, 2);
	assert_int_equal(r.waves[2].n, 4);
	fleet_rollout_release(&r);

	/* 200 hosts, 3 classes: 3, then 1% (2 done already: at least one more), 10% (to 20), 50%, 100% */
	plan(&r, 200, 3, "1/class,1%,10%,50%,100%");
	assert_int_equal(r.n_waves, 5);
	assert_int_equal(r.waves[0].n, 3);
	assert_int_equal(r.waves[1].n, 1);
	assert_int_equal(r.waves[2].n, 16);
	assert_int_equal(r.waves[3].n, 80);
	assert_int_equal(r.waves[4].n, 100);
	for (unsigned w = 0; w < r.n_waves; w++)
		for (unsigned i = 0; i < r.waves[w].n; i++) {
			unsigned k = (unsigned)atoi(r.waves[w].hosts[i].host + 1);

			seen[k]++;
			total++;
		}
	assert_int_equal(total, 200);
	for (unsigned k = 0; k < 200; k++)
		assert_int_equal(seen[k], 1);                       /* every host in exactly one wave */
	/* a percentage wave mixes the classes */
	assert_string_not_equal(r.waves[2].hosts[0].class_id, r.waves[2].hosts[1].class_id);
	fleet_rollout_release(&r);

	/* one host: everything in the first wave, the rest dropped */
	plan(&r, 1, 1, "1/class,10%,100%");
	assert_int_equal(r.n_waves, 1);
	fleet_rollout_release(&r);
}

/* ---- documents -------------------------------------------------------------- */

static void test_documents(void **state)
{
	struct fleet_desired d = { .mode = FLEET_MODE_GATE, .gate_budget = 30 }, back;
	struct fleet_policy_doc p = { 0 };
	struct nt_err err = { 0 };
	char sha[FLEET_SHA_LEN + 1], *s;

	(void)state;
	snprintf(d.rollout, sizeof(d.rollout), "r1");
	snprintf(d.sha256, sizeof(d.sha256), SHA_A);
	snprintf(d.gate_cmd, sizeof(d.gate_cmd), "sleep 1");
	s = fleet_desired_json(&d, false);
	assert_int_equal(fleet_parse_desired("k", s, strlen(s), &back, &err), 0);
	assert_int_equal(back.mode, FLEET_MODE_GATE);
	assert_string_equal(back.gate_cmd, "sleep 1");
	free(s);
	assert_int_equal(fleet_parse_desired("k", "not json", 8, &back, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "k: not valid JSON"));
	/* the parser quotes the input near its error: a raw newline or escape
	 * there is shown as '?', the message stays one line (fuzz_fleet) */
	assert_int_equal(fleet_parse_desired("k", "{\"a\\\n\033\":1}", 10, &back, &err), -EINVAL);
	assert_null(strchr(err.msg, '\n'));
	assert_null(strchr(err.msg, '\033'));
	assert_non_null(strstr(err.msg, "invalid escape near '\"a\\?' (byte 5)"));
	{
		/* a host's text reaches `fleet status` tables and logs: its
		 * control characters are shown as '?', UTF-8 stays */
		static const char st[] = "{\"host\":\"h1\",\"state\":\"failed\",\"label\":\"caf\u00e9\","
					 "\"error\":\"a\\nb\\u001b[2J\\t\\u007f\"}";
		struct fleet_status fs;

		assert_int_equal(fleet_parse_status("k", st, sizeof(st) - 1, &fs, &err), 0);
		assert_string_equal(fs.error, "a?b?[2J?" "?");
		assert_string_equal(fs.label, "caf\xc3\xa9");
	}
	assert_int_equal(fleet_parse_desired("k", "{\"rollout\":\"a/b\",\"sha256\":\"x\"}", 31, &back, &err), -EINVAL);
	assert_int_equal(fleet_parse_desired("k", "{\"rollout\":\"r\",\"mode\":\"gate\",\"sha256\":\"" SHA_A "\"}", 107,
					     &back, &err), -EINVAL);

	s = fleet_policy_doc_json("thp.conf", "[thp]\nenabled = madvise\n", 24, sha);
	assert_int_equal(fleet_parse_policy_doc("k", s, strlen(s), &p, &err), 0);
	assert_int_equal(p.content_len, 24);
	assert_string_equal(p.sha256, sha);
	fleet_policy_doc_release(&p);
	free(s);
	s = "{\"name\":\"x\",\"sha256\":\"" SHA_A "\",\"content\":\"W3RocF0K\"}";    /* "[thp]\n": another sha */
	assert_int_equal(fleet_parse_policy_doc("k", s, strlen(s), &p, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "its sha256 is not"));
	s = "{\"name\":\"x\",\"sha256\":\"" SHA_A "\",\"content\":\"@@\"}";
	assert_int_equal(fleet_parse_policy_doc("k", s, strlen(s), &p, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "not valid base64"));
}

static void test_gate_parse(void **state)
{
	struct fleet_gate_result g;
	struct nt_err err = { 0 };
	const char *s = "{\"verdict\":\"regression\",\"ratio\":0.8,\"ci_low\":0.75,\"ci_high\":0.85,"
			"\"explanations\":[{\"counter\":\"thp_fault_alloc\",\"mechanism\":\"THP faults\"}]}";

	(void)state;
	assert_int_equal(fleet_gate_parse(s, strlen(s), &g, &err), 0);
	assert_string_equal(g.verdict, "regression");
	assert_true(g.ci_lo > 0.74 && g.ci_hi < 0.86);
	assert_string_equal(g.explanation, "thp_fault_alloc (THP faults)");
	assert_int_equal(fleet_gate_parse("[]", 2, &g, &err), -EINVAL);
	s = "{\"verdict\":\"error\",\"error\":\"no such command\"}";
	assert_int_equal(fleet_gate_parse(s, strlen(s), &g, &err), -EIO);
}

/* ---- the state machine -------------------------------------------------------- */

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

static void world_free(struct world *wd, const struct fleet_rollout *r)
{
	for (unsigned w = 0; w < r->n_waves; w++)
		free(wd->obs[w]);
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

		assert_int_equal(fleet_parse_rollout("k", s, strlen(s), &back, &err), 0);
		assert_int_equal(back.state, FLEET_DONE);
		assert_int_equal(back.n_waves, 2);
		assert_int_equal(back.n_events, r.n_events);
		assert_true(back.events[0].t == r.events[0].t);
		fleet_rollout_release(&back);
		free(s);
	}
	world_free(&wd, &r);
	fleet_rollout_release(&r);
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
	assert_int_equal(r.waves[0].hosts[0].state, FLEET_R_RESTORING);
	assert_int_equal(r.waves[1].hosts[0].state, FLEET_R_PENDING);      /* never touched */
	assert_int_equal(wd.obs[0][0].desired.mode, FLEET_MODE_LOCAL);
	answer_wave(&wd, &r, 0, FLEET_H_VERIFIED);
	assert_int_equal(step(&r, &wd, 3, false), 1);
	assert_int_equal(r.state, FLEET_ROLLED_BACK);
	assert_non_null(strstr(r.reason, "invalid"));
	world_free(&wd, &r);
	fleet_rollout_release(&r);
}

static void test_step_gate_regression(void **state)
{
	struct fleet_rollout r;
	struct world wd;

	(void)state;
	plan(&r, 4, 2, "1/class,100%");
	snprintf(r.gate_cmd, sizeof(r.gate_cmd), "job");
	world_init(&wd, &r);
	step(&r, &wd, 1, false);
	assert_int_equal(r.waves[0].state, FLEET_W_GATING);
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
	world_free(&wd, &r);
	fleet_rollout_release(&r);

	/* every canary passes: the wave goes on for good, in apply mode */
	plan(&r, 2, 2, "1/class,100%");
	snprintf(r.gate_cmd, sizeof(r.gate_cmd), "job");
	r.allow_inconclusive = true;
	world_init(&wd, &r);
	step(&r, &wd, 1, false);
	answer(&wd, 0, 0, FLEET_H_GATED, "improvement");
	answer(&wd, 0, 1, FLEET_H_GATED, "inconclusive");
	step(&r, &wd, 2, false);
	step(&r, &wd, 2, false);
	assert_int_equal(r.waves[0].state, FLEET_W_APPLYING);
	assert_int_equal(wd.obs[0][0].desired.mode, FLEET_MODE_APPLY);
	world_free(&wd, &r);
	fleet_rollout_release(&r);
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
	world_free(&wd, &r);
	fleet_rollout_release(&r);

	/* alive but never verified: the wave fails at the timeout */
	plan(&r, 2, 1, "100%");
	world_init(&wd, &r);
	step(&r, &wd, 100, false);
	answer(&wd, 0, 0, FLEET_H_VERIFIED, NULL);
	step(&r, &wd, 111, false);
	assert_int_equal(r.state, FLEET_ROLLING_BACK);
	assert_non_null(strstr(r.reason, "timed out"));
	world_free(&wd, &r);
	fleet_rollout_release(&r);
}

static void test_step_abort_and_shadow(void **state)
{
	struct fleet_rollout r;
	struct world wd;

	(void)state;
	plan(&r, 4, 2, "1/class,100%");
	world_init(&wd, &r);
	step(&r, &wd, 1, false);
	step(&r, &wd, 2, true);
	assert_int_equal(r.state, FLEET_ROLLING_BACK);
	assert_int_equal(r.goal, FLEET_ABORTED);
	answer_wave(&wd, &r, 0, FLEET_H_VERIFIED);
	step(&r, &wd, 3, true);
	assert_int_equal(r.state, FLEET_ABORTED);
	world_free(&wd, &r);
	fleet_rollout_release(&r);

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
	world_free(&wd, &r);
	fleet_rollout_release(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_keys),
		cmocka_unit_test(test_classes),
		cmocka_unit_test(test_waves_parse),
		cmocka_unit_test(test_plan_waves),
		cmocka_unit_test(test_documents),
		cmocka_unit_test(test_gate_parse),
		cmocka_unit_test(test_step_happy_path),
		cmocka_unit_test(test_step_failure_rolls_back),
		cmocka_unit_test(test_step_gate_regression),
		cmocka_unit_test(test_step_lost_host_and_timeout),
		cmocka_unit_test(test_step_abort_and_shadow),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
