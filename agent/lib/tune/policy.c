/* SPDX-License-Identifier: MIT */
/* policy.c — see policy.h.
 *
 * Divisions: reading one file safely; names and the search path; the line
 * parser; includes and the chain of files (cycles); cross-key rules;
 * flattening (a policy as one self-contained text); accessors.  A file and
 * a buffer go through the same parser (load_text); only files may include.
 */
#include "tune/policy.h"
#include "tune/policy_test.h"

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/ini.h"
#include "base/textbuf.h"
#include "base/userfile.h"

/* The files being read, outermost first, to detect include cycles. */
struct chain {
	const char *real[POLICY_MAX_DEPTH + 1];
	const char *shown[POLICY_MAX_DEPTH + 1];
	unsigned depth;
	bool from_buffer;           /* policy_parse_buffer: includes refused */
};

/* ---- reading one file -------------------------------------------------- */

/* Where an error about opening path is reported: the include line that
 * named it, or the path itself for the top file. */
static int file_err(struct nt_err *err, int code, const char *from, int from_line,
		    const char *path, const char *what)
{
	if (from)
		return err_set(err, code, "%s:%d: include '%s': %s", from, from_line, path, what);
	return err_set(err, code, "%s: %s", path, what);
}

/* The trust rule of a root process (userfile_check_root_owned). */
static int check_trusted(const struct stat *st, char *why, size_t why_size)
{
	return userfile_check_root_owned(st, "a policy", why, why_size);
}

static int read_policy_file(const char *path, unsigned flags, const char *from,
			    int from_line, char **ret_buf, size_t *ret_len, struct nt_err *err)
{
	char why[320];
	int r = userfile_read(path, POLICY_MAX_SIZE, "a policy file",
			      (flags & POLICY_TRUSTED_ONLY) ? check_trusted : NULL,
			      ret_buf, ret_len, why, sizeof(why));

	return r < 0 ? file_err(err, r, from, from_line, path, why) : 0;
}

/* ---- names and the search path ----------------------------------------- */

static bool is_ident(const char *s, const char *extra);

#ifndef POLICY_PATH_DEFAULT
#define POLICY_PATH_DEFAULT "/etc/nodetune/policies:/usr/share/nodetune/policies"
#endif
const char policy_path_default[] = POLICY_PATH_DEFAULT;

bool policy_is_name(const char *s)
{
	size_t n = strlen(s);

	return !strchr(s, '/') && !(n >= 5 && !strcmp(s + n - 5, ".conf"));
}

/* Is dir/rel there, and of the file type type (S_IFREG, S_IFDIR)? */
static bool has(const char *dir, const char *rel, mode_t type)
{
	char p[PATH_MAX];
	struct stat st;

	return snprintf(p, sizeof(p), "%s/%s", dir, rel) < (int)sizeof(p) && stat(p, &st) == 0 &&
	       (st.st_mode & S_IFMT) == type;
}

bool policy_checkout_dir(const char *exe, char *ret, size_t size)
{
	char top[PATH_MAX];
	char *slash, *name;

	if (exe[0] != '/' || strlen(exe) >= sizeof(top))
		return false;
	strcpy(top, exe);
	/* up from the file: BUILD is its directory or that one's parent */
	for (int up = 0; up < 2; up++) {
		if (!(slash = strrchr(top, '/')) || slash == top)
			return false;
		*slash = '\0';
		name = strrchr(top, '/') + 1;
		if (strcmp(name, "build"))
			continue;
		name[-1] = '\0';
		if (!top[0] || !has(top, "Makefile", S_IFREG) || !has(top, "agent/lib/tune/policy.h", S_IFREG) ||
		    !has(top, "policies", S_IFDIR) || strlen(top) + sizeof("/policies") > size)
			return false;
		snprintf(ret, size, "%s/policies", top);
		return true;
	}
	return false;
}

static char default_path[sizeof(POLICY_PATH_DEFAULT) + PATH_MAX];

