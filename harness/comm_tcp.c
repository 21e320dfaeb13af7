/* SPDX-License-Identifier: MIT */
/* comm_tcp.c — the torchrun launch: collectives over TCP, with the
 * rendezvous at MASTER_ADDR:MASTER_PORT.
 *
 * torchrun (and Slurm scripts written for it) start each rank with RANK,
 * WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR and MASTER_PORT and
 * no MPI.  Rank 0 listens on MASTER_PORT; every other rank connects (retrying
 * while rank 0 starts), says who it is, and rank 0 answers once all have come.
 * That rendezvous is what the GPU path uses to hand NCCL's unique id to every
 * rank (a broadcast from rank 0); on the CPU it also carries the gradients:
 * a star through rank 0 (each rank sends, rank 0 sums and sends back), in
 * chunks, which for the few ranks of one host costs about what a ring does.
 * A peer that exits closes its socket: the others fail at once with a message
 * naming it (a silent peer is the DDP watchdog's, --timeout).
 */
#include "comm.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "nt_clock.h"

#define TCP_MAGIC 0x6e74746370763031ull   /* "nttcpv01" */
#define TCP_CHUNK ((size_t)1 << 20)      /* bytes per exchange of an all-reduce */

struct tcp {
	int n_fd;
	int *fd;                  /* rank 0: fd[r] for peers 1..world-1; others: fd[0] to rank 0 */
	unsigned char *tmp;       /* rank 0: one chunk from a peer */
};

struct hello {
	uint64_t magic;
	int32_t rank, world;
};

static int env_int(const char *name, int def)
{
	const char *v = getenv(name);
	char *end;
	long x;

	if (!v || !*v)
		return def;
	x = strtol(v, &end, 10);
	return *end || x < 0 || x > 1 << 20 ? -2 : (int)x;
}

