/* SPDX-License-Identifier: MIT */
/* test_fleet_ctl.c — the controller's steps around the state machine
 * (fleet_ctl_test.h) on constructed inputs: the hosts' keys to rows
 * (alive, desired, status, shadow revisions, a bad value kept as the row's
 * "bad", other keys skipped, sorted); rows to what fleet_step observes (a
 * host without keys observed as nothing); each kind of write to the value
 * it puts (apply, gate, shadow, a restore of a previous value and of
 * none); the new events of a step (none before, some dropped); what the
 * run loop does after each kind of pass; the policy text a rollout stores
 * (a derived policy flattened: by file and by NAME, the same values as the
 * file with its includes, no include line, errors naming the file); what
 * a signing controller verifies before it acts or signs: its rollout
 * document (signed; a bare, tampered, unknown-key, wrong-kind, other
 * rollout or foreign-sha256 one refused naming the key and reason; another
 * operator's trusted key accepted; unverified only to be shown), each
 * host's desired from before the rollout (a bare, unknown-key or
 * other-host one left as it is, state kept, never signed; a verified one
 * signed again with the new seq), and the policy document it stored (its
 * own key's, or stored again: key rotation); the classes' policies of
 * record a rollout ending done writes (one per class, signed as kind
 * record for every host, no expiry; none for a shadow or before done),
 * the hosts it skipped that are behind, converged or left, and the rows
 * `fleet hosts` marks behind their class's record. */
#include <errno.h>
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
#include <jansson.h>

#include "base/base64.h"
#include "fleet/fleet_ctl_test.h"
#include "fleet/sign.h"
#include "test_util.h"
#include "fleet_fixture.h"
#include "tune/policy.h"
#include "tune/policy_test.h"

static struct etcd_kv kv(const char *key, const char *value, int64_t mod)
{
	return (struct etcd_kv){ (char *)key, (char *)value, strlen(value), mod, mod, 1, 0 };
}

#define SHA_B "b3e1903f8febb83c3233ce6f6d03cac9247ee198c691be41fc76d00a64f0f0b1"
#define HOSTINFO(h) "{\"host\":\"" h "\",\"class\":\"0123456789ab\",\"label\":\"l\",\"pid\":1,\"started\":1}"
#define DESIRED "{\"rollout\":\"r\",\"mode\":\"apply\",\"policy\":\"p\",\"sha256\":\"" SHA_A "\"}"
#define STATUS(h) "{\"host\":\"" h "\",\"class\":\"0123456789ab\",\"label\":\"l\",\"policy\":\"p\",\"sha256\":\"" SHA_A \
		  "\",\"state\":\"verified\",\"desired_rev\":7,\"error\":\"\",\"time\":1}"

static void test_rows(void **state)
{
	struct etcd_kv kvs[] = {
		kv("/nodetune/hosts/h2/status", STATUS("h2"), 9),
		kv("/nodetune/hosts/h1", HOSTINFO("h1"), 3),
		kv("/nodetune/hosts/h1/desired", DESIRED, 7),
		kv("/nodetune/hosts/h1/status", STATUS("h1"), 8),
		kv("/nodetune/hosts/h1/shadow", DESIRED, 6),
		kv("/nodetune/hosts/h3/desired", "not json", 5),
		kv("/nodetune/hosts/h1/other", "{}", 4),            /* not a host key */
		kv("/nodetune/hosts/../x", "{}", 4),
	};
	struct fleet_host_row *rows;
	unsigned n;

	(void)state;
	assert_int_equal(fleet_ctl_rows(kvs, sizeof(kvs) / sizeof(kvs[0]), &rows, &n), 0);
	assert_int_equal(n, 3);
	assert_string_equal(rows[0].host, "h1");
	assert_true(rows[0].alive && rows[0].has_desired && rows[0].has_status);
	assert_int_equal(rows[0].desired_rev, 7);
	assert_int_equal(rows[0].shadow_rev, 6);
	assert_string_equal(rows[0].desired.sha256, SHA_A);
	assert_string_equal(rows[0].bad, "");
	assert_string_equal(rows[1].host, "h2");                     /* a dead host: its status stays */
	assert_false(rows[1].alive);
	assert_true(rows[1].has_status);
	assert_string_equal(rows[2].host, "h3");                     /* a bad value: kept as "bad" */
	assert_false(rows[2].has_desired);
	assert_int_equal(rows[2].desired_rev, 5);
	assert_non_null(strstr(rows[2].bad, "/nodetune/hosts/h3/desired"));
	free(rows);
	assert_int_equal(fleet_ctl_rows(NULL, 0, &rows, &n), 0);     /* no host */
	assert_int_equal(n, 0);
	free(rows);
}

/* The leader follows the hosts by watch events: a put as a read takes it
 * (a new host inserted in name order), a delete of the liveness key makes
 * the host not alive, of its desired forgets it; another key skipped. */
