/* SPDX-License-Identifier: MIT */
/* taskexit.c — exiting tasks' CPU time from taskstats (see taskexit.h). */
#include "observe/taskexit.h"
#include "observe/taskexit_test.h"

#include <errno.h>
#include <fcntl.h>
#include <hwloc.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <linux/taskstats.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "base/cpulist.h"

#define ONLINE "/sys/devices/system/cpu/online"
#define RCVBUF (1 << 20)                /* a burst of exits between two drains */

struct taskexit {
	int family;
	int n;
	int *fd, *cpu;
	uint64_t lost;
	unsigned char *buf;          /* one datagram */
};
#define BUFLEN (1 << 16)

/* ---- the format --------------------------------------------------------- */

/* The fields read, and the length a record must have for each: the kernel
 * sends its own struct taskstats, longer in newer versions (fields are only
 * appended), so a record is read as a prefix of ours. */
#define TS_NEED offsetof(struct taskstats, ac_btime)   /* up to ac_ppid (v1); utime and stime, after, read as 0 if absent */
#define TS_TGID_END (offsetof(struct taskstats, ac_tgid) + sizeof(__u32))

static int record(const void *data, size_t len, int cpu, struct taskexit_rec *r, size_t off, struct nt_err *err)
{
	struct taskstats ts;

	if (len < TS_NEED)
		return err_set(err, -EINVAL, "taskstats: offset %zu: a task record of %zu bytes (at least %zu expected)", off,
			       len, (size_t)TS_NEED);
	memset(&ts, 0, sizeof(ts));
	memcpy(&ts, data, len < sizeof(ts) ? len : sizeof(ts));
	if (ts.ac_pid == 0 || ts.ac_pid > INT32_MAX || ts.ac_ppid > INT32_MAX ||
	    (len >= TS_TGID_END && ts.ac_tgid > INT32_MAX))
		return err_set(err, -EINVAL, "taskstats: offset %zu: a task record with pid %u", off, ts.ac_pid);
	memset(r, 0, sizeof(*r));
	r->cpu = cpu;
	r->pid = (int)ts.ac_pid;
	r->tgid = len >= TS_TGID_END ? (int)ts.ac_tgid : 0;
	r->ppid = (int)ts.ac_ppid;
	memcpy(r->comm, ts.ac_comm, sizeof(r->comm) - 1 < sizeof(ts.ac_comm) ? sizeof(r->comm) - 1 : sizeof(ts.ac_comm));
	r->comm[sizeof(r->comm) - 1] = '\0';
	r->policy = ts.ac_sched;
	r->nice = (signed char)ts.ac_nice;
	/* the scheduler's sum_exec_runtime (schedstat's first field);
	 * cpu_run_real_total is utime + stime, in ticks.  Both are filled
	 * only with delay accounting built in: else the ticks of ac_utime */
	if (ts.cpu_run_virtual_total) {
		r->run_ns = ts.cpu_run_virtual_total;
		r->run_exact = true;
	} else {
		r->run_ns = (ts.ac_utime + ts.ac_stime) * 1000ull;
	}
	r->utime_us = ts.ac_utime;
	r->stime_us = ts.ac_stime;
	return 0;
}

/* The attributes at p[0..len) (offset off into the datagram): *pid_stats
 * set to the TASKSTATS_TYPE_STATS of an AGGR_PID nest, or recursion into
 * that nest.  Returns records given, or an error / fn's non-zero. */
static int attrs(const unsigned char *p, size_t len, size_t off, int cpu, bool in_pid,
		 int (*fn)(const struct taskexit_rec *, void *), void *arg, struct nt_err *err)
{
	int given = 0;

	while (len > 0) {
		struct nlattr na;
		size_t alen, step;
		int type, r;

		if (len < NLA_HDRLEN)
			return err_set(err, -EINVAL, "taskstats: offset %zu: %zu bytes where an attribute header is due", off,
				       len);
		memcpy(&na, p, sizeof(na));
		alen = na.nla_len;
		if (alen < NLA_HDRLEN || alen > len)
			return err_set(err, -EINVAL, "taskstats: offset %zu: an attribute of length %zu in %zu bytes", off,
				       alen, len);
		type = na.nla_type & NLA_TYPE_MASK;
		r = 0;
		if (!in_pid && type == TASKSTATS_TYPE_AGGR_PID) {
			r = attrs(p + NLA_HDRLEN, alen - NLA_HDRLEN, off + NLA_HDRLEN, cpu, true, fn, arg, err);
			if (r < 0)
				return r;
			given += r;
		} else if (in_pid && type == TASKSTATS_TYPE_STATS) {
			struct taskexit_rec rec;

			r = record(p + NLA_HDRLEN, alen - NLA_HDRLEN, cpu, &rec, off + NLA_HDRLEN, err);
			if (r < 0)
				return r;
			r = fn(&rec, arg);
			if (r < 0)
				return r;
			given++;
		}
		/* AGGR_TGID (a process's sums, its threads' records again),
		 * PID, TGID, NULL padding and types of later kernels: skipped */
		step = NLA_ALIGN(alen);
		if (step > len)
			step = len;
		p += step;
		off += step;
		len -= step;
	}
	return given;
}

