/* SPDX-License-Identifier: MIT */
/* fleet_host.c — see fleet_host.h.
 *
 * Divisions: state and saying things; the lease thread; fetching and
 * validating a policy; applying, local, shadow; the status key; the tick;
 * start and stop.
 */
#include <errno.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tune/apply.h"
#include "base/nap.h"
#include "base/userfile.h"
#include "fleet/etcd.h"
#include "fleet/fleet_gate.h"
#include "fleet/gates.h"
#include "fleet/fleet_creds.h"
#include "fleet/fleet_host.h"
#include "fleet/fleet_host_test.h"
#include "fleet/sign.h"
#include "tune/limits.h"
#include "tune/verify.h"
#include "nt_clock.h"

/* Idle, a host makes a lease keepalive every ttl/3 and holds one watch
 * (re-armed every WATCH_S, or after an event); it puts its status only
 * when it changes, or every STATUS_EVERY_S, and reads its keys, its
 * class's record and the timestamp when the watch says so, or every
 * POLL_EVERY_S (a quarter of --fleet-max-age when that is shorter, not
 * under POLL_MIN_S): a record put for a class, or a timestamp, is not
 * watched. */
#define STATUS_EVERY_S 600.0
#define POLL_EVERY_S 600.0
#define POLL_MIN_S 30.0
#define WATCH_S 300.0
/* After a failed request, a thread waits BACKOFF_MIN_S doubled for each
 * failure in a row, up to its cap (the lease's: a sixth of its TTL, so two
 * retries fit before it lapses; the watch's: BACKOFF_WATCH_S), each pause
 * drawn between half and all of that: hosts cut off together (an etcd
 * restart, a partition healed, a fleet started at once) come back spread
 * out instead of in step, every half second, at a store that is already
 * slow. */
#define BACKOFF_MIN_S 0.5
#define BACKOFF_WATCH_S 30.0

struct fleet_host {
	struct fleet_host_config cfg;
	char host[FLEET_NAME_MAX];
	struct fleet_class cls;
	double ttl_s;
	int efd;
	pthread_t thread, watcher;
	bool thread_up, watcher_up;
	pthread_mutex_t lock;
	pthread_cond_t cond;       /* signalled on stop */
	bool stop;                 /* under lock */
	atomic_bool cancel;        /* stop: the watcher's long watch ends (etcd_set_cancel) */
	/* the daemon thread's */
	struct etcd *e;
	double next_poll, next_status, store_warned;
	int64_t done_desired_rev;  /* the desired revision answered */
	int64_t done_shadow_rev;
	int64_t failed_rev;        /* a desired revision refused: not tried again */
	int64_t record_refused_rev;   /* the class's record at a revision refused (said once) */
	struct fleet_status st;    /* what was last published (or is to be) */
	char *published;           /* its JSON, to publish only changes */
	char *running;             /* the bytes of the policy that runs (for the gate's arm A) */
	size_t running_len;
	struct sign_keyring *keys; /* NULL: none trusted */
	uint64_t last_seq;         /* the seq of the last desired answered (FLEET_HOST_SEQ) */
	char last_sha[SIGN_SHA_LEN + 1];   /* its bytes' sha256 (FLEET_HOST_SEQ; "" none) */
	uint64_t shadow_seq;       /* the last shadow's (not kept: a shadow changes nothing) */
	char shadow_sha[SIGN_SHA_LEN + 1];
	uint64_t ts_seq;           /* the last timestamp verified: its seq, bytes and time */
	char ts_sha[SIGN_SHA_LEN + 1];
	double ts_time;            /* UNIX seconds, 0: none since the start */
	int64_t ts_refused_rev;    /* a timestamp revision refused (counted once) */
	double start_wall;         /* the age of no timestamp is counted from here */
	bool said_frozen;
	unsigned long rejected[SIGN_REJ__COUNT];
	struct fleet_host_refusal last_refusal;   /* reason SIGN_REJ__COUNT: none yet */
	struct fleet_gate *gate;   /* the gate running; NULL: none */
	bool poll_after_gate;      /* the store asked something while it ran */
};

/* One line for the caller's note callback (none: nothing). */
#define say(fh, level, ...) notef((fh)->cfg.note, (fh)->cfg.note_arg, (level), __VA_ARGS__)

/* FNV-1a of a host's name: the member its clients start at (etcd_spread)
 * and its backoff's seed. */
static unsigned long name_hash(const char *s)
{
	unsigned long h = 2166136261UL;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619UL;
	return h;
}

double fleet_host_backoff(unsigned fails, double cap, unsigned *seed)
{
	double full = BACKOFF_MIN_S;

	if (fails == 0)
		return 0;
	for (unsigned i = 1; i < fails && full < cap; i++)
		full *= 2;
	full = fmin(full, fmax(cap, BACKOFF_MIN_S));
	return full / 2 + full / 2 * ((double)rand_r(seed) / RAND_MAX);
}

static void wake(struct fleet_host *fh)
{
	uint64_t one = 1;

	if (write(fh->efd, &one, sizeof(one)) < 0)
		return;   /* the counter is full: it is readable anyway */
}

/* ---- the lease thread -------------------------------------------------- */

/* Grant a lease when *lease is 0, and put the liveness key under it.  0
 * or a store error.  A lease granted whose put failed is kept in *lease
 * for the next try: a grant per try leaves a lease per failure for etcd to
 * expire, and a slow store fails many (5,000 hosts started at once granted
 * 46,774 leases).  A put refused for the lease (-ENOENT: it lapsed
 * meanwhile) clears it. */
static int host_register(struct fleet_host *fh, struct etcd *e, int64_t *lease, struct nt_err *err)
{
	struct fleet_hostinfo hi = { .pid = (long)getpid(), .started = nt_wall_s() };
	char key[128], *val;
	int r = 0;

	snprintf(hi.host, sizeof(hi.host), "%s", fh->host);
	snprintf(hi.class_id, sizeof(hi.class_id), "%s", fh->cls.id);
	snprintf(hi.label, sizeof(hi.label), "%s", fh->cls.label);
	if (!(val = fleet_hostinfo_json(&hi)))
		return err_set(err, -ENOMEM, "out of memory");
	if (!*lease)
		r = etcd_lease_grant(e, (int64_t)fh->ttl_s, lease, err);
	if (r == 0 && (r = etcd_put(e, fleet_doc_host_key(key, sizeof(key), fh->host, ""), val, strlen(val), *lease,
				    NULL, err)) == -ENOENT)
		*lease = 0;
	free(val);
	return r;
}

/* The first revision to watch from: after the keys as they are now. */
static int watch_start(struct fleet_host *fh, struct etcd *e, int64_t *ret_rev, struct nt_err *err)
{
	struct etcd_range rg = { 0 };
	char key[128];
	int r = etcd_get(e, fleet_doc_host_key(key, sizeof(key), fh->host, "desired"), false, &rg, err);

	if (r == 0)
		*ret_rev = rg.revision + 1;
	etcd_range_free(&rg);
	return r;
}

/* Wait up to ms for a change of this host's desired or shadow key. */
static int watch_once(struct fleet_host *fh, struct etcd *e, int64_t *rev, long ms, struct nt_err *err)
{
	struct etcd_events ev = { 0 };
	char prefix[128];
	bool changed = false;
	int r;

	fleet_doc_host_key(prefix, sizeof(prefix), fh->host, "");
	strcat(prefix, "/");
	r = etcd_watch(e, prefix, true, *rev, ms, &ev, err);
	if (r == -ESTALE) {
		*rev = 0;
		wake(fh);
		return 0;
	}
	if (r < 0)
		return r;
	for (size_t i = 0; i < ev.n_events; i++) {
		char host[FLEET_NAME_MAX];
		enum fleet_key_kind k = fleet_key_parse(ev.events[i].kv.key, host);

		changed |= k == FLEET_KEY_DESIRED || k == FLEET_KEY_SHADOW;
		if (ev.events[i].kv.mod_revision >= *rev)
			*rev = ev.events[i].kv.mod_revision + 1;
	}
	etcd_events_free(&ev);
	if (changed)
		wake(fh);
	return 0;
}

/* Sleep s seconds, or until stop.  Returns whether to stop. */
static bool fh_nap(struct fleet_host *fh, double s)
{
	return nap(&fh->lock, &fh->cond, &fh->stop, s);
}

/* A client of its own for a thread (credentials checked in fleet_host_start),
 * with the default timeout (ETCD_TIMEOUT_MS): a thread blocks no daemon
 * loop, and a request given up at a slow store was done for nothing. */
