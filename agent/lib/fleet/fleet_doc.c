/* SPDX-License-Identifier: MIT */
/* fleet_doc.c — see fleet_doc.h.
 *
 * Divisions: names and keys; hardware classes; reading JSON strictly; the
 * host documents; waves; the rollout document.  Pure: no clock, no network.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


#include <jansson.h>

#include "base/base64.h"
#include "fleet/fleet_doc.h"
#include "base/textbuf.h"

const char *const fleet_hstate_names[FLEET_H__COUNT] = { "verified", "drift", "failed", "invalid", "gated" };
const char *const fleet_state_names[FLEET_S__COUNT] = { "running", "rolling-back", "done", "rolled-back",
							"aborted", "failed" };
const char *const fleet_wstate_names[FLEET_W__COUNT] = { "pending", "gating", "applying", "passed", "failed",
							 "rolled-back" };
const char *const fleet_rstate_names[FLEET_R__COUNT] = { "pending", "sent", "gate-passed", "gate-failed",
							 "verified", "failed", "lost", "restoring", "restored",
							 "shadowed", "kept" };
static const char *const mode_names[] = { "apply", "gate", "local" };

/* ---- names and keys ---------------------------------------------------- */

bool fleet_name_valid(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n >= FLEET_NAME_MAX || s[0] == '.' || s[0] == '-')
		return false;
	return strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") == n;
}

char *fleet_doc_host_key(char *buf, size_t size, const char *host, const char *what)
{
	snprintf(buf, size, FLEET_ROOT "hosts/%s%s%s", host, *what ? "/" : "", what);
	return buf;
}

char *fleet_rollout_key(char *buf, size_t size, const char *name, bool leader)
{
	snprintf(buf, size, FLEET_ROOT "rollouts/%s%s", name, leader ? "/leader" : "");
	return buf;
}

char *fleet_record_key(char *buf, size_t size, const char *class_id)
{
	snprintf(buf, size, FLEET_ROOT "classes/%s/record", class_id);
	return buf;
}

char *fleet_doc_policy_key(char *buf, size_t size, const char *sha256)
{
	snprintf(buf, size, FLEET_ROOT "policies/%s", sha256);
	return buf;
}

enum fleet_key_kind fleet_key_parse(const char *key, char ret_host[FLEET_NAME_MAX])
{
	static const char prefix[] = FLEET_ROOT "hosts/";
	static const struct { const char *suffix; enum fleet_key_kind kind; } kinds[] = {
		{ "", FLEET_KEY_HOST }, { "/desired", FLEET_KEY_DESIRED }, { "/shadow", FLEET_KEY_SHADOW },
		{ "/status", FLEET_KEY_STATUS },
	};
	const char *name, *slash;
	size_t n;

	if (strncmp(key, prefix, sizeof(prefix) - 1))
		return FLEET_KEY_OTHER;
	name = key + sizeof(prefix) - 1;
	slash = strchr(name, '/');
	n = slash ? (size_t)(slash - name) : strlen(name);
	if (n == 0 || n >= FLEET_NAME_MAX)
		return FLEET_KEY_OTHER;
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		if (strcmp(name + n, kinds[i].suffix))
			continue;
		memcpy(ret_host, name, n);
		ret_host[n] = '\0';
		return fleet_name_valid(ret_host) ? kinds[i].kind : FLEET_KEY_OTHER;
	}
	return FLEET_KEY_OTHER;
}

/* ---- hardware classes -------------------------------------------------- */

/* A GPU model to read: the bracketed name when there is one ("GH100 [H100
 * SXM5 80GB]" -> "H100"), else the first word with a digit ("Tesla T4" ->
 * "T4"), cut at '-' ("V100-SXM3-32GB-H" -> "V100"). */
static void gpu_model(const char *name, char *out, size_t size)
{
	const char *br = strchr(name, '['), *p = br ? br + 1 : name;

	snprintf(out, size, "gpu");
	while (*p) {
		size_t n;

		p += strspn(p, " []");
		n = strcspn(p, " []");
		if (n && strpbrk(p, "0123456789") && (size_t)(strpbrk(p, "0123456789") - p) < n) {
			size_t cut = strcspn(p, " []-");

			snprintf(out, size, "%.*s", (int)(cut < n ? cut : n), p);
			return;
		}
		p += n;
	}
}

int fleet_class_of(const struct topo *t, struct fleet_class *ret)
{
	struct fleet_class c = { 0 };
	char model[32] = "", hex[SHA256_DIGEST_STRING_LENGTH];
	size_t n = 0;
	unsigned cores = 0;

	if (!t->n_numa)
		return -EINVAL;
	n += (size_t)snprintf(c.shape + n, sizeof(c.shape) - n, "p=%u;n=", t->packages);
	for (unsigned i = 0; i < t->n_numa && n < sizeof(c.shape); i++) {
		int k = hwloc_get_nbobjs_inside_cpuset_by_type(t->hw, t->numa[i].cpus, HWLOC_OBJ_CORE);

		cores += k > 0 ? (unsigned)k : 0;
		n += (size_t)snprintf(c.shape + n, sizeof(c.shape) - n, "%s%d", i ? "," : "", k);
	}
	for (unsigned i = 0; i < t->n_gpus && n < sizeof(c.shape); i++) {
		int node = -1;

		for (unsigned k = 0; k < t->n_numa; k++)
			if ((int)t->numa[k].os_index == t->gpus[i].numa_node)
				node = (int)k;
		n += (size_t)snprintf(c.shape + n, sizeof(c.shape) - n, "%s%04x:%04x@%d", i ? "," : ";g=",
				      t->gpus[i].vendor_id, t->gpus[i].device_id, node);
	}
	if (n >= sizeof(c.shape))
		return -EINVAL;
	SHA256Data((const uint8_t *)c.shape, n, hex);
	memcpy(c.id, hex, FLEET_CLASS_LEN);
	if (t->n_gpus)
		gpu_model(t->gpus[0].name, model, sizeof(model));
	snprintf(c.label, sizeof(c.label), "%us-%un-%uc-%ugpu%s%s", t->packages, t->n_numa, cores, t->n_gpus,
		 *model ? "-" : "", model);
	*ret = c;
	return 0;
}

/* ---- reading JSON strictly --------------------------------------------- */

/* The members of one document, checked: each getter fails with -EINVAL and
 * a message naming the key and the member. */
struct reader {
	const char *key;
	json_t *o;
	struct nt_err *err;
	int r;                    /* the first failure, 0 none */
};

