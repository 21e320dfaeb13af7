/* journal.c — see journal.h. */
#include "journal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "parse.h"

struct journal {
	char *dir;
	char *file;
	int dirfd;
	int lockfd;
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

struct journal *journal_open(const char *state_dir, struct nt_err *err)
{
	struct journal *j = calloc(1, sizeof(*j));
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
		err_set(err, e, "state directory %s: %s", state_dir, strerror(-e));
		journal_close(j);
		return NULL;
	}
	j->dirfd = open(state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (j->dirfd < 0) {
		e = -errno;
		err_set(err, e, "state directory %s: %s", state_dir, strerror(-e));
		journal_close(j);
		return NULL;
	}
	j->lockfd = openat(j->dirfd, "lock", O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (j->lockfd < 0) {
		e = -errno;
		err_set(err, e, "%s/lock: %s", state_dir, strerror(-e));
		journal_close(j);
		return NULL;
	}
	if (flock(j->lockfd, LOCK_EX | LOCK_NB) < 0) {
		e = errno == EWOULDBLOCK ? -EBUSY : -errno;
		err_set(err, e, "%s/lock: another nodetune is applying or reverting on this host (%s)",
			state_dir, strerror(errno));
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

/* Append line (already escaped, with its newline) and make it durable. */
static int journal_append(struct journal *j, const char *line, int flags, struct nt_err *err)
{
	size_t len = strlen(line), off = 0;
	int fd, e;

	fd = openat(j->dirfd, "journal", O_WRONLY | O_APPEND | O_CLOEXEC | flags, 0600);
	if (fd < 0) {
		e = -errno;
		return err_set(err, e, "%s: %s", j->file, strerror(-e));
	}
	while (off < len) {
		ssize_t n = write(fd, line + off, len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			e = -errno;
			close(fd);
			return err_set(err, e, "%s: write: %s", j->file, strerror(-e));
		}
		off += (size_t)n;
	}
	if (fsync(fd) < 0) {
		e = -errno;
		close(fd);
		return err_set(err, e, "%s: fsync: %s", j->file, strerror(-e));
	}
	close(fd);
	if ((flags & O_CREAT) && fsync(j->dirfd) < 0) {
		e = -errno;
		return err_set(err, e, "%s: fsync: %s", j->dir, strerror(-e));
	}
	return 0;
}

int journal_begin(struct journal *j, const char *root, const char *policy, struct nt_err *err)
{
	char *er = journal_escape(root), *ep = journal_escape(policy), *line = NULL;
	int r;

	if (!er || !ep || asprintf(&line, "nodetune-journal 1\troot\t%s\tpolicy\t%s\tpid\t%ld\n",
				   er, ep, (long)getpid()) < 0) {
		free(er);
		free(ep);
		return err_set(err, -ENOMEM, "out of memory");
	}
	free(er);
	free(ep);
	r = journal_append(j, line, O_CREAT | O_EXCL, err);
	if (r == -EEXIST)
		err_set(err, r, "%s exists: changes of an earlier apply are in effect; run `nodetune revert` first",
			j->file);
	free(line);
	return r;
}

int journal_record(struct journal *j, enum journal_kind kind, const char *a, const char *b,
		   const char *raw, struct nt_err *err)
{
	char *ea = journal_escape(a), *eb = journal_escape(b ? b : ""), *er = journal_escape(raw ? raw : "");
	char *line = NULL;
	int r;

	if (!ea || !eb || !er ||
	    (kind == JE_FILE ? asprintf(&line, "file\t%s\t%s\t%s\n", ea, eb, er)
			     : asprintf(&line, "cgroup\t%s\n", ea)) < 0) {
		free(ea);
		free(eb);
		free(er);
		return err_set(err, -ENOMEM, "out of memory");
	}
	free(ea);
	free(eb);
	free(er);
	r = journal_append(j, line, 0, err);
	free(line);
	return r;
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

static int corrupt(struct journal *j, int line, struct nt_err *err)
{
	return err_set(err, -EINVAL, "%s:%d: corrupt journal line (restore by hand from this file)",
		       j->file, line);
}

int journal_read(struct journal *j, struct journal_state *ret, struct nt_err *err)
{
	struct journal_state st = { 0 };
	char *buf = NULL, *line, *save;
	size_t cap = 0;
	FILE *f;
	int fd, lineno = 0, r = 0, e;
	ssize_t len;

	fd = openat(j->dirfd, "journal", O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		e = -errno;
		return e == -ENOENT ? e : err_set(err, e, "%s: %s", j->file, strerror(-e));
	}
	f = fdopen(fd, "r");
	if (!f) {
		close(fd);
		return err_set(err, -ENOMEM, "out of memory");
	}
	while (r == 0 && (len = getline(&buf, &cap, f)) >= 0) {
		char *fields[8];
		int nf = 0;

		lineno++;
		if (len == 0 || buf[len - 1] != '\n') {
			/* a torn last line: the process died while appending it,
			 * before the change it announces was made */
			if (lineno > 1)
				break;
			r = corrupt(j, lineno, err);
			break;
		}
		buf[len - 1] = '\0';
		/* strsep keeps empty fields (an empty original value) */
		for (save = buf; (line = strsep(&save, "\t")) && nf < 8;)
			fields[nf++] = line;
		if (lineno == 1) {
			uint64_t pid;

			if (nf != 7 || strcmp(fields[0], "nodetune-journal 1") || strcmp(fields[1], "root") ||
			    strcmp(fields[3], "policy") || strcmp(fields[5], "pid") ||
			    parse_u64(fields[6], 1u << 30, &pid) < 0 ||
			    !(st.root = journal_unescape(fields[2])) || !(st.policy = journal_unescape(fields[4]))) {
				r = corrupt(j, lineno, err);
				break;
			}
			st.pid = (long)pid;
			continue;
		}
		if (nf == 1 && !strcmp(fields[0], "commit")) {
			st.committed = true;
			continue;
		}
		struct journal_entry *tmp = realloc(st.entries, (st.n + 1) * sizeof(*tmp));

		if (!tmp) {
			r = err_set(err, -ENOMEM, "out of memory");
			break;
		}
		st.entries = tmp;
		memset(&tmp[st.n], 0, sizeof(tmp[st.n]));
		if (nf == 4 && !strcmp(fields[0], "file")) {
			tmp[st.n].kind = JE_FILE;
			tmp[st.n].a = journal_unescape(fields[1]);
			tmp[st.n].b = journal_unescape(fields[2]);
			tmp[st.n].raw = journal_unescape(fields[3]);
		} else if (nf == 2 && !strcmp(fields[0], "cgroup")) {
			tmp[st.n].kind = JE_CGROUP;
			tmp[st.n].a = journal_unescape(fields[1]);
		} else {
			r = corrupt(j, lineno, err);
			break;
		}
		if (!tmp[st.n].a || (tmp[st.n].kind == JE_FILE && (!tmp[st.n].b || !tmp[st.n].raw))) {
			free(tmp[st.n].a);
			free(tmp[st.n].b);
			free(tmp[st.n].raw);
			r = corrupt(j, lineno, err);
			break;
		}
		st.n++;
	}
	free(buf);
	fclose(f);
	if (r == 0 && !st.root)
		r = corrupt(j, 1, err);
	if (r < 0) {
		journal_state_release(&st);
		return r;
	}
	*ret = st;
	return 0;
}

int journal_remove(struct journal *j, struct nt_err *err)
{
	int e;

	if (unlinkat(j->dirfd, "journal", 0) < 0 && errno != ENOENT) {
		e = -errno;
		return err_set(err, e, "%s: %s", j->file, strerror(-e));
	}
	fsync(j->dirfd);
	return 0;
}
