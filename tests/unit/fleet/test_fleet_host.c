/* SPDX-License-Identifier: MIT */
/* test_fleet_host.c — the host side's decisions (fleet_host_test.h) on
 * constructed inputs: which store key is followed, refused once, answered
 * as a shadow or ignored; what a desired value means against what runs and
 * what was answered or refused before (each mode, each edge); when the
 * class's policy of record stands in for the desired (none, or older); the status
 * after a cycle (verified, drift, a failed verify, a state the controller
 * must read kept, an older verify not reported again); when the status is
 * put; what a host admits of a store value (fleet_host_admit): signed by
 * a trusted key for it, or refused with the reason (unsigned, unknown key,
 * no key at all, another host, another fleet, expired, a replay: older, or
 * an equal seq with other bytes; a header whose rollout or sha256 the
 * document belies), the
 * record of the last desired answered, frozen or not,
 * and unsigned values under --fleet-insecure-unsigned only; a store's
 * policy document (fleet_host_policy_admit) signed for another sha256,
 * naming another, or of content not the one it names; a store's
 * policy checked before its plan (fleet_host_policy_check): an include =
 * refused in the fleet's words (never "a buffer"), a value beyond the site
 * limits refused with the key and the limit, one within them admitted; a
 * derived policy beyond them in its base file, flattened as a rollout
 * stores it, refused under the rollout's name. */
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
#include <sys/stat.h>
#include <cmocka.h>

#include "test_util.h"

#include "base/base64.h"
#include "fleet/fleet_ctl.h"
#include "fleet/fleet_doc.h"
#include "fleet/fleet_host_test.h"
#include "tune/limits.h"
#include "tune/limits_test.h"
#include "tune/policy_test.h"

#define SHA_RUN "1111111111111111111111111111111111111111111111111111111111111111"
#define SHA_NEW "2222222222222222222222222222222222222222222222222222222222222222"

static struct fleet_desired desired(enum fleet_mode mode, const char *sha)
{
	struct fleet_desired d = { .mode = mode };

	snprintf(d.rollout, sizeof(d.rollout), "r1");
	snprintf(d.sha256, sizeof(d.sha256), "%s", sha);
	return d;
}

static void test_route(void **state)
{
	(void)state;
	/* keys that are not this host's desired or shadow */
	assert_int_equal(fleet_host_route(FLEET_KEY_STATUS, true, 5, 0, 0), FLEET_HOST_IGNORE);
	assert_int_equal(fleet_host_route(FLEET_KEY_HOST, true, 5, 0, 0), FLEET_HOST_IGNORE);
	assert_int_equal(fleet_host_route(FLEET_KEY_OTHER, false, 5, 0, 0), FLEET_HOST_IGNORE);
	/* a desired value */
	assert_int_equal(fleet_host_route(FLEET_KEY_DESIRED, true, 5, 0, 0), FLEET_HOST_FOLLOW);
	assert_int_equal(fleet_host_route(FLEET_KEY_DESIRED, true, 5, 5, 0), FLEET_HOST_FOLLOW);  /* decide() says */
	/* a bad one: refused once per revision */
	assert_int_equal(fleet_host_route(FLEET_KEY_DESIRED, false, 5, 0, 0), FLEET_HOST_REFUSE);
	assert_int_equal(fleet_host_route(FLEET_KEY_DESIRED, false, 5, 5, 0), FLEET_HOST_IGNORE);
	assert_int_equal(fleet_host_route(FLEET_KEY_DESIRED, false, 6, 5, 0), FLEET_HOST_REFUSE);  /* a new bad one */
	/* shadow: answered once per revision; a bad one ignored */
	assert_int_equal(fleet_host_route(FLEET_KEY_SHADOW, true, 7, 0, 0), FLEET_HOST_SHADOW);
	assert_int_equal(fleet_host_route(FLEET_KEY_SHADOW, true, 7, 0, 7), FLEET_HOST_IGNORE);
	assert_int_equal(fleet_host_route(FLEET_KEY_SHADOW, false, 8, 0, 7), FLEET_HOST_IGNORE);
}

