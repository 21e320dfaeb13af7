/* SPDX-License-Identifier: MIT */
/* fsroot.c — see fsroot.h. */
#include "base/fsroot.h"
#include "base/fsroot_test.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SYS_openat2
#define SYS_openat2 437   /* the same number on every architecture */
#endif

#define CACHE_SLOTS 1024     /* hash slots of a sampling root's open files (power of 2) */
#define CACHE_MAX 512        /* files kept open at most (well below RLIMIT_NOFILE's 1024) */

struct cache_slot {
	char *rel;                 /* NULL: empty; "": deleted (a tombstone) */
	int fd;
	unsigned gen;              /* the sweep it was last read in */
};

struct fsroot_cache {
	struct cache_slot slot[CACHE_SLOTS];
	unsigned gen;
	int n;                     /* live entries */
};

struct fsroot {
	int dirfd;
	char *path;
	struct fsroot_cache *cache; /* NULL unless fsroot_cache_enable() */
};

static long sys_openat2(int dirfd, const char *path, struct open_how *how, size_t size)
{
	return syscall(SYS_openat2, dirfd, path, how, size);
}

struct fsroot_syscalls fsroot_sys = {
	.openat = openat,
	.openat2 = sys_openat2,
	.read = read,
	.write = write,
	.close = close,
};

struct fsroot *fsroot_open(const char *path)
{
	struct fsroot *root;
	int err;

	root = calloc(1, sizeof(*root));
	if (!root)
		return NULL;
	root->path = strdup(path);
	if (!root->path) {
		free(root);
		errno = ENOMEM;
		return NULL;
	}
	root->dirfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (root->dirfd < 0) {
		err = errno;
		free(root->path);
		free(root);
		errno = err;
		return NULL;
	}
	return root;
}

void fsroot_free(struct fsroot *root)
{
	if (!root)
		return;
	fsroot_cache_enable(root, false);
	if (root->dirfd >= 0)
		close(root->dirfd);
	free(root->path);
	free(root);
}

const char *fsroot_path(const struct fsroot *root)
{
	return root->path;
}

bool fsroot_is_host(const struct fsroot *root)
{
	return strcmp(root->path, "/") == 0;
}

/* openat through the table, O_CLOEXEC, retried on EINTR: the fd or -errno */
static int openat_retry(int dirfd, const char *name, int flags)
{
	int fd;

	do
		fd = fsroot_sys.openat(dirfd, name, flags | O_CLOEXEC);
	while (fd < 0 && errno == EINTR);
	return fd < 0 ? -errno : fd;
}

static int fsroot_openat(const struct fsroot *root, const char *relpath,
			 int flags)
{
	while (*relpath == '/')
		relpath++;
	return openat_retry(root->dirfd, relpath, flags);
}

/* ---- opening beneath the root ------------------------------------------ */

#define WALK_MAX_DEPTH 128  /* directories below the root a walk may hold open */
#define WALK_MAX_LINKS 40   /* symlinks followed in one walk (the kernel's MAXSYMLINKS) */

/* Without openat2: resolve relpath one component at a time from rootfd,
 * each opened O_NOFOLLOW relative to the directory before it, so no
 * component is looked up by a path the kernel resolves on its own.  A
 * symlink is read and its (relative) target walked the same way; ".."
 * pops a directory and may not pop the root (-EXDEV), nor may a symlink be
 * absolute (-EXDEV).  The same answers as openat2 with RESOLVE_BENEATH. */
struct walk {
	int rootfd;
	int stack[WALK_MAX_DEPTH];    /* the directories walked into, open */
	unsigned depth;
	unsigned links;               /* symlinks followed so far */
	char *todo;                   /* the path being walked (owned) */
	char *p;                      /* what is left of it */
};

/* What one step of the walk says: the walk is over (the fd or -errno in
 * *ret_r), go on with the next component, or the component is a symlink
 * to follow. */
enum walk_step { WALK_DONE, WALK_NEXT, WALK_LINK };

static enum walk_step walk_done(int *ret_r, int r)
{
	*ret_r = r;
	return WALK_DONE;
}

/* the directory the walk is in */
static int walk_dir(const struct walk *w)
{
	return w->depth ? w->stack[w->depth - 1] : w->rootfd;
}

/* The next component of the path into comp.  At the end of the path the
 * directory reached is the file ("dir/" or "dir/.."): opened, done. */
static enum walk_step walk_take(struct walk *w, int flags, char comp[NAME_MAX + 1], int *ret_r)
{
	size_t n;

	while (*w->p == '/')
		w->p++;
	if (!*w->p)
		return walk_done(ret_r, openat_retry(walk_dir(w), ".", flags));
	n = strcspn(w->p, "/");
	if (n > NAME_MAX)
		return walk_done(ret_r, -ENAMETOOLONG);
	memcpy(comp, w->p, n);
	comp[n] = '\0';
	w->p += n;
	return WALK_NEXT;
}

