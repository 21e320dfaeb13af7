/* SPDX-License-Identifier: MIT */
/* etcd.h — a client of etcd 3.4's v3 JSON gateway (gRPC-gateway over HTTP,
 * POST /v3/kv/range, /v3/kv/put, /v3/kv/txn,
 * /v3/lease/grant, /v3/lease/keepalive, /v3/lease/revoke, /v3/watch,
 * /v3/auth/authenticate, /v3/auth/role|user/add|grant, /v3/auth/enable) with
 * libcurl and jansson: the fleet's store.
 *
 * What it owns: one HTTP handle and a list of member endpoints.  A request
 * that cannot connect, times out, or is answered "unavailable" (no leader)
 * goes to the next endpoint, so one member of three down does not stop the
 * client; the endpoint that answered is tried first next time.  Every
 * request has a timeout (etcd_set_timeout) and every response a size bound
 * (ETCD_RESPONSE_MAX).  A retried write may have been applied by the member
 * that timed out: a put is then applied twice (same value), and a txn's
 * compare sees its own first write and fails — a compare-and-swap is never
 * taken twice, but its caller must re-read after a conflict.
 *
 * Everything from the store is untrusted: base64 decodes strictly, JSON
 * fields must have their types (int64s as decimal strings or integers),
 * keys and values are bounded; a bad one is -EINVAL with a message naming
 * the key.  The pure parsers (etcd_parse_*, etcd_test.h) take a response
 * body and touch no network, for the tests and the fuzz target.
 *
 * Keys are NUL-free strings (a key with a NUL byte from the store is
 * refused); values are byte strings with a length (always NUL-terminated
 * as well, for text).  Errors: -EINVAL bad input or response, -ENOENT no
 * such lease, -EACCES a TLS failure, a refused login or a permission
 * denied (err names the endpoint), -ECANCELED a compare failed (etcd_cas), -ESTALE a watch
 * revision compacted, -EMSGSIZE a response over the bound, -ETIMEDOUT /
 * -ECONNREFUSED / -EHOSTUNREACH every endpoint failed, -EPROTO an
 * unexpected HTTP status, -ENOMEM.
 *
 * A struct etcd is not thread-safe: use one per thread.
 */
#ifndef NODETUNE_ETCD_H
#define NODETUNE_ETCD_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nt_err.h"

#define ETCD_KEY_MAX      4096         /* bytes of a key */
#define ETCD_VALUE_MAX    (1 << 20)    /* bytes of a decoded value */
#define ETCD_KVS_MAX      100000       /* key-values in one response */
#define ETCD_RESPONSE_MAX (64u << 20)  /* bytes of one response body */
#define ETCD_ENDPOINTS_MAX 16
#define ETCD_TIMEOUT_MS   5000         /* default per-request timeout */
#define ETCD_LOGIN_TIMEOUT_MS 10000    /* a login's, at least (etcd's bcrypt is slow by design) */

struct etcd;

/* One key-value as the store holds it. */
struct etcd_kv {
	char *key;              /* NUL-terminated */
	char *value;            /* value_len bytes + a NUL (not counted) */
	size_t value_len;
	int64_t create_revision;
	int64_t mod_revision;
	int64_t version;        /* 0 only in a DELETE event */
	int64_t lease;          /* 0: none */
};

/* The answer to a range (get) request. */
struct etcd_range {
	int64_t revision;       /* the store's revision when it answered */
	size_t n_kvs;
	struct etcd_kv *kvs;    /* sorted by key */
};

enum etcd_cmp_target {
	ETCD_CMP_MOD,           /* the key's mod_revision == number */
	ETCD_CMP_VERSION,       /* version == number (0: the key does not exist) */
	ETCD_CMP_CREATE,        /* create_revision == number */
	ETCD_CMP_VALUE,         /* value == value[0..value_len) */
};

/* One compare of a txn (always "equal"). */
struct etcd_compare {
	enum etcd_cmp_target target;
	const char *key;
	int64_t number;
	const char *value;
	size_t value_len;
};

enum etcd_op_type { ETCD_OP_PUT, ETCD_OP_DELETE, ETCD_OP_GET };

/* One operation of a txn branch.  prefix: DELETE and GET act on every key
 * that starts with key. */
