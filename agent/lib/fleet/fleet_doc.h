/* SPDX-License-Identifier: MIT */
/* fleet_doc.h — the fleet's store layout and its documents, hardware
 * classes and the wave planner: pure functions over JSON text and structs
 * (no clock, no network).  fleet.h is the rollout state machine over them;
 * fleet_ctl.h drives it over etcd, fleet_host.h is the daemon's side.
 *
 * Key layout (etcd 3.4; every value is one JSON object; names are
 * [A-Za-z0-9._-], 1 to 63 bytes):
 *
 *   /nodetune/hosts/NAME            the host is alive: written by its daemon
 *                                   under its lease (TTL: 5 daemon intervals,
 *                                   3..60 s), gone when the lease expires.
 *                                   {"host","class","label","shape","pid",
 *                                    "started"}
 *   /nodetune/hosts/NAME/desired    what the host should run; written only by
 *                                   a controller, in the same transaction as
 *                                   the rollout step that decided it; no lease
 *                                   (it outlives the controller and the host).
 *                                   {"rollout","mode":"apply"|"gate"|"local",
 *                                    "policy","sha256",
 *                                    "gate":{"name","budget","allow_inconclusive"}}
 *                                   a gate is a name the host maps to a command
 *                                   of its own (gates.h): no command travels here.
 *                                   mode "local": the host's own --policy file.
 *   /nodetune/hosts/NAME/shadow     a shadow request {"rollout","policy","sha256"}:
 *                                   plan and verify it here, change nothing.
 *   /nodetune/hosts/NAME/status     what the host runs and what it made of the
 *                                   last desired/shadow; written by the host;
 *                                   no lease (the last word of a dead host stays).
 *                                   {"host","class","label","policy","sha256",
 *                                    "state","desired_rev","error","time",
 *                                    "verify":{"time","ok","checked","drifted"},
 *                                    "gate":{"rev","verdict","ratio","ci":[lo,hi],
 *                                            "explanation":[...]},
 *                                    "shadow":{"rev","sha256","valid","error",
 *                                              "changes":[{"path","from","to"}]}}
 *                                   desired_rev is the mod_revision of the
 *                                   desired key it acted on: a controller
 *                                   trusts a status only for the desired it
 *                                   wrote itself.
 *   /nodetune/policies/SHA256       a policy's bytes {"name","sha256","content"
 *                                   (base64)}; immutable, written create-only;
 *                                   a host checks the sha256 of the bytes.
 *   /nodetune/rollouts/NAME         the rollout's head: fleet_rollout as JSON
 *                                   without its hosts (state, options, timeline;
 *                                   per wave its state, host count, hosts per
 *                                   state and its pages' seqs: fleet_rollout_
 *                                   head_json); a signing controller stores it
 *                                   in a signed envelope (kind rollout, host
 *                                   "*", sign.h) and acts only on one it
 *                                   verifies.  A step's last transaction puts
 *                                   it, comparing its mod_revision and the
 *                                   leader key's create_revision.
 *   /nodetune/rollouts/NAME/pages/W.P  hosts P*page_hosts.. of wave W (the
 *                                   head says page_hosts, FLEET_PAGE_HOSTS):
 *                                   {"rollout","wave","page","hosts":[...]},
 *                                   signed as kind rollout for host "wW.pP",
 *                                   at a seq no older than the head names for
 *                                   it; put with its hosts' desired keys in
 *                                   one transaction comparing its
 *                                   mod_revision and the leader's.
 *   /nodetune/rollouts/NAME/leader  the controller that may advance it, under
 *                                   its lease (FLEET_LEADER_TTL_S), created
 *                                   only when absent.
 *   /nodetune/classes/CLASS/record  the hardware class's policy of record: a
 *                                   desired document (mode apply, its
 *                                   rollout, policy, sha256) signed as kind
 *                                   record, host "*", no expiry; put in the
 *                                   step that ends a rollout done (not a
 *                                   shadow) for each class it covered.  A
 *                                   host whose desired is absent or older
 *                                   (seq) follows it: a host skipped, or one
 *                                   that joins later, converges.
 *   /nodetune/seq                   the controller's counter, signed (kind
 *                                   counter): {"seq","time"}; each signing
 *                                   step takes the next value with a
 *                                   compare-and-swap (fleet_ctl.h).
 *   /nodetune/timestamp             the controller's proof of life, signed
 *                                   (kind timestamp) with a short expiry and
 *                                   put again on a schedule (`fleet
 *                                   timestamp`): {"seq","time"}; a host whose
 *                                   last one is too old says it is frozen.
 *
 * Waves: the first (spec "1/class") takes one host of each hardware class
 * (the first by name); each "P%" wave brings the hosts done to ceil(P% of
 * the fleet) — cumulative, of the hosts alive when the rollout started —
 * and takes at least one host while any is left; a wave with no host left
 * is dropped; the last must be 100%.  Hosts within a percentage wave are taken round-robin across
 * classes.  Every host is in exactly one wave.  Hosts that register after
 * the rollout started are not part of it.
 *
 * Everything read from the store is untrusted: the parsers (fleet_doc_parse_*)
 * check types, bounds and names, and fail with -EINVAL and a message that
 * names the key.
 */
