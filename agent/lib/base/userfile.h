/* SPDX-License-Identifier: MIT */
/* userfile.h — reading a whole file the user named (a policy, a topology
 * export): open once, check what was opened (a regular file, not too large,
 * an optional caller check such as ownership), read it all, NUL-terminate. */
#ifndef NODETUNE_USERFILE_H
#define NODETUNE_USERFILE_H

#include <stddef.h>
#include <sys/stat.h>

/* Read path.  kind names the expected file in reasons ("a policy file").
 * check (may be NULL) vets the opened file's stat: 0, or -errno with a
 * reason.  A FIFO or device is refused without blocking; an empty file
 * (0 bytes) is refused, as no file the user names may be empty.  Returns 0
 * with *ret_buf (malloc'd, NUL-terminated) and *ret_len (> 0); or -errno
 * (-ENOENT, -EACCES, -EISDIR, -EINVAL not regular or empty, -EFBIG, -EIO,
 * -ENOMEM, or check's) with why: a reason without the path, for the
 * caller to place.  Nothing is returned on error. */
int userfile_read(const char *path, size_t max, const char *kind,
		  int (*check)(const struct stat *st, char *why, size_t why_size),
		  char **ret_buf, size_t *ret_len, char *why, size_t why_size);

/* The trust rule of a root process (bpftune's trusted_plugin_path): st is
 * owned by root and not writable by group or others.  Returns 0, or -EPERM
 * with why: "refusing KIND not owned by root (uid U, mode M): ..." (kind
 * is "a policy", "a signing key", ...).  Policies, site limits, gates and
 * the fleet's trusted keys (files and their directories) all use it; the
 * Slurm plugin, which links no libnodetune, keeps its own copy
 * (deploy/slurm/spank_check.c, spank_check_trusted). */
int userfile_check_root_owned(const struct stat *st, const char *kind, char *why, size_t why_size);

#endif
