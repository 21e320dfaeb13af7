/* SPDX-License-Identifier: MIT */
/* journal.c — see journal.h. */
#include "tune/journal.h"
#include "tune/journal_test.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/parse.h"

static const char *path_problem(const char *rel);
static bool cgroup_name_ok(const char *s);
static bool cgroup_id_ok(const char *s);

struct journal {
	char *dir;
	char *file;
	int dirfd;
	int lockfd;
	unsigned n_entries;     /* recorded by this process (journal_record) */
};

char *journal_escape(const char *s)
{
	size_t n = strlen(s);
	char *out = malloc(3 * n + 1), *o = out;

	if (!out)
		return NULL;
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c < 0x20 || c == '%' || c == 0x7f)
			o += sprintf(o, "%%%02X", c);
		else
			*o++ = (char)c;
	}
	*o = '\0';
	return out;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

char *journal_unescape(const char *s)
{
	char *out = malloc(strlen(s) + 1), *o = out;

	if (!out)
		return NULL;
	for (; *s; s++) {
		if (*s == '%') {
			int hi = hexval(s[1]), lo = hi < 0 ? -1 : hexval(s[2]);

			if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) {
				free(out);
				return NULL;
			}
			*o++ = (char)(hi * 16 + lo);
			s += 2;
		} else {
			*o++ = *s;
		}
	}
	*o = '\0';
	return out;
}

/* Is sb, the state dir or the journal at path, one to trust?  0, or
 * -EPERM (-ENOTDIR) with err saying why. */
static int check_owned(const struct stat *sb, const char *path, bool dir, struct nt_err *err)
{
	uid_t euid = geteuid();

	if (dir && !S_ISDIR(sb->st_mode))
		return err_set(err, -ENOTDIR, "state directory %s: not a directory", path);
	if (!dir && !S_ISREG(sb->st_mode))
		return err_set(err, -EPERM, "%s: not a regular file; refusing it", path);
	if (sb->st_uid != euid)
		return err_set(err, -EPERM, "%s%s: owned by uid %u, not by uid %u (who runs nodetune); refusing it",
			       dir ? "state directory " : "", path, (unsigned)sb->st_uid, (unsigned)euid);
	if (dir && (sb->st_mode & (S_IWGRP | S_IWOTH)))
		return err_set(err, -EPERM,
			       "state directory %s: writable by group or others (mode %04o); refusing it (chmod 0700 it)",
			       path, (unsigned)(sb->st_mode & 07777));
	if (!dir && (sb->st_mode & 077))
		return err_set(err, -EPERM, "%s: mode %04o, must be 0600 (no group or other bits); refusing it",
			       path, (unsigned)(sb->st_mode & 07777));
	return 0;
}

struct journal *journal_open(const char *state_dir, struct nt_err *err)
{
	struct journal *j = calloc(1, sizeof(*j));
	struct stat sb;
	int e;

