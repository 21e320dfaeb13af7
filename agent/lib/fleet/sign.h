/* SPDX-License-Identifier: MIT */
/* sign.h — signed fleet documents: Ed25519 key pairs (libsodium), the
 * signed envelope a controller stores instead of a bare desired, shadow or
 * policy document, and its verification against the trusted keys of a
 * directory (/etc/nodetune/fleet-keys.d/NAME.pub), with one named reason for
 * each refusal (nodetune_fleet_rejected_total{reason}).
 *
 * Key files (one line of text each):
 *   NAME.pub   "nodetune-ed25519-pub BASE64\n"     the 32-byte public key
 *   NAME.key   "nodetune-ed25519-secret BASE64\n"  the 32-byte seed; mode 0600
 * A key's id is the first 8 bytes of the sha256 of its public key, in
 * lowercase hex (16 digits).
 *
 * What is signed (the canonical form): a fixed-format header of text lines,
 * then the document's exact bytes, with no re-serialization:
 *
 *   "nodetune-signed-v2\n"
 *   "kind "    KIND    "\n"   desired | shadow | policy | rollout | counter | timestamp | record
 *   "fleet "   FLEET   "\n"   the fleet's id (a fleet name): a host admits its own fleet's only
 *   "host "    HOST    "\n"   a fleet name, or "*" (policy, rollout, counter, timestamp: any host)
 *   "rollout " ROLLOUT "\n"   a fleet name ("none" for a counter or a timestamp)
 *   "seq "     SEQ     "\n"   decimal, no leading zero, 0..2^63-1: the controller's counter
 *   "expires " EXPIRES "\n"   UNIX seconds, decimal; 0 (never) for policy, counter, rollout and record only
 *   "policy-sha256 " SHA "\n" 64 lowercase hex digits
 *   "length "  LEN     "\n"   decimal byte count of the document
 *   "\n"
 *   DOCUMENT (LEN bytes)
 *
 * Every header field has a strict syntax without spaces or newlines, so the
 * header of given fields has exactly one form.  The signature is Ed25519
 * (detached, 64 bytes) over those bytes.
 *
 * Version 1 (before the fleet id and the expiry) is no longer accepted:
 * its documents carry neither, so a host cannot tell another fleet's or a
 * withheld one; a controller of this version signs them again at its next
 * step.
 *
 * The envelope (the store value): one JSON object,
 *   {"nodetune_signed":2,"kind":K,"fleet":F,"host":H,"rollout":R,"seq":N,
 *    "expires":E,"policy_sha256":S,"key_id":ID,"sig":BASE64(64 bytes),
 *    "doc":BASE64(document)}
 * The document travels as base64 of its bytes, so the verifier checks the
 * very bytes it then parses.  A JSON object without "nodetune_signed" is an
 * unsigned document (a bare desired of before signing, or a forgery).
 *
 * Everything read from the store is untrusted; the parser checks types,
 * bounds and names.  Nothing here prints or exits.
 */
#ifndef NODETUNE_SIGN_H
#define NODETUNE_SIGN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/log.h"

#define SIGN_KEYS_DIR "/etc/nodetune/fleet-keys.d"
#define SIGN_ID_LEN 16                 /* hex digits of a key id */
#define SIGN_PK_BYTES 32
#define SIGN_SK_BYTES 64               /* libsodium's secret key: seed + public key */
#define SIGN_SEED_BYTES 32             /* what a secret key file holds */
#define SIGN_SIG_BYTES 64
#define SIGN_SHA_LEN 64                /* hex digits of a sha256 */
#define SIGN_NAME_MAX 64               /* host and rollout names, with the NUL (FLEET_NAME_MAX) */
#define SIGN_DOC_MAX (2u << 20)        /* a signed document's bytes */
#define SIGN_KEYS_MAX 64               /* trusted keys in a directory */
#define SIGN_FLEET_DEFAULT "default"   /* the fleet id of a host or controller not given one */
#define SIGN_NO_ROLLOUT "none"           /* the rollout field of a counter or a timestamp */

/* Trust flag of sign_keyring_load and sign_key_load: refuse files (and
 * the key directory) not owned by root or writable by group or others,
 * the rule of a root process (pass POLICY_TRUSTED_ONLY's meaning:
 * policy_trust_flags() gives it as root). */
#define SIGN_TRUSTED_ONLY 0x1

/* rollout: the controller's own state (/nodetune/rollouts/NAME), host "*",
 * signed by the controller and verified by it on every read; no host acts
 * on one (it expects another kind: wrong_kind).  counter: the controller's
 * seq (/nodetune/seq); timestamp: its proof of life, re-signed on a
 * schedule (/nodetune/timestamp).  record: a hardware class's policy of
 * record (/nodetune/classes/CLASS/record), host "*", no expiry: a desired
 * document (mode apply) the controller writes when a rollout ends done; a
 * host follows it when it is newer (its seq) than the host's desired. */