#ifndef NODETUNE_FLEET_DOC_H
#define NODETUNE_FLEET_DOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sha2.h>

#include "base/log.h"
#include "fleet/gates.h"
#include "machine/topo.h"

#define FLEET_ROOT "/nodetune/"
#define FLEET_NAME_MAX 64            /* host and rollout names, with the NUL */
#define FLEET_CLASS_LEN 12           /* hex digits of a class id */
#define FLEET_LABEL_MAX 64
#define FLEET_SHA_LEN (SHA256_DIGEST_STRING_LENGTH - 1)
#define FLEET_SHA_NONE "0000000000000000000000000000000000000000000000000000000000000000" /* signed for a desired naming no policy */
#define FLEET_WAVES_MAX 16
#define FLEET_HOSTS_MAX 100000
#define FLEET_EVENTS_MAX 256         /* timeline entries kept in a rollout */
#define FLEET_LEADER_TTL_S 5
/* How long `fleet resume` waits for a dead controller's leader lease: 3x
 * the 99th percentile of that lease's life after a kill -9 (4.95 s in 20
 * runs under load, 5.32 s under ASan at load 38-59: the largest of 20, an
 * upper bound; bench/timing_margins.sh leader_lease_s). */
#define FLEET_LEADER_WAIT_S 16
#define FLEET_TEXT_MAX 2048          /* an error or explanation kept in a document */
#define FLEET_SEQ_KEY FLEET_ROOT "seq"
#define FLEET_TIMESTAMP_KEY FLEET_ROOT "timestamp"

/* ---- names and keys ------------------------------------------------------ */

/* Is s a valid host or rollout name? */
bool fleet_name_valid(const char *s);

/* The key of what (one of "", "desired", "shadow", "status"; "" is the host's
 * liveness key) for host, or of rollout name / its leader, into buf.
 * Returns buf. */
char *fleet_doc_host_key(char *buf, size_t size, const char *host, const char *what);
char *fleet_rollout_key(char *buf, size_t size, const char *name, bool leader);
char *fleet_doc_policy_key(char *buf, size_t size, const char *sha256);
/* FLEET_ROOT "classes/CLASS_ID/record" into buf: a class's policy of record. */
char *fleet_record_key(char *buf, size_t size, const char *class_id);

/* Which key of the hosts' prefix is key: FLEET_KEY_HOST (liveness),
 * _DESIRED, _SHADOW, _STATUS, with the host's name in ret_host; or
 * FLEET_KEY_OTHER. */
enum fleet_key_kind { FLEET_KEY_HOST, FLEET_KEY_DESIRED, FLEET_KEY_SHADOW, FLEET_KEY_STATUS, FLEET_KEY_OTHER };
enum fleet_key_kind fleet_key_parse(const char *key, char ret_host[FLEET_NAME_MAX]);

/* ---- hardware classes ---------------------------------------------------- */

/* The class of a machine: a hash of its shape (packages; per NUMA node, in
 * order, its cores; GPUs by PCI vendor:device and NUMA node) and a label to
 * read ("2s-2n-48c-8gpu-H100").  shape is the hashed text. */
struct fleet_class {
	char id[FLEET_CLASS_LEN + 1];
	char label[FLEET_LABEL_MAX];
	char shape[512];
};

/* Fill *ret from t.  Returns 0, or -EINVAL (a topology without NUMA
 * nodes) with *ret untouched. */
int fleet_class_of(const struct topo *t, struct fleet_class *ret);

/* ---- documents ----------------------------------------------------------- */

enum fleet_mode { FLEET_MODE_APPLY, FLEET_MODE_GATE, FLEET_MODE_LOCAL };

