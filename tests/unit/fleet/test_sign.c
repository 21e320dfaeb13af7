/* SPDX-License-Identifier: MIT */
/* test_sign.c — signed fleet documents: key pairs, the canonical bytes,
 * the envelope, each refusal by its reason (another fleet, expired, an
 * equal seq with other bytes among them), and key rotation (two trusted
 * keys; a removed key no longer verifies); the controller's rollout kind
 * (host "*", never taken for another kind); a key from a seed (the key
 * file's) and a keyring of a loaded one plus a key; every envelope member
 * changed after signing, then deleted (a table of them); the fuzz target's
 * signed seeds verifying with its key. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <jansson.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/base64.h"
#include "fleet/sign.h"
#include "fleet/sign_test.h"
#include "test_util.h"

#define SHA "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define DOC "{\"rollout\":\"r1\",\"mode\":\"apply\",\"policy\":\"p\",\"sha256\":\"" SHA "\"}"

static char dir[64], keys[128], trusted[128];

static int setup(void **state)
{
	(void)state;
	if (!test_tmpdir(dir, sizeof(dir)))
		return -1;
	snprintf(keys, sizeof(keys), "%s/keys", dir);        /* secret and public: the controller's */
	snprintf(trusted, sizeof(trusted), "%s/trusted", dir); /* public only: a host's fleet-keys.d */
	return mkdir(keys, 0700) || mkdir(trusted, 0755) ? -1 : 0;
}

static int teardown(void **state)
{
	(void)state;
	test_rmrf(dir);
	return 0;
}

/* Make key pair name in keys/, load its secret into *k, and trust it
 * (copy its .pub into trusted/). */
static void make_key(const char *name, struct sign_key *k, bool trust)
{
	struct nt_err err = { 0 };
	char path[256], id[SIGN_ID_LEN + 1], cmd[600];

	if (sign_keygen(keys, name, id, &err) < 0)
		fail_msg("keygen: %s", err.msg);
	snprintf(path, sizeof(path), "%s/%s.key", keys, name);
	if (sign_key_load(path, 0, k, &err) < 0)
		fail_msg("load: %s", err.msg);
	assert_string_equal(k->id, id);
	if (trust) {
		snprintf(cmd, sizeof(cmd), "cp %s/%s.pub %s/", keys, name, trusted);
		assert_int_equal(system(cmd), 0);
	}
}

#define FLEET "f1"
#define NOW 1800000000.0                 /* the verifier's clock */

static struct sign_header header(enum sign_kind kind, const char *host, uint64_t seq)
{
	struct sign_header h = { .kind = kind, .seq = seq, .expires = (int64_t)NOW + 3600 };

	snprintf(h.fleet, sizeof(h.fleet), FLEET);
	snprintf(h.host, sizeof(h.host), "%s", host);
	snprintf(h.rollout, sizeof(h.rollout), "r1");
	snprintf(h.policy_sha256, sizeof(h.policy_sha256), SHA);
	return h;
}

static char *make_env_h(const struct sign_key *k, const struct sign_header *h)
{
	struct nt_err err = { 0 };
	char *env = NULL;

	if (sign_envelope_make(k, h, DOC, strlen(DOC), &env, &err) < 0)
		fail_msg("sign: %s", err.msg);
	return env;
}

static char *make_env(const struct sign_key *k, enum sign_kind kind, const char *host, uint64_t seq)
{
	struct sign_header h = header(kind, host, seq);
	struct nt_err err = { 0 };
	char *env = NULL;

	if (sign_envelope_make(k, &h, DOC, strlen(DOC), &env, &err) < 0)
		fail_msg("sign: %s", err.msg);
	return env;
}

static struct sign_keyring *ring(void)
{
	struct nt_err err = { 0 };
	struct sign_keyring *kr = sign_keyring_load(trusted, 0, &err);

	if (!kr)
		fail_msg("keyring: %s", err.msg);
	return kr;
}

/* What host h1 of fleet f1 expects, after seq last (bytes last_sha). */
static struct sign_expect expect_of(enum sign_kind kind, uint64_t last, const char *last_sha)
{
	return (struct sign_expect){ .kind = kind, .host = "h1", .last_seq = last, .fleet = FLEET, .now = NOW,
				     .last_sha = last_sha };
}

/* Verifying env as want says is refused for why. */
static void expect_refused_w(const struct sign_keyring *kr, const char *env, const struct sign_expect *want,
			     enum sign_reject why)
{
	struct sign_envelope e = { 0 };
	enum sign_reject got = SIGN_REJ__COUNT;
	struct nt_err err = { 0 };
	int r = sign_verify(kr, env, strlen(env), want, &e, &got, &err);

