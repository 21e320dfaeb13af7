/* SPDX-License-Identifier: MIT */
/* fleet.c — see fleet.h.
 *
 * Divisions: the state machine (one pure step of a rollout).
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fleet/fleet.h"

bool fleet_state_final(enum fleet_state s)
{
	return s != FLEET_RUNNING && s != FLEET_ROLLING_BACK;
}


/* ---- the state machine ------------------------------------------------- */

struct stepper {
	const struct fleet_rollout *r;
	struct fleet_observed *const *obs;
	double now;
	struct fleet_rollout *next;
	struct fleet_write *writes;
	unsigned n_writes;
	bool changed;
};

static void write_add(struct stepper *st, enum fleet_write_kind kind, enum fleet_mode mode, unsigned w, unsigned i)
{
	st->writes[st->n_writes++] = (struct fleet_write){ kind, mode, w, i };
	st->changed = true;
}

static void set_state(struct stepper *st, struct fleet_rhost *h, enum fleet_rstate s)
{
	if (h->state != s)
		st->changed = true;
	h->state = s;
}

static void set_note(struct fleet_rhost *h, const char *text)
{
	free(h->note);
	h->note = text && *text ? strdup(text) : NULL;
}

static void set_reason(struct fleet_rollout *r, const char *text)
{
	free(r->reason);
	r->reason = strdup(text);
}

/* Has the host answered the desired value now in the store? */
static bool acted(const struct fleet_observed *o)
{
	return o->has_status && o->desired_rev > 0 && o->status.desired_rev == o->desired_rev;
}

/* Is the desired value in the store this rollout's, in mode m? */
static bool ours(const struct fleet_rollout *r, const struct fleet_observed *o, enum fleet_mode m)
{
	return o->has_desired && !strcmp(o->desired.rollout, r->name) && !strcmp(o->desired.sha256, r->sha256) &&
	       o->desired.mode == m;
}

static bool timed_out(const struct stepper *st)
{
	return st->r->wave_timeout > 0 && st->now - st->r->phase_started > st->r->wave_timeout;
}

/* Every host the rollout touched goes back to its desired value from
 * before (RESTORE_DESIRED); the rollout then waits for them. */
static void start_rollback(struct stepper *st, enum fleet_state goal, const char *why)
{
	struct fleet_rollout *n = st->next;
	unsigned count = 0;

	n->state = FLEET_ROLLING_BACK;
	n->goal = goal;
	n->phase_started = st->now;
	set_reason(n, why);
	if (n->wave < n->n_waves && goal != FLEET_ABORTED)
		n->waves[n->wave].state = FLEET_W_FAILED;
	for (unsigned w = 0; w < n->n_waves; w++)
		for (unsigned i = 0; i < n->waves[w].n; i++) {
			struct fleet_rhost *h = &n->waves[w].hosts[i];

			if (h->state == FLEET_R_PENDING || h->state == FLEET_R_RESTORED || h->state == FLEET_R_SHADOWED)
				continue;
			set_state(st, h, FLEET_R_RESTORING);
			write_add(st, FLEET_W_RESTORE_DESIRED, FLEET_MODE_LOCAL, w, i);
			count++;
		}
	fleet_event(n, st->now, "%s; rolling back %u host(s)", why, count);
	if (!count) {
		n->state = goal;
		fleet_event(n, st->now, "%s: nothing to roll back", fleet_state_names[goal]);
	}
	st->changed = true;
}

/* Send the current wave: every host's desired key names the new policy
 * (gate mode for the first wave when there is a gate). */
static void send_wave(struct stepper *st, enum fleet_mode mode)
{
	struct fleet_rollout *n = st->next;
	struct fleet_wave *w = &n->waves[n->wave];
	char names[512] = "";
	size_t len = 0;

	for (unsigned i = 0; i < w->n; i++) {
		if (w->hosts[i].state == FLEET_R_LOST)
			continue;
		set_state(st, &w->hosts[i], FLEET_R_SENT);
		write_add(st, FLEET_W_PUT_DESIRED, mode, n->wave, i);
		if (len < sizeof(names) - 80)
			len += (size_t)snprintf(names + len, sizeof(names) - len, " %s", w->hosts[i].host);
	}
	w->state = mode == FLEET_MODE_GATE ? FLEET_W_GATING : FLEET_W_APPLYING;
	if (!w->started)
		w->started = st->now;
	n->phase_started = st->now;
	fleet_event(n, st->now, "wave %u (%s) %s %u host(s):%s%s", n->wave, w->spec,
		    mode == FLEET_MODE_GATE ? "gating on" : "sent to", w->n, names, len >= sizeof(names) - 80 ? " ..." : "");
}