static void test_decide(void **state)
{
	struct fleet_desired apply_new = desired(FLEET_MODE_APPLY, SHA_NEW), apply_run = desired(FLEET_MODE_APPLY, SHA_RUN);
	struct fleet_desired gate = desired(FLEET_MODE_GATE, SHA_NEW), local = desired(FLEET_MODE_LOCAL, "");

	(void)state;
	/* a new desired revision */
	assert_int_equal(fleet_host_decide(&apply_new, 10, 0, 0, SHA_RUN, false), FLEET_HOST_LOAD);
	assert_int_equal(fleet_host_decide(&apply_run, 10, 0, 0, SHA_RUN, false), FLEET_HOST_RUNS_IT);
	assert_int_equal(fleet_host_decide(&gate, 10, 0, 0, SHA_RUN, false), FLEET_HOST_GATE);
	assert_int_equal(fleet_host_decide(&local, 10, 0, 0, SHA_RUN, false), FLEET_HOST_LOAD);
	/* refused at this revision: never tried again, whatever it says */
	assert_int_equal(fleet_host_decide(&apply_new, 10, 0, 10, SHA_RUN, false), FLEET_HOST_NOTHING);
	assert_int_equal(fleet_host_decide(&gate, 10, 9, 10, SHA_RUN, false), FLEET_HOST_NOTHING);
	/* answered: a gate runs once; the applied policy is not applied again */
	assert_int_equal(fleet_host_decide(&gate, 10, 10, 0, SHA_RUN, false), FLEET_HOST_NOTHING);
	assert_int_equal(fleet_host_decide(&apply_run, 10, 10, 0, SHA_RUN, false), FLEET_HOST_NOTHING);
	/* answered, but what runs is not what it names (the daemon reloaded
	 * another file by SIGHUP): loaded again */
	assert_int_equal(fleet_host_decide(&apply_new, 10, 10, 0, SHA_RUN, false), FLEET_HOST_LOAD);
	assert_int_equal(fleet_host_decide(&local, 10, 10, 0, SHA_RUN, false), FLEET_HOST_LOAD);
	/* a later revision after a refusal */
	assert_int_equal(fleet_host_decide(&apply_new, 11, 10, 10, SHA_RUN, false), FLEET_HOST_LOAD);
	/* the very document answered before, put again at a new revision (a
	 * replay) or read after a restart (done_rev 0): a gate never runs
	 * twice, the policy that runs is not applied again */
	assert_int_equal(fleet_host_decide(&gate, 12, 10, 0, SHA_RUN, true), FLEET_HOST_NOTHING);
	assert_int_equal(fleet_host_decide(&gate, 12, 0, 0, SHA_RUN, true), FLEET_HOST_NOTHING);
	assert_int_equal(fleet_host_decide(&apply_run, 12, 0, 0, SHA_RUN, true), FLEET_HOST_NOTHING);
}

/* The class's policy of record against the host's desired and the last
 * desired it answered. */
static void test_record_wins(void **state)
{
	(void)state;
	/* no desired (a host that joins): the record, unless older than what it answered */
	assert_true(fleet_host_record_wins(false, 0, 20, 0));
	assert_true(fleet_host_record_wins(false, 0, 20, 19));
	assert_false(fleet_host_record_wins(false, 0, 20, 20));
	assert_false(fleet_host_record_wins(false, 0, 20, 30));   /* a deleted desired takes no host back */
	/* a desired sent in the rollout the record ends (a host skipped): the record, newer */
	assert_true(fleet_host_record_wins(true, 15, 20, 10));
	/* a desired newer than the record (a later rollout, a rollback's restore): the desired */
	assert_false(fleet_host_record_wins(true, 25, 20, 10));
	assert_false(fleet_host_record_wins(true, 20, 20, 10));   /* one step's seq: the desired */
	/* unsigned (--fleet-insecure-unsigned, seq 0): only with no desired */
	assert_true(fleet_host_record_wins(false, 0, 0, 0));
	assert_false(fleet_host_record_wins(true, 0, 0, 0));
}

/* The state dir's record of the last desired answered. */
static void test_seq_parse(void **state)
{
	char sha[SIGN_SHA_LEN + 1] = "x";
	uint64_t seq = 1;

	(void)state;
	assert_int_equal(fleet_host_seq_parse("1790000000000000000 " SHA_NEW "\n", &seq, sha), 0);
	assert_int_equal(seq, 1790000000000000000ull);
	assert_string_equal(sha, SHA_NEW);
	/* the file of before the hash: the seq alone (an equal seq is then refused) */
	assert_int_equal(fleet_host_seq_parse("52\n", &seq, sha), 0);
	assert_int_equal(seq, 52);
	assert_string_equal(sha, "");
	seq = 3;
	assert_int_equal(fleet_host_seq_parse("", &seq, sha), -EINVAL);
	assert_int_equal(fleet_host_seq_parse("-1\n", &seq, sha), -EINVAL);
	assert_int_equal(fleet_host_seq_parse("9223372036854775808\n", &seq, sha), -EINVAL);
	assert_int_equal(fleet_host_seq_parse("12 nothex\n", &seq, sha), -EINVAL);
	assert_int_equal(fleet_host_seq_parse("12 " SHA_NEW " more\n", &seq, sha), -EINVAL);
	assert_int_equal(seq, 3);
}

