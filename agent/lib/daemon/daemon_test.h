/* SPDX-License-Identifier: MIT */
/* daemon_test.h — what daemon.c exports for its unit test only
 * (tests/unit/daemon/test_daemon.c): the daemon's state, the metric table
 * over it, and the loop's decisions as pure functions of what was observed.
 * Nothing outside daemon.c and its test includes this. */
#ifndef NODETUNE_DAEMON_TEST_H
#define NODETUNE_DAEMON_TEST_H

#include <stdbool.h>

#include <sha2.h>

#include "daemon/ctlsock.h"
#include "daemon/daemon.h"
#include "daemon/flap.h"
#include "daemon/metrics.h"
#include "fleet/fleet_host.h"
#include "observe/doctor.h"
#include "observe/sampler.h"
#include "tune/journal.h"
#include "tune/plan.h"
#include "tune/policy.h"

#define DAEMON_RECENT_MAX 16         /* drift events kept for `nodetune status` */

struct drift_event {
	double wall;
	char path[256];
	char want[PLAN_VALUE_MAX], found[PLAN_VALUE_MAX];
	char writers[512];
};

struct daemon {
	const struct daemon_config *cfg;
	struct fsroot *root;
	struct topo *topo;
	struct policy *policy;
	struct plan *plan;
	char sha256[SHA256_DIGEST_STRING_LENGTH];
	struct journal *j;
	struct flap *flap;
	struct metrics_server *ms;
	struct ctlsock *cs;
	struct sampler sampler;
	bool sampler_ok;
	struct sampler_snap snap;
	struct doctor_findings doc;
	bool doc_ok;
	double next_doctor;
	/* the last verify */
	double verify_wall, verify_dur;
	double doctor_dur;            /* the last doctor run (it samples for window_s) */
	unsigned checked, drifted;
	bool verify_ok;
	unsigned long verifies, corrections, reloads, reload_failures, correct_failures;
	struct drift_event recent[DAEMON_RECENT_MAX];
	unsigned n_recent;
	double watchdog_s;            /* 0: no watchdog */
	struct fleet_host *fleet;     /* --fleet: NULL none */
	bool reload_pending;          /* SIGHUP while a fleet gate held the host */
	char policy_name[FLEET_NAME_MAX];
};

/* Add the daemon's metric families (its table, then the observer's) to m,
 * read from d.  Returns 0, or the first metrics_declare/metrics_add error
 * (-EINVAL, -EEXIST, -ENOMEM) with err naming the family; m then holds
 * what was added before it. */
int daemon_metrics_fill(const struct daemon *d, struct metrics *m, struct nt_err *err);

/* The slot for a new drift event in recent[0..*n): the oldest is dropped
 * when it is full; *n is updated.  Returns the slot (to fill). */
struct drift_event *daemon_recent_push(struct drift_event recent[DAEMON_RECENT_MAX], unsigned *n);

/* What the loop does after a wait: sig is what the wait returned (a signal
 * number, -1 the fleet's fd readable, 0 the deadline), now the monotonic
 * time, next when the verify is due, watchdog whether systemd's watchdog
 * is on, gating whether a fleet gate holds the host, reload_pending
 * whether a SIGHUP was held back for one.  A SIGHUP under a gate is
 * RELOAD_LATER (held back: its reload would fight the gate's arm); the
 * held reload runs as the first due cycle's work once no gate holds the
 * host (RELOAD_HELD). */
enum daemon_action {
	DAEMON_STOP, DAEMON_FLEET, DAEMON_RELOAD, DAEMON_RELOAD_LATER, DAEMON_RELOAD_HELD, DAEMON_CYCLE,
	DAEMON_PING, DAEMON_WAIT
};
enum daemon_action daemon_decide(int sig, double now, double next, bool watchdog, bool gating, bool reload_pending);

/* When the verify after the one due at next is due, it having run at now:
 * next + interval, or now + interval when the cycle overran (no burst). */
double daemon_next_due(double next, double now, double interval);

#endif
