/* SPDX-License-Identifier: MIT */
/* flap.h — which knobs keep drifting: the daemon's "contested" state.
 *
 * A knob that something else changes again and again (TuneD reapplying a
 * profile, an admin, irqbalance) is not corrected forever: after N drifts
 * within a window of SECONDS it is contested, the daemon stops fighting it,
 * says so once and exports it, and a person decides (bpftune backs off the
 * same way when an admin takes a tunable).  A key stays contested until
 * flap_reset() (a policy reload).
 *
 * Keys are strings (a knob's path below the fsroot, "cgroup:NAME"); time is
 * the caller's monotonic clock in seconds, so tests drive it by hand.
 */
#ifndef NODETUNE_FLAP_H
#define NODETUNE_FLAP_H

#include <stdbool.h>

struct flap; /* opaque */

/* Defaults of `nodetune daemon --flap N/SECONDS`. */
#define FLAP_DEFAULT_N 3
#define FLAP_DEFAULT_WINDOW_S 600.0

/* A tracker that calls a key contested after n drifts within window_s
 * seconds.  n in [1, 1000], window_s > 0.  NULL with errno EINVAL or
 * ENOMEM. */
struct flap *flap_new(unsigned n, double window_s);
/* Free; NULL is a no-op. */
void flap_free(struct flap *f);

/* The bounds of "N/DURATION": N drifts, within a window of seconds. */
#define FLAP_N_MAX 1000
#define FLAP_WINDOW_MIN_S 0.001
#define FLAP_WINDOW_MAX_S (86400.0 * 365)

/* Parse "N/DURATION" ("3/10m", "3/600": DURATION as nt_duration_parse
 * reads it, a bare number in seconds), N in [1, FLAP_N_MAX], the window in
 * [FLAP_WINDOW_MIN_S, FLAP_WINDOW_MAX_S].  0 with *ret_n and *ret_window_s,
 * or -EINVAL (both untouched). */
int flap_parse(const char *spec, unsigned *ret_n, double *ret_window_s);

/* Record one drift of key at time now (seconds, monotonic, not before the
 * previous call's).  Returns 1 when this drift makes the key contested (it
 * happens once per key), 0 otherwise (also for a key already contested), or
 * -ENOMEM (nothing recorded). */
int flap_drift(struct flap *f, const char *key, double now);
/* Is key contested? */
bool flap_contested(const struct flap *f, const char *key);
/* Drifts recorded for key since it was first seen (or reset). */
unsigned long flap_total(const struct flap *f, const char *key);

/* Visit every key seen, in the order first seen: fn(key, total drifts,
 * contested, arg). */
void flap_foreach(const struct flap *f, void (*fn)(const char *key, unsigned long total, bool contested, void *arg),
		  void *arg);

/* Forget every key's window and contested state (a new policy: its knobs
 * start uncontested); the totals are kept, as Prometheus counters must not
 * go back. */
void flap_reset(struct flap *f);

#endif