static void test_rows_apply(void **state)
{
	struct etcd_event ev[] = {
		{ ETCD_EVENT_PUT, kv("/nodetune/hosts/h002", HOSTINFO("h002"), 3) },
		{ ETCD_EVENT_PUT, kv("/nodetune/hosts/h000", HOSTINFO("h000"), 4) },
		{ ETCD_EVENT_PUT, kv("/nodetune/hosts/h000/desired", DESIRED, 5) },
		{ ETCD_EVENT_PUT, kv("/nodetune/policies/x", "{}", 6) },
		{ ETCD_EVENT_PUT, kv("/nodetune/hosts/h001/status", STATUS("h001"), 7) },
		{ ETCD_EVENT_DELETE, kv("/nodetune/hosts/h002", "", 8) },
		{ ETCD_EVENT_DELETE, kv("/nodetune/hosts/h000/desired", "", 9) },
	};
	struct fleet_host_row *rows = NULL;
	unsigned n = 0, cap = 0;

	(void)state;
	assert_int_equal(fleet_ctl_rows_apply(&rows, &n, &cap, ev, 5), 0);
	assert_int_equal(n, 3);
	assert_string_equal(rows[0].host, "h000");
	assert_string_equal(rows[1].host, "h001");
	assert_string_equal(rows[2].host, "h002");
	assert_true(rows[0].alive && rows[0].has_desired && rows[2].alive && rows[1].has_status);
	assert_int_equal(rows[0].desired_rev, 5);
	assert_false(rows[1].alive);
	assert_int_equal(fleet_ctl_rows_apply(&rows, &n, &cap, ev + 5, 2), 0);
	assert_int_equal(n, 3);
	assert_false(rows[2].alive);
	assert_false(rows[0].has_desired);
	assert_int_equal(rows[0].desired_rev, 0);
	assert_true(rows[0].alive);
	free(rows);
}

static void test_observe(void **state)
{
	struct etcd_kv kvs[] = {
		kv("/nodetune/hosts/h000", HOSTINFO("h000"), 3),
		kv("/nodetune/hosts/h000/desired", DESIRED, 7),
		kv("/nodetune/hosts/h000/status", STATUS("h000"), 8),
		kv("/nodetune/hosts/h001/shadow", DESIRED, 6),
	};
	struct fleet_host_row *rows;
	struct fleet_observed **obs;
	struct fleet_rollout r;
	unsigned n;

	(void)state;
	plan(&r, 3, 1, "100%");                                     /* h000, h001, h002 in one wave */
	assert_int_equal(fleet_ctl_rows(kvs, 4, &rows, &n), 0);
	obs = fleet_ctl_observe(&r, rows, n);
	assert_non_null(obs);
	for (unsigned i = 0; i < 3; i++) {
		const struct fleet_observed *o = &obs[0][i];

		if (!strcmp(r.waves[0].hosts[i].host, "h000")) {
			assert_true(o->alive && o->has_desired && o->has_status);
			assert_int_equal(o->desired_rev, 7);
			assert_int_equal(o->status.desired_rev, 7);
		} else if (!strcmp(r.waves[0].hosts[i].host, "h001")) {
			assert_false(o->alive);
			assert_true(o->has_shadow);
			assert_int_equal(o->shadow_rev, 6);
		} else {                                            /* no key at all */
			assert_false(o->alive || o->has_desired || o->has_status || o->has_shadow);
		}
	}
	fleet_ctl_observe_free(obs, r.n_waves);
	free(rows);
	fleet_rollout_release(&r);
}

/* A step taken again (its controller died between its transactions)
 * sends no host the desired it has already: same rollout, mode, sha256
 * and gate; another mode, a restore or a shadow still goes. */
static void test_unsent(void **state)
{
	struct fleet_rollout r;
	struct fleet_observed o[4] = { { 0 } }, *obs[1] = { o };
	struct fleet_write w[5] = {
		{ FLEET_W_PUT_DESIRED, FLEET_MODE_APPLY, 0, 0 },  /* has it: dropped */
		{ FLEET_W_PUT_DESIRED, FLEET_MODE_APPLY, 0, 1 },  /* has the gate mode: sent */
		{ FLEET_W_PUT_DESIRED, FLEET_MODE_APPLY, 0, 2 },  /* has another sha256: sent */
		{ FLEET_W_RESTORE_DESIRED, FLEET_MODE_LOCAL, 0, 0 },
		{ FLEET_W_PUT_DESIRED, FLEET_MODE_APPLY, 0, 3 },  /* has none: sent */
	};

	(void)state;
	plan(&r, 4, 1, "100%");
	snprintf(r.sha256, sizeof(r.sha256), "%s", SHA_A);
	for (unsigned i = 0; i < 3; i++) {
		o[i].has_desired = true;
		snprintf(o[i].desired.rollout, sizeof(o[i].desired.rollout), "%s", r.name);
		snprintf(o[i].desired.sha256, sizeof(o[i].desired.sha256), "%s", i == 2 ? SHA_B : SHA_A);
		o[i].desired.mode = i == 1 ? FLEET_MODE_GATE : FLEET_MODE_APPLY;
	}
	assert_int_equal(fleet_ctl_unsent(&r, obs, w, 5), 4);
	assert_int_equal(w[0].index, 1);
	assert_int_equal(w[1].index, 2);
	assert_int_equal(w[2].kind, FLEET_W_RESTORE_DESIRED);
	assert_int_equal(w[3].index, 3);
	fleet_rollout_release(&r);
}