enum sign_kind {
	SIGN_KIND_DESIRED, SIGN_KIND_SHADOW, SIGN_KIND_POLICY, SIGN_KIND_ROLLOUT, SIGN_KIND_COUNTER,
	SIGN_KIND_TIMESTAMP, SIGN_KIND_RECORD, SIGN_KIND__COUNT
};
/* "desired", "shadow", "policy", "rollout", "counter", "timestamp" */
extern const char *const sign_kind_names[SIGN_KIND__COUNT];

/* Why a document was refused, by the reason a metric counts it under. */
enum sign_reject {
	SIGN_REJ_UNSIGNED,       /* no envelope: a bare document */
	SIGN_REJ_MALFORMED,      /* an envelope that does not parse (types, names, base64, sizes) */
	SIGN_REJ_UNKNOWN_KEY,    /* signed by a key not in the trusted directory */
	SIGN_REJ_BAD_SIGNATURE,  /* the signature does not verify with the key it names */
	SIGN_REJ_OTHER_HOST,     /* verified, but addressed to another host */
	SIGN_REJ_WRONG_KIND,     /* verified, but of another kind (a shadow stored as desired) */
	SIGN_REJ_REPLAY,         /* verified, but its seq is older than the last one admitted, or
				    equal to it with other bytes */
	SIGN_REJ_OTHER_FLEET,    /* verified, but signed for another fleet */
	SIGN_REJ_EXPIRED,        /* verified, but past its expiry */
	SIGN_REJ__COUNT
};
/* "unsigned", "malformed", "unknown_key", "bad_signature", "other_host",
 * "wrong_kind", "replay", "other_fleet", "expired": the label values of the
 * metric. */
extern const char *const sign_reject_names[SIGN_REJ__COUNT];

/* What a signature covers besides the document. */
struct sign_header {
	enum sign_kind kind;
	char fleet[SIGN_NAME_MAX];
	char host[SIGN_NAME_MAX];        /* "*" only for policy, rollout, counter, timestamp */
	char rollout[SIGN_NAME_MAX];     /* SIGN_NO_ROLLOUT for counter, timestamp */
	uint64_t seq;                    /* <= INT64_MAX (a JSON integer) */
	int64_t expires;                 /* UNIX seconds; 0: never (policy, counter only) */
	char policy_sha256[SIGN_SHA_LEN + 1];
};

/* A secret key in memory.  sign_key_wipe clears it. */
struct sign_key {
	unsigned char sk[SIGN_SK_BYTES];
	unsigned char pk[SIGN_PK_BYTES];
	char id[SIGN_ID_LEN + 1];
};

/* The trusted public keys (opaque). */
struct sign_keyring;

/* A parsed envelope.  doc is owned (doc_len bytes and a NUL). */
struct sign_envelope {
	struct sign_header h;
	char key_id[SIGN_ID_LEN + 1];
	unsigned char sig[SIGN_SIG_BYTES];
	char *doc;
	size_t doc_len;
};

/* What the verifier expects of a document. */
struct sign_expect {
	enum sign_kind kind;
	const char *host;                /* this host's name */
	uint64_t last_seq;               /* the seq last admitted; a lower one is a replay (0: none yet) */
	const char *fleet;               /* this host's fleet id (NULL: SIGN_FLEET_DEFAULT) */
	double now;                      /* wall clock, UNIX seconds: against the expiry */
	const char *last_sha;            /* sign_value_sha of the document admitted at last_seq (NULL or
					    "": none); an equal seq is admitted only with those bytes */
};

/* ---- keys ------------------------------------------------------------------ */

/* Make a key pair and write DIR/NAME.key (mode 0600) and DIR/NAME.pub (mode
 * 0644), neither of which may exist (O_EXCL: nothing is overwritten).
 * ret_id (may be NULL) receives the key id.  Returns 0; -EINVAL (a bad
 * name), -EEXIST, -ENOENT/-EACCES (the directory), -EIO, -ENOMEM, with
 * err; on error no file is left behind. */
int sign_keygen(const char *dir, const char *name, char ret_id[SIGN_ID_LEN + 1], struct nt_err *err);

/* Load a secret key file.  It must be a regular file not readable or
 * writable by group or others, and with SIGN_TRUSTED_ONLY owned by root.
 * Returns 0 and fills *ret; or -ENOENT/-EACCES, -EPERM (its mode or
 * owner), -EINVAL (not a key file), -ENOMEM, with err naming path; *ret
 * untouched on error. */
int sign_key_load(const char *path, unsigned flags, struct sign_key *ret, struct nt_err *err);

