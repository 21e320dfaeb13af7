/* SPDX-License-Identifier: MIT */
/* fleet_ctl_test.h — what fleet_ctl.c exports for its unit test only
 * (tests/unit/fleet/test_fleet_ctl.c): the controller's steps between the
 * store and the state machine as pure functions (the hosts' keys to rows,
 * rows to what fleet_step observes, a write to the value it puts, the new
 * events of a step, what the run loop does after a pass, the counter).  Nothing outside
 * fleet_ctl.c and its test includes this. */
#ifndef NODETUNE_FLEET_CTL_TEST_H
#define NODETUNE_FLEET_CTL_TEST_H

#include "fleet/etcd.h"
#include "fleet/fleet_ctl.h"

/* The hosts' key-values (of FLEET_ROOT "hosts/", any order) as one row per
 * host, sorted by name: alive when its liveness key is there, its parsed
 * desired, status and info, the desired and shadow mod_revisions; a value
 * that does not parse is the row's "bad" (that key's has_ flag false); keys
 * that are not a host's are skipped.  0 with *ret (free it) and *ret_n, or
 * -ENOMEM. */
int fleet_ctl_rows(const struct etcd_kv *kvs, size_t n_kvs, struct fleet_host_row **ret, unsigned *ret_n);

/* Apply watch events ev[0..n_ev) of the hosts' keys to *rows (sorted by
 * name, *n of them, room for *cap; grown as hosts appear): a put as
 * fleet_ctl_rows takes it, a delete of the liveness key makes the host
 * not alive, of its desired, shadow or status forgets that key.  Keys that
 * are not a host's are skipped.  0 or -ENOMEM. */
struct etcd_event;
int fleet_ctl_rows_apply(struct fleet_host_row **rows, unsigned *n, unsigned *cap, const struct etcd_event *ev,
			 size_t n_ev);

/* What fleet_step observes of each host of r (obs[w][i] for
 * r->waves[w].hosts[i]) from the rows (sorted by name); a host without a
 * row is observed as nothing (not alive, no keys).  NULL on out of memory;
 * free with fleet_ctl_observe_free(obs, r->n_waves). */
struct fleet_observed **fleet_ctl_observe(const struct fleet_rollout *r, const struct fleet_host_row *rows, unsigned n);
void fleet_ctl_observe_free(struct fleet_observed **obs, unsigned n);

/* The value write w of the step to r puts (the caller frees; NULL out of
 * memory): the rollout's desired (apply or gate, with its gate) or shadow
 * document, or for a restore the host's desired value from before the
 * rollout, or mode local when it had none. */
char *fleet_ctl_write_value(const struct fleet_rollout *r, const struct fleet_write *w);

/* What a controller with a signer verifies before it signs (fleet_ctl.h,
 * fleet_ctl_set_trust), on a controller whose store is not used. */

/* Is the stored policy document kv an authentic one signed by c's own key
 * for sha?  (No: a signing controller stores it again, key rotation.) */
bool fleet_ctl_policy_ours(struct fleet_ctl *c, const struct etcd_kv *kv, const char *sha);

/* The rollout document's store value (its head, fleet_rollout_head_json,
 * every page at seq): with a signer sealed (kind rollout, host "*", r's
 * sha256) with seq.  0 with *ret (free it),
 * -EINVAL or -ENOMEM with err. */
int fleet_ctl_rollout_value(const struct fleet_ctl *c, const struct fleet_rollout *r, uint64_t seq, char **ret,
			    struct nt_err *err);

/* The rollout document kv of rollout name.  check (a controller with a
 * signer, about to act on it): an envelope of kind rollout for name, by a
 * key c trusts, whose document names name and the sha256 signed; else
 * -EPERM with err naming the key and the reason.  Without check: the
 * document, an envelope unwrapped unverified (shown, never acted on).
 * 0, -EPERM, -EINVAL (not a rollout document), -ENOMEM; *ret untouched on
 * error (release it with fleet_rollout_release). */
int fleet_ctl_rollout_parse(struct fleet_ctl *c, const char *name, bool check, const struct etcd_kv *kv,
			    struct fleet_rollout *ret, struct nt_err *err);

