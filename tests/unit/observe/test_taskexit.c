/* SPDX-License-Identifier: MIT */
/* test_taskexit.c — the taskstats exit records: the kernel's own bytes
 * (tests/fixtures/taskstats/, captured by tests/tools/capture-taskstats.py,
 * which uses nothing of ours), every refusal of a malformed message, and
 * the live listener: a child that spins on a CPU and exits is in the
 * records, on that CPU, with its CPU time. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <linux/taskstats.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "observe/taskexit.h"
#include "observe/taskexit_test.h"
#include "test_util.h"

#define FIX "tests/fixtures/taskstats/exit-6.18"

struct seen {
	int n;
	struct taskexit_rec r[64];
	int stop_after;              /* > 0: fn says stop at that record */
	int want;                    /* > 0: keep only this pid's records */
};

static int keep(const struct taskexit_rec *r, void *arg)
{
	struct seen *s = arg;

	if (s->want && r->pid != s->want)
		return 0;
	if (s->n < 64)
		s->r[s->n] = *r;
	s->n++;
	return s->stop_after && s->n == s->stop_after ? -ECANCELED : 0;
}

static size_t load(const char *rel, unsigned char *buf, size_t size)
{
	char path[4096];
	FILE *f = fopen(test_path(path, sizeof(path), rel), "rb");
	size_t n;

	assert_non_null(f);
	n = fread(buf, 1, size, f);
	fclose(f);
	return n;
}

static const struct taskexit_rec *find(const struct seen *s, int pid)
{
	for (int i = 0; i < s->n && i < 64; i++)
		if (s->r[i].pid == pid)
			return &s->r[i];
	return NULL;
}

/* The captured datagrams: the README's tasks, each in a record of its own. */
static void test_parse_captured(void **state)
{
	unsigned char buf[4096];
	struct seen s = { 0 };
	struct nt_err err = { 0 };
	const struct taskexit_rec *r;

	(void)state;
	for (int i = 0; i < 5; i++) {
		char rel[256];
		size_t n;

		snprintf(rel, sizeof(rel), FIX "/exit-%d.bin", i);
		n = load(rel, buf, sizeof(buf));
		assert_int_equal(taskexit_parse(buf, n, 1, keep, &s, &err), 1);
	}
	assert_int_equal(s.n, 5);
	/* pid 10863: a forked child of pid 10822 (python3) that spun 0.2 s */
	r = find(&s, 10863);
	assert_non_null(r);
	assert_int_equal(r->tgid, 10863);
	assert_int_equal(r->ppid, 10822);
	assert_int_equal(r->cpu, 1);
	assert_string_equal(r->comm, "python3");
	assert_int_equal(r->policy, SCHED_OTHER);
	assert_true(r->run_ns > 150000000ull && r->run_ns < 400000000ull);
	assert_true(r->run_exact);
	assert_int_equal(r->run_ns, 197290984);         /* the scheduler's, not the ticks' 200000000 */
	assert_true(r->utime_us + r->stime_us > 100000);
	/* pid 10870: /bin/true, renamed by its exec */
	r = find(&s, 10870);
	assert_non_null(r);
	assert_string_equal(r->comm, "true");
	assert_int_equal(r->ppid, 10822);
	assert_true(r->run_ns < 50000000ull);
	/* thread 10881 of 10822: its own record, its process's tgid */
	r = find(&s, 10881);
	assert_non_null(r);
	assert_int_equal(r->tgid, 10822);
	assert_string_equal(r->comm, "capthread");
}

/* Build one message: a generic header and an AGGR_PID nest holding PID and
 * STATS of stats_len bytes (the kernel's layout). */