/* /nodetune/hosts/NAME/desired and /shadow (mode unused there). */
struct fleet_desired {
	char rollout[FLEET_NAME_MAX];
	enum fleet_mode mode;
	char policy[FLEET_NAME_MAX];     /* a name to show; "" for local */
	char sha256[FLEET_SHA_LEN + 1];  /* "" for local */
	char gate[GATE_NAME_MAX + 1];    /* mode gate: the gate's name (gates.h) */
	double gate_budget;
	bool allow_inconclusive;
};

/* /nodetune/policies/SHA256, decoded. */
struct fleet_policy_doc {
	char name[FLEET_NAME_MAX];
	char sha256[FLEET_SHA_LEN + 1];
	char *content;                   /* content_len bytes + NUL */
	size_t content_len;
};

/* What a host says it does (its status key's "state"). */
enum fleet_hstate {
	FLEET_H_VERIFIED,     /* running sha256, verified without drift */
	FLEET_H_DRIFT,        /* running it, the last verify found drift */
	FLEET_H_FAILED,       /* the desired policy could not be applied (rolled back to the old) */
	FLEET_H_INVALID,      /* the desired policy was refused (validation, plan, fetch) */
	FLEET_H_GATED,        /* the gate ran; gate.verdict says how */
	FLEET_H__COUNT
};
extern const char *const fleet_hstate_names[FLEET_H__COUNT];

struct fleet_status {
	char host[FLEET_NAME_MAX];
	char class_id[FLEET_CLASS_LEN + 1];
	char label[FLEET_LABEL_MAX];
	char policy[FLEET_NAME_MAX];
	char sha256[FLEET_SHA_LEN + 1];
	enum fleet_hstate state;
	int64_t desired_rev;             /* the desired key's mod_revision acted on; 0 none */
	char error[FLEET_TEXT_MAX];
	double time;
	bool verify_ok;
	unsigned checked, drifted;
	double verify_time;
	/* gate */
	int64_t gate_rev;
	char verdict[24];
	double ratio, ci_lo, ci_hi;
	char explanation[FLEET_TEXT_MAX];
	/* shadow */
	int64_t shadow_rev;
	char shadow_sha[FLEET_SHA_LEN + 1];
	bool shadow_valid;
	unsigned shadow_changes;
	char shadow_text[FLEET_TEXT_MAX];  /* "path: from -> to; ..." or the error */
};

/* /nodetune/hosts/NAME (liveness) */
struct fleet_hostinfo {
	char host[FLEET_NAME_MAX];
	char class_id[FLEET_CLASS_LEN + 1];
	char label[FLEET_LABEL_MAX];
	long pid;
	double started;
};

/* Parsers of store values: buf[0..len) from key (named in messages).
 * Return 0 and fill *ret, or -EINVAL (err says what and names the key),
 * -ENOMEM; *ret untouched on error. */
int fleet_doc_parse_desired(const char *key, const char *buf, size_t len, struct fleet_desired *ret,
			struct nt_err *err);
int fleet_doc_parse_policy_doc(const char *key, const char *buf, size_t len, struct fleet_policy_doc *ret,
			   struct nt_err *err);
int fleet_doc_parse_status(const char *key, const char *buf, size_t len, struct fleet_status *ret,
		       struct nt_err *err);
int fleet_doc_parse_hostinfo(const char *key, const char *buf, size_t len, struct fleet_hostinfo *ret,
			 struct nt_err *err);
void fleet_policy_doc_release(struct fleet_policy_doc *p);

/* The counter and timestamp documents: a seq and the wall time (UNIX
 * seconds) they were signed at. */
struct fleet_stamp {
	uint64_t seq;                    /* <= INT64_MAX */
	int64_t time;                    /* >= 0 */
};
int fleet_doc_parse_stamp(const char *key, const char *buf, size_t len, struct fleet_stamp *ret, struct nt_err *err);
char *fleet_stamp_json(const struct fleet_stamp *s);

/* The documents as compact JSON text (the caller frees); NULL on out of
 * memory.  fleet_policy_doc_json hashes content itself. */
char *fleet_desired_json(const struct fleet_desired *d, bool shadow);
char *fleet_policy_doc_json(const char *name, const char *content, size_t len,
			    char ret_sha[FLEET_SHA_LEN + 1]);
char *fleet_status_json(const struct fleet_status *s);
char *fleet_hostinfo_json(const struct fleet_hostinfo *h);

/* ---- the rollout --------------------------------------------------------- */

enum fleet_state {
	FLEET_RUNNING,        /* waves go on */
	FLEET_ROLLING_BACK,   /* the changed hosts go back to what they had */
	FLEET_DONE,           /* every wave passed (or, shadow: every host answered) */
	FLEET_ROLLED_BACK,    /* a wave or the gate failed; the changed hosts went back */
	FLEET_ABORTED,        /* `fleet abort`; the changed hosts went back */
	FLEET_FAILED,         /* it could not go on nor finish going back (see reason) */
	FLEET_S__COUNT
};
extern const char *const fleet_state_names[FLEET_S__COUNT];