static int bad(struct reader *rd, const char *member, const char *what)
{
	if (!rd->r)
		rd->r = err_set(rd->err, -EINVAL, "%s: \"%s\": %s", rd->key, member, what);
	return rd->r;
}

/* A string member into out (size bytes with the NUL); required or "". */
static void get_str(struct reader *rd, const char *member, char *out, size_t size, bool required)
{
	json_t *v = json_object_get(rd->o, member);

	if (!v) {
		if (required)
			bad(rd, member, "missing");
		return;
	}
	if (!json_is_string(v))
		bad(rd, member, "not a string");
	else if (json_string_length(v) >= size || strlen(json_string_value(v)) != json_string_length(v))
		bad(rd, member, "too long, or holds a NUL");
	else
		/* shown in `fleet status` tables and logged: one line (UTF-8
		 * stays; jansson has checked it) */
		textbuf_unctrl(memcpy(out, json_string_value(v), json_string_length(v) + 1));
}

/* A name member (fleet_name_valid). */
static void get_name(struct reader *rd, const char *member, char out[FLEET_NAME_MAX], bool required)
{
	get_str(rd, member, out, FLEET_NAME_MAX, required);
	if (!rd->r && (*out || required) && !fleet_name_valid(out))
		bad(rd, member, "not a name ([A-Za-z0-9._-], 1 to 63 bytes)");
}

/* A sha256 member: 64 lower-case hex digits (or "" when not required). */
static void get_sha(struct reader *rd, const char *member, char out[FLEET_SHA_LEN + 1], bool required)
{
	get_str(rd, member, out, FLEET_SHA_LEN + 1, required);
	if (!rd->r && (*out || required) &&
	    (strlen(out) != FLEET_SHA_LEN || strspn(out, "0123456789abcdef") != FLEET_SHA_LEN))
		bad(rd, member, "not a sha256 (64 hex digits)");
}

static double get_num(struct reader *rd, const char *member, double lo, double hi)
{
	json_t *v = json_object_get(rd->o, member);
	double x;

	if (!v)
		return 0;
	if (!json_is_number(v)) {
		bad(rd, member, "not a number");
		return 0;
	}
	x = json_number_value(v);
	if (!(x >= lo && x <= hi)) {
		bad(rd, member, "out of range");
		return 0;
	}
	return x;
}

static int64_t get_int(struct reader *rd, const char *member, int64_t lo, int64_t hi)
{
	json_t *v = json_object_get(rd->o, member);

	if (!v)
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi) {
		bad(rd, member, "not a whole number in range");
		return 0;
	}
	return json_integer_value(v);
}

static bool get_bool(struct reader *rd, const char *member)
{
	json_t *v = json_object_get(rd->o, member);

	if (v && !json_is_boolean(v))
		bad(rd, member, "not true or false");
	return v && json_is_true(v);
}

/* One of names[0..n) by its text; -1 (said) otherwise. */
static int get_enum(struct reader *rd, const char *member, const char *const *names, int n, bool required)
{
	char s[32] = "";

	get_str(rd, member, s, sizeof(s), required);
	if (rd->r || (!*s && !required))
		return rd->r ? -1 : 0;
	for (int i = 0; i < n; i++)
		if (!strcmp(s, names[i]))
			return i;
	bad(rd, member, "not one of the known values");
	return -1;
}

/* Load buf as one JSON object into rd->o.  0 or -EINVAL (said). */
static int reader_open(struct reader *rd, const char *key, const char *buf, size_t len, struct nt_err *err)
{
	json_error_t je;

	*rd = (struct reader){ key, NULL, err, 0 };
	rd->o = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &je);
	if (!rd->o)
		return err_set(err, -EINVAL, "%s: not valid JSON: %s (byte %d)", key, textbuf_printable(je.text), je.position);
	if (!json_is_object(rd->o)) {
		json_decref(rd->o);
		rd->o = NULL;
		return err_set(err, -EINVAL, "%s: not a JSON object", key);
	}
	return 0;
}

/* A sub-object as a reader of its own (same key, same err). */
static struct reader reader_sub(struct reader *rd, const char *member)
{
	json_t *v = json_object_get(rd->o, member);
	struct reader sub = { rd->key, NULL, rd->err, 0 };

	if (v && !json_is_object(v))
		bad(rd, member, "not an object");
	else
		sub.o = v;
	return sub;
}

/* ---- the host documents ------------------------------------------------ */

int fleet_doc_parse_desired(const char *key, const char *buf, size_t len, struct fleet_desired *ret,
			struct nt_err *err)
{
	struct fleet_desired d = { 0 };
	struct reader rd, g;
	int mode;

	if (reader_open(&rd, key, buf, len, err) < 0)
		return -EINVAL;
	get_name(&rd, "rollout", d.rollout, true);
	mode = get_enum(&rd, "mode", mode_names, 3, false);
	d.mode = mode < 0 ? FLEET_MODE_APPLY : (enum fleet_mode)mode;
	get_str(&rd, "policy", d.policy, sizeof(d.policy), false);
	get_sha(&rd, "sha256", d.sha256, d.mode != FLEET_MODE_LOCAL);
	g = reader_sub(&rd, "gate");
	if (!rd.r && d.mode == FLEET_MODE_GATE && !g.o)
		bad(&rd, "gate", "missing (mode gate)");
	if (!rd.r && g.o) {
		get_str(&g, "name", d.gate, sizeof(d.gate), true);
		if (!g.r && !gates_name_valid(d.gate))
			bad(&g, "name", "not a gate name ([a-z0-9_-], 1 to 64 bytes)");
		d.gate_budget = get_num(&g, "budget", 1, 86400);
		d.allow_inconclusive = get_bool(&g, "allow_inconclusive");
		rd.r = g.r;
	}
	json_decref(rd.o);
	if (rd.r)
		return rd.r;
	*ret = d;
	return 0;
}

char *fleet_desired_json(const struct fleet_desired *d, bool shadow)
{
	json_t *o = json_pack("{s:s, s:s, s:s}", "rollout", d->rollout, "policy", d->policy, "sha256", d->sha256);
	char *s;

	if (!o)
		return NULL;
	if (!shadow)
		json_object_set_new(o, "mode", json_string(mode_names[d->mode]));
	if (!shadow && d->mode == FLEET_MODE_GATE)
		json_object_set_new(o, "gate", json_pack("{s:s, s:f, s:b}", "name", d->gate, "budget",
							 d->gate_budget, "allow_inconclusive",
							 d->allow_inconclusive));
	s = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(o);
	return s;
}

