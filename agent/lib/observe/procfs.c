/* SPDX-License-Identifier: MIT */
/* procfs.c — see procfs.h.
 *
 * Divisions: the irq tables (header, a row, the whole file, look-ups);
 * a task's stat line; a process's cgroup lines.
 */
#include "observe/procfs.h"
#include "observe/procfs_test.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- /proc/interrupts and /proc/softirqs ---------------------------------- */

void procfs_irqtab_free(struct procfs_irqtab *t)
{
	if (!t)
		return;
	free(t->col_cpu);
	free(t->rows);
	free(t->counts);
	memset(t, 0, sizeof(*t));
}

/* The header: "CPU0 CPU1 CPU3 ..." (offline CPUs have no column). */
static int irqtab_header(const char *line, const char *end, struct procfs_irqtab *t)
{
	int cap = 0;

	for (const char *p = line; p < end;) {
		char *e;
		long cpu;

		p += strspn(p, " \t");
		if (p >= end)
			break;
		if (end - p < 4 || strncmp(p, "CPU", 3) || p[3] < '0' || p[3] > '9')
			return -EINVAL;
		cpu = strtol(p + 3, &e, 10);
		if (e == p + 3 || e > end || cpu < 0 || cpu >= PROCFS_MAX_CPUS || t->n_cols >= PROCFS_MAX_CPUS)
			return -EINVAL;
		if (t->n_cols == cap) {
			int *tmp = realloc(t->col_cpu, (size_t)(cap = cap ? 2 * cap : 64) * sizeof(int));

			if (!tmp)
				return -ENOMEM;
			t->col_cpu = tmp;
		}
		t->col_cpu[t->n_cols++] = (int)cpu;
		p = e;
	}
	return t->n_cols ? 0 : -EINVAL;
}

/* The text after the counts: a numbered line's device is its last word
 * ("IR-PCI-MSI 524288-edge nvme0q1"), a named line's text is all of it. */
static void irqtab_name(const char *p, const char *end, bool numbered, char *out, size_t size)
{
	const char *q;

	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	while (end > p && (end[-1] == ' ' || end[-1] == '\t'))
		end--;
	q = end;
	if (numbered)
		while (q > p && q[-1] != ' ' && q[-1] != '\t')
			q--;
	else
		q = p;
	snprintf(out, size, "%.*s", (int)(end - q), q);
}

/* Room for one more row (rows and counts grown together). */
static int irqtab_grow(struct procfs_irqtab *t, int *cap)
{
	int ncap = *cap ? 2 * *cap : 32;
	struct procfs_irq_row *r;
	uint64_t *c;

	if (t->n_rows < *cap)
		return 0;
	r = realloc(t->rows, (size_t)ncap * sizeof(*r));
	if (!r)
		return -ENOMEM;
	t->rows = r;
	c = realloc(t->counts, (size_t)ncap * (size_t)t->n_cols * sizeof(*c));
	if (!c)
		return -ENOMEM;
	t->counts = c;
	*cap = ncap;
	return 0;
}

/* One "LABEL: counts [text]" row into t; -ERANGE for a numbered row
 * without counts. */
static int irqtab_row(const char *line, const char *end, struct procfs_irqtab *t, int *cap)
{
	const char *colon = memchr(line, ':', (size_t)(end - line)), *p = line + strspn(line, " \t");
	struct procfs_irq_row *row;
	uint64_t *cnt;
	int k = 0, r;

	if (!colon || colon <= p || colon - p >= (long)sizeof(row->label) || t->n_rows >= PROCFS_IRQTAB_MAX_ROWS)
		return -EINVAL;
	r = irqtab_grow(t, cap);
	if (r < 0)
		return r;
	row = &t->rows[t->n_rows];
	cnt = &t->counts[(size_t)t->n_rows * (size_t)t->n_cols];
	memset(row, 0, sizeof(*row));
	snprintf(row->label, sizeof(row->label), "%.*s", (int)(colon - p), p);
	for (p = colon + 1; k < t->n_cols; k++) {
		const char *d = p + strspn(p, " \t");
		char *e;

		if (d >= end || *d < '0' || *d > '9')
			break;
		cnt[k] = strtoull(d, &e, 10);
		p = e;
	}
	if (k == 0 && procfs_irqtab_numbered(t, t->n_rows))
		return -ERANGE;          /* a device line always has its counts */
	for (int i = k; i < t->n_cols; i++)
		cnt[i] = 0;
	irqtab_name(p, end, procfs_irqtab_numbered(t, t->n_rows), row->name, sizeof(row->name));
	t->n_rows++;
	return 0;
}