	if (r != -EPERM || got != why)
		fail_msg("expected refusal %s, got rc %d reason %d '%s'", sign_reject_names[why], r, (int)got, err.msg);
	assert_int_equal(err.code, -EPERM);
	assert_non_null(strstr(err.msg, sign_reject_names[why]));
	assert_null(e.doc);
}

/* ... as host h1's document of kind (last seq last, no bytes kept). */
static void expect_refused(const struct sign_keyring *kr, const char *env, enum sign_kind kind, uint64_t last,
			   enum sign_reject why)
{
	struct sign_expect want = expect_of(kind, last, NULL);

	expect_refused_w(kr, env, &want, why);
}

static void expect_verified_w(const struct sign_keyring *kr, const char *env, const struct sign_expect *want)
{
	struct sign_envelope e = { 0 };
	enum sign_reject got = SIGN_REJ__COUNT;
	struct nt_err err = { 0 };

	if (sign_verify(kr, env, strlen(env), want, &e, &got, &err) < 0)
		fail_msg("refused: %s", err.msg);
	assert_int_equal(e.doc_len, strlen(DOC));
	assert_memory_equal(e.doc, DOC, strlen(DOC));
	assert_string_equal(e.h.rollout, "r1");
	assert_string_equal(e.h.fleet, want->fleet ? want->fleet : SIGN_FLEET_DEFAULT);
	sign_envelope_release(&e);
}

static void expect_verified(const struct sign_keyring *kr, const char *env, enum sign_kind kind, uint64_t last)
{
	struct sign_expect want = expect_of(kind, last, NULL);

	expect_verified_w(kr, env, &want);
}

static void test_names(void **state)
{
	(void)state;
	for (unsigned i = 0; i < SIGN_REJ__COUNT; i++) {
		assert_non_null(sign_reject_names[i]);
		for (unsigned j = 0; j < i; j++)
			assert_string_not_equal(sign_reject_names[i], sign_reject_names[j]);
	}
	assert_true(sign_key_name_valid("ctl-2026_a"));
	assert_true(sign_key_name_valid("a"));              /* one letter is a name */
	assert_false(sign_key_name_valid(""));
	assert_false(sign_key_name_valid("Ctl"));
	assert_false(sign_key_name_valid("../x"));
	assert_false(sign_key_name_valid("a.b"));
}

/* The canonical bytes are exactly the documented form. */
static void test_canonical(void **state)
{
	struct sign_header h = header(SIGN_KIND_SHADOW, "h1", 7);
	static const char want[] = "nodetune-signed-v2\nkind shadow\nfleet f1\nhost h1\nrollout r1\nseq 7\n"
				   "expires 1800003600\npolicy-sha256 " SHA "\nlength 3\n\na\nb";
	char *c = NULL;
	size_t n = 0;

	(void)state;
	assert_int_equal(sign_canonical(&h, "a\nb", 3, &c, &n), 0);
	assert_int_equal(n, sizeof(want) - 1);
	assert_memory_equal(c, want, n);
	free(c);
	h.host[0] = '*';
	h.host[1] = '\0';
	assert_int_equal(sign_canonical(&h, "x", 1, &c, &n), -EINVAL);  /* "*" is not for a desired */
	h = header(SIGN_KIND_TIMESTAMP, "*", 1);                       /* ... timestamps and counters */
	assert_int_equal(sign_canonical(&h, "x", 1, &c, &n), 0);
	free(c);
	h.expires = 0;                                                 /* a timestamp expires */
	assert_int_equal(sign_canonical(&h, "x", 1, &c, &n), -EINVAL);
	h = header(SIGN_KIND_DESIRED, "h1", 1);                        /* so does a desired */
	h.expires = 0;
	assert_int_equal(sign_canonical(&h, "x", 1, &c, &n), -EINVAL);
	h = header(SIGN_KIND_COUNTER, "*", 1);                         /* a counter need not */
	h.expires = 0;
	assert_int_equal(sign_canonical(&h, "x", 1, &c, &n), 0);
	free(c);
	h = header(SIGN_KIND_RECORD, "*", 1);                          /* nor a class's record, for every host */
	h.expires = 0;
	assert_int_equal(sign_canonical(&h, "x", 1, &c, &n), 0);
	assert_non_null(strstr(c, "kind record\n"));
	free(c);
	h = header(SIGN_KIND_DESIRED, "h1", 1);
	snprintf(h.fleet, sizeof(h.fleet), "a fleet");
	assert_int_equal(sign_canonical(&h, "x", 1, &c, &n), -EINVAL);
	h = header(SIGN_KIND_DESIRED, "h 1", 1);
	assert_int_equal(sign_canonical(&h, "x", 1, &c, &n), -EINVAL);
	h = header(SIGN_KIND_DESIRED, "h1", 1);
	h.policy_sha256[0] = 'A';
	assert_int_equal(sign_canonical(&h, "x", 1, &c, &n), -EINVAL);
}

