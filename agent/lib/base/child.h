/* SPDX-License-Identifier: MIT */
/* child.h — a forked child that owns nothing of its parent's: what a job
 * started by a root process (ab's trial, the fleet gate's ab, the SPANK
 * plugin's nodetune apply/revert) does between fork and exec.
 *
 * Owns: a new session (no controlling terminal, so no TIOCSTI into the
 * parent's), stdin from /dev/null, an fd the job is meant to have moved to
 * a fixed low number with its close-on-exec flag cleared, and every other
 * fd above the standard ones closed (close_range, or a walk of
 * /proc/self/fd on kernels before 5.9, or every number below the fd
 * limit when /proc is not there).  Promises: every function here makes
 * async-signal-safe calls only (raw system calls, no malloc, no stdio), so
 * a child forked by a process with threads (the daemon) may call them; none
 * prints; each returns 0 or -errno and changes nothing more on error than
 * it says.
 */
#ifndef NODETUNE_CHILD_H
#define NODETUNE_CHILD_H

/* The first fd a job may be given beyond 0, 1 and 2: ab's step-report fd
 * (NODETUNE_STEP_FD) is moved here. */
#define CHILD_FIRST_FD 3

/* Make fd be the file at target for the exec to come: dup2(fd, target),
 * which clears close-on-exec on target, or, when fd already is target,
 * clear its close-on-exec flag.  fd stays open (a later child_close_from
 * closes it).  0, -EBADF (fd not open) or another -errno of dup2/fcntl. */
int child_move_fd(int fd, int target);

/* Open /dev/null read-only on fd 0.  0 or the -errno of open/dup2. */
int child_stdin_null(void);

/* Close every fd from first on (first >= 0).  close_range(first, ~0U, 0)
 * where the kernel has it (5.9); else each number listed in /proc/self/fd
 * (read with getdents64 into a buffer on the stack), listed again until a
 * pass closes nothing; else every number below RLIMIT_NOFILE's soft limit
 * (at most 1 << 20).  0, or -errno when none of the three could run. */
int child_close_from(int first);

/* What a job of another user's gets before its exec: its own session
 * (setsid, unless the caller leads one already: no controlling terminal;
 * a process group leader cannot setsid, so no setpgid before this),
 * keep_fd (>= 0; -1: none) moved to CHILD_FIRST_FD, /dev/null on fd 0, and
 * every fd above the kept ones closed.  Fds 1 and 2 are the caller's to set
 * up first (after moving keep_fd itself when it may be 1 or 2).  0, or the
 * -errno of the first step that failed (the later ones not done). */
int child_detach(int keep_fd);

/* For the message of a child that cannot go on: the system's description of
 * errno e (strerrordesc_np: a static string, no locale, async-signal-safe),
 * "Unknown error" for a value without one. */
const char *child_strerror(int e);

#endif
