/* SPDX-License-Identifier: MIT */
/* etcd.c — see etcd.h.
 *
 * Divisions:
 *   1. reading JSON fields (int64 as string or integer, base64 bytes)
 *   2. the response parsers (pure; the fuzz target's entry points)
 *   3. building requests (keys, ranges, compares, ops)
 *   4. transport: libcurl, the endpoint list and failover, TLS
 *   5. authentication: a user's token, renewed when etcd refuses it
 *   6. the key-value, txn and lease calls
 *   7. watch: a long poll over the gateway's stream
 *
 * What etcd 3.4's gateway sends (tests/fixtures/etcd/ holds real answers):
 * int64 fields are JSON strings ("revision":"7"); fields at their zero value
 * are left out (an empty value has no "value", a PUT event no "type", a
 * failed txn no "succeeded", an expired lease's keepalive no "TTL"); keys
 * and values are base64; streaming calls (watch, keepalive) answer one
 * {"result": ...} object per line; errors are {"error", "message", "code"}
 * with a gRPC status code, or {"error": {"grpc_code", "message", ...}}
 * inside a stream.
 */
#include <errno.h>
#include <stdatomic.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <jansson.h>

#include "nt_clock.h"
#include "base/base64.h"
#include "fleet/etcd.h"
#include "fleet/etcd_test.h"
#include "base/textbuf.h"

/* ==== 1. reading JSON fields ============================================== */

/* Copy untrusted text into out for a one-line message: printable ASCII
 * kept, anything else '?', cut at out_size - 1. */
static const char *printable(const char *s, size_t n, char *out, size_t out_size)
{
	size_t i;

	for (i = 0; i < n && i + 1 < out_size; i++)
		out[i] = (s[i] >= 0x20 && s[i] < 0x7f) ? s[i] : '?';
	out[i] = '\0';
	return out;
}

/* Parse all of s as a decimal int64 (optional '-', digits only). */
static int parse_i64(const char *s, int64_t *ret)
{
	const char *p = s + (*s == '-');
	char *end;
	long long v;

	if (*p < '0' || *p > '9')
		return -EINVAL;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || *end)
		return -EINVAL;
	*ret = v;
	return 0;
}

/* obj.name as an int64 >= min: a decimal string or an integer; 0 when
 * absent.  what names the object in a message. */
static int get_i64(json_t *obj, const char *name, int64_t min, int64_t *ret, const char *what,
		   struct nt_err *err)
{
	json_t *j = json_object_get(obj, name);
	int64_t v = 0;

	if (json_is_integer(j))
		v = json_integer_value(j);
	else if (json_is_string(j)) {
		if (parse_i64(json_string_value(j), &v) < 0)
			return err_set(err, -EINVAL, "%s: %s is not an integer", what, name);
	} else if (j)
		return err_set(err, -EINVAL, "%s: %s is not an integer", what, name);
	if (v < min)
		return err_set(err, -EINVAL, "%s: %s %" PRId64 " is out of range", what, name, v);
	*ret = v;
	return 0;
}

/* obj.name as a bool; false when absent. */
static int get_bool(json_t *obj, const char *name, bool *ret, const char *what,
		    struct nt_err *err)
{
	json_t *j = json_object_get(obj, name);

	if (j && !json_is_boolean(j))
		return err_set(err, -EINVAL, "%s: %s is not a boolean", what, name);
	*ret = json_is_true(j);
	return 0;
}

/* obj.name as base64 bytes of at most max: a new NUL-terminated buffer;
 * empty when absent. */
static int get_bytes(json_t *obj, const char *name, size_t max, char **ret, size_t *ret_len,
		     const char *what, struct nt_err *err)
{
	json_t *j = json_object_get(obj, name);
	size_t n = json_string_length(j);
	int r;

	if (!j)
		return (*ret = calloc(1, 1)) ? (*ret_len = 0, 0) : err_set(err, -ENOMEM, "out of memory");
	if (!json_is_string(j))
		return err_set(err, -EINVAL, "%s: %s is not a string", what, name);
	if (n > base64_encoded_len(max))
		return err_set(err, -EINVAL, "%s: %s is longer than %zu bytes", what, name, max);
	r = base64_decode(json_string_value(j), n, ret, ret_len);
	if (r == -ENOMEM)
		return err_set(err, r, "out of memory");
	if (r < 0)
		return err_set(err, r, "%s: %s is not base64", what, name);
	return 0;
}

/* The object in buf (a whole JSON document), or NULL with err filled. */
static json_t *load_object(const char *buf, size_t len, const char *what, struct nt_err *err)
{
	json_error_t je;
	json_t *root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &je);

	if (!root) {
		err_set(err, -EINVAL, "%s: bad JSON at %d:%d: %s", what, je.line, je.column, textbuf_printable(je.text));
		return NULL;
	}
	if (!json_is_object(root)) {
		json_decref(root);
		err_set(err, -EINVAL, "%s: not a JSON object", what);
		return NULL;
	}
	return root;
}

/* Load the response object in buf and its header.revision (0 when
 * absent).  Returns 0 with *ret_root (the caller drops it), or -EINVAL /
 * -ENOMEM with nothing to drop. */
static int load_response(const char *buf, size_t len, const char *what, json_t **ret_root,
			 int64_t *ret_revision, struct nt_err *err)
{
	struct nt_err local = { 0 };
	json_t *root = load_object(buf, len, what, err ? err : &local), *h;
	int rc;

	if (!root)
		return err ? err->code : local.code;
	h = json_object_get(root, "result");     /* a stream's message */
	h = json_object_get(json_is_object(h) ? h : root, "header");
	if (!h && json_object_get(root, "error"))
		rc = etcd_parse_error(buf, len, err);
	else if (!json_is_object(h))
		rc = err_set(err, -EINVAL, "%s: no header", what);
	else
		rc = get_i64(h, "revision", 0, ret_revision, what, err);
	if (rc < 0) {
		json_decref(root);
		return rc;
	}
	*ret_root = root;
	return 0;
}

/* ==== 2. the response parsers ============================================= */

static void kv_free(struct etcd_kv *kv)
{
	free(kv->key);
	free(kv->value);
	memset(kv, 0, sizeof(*kv));
}

void etcd_range_free(struct etcd_range *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->n_kvs; i++)
		kv_free(&r->kvs[i]);
	free(r->kvs);
	memset(r, 0, sizeof(*r));
}

/* One {"key", "value", "create_revision", ...} object into *kv (zeroed on
 * error); messages name the key once it is known. */
static int parse_kv(json_t *j, struct etcd_kv *kv, struct nt_err *err)
{
	size_t key_len = 0;
	char shown[128], what[160];
	int r;

	memset(kv, 0, sizeof(*kv));
	if (!json_is_object(j))
		return err_set(err, -EINVAL, "key-value: not an object");
	if (!json_object_get(j, "key"))
		return err_set(err, -EINVAL, "key-value: no key");
	r = get_bytes(j, "key", ETCD_KEY_MAX, &kv->key, &key_len, "key-value", err);
	if (r < 0)
		return r;
	printable(kv->key, key_len, shown, sizeof(shown));
	snprintf(what, sizeof(what), "key '%s'", shown);
	if (strlen(kv->key) != key_len)
		r = err_set(err, -EINVAL, "%s: holds a NUL byte", what);
	if (r >= 0)
		r = get_bytes(j, "value", ETCD_VALUE_MAX, &kv->value, &kv->value_len, what, err);
	if (r >= 0)
		r = get_i64(j, "create_revision", 0, &kv->create_revision, what, err);
	if (r >= 0)
		r = get_i64(j, "mod_revision", 0, &kv->mod_revision, what, err);
	if (r >= 0)
		r = get_i64(j, "version", 0, &kv->version, what, err);
	if (r >= 0)
		r = get_i64(j, "lease", 0, &kv->lease, what, err);
	if (r < 0)
		kv_free(kv);
	return r;
}

