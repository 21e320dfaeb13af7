/* SPDX-License-Identifier: MIT */
/* stepreport.c — see stepreport.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "stepreport.h"

int stepreport_open(void)
{
	const char *fds = getenv("NODETUNE_STEP_FD"), *path = getenv("NODETUNE_STEP_FILE");
	char *end;
	long v;
	int fd;

	/* the descriptor only when it is the step file itself: a launcher
	 * (mpirun) may have closed it, and the number may now be one of its
	 * sockets, which a step line must never reach */
	if (fds && fds[0]) {
		struct stat a, b;

		errno = 0;
		v = strtol(fds, &end, 10);
		if (!*end && !errno && v >= 0 && v < 1 << 20 && fcntl((int)v, F_GETFL) >= 0 &&
		    (fcntl((int)v, F_GETFL) & O_ACCMODE) != O_RDONLY && fstat((int)v, &a) == 0 &&
		    (!path || !path[0] || (stat(path, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino)))
			return (int)v;
	}
	if (!path || !path[0])
		return -1;
	fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		fprintf(stderr, "nodetune-harness: %s: %s (no step reports)\n", path, strerror(errno));
	return fd;
}

void stepreport_write(int *fd, long step, int rank, double samples, const struct step_rec *rec)
{
	char line[512];
	int n;

	if (*fd < 0)
		return;
	n = snprintf(line, sizeof(line),
		     "{\"step\": %ld, \"t\": %.9f, \"samples\": %.0f, \"rank\": %d, \"phases\": {\"data\": %.9f, "
		     "\"h2d\": %.9f, \"forward\": %.9f, \"backward\": %.9f, \"comm_exposed\": %.9f, "
		     "\"optimizer\": %.9f}}\n",
		     step, rec->total / 1e3, samples, rank, rec->data_wait / 1e3, rec->h2d / 1e3, rec->fwd / 1e3,
		     rec->bwd / 1e3, rec->comm_exposed / 1e3, rec->opt / 1e3);
	if (n > 0 && (size_t)n < sizeof(line) && write(*fd, line, (size_t)n) == n)
		return;
	fprintf(stderr, "nodetune-harness: rank %d: writing a step report failed: %s (no more step reports)\n",
		rank, strerror(errno));
	*fd = -1;
}

void stepreport_close(int fd)
{
	if (fd > 2)
		close(fd);
}