int fleet_doc_parse_policy_doc(const char *key, const char *buf, size_t len, struct fleet_policy_doc *ret,
			   struct nt_err *err)
{
	struct fleet_policy_doc p = { 0 };
	char *b64 = NULL, sha[SHA256_DIGEST_STRING_LENGTH];
	struct reader rd;
	json_t *c;

	if (reader_open(&rd, key, buf, len, err) < 0)
		return -EINVAL;
	get_str(&rd, "name", p.name, sizeof(p.name), false);
	get_sha(&rd, "sha256", p.sha256, true);
	c = json_object_get(rd.o, "content");
	if (!rd.r && !json_is_string(c))
		bad(&rd, "content", "missing or not a string");
	if (!rd.r && base64_decode(json_string_value(c), json_string_length(c), &b64, &p.content_len) < 0)
		bad(&rd, "content", "not valid base64");
	if (!rd.r) {
		SHA256Data((const uint8_t *)b64, p.content_len, sha);
		if (strcmp(sha, p.sha256))
			bad(&rd, "content", "its sha256 is not the one the document names");
	}
	json_decref(rd.o);
	if (rd.r) {
		free(b64);
		return rd.r;
	}
	p.content = b64;
	*ret = p;
	return 0;
}

void fleet_policy_doc_release(struct fleet_policy_doc *p)
{
	if (!p)
		return;
	free(p->content);
	p->content = NULL;
}

char *fleet_policy_doc_json(const char *name, const char *content, size_t len, char ret_sha[FLEET_SHA_LEN + 1])
{
	char sha[SHA256_DIGEST_STRING_LENGTH], *b64 = base64_encode_alloc(content, len), *s = NULL;
	json_t *o;

	if (!b64)
		return NULL;
	SHA256Data((const uint8_t *)content, len, sha);
	o = json_pack("{s:s, s:s, s:s}", "name", name, "sha256", sha, "content", b64);
	if (o)
		s = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(o);
	free(b64);
	memcpy(ret_sha, sha, FLEET_SHA_LEN + 1);
	return s;
}

int fleet_doc_parse_stamp(const char *key, const char *buf, size_t len, struct fleet_stamp *ret, struct nt_err *err)
{
	struct fleet_stamp st = { 0 };
	struct reader rd;

	if (reader_open(&rd, key, buf, len, err) < 0)
		return -EINVAL;
	if (!json_object_get(rd.o, "seq") || !json_object_get(rd.o, "time"))
		bad(&rd, json_object_get(rd.o, "seq") ? "time" : "seq", "missing");
	st.seq = (uint64_t)get_int(&rd, "seq", 0, INT64_MAX);
	st.time = get_int(&rd, "time", 0, INT64_MAX);
	json_decref(rd.o);
	if (rd.r)
		return rd.r;
	*ret = st;
	return 0;
}

char *fleet_stamp_json(const struct fleet_stamp *st)
{
	json_t *o = json_pack("{s:I, s:I}", "seq", (json_int_t)st->seq, "time", (json_int_t)st->time);
	char *s = o ? json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS) : NULL;

	json_decref(o);
	return s;
}

static void parse_status_gate(struct reader *rd, struct fleet_status *s)
{
	struct reader g = reader_sub(rd, "gate");
	json_t *ci;

	if (rd->r || !g.o)
		return;
	s->gate_rev = get_int(&g, "rev", 0, INT64_MAX);
	get_str(&g, "verdict", s->verdict, sizeof(s->verdict), true);
	s->ratio = get_num(&g, "ratio", 0, 1e9);
	ci = json_object_get(g.o, "ci");
	if (ci && (!json_is_array(ci) || json_array_size(ci) != 2 || !json_is_number(json_array_get(ci, 0)) ||
		   !json_is_number(json_array_get(ci, 1))))
		bad(&g, "ci", "not [low, high]");
	else if (ci) {
		s->ci_lo = json_number_value(json_array_get(ci, 0));
		s->ci_hi = json_number_value(json_array_get(ci, 1));
	}
	get_str(&g, "explanation", s->explanation, sizeof(s->explanation), false);
	rd->r = g.r;
}

static void parse_status_parts(struct reader *rd, struct fleet_status *s)
{
	struct reader v = reader_sub(rd, "verify"), sh;

	if (!rd->r && v.o) {
		s->verify_time = get_num(&v, "time", 0, 1e12);
		s->verify_ok = get_bool(&v, "ok");
		s->checked = (unsigned)get_int(&v, "checked", 0, 1000000);
		s->drifted = (unsigned)get_int(&v, "drifted", 0, 1000000);
		rd->r = v.r;
	}
	parse_status_gate(rd, s);
	sh = reader_sub(rd, "shadow");
	if (!rd->r && sh.o) {
		s->shadow_rev = get_int(&sh, "rev", 0, INT64_MAX);
		get_sha(&sh, "sha256", s->shadow_sha, false);
		s->shadow_valid = get_bool(&sh, "valid");
		s->shadow_changes = (unsigned)get_int(&sh, "changes", 0, 1000000);
		get_str(&sh, "text", s->shadow_text, sizeof(s->shadow_text), false);
		rd->r = sh.r;
	}
}

int fleet_doc_parse_status(const char *key, const char *buf, size_t len, struct fleet_status *ret,
		       struct nt_err *err)
{
	struct fleet_status *s = calloc(1, sizeof(*s));
	struct reader rd;
	int st;

	if (!s)
		return err_set(err, -ENOMEM, "%s: out of memory", key);
	if (reader_open(&rd, key, buf, len, err) < 0) {
		free(s);
		return -EINVAL;
	}
	get_name(&rd, "host", s->host, true);
	get_str(&rd, "class", s->class_id, sizeof(s->class_id), false);
	get_str(&rd, "label", s->label, sizeof(s->label), false);
	get_str(&rd, "policy", s->policy, sizeof(s->policy), false);
	get_sha(&rd, "sha256", s->sha256, false);
	st = get_enum(&rd, "state", fleet_hstate_names, FLEET_H__COUNT, true);
	s->state = st < 0 ? FLEET_H_INVALID : (enum fleet_hstate)st;
	s->desired_rev = get_int(&rd, "desired_rev", 0, INT64_MAX);
	get_str(&rd, "error", s->error, sizeof(s->error), false);
	s->time = get_num(&rd, "time", 0, 1e12);
	parse_status_parts(&rd, s);
	json_decref(rd.o);
	if (!rd.r)
		*ret = *s;
	free(s);
	return rd.r;
}