/* With stdin closed, the key file gets descriptor 0: still a file. */
static void keygen_stdin_closed(void)
{
	struct nt_err err = { 0 };
	int saved = dup(0);

	assert_true(saved > 0);
	close(0);
	if (sign_keygen(keys, "fd0", NULL, &err) < 0) {
		dup2(saved, 0);
		fail_msg("keygen with stdin closed: %s", err.msg);
	}
	assert_int_equal(dup2(saved, 0), 0);
	close(saved);
}

static void test_keygen_files(void **state)
{
	struct nt_err err = { 0 };
	struct sign_key k;
	struct stat st;
	char path[256];

	(void)state;
	make_key("gen", &k, false);
	snprintf(path, sizeof(path), "%s/gen.key", keys);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	snprintf(path, sizeof(path), "%s/gen.pub", keys);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0644);
	/* never over an existing pair */
	assert_int_equal(sign_keygen(keys, "gen", NULL, &err), -EEXIST);
	assert_int_equal(sign_keygen(keys, "Bad/Name", NULL, &err), -EINVAL);
	keygen_stdin_closed();
	/* a secret key readable by others is refused */
	snprintf(path, sizeof(path), "%s/gen.key", keys);
	chmod(path, 0640);
	assert_int_equal(sign_key_load(path, 0, &k, &err), -EPERM);
	assert_non_null(strstr(err.msg, "readable or writable by group or others"));
	chmod(path, 0600);
	/* a public key is not a secret key */
	snprintf(path, sizeof(path), "%s/gen.pub", keys);
	chmod(path, 0600);
	assert_int_equal(sign_key_load(path, 0, &k, &err), -EINVAL);
	sign_key_wipe(&k);
}

static void test_sign_and_verify(void **state)
{
	struct sign_key k;
	struct sign_keyring *kr;
	char *env;

	(void)state;
	make_key("ctl", &k, true);
	kr = ring();
	assert_int_equal(sign_keyring_count(kr), 1);
	assert_true(sign_keyring_has(kr, k.id));
	env = make_env(&k, SIGN_KIND_DESIRED, "h1", 5);
	expect_verified(kr, env, SIGN_KIND_DESIRED, 0);
	free(env);
	/* a policy document for any host */
	env = make_env(&k, SIGN_KIND_POLICY, "*", 0);
	expect_verified(kr, env, SIGN_KIND_POLICY, 0);
	free(env);
	sign_keyring_free(kr);
	sign_key_wipe(&k);
}

/* Replace member name of the envelope env with the JSON value val. */
static char *with_member(const char *env, const char *name, json_t *val)
{
	json_t *o = json_loads(env, 0, NULL);
	char *s;

	assert_non_null(o);
	if (val)
		json_object_set_new(o, name, val);
	else
		json_object_del(o, name);
	s = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	return s;
}