/* Append the objects of the "kvs" array of obj (absent: none) to r. */
static int append_kvs(json_t *obj, struct etcd_range *r, struct nt_err *err)
{
	json_t *arr = json_object_get(obj, "kvs");
	size_t n = json_array_size(arr);
	struct etcd_kv *grown;

	if (!arr)
		return 0;
	if (!json_is_array(arr))
		return err_set(err, -EINVAL, "range: kvs is not an array");
	if (n > ETCD_KVS_MAX - r->n_kvs)
		return err_set(err, -EINVAL, "range: more than %d key-values", ETCD_KVS_MAX);
	if (n == 0)
		return 0;
	grown = realloc(r->kvs, (r->n_kvs + n) * sizeof(*grown));
	if (!grown)
		return err_set(err, -ENOMEM, "out of memory");
	r->kvs = grown;
	for (size_t i = 0; i < n; i++) {
		int rc = parse_kv(json_array_get(arr, i), &r->kvs[r->n_kvs], err);

		if (rc < 0)
			return rc;
		r->n_kvs++;
	}
	return 0;
}

int etcd_parse_range_response(const char *buf, size_t len, struct etcd_range *ret,
			      struct nt_err *err)
{
	struct etcd_range r = { 0 };
	json_t *root;
	int rc = load_response(buf, len, "range", &root, &r.revision, err);

	if (rc < 0)
		return rc;
	rc = append_kvs(root, &r, err);
	json_decref(root);
	if (rc < 0) {
		etcd_range_free(&r);
		return rc;
	}
	*ret = r;
	return 0;
}

int etcd_parse_write_response(const char *buf, size_t len, int64_t *ret_revision,
			      int64_t *ret_deleted, struct nt_err *err)
{
	int64_t rev = 0, deleted = 0;
	json_t *root;
	int rc = load_response(buf, len, "write", &root, &rev, err);

	if (rc < 0)
		return rc;
	rc = get_i64(root, "deleted", 0, &deleted, "write", err);
	json_decref(root);
	if (rc < 0)
		return rc;
	if (ret_revision)
		*ret_revision = rev;
	if (ret_deleted)
		*ret_deleted = deleted;
	return 0;
}

void etcd_txn_result_free(struct etcd_txn_result *r)
{
	if (!r)
		return;
	etcd_range_free(&r->get);
	memset(r, 0, sizeof(*r));
}

/* The "responses" of a txn: the kvs of each response_range into r->get;
 * response_put and response_delete_range carry nothing we keep. */
static int parse_txn_responses(json_t *root, struct etcd_txn_result *r, struct nt_err *err)
{
	json_t *arr = json_object_get(root, "responses"), *op;
	size_t i;

	if (arr && !json_is_array(arr))
		return err_set(err, -EINVAL, "txn: responses is not an array");
	json_array_foreach(arr, i, op) {
		json_t *range = json_object_get(op, "response_range");
		int rc;

		if (!json_is_object(op) || json_object_size(op) != 1)
			return err_set(err, -EINVAL, "txn: response %zu is not one operation", i);
		if (!range) {
			if (!json_is_object(json_object_get(op, "response_put")) &&
			    !json_is_object(json_object_get(op, "response_delete_range")))
				return err_set(err, -EINVAL, "txn: response %zu of an unknown kind", i);
			continue;
		}
		if (!json_is_object(range))
			return err_set(err, -EINVAL, "txn: response %zu is not an object", i);
		rc = append_kvs(range, &r->get, err);
		if (rc < 0)
			return rc;
	}
	return 0;
}

int etcd_parse_txn_response(const char *buf, size_t len, struct etcd_txn_result *ret,
			    struct nt_err *err)
{
	struct etcd_txn_result r = { 0 };
	json_t *root;
	int rc = load_response(buf, len, "txn", &root, &r.revision, err);

	if (rc < 0)
		return rc;
	rc = get_bool(root, "succeeded", &r.succeeded, "txn", err);
	if (rc >= 0)
		rc = parse_txn_responses(root, &r, err);
	json_decref(root);
	if (rc < 0) {
		etcd_txn_result_free(&r);
		return rc;
	}
	*ret = r;
	return 0;
}

/* gRPC status codes (google.golang.org/grpc/codes) and what they mean here */
static const struct {
	int grpc_code;
	int errno_code;
} grpc_errno[] = {
	{ 3, -EINVAL },     /* INVALID_ARGUMENT */
	{ 4, -ETIMEDOUT },  /* DEADLINE_EXCEEDED */
	{ 5, -ENOENT },     /* NOT_FOUND: no such lease */
	{ 7, -EACCES },     /* PERMISSION_DENIED: the user's roles do not allow it */
	{ 9, -ECANCELED },  /* FAILED_PRECONDITION */
	{ 11, -ESTALE },    /* OUT_OF_RANGE: revision compacted */
	{ 14, -EAGAIN },    /* UNAVAILABLE: no leader, stopping */
	{ 16, -EKEYEXPIRED }, /* UNAUTHENTICATED: the token is invalid or expired */
};

/* Messages that say more than their code (etcd 3.4's auth errors) */
static const struct {
	const char *text;
	int errno_code;
} message_errno[] = {
	{ "invalid auth token", -EKEYEXPIRED },          /* log in again */
	{ "revision of auth store is old", -EKEYEXPIRED },
	{ "user name is empty", -EACCES },               /* auth is on and no login was given */
	{ "authentication failed", -EACCES },            /* a wrong user or password */
	{ "permission denied", -EACCES },
};

/* The errno a message says more precisely than its code (message_errno),
 * else dflt. */
static int errno_of_message(const char *msg, int dflt)
{
	for (size_t i = 0; i < sizeof(message_errno) / sizeof(message_errno[0]); i++)
		if (strstr(msg, message_errno[i].text))
			dflt = message_errno[i].errno_code;
	return dflt;
}

/* An error object's code and message as a negative errno in err. */
static int error_from(json_t *obj, const char *code_name, struct nt_err *err)
{
	json_t *code = json_object_get(obj, code_name);
	json_t *msg = json_object_get(obj, "message");
	char shown[256];
	int rc = -EPROTO;

	if (!json_is_integer(code) || !json_is_string(msg))
		return err_set(err, -EPROTO, "etcd: an error without code and message");
	for (size_t i = 0; i < sizeof(grpc_errno) / sizeof(grpc_errno[0]); i++)
		if (grpc_errno[i].grpc_code == json_integer_value(code))
			rc = grpc_errno[i].errno_code;
	rc = errno_of_message(json_string_value(msg), rc);
	printable(json_string_value(msg), json_string_length(msg), shown, sizeof(shown));
	return err_set(err, rc, "etcd: %s (gRPC code %" JSON_INTEGER_FORMAT ")", shown,
		       json_integer_value(code));
}

int etcd_parse_error(const char *buf, size_t len, struct nt_err *err)
{
	json_t *root = load_object(buf, len, "error", NULL);
	json_t *inner;
	int rc;

	if (!root)
		return err_set(err, -EPROTO, "etcd: an answer that is not JSON");
	inner = json_object_get(root, "error");
	if (json_is_object(inner))      /* inside a stream */
		rc = error_from(inner, "grpc_code", err);
	else
		rc = error_from(root, "code", err);
	json_decref(root);
	return rc;
}

int etcd_parse_lease_response(const char *buf, size_t len, int64_t *ret_id, int64_t *ret_ttl,
			      struct nt_err *err)
{
	int64_t id = 0, ttl = 0, rev;
	json_t *root, *obj;
	int rc = load_response(buf, len, "lease", &root, &rev, err);

