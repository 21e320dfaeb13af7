/* SPDX-License-Identifier: MIT */
/* fuzz_sign.c — libFuzzer target: the signed envelope of a fleet document
 * (sign.h) over arbitrary bytes, what a host reads from its desired and
 * shadow keys and the policies, and what the controller reads back from a
 * rollout key.  A parse that succeeds must hold a valid header (its
 * canonical bytes can be formed), a 16-digit key id and the document's
 * bytes NUL-terminated; a refusal is -EPERM with a reason in range and a
 * one-line message, or -ENOMEM.  Verification against a keyring of no key
 * never succeeds.
 *
 * Past "no key": a keyring holding a fixed test key pair (FUZZ_SEED, made
 * with sign_key_from_seed), with seeds in tests/fuzz/corpus/sign/ that it
 * signed (tests/fuzz/make-sign-seeds.py writes them: a desired, a shadow,
 * a policy and a rollout document), so the fuzzer reaches the signature
 * check and the documents' parsers.  Each input is verified as a desired
 * and a shadow for h1 (last seq 3), a policy and a rollout; one that verifies must be
 * signed by that key, of the kind and host asked, not older than the last
 * seq, the very bytes the key signed (signed again, the same signature),
 * and its document is parsed as the host or controller would.
 * tests/unit/fleet/test_sign.c (test_fuzz_seeds) checks that every signed
 * seed verifies, so the fuzzer starts past the signature check. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fleet/fleet_doc.h"
#include "fleet/sign.h"
#include "fleet/sign_test.h"

#define FUZZ_SEED "nodetune fuzz_sign fixed seed!!!"   /* 32 bytes: the test key pair */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int has_ctrl(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return 1;
	return 0;
}

static void check_refusal(int rc, enum sign_reject why, const struct nt_err *err)
{
	if (rc == -ENOMEM)
		return;
	if (rc != -EPERM || err->code != rc || (unsigned)why >= SIGN_REJ__COUNT || has_ctrl(err->msg))
		__builtin_trap();
}

static struct sign_key key;

/* The keyrings, made once: [0] no key, [1] the test key. */
static struct sign_keyring **rings(void)
{
	static struct sign_keyring *kr[2];
	_Static_assert(sizeof(FUZZ_SEED) - 1 == SIGN_SEED_BYTES, "a seed of 32 bytes");

	if (!kr[1] && sign_key_from_seed((const unsigned char *)FUZZ_SEED, &key, NULL) == 0) {
		kr[0] = sign_keyring_with(NULL, NULL, NULL);
		kr[1] = sign_keyring_with(NULL, &key, NULL);
	}
	return kr;
}

/* The document of a verified envelope, parsed as its reader would. */
static void parse_doc(const struct sign_envelope *e)
{
	struct fleet_policy_doc p = { 0 };
	struct fleet_rollout r = { 0 };
	struct fleet_stamp st;
	struct fleet_desired d;
	struct nt_err err = { 0 };

	switch (e->h.kind) {
	case SIGN_KIND_DESIRED:
	case SIGN_KIND_SHADOW:
	case SIGN_KIND_RECORD:
		fleet_doc_parse_desired("k", e->doc, e->doc_len, &d, &err);
		break;
	case SIGN_KIND_POLICY:
		fleet_doc_parse_policy_doc("k", e->doc, e->doc_len, &p, &err);
		fleet_policy_doc_release(&p);
		break;
	case SIGN_KIND_ROLLOUT:
		if (fleet_doc_parse_rollout("k", e->doc, e->doc_len, &r, &err) == 0)
			free(fleet_rollout_json(&r));
		fleet_rollout_release(&r);
		break;
	case SIGN_KIND_COUNTER:
	case SIGN_KIND_TIMESTAMP:
		if (fleet_doc_parse_stamp("k", e->doc, e->doc_len, &st, &err) == 0)
			free(fleet_stamp_json(&st));
		break;
	case SIGN_KIND__COUNT:
		__builtin_trap();
	}
}

/* What was accepted is what the key signed: Ed25519 is deterministic, so
 * signing the verified header and document again gives the very signature
 * the envelope carried, and only for those bytes (review B23). */
static void same_as_signed(const struct sign_envelope *e)
{
	struct sign_envelope again = { 0 };
	enum sign_reject why;
	char *json = NULL;

	if (sign_envelope_make(&key, &e->h, e->doc, e->doc_len, &json, NULL) < 0)
		__builtin_trap();
	if (sign_envelope_parse(json, strlen(json), &again, &why, NULL) < 0 ||
	    memcmp(again.sig, e->sig, SIGN_SIG_BYTES) || again.doc_len != e->doc_len ||
	    memcmp(again.doc, e->doc, e->doc_len))
		__builtin_trap();
	sign_envelope_release(&again);
	free(json);
}

/* Verify buf as what want asks, with the test key. */
static void verify_as(const struct sign_keyring *kr, const char *buf, size_t size, const struct sign_expect *want)
{
	struct sign_envelope e = { 0 };
	enum sign_reject why = SIGN_REJ__COUNT;
	struct nt_err err = { 0 };
	int rc = sign_verify(kr, buf, size, want, &e, &why, &err);

	if (rc < 0) {
		check_refusal(rc, why, &err);
		return;
	}
	if (e.h.kind != want->kind || strcmp(e.key_id, key.id) || e.h.seq < want->last_seq ||
	    (strcmp(e.h.host, want->host) && strcmp(e.h.host, "*")) || e.doc[e.doc_len] != '\0')
		__builtin_trap();
	same_as_signed(&e);
	parse_doc(&e);
	sign_envelope_release(&e);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct sign_expect wants[] = {
		{ .kind = SIGN_KIND_DESIRED, .host = "h1", .last_seq = 3 },
		{ .kind = SIGN_KIND_SHADOW, .host = "h1", .last_seq = 3 },
		{ .kind = SIGN_KIND_POLICY, .host = "h1" }, { .kind = SIGN_KIND_ROLLOUT, .host = "*" },
		{ .kind = SIGN_KIND_COUNTER, .host = "*" }, { .kind = SIGN_KIND_TIMESTAMP, .host = "h1" },
		{ .kind = SIGN_KIND_RECORD, .host = "h1" },
	};
	const char *buf = (const char *)data;
	struct sign_keyring **kr = rings();
	struct sign_envelope e = { 0 };
	enum sign_reject why = SIGN_REJ__COUNT;
	struct nt_err err = { 0 };
	char *canon = NULL;
	size_t clen = 0;
	int rc;

	rc = sign_envelope_parse(buf, size, &e, &why, &err);
	if (rc == 0) {
		if (strlen(e.key_id) != SIGN_ID_LEN || e.doc[e.doc_len] != '\0' || e.doc_len > SIGN_DOC_MAX)
			__builtin_trap();
		if (sign_canonical(&e.h, e.doc, e.doc_len, &canon, &clen) == -EINVAL)
			__builtin_trap();
		free(canon);
	} else {
		check_refusal(rc, why, &err);
	}
	sign_envelope_release(&e);
	if (!kr[0] || !kr[1])
		return 0;
	why = SIGN_REJ__COUNT;
	rc = sign_verify(kr[0], buf, size, &wants[0], &e, &why, &err);
	if (rc == 0)
		__builtin_trap();
	check_refusal(rc, why, &err);
	for (size_t i = 0; i < sizeof(wants) / sizeof(wants[0]); i++)
		verify_as(kr[1], buf, size, &wants[i]);
	return 0;
}
