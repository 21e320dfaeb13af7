/* SPDX-License-Identifier: MIT */
/* fuzz_etcd.c — libFuzzer target: the etcd client's response parsers
 * (range, put/delete, txn, lease, a watch message and a watch stream, an
 * error body) over arbitrary bytes, the same functions the client runs on
 * what a member answers.  A parse that succeeds must hold bounded,
 * NUL-terminated keys and values; a refusal is a negative errno with a
 * one-line message. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "fleet/etcd.h"
#include "fleet/etcd_test.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_refusal(int rc, const struct nt_err *err)
{
	if (rc >= 0)
		return;
	if (err->code != rc || !memchr(err->msg, '\0', sizeof(err->msg)) || strchr(err->msg, '\n'))
		__builtin_trap();
}

static void check_kvs(const struct etcd_kv *kvs, size_t n)
{
	if (n > ETCD_KVS_MAX)
		__builtin_trap();
	for (size_t i = 0; i < n; i++) {
		if (strlen(kvs[i].key) > ETCD_KEY_MAX || kvs[i].value_len > ETCD_VALUE_MAX ||
		    kvs[i].value[kvs[i].value_len] != '\0' || kvs[i].mod_revision < 0)
			__builtin_trap();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *buf = (const char *)data;
	struct nt_err err = { 0 };
	struct etcd_range r;
	struct etcd_txn_result t;
	struct etcd_events ev;
	int64_t a, b;
	int rc;

	rc = etcd_parse_range_response(buf, size, &r, &err);
	check_refusal(rc, &err);
	if (rc == 0) {
		check_kvs(r.kvs, r.n_kvs);
		etcd_range_free(&r);
	}
	rc = etcd_parse_txn_response(buf, size, &t, &err);
	check_refusal(rc, &err);
	if (rc == 0) {
		check_kvs(t.get.kvs, t.get.n_kvs);
		etcd_txn_result_free(&t);
	}
	check_refusal(etcd_parse_write_response(buf, size, &a, &b, &err), &err);
	check_refusal(etcd_parse_lease_response(buf, size, &a, &b, &err), &err);
	check_refusal(etcd_parse_error(buf, size, &err), &err);
	for (int stream = 0; stream < 2; stream++) {
		rc = stream ? etcd_parse_watch_stream(buf, size, &ev, &err)
			    : etcd_parse_watch_message(buf, size, &ev, &err);
		check_refusal(rc, &err);
		if (rc < 0)
			continue;
		for (size_t i = 0; i < ev.n_events; i++)
			check_kvs(&ev.events[i].kv, 1);
		etcd_events_free(&ev);
	}
	return 0;
}
