/* SPDX-License-Identifier: MIT */
/* sign.c — see sign.h.
 *
 * Divisions: names and small checks; key files (keygen, secret key, the
 * keyring of a directory); the canonical bytes and signing; the envelope
 * parser; verification.  The cryptography is libsodium's (crypto_sign_*,
 * crypto_hash_sha256); nothing here is hand-written crypto.
 */
#include "fleet/sign.h"
#include "fleet/sign_test.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/base64.h"
#include "base/userfile.h"
#include "fleet/fleet.h"
#include "tune/policy.h"

/* callers pass policy_trust_flags() */
_Static_assert(SIGN_TRUSTED_ONLY == POLICY_TRUSTED_ONLY, "one trust flag");
_Static_assert(SIGN_SEED_BYTES == crypto_sign_SEEDBYTES, "a key file's seed");

#define PUB_TAG "nodetune-ed25519-pub "
#define SECRET_TAG "nodetune-ed25519-secret "
#define KEYFILE_MAX 256
#define ENVELOPE_MAX (SIGN_DOC_MAX / 3 * 4 + 8192)

const char *const sign_kind_names[SIGN_KIND__COUNT] = {
	[SIGN_KIND_DESIRED] = "desired",
	[SIGN_KIND_SHADOW] = "shadow",
	[SIGN_KIND_POLICY] = "policy",
	[SIGN_KIND_ROLLOUT] = "rollout",
	[SIGN_KIND_COUNTER] = "counter",
	[SIGN_KIND_TIMESTAMP] = "timestamp",
	[SIGN_KIND_RECORD] = "record",
};

const char *const sign_reject_names[SIGN_REJ__COUNT] = {
	[SIGN_REJ_UNSIGNED] = "unsigned",
	[SIGN_REJ_MALFORMED] = "malformed",
	[SIGN_REJ_UNKNOWN_KEY] = "unknown_key",
	[SIGN_REJ_BAD_SIGNATURE] = "bad_signature",
	[SIGN_REJ_OTHER_HOST] = "other_host",
	[SIGN_REJ_WRONG_KIND] = "wrong_kind",
	[SIGN_REJ_REPLAY] = "replay",
	[SIGN_REJ_OTHER_FLEET] = "other_fleet",
	[SIGN_REJ_EXPIRED] = "expired",
};

#define ENVELOPE_VERSION 2
#define ENVELOPE_MEMBERS 11

struct sign_keyring {
	unsigned n;
	struct {
		unsigned char pk[SIGN_PK_BYTES];
		char id[SIGN_ID_LEN + 1];
	} key[SIGN_KEYS_MAX];
};

/* ---- names and small checks ------------------------------------------------ */

static int sodium_ready(struct nt_err *err)
{
	return sodium_init() < 0 ? err_set(err, -ENOMEM, "libsodium could not be initialised") : 0;
}

bool sign_key_name_valid(const char *s)
{
	size_t n = strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789_-");

	return n >= 1 && n <= 64 && !s[n];
}

/* n lowercase hex digits, and nothing more. */
static bool is_hex(const char *s, size_t n)
{
	return strlen(s) == n && strspn(s, "0123456789abcdef") == n;
}

/* Documents of these kinds are for every host ("*"): a policy
 * (content-addressed), a rollout (the controller's own state, no host's),
 * the counter, the timestamp, a class's policy of record. */
static bool kind_any_host(enum sign_kind k)
{
	return k == SIGN_KIND_POLICY || k == SIGN_KIND_ROLLOUT || k == SIGN_KIND_COUNTER || k == SIGN_KIND_TIMESTAMP ||
	       k == SIGN_KIND_RECORD;
}

/* Documents of these kinds may never expire (0): a policy is named by the
 * sha256 of a desired that does; the counter and a rollout are the
 * controller's own (a rollout resumed days later is still its state); a
 * class's record stands until a later rollout replaces it (its seq orders
 * it against a host's desired). */