/* Frozen: the last timestamp (or the start, without one) older than the limit. */
static void test_frozen(void **state)
{
	double age = -1;

	(void)state;
	assert_false(fleet_host_frozen(1000, 900, 0, 3600, &age));
	assert_true(age == 100);
	assert_true(fleet_host_frozen(10000, 900, 0, 3600, &age));     /* a store withholding the timestamp */
	assert_true(age == 9100);
	assert_false(fleet_host_frozen(1000, 0, 500, 3600, &age));     /* none yet: counted from the start */
	assert_true(age == 500);
	assert_true(fleet_host_frozen(5000, 0, 500, 3600, &age));
	assert_false(fleet_host_frozen(5000, 0, 500, 0, &age));        /* no limit */
}

static void test_status_refresh(void **state)
{
	struct fleet_class cls = { .id = "0123456789ab", .label = "2s-2n-48c-8gpu-T4" };
	char sha[SHA256_DIGEST_STRING_LENGTH] = SHA_RUN, name[FLEET_NAME_MAX] = "thp.conf";
	struct fleet_host_view v = { .sha256 = sha, .policy_name = name, .verify_ok = true, .checked = 9,
				     .drifted = 0, .verify_wall = 100 };
	struct fleet_status s = { .state = FLEET_H_VERIFIED };

	(void)state;
	fleet_host_status_refresh(&s, "h1", &cls, &v);
	assert_string_equal(s.host, "h1");
	assert_string_equal(s.class_id, "0123456789ab");
	assert_string_equal(s.label, "2s-2n-48c-8gpu-T4");
	assert_string_equal(s.policy, "thp.conf");
	assert_string_equal(s.sha256, SHA_RUN);
	assert_int_equal(s.state, FLEET_H_VERIFIED);
	assert_int_equal(s.checked, 9);
	assert_true(s.verify_time == 100);
	/* drift at the next verify */
	v.drifted = 2;
	v.verify_wall = 101;
	fleet_host_status_refresh(&s, "h1", &cls, &v);
	assert_int_equal(s.state, FLEET_H_DRIFT);
	assert_int_equal(s.drifted, 2);
	/* a verify that failed is drift too, and corrected back to verified */
	v.drifted = 0;
	v.verify_ok = false;
	v.verify_wall = 102;
	fleet_host_status_refresh(&s, "h1", &cls, &v);
	assert_int_equal(s.state, FLEET_H_DRIFT);
	v.verify_ok = true;
	v.verify_wall = 103;
	fleet_host_status_refresh(&s, "h1", &cls, &v);
	assert_int_equal(s.state, FLEET_H_VERIFIED);
	/* an older verify (the view not updated) is not reported again */
	v.drifted = 5;
	v.verify_wall = 50;
	fleet_host_status_refresh(&s, "h1", &cls, &v);
	assert_int_equal(s.drifted, 0);
	assert_true(s.verify_time == 103);
	/* failed, invalid, gated: kept for the controller, whatever the verify */
	for (enum fleet_hstate st = FLEET_H_FAILED; st <= FLEET_H_GATED; st++) {
		s.state = st;
		v.verify_wall = 200 + st;
		fleet_host_status_refresh(&s, "h1", &cls, &v);
		assert_int_equal(s.state, st);
		assert_true(s.verify_time == 103);
	}
}

static void test_status_due(void **state)
{
	(void)state;
	assert_true(fleet_host_status_due("{\"a\":1}", NULL, 0, 0));               /* never published */
	assert_true(fleet_host_status_due("{\"a\":2}", "{\"a\":1}", 5, 30));       /* changed */
	assert_false(fleet_host_status_due("{\"a\":1}", "{\"a\":1}", 5, 30));      /* the same, not due */
	assert_true(fleet_host_status_due("{\"a\":1}", "{\"a\":1}", 30, 30));      /* due */
}