/* A host that did not answer in time: lost when its lease is gone (it is
 * skipped), else *ret_stuck names it.  Returns whether it was lost. */
static bool expire_host(struct stepper *st, struct fleet_rhost *h, const struct fleet_observed *o,
			const char **ret_stuck)
{
	if (o->alive) {
		if (!*ret_stuck)
			*ret_stuck = h->host;
		return false;
	}
	set_state(st, h, FLEET_R_LOST);
	set_note(h, "its lease expired and it did not answer before the wave timed out: skipped");
	fleet_event(st->next, st->now, "%s (%s) lost its lease and did not answer within %gs: skipped", h->host,
		    h->label, st->r->wave_timeout);
	return true;
}

static bool gate_passes(const struct fleet_rollout *r, const char *verdict)
{
	return !strcmp(verdict, "improvement") || !strcmp(verdict, "no-difference") ||
	       (r->allow_inconclusive && !strcmp(verdict, "inconclusive"));
}

/* The gating wave: collect verdicts; a regression, a gate that could not
 * run, or a canary lost (its lease expired) without a verdict by the
 * timeout rolls back; all passed sends the wave for good. */
static void step_gating(struct stepper *st)
{
	struct fleet_wave *w = &st->next->waves[st->next->wave];
	const char *stuck = NULL;
	char why[FLEET_TEXT_MAX + 256] = "";
	bool waiting = false;

	for (unsigned i = 0; i < w->n; i++) {
		struct fleet_rhost *h = &w->hosts[i];
		const struct fleet_observed *o = &st->obs[st->next->wave][i];

		if (h->state != FLEET_R_SENT)
			continue;
		if (acted(o) && ours(st->r, o, FLEET_MODE_GATE) && o->status.state == FLEET_H_GATED) {
			snprintf(h->verdict, sizeof(h->verdict), "%s", o->status.verdict);
			h->ratio = o->status.ratio, h->ci_lo = o->status.ci_lo, h->ci_hi = o->status.ci_hi;
			set_note(h, o->status.explanation);
			set_state(st, h, gate_passes(st->r, h->verdict) ? FLEET_R_GATE_PASSED : FLEET_R_GATE_FAILED);
			if (h->state == FLEET_R_GATE_FAILED && !*why)
				snprintf(why, sizeof(why), "canary %s (%s): %s, ratio %.3f [%.3f, %.3f]%s%s", h->host,
					 h->label, h->verdict, h->ratio, h->ci_lo, h->ci_hi, *o->status.explanation ? ": " : "",
					 o->status.explanation);
		} else if (acted(o) && (o->status.state == FLEET_H_FAILED || o->status.state == FLEET_H_INVALID)) {
			set_state(st, h, FLEET_R_FAILED);
			set_note(h, o->status.error);
			if (!*why)
				snprintf(why, sizeof(why), "canary %s (%s): the gate could not run: %s", h->host, h->label,
					 o->status.error);
		} else if (!timed_out(st) || !expire_host(st, h, o, &stuck)) {
			waiting = true;
		} else if (!*why) {
			/* lost: a canary is not skipped as a wave's host is; a
			 * policy that takes its canary down must not pass */
			snprintf(why, sizeof(why), "canary %s (%s) lost its lease and gave no verdict within %gs", h->host,
				 h->label, st->r->wave_timeout);
		}
	}
	if (*why)
		start_rollback(st, FLEET_ROLLED_BACK, why);
	else if (stuck && timed_out(st)) {
		snprintf(why, sizeof(why), "wave %u: canary %s gave no verdict within %gs", st->next->wave, stuck,
			 st->r->wave_timeout);
		start_rollback(st, FLEET_ROLLED_BACK, why);
	} else if (!waiting) {
		fleet_event(st->next, st->now, "wave %u: every canary passed its gate", st->next->wave);
		send_wave(st, FLEET_MODE_APPLY);
	}
}

/* The last wave passed: done, the hosts skipped named in the reason and
 * the event (they converge through their classes' records, fleet_ctl). */