char *fleet_status_json(const struct fleet_status *s)
{
	json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:I, s:s, s:f, s:{s:f, s:b, s:i, s:i}}", "host",
			      s->host, "class", s->class_id, "label", s->label, "policy", s->policy, "sha256",
			      s->sha256, "state", fleet_hstate_names[s->state], "desired_rev",
			      (json_int_t)s->desired_rev, "error", s->error, "time", s->time, "verify", "time",
			      s->verify_time, "ok", s->verify_ok, "checked", (int)s->checked, "drifted",
			      (int)s->drifted);
	char *out;

	if (!o)
		return NULL;
	if (s->gate_rev)
		json_object_set_new(o, "gate", json_pack("{s:I, s:s, s:f, s:[f, f], s:s}", "rev",
							 (json_int_t)s->gate_rev, "verdict", s->verdict, "ratio",
							 s->ratio, "ci", s->ci_lo, s->ci_hi, "explanation",
							 s->explanation));
	if (s->shadow_rev)
		json_object_set_new(o, "shadow", json_pack("{s:I, s:s, s:b, s:i, s:s}", "rev",
							   (json_int_t)s->shadow_rev, "sha256", s->shadow_sha, "valid",
							   s->shadow_valid, "changes", (int)s->shadow_changes, "text",
							   s->shadow_text));
	out = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(o);
	return out;
}

int fleet_doc_parse_hostinfo(const char *key, const char *buf, size_t len, struct fleet_hostinfo *ret,
			 struct nt_err *err)
{
	struct fleet_hostinfo h = { 0 };
	struct reader rd;

	if (reader_open(&rd, key, buf, len, err) < 0)
		return -EINVAL;
	get_name(&rd, "host", h.host, true);
	get_str(&rd, "class", h.class_id, sizeof(h.class_id), true);
	get_str(&rd, "label", h.label, sizeof(h.label), false);
	h.pid = (long)get_int(&rd, "pid", 0, 1 << 30);
	h.started = get_num(&rd, "started", 0, 1e12);
	json_decref(rd.o);
	if (rd.r)
		return rd.r;
	*ret = h;
	return 0;
}

char *fleet_hostinfo_json(const struct fleet_hostinfo *h)
{
	json_t *o = json_pack("{s:s, s:s, s:s, s:I, s:f}", "host", h->host, "class", h->class_id, "label", h->label,
			      "pid", (json_int_t)h->pid, "started", h->started);
	char *s = o ? json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS) : NULL;

	json_decref(o);
	return s;
}

/* ---- waves ------------------------------------------------------------- */

int fleet_waves_parse(const char *spec, struct fleet_wave_spec ret[FLEET_WAVES_MAX], unsigned *ret_n,
		      struct nt_err *err)
{
	struct fleet_wave_spec w[FLEET_WAVES_MAX];
	const char *p = spec;
	unsigned n = 0;

	do {
		size_t len = strcspn(p, ",");
		char item[16], *end;
		double pct;

		if (len == 0 || len >= sizeof(item))
			return err_set(err, -EINVAL, "--waves '%s': an empty or overlong item", spec);
		if (n == FLEET_WAVES_MAX)
			return err_set(err, -EINVAL, "--waves '%s': at most %d waves", spec, FLEET_WAVES_MAX);
		snprintf(item, sizeof(item), "%.*s", (int)len, p);
		w[n] = (struct fleet_wave_spec){ 0 };
		snprintf(w[n].text, sizeof(w[n].text), "%s", item);
		if (!strcmp(item, "1/class")) {
			if (n)
				return err_set(err, -EINVAL, "--waves '%s': 1/class can only be the first wave", spec);
			w[n++].per_class = true;
		} else {
			pct = strtod(item, &end);
			if (end == item || strcmp(end, "%") || !(pct > 0 && pct <= 100) ||
			    (n && !w[n - 1].per_class && pct <= w[n - 1].fraction * 100))
				return err_set(err, -EINVAL,
					       "--waves '%s': '%s' is not 1/class or a percentage above the one before, up to 100%%",
					       spec, item);
			w[n++].fraction = pct / 100;
		}
		p += len;
	} while (*p++ == ',');
	if (w[n - 1].per_class || w[n - 1].fraction < 1)
		return err_set(err, -EINVAL, "--waves '%s': the last wave must be 100%%", spec);
	memcpy(ret, w, n * sizeof(*w));
	*ret_n = n;
	return 0;
}

static int member_cmp(const void *a, const void *b)
{
	const struct fleet_member *x = *(const struct fleet_member *const *)a, *y = *(const struct fleet_member *const *)b;
	int c = strcmp(x->class_id, y->class_id);

	return c ? c : strcmp(x->host, y->host);
}

static void rhost_init(struct fleet_rhost *h, const struct fleet_member *m)
{
	*h = (struct fleet_rhost){ .state = FLEET_R_PENDING, .prev_rev = m->desired_rev };
	snprintf(h->host, sizeof(h->host), "%s", m->host);
	snprintf(h->class_id, sizeof(h->class_id), "%s", m->class_id);
	snprintf(h->label, sizeof(h->label), "%s", m->label);
	h->prev_desired = m->desired ? strdup(m->desired) : NULL;
}

/* The order hosts are taken in after the first wave: round-robin across
 * classes (sorted), each class by name.  sorted[] is by (class, host);
 * order[] gets indexes into it; taken[] marks the first wave's. */
static void interleave(const struct fleet_member **sorted, unsigned n, const bool *taken, unsigned *order,
		       unsigned *ret_n)
{
	unsigned starts[n + 1], next[n + 1], n_classes = 0, k = 0;

	for (unsigned i = 0; i < n; i++)
		if (i == 0 || strcmp(sorted[i]->class_id, sorted[i - 1]->class_id))
			starts[n_classes++] = i;
	starts[n_classes] = n;
	memcpy(next, starts, sizeof(next));
	while (k < n) {
		bool any = false;

		for (unsigned c = 0; c < n_classes; c++) {
			while (next[c] < starts[c + 1] && taken[next[c]])
				next[c]++;
			if (next[c] < starts[c + 1]) {
				order[k++] = next[c]++;
				any = true;
			}
		}
		if (!any)
			break;
	}
	*ret_n = k;
}

/* Fill the waves of r (allocated) from sorted members: first one per
 * class when the spec says so, then the percentages.  0 or -ENOMEM. */