static size_t message(unsigned char *buf, const struct taskstats *ts, size_t stats_len, int type)
{
	struct nlmsghdr h = { 0 };
	struct genlmsghdr g = { .cmd = TASKSTATS_CMD_NEW, .version = 1 };
	struct nlattr nest = { 0 }, pid = { .nla_len = NLA_HDRLEN + 4, .nla_type = TASKSTATS_TYPE_PID },
		      st = { .nla_len = (__u16)(NLA_HDRLEN + stats_len), .nla_type = TASKSTATS_TYPE_STATS };
	size_t off = NLMSG_HDRLEN;
	__u32 p = ts->ac_pid;

	memcpy(buf + off, &g, sizeof(g));
	off += GENL_HDRLEN;
	nest.nla_type = (__u16)type;
	nest.nla_len = (__u16)(NLA_HDRLEN + NLA_ALIGN(pid.nla_len) + NLA_ALIGN(st.nla_len));
	memcpy(buf + off, &nest, sizeof(nest));
	off += NLA_HDRLEN;
	memcpy(buf + off, &pid, sizeof(pid));
	memcpy(buf + off + NLA_HDRLEN, &p, 4);
	off += NLA_ALIGN(pid.nla_len);
	memcpy(buf + off, &st, sizeof(st));
	memset(buf + off + NLA_HDRLEN, 0, NLA_ALIGN(stats_len));
	memcpy(buf + off + NLA_HDRLEN, ts, stats_len < sizeof(*ts) ? stats_len : sizeof(*ts));
	off += NLA_ALIGN(st.nla_len);
	h.nlmsg_len = (__u32)off;
	h.nlmsg_type = 0x17;
	memcpy(buf, &h, sizeof(h));
	return off;
}

/* Records of older and newer kernels, the per-process sums skipped, and
 * each refusal: named by offset, with nothing given past the bad part. */
static void test_parse_edges(void **state)
{
	static unsigned char buf[8192];
	struct taskstats ts = { 0 };
	struct seen s = { 0 };
	struct nt_err err = { 0 };
	size_t n, m;

	(void)state;
	ts.version = 8;
	ts.ac_pid = 42;
	ts.ac_ppid = 7;
	ts.ac_tgid = 40;
	ts.ac_nice = (__u8)-5;
	ts.ac_sched = SCHED_FIFO;
	ts.cpu_run_real_total = 124000000;      /* utime + stime, ticks */
	ts.cpu_run_virtual_total = 123456789;   /* the scheduler's */
	ts.ac_utime = 100000;
	ts.ac_stime = 24000;
	memcpy(ts.ac_comm, "a-comm-of-exactly-thirty-two-ch!", 32);    /* no NUL in the kernel's field */
	/* a version-8 record ends before ac_tgid: tgid unknown */
	n = message(buf, &ts, offsetof(struct taskstats, ac_tgid), TASKSTATS_TYPE_AGGR_PID);
	assert_int_equal(taskexit_parse(buf, n, 3, keep, &s, &err), 1);
	assert_int_equal(s.r[0].tgid, 0);
	assert_int_equal(s.r[0].pid, 42);
	assert_int_equal(s.r[0].nice, -5);
	assert_int_equal(s.r[0].policy, SCHED_FIFO);
	assert_int_equal(s.r[0].cpu, 3);
	assert_int_equal(strlen(s.r[0].comm), 31);
	assert_int_equal(s.r[0].run_ns, 123456789);
	assert_true(s.r[0].run_exact);
	/* a kernel without delay accounting: utime + stime, not exact */
	s.n = 0;
	ts.cpu_run_virtual_total = 0;
	n = message(buf, &ts, sizeof(ts), TASKSTATS_TYPE_AGGR_PID);
	assert_int_equal(taskexit_parse(buf, n, 3, keep, &s, &err), 1);
	assert_int_equal(s.r[0].run_ns, 124000000);
	assert_false(s.r[0].run_exact);
	ts.cpu_run_virtual_total = 123456789;
	/* a longer record of a later kernel: read as a prefix */
	s.n = 0;
	n = message(buf, &ts, sizeof(ts) + 40, TASKSTATS_TYPE_AGGR_PID);
	assert_int_equal(taskexit_parse(buf, n, 0, keep, &s, &err), 1);
	assert_int_equal(s.r[0].tgid, 40);
	/* two messages in one datagram; the per-process sums skipped */
	s.n = 0;
	m = message(buf + n, &ts, sizeof(ts), TASKSTATS_TYPE_AGGR_TGID);
	assert_int_equal(taskexit_parse(buf, n + m, 0, keep, &s, &err), 1);
	/* fn stops: its number as is, err untouched */
	s = (struct seen){ .stop_after = 1 };
	m = message(buf + n, &ts, sizeof(ts), TASKSTATS_TYPE_AGGR_PID);
	assert_int_equal(taskexit_parse(buf, n + m, 0, keep, &s, &err), -ECANCELED);
	assert_int_equal(s.n, 1);
	assert_int_equal(err.code, 0);
	/* a record too short to hold the fields read */
	s.n = 0;
	n = message(buf, &ts, 40, TASKSTATS_TYPE_AGGR_PID);
	assert_int_equal(taskexit_parse(buf, n, 0, keep, &s, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "offset 36: a task record of 40 bytes"));
	assert_int_equal(s.n, 0);
	/* every truncation of a good message: refused, never read past */
	n = message(buf, &ts, sizeof(ts), TASKSTATS_TYPE_AGGR_PID);
	for (size_t cut = 1; cut < n; cut++) {
		unsigned char *copy = malloc(cut);
		int r;

		memcpy(copy, buf, cut);
		err = (struct nt_err){ 0 };
		s.n = 0;
		r = taskexit_parse(copy, cut, 0, keep, &s, &err);
		assert_int_equal(r, -EINVAL);
		assert_int_equal(s.n, 0);
		assert_non_null(strstr(err.msg, "taskstats: offset "));
		free(copy);
	}
	/* an attribute longer than its message */
	n = message(buf, &ts, sizeof(ts), TASKSTATS_TYPE_AGGR_PID);
	buf[NLMSG_HDRLEN + GENL_HDRLEN] = 0xff;
	buf[NLMSG_HDRLEN + GENL_HDRLEN + 1] = 0xff;
	assert_int_equal(taskexit_parse(buf, n, 0, keep, &s, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "an attribute of length 65535"));
	/* pid 0 */
	ts.ac_pid = 0;
	n = message(buf, &ts, sizeof(ts), TASKSTATS_TYPE_AGGR_PID);
	assert_int_equal(taskexit_parse(buf, n, 0, keep, &s, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "with pid 0"));
	/* the kernel's error answer, and its acknowledgement */
	{
		struct nlmsghdr h = { .nlmsg_len = NLMSG_LENGTH(sizeof(struct nlmsgerr)), .nlmsg_type = NLMSG_ERROR };
		struct nlmsgerr e = { .error = -EPERM };

		memset(buf, 0, sizeof(buf));
		memcpy(buf, &h, sizeof(h));
		memcpy(buf + NLMSG_HDRLEN, &e, sizeof(e));
		assert_int_equal(taskexit_parse(buf, h.nlmsg_len, 0, keep, &s, &err), -EIO);
		assert_non_null(strstr(err.msg, "operation not permitted"));
		e.error = 0;
		memcpy(buf + NLMSG_HDRLEN, &e, sizeof(e));
		assert_int_equal(taskexit_parse(buf, h.nlmsg_len, 0, keep, &s, &err), 0);
	}
	assert_int_equal(taskexit_parse(buf, 0, 0, keep, &s, &err), 0);
}