	if (rc < 0)
		return rc;
	obj = json_object_get(root, "result");
	obj = json_is_object(obj) ? obj : root;
	rc = get_i64(obj, "ID", 0, &id, "lease", err);
	if (rc >= 0)
		rc = get_i64(obj, "TTL", INT64_MIN, &ttl, "lease", err);
	if (rc >= 0 && ret_id)
		*ret_id = id;
	if (rc >= 0 && ret_ttl)
		*ret_ttl = ttl;
	json_decref(root);
	return rc;
}

void etcd_events_free(struct etcd_events *ev)
{
	if (!ev)
		return;
	for (size_t i = 0; i < ev->n_events; i++)
		kv_free(&ev->events[i].kv);
	free(ev->events);
	memset(ev, 0, sizeof(*ev));
}

/* One {"type", "kv"} event; type absent: PUT (the enum's zero value). */
static int parse_event(json_t *j, struct etcd_event *ev, struct nt_err *err)
{
	json_t *type = json_object_get(j, "type");

	if (!json_is_object(j))
		return err_set(err, -EINVAL, "watch: an event is not an object");
	if (!type || (json_is_string(type) && !strcmp(json_string_value(type), "PUT")))
		ev->type = ETCD_EVENT_PUT;
	else if (json_is_string(type) && !strcmp(json_string_value(type), "DELETE"))
		ev->type = ETCD_EVENT_DELETE;
	else
		return err_set(err, -EINVAL, "watch: an event of an unknown type");
	return parse_kv(json_object_get(j, "kv"), &ev->kv, err);
}

/* The "events" array of a watch result into ev. */
static int parse_events(json_t *result, struct etcd_events *ev, struct nt_err *err)
{
	json_t *arr = json_object_get(result, "events");
	size_t n = json_array_size(arr);

	if (!arr)
		return 0;
	if (!json_is_array(arr))
		return err_set(err, -EINVAL, "watch: events is not an array");
	if (n > ETCD_KVS_MAX)
		return err_set(err, -EINVAL, "watch: more than %d events", ETCD_KVS_MAX);
	if (n == 0)
		return 0;
	ev->events = calloc(n, sizeof(*ev->events));
	if (!ev->events)
		return err_set(err, -ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		int rc = parse_event(json_array_get(arr, i), &ev->events[i], err);

		if (rc < 0)
			return rc;
		ev->n_events++;
	}
	return 0;
}

/* A watch result that was canceled: compacted (-ESTALE), the token
 * refused (-EKEYEXPIRED: expired, or older than the users and roles; the
 * caller logs in again), not permitted (-EACCES), or otherwise
 * (-ECANCELED).  etcd says the first two only in cancel_reason, with
 * status 200. */
static int watch_canceled(json_t *result, struct nt_err *err)
{
	json_t *reason = json_object_get(result, "cancel_reason");
	int64_t compact = 0;
	char shown[256] = "";

	if (get_i64(result, "compact_revision", 0, &compact, "watch", err) < 0)
		return -EINVAL;
	if (compact > 0)
		return err_set(err, -ESTALE, "watch: revisions before %" PRId64 " were compacted",
			       compact);
	if (json_is_string(reason))
		printable(json_string_value(reason), json_string_length(reason), shown,
			  sizeof(shown));
	return err_set(err, errno_of_message(shown, -ECANCELED), "watch: canceled by the server: %s", shown);
}

int etcd_parse_watch_message(const char *buf, size_t len, struct etcd_events *ret,
			     struct nt_err *err)
{
	struct etcd_events ev = { 0 };
	json_t *root, *result;
	bool canceled = false;
	int rc = load_response(buf, len, "watch", &root, &ev.revision, err);

	if (rc < 0)
		return rc;
	result = json_object_get(root, "result");
	if (!json_is_object(result))
		rc = err_set(err, -EINVAL, "watch: no result object");
	if (rc >= 0)
		rc = get_bool(result, "canceled", &canceled, "watch", err);
	if (rc >= 0 && canceled)
		rc = watch_canceled(result, err);
	if (rc >= 0)
		rc = parse_events(result, &ev, err);
	json_decref(root);
	if (rc < 0) {
		etcd_events_free(&ev);
		return rc;
	}
	*ret = ev;
	return 0;
}

/* Feed the complete lines of buf[0..len) to the message parser until one
 * has events or fails.  Returns 1 (found: *ret filled), 0 (none yet; the
 * first *ret_used bytes were consumed) or a negative errno. */
static int watch_scan(const char *buf, size_t len, size_t *ret_used, struct etcd_events *ret,
		      struct nt_err *err)
{
	size_t pos = 0;

	for (;;) {
		const char *nl = memchr(buf + pos, '\n', len - pos);
		size_t end = nl ? (size_t)(nl - buf) : len;
		struct etcd_events ev;
		int rc;

		if (!nl) {
			*ret_used = pos;
			return 0;
		}
		if (end > pos) {
			rc = etcd_parse_watch_message(buf + pos, end - pos, &ev, err);
			if (rc < 0)
				return rc;
			if (ev.n_events) {
				*ret = ev;
				return 1;
			}
			etcd_events_free(&ev);
		}
		pos = end + 1;
	}
}

int etcd_parse_watch_stream(const char *buf, size_t len, struct etcd_events *ret,
			    struct nt_err *err)
{
	struct etcd_events last = { 0 };
	size_t used = 0;
	int rc = watch_scan(buf, len, &used, ret, err);

	if (rc != 0)
		return rc < 0 ? rc : 0;
	if (used < len) {       /* a last message without its newline */
		rc = etcd_parse_watch_message(buf + used, len - used, &last, err);
		if (rc < 0)
			return rc;
	}
	*ret = last;
	return 0;
}

/* ==== 3. building requests ================================================ */

/* key must be a string of at most ETCD_KEY_MAX bytes */
static int check_key(const char *key, struct nt_err *err)
{
	if (!key)
		return err_set(err, -EINVAL, "etcd: no key");
	if (strlen(key) > ETCD_KEY_MAX)
		return err_set(err, -EINVAL, "etcd: a key longer than %d bytes", ETCD_KEY_MAX);
	return 0;
}

/* obj.name = base64 of data[0..len) */
static int set_b64(json_t *obj, const char *name, const void *data, size_t len)
{
	char *b = base64_encode_alloc(data, len);
	int rc;

	if (!b)
		return -ENOMEM;
	rc = json_object_set_new(obj, name, json_string(b)) ? -ENOMEM : 0;
	free(b);
	return rc;
}

/* obj.name = the decimal string of v (int64s are strings in the gateway) */
static int set_i64(json_t *obj, const char *name, int64_t v)
{
	char num[24];

	snprintf(num, sizeof(num), "%" PRId64, v);
	return json_object_set_new(obj, name, json_string(num)) ? -ENOMEM : 0;
}

/* obj.key (and, for a prefix, obj.range_end: the prefix with its last byte
 * below 0xff incremented and what follows it dropped; "\0", every key from
 * key on, when there is no such byte) */
static int set_range(json_t *obj, const char *key, bool prefix)
{
	size_t n = strlen(key);
	char *end;
	int rc;

	rc = set_b64(obj, "key", key, n);
	if (rc < 0 || !prefix)
		return rc;
	while (n > 0 && (unsigned char)key[n - 1] == 0xff)
		n--;
	if (n == 0)
		return set_b64(obj, "range_end", "", 1);
	end = strndup(key, n);
	if (!end)
		return -ENOMEM;
	end[n - 1] = (char)((unsigned char)end[n - 1] + 1);
	rc = set_b64(obj, "range_end", end, n);
	free(end);
	return rc;
}