static int send_all(int fd, const void *buf, size_t n)
{
	const char *p = buf;

	while (n > 0) {
		ssize_t k = send(fd, p, n, MSG_NOSIGNAL);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

/* 0; -1 on error (errno), or 1 when the peer closed the connection */
static int recv_all(int fd, void *buf, size_t n)
{
	char *p = buf;

	while (n > 0) {
		ssize_t k = recv(fd, p, n, 0);

		if (k < 0 && errno == EINTR)
			continue;
		if (k == 0)
			return 1;
		if (k < 0)
			return -1;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

static int peer_fail(int r, int peer, const char *what, struct nt_err *err)
{
	int e = errno;

	/* a peer killed with data still unread resets the connection rather
	 * than closing it: the same event */
	if (r == 1 || e == ECONNRESET || e == EPIPE)
		return err_set(err, -ECONNRESET, "tcp: rank %d closed the connection during %s (it exited or failed)",
			       peer, what);
	return err_set(err, e ? -e : -EIO, "tcp: %s with rank %d: %s", what, peer, strerror(e));
}

/* in-place sum over all ranks of n elements of size es (float or double) */
static int tcp_allreduce_any(struct comm *c, void *buf, size_t n, size_t es, struct nt_err *err)
{
	struct tcp *t = c->priv;
	unsigned char *b = buf;
	size_t bytes = n * es;

	for (size_t off = 0; off < bytes; off += TCP_CHUNK) {
		size_t len = bytes - off < TCP_CHUNK ? bytes - off : TCP_CHUNK;
		int r;

		if (c->rank != 0) {
			if (send_all(t->fd[0], b + off, len) < 0)
				return peer_fail(-1, 0, "all-reduce", err);
			if ((r = recv_all(t->fd[0], b + off, len)))
				return peer_fail(r, 0, "all-reduce", err);
			continue;
		}
		for (int p = 1; p < c->world; p++) {
			if ((r = recv_all(t->fd[p], t->tmp, len)))
				return peer_fail(r, p, "all-reduce", err);
			if (es == sizeof(float)) {
				float *x = (float *)(void *)(b + off), *y = (float *)(void *)t->tmp;

				for (size_t i = 0; i < len / es; i++)
					x[i] += y[i];
			} else {
				double *x = (double *)(void *)(b + off), *y = (double *)(void *)t->tmp;

				for (size_t i = 0; i < len / es; i++)
					x[i] += y[i];
			}
		}
		for (int p = 1; p < c->world; p++)
			if (send_all(t->fd[p], b + off, len) < 0)
				return peer_fail(-1, p, "all-reduce", err);
	}
	return 0;
}

static int tcp_allreduce(struct comm *c, float *buf, size_t n, struct nt_err *err)
{
	return tcp_allreduce_any(c, buf, n, sizeof(float), err);
}

static int tcp_allreduce_d(struct comm *c, double *buf, size_t n, struct nt_err *err)
{
	return tcp_allreduce_any(c, buf, n, sizeof(double), err);
}

static int tcp_bcast(struct comm *c, void *buf, size_t bytes, int root, struct nt_err *err)
{
	struct tcp *t = c->priv;
	int r;

	if (root != 0) {
		return err_set(err, -EINVAL, "tcp: broadcast from rank %d: only rank 0 is the root", root);
	}
	if (c->rank == 0) {
		for (int p = 1; p < c->world; p++)
			if (send_all(t->fd[p], buf, bytes) < 0)
				return peer_fail(-1, p, "broadcast", err);
	} else if ((r = recv_all(t->fd[0], buf, bytes))) {
		return peer_fail(r, 0, "broadcast", err);
	}
	return 0;
}

static int tcp_barrier(struct comm *c)
{
	double x = 0;

	return tcp_allreduce_d(c, &x, 1, NULL);
}

static void tcp_close(struct comm *c)
{
	struct tcp *t = c->priv;

	if (!t)
		return;
	for (int i = 0; i < t->n_fd; i++)
		if (t->fd[i] >= 0)
			close(t->fd[i]);
	free(t->fd);
	free(t->tmp);
	free(t);
	c->priv = NULL;
}

/* Called by whichever thread failed first, while another (the DDP
 * thread's bucket all-reduce) may still be inside a collective on the
 * same sockets and buffer: nothing is freed here (that thread would use
 * freed memory; exit frees it all anyway).  shutdown() makes the peers
 * see the connection close now, and wakes this process's other thread
 * out of its recv with an error.  Only the first caller exits. */
static void tcp_abort(struct comm *c, int code)
{
	static atomic_flag aborting = ATOMIC_FLAG_INIT;
	struct tcp *t = c->priv;

	if (atomic_flag_test_and_set(&aborting))
		for (;;)
			pause();        /* the first thread's exit ends the process (exit twice is undefined) */
	for (int i = 0; t && i < t->n_fd; i++)
		if (t->fd[i] >= 0)
			shutdown(t->fd[i], SHUT_RDWR);
	exit(code);
}

static void tcp_fini(struct comm *c)
{
	tcp_close(c);
}

static const struct comm_ops tcp_ops = {
	"tcp", tcp_allreduce, tcp_allreduce_d, tcp_bcast, tcp_barrier, tcp_abort, tcp_fini,
};

static void tune(int fd)
{
	int one = 1, big = 4 << 20;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &big, sizeof(big));
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &big, sizeof(big));
}

/* rank 0: listen, take world-1 hellos, answer each */
static int rendezvous_root(struct comm *c, struct tcp *t, const struct addrinfo *ai, double wait_s, struct nt_err *err)
{
	int one = 1, ls = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	double end = nt_mono_s() + wait_s;

	if (ls < 0 || setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(ls, ai->ai_addr, ai->ai_addrlen) < 0 || listen(ls, c->world) < 0) {
		int e = err_set(err, -errno, "tcp: rank 0 cannot listen on MASTER_ADDR:MASTER_PORT (%s:%s): %s",
				getenv("MASTER_ADDR"), getenv("MASTER_PORT"), strerror(errno));

		if (ls >= 0)
			close(ls);
		return e;
	}
	for (int got = 0; got < c->world - 1;) {
		struct timeval tv = { 1, 0 };
		struct hello h;
		fd_set fds;
		int fd;

		if (nt_mono_s() > end) {
			err_set(err, -ETIMEDOUT, "tcp: rendezvous: %d of %d ranks came within %.0f s", got + 1, c->world,
				 wait_s);
			close(ls);
			return -ETIMEDOUT;
		}
		FD_ZERO(&fds);
		FD_SET(ls, &fds);
		if (select(ls + 1, &fds, NULL, NULL, &tv) <= 0)
			continue;
		fd = accept4(ls, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			continue;
		if (recv_all(fd, &h, sizeof(h)) || h.magic != TCP_MAGIC || h.world != c->world || h.rank < 1 ||
		    h.rank >= c->world || t->fd[h.rank] >= 0) {
			err_set(err, -EPROTO, "tcp: rendezvous: a bad hello (rank %d of %d; this job has WORLD_SIZE=%d)%s",
				 h.magic == TCP_MAGIC ? h.rank : -1, h.magic == TCP_MAGIC ? h.world : -1, c->world,
				 h.magic == TCP_MAGIC && h.rank > 0 && h.rank < c->world && t->fd[h.rank] >= 0 ?
				 ": that rank came twice" : "");
			close(fd);
			close(ls);
			return -EPROTO;
		}
		tune(fd);
		t->fd[h.rank] = fd;
		got++;
	}
	close(ls);
	for (int p = 1; p < c->world; p++) {
		struct hello go = { TCP_MAGIC, 0, c->world };

		if (send_all(t->fd[p], &go, sizeof(go)) < 0)
			return peer_fail(-1, p, "rendezvous", err);
	}
	return 0;
}

/* other ranks: connect to rank 0 (retrying while it starts), hello, wait */
static int rendezvous_peer(struct comm *c, struct tcp *t, const struct addrinfo *ai, double wait_s, struct nt_err *err)
{
	double end = nt_mono_s() + wait_s;
	struct hello h = { TCP_MAGIC, c->rank, c->world }, go;
	int fd, r;

	for (;;) {
		fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
			break;
		if (fd >= 0)
			close(fd);
		if (nt_mono_s() > end) {
			return err_set(err, -ETIMEDOUT, "tcp: rank 0 at MASTER_ADDR:MASTER_PORT (%s:%s) did not answer within %.0f s",
				 getenv("MASTER_ADDR"), getenv("MASTER_PORT"), wait_s);
		}
		usleep(50000);
	}
	tune(fd);
	t->fd[0] = fd;
	if (send_all(fd, &h, sizeof(h)) < 0)
		return peer_fail(-1, 0, "rendezvous", err);
	if ((r = recv_all(fd, &go, sizeof(go))))
		return peer_fail(r, 0, "rendezvous", err);
	if (go.magic != TCP_MAGIC || go.world != c->world) {
		return err_set(err, -EPROTO, "tcp: rendezvous: rank 0 answered for a job of %d ranks, this one has %d",
			 go.world, c->world);
	}
	return 0;
}

int comm_tcp_setup(struct comm *c, double wait_s, struct nt_err *err)
{
	const char *addr = getenv("MASTER_ADDR"), *port = getenv("MASTER_PORT");
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *ai = NULL;
	struct tcp *t;
	int rank = env_int("RANK", -1), world = env_int("WORLD_SIZE", -1), r, g;

	if (rank < 0 || world < 1 || rank >= world) {
		return err_set(err, -EINVAL, "tcp: RANK=%s WORLD_SIZE=%s: expected 0 <= RANK < WORLD_SIZE (the torchrun environment)",
			 getenv("RANK") ? getenv("RANK") : "(unset)", getenv("WORLD_SIZE") ? getenv("WORLD_SIZE") : "(unset)");
	}
	if (!addr || !*addr || !port || !*port) {
		return err_set(err, -EINVAL, "tcp: MASTER_ADDR and MASTER_PORT must be set (the torchrun environment)");
	}
	if ((g = getaddrinfo(addr, port, &hints, &ai)) != 0) {
		return err_set(err, -EINVAL, "tcp: MASTER_ADDR:MASTER_PORT (%s:%s): %s", addr, port, gai_strerror(g));
	}
	t = calloc(1, sizeof(*t));
	if (t) {
		t->n_fd = rank == 0 ? world : 1;
		t->fd = malloc((size_t)t->n_fd * sizeof(int));
		t->tmp = rank == 0 ? malloc(TCP_CHUNK) : NULL;
	}
	if (!t || !t->fd || (rank == 0 && !t->tmp)) {
		err_set(err, -ENOMEM, "tcp: out of memory");
		freeaddrinfo(ai);
		if (t) {
			free(t->fd);
			free(t->tmp);
			free(t);
		}
		return -ENOMEM;
	}
	for (int i = 0; i < t->n_fd; i++)
		t->fd[i] = -1;
	c->priv = t;
	c->rank = rank;
	c->world = world;
	c->local_rank = env_int("LOCAL_RANK", rank);
	c->local_size = env_int("LOCAL_WORLD_SIZE", world);
	if (c->local_rank < 0 || c->local_size < 1 || c->local_rank >= c->local_size) {
		c->local_rank = rank;           /* unset or garbage: one host */
		c->local_size = world;
	}
	r = world == 1 ? 0 : rank == 0 ? rendezvous_root(c, t, ai, wait_s, err)
				       : rendezvous_peer(c, t, ai, wait_s, err);
	freeaddrinfo(ai);
	if (r) {
		tcp_close(c);
		return r;
	}
	c->ops = &tcp_ops;
	return 0;
}