static bool kind_may_not_expire(enum sign_kind k)
{
	return k == SIGN_KIND_POLICY || k == SIGN_KIND_COUNTER || k == SIGN_KIND_ROLLOUT || k == SIGN_KIND_RECORD;
}

bool sign_fleet_valid(const char *s)
{
	return strlen(s) < SIGN_NAME_MAX && fleet_name_valid(s);
}

static bool header_valid(const struct sign_header *h)
{
	bool any_host = !strcmp(h->host, "*");

	return (unsigned)h->kind < SIGN_KIND__COUNT && fleet_name_valid(h->rollout) && sign_fleet_valid(h->fleet) &&
	       (fleet_name_valid(h->host) || (any_host && kind_any_host(h->kind))) &&
	       h->seq <= (uint64_t)INT64_MAX && h->expires >= 0 && (h->expires > 0 || kind_may_not_expire(h->kind)) &&
	       is_hex(h->policy_sha256, SIGN_SHA_LEN);
}

void sign_value_sha(const char *buf, size_t len, char ret[SIGN_SHA_LEN + 1])
{
	unsigned char sha[crypto_hash_sha256_BYTES];

	crypto_hash_sha256(sha, (const unsigned char *)buf, len);
	sodium_bin2hex(ret, SIGN_SHA_LEN + 1, sha, sizeof(sha));
}

static void key_id_of(const unsigned char pk[SIGN_PK_BYTES], char id[SIGN_ID_LEN + 1])
{
	unsigned char sha[crypto_hash_sha256_BYTES];

	crypto_hash_sha256(sha, pk, SIGN_PK_BYTES);
	sodium_bin2hex(id, SIGN_ID_LEN + 1, sha, SIGN_ID_LEN / 2);
}

/* ---- key files ---------------------------------------------------------------- */

/* Write "tag BASE64(bytes)\n" to dir/name with mode, created exclusively. */
static int write_key_file(const char *path, mode_t mode, const char *tag, const unsigned char *bytes,
			  size_t n, struct nt_err *err)
{
	char line[KEYFILE_MAX], b64[128];
	size_t len;
	ssize_t w;
	int fd, e;

	base64_encode(bytes, n, b64);
	len = (size_t)snprintf(line, sizeof(line), "%s%s\n", tag, b64);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);
	if (fd < 0) {
		e = -errno;
		return err_set(err, e, "%s: %s", path, nt_strerror(-e));
	}
	sodium_memzero(b64, sizeof(b64));
	errno = 0;
	if (fchmod(fd, mode) < 0 || (w = write(fd, line, len)) != (ssize_t)len || fsync(fd) < 0) {
		e = errno ? -errno : -EIO;
		sodium_memzero(line, sizeof(line));
		close(fd);
		unlink(path);
		return err_set(err, -EIO, "%s: writing the key failed: %s", path, nt_strerror(-e));
	}
	sodium_memzero(line, sizeof(line));
	if (close(fd) < 0) {
		e = -errno;
		unlink(path);
		return err_set(err, -EIO, "%s: %s", path, nt_strerror(-e));
	}
	return 0;
}

int sign_keygen(const char *dir, const char *name, char ret_id[SIGN_ID_LEN + 1], struct nt_err *err)
{
	unsigned char pk[SIGN_PK_BYTES], sk[SIGN_SK_BYTES];
	char kpath[PATH_MAX], ppath[PATH_MAX];
	int r;

	if (!sign_key_name_valid(name))
		return err_set(err, -EINVAL, "key name '%.64s': expected 1 to 64 of a-z, 0-9, '_' and '-'", name);
	if ((r = sodium_ready(err)) < 0)
		return r;
	if ((size_t)snprintf(kpath, sizeof(kpath), "%s/%s.key", dir, name) >= sizeof(kpath) ||
	    (size_t)snprintf(ppath, sizeof(ppath), "%s/%s.pub", dir, name) >= sizeof(ppath))
		return err_set(err, -EINVAL, "%s: path too long", dir);
	if (access(ppath, F_OK) == 0)
		return err_set(err, -EEXIST, "%s: %s", ppath, nt_strerror(EEXIST));
	crypto_sign_keypair(pk, sk);
	/* the secret file holds the seed, the first half of libsodium's sk */
	r = write_key_file(kpath, 0600, SECRET_TAG, sk, crypto_sign_SEEDBYTES, err);
	sodium_memzero(sk, sizeof(sk));
	if (r < 0)
		return r;
	r = write_key_file(ppath, 0644, PUB_TAG, pk, SIGN_PK_BYTES, err);
	if (r < 0) {
		unlink(kpath);
		return r;
	}
	if (ret_id)
		key_id_of(pk, ret_id);
	return 0;
}