static void test_write_value(void **state)
{
	struct fleet_rollout r;
	struct fleet_desired d;
	struct nt_err err = { 0 };
	char *v;

	(void)state;
	plan(&r, 2, 1, "100%");
	snprintf(r.policy, sizeof(r.policy), "thp.conf");
	snprintf(r.gate, sizeof(r.gate), "steps20");
	r.gate_budget = 60;
	/* apply and gate: this rollout's desired document */
	v = fleet_ctl_write_value(&r, &(struct fleet_write){ FLEET_W_PUT_DESIRED, FLEET_MODE_GATE, 0, 0 });
	assert_int_equal(fleet_doc_parse_desired("k", v, strlen(v), &d, &err), 0);
	assert_int_equal(d.mode, FLEET_MODE_GATE);
	assert_string_equal(d.rollout, "r");
	assert_string_equal(d.sha256, SHA_A);
	assert_string_equal(d.gate, "steps20");
	assert_true(d.gate_budget == 60);
	free(v);
	v = fleet_ctl_write_value(&r, &(struct fleet_write){ FLEET_W_PUT_DESIRED, FLEET_MODE_APPLY, 0, 1 });
	assert_int_equal(fleet_doc_parse_desired("k", v, strlen(v), &d, &err), 0);
	assert_int_equal(d.mode, FLEET_MODE_APPLY);
	free(v);
	/* shadow: no mode */
	v = fleet_ctl_write_value(&r, &(struct fleet_write){ FLEET_W_PUT_SHADOW, FLEET_MODE_APPLY, 0, 0 });
	assert_null(strstr(v, "\"mode\""));
	assert_non_null(strstr(v, SHA_A));
	free(v);
	/* restore: the value from before, byte for byte; none: mode local */
	r.waves[0].hosts[0].prev_desired = strdup("{\"rollout\":\"old\",\"mode\":\"local\"}");
	v = fleet_ctl_write_value(&r, &(struct fleet_write){ FLEET_W_RESTORE_DESIRED, FLEET_MODE_APPLY, 0, 0 });
	assert_string_equal(v, "{\"rollout\":\"old\",\"mode\":\"local\"}");
	free(v);
	v = fleet_ctl_write_value(&r, &(struct fleet_write){ FLEET_W_RESTORE_DESIRED, FLEET_MODE_APPLY, 0, 1 });
	assert_int_equal(fleet_doc_parse_desired("k", v, strlen(v), &d, &err), 0);
	assert_int_equal(d.mode, FLEET_MODE_LOCAL);
	assert_string_equal(d.sha256, "");
	free(v);
	fleet_rollout_release(&r);
}

/* ---- what a signing controller verifies ------------------------------------ */


/* The fixed key pair of seed byte b (K: 1, another operator's: 2, a stranger's: 3). */
static struct sign_key key_of(unsigned char b)
{
	unsigned char seed[SIGN_SEED_BYTES];
	struct nt_err err = { 0 };
	struct sign_key k;

	memset(seed, b, sizeof(seed));
	assert_int_equal(sign_key_from_seed(seed, &k, &err), 0);
	return k;
}

/* A controller (its store never used) signing with k, trusting also (NULL: k alone). */
static struct fleet_ctl *ctl_of(const struct sign_key *k, const struct sign_key *also)
{
	struct nt_err err = { 0 };
	struct fleet_ctl *c = fleet_ctl_open("http://127.0.0.1:1", NULL, NULL, NULL, &err);
	struct sign_keyring *kr;

	assert_non_null(c);
	fleet_ctl_set_signer(c, k);
	if (also) {
		assert_non_null(kr = sign_keyring_with(NULL, also, &err));
		assert_int_equal(fleet_ctl_set_trust(c, kr, &err), 0);
		sign_keyring_free(kr);
	}
	return c;
}

/* doc signed by k as kind for host, rollout "r", sha. */
static char *signed_doc(const struct sign_key *k, enum sign_kind kind, const char *host, const char *sha,
			const char *doc)
{
	struct sign_header h = { .kind = kind, .seq = 3, .expires = time(NULL) + 3600 };
	struct nt_err err = { 0 };
	char *env = NULL;

	snprintf(h.fleet, sizeof(h.fleet), "%s", SIGN_FLEET_DEFAULT);   /* the controller's, unless set */
	snprintf(h.host, sizeof(h.host), "%s", host);
	snprintf(h.rollout, sizeof(h.rollout), "r");
	snprintf(h.policy_sha256, sizeof(h.policy_sha256), "%s", sha);
	if (sign_envelope_make(k, &h, doc, strlen(doc), &env, &err) < 0)
		fail_msg("sign: %s", err.msg);
	return env;
}

/* env with its document replaced by doc, its signature kept (a rewrite inside the envelope). */
static char *rewrapped(const char *env, const char *doc)
{
	json_t *o = json_loads(env, 0, NULL);
	char *b64 = base64_encode_alloc(doc, strlen(doc)), *s;

	assert_non_null(o);
	json_object_set_new(o, "doc", json_string(b64));
	s = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	free(b64);
	return s;
}

/* fleet_ctl_rollout_parse of value as rollout name: 0, or the errno with
 * err.msg containing want. */
static void parse_is(struct fleet_ctl *c, const char *name, bool check, const char *value, int rc, const char *want)
{
	struct etcd_kv v = kv("/nodetune/rollouts/r", value, 9);
	struct fleet_rollout got = { 0 };
	struct nt_err err = { 0 };

	assert_int_equal(fleet_ctl_rollout_parse(c, name, check, &v, &got, &err), rc);
	if (rc == 0)
		assert_string_equal(got.name, "r");
	else if (!strstr(err.msg, want))
		fail_msg("want '%s' in: %s", want, err.msg);
	if (rc < 0)
		assert_non_null(strstr(err.msg, "/nodetune/rollouts/r"));
	fleet_rollout_release(&got);
}

/* r's head as the store holds it unsigned (every page at seq 0). */
static char *head_of(const struct fleet_rollout *r)
{
	struct fleet_layout l;
	char *s;

	assert_int_equal(fleet_layout_init(&l, r, FLEET_PAGE_HOSTS), 0);
	s = fleet_rollout_head_json(r, &l);
	fleet_layout_release(&l);
	assert_non_null(s);
	return s;
}