static void end_done(struct stepper *st)
{
	struct fleet_rollout *n = st->next;
	char names[512] = "", why[600];
	size_t len = 0;
	unsigned lost = 0;

	for (unsigned w = 0; w < n->n_waves; w++)
		for (unsigned i = 0; i < n->waves[w].n; i++) {
			if (n->waves[w].hosts[i].state != FLEET_R_LOST)
				continue;
			lost++;
			if (len < sizeof(names) - 80)
				len += (size_t)snprintf(names + len, sizeof(names) - len, "%s%s", len ? " " : "",
							n->waves[w].hosts[i].host);
		}
	n->state = FLEET_DONE;
	if (!lost) {
		fleet_event(n, st->now, "done: every wave passed");
		return;
	}
	snprintf(why, sizeof(why), "done; skipped (lease expired): %s%s", names, len >= sizeof(names) - 80 ? " ..." : "");
	set_reason(n, why);
	fleet_event(n, st->now, "%s", why);
}

/* A wave being applied: verified hosts count, a failure rolls back, a
 * host gone at the timeout is skipped. */
static void step_applying(struct stepper *st)
{
	struct fleet_rollout *n = st->next;
	struct fleet_wave *w = &n->waves[n->wave];
	const char *stuck = NULL;
	char why[FLEET_TEXT_MAX + 256] = "";
	bool waiting = false;

	for (unsigned i = 0; i < w->n; i++) {
		struct fleet_rhost *h = &w->hosts[i];
		const struct fleet_observed *o = &st->obs[n->wave][i];

		if (h->state != FLEET_R_SENT)
			continue;
		if (acted(o) && ours(st->r, o, FLEET_MODE_APPLY) && o->status.state == FLEET_H_VERIFIED &&
		    !strcmp(o->status.sha256, st->r->sha256)) {
			set_state(st, h, FLEET_R_VERIFIED);
		} else if (acted(o) && (o->status.state == FLEET_H_FAILED || o->status.state == FLEET_H_INVALID)) {
			set_state(st, h, FLEET_R_FAILED);
			set_note(h, o->status.error);
			if (!*why)
				snprintf(why, sizeof(why), "wave %u: %s (%s) %s: %s", n->wave, h->host, h->label,
					 fleet_hstate_names[o->status.state], o->status.error);
		} else if (!timed_out(st) || !expire_host(st, h, o, &stuck)) {
			waiting = true;
		}
	}
	if (*why)
		start_rollback(st, FLEET_ROLLED_BACK, why);
	else if (stuck && timed_out(st)) {
		snprintf(why, sizeof(why), "wave %u timed out: %s is alive but did not verify the new policy within %gs",
			 n->wave, stuck, st->r->wave_timeout);
		start_rollback(st, FLEET_ROLLED_BACK, why);
	} else if (!waiting) {
		w->state = FLEET_W_PASSED;
		fleet_event(n, st->now, "wave %u (%s) passed", n->wave, w->spec);
		n->wave++;
		if (n->wave == n->n_waves)
			end_done(st);
		st->changed = true;
	}
}

/* Rolling back: wait until every touched host runs its old policy again. */
static void step_rolling_back(struct stepper *st)
{
	struct fleet_rollout *n = st->next;
	const char *stuck = NULL;
	bool waiting = false;
	unsigned kept = 0;

	for (unsigned w = 0; w < n->n_waves; w++)
		for (unsigned i = 0; i < n->waves[w].n; i++) {
			struct fleet_rhost *h = &n->waves[w].hosts[i];
			const struct fleet_observed *o = &st->obs[w][i];

			kept += h->state == FLEET_R_KEPT;
			if (h->state != FLEET_R_RESTORING)
				continue;
			if (acted(o) && (o->status.state == FLEET_H_VERIFIED || o->status.state == FLEET_H_DRIFT))
				set_state(st, h, FLEET_R_RESTORED);
			else if (!timed_out(st) || !expire_host(st, h, o, &stuck))
				waiting = true;
		}
	if (stuck && timed_out(st)) {
		char why[FLEET_TEXT_MAX];

		snprintf(why, sizeof(why), "%s; and %s did not go back to its old policy within %gs",
			 n->reason ? n->reason : "rolling back", stuck, st->r->wave_timeout);
		set_reason(n, why);
		n->state = FLEET_FAILED;
		fleet_event(n, st->now, "failed: %s did not go back to its old policy", stuck);
		st->changed = true;
	} else if (!waiting) {
		n->state = n->goal;
		if (n->wave < n->n_waves)
			n->waves[n->wave].state = FLEET_W_ROLLED_BACK;
		if (kept)
			fleet_event(n, st->now, "%s: every host touched runs its old policy again, but %u left as it was "
				    "(state kept: its desired from before did not verify)", fleet_state_names[n->goal], kept);
		else
			fleet_event(n, st->now, "%s: every host touched runs its old policy again",
				    fleet_state_names[n->goal]);
		st->changed = true;
	}
}

