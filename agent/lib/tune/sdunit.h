/* SPDX-License-Identifier: MIT */
/* sdunit.h — a command as a transient systemd service, started over the
 * system bus (sd-bus: org.freedesktop.systemd1.Manager.StartTransientUnit),
 * for a process whose own unit's sandbox the command must not inherit.  The
 * daemon's gate starts `nodetune ab` this way under the shipped unit: ab
 * then drops to the gate's user and its job sees the GPUs, the network and
 * the user's files, while the daemon keeps its sandbox (DESIGN.md, "Fleet
 * rollout").  Where systemd is not PID 1 (a container, a Kubernetes pod, a
 * daemon started by hand) sdunit_own says so and the caller forks instead.
 *
 * Owns: the unit's properties (ExecStart, the stdio file descriptors handed
 * over, BindsTo=/After= the caller's unit, RuntimeMaxSec=, KillMode=mixed,
 * TimeoutStopSec=, Delegate=, CollectMode=inactive-or-failed), starting it,
 * and stopping it.  Promises: nothing here prints or exits; errors come back
 * as -errno with struct nt_err naming the unit and what systemd said.
 */
#ifndef NODETUNE_SDUNIT_H
#define NODETUNE_SDUNIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/log.h"

#define SDUNIT_NAME_MAX 256

struct sdunit_spec {
	const char *name;             /* "NAME.service": [A-Za-z0-9:_.@-], one ".service" at the end */
	const char *description;      /* Description= (may be NULL) */
	char *const *argv;            /* argv[0] an absolute path; NULL-terminated */
	int stdout_fd, stderr_fd;     /* the service's stdout and stderr (dup'ed by systemd); -1: the journal */
	const char *bind_to;          /* BindsTo= and After=: stopped when that unit stops or dies; NULL: none */
	uint64_t runtime_max_usec;    /* RuntimeMaxSec=: stopped after that long; 0: no limit */
	uint64_t timeout_stop_usec;   /* TimeoutStopSec=: SIGTERM to the main process, then SIGKILL to all after this */
	bool delegate;                /* Delegate=yes: its processes may make cgroups below the unit's */
};

/* Is the calling process in a service of systemd running as PID 1, whose
 * system bus answers?  true with its unit's name in buf ("nodetune.service");
 * false when systemd is not PID 1, the process is in no service (a scope,
 * a login session, a container's own init) or the bus cannot be reached. */
bool sdunit_own(char *buf, size_t len);

/* Is s a unit name sdunit_start takes? */
bool sdunit_name_valid(const char *s);

/* Start s->argv as the transient service s->name (job mode "fail").
 * Returns 0 once systemd queued its start (an exec that then fails ends the
 * service: its stdout reaches EOF); -EINVAL (a bad name or argv), -EEXIST
 * (a unit of that name is loaded), -ENOTCONN (no system bus), -EIO (systemd
 * refused: its message in err).  The caller keeps its file descriptors. */
int sdunit_start(const struct sdunit_spec *s, struct nt_err *err);

/* Stop the unit name (StopUnit, mode "replace": SIGTERM to its main
 * process, SIGKILL to what is left after its TimeoutStopSec=) and wait up
 * to wait_s seconds for it to be gone or inactive.  0 (stopped, or no such
 * unit), -ETIMEDOUT (still stopping), -ENOTCONN, -EIO with err. */
int sdunit_stop(const char *name, double wait_s, struct nt_err *err);

#endif
