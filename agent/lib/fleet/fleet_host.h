/* SPDX-License-Identifier: MIT */
/* fleet_host.h — the daemon's side of the fleet (`nodetune daemon --fleet
 * ENDPOINTS --host NAME`): register, say what runs here, follow the policy
 * the store names.
 *
 * A thread of its own (its own etcd client) keeps the host's liveness key
 * (/nodetune/hosts/NAME, see fleet.h) under a lease of 5 daemon intervals
 * (3..60 s), registering again when the lease is lost, and watches the
 * host's desired and shadow keys; a change makes fleet_host_fd() readable.
 * The daemon's thread calls fleet_host_tick() after each cycle and when the
 * fd is readable; the tick does the work with the daemon's state:
 *  - desired mode apply: the policy is fetched (/nodetune/policies/SHA),
 *    its sha256 checked, validated as a file is (policy_parse_buffer: a
 *    self-contained text, an include = refused; the site limits of
 *    limits_path, read for each policy; then plan_build on this host),
 *    applied with apply_converge over the
 *    daemon's journal and verified; a refused policy is reported
 *    ("invalid", with why) and nothing is written; a failed apply goes back
 *    to the old plan and is reported ("failed");
 *  - mode local: the daemon's own --policy file again, within the site
 *    limits too;
 *  - mode gate: the gate the document names is looked up in gates_dir
 *    (gates.h: root-owned files; an unknown name, an untrusted file or a
 *    root user is a refused gate, reported "invalid" with why, the policy
 *    kept); `nodetune ab --a policy=CURRENT --b policy=NEW ... --as-user
 *    USER -- COMMAND ARGS` starts as a child (fleet_gate.h) with the
 *    budget min(the rollout's, the gate's cap); the daemon's loop polls
 *    fleet_host_gate_fd and goes on (watchdog, status socket) but does
 *    not verify the host while fleet_host_gating; the tick reads the
 *    verdict at its end and reports it; nothing stays changed;
 *  - shadow: the policy is checked, planned and verified here; what it
 *    would change, or why it is invalid here (a policy beyond the site
 *    limits: "invalid here: refused by the site limits: ..."), is
 *    reported; nothing is written;
 *  - the status key says what runs and how the last verify went, when it
 *    changes (and at least every 30 s).
 * Signatures (fleet/sign.h): every desired, shadow and policy document is
 * verified against the public keys of keys_dir (root-owned, checked as
 * root) before anything is done with it; one that is unsigned, malformed,
 * signed by an unknown key, badly signed, of another fleet (fleet_id),
 * addressed to another host, of another kind, older than the last desired
 * answered or at its seq with other bytes (both kept in the state dir,
 * FLEET_HOST_SEQ), or expired, is refused: the host keeps its policy, says it once,
 * counts it (fleet_host_rejected), keeps it as the last refusal
 * (fleet_host_last_refusal: the daemon's status socket shows it) and its
 * status key says "refused (REASON)".
 * A desired is answered once: the same bytes put again (a replay of the
 * last document), or read again after a restart, start no second gate and
 * apply nothing again.
 * Freshness: the tick also reads the controller's signed timestamp
 * (FLEET_TIMESTAMP_KEY, `fleet timestamp`); when the last one verified is
 * older than max_age_s (or none was since the start, max_age_s ago), the
 * host is frozen: the store may be withholding updates.  It says so once
 * in the log ("fleet: frozen: ..."), fleet_host_freshness reports it (the
 * daemon's status and metrics), and it keeps its policy.
 * A keys_dir that is missing or holds no key trusts nothing: every
 * document is refused (unknown_key), unless insecure_unsigned, which
 * follows unsigned documents (and still verifies signed ones).
 * A policy applied from the store is also kept in the state dir
 * (FLEET_HOST_CACHE), so that a daemon restarted while the store is out of
 * reach runs it again, never its older file: a host that loses the store
 * keeps its last desired policy.  A policy already running is never applied
 * again (same sha256).
 */
#ifndef NODETUNE_FLEET_HOST_H
#define NODETUNE_FLEET_HOST_H

#include <stdbool.h>

#include "fleet/fleet.h"
#include "fleet/sign.h"
#include "base/fsroot.h"
#include "tune/plan.h"
#include "tune/policy.h"

#define FLEET_HOST_CACHE "fleet-policy.conf"   /* in the state dir */
#define FLEET_HOST_CACHE_KEY ".key"           /* beside it: the key id that signed it */
#define FLEET_HOST_SEQ "fleet-seq"             /* in the state dir: "SEQ SHA256\n" of the last desired answered */
#define FLEET_HOST_MAX_AGE_S (4 * 3600.0)      /* a timestamp older: the host says it is frozen */

struct journal;
struct fleet_host;

struct fleet_creds;