/* Decode "tag BASE64\n" (the whole file; the newline is optional) into
 * exactly n bytes.  0 or -EINVAL. */
static int parse_key_line(const char *buf, size_t len, const char *tag, unsigned char *out, size_t n)
{
	size_t tl = strlen(tag);
	char *data = NULL;
	size_t dlen = 0;

	if (len && buf[len - 1] == '\n')
		len--;
	if (len <= tl || memcmp(buf, tag, tl) || memchr(buf, '\n', len))
		return -EINVAL;
	if (base64_decode(buf + tl, len - tl, &data, &dlen) < 0 || dlen != n) {
		free(data);
		return -EINVAL;
	}
	memcpy(out, data, n);
	sodium_memzero(data, dlen);
	free(data);
	return 0;
}

static int check_trusted_pub(const struct stat *st, char *why, size_t size)
{
	return userfile_check_root_owned(st, "a trusted key", why, size);
}

/* A secret key is for its owner's eyes only. */
static int check_secret_mode(const struct stat *st, char *why, size_t size)
{
	if (!(st->st_mode & 077))
		return 0;
	snprintf(why, size, "refusing a secret key readable or writable by group or others (mode %04o; chmod 600)",
		 (unsigned)(st->st_mode & 07777));
	return -EPERM;
}

static int check_secret_root(const struct stat *st, char *why, size_t size)
{
	int r = userfile_check_root_owned(st, "a secret key", why, size);

	return r < 0 ? r : check_secret_mode(st, why, size);
}

int sign_key_load(const char *path, unsigned flags, struct sign_key *ret, struct nt_err *err)
{
	unsigned char seed[SIGN_SEED_BYTES];
	char *buf = NULL, why[320];
	size_t len = 0;
	int r;

	if ((r = sodium_ready(err)) < 0)
		return r;
	r = userfile_read(path, KEYFILE_MAX, "a secret key file",
			  (flags & SIGN_TRUSTED_ONLY) ? check_secret_root : check_secret_mode, &buf, &len, why,
			  sizeof(why));
	if (r < 0)
		return err_set(err, r, "%s: %s", path, why);
	r = parse_key_line(buf, len, SECRET_TAG, seed, sizeof(seed));
	sodium_memzero(buf, len);
	free(buf);
	if (r < 0)
		return err_set(err, -EINVAL, "%s: not a nodetune secret key (expected one line '%sBASE64')", path,
			       SECRET_TAG);
	r = sign_key_from_seed(seed, ret, err);
	sodium_memzero(seed, sizeof(seed));
	return r;
}

int sign_key_from_seed(const unsigned char seed[SIGN_SEED_BYTES], struct sign_key *ret, struct nt_err *err)
{
	struct sign_key k;
	int r;

	if ((r = sodium_ready(err)) < 0)
		return r;
	crypto_sign_seed_keypair(k.pk, k.sk, seed);
	key_id_of(k.pk, k.id);
	*ret = k;
	sodium_memzero(&k, sizeof(k));
	return 0;
}

void sign_key_wipe(struct sign_key *k)
{
	if (k)
		sodium_memzero(k, sizeof(*k));
}

/* Is name a key file's name ("X.pub", X not hidden)? */
static bool is_pub_name(const char *name)
{
	size_t n = strlen(name);

	return n > 4 && name[0] != '.' && !strcmp(name + n - 4, ".pub");
}

