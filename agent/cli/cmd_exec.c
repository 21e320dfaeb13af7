/* SPDX-License-Identifier: MIT */
/* cmd_exec.c — `nodetune exec`: bind this process as one local rank (under
 * mpirun, srun or torchrun), then exec the command (launch.h does both). */
#include "cli.h"
#include "tune/launch.h"
#include "base/log.h"

static const struct opt_row exec_opts[] = {
	{ OPT_POLICY, OPT_REQUIRED, NULL },
	{ OPT_LOCAL_RANK, OPT_OPTIONAL, NULL },
	{ OPT_LOCAL_SIZE, OPT_OPTIONAL, NULL },
	{ OPT_TOPOLOGY, OPT_OPTIONAL, "plan against an hwloc XML export instead of this host (tests)" },
	{ OPT_QUIET, OPT_OPTIONAL, "print only errors (no warnings)" },
	{ OPT_JSON, OPT_REFUSED, "exec's standard output is the command's (nodetune's lines go to stderr): plan --json shows the binding" },
	OPT_TABLE_END,
};

const struct verb_spec exec_spec = {
	exec_opts, VERB_COMMAND,
	"nodetune exec --policy FILE|NAME [--local-rank N] [--local-size N]\n"
	"                     [--topology FILE.xml] [--quiet] -- COMMAND [ARGS...]",
	"bind this process as one local rank, then exec the command",
	"For use under mpirun, srun and torchrun: the local rank comes from\n"
	"--local-rank, OMPI_COMM_WORLD_LOCAL_RANK, SLURM_LOCALID or LOCAL_RANK; the\n"
	"number of local ranks from --local-size, OMPI_COMM_WORLD_LOCAL_SIZE,\n"
	"LOCAL_WORLD_SIZE or SLURM_(N)TASKS_PER_NODE (default: one per GPU).  Joins the\n"
	"job cgroup, sets CPU affinity, the NUMA memory policy, scheduling policy and\n"
	"nice, exports CUDA_VISIBLE_DEVICES when the policy asks, and execvp's the\n"
	"command directly (no shell).  Threads and children inherit the binding.\n"
	"Standard output is the command's alone: nodetune's own lines go to stderr, and\n"
	"--json is refused.",
};

/* The local rank and size from the options, else the launcher's
 * environment.  0, or EXIT_USAGE (said). */
static int local_rank_size(struct opts *o, const char **ret_from, const char **ret_size_from)
{
	struct nt_err err = { 0 };
	int r;

	if (!o->given[OPT_LOCAL_RANK]) {
		r = launch_local_rank(&o->local_rank, ret_from, &err);
		if (r < 0) {
			log_msg(LOG_ERR, "%s", err.msg);
			return EXIT_USAGE;
		}
		if (r == 0) {
			log_msg(LOG_ERR, "no local rank: give --local-rank N or run under mpirun, srun or torchrun");
			return EXIT_USAGE;
		}
	}
	if (!o->given[OPT_LOCAL_SIZE] && launch_local_size(&o->local_size, ret_size_from, &err) < 0) {
		log_msg(LOG_ERR, "%s", err.msg);
		return EXIT_USAGE;
	}
	return 0;
}

int cmd_exec(struct opts *o)
{
	const char *from = "--local-rank", *size_from = "--local-size";
	struct nt_err err = { 0 };
	struct ctx x;
	int rc;

	if ((rc = local_rank_size(o, &from, &size_from)))
		return rc;
	if (!launch_command_found(o->command[0])) {
		log_msg(LOG_ERR, "%s: command not found", o->command[0]);
		return EXIT_USAGE;
	}
	/* The plan for all local ranks, so that ranks binding themselves one
	 * by one still get disjoint sets; the host part is apply's business. */
	rc = ctx_load(&x, o, o->local_size, false);
	if (rc >= 0)
		return rc;
	if (o->local_rank >= x.plan->n_ranks) {
		log_msg(LOG_ERR, "local rank %u (%s) but only %u local ranks (%s; give --local-size)", o->local_rank,
			from, x.plan->n_ranks, o->local_size ? size_from : "one per GPU");
		ctx_release(&x);
		return EXIT_USAGE;
	}
	launch_bind_and_exec(x.plan, o->local_rank, o->command, cli_note, NULL, &rc, &err);
	log_msg(LOG_ERR, "%s", err.msg);
	ctx_release(&x);
	return rc;
}