/* Shadow: one wave of every host, each asked to plan and verify. */
static void step_shadow(struct stepper *st)
{
	struct fleet_rollout *n = st->next;
	struct fleet_wave *w = &n->waves[0];
	unsigned invalid = 0, lost = 0;
	bool waiting = false;

	if (w->state == FLEET_W_PENDING) {
		for (unsigned i = 0; i < w->n; i++) {
			set_state(st, &w->hosts[i], FLEET_R_SENT);
			write_add(st, FLEET_W_PUT_SHADOW, FLEET_MODE_APPLY, 0, i);
		}
		w->state = FLEET_W_APPLYING;
		w->started = n->phase_started = st->now;
		fleet_event(n, st->now, "shadow: %u host(s) asked to plan and verify %.12s", w->n, n->sha256);
		return;
	}
	for (unsigned i = 0; i < w->n; i++) {
		struct fleet_rhost *h = &w->hosts[i];
		const struct fleet_observed *o = &st->obs[0][i];
		const char *stuck = NULL;

		if (h->state == FLEET_R_SENT && o->has_status && o->has_shadow && o->status.shadow_rev == o->shadow_rev &&
		    !strcmp(o->status.shadow_sha, n->sha256)) {
			set_state(st, h, FLEET_R_SHADOWED);
			h->shadow_valid = o->status.shadow_valid;
			h->shadow_changes = o->status.shadow_changes;
			set_note(h, o->status.shadow_text);
		} else if (h->state == FLEET_R_SENT && (!timed_out(st) || !expire_host(st, h, o, &stuck))) {
			waiting = true;
			if (stuck && timed_out(st)) {
				set_state(st, h, FLEET_R_LOST);
				set_note(h, "alive, but gave no shadow answer in time");
				waiting = false;
			}
		}
		invalid += h->state == FLEET_R_SHADOWED && !h->shadow_valid;
		lost += h->state == FLEET_R_LOST;
	}
	if (!waiting) {
		char why[256];

		snprintf(why, sizeof(why), "shadow: %u host(s) answered, %u with an invalid plan, %u without an answer",
			 w->n - lost, invalid, lost);
		set_reason(n, why);
		w->state = invalid || lost ? FLEET_W_FAILED : FLEET_W_PASSED;
		n->state = FLEET_DONE;
		n->wave = 1;
		fleet_event(n, st->now, "%s", why);
		st->changed = true;
	}
}

static unsigned count_hosts(const struct fleet_rollout *r)
{
	unsigned n = 0;

	for (unsigned w = 0; w < r->n_waves; w++)
		n += r->waves[w].n;
	return n;
}

int fleet_step(const struct fleet_rollout *r, struct fleet_observed *const *obs, double now, bool abort,
	       struct fleet_rollout *next, struct fleet_write **ret_writes, unsigned *ret_n_writes)
{
	struct stepper st = { r, obs, now, next, NULL, 0, false };

	if (fleet_state_final(r->state))
		return 0;
	if (fleet_rollout_copy(r, next) < 0)
		return -ENOMEM;
	st.writes = calloc(count_hosts(r) + 1, sizeof(*st.writes));
	if (!st.writes) {
		fleet_rollout_release(next);
		return -ENOMEM;
	}
	if (abort && r->state == FLEET_RUNNING) {
		if (r->shadow) {
			next->state = FLEET_ABORTED;
			fleet_event(next, now, "aborted (shadow: nothing to roll back)");
			st.changed = true;
		} else
			start_rollback(&st, FLEET_ABORTED, "aborted by the user");
	} else if (r->state == FLEET_ROLLING_BACK)
		step_rolling_back(&st);
	else if (r->shadow)
		step_shadow(&st);
	else if (r->waves[r->wave].state == FLEET_W_PENDING)
		send_wave(&st, r->gate[0] && r->wave == 0 ? FLEET_MODE_GATE : FLEET_MODE_APPLY);
	else if (r->waves[r->wave].state == FLEET_W_GATING)
		step_gating(&st);
	else
		step_applying(&st);
	if (!st.changed) {
		free(st.writes);
		fleet_rollout_release(next);
		return 0;
	}
	next->updated = now;
	*ret_writes = st.writes;
	*ret_n_writes = st.n_writes;
	return 1;
}