/* the compare targets: the gateway's enum name and the field it compares */
static const struct {
	const char *target, *field;
} cmp_fields[] = {
	[ETCD_CMP_MOD] = { "MOD", "mod_revision" },
	[ETCD_CMP_VERSION] = { "VERSION", "version" },
	[ETCD_CMP_CREATE] = { "CREATE", "create_revision" },
	[ETCD_CMP_VALUE] = { "VALUE", "value" },
};

static json_t *build_compare(const struct etcd_compare *c)
{
	json_t *j = json_object();
	int rc;

	if (!j || (unsigned)c->target >= sizeof(cmp_fields) / sizeof(cmp_fields[0]))
		goto out_free;
	rc = json_object_set_new(j, "target", json_string(cmp_fields[c->target].target)) ? -ENOMEM : 0;
	if (rc >= 0)
		rc = set_b64(j, "key", c->key, strlen(c->key));
	if (rc >= 0 && c->target == ETCD_CMP_VALUE)
		rc = set_b64(j, "value", c->value, c->value_len);
	else if (rc >= 0)
		rc = set_i64(j, cmp_fields[c->target].field, c->number);
	if (rc >= 0)
		return j;
out_free:
	json_decref(j);
	return NULL;
}

/* {"request_put": {...}}, {"request_delete_range": {...}} or
 * {"request_range": {...}} */
static json_t *build_op(const struct etcd_op *op)
{
	static const char *const kinds[] = {
		[ETCD_OP_PUT] = "request_put",
		[ETCD_OP_DELETE] = "request_delete_range",
		[ETCD_OP_GET] = "request_range",
	};
	json_t *wrap = json_object(), *req = json_object();
	int rc = (wrap && req) ? 0 : -ENOMEM;

	if (rc >= 0 && (unsigned)op->type >= sizeof(kinds) / sizeof(kinds[0]))
		rc = -EINVAL;
	if (rc >= 0)
		rc = set_range(req, op->key, op->type != ETCD_OP_PUT && op->prefix);
	if (rc >= 0 && op->type == ETCD_OP_PUT)
		rc = set_b64(req, "value", op->value, op->value_len);
	if (rc >= 0 && op->type == ETCD_OP_PUT && op->lease)
		rc = set_i64(req, "lease", op->lease);
	if (rc >= 0 && !json_object_set(wrap, kinds[op->type], req)) {
		json_decref(req);
		return wrap;
	}
	json_decref(req);
	json_decref(wrap);
	return NULL;
}

/* {"compare": [...], "success": [...], "failure": [...]} */
static json_t *build_txn(const struct etcd_compare *cmp, size_t n_cmp,
			 const struct etcd_op *success, size_t n_success,
			 const struct etcd_op *failure, size_t n_failure)
{
	json_t *req = json_object(), *c = json_array(), *s = json_array(), *f = json_array();
	bool ok = req && c && s && f;

	for (size_t i = 0; ok && i < n_cmp; i++)
		ok = !json_array_append_new(c, build_compare(&cmp[i]));
	for (size_t i = 0; ok && i < n_success; i++)
		ok = !json_array_append_new(s, build_op(&success[i]));
	for (size_t i = 0; ok && i < n_failure; i++)
		ok = !json_array_append_new(f, build_op(&failure[i]));
	ok = ok && !json_object_set(req, "compare", c) && !json_object_set(req, "success", s) &&
	     !json_object_set(req, "failure", f);
	json_decref(c);
	json_decref(s);
	json_decref(f);
	if (!ok) {
		json_decref(req);
		return NULL;
	}
	return req;
}

/* ==== 4. transport ======================================================== */

struct etcd {
	CURL *curl;
	struct curl_slist *headers;     /* Content-Type, Expect, and Authorization with a token */
	char *endpoints[ETCD_ENDPOINTS_MAX];
	size_t n_endpoints;
	size_t current;                 /* the one that answered last */
	long timeout_ms;
	char errbuf[CURL_ERROR_SIZE];   /* libcurl's detail of the last failure (a TLS one) */
	char *user, *password;          /* token auth: NULL none */
	char *token;                    /* the last token; NULL: log in first */
	bool in_login;
	bool plaintext_ok;              /* a login may go to an http:// endpoint */
	const atomic_bool *cancel;      /* etcd_set_cancel's; NULL: none */
};

/* A response body, bounded. */
struct http_buf {
	char *data;
	size_t len, cap;
	bool overflow;
};

static size_t http_buf_write(char *p, size_t size, size_t n, void *ctx)
{
	struct http_buf *b = ctx;
	size_t add = size * n;

	if (add > ETCD_RESPONSE_MAX - b->len) {
		b->overflow = true;
		return 0;
	}
	if (b->len + add > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		char *grown;

		while (cap < b->len + add)
			cap *= 2;
		grown = realloc(b->data, cap);
		if (!grown)
			return 0;
		b->data = grown;
		b->cap = cap;
	}
	memcpy(b->data + b->len, p, add);
	b->len += add;
	return add;
}

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc;

static void curl_init(void)
{
	curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

/* Forget a secret: zeroed, then freed. */
static void secret_free(char *s)
{
	if (s) {
		explicit_bzero(s, strlen(s));
		free(s);
	}
}

/* Free a header list, each line zeroed first (one holds the token). */
static void headers_free(struct curl_slist *h)
{
	for (struct curl_slist *l = h; l; l = l->next)
		explicit_bzero(l->data, strlen(l->data));
	curl_slist_free_all(h);
}

/* Zero the string field name of JSON object obj in place (a password
 * in a request), before the object is freed: jansson frees without
 * zeroing. */
static void json_forget(json_t *obj, const char *name)
{
	json_t *j = json_object_get(obj, name);

	if (json_is_string(j))
		explicit_bzero((char *)json_string_value(j), json_string_length(j));
}

/* The request headers, with "Authorization: TOKEN" when token is not
 * NULL.  0 or -ENOMEM (the old headers kept). */
static int set_headers(struct etcd *e, const char *token)
{
	struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json"), *more;
	char auth[4096];

	if (h && (more = curl_slist_append(h, "Expect:")))
		h = more;
	else {
		curl_slist_free_all(h);
		return -ENOMEM;
	}
	if (token) {
		snprintf(auth, sizeof(auth), "Authorization: %s", token);
		more = curl_slist_append(h, auth);
		explicit_bzero(auth, sizeof(auth));
		if (!more) {
			headers_free(h);
			return -ENOMEM;
		}
	}
	headers_free(e->headers);
	e->headers = h;
	return 0;
}

/* Split the comma-separated list into e->endpoints. */
static int add_endpoints(struct etcd *e, const char *list, struct nt_err *err)
{
	const char *p = list;

	while (*p) {
		size_t n = strcspn(p, ",");

		if (n == 0 || (strncmp(p, "http://", 7) && strncmp(p, "https://", 8)))
			return err_set(err, -EINVAL, "etcd: endpoint '%.*s' is not an http:// or https:// URL",
				       (int)(n > 200 ? 200 : n), p);
		if (e->n_endpoints == ETCD_ENDPOINTS_MAX)
			return err_set(err, -EINVAL, "etcd: more than %d endpoints",
				       ETCD_ENDPOINTS_MAX);
		while (n > 0 && p[n - 1] == '/')
			n--;
		e->endpoints[e->n_endpoints] = strndup(p, n);
		if (!e->endpoints[e->n_endpoints++])
			return err_set(err, -ENOMEM, "out of memory");
		p += strcspn(p, ",");
		p += *p == ',';
	}
	if (e->n_endpoints == 0)
		return err_set(err, -EINVAL, "etcd: no endpoint");
	return 0;
}

/* libcurl's sockets, made close-on-exec at birth (libcurl before 8.11
 * never sets FD_CLOEXEC): a process the daemon forks and execs (the gate's
 * ab) never inherits the store's connections, even when another thread
 * forks while this one connects. */
static curl_socket_t open_socket_cloexec(void *arg, curlsocktype purpose, struct curl_sockaddr *a)
{
	int fd = socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);

	(void)arg, (void)purpose;
	return fd < 0 ? CURL_SOCKET_BAD : fd;
}

