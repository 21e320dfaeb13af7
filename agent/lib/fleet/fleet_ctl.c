/* SPDX-License-Identifier: MIT */
/* fleet_ctl.c — see fleet_ctl.h.
 *
 * Divisions: saying things; reading the hosts; creating a rollout; the
 * leader; committing a step; the run loop; abort, get, list.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fleet/etcd.h"
#include "fleet/fleet_creds.h"
#include "fleet/fleet_ctl.h"
#include "fleet/fleet_ctl_test.h"
#include "fleet/sign.h"
#include "base/nap.h"
#include "base/parse.h"
#include "nt_clock.h"

struct fleet_ctl {
	struct etcd *e;
	note_fn note;
	void *arg;
	int64_t lease;                /* the leader lease, 0 none */
	int64_t leader_rev;           /* the leader key's create_revision */
	double next_keepalive;        /* with no keeper thread */
	/* the lease's keeper (keeper_start): a thread and a client of its own */
	char *endpoints;
	struct fleet_creds creds;
	bool has_creds;
	pthread_t keeper;
	bool keeper_up;
	pthread_mutex_t keeper_lock;
	pthread_cond_t keeper_cond;
	bool keeper_stop;             /* under keeper_lock */
	atomic_bool lost;             /* etcd said the lease is gone */
	double pause_s;               /* NODETUNE_FLEET_PAUSE: tests kill the controller between steps */
	const struct sign_key *signer;  /* NULL: documents go unsigned */
	struct sign_keyring *trust;     /* what it verifies its own state with (the signer's key and
					 * fleet_ctl_set_trust's); built at first use; owned */
	char fleet[SIGN_NAME_MAX];      /* the fleet id signed into every document */
	uint64_t seq_last;              /* the last seq this controller took */
	unsigned page_hosts;            /* hosts per page of a rollout it creates (NODETUNE_FLEET_TXN_HOSTS) */
	unsigned txns;                  /* transactions committed (said with NODETUNE_FLEET_PAUSE) */
	/* what the leader keeps between passes (fleet_ctl_run): the hosts' rows,
	 * followed by a watch, and the rollout as it committed it */
	struct fleet_host_row *rows;
	unsigned n_rows, cap_rows;
	int64_t hosts_rev;              /* the rows are the hosts' keys at this revision; 0: not read */
	int64_t hosts_need;             /* its own last writes to the hosts' keys: the rows must reach it */
	struct fleet_rollout cache;
	struct fleet_layout cache_l;
	int64_t cache_rev;              /* the head's mod_revision it committed; 0: none */
};

/* One line for the caller's note callback (none: nothing). */
#define say(c, level, ...) notef((c)->note, (c)->arg, (level), __VA_ARGS__)

/* NODETUNE_FLEET_PAUSE, a duration (nt_duration.h) from 0 to 10 s; 0 when
 * unset or not one. */
static double pause_from_env(void)
{
	const char *s = getenv("NODETUNE_FLEET_PAUSE");
	double v;

	return s && nt_duration_parse(s, 0, 10, &v) == 0 ? v : 0;
}

/* NODETUNE_FLEET_TXN_HOSTS, 1 to FLEET_PAGE_HOSTS: hosts per page of a
 * rollout this controller creates, and so the desired keys of one
 * transaction (tests: a small value makes a step take several); else
 * FLEET_PAGE_HOSTS.  Only the controller's own layout moves: a page holds
 * fewer hosts, a step takes more transactions, each still compared. */
static unsigned page_hosts_from_env(void)
{
	const char *s = getenv("NODETUNE_FLEET_TXN_HOSTS");
	char *end;
	unsigned long v = s ? strtoul(s, &end, 10) : 0;

	return s && *s && !*end && v >= 1 && v <= FLEET_PAGE_HOSTS ? (unsigned)v : FLEET_PAGE_HOSTS;
}

struct fleet_ctl *fleet_ctl_open(const char *endpoints, const struct fleet_creds *creds, note_fn note,
				 void *arg, struct nt_err *err)
{
	struct fleet_ctl *c = calloc(1, sizeof(*c));

	if (!c) {
		err_set(err, -ENOMEM, "out of memory");
		return NULL;
	}
	c->e = etcd_open(endpoints, err);
	if (!c->e || fleet_creds_apply(c->e, creds, err) < 0 || etcd_login(c->e, err) < 0) {
		etcd_close(c->e);
		free(c);
		return NULL;
	}
	etcd_set_timeout(c->e, 2000);
	if (!(c->endpoints = strdup(endpoints))) {
		etcd_close(c->e);
		free(c);
		err_set(err, -ENOMEM, "out of memory");
		return NULL;
	}
	if ((c->has_creds = creds != NULL))
		c->creds = *creds;
	atomic_init(&c->lost, false);
	c->pause_s = pause_from_env();
	c->page_hosts = page_hosts_from_env();
	snprintf(c->fleet, sizeof(c->fleet), "%s", SIGN_FLEET_DEFAULT);
	c->note = note;
	c->arg = arg;
	return c;
}

void fleet_ctl_set_signer(struct fleet_ctl *c, const struct sign_key *k)
{
	c->signer = k;
}

int fleet_ctl_set_trust(struct fleet_ctl *c, const struct sign_keyring *kr, struct nt_err *err)
{
	struct sign_keyring *t = sign_keyring_with(kr, c->signer, err);

	if (!t)
		return err->code;
	sign_keyring_free(c->trust);
	c->trust = t;
	return 0;
}

/* The keys the controller verifies with: fleet_ctl_set_trust's, or the
 * signer's own.  NULL with err on out of memory. */
static const struct sign_keyring *trust(struct fleet_ctl *c, struct nt_err *err)
{
	if (!c->trust)
		c->trust = sign_keyring_with(NULL, c->signer, err);
	return c->trust;
}

/* Verify buf (a store value) against the controller's keys as a document
 * of kind for host ("*": none), of this controller's fleet.  Its expiry is
 * not checked: the controller asks only whether it signed those bytes (a
 * host judges freshness; what the controller restores it signs again, with
 * a new seq and expiry).  0 with *ret (release it), -EPERM with *ret_why
 * and err ("refused (REASON): ..."), or -ENOMEM. */
static int verify(struct fleet_ctl *c, enum sign_kind kind, const char *host, const char *buf, size_t len,
		  struct sign_envelope *ret, enum sign_reject *ret_why, struct nt_err *err)
{
	const struct sign_expect want = { .kind = kind, .host = host, .fleet = c->fleet };
	const struct sign_keyring *kr = trust(c, err);

	return kr ? sign_verify(kr, buf, len, &want, ret, ret_why, err) : err->code;
}

int fleet_ctl_set_fleet(struct fleet_ctl *c, const char *fleet, struct nt_err *err)
{
	if (!sign_fleet_valid(fleet))
		return err_set(err, -EINVAL, "fleet id '%.64s': not a name ([A-Za-z0-9._-], 1 to 63 bytes)", fleet);
	snprintf(c->fleet, sizeof(c->fleet), "%s", fleet);
	return 0;
}

/* When a document of kind signed now expires: never for a policy (named
 * by the sha256 of a desired that expires), the counter and a rollout (the
 * controller's state, resumed whenever); a timestamp soon; a desired or
 * shadow after FLEET_DOC_TTL_S. */
static int64_t expiry_of(enum sign_kind kind, int64_t now)
{
	switch (kind) {
	case SIGN_KIND_POLICY:
	case SIGN_KIND_COUNTER:
	case SIGN_KIND_ROLLOUT:
	case SIGN_KIND_RECORD:
		return 0;
	case SIGN_KIND_TIMESTAMP:
		return now + FLEET_TIMESTAMP_TTL_S;
	default:
		return now + FLEET_DOC_TTL_S;
	}
}

/* With a signer, replace *val (a document for host, "*" for a policy) by
 * its signed envelope.  0, -EINVAL or -ENOMEM with err; *val kept on error. */
static int seal(const struct fleet_ctl *c, enum sign_kind kind, const char *host, const char *rollout,
		const char *sha, uint64_t seq, char **val, struct nt_err *err)
{
	struct sign_header h = { .kind = kind, .seq = seq, .expires = expiry_of(kind, (int64_t)nt_wall_s()) };
	char *env;
	int r;

	if (!c->signer)
		return 0;
	snprintf(h.fleet, sizeof(h.fleet), "%s", c->fleet);
	snprintf(h.host, sizeof(h.host), "%s", host);
	snprintf(h.rollout, sizeof(h.rollout), "%s", rollout);
	snprintf(h.policy_sha256, sizeof(h.policy_sha256), "%s", *sha ? sha : FLEET_SHA_NONE);
	if ((r = sign_envelope_make(c->signer, &h, *val, strlen(*val), &env, err)) < 0)
		return r;
	free(*val);
	*val = env;
	return 0;
}

/* ---- the counter (the seq) ------------------------------------------------ */

uint64_t fleet_ctl_seq_after(uint64_t counter, uint64_t last, uint64_t now_ns)
{
	uint64_t next = counter + 1 > last + 1 ? counter + 1 : last + 1;

	next = next > now_ns ? next : now_ns;
	return next > (uint64_t)INT64_MAX ? (uint64_t)INT64_MAX : next;
}

int fleet_ctl_counter_check(const struct sign_keyring *kr, const char *key_id, const char *fleet, const char *buf,
			    size_t len, uint64_t *ret_seq, struct nt_err *err)
{
	struct sign_expect want = { .kind = SIGN_KIND_COUNTER, .host = "*", .fleet = fleet, .now = nt_wall_s() };
	struct sign_envelope e = { 0 };
	struct fleet_stamp st = { 0 };
	struct nt_err why = { 0 };
	enum sign_reject reason;
	int r = sign_verify(kr, buf, len, &want, &e, &reason, &why);

	if (r == 0 && (r = fleet_doc_parse_stamp(FLEET_SEQ_KEY, e.doc, e.doc_len, &st, &why)) == 0 && st.seq != e.h.seq)
		r = err_set(&why, -EINVAL, "the document's seq is not the one signed");
	sign_envelope_release(&e);
	if (r == -ENOMEM)
		return err_set(err, r, "out of memory");
	if (r < 0)
		return err_set(err, -EPERM, "%s: the counter does not verify with this controller's key %s (or those of "
			       "--fleet-keys) for fleet %s: %s; stopped (a counter deleted by its operator starts again "
			       "from the clock)", FLEET_SEQ_KEY, key_id, fleet, why.msg);
	*ret_seq = st.seq;
	return 0;
}

/* The signed counter document of seq, to put. */
static int counter_value(const struct fleet_ctl *c, uint64_t seq, char **ret, struct nt_err *err)
{
	struct fleet_stamp st = { seq, (int64_t)nt_wall_s() };
	char *doc = fleet_stamp_json(&st);
	int r;

	if (!doc)
		return err_set(err, -ENOMEM, "out of memory");
	if ((r = seal(c, SIGN_KIND_COUNTER, "*", SIGN_NO_ROLLOUT, FLEET_SHA_NONE, seq, &doc, err)) < 0) {
		free(doc);
		return r;
	}
	*ret = doc;
	return 0;
}

/* One try of seq_next: read and verify the counter, put the next value if
 * it is unchanged.  0, -ECANCELED (it changed: try again), or an error. */
