/* SPDX-License-Identifier: MIT */
/* gateprobe.c — a gate's job that says what it can reach, for
 * tests/integration/test_systemd.sh: run by the daemon's gate (through
 * `nodetune ab --as-user`), it appends one line to DIR/probe.txt:
 *
 *   uid=N home=DIR data=ok|ERRNO tcp=ok|ERRNO wx=ok|ERRNO dev=N tty=N
 *
 * uid: its real uid; data: it read $HOME/data.txt; tcp: a loopback TCP
 * rendezvous (listen on an ephemeral port, connect, accept, one byte each
 * way), as a multi-rank job's first step does; wx: an anonymous mapping
 * both writable and executable, as a JIT makes (CUDA's PTX JIT, Triton);
 * dev: the entries of /dev it sees (a sandbox's PrivateDevices= leaves a
 * handful); tty: its controlling terminal (field 7 of /proc/self/stat).
 * Then it spins for about 100 ms, the figure the A/B test compares.
 * Exit 0 whatever it found: the test reads the line.
 *
 * Built static on the test host (cc -static) and copied into the container.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static const char *errname(int e)
{
	static char buf[32];

	snprintf(buf, sizeof(buf), "errno%d", e);
	return e ? buf : "ok";
}

static int read_data(void)
{
	char path[4096], buf[64];
	const char *home = getenv("HOME");
	int fd, n;

	snprintf(path, sizeof(path), "%s/data.txt", home ? home : "/nonexistent");
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return errno;
	n = (int)read(fd, buf, sizeof(buf));
	close(fd);
	return n > 0 ? 0 : EIO;
}

static int tcp_rendezvous(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), c = -1, s = -1, e = 0;
	char b = 'x';

	if (l < 0)
		return errno;
	if (bind(l, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(l, 1) < 0 ||
	    getsockname(l, (struct sockaddr *)&a, &len) < 0 || (c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0 ||
	    connect(c, (struct sockaddr *)&a, sizeof(a)) < 0 || (s = accept(l, NULL, NULL)) < 0 ||
	    write(c, &b, 1) != 1 || read(s, &b, 1) != 1 || write(s, &b, 1) != 1 || read(c, &b, 1) != 1)
		e = errno ? errno : EIO;
	if (s >= 0)
		close(s);
	if (c >= 0)
		close(c);
	close(l);
	return e;
}

static int wx_mapping(void)
{
	void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return errno;
	munmap(p, 4096);
	return 0;
}

static int dev_entries(void)
{
	DIR *d = opendir("/dev");
	int n = 0;

	if (!d)
		return -1;
	while (readdir(d))
		n++;
	closedir(d);
	return n - 2;
}

static long tty_nr(void)
{
	char buf[1024], *p;
	FILE *f = fopen("/proc/self/stat", "r");
	long tty = -1;

	if (f && fgets(buf, sizeof(buf), f) && (p = strrchr(buf, ')')))
		sscanf(p + 2, "%*c %*d %*d %*d %ld", &tty);
	if (f)
		fclose(f);
	return tty;
}

static void spin_ms(long ms)
{
	struct timespec t0, t;
	volatile unsigned long x = 0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		for (int i = 0; i < 100000; i++)
			x += (unsigned long)i;
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 < ms);
}

int main(int argc, char **argv)
{
	char path[4096];
	const char *home = getenv("HOME");
	FILE *f;

	if (argc != 2) {
		fprintf(stderr, "usage: gateprobe DIR\n");
		return 2;
	}
	snprintf(path, sizeof(path), "%s/probe.txt", argv[1]);
	if (!(f = fopen(path, "a")))
		return 3;
	fprintf(f, "uid=%d home=%s data=%s", (int)getuid(), home ? home : "-", errname(read_data()));
	fprintf(f, " tcp=%s", errname(tcp_rendezvous()));
	fprintf(f, " wx=%s dev=%d tty=%ld\n", errname(wx_mapping()), dev_entries(), tty_nr());
	fclose(f);
	spin_ms(100);
	return 0;
}