/* "..": back to the directory before, never above the root. */
static enum walk_step walk_up(struct walk *w, int *ret_r)
{
	if (w->depth == 0)
		return walk_done(ret_r, -EXDEV);
	close(w->stack[--w->depth]);
	return WALK_NEXT;
}

/* The last component: opened with flags, unless it is a symlink. */
static enum walk_step walk_open_last(struct walk *w, const char *comp, int flags, int *ret_r)
{
	int fd = openat_retry(walk_dir(w), comp, flags | O_NOFOLLOW);
	struct stat sb;

	if (fd < 0 && fd != -ELOOP)
		return walk_done(ret_r, fd);
	if (fd >= 0 && (!(flags & O_PATH) || (fstat(fd, &sb) == 0 && !S_ISLNK(sb.st_mode))))
		return walk_done(ret_r, fd);
	if (fd >= 0)
		close(fd);   /* O_PATH opened the symlink itself */
	return WALK_LINK;
}

/* A component mid-path: a directory is entered, a symlink followed. */
static enum walk_step walk_enter(struct walk *w, const char *comp, int *ret_r)
{
	int fd = openat_retry(walk_dir(w), comp, O_PATH | O_NOFOLLOW);
	struct stat sb;

	if (fd < 0)
		return walk_done(ret_r, fd);
	if (fstat(fd, &sb) < 0) {
		int r = -errno;

		close(fd);
		return walk_done(ret_r, r);
	}
	if (S_ISDIR(sb.st_mode)) {
		if (w->depth == WALK_MAX_DEPTH) {
			close(fd);
			return walk_done(ret_r, -ENAMETOOLONG);
		}
		w->stack[w->depth++] = fd;
		return WALK_NEXT;
	}
	close(fd);
	return S_ISLNK(sb.st_mode) ? WALK_LINK : walk_done(ret_r, -ENOTDIR);
}

/* comp is a symlink: walk its target, then the rest. */
static enum walk_step walk_follow(struct walk *w, const char *comp, int *ret_r)
{
	char target[PATH_MAX], *next;
	ssize_t len;

	if (++w->links > WALK_MAX_LINKS)
		return walk_done(ret_r, -ELOOP);
	len = readlinkat(walk_dir(w), comp, target, sizeof(target) - 1);
	if (len < 0)
		return walk_done(ret_r, -errno);
	target[len] = '\0';
	if (target[0] == '/' || len == 0)
		return walk_done(ret_r, len ? -EXDEV : -ENOENT);
	if (asprintf(&next, "%s%s", target, w->p) < 0)
		return walk_done(ret_r, -ENOMEM);
	free(w->todo);
	w->todo = w->p = next;
	return WALK_NEXT;
}

static int walk_beneath(int rootfd, const char *relpath, int flags)
{
	struct walk w = { .rootfd = rootfd };
	char comp[NAME_MAX + 1];
	enum walk_step step;
	int r = 0;

	w.todo = w.p = strdup(relpath);
	if (!w.todo)
		return -ENOMEM;
	do {
		step = walk_take(&w, flags, comp, &r);
		if (step == WALK_DONE || !strcmp(comp, "."))
			continue;
		if (!strcmp(comp, ".."))
			step = walk_up(&w, &r);
		else if (!*w.p)
			step = walk_open_last(&w, comp, flags, &r);
		else
			step = walk_enter(&w, comp, &r);
		if (step == WALK_LINK)
			step = walk_follow(&w, comp, &r);
	} while (step != WALK_DONE);
	while (w.depth > 0)
		close(w.stack[--w.depth]);
	free(w.todo);
	return r;
}

int fsroot_open_beneath(const struct fsroot *root, const char *relpath, int flags)
{
	/* symlinks are followed while they stay beneath the root: the live
	 * sysfs has them mid-path (cpuN/cpufreq -> ../cpufreq/policyN), which
	 * RESOLVE_NO_SYMLINKS would refuse; /proc's magic links never */
	struct open_how how = {
		.flags = (unsigned long long)(flags | O_CLOEXEC),
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS,
	};
	int tries = 0;
	long fd;

	while (*relpath == '/')
		relpath++;
	if (!*relpath)
		return -EINVAL;
	/* EAGAIN: a rename raced the lookup; the kernel asks for a retry */
	do
		fd = fsroot_sys.openat2(root->dirfd, relpath, &how, sizeof(how));
	while (fd < 0 && (errno == EINTR || (errno == EAGAIN && ++tries < 8)));
	if (fd >= 0)
		return (int)fd;
	if (errno != ENOSYS)
		return -errno;
	return walk_beneath(root->dirfd, relpath, flags);
}