static void test_refusals(void **state)
{
	struct sign_key k, stranger;
	struct sign_keyring *kr;
	char *env, *bad, *doc64;

	(void)state;
	make_key("ctl2", &k, true);
	make_key("stranger", &stranger, false);
	kr = ring();

	/* unsigned: a bare desired document, as anyone with etcd write could put */
	expect_refused(kr, DOC, SIGN_KIND_DESIRED, 0, SIGN_REJ_UNSIGNED);
	/* malformed */
	expect_refused(kr, "not json", SIGN_KIND_DESIRED, 0, SIGN_REJ_MALFORMED);
	expect_refused(kr, "[1]", SIGN_KIND_DESIRED, 0, SIGN_REJ_MALFORMED);
	env = make_env(&k, SIGN_KIND_DESIRED, "h1", 5);
	bad = with_member(env, "nodetune_signed", json_integer(3));
	expect_refused(kr, bad, SIGN_KIND_DESIRED, 0, SIGN_REJ_MALFORMED);
	free(bad);
	bad = with_member(env, "expires", json_integer(0));            /* a desired never expiring */
	expect_refused(kr, bad, SIGN_KIND_DESIRED, 0, SIGN_REJ_MALFORMED);
	free(bad);
	bad = with_member(env, "fleet", NULL);
	expect_refused(kr, bad, SIGN_KIND_DESIRED, 0, SIGN_REJ_MALFORMED);
	free(bad);
	bad = with_member(env, "sig", json_string("AAAA"));
	expect_refused(kr, bad, SIGN_KIND_DESIRED, 0, SIGN_REJ_MALFORMED);
	free(bad);
	bad = with_member(env, "extra", json_true());
	expect_refused(kr, bad, SIGN_KIND_DESIRED, 0, SIGN_REJ_MALFORMED);
	free(bad);
	bad = with_member(env, "seq", json_integer(-1));
	expect_refused(kr, bad, SIGN_KIND_DESIRED, 0, SIGN_REJ_MALFORMED);
	free(bad);
	bad = with_member(env, "key_id", json_string("ABCDEF0123456789"));  /* not lowercase hex */
	expect_refused(kr, bad, SIGN_KIND_DESIRED, 0, SIGN_REJ_MALFORMED);
	free(bad);

	/* bad signature: the document changed after signing (a gate command
	 * slipped in), or the header (another seq) */
	doc64 = base64_encode_alloc("{\"mode\":\"gate\"}", 15);
	bad = with_member(env, "doc", json_string(doc64));
	expect_refused(kr, bad, SIGN_KIND_DESIRED, 0, SIGN_REJ_BAD_SIGNATURE);
	free(bad);
	free(doc64);
	bad = with_member(env, "seq", json_integer(6));
	expect_refused(kr, bad, SIGN_KIND_DESIRED, 0, SIGN_REJ_BAD_SIGNATURE);
	free(bad);
	/* re-addressed to h2 by a store writer: the signature breaks first */
	bad = with_member(env, "host", json_string("h2"));
	expect_refused(kr, bad, SIGN_KIND_DESIRED, 0, SIGN_REJ_BAD_SIGNATURE);
	free(bad);
	/* claiming a trusted key's id does not help the stranger */
	free(env);
	env = make_env(&stranger, SIGN_KIND_DESIRED, "h1", 5);
	expect_refused(kr, env, SIGN_KIND_DESIRED, 0, SIGN_REJ_UNKNOWN_KEY);
	bad = with_member(env, "key_id", json_string(k.id));
	expect_refused(kr, bad, SIGN_KIND_DESIRED, 0, SIGN_REJ_BAD_SIGNATURE);
	free(bad);
	free(env);

	/* authentic, but for another host, of another kind, or older */
	env = make_env(&k, SIGN_KIND_DESIRED, "h2", 5);
	expect_refused(kr, env, SIGN_KIND_DESIRED, 0, SIGN_REJ_OTHER_HOST);
	free(env);
	env = make_env(&k, SIGN_KIND_SHADOW, "h1", 5);
	expect_refused(kr, env, SIGN_KIND_DESIRED, 0, SIGN_REJ_WRONG_KIND);
	free(env);
	/* a kind for any host, but addressed to h2 rather than "*" */
	env = make_env(&k, SIGN_KIND_POLICY, "h2", 5);
	expect_refused(kr, env, SIGN_KIND_POLICY, 0, SIGN_REJ_OTHER_HOST);
	free(env);
	env = make_env(&k, SIGN_KIND_DESIRED, "h1", 4);
	expect_refused(kr, env, SIGN_KIND_DESIRED, 5, SIGN_REJ_REPLAY);
	/* neither signing nor a refusal after the parse leaks */
	assert_no_leak(20, expect_refused(kr, env, SIGN_KIND_DESIRED, 5, SIGN_REJ_REPLAY));
	assert_no_leak(20, free(make_env(&k, SIGN_KIND_DESIRED, "h1", 5)));
	free(env);
	sign_keyring_free(kr);
	sign_key_wipe(&k);
	sign_key_wipe(&stranger);
}

/* Every member of the envelope, changed after signing to another value of
 * its valid syntax, then deleted (review G3).  A change to what the
 * signature covers (each header field, the document, the signature
 * itself) is a bad signature; a change of key_id to another trusted key's
 * is one too; the version is malformed.  A deletion is malformed, except
 * of "nodetune_signed", which makes the object a bare (unsigned) one.  The
 * table lists ENVELOPE_MEMBERS entries: a member added to the envelope
 * without a row here fails the count below. */
struct tamper {
	const char *member;
	json_t *(*value)(const struct sign_key *other);  /* the changed value */
	enum sign_reject changed, deleted;
};