enum fleet_wstate { FLEET_W_PENDING, FLEET_W_GATING, FLEET_W_APPLYING, FLEET_W_PASSED, FLEET_W_FAILED,
		    FLEET_W_ROLLED_BACK, FLEET_W__COUNT };
extern const char *const fleet_wstate_names[FLEET_W__COUNT];

/* A host's part in a rollout. */
enum fleet_rstate {
	FLEET_R_PENDING,      /* not reached yet */
	FLEET_R_SENT,         /* its desired key names the new policy (apply or gate) */
	FLEET_R_GATE_PASSED,  /* the canary's A/B said it may go on */
	FLEET_R_GATE_FAILED,  /* regression (or inconclusive, not allowed) */
	FLEET_R_VERIFIED,     /* applied and verified */
	FLEET_R_FAILED,       /* it reported the apply failed or the policy invalid */
	FLEET_R_LOST,         /* its lease expired and the wave timed out: skipped */
	FLEET_R_RESTORING,    /* its desired key went back to what it was */
	FLEET_R_RESTORED,     /* and it reported that back, verified */
	FLEET_R_SHADOWED,     /* shadow: it answered (valid or not: see note) */
	FLEET_R_KEPT,         /* to roll back, but its desired from before does not verify: left as it is */
	FLEET_R__COUNT
};
extern const char *const fleet_rstate_names[FLEET_R__COUNT];

struct fleet_rhost {
	char host[FLEET_NAME_MAX];
	char class_id[FLEET_CLASS_LEN + 1];
	char label[FLEET_LABEL_MAX];
	enum fleet_rstate state;
	char *prev_desired;       /* the desired value before the rollout (a signed controller keeps
				   * only an envelope it verified); NULL: none (mode local) */
	int64_t prev_rev;         /* its mod_revision (0: absent), compared when replaced */
	char prev_refused[24];    /* why the controller did not keep it (sign_reject_names: "unsigned",
				   * "unknown_key", ...); "": kept or none.  Such a host is never
				   * restored: a rollback leaves it as it is (FLEET_R_KEPT) */
	char verdict[24];
	double ratio, ci_lo, ci_hi;
	char *note;               /* why it failed, the gate's explanation, the shadow's finding */
	bool shadow_valid;
	unsigned shadow_changes;
};

struct fleet_wave {
	enum fleet_wstate state;
	char spec[16];            /* "1/class", "10%" */
	double started;           /* wall time it was sent; 0 pending */
	struct fleet_rhost *hosts;
	unsigned n;
};

struct fleet_event {
	double t;
	char *what;
};

struct fleet_rollout {
	char name[FLEET_NAME_MAX];
	char policy[FLEET_NAME_MAX];
	char sha256[FLEET_SHA_LEN + 1];
	enum fleet_state state;
	char waves_spec[128];
	char gate[GATE_NAME_MAX + 1];  /* the gate's name; "" no gate */
	double gate_budget, wave_timeout;
	bool shadow, allow_inconclusive;
	enum fleet_state goal;    /* while rolling back: ROLLED_BACK or ABORTED */
	unsigned wave;            /* the current wave */
	struct fleet_wave *waves;
	unsigned n_waves;
	char *reason;             /* why it ended as it did; NULL */
	struct fleet_event *events;
	unsigned n_events;
	double created, updated;
	double phase_started;     /* when the current wave (or the rollback) was sent */
};

/* One wave of a spec, parsed. */
struct fleet_wave_spec {
	bool per_class;           /* "1/class" (only first) */
	double fraction;          /* "P%": P/100 */
	char text[16];
};

/* Parse "1/class,1%,10%,50%,100%" into ret[0..*ret_n).  "1/class" only
 * first; percentages in (0, 100], increasing; the last 100%.  Returns 0 or
 * -EINVAL with err naming the item. */
int fleet_waves_parse(const char *spec, struct fleet_wave_spec ret[FLEET_WAVES_MAX], unsigned *ret_n,
		      struct nt_err *err);

/* A host alive when the rollout starts. */
struct fleet_member {
	char host[FLEET_NAME_MAX];
	char class_id[FLEET_CLASS_LEN + 1];
	char label[FLEET_LABEL_MAX];
	char *desired;            /* its desired value now (borrowed); NULL none */
	int64_t desired_rev;
};