/* policy_path_default, then this binary's checkout policies/ when it has one */
static void default_path_init(void)
{
	char exe[PATH_MAX], dir[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	snprintf(default_path, sizeof(default_path), "%s", policy_path_default);
	if (n <= 0)
		return;
	exe[n] = '\0';
	if (policy_checkout_dir(exe, dir, sizeof(dir)) && !strchr(dir, ':'))
		snprintf(default_path, sizeof(default_path), "%s:%s", policy_path_default, dir);
}

const char *policy_search_path(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	const char *env = secure_getenv(POLICY_PATH_ENV);

	if (env && env[0])
		return env;
	pthread_once(&once, default_path_init);
	return strcmp(default_path, policy_path_default) ? default_path : policy_path_default;
}

static bool valid_name(const char *s)
{
	if (!*s || *s == '.' || *s == '-' || strlen(s) > POLICY_NAME_MAX)
		return false;
	return is_ident(s, ".-");
}

/* A directory of the search path: absolute, and with POLICY_TRUSTED_ONLY
 * owned by root and not writable by group or others.  0 (also when it does
 * not exist: *ret_exists false), or -EINVAL / -EPERM with err. */
static int check_dir(const char *dir, unsigned flags, bool *ret_exists, struct nt_err *err)
{
	struct stat st;

	*ret_exists = false;
	if (dir[0] != '/')
		return err_set(err, -EINVAL, "policy path: '%s' is not an absolute directory (%s)", dir,
			       POLICY_PATH_ENV " and the default name absolute directories");
	if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode))
		return 0;
	if ((flags & POLICY_TRUSTED_ONLY) && (st.st_uid != 0 || (st.st_mode & (S_IWGRP | S_IWOTH))))
		return err_set(err, -EPERM,
			       "policy path: refusing the directory %s (uid %u, mode %04o): a root process only reads policies from directories owned by root and not writable by group or others",
			       dir, (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
	*ret_exists = true;
	return 0;
}

/* Call fn for each directory of search that exists, after checking every
 * one.  0, fn's negative return, or check_dir's error. */
static int each_dir(const char *search, unsigned flags, int (*fn)(const char *dir, void *arg), void *arg,
		    struct nt_err *err)
{
	char *copy = strdup(search), *save = NULL;
	int r = 0;

	if (!copy)
		return err_set(err, -ENOMEM, "out of memory");
	for (int pass = 0; pass < 2 && r == 0; pass++) {
		char *tmp = strcpy(copy, search);

		for (char *d = strtok_r(tmp, ":", &save); d && r == 0; d = strtok_r(NULL, ":", &save)) {
			bool exists;

			r = check_dir(d, flags, &exists, err);
			if (r == 0 && exists && pass == 1)
				r = fn(d, arg);
		}
	}
	free(copy);
	return r;
}

struct find_ctx {
	const char *name;
	char found[PATH_MAX];
};

static int find_in(const char *dir, void *arg)
{
	struct find_ctx *f = arg;
	struct stat st;

	if (f->found[0])
		return 0;
	snprintf(f->found, sizeof(f->found), "%s/%s.conf", dir, f->name);
	if (stat(f->found, &st) < 0)
		f->found[0] = '\0';
	return 0;
}

int policy_err_not_found(const char *search, const char *name, struct nt_err *err)
{
	const char *first = search + strspn(search, ":");
	int n = (int)strcspn(first, ":");

	if (!*name)
		return err_set(err, -ENOENT, "no policies in %s (add NAME.conf to %.*s, or set %s=DIR)", search,
			       n, first, POLICY_PATH_ENV);
	return err_set(err, -ENOENT, "no policy named '%s' in %s (add %s.conf to %.*s, or set %s=DIR; nodetune policy list)",
		       name, search, name, n, first, POLICY_PATH_ENV);
}

int policy_find(const char *search, const char *name, unsigned flags, char *ret_path, size_t size,
		struct nt_err *err)
{
	struct find_ctx f = { .name = name };
	int r;

	if (!valid_name(name))
		return err_set(err, -EINVAL, "'%s': not a policy name ([A-Za-z0-9_][A-Za-z0-9._-]*, at most %d bytes; a file needs a '/' or .conf)",
			       name, POLICY_NAME_MAX);
	r = each_dir(search, flags, find_in, &f, err);
	if (r < 0)
		return r;
	if (!f.found[0])
		return policy_err_not_found(search, name, err);
	if (strlen(f.found) >= size)
		return err_set(err, -ENAMETOOLONG, "%s: path too long", f.found);
	memcpy(ret_path, f.found, strlen(f.found) + 1);
	return 0;
}

struct list_ctx {
	struct policy_entry *e;
	int n, cap;
	int r;
};

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct policy_entry *)a)->name, ((const struct policy_entry *)b)->name);
}

