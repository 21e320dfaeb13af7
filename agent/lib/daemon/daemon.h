/* SPDX-License-Identifier: MIT */
/* daemon.h — `nodetune daemon`: keep a policy applied on a host, catch
 * drift and name who caused it, watch for hazards, export it all.
 *
 * Owns the loop and its state; the parts are the library's: apply_converge
 * (apply.h) applies and corrects over one journal the daemon holds open
 * (its lock is the daemon's lock: a second daemon, or `nodetune revert`,
 * on the same state dir is refused while it runs), verify_plan finds
 * drift, writers_find names the other writer, flap decides when a knob is
 * contested, doctor_run and the sampler watch the host, metrics and
 * ctlsock publish.
 *
 * Promises:
 *  - start: lock, reconcile the journal (an apply that died is finished:
 *    its originals are kept), apply (nothing written where the value
 *    matches), verify, publish; only then READY=1 (sd_notify);
 *  - every interval: verify; each drift is logged as "PATH: want X, found
 *    Y" with the other writers found, counted, and corrected, unless the
 *    knob is contested (N drifts within the flap window): then it is left
 *    alone, said once, and exported;
 *  - start and SIGHUP: the policy file is validated, checked against the
 *    site limits (limits_path) and planned first; a bad one, or one beyond
 *    a limit (the key and the limit named), is refused at start (nothing
 *    changed) and on SIGHUP logged with its file:line, counted, and the old
 *    policy kept;
 *  - SIGTERM/SIGINT: return 0, leaving the host as it is (a restart never
 *    undoes tuning) unless revert_on_exit;
 *  - WATCHDOG=1 only from the loop itself, after a cycle ends, so a stuck
 *    cycle stops the pings;
 *  - it never exits the process and never prints: every line goes to the
 *    caller's note callback with a syslog level.
 */
#ifndef NODETUNE_DAEMON_H
#define NODETUNE_DAEMON_H

#include <stdbool.h>

#include "base/log.h"

struct fleet_creds;

#define DAEMON_DEFAULT_POLICY "/etc/nodetune/policy.conf"
#define DAEMON_DEFAULT_STATE_DIR "/var/lib/nodetune"
#define DAEMON_DEFAULT_INTERVAL_S 30.0

struct daemon_config {
	const char *policy_path;      /* read at start and on SIGHUP */
	unsigned policy_flags;        /* policy_load's: policy_trust_flags() */
	const char *topology;         /* hwloc XML; NULL: the host's (below sysroot) */
	const char *sysroot;          /* NULL: the live host "/" */
	const char *state_dir;
	double interval_s;
	unsigned flap_n;              /* contested after flap_n drifts ... */
	double flap_window_s;         /* ... within this many seconds */
	const char *metrics_addr;     /* "127.0.0.1:9477"; NULL: no /metrics */
	const char *textfile_dir;     /* node_exporter's; NULL: none */
	const char *socket_path;      /* the status socket; NULL: none */
	bool revert_on_exit;
	double doctor_every_s;        /* the doctor's cadence (0: 10 intervals, at least 60 s) */
	const char *fleet_endpoints;  /* etcd: join the fleet (fleet_host.h); NULL: no fleet */
	const char *fleet_host;       /* this host's name in the fleet */
	const struct fleet_creds *fleet_creds;  /* TLS and login (fleet_creds.h); NULL: none */
	const char *fleet_keys;       /* the trusted signing keys' directory; NULL: SIGN_KEYS_DIR */
	bool fleet_insecure_unsigned; /* also follow unsigned fleet documents (tests, demos) */
	const char *fleet_id;         /* the fleet this host is of; NULL: SIGN_FLEET_DEFAULT */
	double fleet_max_age_s;       /* a timestamp older: frozen; 0: FLEET_HOST_MAX_AGE_S */
	const char *gates_dir;        /* the fleet's named gates; NULL: GATES_DIR */
	const char *local_policy;     /* with a fleet: the --policy file (policy_path may be
	                                 the store's cached policy) */
	const char *limits_path;      /* the site limits (tune/limits.h), for every policy the
	                                 daemon applies (its own and the store's); NULL:
	                                 LIMITS_DEFAULT_PATH when it exists */
	/* every line the daemon has to say, with its syslog level */
	note_fn note;
	void *note_arg;
};

/* Run until SIGTERM or SIGINT (blocked in the calling thread and handled
 * through a signalfd; SIGHUP too).  Returns 0 after a signal; or -errno
 * with err: -EBUSY (another nodetune holds the state dir), -EINVAL and
 * other input errors (a bad policy, topology, sysroot, address), with
 * *ret_runtime false and nothing changed (-EACCES: the fleet's store
 * refused the credentials: a TLS failure, a refused login, a permission
 * denied); or a failure after the first
 * apply began, with *ret_runtime true and everything it changed reverted
 * (the caller exits 3). */
int daemon_run(const struct daemon_config *cfg, bool *ret_runtime, struct nt_err *err);

#endif