static int fill_waves(struct fleet_rollout *r, const struct fleet_member **sorted, unsigned n,
		      const struct fleet_wave_spec *spec, unsigned n_spec)
{
	bool *taken = calloc(n, sizeof(bool));
	unsigned *order = calloc(n, sizeof(unsigned)), n_order = 0, done = 0, pos = 0;
	int r_ = 0;

	if (!taken || !order) {
		r_ = -ENOMEM;
		goto out_free;
	}
	for (unsigned s = 0; s < n_spec; s++) {
		struct fleet_wave *w = &r->waves[r->n_waves];
		unsigned target = 0;

		snprintf(w->spec, sizeof(w->spec), "%s", spec[s].text);
		w->hosts = calloc(n, sizeof(*w->hosts));
		if (!w->hosts) {
			r_ = -ENOMEM;
			goto out_free;
		}
		if (spec[s].per_class) {
			for (unsigned i = 0; i < n; i++)
				if (i == 0 || strcmp(sorted[i]->class_id, sorted[i - 1]->class_id)) {
					taken[i] = true;
					rhost_init(&w->hosts[w->n++], sorted[i]);
				}
			interleave(sorted, n, taken, order, &n_order);
		} else {
			if (!n_order && !done)
				interleave(sorted, n, taken, order, &n_order);
			target = (unsigned)ceil(spec[s].fraction * n - 1e-9);
			if (s == n_spec - 1 || target > n)
				target = n;
			while (pos < n_order && (done + w->n < target || w->n == 0))
				rhost_init(&w->hosts[w->n++], sorted[order[pos++]]);
		}
		done += w->n;
		if (w->n)
			r->n_waves++;
		else
			free(w->hosts), w->hosts = NULL;
	}
out_free:
	free(taken);
	free(order);
	return r_;
}

int fleet_plan_waves(struct fleet_rollout *r, const struct fleet_member *m, unsigned n,
		     const struct fleet_wave_spec *spec, unsigned n_spec, struct nt_err *err)
{
	struct fleet_rollout tmp = { 0 };
	const struct fleet_member **sorted;
	int rc;

	if (n == 0)
		return err_set(err, -EINVAL, "no host is registered in the store (is a daemon running with --fleet?)");
	if (n > FLEET_HOSTS_MAX)
		return err_set(err, -EINVAL, "%u hosts: at most %d in one rollout", n, FLEET_HOSTS_MAX);
	sorted = calloc(n, sizeof(*sorted));
	tmp.waves = calloc(n_spec, sizeof(*tmp.waves));
	if (!sorted || !tmp.waves) {
		free(sorted);
		free(tmp.waves);
		return err_set(err, -ENOMEM, "out of memory");
	}
	for (unsigned i = 0; i < n; i++)
		sorted[i] = &m[i];
	qsort(sorted, n, sizeof(*sorted), member_cmp);
	rc = fill_waves(&tmp, sorted, n, spec, n_spec);
	free(sorted);
	if (rc < 0) {
		tmp.n_waves = n_spec;
		fleet_rollout_release(&tmp);
		return err_set(err, rc, "out of memory");
	}
	r->waves = tmp.waves;
	r->n_waves = tmp.n_waves;
	return 0;
}

/* ---- the rollout document ---------------------------------------------- */

void fleet_event(struct fleet_rollout *r, double t, const char *fmt, ...)
{
	struct fleet_event *grown;
	va_list ap;
	char *what;

	va_start(ap, fmt);
	if (vasprintf(&what, fmt, ap) < 0)
		what = NULL;
	va_end(ap);
	if (!what)
		return;
	if (r->n_events == FLEET_EVENTS_MAX) {
		free(r->events[0].what);
		memmove(r->events, r->events + 1, (FLEET_EVENTS_MAX - 1) * sizeof(*r->events));
		r->n_events--;
	}
	grown = realloc(r->events, (r->n_events + 1) * sizeof(*r->events));
	if (!grown) {
		free(what);
		return;
	}
	r->events = grown;
	r->events[r->n_events++] = (struct fleet_event){ t, what };
}

void fleet_rollout_release(struct fleet_rollout *r)
{
	if (!r)
		return;
	for (unsigned w = 0; r->waves && w < r->n_waves; w++) {
		for (unsigned i = 0; i < r->waves[w].n; i++) {
			free(r->waves[w].hosts[i].prev_desired);
			free(r->waves[w].hosts[i].note);
		}
		free(r->waves[w].hosts);
	}
	free(r->waves);
	for (unsigned i = 0; i < r->n_events; i++)
		free(r->events[i].what);
	free(r->events);
	free(r->reason);
	memset(r, 0, sizeof(*r));
}

static char *dup_or_null(const char *s, bool *oom)
{
	char *d = s ? strdup(s) : NULL;

	if (s && !d)
		*oom = true;
	return d;
}

int fleet_rollout_copy(const struct fleet_rollout *r, struct fleet_rollout *ret)
{
	struct fleet_rollout c = *r;
	bool oom = false;

	c.waves = calloc(r->n_waves ? r->n_waves : 1, sizeof(*c.waves));
	c.events = calloc(r->n_events ? r->n_events : 1, sizeof(*c.events));
	c.reason = dup_or_null(r->reason, &oom);
	c.n_waves = c.waves ? r->n_waves : 0;
	c.n_events = c.events ? r->n_events : 0;
	oom |= !c.waves || !c.events;
	for (unsigned w = 0; w < c.n_waves; w++) {
		c.waves[w] = r->waves[w];
		c.waves[w].hosts = calloc(r->waves[w].n ? r->waves[w].n : 1, sizeof(struct fleet_rhost));
		c.waves[w].n = c.waves[w].hosts ? r->waves[w].n : 0;
		oom |= !c.waves[w].hosts;
		for (unsigned i = 0; i < c.waves[w].n; i++) {
			c.waves[w].hosts[i] = r->waves[w].hosts[i];
			c.waves[w].hosts[i].prev_desired = dup_or_null(r->waves[w].hosts[i].prev_desired, &oom);
			c.waves[w].hosts[i].note = dup_or_null(r->waves[w].hosts[i].note, &oom);
		}
	}
	for (unsigned i = 0; i < c.n_events; i++)
		c.events[i] = (struct fleet_event){ r->events[i].t, dup_or_null(r->events[i].what, &oom) };
	if (oom) {
		fleet_rollout_release(&c);
		return -ENOMEM;
	}
	*ret = c;
	return 0;
}