/* With a signer, before a rollback's restores are signed: a host whose
 * desired from before the rollout was not kept (prev_refused) or does not
 * verify now (a desired envelope for that host by a key c trusts) is left
 * as it is: state FLEET_R_KEPT, a note, a timeline entry naming it, its
 * prev_refused set; its write is dropped from w[0..*n_w) (the rest keep
 * their order).  0 or -ENOMEM. */
int fleet_ctl_keep_unverified(struct fleet_ctl *c, struct fleet_rollout *next, struct fleet_write *w, unsigned *n_w,
			      struct nt_err *err);

/* Sign *val, the value of write w to host h (fleet_ctl_write_value's),
 * for key, with seq: a restore of h's desired from before the rollout is
 * verified again and its document signed again; anything it cannot
 * verify is -EPERM and *val stays unsigned (the caller writes nothing).
 * 0, -EPERM, -EINVAL (not a desired document), -ENOMEM, with err. */
int fleet_ctl_sign_write(struct fleet_ctl *c, const struct fleet_write *w, struct fleet_rhost *h, uint64_t seq,
			 const char *key, char **val, struct nt_err *err);

/* Drop from w[0..n_w) the desired writes a host has already (its
 * observed desired names r, that mode, r's sha256 and gate): a step taken
 * again after a controller died between its transactions sends no host
 * the same desired twice.  Returns how many are left (their order kept). */
unsigned fleet_ctl_unsent(const struct fleet_rollout *r, struct fleet_observed *const *obs, struct fleet_write *w,
			  unsigned n_w);

/* The index of next's first event that r had not (those after r's last
 * event; all of them when r had none or its last one was dropped). */
unsigned fleet_ctl_new_events(const struct fleet_rollout *r, const struct fleet_rollout *next);

/* What the run loop does after a pass that returned rc: FINAL (1: the
 * rollout is over), STOP (-ENOLCK the leader lease is lost, -EACCES the
 * store refuses our credentials), RETRY (another error: said, then again
 * after a pause), AGAIN (0: next pass). */
enum fleet_ctl_next { FLEET_CTL_FINAL, FLEET_CTL_STOP, FLEET_CTL_RETRY, FLEET_CTL_AGAIN };
enum fleet_ctl_next fleet_ctl_after(int rc);

/* The seq after counter (the store's counter; 0: none), last (this
 * process's last; 0: none) at wall clock now_ns: the greatest of counter +
 * 1, last + 1 and now_ns, at most INT64_MAX. */
uint64_t fleet_ctl_seq_after(uint64_t counter, uint64_t last, uint64_t now_ns);

/* The counter value buf[0..len) as a key of kr (the controller's own, and
 * those it trusts besides: key_id is its own, for the message) of fleet
 * signed it: 0 with *ret_seq, or -EPERM (it does not verify: an untrusted
 * key, another fleet, a bad signature, not a counter, a document whose seq
 * is not the one signed) with err naming FLEET_SEQ_KEY, key_id and the
 * reason, or -ENOMEM; *ret_seq untouched on error. */
struct sign_keyring;
int fleet_ctl_counter_check(const struct sign_keyring *kr, const char *key_id, const char *fleet, const char *buf,
			    size_t len, uint64_t *ret_seq, struct nt_err *err);

/* Mark rows[0..n) behind (and their record_sha) from the records among
 * kvs (of FLEET_ROOT "classes/"; other keys and values that do not parse
 * are ignored): a row with a status of that class naming another sha256. */
void fleet_ctl_mark_behind(struct fleet_host_row *rows, unsigned n, const struct etcd_kv *kvs, size_t n_kvs);

/* The policy of record of each hardware class r covers, when r ends
 * done and is no shadow (else none: *ret NULL, *ret_n 0): at
 * fleet_record_key, a desired document of mode apply naming r's rollout,
 * policy and sha256, with a signer sealed as kind record, host "*", with
 * seq.  0, or -ENOMEM/-EINVAL with err (nothing kept).  Free *ret with
 * fleet_ctl_records_free. */
struct fleet_record {
	char key[128];
	char *val;
};
int fleet_ctl_records(const struct fleet_ctl *c, const struct fleet_rollout *r, uint64_t seq,
		      struct fleet_record **ret, unsigned *ret_n, struct nt_err *err);
void fleet_ctl_records_free(struct fleet_record *rec, unsigned n);

#endif