/* ---- admitting a document ---- */

static char tdir[64];

/* Key pair name in tdir/NAME/ (its own directory: a keyring of it alone). */
static struct sign_keyring *key_in(const char *name, struct sign_key *k)
{
	struct nt_err err = { 0 };
	char d[128], path[256];
	struct sign_keyring *kr;

	snprintf(d, sizeof(d), "%s/%s", tdir, name);
	assert_int_equal(mkdir(d, 0755), 0);
	if (sign_keygen(d, name, NULL, &err) < 0)
		fail_msg("keygen: %s", err.msg);
	snprintf(path, sizeof(path), "%s/%s.key", d, name);
	if (sign_key_load(path, 0, k, &err) < 0)
		fail_msg("load: %s", err.msg);
	if (!(kr = sign_keyring_load(d, 0, &err)))
		fail_msg("keyring: %s", err.msg);
	return kr;
}

/* A signed desired for host at seq; sha: the header's (NULL: the document's). */
#define NOW 1800000000.0

static const char *signed_rollout = "r1";   /* the header's rollout (the document's: r1) */

static char *signed_desired_for(const struct sign_key *k, const char *fleet, int64_t expires, const char *host,
				uint64_t seq, const char *sha, char **doc)
{
	struct fleet_desired d = desired(FLEET_MODE_APPLY, SHA_NEW);
	struct sign_header h = { .kind = SIGN_KIND_DESIRED, .seq = seq, .expires = expires };
	struct nt_err err = { 0 };
	char *env = NULL;

	*doc = fleet_desired_json(&d, false);
	snprintf(h.fleet, sizeof(h.fleet), "%s", fleet);
	snprintf(h.host, sizeof(h.host), "%s", host);
	snprintf(h.rollout, sizeof(h.rollout), "%s", signed_rollout);
	snprintf(h.policy_sha256, sizeof(h.policy_sha256), "%s", sha ? sha : SHA_NEW);
	if (sign_envelope_make(k, &h, *doc, strlen(*doc), &env, &err) < 0)
		fail_msg("sign: %s", err.msg);
	return env;
}

static char *signed_desired(const struct sign_key *k, const char *host, uint64_t seq, const char *sha, char **doc)
{
	return signed_desired_for(k, SIGN_FLEET_DEFAULT, (int64_t)NOW + 60, host, seq, sha, doc);
}

/* Admit v as h1's desired after last_seq (whose bytes had last_sha): 0,
 * or the reason refused. */
static int admit_after(const struct sign_keyring *kr, bool insecure, const char *v, uint64_t last_seq,
		       const char *last_sha, enum sign_reject *why, struct sign_envelope *e)
{
	struct sign_expect want = { SIGN_KIND_DESIRED, "h1", last_seq, NULL, NOW, last_sha };
	struct nt_err err = { 0 };
	int r = fleet_host_admit(kr, insecure, &want, v, strlen(v), e, why, &err);

	if (r < 0)
		assert_non_null(strstr(err.msg, sign_reject_names[*why]));   /* the status names the reason */
	return r;
}

static int admit(const struct sign_keyring *kr, bool insecure, const char *v, uint64_t last_seq,
		 enum sign_reject *why, struct sign_envelope *e)
{
	return admit_after(kr, insecure, v, last_seq, NULL, why, e);
}