	if (!j) {
		err_set(err, -ENOMEM, "out of memory");
		return NULL;
	}
	j->dirfd = j->lockfd = -1;
	if (asprintf(&j->dir, "%s", state_dir) < 0 || asprintf(&j->file, "%s/journal", state_dir) < 0) {
		j->dir = j->file = NULL;
		journal_close(j);
		err_set(err, -ENOMEM, "out of memory");
		return NULL;
	}
	if (mkdir(state_dir, 0700) < 0 && errno != EEXIST) {
		e = -errno;
		err_set(err, e, "state directory %s: %s", state_dir, nt_strerror(-e));
		journal_close(j);
		return NULL;
	}
	/* a symlink is refused by name (lstat), and cannot be swapped in
	 * between (O_NOFOLLOW); from here on everything goes through dirfd */
	if (lstat(state_dir, &sb) == 0 && S_ISLNK(sb.st_mode)) {
		err_set(err, -EPERM, "state directory %s: a symbolic link; refusing it", state_dir);
		journal_close(j);
		return NULL;
	}
	j->dirfd = open(state_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (j->dirfd < 0) {
		e = -errno;
		err_set(err, e, "state directory %s: %s", state_dir, nt_strerror(-e));
		journal_close(j);
		return NULL;
	}
	if (fstat(j->dirfd, &sb) < 0) {
		e = -errno;
		err_set(err, e, "state directory %s: %s", state_dir, nt_strerror(-e));
		journal_close(j);
		return NULL;
	}
	if (check_owned(&sb, state_dir, true, err) < 0) {
		journal_close(j);
		return NULL;
	}
	/* a journal to be trusted, checked before anything is created here */
	if (fstatat(j->dirfd, "journal", &sb, AT_SYMLINK_NOFOLLOW) == 0) {
		if (check_owned(&sb, j->file, false, err) < 0) {
			journal_close(j);
			return NULL;
		}
	} else if (errno != ENOENT) {
		e = -errno;
		err_set(err, e, "%s: %s", j->file, nt_strerror(-e));
		journal_close(j);
		return NULL;
	}
	j->lockfd = openat(j->dirfd, "lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (j->lockfd < 0) {
		e = -errno;
		err_set(err, e, "%s/lock: %s", state_dir, nt_strerror(-e));
		journal_close(j);
		return NULL;
	}
	if (flock(j->lockfd, LOCK_EX | LOCK_NB) < 0) {
		e = errno == EWOULDBLOCK ? -EBUSY : -errno;
		err_set(err, e, "%s/lock: another nodetune is applying or reverting on this host (%s)",
			state_dir, nt_strerror(errno));
		journal_close(j);
		return NULL;
	}
	return j;
}

void journal_close(struct journal *j)
{
	if (!j)
		return;
	if (j->lockfd >= 0)
		close(j->lockfd); /* releases the flock */
	if (j->dirfd >= 0)
		close(j->dirfd);
	free(j->dir);
	free(j->file);
	free(j);
}

bool journal_exists(const struct journal *j)
{
	return faccessat(j->dirfd, "journal", F_OK, 0) == 0;
}

const char *journal_path(const struct journal *j)
{
	return j->file;
}

/* Append line (already escaped, with its newline) and make it durable.
 * A line the reader would refuse as too long is not written (-E2BIG). */
static int journal_append(struct journal *j, const char *line, int flags, struct nt_err *err)
{
	size_t len = strlen(line), off = 0;
	int fd, e;

	if (len > JOURNAL_LINE_MAX + 1)
		return err_set(err, -E2BIG, "%s: an entry of %zu bytes, more than a journal line holds (%d)",
			       j->file, len, JOURNAL_LINE_MAX);

	fd = openat(j->dirfd, "journal", O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC | flags, 0600);
	if (fd < 0) {
		e = -errno;
		return err_set(err, e, "%s: %s", j->file, nt_strerror(-e));
	}
	while (off < len) {
		ssize_t n = write(fd, line + off, len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			e = -errno;
			close(fd);
			return err_set(err, e, "%s: write: %s", j->file, nt_strerror(-e));
		}
		off += (size_t)n;
	}
	if (fsync(fd) < 0) {
		e = -errno;
		close(fd);
		return err_set(err, e, "%s: fsync: %s", j->file, nt_strerror(-e));
	}
	close(fd);
	if ((flags & O_CREAT) && fsync(j->dirfd) < 0) {
		e = -errno;
		return err_set(err, e, "%s: fsync: %s", j->dir, nt_strerror(-e));
	}
	return 0;
}

/* The header line for root and policy, written by this process.  NULL on
 * out of memory. */
static char *header_line(const char *root, const char *policy)
{
	char *er = journal_escape(root), *ep = journal_escape(policy), *line = NULL;

	if (!er || !ep || asprintf(&line, "nodetune-journal 1\troot\t%s\tpolicy\t%s\tpid\t%ld\n", er, ep,
				   (long)getpid()) < 0)
		line = NULL;
	free(er);
	free(ep);
	return line;
}

/* One entry's line into *ret_line: 0; -EINVAL or -E2BIG (said, with name
 * for the journal's path) for an entry the reader would refuse; -ENOMEM. */
static int entry_line(const char *name, enum journal_kind kind, const char *a, const char *b, const char *raw,
		      char **ret_line, struct nt_err *err)
{
	const char *why = kind == JE_FILE	       ? path_problem(a)
			  : !cgroup_name_ok(a)	       ? "is not a cgroup name"
			  : b && !cgroup_id_ok(b)    ? "has an identity that is not one jobcg makes"
						       : NULL;
	char *ea, *eb, *er;
	int r = 0;

	/* never write what the reader would refuse */
	if (why)
		return err_set(err, -EINVAL, "%s: not journaled: '%s' %s", name, a, why);
	if (kind == JE_FILE && ((b && strlen(b) >= JOURNAL_VALUE_MAX) || (raw && strlen(raw) >= JOURNAL_RAW_MAX)))
		return err_set(err, -E2BIG, "%s: not journaled: %s (more than a journal holds)", name, a);
	ea = journal_escape(a);
	eb = journal_escape(b ? b : "");
	er = journal_escape(raw ? raw : "");
	if (!ea || !eb || !er ||
	    (kind == JE_FILE ? asprintf(ret_line, "file\t%s\t%s\t%s\n", ea, eb, er)
	     : b	     ? asprintf(ret_line, "cgroup\t%s\t%s\n", ea, eb)
			     : asprintf(ret_line, "cgroup\t%s\n", ea)) < 0)
		r = err_set(err, -ENOMEM, "out of memory");
	free(ea);
	free(eb);
	free(er);
	return r;
}

int journal_begin(struct journal *j, const char *root, const char *policy, struct nt_err *err)
{
	char *line = header_line(root, policy);
	int r;

	if (!line)
		return err_set(err, -ENOMEM, "out of memory");
	r = journal_append(j, line, O_CREAT | O_EXCL, err);
	if (r == -EEXIST)   /* the undo as it must be typed: a state dir of one's own is named */
		err_set(err, r, "%s exists: changes of an earlier apply are in effect; run `nodetune revert%s%s` first",
			j->file, strcmp(j->dir, JOURNAL_DEFAULT_DIR) ? " --state-dir " : "",
			strcmp(j->dir, JOURNAL_DEFAULT_DIR) ? j->dir : "");
	free(line);
	return r;
}

int journal_record(struct journal *j, enum journal_kind kind, const char *a, const char *b,
		   const char *raw, struct nt_err *err)
{
	char *line = NULL;
	int r;

	if (j->n_entries >= JOURNAL_MAX_ENTRIES)
		return err_set(err, -E2BIG, "%s: not journaled: %s (more than a journal holds)", j->file, a);
	r = entry_line(j->file, kind, a, b, raw, &line, err);
	if (r == 0)
		r = journal_append(j, line, 0, err);
	free(line);
	if (r == 0)
		j->n_entries++;
	return r;
}

/* Write all of text to fd, retrying on EINTR. */
static int write_all(int fd, const char *text, size_t len)
{
	size_t off = 0;

	while (off < len) {
		ssize_t n = write(fd, text + off, len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		off += (size_t)n;
	}
	return 0;
}

/* The whole text of a journal holding st (header by this process). */
static int journal_text(const struct journal *j, const struct journal_state *st, char **ret, size_t *ret_len,
			struct nt_err *err)
{
	char *text = NULL, *line;
	size_t len = 0;
	FILE *f;
	int r = 0;

	if (st->n > JOURNAL_MAX_ENTRIES)
		return err_set(err, -E2BIG, "%s: %u entries, more than a journal holds", j->file, st->n);
	f = open_memstream(&text, &len);
	if (!f || !(line = header_line(st->root, st->policy ? st->policy : ""))) {
		if (f)
			fclose(f);
		free(text);
		return err_set(err, -ENOMEM, "out of memory");
	}
	fputs(line, f);
	free(line);
	for (unsigned i = 0; i < st->n && r == 0; i++) {
		const struct journal_entry *e = &st->entries[i];

		r = entry_line(j->file, e->kind, e->a, e->b, e->raw, &line, err);
		if (r == 0)
			fputs(line, f);
		free(line);
		line = NULL;
	}
	if (st->committed)
		fputs("commit\n", f);
	if (fclose(f) != 0 && r == 0)
		r = err_set(err, -ENOMEM, "out of memory");
	if (r < 0) {
		free(text);
		return r;
	}
	*ret = text;
	*ret_len = len;
	return 0;
}

int journal_rewrite(struct journal *j, const struct journal_state *st, struct nt_err *err)
{
	char *text = NULL;
	size_t len = 0;
	int fd, r;

	r = journal_text(j, st, &text, &len, err);
	if (r < 0)
		return r;
	unlinkat(j->dirfd, "journal.new", 0);   /* left by a process that died here */
	fd = openat(j->dirfd, "journal.new", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		r = -errno;
		free(text);
		return err_set(err, r, "%s.new: %s", j->file, nt_strerror(-r));
	}
	r = write_all(fd, text, len);
	free(text);
	if (r == 0 && fsync(fd) < 0)
		r = -errno;
	close(fd);
	if (r == 0 && renameat(j->dirfd, "journal.new", j->dirfd, "journal") < 0)
		r = -errno;
	if (r < 0) {
		unlinkat(j->dirfd, "journal.new", 0);
		return err_set(err, r, "%s: rewriting failed: %s", j->file, nt_strerror(-r));
	}
	if (fsync(j->dirfd) < 0) {
		r = -errno;
		return err_set(err, r, "%s: fsync: %s", j->dir, nt_strerror(-r));
	}
	j->n_entries = st->n;
	return 0;
}

int journal_commit(struct journal *j, struct nt_err *err)
{
	return journal_append(j, "commit\n", 0, err);
}

void journal_state_release(struct journal_state *st)
{
	if (!st)
		return;
	for (unsigned i = 0; i < st->n; i++) {
		free(st->entries[i].a);
		free(st->entries[i].b);
		free(st->entries[i].raw);
	}
	free(st->entries);
	free(st->root);
	free(st->policy);
	memset(st, 0, sizeof(*st));
}

/* ---- parsing ----------------------------------------------------------- */

struct jparser {
	const char *name;            /* for "name:line: ..." */
	struct nt_err *err;
	struct journal_state st;
	unsigned cap;                /* entries allocated */
	unsigned lineno;             /* lines complete so far */
	char *line;                  /* the line being gathered (JOURNAL_LINE_MAX + 1) */
	size_t len;
};

/* s for a message: its first 48 bytes, anything not printable as '?'. */
static const char *shown(const char *s, char *buf, size_t size)
{
	size_t i = 0;

	for (; *s && i + 4 < size && i < 48; s++)
		buf[i++] = (*s >= 0x20 && *s < 0x7f) ? *s : '?';
	if (*s && i + 4 <= size) {
		memcpy(buf + i, "...", 3);
		i += 3;
	}
	buf[i] = '\0';
	return buf;
}

static int corrupt(const struct jparser *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* One line naming the file and the line being parsed. */
static int corrupt(const struct jparser *p, const char *fmt, ...)
{
	char why[384];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	return err_set(p->err, -EINVAL, "%s:%u: corrupt journal line: %s; nothing was restored", p->name,
		       p->lineno, why);
}

/* Why rel is not a path apply writes, or NULL when it is one.  The knob
 * table (agent/knob.c) writes below sys/ and proc/sys/, the IRQ planner
 * (agent/plan.c) proc/irq/N/smp_affinity_list; nothing else is written. */
static const char *path_problem(const char *rel)
{
	static const char *const prefixes[] = { "sys/", "proc/sys/", "proc/irq/" };
	const char *c = rel;
	bool known = false;

	if (!rel[0])
		return "is empty";
	if (rel[0] == '/')
		return "is absolute (entries are relative to the root)";
	if (strlen(rel) >= JOURNAL_PATH_MAX)
		return "is too long";
	for (const char *q = rel; *q; q++)
		if ((unsigned char)*q < 0x20 || *q == 0x7f)
			return "has a control character";
	for (;;) {
		size_t n = strcspn(c, "/");

		if (n == 0)
			return "has an empty component";
		if (n == 2 && !strncmp(c, "..", 2))
			return "has a '..' component";
		if (n == 1 && c[0] == '.')
			return "has a '.' component";
		if (!c[n])
			break;
		c += n + 1;
	}
	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
		known |= !strncmp(rel, prefixes[i], strlen(prefixes[i]));
	if (!known)
		return "is not below sys/, proc/sys/ or proc/irq/ (no knob writes there)";
	return NULL;
}

/* A cgroup name as the [cgroup] name knob accepts it (knob.c, KT_NAME). */
static bool cgroup_name_ok(const char *s)
{
	size_t n = strlen(s);

	return n > 0 && n < JOURNAL_NAME_MAX && s[0] != '.' &&
	       strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") == n;
}

/* A job cgroup's identity as jobcg makes it (jobcg.h: JOBCG_ID_MAX,
 * "cpuset=DEV:INO:BTIME,..."): a non-empty word of those characters. */
static bool cgroup_id_ok(const char *s)
{
	size_t n = strlen(s);

	return n > 0 && n < JOURNAL_VALUE_MAX && strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789=:.,") == n;
}

static int parse_header(struct jparser *p, char **f, int nf)
{
	uint64_t pid;

	if (nf != 7 || strcmp(f[0], "nodetune-journal 1") || strcmp(f[1], "root") || strcmp(f[3], "policy") ||
	    strcmp(f[5], "pid"))
		return corrupt(p, "not a nodetune journal header");
	if (parse_u64(f[6], 1u << 30, &pid) < 0)
		return corrupt(p, "pid is not a process id");
	p->st.root = journal_unescape(f[2]);
	p->st.policy = journal_unescape(f[4]);
	if (!p->st.root || !p->st.policy)
		return corrupt(p, "bad %%-escape in root or policy");   /* or out of memory */
	if (p->st.root[0] != '/' || strlen(p->st.root) >= PATH_MAX)
		return corrupt(p, "root is not an absolute path");
	p->st.pid = (long)pid;
	return 0;
}

static int parse_entry(struct jparser *p, char **f, int nf)
{
	struct journal_entry e = { .line = p->lineno };
	char show[64];
	const char *why;
	int r = 0;

	if (nf == 4 && !strcmp(f[0], "file")) {
		e.kind = JE_FILE;
		e.a = journal_unescape(f[1]);
		e.b = journal_unescape(f[2]);
		e.raw = journal_unescape(f[3]);
		if (!e.a || !e.b || !e.raw)
			r = corrupt(p, "bad %%-escape");   /* (or out of memory) */
		else if ((why = path_problem(e.a)))
			r = corrupt(p, "path '%s' %s", shown(e.a, show, sizeof(show)), why);
		else if (strlen(e.b) >= JOURNAL_VALUE_MAX || strlen(e.raw) >= JOURNAL_RAW_MAX)
			r = corrupt(p, "the value of %s is longer than apply records", shown(e.a, show, sizeof(show)));
	} else if ((nf == 2 || nf == 3) && !strcmp(f[0], "cgroup")) {
		/* 2 fields: a journal of a nodetune before identities (b NULL) */
		e.kind = JE_CGROUP;
		e.a = journal_unescape(f[1]);
		e.b = nf == 3 ? journal_unescape(f[2]) : NULL;
		if (!e.a || (nf == 3 && !e.b))
			r = corrupt(p, "bad %%-escape");
		else if (!cgroup_name_ok(e.a))
			r = corrupt(p, "'%s' is not a cgroup name apply creates", shown(e.a, show, sizeof(show)));
		else if (e.b && !cgroup_id_ok(e.b))
			r = corrupt(p, "the identity of cgroup %s is not one apply records", e.a);
	} else if (!strcmp(f[0], "file") || !strcmp(f[0], "cgroup")) {
		r = corrupt(p, "a %s entry with %d fields", f[0], nf);
	} else {
		r = corrupt(p, "unknown entry '%s'", shown(f[0], show, sizeof(show)));
	}
	if (r == 0 && p->st.n == JOURNAL_MAX_ENTRIES)
		r = corrupt(p, "more than %d entries", JOURNAL_MAX_ENTRIES);
	if (r == 0 && p->st.n == p->cap) {
		unsigned cap = p->cap ? 2 * p->cap : 16;
		struct journal_entry *tmp = realloc(p->st.entries, cap * sizeof(*tmp));

		if (tmp) {
			p->st.entries = tmp;
			p->cap = cap;
		} else {
			r = err_set(p->err, -ENOMEM, "out of memory");
		}
	}
	if (r < 0) {
		free(e.a);
		free(e.b);
		free(e.raw);
		return r;
	}
	p->st.entries[p->st.n++] = e;
	return 0;
}

/* One complete line, NUL-terminated at len. */
static int parse_line(struct jparser *p, char *line, size_t len)
{
	char *f[8], *save = line, *tok;
	int nf = 0;

	if (strlen(line) != len)
		return corrupt(p, "a NUL byte");
	/* strsep keeps empty fields (an empty original value) */
	while ((tok = strsep(&save, "\t"))) {
		if (nf == 8)
			return corrupt(p, "too many fields");
		f[nf++] = tok;
	}
	if (p->lineno == 1)
		return parse_header(p, f, nf);
	if (p->st.committed)
		return corrupt(p, "a line after commit");
	if (nf == 1 && !strcmp(f[0], "commit")) {
		p->st.committed = true;
		return 0;
	}
	return parse_entry(p, f, nf);
}

static int jparser_init(struct jparser *p, const char *name, struct nt_err *err)
{
	memset(p, 0, sizeof(*p));
	p->name = name;
	p->err = err;
	p->line = malloc(JOURNAL_LINE_MAX + 1);
	return p->line ? 0 : err_set(err, -ENOMEM, "out of memory");
}

static void jparser_release(struct jparser *p)
{
	journal_state_release(&p->st);
	free(p->line);
	p->line = NULL;
}

/* Feed the next n bytes of the journal. */
static int jparser_feed(struct jparser *p, const char *data, size_t n)
{
	while (n > 0) {
		const char *nl = memchr(data, '\n', n);
		size_t seg = nl ? (size_t)(nl - data) : n;
		int r;

		if (seg > JOURNAL_LINE_MAX - p->len) {
			p->lineno++;
			return corrupt(p, "longer than %d bytes", JOURNAL_LINE_MAX);
		}
		memcpy(p->line + p->len, data, seg);
		p->len += seg;
		if (!nl)
			return 0;
		p->line[p->len] = '\0';
		p->lineno++;
		r = parse_line(p, p->line, p->len);
		if (r < 0)
			return r;
		p->len = 0;
		data = nl + 1;
		n -= seg + 1;
	}
	return 0;
}

/* The end of the journal: hand the state over. */
static int jparser_finish(struct jparser *p, struct journal_state *ret)
{
	/* a torn last line (no newline): the process died while appending
	 * it, before the change it announces was made; a torn header is a
	 * journal that never was one */
	if (p->lineno == 0) {
		p->lineno = 1;
		return corrupt(p, p->len ? "a torn header" : "an empty journal");
	}
	*ret = p->st;
	memset(&p->st, 0, sizeof(p->st));
	return 0;
}

int journal_parse(const char *buf, size_t len, const char *name, struct journal_state *ret,
		  struct nt_err *err)
{
	struct jparser p;
	int r = jparser_init(&p, name, err);

	if (r == 0)
		r = jparser_feed(&p, buf, len);
	if (r == 0)
		r = jparser_finish(&p, ret);
	jparser_release(&p);
	return r;
}

int journal_read(struct journal *j, struct journal_state *ret, struct nt_err *err)
{
	struct jparser p;
	struct stat sb;
	char chunk[16384];
	ssize_t n;
	int fd, r, e;

	fd = openat(j->dirfd, "journal", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		e = errno == ELOOP ? -EPERM : -errno;
		if (e == -EPERM)
			return err_set(err, e, "%s: a symbolic link; refusing it", j->file);
		return e == -ENOENT ? e : err_set(err, e, "%s: %s", j->file, nt_strerror(-e));
	}
	if (fstat(fd, &sb) < 0) {
		e = -errno;
		close(fd);
		return err_set(err, e, "%s: %s", j->file, nt_strerror(-e));
	}
	r = check_owned(&sb, j->file, false, err);
	if (r == 0)
		r = jparser_init(&p, j->file, err);
	if (r < 0) {
		close(fd);
		return r;
	}
	for (;;) {
		n = read(fd, chunk, sizeof(chunk));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			e = -errno;
			r = err_set(err, e, "%s: read: %s", j->file, nt_strerror(-e));
			break;
		}
		if (n == 0) {
			r = jparser_finish(&p, ret);
			break;
		}
		r = jparser_feed(&p, chunk, (size_t)n);
		if (r < 0)
			break;
	}
	jparser_release(&p);
	close(fd);
	return r;
}

int journal_remove(struct journal *j, struct nt_err *err)
{
	int e;

	if (unlinkat(j->dirfd, "journal", 0) < 0 && errno != ENOENT) {
		e = -errno;
		return err_set(err, e, "%s: %s", j->file, nt_strerror(-e));
	}
	fsync(j->dirfd);
	return 0;
}