static json_t *t_version(const struct sign_key *o) { (void)o; return json_integer(1); }
static json_t *t_kind(const struct sign_key *o) { (void)o; return json_string("shadow"); }
static json_t *t_fleet(const struct sign_key *o) { (void)o; return json_string("f2"); }
static json_t *t_host(const struct sign_key *o) { (void)o; return json_string("h2"); }
static json_t *t_rollout(const struct sign_key *o) { (void)o; return json_string("r2"); }
static json_t *t_seq(const struct sign_key *o) { (void)o; return json_integer(6); }
static json_t *t_expires(const struct sign_key *o) { (void)o; return json_integer((json_int_t)NOW + 7200); }
static json_t *t_sha(const struct sign_key *o)
{
	(void)o;
	return json_string("fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210");
}
static json_t *t_key_id(const struct sign_key *o) { return json_string(o->id); }

static json_t *t_sig(const struct sign_key *o)
{
	unsigned char sig[SIGN_SIG_BYTES] = { 0 };
	char *b64;
	json_t *v;

	(void)o;
	sig[0] = 1;              /* 64 bytes, valid base64: not the signature */
	b64 = base64_encode_alloc((const char *)sig, sizeof(sig));
	v = json_string(b64);
	free(b64);
	return v;
}

static json_t *t_doc(const struct sign_key *o)
{
	char *b64 = base64_encode_alloc(DOC " ", strlen(DOC) + 1);   /* one byte more */
	json_t *v = json_string(b64);

	(void)o;
	free(b64);
	return v;
}

static const struct tamper tampers[] = {
	{ "nodetune_signed", t_version, SIGN_REJ_MALFORMED, SIGN_REJ_UNSIGNED },
	{ "kind", t_kind, SIGN_REJ_BAD_SIGNATURE, SIGN_REJ_MALFORMED },
	{ "fleet", t_fleet, SIGN_REJ_BAD_SIGNATURE, SIGN_REJ_MALFORMED },
	{ "host", t_host, SIGN_REJ_BAD_SIGNATURE, SIGN_REJ_MALFORMED },
	{ "rollout", t_rollout, SIGN_REJ_BAD_SIGNATURE, SIGN_REJ_MALFORMED },
	{ "seq", t_seq, SIGN_REJ_BAD_SIGNATURE, SIGN_REJ_MALFORMED },
	{ "expires", t_expires, SIGN_REJ_BAD_SIGNATURE, SIGN_REJ_MALFORMED },
	{ "policy_sha256", t_sha, SIGN_REJ_BAD_SIGNATURE, SIGN_REJ_MALFORMED },
	{ "key_id", t_key_id, SIGN_REJ_BAD_SIGNATURE, SIGN_REJ_MALFORMED },
	{ "sig", t_sig, SIGN_REJ_BAD_SIGNATURE, SIGN_REJ_MALFORMED },
	{ "doc", t_doc, SIGN_REJ_BAD_SIGNATURE, SIGN_REJ_MALFORMED },
};

static void test_tamper_each_member(void **state)
{
	struct sign_key k, other;
	struct sign_keyring *kr;
	json_t *o;
	char *env, *bad;

	(void)state;
	make_key("ctl", &k, true);
	make_key("other", &other, true);    /* trusted too: key_id names a key the ring holds */
	kr = ring();
	env = make_env(&k, SIGN_KIND_DESIRED, "h1", 5);
	expect_verified(kr, env, SIGN_KIND_DESIRED, 0);
	assert_non_null(o = json_loads(env, 0, NULL));
	assert_int_equal(json_object_size(o), sizeof(tampers) / sizeof(tampers[0]));   /* a row per member */
	for (size_t i = 0; i < sizeof(tampers) / sizeof(tampers[0]); i++) {
		const struct tamper *t = &tampers[i];
		json_t *v = tampers[i].value(&other);

		assert_non_null(json_object_get(o, t->member));
		assert_false(json_equal(v, json_object_get(o, t->member)));   /* really changed */
		print_message("tamper %s: changed, then deleted\n", t->member);
		bad = with_member(env, t->member, v);
		expect_refused(kr, bad, SIGN_KIND_DESIRED, 0, t->changed);
		free(bad);
		bad = with_member(env, t->member, NULL);
		expect_refused(kr, bad, SIGN_KIND_DESIRED, 0, t->deleted);
		free(bad);
	}
	json_decref(o);
	free(env);
	sign_keyring_free(kr);
	sign_key_wipe(&k);
	sign_key_wipe(&other);
}

/* The fuzz target's signed seeds (tests/fuzz/corpus/sign/signed-*.json,
 * written by tests/fuzz/make-sign-seeds.py with the key of fuzz_sign.c's
 * FUZZ_SEED) verify with that key as the kind the target asks for: the
 * fuzzer starts past the key lookup and the signature check (review B23).
 * A seed gone stale (the envelope or the canonical form changed) fails
 * here rather than leaving the fuzzer outside verification. */