static void test_admit(void **state)
{
	struct sign_key k1, k2;
	struct sign_keyring *kr1, *kr2;
	struct sign_envelope e = { 0 };
	enum sign_reject why = SIGN_REJ__COUNT;
	char *doc, *v, *v2, *doc2, sha[SIGN_SHA_LEN + 1];

	(void)state;
	assert_non_null(test_tmpdir(tdir, sizeof(tdir)));
	kr1 = key_in("k1", &k1);
	kr2 = key_in("k2", &k2);
	/* signed by the trusted key for this host: the document's bytes, its seq */
	v = signed_desired(&k1, "h1", 7, NULL, &doc);
	sign_value_sha(v, strlen(v), sha);
	assert_int_equal(admit_after(kr1, false, v, 7, sha, &why, &e), 0);   /* an equal seq: the same bytes */
	assert_string_equal(e.doc, doc);
	assert_int_equal(e.h.seq, 7);
	sign_envelope_release(&e);
	/* an equal seq with other bytes (a gate document put again re-signed,
	 * or another one at that seq): a replay */
	v2 = signed_desired_for(&k1, SIGN_FLEET_DEFAULT, (int64_t)NOW + 61, "h1", 7, NULL, &doc2);
	assert_int_equal(admit_after(kr1, false, v2, 7, sha, &why, &e), -EPERM);
	assert_int_equal(why, SIGN_REJ_REPLAY);
	assert_int_equal(admit_after(kr1, false, v2, 6, sha, &why, &e), 0);     /* newer than 6: admitted */
	sign_envelope_release(&e);
	free(v2);
	free(doc2);
	assert_int_equal(admit_after(kr1, false, v, 7, NULL, &why, &e), -EPERM);   /* bytes unknown */
	assert_int_equal(why, SIGN_REJ_REPLAY);
	/* another fleet's (one key, two fleets), an expired one */
	v2 = signed_desired_for(&k1, "staging", (int64_t)NOW + 60, "h1", 9, NULL, &doc2);
	assert_int_equal(admit(kr1, false, v2, 0, &why, &e), -EPERM);
	assert_int_equal(why, SIGN_REJ_OTHER_FLEET);
	free(v2);
	free(doc2);
	v2 = signed_desired_for(&k1, SIGN_FLEET_DEFAULT, (int64_t)NOW - 1, "h1", 9, NULL, &doc2);
	assert_int_equal(admit(kr1, false, v2, 0, &why, &e), -EPERM);
	assert_int_equal(why, SIGN_REJ_EXPIRED);
	free(v2);
	free(doc2);
	/* a replay, an unknown key, no key at all */
	assert_int_equal(admit(kr1, false, v, 8, &why, &e), -EPERM);
	assert_int_equal(why, SIGN_REJ_REPLAY);
	assert_int_equal(admit(kr2, false, v, 0, &why, &e), -EPERM);
	assert_int_equal(why, SIGN_REJ_UNKNOWN_KEY);
	assert_int_equal(admit(NULL, false, v, 0, &why, &e), -EPERM);
	assert_int_equal(why, SIGN_REJ_UNKNOWN_KEY);
	assert_int_equal(admit(NULL, true, v, 0, &why, &e), -EPERM);     /* insecure verifies what is signed */
	assert_int_equal(why, SIGN_REJ_UNKNOWN_KEY);
	/* unsigned: refused, unless insecure */
	assert_int_equal(admit(kr1, false, doc, 0, &why, &e), -EPERM);
	assert_int_equal(why, SIGN_REJ_UNSIGNED);
	assert_int_equal(admit(NULL, false, doc, 0, &why, &e), -EPERM);
	assert_int_equal(why, SIGN_REJ_UNSIGNED);
	assert_int_equal(admit(kr1, true, doc, 5, &why, &e), 0);
	assert_string_equal(e.doc, doc);
	sign_envelope_release(&e);
	free(v);
	free(doc);
	/* another host's; a header whose sha256 the document does not name */
	v = signed_desired(&k1, "h2", 9, NULL, &doc);
	assert_int_equal(admit(kr1, false, v, 0, &why, &e), -EPERM);
	assert_int_equal(why, SIGN_REJ_OTHER_HOST);
	free(v);
	free(doc);
	v = signed_desired(&k1, "h1", 9, SHA_RUN, &doc);
	assert_int_equal(admit(kr1, false, v, 0, &why, &e), -EPERM);
	assert_int_equal(why, SIGN_REJ_MALFORMED);
	free(v);
	free(doc);
	/* a header whose rollout the document does not name (review G3) */
	signed_rollout = "r2";
	v = signed_desired(&k1, "h1", 9, NULL, &doc);
	signed_rollout = "r1";
	assert_int_equal(admit(kr1, false, v, 0, &why, &e), -EPERM);
	assert_int_equal(why, SIGN_REJ_MALFORMED);
	free(v);
	free(doc);
	sign_key_wipe(&k1);
	sign_key_wipe(&k2);
	sign_keyring_free(kr1);
	sign_keyring_free(kr2);
	test_rmrf(tdir);
}