static void test_rollout_doc_verified(void **state)
{
	struct sign_key k = key_of(1), op = key_of(2), stranger = key_of(3);
	struct fleet_ctl *c = ctl_of(&k, NULL), *other = ctl_of(&op, &k), *alien = ctl_of(&stranger, NULL);
	struct nt_err err = { 0 };
	struct fleet_rollout r;
	char *env, *bare, *doc, *x;

	(void)state;
	plan(&r, 2, 1, "100%");
	assert_int_equal(fleet_ctl_rollout_value(c, &r, 5, &env, &err), 0);
	assert_non_null(strstr(env, "\"kind\":\"rollout\""));
	assert_non_null(strstr(env, "\"host\":\"*\""));
	bare = head_of(&r);
	assert_null(strstr(bare, "\"hosts\""));                  /* the head holds no host: its pages do */
	parse_is(c, "r", true, env, 0, NULL);
	parse_is(other, "r", true, env, 0, NULL);                /* another operator trusting K resumes it */
	parse_is(c, "r", false, env, 0, NULL);                   /* shown: unwrapped */
	parse_is(c, "r", false, bare, 0, NULL);
	parse_is(c, "r", true, bare, -EPERM, "refused (unsigned)");
	parse_is(alien, "r", true, env, -EPERM, "refused (unknown_key): signed by key");
	assert_non_null(strstr(env, k.id));
	/* rewritten inside its envelope: another sha256, the signature kept */
	snprintf(r.sha256, sizeof(r.sha256), "%s", SHA_B);
	doc = head_of(&r);
	x = rewrapped(env, doc);
	parse_is(c, "r", true, x, -EPERM, "refused (bad_signature)");
	free(x);
	/* signed by K, but its header's sha256 is not the document's */
	x = signed_doc(&k, SIGN_KIND_ROLLOUT, "*", SHA_A, doc);
	parse_is(c, "r", true, x, -EPERM, "but was signed for r, sha256 d3e1903f8feb");
	free(x);
	/* another kind (a policy: any host), another host, another rollout */
	x = signed_doc(&k, SIGN_KIND_POLICY, "*", SHA_B, doc);
	parse_is(c, "r", true, x, -EPERM, "refused (wrong_kind)");
	free(x);
	x = signed_doc(&k, SIGN_KIND_DESIRED, "h000", SHA_B, doc);
	parse_is(c, "r", true, x, -EPERM, "refused (other_host)");
	free(x);
	parse_is(c, "r2", true, env, -EPERM, "signed for rollout r");
	free(doc);
	free(bare);
	free(env);
	fleet_rollout_release(&r);
	fleet_ctl_close(c);
	fleet_ctl_close(other);
	fleet_ctl_close(alien);
}

static void set_prev(struct fleet_rollout *r, unsigned i, char *value)
{
	free(r->waves[0].hosts[i].prev_desired);
	r->waves[0].hosts[i].prev_desired = value;
}

static void test_prev_desired_restore(void **state)
{
	struct sign_key k = key_of(1), stranger = key_of(3);
	struct fleet_ctl *c = ctl_of(&k, NULL);
	struct fleet_write w[5];
	struct nt_err err = { 0 };
	struct fleet_rollout r;
	struct sign_keyring *kr;
	struct sign_envelope e = { 0 };
	enum sign_reject why;
	unsigned n = 5;
	char *v;

	(void)state;
	plan(&r, 5, 1, "100%");
	set_prev(&r, 0, strdup(DESIRED));                                           /* bare: planted */
	set_prev(&r, 1, signed_doc(&k, SIGN_KIND_DESIRED, "h001", SHA_A, DESIRED));   /* verifies */
	set_prev(&r, 2, signed_doc(&stranger, SIGN_KIND_DESIRED, "h002", SHA_A, DESIRED));
	set_prev(&r, 3, signed_doc(&k, SIGN_KIND_DESIRED, "h000", SHA_A, DESIRED));   /* another host's */
	for (unsigned i = 0; i < 5; i++) {                                           /* h004: none (mode local) */
		r.waves[0].hosts[i].state = FLEET_R_RESTORING;
		w[i] = (struct fleet_write){ FLEET_W_RESTORE_DESIRED, FLEET_MODE_LOCAL, 0, i };
	}
	/* a bare one is never signed, even asked directly */
	v = strdup(DESIRED);
	assert_int_equal(fleet_ctl_sign_write(c, &w[0], &r.waves[0].hosts[0], 9, "k", &v, &err), -EPERM);
	assert_string_equal(v, DESIRED);
	assert_string_equal(r.waves[0].hosts[0].prev_refused, "unsigned");
	free(v);
	set_prev(&r, 0, strdup(DESIRED));
	r.waves[0].hosts[0].prev_refused[0] = '\0';
	/* before the restores: the unverifiable ones are kept as they are, named */
	assert_int_equal(fleet_ctl_keep_unverified(c, &r, w, &n, &err), 0);
	assert_int_equal(n, 2);
	assert_int_equal(w[0].index, 1);
	assert_int_equal(w[1].index, 4);
	assert_int_equal(r.waves[0].hosts[0].state, FLEET_R_KEPT);
	assert_string_equal(r.waves[0].hosts[0].prev_refused, "unsigned");
	assert_null(r.waves[0].hosts[0].prev_desired);
	assert_string_equal(r.waves[0].hosts[2].prev_refused, "unknown_key");
	assert_string_equal(r.waves[0].hosts[3].prev_refused, "other_host");
	assert_int_equal(r.waves[0].hosts[1].state, FLEET_R_RESTORING);
	assert_int_equal(r.n_events, 3);
	assert_non_null(strstr(r.events[0].what, "h000"));
	assert_non_null(strstr(r.events[0].what, "left as it is"));
	assert_non_null(strstr(r.events[2].what, "(other_host)"));
	/* the verified one: its document signed again with the new seq */
	v = fleet_ctl_write_value(&r, &w[0]);
	assert_int_equal(fleet_ctl_sign_write(c, &w[0], &r.waves[0].hosts[1], 9, "k", &v, &err), 0);
	assert_non_null(kr = sign_keyring_with(NULL, &k, &err));
	assert_int_equal(sign_verify(kr, v, strlen(v), &(struct sign_expect){ .kind = SIGN_KIND_DESIRED, .host = "h001", .last_seq = 8 }, &e, &why,
				     &err), 0);
	assert_int_equal(e.h.seq, 9);
	assert_string_equal(e.doc, DESIRED);
	sign_envelope_release(&e);
	sign_keyring_free(kr);
	free(v);
	fleet_rollout_release(&r);
	fleet_ctl_close(c);
}