static int seq_try(struct fleet_ctl *c, uint64_t *ret, struct nt_err *err)
{
	struct etcd_range rg = { 0 };
	uint64_t counter = 0, next;
	int64_t mod = 0;
	char *val = NULL;
	int r = etcd_get(c->e, FLEET_SEQ_KEY, false, &rg, err);

	if (r == 0 && rg.n_kvs) {
		const struct sign_keyring *kr = trust(c, err);

		mod = rg.kvs[0].mod_revision;
		/* its own key's, or one it trusts besides (--fleet-keys: the
		 * key it rotates from) */
		r = kr ? fleet_ctl_counter_check(kr, c->signer->id, c->fleet, rg.kvs[0].value, rg.kvs[0].value_len,
						 &counter, err)
		       : err->code;
	}
	etcd_range_free(&rg);
	if (r < 0)
		return r;
	next = fleet_ctl_seq_after(counter, c->seq_last, (uint64_t)nt_clock_ns(CLOCK_REALTIME));
	if ((r = counter_value(c, next, &val, err)) == 0)
		r = etcd_cas(c->e, FLEET_SEQ_KEY, mod, val, strlen(val), 0, NULL, err);
	free(val);
	if (r == 0)
		*ret = c->seq_last = next;
	return r;
}

/* The seq of what is signed next: the controller's own counter, never the
 * store's revision (fleet_ctl.h says why it only grows). */
static int seq_next(struct fleet_ctl *c, uint64_t *ret, struct nt_err *err)
{
	int r = -ECANCELED;

	for (int i = 0; i < 8 && r == -ECANCELED; i++)
		r = seq_try(c, ret, err);
	if (r == -ECANCELED)
		return err_set(err, -EBUSY, "%s changed under this controller 8 times in a row", FLEET_SEQ_KEY);
	return r;
}

int fleet_ctl_timestamp(struct fleet_ctl *c, struct fleet_stamp *ret, struct nt_err *err)
{
	struct fleet_stamp st = { 0 };
	char *doc = NULL;
	int r;

	if (!c->signer)
		return err_set(err, -EINVAL, "a timestamp is signed: --signing-key is needed");
	if ((r = seq_next(c, &st.seq, err)) < 0)
		return r;
	st.time = (int64_t)nt_wall_s();
	if (!(doc = fleet_stamp_json(&st)))
		return err_set(err, -ENOMEM, "out of memory");
	r = seal(c, SIGN_KIND_TIMESTAMP, "*", SIGN_NO_ROLLOUT, FLEET_SHA_NONE, st.seq, &doc, err);
	if (r == 0)
		r = etcd_put(c->e, FLEET_TIMESTAMP_KEY, doc, strlen(doc), 0, NULL, err);
	free(doc);
	if (r == 0)
		*ret = st;
	return r;
}

static void keeper_stop(struct fleet_ctl *c);

void fleet_ctl_close(struct fleet_ctl *c)
{
	if (!c)
		return;
	keeper_stop(c);
	if (c->lease)
		etcd_lease_revoke(c->e, c->lease, NULL);
	etcd_close(c->e);
	free(c->endpoints);
	sign_keyring_free(c->trust);
	free(c->rows);
	fleet_rollout_release(&c->cache);
	fleet_layout_release(&c->cache_l);
	free(c);
}

/* ---- reading the hosts -------------------------------------------------- */

static int row_cmp(const void *a, const void *b)
{
	return strcmp(((const struct fleet_host_row *)a)->host, ((const struct fleet_host_row *)b)->host);
}

/* The row of host in rows[0..*n) (sorted up to sorted_n), added when absent. */
static struct fleet_host_row *row_of(struct fleet_host_row *rows, unsigned *n, const char *host)
{
	for (unsigned i = *n; i-- > 0;)
		if (!strcmp(rows[i].host, host))
			return &rows[i];
	memset(&rows[*n], 0, sizeof(rows[*n]));
	snprintf(rows[*n].host, sizeof(rows[*n].host), "%s", host);
	return &rows[(*n)++];
}

/* The document of a store value only observed or shown, never acted on
 * or signed: inside a signed envelope (unverified: *e owns it; release
 * it), else the value itself. */
static void unwrap(const struct etcd_kv *kv, struct sign_envelope *e, const char **ret_doc, size_t *ret_len)
{
	enum sign_reject why;

	if (sign_envelope_parse(kv->value, kv->value_len, e, &why, NULL) == 0) {
		*ret_doc = e->doc;
		*ret_len = e->doc_len;
	} else {
		*ret_doc = kv->value;
		*ret_len = kv->value_len;
	}
}

/* A desired or shadow value as the controller reads it back: the hosts
 * verify it; the controller only observes. */
static int parse_desired_value(const struct etcd_kv *kv, struct fleet_desired *d, struct nt_err *err)
{
	struct sign_envelope e = { 0 };
	const char *doc;
	size_t len;
	int r;

	unwrap(kv, &e, &doc, &len);
	r = fleet_doc_parse_desired(kv->key, doc, len, d, err);
	sign_envelope_release(&e);
	return r;
}

/* One key-value of the hosts' prefix into its row.  A value that does not
 * parse is kept as the row's "bad" (a host's problem, not the controller's). */
static void row_take(struct fleet_host_row *row, enum fleet_key_kind kind, const struct etcd_kv *kv)
{
	struct nt_err err = { 0 };
	struct fleet_desired shadow;
	int r = 0;

	switch (kind) {
	case FLEET_KEY_HOST:
		r = fleet_doc_parse_hostinfo(kv->key, kv->value, kv->value_len, &row->info, &err);
		row->alive = true;
		break;
	case FLEET_KEY_DESIRED:
		r = parse_desired_value(kv, &row->desired, &err);
		row->has_desired = r == 0;
		row->desired_rev = kv->mod_revision;
		break;
	case FLEET_KEY_SHADOW:
		r = parse_desired_value(kv, &shadow, &err);
		row->shadow_rev = kv->mod_revision;
		break;
	case FLEET_KEY_STATUS:
		r = fleet_doc_parse_status(kv->key, kv->value, kv->value_len, &row->status, &err);
		row->has_status = r == 0;
		break;
	case FLEET_KEY_OTHER:
		break;
	}
	if (r < 0)
		snprintf(row->bad, sizeof(row->bad), "%.200s", err.msg);
}

/* Read every host's keys: rows sorted by name, and the store's revision. */
static int read_hosts(struct fleet_ctl *c, struct fleet_host_row **ret, unsigned *ret_n, int64_t *ret_revision,
		      int64_t *ret_newest, struct nt_err *err)
{
	struct etcd_range rg = { 0 };
	struct fleet_host_row *rows;
	unsigned n = 0;
	int r = etcd_get(c->e, FLEET_ROOT "hosts/", true, &rg, err);

	if (r < 0)
		return r;
	r = fleet_ctl_rows(rg.kvs, rg.n_kvs, &rows, &n);
	if (r == 0) {
		*ret_revision = rg.revision;
		*ret = rows;
		*ret_n = n;
	}
	for (size_t i = 0; r == 0 && ret_newest && i < rg.n_kvs; i++)
		if (rg.kvs[i].mod_revision > *ret_newest)
			*ret_newest = rg.kvs[i].mod_revision;
	etcd_range_free(&rg);
	return r < 0 ? err_set(err, r, "out of memory") : 0;
}

int fleet_ctl_rows(const struct etcd_kv *kvs, size_t n_kvs, struct fleet_host_row **ret, unsigned *ret_n)
{
	struct fleet_host_row *rows = calloc(n_kvs + 1, sizeof(*rows));
	unsigned n = 0;

	if (!rows)
		return -ENOMEM;
	for (size_t i = 0; i < n_kvs; i++) {
		char host[FLEET_NAME_MAX];
		enum fleet_key_kind kind = fleet_key_parse(kvs[i].key, host);

		if (kind != FLEET_KEY_OTHER)
			row_take(row_of(rows, &n, host), kind, &kvs[i]);
	}
	qsort(rows, n, sizeof(*rows), row_cmp);
	*ret = rows;
	*ret_n = n;
	return 0;
}

/* The row of host in the sorted rows, inserted (zeroed, named) when absent;
 * NULL out of memory. */
static struct fleet_host_row *row_find(struct fleet_host_row **rows, unsigned *n, unsigned *cap, const char *host)
{
	unsigned lo = 0, hi = *n;
	struct fleet_host_row *grown;