static int list_in(const char *dir, void *arg)
{
	struct list_ctx *l = arg;
	DIR *d = opendir(dir);
	struct dirent *de;
	int first = l->n;

	if (!d)
		return 0;
	while ((de = readdir(d))) {
		size_t n = strlen(de->d_name);
		struct policy_entry *e;
		struct stat st;

		if (n <= 5 || n - 5 > POLICY_NAME_MAX || strcmp(de->d_name + n - 5, ".conf") ||
		    fstatat(dirfd(d), de->d_name, &st, 0) < 0 || !S_ISREG(st.st_mode))
			continue;
		if (l->n == l->cap) {
			void *m = reallocarray(l->e, l->cap ? 2 * (size_t)l->cap : 16, sizeof(*l->e));

			if (!m) {
				closedir(d);
				return -ENOMEM;
			}
			l->e = m, l->cap = l->cap ? 2 * l->cap : 16;
		}
		e = &l->e[l->n];
		snprintf(e->name, sizeof(e->name), "%.*s", (int)(n - 5), de->d_name);
		if (!valid_name(e->name))
			continue;
		snprintf(e->path, sizeof(e->path), "%s/%s", dir, de->d_name);
		e->shadowed = false;
		for (int i = 0; i < first; i++)
			if (!strcmp(l->e[i].name, e->name))
				e->shadowed = true;
		l->n++;
	}
	closedir(d);
	qsort(l->e + first, (size_t)(l->n - first), sizeof(*l->e), by_name);
	return 0;
}

int policy_list(const char *search, unsigned flags, struct policy_entry **ret, struct nt_err *err)
{
	struct list_ctx l = { 0 };
	int r = each_dir(search, flags, list_in, &l, err);

	if (r == -ENOMEM)
		err_set(err, r, "out of memory");
	if (r < 0) {
		free(l.e);
		return r;
	}
	*ret = l.e;
	return l.n;
}

/* ---- the line parser --------------------------------------------------- */

struct entry {
	int knob;
	int line;
	char *value;
};

static bool is_ident(const char *s, const char *extra)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!(*s >= 'a' && *s <= 'z') && !(*s >= 'A' && *s <= 'Z') &&
		    !(*s >= '0' && *s <= '9') && *s != '_' && !strchr(extra, *s))
			return false;
	return true;
}

static int unknown_key(const char *path, int line, const char *section, const char *key,
		       struct nt_err *err)
{
	const char *cand[64], *hint;
	size_t n = 0;

	for (unsigned i = 0; i < knob_count && n < 64; i++)
		if (!strcmp(knob_table[i].section, section))
			cand[n++] = knob_table[i].key;
	hint = knob_did_you_mean(key, cand, n);
	if (!strcmp(section, "sysctl"))
		return err_set(err, -EINVAL, "%s:%d: sysctl '%s' is not on the allow-list%s%s%s (see `nodetune keys`)",
			       path, line, key, hint ? " (did you mean '" : "", hint ? hint : "", hint ? "'?)" : "");
	return err_set(err, -EINVAL, "%s:%d: unknown key '%s' in [%s]%s%s%s", path, line, key, section,
		       hint ? " (did you mean '" : "", hint ? hint : "", hint ? "'?)" : "");
}

/* Entries parsed so far from one file. */
struct entries {
	struct entry *e;
	unsigned n, cap;
};

static void entries_free(struct entries *es)
{
	for (unsigned i = 0; i < es->n; i++)
		free(es->e[i].value);
	free(es->e);
}

/* A line that cannot be part of a text file: a NUL byte, a control
 * character, or longer than POLICY_MAX_LINE.  0 or -EINVAL with err. */
static int check_line_bytes(const char *path, int line, const char *p, size_t linelen, struct nt_err *err)
{
	if (memchr(p, '\0', linelen))
		return err_set(err, -EINVAL, "%s:%d: binary data (a NUL byte): not a policy file", path, line);
	if (linelen > POLICY_MAX_LINE)
		return err_set(err, -EINVAL, "%s:%d: line longer than %d bytes", path, line, POLICY_MAX_LINE);
	for (size_t i = 0; i < linelen; i++)
		if ((unsigned char)p[i] < 0x20 && p[i] != '\t' && p[i] != '\r')
			return err_set(err, -EINVAL, "%s:%d: control character 0x%02x: not a policy file",
				       path, line, (unsigned char)p[i]);
	return 0;
}