/* The whole file; on error *ret_line is the line (from 1) and *ret_why
 * what was expected there. */
static int irqtab_parse(const char *buf, size_t len, struct procfs_irqtab *ret, int *ret_line, const char **ret_why)
{
	struct procfs_irqtab t = { 0 };
	char *copy = malloc(len + 1);     /* NUL-terminated: strto* stop at its end */
	const char *p, *end;
	int lineno = 0, cap = 0, r = 0;

	if (!copy)
		return -ENOMEM;
	memcpy(copy, buf, len);
	copy[len] = '\0';
	for (p = copy, end = copy + len; p < end && !r; lineno++) {
		const char *nl = memchr(p, '\n', (size_t)(end - p)), *le = nl ? nl : end;

		if (memchr(p, '\0', (size_t)(le - p)))
			r = -EINVAL;
		else if (lineno == 0)
			r = irqtab_header(p, le, &t);
		else if (p + strspn(p, " \t") < le)       /* blank lines are skipped */
			r = irqtab_row(p, le, &t, &cap);
		p = le + 1;
	}
	free(copy);
	if (!r && lineno == 0)
		r = -EINVAL;
	if (r) {
		*ret_line = lineno ? lineno : 1;
		*ret_why = *ret_line == 1 ? "a header of 'CPUn' columns"
			 : r == -ERANGE ? "a count per CPU after a numbered 'IRQ:'" : "'LABEL: count ...'";
		procfs_irqtab_free(&t);
		return r == -ENOMEM ? r : -EINVAL;
	}
	*ret = t;
	return 0;
}

int procfs_irqtab_parse(const char *buf, size_t len, struct procfs_irqtab *ret, struct nt_err *err)
{
	const char *why = "";
	int line = 0, r = irqtab_parse(buf, len, ret, &line, &why);

	if (r == -ENOMEM)
		return err_set(err, r, "out of memory");
	return r ? err_set(err, r, "line %d: expected %s", line, why) : 0;
}

int procfs_irqtab_read(const struct fsroot *root, const char *relpath, struct procfs_irqtab *ret,
		       struct nt_err *err)
{
	char *buf = malloc(PROCFS_IRQ_FILE_MAX), shown[4096];
	ssize_t n = buf ? fsroot_read_exact(root, relpath, buf, PROCFS_IRQ_FILE_MAX) : -ENOMEM;
	const char *why = "";
	int line = 0, r;

	memset(ret, 0, sizeof(*ret));
	if (n < 0) {
		free(buf);
		return n == -ENOMEM ? err_set(err, -ENOMEM, "out of memory")
				    : err_set(err, (int)n, "%s: %s", fsroot_display(root, relpath, shown, sizeof(shown)),
					      nt_strerror((int)-n));
	}
	r = irqtab_parse(buf, (size_t)n, ret, &line, &why);
	free(buf);
	if (r == -ENOMEM)
		return err_set(err, r, "out of memory");
	if (r < 0)
		return err_set(err, r, "%s:%d: expected %s", fsroot_display(root, relpath, shown, sizeof(shown)),
			       line, why);
	return 0;
}

bool procfs_irqtab_numbered(const struct procfs_irqtab *t, int i)
{
	const char *l = t->rows[i].label;

	return l[0] && strspn(l, "0123456789") == strlen(l);
}

uint64_t procfs_irqtab_row_sum(const struct procfs_irqtab *t, int i)
{
	uint64_t sum = 0;

	for (int k = 0; k < t->n_cols; k++)
		sum += t->counts[(size_t)i * (size_t)t->n_cols + (size_t)k];
	return sum;
}

/* ---- /proc/PID/stat ------------------------------------------------------- */

/* Fields of proc/PID/stat by their number in proc(5) (1: pid, 2: comm). */
enum stat_field {
	SF_STATE = 3,
	SF_PPID = 4,
	SF_FLAGS = 9,
	SF_UTIME = 14,
	SF_STIME = 15,
	SF_NICE = 19,
	SF_STARTTIME = 22,
	SF_PROCESSOR = 39,
	SF_RT_PRIORITY = 40,
	SF_POLICY = 41,
	SF_N
};