struct etcd *etcd_open(const char *endpoints, struct nt_err *err)
{
	struct etcd *e;

	if (!endpoints) {
		err_set(err, -EINVAL, "etcd: no endpoint");
		return NULL;
	}
	pthread_once(&curl_once, curl_init);
	if (curl_init_rc != CURLE_OK) {
		err_set(err, -ENOMEM, "etcd: libcurl: %s", curl_easy_strerror(curl_init_rc));
		return NULL;
	}
	e = calloc(1, sizeof(*e));
	if (!e) {
		err_set(err, -ENOMEM, "out of memory");
		return NULL;
	}
	e->timeout_ms = ETCD_TIMEOUT_MS;
	if (add_endpoints(e, endpoints, err) < 0)
		goto out_close;
	e->curl = curl_easy_init();
	if (e->curl)
		curl_easy_setopt(e->curl, CURLOPT_OPENSOCKETFUNCTION, open_socket_cloexec);
	if (!e->curl || set_headers(e, NULL) < 0) {
		err_set(err, -ENOMEM, "etcd: cannot set up libcurl");
		goto out_close;
	}
	return e;
out_close:
	etcd_close(e);
	return NULL;
}

void etcd_close(struct etcd *e)
{
	if (!e)
		return;
	if (e->curl)
		curl_easy_cleanup(e->curl);
	headers_free(e->headers);
	for (size_t i = 0; i < e->n_endpoints; i++)
		free(e->endpoints[i]);
	free(e->user);
	secret_free(e->password);
	secret_free(e->token);
	free(e);
}

void etcd_set_timeout(struct etcd *e, long timeout_ms)
{
	if (timeout_ms > 0)
		e->timeout_ms = timeout_ms;
}

void etcd_spread(struct etcd *e, unsigned long seed)
{
	e->current = seed % e->n_endpoints;
}

/* One POST of body to endpoint idx + path, the answer to write(ctx).
 * Returns libcurl's code and sets *ret_status to the HTTP status. */
/* libcurl's progress callback (about once a second, and as bytes move):
 * non-zero stops the transfer once etcd_set_cancel's flag is set. */
static int cancel_check(void *ctx, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow)
{
	const struct etcd *e = ctx;

	(void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
	return e->cancel && atomic_load(e->cancel);
}

void etcd_set_cancel(struct etcd *e, const atomic_bool *flag)
{
	e->cancel = flag;
}

static CURLcode http_post(struct etcd *e, size_t idx, const char *path, const char *body,
			  long timeout_ms, curl_write_callback write, void *ctx, long *ret_status)
{
	char url[1024];
	CURL *c = e->curl;
	CURLcode rc;

	snprintf(url, sizeof(url), "%s%s", e->endpoints[idx], path);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, e->headers);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms < 2000 ? timeout_ms : 2000L);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, write);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, ctx);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, e->errbuf);
	if (e->cancel) {
		curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, cancel_check);
		curl_easy_setopt(c, CURLOPT_XFERINFODATA, e);
		curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
	}
	e->errbuf[0] = '\0';
	*ret_status = 0;
	rc = curl_easy_perform(c);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, ret_status);
	return rc;
}

/* Did the request fail on the way, so that another member may answer? */
static bool transport_failed(CURLcode rc)
{
	return rc == CURLE_COULDNT_CONNECT || rc == CURLE_OPERATION_TIMEDOUT ||
	       rc == CURLE_GOT_NOTHING || rc == CURLE_RECV_ERROR || rc == CURLE_SEND_ERROR ||
	       rc == CURLE_COULDNT_RESOLVE_HOST || rc == CURLE_PARTIAL_FILE;
}

/* Did TLS refuse the peer or our own certificate? */
static bool tls_failed(CURLcode rc)
{
	return rc == CURLE_PEER_FAILED_VERIFICATION || rc == CURLE_SSL_CACERT_BADFILE ||
	       rc == CURLE_SSL_CERTPROBLEM || rc == CURLE_SSL_CONNECT_ERROR || rc == CURLE_SSL_ISSUER_ERROR ||
	       rc == CURLE_SSL_CIPHER || rc == CURLE_SSL_ENGINE_NOTFOUND || rc == CURLE_SSL_CRL_BADFILE ||
	       rc == CURLE_USE_SSL_FAILED;
}

/* Did a send or receive fail on a TLS alert about our certificate (a
 * member that requires a client certificate refuses one missing or of
 * another CA after the handshake, under TLS 1.3: libcurl then says
 * "SSL_read: ... alert certificate required", "alert unknown ca", "alert
 * bad certificate")?  That is a refusal, not a member out of reach. */
static bool tls_alert(CURLcode rc, const char *errbuf)
{
	return (rc == CURLE_RECV_ERROR || rc == CURLE_SEND_ERROR) && strstr(errbuf, "alert") &&
	       (strstr(errbuf, "certificate") || strstr(errbuf, "unknown ca"));
}

static int curl_errno(CURLcode rc)
{
	switch (rc) {
	case CURLE_OPERATION_TIMEDOUT: return -ETIMEDOUT;
	case CURLE_COULDNT_CONNECT: return -ECONNREFUSED;
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR: return -ECONNRESET;   /* connected, then cut off */
	default: return -EHOSTUNREACH;
	}
}

/* req as compact JSON text in one buffer of its exact size (a new string,
 * freed with body_free), or NULL.  json_dumps would grow its buffer by
 * copies freed unzeroed; a login's body holds the password. */
static char *body_dump(const json_t *req)
{
	size_t n = json_dumpb(req, NULL, 0, JSON_COMPACT);
	char *body = n ? malloc(n + 1) : NULL;

	if (body && json_dumpb(req, body, n, JSON_COMPACT) != n) {
		free(body);
		return NULL;
	}
	if (body)
		body[n] = '\0';
	return body;
}

/* POST req to path, trying each endpoint from the last good one.  Returns
 * 0 with the 200 answer in *resp (the caller frees resp->data), or a
 * negative errno: the error etcd answered, or the last transport failure.
 * The request's text is zeroed before it is freed. */
static int call_endpoints(struct etcd *e, const char *path, json_t *req, struct http_buf *resp,
			  struct nt_err *err)
{
	char *body = body_dump(req);
	int rc = err_set(err, -EHOSTUNREACH, "etcd: no endpoint answered");

	if (!body)
		return err_set(err, -ENOMEM, "out of memory");
	for (size_t k = 0; k < e->n_endpoints; k++) {
		size_t idx = (e->current + k) % e->n_endpoints;
		long status;
		CURLcode cc;

		free(resp->data);
		memset(resp, 0, sizeof(*resp));
		cc = http_post(e, idx, path, body, e->timeout_ms, http_buf_write, resp, &status);
		if (resp->overflow) {
			rc = err_set(err, -EMSGSIZE, "etcd %s: %s: an answer over %u bytes",
				     e->endpoints[idx], path, ETCD_RESPONSE_MAX);
			break;
		}
		if (transport_failed(cc) && !tls_alert(cc, e->errbuf)) {
			rc = err_set(err, curl_errno(cc), "etcd %s: %s: %s", e->endpoints[idx], path,
				     curl_easy_strerror(cc));
			continue;
		}
		if (tls_failed(cc) || tls_alert(cc, e->errbuf)) {
			rc = err_set(err, -EACCES, "etcd %s: TLS: %s", e->endpoints[idx],
				     e->errbuf[0] ? e->errbuf : curl_easy_strerror(cc));
			break;
		}
		if (cc != CURLE_OK) {
			rc = err_set(err, -EPROTO, "etcd %s: %s: %s", e->endpoints[idx], path,
				     curl_easy_strerror(cc));
			break;
		}
		if (status == 200) {
			e->current = idx;
			secret_free(body);
			return 0;
		}
		rc = etcd_parse_error(resp->data ? resp->data : "", resp->len, err);
		if (rc == -EPROTO)
			rc = err_set(err, -EPROTO, "etcd %s: %s: HTTP status %ld", e->endpoints[idx],
				     path, status);
		if (rc == -EACCES && err) {     /* say where */
			char msg[sizeof(err->msg)];

			snprintf(msg, sizeof(msg), "%s", err->msg);
			rc = err_set(err, -EACCES, "etcd %s: %s: %s", e->endpoints[idx], path, msg);
		}
		if (rc != -EAGAIN && status != 503)
			break;
	}
	secret_free(body);
	free(resp->data);
	memset(resp, 0, sizeof(*resp));
	return rc;
}