/* Add dir/name to kr.  0 or -errno with err. */
static int keyring_add(struct sign_keyring *kr, const char *dir, const char *name, unsigned flags,
		       struct nt_err *err)
{
	char path[PATH_MAX], why[320], *buf = NULL, id[SIGN_ID_LEN + 1];
	unsigned char pk[SIGN_PK_BYTES];
	size_t len = 0;
	int r;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >= sizeof(path))
		return err_set(err, -EINVAL, "%s/%.64s: path too long", dir, name);
	r = userfile_read(path, KEYFILE_MAX, "a public key file",
			  (flags & SIGN_TRUSTED_ONLY) ? check_trusted_pub : NULL, &buf, &len, why, sizeof(why));
	if (r < 0)
		return err_set(err, r, "%s: %s", path, why);
	r = parse_key_line(buf, len, PUB_TAG, pk, sizeof(pk));
	free(buf);
	if (r < 0)
		return err_set(err, -EINVAL, "%s: not a nodetune public key (expected one line '%sBASE64')", path,
			       PUB_TAG);
	key_id_of(pk, id);
	if (sign_keyring_has(kr, id))
		return err_set(err, -EINVAL, "%s: key %s is trusted twice in %s", path, id, dir);
	if (kr->n == SIGN_KEYS_MAX)
		return err_set(err, -E2BIG, "%s: more than %d trusted keys", dir, SIGN_KEYS_MAX);
	memcpy(kr->key[kr->n].pk, pk, sizeof(pk));
	memcpy(kr->key[kr->n].id, id, sizeof(id));
	kr->n++;
	return 0;
}

/* The directory itself: with SIGN_TRUSTED_ONLY, owned by root and not
 * writable by group or others (else anyone could add a key).  Returns an
 * open DIR or NULL with err. */
static DIR *open_key_dir(const char *dir, unsigned flags, struct nt_err *err)
{
	char why[320];
	struct stat st;
	int fd, e;
	DIR *d;

	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		e = -errno;
		err_set(err, e, "%s: %s", dir, nt_strerror(-e));
		return NULL;
	}
	if (fstat(fd, &st) < 0 ||
	    ((flags & SIGN_TRUSTED_ONLY) && userfile_check_root_owned(&st, "a key directory", why, sizeof(why)) < 0)) {
		err_set(err, -EPERM, "%s: %s", dir, why);
		close(fd);
		return NULL;
	}
	d = fdopendir(fd);
	if (!d) {
		e = -errno;
		close(fd);
		err_set(err, e, "%s: %s", dir, nt_strerror(-e));
	}
	return d;
}

struct sign_keyring *sign_keyring_load(const char *dir, unsigned flags, struct nt_err *err)
{
	struct sign_keyring *kr;
	struct dirent *de;
	DIR *d;
	int r = 0;

	if (sodium_ready(err) < 0)
		return NULL;
	kr = calloc(1, sizeof(*kr));
	if (!kr) {
		err_set(err, -ENOMEM, "out of memory");
		return NULL;
	}
	d = open_key_dir(dir, flags, err);
	if (!d) {
		free(kr);
		return NULL;
	}
	while (r == 0 && (errno = 0, de = readdir(d)))
		if (is_pub_name(de->d_name))
			r = keyring_add(kr, dir, de->d_name, flags, err);
	if (r == 0 && errno)
		r = err_set(err, -errno, "%s: %s", dir, nt_strerror(errno));
	closedir(d);
	if (r < 0) {
		free(kr);
		return NULL;
	}
	return kr;
}

unsigned sign_keyring_count(const struct sign_keyring *kr)
{
	return kr->n;
}

bool sign_keyring_has(const struct sign_keyring *kr, const char *id)
{
	for (unsigned i = 0; i < kr->n; i++)
		if (!strcmp(kr->key[i].id, id))
			return true;
	return false;
}

struct sign_keyring *sign_keyring_with(const struct sign_keyring *base, const struct sign_key *k,
				       struct nt_err *err)
{
	struct sign_keyring *kr = calloc(1, sizeof(*kr));