int taskexit_parse(const void *buf, size_t len, int cpu, int (*fn)(const struct taskexit_rec *, void *), void *arg,
		   struct nt_err *err)
{
	const unsigned char *p = buf;
	size_t off = 0;
	int given = 0;

	while (len - off >= sizeof(struct nlmsghdr)) {
		struct nlmsghdr h;
		size_t step;
		int r;

		memcpy(&h, p + off, sizeof(h));
		if (h.nlmsg_len < sizeof(h) || h.nlmsg_len > len - off)
			return err_set(err, -EINVAL, "taskstats: offset %zu: a message of length %u in %zu bytes", off,
				       h.nlmsg_len, len - off);
		if (h.nlmsg_type == NLMSG_ERROR) {
			struct nlmsgerr e;

			if (h.nlmsg_len < NLMSG_LENGTH(sizeof(e)))
				return err_set(err, -EINVAL, "taskstats: offset %zu: a short error message", off);
			memcpy(&e, p + off + NLMSG_HDRLEN, sizeof(e));
			if (e.error)
				return err_set(err, -EIO, "taskstats: the kernel answered: %s",
					       e.error < 0 && e.error > -4096 ? nt_strerror(-e.error) : "an unknown error");
		} else if (h.nlmsg_type >= NLMSG_MIN_TYPE) {
			if (h.nlmsg_len < NLMSG_LENGTH(GENL_HDRLEN))
				return err_set(err, -EINVAL, "taskstats: offset %zu: a message without its generic header",
					       off);
			r = attrs(p + off + NLMSG_LENGTH(GENL_HDRLEN), h.nlmsg_len - NLMSG_LENGTH(GENL_HDRLEN),
				  off + NLMSG_LENGTH(GENL_HDRLEN), cpu, false, fn, arg, err);
			if (r < 0)
				return r;
			given += r;
		}
		/* NLMSG_NOOP, NLMSG_DONE, an acknowledgement: nothing to give */
		step = NLMSG_ALIGN(h.nlmsg_len);
		if (step > len - off)
			step = len - off;
		off += step;
	}
	if (off != len)
		return err_set(err, -EINVAL, "taskstats: offset %zu: %zu trailing bytes", off, len - off);
	return given;
}

/* ---- the sockets ---------------------------------------------------------- */

struct req {
	struct nlmsghdr n;
	struct genlmsghdr g;
	unsigned char attr[128];
};

static void req_init(struct req *q, int type, int cmd, int flags)
{
	memset(q, 0, sizeof(*q));
	q->n.nlmsg_len = NLMSG_LENGTH(GENL_HDRLEN);
	q->n.nlmsg_type = (__u16)type;
	q->n.nlmsg_flags = (__u16)(NLM_F_REQUEST | flags);
	q->g.cmd = (__u8)cmd;
	q->g.version = 1;
}

static void req_attr(struct req *q, int type, const void *data, size_t len)
{
	struct nlattr na = { .nla_len = (__u16)(NLA_HDRLEN + len), .nla_type = (__u16)type };
	unsigned char *at = (unsigned char *)q + NLMSG_ALIGN(q->n.nlmsg_len);

	memcpy(at, &na, sizeof(na));
	memcpy(at + NLA_HDRLEN, data, len);
	q->n.nlmsg_len = NLMSG_ALIGN(q->n.nlmsg_len) + NLA_ALIGN(na.nla_len);
}