/* A policy document signed by k for sha_signed (kind policy, host "*"). */
static char *signed_policy(const struct sign_key *k, const char *sha_signed, const char *doc)
{
	struct sign_header h = { .kind = SIGN_KIND_POLICY, .seq = 0, .expires = 0 };
	struct nt_err err = { 0 };
	char *env = NULL;

	snprintf(h.fleet, sizeof(h.fleet), "%s", SIGN_FLEET_DEFAULT);
	snprintf(h.host, sizeof(h.host), "*");
	snprintf(h.rollout, sizeof(h.rollout), "r1");
	snprintf(h.policy_sha256, sizeof(h.policy_sha256), "%s", sha_signed);
	if (sign_envelope_make(k, &h, doc, strlen(doc), &env, &err) < 0)
		fail_msg("sign: %s", err.msg);
	return env;
}

/* Admit env as the policy document of sha: 0, or the error, its message in msg. */
static int policy_admit(const struct sign_keyring *kr, const char *sha, const char *env, char *msg, size_t msgsz,
			struct fleet_policy_doc *doc, char key_id[SIGN_ID_LEN + 1])
{
	struct sign_expect want = { SIGN_KIND_POLICY, "h1", 0, NULL, NOW, NULL };
	struct nt_err err = { 0 };
	enum sign_reject why = SIGN_REJ__COUNT;
	int r = fleet_host_policy_admit(kr, false, &want, "/nodetune/policies/x", sha, env, strlen(env), doc, key_id,
					&why, &err);

	snprintf(msg, msgsz, "%s", err.msg);
	return r;
}

/* The three checks of a store's policy document beyond its signature
 * (review G3): signed for another sha256, naming another sha256, content
 * not of the sha256 it names; each refused with its words, the consistent
 * one admitted with its signer. */
static void test_policy_admit(void **state)
{
	const char conf[] = "[thp]\nenabled = never\n", other[] = "[thp]\nenabled = madvise\n";
	char sha[FLEET_SHA_LEN + 1], sha_o[FLEET_SHA_LEN + 1], msg[sizeof(((struct nt_err *)0)->msg)], key_id[SIGN_ID_LEN + 1] = "";
	char *doc = fleet_policy_doc_json("thp.conf", conf, strlen(conf), sha);
	char *doc_o = fleet_policy_doc_json("thp.conf", other, strlen(other), sha_o);
	char *b64 = base64_encode_alloc(other, strlen(other)), forged[512], *env;
	struct fleet_policy_doc p = { 0 };
	struct sign_keyring *kr;
	struct sign_key k;

	(void)state;
	assert_non_null(test_tmpdir(tdir, sizeof(tdir)));
	kr = key_in("k1", &k);
	/* consistent: admitted, its content and signer */
	env = signed_policy(&k, sha, doc);
	assert_int_equal(policy_admit(kr, sha, env, msg, sizeof(msg), &p, key_id), 0);
	assert_memory_equal(p.content, conf, strlen(conf));
	assert_string_equal(key_id, k.id);
	fleet_policy_doc_release(&p);
	free(env);
	/* signed for another sha256 than the one asked for */
	env = signed_policy(&k, sha_o, doc);
	assert_int_equal(policy_admit(kr, sha, env, msg, sizeof(msg), &p, key_id), -EINVAL);
	assert_non_null(strstr(msg, "signed for sha256"));
	free(env);
	/* signed for the sha256 asked for, the document (consistent in itself) names another */
	env = signed_policy(&k, sha, doc_o);
	assert_int_equal(policy_admit(kr, sha, env, msg, sizeof(msg), &p, key_id), -EINVAL);
	assert_non_null(strstr(msg, "the document names sha256"));
	free(env);
	/* names the sha256 asked for, its content another's */
	snprintf(forged, sizeof(forged), "{\"name\":\"thp.conf\",\"sha256\":\"%s\",\"content\":\"%s\"}", sha, b64);
	env = signed_policy(&k, sha, forged);
	assert_int_equal(policy_admit(kr, sha, env, msg, sizeof(msg), &p, key_id), -EINVAL);
	assert_non_null(strstr(msg, "its sha256 is not the one the document names"));
	free(env);
	assert_null(p.content);
	free(doc);
	free(doc_o);
	free(b64);
	sign_key_wipe(&k);
	sign_keyring_free(kr);
	test_rmrf(tdir);
}