static struct etcd *thread_client(struct fleet_host *fh)
{
	struct etcd *e = etcd_open(fh->cfg.endpoints, NULL);

	if (e && fleet_creds_apply(e, fh->cfg.creds, NULL) < 0) {
		etcd_close(e);
		return NULL;
	}
	if (e)
		etcd_spread(e, name_hash(fh->host));
	return e;
}

/* Keep the lease (registering when there is none: the tick then reads the
 * keys again, which a host cut off may have missed), until stop. */
static void *lease_thread(void *arg)
{
	struct fleet_host *fh = arg;
	struct etcd *e = thread_client(fh);
	int64_t lease = 0;
	bool registered = false;
	unsigned fails = 0, seed = (unsigned)name_hash(fh->host);

	if (!e)
		return NULL;
	for (double pause = 0; !fh_nap(fh, pause);) {
		struct nt_err err = { 0 };
		int r = 0;

		if (!registered && (r = host_register(fh, e, &lease, &err)) == 0) {
			registered = true;
			wake(fh);
		} else if (registered && (r = etcd_lease_keepalive(e, lease, NULL, &err)) == -ENOENT) {
			lease = 0;       /* expired (a long cut): register again */
			registered = false;
		}
		fails = r == 0 ? 0 : fails + 1;
		pause = r == 0 ? fh->ttl_s / 3 : fleet_host_backoff(fails, fh->ttl_s / 6, &seed);
	}
	if (lease)
		etcd_lease_revoke(e, lease, NULL);   /* gone at once, not after the TTL */
	etcd_close(e);
	return NULL;
}

/* Watch this host's keys (one watch, re-armed every WATCH_S or after an
 * event; a failure retried from the same revision, nothing missed; a
 * compacted one re-read), until stop. */
static void *watch_thread(void *arg)
{
	struct fleet_host *fh = arg;
	struct etcd *e = thread_client(fh);
	int64_t rev = 0;
	unsigned fails = 0, seed = (unsigned)name_hash(fh->host) ^ 0x9e3779b9U;

	if (!e)
		return NULL;
	etcd_set_cancel(e, &fh->cancel);
	for (double pause = 0; !fh_nap(fh, pause);) {
		struct nt_err err = { 0 };
		int r = 0;

		if (rev == 0 && (r = watch_start(fh, e, &rev, &err)) == 0)
			wake(fh);
		if (r == 0 && rev)
			r = watch_once(fh, e, &rev, (long)(WATCH_S * 1000), &err);
		fails = r < 0 ? fails + 1 : 0;
		pause = fleet_host_backoff(fails, BACKOFF_WATCH_S, &seed);
	}
	etcd_close(e);
	return NULL;
}

/* ---- admitting a document (signatures) --------------------------------- */

/* The bytes as they are: an unsigned document under insecure. */
static int admit_bare(const char *buf, size_t len, struct sign_envelope *ret, struct nt_err *err)
{
	memset(ret, 0, sizeof(*ret));
	if (!(ret->doc = malloc(len + 1)))
		return err_set(err, -ENOMEM, "out of memory");
	memcpy(ret->doc, buf, len);
	ret->doc[len] = '\0';
	ret->doc_len = len;
	return 0;
}

/* A signed desired or shadow must say what its header signed. */
static int admit_agrees(const struct sign_envelope *e, const char *host, enum sign_reject *ret_reason,
			struct nt_err *err)
{
	struct fleet_desired d;
	char key[128];

	fleet_doc_host_key(key, sizeof(key), host, e->h.kind == SIGN_KIND_SHADOW ? "shadow" : "desired");
	if (fleet_doc_parse_desired(key, e->doc, e->doc_len, &d, NULL) < 0)
		return 0;                /* the caller's parse says why */
	if (strcmp(d.rollout, e->h.rollout) || strcmp(*d.sha256 ? d.sha256 : FLEET_SHA_NONE, e->h.policy_sha256)) {
		*ret_reason = SIGN_REJ_MALFORMED;
		return err_set(err, -EPERM, "refused (malformed): the document's rollout or sha256 is not the one signed");
	}
	return 0;
}

int fleet_host_admit(const struct sign_keyring *kr, bool insecure, const struct sign_expect *want,
		     const char *buf, size_t len, struct sign_envelope *ret, enum sign_reject *ret_reason,
		     struct nt_err *err)
{
	struct sign_envelope e = { 0 };
	enum sign_reject why = SIGN_REJ_UNSIGNED;
	struct nt_err perr = { 0 };
	int r = sign_envelope_parse(buf, len, &e, &why, &perr);

	if (r == -ENOMEM)
		return err_set(err, r, "out of memory");
	sign_envelope_release(&e);
	if (r < 0 && why == SIGN_REJ_UNSIGNED && insecure)
		return admit_bare(buf, len, ret, err);
	if (r == 0 && !kr) {
		*ret_reason = SIGN_REJ_UNKNOWN_KEY;
		return err_set(err, -EPERM, "refused (unknown_key): no signing key is trusted here");
	}
	if (r < 0) {
		*ret_reason = why;
		return err_set(err, -EPERM, "%s", perr.msg);
	}
	if ((r = sign_verify(kr, buf, len, want, &e, ret_reason, err)) < 0)
		return r;
	if ((want->kind == SIGN_KIND_DESIRED || want->kind == SIGN_KIND_SHADOW) &&
	    (r = admit_agrees(&e, want->host, ret_reason, err)) < 0) {
		sign_envelope_release(&e);
		return r;
	}
	*ret = e;
	return 0;
}

/* A refusal: counted and kept as the last one (what: its one line, as the
 * caller says it once). */
static void rejected(struct fleet_host *fh, enum sign_reject why, const char *what)
{
	if ((unsigned)why >= SIGN_REJ__COUNT)
		return;
	fh->rejected[why]++;
	fh->last_refusal.reason = why;
	fh->last_refusal.wall = nt_wall_s();
	snprintf(fh->last_refusal.what, sizeof(fh->last_refusal.what), "%.*s", (int)sizeof(fh->last_refusal.what) - 1, what);
}

bool fleet_host_last_refusal(const struct fleet_host *fh, struct fleet_host_refusal *ret)
{
	if (!fh || fh->last_refusal.reason >= SIGN_REJ__COUNT)
		return false;
	*ret = fh->last_refusal;
	return true;
}

unsigned long fleet_host_rejected(const struct fleet_host *fh, enum sign_reject r)
{
	return fh && (unsigned)r < SIGN_REJ__COUNT ? fh->rejected[r] : 0;
}

static int write_file(const char *path, const char *buf, size_t len);

int fleet_host_seq_parse(const char *line, uint64_t *ret_seq, char ret_sha[SIGN_SHA_LEN + 1])
{
	char sha[SIGN_SHA_LEN + 2] = "", *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(line, &end, 10);
	if (errno || end == line || *line == '-' || v > INT64_MAX)
		return -EINVAL;
	if (*end == ' ' && sscanf(end + 1, "%65[0-9a-f]", sha) == 1 && strlen(sha) == SIGN_SHA_LEN)
		end += 1 + SIGN_SHA_LEN;
	else
		sha[0] = '\0';           /* a file of before the hash: the seq alone */
	if (*end != '\n' && *end != '\0')
		return -EINVAL;
	*ret_seq = (uint64_t)v;
	memcpy(ret_sha, sha, SIGN_SHA_LEN + 1);
	return 0;
}

/* The last desired answered (its seq and bytes' sha256), from the state
 * dir (0 and "": none yet, or a file that does not parse). */
static void seq_load(struct fleet_host *fh)
{
	char path[4096], buf[128] = "";
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", fh->cfg.state_dir, FLEET_HOST_SEQ);
	if (!(f = fopen(path, "re")))
		return;
	if (!fgets(buf, sizeof(buf), f) || fleet_host_seq_parse(buf, &fh->last_seq, fh->last_sha) < 0)
		say(fh, LOG_WARNING, "fleet: %s: not 'SEQ SHA256': ignored", path);
	fclose(f);
}

/* A desired answered: kept ("SEQ SHA256\n", a temporary file renamed), so
 * that a restart still refuses older ones and never answers it twice. */