static void test_fuzz_seeds(void **state)
{
	static const struct { const char *file; enum sign_kind kind; const char *host; } seeds[] = {
		{ "signed-desired.json", SIGN_KIND_DESIRED, "h1" }, { "signed-shadow.json", SIGN_KIND_SHADOW, "h1" },
		{ "signed-policy.json", SIGN_KIND_POLICY, "h1" }, { "signed-rollout.json", SIGN_KIND_ROLLOUT, "*" },
		{ "signed-counter.json", SIGN_KIND_COUNTER, "*" },
		{ "signed-timestamp.json", SIGN_KIND_TIMESTAMP, "h1" },
		{ "signed-record.json", SIGN_KIND_RECORD, "h1" },
	};
	const unsigned char *seed = (const unsigned char *)"nodetune fuzz_sign fixed seed!!!";   /* FUZZ_SEED */
	struct sign_keyring *kr;
	struct nt_err err = { 0 };
	struct sign_key k;

	(void)state;
	assert_int_equal(sign_key_from_seed(seed, &k, &err), 0);
	assert_non_null(kr = sign_keyring_of(&k, &err));
	for (size_t i = 0; i < sizeof(seeds) / sizeof(seeds[0]); i++) {
		struct sign_expect want = { .kind = seeds[i].kind, .host = seeds[i].host, .now = NOW };
		struct sign_envelope e = { 0 };
		enum sign_reject why = SIGN_REJ__COUNT;
		char rel[128], path[512], buf[8192];
		FILE *f;
		size_t n;

		snprintf(rel, sizeof(rel), "tests/fuzz/corpus/sign/%s", seeds[i].file);
		assert_non_null(f = fopen(test_path(path, sizeof(path), rel), "r"));
		n = fread(buf, 1, sizeof(buf), f);
		fclose(f);
		assert_true(n > 0 && n < sizeof(buf));
		if (sign_verify(kr, buf, n, &want, &e, &why, &err) < 0)
			fail_msg("%s: %s", rel, err.msg);
		assert_string_equal(e.key_id, k.id);
		sign_envelope_release(&e);
	}
	sign_keyring_free(kr);
	sign_key_wipe(&k);
}

/* The rollout document's kind: addressed to no host ("*"), verified as
 * a rollout only; a host expecting a desired refuses it (wrong_kind). */
static void test_rollout_kind(void **state)
{
	struct sign_key k;
	struct sign_keyring *kr;
	struct sign_envelope e = { 0 };
	enum sign_reject why;
	struct nt_err err = { 0 };
	char *env;

	(void)state;
	assert_string_equal(sign_kind_names[SIGN_KIND_ROLLOUT], "rollout");
	make_key("ctl", &k, true);
	env = make_env(&k, SIGN_KIND_ROLLOUT, "*", 4);
	kr = ring();
	assert_int_equal(sign_verify(kr, env, strlen(env), &(struct sign_expect){ .kind = SIGN_KIND_ROLLOUT, .host = "*", .fleet = FLEET }, &e, &why,
				     &err), 0);
	assert_string_equal(e.h.host, "*");
	sign_envelope_release(&e);
	expect_refused(kr, env, SIGN_KIND_DESIRED, 0, SIGN_REJ_WRONG_KIND);
	expect_refused(kr, env, SIGN_KIND_POLICY, 0, SIGN_REJ_WRONG_KIND);
	sign_keyring_free(kr);
	free(env);
	sign_key_wipe(&k);
}

/* sign_key_from_seed is the key file's key; sign_keyring_with adds a key
 * to a loaded keyring once, which then verifies its documents. */
