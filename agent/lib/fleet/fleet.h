/* SPDX-License-Identifier: MIT */
/* fleet.h — the rollout state machine: one pure step from a rollout and
 * what is observed of its hosts to the next rollout and the writes that go
 * with it (fleet_ctl.h commits them over etcd).  The documents, keys and
 * waves it works on are fleet_doc.h's.
 */
#ifndef NODETUNE_FLEET_H
#define NODETUNE_FLEET_H

#include <stdbool.h>
#include <stdint.h>

#include "fleet/fleet_doc.h"

/* ---- the state machine (pure) -------------------------------------------- */

/* What the controller sees of one host of the rollout now. */
struct fleet_observed {
	bool alive;               /* its liveness key exists */
	bool has_desired;
	struct fleet_desired desired;
	int64_t desired_rev;      /* 0 absent */
	bool has_status;
	struct fleet_status status;
	bool has_shadow;
	int64_t shadow_rev;
};

/* A write that goes with a step, in the same transaction. */
enum fleet_write_kind { FLEET_W_PUT_DESIRED, FLEET_W_PUT_SHADOW, FLEET_W_RESTORE_DESIRED };
struct fleet_write {
	enum fleet_write_kind kind;
	enum fleet_mode mode;     /* PUT_DESIRED: apply or gate */
	unsigned wave, index;     /* the host: r->waves[wave].hosts[index] */
};

/* One step: from r and what is observed of every host (obs[w][i] for
 * r->waves[w].hosts[i]) at wall time now, decide the next state into
 * *next (a deep copy of r, changed) and the writes that must go with it
 * (*ret_writes, at most one per host of the rollout; the caller frees).
 * abort: the user asked to abort.  Returns 1 when there is a step to take,
 * 0 when nothing changes yet (wait), -ENOMEM.  The caller commits *next
 * and the writes in one transaction that compares r's mod_revision. */
int fleet_step(const struct fleet_rollout *r, struct fleet_observed *const *obs, double now, bool abort,
	       struct fleet_rollout *next, struct fleet_write **ret_writes, unsigned *ret_n_writes);

/* Is the rollout over (done, rolled back, aborted, failed)? */
bool fleet_state_final(enum fleet_state s);

#endif