/* The key pair of a 32-byte seed (what sign_key_load reads from a key
 * file; tests and the fuzz target make fixed keys with it).  Returns 0 and
 * fills *ret, or -ENOMEM (libsodium would not start) with err. */
int sign_key_from_seed(const unsigned char seed[SIGN_SEED_BYTES], struct sign_key *ret, struct nt_err *err);

/* Clear a secret key (sodium_memzero). */
void sign_key_wipe(struct sign_key *k);

/* Load every DIR/NAME.pub (other names are ignored; at most SIGN_KEYS_MAX).
 * With SIGN_TRUSTED_ONLY the directory and each file must be owned by root
 * and not writable by group or others.  A directory without a .pub is a
 * keyring of no key (every document is then refused as unknown_key).
 * Returns the keyring, or NULL with err: -ENOENT/-EACCES/-ENOTDIR (the
 * directory), -EPERM (untrusted directory or file), -EINVAL (a .pub that
 * is not a public key, or two files of one key), -E2BIG (too many),
 * -ENOMEM.  One bad file fails the whole load: a host never half-trusts. */
struct sign_keyring *sign_keyring_load(const char *dir, unsigned flags, struct nt_err *err);

/* The keys it holds. */
unsigned sign_keyring_count(const struct sign_keyring *kr);

/* Does it hold the key of id? */
bool sign_keyring_has(const struct sign_keyring *kr, const char *id);

/* A new keyring of base's keys (NULL: none) and k's public key (NULL:
 * none; not added twice): what a controller verifies its own documents
 * with.  NULL with err: -E2BIG (past SIGN_KEYS_MAX), -ENOMEM. */
struct sign_keyring *sign_keyring_with(const struct sign_keyring *base, const struct sign_key *k,
				       struct nt_err *err);

/* Free; NULL is a no-op. */
void sign_keyring_free(struct sign_keyring *kr);

/* A keyring of k's public key alone (a controller verifying what it signed
 * itself: its counter).  NULL with err on out of memory. */
struct sign_keyring *sign_keyring_of(const struct sign_key *k, struct nt_err *err);

/* Is s a fleet id (a fleet name: [A-Za-z0-9._-], 1 to 63 bytes)? */
bool sign_fleet_valid(const char *s);

/* The sha256 of a store value buf[0..len), in lowercase hex, into ret:
 * what a host keeps of the last document it admitted (an equal seq is the
 * same document only with the same bytes). */
void sign_value_sha(const char *buf, size_t len, char ret[SIGN_SHA_LEN + 1]);

/* ---- signing ----------------------------------------------------------------- */

/* Sign doc[0..len) with h by k: the envelope's JSON text, malloc'd, in
 * *ret_json.  Returns 0, -EINVAL (a bad header field, too large, with
 * err) or -ENOMEM; *ret_json untouched on error. */
int sign_envelope_make(const struct sign_key *k, const struct sign_header *h, const char *doc, size_t len,
		       char **ret_json, struct nt_err *err);

/* ---- verifying --------------------------------------------------------------- */

/* Parse an envelope: buf[0..len) (untrusted; need not be NUL-terminated).
 * Returns 0 and fills *ret (release with sign_envelope_release); or -EPERM
 * with *ret_reason SIGN_REJ_UNSIGNED (a JSON object without
 * "nodetune_signed") or SIGN_REJ_MALFORMED (anything else), or -ENOMEM;
 * err says what, in one line without the document's bytes.  *ret is
 * untouched on error. */
int sign_envelope_parse(const char *buf, size_t len, struct sign_envelope *ret,
			enum sign_reject *ret_reason, struct nt_err *err);

/* Release what e owns; zeroes it.  A zeroed envelope is a no-op. */
void sign_envelope_release(struct sign_envelope *e);

/* Verify the store value buf[0..len) against the keyring and what the
 * caller expects, in this order: parse (unsigned, malformed), the key it
 * names (unknown_key), the signature over the canonical bytes
 * (bad_signature), then, for an authentic document only, the fleet
 * (other_fleet), the host (other_host; "*" matches any host for kinds
 * policy, rollout, counter, timestamp and record only), the kind (wrong_kind), the seq
 * (replay: seq < want->last_seq, or seq == last_seq with bytes whose
 * sign_value_sha is not want->last_sha) and the expiry (expired: expires
 * != 0 and before want->now; the very document admitted last, same bytes,
 * is not refused for its age: it is what runs).  Returns 0 and fills *ret (the verified
 * header and document bytes; release with sign_envelope_release); or
 * -EPERM with *ret_reason and err ("refused (REASON): what"), or -ENOMEM.
 * *ret is untouched on error. */
int sign_verify(const struct sign_keyring *kr, const char *buf, size_t len, const struct sign_expect *want,
		struct sign_envelope *ret, enum sign_reject *ret_reason, struct nt_err *err);

#endif