static json_t *rhost_json(const struct fleet_rhost *h)
{
	json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:I}", "host", h->host, "class", h->class_id, "label", h->label,
			      "state", fleet_rstate_names[h->state], "prev_rev", (json_int_t)h->prev_rev);

	if (!o)
		return NULL;
	json_object_set_new(o, "prev_desired", h->prev_desired ? json_string(h->prev_desired) : json_null());
	if (*h->prev_refused)
		json_object_set_new(o, "prev_refused", json_string(h->prev_refused));
	json_object_set_new(o, "verdict", *h->verdict ? json_string(h->verdict) : json_null());
	json_object_set_new(o, "ratio", *h->verdict ? json_real(h->ratio) : json_null());
	if (*h->verdict)
		json_object_set_new(o, "ci", json_pack("[f, f]", h->ci_lo, h->ci_hi));
	if (h->note)
		json_object_set_new(o, "note", json_string(h->note));
	if (h->state == FLEET_R_SHADOWED)
		json_object_set_new(o, "shadow", json_pack("{s:b, s:i}", "valid", h->shadow_valid, "changes",
							   (int)h->shadow_changes));
	return o;
}

/* The hosts of wave w in each state, {"pending":N,...} (states with none left out). */
static json_t *counts_json(const struct fleet_wave *w)
{
	unsigned n[FLEET_R__COUNT] = { 0 };
	json_t *o = json_object();

	for (unsigned i = 0; i < w->n; i++)
		n[w->hosts[i].state]++;
	for (int s = 0; o && s < FLEET_R__COUNT; s++)
		if (n[s])
			json_object_set_new(o, fleet_rstate_names[s], json_integer(n[s]));
	return o;
}

/* The waves: each with its hosts (l NULL), or (the head) with their count,
 * how many are in each state and the seq of each of its pages. */
static json_t *waves_json(const struct fleet_rollout *r, const struct fleet_layout *l)
{
	json_t *a = json_array();
	unsigned g = 0;

	for (unsigned w = 0; a && w < r->n_waves; w++) {
		json_t *o = json_pack("{s:i, s:s, s:s, s:f}", "index", (int)w, "spec", r->waves[w].spec, "state",
				      fleet_wstate_names[r->waves[w].state], "started", r->waves[w].started);
		json_t *hosts = json_array();

		for (unsigned i = 0; !l && hosts && i < r->waves[w].n; i++)
			json_array_append_new(hosts, rhost_json(&r->waves[w].hosts[i]));
		for (unsigned p = 0; l && hosts && p < fleet_wave_pages(&r->waves[w], l->page_hosts); p++, g++)
			json_array_append_new(hosts, json_integer((json_int_t)l->seq[g]));
		if (o && l) {
			json_object_set_new(o, "n", json_integer(r->waves[w].n));
			json_object_set_new(o, "counts", counts_json(&r->waves[w]));
		}
		if (o)
			json_object_set_new(o, l ? "pages" : "hosts", hosts);
		json_array_append_new(a, o);
	}
	return a;
}

static char *rollout_json(const struct fleet_rollout *r, const struct fleet_layout *l)
{
	json_t *ev = json_array(), *o;
	char *s;

	for (unsigned i = 0; ev && i < r->n_events; i++)
		json_array_append_new(ev, json_pack("{s:f, s:s}", "t", r->events[i].t, "what", r->events[i].what));
	o = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:f, s:f, s:b, s:b, s:s, s:i, s:o, s:o, s:f, s:f, s:f}",
		      "name", r->name, "policy", r->policy, "sha256", r->sha256, "state",
		      fleet_state_names[r->state], "waves_spec", r->waves_spec, "gate", r->gate,
		      "gate_budget", r->gate_budget, "wave_timeout", r->wave_timeout, "shadow", r->shadow,
		      "allow_inconclusive", r->allow_inconclusive, "goal", fleet_state_names[r->goal], "wave",
		      (int)r->wave, "waves", waves_json(r, l), "events", ev, "created", r->created, "updated",
		      r->updated, "phase_started", r->phase_started);
	if (!o)
		return NULL;
	json_object_set_new(o, "reason", r->reason ? json_string(r->reason) : json_null());
	if (l)
		json_object_set_new(o, "page_hosts", json_integer(l->page_hosts));
	s = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	return s;
}

char *fleet_rollout_json(const struct fleet_rollout *r)
{
	return rollout_json(r, NULL);
}

char *fleet_rollout_head_json(const struct fleet_rollout *r, const struct fleet_layout *l)
{
	return rollout_json(r, l);
}

/* An optional string member, copied (NULL when absent or null). */
static char *get_dup(struct reader *rd, const char *member, size_t max)
{
	json_t *v = json_object_get(rd->o, member);
	char *s;

	if (!v || json_is_null(v))
		return NULL;
	if (!json_is_string(v) || json_string_length(v) > max ||
	    strlen(json_string_value(v)) != json_string_length(v)) {
		bad(rd, member, "not a string of bounded length without NUL");
		return NULL;
	}
	if (!(s = strdup(json_string_value(v))))
		rd->r = err_set(rd->err, -ENOMEM, "out of memory");
	return s;
}

/* A text member shown to people (a note, an event, a reason): get_dup's,
 * with control characters as '?'. */
static char *get_text(struct reader *rd, const char *member)
{
	char *s = get_dup(rd, member, FLEET_TEXT_MAX * 4);

	return s ? textbuf_unctrl(s) : NULL;
}

static void parse_rhost(struct reader *rd, json_t *o, struct fleet_rhost *h)
{
	struct reader hr = { rd->key, o, rd->err, 0 };
	int st;
	json_t *ci = json_object_get(o, "ci"), *sh = json_object_get(o, "shadow");

	if (!json_is_object(o)) {
		bad(rd, "waves", "a host is not an object");
		return;
	}
	get_name(&hr, "host", h->host, true);
	get_str(&hr, "class", h->class_id, sizeof(h->class_id), true);
	get_str(&hr, "label", h->label, sizeof(h->label), false);
	st = get_enum(&hr, "state", fleet_rstate_names, FLEET_R__COUNT, true);
	h->state = st < 0 ? FLEET_R_PENDING : (enum fleet_rstate)st;
	h->prev_rev = get_int(&hr, "prev_rev", 0, INT64_MAX);
	h->prev_desired = get_dup(&hr, "prev_desired", (1u << 20));
	if (json_object_get(o, "prev_refused"))
		get_str(&hr, "prev_refused", h->prev_refused, sizeof(h->prev_refused), false);
	if (json_is_string(json_object_get(o, "verdict")))
		get_str(&hr, "verdict", h->verdict, sizeof(h->verdict), false);
	if (json_is_number(json_object_get(o, "ratio")))
		h->ratio = get_num(&hr, "ratio", 0, 1e9);
	if (json_is_array(ci) && json_array_size(ci) == 2) {
		h->ci_lo = json_number_value(json_array_get(ci, 0));
		h->ci_hi = json_number_value(json_array_get(ci, 1));
	}
	h->note = get_text(&hr, "note");
	if (json_is_object(sh)) {
		h->shadow_valid = json_is_true(json_object_get(sh, "valid"));
		h->shadow_changes = (unsigned)json_integer_value(json_object_get(sh, "changes"));
	}
	if (hr.r)
		rd->r = hr.r;
}

