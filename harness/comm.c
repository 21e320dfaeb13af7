/* SPDX-License-Identifier: MIT */
/* comm.c — see comm.h. */
#include "comm.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef HAVE_MPI
#include <mpi.h>
#endif

/* ---- set-up deadline ---------------------------------------------------- */

static char deadline_msg[256];
static size_t deadline_len;
static struct sigaction deadline_old;

static void deadline_fired(int sig)
{
	(void)sig;
	if (write(2, deadline_msg, deadline_len) < 0) {
		/* nothing more can be said */
	}
	_exit(3);
}

void comm_deadline_set(double wait_s, int rank, const char *what)
{
	struct sigaction sa;
	char who[32] = "";
	int n;

	if (rank >= 0)
		snprintf(who, sizeof(who), "rank %d: ", rank);
	n = snprintf(deadline_msg, sizeof(deadline_msg),
		     "nodetune-harness: %s%s not done within --timeout (%.0f s): a peer rank stopped responding\n", who,
		     what, wait_s);
	deadline_len = n > 0 && (size_t)n < sizeof(deadline_msg) ? (size_t)n : strlen(deadline_msg);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = deadline_fired;
	sigaction(SIGALRM, &sa, &deadline_old);
	alarm(wait_s < 1 ? 1 : (unsigned)(wait_s + 0.5));
}

void comm_deadline_clear(void)
{
	alarm(0);
	sigaction(SIGALRM, &deadline_old, NULL);
}

/* ---- none: one process -------------------------------------------------- */

static int none_allreduce(struct comm *c, float *buf, size_t n, struct nt_err *err)
{
	(void)c, (void)buf, (void)n, (void)err;
	return 0;
}

static int none_allreduce_d(struct comm *c, double *buf, size_t n, struct nt_err *err)
{
	(void)c, (void)buf, (void)n, (void)err;
	return 0;
}

static int none_bcast(struct comm *c, void *buf, size_t bytes, int root, struct nt_err *err)
{
	(void)c, (void)buf, (void)bytes, (void)root, (void)err;
	return 0;
}

static int none_barrier(struct comm *c)
{
	(void)c;
	return 0;
}

static void none_abort(struct comm *c, int code)
{
	(void)c;
	exit(code);
}

static void none_fini(struct comm *c)
{
	(void)c;
}

static const struct comm_ops none_ops = {
	"none", none_allreduce, none_allreduce_d, none_bcast, none_barrier, none_abort, none_fini,
};

/* ---- MPI ---------------------------------------------------------------- */

#ifdef HAVE_MPI
#define MPI_CHUNK ((size_t)1 << 30)   /* counts are int */

static int mpi_fail(int rc, const char *what, struct nt_err *err)
{
	char msg[MPI_MAX_ERROR_STRING];
	int len = 0;

	MPI_Error_string(rc, msg, &len);
	return err_set(err, -EIO, "%s: %.*s", what, len, msg);
}

static int mpi_allreduce(struct comm *c, float *buf, size_t n, struct nt_err *err)
{
	(void)c;
	for (size_t off = 0; off < n; off += MPI_CHUNK) {
		int cnt = (int)(n - off < MPI_CHUNK ? n - off : MPI_CHUNK);
		int rc = MPI_Allreduce(MPI_IN_PLACE, buf + off, cnt, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);

		if (rc != MPI_SUCCESS)
			return mpi_fail(rc, "MPI_Allreduce", err);
	}
	return 0;
}

static int mpi_allreduce_d(struct comm *c, double *buf, size_t n, struct nt_err *err)
{
	int rc = MPI_Allreduce(MPI_IN_PLACE, buf, (int)n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);

	(void)c;
	return rc == MPI_SUCCESS ? 0 : mpi_fail(rc, "MPI_Allreduce", err);
}

static int mpi_bcast(struct comm *c, void *buf, size_t bytes, int root, struct nt_err *err)
{
	(void)c;
	for (size_t off = 0; off < bytes; off += MPI_CHUNK) {
		int cnt = (int)(bytes - off < MPI_CHUNK ? bytes - off : MPI_CHUNK);
		int rc = MPI_Bcast((char *)buf + off, cnt, MPI_BYTE, root, MPI_COMM_WORLD);

		if (rc != MPI_SUCCESS)
			return mpi_fail(rc, "MPI_Bcast", err);
	}
	return 0;
}

