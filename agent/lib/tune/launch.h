/* SPDX-License-Identifier: MIT */
/* launch.h — starting a job's local ranks where the plan says: what
 * `nodetune exec` (one rank, under mpirun, srun or torchrun) and `nodetune
 * run` (N ranks of our own) share.
 *
 * Owns: the launchers' environment variables for the local rank and the
 * number of local ranks, the PATH look-up done before anything changes,
 * binding then exec'ing one rank, and run's launcher (fork, bind, exec,
 * pass signals on, wait).  Promises: nothing here prints or exits; messages
 * for the user go to the caller's note_fn (base/log.h) (also from a forked rank,
 * before its exec), errors come back as -errno with struct nt_err.  A rank
 * that cannot run its command ends with an exit status of the DESIGN.md
 * contract (LAUNCH_EXIT_USAGE, LAUNCH_EXIT_RUNTIME).
 *
 * A rank runs as its caller, so it keeps what the caller gave it: the
 * terminal and stdin (an interactive job), its session, and the fds its
 * launcher passed on purpose (mpirun's, srun's, a step report's fd).
 * Nothing nodetune opens reaches it: every fd nodetune opens is
 * close-on-exec (test_launchers.sh checks both verbs).  A job of another
 * user's is ab's (abrun.h, child.h), never these.
 */
#ifndef NODETUNE_LAUNCH_H
#define NODETUNE_LAUNCH_H

#include <stdbool.h>

#include "base/log.h"
#include "tune/plan.h"

/* The exit status of a rank that never ran its command: 2 when the command
 * cannot be found or run (ENOENT, EACCES), 3 for any other failure. */
enum { LAUNCH_EXIT_USAGE = 2, LAUNCH_EXIT_RUNTIME = 3 };

/* The local rank from the first of OMPI_COMM_WORLD_LOCAL_RANK,
 * SLURM_LOCALID, LOCAL_RANK that is set, as a number from 0 to
 * PLAN_MAX_RANKS - 1.  Returns 1 with *ret and *ret_name (the variable's
 * name, static); 0 when none is set (both untouched); -EINVAL with err
 * ("NAME='VALUE': expected a whole number from 0 to 4095") when the first
 * one set is not such a number. */
int launch_local_rank(unsigned *ret, const char **ret_name, struct nt_err *err);

/* The number of local ranks, likewise, from OMPI_COMM_WORLD_LOCAL_SIZE,
 * LOCAL_WORLD_SIZE, SLURM_NTASKS_PER_NODE or SLURM_TASKS_PER_NODE (whose
 * "2(x3),1" gives its first count), from 1 to PLAN_MAX_RANKS. */
int launch_local_size(unsigned *ret, const char **ret_name, struct nt_err *err);

/* Is cmd something execvp can run: a path (with a '/') that is executable,
 * or a name found executable along PATH (default /usr/local/bin:/usr/bin:
 * /bin; an empty item is the current directory)?  Checked before anything
 * changes, so that a typo costs nothing. */
bool launch_command_found(const char *cmd);

/* Bind the calling process as local_rank of pl (bind_rank: job cgroup, CPU
 * affinity, memory policy, scheduling, CUDA_VISIBLE_DEVICES), pass a
 * binding warning to note (may be NULL), flush stdio, and execvp command
 * (NULL-terminated).  Returns only on failure: -errno with err ("local rank
 * N: ..." or "COMMAND: ..."), and *ret_status the exit status for it:
 * LAUNCH_EXIT_USAGE when the command cannot be found or run, else
 * LAUNCH_EXIT_RUNTIME.  The process may be partly bound then. */
int launch_bind_and_exec(const struct plan *pl, unsigned local_rank, char *const *command, note_fn note,
			 void *arg, int *ret_status, struct nt_err *err);

/* run's launcher: fork pl->n_ranks ranks of command, rank i with
 * LOCAL_RANK=i and LOCAL_WORLD_SIZE=n in its environment, bound as
 * launch_bind_and_exec does; wait for all.  SIGINT, SIGTERM and SIGHUP are
 * caught from the first fork on and passed on to the ranks still running;
 * they stay caught when this returns, so that the caller's clean-up (a
 * revert) cannot be cut short by a second one.  A rank that ends with a
 * status other than 0 is noted (LOG_WARNING, with its pid); a failed fork
 * is noted (LOG_ERR), counts as status LAUNCH_EXIT_RUNTIME and starts no
 * more ranks.  Returns 0 with *ret_worst the highest exit status (a rank
 * killed by signal S counts as 128 + S), or -ENOMEM with err before any
 * rank started (*ret_worst untouched). */
int launch_ranks(const struct plan *pl, char *const *command, note_fn note, void *arg, int *ret_worst,
		 struct nt_err *err);

#endif