struct etcd_op {
	enum etcd_op_type type;
	const char *key;
	const char *value;      /* PUT */
	size_t value_len;
	int64_t lease;          /* PUT; 0: none */
	bool prefix;
};

/* The answer to a txn. */
struct etcd_txn_result {
	bool succeeded;         /* every compare held: the success ops ran */
	int64_t revision;       /* the store's revision after the txn */
	struct etcd_range get;  /* the key-values of the GET ops of the branch
	                           that ran, in order (get.revision unused) */
};

enum etcd_event_type { ETCD_EVENT_PUT, ETCD_EVENT_DELETE };

struct etcd_event {
	enum etcd_event_type type;
	struct etcd_kv kv;      /* a DELETE has the key and mod_revision only */
};

/* The events of one watch answer. */
struct etcd_events {
	int64_t revision;       /* the header revision of that answer */
	size_t n_events;
	struct etcd_event *events;
};

/* ---- connection ---------------------------------------------------------- */

/* Open a client of the comma-separated endpoints ("http://127.0.0.1:2379,
 * http://..."; at most ETCD_ENDPOINTS_MAX, each http:// or https://).  Does
 * not connect.  Returns NULL and fills err (-EINVAL, -ENOMEM) on failure. */
struct etcd *etcd_open(const char *endpoints, struct nt_err *err);

/* Close the client; NULL is a no-op. */
void etcd_close(struct etcd *e);

/* TLS for https:// endpoints, as etcdctl's --cacert, --cert, --key: the CA
 * bundle that signs the members' certificates, the only one trusted (NULL:
 * the system's store, libcurl's default bundle and directory), and a
 * client certificate and its key (both or neither).  The peer and its name
 * are always verified.  Returns 0, or -EINVAL (a cert without a key),
 * -ENOENT/-EPERM (a file not readable; err names it).  A member whose
 * certificate does not verify, or that refuses ours, fails the request
 * with -EACCES, err naming the endpoint and libcurl's reason. */
int etcd_set_tls(struct etcd *e, const char *cacert, const char *cert, const char *key, struct nt_err *err);

/* Let etcd_set_login send a login to http:// endpoints (--insecure-
 * plaintext): the password and the token then travel in clear, and anyone
 * on the path can read and replay them. */
void etcd_allow_plaintext_login(struct etcd *e);

/* Log in as user with password (copied; zeroed when freed) before the next
 * request: POST /v3/auth/authenticate gives a token, sent in the
 * Authorization header; when etcd answers that it is invalid or expired,
 * the client logs in again once and repeats the request.  Every request
 * body and header line is zeroed before it is freed.  Returns 0 or
 * -EINVAL (an empty name, one with ':' or a newline; any endpoint
 * http:// unless etcd_allow_plaintext_login was called: err names it),
 * -ENOMEM; e is unchanged on error.  A refused login, and a request the
 * user's roles do not allow, are -EACCES with err naming the endpoint. */
int etcd_set_login(struct etcd *e, const char *user, const char *password, struct nt_err *err);

/* Log in now (to find a refused login before anything else is done): 0
 * without a user, else as a request (-EACCES refused, a transport errno). */
int etcd_login(struct etcd *e, struct nt_err *err);

/* Auth administration (etcdctl's role add, role grant-permission, user
 * add, user grant-role, auth enable) through /v3/auth/.  A grant covers
 * key, or with prefix every key that starts with it.  Return 0, -EEXIST
 * (the role or user exists already), -EACCES (auth is on and the login is
 * not root's), or another request errno. */
enum etcd_perm { ETCD_PERM_READ, ETCD_PERM_WRITE, ETCD_PERM_READWRITE };
int etcd_role_add(struct etcd *e, const char *role, struct nt_err *err);
int etcd_role_grant(struct etcd *e, const char *role, enum etcd_perm perm, const char *key, bool prefix,
		    struct nt_err *err);
int etcd_user_add(struct etcd *e, const char *user, const char *password, struct nt_err *err);
int etcd_user_grant(struct etcd *e, const char *user, const char *role, struct nt_err *err);
int etcd_auth_enable(struct etcd *e, struct nt_err *err);

/* Set the per-request timeout in milliseconds (> 0; default
 * ETCD_TIMEOUT_MS).  Each endpoint tried gets the whole timeout. */
void etcd_set_timeout(struct etcd *e, long timeout_ms);