/* A head's wave: its "n" hosts (zeroed: its pages fill them) and its
 * pages' seqs, appended to l. */
static void parse_wave_pages(struct reader *rd, struct reader *wr, struct fleet_wave *wave, struct fleet_layout *l)
{
	json_t *pages = json_object_get(wr->o, "pages");
	unsigned n = (unsigned)get_int(wr, "n", 1, FLEET_HOSTS_MAX), np = fleet_wave_pages(&(struct fleet_wave){ .n = n },
											l->page_hosts);
	uint64_t *seq;

	if ((rd->r = wr->r))
		return;
	if (!json_is_array(pages) || json_array_size(pages) != np) {
		bad(rd, "waves", "a wave's pages are not an array of one seq per page");
		return;
	}
	wave->hosts = calloc(n + 1, sizeof(*wave->hosts));
	seq = realloc(l->seq, (l->n_pages + np + 1) * sizeof(*seq));
	if (seq)
		l->seq = seq;
	if (!wave->hosts || !seq) {
		rd->r = err_set(rd->err, -ENOMEM, "out of memory");
		return;
	}
	wave->n = n;
	for (unsigned p = 0; p < np; p++) {
		json_t *v = json_array_get(pages, p);

		if (!json_is_integer(v) || json_integer_value(v) < 0) {
			bad(rd, "waves", "a page's seq is not a whole number");
			return;
		}
		l->seq[l->n_pages++] = (uint64_t)json_integer_value(v);
	}
}

/* The waves: with their hosts (l NULL), or a head's (fleet_doc_parse_rollout_head). */
static void parse_waves(struct reader *rd, struct fleet_rollout *r, struct fleet_layout *l)
{
	json_t *a = json_object_get(rd->o, "waves");
	size_t w;
	json_t *wo;

	if (!json_is_array(a) || json_array_size(a) > FLEET_WAVES_MAX) {
		bad(rd, "waves", "not an array of at most 16 waves");
		return;
	}
	r->waves = calloc(json_array_size(a) + 1, sizeof(*r->waves));
	if (!r->waves) {
		rd->r = err_set(rd->err, -ENOMEM, "out of memory");
		return;
	}
	json_array_foreach(a, w, wo) {
		struct reader wr = { rd->key, wo, rd->err, 0 };
		json_t *hosts = json_object_get(wo, "hosts");
		struct fleet_wave *wave = &r->waves[r->n_waves++];
		int st;

		if (!json_is_object(wo) || (!l && (!json_is_array(hosts) || json_array_size(hosts) > FLEET_HOSTS_MAX))) {
			bad(rd, "waves", l ? "a wave is not an object" : "a wave is not an object with a hosts array");
			return;
		}
		st = get_enum(&wr, "state", fleet_wstate_names, FLEET_W__COUNT, true);
		wave->state = st < 0 ? FLEET_W_PENDING : (enum fleet_wstate)st;
		get_str(&wr, "spec", wave->spec, sizeof(wave->spec), false);
		wave->started = get_num(&wr, "started", 0, 1e12);
		if ((rd->r = wr.r))
			return;
		if (l) {
			parse_wave_pages(rd, &wr, wave, l);
			if (rd->r)
				return;
			continue;
		}
		wave->hosts = calloc(json_array_size(hosts) + 1, sizeof(*wave->hosts));
		if (!wave->hosts) {
			rd->r = err_set(rd->err, -ENOMEM, "out of memory");
			return;
		}
		for (size_t i = 0; i < json_array_size(hosts) && !rd->r; i++)
			parse_rhost(rd, json_array_get(hosts, i), &wave->hosts[wave->n++]);
		if (rd->r)
			return;
	}
}

static void parse_events(struct reader *rd, struct fleet_rollout *r)
{
	json_t *a = json_object_get(rd->o, "events"), *e;
	size_t i;

	if (!a)
		return;
	if (!json_is_array(a) || json_array_size(a) > FLEET_EVENTS_MAX) {
		bad(rd, "events", "not an array of at most 256 events");
		return;
	}
	json_array_foreach(a, i, e) {
		struct reader er = { rd->key, e, rd->err, 0 };
		double t;
		char *what;

		if (!json_is_object(e)) {
			bad(rd, "events", "an event is not an object");
			return;
		}
		t = get_num(&er, "t", 0, 1e12);
		what = get_text(&er, "what");
		if (er.r || !what) {
			free(what);
			rd->r = er.r ? er.r : bad(rd, "events", "an event without what");
			return;
		}
		fleet_event(r, t, "%s", what);
		free(what);
	}
}

static int parse_rollout(const char *key, const char *buf, size_t len, struct fleet_rollout *ret,
			 struct fleet_layout *l, struct nt_err *err)
{
	struct fleet_rollout r = { 0 };
	struct reader rd;
	int st, goal;

	if (reader_open(&rd, key, buf, len, err) < 0)
		return -EINVAL;
	get_name(&rd, "name", r.name, true);
	get_str(&rd, "policy", r.policy, sizeof(r.policy), false);
	get_sha(&rd, "sha256", r.sha256, true);
	st = get_enum(&rd, "state", fleet_state_names, FLEET_S__COUNT, true);
	goal = get_enum(&rd, "goal", fleet_state_names, FLEET_S__COUNT, false);
	r.state = st < 0 ? FLEET_FAILED : (enum fleet_state)st;
	r.goal = goal < 0 ? FLEET_ROLLED_BACK : (enum fleet_state)goal;
	get_str(&rd, "waves_spec", r.waves_spec, sizeof(r.waves_spec), false);
	get_str(&rd, "gate", r.gate, sizeof(r.gate), false);
	if (!rd.r && *r.gate && !gates_name_valid(r.gate))
		bad(&rd, "gate", "not a gate name ([a-z0-9_-], 1 to 64 bytes)");
	r.gate_budget = get_num(&rd, "gate_budget", 0, 86400);
	r.wave_timeout = get_num(&rd, "wave_timeout", 0, 86400 * 30);
	r.shadow = get_bool(&rd, "shadow");
	r.allow_inconclusive = get_bool(&rd, "allow_inconclusive");
	r.wave = (unsigned)get_int(&rd, "wave", 0, FLEET_WAVES_MAX);
	r.created = get_num(&rd, "created", 0, 1e12);
	r.updated = get_num(&rd, "updated", 0, 1e12);
	r.phase_started = get_num(&rd, "phase_started", 0, 1e12);
	r.reason = get_text(&rd, "reason");
	if (l)
		l->page_hosts = (unsigned)get_int(&rd, "page_hosts", 1, FLEET_PAGE_HOSTS_MAX);
	if (!rd.r && l && !l->page_hosts)
		bad(&rd, "page_hosts", "missing");
	if (!rd.r)
		parse_waves(&rd, &r, l);
	if (!rd.r)
		parse_events(&rd, &r);
	if (!rd.r && r.wave > r.n_waves)
		bad(&rd, "wave", "past the last wave");
	json_decref(rd.o);
	if (rd.r) {
		fleet_rollout_release(&r);
		return rd.r;
	}
	*ret = r;
	return 0;
}