static void seq_note(struct fleet_host *fh, uint64_t seq, const char *sha)
{
	char path[4096], buf[128];
	int r;

	if (seq < fh->last_seq || (seq == fh->last_seq && !strcmp(sha, fh->last_sha)))
		return;
	fh->last_seq = seq;
	snprintf(fh->last_sha, sizeof(fh->last_sha), "%s", sha);
	snprintf(path, sizeof(path), "%s/%s", fh->cfg.state_dir, FLEET_HOST_SEQ);
	snprintf(buf, sizeof(buf), "%llu %s\n", (unsigned long long)seq, sha);
	if ((r = write_file(path, buf, strlen(buf))) < 0)
		say(fh, LOG_WARNING, "fleet: %s: %s (a restart would accept an older document)", path, nt_strerror(-r));
}

/* What this host expects of a document of kind, after last_seq (whose
 * bytes had last_sha). */
static struct sign_expect expect(const struct fleet_host *fh, enum sign_kind kind, uint64_t last_seq,
				 const char *last_sha)
{
	return (struct sign_expect){ .kind = kind, .host = fh->host, .last_seq = last_seq,
				     .fleet = fh->cfg.fleet_id, .now = nt_wall_s(), .last_sha = last_sha };
}

/* ---- fetching and validating a policy ---------------------------------- */

/* A policy and its plan for this host, checked as a file is. */
struct candidate {
	struct policy *policy;
	struct plan *plan;
	char sha[SHA256_DIGEST_STRING_LENGTH];
	char key_id[SIGN_ID_LEN + 1];  /* who signed the store's policy ("": unsigned, or the local file) */
	char name[FLEET_NAME_MAX];
	char *content;
	size_t len;
};

static void candidate_release(struct candidate *c)
{
	plan_free(c->plan);
	policy_free(c->policy);
	free(c->content);
	memset(c, 0, sizeof(*c));
}

static int limits_refuse(const struct limits *l, const struct policy *p, const struct topo *t, struct nt_err *err);

int fleet_host_policy_check(const char *buf, size_t len, const char *name, const struct limits *l,
			    const struct topo *t, struct policy **ret, struct nt_err *err)
{
	struct policy *p = policy_parse_buffer(buf, len, name, err);
	char *inc;
	int r;

	/* a store's policy is self-contained (the controller flattens its
	 * includes): say so in the fleet's terms */
	if (!p && (inc = strstr(err->msg, ": include in a policy given as a buffer")))
		snprintf(inc, sizeof(err->msg) - (size_t)(inc - err->msg), ": include = in a policy from the store, "
			 "which must be self-contained (a rollout stores its policy with the includes resolved)");
	if (!p)
		return err->code ? err->code : -EINVAL;
	if ((r = limits_refuse(l, p, t, err)) < 0) {
		policy_free(p);
		return r;
	}
	*ret = p;
	return 0;
}

/* Is policy p within the site limits l on machine t (NULL l: none)?  0, or
 * -EPERM with err "refused by the site limits: WHAT" (what limits_check
 * says: the key, its value and the limit). */
static int limits_refuse(const struct limits *l, const struct policy *p, const struct topo *t, struct nt_err *err)
{
	struct nt_err e = { 0 };

	if (!l || limits_check(l, p, t, &e) == 0)
		return 0;
	return err_set(err, e.code ? e.code : -EPERM, "refused by the site limits: %s", e.msg);
}

/* The site limits in force on this host (cfg.limits_path, NULL: the default
 * file when it exists), read for each policy so that an edit counts at
 * once; NULL with err when they cannot be read (a limit that cannot be
 * checked is not met: the policy is refused). */
static struct limits *host_limits(const struct fleet_host *fh, struct nt_err *err)
{
	struct nt_err e = { 0 };
	struct limits *l = limits_load(fh->cfg.limits_path, policy_trust_flags(), &e);

	if (!l)
		err_set(err, e.code ? e.code : -EINVAL, "refused: the site limits cannot be read: %s", e.msg);
	return l;
}

/* Parse c->content (named c->name), check it against the site limits and
 * plan it on this host.  0 or -EINVAL/-EPERM with err ("NAME:LINE: what",
 * the limit passed, or the planner's reason). */
static int candidate_check(struct fleet_host *fh, struct candidate *c, const struct fleet_host_view *v,
			   struct nt_err *err)
{
	struct limits *l = host_limits(fh, err);
	int r;

	if (!l)
		return err->code;
	r = fleet_host_policy_check(c->content, c->len, c->name, l, v->topo, &c->policy, err);
	limits_free(l);
	if (r < 0)
		return r;
	c->plan = plan_build(c->policy, v->topo, 0, v->root, err);
	if (!c->plan)
		return err->code ? err->code : -EINVAL;
	return 0;
}

int fleet_host_policy_admit(const struct sign_keyring *kr, bool insecure, const struct sign_expect *want,
			    const char *key, const char *sha, const char *buf, size_t len,
			    struct fleet_policy_doc *ret, char key_id[SIGN_ID_LEN + 1], enum sign_reject *ret_reason,
			    struct nt_err *err)
{
	struct fleet_policy_doc doc = { 0 };
	struct sign_envelope env = { 0 };
	int r = fleet_host_admit(kr, insecure, want, buf, len, &env, ret_reason, err);

	if (r == 0 && *env.h.policy_sha256 && strcmp(env.h.policy_sha256, sha))
		r = err_set(err, -EINVAL, "%s: signed for sha256 %.12s", key, env.h.policy_sha256);
	else if (r == 0)
		r = fleet_doc_parse_policy_doc(key, env.doc, env.doc_len, &doc, err);
	if (r == 0 && strcmp(doc.sha256, sha))
		r = err_set(err, -EINVAL, "%s: the document names sha256 %.12s", key, doc.sha256);
	if (r == 0)
		snprintf(key_id, SIGN_ID_LEN + 1, "%s", env.key_id);
	sign_envelope_release(&env);
	if (r < 0) {
		fleet_policy_doc_release(&doc);
		return r;
	}
	*ret = doc;
	return 0;
}

/* Fetch the policy sha from the store and check it. */
/* The desired policy from the store, admitted and checked: 0, -errno with
 * err, and *ret_unread set when the store did not answer (a timeout, a
 * member going away; not a refused permission, which stays an error to
 * report): nothing is wrong with the policy then, and it is not to be
 * refused (at 10,000 hosts one canary's timed-out read, reported as an
 * invalid policy, rolled a whole rollout back). */
static int candidate_fetch(struct fleet_host *fh, const char *sha, const struct fleet_host_view *v,
			   struct candidate *c, bool *ret_unread, struct nt_err *err)
{
	struct fleet_policy_doc doc = { 0 };
	struct etcd_range rg = { 0 };
	struct sign_expect want = expect(fh, SIGN_KIND_POLICY, 0, NULL);
	enum sign_reject why;
	char key[128];
	int r = etcd_get(fh->e, fleet_doc_policy_key(key, sizeof(key), sha), false, &rg, err);

	*ret_unread = r < 0 && r != -EACCES;
	if (r < 0)
		return r;
	if (rg.n_kvs == 0)
		r = err_set(err, -EINVAL, "%s: no such policy in the store", key);
	else if ((r = fleet_host_policy_admit(fh->keys, fh->cfg.insecure_unsigned, &want, key, sha, rg.kvs[0].value,
					      rg.kvs[0].value_len, &doc, c->key_id, &why, err)) == -EPERM)
		rejected(fh, why, err->msg);
	etcd_range_free(&rg);
	if (r < 0)
		return r;
	c->content = doc.content;
	c->len = doc.content_len;
	memcpy(c->sha, sha, FLEET_SHA_LEN + 1);
	snprintf(c->name, sizeof(c->name), "%s", *doc.name ? doc.name : "store-policy");
	return candidate_check(fh, c, v, err);
}

/* The daemon's own --policy file (mode local). */
static int candidate_local(struct fleet_host *fh, const struct fleet_host_view *v, struct candidate *c,
			   struct nt_err *err)
{
	char why[256], *slash;
	struct limits *l;
	int r = userfile_read(fh->cfg.local_policy, POLICY_MAX_SIZE, "a policy file", NULL, &c->content, &c->len,
			      why, sizeof(why));

	if (r < 0)
		return err_set(err, r, "%s: %s", fh->cfg.local_policy, why);
	SHA256Data((const uint8_t *)c->content, c->len, c->sha);
	slash = strrchr(fh->cfg.local_policy, '/');
	snprintf(c->name, sizeof(c->name), "%s", slash ? slash + 1 : fh->cfg.local_policy);
	c->policy = policy_load(fh->cfg.local_policy, policy_trust_flags(), err);
	if (!c->policy)
		return err->code ? err->code : -EINVAL;
	if (!(l = host_limits(fh, err)))
		return err->code;
	r = limits_refuse(l, c->policy, v->topo, err);
	limits_free(l);
	if (r < 0)
		return r;
	c->plan = plan_build(c->policy, v->topo, 0, v->root, err);
	return c->plan ? 0 : err->code ? err->code : -EINVAL;
}