/* ==== 5. authentication ==================================================== */

/* Log in: POST /v3/auth/authenticate {name, password} -> token, sent from
 * then on as the Authorization header.  0, or -EACCES (refused: err names
 * the endpoint and the user), or the transport's errno. */
static int login(struct etcd *e, struct nt_err *err)
{
	json_t *req = json_pack("{s:s, s:s}", "name", e->user, "password", e->password), *root, *tok;
	struct http_buf resp = { 0 };
	long timeout = e->timeout_ms;
	int rc;

	if (!req)
		return err_set(err, -ENOMEM, "out of memory");
	secret_free(e->token);
	e->token = NULL;
	set_headers(e, NULL);
	/* etcd checks the password with bcrypt: a login costs the member tens of
	 * ms of CPU, so many hosts logging in at once need more than a short
	 * request timeout, or they time out and log in again, a storm */
	e->timeout_ms = timeout > ETCD_LOGIN_TIMEOUT_MS ? timeout : ETCD_LOGIN_TIMEOUT_MS;
	rc = call_endpoints(e, "/v3/auth/authenticate", req, &resp, err);
	e->timeout_ms = timeout;
	json_forget(req, "password");
	json_decref(req);
	if ((rc == -EACCES || rc == -EINVAL || rc == -EKEYEXPIRED) && !strstr(err ? err->msg : "", ": TLS: ")) {
		char why[sizeof(err->msg)];

		snprintf(why, sizeof(why), "%s", err ? err->msg : "");
		return err_set(err, -EACCES, "etcd: login as '%s' refused: %s", e->user, why);
	}
	if (rc < 0)
		return rc;
	root = load_object(resp.data, resp.len, "authenticate", err);
	tok = json_object_get(root, "token");
	if (json_is_string(tok) && json_string_length(tok) > 0 && json_string_length(tok) < 2048 &&
	    !strpbrk(json_string_value(tok), "\r\n"))
		e->token = strdup(json_string_value(tok));
	else
		rc = err_set(err, -EPROTO, "etcd %s: login as '%s': an answer without a token",
			     e->endpoints[e->current], e->user);
	json_decref(root);
	explicit_bzero(resp.data, resp.len);
	free(resp.data);
	if (rc == 0 && (!e->token || set_headers(e, e->token) < 0))
		rc = err_set(err, -ENOMEM, "out of memory");
	return rc;
}

/* POST req to path (call_endpoints), logged in first when a user is set,
 * and once more when etcd says the token is no longer valid. */
static int call(struct etcd *e, const char *path, json_t *req, struct http_buf *resp, struct nt_err *err)
{
	int rc = 0;

	if (e->user && !e->token)
		rc = login(e, err);
	if (rc == 0)
		rc = call_endpoints(e, path, req, resp, err);
	if (rc == -EKEYEXPIRED && e->user) {
		rc = login(e, err);
		if (rc == 0)
			rc = call_endpoints(e, path, req, resp, err);
	}
	if (rc == -EKEYEXPIRED) {
		char why[sizeof(err->msg)];

		snprintf(why, sizeof(why), "%s", err ? err->msg : "");
		rc = err_set(err, -EACCES, "etcd %s: the login token was refused: %s", e->endpoints[e->current], why);
	}
	return rc;
}

int etcd_set_tls(struct etcd *e, const char *cacert, const char *cert, const char *key, struct nt_err *err)
{
	const char *files[] = { cacert, cert, key };
	const char *what[] = { "--cacert", "--cert", "--key" };

	if (!cert != !key)
		return err_set(err, -EINVAL, "etcd: --cert and --key go together");
	for (int i = 0; i < 3; i++)
		if (files[i] && access(files[i], R_OK) < 0)     /* -EACCES is kept for the store's refusals */
			return err_set(err, errno == EACCES ? -EPERM : -errno, "%s %s: %s", what[i], files[i],
				       nt_strerror(errno));
	/* the CA given is the only one: libcurl's default CA directory
	 * (Debian's: /etc/ssl/certs) would be searched as well otherwise */
	if ((cacert && (curl_easy_setopt(e->curl, CURLOPT_CAINFO, cacert) != CURLE_OK ||
			curl_easy_setopt(e->curl, CURLOPT_CAPATH, NULL) != CURLE_OK)) ||
	    (cert && curl_easy_setopt(e->curl, CURLOPT_SSLCERT, cert) != CURLE_OK) ||
	    (key && curl_easy_setopt(e->curl, CURLOPT_SSLKEY, key) != CURLE_OK))
		return err_set(err, -EINVAL, "etcd: libcurl has no TLS support for these files");
	curl_easy_setopt(e->curl, CURLOPT_SSL_VERIFYPEER, 1L);
	curl_easy_setopt(e->curl, CURLOPT_SSL_VERIFYHOST, 2L);
	return 0;
}

void etcd_allow_plaintext_login(struct etcd *e)
{
	e->plaintext_ok = true;
}

/* The first http:// endpoint, or NULL when all are https://. */
static const char *plaintext_endpoint(const struct etcd *e)
{
	for (size_t i = 0; i < e->n_endpoints; i++)
		if (!strncmp(e->endpoints[i], "http://", 7))
			return e->endpoints[i];
	return NULL;
}

int etcd_set_login(struct etcd *e, const char *user, const char *password, struct nt_err *err)
{
	const char *plain = plaintext_endpoint(e);
	char *u, *p;

	if (!user || !*user || strlen(user) > 128 || strpbrk(user, ":\r\n") || !password)
		return err_set(err, -EINVAL, "etcd: --user '%s': a name of 1 to 128 bytes without ':' or a newline",
			       user ? user : "");
	if (plain && !e->plaintext_ok)
		return err_set(err, -EINVAL, "etcd %s: a login over plain http: the password and token would travel "
			       "in clear (use https://, or --insecure-plaintext)", plain);
	u = strdup(user);
	p = strdup(password);
	if (!u || !p) {
		free(u);
		secret_free(p);
		return err_set(err, -ENOMEM, "out of memory");
	}
	free(e->user);
	secret_free(e->password);
	secret_free(e->token);
	e->user = u;
	e->password = p;
	e->token = NULL;
	return set_headers(e, NULL) < 0 ? err_set(err, -ENOMEM, "out of memory") : 0;
}

int etcd_login(struct etcd *e, struct nt_err *err)
{
	return e->user ? login(e, err) : 0;
}

static int call_json(struct etcd *e, const char *path, json_t *req, struct http_buf *resp, struct nt_err *err);

/* POST req (consumed) to an /v3/auth/ administration path; an answer that
 * the role or user exists already is -EEXIST. */