	while (lo < hi) {
		unsigned mid = lo + (hi - lo) / 2;
		int d = strcmp((*rows)[mid].host, host);

		if (d == 0)
			return &(*rows)[mid];
		if (d < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (*n >= *cap) {
		if (!(grown = realloc(*rows, (*cap * 2 + 16) * sizeof(**rows))))
			return NULL;
		*rows = grown;
		*cap = *cap * 2 + 16;
	}
	memmove(&(*rows)[lo + 1], &(*rows)[lo], (*n - lo) * sizeof(**rows));
	(*n)++;
	memset(&(*rows)[lo], 0, sizeof(**rows));
	snprintf((*rows)[lo].host, sizeof((*rows)[lo].host), "%s", host);
	return &(*rows)[lo];
}

int fleet_ctl_rows_apply(struct fleet_host_row **rows, unsigned *n, unsigned *cap, const struct etcd_event *ev,
			 size_t n_ev)
{
	for (size_t i = 0; i < n_ev; i++) {
		char host[FLEET_NAME_MAX];
		enum fleet_key_kind kind = fleet_key_parse(ev[i].kv.key, host);
		struct fleet_host_row *row;

		if (kind == FLEET_KEY_OTHER)
			continue;
		if (!(row = row_find(rows, n, cap, host)))
			return -ENOMEM;
		row->bad[0] = '\0';
		if (ev[i].type == ETCD_EVENT_PUT) {
			row_take(row, kind, &ev[i].kv);
			continue;
		}
		switch (kind) {
		case FLEET_KEY_HOST:
			row->alive = false;
			break;
		case FLEET_KEY_DESIRED:
			row->has_desired = false;
			row->desired_rev = 0;
			break;
		case FLEET_KEY_SHADOW:
			row->shadow_rev = 0;
			break;
		default:
			row->has_status = false;
			break;
		}
	}
	return 0;
}

void fleet_ctl_mark_behind(struct fleet_host_row *rows, unsigned n, const struct etcd_kv *kvs, size_t n_kvs)
{
	for (size_t k = 0; k < n_kvs; k++) {
		char id[FLEET_CLASS_LEN + 1] = "", want[128];
		struct fleet_desired d;

		if (strlen(kvs[k].key) > strlen(FLEET_ROOT "classes/"))
			snprintf(id, sizeof(id), "%s", kvs[k].key + strlen(FLEET_ROOT "classes/"));
		if (strcmp(kvs[k].key, fleet_record_key(want, sizeof(want), id)) ||
		    parse_desired_value(&kvs[k], &d, NULL) < 0)
			continue;
		for (unsigned i = 0; i < n; i++)
			if (rows[i].has_status && !strncmp(rows[i].status.class_id, id, FLEET_CLASS_LEN)) {
				snprintf(rows[i].record_sha, sizeof(rows[i].record_sha), "%s", d.sha256);
				rows[i].behind = strcmp(rows[i].status.sha256, d.sha256) != 0;
			}
	}
}

int fleet_ctl_hosts(struct fleet_ctl *c, struct fleet_host_row **ret, unsigned *ret_n, struct nt_err *err)
{
	struct etcd_range rg = { 0 };
	int64_t rev;
	int r = read_hosts(c, ret, ret_n, &rev, NULL, err);

	if (r == 0 && (r = etcd_get(c->e, FLEET_ROOT "classes/", true, &rg, err)) < 0)
		free(*ret);
	else if (r == 0)
		fleet_ctl_mark_behind(*ret, *ret_n, rg.kvs, rg.n_kvs);
	etcd_range_free(&rg);
	return r;
}

/* ---- creating a rollout ------------------------------------------------ */

bool fleet_ctl_policy_ours(struct fleet_ctl *c, const struct etcd_kv *kv, const char *sha)
{
	struct sign_envelope e = { 0 };
	enum sign_reject why;
	bool ours = verify(c, SIGN_KIND_POLICY, "*", kv->value, kv->value_len, &e, &why, NULL) == 0 &&
		    !strcmp(e.key_id, c->signer->id) && !strcmp(e.h.policy_sha256, sha);

	sign_envelope_release(&e);
	return ours;
}

/* Key rotation (a policy is stored once, under the key of its first
 * rollout): the document at key exists; unless this controller's key
 * signed it (another trusted key, a retired one, or none), replace it by
 * doc, compare-and-swap on the revision read.  doc is the file this
 * controller was given, hashed here to sha and signed now: the bytes it
 * verified itself, never the stored ones.  0 or a store error. */
static int policy_resign(struct fleet_ctl *c, const char *key, const char *sha, const char *doc, struct nt_err *err)
{
	struct etcd_range rg = { 0 };
	int r = etcd_get(c->e, key, false, &rg, err);

	if (r == 0 && rg.n_kvs && !fleet_ctl_policy_ours(c, &rg.kvs[0], sha)) {
		r = etcd_cas(c->e, key, rg.kvs[0].mod_revision, doc, strlen(doc), 0, NULL, err);
		if (r == -ECANCELED)
			r = err_set(err, -EAGAIN, "%s changed while this controller signed it again: try again", key);
		else if (r == 0)
			say(c, LOG_NOTICE, "%s: stored unsigned or under another key: signed again with key %s", key,
			    c->signer->id);
	}
	etcd_range_free(&rg);
	return r;
}

/* Put the policy document unless it is there (it is immutable, but for
 * the key that signs it: policy_resign). */
static int store_policy(struct fleet_ctl *c, const struct fleet_rollout_opts *o, char sha[FLEET_SHA_LEN + 1],
			struct nt_err *err)
{
	char key[128], *doc = fleet_policy_doc_json(o->policy_name, o->content, o->content_len, sha);
	uint64_t seq = 0;
	int r;

	if (!doc)
		return err_set(err, -ENOMEM, "out of memory");
	fleet_doc_policy_key(key, sizeof(key), sha);
	r = c->signer ? seq_next(c, &seq, err) : 0;
	if (r == 0)
		r = seal(c, SIGN_KIND_POLICY, "*", o->name, sha, seq, &doc, err);
	if (r == 0)
		r = etcd_cas(c->e, key, 0, doc, strlen(doc), 0, NULL, err);
	if (r == -ECANCELED)
		r = c->signer ? policy_resign(c, key, sha, doc, err) : 0;
	free(doc);
	return r;
}

/* Another rollout still running?  0, -EBUSY (said), or a store error. */
static int none_running(struct fleet_ctl *c, const char *name, struct nt_err *err)
{
	struct fleet_rollout *all = NULL;
	unsigned n = 0;
	int r = fleet_ctl_list(c, &all, &n, err);

	for (unsigned i = 0; r == 0 && i < n; i++)
		if (!fleet_state_final(all[i].state) && strcmp(all[i].name, name))
			r = err_set(err, -EBUSY, "rollout %s is %s: one rollout at a time (fleet abort or resume it first)",
				    all[i].name, fleet_state_names[all[i].state]);
	for (unsigned i = 0; i < n; i++)
		fleet_rollout_release(&all[i]);
	free(all);
	return r;
}

/* The members of the rollout: every host alive now. */
static int members_now(struct fleet_ctl *c, struct fleet_host_row **ret_rows, struct fleet_member **ret,
		       unsigned *ret_n, struct nt_err *err)
{
	struct fleet_host_row *rows;
	struct fleet_member *m;
	unsigned n, k = 0;
	int64_t rev;
	int r = read_hosts(c, &rows, &n, &rev, NULL, err);

	if (r < 0)
		return r;
	m = calloc(n + 1, sizeof(*m));
	if (!m) {
		free(rows);
		return err_set(err, -ENOMEM, "out of memory");
	}
	for (unsigned i = 0; i < n; i++) {
		if (!rows[i].alive || !*rows[i].info.class_id)
			continue;
		snprintf(m[k].host, sizeof(m[k].host), "%s", rows[i].host);
		snprintf(m[k].class_id, sizeof(m[k].class_id), "%s", rows[i].info.class_id);
		snprintf(m[k].label, sizeof(m[k].label), "%s", rows[i].info.label);
		m[k].desired_rev = rows[i].desired_rev;
		k++;
	}
	*ret_rows = rows;
	*ret = m;
	*ret_n = k;
	return 0;
}

/* With a signer: is h's desired value from before the rollout one it may
 * sign again (a desired envelope for h, by a key it trusts)?  0 with *ret
 * (release it); -EPERM when not, with h->prev_refused the reason and
 * prev_desired dropped (never kept, never signed), err saying it; or
 * -ENOMEM.  A host without one (mode local) is 0 with *ret empty. */
static int prev_verify(struct fleet_ctl *c, struct fleet_rhost *h, struct sign_envelope *ret, struct nt_err *err)
{
	enum sign_reject why;
	int r;

	if (*h->prev_refused)
		return err_set(err, -EPERM, "refused (%s): not kept when the rollout started", h->prev_refused);
	if (!h->prev_desired)
		return 0;
	r = verify(c, SIGN_KIND_DESIRED, h->host, h->prev_desired, strlen(h->prev_desired), ret, &why, err);
	if (r == -EPERM) {
		snprintf(h->prev_refused, sizeof(h->prev_refused), "%s", sign_reject_names[why]);
		free(h->prev_desired);
		h->prev_desired = NULL;
	}
	return r;
}

/* The desired values before the rollout, as the store holds them: with a
 * signer, only an envelope it verifies (prev_verify); another is dropped
 * and said, and a rollback leaves that host as it is. */
static int prev_desired(struct fleet_ctl *c, struct fleet_rollout *r, struct nt_err *err)
{
	for (unsigned w = 0; w < r->n_waves; w++)
		for (unsigned i = 0; i < r->waves[w].n; i++) {
			struct fleet_rhost *h = &r->waves[w].hosts[i];
			struct sign_envelope e = { 0 };
			struct etcd_range rg = { 0 };
			struct nt_err why = { 0 };
			char key[128];
			int rc = etcd_get(c->e, fleet_doc_host_key(key, sizeof(key), h->host, "desired"), false, &rg, err);

			if (rc < 0)
				return rc;
			free(h->prev_desired);
			h->prev_desired = rg.n_kvs ? strdup(rg.kvs[0].value) : NULL;
			h->prev_rev = rg.n_kvs ? rg.kvs[0].mod_revision : 0;
			etcd_range_free(&rg);
			rc = c->signer ? prev_verify(c, h, &e, &why) : 0;
			sign_envelope_release(&e);
			if (rc == -EPERM)
				say(c, LOG_WARNING, "%s: %s: a rollback will leave %s as it is", key, why.msg, h->host);
			else if (rc < 0)
				return err_set(err, rc, "%s", why.msg);
		}
	return 0;
}

int fleet_ctl_rollout_value(const struct fleet_ctl *c, const struct fleet_rollout *r, uint64_t seq, char **ret,
			    struct nt_err *err)
{
	struct fleet_layout l;
	char *doc = NULL;
	int rc;

	if (fleet_layout_init(&l, r, c->page_hosts) == 0) {
		for (unsigned g = 0; g < l.n_pages; g++)
			l.seq[g] = seq;
		doc = fleet_rollout_head_json(r, &l);
	}
	fleet_layout_release(&l);
	if (!doc)
		return err_set(err, -ENOMEM, "out of memory");
	if ((rc = seal(c, SIGN_KIND_ROLLOUT, "*", r->name, r->sha256, seq, &doc, err)) < 0) {
		free(doc);
		return rc;
	}
	*ret = doc;
	return 0;
}

static void rollout_init(struct fleet_rollout *r, const struct fleet_rollout_opts *o, const char *sha)
{
	snprintf(r->name, sizeof(r->name), "%s", o->name);
	snprintf(r->policy, sizeof(r->policy), "%s", o->policy_name);
	snprintf(r->sha256, sizeof(r->sha256), "%s", sha);
	snprintf(r->waves_spec, sizeof(r->waves_spec), "%s", o->shadow ? "shadow" : o->waves);
	snprintf(r->gate, sizeof(r->gate), "%s", o->gate ? o->gate : "");
	r->gate_budget = o->gate_budget;
	r->wave_timeout = o->wave_timeout;
	r->shadow = o->shadow;
	r->allow_inconclusive = o->allow_inconclusive;
	r->state = FLEET_RUNNING;
	r->goal = FLEET_ROLLED_BACK;
	r->created = r->updated = nt_wall_s();
}

static int commit(struct fleet_ctl *c, const struct fleet_rollout *r, const struct fleet_layout *lr,
		  struct fleet_rollout *next, int64_t rollout_rev, struct fleet_write *w, unsigned n_w, int64_t *ret_rev,
		  struct fleet_layout *ret_l, struct nt_err *err);

/* The layout of r's pages with the revisions of the pages a creation
 * killed before its head left (a rollout has no head before its last
 * transaction): those are written over, each compared at its revision. */
static int pages_left(struct fleet_ctl *c, const struct fleet_rollout *r, struct fleet_layout *l, struct nt_err *err)
{
	struct etcd_range rg = { 0 };
	char prefix[160];
	int rc;

	if (fleet_layout_init(l, r, c->page_hosts) < 0)
		return err_set(err, -ENOMEM, "out of memory");
	if ((rc = etcd_get(c->e, fleet_rollout_key(prefix, sizeof(prefix), r->name, false), false, &rg, err)) < 0)
		return rc;
	rc = rg.n_kvs ? -ECANCELED : 0;          /* it has a head: it exists */
	etcd_range_free(&rg);
	if (rc < 0)
		return rc;
	snprintf(prefix, sizeof(prefix), FLEET_ROOT "rollouts/%s/pages/", r->name);
	if ((rc = etcd_get(c->e, prefix, true, &rg, err)) < 0)
		return rc;
	for (unsigned g = 0; g < l->n_pages; g++) {
		unsigned w = 0, p = 0;
		char key[160];

		fleet_page_locate(r, l, g, &w, &p);
		fleet_page_key(key, sizeof(key), r->name, w, p);
		for (size_t i = 0; i < rg.n_kvs; i++)
			if (!strcmp(rg.kvs[i].key, key))
				l->rev[g] = rg.kvs[i].mod_revision;
	}
	etcd_range_free(&rg);
	return 0;
}

/* Plan and write the rollout (create-only). */
static int create_doc(struct fleet_ctl *c, struct fleet_rollout *r, const struct fleet_rollout_opts *o,
		      struct nt_err *err)
{
	struct fleet_wave_spec spec[FLEET_WAVES_MAX] = { { .fraction = 1, .text = "shadow" } };
	unsigned n_spec = 1, n_m = 0;
	struct fleet_host_row *rows = NULL;
	struct fleet_member *m = NULL;
	struct fleet_layout left = { 0 };
	int rc;

	if (!o->shadow && (rc = fleet_waves_parse(o->waves, spec, &n_spec, err)) < 0)
		return rc;
	if ((rc = members_now(c, &rows, &m, &n_m, err)) < 0)
		return rc;
	rc = fleet_plan_waves(r, m, n_m, spec, n_spec, err);
	free(m);
	free(rows);
	if (rc == 0 && !o->shadow)
		rc = prev_desired(c, r, err);
	if (rc < 0)
		return rc;
	fleet_event(r, r->created, "created: %s (sha256 %.12s) over %u host(s) in %u wave(s)%s", r->policy, r->sha256,
		    n_m, r->n_waves, o->shadow ? ", shadow" : "");
	if ((rc = pages_left(c, r, &left, err)) == 0)
		rc = commit(c, NULL, &left, r, 0, NULL, 0, NULL, NULL, err);
	fleet_layout_release(&left);
	if (rc == -ECANCELED)
		return err_set(err, -EEXIST, "rollout %s exists already (fleet status --name %s; fleet resume to go on)",
			       r->name, r->name);
	return rc;
}

int fleet_ctl_policy_text(const char *path, unsigned flags, char **ret_text, size_t *ret_len, struct nt_err *err)
{
	struct nt_err e = { 0 };
	struct policy *p;
	char *text;
	size_t len;
	int r = policy_flatten(path, flags, &text, &len, &e);

	if (r < 0)
		return err_set(err, r, "%s", e.msg);
	/* what a host will do with the text: a flattened policy has no
	 * include, so a refusal here is a bug of the flattening, said as one */
	p = policy_parse_buffer(text, len, path, &e);
	if (!p) {
		free(text);
		return err_set(err, e.code ? e.code : -EINVAL, "%s: flattened, it does not parse again: %s", path,
			       e.msg);
	}
	policy_free(p);
	*ret_text = text;
	*ret_len = len;
	return 0;
}

int fleet_ctl_create(struct fleet_ctl *c, const struct fleet_rollout_opts *o, struct nt_err *err)
{
	struct fleet_rollout r = { 0 };
	char sha[FLEET_SHA_LEN + 1];
	int rc;

	if (!fleet_name_valid(o->name))
		return err_set(err, -EINVAL, "--name '%s': not a name ([A-Za-z0-9._-], 1 to 63 bytes)", o->name);
	rc = none_running(c, o->name, err);
	if (rc == 0)
		rc = store_policy(c, o, sha, err);
	if (rc == 0) {
		rollout_init(&r, o, sha);
		rc = create_doc(c, &r, o, err);
		if (rc == 0)
			say(c, LOG_NOTICE, "%s", r.events[r.n_events - 1].what);
	}
	fleet_rollout_release(&r);
	return rc;
}

/* ---- the leader ---------------------------------------------------------- */

/* The leader lease's keeper: a thread renews the lease every
 * FLEET_LEADER_TTL_S / 3 on a client of its own, whatever the controller
 * does meanwhile (a step over thousands of hosts, or a slow store, outlived
 * the 5 s lease when the renewal waited between the controller's steps: at
 * 5,000 hosts a rollback's step of 20 transactions lost the lead).  A
 * failure is retried every half second while the lease may live (one
 * client: not the hosts' jittered backoff, which spreads thousands of them
 * and, doubling, could let the lease lapse between two tries); etcd
 * saying the lease is gone sets c->lost.  Every write of the controller
 * still compares the leader key (txn), so a lease lost between a renewal
 * and a write costs that write, never a second leader. */
static void *keeper_main(void *arg)
{
	struct fleet_ctl *c = arg;
	struct etcd *e = etcd_open(c->endpoints, NULL);
	double pause = FLEET_LEADER_TTL_S / 3.0;

	if (e && c->has_creds && fleet_creds_apply(e, &c->creds, NULL) < 0) {
		etcd_close(e);
		e = NULL;
	}
	if (e)
		etcd_set_timeout(e, 1000);
	while (e && !nap(&c->keeper_lock, &c->keeper_cond, &c->keeper_stop, pause)) {
		int r = etcd_lease_keepalive(e, c->lease, NULL, NULL);

		if (r == -ENOENT) {
			atomic_store(&c->lost, true);
			break;
		}
		pause = r == 0 ? FLEET_LEADER_TTL_S / 3.0 : 0.5;
	}
	etcd_close(e);
	return NULL;
}

/* Start the keeper for c->lease.  Without a thread the controller renews
 * the lease itself between steps (leader_keepalive), as before. */
static void keeper_start(struct fleet_ctl *c)
{
	atomic_store(&c->lost, false);
	c->keeper_stop = false;
	pthread_mutex_init(&c->keeper_lock, NULL);
	nap_cond_init(&c->keeper_cond);
	c->keeper_up = pthread_create(&c->keeper, NULL, keeper_main, c) == 0;
	if (!c->keeper_up) {
		pthread_cond_destroy(&c->keeper_cond);
		pthread_mutex_destroy(&c->keeper_lock);
	}
}

static void keeper_stop(struct fleet_ctl *c)
{
	if (!c->keeper_up)
		return;
	pthread_mutex_lock(&c->keeper_lock);
	c->keeper_stop = true;
	pthread_cond_broadcast(&c->keeper_cond);
	pthread_mutex_unlock(&c->keeper_lock);
	pthread_join(c->keeper, NULL);
	pthread_cond_destroy(&c->keeper_cond);
	pthread_mutex_destroy(&c->keeper_lock);
	c->keeper_up = false;
}

/* Create the leader key under a new lease.  0, -EBUSY (err names the
 * holder), or a store error. */
static int leader_try(struct fleet_ctl *c, const char *name, struct nt_err *err)
{
	char key[128], val[256], host[64] = "?";
	struct etcd_range rg = { 0 };
	int64_t lease;
	int r;

	gethostname(host, sizeof(host) - 1);
	snprintf(val, sizeof(val), "{\"controller\":\"%s\",\"pid\":%ld,\"since\":%.3f}", host, (long)getpid(),
		 nt_wall_s());
	if ((r = etcd_lease_grant(c->e, FLEET_LEADER_TTL_S, &lease, err)) < 0)
		return r;
	fleet_rollout_key(key, sizeof(key), name, true);
	r = etcd_cas(c->e, key, 0, val, strlen(val), lease, NULL, err);
	if (r == 0)
		r = etcd_get(c->e, key, false, &rg, err);
	if (r == 0 && rg.n_kvs == 1 && rg.kvs[0].lease == lease) {
		c->lease = lease;
		c->leader_rev = rg.kvs[0].create_revision;
		c->next_keepalive = nt_mono_s() + FLEET_LEADER_TTL_S / 3.0;
		etcd_range_free(&rg);
		keeper_start(c);
		return 0;
	}
	etcd_lease_revoke(c->e, lease, NULL);
	if (r == -ECANCELED && etcd_get(c->e, key, false, &rg, NULL) == 0 && rg.n_kvs)
		r = err_set(err, -EBUSY, "rollout %s is led by another controller (%s)", name, rg.kvs[0].value);
	else if (r == 0 || r == -ECANCELED)
		r = err_set(err, -EBUSY, "rollout %s: another controller took the lead", name);
	etcd_range_free(&rg);
	return r;
}

/* Become the leader; wait: for a dead leader's lease to expire, up to
 * FLEET_LEADER_WAIT_S (3x its measured life after a kill -9), saying so
 * once. */
static int leader_acquire(struct fleet_ctl *c, const char *name, bool wait, struct nt_err *err)
{
	double until = nt_mono_s() + FLEET_LEADER_WAIT_S;
	bool said = false;
	int r;

	while ((r = leader_try(c, name, err)) == -EBUSY && wait && nt_mono_s() < until) {
		if (!said)
			say(c, LOG_NOTICE, "%s; waiting up to %ds for its lease to expire", err->msg, FLEET_LEADER_WAIT_S);
		said = true;
		usleep(250000);
	}
	return r;
}

/* Is the lease still held (the keeper renews it), or, with no keeper,
 * renew it when due.  0, -ENOLCK (lost), or a store error (retried by the
 * caller while the lease may still live). */
static int leader_keepalive(struct fleet_ctl *c, struct nt_err *err)
{
	int64_t ttl;
	int r = 0;

	if (c->keeper_up && atomic_load(&c->lost))
		r = -ENOENT;
	else if (c->keeper_up || nt_mono_s() < c->next_keepalive)
		return 0;
	else
		r = etcd_lease_keepalive(c->e, c->lease, &ttl, err);
	if (r == -ENOENT) {
		c->lease = 0;
		return err_set(err, -ENOLCK, "the leader lease expired (the store was out of reach too long): stopped; "
					     "fleet resume goes on");
	}
	if (r == 0)
		c->next_keepalive = nt_mono_s() + FLEET_LEADER_TTL_S / 3.0;
	return r;
}

/* ---- committing a step ------------------------------------------------- */

char *fleet_ctl_write_value(const struct fleet_rollout *r, const struct fleet_write *w)
{
	const struct fleet_rhost *h = &r->waves[w->wave].hosts[w->index];
	struct fleet_desired d = { .mode = w->mode, .gate_budget = r->gate_budget,
				   .allow_inconclusive = r->allow_inconclusive };

	snprintf(d.rollout, sizeof(d.rollout), "%s", r->name);
	if (w->kind == FLEET_W_RESTORE_DESIRED) {
		if (h->prev_desired)
			return strdup(h->prev_desired);
		d.mode = FLEET_MODE_LOCAL;
		return fleet_desired_json(&d, false);
	}
	snprintf(d.policy, sizeof(d.policy), "%s", r->policy);
	snprintf(d.sha256, sizeof(d.sha256), "%s", r->sha256);
	snprintf(d.gate, sizeof(d.gate), "%s", r->gate);
	return fleet_desired_json(&d, w->kind == FLEET_W_PUT_SHADOW);
}

/* Sign the value *val of write w to host h: a restored value (h's
 * desired from before the rollout) is verified again (prev_verify), and
 * its document signed again with this seq (its old seq would be a
 * replay); the rollout and sha signed are the ones the desired names (a
 * restored one names the rollout it came from). */
int fleet_ctl_sign_write(struct fleet_ctl *c, const struct fleet_write *w, struct fleet_rhost *h, uint64_t seq,
			 const char *key, char **val, struct nt_err *err)
{
	struct sign_envelope e = { 0 };
	struct fleet_desired d;
	int rc;

	if (w->kind == FLEET_W_RESTORE_DESIRED && h->prev_desired) {
		if ((rc = prev_verify(c, h, &e, err)) < 0)
			return rc;
		free(*val);
		*val = e.doc;             /* moved: NUL-terminated */
		e.doc = NULL;
		sign_envelope_release(&e);
	}
	if ((rc = fleet_doc_parse_desired(key, *val, strlen(*val), &d, err)) < 0)
		return rc;
	return seal(c, w->kind == FLEET_W_PUT_SHADOW ? SIGN_KIND_SHADOW : SIGN_KIND_DESIRED, h->host, d.rollout,
		    d.sha256, seq, val, err);
}

/* Before a rollback's restores are signed: a host whose desired from
 * before the rollout does not verify (prev_verify) is left as it is. */
int fleet_ctl_keep_unverified(struct fleet_ctl *c, struct fleet_rollout *next, struct fleet_write *w, unsigned *n_w,
			      struct nt_err *err)
{
	unsigned k = 0;

	for (unsigned i = 0; i < *n_w; i++) {
		struct fleet_rhost *h = &next->waves[w[i].wave].hosts[w[i].index];
		struct sign_envelope e = { 0 };
		struct nt_err why = { 0 };
		int rc = w[i].kind == FLEET_W_RESTORE_DESIRED ? prev_verify(c, h, &e, &why) : 0;

		sign_envelope_release(&e);
		if (rc == -ENOMEM)
			return err_set(err, rc, "out of memory");
		if (rc == 0) {
			w[k++] = w[i];
			continue;
		}
		h->state = FLEET_R_KEPT;
		free(h->note);
		h->note = strdup("its desired value from before the rollout does not verify: not restored, left as it is");
		fleet_event(next, next->updated, "%s (%s): left as it is, not restored: its desired value from before the "
			    "rollout does not verify (%s)", h->host, h->label, h->prev_refused);
	}
	*n_w = k;
	return 0;
}

/* One transaction of a step: the leader's compare, cmp[0..n_cmp) (the
 * page and head keys it puts, each at the mod_revision read) and
 * ops[0..n).  *ret_rev: the store's revision after it. */
static int txn(struct fleet_ctl *c, const char *rkey, struct etcd_compare *cmp, unsigned n_cmp,
	       const struct etcd_op *ops, unsigned n, int64_t *ret_rev, struct nt_err *err)
{
	char lkey[160];
	struct etcd_txn_result res = { 0 };
	int r;

	snprintf(lkey, sizeof(lkey), "%s/leader", rkey);
	cmp[n_cmp++] = (struct etcd_compare){ .target = ETCD_CMP_CREATE, .key = lkey, .number = c->leader_rev };
	r = etcd_txn(c->e, cmp, n_cmp, ops, n, NULL, 0, &res, err);
	if (r < 0)
		return r;
	if (!res.succeeded)
		r = err_set(err, -ECANCELED, "%s changed under this controller (or it lost the lead): re-read", rkey);
	else if (ret_rev)
		*ret_rev = res.revision;
	etcd_txn_result_free(&res);
	c->txns += r == 0;
	return r;
}

/* ---- the policy of record ----------------------------------------------- */

/* Is the class of r's host i of wave w one of an earlier host's? */
static bool class_seen(const struct fleet_rollout *r, unsigned w, unsigned i)
{
	const char *id = r->waves[w].hosts[i].class_id;

	for (unsigned v = 0; v <= w; v++)
		for (unsigned k = 0; k < (v == w ? i : r->waves[v].n); k++)
			if (!strcmp(r->waves[v].hosts[k].class_id, id))
				return true;
	return false;
}

int fleet_ctl_records(const struct fleet_ctl *c, const struct fleet_rollout *r, uint64_t seq,
		      struct fleet_record **ret, unsigned *ret_n, struct nt_err *err)
{
	struct fleet_desired d = { .mode = FLEET_MODE_APPLY };
	struct fleet_record *rec = NULL;
	unsigned n = 0, cap = 0;
	int rc = 0;

	*ret = NULL;
	*ret_n = 0;
	if (r->state != FLEET_DONE || r->shadow)
		return 0;
	snprintf(d.rollout, sizeof(d.rollout), "%s", r->name);
	snprintf(d.policy, sizeof(d.policy), "%s", r->policy);
	snprintf(d.sha256, sizeof(d.sha256), "%s", r->sha256);
	for (unsigned w = 0; w < r->n_waves; w++)
		cap += r->waves[w].n;
	if (!(rec = calloc(cap + 1, sizeof(*rec))))
		return err_set(err, -ENOMEM, "out of memory");
	for (unsigned w = 0; rc == 0 && w < r->n_waves; w++)
		for (unsigned i = 0; rc == 0 && i < r->waves[w].n; i++) {
			if (class_seen(r, w, i))
				continue;
			fleet_record_key(rec[n].key, sizeof(rec[n].key), r->waves[w].hosts[i].class_id);
			if (!(rec[n].val = fleet_desired_json(&d, false)))
				rc = err_set(err, -ENOMEM, "out of memory");
			else
				rc = seal(c, SIGN_KIND_RECORD, "*", r->name, r->sha256, seq, &rec[n].val, err);
			n++;
		}
	if (rc < 0) {
		fleet_ctl_records_free(rec, n);
		return rc;
	}
	*ret = rec;
	*ret_n = n;
	return 0;
}

void fleet_ctl_records_free(struct fleet_record *rec, unsigned n)
{
	for (unsigned i = 0; rec && i < n; i++)
		free(rec[i].val);
	free(rec);
}

/* A step's transactions being built: ops and compares, flushed as one
 * transaction when the next page's group would not fit (FLEET_TXN_OPS
 * ops, FLEET_TXN_BYTES bytes). */
#define FLEET_TXN_OPS 128            /* etcd's default --max-txn-ops */
#define FLEET_TXN_BYTES (1u << 20)   /* under etcd's default --max-request-bytes, 1.5 MiB */
struct batch {
	struct fleet_ctl *c;
	const char *rkey;
	struct etcd_op ops[FLEET_TXN_OPS];
	struct etcd_compare cmp[FLEET_TXN_OPS];
	unsigned n_ops, n_cmp, max_ops;
	size_t bytes;
	unsigned pages[FLEET_TXN_OPS];   /* the pages it puts: their revision after it goes to l */
	unsigned n_pages;
	bool hosts;                      /* it puts hosts' keys: c->hosts_need after it */
	bool pause;                      /* NODETUNE_FLEET_PAUSE applies (a step, not a creation) */
	struct fleet_layout *l;
};

/* One transaction of what the batch holds (the compares it has); after
 * it, its pages' revisions and hosts_need. */
static int batch_txn(struct batch *b, int64_t *ret_rev, struct nt_err *err)
{
	int64_t rev = 0;
	int r = txn(b->c, b->rkey, b->cmp, b->n_cmp, b->ops, b->n_ops, &rev, err);

	for (unsigned i = 0; r == 0 && i < b->n_pages; i++)
		b->l->rev[b->pages[i]] = rev;
	if (r == 0 && b->hosts)
		b->c->hosts_need = rev;
	if (r == 0 && ret_rev)
		*ret_rev = rev;
	b->n_ops = b->n_cmp = b->n_pages = 0;
	b->bytes = 0;
	b->hosts = false;
	return r;
}

/* Commit the batch so far, when it holds anything: a transaction that
 * compares its pages (not the head); said and paused after with
 * NODETUNE_FLEET_PAUSE (a test kills the controller there). */
static int batch_flush(struct batch *b, struct nt_err *err)
{
	int r;

	if (!b->n_ops)
		return 0;
	r = batch_txn(b, NULL, err);
	if (r == 0 && b->pause && b->c->pause_s > 0) {
		say(b->c, LOG_NOTICE, "%s: paused inside a step, after this controller's transaction %u "
		    "(NODETUNE_FLEET_PAUSE)",
		    b->rkey + strlen(FLEET_ROOT "rollouts/"), b->c->txns);
		usleep((useconds_t)(b->c->pause_s * 1e6));
	}
	return r;
}

/* Make room for n ops of len bytes, flushing what the batch holds when
 * they would not fit. */
static int batch_room(struct batch *b, unsigned n, size_t len, struct nt_err *err)
{
	if (b->n_ops + n <= b->max_ops && b->bytes + len <= FLEET_TXN_BYTES)
		return 0;
	return batch_flush(b, err);
}

static void batch_put(struct batch *b, const char *key, const char *val)
{
	b->ops[b->n_ops++] = (struct etcd_op){ ETCD_OP_PUT, key, val, strlen(val), 0, false };
	b->bytes += strlen(key) + strlen(val);
}

/* What a step writes: the pages that changed (signed, page_vals[g]), the
 * hosts' keys (keys[i], vals[i] of write i, in page order: order[]), the
 * head and the classes' records. */
struct step_out {
	struct fleet_layout l;          /* the layout after the step: seqs of the pages written */
	char **page_vals;               /* [l.n_pages]: NULL when page g did not change */
	char (*page_keys)[160];
	unsigned *page_of;              /* [n_w] */
	unsigned *order;                /* [n_w]: the writes sorted by page */
	char *head;
};

static void step_out_free(struct step_out *o, unsigned n_pages)
{
	for (unsigned g = 0; o->page_vals && g < n_pages; g++)
		free(o->page_vals[g]);
	free(o->page_vals);
	free(o->page_keys);
	free(o->page_of);
	free(o->order);
	free(o->head);
	fleet_layout_release(&o->l);
}

/* Page g of next (signed with seq) when it differs from r's (or r is
 * NULL, or the page is absent). */
static int page_value(struct fleet_ctl *c, const struct fleet_rollout *r, const struct fleet_layout *lr,
		      const struct fleet_rollout *next, struct step_out *o, unsigned g, uint64_t seq, struct nt_err *err)
{
	char *now = fleet_page_json(next, &o->l, g), *was = r ? fleet_page_json(r, lr, g) : NULL, host[32];
	unsigned w = 0, p = 0;
	int rc = 0;

	if (!now || (r && !was)) {
		rc = err_set(err, -ENOMEM, "out of memory");
	} else if (!r || !lr->rev[g] || strcmp(now, was)) {
		fleet_page_locate(next, &o->l, g, &w, &p);
		snprintf(host, sizeof(host), "w%u.p%u", w, p);
		fleet_page_key(o->page_keys[g], sizeof(o->page_keys[g]), next->name, w, p);
		if ((rc = seal(c, SIGN_KIND_ROLLOUT, host, next->name, next->sha256, seq, &now, err)) == 0) {
			o->page_vals[g] = now;
			o->l.seq[g] = seq;
			now = NULL;
		}
	}
	free(now);
	free(was);
	return rc;
}

/* The pages, the writes' order by page and the head of the step to next. */
static int step_prepare(struct fleet_ctl *c, const struct fleet_rollout *r, const struct fleet_layout *lr,
			const struct fleet_rollout *next, const struct fleet_write *w, unsigned n_w, uint64_t seq,
			struct step_out *o, struct nt_err *err)
{
	unsigned *start;
	int rc;

	if (fleet_layout_init(&o->l, next, lr ? lr->page_hosts : c->page_hosts) < 0)
		return err_set(err, -ENOMEM, "out of memory");
	for (unsigned g = 0; lr && g < o->l.n_pages && g < lr->n_pages; g++) {
		o->l.seq[g] = lr->seq[g];
		o->l.rev[g] = lr->rev[g];
	}
	o->page_vals = calloc(o->l.n_pages + 1, sizeof(*o->page_vals));
	o->page_keys = calloc(o->l.n_pages + 1, sizeof(*o->page_keys));
	o->page_of = calloc(n_w + 1, sizeof(*o->page_of));
	o->order = calloc(n_w + 1, sizeof(*o->order));
	start = calloc(o->l.n_pages + 2, sizeof(*start));
	rc = o->page_vals && o->page_keys && o->page_of && o->order && start ? 0 : err_set(err, -ENOMEM, "out of memory");
	for (unsigned g = 0; rc == 0 && g < o->l.n_pages; g++)
		rc = page_value(c, r, lr, next, o, g, seq, err);
	/* a counting sort of the writes by page */
	for (unsigned i = 0; rc == 0 && i < n_w; i++)
		start[(o->page_of[i] = fleet_page_of(next, &o->l, w[i].wave, w[i].index)) + 1]++;
	for (unsigned g = 0; rc == 0 && g < o->l.n_pages; g++)
		start[g + 1] += start[g];
	for (unsigned i = 0; rc == 0 && i < n_w; i++)
		o->order[start[o->page_of[i]]++] = i;
	free(start);
	if (rc == 0 && !(o->head = fleet_rollout_head_json(next, &o->l)))
		rc = err_set(err, -ENOMEM, "out of memory");
	if (rc == 0)
		rc = seal(c, SIGN_KIND_ROLLOUT, "*", next->name, next->sha256, seq, &o->head, err);
	return rc;
}

/* Put the step's pages with their hosts' keys in as few transactions as
 * fit, each page compared at the revision read, then the head (compared,
 * create-only when rollout_rev is 0) with the records and what is left. */
static int step_put(struct batch *b, struct step_out *o, char (*keys)[128], char **vals, unsigned n_w,
		    const struct fleet_record *rec, unsigned n_rec, int64_t rollout_rev, int64_t *ret_rev,
		    struct nt_err *err)
{
	unsigned k = 0;
	int rc = 0;

	for (unsigned g = 0; rc == 0 && g < o->l.n_pages; g++) {
		unsigned n = o->page_vals[g] ? 1 : 0, k0 = k;
		size_t len = o->page_vals[g] ? strlen(o->page_vals[g]) : 0;

		for (; k < n_w && o->page_of[o->order[k]] == g; k++, n++)
			len += strlen(vals[o->order[k]]);
		if (!n || (rc = batch_room(b, n, len, err)) < 0)
			continue;
		if (o->page_vals[g]) {
			b->cmp[b->n_cmp++] = (struct etcd_compare){ .target = ETCD_CMP_MOD, .key = o->page_keys[g],
								    .number = o->l.rev[g] };
			b->pages[b->n_pages++] = g;
			batch_put(b, o->page_keys[g], o->page_vals[g]);
		}
		b->hosts |= k > k0;
		for (unsigned i = k0; i < k; i++)
			batch_put(b, keys[o->order[i]], vals[o->order[i]]);
	}
	b->max_ops = FLEET_TXN_OPS - 2;         /* the compares: the pages', the head's and the leader's */
	if (rc == 0)
		rc = batch_room(b, 1 + n_rec, strlen(o->head), err);
	if (rc < 0)
		return rc;
	b->cmp[b->n_cmp++] = (struct etcd_compare){ .target = ETCD_CMP_MOD, .key = b->rkey, .number = rollout_rev };
	batch_put(b, b->rkey, o->head);
	for (unsigned i = 0; i < n_rec; i++)
		batch_put(b, rec[i].key, rec[i].val);
	return batch_txn(b, ret_rev, err);
}

/* The value of each write, signed with seq: keys[i], vals[i]. */
static int writes_values(struct fleet_ctl *c, struct fleet_rollout *next, struct fleet_write *w, unsigned n_w,
			 uint64_t seq, char (*keys)[128], char **vals, struct nt_err *err)
{
	int r = 0;

	for (unsigned i = 0; r == 0 && i < n_w; i++) {
		struct fleet_rhost *h = &next->waves[w[i].wave].hosts[w[i].index];

		fleet_doc_host_key(keys[i], sizeof(keys[i]), h->host, w[i].kind == FLEET_W_PUT_SHADOW ? "shadow" : "desired");
		if (!(vals[i] = fleet_ctl_write_value(next, &w[i])))
			r = err_set(err, -ENOMEM, "out of memory");
		else if (c->signer)
			r = fleet_ctl_sign_write(c, &w[i], h, seq, keys[i], &vals[i], err);
	}
	return r;
}

/* Commit next, the step from r (laid out as lr; NULL both: next is
 * created) at rollout_rev, with its writes: the pages that changed, each
 * with its hosts' keys, in transactions that compare each page at the
 * revision read, then the head with the classes' records when it ends
 * done (fleet_ctl_records).  A controller killed between two of them left
 * pages ahead of the head: the step is taken again from what the hosts
 * show (pass() sends no host what it has already).  *ret_rev: the head's
 * new mod_revision. */
static int commit(struct fleet_ctl *c, const struct fleet_rollout *r, const struct fleet_layout *lr,
		  struct fleet_rollout *next, int64_t rollout_rev, struct fleet_write *w, unsigned n_w, int64_t *ret_rev,
		  struct fleet_layout *ret_l, struct nt_err *err)
{
	char **vals = calloc(n_w + 1, sizeof(char *)), (*keys)[128] = calloc(n_w + 1, sizeof(*keys)), rkey[128];
	struct batch *b = calloc(1, sizeof(*b));
	struct step_out o = { 0 };
	struct fleet_record *rec = NULL;
	unsigned n_rec = 0, np;
	uint64_t seq = 0;
	int rc = vals && keys && b ? 0 : err_set(err, -ENOMEM, "out of memory");

	fleet_rollout_key(rkey, sizeof(rkey), next->name, false);
	if (rc == 0 && c->signer)
		rc = seq_next(c, &seq, err);
	if (rc == 0)
		rc = fleet_ctl_records(c, next, seq, &rec, &n_rec, err);
	if (rc == 0 && n_rec + 1 > FLEET_TXN_OPS - 2)
		rc = err_set(err, -E2BIG, "%s: %u classes' records do not fit one transaction", rkey, n_rec);
	if (rc == 0 && c->signer)
		rc = fleet_ctl_keep_unverified(c, next, w, &n_w, err);
	if (rc == 0)
		rc = writes_values(c, next, w, n_w, seq, keys, vals, err);
	if (rc == 0)
		rc = step_prepare(c, r, lr, next, w, n_w, seq, &o, err);
	if (rc == 0) {
		*b = (struct batch){ .c = c, .rkey = rkey, .max_ops = o.l.page_hosts + 1, .l = &o.l, .pause = r != NULL };
		rc = step_put(b, &o, keys, vals, n_w, rec, n_rec, rollout_rev, ret_rev, err);
	}
	np = o.l.n_pages;
	if (rc == 0 && ret_l) {
		*ret_l = o.l;                      /* moved */
		memset(&o.l, 0, sizeof(o.l));
	}
	for (unsigned i = 0; vals && i < n_w; i++)
		free(vals[i]);
	step_out_free(&o, np);
	free(vals);
	free(keys);
	free(b);
	fleet_ctl_records_free(rec, n_rec);
	return rc;
}

/* ---- the run loop ------------------------------------------------------ */

/* The head as the controller reads it: verified with check (a refusal
 * stops the controller, which writes nothing); *l its layout. */
static int head_parse(struct fleet_ctl *c, const char *name, bool check, const struct etcd_kv *kv,
		      struct fleet_rollout *ret, struct fleet_layout *l, struct nt_err *err)
{
	struct sign_envelope e = { 0 };
	struct nt_err why = { 0 };
	enum sign_reject reason;
	const char *doc;
	size_t len;
	int r = 0;

	if (!check) {
		unwrap(kv, &e, &doc, &len);
	} else if ((r = verify(c, SIGN_KIND_ROLLOUT, "*", kv->value, kv->value_len, &e, &reason, &why)) < 0) {
		return err_set(err, r, "%s: %s: this controller acts only on a rollout document it can verify; nothing "
				       "written", kv->key, why.msg);
	} else {
		doc = e.doc;
		len = e.doc_len;
		if (strcmp(e.h.rollout, name) || strcmp(e.h.host, "*"))
			r = err_set(err, -EPERM, "%s: signed for rollout %s (%s): nothing written", kv->key, e.h.rollout,
				    e.h.host);
	}
	if (r == 0)
		r = fleet_doc_parse_rollout_head(kv->key, doc, len, ret, l, err);
	if (r == 0 && check && (strcmp(ret->name, name) || strcmp(ret->sha256, e.h.policy_sha256))) {
		r = err_set(err, -EPERM, "%s: names rollout %s, sha256 %.12s, but was signed for %s, sha256 %.12s: nothing "
				    "written", kv->key, ret->name, ret->sha256, name, e.h.policy_sha256);
		fleet_rollout_release(ret);
		fleet_layout_release(l);
	}
	sign_envelope_release(&e);
	return r;
}

int fleet_ctl_rollout_parse(struct fleet_ctl *c, const char *name, bool check, const struct etcd_kv *kv,
			    struct fleet_rollout *ret, struct nt_err *err)
{
	struct fleet_layout l;
	int r = head_parse(c, name, check, kv, ret, &l, err);

	if (r == 0)
		fleet_layout_release(&l);
	return r;
}

/* Page g of r from kv: verified with check (signed by a trusted key as
 * kind rollout for host "wW.pP" of r, with r's sha256, at a seq no older
 * than the one r's head names: an older page put back is a replay). */
static int page_take(struct fleet_ctl *c, bool check, const struct etcd_kv *kv, struct fleet_rollout *r,
		     struct fleet_layout *l, unsigned g, struct nt_err *err)
{
	struct sign_envelope e = { 0 };
	struct nt_err why = { 0 };
	enum sign_reject reason;
	const char *doc = NULL;
	unsigned w = 0, p = 0;
	char host[32];
	size_t len = 0;
	int rc = 0;

	fleet_page_locate(r, l, g, &w, &p);
	snprintf(host, sizeof(host), "w%u.p%u", w, p);
	if (!check)
		unwrap(kv, &e, &doc, &len);
	else if ((rc = verify(c, SIGN_KIND_ROLLOUT, host, kv->value, kv->value_len, &e, &reason, &why)) < 0)
		rc = err_set(err, rc, "%s: %s: this controller acts only on a rollout page it can verify; nothing written",
			     kv->key, why.msg);
	else if (strcmp(e.h.host, host) || strcmp(e.h.rollout, r->name) || strcmp(e.h.policy_sha256, r->sha256))
		rc = err_set(err, -EPERM, "%s: signed for %s of rollout %s, sha256 %.12s: nothing written", kv->key,
			     e.h.host, e.h.rollout, e.h.policy_sha256);
	else if (e.h.seq < l->seq[g])
		rc = err_set(err, -EPERM, "%s: signed with seq %llu, older than the %llu its rollout document names (a "
				     "replay): nothing written", kv->key, (unsigned long long)e.h.seq,
			     (unsigned long long)l->seq[g]);
	if (rc == 0 && check) {
		doc = e.doc;
		len = e.doc_len;
	}
	if (rc == 0)
		rc = fleet_doc_parse_page(kv->key, doc, len, r, l, g, err);
	l->rev[g] = kv->mod_revision;
	sign_envelope_release(&e);
	return rc;
}

static int kv_cmp(const void *key, const void *kv)
{
	return strcmp(key, ((const struct etcd_kv *)kv)->key);
}

/* The pages of wave only (UINT_MAX: every page) of r from rg (etcd's
 * keys are sorted); a page missing stops the controller (-EPERM). */
static int pages_take(struct fleet_ctl *c, bool check, const struct etcd_range *rg, struct fleet_rollout *r,
		      struct fleet_layout *l, unsigned wave, struct nt_err *err)
{
	int rc = 0;

	for (unsigned g = 0; rc == 0 && g < l->n_pages; g++) {
		unsigned w = 0, p = 0;
		char key[160];
		const struct etcd_kv *kv;

		fleet_page_locate(r, l, g, &w, &p);
		if (wave != UINT_MAX && w != wave)
			continue;
		kv = bsearch(fleet_page_key(key, sizeof(key), r->name, w, p), rg->kvs, rg->n_kvs, sizeof(*rg->kvs), kv_cmp);
		rc = kv ? page_take(c, check, kv, r, l, g, err)
			: err_set(err, -EPERM, "%s: missing (its rollout document names %u page(s)): nothing written", key,
				  l->n_pages);
	}
	return rc;
}

/* The pages of r wave by wave (one range answer each: under the client's
 * ETCD_RESPONSE_MAX up to about 60,000 hosts in one wave). */
static int pages_read(struct fleet_ctl *c, bool check, struct fleet_rollout *r, struct fleet_layout *l,
		      struct nt_err *err)
{
	int rc = 0;

	for (unsigned w = 0; rc == 0 && w < r->n_waves; w++) {
		struct etcd_range rg = { 0 };
		char prefix[160];

		snprintf(prefix, sizeof(prefix), FLEET_ROOT "rollouts/%s/pages/%u.", r->name, w);
		if ((rc = etcd_get(c->e, prefix, true, &rg, err)) == 0)
			rc = pages_take(c, check, &rg, r, l, w, err);
		etcd_range_free(&rg);
	}
	return rc;
}

/* The rollout (its head and pages), the head's mod_revision and the
 * pages', and whether an abort was asked for; with a signer, verified. */
static int read_rollout(struct fleet_ctl *c, const char *name, struct fleet_rollout *ret, int64_t *ret_rev,
			struct fleet_layout *ret_l, bool *ret_abort, struct nt_err *err)
{
	struct fleet_layout l = { 0 };
	struct etcd_range rg = { 0 }, ra = { 0 };
	char key[128], akey[160];
	int r = etcd_get(c->e, fleet_rollout_key(key, sizeof(key), name, false), false, &rg, err);

	snprintf(akey, sizeof(akey), "%s/abort", key);
	if (r == 0 && ret_abort)
		r = etcd_get(c->e, akey, false, &ra, err);
	if (r < 0) {
		etcd_range_free(&rg);
		return r;
	}
	if (!rg.n_kvs)
		r = err_set(err, -ENOENT, "no rollout named %s (fleet status lists them)", name);
	else if ((r = head_parse(c, name, c->signer != NULL, &rg.kvs[0], ret, &l, err)) == 0 &&
		 (r = pages_read(c, c->signer != NULL, ret, &l, err)) < 0)
		fleet_rollout_release(ret);
	if (r == 0) {
		*ret_rev = rg.kvs[0].mod_revision;
		if (ret_abort && ra.n_kvs)
			*ret_abort = true;
	}
	if (r == 0 && ret_l)
		*ret_l = l;
	else
		fleet_layout_release(&l);
	etcd_range_free(&rg);
	etcd_range_free(&ra);
	return r;
}

static int obs_cmp(const void *key, const void *row)
{
	return strcmp(key, ((const struct fleet_host_row *)row)->host);
}

struct fleet_observed **fleet_ctl_observe(const struct fleet_rollout *r, const struct fleet_host_row *rows, unsigned n)
{
	struct fleet_observed **obs = calloc(r->n_waves + 1, sizeof(*obs));

	for (unsigned w = 0; obs && w < r->n_waves; w++) {
		obs[w] = calloc(r->waves[w].n + 1, sizeof(**obs));
		for (unsigned i = 0; obs[w] && i < r->waves[w].n; i++) {
			const struct fleet_host_row *row = bsearch(r->waves[w].hosts[i].host, rows, n, sizeof(*rows), obs_cmp);
			struct fleet_observed *o = &obs[w][i];

			if (!row)
				continue;
			o->alive = row->alive;
			o->has_desired = row->has_desired;
			o->desired = row->desired;
			o->desired_rev = row->desired_rev;
			o->has_status = row->has_status;
			o->status = row->status;
			o->has_shadow = row->shadow_rev > 0;
			o->shadow_rev = row->shadow_rev;
		}
		if (!obs[w]) {
			for (unsigned k = 0; k < w; k++)
				free(obs[k]);
			free(obs);
			return NULL;
		}
	}
	return obs;
}

void fleet_ctl_observe_free(struct fleet_observed **obs, unsigned n)
{
	for (unsigned w = 0; obs && w < n; w++)
		free(obs[w]);
	free(obs);
}

unsigned fleet_ctl_new_events(const struct fleet_rollout *r, const struct fleet_rollout *next)
{
	const struct fleet_event *last = r->n_events ? &r->events[r->n_events - 1] : NULL;

	for (unsigned i = next->n_events; last && i-- > 0;)
		if (next->events[i].t == last->t && !strcmp(next->events[i].what, last->what))
			return i + 1;
	return 0;
}

/* Say the events next has that r had not. */
static void say_events(const struct fleet_ctl *c, const struct fleet_rollout *r, const struct fleet_rollout *next)
{
	for (unsigned i = fleet_ctl_new_events(r, next); i < next->n_events; i++)
		say(c, LOG_NOTICE, "%s: %s", next->name, next->events[i].what);
}

/* ---- the leader's view: the hosts followed by a watch, its own rollout -- */

/* Read every host's keys into c->rows, to be followed from the newest
 * key's mod_revision (the answer's own revision, when header, or when
 * there is no key): a store that lies about its revision (its header)
 * cannot make the watch start past every change.  A read is after the
 * controller's own writes: hosts_need is met. */
static int rows_read(struct fleet_ctl *c, bool header, struct nt_err *err)
{
	struct fleet_host_row *rows = NULL;
	unsigned n = 0;
	int64_t rev = 0, newest = 0;
	int r = read_hosts(c, &rows, &n, &rev, &newest, err);

	if (r < 0)
		return r;
	free(c->rows);
	c->rows = rows;
	c->n_rows = c->cap_rows = n;
	c->hosts_rev = header || !newest ? rev : newest;
	c->hosts_need = 0;
	return 0;
}

/* Wait up to ms for the hosts' keys to change after c->hosts_rev, and
 * apply what changed to c->rows.  A compacted revision: read again. */
static int rows_follow(struct fleet_ctl *c, long ms, struct nt_err *err)
{
	struct etcd_events ev = { 0 };
	int r = etcd_watch(c->e, FLEET_ROOT "hosts/", true, c->hosts_rev + 1, ms, &ev, err);

	if (r == -ESTALE)
		return rows_read(c, true, err);
	if (r < 0)
		return r;
	r = fleet_ctl_rows_apply(&c->rows, &c->n_rows, &c->cap_rows, ev.events, ev.n_events);
	for (size_t i = 0; i < ev.n_events; i++)
		if (ev.events[i].kv.mod_revision > c->hosts_rev)
			c->hosts_rev = ev.events[i].kv.mod_revision;
	etcd_events_free(&ev);
	return r < 0 ? err_set(err, r, "out of memory") : 0;
}

/* The rows, up to date with this controller's own last writes: read once,
 * then followed (a watch from where they are, until they reach
 * hosts_need; 2 s at most, then read again). */
static int rows_sync(struct fleet_ctl *c, struct nt_err *err)
{
	double until = nt_mono_s() + 2;
	int r = 0;

	if (!c->hosts_rev)
		return rows_read(c, false, err);
	while (r == 0 && c->hosts_rev < c->hosts_need && nt_mono_s() < until)
		r = rows_follow(c, 500, err);
	return r == 0 && c->hosts_rev < c->hosts_need ? rows_read(c, false, err) : r;
}

/* NODETUNE_FLEET_PAUSE: say the step just committed (what a test kills
 * the controller after: its new events, or the hosts' states only), then
 * pause. */
static void pause_after(struct fleet_ctl *c, const struct fleet_rollout *r, const struct fleet_rollout *next,
			unsigned n_w)
{
	char what[1024] = "host states only";
	size_t len = 0;

	for (unsigned i = fleet_ctl_new_events(r, next); i < next->n_events && len < sizeof(what) - 1; i++)
		len += (size_t)snprintf(what + len, sizeof(what) - len, "%s%s", len ? "; " : "", next->events[i].what);
	say(c, LOG_NOTICE, "%s: paused after a step (%u write(s); this controller's transaction %u): %s "
	    "(NODETUNE_FLEET_PAUSE)", next->name, n_w, c->txns, what);
	usleep((useconds_t)(c->pause_s * 1e6));
}

unsigned fleet_ctl_unsent(const struct fleet_rollout *r, struct fleet_observed *const *obs, struct fleet_write *w,
			  unsigned n_w)
{
	unsigned k = 0;

	for (unsigned i = 0; i < n_w; i++) {
		const struct fleet_observed *o = &obs[w[i].wave][w[i].index];
		bool has = w[i].kind == FLEET_W_PUT_DESIRED && o->has_desired && o->desired.mode == w[i].mode &&
			   !strcmp(o->desired.rollout, r->name) && !strcmp(o->desired.sha256, r->sha256) &&
			   !strcmp(o->desired.gate, w[i].mode == FLEET_MODE_GATE ? r->gate : "");

		if (!has)
			w[k++] = w[i];
	}
	return k;
}

/* A copy of the rollout this leader committed last, when the head is
 * still at the revision it committed (the pages are compared when they
 * are written again): 1 with *ret, *ret_l; 0 when it is not. */
static int cache_take(struct fleet_ctl *c, int64_t head_rev, struct fleet_rollout *ret, struct fleet_layout *ret_l,
		      struct nt_err *err)
{
	if (!c->cache_rev || head_rev != c->cache_rev)
		return 0;
	if (fleet_rollout_copy(&c->cache, ret) < 0 || fleet_layout_init(ret_l, ret, c->cache_l.page_hosts) < 0) {
		fleet_rollout_release(ret);
		return err_set(err, -ENOMEM, "out of memory");
	}
	memcpy(ret_l->seq, c->cache_l.seq, c->cache_l.n_pages * sizeof(*ret_l->seq));
	memcpy(ret_l->rev, c->cache_l.rev, c->cache_l.n_pages * sizeof(*ret_l->rev));
	return 1;
}

/* The rollout for a pass: the head's revision and the abort key (two
 * small reads), the rollout itself from the cache when the head is the
 * one this leader committed, else read whole (read_rollout). */
static int read_current(struct fleet_ctl *c, const char *name, struct fleet_rollout *ret, int64_t *ret_rev,
			struct fleet_layout *ret_l, bool *ret_abort, struct nt_err *err)
{
	struct etcd_range rg = { 0 };
	char key[128], akey[160];
	int64_t head_rev = 0;
	int r;

	if (!c->cache_rev)
		return read_rollout(c, name, ret, ret_rev, ret_l, ret_abort, err);
	fleet_rollout_key(key, sizeof(key), name, false);
	snprintf(akey, sizeof(akey), "%s/abort", key);
	if ((r = etcd_get(c->e, akey, false, &rg, err)) < 0)
		return r;
	*ret_abort |= rg.n_kvs > 0;
	etcd_range_free(&rg);
	if ((r = etcd_get(c->e, key, false, &rg, err)) < 0)
		return r;
	head_rev = rg.n_kvs ? rg.kvs[0].mod_revision : 0;
	etcd_range_free(&rg);
	if ((r = cache_take(c, head_rev, ret, ret_l, err)) != 0) {
		*ret_rev = head_rev;
		return r < 0 ? r : 0;
	}
	return read_rollout(c, name, ret, ret_rev, ret_l, ret_abort, err);
}

/* Forget the cached rollout: the next pass reads it whole. */
static void cache_forget(struct fleet_ctl *c)
{
	fleet_rollout_release(&c->cache);
	fleet_layout_release(&c->cache_l);
	c->cache_rev = 0;
}

/* After a commit: keep next (moved) and its layout as the cache at
 * head_rev; rc < 0: forget it (the next pass reads the rollout whole). */
static void cache_keep(struct fleet_ctl *c, int rc, struct fleet_rollout *next, struct fleet_layout *l, int64_t head_rev)
{
	cache_forget(c);
	if (rc < 0)
		return;
	c->cache = *next;
	c->cache_l = *l;
	c->cache_rev = head_rev;
	memset(next, 0, sizeof(*next));
	memset(l, 0, sizeof(*l));
}

/* Commit the step to next (its writes w[0..n_w) less those the hosts
 * have: fleet_ctl_unsent), say it, keep it.  0, 1 when next is final, or
 * an error (-ECANCELED: re-read, 0). */
static int pass_commit(struct fleet_ctl *c, const struct fleet_rollout *r, const struct fleet_layout *l,
		       struct fleet_observed **obs, int64_t rev, struct fleet_rollout *next, struct fleet_write *w,
		       unsigned n_w, enum fleet_state *ret_final, struct nt_err *err)
{
	struct fleet_layout nl = { 0 };
	int64_t new_rev = 0;
	int rc;

	n_w = fleet_ctl_unsent(r, obs, w, n_w);
	rc = commit(c, r, l, next, rev, w, n_w, &new_rev, &nl, err);
	if (rc == 0)
		say_events(c, r, next);
	if (rc == 0 && c->pause_s > 0)
		pause_after(c, r, next, n_w);
	if (rc == 0 && fleet_state_final(next->state)) {
		*ret_final = next->state;
		rc = 1;
	}
	cache_keep(c, rc, next, &nl, new_rev);
	fleet_layout_release(&nl);
	return rc == -ECANCELED ? 0 : rc;
}

/* One pass: read (the hosts followed, the rollout cached), step, commit.
 * 1 when the rollout is final (*ret_final), 0 to go on, or an error. */
static int pass(struct fleet_ctl *c, const char *name, bool *abort, enum fleet_state *ret_final, struct nt_err *err)
{
	struct fleet_rollout r = { 0 }, next = { 0 };
	struct fleet_observed **obs = NULL;
	struct fleet_write *w = NULL;
	struct fleet_layout l = { 0 };
	unsigned n_w = 0;
	int64_t rev = 0;
	int rc = read_current(c, name, &r, &rev, &l, abort, err);

	if (rc == 0 && fleet_state_final(r.state)) {
		*ret_final = r.state;
		fleet_rollout_release(&r);
		fleet_layout_release(&l);
		return 1;
	}
	if (rc == 0)
		rc = rows_sync(c, err);
	if (rc == 0 && !(obs = fleet_ctl_observe(&r, c->rows, c->n_rows)))
		rc = err_set(err, -ENOMEM, "out of memory");
	if (rc == 0)
		rc = fleet_step(&r, obs, nt_wall_s(), *abort, &next, &w, &n_w);
	if (rc == 1) {
		rc = pass_commit(c, &r, &l, obs, rev, &next, w, n_w, ret_final, err);
		fleet_rollout_release(&next);
		free(w);
	} else if (rc == 0) {
		/* nothing to do yet: wait for a host to change (or a second) */
		rc = rows_follow(c, 1000, err);
	}
	if (rc < 0)
		cache_forget(c);
	fleet_ctl_observe_free(obs, r.n_waves);
	fleet_rollout_release(&r);
	fleet_layout_release(&l);
	return rc;
}

enum fleet_ctl_next fleet_ctl_after(int rc)
{
	if (rc == 1)
		return FLEET_CTL_FINAL;
	/* the lead is lost; the store refuses us; a signed document (the
	 * counter, a rollout document) this controller cannot verify:
	 * retrying cannot help */
	if (rc == -ENOLCK || rc == -EACCES || rc == -EPERM)
		return FLEET_CTL_STOP;
	return rc < 0 ? FLEET_CTL_RETRY : FLEET_CTL_AGAIN;
}

/* With a signer: the policy r names is one stored for it, policies/SHA
 * an authentic policy document signed for r's sha256.  0, -EPERM (said:
 * a rollout document naming a sha256 not stored for it), a store error. */
static int policy_check(struct fleet_ctl *c, const struct fleet_rollout *r, struct nt_err *err)
{
	struct sign_envelope e = { 0 };
	struct etcd_range rg = { 0 };
	struct nt_err why = { 0 };
	enum sign_reject reason;
	char key[128];
	int rc = c->signer ? etcd_get(c->e, fleet_doc_policy_key(key, sizeof(key), r->sha256), false, &rg, err) : 0;

	if (rc < 0 || !c->signer)
		return rc;
	if (rg.n_kvs == 0)
		rc = err_set(err, -EPERM, "rollout %s names sha256 %.12s, which is not in the store (%s): nothing written",
			     r->name, r->sha256, key);
	else if ((rc = verify(c, SIGN_KIND_POLICY, "*", rg.kvs[0].value, rg.kvs[0].value_len, &e, &reason, &why)) < 0)
		rc = err_set(err, rc, "rollout %s names sha256 %.12s: %s: %s: nothing written", r->name, r->sha256, key,
			     why.msg);
	else if (strcmp(e.h.policy_sha256, r->sha256))
		rc = err_set(err, -EPERM, "%s: signed for sha256 %.12s, not the rollout's: nothing written", key,
			     e.h.policy_sha256);
	sign_envelope_release(&e);
	etcd_range_free(&rg);
	return rc;
}

/* read_rollout (no abort key), then policy_check. */
static int read_checked(struct fleet_ctl *c, const char *name, struct fleet_rollout *ret, struct nt_err *err)
{
	int64_t rev;
	int rc = read_rollout(c, name, ret, &rev, NULL, NULL, err);

	if (rc == 0 && (rc = policy_check(c, ret, err)) < 0)
		fleet_rollout_release(ret);
	return rc;
}

int fleet_ctl_run(struct fleet_ctl *c, const char *name, bool abort, bool wait_leader, enum fleet_state *ret_final,
		  struct nt_err *err)
{
	struct fleet_rollout r = { 0 };
	int rc = read_checked(c, name, &r, err);

	if (rc < 0)
		return rc;
	if (fleet_state_final(r.state)) {
		*ret_final = r.state;
		fleet_rollout_release(&r);
		return 0;
	}
	fleet_rollout_release(&r);
	if ((rc = leader_acquire(c, name, wait_leader, err)) < 0)
		return rc;
	say(c, LOG_INFO, "%s: leading it (lease %llx)", name, (unsigned long long)c->lease);
	for (bool go = true; go;) {
		if ((rc = leader_keepalive(c, err)) == 0)
			rc = pass(c, name, &abort, ret_final, err);
		switch (fleet_ctl_after(rc)) {
		case FLEET_CTL_FINAL:
			rc = 0;
			go = false;
			break;
		case FLEET_CTL_STOP:
			go = false;
			break;
		case FLEET_CTL_RETRY:
			say(c, LOG_WARNING, "%s: %s (retrying)", name, err->msg);
			usleep(500000);
			break;
		case FLEET_CTL_AGAIN:
			break;
		}
	}
	keeper_stop(c);
	etcd_lease_revoke(c->e, c->lease, NULL);
	c->lease = 0;
	return rc;
}

/* ---- after done: the skipped hosts converge ------------------------------ */

unsigned fleet_ctl_behind(const struct fleet_rollout *r, const struct fleet_host_row *rows, unsigned n, char *buf,
			  size_t size, unsigned *ret_skipped)
{
	unsigned behind = 0, skipped = 0;
	size_t len = 0;

	if (size)
		*buf = '\0';
	for (unsigned w = 0; w < r->n_waves; w++)
		for (unsigned i = 0; i < r->waves[w].n; i++) {
			const struct fleet_rhost *h = &r->waves[w].hosts[i];
			const struct fleet_host_row *row = bsearch(h->host, rows, n, sizeof(*rows), obs_cmp);
			bool conv = row && row->alive && row->has_status && row->status.state == FLEET_H_VERIFIED &&
				    !strcmp(row->status.sha256, r->sha256);

			if (h->state != FLEET_R_LOST)
				continue;
			skipped++;
			behind += row && !conv;
			if (len < size)
				len += (size_t)snprintf(buf + len, size - len, "%s%s (%s)", len ? ", " : "", h->host,
							!row ? "left" : conv ? "converged" : row->alive ? "behind" : "down");
		}
	*ret_skipped = skipped;
	return behind;
}

int fleet_ctl_converge(struct fleet_ctl *c, const struct fleet_rollout *r, double timeout_s, char *buf, size_t size,
		       unsigned *ret_behind, struct nt_err *err)
{
	double until = nt_mono_s() + timeout_s;
	unsigned skipped = 0;
	int rc = 0;

	*ret_behind = 0;
	for (bool go = r->state == FLEET_DONE && !r->shadow; go;) {
		struct fleet_host_row *rows = NULL;
		struct etcd_events ev = { 0 };
		unsigned n = 0;
		int64_t hrev = 0;

		if ((rc = read_hosts(c, &rows, &n, &hrev, NULL, err)) < 0)
			break;
		*ret_behind = fleet_ctl_behind(r, rows, n, buf, size, &skipped);
		free(rows);
		go = *ret_behind && nt_mono_s() < until;
		if (go && etcd_watch(c->e, FLEET_ROOT "hosts/", true, hrev + 1, 1000, &ev, NULL) == 0)
			etcd_events_free(&ev);
	}
	return rc;
}

/* ---- abort, get, list -------------------------------------------------- */

int fleet_ctl_abort(struct fleet_ctl *c, const char *name, enum fleet_state *ret_final, struct nt_err *err)
{
	struct fleet_rollout r = { 0 };
	char key[160];
	int64_t rev;
	int rc = read_checked(c, name, &r, err);

	if (rc < 0)
		return rc;
	fleet_rollout_release(&r);
	snprintf(key, sizeof(key), FLEET_ROOT "rollouts/%s/abort", name);
	if ((rc = etcd_put(c->e, key, "{}", 2, 0, NULL, err)) < 0)
		return rc;
	for (;;) {
		rc = fleet_ctl_run(c, name, true, false, ret_final, err);
		if (rc != -EBUSY)
			return rc;
		/* a leader runs: it sees the abort; follow it until it ends */
		if ((rc = read_rollout(c, name, &r, &rev, NULL, NULL, err)) < 0)
			return rc;
		if (fleet_state_final(r.state)) {
			*ret_final = r.state;
			fleet_rollout_release(&r);
			return 0;
		}
		fleet_rollout_release(&r);
		usleep(500000);
	}
}

int fleet_ctl_get(struct fleet_ctl *c, const char *name, struct fleet_rollout *ret, struct nt_err *err)
{
	int64_t rev;

	return read_rollout(c, name, ret, &rev, NULL, NULL, err);
}

int fleet_ctl_list(struct fleet_ctl *c, struct fleet_rollout **ret, unsigned *ret_n, struct nt_err *err)
{
	struct etcd_range rg = { 0 };
	struct fleet_rollout *all;
	unsigned n = 0;
	int r = etcd_get(c->e, FLEET_ROOT "rollouts/", true, &rg, err);

	if (r < 0)
		return r;
	all = calloc(rg.n_kvs + 1, sizeof(*all));
	if (!all)
		r = err_set(err, -ENOMEM, "out of memory");
	for (size_t i = 0; r == 0 && i < rg.n_kvs; i++) {
		const char *rest = rg.kvs[i].key + strlen(FLEET_ROOT "rollouts/");

		struct fleet_layout l;

		if (strchr(rest, '/'))
			continue;
		if ((r = head_parse(c, rest, false, &rg.kvs[i], &all[n], &l, err)) == 0) {
			if ((r = pages_take(c, false, &rg, &all[n], &l, UINT_MAX, err)) < 0)
				fleet_rollout_release(&all[n]);
			fleet_layout_release(&l);
		}
		n += r == 0;
	}
	etcd_range_free(&rg);
	if (r < 0) {
		for (unsigned i = 0; i < n; i++)
			fleet_rollout_release(&all[i]);
		free(all);
		return r;
	}
	*ret = all;
	*ret_n = n;
	return 0;
}
