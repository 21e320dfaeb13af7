/* SPDX-License-Identifier: MIT */
/* fleet_ctl.h — the fleet's controller: create a rollout, drive it through
 * fleet_step (fleet.h) over etcd, abort it, read it back.
 *
 * Promises:
 *  - a rollout is a small head and pages of hosts (fleet_doc.h); a step
 *    puts the pages it changed, each with its hosts' desired keys, in
 *    transactions of at most 128 ops and 1 MiB that compare each page's
 *    mod_revision and the leader key's create_revision, then the head
 *    (compared too): a controller killed anywhere, between two steps or
 *    between two transactions of one, is resumed by fleet_ctl_run, which
 *    takes the step again from what the hosts show and sends no host the
 *    desired it has (fleet_ctl_unsent): each host's desired key is put
 *    once per step;
 *  - the leader reads the rollout and the hosts once, then keeps the
 *    rollout it committed (read again only when the head is not the one
 *    it wrote) and follows the hosts' keys with a watch;
 *  - one controller at a time: fleet_ctl_run first creates the leader key
 *    under its own lease (kept alive while it runs); a second gets -EBUSY,
 *    or waits for the lease of a dead one to expire (wait_leader);
 *  - for tests, NODETUNE_FLEET_PAUSE=SECONDS (at most 10) pauses after each
 *    committed step and each transaction inside one, saying which, so that
 *    a test can kill the controller at any of them; NODETUNE_FLEET_TXN_HOSTS
 *    (1 to FLEET_PAGE_HOSTS) sets the hosts of a page of a rollout it
 *    creates, so that a small fleet's steps take several transactions.
 *    Both act only on the process whose environment sets them (the
 *    operator's own controller): a pause, or a layout of smaller pages;
 *  - a store that fails in the middle is retried (every endpoint, then
 *    again after a pause) while the leader lease lives; a lost lease stops
 *    the run (-ENOLCK): nothing more is written.
 */
#ifndef NODETUNE_FLEET_CTL_H
#define NODETUNE_FLEET_CTL_H

#include <stdbool.h>

#include "fleet/fleet.h"
#include "tune/policy.h"

#define FLEET_DOC_TTL_S (7 * 86400)      /* a signed desired or shadow expires after a week */
#define FLEET_TIMESTAMP_TTL_S 86400      /* a signed timestamp, after a day */

struct fleet_ctl;

struct fleet_rollout_opts {
	const char *name;
	const char *policy_name;          /* shown; the file's base name */
	const char *content;              /* the policy's bytes: fleet_ctl_policy_text's */
	size_t content_len;
	const char *waves;                /* "1/class,1%,10%,50%,100%" */
	const char *gate;                 /* a gate name (gates.h); NULL: no gate */
	double gate_budget, wave_timeout;
	bool shadow, allow_inconclusive;
};

/* Open a controller over the endpoints; every line it has to say (the
 * timeline as it happens, retries) goes to note.  creds (NULL: none) are
 * fleet_creds_apply'd, and with a user it logs in at once.  NULL with err
 * on bad endpoints or credentials, -EACCES (a TLS failure or a refused
 * login, err naming the endpoint), or out of memory. */
struct fleet_creds;
struct fleet_ctl *fleet_ctl_open(const char *endpoints, const struct fleet_creds *creds, note_fn note,
				 void *arg, struct nt_err *err);
void fleet_ctl_close(struct fleet_ctl *c);

/* Sign every desired, shadow and policy document this controller writes
 * with k (fleet/sign.h; NULL: unsigned), which must outlive c.  The
 * policy_sha256 signed is the one the desired names (FLEET_SHA_NONE for
 * mode local).  A restored desired value that was signed before is signed
 * again with the new seq.  A desired or shadow expires FLEET_DOC_TTL_S
 * after it is signed, a policy never (a desired names it by its sha256).
 *
 * The seq is the controller's own counter, never the store's revision: the
 * signed document FLEET_SEQ_KEY (kind counter, this controller's key and
 * fleet) holds the last one taken; each step reads and verifies it and
 * puts max(counter + 1, the wall clock in ns, this process's last + 1)
 * with a compare-and-swap on its mod_revision.  A counter that does not
 * verify (another key, another fleet, tampered) stops the controller
 * (-EPERM, naming the key and why).  No counter (the first run, or one an
 * operator deleted): the next seq is the wall clock in ns, above every seq
 * taken before as long as the clock does not go back (each seq taken was
 * at most the clock at its time, or one more than an earlier one), and
 * above the store revisions of the versions that signed with those
 * (~1e18 against etcd's revisions).  A store that lies about its revision,
 * or is restored from a snapshot, no longer moves the seq; one that serves
 * an old counter cannot move it back below the clock. */
struct sign_key;
void fleet_ctl_set_signer(struct fleet_ctl *c, const struct sign_key *k);

/* What a controller with a signer verifies before it acts or signs (it
 * signs only bytes it has verified):
 *  - its state, the rollout document (signed as kind rollout, host "*",
 *    on every write), on every read: one it cannot verify (unsigned, bad
 *    signature, a key it does not trust, another kind or rollout) stops
 *    it with -EPERM, err naming the key and reason, nothing written;
 *  - the policy the rollout names (policies/SHA verifies, signed for that
 *    sha256) before it leads or aborts it;
 *  - each host's desired value from before the rollout: kept only when it
 *    verifies (kind desired, that host), verified again before it is
 *    restored; a host whose value does not is never restored: a rollback
 *    leaves it as it is, state "kept", named in the timeline;
 *  - key rotation: a policy stored unsigned or under another key is
 *    replaced (compare-and-swap) by the file this rollout was given,
 *    signed with k.
 * The keys trusted: kr's (NULL: none; copied) and the signer's own, which
 * alone are trusted when this is not called.  Call after
 * fleet_ctl_set_signer.  0, or -E2BIG, -ENOMEM with err. */
