/* SPDX-License-Identifier: MIT */
/* fsroot.h — read /sys and /proc relative to one root directory.
 *
 * Every host path the agent touches is opened relative to an fsroot, so the
 * same code runs on the live host ("/") and on captured trees in tests (the
 * idea of hwloc's HWLOC_FSROOT).  Files are opened O_CLOEXEC and read to EOF
 * into one buffer (a sysfs attribute arrives in one read(), a /proc seq file
 * may take several), with EINTR retried.
 *
 * Writes open their file beneath the root (fsroot_open_beneath): the path
 * may not leave the root, by "..", an absolute symlink or a relative one
 * climbing out of it, so nothing a user can put in a captured tree (or a
 * forged journal) steers a root write elsewhere.
 *
 * System calls go through fsroot_sys so tests can make them fail on purpose.
 */
#ifndef NODETUNE_FSROOT_H
#define NODETUNE_FSROOT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct fsroot; /* opaque */
struct open_how; /* <linux/openat2.h> */

/* The system calls used here; tests may swap entries (and restore them).
 * openat2 is syscall(SYS_openat2, ...): -1 with errno ENOSYS on kernels
 * before 5.6 (or under a seccomp filter that does not know it). */
struct fsroot_syscalls {
	int (*openat)(int dirfd, const char *path, int flags, ...);
	long (*openat2)(int dirfd, const char *path, struct open_how *how, size_t size);
	ssize_t (*read)(int fd, void *buf, size_t count);
	ssize_t (*write)(int fd, const void *buf, size_t count);
	int (*close)(int fd);
};
extern struct fsroot_syscalls fsroot_sys;

/* Open the root directory path ("/" for the live host).
 * Returns NULL with errno set (ENOENT, ENOTDIR, EACCES, ENOMEM). */
struct fsroot *fsroot_open(const char *path);
/* Free; NULL is a no-op. */
void fsroot_free(struct fsroot *root);
/* The root's path as given to fsroot_open. */
const char *fsroot_path(const struct fsroot *root);
/* Is the root the live host's "/"? */
bool fsroot_is_host(const struct fsroot *root);

/* Read relpath (relative, no leading '/') into buf, NUL-terminated, with
 * trailing newlines removed.  Returns the length, or -errno: -ENOENT when the
 * file is missing, -EFBIG when it does not fit in size-1 bytes, -EISDIR, ...
 * buf is left holding an empty string on error. */
ssize_t fsroot_read(const struct fsroot *root, const char *relpath,
		    char *buf, size_t size);

/* Open relpath (leading '/'s skipped) with flags (O_CLOEXEC added; no
 * O_CREAT) so that its resolution stays beneath the root: openat2 with
 * RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS, or where the kernel has no
 * openat2 (ENOSYS) a walk one component at a time (O_NOFOLLOW) that
 * follows relative symlinks itself.  Symlinks are followed while they stay
 * beneath the root: the live sysfs has them mid-path (cpuN/cpufreq ->
 * ../cpufreq/policyN), so RESOLVE_NO_SYMLINKS would refuse real knobs.
 * Returns the fd, or -errno: -EXDEV when the path would leave the root ("..",
 * an absolute symlink, a relative one climbing out), -ELOOP (too many
 * symlinks, a /proc magic link), -ENOENT, -EINVAL (an empty path), ... */
int fsroot_open_beneath(const struct fsroot *root, const char *relpath, int flags);

/* Does relpath resolve beneath the root (fsroot_open_beneath with O_PATH)?
 * 0, or the -errno it gives (-ENOENT when it, or a directory on the way,
 * is missing). */
int fsroot_check_beneath(const struct fsroot *root, const char *relpath);

/* Write value followed by a newline to relpath (which must exist), as
 * `echo value > file` does: one write(), O_TRUNC (harmless on sysfs/procfs,
 * and what makes a captured tree hold what was written).  The file is
 * opened with fsroot_open_beneath.  Returns 0 or -errno (the kernel's
 * refusal, e.g. -EINVAL or -EBUSY, comes back here; -EXDEV when the path
 * leads out of the root). */
int fsroot_write(const struct fsroot *root, const char *relpath, const char *value);

/* Like fsroot_read, keeping trailing newlines: the file's exact bytes. */
ssize_t fsroot_read_exact(const struct fsroot *root, const char *relpath, char *buf, size_t size);

/* Write exactly content (no newline added); for restoring a captured tree's
 * files byte for byte.  Opened beneath the root, as fsroot_write. */
int fsroot_write_exact(const struct fsroot *root, const char *relpath, const char *content);

/* Does relpath exist below the root? */
bool fsroot_exists(const struct fsroot *root, const char *relpath);

/* Full path of relpath for messages: "<root>/<relpath>" ("/relpath" on the
 * host).  Written into buf; returns buf. */
const char *fsroot_display(const struct fsroot *root, const char *relpath,
			   char *buf, size_t size);

/* Names of the entries of directory relpath, sorted, "." and ".." left out.
 * On success *ret_names is a NULL-terminated array the caller frees with
 * fsroot_names_free() and the count is returned; on error -errno and
 * *ret_names is untouched. */
int fsroot_list(const struct fsroot *root, const char *relpath,
		char ***ret_names);
void fsroot_names_free(char **names);

/* A root that reads the same files many times a second (the sampler) keeps
 * them open and re-reads them with pread from offset 0, which regenerates
 * /proc and sysfs files without an open and a close each time.  Off by
 * default.  fsroot_cache_sweep() closes the files not read since the last
 * sweep (exited threads); call it once per sample. */
void fsroot_cache_enable(struct fsroot *root, bool on);
void fsroot_cache_sweep(struct fsroot *root);

#endif