/* Start at endpoint seed mod their count instead of the first, so that many
 * clients given the same list spread over the members (a host passes a
 * hash of its name); failover then goes on from there as before. */
void etcd_spread(struct etcd *e, unsigned long seed);

/* ---- key-values ---------------------------------------------------------- */

/* Read key, or with prefix every key that starts with key (an empty key
 * with prefix: every key).  Returns 0 and fills *ret_range (free it with
 * etcd_range_free; n_kvs 0 when nothing matched), or a negative errno; the
 * range is untouched on error. */
int etcd_get(struct etcd *e, const char *key, bool prefix, struct etcd_range *ret_range,
	     struct nt_err *err);

/* Put value (value_len bytes) at key, attached to lease (0: none).  Returns
 * 0 and sets *ret_revision (may be NULL) to the key's new mod_revision, or
 * a negative errno (-ENOENT: no such lease). */
int etcd_put(struct etcd *e, const char *key, const void *value, size_t value_len, int64_t lease,
	     int64_t *ret_revision, struct nt_err *err);

/* Free what a range holds and zero it; NULL is a no-op. */
void etcd_range_free(struct etcd_range *r);

/* ---- transactions -------------------------------------------------------- */

/* If every compare holds, run the success ops, else the failure ops, as
 * one atomic step.  Returns 0 and fills *ret (free with
 * etcd_txn_result_free) whether or not the compares held, or a negative
 * errno; *ret is untouched on error. */
int etcd_txn(struct etcd *e, const struct etcd_compare *cmp, size_t n_cmp,
	     const struct etcd_op *success, size_t n_success, const struct etcd_op *failure,
	     size_t n_failure, struct etcd_txn_result *ret, struct nt_err *err);

void etcd_txn_result_free(struct etcd_txn_result *r);

/* Compare-and-swap: put value at key (attached to lease, 0: none) if the
 * key's mod_revision is still expected_mod_revision, or, when that is 0, if
 * the key does not exist.  Returns 0 and sets *ret_revision (may be NULL)
 * to the key's new mod_revision; -ECANCELED when the key had changed (err
 * says its mod_revision now, 0 when absent), or another negative errno. */
int etcd_cas(struct etcd *e, const char *key, int64_t expected_mod_revision, const void *value,
	     size_t value_len, int64_t lease, int64_t *ret_revision, struct nt_err *err);

/* ---- leases -------------------------------------------------------------- */

/* Grant a lease of ttl_s seconds (1 .. 9e9).  Returns 0 and sets *ret_id, or
 * a negative errno. */
int etcd_lease_grant(struct etcd *e, int64_t ttl_s, int64_t *ret_id, struct nt_err *err);

/* Renew lease id once (call it well within its TTL).  Returns 0 and sets
 * *ret_ttl (may be NULL) to its remaining seconds, -ENOENT when the lease
 * expired or was revoked (its keys are gone), or another negative errno. */
int etcd_lease_keepalive(struct etcd *e, int64_t id, int64_t *ret_ttl, struct nt_err *err);

/* Revoke lease id, deleting its keys.  Returns 0, -ENOENT when there is no
 * such lease, or another negative errno. */
int etcd_lease_revoke(struct etcd *e, int64_t id, struct nt_err *err);

/* ---- watch --------------------------------------------------------------- */

/* From now on, every request of e stops within about a second once *flag
 * is true (a watch then returns -ECANCELED): a thread that watches for
 * minutes is stopped by another setting flag.  NULL: never.  flag must
 * outlive e. */
void etcd_set_cancel(struct etcd *e, const atomic_bool *flag);

/* Wait up to timeout_ms for changes of key (with prefix: of every key that
 * starts with key) at or after start_revision (0: from now on).  Returns 0
 * and fills *ret (free with etcd_events_free) with the events of the first
 * answer that has some — or with none (n_events 0) when timeout_ms passed
 * first; -ESTALE when start_revision was compacted (re-read with etcd_get
 * and watch from its revision + 1), or another negative errno.  To follow a
 * key, watch again from the last event's mod_revision + 1 (or from the
 * same start_revision after a timeout). */
int etcd_watch(struct etcd *e, const char *key, bool prefix, int64_t start_revision,
	       long timeout_ms, struct etcd_events *ret, struct nt_err *err);

void etcd_events_free(struct etcd_events *ev);

#endif