static int nl_socket(void)
{
	struct sockaddr_nl a = { .nl_family = AF_NETLINK };
	struct timeval tv = { .tv_sec = 2 };
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_GENERIC);

	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0) {
		int e = -errno;

		close(fd);
		return e;
	}
	return fd;
}

/* The taskstats family's id; -errno with err. */
static int family_id(struct nt_err *err)
{
	unsigned char buf[4096];
	struct req q;
	int fd = nl_socket(), id = -ENOENT;
	ssize_t n;

	if (fd < 0)
		return err_set(err, fd, "taskstats: a netlink socket: %s", nt_strerror(-fd));
	req_init(&q, GENL_ID_CTRL, CTRL_CMD_GETFAMILY, 0);
	req_attr(&q, CTRL_ATTR_FAMILY_NAME, TASKSTATS_GENL_NAME, sizeof(TASKSTATS_GENL_NAME));
	if (send(fd, &q, q.n.nlmsg_len, 0) < 0 || (n = recv(fd, buf, sizeof(buf), 0)) < 0) {
		id = -errno;
		close(fd);
		return err_set(err, id, "taskstats: asking for the family: %s", nt_strerror(-id));
	}
	close(fd);
	if ((size_t)n >= NLMSG_LENGTH(GENL_HDRLEN)) {
		struct nlmsghdr h;

		memcpy(&h, buf, sizeof(h));
		if (h.nlmsg_type != NLMSG_ERROR && h.nlmsg_len <= (size_t)n) {
			size_t off = NLMSG_LENGTH(GENL_HDRLEN);

			while (off + NLA_HDRLEN <= h.nlmsg_len) {
				struct nlattr na;
				__u16 v;

				memcpy(&na, buf + off, sizeof(na));
				if (na.nla_len < NLA_HDRLEN || off + na.nla_len > h.nlmsg_len)
					break;
				if ((na.nla_type & NLA_TYPE_MASK) == CTRL_ATTR_FAMILY_ID && na.nla_len >= NLA_HDRLEN + 2) {
					memcpy(&v, buf + off + NLA_HDRLEN, sizeof(v));
					id = v;
				}
				off += NLA_ALIGN(na.nla_len);
			}
		}
	}
	if (id < 0)
		return err_set(err, -ENOENT, "taskstats: the kernel has no taskstats family (CONFIG_TASKSTATS)");
	return id;
}

/* Register fd for exits on cpu, or deregister it.  The kernel adds the
 * listener before it answers, so exit records of that CPU may come before
 * its acknowledgement (the one error message of our sequence number):
 * those are skipped.  0 or -errno (-ETIMEDOUT: no answer within the
 * socket's 2 s). */
static int cpu_register(int fd, int family, int cpu, int cmd)
{
	unsigned char buf[4096];
	char mask[16];
	struct req q;
	__u32 seq = (__u32)cpu + 1;

	snprintf(mask, sizeof(mask), "%d", cpu);
	req_init(&q, family, TASKSTATS_CMD_GET, cmd == TASKSTATS_CMD_ATTR_REGISTER_CPUMASK ? NLM_F_ACK : 0);
	q.n.nlmsg_seq = seq;
	req_attr(&q, cmd, mask, strlen(mask) + 1);
	if (send(fd, &q, q.n.nlmsg_len, 0) < 0)
		return -errno;
	if (cmd != TASKSTATS_CMD_ATTR_REGISTER_CPUMASK)
		return 0;
	for (int skipped = 0; skipped < 100000; skipped++) {
		ssize_t n = recv(fd, buf, sizeof(buf), 0);
		struct nlmsghdr h;
		struct nlmsgerr e;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno == EAGAIN || errno == EWOULDBLOCK ? -ETIMEDOUT : -errno;
		if ((size_t)n < NLMSG_LENGTH(sizeof(e)))
			continue;
		memcpy(&h, buf, sizeof(h));
		if (h.nlmsg_type != NLMSG_ERROR || h.nlmsg_seq != seq)
			continue;       /* an exit record, already */
		memcpy(&e, buf + NLMSG_HDRLEN, sizeof(e));
		return e.error <= 0 ? e.error : -EIO;
	}
	return -EIO;
}

struct taskexit *taskexit_open(struct nt_err *err)
{
	hwloc_bitmap_t set = hwloc_bitmap_alloc();
	struct taskexit *t = calloc(1, sizeof(*t));
	char text[4096];
	ssize_t n = -1;
	int fd, cpu, r;