/* ---- applying, local, shadow ------------------------------------------- */

static char *cache_path(const char *state_dir, const char *suffix, char *buf, size_t size)
{
	snprintf(buf, size, "%s/%s%s", state_dir, FLEET_HOST_CACHE, suffix);
	return buf;
}

/* The key id kept beside the cached policy, into id: 0, or -errno. */
static int cached_key_id(const char *state_dir, char id[SIGN_ID_LEN + 1])
{
	char path[4096];
	ssize_t n;
	int fd = open(cache_path(state_dir, FLEET_HOST_CACHE_KEY, path, sizeof(path)),
		      O_RDONLY | O_CLOEXEC | O_NOFOLLOW);

	if (fd < 0)
		return -errno;
	n = read(fd, id, SIGN_ID_LEN);
	close(fd);
	if (n < 0)
		return -EIO;
	id[n] = '\0';
	return 0;
}

const char *fleet_host_cached_policy(const char *state_dir, const struct sign_keyring *kr, bool insecure,
				     char *buf, size_t size, char *why, size_t why_size)
{
	char id[SIGN_ID_LEN + 1];
	struct stat st;

	cache_path(state_dir, "", buf, size);
	if (stat(buf, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size == 0)
		return NULL;
	if (cached_key_id(state_dir, id) < 0)
		snprintf(why, why_size, "%s: its signer is not recorded (%s%s is missing)", buf, FLEET_HOST_CACHE,
			 FLEET_HOST_CACHE_KEY);
	else if (!*id && !insecure)
		snprintf(why, why_size, "%s: it was unsigned, and unsigned documents are refused now", buf);
	else if (*id && !(kr && sign_keyring_has(kr, id)))
		snprintf(why, why_size, "%s: its signer, key %s, is no longer trusted", buf, id);
	else
		return buf;
	return NULL;
}

/* Write len bytes to path: a temporary file (0600), synced, renamed.
 * 0 or -errno. */
static int write_file(const char *path, const char *buf, size_t len)
{
	char tmp[4200];
	int fd, r = 0;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return -errno;
	if (write(fd, buf, len) != (ssize_t)len || fsync(fd) < 0)
		r = -errno ? -errno : -EIO;
	if (close(fd) < 0 && r == 0)
		r = -errno;
	if (r == 0 && rename(tmp, path) < 0)
		r = -errno;
	if (r < 0)
		unlink(tmp);
	return r;
}

/* Keep the store's policy in the state dir, or remove it (mode local);
 * remember its bytes as what runs. */
static void cache_update(struct fleet_host *fh, struct candidate *c, bool keep)
{
	char path[4096], key[4096];
	int r;

	cache_path(fh->cfg.state_dir, FLEET_HOST_CACHE_KEY, key, sizeof(key));
	cache_path(fh->cfg.state_dir, "", path, sizeof(path));
	if (!keep) {
		unlink(path);
		unlink(key);
	} else if ((r = write_file(key, c->key_id, strlen(c->key_id))) < 0 ||
		   (r = write_file(path, c->content, c->len)) < 0) {
		say(fh, LOG_WARNING, "fleet: %s: %s (a restart without the store would run the older file)", path,
		    nt_strerror(-r));
	}
	free(fh->running);
	fh->running = c->content;
	fh->running_len = c->len;
	c->content = NULL;
}

/* Read back what the plan governs: the status's state. */
static void verify_now(struct fleet_host *fh, const struct fleet_host_view *v)
{
	struct verify_result res = { 0 };
	struct nt_err err = { 0 };
	bool ok = verify_plan(*v->plan, v->root, &res, &err) == 0;

	fh->st.state = ok && res.n == 0 ? FLEET_H_VERIFIED : FLEET_H_DRIFT;
	fh->st.verify_ok = ok;
	fh->st.checked = res.checked;
	fh->st.drifted = res.n;
	fh->st.verify_time = nt_wall_s();
	verify_result_release(&res);
}

static void say_changes(const struct fleet_host *fh, const struct apply_changes *rep)
{
	for (unsigned i = 0; i < rep->n_notes; i++)
		say(fh, LOG_NOTICE, "fleet: %s", rep->notes[i]);
	for (unsigned i = 0; i < rep->n; i++)
		say(fh, LOG_NOTICE, "fleet: /%s: %s -> %s", rep->changes[i].path, rep->changes[i].from,
		    rep->changes[i].to);
}

/* Apply c over the daemon's journal; on failure go back to the old plan.
 * Returns 1 when c now runs (c's policy and plan moved into v), 0 not. */
static int apply_candidate(struct fleet_host *fh, struct fleet_host_view *v, struct candidate *c, const char *why)
{
	struct apply_changes rep = { 0 }, back = { 0 };
	struct nt_err err = { 0 }, e2 = { 0 };

	if (apply_converge(c->plan, v->root, v->j, NULL, NULL, &rep, &err) < 0) {
		say_changes(fh, &rep);
		say(fh, LOG_ERR, "fleet: applying %s (sha256 %.12s) failed: %s; going back to %s", c->name, c->sha,
		    err.msg, v->policy_name);
		if (apply_converge(*v->plan, v->root, v->j, NULL, NULL, &back, &e2) < 0)
			say(fh, LOG_ERR, "fleet: going back failed too: %s", e2.msg);
		say_changes(fh, &back);
		fh->st.state = FLEET_H_FAILED;
		snprintf(fh->st.error, sizeof(fh->st.error), "apply failed (went back to %.*s): %s", 40, v->policy_name,
			 err.msg);
		apply_changes_release(&rep);
		apply_changes_release(&back);
		return 0;
	}
	say_changes(fh, &rep);
	say(fh, LOG_NOTICE, "fleet: applied %s (sha256 %.12s) %s: %u changes", c->name, c->sha, why, rep.n);
	apply_changes_release(&rep);
	plan_free(*v->plan);
	policy_free(*v->policy);
	*v->plan = c->plan;
	*v->policy = c->policy;
	c->plan = NULL;
	c->policy = NULL;
	memcpy(v->sha256, c->sha, SHA256_DIGEST_STRING_LENGTH);
	snprintf(v->policy_name, FLEET_NAME_MAX, "%s", c->name);
	fh->st.error[0] = '\0';
	verify_now(fh, v);
	return 1;
}

/* Shadow: plan and verify the policy here; report what would change. */
/* Answer a shadow request.  Returns false when the store did not answer
 * (nothing answered: the caller asks again). */
static bool do_shadow(struct fleet_host *fh, const struct fleet_host_view *v, const struct fleet_desired *d,
		      int64_t rev)
{
	struct candidate c = { 0 };
	struct verify_result res = { 0 };
	struct nt_err err = { 0 };
	size_t len = 0;
	bool unread = false;
	int r = candidate_fetch(fh, d->sha256, v, &c, &unread, &err);

	if (unread) {
		say(fh, LOG_WARNING, "fleet: cannot read the shadow's policy (%s); asking again", err.msg);
		return false;
	}
	fh->st.shadow_rev = rev;
	snprintf(fh->st.shadow_sha, sizeof(fh->st.shadow_sha), "%s", d->sha256);
	fh->st.shadow_changes = 0;
	fh->st.shadow_text[0] = '\0';
	fh->st.shadow_valid = r == 0 && verify_plan(c.plan, v->root, &res, &err) == 0;
	if (!fh->st.shadow_valid)
		snprintf(fh->st.shadow_text, sizeof(fh->st.shadow_text), "invalid here: %s", err.msg);
	for (unsigned i = 0; fh->st.shadow_valid && i < res.n && len < sizeof(fh->st.shadow_text) - 1; i++)
		len += (size_t)snprintf(fh->st.shadow_text + len, sizeof(fh->st.shadow_text) - len, "%s/%s: %s -> %s",
					i ? "; " : "", res.drift[i].path, res.drift[i].actual, res.drift[i].expected);
	fh->st.shadow_changes = res.n;
	say(fh, LOG_NOTICE, "fleet: shadow %.12s for rollout %s: %s%s%u change(s) it would make", d->sha256, d->rollout,
	    fh->st.shadow_valid ? "" : fh->st.shadow_text, fh->st.shadow_valid ? "" : "; ", res.n);
	verify_result_release(&res);
	candidate_release(&c);
	return true;
}

/* The gate could not start or gave no verdict: the host keeps its policy
 * and says why (the controller rolls back). */
static void gate_refused(struct fleet_host *fh, const char *what, const char *why)
{
	fh->st.state = FLEET_H_INVALID;
	snprintf(fh->st.error, sizeof(fh->st.error), "gate %s: %s", what, why);
	say(fh, LOG_ERR, "fleet: gate %s: %s; keeping %s", what, why, fh->st.policy);
}

/* The gate d names, as this host lists it: its command, user and budget
 * cap, from the root-owned gates directory.  0 or -errno with err. */
static int gate_lookup(struct fleet_host *fh, const struct fleet_desired *d, struct gate *ret, struct nt_err *err)
{
	return gates_lookup(fh->cfg.gates_dir ? fh->cfg.gates_dir : GATES_DIR, d->gate,
			    policy_trust_flags() ? GATES_TRUSTED_ONLY : 0, ret, err);
}

/* The gate: A/B the running policy against d's on the job of the gate d
 * names, started here and watched by fleet_host_tick (gate_watch).
 * Returns false when the store did not answer for the policy (nothing
 * started or refused: the caller asks again). */
static bool do_gate(struct fleet_host *fh, const struct fleet_host_view *v, const struct fleet_desired *d)
{
	struct candidate c = { 0 };
	struct gate g = { 0 };
	struct nt_err err = { 0 };
	char cur[4096], cand[4096], dir[4096], report[4096];
	struct fleet_gate_request q = { cur, cand, NULL, NULL, 0, fh->cfg.sysroot, fh->cfg.topology, dir, report,
					fh->cfg.limits_path, 0 };
	bool unread = false;
	int r;

	if (gate_lookup(fh, d, &g, &err) < 0) {
		gate_refused(fh, "refused", err.msg);
		return true;
	}
	q.argv = g.argv;
	q.user = g.user;
	/* the rollout asks, the host's gate file caps */
	q.budget_s = d->gate_budget > 0 ? fmin(d->gate_budget, g.budget_s) : g.budget_s;
	q.alpha = g.alpha;                   /* the host's gate file only */
	snprintf(cur, sizeof(cur), "%s/gate-current.conf", fh->cfg.state_dir);
	snprintf(cand, sizeof(cand), "%s/gate-candidate.conf", fh->cfg.state_dir);
	snprintf(dir, sizeof(dir), "%s/%s", fh->cfg.state_dir, FLEET_GATE_DIR);
	snprintf(report, sizeof(report), "%s/%s", fh->cfg.state_dir, FLEET_GATE_REPORT);
	r = candidate_fetch(fh, d->sha256, v, &c, &unread, &err);
	if (unread) {
		say(fh, LOG_WARNING, "fleet: cannot read the gate's policy (%s); asking again", err.msg);
		gates_release(&g);
		return false;
	}
	if (r == 0 && ((r = write_file(cur, fh->running ? fh->running : "", fh->running_len)) < 0 ||
		       (r = write_file(cand, c.content, c.len)) < 0))
		err_set(&err, r, "%s: %s", fh->cfg.state_dir, nt_strerror(-r));
	if (r == 0 && (r = fleet_gate_recover(dir, fh->cfg.sysroot, 0, &err)) > 0)
		say(fh, LOG_WARNING, "fleet: %s: an earlier gate's %d settings restored", dir, r);
	if (r >= 0) {
		char alpha[48] = "";

		if (q.alpha > 0)
			snprintf(alpha, sizeof(alpha), ", alpha %g", q.alpha);
		say(fh, LOG_NOTICE, "fleet: gate '%s' for rollout %s: A/B of %s against %s (sha256 %.12s) on %s as %s, "
		    "budget %gs%s", d->gate, d->rollout, v->policy_name, c.name, d->sha256, g.argv[0], g.user, q.budget_s,
		    alpha);
		r = fleet_gate_start(&q, &fh->gate, &err);
	}
	candidate_release(&c);
	gates_release(&g);
	if (r < 0)
		gate_refused(fh, "failed", err.msg);
	return true;
}

/* A gate running: read what ab wrote; at its end, its verdict. */
static void gate_watch(struct fleet_host *fh)
{
	struct fleet_gate_result res = { 0 };
	struct nt_err err = { 0 }, rerr = { 0 };
	int r = fleet_gate_step(fh->gate, &res, &err), n;
	char dir[4096];

	if (r == 0)
		return;
	fleet_gate_free(fh->gate);
	fh->gate = NULL;
	/* an ab that died without reverting (killed -9, out of memory) left
	 * its arm applied: its journal says what to put back */
	snprintf(dir, sizeof(dir), "%s/%s", fh->cfg.state_dir, FLEET_GATE_DIR);
	if ((n = fleet_gate_recover(dir, fh->cfg.sysroot, 0, &rerr)) > 0)
		say(fh, LOG_WARNING, "fleet: the gate's ab ended without reverting: %d settings restored from %s", n, dir);
	else if (n < 0)
		say(fh, LOG_ERR, "fleet: %s: the gate's journal could not be reverted: %s", dir, rerr.msg);
	if (fh->poll_after_gate)
		fh->next_poll = 0;
	fh->poll_after_gate = false;
	if (r < 0) {
		gate_refused(fh, "failed", err.msg);
		return;
	}
	fh->st.state = FLEET_H_GATED;
	fh->st.gate_rev = fh->st.desired_rev;
	snprintf(fh->st.verdict, sizeof(fh->st.verdict), "%s", res.verdict);
	fh->st.ratio = res.ratio, fh->st.ci_lo = res.ci_lo, fh->st.ci_hi = res.ci_hi;
	snprintf(fh->st.explanation, sizeof(fh->st.explanation), "%s", res.explanation);
	say(fh, LOG_NOTICE, "fleet: gate verdict %s, ratio %.3f [%.3f, %.3f]%s%s", res.verdict, res.ratio, res.ci_lo,
	    res.ci_hi, *res.explanation ? ": " : "", res.explanation);
}

bool fleet_host_gating(const struct fleet_host *fh)
{
	return fh && fh->gate;
}

int fleet_host_gate_fd(const struct fleet_host *fh)
{
	return fh ? fleet_gate_fd(fh->gate) : -1;
}

void fleet_host_gate_end(struct fleet_host *fh)
{
	if (!fh || !fh->gate)
		return;
	say(fh, LOG_NOTICE, "fleet: stopping the gate (ab reverts its arm)");
	fleet_gate_free(fh->gate);
	fh->gate = NULL;
}

/* ---- the status key ---------------------------------------------------- */

/* The status as the daemon's last verify left it, unless an answer to the
 * desired key (failed, invalid, gated) stands. */
void fleet_host_status_refresh(struct fleet_status *s, const char *host, const struct fleet_class *cls,
			       const struct fleet_host_view *v)
{
	snprintf(s->host, sizeof(s->host), "%s", host);
	snprintf(s->class_id, sizeof(s->class_id), "%s", cls->id);
	snprintf(s->label, sizeof(s->label), "%s", cls->label);
	snprintf(s->policy, sizeof(s->policy), "%s", v->policy_name);
	snprintf(s->sha256, sizeof(s->sha256), "%s", v->sha256);
	if (s->state == FLEET_H_VERIFIED || s->state == FLEET_H_DRIFT) {
		if (v->verify_wall > s->verify_time) {
			s->verify_ok = v->verify_ok;
			s->checked = v->checked;
			s->drifted = v->drifted;
			s->verify_time = v->verify_wall;
		}
		s->state = s->verify_ok && s->drifted == 0 ? FLEET_H_VERIFIED : FLEET_H_DRIFT;
	}
}

bool fleet_host_status_due(const char *now_json, const char *published, double now, double next_status)
{
	return !published || strcmp(now_json, published) || now >= next_status;
}

/* Put the status when it changed (the time aside) or is due. */
static void status_publish(struct fleet_host *fh)
{
	struct fleet_status s = fh->st;
	struct nt_err err = { 0 };
	char key[128], *cmp, *val;
	double now = nt_mono_s();

	s.time = 0;
	s.verify_time = 0;
	if (!(cmp = fleet_status_json(&s)))
		return;
	if (!fleet_host_status_due(cmp, fh->published, now, fh->next_status)) {
		free(cmp);
		return;
	}
	fh->st.time = nt_wall_s();
	if (!(val = fleet_status_json(&fh->st)) ||
	    etcd_put(fh->e, fleet_doc_host_key(key, sizeof(key), fh->host, "status"), val, strlen(val), 0, NULL, &err) < 0) {
		free(cmp);
		cmp = NULL;              /* try again next tick */
		if (now >= fh->store_warned)
			say(fh, LOG_WARNING, "fleet: the store is out of reach (%s); keeping %s", err.msg, fh->st.policy);
		fh->store_warned = now + 60;
	}
	free(val);
	free(fh->published);
	fh->published = cmp;
	fh->next_status = now + STATUS_EVERY_S;
}

/* ---- the tick: following ------------------------------------------------ */

/* A desired value that cannot be followed: said once, reported. */
static void refuse(struct fleet_host *fh, int64_t rev, const char *what, const char *why)
{
	fh->st.state = FLEET_H_INVALID;
	fh->st.desired_rev = rev;
	snprintf(fh->st.error, sizeof(fh->st.error), "%s", why);
	fh->failed_rev = rev;
	say(fh, LOG_ERR, "fleet: %s refused, nothing applied: %s", what, why);
}

enum fleet_host_step fleet_host_decide(const struct fleet_desired *d, int64_t rev, int64_t done_rev,
				       int64_t failed_rev, const char *running_sha, bool answered)
{
	bool done = rev == done_rev || answered;

	if (rev == failed_rev || (done && (d->mode == FLEET_MODE_GATE || !strcmp(d->sha256, running_sha))))
		return FLEET_HOST_NOTHING;
	if (d->mode == FLEET_MODE_GATE)
		return FLEET_HOST_GATE;
	if (d->mode == FLEET_MODE_APPLY && !strcmp(d->sha256, running_sha))
		return FLEET_HOST_RUNS_IT;
	return FLEET_HOST_LOAD;
}

enum fleet_host_route fleet_host_route(enum fleet_key_kind kind, bool parsed, int64_t rev, int64_t failed_rev,
				       int64_t done_shadow_rev)
{
	if (kind != FLEET_KEY_DESIRED && kind != FLEET_KEY_SHADOW)
		return FLEET_HOST_IGNORE;
	if (!parsed)
		return kind == FLEET_KEY_DESIRED && rev != failed_rev ? FLEET_HOST_REFUSE : FLEET_HOST_IGNORE;
	if (kind == FLEET_KEY_DESIRED)
		return FLEET_HOST_FOLLOW;
	return rev != done_shadow_rev ? FLEET_HOST_SHADOW : FLEET_HOST_IGNORE;
}

/* A desired or shadow value as admitted: its document, and its seq and
 * bytes' sha256 (seq 0: an unsigned one under insecure_unsigned);
 * answered: the desired this host answered last, the very bytes. */
struct admitted {
	struct fleet_desired d;
	uint64_t seq;
	char sha[SIGN_SHA_LEN + 1];
	bool answered;
	bool record;          /* the class's policy of record: its seq is not kept as answered */
	bool expired;         /* refused only for its expiry (the record may stand in for it) */
};

/* The store did not answer for the desired policy: nothing is done or
 * refused, the revisions follow() had marked are put back as they were, and
 * the store is asked again at the next tick. */
static void ask_again(struct fleet_host *fh, int64_t done_before, int64_t shown_before)
{
	fh->done_desired_rev = done_before;
	fh->st.desired_rev = shown_before;
	fh->next_poll = 0;
}

/* Follow the desired value a->d (at revision rev).  1 when the policy
 * changed.  The document is kept as answered before anything is done: a
 * daemon killed in the middle never starts its gate again. */
static int follow(struct fleet_host *fh, struct fleet_host_view *v, const struct admitted *a, int64_t rev)
{
	const struct fleet_desired *d = &a->d;
	enum fleet_host_step step = fleet_host_decide(d, rev, fh->done_desired_rev, fh->failed_rev, v->sha256,
						      a->answered);
	struct candidate c = { 0 };
	struct nt_err err = { 0 };
	char why[160];
	int changed = 0, r;
	int64_t done_before = fh->done_desired_rev, shown_before = fh->st.desired_rev;
	bool unread = false;

	if (step == FLEET_HOST_NOTHING)
		return 0;
	if (a->seq && !a->record)
		seq_note(fh, a->seq, a->sha);
	fh->st.desired_rev = rev;
	fh->done_desired_rev = rev;
	if (step == FLEET_HOST_GATE) {
		if (!do_gate(fh, v, d))
			ask_again(fh, done_before, shown_before);
		return 0;
	}
	if (step == FLEET_HOST_RUNS_IT) {
		fh->st.state = FLEET_H_VERIFIED;      /* runs it already: the status refresh says how it verifies */
		return 0;
	}
	if (d->mode == FLEET_MODE_LOCAL)
		r = candidate_local(fh, v, &c, &err);
	else
		r = candidate_fetch(fh, d->sha256, v, &c, &unread, &err);
	if (r < 0 && unread) {
		/* the store did not answer: not the policy's fault (refusing it
		 * would roll the whole rollout back); asked again at the next tick */
		say(fh, LOG_WARNING, "fleet: cannot read the desired policy (%s); asking again", err.msg);
		ask_again(fh, done_before, shown_before);
	} else if (r < 0) {
		refuse(fh, rev, d->mode == FLEET_MODE_LOCAL ? "the local policy" : "the desired policy", err.msg);
	} else if (!strcmp(c.sha, v->sha256)) {
		fh->st.state = FLEET_H_VERIFIED;
		cache_update(fh, &c, d->mode != FLEET_MODE_LOCAL);
	} else {
		snprintf(why, sizeof(why), "for rollout %s", d->rollout);
		changed = apply_candidate(fh, v, &c, why);
		if (changed)
			cache_update(fh, &c, d->mode != FLEET_MODE_LOCAL);
		else
			fh->failed_rev = rev;
	}
	candidate_release(&c);
	return changed;
}

/* Admit and parse a desired or shadow value into *a.  A refusal is
 * counted once per revision (a refused desired is then said by refuse(); a
 * refused shadow here).  0 or -errno with err. */
static int read_desired(struct fleet_host *fh, enum fleet_key_kind k, const struct etcd_kv *kv, struct admitted *a,
			struct nt_err *err)
{
	bool desired = k == FLEET_KEY_DESIRED;
	int64_t seen = desired ? fh->failed_rev : fh->done_shadow_rev;
	struct sign_expect want = desired ? expect(fh, SIGN_KIND_DESIRED, fh->last_seq, fh->last_sha)
					  : expect(fh, SIGN_KIND_SHADOW, fh->shadow_seq, fh->shadow_sha);
	struct sign_envelope e = { 0 };
	enum sign_reject why;
	int r = fleet_host_admit(fh->keys, fh->cfg.insecure_unsigned, &want, kv->value, kv->value_len, &e, &why, err);

	a->expired = r == -EPERM && why == SIGN_REJ_EXPIRED;
	if (r == -EPERM && kv->mod_revision != seen) {
		rejected(fh, why, err->msg);
		if (!desired) {
			say(fh, LOG_ERR, "fleet: %s refused, nothing planned: %s", kv->key, err->msg);
			fh->done_shadow_rev = kv->mod_revision;
		}
	}
	if (r == 0)
		r = fleet_doc_parse_desired(kv->key, e.doc, e.doc_len, &a->d, err);
	a->seq = r == 0 ? e.h.seq : 0;
	sign_value_sha(kv->value, kv->value_len, a->sha);
	a->answered = a->seq && a->seq == fh->last_seq && !strcmp(a->sha, fh->last_sha);
	if (r == 0 && !desired && a->seq && a->seq >= fh->shadow_seq) {
		fh->shadow_seq = a->seq;
		memcpy(fh->shadow_sha, a->sha, sizeof(fh->shadow_sha));
	}
	sign_envelope_release(&e);
	return r;
}

/* ---- the class's policy of record ---------------------------------------- */

bool fleet_host_record_wins(bool have_desired, uint64_t desired_seq, uint64_t record_seq, uint64_t last_seq)
{
	if (!have_desired)
		return record_seq > last_seq || (record_seq == 0 && last_seq == 0);
	return record_seq > desired_seq && record_seq > last_seq;
}

/* Admit and parse this host's class's record (fleet_record_key) into *a
 * and its revision: 0, -ENOENT (none, or the store out of reach), or
 * -EPERM/-EINVAL (refused: counted and said once per revision). */
static int read_record(struct fleet_host *fh, struct admitted *a, int64_t *ret_rev)
{
	struct sign_expect want = expect(fh, SIGN_KIND_RECORD, 0, "");
	struct sign_envelope e = { 0 };
	struct etcd_range rg = { 0 };
	struct nt_err err = { 0 };
	enum sign_reject why = SIGN_REJ_MALFORMED;
	char key[128];
	int r = etcd_get(fh->e, fleet_record_key(key, sizeof(key), fh->cls.id), false, &rg, &err);

	if (r < 0 || !rg.n_kvs) {
		etcd_range_free(&rg);
		return -ENOENT;
	}
	*ret_rev = rg.kvs[0].mod_revision;
	r = fleet_host_admit(fh->keys, fh->cfg.insecure_unsigned, &want, rg.kvs[0].value, rg.kvs[0].value_len, &e, &why,
			     &err);
	if (r == -EPERM && *ret_rev != fh->record_refused_rev)
		rejected(fh, why, err.msg);
	if (r == 0 && (r = fleet_doc_parse_desired(key, e.doc, e.doc_len, &a->d, &err)) == 0 && a->d.mode != FLEET_MODE_APPLY)
		r = err_set(&err, -EINVAL, "%s: a policy of record of another mode than apply", key);
	if (r < 0 && *ret_rev != fh->record_refused_rev)
		say(fh, LOG_ERR, "fleet: %s refused, not followed: %s", key, err.msg);
	if (r < 0)
		fh->record_refused_rev = *ret_rev;
	a->seq = r == 0 ? e.h.seq : 0;
	a->record = true;
	sign_value_sha(rg.kvs[0].value, rg.kvs[0].value_len, a->sha);
	sign_envelope_release(&e);
	etcd_range_free(&rg);
	return r;
}

/* Follow the desired value d (at d_rev; NULL: none, or one refused only
 * for its expiry; a desired refused otherwise holds the host as it is:
 * poll_store does not come here) or, when it
 * wins (fleet_host_record_wins), the class's policy of record: a host
 * skipped by a rollout, or one that joined after it, converges.  1 when
 * the policy changed. */
static int converge(struct fleet_host *fh, struct fleet_host_view *v, const struct admitted *d, int64_t d_rev)
{
	struct admitted rec = { 0 };
	int64_t rev = 0;

	if (read_record(fh, &rec, &rev) == 0 && fleet_host_record_wins(d != NULL, d ? d->seq : 0, rec.seq, fh->last_seq)) {
		if (rev != fh->done_desired_rev && strcmp(rec.d.sha256, v->sha256))
			say(fh, LOG_NOTICE, "fleet: following class %s's policy of record, %s of rollout %s (%s)", fh->cls.id,
			    rec.d.policy, rec.d.rollout, d ? "newer than this host's desired" : "this host has no desired");
		return follow(fh, v, &rec, rev);
	}
	return d ? follow(fh, v, d, d_rev) : 0;
}

/* ---- freshness: the timestamp ------------------------------------------ */

/* Admit the timestamp value kv: verified, of this fleet, not expired, not
 * older than the last one; its time then counts.  A refusal is counted
 * once per revision and said. */
static void timestamp_take(struct fleet_host *fh, const struct etcd_kv *kv)
{
	struct sign_expect want = expect(fh, SIGN_KIND_TIMESTAMP, fh->ts_seq, fh->ts_sha);
	struct fleet_stamp st = { 0 };
	struct sign_envelope e = { 0 };
	struct nt_err err = { 0 };
	enum sign_reject why = SIGN_REJ_MALFORMED;
	int r = fleet_host_admit(fh->keys, false, &want, kv->value, kv->value_len, &e, &why, &err);
	bool admitted = r == 0;

	if (r == 0 && (r = fleet_doc_parse_stamp(kv->key, e.doc, e.doc_len, &st, &err)) == 0 && st.seq != e.h.seq)
		r = err_set(&err, -EINVAL, "%s: the document's seq is not the one signed", kv->key);
	if (r == 0) {
		fh->ts_seq = e.h.seq;
		sign_value_sha(kv->value, kv->value_len, fh->ts_sha);
		fh->ts_time = fmax(fh->ts_time, (double)st.time);
	} else if (kv->mod_revision != fh->ts_refused_rev) {
		fh->ts_refused_rev = kv->mod_revision;
		if (!admitted && r == -EPERM)
			rejected(fh, why, err.msg);
		say(fh, LOG_ERR, "fleet: %s refused: %s", kv->key, err.msg);
	}
	sign_envelope_release(&e);
}

/* Read the timestamp (none, or not readable: nothing learnt). */
static void timestamp_poll(struct fleet_host *fh)
{
	struct etcd_range rg = { 0 };

	if (etcd_get(fh->e, FLEET_TIMESTAMP_KEY, false, &rg, NULL) == 0 && rg.n_kvs)
		timestamp_take(fh, &rg.kvs[0]);
	etcd_range_free(&rg);
}

bool fleet_host_frozen(double now, double ts_time, double start, double max_age, double *ret_age)
{
	*ret_age = now - (ts_time > 0 ? ts_time : start);
	return max_age > 0 && *ret_age > max_age;
}

void fleet_host_freshness(const struct fleet_host *fh, struct fleet_host_fresh *ret)
{
	memset(ret, 0, sizeof(*ret));
	if (!fh)
		return;
	ret->max_age_s = fh->cfg.max_age_s;
	ret->have = fh->ts_time > 0;
	ret->seq = fh->ts_seq;
	ret->time = fh->ts_time;
	ret->frozen = fleet_host_frozen(nt_wall_s(), fh->ts_time, fh->start_wall, fh->cfg.max_age_s, &ret->age_s);
}

/* Say when the host becomes frozen, and when it is no longer. */
static void frozen_say(struct fleet_host *fh, const struct fleet_host_view *v)
{
	struct fleet_host_fresh f;

	fleet_host_freshness(fh, &f);
	if (f.frozen && !fh->said_frozen)
		say(fh, LOG_WARNING, "fleet: frozen: %s %.0f s old, over the limit of %.0f s (--fleet-max-age): the "
		    "store may be withholding updates; keeping %s", f.have ? "the last verified timestamp is" :
		    "no timestamp verified since the start,", f.age_s, f.max_age_s, v->policy_name);
	else if (!f.frozen && fh->said_frozen)
		say(fh, LOG_NOTICE, "fleet: no longer frozen: a timestamp %.0f s old", f.age_s);
	fh->said_frozen = f.frozen;
}

/* ---- the tick ---------------------------------------------------------- */

/* Read this host's desired and shadow keys and follow them. */
static int poll_store(struct fleet_host *fh, struct fleet_host_view *v)
{
	struct etcd_range rg = { 0 };
	struct admitted desired = { 0 };
	struct nt_err err = { 0 };
	int64_t desired_rev = 0;
	bool held = false;     /* a desired value refused (not for its expiry): no record stands in */
	char prefix[128];
	int changed;

	fleet_doc_host_key(prefix, sizeof(prefix), fh->host, "");
	strcat(prefix, "/");
	if (etcd_get(fh->e, prefix, true, &rg, &err) < 0) {
		if (nt_mono_s() >= fh->store_warned)
			say(fh, LOG_WARNING, "fleet: the store is out of reach (%s); keeping %s", err.msg, v->policy_name);
		fh->store_warned = nt_mono_s() + 60;
		fh->next_poll = 0;   /* read again at the next tick, not a poll period (10 min) later: a
				      * watch's word that came while the store failed would wait that long */
		return 0;
	}
	for (size_t i = 0; i < rg.n_kvs; i++) {
		const struct etcd_kv *kv = &rg.kvs[i];
		char host[FLEET_NAME_MAX];
		enum fleet_key_kind k = fleet_key_parse(kv->key, host);
		struct admitted a = { 0 };
		bool parsed = (k == FLEET_KEY_DESIRED || k == FLEET_KEY_SHADOW) && read_desired(fh, k, kv, &a, &err) == 0;

		held |= k == FLEET_KEY_DESIRED && !parsed && !a.expired;

		switch (fleet_host_route(k, parsed, kv->mod_revision, fh->failed_rev, fh->done_shadow_rev)) {
		case FLEET_HOST_REFUSE:
			refuse(fh, kv->mod_revision, kv->key, err.msg);
			break;
		case FLEET_HOST_FOLLOW:
			desired = a;
			desired_rev = kv->mod_revision;
			break;
		case FLEET_HOST_SHADOW:
			if (do_shadow(fh, v, &a.d, kv->mod_revision))
				fh->done_shadow_rev = kv->mod_revision;
			else
				fh->next_poll = 0;
			break;
		case FLEET_HOST_IGNORE:
			break;
		}
	}
	etcd_range_free(&rg);
	changed = held ? 0 : converge(fh, v, desired_rev ? &desired : NULL, desired_rev);
	timestamp_poll(fh);
	return changed;
}

int fleet_host_tick(struct fleet_host *fh, struct fleet_host_view *v)
{
	uint64_t n;
	bool woke = read(fh->efd, &n, sizeof(n)) == sizeof(n);
	int changed = 0;

	if (fh->gate) {
		/* the gate holds the host: the store's next word waits for its end */
		fh->poll_after_gate |= woke;
		gate_watch(fh);
	} else if (woke || nt_mono_s() >= fh->next_poll) {
		fh->next_poll = nt_mono_s() + fmax(POLL_MIN_S, fmin(POLL_EVERY_S, fh->cfg.max_age_s / 4));
		changed = poll_store(fh, v);
	}
	frozen_say(fh, v);
	fleet_host_status_refresh(&fh->st, fh->host, &fh->cls, v);
	status_publish(fh);
	return changed;
}

/* ---- start and stop ---------------------------------------------------- */

int fleet_host_fd(const struct fleet_host *fh)
{
	return fh ? fh->efd : -1;
}

/* The bytes of the policy the daemon started with. */
static void running_init(struct fleet_host *fh)
{
	char why[256];

	if (fh->cfg.start_policy && userfile_read(fh->cfg.start_policy, POLICY_MAX_SIZE, "a policy file", NULL,
						  &fh->running, &fh->running_len, why, sizeof(why)) < 0)
		say(fh, LOG_WARNING, "fleet: %s: %s (a gate would compare against an empty policy)",
		    fh->cfg.start_policy, why);
}

/* With credentials: read this host's keys once, so that a TLS failure, a
 * refused login or a missing permission stops the start (-EACCES) before
 * anything is applied.  An unreachable store is not an error here. */
static int creds_probe(struct fleet_host *fh, struct nt_err *err)
{
	char key[FLEET_NAME_MAX + 32];
	int rc;

	fleet_doc_host_key(key, sizeof(key), fh->host, "desired");
	/* etcd refuses a missing or foreign client certificate after a TLS 1.3
	 * handshake, with an alert; when it closes the connection while the
	 * request is still being sent, libcurl sees only the cut (-ECONNRESET
	 * on every member) and no alert.  Asked again, the alert is read:
	 * three tries, 100 ms apart, before the store counts as out of reach */
	for (int i = 0;; i++) {
		struct etcd_range r = { 0 };
		struct timespec pause = { 0, 100000000L };

		rc = etcd_get(fh->e, key, false, &r, err);
		etcd_range_free(&r);
		if (rc != -ECONNRESET || i == 2)
			break;
		nanosleep(&pause, NULL);
	}
	return rc == -EACCES ? rc : 0;
}

/* The trusted keys (a missing directory: none), and the last seq applied. */
static int keys_load(struct fleet_host *fh, struct nt_err *err)
{
	const char *dir = fh->cfg.keys_dir ? fh->cfg.keys_dir : SIGN_KEYS_DIR;
	struct nt_err e = { 0 };

	fh->keys = sign_keyring_load(dir, policy_trust_flags() ? SIGN_TRUSTED_ONLY : 0, &e);
	if (!fh->keys && e.code != -ENOENT)
		return err_set(err, e.code, "fleet keys: %s", e.msg);
	seq_load(fh);
	if (!fh->keys || sign_keyring_count(fh->keys) == 0)
		say(fh, LOG_WARNING, "fleet: no signing key trusted in %s: every %sdocument is refused", dir,
		    fh->cfg.insecure_unsigned ? "signed " : "");
	return 0;
}

int fleet_host_reload_keys(struct fleet_host *fh, struct nt_err *err)
{
	struct sign_keyring *old = fh->keys;
	int r;

	fh->keys = NULL;
	if ((r = keys_load(fh, err)) < 0) {
		fh->keys = old;
		return r;
	}
	sign_keyring_free(old);
	say(fh, LOG_NOTICE, "fleet: %u signing key(s) trusted now", fh->keys ? sign_keyring_count(fh->keys) : 0);
	return 0;
}

struct fleet_host *fleet_host_start(const struct fleet_host_config *cfg, const struct topo *t, struct nt_err *err)
{
	struct fleet_host *fh;

	if (!fleet_name_valid(cfg->host)) {
		err_set(err, -EINVAL, "--host '%s': not a name ([A-Za-z0-9._-], 1 to 63 bytes)", cfg->host);
		return NULL;
	}
	if (cfg->fleet_id && !sign_fleet_valid(cfg->fleet_id)) {
		err_set(err, -EINVAL, "fleet id '%.64s': not a name ([A-Za-z0-9._-], 1 to 63 bytes)", cfg->fleet_id);
		return NULL;
	}
	fh = calloc(1, sizeof(*fh));
	if (!fh) {
		err_set(err, -ENOMEM, "out of memory");
		return NULL;
	}
	fh->cfg = *cfg;
	fh->cfg.fleet_id = cfg->fleet_id ? cfg->fleet_id : SIGN_FLEET_DEFAULT;
	fh->cfg.max_age_s = cfg->max_age_s > 0 ? cfg->max_age_s : FLEET_HOST_MAX_AGE_S;
	fh->start_wall = nt_wall_s();
	fh->efd = -1;
	fh->last_refusal.reason = SIGN_REJ__COUNT;
	snprintf(fh->host, sizeof(fh->host), "%s", cfg->host);
	fh->ttl_s = fmin(60, fmax(3, ceil(5 * cfg->interval_s)));
	pthread_mutex_init(&fh->lock, NULL);
	nap_cond_init(&fh->cond);
	atomic_init(&fh->cancel, false);
	if (fleet_class_of(t, &fh->cls) < 0) {
		err_set(err, -EINVAL, "the topology has no NUMA node: no hardware class");
		goto out_free;
	}
	if (!(fh->e = etcd_open(cfg->endpoints, err)) || fleet_creds_apply(fh->e, cfg->creds, err) < 0)
		goto out_free;
	etcd_set_timeout(fh->e, 1000);
	etcd_spread(fh->e, name_hash(fh->host));
	if (cfg->creds && fleet_creds_any(cfg->creds) && creds_probe(fh, err) < 0)
		goto out_free;
	if (keys_load(fh, err) < 0)
		goto out_free;
	if ((fh->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0) {
		err_set(err, -errno, "eventfd: %s", nt_strerror(errno));
		goto out_free;
	}
	if (pthread_create(&fh->thread, NULL, lease_thread, fh) != 0) {
		err_set(err, -EAGAIN, "cannot start the fleet thread");
		goto out_free;
	}
	fh->thread_up = true;
	if (pthread_create(&fh->watcher, NULL, watch_thread, fh) != 0) {
		err_set(err, -EAGAIN, "cannot start the fleet's watch thread");
		goto out_free;
	}
	fh->watcher_up = true;
	fh->st.state = FLEET_H_VERIFIED;
	running_init(fh);
	say(fh, LOG_NOTICE, "fleet: host %s, class %s (%s), lease %gs, store %s", fh->host, fh->cls.id, fh->cls.label,
	    fh->ttl_s, cfg->endpoints);
	return fh;
out_free:
	fleet_host_stop(fh);
	return NULL;
}

void fleet_host_stop(struct fleet_host *fh)
{
	if (!fh)
		return;
	pthread_mutex_lock(&fh->lock);
	fh->stop = true;
	pthread_cond_broadcast(&fh->cond);
	pthread_mutex_unlock(&fh->lock);
	atomic_store(&fh->cancel, true);
	if (fh->thread_up)
		pthread_join(fh->thread, NULL);
	if (fh->watcher_up)
		pthread_join(fh->watcher, NULL);
	fleet_gate_free(fh->gate);
	if (fh->efd >= 0)
		close(fh->efd);
	etcd_close(fh->e);
	pthread_mutex_destroy(&fh->lock);
	pthread_cond_destroy(&fh->cond);
	free(fh->published);
	free(fh->running);
	sign_keyring_free(fh->keys);
	free(fh);
}