int procfs_pid_stat_parse(const char *buf, size_t len, struct procfs_pid_stat *ret, struct nt_err *err)
{
	char line[1024];
	const char *open, *close, *p;
	long long v[SF_N] = { 0 };
	struct procfs_pid_stat st = { 0 };
	int k = SF_STATE;
	char *end;

	if (len >= sizeof(line) || memchr(buf, '\0', len))
		return err_set(err, -EINVAL, "expected one stat line of at most %zu bytes", sizeof(line) - 1);
	memcpy(line, buf, len);
	line[len] = '\0';
	open = strchr(line, '(');
	close = strrchr(line, ')');
	if (!open || !close || close < open || close[1] != ' ' || !close[2] || close[2] == ' ')
		return err_set(err, -EINVAL, "expected 'PID (comm) STATE ...'");
	v[1] = strtoll(line, &end, 10);
	if (end == line || end + 1 != open || *end != ' ' || v[1] <= 0 || v[1] > 0x3fffffff)
		return err_set(err, -EINVAL, "expected a pid before '(comm)'");
	snprintf(st.comm, sizeof(st.comm), "%.*s", (int)(close - open - 1), open + 1);
	st.state = close[2];
	for (p = close + 3; *p == ' ' && k + 1 < SF_N; k++) {
		v[k + 1] = strtoll(p + 1, &end, 10);
		if (end == p + 1)
			return err_set(err, -EINVAL, "field %d: expected a number", k + 1);
		p = end;
	}
	if (k < SF_POLICY)
		return err_set(err, -EINVAL, "expected at least %d fields, found %d", SF_POLICY, k);
	if (v[SF_PROCESSOR] < 0 || v[SF_PROCESSOR] >= PROCFS_MAX_CPUS)
		return err_set(err, -EINVAL, "field %d (processor): %lld is not a CPU", SF_PROCESSOR, v[SF_PROCESSOR]);
	st.pid = (int)v[1];
	st.ppid = (int)v[SF_PPID];
	st.flags = (unsigned long long)v[SF_FLAGS];
	st.kthread = st.flags & PROCFS_PF_KTHREAD;
	st.utime = (uint64_t)v[SF_UTIME];
	st.stime = (uint64_t)v[SF_STIME];
	st.ticks = st.utime + st.stime;
	st.nice = (int)v[SF_NICE];
	st.starttime = (uint64_t)v[SF_STARTTIME];
	st.cpu = (int)v[SF_PROCESSOR];
	st.rt_priority = (int)v[SF_RT_PRIORITY];
	st.policy = (int)v[SF_POLICY];
	st.priority = st.policy == SCHED_FIFO || st.policy == SCHED_RR ? st.rt_priority : st.nice;
	st.zombie = st.state == 'Z' || st.state == 'X';
	*ret = st;
	return 0;
}

int procfs_pid_stat_read(const struct fsroot *root, const char *relpath, struct procfs_pid_stat *ret,
			 struct nt_err *err)
{
	char buf[1024], shown[4096];
	ssize_t n = fsroot_read_exact(root, relpath, buf, sizeof(buf));
	struct nt_err e = { 0 };
	int r;

	if (n == -ENOENT || n == -ESRCH)
		return -ENOENT;
	if (n < 0)
		return err_set(err, (int)n, "%s: %s", fsroot_display(root, relpath, shown, sizeof(shown)),
			       nt_strerror((int)-n));
	while (n > 0 && buf[n - 1] == '\n')
		n--;
	r = procfs_pid_stat_parse(buf, (size_t)n, ret, &e);
	if (r < 0)
		return err_set(err, r, "%s:1: %s", fsroot_display(root, relpath, shown, sizeof(shown)), e.msg);
	return 0;
}

/* ---- /proc/PID/cgroup ----------------------------------------------------- */

/* Is the comma list ctl a list of controller names (each 1+ of
 * [A-Za-z0-9_.=-], no empty one)? */