	if (!set || !t) {
		err_set(err, -ENOMEM, "out of memory");
		goto fail;
	}
	fd = open(ONLINE, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, text, sizeof(text) - 1);
		close(fd);
	}
	if (n <= 0) {
		err_set(err, -ENOENT, "taskstats: %s: %s", ONLINE, n < 0 ? nt_strerror(errno) : "empty");
		goto fail;
	}
	text[n] = '\0';
	text[strcspn(text, "\n")] = '\0';
	if (cpulist_parse(text, set) < 0 || hwloc_bitmap_weight(set) <= 0) {
		err_set(err, -EINVAL, "taskstats: %s: '%.64s' is not a CPU list", ONLINE, text);
		goto fail;
	}
	if (hwloc_bitmap_weight(set) > TASKEXIT_MAX_CPUS) {
		err_set(err, -E2BIG, "taskstats: %d CPUs online, a listener opens at most %d sockets",
			hwloc_bitmap_weight(set), TASKEXIT_MAX_CPUS);
		goto fail;
	}
	r = family_id(err);
	if (r < 0)
		goto fail;
	t->family = r;
	t->fd = calloc((size_t)hwloc_bitmap_weight(set), sizeof(int));
	t->cpu = calloc((size_t)hwloc_bitmap_weight(set), sizeof(int));
	t->buf = malloc(BUFLEN);
	if (!t->fd || !t->cpu || !t->buf) {
		err_set(err, -ENOMEM, "out of memory");
		goto fail;
	}
	hwloc_bitmap_foreach_begin(cpu, set) {
		int size = RCVBUF;

		fd = nl_socket();
		if (fd < 0) {
			err_set(err, fd, "taskstats: a netlink socket: %s", nt_strerror(-fd));
			goto fail;
		}
		t->fd[t->n] = fd;
		t->cpu[t->n++] = cpu;
		/* past net.core.rmem_max only as root; the default else */
		if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size)) < 0)
			(void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
		r = cpu_register(fd, t->family, cpu, TASKSTATS_CMD_ATTR_REGISTER_CPUMASK);
		if (r < 0) {
			err_set(err, r, "taskstats: listening on CPU %d: %s%s", cpu, nt_strerror(-r),
				r == -EPERM ? " (needs CAP_NET_ADMIN)" : "");
			goto fail;
		}
		if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) < 0) {
			err_set(err, -errno, "taskstats: %s", nt_strerror(errno));
			goto fail;
		}
	}
	hwloc_bitmap_foreach_end();
	hwloc_bitmap_free(set);
	return t;
fail:
	hwloc_bitmap_free(set);
	taskexit_close(t);
	return NULL;
}

int taskexit_drain(struct taskexit *t, int (*fn)(const struct taskexit_rec *, void *), void *arg)
{
	int given = 0;

	if (!t)
		return 0;
	for (int i = 0; i < t->n; i++) {
		for (;;) {
			struct nt_err err = { 0 };
			ssize_t n = recv(t->fd[i], t->buf, BUFLEN, MSG_DONTWAIT);
			int r;

			if (n < 0) {
				if (errno == ENOBUFS) {         /* the kernel dropped some */
					t->lost++;
					continue;
				}
				if (errno == EINTR)
					continue;
				break;                          /* EAGAIN: drained */
			}
			if (n == 0)
				break;
			r = taskexit_parse(t->buf, (size_t)n, t->cpu[i], fn, arg, &err);
			if (r < 0 && !err.code)
				return r;                       /* fn's own */
			if (r < 0) {
				t->lost++;
				log_msg(LOG_DEBUG, "%s", err.msg);
			} else {
				given += r;
			}
		}
	}
	return given;
}

uint64_t taskexit_lost(const struct taskexit *t)
{
	return t ? t->lost : 0;
}

void taskexit_close(struct taskexit *t)
{
	if (!t)
		return;
	for (int i = 0; i < t->n; i++) {
		(void)cpu_register(t->fd[i], t->family, t->cpu[i], TASKSTATS_CMD_ATTR_DEREGISTER_CPUMASK);
		close(t->fd[i]);
	}
	free(t->fd);
	free(t->cpu);
	free(t->buf);
	free(t);
}