/* "[name]" (s trimmed, starting with '['): the known section it names into
 * section. */
static int parse_section(const char *path, int line, char *s, char section[64], struct nt_err *err)
{
	char *close = strchr(s, ']');
	const char *hint;
	size_t ns = 0;

	if (!close || ini_trim(close + 1)[0])
		return err_set(err, -EINVAL, "%s:%d: malformed section header '%.64s' (expected [name])",
			       path, line, s);
	*close = '\0';
	s = ini_trim(s + 1);
	if (knob_section_known(s)) {
		snprintf(section, 64, "%s", s);
		return 0;
	}
	while (knob_sections[ns])
		ns++;
	hint = knob_did_you_mean(s, knob_sections, ns);
	return err_set(err, -EINVAL, "%s:%d: unknown section [%.64s]%s%s%s", path, line, s,
		       hint ? " (did you mean [" : "", hint ? hint : "", hint ? "]?)" : "");
}

/* "key = value" (s trimmed) in section: a known key, a valid value, not set
 * before in this file; appended to es. */
static int parse_assignment(const char *path, int line, char *s, const char *section,
			    struct entries *es, struct nt_err *err)
{
	char *eq = strchr(s, '='), *key, *val, why[320];
	int k;

	if (!eq)
		return err_set(err, -EINVAL, "%s:%d: expected 'key = value', '[section]' or a comment, got '%.64s'",
			       path, line, s);
	*eq = '\0';
	key = ini_trim(s);
	val = ini_trim(eq + 1);
	if (!section[0])
		return err_set(err, -EINVAL, "%s:%d: key '%.64s' before any [section]", path, line, key);
	if (!is_ident(key, ".-"))
		return err_set(err, -EINVAL, "%s:%d: malformed key '%.64s'", path, line, key);
	k = knob_find(section, key);
	if (k < 0)
		return unknown_key(path, line, section, key, err);
	if (knob_validate(&knob_table[k], val, why, sizeof(why)) < 0)
		return err_set(err, -EINVAL, "%s:%d: [%s] %s: %s", path, line, section, key, why);
	for (unsigned i = 0; i < es->n; i++)
		if (es->e[i].knob == k)
			return err_set(err, -EINVAL, "%s:%d: duplicate key '%s' in [%s] (first set at line %d)",
				       path, line, key, section, es->e[i].line);
	if (es->n == es->cap) {
		unsigned ncap = es->cap ? 2 * es->cap : 16;
		struct entry *tmp = realloc(es->e, ncap * sizeof(*es->e));

		if (!tmp)
			return err_set(err, -ENOMEM, "out of memory");
		es->e = tmp;
		es->cap = ncap;
	}
	es->e[es->n] = (struct entry){ .knob = k, .line = line, .value = strdup(val) };
	if (!es->e[es->n].value)
		return err_set(err, -ENOMEM, "out of memory");
	es->n++;
	return 0;
}

/* Parse buf (the content of path) into entries.  On success *ret_entries
 * (free each value, then the array) and *ret_n. */
static int parse_lines(const char *path, char *buf, size_t len, struct entry **ret_entries,
		       unsigned *ret_n, struct nt_err *err)
{
	struct entries es = { 0 };
	char section[64] = "";
	char *p = buf, *nl, *s;
	int line = 0, r = 0;

	if (len >= 3 && !memcmp(buf, "\xef\xbb\xbf", 3))
		p += 3; /* UTF-8 byte order mark */
	for (; p < buf + len && r == 0; p = nl + 1) {
		line++;
		nl = memchr(p, '\n', (size_t)(buf + len - p));
		if (!nl)
			nl = buf + len;
		r = check_line_bytes(path, line, p, (size_t)(nl - p), err);
		if (r < 0)
			break;
		*nl = '\0';
		s = ini_trim(p);
		if (!*s || *s == '#' || *s == ';')
			continue;
		if (*s == '[')
			r = parse_section(path, line, s, section, err);
		else
			r = parse_assignment(path, line, s, section, &es, err);
	}
	if (r < 0) {
		entries_free(&es);
		return r;
	}
	*ret_entries = es.e;
	*ret_n = es.n;
	return 0;
}

/* ---- includes and the chain -------------------------------------------- */

