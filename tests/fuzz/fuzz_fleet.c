/* SPDX-License-Identifier: MIT */
/* fuzz_fleet.c — libFuzzer target: every parser of a fleet store value
 * (fleet.h: a desired or shadow key, a policy document, a host's status,
 * its liveness key, a rollout) and of the gate's ab report (fleet_gate.h)
 * over arbitrary bytes: what a host or a controller reads from etcd.  A
 * parse that succeeds must hold valid names and bounded text with no
 * control character (it is shown in `fleet status` and logged), and a
 * rollout must serialize and parse back; a refusal is a negative errno
 * with a one-line message. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fleet/fleet_doc.h"
#include "fleet/fleet_gate.h"
#include "fleet/fleet_gate_test.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A control character in s (a NULL s has none). */
static int has_ctrl(const char *s)
{
	for (; s && *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return 1;
	return 0;
}

static void check_refusal(int rc, const struct nt_err *err)
{
	if (rc < 0 && (err->code != rc || has_ctrl(err->msg)))
		__builtin_trap();
}

static void check_rollout(const struct fleet_rollout *r)
{
	struct fleet_rollout back = { 0 };
	struct nt_err err = { 0 };
	char *s;

	if (!fleet_name_valid(r->name) || r->wave > r->n_waves || r->n_waves > FLEET_WAVES_MAX)
		__builtin_trap();
	if (has_ctrl(r->reason) || has_ctrl(r->gate) || has_ctrl(r->policy))
		__builtin_trap();
	for (unsigned i = 0; i < r->n_events; i++)
		if (has_ctrl(r->events[i].what))
			__builtin_trap();
	for (unsigned w = 0; w < r->n_waves; w++)
		for (unsigned i = 0; i < r->waves[w].n; i++)
			if (has_ctrl(r->waves[w].hosts[i].note) || has_ctrl(r->waves[w].hosts[i].label))
				__builtin_trap();
	s = fleet_rollout_json(r);
	if (s && fleet_doc_parse_rollout("k", s, strlen(s), &back, &err) != 0)
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

	rc = fleet_doc_parse_desired("k", buf, size, &d, &err);
	check_refusal(rc, &err);
	if (rc == 0 && (!fleet_name_valid(d.rollout) || strlen(d.sha256) > FLEET_SHA_LEN))
		__builtin_trap();
	rc = fleet_doc_parse_policy_doc("k", buf, size, &p, &err);
	check_refusal(rc, &err);
	if (rc == 0 && p.content[p.content_len] != '\0')
		__builtin_trap();
	fleet_policy_doc_release(&p);
	if (st) {
		rc = fleet_doc_parse_status("k", buf, size, st, &err);
		check_refusal(rc, &err);
		if (rc == 0 && (!fleet_name_valid(st->host) || st->state >= FLEET_H__COUNT))
			__builtin_trap();
		if (rc == 0 && (has_ctrl(st->error) || has_ctrl(st->label) || has_ctrl(st->explanation) ||
				has_ctrl(st->shadow_text)))
			__builtin_trap();
		free(st);
	}
	check_refusal(fleet_doc_parse_hostinfo("k", buf, size, &h, &err), &err);
	rc = fleet_doc_parse_rollout("k", buf, size, &r, &err);
	check_refusal(rc, &err);
	if (rc == 0)
		check_rollout(&r);
	fleet_rollout_release(&r);
	rc = fleet_gate_parse(buf, size, &g, &err);
	check_refusal(rc, &err);
	if (rc == 0 && (has_ctrl(g.verdict) || has_ctrl(g.explanation)))
		__builtin_trap();
	return 0;
}