static void test_seed_and_keyring_with(void **state)
{
	unsigned char seed[SIGN_SEED_BYTES], *raw;
	struct sign_key file, seeded, other;
	struct sign_keyring *kr, *with, *twice;
	struct nt_err err = { 0 };
	char path[256], *buf = NULL, *env;
	size_t len = 0, n = 0;
	FILE *f;

	(void)state;
	make_key("ctl", &file, true);
	snprintf(path, sizeof(path), "%s/ctl.key", keys);
	assert_non_null(f = fopen(path, "r"));
	assert_true(getline(&buf, &len, f) > 0);
	fclose(f);
	buf[strcspn(buf, "\n")] = '\0';
	assert_int_equal(base64_decode(strchr(buf, ' ') + 1, strlen(strchr(buf, ' ') + 1), (char **)&raw, &n), 0);
	assert_int_equal(n, SIGN_SEED_BYTES);
	memcpy(seed, raw, n);
	free(raw);
	free(buf);
	assert_int_equal(sign_key_from_seed(seed, &seeded, &err), 0);
	assert_string_equal(seeded.id, file.id);
	assert_memory_equal(seeded.sk, file.sk, SIGN_SK_BYTES);
	memset(seed, 7, sizeof(seed));
	assert_int_equal(sign_key_from_seed(seed, &other, &err), 0);
	kr = ring();
	with = sign_keyring_with(kr, &other, &err);
	twice = sign_keyring_with(with, &other, &err);
	assert_non_null(with);
	assert_non_null(twice);
	assert_int_equal(sign_keyring_count(with), 2);
	assert_int_equal(sign_keyring_count(twice), 2);
	assert_true(sign_keyring_has(with, other.id) && sign_keyring_has(with, file.id));
	assert_int_equal(sign_keyring_count(kr), 1);             /* the base is left as it was */
	env = make_env(&other, SIGN_KIND_DESIRED, "h1", 1);
	expect_verified(with, env, SIGN_KIND_DESIRED, 0);
	expect_refused(kr, env, SIGN_KIND_DESIRED, 0, SIGN_REJ_UNKNOWN_KEY);
	free(env);
	sign_keyring_free(twice);
	sign_keyring_free(with);
	sign_keyring_free(kr);
	sign_key_wipe(&file);
	sign_key_wipe(&seeded);
	sign_key_wipe(&other);
}

/* A version 1 envelope (no fleet, no expiry; the old header) is refused
 * as malformed, whoever signed it. */
static void test_v1_refused(void **state)
{
	static const char v1[] = "{\"nodetune_signed\":1,\"kind\":\"desired\",\"host\":\"h1\",\"rollout\":\"r1\","
				 "\"seq\":4,\"policy_sha256\":\"" SHA "\",\"key_id\":\"30cec22d3945fd15\","
				 "\"sig\":\"AAAA\",\"doc\":\"e30=\"}";
	struct sign_envelope e = { 0 };
	enum sign_reject why = SIGN_REJ__COUNT;
	struct nt_err err = { 0 };

	(void)state;
	assert_int_equal(sign_envelope_parse(v1, strlen(v1), &e, &why, &err), -EPERM);
	assert_int_equal(why, SIGN_REJ_MALFORMED);
	assert_non_null(strstr(err.msg, "version 1"));
}

/* Freshness and identity: another fleet's document, an expired one, an
 * equal seq with other bytes (a replay) and with the same bytes (the same
 * document read again: admitted, even past its expiry). */
static void test_fresh(void **state)
{
	struct sign_header h = header(SIGN_KIND_DESIRED, "h1", 7);
	struct sign_expect want = expect_of(SIGN_KIND_DESIRED, 0, NULL);
	char *env, *other, sha[SIGN_SHA_LEN + 1], sha2[SIGN_SHA_LEN + 1];
	struct sign_keyring *kr, *own;
	struct nt_err err = { 0 };
	struct sign_key k;

	(void)state;
	make_key("fresh", &k, true);
	kr = ring();
	/* one key, two fleets: staging's document is not prod's */
	snprintf(h.fleet, sizeof(h.fleet), "staging");
	env = make_env_h(&k, &h);
	expect_refused_w(kr, env, &want, SIGN_REJ_OTHER_FLEET);
	want.fleet = "staging";
	expect_verified_w(kr, env, &want);
	want.fleet = NULL;                              /* a host given none is of "default" */
	expect_refused_w(kr, env, &want, SIGN_REJ_OTHER_FLEET);
	free(env);
	/* expired: an hour before the verifier's clock */
	h = header(SIGN_KIND_DESIRED, "h1", 7);
	h.expires = (int64_t)NOW - 3600;
	env = make_env_h(&k, &h);
	want = expect_of(SIGN_KIND_DESIRED, 0, NULL);
	expect_refused_w(kr, env, &want, SIGN_REJ_EXPIRED);
	/* ... unless it is the very document admitted last: it runs */
	sign_value_sha(env, strlen(env), sha);
	want = expect_of(SIGN_KIND_DESIRED, 7, sha);
	expect_verified_w(kr, env, &want);
	free(env);
	/* an equal seq: the same bytes are the same document; other bytes
	 * (another document signed at that seq, re-signed) are a replay */
	h = header(SIGN_KIND_DESIRED, "h1", 7);
	env = make_env_h(&k, &h);
	h.expires++;
	other = make_env_h(&k, &h);
	sign_value_sha(env, strlen(env), sha);
	sign_value_sha(other, strlen(other), sha2);
	assert_string_not_equal(sha, sha2);
	want = expect_of(SIGN_KIND_DESIRED, 7, sha);
	expect_verified_w(kr, env, &want);
	expect_refused_w(kr, other, &want, SIGN_REJ_REPLAY);
	want = expect_of(SIGN_KIND_DESIRED, 7, NULL);   /* no bytes kept: an equal seq is refused */
	expect_refused_w(kr, env, &want, SIGN_REJ_REPLAY);
	want = expect_of(SIGN_KIND_DESIRED, 6, sha);    /* newer: admitted */
	expect_verified_w(kr, other, &want);
	free(env);
	free(other);
	/* a counter verifies with the controller's own key alone */
	h = header(SIGN_KIND_COUNTER, "*", 9);
	h.expires = 0;
	env = make_env_h(&k, &h);
	own = sign_keyring_of(&k, &err);
	assert_non_null(own);
	assert_int_equal(sign_keyring_count(own), 1);
	want = expect_of(SIGN_KIND_COUNTER, 0, NULL);
	expect_verified_w(own, env, &want);
	free(env);
	sign_keyring_free(own);
	sign_keyring_free(kr);
	sign_key_wipe(&k);
}