static int set_value(struct policy *p, int knob, const char *value, const char *file, int line)
{
	struct policy_value *v = &p->v[knob];
	char *nv = strdup(value), *nf = strdup(file);

	if (!nv || !nf) {
		free(nv);
		free(nf);
		return -ENOMEM;
	}
	free(v->value);
	free(v->file);
	v->value = nv;
	v->file = nf;
	v->line = line;
	return 0;
}

static int load_file(struct policy *p, const char *path, unsigned flags, const char *from,
		     int from_line, struct chain *chain, struct nt_err *err);

/* Parse text (path's content: len bytes, and a writable byte at text[len])
 * and its includes into p: the one parser behind files and buffers. */
static int load_text(struct policy *p, const char *path, const char *real, char *text, size_t len,
		     unsigned flags, struct chain *chain, struct nt_err *err)
{
	struct entry *ents = NULL;
	unsigned n = 0;
	int r;

	r = parse_lines(path, text, len, &ents, &n, err);
	if (r < 0)
		return r;
	chain->real[chain->depth] = real;
	chain->shown[chain->depth] = path;
	chain->depth++;

	/* Parents first, in the order given; this file's values override. */
	for (unsigned i = 0; i < n && r == 0; i++) {
		char *list, *item, *save = NULL;

		if (ents[i].knob != KNOB_MAIN_INCLUDE)
			continue;
		if (chain->from_buffer) {
			r = err_set(err, -EINVAL, "%s:%d: include in a policy given as a buffer: includes need a policy file to resolve against",
				    path, ents[i].line);
			break;
		}
		list = strdup(ents[i].value);
		if (!list) {
			r = err_set(err, -ENOMEM, "out of memory");
			break;
		}
		for (item = strtok_r(list, ",", &save); item && r == 0; item = strtok_r(NULL, ",", &save)) {
			char incpath[PATH_MAX], dir[PATH_MAX];

			item = ini_trim(item);
			if (!*item)
				continue;
			snprintf(dir, sizeof(dir), "%s", path);
			if (policy_is_name(item)) {
				struct nt_err ferr = { 0 };

				/* a NAME: on the search path, as --policy NAME */
				r = policy_find(policy_search_path(), item, flags, incpath, sizeof(incpath), &ferr);
				if (r < 0) {
					r = err_set(err, r, "%s:%d: include '%s': %s", path, ents[i].line, item, ferr.msg);
					break;
				}
			} else if (item[0] == '/') {
				snprintf(incpath, sizeof(incpath), "%s", item);
			} else {
				snprintf(incpath, sizeof(incpath), "%s/%s", dirname(dir), item);
			}
			r = load_file(p, incpath, flags, path, ents[i].line, chain, err);
		}
		free(list);
	}
	/* include = is kept as the policy's own file wrote it (the outermost
	 * file only: a parent's includes are its own business) */
	for (unsigned i = 0; i < n && r == 0; i++)
		if ((ents[i].knob != KNOB_MAIN_INCLUDE || chain->depth == 1) &&
		    set_value(p, ents[i].knob, ents[i].value, path, ents[i].line) < 0)
			r = err_set(err, -ENOMEM, "out of memory");
	chain->depth--;
	for (unsigned i = 0; i < n; i++)
		free(ents[i].value);
	free(ents);
	return r;
}

static int load_file(struct policy *p, const char *path, unsigned flags, const char *from,
		     int from_line, struct chain *chain, struct nt_err *err)
{
	char *buf = NULL, real[PATH_MAX];
	size_t len = 0;
	int r;

	r = read_policy_file(path, flags, from, from_line, &buf, &len, err);
	if (r < 0)
		return r;
	if (!realpath(path, real))
		snprintf(real, sizeof(real), "%s", path);
	for (unsigned i = 0; i < chain->depth; i++) {
		if (strcmp(chain->real[i], real))
			continue;
		char cyc[2048];
		size_t c = 0;

		for (unsigned j = i; j < chain->depth && c < sizeof(cyc); j++)
			c += (size_t)snprintf(cyc + c, sizeof(cyc) - c, "%s -> ", chain->shown[j]);
		snprintf(cyc + (c < sizeof(cyc) ? c : sizeof(cyc) - 1),
			 sizeof(cyc) - (c < sizeof(cyc) ? c : sizeof(cyc) - 1), "%s", path);
		free(buf);
		return err_set(err, -EINVAL, "%s:%d: include cycle: %s", from, from_line, cyc);
	}
	if (chain->depth >= POLICY_MAX_DEPTH) {
		free(buf);
		return err_set(err, -EINVAL, "%s:%d: includes nested deeper than %d", from, from_line,
			       POLICY_MAX_DEPTH);
	}
	r = load_text(p, path, real, buf, len, flags, chain, err);
	free(buf);
	return r;
}