static int mpi_barrier(struct comm *c)
{
	(void)c;
	return MPI_Barrier(MPI_COMM_WORLD) == MPI_SUCCESS ? 0 : -1;
}

static void mpi_abort(struct comm *c, int code)
{
	(void)c;
	MPI_Abort(MPI_COMM_WORLD, code);
	exit(code);
}

static void mpi_fini(struct comm *c)
{
	(void)c;
	MPI_Finalize();
}

static const struct comm_ops mpi_ops = {
	"mpi", mpi_allreduce, mpi_allreduce_d, mpi_bcast, mpi_barrier, mpi_abort, mpi_fini,
};

static int mpi_setup(struct comm *c, int *argc, char ***argv, double wait_s, struct nt_err *err)
{
	int provided = 0, rc;
	MPI_Comm local;

	/* MPI_Init waits for every rank (the launcher's fence), with no
	 * timeout of its own: a peer stopped or lost before it would hang
	 * this rank for ever */
	comm_deadline_set(wait_s, -1, "MPI_Init (every rank's set-up)");
	rc = MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided);
	comm_deadline_clear();
	if (rc != MPI_SUCCESS)
		return mpi_fail(rc, "MPI_Init_thread", err);
	if (provided < MPI_THREAD_SERIALIZED) {
		err_set(err, -ENOTSUP, "MPI provides thread level %d; the communication thread needs SERIALIZED",
			provided);
		MPI_Finalize();
		return -ENOTSUP;
	}
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	MPI_Comm_rank(MPI_COMM_WORLD, &c->rank);
	MPI_Comm_size(MPI_COMM_WORLD, &c->world);
	MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, c->rank, MPI_INFO_NULL, &local);
	MPI_Comm_rank(local, &c->local_rank);
	MPI_Comm_size(local, &c->local_size);
	MPI_Comm_free(&local);
	c->ops = &mpi_ops;
	return 0;
}
#endif

const char *comm_mpi_version(void)
{
#ifdef HAVE_MPI
	static char v[64];

	snprintf(v, sizeof(v), "yes (MPI %d.%d, Open MPI %d.%d.%d)", MPI_VERSION, MPI_SUBVERSION,
#ifdef OMPI_MAJOR_VERSION
		 OMPI_MAJOR_VERSION, OMPI_MINOR_VERSION, OMPI_RELEASE_VERSION
#else
		 0, 0, 0
#endif
	);
	return v;
#else
	return "no (built without libopenmpi-dev: make rebuilds the harness once it is installed)";
#endif
}

int comm_init(struct comm *c, const char *kind, int *argc, char ***argv, double wait_s, struct nt_err *err)
{
	int under_mpirun = getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMI_SIZE") || getenv("PMIX_RANK");

	memset(c, 0, sizeof(*c));
	if (!strcmp(kind, "mpi") || (!strcmp(kind, "auto") && under_mpirun)) {
#ifdef HAVE_MPI
		return mpi_setup(c, argc, argv, wait_s, err);
#else
		(void)argc, (void)argv;
		return err_set(err, -ENOTSUP, "built without MPI: run a single process (or install libopenmpi-dev and run make again: it rebuilds the harness)");
#endif
	}
	if (strcmp(kind, "none") && strcmp(kind, "auto") && strcmp(kind, "tcp")) {
		return err_set(err, -EINVAL, "--comm %s: expected auto, mpi, tcp or none", kind);
	}
	/* the torchrun environment without mpirun: a TCP rendezvous */
	const char *ws = getenv("WORLD_SIZE");

	if (!strcmp(kind, "tcp") || (!strcmp(kind, "auto") && ws && strcmp(ws, "1") && strcmp(ws, "0")))
		return comm_tcp_setup(c, wait_s, err);
	(void)argc, (void)argv;
	c->ops = &none_ops;
	c->world = c->local_size = 1;
	return 0;
}