int fsroot_check_beneath(const struct fsroot *root, const char *relpath)
{
	int fd = fsroot_open_beneath(root, relpath, O_PATH);

	if (fd < 0)
		return fd;
	close(fd);
	return 0;
}

/* ---- the open-file cache of a sampling root ----------------------------- */

static unsigned cache_hash(const char *s)
{
	unsigned h = 2166136261u;

	while (*s)
		h = (h ^ (unsigned char)*s++) * 16777619u;
	return h;
}

/* the slot of rel, or (with add) a free one for it; NULL when full */
static struct cache_slot *cache_find(struct fsroot_cache *c, const char *rel, bool add)
{
	struct cache_slot *free_slot = NULL;

	for (unsigned i = cache_hash(rel), k = 0; k < CACHE_SLOTS; i++, k++) {
		struct cache_slot *sl = &c->slot[i & (CACHE_SLOTS - 1)];

		if (!sl->rel)
			return add ? (free_slot ? free_slot : sl) : NULL;
		if (!sl->rel[0] && !free_slot)
			free_slot = sl;
		else if (sl->rel[0] && !strcmp(sl->rel, rel))
			return sl;
	}
	return add ? free_slot : NULL;
}

static void cache_drop(struct fsroot_cache *c, struct cache_slot *sl)
{
	close(sl->fd);
	free(sl->rel);
	sl->rel = "";                 /* tombstone: probing goes on past it */
	c->n--;
}

void fsroot_cache_enable(struct fsroot *root, bool on)
{
	if (on && !root->cache) {
		root->cache = calloc(1, sizeof(*root->cache));
	} else if (!on && root->cache) {
		for (int i = 0; i < CACHE_SLOTS; i++)
			if (root->cache->slot[i].rel && root->cache->slot[i].rel[0])
				cache_drop(root->cache, &root->cache->slot[i]);
		free(root->cache);
		root->cache = NULL;
	}
}

void fsroot_cache_sweep(struct fsroot *root)
{
	struct fsroot_cache *c = root->cache;

	if (!c)
		return;
	int tomb = 0;

	for (int i = 0; i < CACHE_SLOTS; i++)
		if (c->slot[i].rel && c->slot[i].rel[0] && c->slot[i].gen != c->gen)
			cache_drop(c, &c->slot[i]);
	for (int i = 0; i < CACHE_SLOTS; i++)
		tomb += c->slot[i].rel && !c->slot[i].rel[0];
	/* tombstones lengthen every probe: past a quarter, rehash the live
	 * entries into a clean table */
	if (tomb > CACHE_SLOTS / 4) {
		struct fsroot_cache *fresh = calloc(1, sizeof(*fresh));

		if (fresh) {
			for (int i = 0; i < CACHE_SLOTS; i++)
				if (c->slot[i].rel && c->slot[i].rel[0]) {
					*cache_find(fresh, c->slot[i].rel, true) = c->slot[i];
					fresh->n++;
				}
			fresh->gen = c->gen;
			free(c);
			root->cache = c = fresh;
		}
	}
	c->gen++;
}

int fsroot_cache_size(const struct fsroot *root)
{
	return root->cache ? root->cache->n : 0;
}

/* Read through a kept file: pread from 0 regenerates a /proc or sysfs
 * file.  -ENOENT when its task has gone (the file then reads ESRCH). */
static ssize_t cached_read(const struct fsroot *root, const char *relpath, char *buf, size_t size, int *ret_fd)
{
	struct fsroot_cache *c = root->cache;
	struct cache_slot *sl = cache_find(c, relpath, false);
	size_t len = 0;
	ssize_t n;

	if (!sl) {
		int fd = fsroot_openat(root, relpath, O_RDONLY);

		if (fd < 0)
			return fd;
		sl = c->n < CACHE_MAX ? cache_find(c, relpath, true) : NULL;
		if (!sl || !(sl->rel = strdup(relpath))) {
			*ret_fd = fd;           /* full: an ordinary read */
			return -EAGAIN;
		}
		sl->fd = fd;
		c->n++;
	}
	sl->gen = c->gen;
	/* procfs and sysfs fill a read as far as the file goes: a short read
	 * is its end (a second pread past it would regenerate the file only
	 * to find nothing) */
	for (;;) {
		n = pread(sl->fd, buf + len, size - len, (off_t)len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0 || (len += (size_t)n) >= size || (size_t)n < size - (len - (size_t)n))
			break;
	}
	if (n < 0) {
		int err = errno == ESRCH ? -ENOENT : -errno;

		cache_drop(c, sl);
		return err;
	}
	return (ssize_t)len;
}