struct sign_keyring;
int fleet_ctl_set_trust(struct fleet_ctl *c, const struct sign_keyring *kr, struct nt_err *err);

/* The fleet id signed into every document (SIGN_FLEET_DEFAULT unless
 * set): a host admits only its own fleet's.  0, or -EINVAL (not a name)
 * with err, c unchanged. */
int fleet_ctl_set_fleet(struct fleet_ctl *c, const char *fleet, struct nt_err *err);

/* Sign and put the timestamp (FLEET_TIMESTAMP_KEY, kind timestamp, the
 * next seq, expiring FLEET_TIMESTAMP_TTL_S from now): the proof of life a
 * host measures its freshness by (`fleet timestamp`, run on a schedule).
 * 0 with *ret (its seq and time), or -EINVAL (no signing key), -EPERM (the
 * counter does not verify), a store error, with err. */
struct fleet_stamp;
int fleet_ctl_timestamp(struct fleet_ctl *c, struct fleet_stamp *ret, struct nt_err *err);

/* The policy text a rollout stores, signs and hashes (item 7 of issue
 * 24): path (a file, or a NAME on the policy search path, policy.h) with
 * its includes resolved on this machine's files (policy_flatten, with
 * flags: policy_trust_flags()), as one self-contained text with no
 * include = line, then parsed as a buffer, the way each host validates it.
 * Returns 0 with *ret_text (malloc'd, NUL-terminated) and *ret_len, or
 * policy_load's errors (-EINVAL, -ENOENT, -EACCES, -EISDIR, -EPERM,
 * -ENOMEM) with err "FILE:LINE: what", never about a buffer; outputs
 * untouched on error. */
int fleet_ctl_policy_text(const char *path, unsigned flags, char **ret_text, size_t *ret_len, struct nt_err *err);

/* Store the policy (create-only), plan the waves over the hosts alive now
 * and create the rollout (only if no rollout of that name exists, and none
 * other is running).  0, or -EEXIST, -EBUSY, -EINVAL (no hosts), a store
 * error; nothing is written to a host's keys. */
int fleet_ctl_create(struct fleet_ctl *c, const struct fleet_rollout_opts *o, struct nt_err *err);

/* Become the rollout's leader (waiting up to the lease TTL for a dead
 * one's lease when wait_leader) and step it until it is final; abort: roll
 * it back.  0 with *ret_final its end state, or -ENOENT (no such
 * rollout), -EBUSY (another controller leads it), -ENOLCK (the lease was
 * lost), a store error. */
int fleet_ctl_run(struct fleet_ctl *c, const char *name, bool abort, bool wait_leader, enum fleet_state *ret_final,
		  struct nt_err *err);

/* Ask for an abort: the running leader rolls back; without one, this call
 * leads the rollback itself.  0 with *ret_final, or as fleet_ctl_run. */
int fleet_ctl_abort(struct fleet_ctl *c, const char *name, enum fleet_state *ret_final, struct nt_err *err);

/* Read rollout name (-ENOENT when absent), or every rollout (*ret_n may
 * be 0).  Release each with fleet_rollout_release, the array with free. */
int fleet_ctl_get(struct fleet_ctl *c, const char *name, struct fleet_rollout *ret, struct nt_err *err);
int fleet_ctl_list(struct fleet_ctl *c, struct fleet_rollout **ret, unsigned *ret_n, struct nt_err *err);

/* One host as the store knows it. */
struct fleet_host_row {
	char host[FLEET_NAME_MAX];
	bool alive;
	struct fleet_hostinfo info;       /* alive only */
	bool has_status;
	struct fleet_status status;
	bool has_desired;
	struct fleet_desired desired;
	int64_t desired_rev, shadow_rev;  /* the keys' mod_revisions, 0 absent */
	char bad[256];                    /* a value that did not parse: which and why */
	char record_sha[FLEET_SHA_LEN + 1];   /* its class's policy of record ("": none; fleet_ctl_hosts) */
	bool behind;                      /* its status names another policy than its class's record */
};

/* The hosts rollout r skipped (FLEET_R_LOST) as they are now in rows
 * (sorted by name, fleet_ctl_hosts'): converged (registered, its status
 * verified with r's sha256), left (no key at all: removed from the
 * fleet), down (keys, no registration: its daemon is not running) or
 * behind (registered, not verified with r's sha256).  buf: "h3 (behind),
 * h4 (down), h5 (left)" (truncated to size; "" none).  Returns how many
 * are down or behind; *ret_skipped: how many were skipped. */
unsigned fleet_ctl_behind(const struct fleet_rollout *r, const struct fleet_host_row *rows, unsigned n, char *buf,
			  size_t size, unsigned *ret_skipped);

/* After rollout r ended done (not a shadow; else nothing is waited for):
 * wait up to timeout_s for each host it skipped to converge (through its
 * class's record) or leave, watching the hosts' keys.  0 with buf
 * (fleet_ctl_behind's list) and *ret_behind (0: none behind), or a store
 * error with err. */
int fleet_ctl_converge(struct fleet_ctl *c, const struct fleet_rollout *r, double timeout_s, char *buf, size_t size,
		       unsigned *ret_behind, struct nt_err *err);

/* Every host with a key in the store, sorted by name (free *ret), each
 * marked behind when its class has a record (/nodetune/classes/) whose
 * sha256 is not the one its status names. */
int fleet_ctl_hosts(struct fleet_ctl *c, struct fleet_host_row **ret, unsigned *ret_n, struct nt_err *err);

#endif