/* ---- cross-key rules --------------------------------------------------- */

static int check_rules(const struct policy *p, struct nt_err *err)
{
	const struct policy_value *prio = &p->v[KNOB_SCHED_PRIORITY];
	const struct policy_value *pv = &p->v[KNOB_SCHED_POLICY];
	const char *pol = pv->value;
	const struct policy_value *weight = &p->v[KNOB_CGROUP_CPU_WEIGHT];

	if (prio->value && (!pol || (strcmp(pol, "fifo") && strcmp(pol, "rr"))))
		return err_set(err, -EINVAL, "%s:%d: [sched] priority needs policy = fifo or rr (policy is %s)",
			       prio->file, prio->line, pol ? pol : "unset");
	if (pol && (!strcmp(pol, "fifo") || !strcmp(pol, "rr")) && !prio->value)
		return err_set(err, -EINVAL, "%s:%d: [sched] policy = %s needs a priority (1..99)",
			       pv->file, pv->line, pol);
	if (weight->value && !policy_value(p, KNOB_CGROUP_NAME))
		return err_set(err, -EINVAL, "%s:%d: [cgroup] cpu_weight needs a cgroup name",
			       weight->file, weight->line);
	return 0;
}

/* ---- public ------------------------------------------------------------ */

/* An empty policy named name, or NULL (out of memory, with err). */
static struct policy *policy_new(const char *name, struct nt_err *err)
{
	struct policy *p = calloc(1, sizeof(*p));

	if (!p || !(p->path = strdup(name)) || !(p->file = strdup(name)) ||
	    !(p->v = calloc(knob_count, sizeof(*p->v)))) {
		policy_free(p);
		err_set(err, -ENOMEM, "out of memory");
		return NULL;
	}
	return p;
}

struct policy *policy_load(const char *path, unsigned flags, struct nt_err *err)
{
	struct chain chain = { .depth = 0 };
	struct policy *p = policy_new(path, err);
	char found[PATH_MAX];

	if (!p)
		return NULL;
	if (policy_is_name(path)) {
		if (policy_find(policy_search_path(), path, flags, found, sizeof(found), err) < 0) {
			policy_free(p);
			return NULL;
		}
		path = found;
	}
	free(p->file);
	if (!(p->file = strdup(path))) {
		err_set(err, -ENOMEM, "out of memory");
		policy_free(p);
		return NULL;
	}
	if (load_file(p, path, flags, NULL, 0, &chain, err) < 0 || check_rules(p, err) < 0) {
		policy_free(p);
		return NULL;
	}
	return p;
}

struct policy *policy_parse_buffer(const char *buf, size_t len, const char *name, struct nt_err *err)
{
	struct chain chain = { .depth = 0, .from_buffer = true };
	struct policy *p;
	char *text;

	if (len > POLICY_MAX_SIZE) {
		err_set(err, -EFBIG, "%s: too large for a policy (%zu bytes, limit %u)", name, len, POLICY_MAX_SIZE);
		return NULL;
	}
	p = policy_new(name, err);
	text = malloc(len + 1);     /* the parser writes a NUL at the end of each line */
	if (!p || !text) {
		if (p)
			err_set(err, -ENOMEM, "out of memory");
		policy_free(p);
		free(text);
		return NULL;
	}
	if (len)
		memcpy(text, buf, len);
	text[len] = '\0';
	if (load_text(p, name, name, text, len, 0, &chain, err) < 0 || check_rules(p, err) < 0) {
		policy_free(p);
		p = NULL;
	}
	free(text);
	return p;
}

/* ---- flattening -------------------------------------------------------- */

/* Append one printf-formatted piece to *f; on failure set f->failed. */
struct flat {
	char *buf;
	size_t len, cap;
	bool failed;
};