static ssize_t fsroot_read_impl(const struct fsroot *root, const char *relpath,
				char *buf, size_t size, bool strip)
{
	size_t len;
	ssize_t n;
	int fd = -1, err;

	if (size == 0)
		return -EINVAL;
	buf[0] = '\0';
	if (root->cache) {
		n = cached_read(root, relpath, buf, size, &fd);
		if (n != -EAGAIN) {
			if (n < 0)
				return n;
			len = (size_t)n;
			goto done;
		}
	}
	if (fd < 0)
		fd = fsroot_openat(root, relpath, O_RDONLY);
	if (fd < 0)
		return fd;
	/* sysfs hands a whole attribute to the first read(); /proc seq files
	 * (mounts, interrupts) may need several.  Read to EOF either way. */
	len = 0;
	for (;;) {
		n = fsroot_sys.read(fd, buf + len, size - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0 || (len += (size_t)n) >= size)
			break;
	}
	err = n < 0 ? -errno : 0;
	fsroot_sys.close(fd);
	if (err) {
		buf[0] = '\0';
		return err;
	}
done:
	if (len >= size) {
		buf[0] = '\0';
		return -EFBIG;
	}
	n = (ssize_t)len;
	buf[n] = '\0';
	while (strip && n > 0 && buf[n - 1] == '\n')
		buf[--n] = '\0';
	return n;
}

ssize_t fsroot_read(const struct fsroot *root, const char *relpath, char *buf, size_t size)
{
	return fsroot_read_impl(root, relpath, buf, size, true);
}

ssize_t fsroot_read_exact(const struct fsroot *root, const char *relpath, char *buf, size_t size)
{
	return fsroot_read_impl(root, relpath, buf, size, false);
}

int fsroot_write_exact(const struct fsroot *root, const char *relpath, const char *content)
{
	size_t len = strlen(content);
	ssize_t n;
	int fd, err = 0;

	fd = fsroot_open_beneath(root, relpath, O_WRONLY | O_TRUNC);
	if (fd < 0)
		return fd;
	do
		n = fsroot_sys.write(fd, content, len);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		err = -errno;
	else if ((size_t)n != len)
		err = -EIO;
	if (fsroot_sys.close(fd) < 0 && !err)
		err = -errno; /* some sysfs attributes report errors at close */
	return err;
}

int fsroot_write(const struct fsroot *root, const char *relpath, const char *value)
{
	char *line = NULL;
	int err;

	if (asprintf(&line, "%s\n", value) < 0)
		return -ENOMEM;
	err = fsroot_write_exact(root, relpath, line);
	free(line);
	return err;
}

bool fsroot_exists(const struct fsroot *root, const char *relpath)
{
	while (*relpath == '/')
		relpath++;
	return faccessat(root->dirfd, relpath, F_OK, 0) == 0;
}

const char *fsroot_display(const struct fsroot *root, const char *relpath,
			   char *buf, size_t size)
{
	while (*relpath == '/')
		relpath++;
	if (fsroot_is_host(root))
		snprintf(buf, size, "/%s", relpath);
	else
		snprintf(buf, size, "%s/%s", root->path, relpath);
	return buf;
}

static int names_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

void fsroot_names_free(char **names)
{
	if (!names)
		return;
	for (char **p = names; *p; p++)
		free(*p);
	free(names);
}

int fsroot_list(const struct fsroot *root, const char *relpath,
		char ***ret_names)
{
	struct dirent *de;
	char **names = NULL;
	size_t n = 0, cap = 0;
	DIR *dir;
	int fd, err = 0;

	fd = fsroot_openat(root, relpath, O_RDONLY | O_DIRECTORY);
	if (fd < 0)
		return fd;
	dir = fdopendir(fd);
	if (!dir) {
		err = -errno;
		fsroot_sys.close(fd);
		return err;
	}
	while ((de = readdir(dir))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (n + 2 > cap) {
			size_t ncap = cap ? 2 * cap : 16;
			char **tmp = realloc(names, ncap * sizeof(*names));

			if (!tmp) {
				err = -ENOMEM;
				goto out_free_names;
			}
			names = tmp;
			cap = ncap;
		}
		names[n] = strdup(de->d_name);
		if (!names[n]) {
			err = -ENOMEM;
			goto out_free_names;
		}
		names[++n] = NULL;
	}
	closedir(dir);
	if (!names) {
		names = calloc(1, sizeof(*names));
		if (!names)
			return -ENOMEM;
	}
	qsort(names, n, sizeof(*names), names_cmp);
	*ret_names = names;
	return (int)n;

out_free_names:
	if (names)
		names[n] = NULL;
	fsroot_names_free(names);
	closedir(dir);
	return err;
}