	if (!kr) {
		err_set(err, -ENOMEM, "out of memory");
		return NULL;
	}
	if (base)
		*kr = *base;
	if (k && !sign_keyring_has(kr, k->id)) {
		if (kr->n == SIGN_KEYS_MAX) {
			free(kr);
			err_set(err, -E2BIG, "more than %d trusted keys", SIGN_KEYS_MAX);
			return NULL;
		}
		memcpy(kr->key[kr->n].pk, k->pk, SIGN_PK_BYTES);
		memcpy(kr->key[kr->n].id, k->id, SIGN_ID_LEN + 1);
		kr->n++;
	}
	return kr;
}

void sign_keyring_free(struct sign_keyring *kr)
{
	free(kr);
}

struct sign_keyring *sign_keyring_of(const struct sign_key *k, struct nt_err *err)
{
	struct sign_keyring *kr = calloc(1, sizeof(*kr));

	if (!kr) {
		err_set(err, -ENOMEM, "out of memory");
		return NULL;
	}
	memcpy(kr->key[0].pk, k->pk, SIGN_PK_BYTES);
	memcpy(kr->key[0].id, k->id, sizeof(kr->key[0].id));
	kr->n = 1;
	return kr;
}

/* ---- the canonical bytes and signing ----------------------------------------- */

int sign_canonical(const struct sign_header *h, const char *doc, size_t len, char **ret, size_t *ret_len)
{
	char head[512];
	int n;
	char *out;

	if (!header_valid(h) || len > SIGN_DOC_MAX)
		return -EINVAL;
	n = snprintf(head, sizeof(head),
		     "nodetune-signed-v2\nkind %s\nfleet %s\nhost %s\nrollout %s\nseq %llu\nexpires %lld\n"
		     "policy-sha256 %s\nlength %zu\n\n",
		     sign_kind_names[h->kind], h->fleet, h->host, h->rollout, (unsigned long long)h->seq,
		     (long long)h->expires, h->policy_sha256, len);
	if (n < 0 || (size_t)n >= sizeof(head))
		return -EINVAL;
	out = malloc((size_t)n + len + 1);
	if (!out)
		return -ENOMEM;
	memcpy(out, head, (size_t)n);
	if (len)
		memcpy(out + n, doc, len);
	out[(size_t)n + len] = '\0';
	*ret = out;
	*ret_len = (size_t)n + len;
	return 0;
}

/* The envelope's JSON object for e (sig and doc encoded), or NULL. */
static json_t *envelope_json(const struct sign_envelope *e)
{
	char sig64[128], *doc64 = base64_encode_alloc(e->doc, e->doc_len);
	json_t *o;

	if (!doc64)
		return NULL;
	base64_encode(e->sig, SIGN_SIG_BYTES, sig64);
	o = json_pack("{s:i, s:s, s:s, s:s, s:s, s:I, s:I, s:s, s:s, s:s, s:s}", "nodetune_signed",
		      ENVELOPE_VERSION, "kind", sign_kind_names[e->h.kind], "fleet", e->h.fleet, "host", e->h.host,
		      "rollout", e->h.rollout, "seq", (json_int_t)e->h.seq, "expires", (json_int_t)e->h.expires,
		      "policy_sha256", e->h.policy_sha256, "key_id", e->key_id, "sig", sig64, "doc", doc64);
	free(doc64);
	return o;
}

int sign_envelope_make(const struct sign_key *k, const struct sign_header *h, const char *doc, size_t len,
		       char **ret_json, struct nt_err *err)
{
	struct sign_envelope e = { .h = *h, .doc = (char *)doc, .doc_len = len };
	char *canon = NULL, *text;
	size_t clen = 0;
	json_t *o;
	int r;

	if ((r = sodium_ready(err)) < 0)
		return r;
	r = sign_canonical(h, doc, len, &canon, &clen);
	if (r == -EINVAL)
		return err_set(err, r, "cannot sign: a header field out of its syntax, or a document over %u bytes",
			       SIGN_DOC_MAX);
	if (r < 0)
		return err_set(err, r, "out of memory");
	crypto_sign_detached(e.sig, NULL, (const unsigned char *)canon, clen, k->sk);
	free(canon);
	memcpy(e.key_id, k->id, sizeof(e.key_id));
	o = envelope_json(&e);
	text = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
	json_decref(o);
	if (!text)
		return err_set(err, -ENOMEM, "out of memory");
	*ret_json = text;
	return 0;
}