/* Two trusted keys (rotation): both verify; once the old one's .pub is
 * removed, its documents are unknown. */
static void test_rotation(void **state)
{
	struct sign_key old, new;
	struct sign_keyring *kr;
	char *env_old, *env_new, path[256];

	(void)state;
	make_key("old", &old, true);
	make_key("new", &new, true);
	env_old = make_env(&old, SIGN_KIND_DESIRED, "h1", 1);
	env_new = make_env(&new, SIGN_KIND_DESIRED, "h1", 2);
	kr = ring();
	expect_verified(kr, env_old, SIGN_KIND_DESIRED, 0);
	expect_verified(kr, env_new, SIGN_KIND_DESIRED, 0);
	sign_keyring_free(kr);
	snprintf(path, sizeof(path), "%s/old.pub", trusted);
	assert_int_equal(unlink(path), 0);
	kr = ring();
	expect_refused(kr, env_old, SIGN_KIND_DESIRED, 0, SIGN_REJ_UNKNOWN_KEY);
	expect_verified(kr, env_new, SIGN_KIND_DESIRED, 0);
	sign_keyring_free(kr);
	free(env_old);
	free(env_new);
	sign_key_wipe(&old);
	sign_key_wipe(&new);
}

static void test_keyring_errors(void **state)
{
	struct nt_err err = { 0 };
	char path[256];

	(void)state;
	assert_null(sign_keyring_load("/nonexistent-nodetune", 0, &err));
	assert_int_equal(err.code, -ENOENT);
	/* a .pub that is not a key fails the whole directory */
	assert_int_equal(test_write(trusted, "junk.pub", "ssh-ed25519 AAAA\n"), 0);
	assert_null(sign_keyring_load(trusted, 0, &err));
	assert_int_equal(err.code, -EINVAL);
	assert_non_null(strstr(err.msg, "junk.pub"));
	assert_no_leak(20, assert_null(sign_keyring_load(trusted, 0, &err)));
	snprintf(path, sizeof(path), "%s/junk.pub", trusted);
	unlink(path);
	/* other names are not keys */
	assert_int_equal(test_write(trusted, "README", "not a key"), 0);
	/* the trust rule: a group-writable directory or key file */
	chmod(trusted, 0775);
	assert_null(sign_keyring_load(trusted, SIGN_TRUSTED_ONLY, &err));
	assert_int_equal(err.code, -EPERM);
	assert_non_null(strstr(err.msg, "writable by group or others"));
	chmod(trusted, 0755);
	if (geteuid() != 0) {
		test_skip_host("root", "not root: chown to another owner needs root");
	}
	assert_int_equal(test_write(trusted, "x.pub", "nodetune-ed25519-pub AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n"),
			 0);
	snprintf(path, sizeof(path), "%s/x.pub", trusted);
	assert_int_equal(chown(path, 65534, 65534), 0);
	assert_null(sign_keyring_load(trusted, SIGN_TRUSTED_ONLY, &err));
	assert_int_equal(err.code, -EPERM);
	assert_non_null(strstr(err.msg, "not owned by root (uid 65534"));
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_canonical),
		cmocka_unit_test_setup_teardown(test_keygen_files, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sign_and_verify, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refusals, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tamper_each_member, setup, teardown),
		cmocka_unit_test(test_fuzz_seeds),
		cmocka_unit_test(test_v1_refused),
		cmocka_unit_test_setup_teardown(test_fresh, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rotation, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rollout_kind, setup, teardown),
		cmocka_unit_test_setup_teardown(test_seed_and_keyring_with, setup, teardown),
		cmocka_unit_test_setup_teardown(test_keyring_errors, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
