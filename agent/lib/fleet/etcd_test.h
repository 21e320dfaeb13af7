/* SPDX-License-Identifier: MIT */
/* etcd_test.h — what etcd.c exports for its tests only: etcd_delete for
 * tests/unit/fleet/test_etcd.c, whose live tests clean up with it (the
 * fleet never deletes a key: leases and overwrites do), and the pure
 * parsers of response bodies for that test and tests/fuzz/fuzz_etcd.c.
 * Nothing outside etcd.c, its test and its fuzz target includes this. */
#ifndef NODETUNE_ETCD_TEST_H
#define NODETUNE_ETCD_TEST_H

#include "fleet/etcd.h"

/* Delete key (with prefix: every key that starts with key) through POST
 * /v3/kv/deleterange.  Returns 0 and sets *ret_deleted (may be NULL) to
 * how many keys went, or a negative errno. */
int etcd_delete(struct etcd *e, const char *key, bool prefix, int64_t *ret_deleted, struct nt_err *err);

/* ---- pure parsers of response bodies (no network) ------------------------ */

/* A /v3/kv/range body.  Returns 0 and fills *ret (etcd_range_free), or
 * -EINVAL / -ENOMEM; *ret untouched on error. */
int etcd_parse_range_response(const char *buf, size_t len, struct etcd_range *ret,
			      struct nt_err *err);

/* A /v3/kv/put or /v3/kv/deleterange body: the header revision and the
 * "deleted" count (0 when absent).  Either output may be NULL. */
int etcd_parse_write_response(const char *buf, size_t len, int64_t *ret_revision,
			      int64_t *ret_deleted, struct nt_err *err);

/* A /v3/kv/txn body.  Returns 0 and fills *ret (etcd_txn_result_free). */
int etcd_parse_txn_response(const char *buf, size_t len, struct etcd_txn_result *ret,
			    struct nt_err *err);

/* A /v3/lease/grant, /v3/lease/keepalive ({"result": ...}) or
 * /v3/lease/revoke body: the lease ID and TTL (0 when absent: for a
 * keepalive, the lease is gone).  Either output may be NULL. */
int etcd_parse_lease_response(const char *buf, size_t len, int64_t *ret_id, int64_t *ret_ttl,
			      struct nt_err *err);

/* One message of a /v3/watch stream ({"result": ...} or {"error": ...}).
 * Returns 0 and fills *ret (n_events 0 for a "created" or progress
 * message), -ESTALE for a watch canceled as compacted, -ECANCELED for one
 * canceled otherwise, -EINVAL for a bad message. */
int etcd_parse_watch_message(const char *buf, size_t len, struct etcd_events *ret,
			     struct nt_err *err);

/* A whole /v3/watch stream: newline-delimited messages.  Fills *ret with
 * the events of the first message that has some (none when none has); the
 * first bad or canceled message ends it with its error. */
int etcd_parse_watch_stream(const char *buf, size_t len, struct etcd_events *ret,
			    struct nt_err *err);

/* An error body ({"error": "...", "code": N}, N a gRPC status) as a
 * negative errno, with its message in err: PERMISSION_DENIED, "user name is
 * empty" and "authentication failed" -EACCES, UNAUTHENTICATED and "invalid
 * auth token" -EKEYEXPIRED (log in again), NOT_FOUND -ENOENT, OUT_OF_RANGE
 * (compacted) -ESTALE, INVALID_ARGUMENT -EINVAL, UNAVAILABLE -EAGAIN,
 * DEADLINE_EXCEEDED -ETIMEDOUT, FAILED_PRECONDITION -ECANCELED, others
 * -EPROTO (and -EPROTO when buf is not such a body). */
int etcd_parse_error(const char *buf, size_t len, struct nt_err *err);

#endif