/* ---- the envelope parser ------------------------------------------------------- */

static int malformed(enum sign_reject *reason, struct nt_err *err, const char *what)
{
	*reason = SIGN_REJ_MALFORMED;
	return err_set(err, -EPERM, "refused (malformed): %s", what);
}

/* The string member name of o, at most max bytes, or NULL. */
static const char *member_str(json_t *o, const char *name, size_t max)
{
	json_t *v = json_object_get(o, name);

	return json_is_string(v) && json_string_length(v) <= max ? json_string_value(v) : NULL;
}

/* Base64 member name decoded into *ret (malloc'd) of at most max bytes. */
static int member_b64(json_t *o, const char *name, size_t max, char **ret, size_t *ret_len)
{
	json_t *v = json_object_get(o, name);

	if (!json_is_string(v) || json_string_length(v) > base64_encoded_len(max))
		return -EINVAL;
	return base64_decode(json_string_value(v), json_string_length(v), ret, ret_len);
}

/* The header members of o into h.  0, or a message naming the member. */
static const char *parse_header(json_t *o, struct sign_header *h)
{
	const char *kind = member_str(o, "kind", 16), *host = member_str(o, "host", SIGN_NAME_MAX);
	const char *rollout = member_str(o, "rollout", SIGN_NAME_MAX), *fleet = member_str(o, "fleet", SIGN_NAME_MAX);
	const char *sha = member_str(o, "policy_sha256", SIGN_SHA_LEN);
	json_t *seq = json_object_get(o, "seq"), *expires = json_object_get(o, "expires");

	h->kind = SIGN_KIND__COUNT;
	for (unsigned i = 0; kind && i < SIGN_KIND__COUNT; i++)
		if (!strcmp(kind, sign_kind_names[i]))
			h->kind = (enum sign_kind)i;
	if (h->kind == SIGN_KIND__COUNT)
		return "\"kind\" is not desired, shadow, policy, rollout, counter or timestamp";
	if (!fleet || !sign_fleet_valid(fleet))
		return "\"fleet\" is not a fleet id";
	if (!host || !(fleet_name_valid(host) || (!strcmp(host, "*") && kind_any_host(h->kind))))
		return "\"host\" is not a host name";
	if (!rollout || !fleet_name_valid(rollout))
		return "\"rollout\" is not a rollout name";
	if (!json_is_integer(seq) || json_integer_value(seq) < 0)
		return "\"seq\" is not a whole number";
	if (!json_is_integer(expires) || json_integer_value(expires) < 0 ||
	    (json_integer_value(expires) == 0 && !kind_may_not_expire(h->kind)))
		return "\"expires\" is not a time (UNIX seconds; 0 only for a policy or a counter)";
	if (!sha || !is_hex(sha, SIGN_SHA_LEN))
		return "\"policy_sha256\" is not 64 lowercase hex digits";
	snprintf(h->fleet, sizeof(h->fleet), "%s", fleet);
	h->expires = (int64_t)json_integer_value(expires);
	snprintf(h->host, sizeof(h->host), "%s", host);
	snprintf(h->rollout, sizeof(h->rollout), "%s", rollout);
	snprintf(h->policy_sha256, sizeof(h->policy_sha256), "%s", sha);
	h->seq = (uint64_t)json_integer_value(seq);
	return NULL;
}

/* The members of a parsed envelope object o into e.  0, -ENOMEM, or
 * -EPERM (malformed, with err). */