/* The live listener: a child pinned to one CPU spins 0.1 s and exits; its
 * record comes on that CPU's socket with about that much CPU time. */
static void test_live(void **state)
{
	struct nt_err err = { 0 };
	struct taskexit *t;
	struct seen s = { 0 };
	const struct taskexit_rec *r = NULL;
	cpu_set_t set;
	int cpu, status;
	pid_t pid;

	(void)state;
	if (geteuid() != 0)
		test_skip_host("root", "the taskstats listener needs root (CAP_NET_ADMIN)");
	if (access("/proc/self/task", F_OK) != 0)
		test_skip_host("taskstats", "no /proc");
	t = taskexit_open(&err);
	if (!t && (err.code == -ENOENT || err.code == -EPERM))
		test_skip_host("taskstats", "%s", err.msg);
	assert_non_null(t);
	assert_int_equal(sched_getaffinity(0, sizeof(set), &set), 0);
	for (cpu = CPU_SETSIZE - 1; cpu > 0 && !CPU_ISSET(cpu, &set); cpu--)
		;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct timespec a, b;
		cpu_set_t one;

		CPU_ZERO(&one);
		CPU_SET(cpu, &one);
		sched_setaffinity(0, sizeof(one), &one);
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
		do
			clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
		while ((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec) < 100000000L);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	s.want = pid;
	for (int tries = 0; tries < 50 && !(r = find(&s, pid)); tries++) {
		assert_true(taskexit_drain(t, keep, &s) >= 0);
		usleep(20000);
	}
	assert_non_null(r);
	assert_int_equal(r->cpu, cpu);
	assert_int_equal(r->tgid, pid);
	assert_int_equal(r->ppid, getpid());
	assert_true(r->run_ns >= 100000000ull && r->run_ns < 1000000000ull);
	if (r->run_exact)       /* the scheduler's time: past the 100 ms the child read */
		assert_true(r->run_ns > 100000000ull);
	taskexit_close(t);
	taskexit_close(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_captured),
		cmocka_unit_test(test_parse_edges),
		cmocka_unit_test(test_live),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