static void test_policy_ours(void **state)
{
	struct sign_key k = key_of(1), op = key_of(2);
	struct fleet_ctl *c = ctl_of(&k, &op);
	char sha[FLEET_SHA_LEN + 1], *doc = fleet_policy_doc_json("p.conf", "[main]\n", 7, sha), *v;
	struct etcd_kv p;

	(void)state;
	v = signed_doc(&k, SIGN_KIND_POLICY, "*", sha, doc);
	p = kv("/nodetune/policies/x", v, 4);
	assert_true(fleet_ctl_policy_ours(c, &p, sha));
	assert_false(fleet_ctl_policy_ours(c, &p, SHA_B));          /* signed for another sha256 */
	free(v);
	v = signed_doc(&op, SIGN_KIND_POLICY, "*", sha, doc);       /* a trusted key, not ours: stored again */
	p = kv("/nodetune/policies/x", v, 4);
	assert_false(fleet_ctl_policy_ours(c, &p, sha));
	free(v);
	p = kv("/nodetune/policies/x", doc, 4);                     /* unsigned */
	assert_false(fleet_ctl_policy_ours(c, &p, sha));
	free(doc);
	fleet_ctl_close(c);
}

static void test_new_events(void **state)
{
	struct fleet_rollout r = { 0 }, next = { 0 };

	(void)state;
	fleet_event(&next, 1, "created");
	fleet_event(&next, 2, "wave 1 sent: h1");
	assert_int_equal(fleet_ctl_new_events(&r, &next), 0);          /* r had none: all are new */
	fleet_event(&r, 1, "created");
	assert_int_equal(fleet_ctl_new_events(&r, &next), 1);
	fleet_event(&r, 2, "wave 1 sent: h1");
	assert_int_equal(fleet_ctl_new_events(&r, &next), 2);          /* nothing new */
	fleet_event(&r, 3, "dropped from next");
	assert_int_equal(fleet_ctl_new_events(&r, &next), 0);          /* r's last is not in next: all */
	fleet_rollout_release(&r);
	fleet_rollout_release(&next);
}

static void test_after(void **state)
{
	(void)state;
	assert_int_equal(fleet_ctl_after(1), FLEET_CTL_FINAL);
	assert_int_equal(fleet_ctl_after(0), FLEET_CTL_AGAIN);
	assert_int_equal(fleet_ctl_after(-ENOLCK), FLEET_CTL_STOP);
	assert_int_equal(fleet_ctl_after(-EACCES), FLEET_CTL_STOP);
	assert_int_equal(fleet_ctl_after(-EPERM), FLEET_CTL_STOP);        /* a counter that does not verify */
	assert_int_equal(fleet_ctl_after(-ETIMEDOUT), FLEET_CTL_RETRY);   /* a store out of reach: retried */
	assert_int_equal(fleet_ctl_after(-ECONNREFUSED), FLEET_CTL_RETRY);
	assert_int_equal(fleet_ctl_after(-ENOMEM), FLEET_CTL_RETRY);
}

static char dir[] = "/tmp/test_fleet_ctl.XXXXXX";

/* Write dir/name (0644) with text; its path (static). */
static const char *put(const char *name, const char *text)
{
	static char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	return path;
}

/* Item 7 of issue 24: a rollout of a derived policy stores it flattened. */
/* The seq only grows: one past the counter and this process's last, and
 * never below the wall clock (a counter deleted, or one a store serves
 * from before, cannot move it back). */
static void test_seq_after(void **state)
{
	const uint64_t now = 1790000000000000000ull;

	(void)state;
	assert_true(fleet_ctl_seq_after(0, 0, now) == now);                 /* the first run: the clock */
	assert_true(fleet_ctl_seq_after(now + 5, 0, now) == now + 6);       /* steps faster than the clock */
	assert_true(fleet_ctl_seq_after(now - 9, 0, now) == now);           /* an old counter served */
	assert_true(fleet_ctl_seq_after(0, now + 7, now) == now + 8);       /* this process went further */
	assert_true(fleet_ctl_seq_after(5, 10, 3) == 11);
	assert_true(fleet_ctl_seq_after(INT64_MAX, 0, 0) == INT64_MAX);     /* never past a JSON integer */
	/* the old seq (etcd's revision, even inflated by a lying store once)
	 * never matters again: the next comes from the counter and the clock */
	assert_true(fleet_ctl_seq_after(0, 0, now) > 9000000u);
}

/* A counter document signed by k for fleet, of kind, holding doc_seq
 * under header seq. */
