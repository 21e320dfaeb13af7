/* SPDX-License-Identifier: MIT */
/* fleet_host_test.h — what fleet_host.c exports for its unit test only
 * (tests/unit/fleet/test_fleet_host.c): the host side's decisions as pure
 * functions of what it observed (a store key, the revisions it answered,
 * the policy that runs, the daemon's last verify).  Nothing outside
 * fleet_host.c and its test includes this. */
#ifndef NODETUNE_FLEET_HOST_TEST_H
#define NODETUNE_FLEET_HOST_TEST_H

#include <stdbool.h>
#include <stdint.h>

#include "fleet/fleet_host.h"
#include "fleet/sign.h"

/* What a key of this host's prefix asks, as read (kind: fleet_key_parse's;
 * parsed: fleet_doc_parse_desired took its value): IGNORE (not a desired or
 * shadow key; a bad shadow; a bad desired already refused at this
 * revision), REFUSE (a bad desired value, reported once), FOLLOW (a
 * desired value), SHADOW (a shadow request not yet answered). */
enum fleet_host_route { FLEET_HOST_IGNORE, FLEET_HOST_REFUSE, FLEET_HOST_FOLLOW, FLEET_HOST_SHADOW };
enum fleet_host_route fleet_host_route(enum fleet_key_kind kind, bool parsed, int64_t rev, int64_t failed_rev,
				       int64_t done_shadow_rev);

/* Does this host follow its class's policy of record (seq record_seq)
 * rather than its desired (have_desired: one admitted, of seq
 * desired_seq)?  Only a record newer than both that desired and the last
 * desired this host answered (last_seq): a record never takes a host back
 * past what it was told last.  Unsigned (seq 0): only with no desired. */
bool fleet_host_record_wins(bool have_desired, uint64_t desired_seq, uint64_t record_seq, uint64_t last_seq);

/* What following desired value d at revision rev means, given the desired
 * revision already answered (done_rev), the one refused (failed_rev), the
 * sha256 that runs and whether this very document (its seq and bytes) was
 * answered before (answered: a replay put at a new revision, or read again
 * after a restart): NOTHING (refused before; or answered, and a gate or
 * the policy that runs), GATE (run the A/B), RUNS_IT (mode apply of the
 * policy that runs: report it verified, apply nothing), LOAD (fetch, or
 * read the local file, then validate and apply). */
enum fleet_host_step { FLEET_HOST_NOTHING, FLEET_HOST_GATE, FLEET_HOST_RUNS_IT, FLEET_HOST_LOAD };
enum fleet_host_step fleet_host_decide(const struct fleet_desired *d, int64_t rev, int64_t done_rev,
				       int64_t failed_rev, const char *running_sha, bool answered);

/* The pause after the fails-th failure in a row (0: none): 0.5 s doubled
 * per failure after the first, at most cap (not under 0.5 s), then drawn
 * between half and all of it from *seed (rand_r). */
double fleet_host_backoff(unsigned fails, double cap, unsigned *seed);

/* The line of FLEET_HOST_SEQ: "SEQ SHA256" (or "SEQ" alone, as written
 * before the hash was kept: *ret_sha ""), with an optional newline.  0, or
 * -EINVAL with the outputs untouched. */
int fleet_host_seq_parse(const char *line, uint64_t *ret_seq, char ret_sha[SIGN_SHA_LEN + 1]);

/* Frozen: the age of the last timestamp (ts_time; 0: none, counted from
 * start) at now is over max_age (0: never frozen).  *ret_age: that age. */
bool fleet_host_frozen(double now, double ts_time, double start, double max_age, double *ret_age);

/* The status after the daemon's cycle v: names, class and the policy that
 * runs; while the host is verified or drifting, the last verify (when it
 * is newer than the one reported) and verified/drift from it; a failed,
 * invalid or gated state is kept (the controller reads it). */
void fleet_host_status_refresh(struct fleet_status *s, const char *host, const struct fleet_class *cls,
			       const struct fleet_host_view *v);

/* Is the status to be put: never published, changed (now_json, without
 * its times, differs from published), or due (now >= next_status)? */
bool fleet_host_status_due(const char *now_json, const char *published, double now, double next_status);

/* What the host admits of a store value buf[0..len) as want says (kind,
 * host, fleet, last seq and bytes, now): verified against kr (NULL: no
 * key) (sign_verify), or, with
 * insecure and no envelope, the bytes as they are (ret->h zeroed, its
 * policy_sha256 ""); for a desired or shadow the document must also name
 * the rollout and policy sha256 that were signed (else malformed).
 * Returns 0 and fills *ret (sign_envelope_release), or -EPERM with
 * *ret_reason and err ("refused (REASON): what"), or -ENOMEM. */
int fleet_host_admit(const struct sign_keyring *kr, bool insecure, const struct sign_expect *want,
		     const char *buf, size_t len, struct sign_envelope *ret, enum sign_reject *ret_reason,
		     struct nt_err *err);

/* A store's policy document buf[0..len), read at key for sha (the sha256
 * a desired names): admitted as fleet_host_admit says (kind policy), then
 * its header must be signed for sha, the document must name sha, and its
 * content must be of that sha256 (fleet_doc_parse_policy_doc).  Returns 0 and
 * fills *ret (fleet_policy_doc_release) and key_id (the signer's; "":
 * unsigned); -EPERM with *ret_reason (refused: the caller counts it), or
 * -EINVAL ("KEY: signed for sha256 ...", "KEY: the document names sha256
 * ...", the parse's), -ENOMEM, with err; *ret untouched on error. */
struct fleet_policy_doc;
int fleet_host_policy_admit(const struct sign_keyring *kr, bool insecure, const struct sign_expect *want,
			    const char *key, const char *sha, const char *buf, size_t len,
			    struct fleet_policy_doc *ret, char key_id[SIGN_ID_LEN + 1], enum sign_reject *ret_reason,
			    struct nt_err *err);

/* A store's policy buf[0..len) named name, checked before it is planned:
 * parsed (an include = is refused as not self-contained, in the fleet's
 * words, never as "a buffer"), then against the site limits l (NULL: none)
 * on machine t.  0 with *ret (policy_free), or -EINVAL (content), -EPERM
 * (beyond a limit: "refused by the site limits: FILE:LINE: [sec] key = V is
 * above the site limit M (LIMITS:LINE)"), -ENOMEM, with err; *ret
 * untouched on error. */
struct limits;
int fleet_host_policy_check(const char *buf, size_t len, const char *name, const struct limits *l,
			    const struct topo *t, struct policy **ret, struct nt_err *err);

#endif