static int parse_members(json_t *o, struct sign_envelope *e, enum sign_reject *reason, struct nt_err *err)
{
	const char *what, *id = member_str(o, "key_id", SIGN_ID_LEN);
	char *sig = NULL;
	size_t sig_len = 0;
	int r;

	if (json_object_size(o) != ENVELOPE_MEMBERS)
		return malformed(reason, err, "an envelope has exactly the members nodetune_signed, kind, fleet, host, rollout, seq, expires, policy_sha256, key_id, sig, doc");
	if ((what = parse_header(o, &e->h)))
		return malformed(reason, err, what);
	if (!id || !is_hex(id, SIGN_ID_LEN))
		return malformed(reason, err, "\"key_id\" is not 16 lowercase hex digits");
	snprintf(e->key_id, sizeof(e->key_id), "%s", id);
	r = member_b64(o, "sig", SIGN_SIG_BYTES, &sig, &sig_len);
	if (r == 0 && sig_len != SIGN_SIG_BYTES)
		r = -EINVAL;
	if (r == 0)
		memcpy(e->sig, sig, SIGN_SIG_BYTES);
	free(sig);
	if (r < 0)
		return r == -ENOMEM ? err_set(err, r, "out of memory")
				    : malformed(reason, err, "\"sig\" is not the base64 of 64 bytes");
	r = member_b64(o, "doc", SIGN_DOC_MAX, &e->doc, &e->doc_len);
	if (r < 0)
		return r == -ENOMEM ? err_set(err, r, "out of memory")
				    : malformed(reason, err, "\"doc\" is not base64 of at most 2 MiB");
	return 0;
}

int sign_envelope_parse(const char *buf, size_t len, struct sign_envelope *ret,
			enum sign_reject *ret_reason, struct nt_err *err)
{
	struct sign_envelope e = { 0 };
	enum sign_reject reason = SIGN_REJ_MALFORMED;
	json_t *o, *version;
	int r;

	if (len > ENVELOPE_MAX)
		r = malformed(&reason, err, "larger than any envelope");
	else if (!(o = json_loadb(buf, len, JSON_REJECT_DUPLICATES, NULL)))
		r = malformed(&reason, err, "not JSON");
	else {
		version = json_object_get(o, "nodetune_signed");
		if (!json_is_object(o))
			r = malformed(&reason, err, "not a JSON object");
		else if (!version) {
			reason = SIGN_REJ_UNSIGNED;
			r = err_set(err, -EPERM, "refused (unsigned): a document without a signature envelope");
		} else if (json_is_integer(version) && json_integer_value(version) == 1)
			r = malformed(&reason, err, "an envelope of version 1, without a fleet id and an expiry (no "
					  "longer accepted: a controller of this version signs it again)");
		else if (!json_is_integer(version) || json_integer_value(version) != ENVELOPE_VERSION)
			r = malformed(&reason, err, "\"nodetune_signed\" is not 2 (an envelope of another version)");
		else
			r = parse_members(o, &e, &reason, err);
		json_decref(o);
	}
	if (r < 0) {
		sign_envelope_release(&e);
		if (r == -EPERM)
			*ret_reason = reason;
		return r;
	}
	*ret = e;
	return 0;
}

void sign_envelope_release(struct sign_envelope *e)
{
	free(e->doc);
	memset(e, 0, sizeof(*e));
}

/* ---- verification ---------------------------------------------------------------- */