static char *counter_doc(const struct sign_key *k, const char *fleet, enum sign_kind kind, uint64_t seq,
			 uint64_t doc_seq)
{
	struct sign_header h = { .kind = kind, .seq = seq, .expires = kind == SIGN_KIND_COUNTER ? 0 : 1 };
	struct fleet_stamp st = { doc_seq, 1790000000 };
	char *doc = fleet_stamp_json(&st), *env = NULL;
	struct nt_err err = { 0 };

	snprintf(h.fleet, sizeof(h.fleet), "%s", fleet);
	snprintf(h.host, sizeof(h.host), kind == SIGN_KIND_DESIRED ? "h1" : "*");
	snprintf(h.rollout, sizeof(h.rollout), SIGN_NO_ROLLOUT);
	snprintf(h.policy_sha256, sizeof(h.policy_sha256), FLEET_SHA_NONE);
	if (sign_envelope_make(k, &h, doc, strlen(doc), &env, &err) < 0)
		fail_msg("sign: %s", err.msg);
	free(doc);
	return env;
}

/* The counter: verified with the controller's own key and fleet; anything
 * else stops it, naming the key and why. */
static void test_counter_check(void **state)
{
	struct sign_key k, other;
	struct sign_keyring *kr, *both;
	struct nt_err err = { 0 };
	char kdir[64], path[128];
	uint64_t seq = 0;
	struct {
		const struct sign_key *k;
		const char *fleet;
		enum sign_kind kind;
		uint64_t doc_seq;
		const char *why;
	} bad[] = {
		{ &other, "prod", SIGN_KIND_COUNTER, 42, "unknown_key" },
		{ &k, "staging", SIGN_KIND_COUNTER, 42, "other_fleet" },
		{ &k, "prod", SIGN_KIND_TIMESTAMP, 42, "wrong_kind" },
		{ &k, "prod", SIGN_KIND_COUNTER, 41, "not the one signed" },
	};
	char *v;

	(void)state;
	assert_non_null(test_tmpdir(kdir, sizeof(kdir)));
	assert_int_equal(sign_keygen(kdir, "ctl", NULL, &err), 0);
	assert_int_equal(sign_keygen(kdir, "other", NULL, &err), 0);
	snprintf(path, sizeof(path), "%s/ctl.key", kdir);
	assert_int_equal(sign_key_load(path, 0, &k, &err), 0);
	snprintf(path, sizeof(path), "%s/other.key", kdir);
	assert_int_equal(sign_key_load(path, 0, &other, &err), 0);
	assert_non_null(kr = sign_keyring_of(&k, &err));
	v = counter_doc(&k, "prod", SIGN_KIND_COUNTER, 42, 42);
	assert_int_equal(fleet_ctl_counter_check(kr, k.id, "prod", v, strlen(v), &seq, &err), 0);
	assert_true(seq == 42);
	free(v);
	/* rotation: a counter the key it rotates from signed, trusted besides
	 * its own (--fleet-keys), verifies; without it, not */
	assert_non_null(both = sign_keyring_with(kr, &other, &err));
	v = counter_doc(&other, "prod", SIGN_KIND_COUNTER, 43, 43);
	assert_int_equal(fleet_ctl_counter_check(both, k.id, "prod", v, strlen(v), &seq, &err), 0);
	assert_true(seq == 43);
	assert_int_equal(fleet_ctl_counter_check(kr, k.id, "prod", v, strlen(v), &seq, &err), -EPERM);
	assert_true(seq == 43);
	sign_keyring_free(both);
	free(v);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		seq = 7;
		v = counter_doc(bad[i].k, bad[i].fleet, bad[i].kind, 42, bad[i].doc_seq);
		assert_int_equal(fleet_ctl_counter_check(kr, k.id, "prod", v, strlen(v), &seq, &err), -EPERM);
		assert_true(seq == 7);
		assert_non_null(strstr(err.msg, "/nodetune/seq"));
		assert_non_null(strstr(err.msg, k.id));
		if (!strstr(err.msg, bad[i].why))
			fail_msg("case %zu: '%s' does not say %s", i, err.msg, bad[i].why);
		free(v);
	}
	/* not an envelope at all: a store writer's bare counter */
	v = strdup("{\"seq\":1,\"time\":1}");
	assert_int_equal(fleet_ctl_counter_check(kr, k.id, "prod", v, strlen(v), &seq, &err), -EPERM);
	free(v);
	assert_non_null(strstr(err.msg, "unsigned"));
	sign_keyring_free(kr);
	sign_key_wipe(&k);
	sign_key_wipe(&other);
	test_rmrf(kdir);
}

/* ---- the policy of record ------------------------------------------------- */