__attribute__((format(printf, 2, 3)))
static void flat_add(struct flat *f, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = f->failed ? -1 : vsnprintf(f->buf + f->len, f->cap - f->len, fmt, ap);
	va_end(ap);
	if (n >= 0 && (size_t)n >= f->cap - f->len) {
		size_t ncap = f->cap * 2 + (size_t)n + 1;
		char *tmp = realloc(f->buf, ncap);

		if (!tmp) {
			f->failed = true;
			return;
		}
		f->buf = tmp;
		f->cap = ncap;
		va_start(ap, fmt);
		n = vsnprintf(f->buf + f->len, f->cap - f->len, fmt, ap);
		va_end(ap);
	}
	if (n < 0)
		f->failed = true;
	else
		f->len += (size_t)n;
}

/* "# from FILE:LINE", FILE made one line. */
static void flat_origin(struct flat *f, const struct policy_value *v)
{
	char *shown = strdup(v->file);

	if (!shown) {
		f->failed = true;
		return;
	}
	flat_add(f, "# from %.1024s:%d\n", textbuf_unctrl(shown), v->line);
	free(shown);
}

static char *to_text(const struct policy *p, const char *header, size_t *ret_len)
{
	struct flat f = { .buf = malloc(4096), .cap = 4096 };
	const char *section = "";

	if (!f.buf)
		return NULL;
	f.buf[0] = '\0';
	if (header)
		flat_add(&f, "%s", header);
	for (unsigned k = 0; k < knob_count; k++) {
		const struct policy_value *v = &p->v[k];

		if (!v->value || k == KNOB_MAIN_INCLUDE)
			continue;
		if (strcmp(section, knob_table[k].section)) {
			section = knob_table[k].section;
			flat_add(&f, "%s[%s]\n", f.len ? "\n" : "", section);
		}
		flat_origin(&f, v);
		/* "key=value" fits wherever the file's line did */
		if (strlen(knob_table[k].key) + strlen(v->value) + 3 <= POLICY_MAX_LINE)
			flat_add(&f, "%s = %s\n", knob_table[k].key, v->value);
		else
			flat_add(&f, "%s=%s\n", knob_table[k].key, v->value);
	}
	if (f.failed) {
		free(f.buf);
		return NULL;
	}
	if (ret_len)
		*ret_len = f.len;
	return f.buf;
}

char *policy_to_text(const struct policy *p, size_t *ret_len)
{
	return to_text(p, NULL, ret_len);
}

int policy_flatten(const char *path, unsigned flags, char **ret_text, size_t *ret_len, struct nt_err *err)
{
	struct policy *p = policy_load(path, flags, err);
	char *header, *text;
	size_t len = 0;

	if (!p)
		return err->code;
	if (asprintf(&header, "# %.1024s flattened: its includes resolved, one value per key\n", p->path) < 0) {
		policy_free(p);
		return err_set(err, -ENOMEM, "out of memory");
	}
	text = to_text(p, textbuf_unctrl(header), &len);
	free(header);
	policy_free(p);
	if (!text)
		return err_set(err, -ENOMEM, "out of memory");
	*ret_text = text;
	*ret_len = len;
	return 0;
}

void policy_free(struct policy *p)
{
	if (!p)
		return;
	for (unsigned i = 0; p->v && i < knob_count; i++) {
		free(p->v[i].value);
		free(p->v[i].file);
	}
	free(p->v);
	free(p->path);
	free(p->file);
	free(p);
}

const char *policy_value(const struct policy *p, enum knob_id k)
{
	return p->v[k].value;
}

long long policy_int(const struct policy *p, enum knob_id k, long long def)
{
	const char *v = p->v[k].value;

	return v ? strtoll(v, NULL, 10) : def; /* validated by the row's validator */
}

const char *policy_get(const struct policy *p, const char *section, const char *key)
{
	int k = knob_find(section, key);

	assert(k >= 0);
	return policy_value(p, (enum knob_id)k);
}

long long policy_get_int(const struct policy *p, const char *section, const char *key,
			 long long def)
{
	int k = knob_find(section, key);

	assert(k >= 0);
	return policy_int(p, (enum knob_id)k, def);
}

bool policy_is_empty(const struct policy *p)
{
	for (unsigned i = 0; i < knob_count; i++)
		if (knob_table[i].scope != KS_META && p->v[i].value)
			return false;
	return true;
}

unsigned policy_trust_flags(void)
{
	return geteuid() == 0 ? POLICY_TRUSTED_ONLY : 0;
}