static int auth_admin(struct etcd *e, const char *path, json_t *req, struct nt_err *err)
{
	struct http_buf resp = { 0 };
	int rc = call_json(e, path, req, &resp, err);

	free(resp.data);
	if (rc < 0 && err && strstr(err->msg, "already exists")) {
		char msg[sizeof(err->msg)];

		snprintf(msg, sizeof(msg), "%s", err->msg);
		rc = err_set(err, -EEXIST, "%s", msg);
	}
	return rc;
}

int etcd_role_add(struct etcd *e, const char *role, struct nt_err *err)
{
	return auth_admin(e, "/v3/auth/role/add", json_pack("{s:s}", "name", role), err);
}

int etcd_role_grant(struct etcd *e, const char *role, enum etcd_perm perm, const char *key, bool prefix,
		    struct nt_err *err)
{
	static const char *const types[] = { "READ", "WRITE", "READWRITE" };
	json_t *p = json_pack("{s:s}", "permType", types[perm]);
	int rc = check_key(key, err);

	if (rc < 0) {
		json_decref(p);
		return rc;
	}
	if (!p || set_range(p, key, prefix) < 0) {
		json_decref(p);
		return err_set(err, -ENOMEM, "out of memory");
	}
	return auth_admin(e, "/v3/auth/role/grant", json_pack("{s:s, s:o}", "name", role, "perm", p), err);
}

int etcd_user_add(struct etcd *e, const char *user, const char *password, struct nt_err *err)
{
	json_t *req = json_pack("{s:s, s:s}", "name", user, "password", password);
	int rc;

	if (!req)
		return err_set(err, -ENOMEM, "out of memory");
	json_incref(req);               /* auth_admin consumes one reference */
	rc = auth_admin(e, "/v3/auth/user/add", req, err);
	json_forget(req, "password");
	json_decref(req);
	return rc;
}

int etcd_user_grant(struct etcd *e, const char *user, const char *role, struct nt_err *err)
{
	return auth_admin(e, "/v3/auth/user/grant", json_pack("{s:s, s:s}", "user", user, "role", role), err);
}

int etcd_auth_enable(struct etcd *e, struct nt_err *err)
{
	return auth_admin(e, "/v3/auth/enable", json_object(), err);
}

/* ==== 6. key-values, txn, leases ========================================== */

/* POST req (consumed) to path and hand the answer to the caller's parser. */
static int call_json(struct etcd *e, const char *path, json_t *req, struct http_buf *resp,
		     struct nt_err *err)
{
	int rc;

	if (!req)
		return err_set(err, -ENOMEM, "out of memory");
	rc = call(e, path, req, resp, err);
	json_decref(req);
	return rc;
}

/* POST {"key", "range_end"} to path (range or deleterange) */
static int call_range(struct etcd *e, const char *path, const char *key, bool prefix,
		      struct http_buf *resp, struct nt_err *err)
{
	json_t *req;
	int rc = check_key(key, err);

	if (rc < 0)
		return rc;
	req = json_object();
	if (req && set_range(req, key, prefix) < 0)
		json_decref(req), req = NULL;
	return call_json(e, path, req, resp, err);
}

int etcd_get(struct etcd *e, const char *key, bool prefix, struct etcd_range *ret_range,
	     struct nt_err *err)
{
	struct http_buf resp = { 0 };
	int rc = call_range(e, "/v3/kv/range", key, prefix, &resp, err);

	if (rc < 0)
		return rc;
	rc = etcd_parse_range_response(resp.data, resp.len, ret_range, err);
	free(resp.data);
	return rc;
}

int etcd_put(struct etcd *e, const char *key, const void *value, size_t value_len, int64_t lease,
	     int64_t *ret_revision, struct nt_err *err)
{
	struct etcd_op op = { ETCD_OP_PUT, key, value, value_len, lease, false };
	struct http_buf resp = { 0 };
	json_t *wrap, *req = NULL;
	int rc = check_key(key, err);

	if (rc < 0)
		return rc;
	if (value_len > ETCD_VALUE_MAX)
		return err_set(err, -EINVAL, "etcd: a value over %d bytes", ETCD_VALUE_MAX);
	wrap = build_op(&op);
	if (wrap)
		req = json_incref(json_object_get(wrap, "request_put"));
	json_decref(wrap);
	rc = call_json(e, "/v3/kv/put", req, &resp, err);
	if (rc < 0)
		return rc;
	rc = etcd_parse_write_response(resp.data, resp.len, ret_revision, NULL, err);
	free(resp.data);
	return rc;
}

int etcd_delete(struct etcd *e, const char *key, bool prefix, int64_t *ret_deleted,
		struct nt_err *err)
{
	struct http_buf resp = { 0 };
	int rc = call_range(e, "/v3/kv/deleterange", key, prefix, &resp, err);

	if (rc < 0)
		return rc;
	rc = etcd_parse_write_response(resp.data, resp.len, NULL, ret_deleted, err);
	free(resp.data);
	return rc;
}

/* every key of the compares and ops is a bounded string, every value too */
static int check_txn(const struct etcd_compare *cmp, size_t n_cmp, const struct etcd_op *ops,
		     size_t n_ops, struct nt_err *err)
{
	for (size_t i = 0; i < n_cmp; i++)
		if (check_key(cmp[i].key, err) < 0 ||
		    (cmp[i].target == ETCD_CMP_VALUE && cmp[i].value_len > ETCD_VALUE_MAX))
			return err_set(err, -EINVAL, "etcd: txn: compare %zu is invalid", i);
	for (size_t i = 0; i < n_ops; i++)
		if (check_key(ops[i].key, err) < 0 || ops[i].value_len > ETCD_VALUE_MAX)
			return err_set(err, -EINVAL, "etcd: txn: operation %zu is invalid", i);
	return 0;
}

int etcd_txn(struct etcd *e, const struct etcd_compare *cmp, size_t n_cmp,
	     const struct etcd_op *success, size_t n_success, const struct etcd_op *failure,
	     size_t n_failure, struct etcd_txn_result *ret, struct nt_err *err)
{
	struct http_buf resp = { 0 };
	int rc;

	if (check_txn(cmp, n_cmp, success, n_success, err) < 0 ||
	    check_txn(NULL, 0, failure, n_failure, err) < 0)
		return -EINVAL;
	rc = call_json(e, "/v3/kv/txn", build_txn(cmp, n_cmp, success, n_success, failure, n_failure),
		       &resp, err);
	if (rc < 0)
		return rc;
	rc = etcd_parse_txn_response(resp.data, resp.len, ret, err);
	free(resp.data);
	return rc;
}

int etcd_cas(struct etcd *e, const char *key, int64_t expected_mod_revision, const void *value,
	     size_t value_len, int64_t lease, int64_t *ret_revision, struct nt_err *err)
{
	struct etcd_compare cmp = {
		expected_mod_revision ? ETCD_CMP_MOD : ETCD_CMP_VERSION, key, expected_mod_revision,
		NULL, 0,
	};
	struct etcd_op put = { ETCD_OP_PUT, key, value, value_len, lease, false };
	struct etcd_op get = { ETCD_OP_GET, key, NULL, 0, 0, false };
	struct etcd_txn_result r;
	char shown[128];
	int rc;

	if (expected_mod_revision < 0)
		return err_set(err, -EINVAL, "etcd: cas: a negative revision");
	rc = etcd_txn(e, &cmp, 1, &put, 1, &get, 1, &r, err);
	if (rc < 0)
		return rc;
	if (r.succeeded) {
		if (ret_revision)
			*ret_revision = r.revision;
	} else {
		rc = err_set(err, -ECANCELED, "%s: changed (mod_revision %" PRId64 ", expected %" PRId64
			     ")", printable(key, strlen(key), shown, sizeof(shown)),
			     r.get.n_kvs ? r.get.kvs[0].mod_revision : 0, expected_mod_revision);
	}
	etcd_txn_result_free(&r);
	return rc;
}