static void test_records(void **state)
{
	struct sign_key k = key_of(1);
	struct fleet_ctl *c = ctl_of(&k, NULL);
	struct sign_keyring *kr;
	struct fleet_record *rec;
	struct fleet_rollout r;
	struct nt_err err = { 0 };
	unsigned n;

	(void)state;
	assert_non_null(kr = sign_keyring_with(NULL, &k, &err));
	plan(&r, 6, 2, "1/class,100%");
	snprintf(r.policy, sizeof(r.policy), "p.conf");
	assert_int_equal(fleet_ctl_records(c, &r, 40, &rec, &n, &err), 0);   /* running: none */
	assert_int_equal(n, 0);
	assert_null(rec);
	r.state = FLEET_DONE;
	r.shadow = true;
	assert_int_equal(fleet_ctl_records(c, &r, 40, &rec, &n, &err), 0);   /* a shadow: none */
	assert_int_equal(n, 0);
	r.shadow = false;
	assert_int_equal(fleet_ctl_records(c, &r, 40, &rec, &n, &err), 0);
	assert_int_equal(n, 2);                                               /* one per class */
	for (unsigned i = 0; i < n; i++) {
		const struct sign_expect want = { .kind = SIGN_KIND_RECORD, .host = "h004", .fleet = SIGN_FLEET_DEFAULT,
						  .now = (double)time(NULL) + 365 * 86400.0 };
		const struct sign_expect desired = { .kind = SIGN_KIND_DESIRED, .host = "h004", .fleet = SIGN_FLEET_DEFAULT,
						     .now = (double)time(NULL) };
		struct sign_envelope e = { 0 };
		struct fleet_desired d;
		enum sign_reject why;
		char key[64];

		snprintf(key, sizeof(key), "/nodetune/classes/c%u/record", i);
		assert_string_equal(rec[i].key, key);
		/* for any host, no expiry (a year on), the step's seq, the rollout's sha256 */
		assert_int_equal(sign_verify(kr, rec[i].val, strlen(rec[i].val), &want, &e, &why, &err), 0);
		assert_int_equal(e.h.expires, 0);
		assert_int_equal(e.h.seq, 40);
		assert_string_equal(e.h.policy_sha256, SHA_A);
		assert_string_equal(e.h.host, "*");
		assert_int_equal(fleet_doc_parse_desired(key, e.doc, e.doc_len, &d, &err), 0);
		assert_int_equal(d.mode, FLEET_MODE_APPLY);
		assert_string_equal(d.rollout, "r");
		assert_string_equal(d.policy, "p.conf");
		assert_string_equal(d.sha256, SHA_A);
		sign_envelope_release(&e);
		/* a record is no desired: a host asking for one refuses it */
		assert_int_equal(sign_verify(kr, rec[i].val, strlen(rec[i].val), &desired, &e, &why, &err), -EPERM);
		assert_int_equal(why, SIGN_REJ_WRONG_KIND);
		sign_envelope_release(&e);
	}
	fleet_ctl_records_free(rec, n);
	fleet_rollout_release(&r);
	sign_keyring_free(kr);
	fleet_ctl_close(c);
}

#define STATUS_OF(h, st, sha) "{\"host\":\"" h "\",\"class\":\"0123456789ab\",\"label\":\"l\",\"policy\":\"p\"," \
			      "\"sha256\":\"" sha "\",\"state\":\"" st "\",\"desired_rev\":7,\"error\":\"\",\"time\":1}"

static void test_behind(void **state)
{
	struct etcd_kv kvs[] = {
		kv("/nodetune/hosts/h001", HOSTINFO("h001"), 2),
		kv("/nodetune/hosts/h001/status", STATUS_OF("h001", "verified", SHA_A), 3),
		kv("/nodetune/hosts/h002", HOSTINFO("h002"), 4),
		kv("/nodetune/hosts/h002/status", STATUS_OF("h002", "verified", SHA_A), 5),
		kv("/nodetune/hosts/h003", HOSTINFO("h003"), 6),
		kv("/nodetune/hosts/h003/status", STATUS_OF("h003", "invalid", SHA_B), 7),
		kv("/nodetune/hosts/h000/status", STATUS_OF("h000", "verified", SHA_B), 8),   /* no registration: down */
	};
	struct fleet_host_row *rows;
	struct fleet_rollout r;
	unsigned n, skipped;
	char buf[256];

	(void)state;
	assert_int_equal(fleet_ctl_rows(kvs, sizeof(kvs) / sizeof(kvs[0]), &rows, &n), 0);
	plan(&r, 5, 1, "100%");
	r.state = FLEET_DONE;
	for (unsigned i = 0; i < 5; i++)
		r.waves[0].hosts[i].state = i == 2 ? FLEET_R_VERIFIED : FLEET_R_LOST;
	/* h000 down, h001 converged, h003 behind, h004 left (no key); h002 was not skipped */
	assert_int_equal(fleet_ctl_behind(&r, rows, n, buf, sizeof(buf), &skipped), 2);
	assert_int_equal(skipped, 4);
	assert_string_equal(buf, "h000 (down), h001 (converged), h003 (behind), h004 (left)");
	r.waves[0].hosts[3].state = FLEET_R_VERIFIED;
	r.waves[0].hosts[0].state = FLEET_R_VERIFIED;
	assert_int_equal(fleet_ctl_behind(&r, rows, n, buf, sizeof(buf), &skipped), 0);
	assert_int_equal(skipped, 2);
	assert_string_equal(buf, "h001 (converged), h004 (left)");
	for (unsigned i = 0; i < 5; i++)
		r.waves[0].hosts[i].state = FLEET_R_VERIFIED;
	assert_int_equal(fleet_ctl_behind(&r, rows, n, buf, sizeof(buf), &skipped), 0);   /* none skipped */
	assert_int_equal(skipped, 0);
	assert_string_equal(buf, "");
	free(rows);
	fleet_rollout_release(&r);
}