static bool controllers_ok(const char *ctl)
{
	static const char ok[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.=-";

	for (const char *p = ctl;; p++) {
		size_t n = strspn(p, ok);

		if (n == 0)
			return false;
		p += n;
		if (*p == '\0')
			return true;
		if (*p != ',')
			return false;
	}
}

/* Why path is not an absolute, clean cgroup path (NULL: it is). */
static const char *path_bad(const char *path)
{
	if (path[0] != '/')
		return "an absolute PATH";
	for (const char *p = path; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			return "a PATH without control characters";
	if (!path[1])
		return NULL;
	for (const char *c = path + 1;; ) {
		size_t n = strcspn(c, "/");

		if (n == 0)
			return "a PATH without empty components ('//' or a trailing '/')";
		if ((n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
			return "a PATH without '.' or '..' (a cgroup outside this cgroup namespace)";
		if (!c[n])
			return NULL;
		c += n + 1;
	}
}

/* One line, line[0..n) (NUL-free), into *out; why on refusal. */
static int cgroup_line(const char *line, size_t n, struct procfs_cgroup_line *out, const char **why)
{
	char text[PROCFS_CGROUP_PATH_MAX + 160], *c1, *c2, *end;
	unsigned long id;

	if (n >= sizeof(text)) {
		*why = "a line of at most 671 bytes";
		return -EINVAL;
	}
	memcpy(text, line, n);
	text[n] = '\0';
	c1 = strchr(text, ':');
	c2 = c1 ? strchr(c1 + 1, ':') : NULL;
	if (!c2) {
		*why = "'ID:CONTROLLERS:PATH'";
		return -EINVAL;
	}
	*c1 = *c2 = '\0';
	errno = 0;
	id = strtoul(text, &end, 10);
	if (!text[0] || strspn(text, "0123456789") != strlen(text) || *end || errno || id > 0x7fffffff) {
		*why = "a decimal hierarchy ID";
		return -EINVAL;
	}
	if ((id == 0) != (c1[1] == '\0') || (id && !controllers_ok(c1 + 1)) ||
	    strlen(c1 + 1) >= sizeof(out->controllers)) {
		*why = "ID 0 with no controllers (cgroup2), or an ID > 0 with a list of controllers";
		return -EINVAL;
	}
	if (strlen(c2 + 1) >= sizeof(out->path)) {
		*why = "a PATH of at most 511 bytes";
		return -EINVAL;
	}
	if ((*why = path_bad(c2 + 1)))
		return -EINVAL;
	out->id = (unsigned)id;
	snprintf(out->controllers, sizeof(out->controllers), "%s", c1 + 1);
	snprintf(out->path, sizeof(out->path), "%s", c2 + 1);
	return 0;
}

int procfs_cgroup_parse(const char *buf, size_t len, struct procfs_cgroup *ret, struct nt_err *err)
{
	struct procfs_cgroup *c;
	const char *p = buf, *end = buf + len, *why = NULL;
	int lineno = 0, r = 0;

	if (memchr(buf, '\0', len))
		return err_set(err, -EINVAL, "expected text, found a NUL byte");
	if (len && buf[len - 1] == '\n')
		end--;
	if (p == end)
		return err_set(err, -EINVAL, "expected at least one line 'ID:CONTROLLERS:PATH'");
	if (!(c = calloc(1, sizeof(*c))))
		return err_set(err, -ENOMEM, "out of memory");
	while (p <= end && r == 0) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);

		lineno++;
		if (c->n == PROCFS_CGROUP_MAX_LINES) {
			why = "at most 32 lines";
			r = -EINVAL;
		} else if ((r = cgroup_line(p, n, &c->line[c->n], &why)) == 0) {
			for (int i = 0; i < c->n && r == 0; i++)
				if (c->line[i].id == c->line[c->n].id) {
					why = "each hierarchy ID once";
					r = -EINVAL;
				}
			c->n++;
		}
		if (!nl)
			break;
		p = nl + 1;
	}
	if (r == 0)
		*ret = *c;
	free(c);
	return r < 0 ? err_set(err, r, "line %d: expected %s", lineno, why) : 0;
}

int procfs_cgroup_read(const struct fsroot *root, int pid, struct procfs_cgroup *ret, struct nt_err *err)
{
	char rel[64], buf[8192], shown[4096];
	struct nt_err e = { 0 };
	ssize_t n;
	int r;

	snprintf(rel, sizeof(rel), "proc/%d/cgroup", pid);
	n = fsroot_read_exact(root, rel, buf, sizeof(buf));
	if (n == -ENOENT || n == -ESRCH)
		return -ENOENT;
	if (n < 0)
		return err_set(err, (int)n, "%s: %s", fsroot_display(root, rel, shown, sizeof(shown)), nt_strerror((int)-n));
	r = procfs_cgroup_parse(buf, (size_t)n, ret, &e);
	if (r < 0)
		return strncmp(e.msg, "line ", 5) ? err_set(err, r, "%s: %s", fsroot_display(root, rel, shown, sizeof(shown)), e.msg)
		       : err_set(err, r, "%s:%s", fsroot_display(root, rel, shown, sizeof(shown)), e.msg + 5);
	return 0;
}

const struct procfs_cgroup_line *procfs_cgroup_find(const struct procfs_cgroup *c, const char *controller)
{
	for (int i = 0; i < c->n; i++) {
		const struct procfs_cgroup_line *l = &c->line[i];
		size_t cl = controller ? strlen(controller) : 0;

		if (!controller) {
			if (l->id == 0)
				return l;
			continue;
		}
		for (const char *p = l->controllers; *p; p += strcspn(p, ","), p += *p == ',')
			if (!strncmp(p, controller, cl) && (p[cl] == ',' || p[cl] == '\0'))
				return l;
	}
	return NULL;
}
