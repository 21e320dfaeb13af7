/* SPDX-License-Identifier: MIT */
/* userfile.c — see userfile.h. */
#include "base/userfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nt_err.h"

int userfile_read(const char *path, size_t max, const char *kind,
		  int (*check)(const struct stat *st, char *why, size_t why_size),
		  char **ret_buf, size_t *ret_len, char *why, size_t why_size)
{
	struct stat st;
	size_t len = 0;
	char *buf;
	int fd, e;

	/* O_NONBLOCK: a FIFO named by mistake must not hang the open (it is
	 * refused below as not a regular file); for regular files it changes
	 * nothing */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		e = -errno;
		snprintf(why, why_size, "%s", nt_strerror(-e));
		return e;
	}
	if (fstat(fd, &st) < 0) {
		e = -errno;
		snprintf(why, why_size, "%s", nt_strerror(-e));
		goto out_close;
	}
	if (S_ISDIR(st.st_mode)) {
		e = -EISDIR;
		snprintf(why, why_size, "is a directory, not %s", kind);
		goto out_close;
	}
	if (!S_ISREG(st.st_mode)) {
		e = -EINVAL;
		snprintf(why, why_size, "not a regular file");
		goto out_close;
	}
	if (check && (e = check(&st, why, why_size)) < 0)
		goto out_close;
	if (st.st_size == 0) {
		e = -EINVAL;
		snprintf(why, why_size, "empty file, expected %s", kind);
		goto out_close;
	}
	if ((size_t)st.st_size > max) {
		e = -EFBIG;
		snprintf(why, why_size, "too large for %s (%lld bytes, limit %zu)", kind,
			 (long long)st.st_size, max);
		goto out_close;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		e = -ENOMEM;
		snprintf(why, why_size, "out of memory");
		goto out_close;
	}
	while (len < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + len, (size_t)st.st_size - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			e = -errno;
			snprintf(why, why_size, "read: %s", nt_strerror(-e));
			free(buf);
			goto out_close;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	buf[len] = '\0';
	*ret_buf = buf;
	*ret_len = len;
	return 0;

out_close:
	close(fd);
	return e;
}

int userfile_check_root_owned(const struct stat *st, const char *kind, char *why, size_t why_size)
{
	if (st->st_uid == 0 && !(st->st_mode & (S_IWGRP | S_IWOTH)))
		return 0;
	snprintf(why, why_size,
		 "refusing %s %s (uid %u, mode %04o): a root process only reads files owned by root and not writable by group or others",
		 kind, st->st_uid != 0 ? "not owned by root" : "writable by group or others",
		 (unsigned)st->st_uid, (unsigned)(st->st_mode & 07777));
	return -EPERM;
}