/* POST {"ID": id} or {"TTL": ttl} to a lease path; the ID and TTL it answers */
static int lease_call(struct etcd *e, const char *path, const char *field, int64_t v,
		      int64_t *ret_id, int64_t *ret_ttl, struct nt_err *err)
{
	struct http_buf resp = { 0 };
	json_t *req = json_object();
	const char *nl;
	int rc;

	if (req && set_i64(req, field, v) < 0)
		json_decref(req), req = NULL;
	rc = call_json(e, path, req, &resp, err);
	if (rc < 0)
		return rc;
	/* a stream (keepalive) answers one object per line: the first counts */
	nl = memchr(resp.data, '\n', resp.len);
	rc = etcd_parse_lease_response(resp.data, nl ? (size_t)(nl - resp.data) : resp.len, ret_id,
				       ret_ttl, err);
	free(resp.data);
	return rc;
}

int etcd_lease_grant(struct etcd *e, int64_t ttl_s, int64_t *ret_id, struct nt_err *err)
{
	int64_t id = 0;
	int rc;

	if (ttl_s < 1 || ttl_s > 9000000000LL)
		return err_set(err, -EINVAL, "etcd: lease TTL %" PRId64 " s out of range", ttl_s);
	rc = lease_call(e, "/v3/lease/grant", "TTL", ttl_s, &id, NULL, err);
	if (rc < 0)
		return rc;
	if (id <= 0)
		return err_set(err, -EPROTO, "etcd: lease grant: no lease ID in the answer");
	*ret_id = id;
	return 0;
}

int etcd_lease_keepalive(struct etcd *e, int64_t id, int64_t *ret_ttl, struct nt_err *err)
{
	int64_t ttl = 0;
	int rc = lease_call(e, "/v3/lease/keepalive", "ID", id, NULL, &ttl, err);

	if (rc < 0)
		return rc;
	if (ttl <= 0)
		return err_set(err, -ENOENT, "etcd: lease %" PRIx64 " expired", (uint64_t)id);
	if (ret_ttl)
		*ret_ttl = ttl;
	return 0;
}

int etcd_lease_revoke(struct etcd *e, int64_t id, struct nt_err *err)
{
	return lease_call(e, "/v3/lease/revoke", "ID", id, NULL, NULL, err);
}

/* ==== 7. watch ============================================================ */

/* The state of one watch stream, fed by libcurl as bytes arrive. */
struct watch_stream {
	struct http_buf buf;            /* bytes not yet scanned into lines */
	struct etcd_events events;
	int rc;                         /* 1 events found, < 0 error, 0 none yet */
	bool created;                   /* the server answered at all */
	struct nt_err *err;
};

static size_t watch_write(char *p, size_t size, size_t n, void *ctx)
{
	struct watch_stream *w = ctx;
	size_t used = 0, add = http_buf_write(p, size, n, &w->buf);

	if (add != size * n) {
		w->rc = w->buf.overflow ? err_set(w->err, -EMSGSIZE, "etcd: watch: a message over "
						  "%u bytes", ETCD_RESPONSE_MAX)
					: err_set(w->err, -ENOMEM, "out of memory");
		return 0;
	}
	w->created = true;
	w->rc = watch_scan(w->buf.data, w->buf.len, &used, &w->events, w->err);
	if (w->rc != 0)
		return 0;               /* found, or failed: stop the transfer */
	memmove(w->buf.data, w->buf.data + used, w->buf.len - used);
	w->buf.len -= used;
	return add;
}

/* {"create_request": {"key", "range_end", "start_revision"}} */
static char *build_watch(const char *key, bool prefix, int64_t start_revision)
{
	json_t *req = json_object(), *create = json_object();
	char *body = NULL;
	int rc = (req && create) ? 0 : -ENOMEM;

	if (rc >= 0)
		rc = set_range(create, key, prefix);
	if (rc >= 0 && start_revision > 0)
		rc = set_i64(create, "start_revision", start_revision);
	if (rc >= 0 && !json_object_set(req, "create_request", create))
		body = json_dumps(req, JSON_COMPACT);
	json_decref(create);
	json_decref(req);
	return body;
}

/* One watch stream on endpoint idx for up to timeout_ms: 1 events, 0 none
 * before the timeout, -EAGAIN try the next endpoint, or a negative errno. */
static int watch_once(struct etcd *e, size_t idx, const char *body, long timeout_ms,
		      struct etcd_events *ret, struct nt_err *err)
{
	struct watch_stream w = { .err = err };
	long status;
	CURLcode cc = http_post(e, idx, "/v3/watch", body, timeout_ms, watch_write, &w, &status);
	int rc = w.rc;

	if (rc == 1)
		*ret = w.events;
	else if (rc == 0 && cc == CURLE_ABORTED_BY_CALLBACK)
		rc = err_set(err, -ECANCELED, "etcd %s: watch: stopped (etcd_set_cancel)", e->endpoints[idx]);
	else if (rc == 0 && status != 200 && status != 0)
		rc = etcd_parse_error(w.buf.data ? w.buf.data : "", w.buf.len, err);
	else if (rc == 0 && cc == CURLE_OPERATION_TIMEDOUT && w.created)
		rc = 0;                 /* the long poll's normal end */
	else if (rc == 0 && (tls_failed(cc) || tls_alert(cc, e->errbuf)))
		rc = err_set(err, -EACCES, "etcd %s: TLS: %s", e->endpoints[idx],
			     e->errbuf[0] ? e->errbuf : curl_easy_strerror(cc));
	else if (rc == 0 && (transport_failed(cc) || cc == CURLE_OK))
		rc = err_set(err, -EAGAIN, "etcd %s: watch: %s", e->endpoints[idx],
			     cc == CURLE_OK ? "the stream ended" : curl_easy_strerror(cc));
	else if (rc == 0)
		rc = err_set(err, -EPROTO, "etcd %s: watch: %s", e->endpoints[idx],
			     curl_easy_strerror(cc));
	if (rc == -EAGAIN || rc == -EPROTO)    /* the next watch asks another member */
		e->current = (idx + 1) % e->n_endpoints;
	free(w.buf.data);
	return rc;
}

int etcd_watch(struct etcd *e, const char *key, bool prefix, int64_t start_revision,
	       long timeout_ms, struct etcd_events *ret, struct nt_err *err)
{
	long deadline = (long)(nt_mono_ns() / 1000000) + (timeout_ms > 0 ? timeout_ms : 1);
	char *body;
	int rc = check_key(key, err);

	if (rc < 0)
		return rc;
	if (start_revision < 0)
		return err_set(err, -EINVAL, "etcd: watch: a negative revision");
	if (e->user && !e->token && (rc = login(e, err)) < 0)
		return rc;
	body = build_watch(key, prefix, start_revision);
	if (!body)
		return err_set(err, -ENOMEM, "out of memory");
	rc = -EAGAIN;
	for (size_t k = 0, first = e->current; rc == -EAGAIN && k < e->n_endpoints &&
	     (long)(nt_mono_ns() / 1000000) < deadline; k++) {
		size_t idx = (first + k) % e->n_endpoints;

		rc = watch_once(e, idx, body, deadline - (long)(nt_mono_ns() / 1000000), ret, err);
		if (rc == -EKEYEXPIRED && e->user && login(e, err) == 0)
			rc = watch_once(e, idx, body, deadline - (long)(nt_mono_ns() / 1000000), ret, err);
		if (rc >= 0)
			e->current = idx;
	}
	free(body);
	if (rc == -EAGAIN && (long)(nt_mono_ns() / 1000000) >= deadline)
		rc = 0;                 /* the time ran out while failing over */
	if (rc == 0)
		memset(ret, 0, sizeof(*ret));
	return rc < 0 ? rc : 0;
}