struct fleet_host_config {
	const char *endpoints;
	const struct fleet_creds *creds;  /* NULL: none (plaintext, no login) */
	const char *host;
	const char *state_dir;
	const char *local_policy;     /* the daemon's --policy: mode local */
	const char *start_policy;     /* the file the daemon started with (the cache or local_policy) */
	const char *sysroot;          /* NULL: the live host; for the gate */
	const char *topology;         /* NULL: the host's; for the gate */
	double interval_s;
	note_fn note;
	void *note_arg;
	const char *keys_dir;         /* the trusted signing keys; NULL: SIGN_KEYS_DIR */
	bool insecure_unsigned;       /* also follow unsigned documents (tests, demos) */
	const char *limits_path;      /* the site limits (limits.h); NULL: LIMITS_DEFAULT_PATH when it exists */
	const char *gates_dir;        /* the named gates (gates.h); NULL: GATES_DIR */
	const char *fleet_id;         /* the fleet this host is of; NULL: SIGN_FLEET_DEFAULT */
	double max_age_s;             /* the timestamp's age at which it is frozen; 0: FLEET_HOST_MAX_AGE_S */
};

/* The daemon's state a tick reads, and replaces after an apply. */
struct fleet_host_view {
	const struct fsroot *root;
	const struct topo *topo;
	struct journal *j;
	struct policy **policy;
	struct plan **plan;
	char *sha256;                 /* SHA256_DIGEST_STRING_LENGTH */
	char *policy_name;            /* FLEET_NAME_MAX: a name to show */
	bool verify_ok;
	unsigned checked, drifted;
	double verify_wall;
};

/* Check the configuration (names, endpoints, credentials, the trusted
 * keys: a keys_dir that exists but is not root's, or holds a bad key, is
 * -EPERM/-EINVAL) and start the
 * lease thread; the store need not be reachable, but with credentials it
 * is asked once: a TLS failure, a refused login or a permission denied
 * reading this host's keys is NULL with err -EACCES naming the endpoint.
 * NULL with err (-EINVAL, -EACCES, -ENOMEM). */
struct fleet_host *fleet_host_start(const struct fleet_host_config *cfg, const struct topo *t,
				    struct nt_err *err);

/* Documents refused for reason r since the start (0 when fh is NULL). */
unsigned long fleet_host_rejected(const struct fleet_host *fh, enum sign_reject r);

/* The last document refused for its signature (the refusals
 * fleet_host_rejected counts): its reason, when (wall clock, s) and the
 * one line said about it ("KEY: refused (REASON): what"). */
struct fleet_host_refusal {
	enum sign_reject reason;
	double wall;
	char what[512];
};

/* The last refusal into *ret: true, or false when none since the start
 * (or fh is NULL), *ret untouched. */
bool fleet_host_last_refusal(const struct fleet_host *fh, struct fleet_host_refusal *ret);

/* The host's freshness: frozen (its last timestamp, or its start when it
 * verified none, is older than max_age_s), that age, whether a timestamp
 * was verified (its seq and time, UNIX seconds).  All zero for NULL. */
struct fleet_host_fresh {
	bool frozen, have;
	double age_s, max_age_s, time;
	uint64_t seq;
};
void fleet_host_freshness(const struct fleet_host *fh, struct fleet_host_fresh *ret);

/* Readable when the store changed something for this host; -1 when fh is
 * NULL.  The tick drains it. */
int fleet_host_fd(const struct fleet_host *fh);

/* Do what the store asks (see above).  Returns 1 when *v->policy,
 * *v->plan and v->sha256 were replaced (the old ones freed), else 0.
 * Never fails: problems are reported on the status key and to note. */
int fleet_host_tick(struct fleet_host *fh, struct fleet_host_view *v);

/* Whether a gate runs (it holds the host: verify it not).  false for NULL. */
bool fleet_host_gating(const struct fleet_host *fh);

/* ab's output while a gate runs, for the loop to poll (readable: call
 * fleet_host_tick); -1 without a gate. */
int fleet_host_gate_fd(const struct fleet_host *fh);

/* Stop a gate that runs (ab stops its job and reverts its arm; up to
 * 10 s), before the daemon stops or reverts; no gate: a no-op. */
void fleet_host_gate_end(struct fleet_host *fh);

/* Stop the thread and revoke the lease (the host is gone at once); NULL is
 * a no-op. */
void fleet_host_stop(struct fleet_host *fh);

/* The cached policy in state_dir into buf, when there is one a daemon may
 * start with: buf.  NULL when there is none, or (with why, one line) when
 * its signer, recorded beside it (FLEET_HOST_CACHE_KEY), is no longer in
 * kr (a revoked key), or it was unsigned and insecure is false, or no
 * signer is recorded (a cache of before this check): the daemon starts
 * with its own policy file instead. */
struct sign_keyring;
const char *fleet_host_cached_policy(const char *state_dir, const struct sign_keyring *kr, bool insecure,
				     char *buf, size_t size, char *why, size_t why_size);

/* Load the trusted keys again (SIGHUP: a key added or revoked without a
 * restart); documents read from now on are verified with them.  0, or
 * -errno with err (the old keys kept). */
int fleet_host_reload_keys(struct fleet_host *fh, struct nt_err *err);

#endif