/* Plan r->waves from the members (any order) and the spec (see the header
 * comment).  Returns 0, or -EINVAL (no members), -ENOMEM; r->waves is
 * untouched on error. */
int fleet_plan_waves(struct fleet_rollout *r, const struct fleet_member *m, unsigned n,
		     const struct fleet_wave_spec *spec, unsigned n_spec, struct nt_err *err);

/* The rollout as JSON text (the caller frees; NULL out of memory), and
 * back.  fleet_doc_parse_rollout: 0 or -EINVAL/-ENOMEM with err; *ret
 * untouched on error; release with fleet_rollout_release. */
char *fleet_rollout_json(const struct fleet_rollout *r);
int fleet_doc_parse_rollout(const char *key, const char *buf, size_t len, struct fleet_rollout *ret,
			struct nt_err *err);
void fleet_rollout_release(struct fleet_rollout *r);

/* Add a timeline entry ("wave 1 sent: h1 h2"); the oldest are dropped past
 * FLEET_EVENTS_MAX. */
void fleet_event(struct fleet_rollout *r, double t, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Deep copy; 0 or -ENOMEM. */
int fleet_rollout_copy(const struct fleet_rollout *r, struct fleet_rollout *ret);

/* ---- the rollout in the store: a head and its pages ---------------------- */

/* A rollout is stored as a small head (/nodetune/rollouts/NAME: the
 * rollout without its hosts; per wave its host count, how many are in each
 * state and the seq of each of its pages) and pages
 * (/nodetune/rollouts/NAME/pages/W.P: hosts P*page_hosts.. of wave W), each
 * its own document, changed with a compare-and-swap of its own.  Pages are
 * numbered g = 0.. over every wave in order. */
#define FLEET_PAGE_HOSTS 100         /* hosts per page: a page and its hosts' desired keys fit one etcd txn
				      * (--max-txn-ops 128) */
#define FLEET_PAGE_HOSTS_MAX 120

struct fleet_layout {
	unsigned page_hosts;
	unsigned n_pages;
	uint64_t *seq;            /* [n_pages]: the seq page g was last written with (the head's record) */
	int64_t *rev;             /* [n_pages]: its key's mod_revision as read (0: absent) */
};

/* The pages of wave w (ceil(n / page_hosts)). */
unsigned fleet_wave_pages(const struct fleet_wave *w, unsigned page_hosts);

/* l for r's waves with page_hosts each: every seq and rev 0.  0 or -ENOMEM
 * (l zeroed).  Release with fleet_layout_release. */
int fleet_layout_init(struct fleet_layout *l, const struct fleet_rollout *r, unsigned page_hosts);
void fleet_layout_release(struct fleet_layout *l);

/* Page g's wave and page number within it: true, or false past the last. */
bool fleet_page_locate(const struct fleet_rollout *r, const struct fleet_layout *l, unsigned g, unsigned *ret_wave,
		       unsigned *ret_page);
/* The page that holds r->waves[wave].hosts[index]. */
unsigned fleet_page_of(const struct fleet_rollout *r, const struct fleet_layout *l, unsigned wave, unsigned index);
/* FLEET_ROOT "rollouts/NAME/pages/W.P" into buf; returns buf. */
char *fleet_page_key(char *buf, size_t size, const char *name, unsigned wave, unsigned page);

/* The head of r (fleet_rollout_json's members, each wave's hosts replaced
 * by "n", "counts" and "pages": l->seq; "page_hosts"), and page g of r:
 * {"rollout","wave","page","hosts":[...]}.  NULL out of memory (or g past
 * the last page). */
char *fleet_rollout_head_json(const struct fleet_rollout *r, const struct fleet_layout *l);
char *fleet_page_json(const struct fleet_rollout *r, const struct fleet_layout *l, unsigned g);

/* Parse a head: *ret with each wave's hosts zeroed (its pages fill them),
 * *l with the pages' seqs (and revs 0).  0 or -EINVAL/-ENOMEM with err,
 * both untouched on error. */
int fleet_doc_parse_rollout_head(const char *key, const char *buf, size_t len, struct fleet_rollout *ret,
			     struct fleet_layout *l, struct nt_err *err);
/* Parse page g of r (its rollout, wave, page and host count checked) into
 * r's hosts.  0 or -EINVAL/-ENOMEM with err. */
int fleet_doc_parse_page(const char *key, const char *buf, size_t len, struct fleet_rollout *r,
		     const struct fleet_layout *l, unsigned g, struct nt_err *err);

#endif
