/* fsroot.c — see fsroot.h. */
#include "fsroot.h"

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

static int fsroot_openat(const struct fsroot *root, const char *relpath,
			 int flags)
{
	int fd;

	while (*relpath == '/')
		relpath++;
	do
		fd = fsroot_sys.openat(root->dirfd, relpath, flags | O_CLOEXEC);
	while (fd < 0 && errno == EINTR);
	return fd < 0 ? -errno : fd;
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
static int walk_beneath(int rootfd, const char *relpath, int flags)
{
	int stack[WALK_MAX_DEPTH];
	unsigned depth = 0, links = 0;
	char *todo = strdup(relpath), *p = todo, target[PATH_MAX], comp[NAME_MAX + 1];
	int r = 0;

	if (!todo)
		return -ENOMEM;
	for (;;) {
		int cur = depth ? stack[depth - 1] : rootfd, fd;
		size_t n;
		bool last;
		struct stat sb;
		ssize_t len;
		char *next;

		while (*p == '/')
			p++;
		if (!*p) {
			/* "dir/" or "dir/..": the directory reached is the file */
			do
				fd = fsroot_sys.openat(cur, ".", flags | O_CLOEXEC);
			while (fd < 0 && errno == EINTR);
			r = fd < 0 ? -errno : fd;
			break;
		}
		n = strcspn(p, "/");
		if (n > NAME_MAX) {
			r = -ENAMETOOLONG;
			break;
		}
		memcpy(comp, p, n);
		comp[n] = '\0';
		p += n;
		last = !*p;
		if (!strcmp(comp, "."))
			continue;
		if (!strcmp(comp, "..")) {
			if (depth == 0) {
				r = -EXDEV;
				break;
			}
			close(stack[--depth]);
			continue;
		}
		if (last) {
			do
				fd = fsroot_sys.openat(cur, comp, flags | O_NOFOLLOW | O_CLOEXEC);
			while (fd < 0 && errno == EINTR);
			if (fd < 0 && errno != ELOOP) {
				r = -errno;
				break;
			}
			if (fd >= 0 && (!(flags & O_PATH) || (fstat(fd, &sb) == 0 && !S_ISLNK(sb.st_mode)))) {
				r = fd;
				break;
			}
			if (fd >= 0)
				close(fd);   /* O_PATH opened the symlink itself */
		} else {
			do
				fd = fsroot_sys.openat(cur, comp, O_PATH | O_NOFOLLOW | O_CLOEXEC);
			while (fd < 0 && errno == EINTR);
			if (fd < 0 || fstat(fd, &sb) < 0) {
				r = -errno;
				if (fd >= 0)
					close(fd);
				break;
			}
			if (S_ISDIR(sb.st_mode)) {
				if (depth == WALK_MAX_DEPTH) {
					close(fd);
					r = -ENAMETOOLONG;
					break;
				}
				stack[depth++] = fd;
				continue;
			}
			close(fd);
			if (!S_ISLNK(sb.st_mode)) {
				r = -ENOTDIR;
				break;
			}
		}
		/* comp is a symlink: walk its target, then the rest */
		if (++links > WALK_MAX_LINKS) {
			r = -ELOOP;
			break;
		}
		len = readlinkat(cur, comp, target, sizeof(target) - 1);
		if (len < 0) {
			r = -errno;
			break;
		}
		target[len] = '\0';
		if (target[0] == '/' || len == 0) {
			r = len ? -EXDEV : -ENOENT;
			break;
		}
		if (asprintf(&next, "%s%s", target, p) < 0) {
			r = -ENOMEM;
			break;
		}
		free(todo);
		todo = p = next;
	}
	while (depth > 0)
		close(stack[--depth]);
	free(todo);
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