static void test_mark_behind(void **state)
{
	struct etcd_kv hosts[] = {
		kv("/nodetune/hosts/h1", HOSTINFO("h1"), 2),
		kv("/nodetune/hosts/h1/status", STATUS_OF("h1", "verified", SHA_A), 3),
		kv("/nodetune/hosts/h2", HOSTINFO("h2"), 4),
		kv("/nodetune/hosts/h2/status", STATUS_OF("h2", "verified", SHA_B), 5),
		kv("/nodetune/hosts/h3", HOSTINFO("h3"), 6),                                  /* no status yet */
	};
	struct etcd_kv recs[] = {
		kv("/nodetune/classes/0123456789ab/other", DESIRED, 7),                       /* not a record */
		kv("/nodetune/classes/ffffffffffff/record", "{\"rollout\":\"x\",\"mode\":\"apply\",\"policy\":\"p\","
			"\"sha256\":\"" SHA_B "\"}", 8),                                       /* another class's */
		kv("/nodetune/classes/0123456789ab/record", "not json", 9),                   /* does not parse */
	};
	struct etcd_kv good = kv("/nodetune/classes/0123456789ab/record", DESIRED, 10);   /* SHA_A */
	struct fleet_host_row *rows;
	unsigned n;

	(void)state;
	assert_int_equal(fleet_ctl_rows(hosts, 5, &rows, &n), 0);
	fleet_ctl_mark_behind(rows, n, recs, 3);
	for (unsigned i = 0; i < n; i++) {
		assert_false(rows[i].behind);
		assert_string_equal(rows[i].record_sha, "");
	}
	fleet_ctl_mark_behind(rows, n, &good, 1);
	assert_false(rows[0].behind);                  /* h1 runs its class's record */
	assert_string_equal(rows[0].record_sha, SHA_A);
	assert_true(rows[1].behind);                   /* h2 runs another policy */
	assert_false(rows[2].behind);                  /* h3: no status, nothing to compare */
	free(rows);
}

static void test_policy_text(void **state)
{
	struct nt_err err = { 0 };
	struct policy *file, *flat;
	char top[512], *text = NULL, *byname = NULL;
	size_t len = 0, len2 = 0;

	(void)state;
	assert_non_null(mkdtemp(dir));
	put("pt-base.conf", "[main]\nsummary = base\n[thp]\nenabled = never\n[sysctl]\nvm.swappiness = 10\n");
	put("pt-mid.conf", "[main]\ninclude = pt-base\n[sysctl]\nvm.swappiness = 20\n");
	snprintf(top, sizeof(top), "%s", put("pt-top.conf", "[main]\ninclude = pt-mid.conf\n[thp]\ndefrag = madvise\n"));
	setenv(POLICY_PATH_ENV, dir, 1);
	file = policy_load(top, 0, &err);
	if (!file)
		fail_msg("%s", err.msg);
	if (fleet_ctl_policy_text(top, 0, &text, &len, &err) < 0)
		fail_msg("%s", err.msg);
	assert_int_equal(strlen(text), len);
	assert_null(strstr(text, "\ninclude"));
	flat = policy_parse_buffer(text, len, "flat", &err);
	if (!flat)
		fail_msg("%s\n%s", err.msg, text);
	for (unsigned k = 0; k < knob_count; k++) {
		const char *a = policy_value(file, (enum knob_id)k), *b = policy_value(flat, (enum knob_id)k);

		if (k != KNOB_MAIN_INCLUDE && (!a != !b || (a && strcmp(a, b))))
			fail_msg("[%s] %s: file '%s', stored '%s'", knob_table[k].section, knob_table[k].key,
				 a ? a : "(unset)", b ? b : "(unset)");
	}
	assert_string_equal(policy_get(flat, "sysctl", "vm.swappiness"), "20");
	assert_string_equal(policy_get(flat, "thp", "enabled"), "never");
	assert_string_equal(policy_get(flat, "thp", "defrag"), "madvise");
	policy_free(flat);
	policy_free(file);
	/* by NAME on the search path: the same keys and values */
	if (fleet_ctl_policy_text("pt-top", 0, &byname, &len2, &err) < 0)
		fail_msg("%s", err.msg);
	assert_non_null(strstr(byname, "\nvm.swappiness = 20\n"));
	assert_string_equal(strchr(byname, '\n'), strchr(text, '\n'));   /* past the header naming it */
	free(byname);
	/* errors are the file's, with its line, never the buffer's; outputs untouched */
	byname = NULL;
	len2 = 7;
	put("pt-bad.conf", "[main]\ninclude = pt-missing.conf\n");
	snprintf(top, sizeof(top), "%s/pt-bad.conf", dir);
	assert_int_equal(fleet_ctl_policy_text(top, 0, &byname, &len2, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "pt-bad.conf:2: include"));
	assert_null(strstr(err.msg, "buffer"));
	assert_null(byname);
	assert_int_equal(len2, 7);
	put("pt-badval.conf", "[main]\ninclude = pt-base\n[thp]\nenabled = sometimes\n");
	snprintf(top, sizeof(top), "%s/pt-badval.conf", dir);
	assert_int_equal(fleet_ctl_policy_text(top, 0, &byname, &len2, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "pt-badval.conf:4: "));
	assert_null(strstr(err.msg, "buffer"));
	free(text);
	unsetenv(POLICY_PATH_ENV);
	for (const char *const *n = (const char *const[]){ "pt-base.conf", "pt-mid.conf", "pt-top.conf", "pt-bad.conf",
							    "pt-badval.conf", NULL }; *n; n++)
		unlink(put(*n, ""));
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rows),
		cmocka_unit_test(test_observe),
		cmocka_unit_test(test_write_value),
		cmocka_unit_test(test_unsent),
		cmocka_unit_test(test_rows_apply),
		cmocka_unit_test(test_new_events),
		cmocka_unit_test(test_after),
		cmocka_unit_test(test_seq_after),
		cmocka_unit_test(test_counter_check),
		cmocka_unit_test(test_policy_text),
		cmocka_unit_test(test_rollout_doc_verified),
		cmocka_unit_test(test_prev_desired_restore),
		cmocka_unit_test(test_policy_ours),
		cmocka_unit_test(test_records),
		cmocka_unit_test(test_behind),
		cmocka_unit_test(test_mark_behind),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