__attribute__((format(printf, 4, 5)))
static int refuse(enum sign_reject why, enum sign_reject *ret_reason, struct nt_err *err, const char *fmt, ...)
{
	char what[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	*ret_reason = why;
	return err_set(err, -EPERM, "refused (%s): %s", sign_reject_names[why], what);
}

/* The signature of e by the key it names in kr. */
static int check_signature(const struct sign_keyring *kr, const struct sign_envelope *e,
			   enum sign_reject *reason, struct nt_err *err)
{
	const unsigned char *pk = NULL;
	char *canon = NULL;
	size_t clen = 0;
	int r;

	for (unsigned i = 0; i < kr->n && !pk; i++)
		if (!strcmp(kr->key[i].id, e->key_id))
			pk = kr->key[i].pk;
	if (!pk)
		return refuse(SIGN_REJ_UNKNOWN_KEY, reason, err, "signed by key %s, which is not trusted here",
			      e->key_id);
	r = sign_canonical(&e->h, e->doc, e->doc_len, &canon, &clen);
	if (r < 0)
		return r == -ENOMEM ? err_set(err, r, "out of memory")
				    : refuse(SIGN_REJ_MALFORMED, reason, err, "a header out of its syntax");
	r = crypto_sign_verify_detached(e->sig, (const unsigned char *)canon, clen, pk);
	free(canon);
	if (r != 0)
		return refuse(SIGN_REJ_BAD_SIGNATURE, reason, err,
			      "the signature does not verify with key %s", e->key_id);
	return 0;
}

/* What an authentic e says against what the caller expects: its fleet,
 * host and kind. */
static int check_address(const struct sign_envelope *e, const struct sign_expect *want,
			 enum sign_reject *reason, struct nt_err *err)
{
	const char *fleet = want->fleet ? want->fleet : SIGN_FLEET_DEFAULT;

	if (strcmp(e->h.fleet, fleet))
		return refuse(SIGN_REJ_OTHER_FLEET, reason, err, "signed for fleet %s, not %s", e->h.fleet, fleet);
	if (strcmp(e->h.host, want->host) && !(kind_any_host(e->h.kind) && !strcmp(e->h.host, "*")))
		return refuse(SIGN_REJ_OTHER_HOST, reason, err, "addressed to host %s, not %s", e->h.host,
			      want->host);
	if (e->h.kind != want->kind)
		return refuse(SIGN_REJ_WRONG_KIND, reason, err, "a %s document where a %s one belongs",
			      sign_kind_names[e->h.kind], sign_kind_names[want->kind]);
	return 0;
}

/* Is e fresh: not older than the last one admitted, not another document
 * at its seq, not expired (the last one admitted, the same bytes, is
 * exempt from its expiry: it is what runs).  buf[0..len): its bytes. */
static int check_fresh(const struct sign_envelope *e, const char *buf, size_t len, const struct sign_expect *want,
		       enum sign_reject *reason, struct nt_err *err)
{
	char sha[SIGN_SHA_LEN + 1];
	bool same;

	if (e->h.seq < want->last_seq)
		return refuse(SIGN_REJ_REPLAY, reason, err, "seq %llu of rollout %s is older than %llu, the last one admitted",
			      (unsigned long long)e->h.seq, e->h.rollout, (unsigned long long)want->last_seq);
	sign_value_sha(buf, len, sha);
	same = want->last_seq && e->h.seq == want->last_seq && want->last_sha && !strcmp(sha, want->last_sha);
	if (want->last_seq && e->h.seq == want->last_seq && !same)
		return refuse(SIGN_REJ_REPLAY, reason, err,
			      "seq %llu of rollout %s is the last one admitted, with other bytes (sha256 %.12s)",
			      (unsigned long long)e->h.seq, e->h.rollout, sha);
	if (!same && e->h.expires && (double)e->h.expires < want->now)
		return refuse(SIGN_REJ_EXPIRED, reason, err, "seq %llu of rollout %s expired %.0f s ago",
			      (unsigned long long)e->h.seq, e->h.rollout, want->now - (double)e->h.expires);
	return 0;
}

int sign_verify(const struct sign_keyring *kr, const char *buf, size_t len, const struct sign_expect *want,
		struct sign_envelope *ret, enum sign_reject *ret_reason, struct nt_err *err)
{
	struct sign_envelope e = { 0 };
	int r;

	if ((r = sodium_ready(err)) < 0)
		return r;
	r = sign_envelope_parse(buf, len, &e, ret_reason, err);
	if (r < 0)
		return r;
	r = check_signature(kr, &e, ret_reason, err);
	if (r == 0)
		r = check_address(&e, want, ret_reason, err);
	if (r == 0)
		r = check_fresh(&e, buf, len, want, ret_reason, err);
	if (r < 0) {
		sign_envelope_release(&e);
		return r;
	}
	*ret = e;
	return 0;
}