static void test_policy_check(void **state)
{
	const char inc[] = "[main]\ninclude = baseline\n[thp]\nenabled = never\n";
	const char over[] = "[main]\nsummary = big\n[sysctl]\nvm.min_free_kbytes = 2097152\n";
	const char within[] = "[sysctl]\nvm.min_free_kbytes = 65536\n";
	const char lim[] = "[sysctl]\nvm.min_free_kbytes = 1048576\n";
	struct nt_err err = { 0 };
	struct limits *l = limits_parse_buffer(lim, sizeof(lim) - 1, "limits.conf", &err);
	struct policy *p = NULL;

	(void)state;
	assert_non_null(l);
	assert_int_equal(fleet_host_policy_check(inc, sizeof(inc) - 1, "derived", NULL, NULL, &p, &err), -EINVAL);
	assert_null(p);
	assert_null(strstr(err.msg, "buffer"));
	assert_string_equal(err.msg, "derived:2: include = in a policy from the store, which must be self-contained "
				     "(a rollout stores its policy with the includes resolved)");
	assert_int_equal(fleet_host_policy_check(over, sizeof(over) - 1, "big", l, NULL, &p, &err), -EPERM);
	assert_null(p);
	assert_string_equal(err.msg, "refused by the site limits: big:4: [sysctl] vm.min_free_kbytes = 2097152 is above "
				     "the site limit 1048576 (limits.conf:2)");
	/* no limits, or within them: admitted */
	assert_int_equal(fleet_host_policy_check(over, sizeof(over) - 1, "big", NULL, NULL, &p, &err), 0);
	policy_free(p);
	p = NULL;
	assert_int_equal(fleet_host_policy_check(within, sizeof(within) - 1, "small", l, NULL, &p, &err), 0);
	assert_string_equal(policy_get(p, "sysctl", "vm.min_free_kbytes"), "65536");
	policy_free(p);
	limits_free(l);
}

/* A derived policy beyond the limits in its included base file (review
 * G4): the controller flattens it (fleet_ctl_policy_text, what a rollout
 * stores), and a host refuses the flattened text under the name the
 * rollout gives it, at the line of the flattened text that carries the
 * base's value (the comment above it names base.conf:LINE, the origin). */
static void test_derived_beyond_limits(void **state)
{
	const char lim[] = "[sysctl]\nvm.min_free_kbytes = 1048576\n";
	char base[128], top[128], *text = NULL;
	struct nt_err err = { 0 };
	struct limits *l = limits_parse_buffer(lim, sizeof(lim) - 1, "limits.conf", &err);
	struct policy *p = NULL;
	size_t len = 0, line = 1;
	FILE *f;

	(void)state;
	assert_non_null(l);
	assert_non_null(test_tmpdir(tdir, sizeof(tdir)));
	snprintf(base, sizeof(base), "%s/base.conf", tdir);
	snprintf(top, sizeof(top), "%s/top.conf", tdir);
	assert_non_null(f = fopen(base, "w"));
	fputs("[main]\nsummary = base\n[sysctl]\nvm.min_free_kbytes = 2097152\n", f);
	fclose(f);
	assert_non_null(f = fopen(top, "w"));
	fprintf(f, "[main]\nsummary = top\ninclude = %s\n[thp]\nenabled = never\n", base);
	fclose(f);
	if (fleet_ctl_policy_text(top, 0, &text, &len, &err) < 0)
		fail_msg("flatten: %s", err.msg);
	assert_null(strstr(text, "\ninclude"));
	for (const char *c = text; c < strstr(text, "vm.min_free_kbytes"); c++)
		line += *c == '\n';
	assert_int_equal(fleet_host_policy_check(text, len, "top.conf", l, NULL, &p, &err), -EPERM);
	assert_null(p);
	print_message("host: %s\n", err.msg);
	{
		char want[256];

		snprintf(want, sizeof(want), "refused by the site limits: top.conf:%zu: [sysctl] vm.min_free_kbytes = "
			 "2097152 is above the site limit 1048576 (limits.conf:2)", line);
		assert_string_equal(err.msg, want);
	}
	assert_non_null(strstr(text, "/base.conf:4\nvm.min_free_kbytes = 2097152\n"));   /* its origin, a comment */
	free(text);
	limits_free(l);
	test_rmrf(tdir);
}

/* A cached store policy is started with only while its signer, recorded
 * beside it, is trusted (security.md L11: a revoked key's policy does not
 * outlive the revocation across a restart); unsigned only when unsigned
 * documents are followed; a cache without its record is not used. */
