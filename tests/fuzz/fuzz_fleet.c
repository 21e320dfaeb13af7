/* fuzz_fleet.c — libFuzzer target: every parser of a fleet store value
 * (fleet.h: a desired or shadow key, a policy document, a host's status,
 * its liveness key, a rollout) and of the gate's ab report (fleet_gate.h)
 * over arbitrary bytes: what a host or a controller reads from etcd.  A
 * parse that succeeds must hold valid names and bounded text, and a
 * rollout must serialize and parse back; a refusal is a negative errno
 * with a one-line message. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fleet.h"
#include "fleet_gate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_refusal(int rc, const struct nt_err *err)
{
	if (rc < 0 && (err->code != rc || strchr(err->msg, '\n')))
		__builtin_trap();
}

static void check_rollout(const struct fleet_rollout *r)
{
	struct fleet_rollout back = { 0 };
	struct nt_err err = { 0 };
	char *s;

	if (!fleet_name_valid(r->name) || r->wave > r->n_waves || r->n_waves > FLEET_WAVES_MAX)
		__builtin_trap();
	s = fleet_rollout_json(r);
	if (s && fleet_parse_rollout("k", s, strlen(s), &back, &err) != 0)
		__builtin_trap();
	fleet_rollout_release(&back);
	free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *buf = (const char *)data;
	struct nt_err err = { 0 };
	struct fleet_desired d;
	struct fleet_policy_doc p = { 0 };
	struct fleet_status *st = malloc(sizeof(*st));
	struct fleet_hostinfo h;
	struct fleet_rollout r = { 0 };
	struct fleet_gate_result g;
	int rc;

	rc = fleet_parse_desired("k", buf, size, &d, &err);
	check_refusal(rc, &err);
	if (rc == 0 && (!fleet_name_valid(d.rollout) || strlen(d.sha256) > FLEET_SHA_LEN))
		__builtin_trap();
	rc = fleet_parse_policy_doc("k", buf, size, &p, &err);
	check_refusal(rc, &err);
	if (rc == 0 && p.content[p.content_len] != '\0')
		__builtin_trap();
	fleet_policy_doc_release(&p);
	if (st) {
		rc = fleet_parse_status("k", buf, size, st, &err);
		check_refusal(rc, &err);
		if (rc == 0 && (!fleet_name_valid(st->host) || st->state >= FLEET_H__COUNT))
			__builtin_trap();
		free(st);
	}
	check_refusal(fleet_parse_hostinfo("k", buf, size, &h, &err), &err);
	rc = fleet_parse_rollout("k", buf, size, &r, &err);
	check_refusal(rc, &err);
	if (rc == 0)
		check_rollout(&r);
	fleet_rollout_release(&r);
	check_refusal(fleet_gate_parse(buf, size, &g, &err), &err);
	return 0;
}