int fleet_doc_parse_rollout(const char *key, const char *buf, size_t len, struct fleet_rollout *ret,
			struct nt_err *err)
{
	return parse_rollout(key, buf, len, ret, NULL, err);
}

/* ---- the rollout in the store: a head and its pages --------------------- */

unsigned fleet_wave_pages(const struct fleet_wave *w, unsigned page_hosts)
{
	return page_hosts ? (w->n + page_hosts - 1) / page_hosts : 0;
}

int fleet_layout_init(struct fleet_layout *l, const struct fleet_rollout *r, unsigned page_hosts)
{
	unsigned n = 0;

	for (unsigned w = 0; w < r->n_waves; w++)
		n += fleet_wave_pages(&r->waves[w], page_hosts);
	*l = (struct fleet_layout){ .page_hosts = page_hosts, .n_pages = n };
	l->seq = calloc(n + 1, sizeof(*l->seq));
	l->rev = calloc(n + 1, sizeof(*l->rev));
	if (!l->seq || !l->rev) {
		fleet_layout_release(l);
		return -ENOMEM;
	}
	return 0;
}

void fleet_layout_release(struct fleet_layout *l)
{
	free(l->seq);
	free(l->rev);
	memset(l, 0, sizeof(*l));
}

bool fleet_page_locate(const struct fleet_rollout *r, const struct fleet_layout *l, unsigned g, unsigned *ret_wave,
		       unsigned *ret_page)
{
	for (unsigned w = 0; w < r->n_waves; w++) {
		unsigned np = fleet_wave_pages(&r->waves[w], l->page_hosts);

		if (g < np) {
			*ret_wave = w;
			*ret_page = g;
			return true;
		}
		g -= np;
	}
	return false;
}

unsigned fleet_page_of(const struct fleet_rollout *r, const struct fleet_layout *l, unsigned wave, unsigned index)
{
	unsigned g = 0;

	for (unsigned w = 0; w < wave && w < r->n_waves; w++)
		g += fleet_wave_pages(&r->waves[w], l->page_hosts);
	return g + index / l->page_hosts;
}

char *fleet_page_key(char *buf, size_t size, const char *name, unsigned wave, unsigned page)
{
	snprintf(buf, size, FLEET_ROOT "rollouts/%s/pages/%u.%u", name, wave, page);
	return buf;
}

char *fleet_page_json(const struct fleet_rollout *r, const struct fleet_layout *l, unsigned g)
{
	unsigned w, p;
	json_t *hosts = json_array(), *o;
	char *s;

	if (!fleet_page_locate(r, l, g, &w, &p)) {
		json_decref(hosts);
		return NULL;
	}
	for (unsigned i = p * l->page_hosts; hosts && i < r->waves[w].n && i < (p + 1) * l->page_hosts; i++)
		json_array_append_new(hosts, rhost_json(&r->waves[w].hosts[i]));
	o = json_pack("{s:s, s:i, s:i, s:o}", "rollout", r->name, "wave", (int)w, "page", (int)p, "hosts", hosts);
	s = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	return s;
}

int fleet_doc_parse_rollout_head(const char *key, const char *buf, size_t len, struct fleet_rollout *ret,
			     struct fleet_layout *l, struct nt_err *err)
{
	struct fleet_layout tmp = { 0 };
	int rc = parse_rollout(key, buf, len, ret, &tmp, err);

	if (rc == 0 && !(tmp.rev = calloc(tmp.n_pages + 1, sizeof(*tmp.rev)))) {
		fleet_rollout_release(ret);
		rc = err_set(err, -ENOMEM, "out of memory");
	}
	if (rc < 0) {
		fleet_layout_release(&tmp);
		return rc;
	}
	*l = tmp;
	return 0;
}

int fleet_doc_parse_page(const char *key, const char *buf, size_t len, struct fleet_rollout *r,
		     const struct fleet_layout *l, unsigned g, struct nt_err *err)
{
	struct reader rd;
	char name[FLEET_NAME_MAX] = "";
	unsigned w = 0, p = 0, first, n;
	json_t *hosts;

	if (!fleet_page_locate(r, l, g, &w, &p))
		return err_set(err, -EINVAL, "%s: no such page in rollout %s", key, r->name);
	first = p * l->page_hosts;
	n = r->waves[w].n - first < l->page_hosts ? r->waves[w].n - first : l->page_hosts;
	if (reader_open(&rd, key, buf, len, err) < 0)
		return -EINVAL;
	get_name(&rd, "rollout", name, true);
	if (!rd.r && (strcmp(name, r->name) || get_int(&rd, "wave", 0, FLEET_WAVES_MAX) != w ||
		      get_int(&rd, "page", 0, FLEET_HOSTS_MAX) != p))
		bad(&rd, "page", "not this rollout's page at this key");
	hosts = json_object_get(rd.o, "hosts");
	if (!rd.r && (!json_is_array(hosts) || json_array_size(hosts) != n))
		bad(&rd, "hosts", "not an array of the page's hosts");
	for (unsigned i = 0; !rd.r && i < n; i++) {
		struct fleet_rhost h = { 0 };

		parse_rhost(&rd, json_array_get(hosts, i), &h);
		free(r->waves[w].hosts[first + i].prev_desired);
		free(r->waves[w].hosts[first + i].note);
		r->waves[w].hosts[first + i] = h;
	}
	json_decref(rd.o);
	return rd.r;
}