static void test_cached_policy(void **state)
{
	char dir[64], path[256], buf[256], why[512];
	struct sign_keyring *kr1, *kr2;
	struct sign_key k1, k2;
	FILE *f;

	(void)state;
	assert_non_null(test_tmpdir(tdir, sizeof(tdir)));
	kr1 = key_in("k1", &k1);
	kr2 = key_in("k2", &k2);
	snprintf(dir, sizeof(dir), "%s", tdir);
	assert_null(fleet_host_cached_policy(dir, kr1, false, buf, sizeof(buf), why, sizeof(why)));   /* none */
	snprintf(path, sizeof(path), "%s/%s", dir, FLEET_HOST_CACHE);
	assert_non_null(f = fopen(path, "w"));
	fputs("[thp]\nenabled = never\n", f);
	fclose(f);
	*why = '\0';
	assert_null(fleet_host_cached_policy(dir, kr1, false, buf, sizeof(buf), why, sizeof(why)));
	assert_non_null(strstr(why, "its signer is not recorded"));
	snprintf(path, sizeof(path), "%s/%s%s", dir, FLEET_HOST_CACHE, FLEET_HOST_CACHE_KEY);
	assert_non_null(f = fopen(path, "w"));
	fputs(k1.id, f);
	fclose(f);
	assert_ptr_equal(fleet_host_cached_policy(dir, kr1, false, buf, sizeof(buf), why, sizeof(why)), buf);
	*why = '\0';
	assert_null(fleet_host_cached_policy(dir, kr2, false, buf, sizeof(buf), why, sizeof(why)));   /* revoked */
	assert_non_null(strstr(why, "is no longer trusted"));
	assert_non_null(strstr(why, k1.id));
	assert_null(fleet_host_cached_policy(dir, NULL, false, buf, sizeof(buf), why, sizeof(why)));   /* no key at all */
	assert_non_null(f = fopen(path, "w"));   /* an unsigned one: only when unsigned documents are followed */
	fclose(f);
	assert_null(fleet_host_cached_policy(dir, kr1, false, buf, sizeof(buf), why, sizeof(why)));
	assert_non_null(strstr(why, "unsigned"));
	assert_ptr_equal(fleet_host_cached_policy(dir, kr1, true, buf, sizeof(buf), why, sizeof(why)), buf);
	sign_keyring_free(kr1);
	sign_keyring_free(kr2);
	sign_key_wipe(&k1);
	sign_key_wipe(&k2);
	test_rmrf(tdir);
}

/* The pause after failures in a row: none after a success, 0.5 s then
 * doubling up to the cap, each drawn in [half, all]; seeds differ, so
 * hosts cut off together come back apart. */
static void test_backoff(void **state)
{
	unsigned seed = 1, other = 2;
	double lo = 1e9, hi = 0, a, b;
	int apart = 0;

	(void)state;
	assert_true(fleet_host_backoff(0, 10, &seed) == 0);
	for (int i = 0; i < 200; i++) {
		double p = fleet_host_backoff(1, 10, &seed);

		lo = fmin(lo, p);
		hi = fmax(hi, p);
	}
	assert_true(lo >= 0.25 && hi <= 0.5 && hi - lo > 0.1);
	for (unsigned f = 2; f <= 6; f++) {
		double full = fmin(0.5 * (double)(1u << (f - 1)), 10);

		for (int i = 0; i < 50; i++) {
			double p = fleet_host_backoff(f, 10, &seed);

			assert_true(p >= full / 2 && p <= full);
		}
	}
	for (int i = 0; i < 50; i++)
		assert_true(fleet_host_backoff(40, 10, &seed) <= 10);
	/* a cap under the floor: the floor */
	assert_true(fleet_host_backoff(3, 0.1, &seed) <= 0.5);
	for (int i = 0; i < 20; i++) {
		a = fleet_host_backoff(5, 30, &seed);
		b = fleet_host_backoff(5, 30, &other);
		apart += fabs(a - b) > 0.01;
	}
	assert_true(apart > 15);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_route),
		cmocka_unit_test(test_decide),
		cmocka_unit_test(test_record_wins),
		cmocka_unit_test(test_seq_parse),
		cmocka_unit_test(test_frozen),
		cmocka_unit_test(test_status_refresh),
		cmocka_unit_test(test_status_due),
		cmocka_unit_test(test_admit),
		cmocka_unit_test(test_policy_admit),
		cmocka_unit_test(test_policy_check),
		cmocka_unit_test(test_derived_beyond_limits),
		cmocka_unit_test(test_cached_policy),
		cmocka_unit_test(test_backoff),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
