/* SPDX-License-Identifier: MIT */
/* ctlsock.c — the status socket (see ctlsock.h).
 *
 * Divisions:
 *   requests         the table of verbs and the request-line parser
 *   replies          what a request line is answered with
 *   the socket file  checking the directory, a stale socket, bind
 *   serving          the thread: poll over the wake pipe, the listener and
 *                    the clients, each with its deadline
 *   start, publish, stop
 *   client           ctlsock_query
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <libgen.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "nt_clock.h"
#include "daemon/ctlsock.h"
#include "daemon/ctlsock_test.h"
#include "base/log.h"

#define WORDS_MAX 4

/* ==== requests =========================================================== */

static const struct ctlsock_verb_row {
	enum ctlsock_verb verb;
	const char *name;
	const char *const formats[2]; /* the optional argument, by enum ctlsock_format */
} verbs[] = {
	{ CTLSOCK_STATUS, "status", { [CTLSOCK_FORMAT_JSON] = "json" } },
};

int ctlsock_parse_request(const char *line, size_t len, struct ctlsock_request *ret_req,
			  struct nt_err *err)
{
	const char *w[WORDS_MAX];
	size_t wl[WORDS_MAX], n = 0;
	struct ctlsock_request req = { .format = CTLSOCK_FORMAT_JSON };
	const struct ctlsock_verb_row *row = NULL;

	if (len && line[len - 1] == '\r')
		len--;
	if (len >= CTLSOCK_LINE_MAX)
		return err_set(err, -EINVAL, "request line longer than %d bytes", CTLSOCK_LINE_MAX - 1);
	for (size_t i = 0; i < len; i++) {
		if (line[i] < 0x20 || line[i] > 0x7e)
			return err_set(err, -EINVAL, "request holds byte 0x%02x at offset %zu: want printable ASCII",
				       (unsigned char)line[i], i);
		if (line[i] == ' ')
			continue;
		if (i > 0 && line[i - 1] != ' ') {
			wl[n - 1]++;
			continue;
		}
		if (n == WORDS_MAX)
			return err_set(err, -EINVAL, "request has more than %d words", WORDS_MAX);
		w[n] = line + i;
		wl[n++] = 1;
	}
	if (n == 0)
		return err_set(err, -EINVAL, "empty request: try 'status'");
	for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]) && !row; i++)
		if (strlen(verbs[i].name) == wl[0] && !memcmp(verbs[i].name, w[0], wl[0]))
			row = &verbs[i];
	if (!row)
		return err_set(err, -EOPNOTSUPP, "unknown request '%.*s': try 'status'", (int)(wl[0] > 32 ? 32 : wl[0]), w[0]);
	req.verb = row->verb;
	if (n > 2)
		return err_set(err, -EINVAL, "%s: too many arguments", row->name);
	if (n == 2) {
		size_t f = 0;

		while (f < 2 && !(row->formats[f] && strlen(row->formats[f]) == wl[1] &&
				  !memcmp(row->formats[f], w[1], wl[1])))
			f++;
		if (f == 2)
			return err_set(err, -EINVAL, "%s: unknown argument '%.*s': try '%s json'", row->name,
				       (int)(wl[1] > 32 ? 32 : wl[1]), w[1], row->name);
		req.format = (enum ctlsock_format)f;
	}
	*ret_req = req;
	return 0;
}

/* ==== replies ============================================================ */

/* {"error": msg} and a newline, malloc'd; NULL when out of memory. */
static char *error_reply(const char *msg)
{
	json_t *o = json_pack("{s:s}", "error", msg);
	char *doc = o ? json_dumps(o, JSON_ENSURE_ASCII) : NULL, *line = NULL;

	json_decref(o);
	if (doc && asprintf(&line, "%s\n", doc) < 0)
		line = NULL;
	free(doc);
	return line;
}

struct ctlsock {
	char *path;
	dev_t dev;     /* the socket file this server made */
	ino_t ino;
	int listen_fd;
	int wake[2];   /* a byte in wake[1] stops the thread */
	unsigned clients_max, deadline_ms;
	struct client *clients;
	pthread_t thread;
	bool thread_started;
	pthread_mutex_t lock;
	char *doc;     /* published document, "\n" appended; NULL before the first */
};

/* The answer to one request line, malloc'd, ending in '\n'. */
static char *answer(struct ctlsock *s, const char *line, size_t len)
{
	struct nt_err err = { 0 };
	struct ctlsock_request req;
	char *out = NULL;

	if (ctlsock_parse_request(line, len, &req, &err) < 0)
		return error_reply(err.msg);
	switch (req.verb) {
	case CTLSOCK_STATUS:
		pthread_mutex_lock(&s->lock);
		out = s->doc ? strdup(s->doc) : NULL;
		pthread_mutex_unlock(&s->lock);
		return out ? out : error_reply("no status published yet");
	}
	return error_reply("unhandled request");
}

/* ==== the socket file ==================================================== */

/* The directory of path must be one only root or we can write into. */
static int dir_check(const char *path, struct nt_err *err)
{
	char *copy = strdup(path);
	const char *dir;
	struct stat st;
	int r = 0;

	if (!copy)
		return err_set(err, -ENOMEM, "out of memory");
	dir = dirname(copy);
	if (stat(dir, &st) < 0)
		r = err_set(err, -errno, "%s: %s", dir, nt_strerror(errno));
	else if (!S_ISDIR(st.st_mode))
		r = err_set(err, -ENOTDIR, "%s: not a directory", dir);
	else if (st.st_mode & (S_IWGRP | S_IWOTH))
		r = err_set(err, -EPERM, "%s: writable by group or others: refusing to put the status socket there", dir);
	else if (st.st_uid != 0 && st.st_uid != geteuid())
		r = err_set(err, -EPERM, "%s: owned by uid %u, neither root nor us: refusing to put the status socket there",
			    dir, (unsigned)st.st_uid);
	free(copy);
	return r;
}

static int sockaddr_fill(struct sockaddr_un *sa, const char *path)
{
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	if (!path[0] || strlen(path) >= sizeof(sa->sun_path))
		return -ENAMETOOLONG;
	memcpy(sa->sun_path, path, strlen(path));
	return 0;
}

/* An existing entry at path: a stale socket is removed; a live one, or
 * anything that is not a socket, is refused. */
static int stale_remove(const char *path, const struct sockaddr_un *sa, struct nt_err *err)
{
	struct stat st;
	int fd, r;

	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0 : err_set(err, -errno, "%s: %s", path, nt_strerror(errno));
	if (!S_ISSOCK(st.st_mode))
		return err_set(err, -EEXIST, "%s: exists and is not a socket: refusing to replace it", path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return err_set(err, -errno, "socket: %s", nt_strerror(errno));
	r = connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) < 0 ? -errno : 0;
	close(fd);
	if (r == 0 || r == -EAGAIN || r == -EINPROGRESS)
		return err_set(err, -EADDRINUSE, "%s: another daemon is listening on it", path);
	if (r != -ECONNREFUSED)
		return err_set(err, r, "%s: probing the existing socket: %s", path, nt_strerror(-r));
	log_msg(LOG_DEBUG, "%s: stale socket (nobody listens): replacing it", path);
	if (unlink(path) < 0 && errno != ENOENT)
		return err_set(err, -errno, "%s: removing the stale socket: %s", path, nt_strerror(errno));
	return 0;
}

/* Bind path, chmod 0600 before anyone can connect, listen.  fd or -errno. */
static int socket_create(struct ctlsock *s, const struct sockaddr_un *sa, struct nt_err *err)
{
	struct stat st;
	int fd, r;

	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return err_set(err, -errno, "socket: %s", nt_strerror(errno));
	if (bind(fd, (const struct sockaddr *)sa, sizeof(*sa)) < 0) {
		r = -errno;
		close(fd);
		return err_set(err, r, "%s: bind: %s", s->path, nt_strerror(-r));
	}
	if (chmod(s->path, 0600) < 0 || lstat(s->path, &st) < 0 || listen(fd, 64) < 0) {
		r = -errno;
		close(fd);
		unlink(s->path);
		return err_set(err, r, "%s: %s", s->path, nt_strerror(-r));
	}
	s->dev = st.st_dev;
	s->ino = st.st_ino;
	return fd;
}

/* ==== serving ============================================================ */

struct client {
	int fd;              /* -1: a free slot */
	int64_t deadline;
	size_t in_len;
	char in[CTLSOCK_LINE_MAX];
	char *out;           /* the answer, once the line is in */
	size_t out_len, out_off;
};

static void client_close(struct client *c)
{
	if (c->fd >= 0)
		close(c->fd);
	free(c->out);
	c->fd = -1;
	c->out = NULL;
	c->in_len = c->out_len = c->out_off = 0;
}

/* Send one line to a client we will not serve, without waiting, and close. */
static void refuse(int fd, const char *msg)
{
	char *line = error_reply(msg);

	if (line && send(fd, line, strlen(line), MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
		log_msg(LOG_DEBUG, "status socket: refusing a client: %s", nt_strerror(errno));
	free(line);
	close(fd);
}

static bool peer_allowed(int fd, char *why, size_t size)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
		snprintf(why, size, "permission denied: peer credentials unknown");
		return false;
	}
	if (cred.uid == 0 || cred.uid == geteuid())
		return true;
	snprintf(why, size, "permission denied: uid %u is neither root nor the daemon's uid %u",
		 (unsigned)cred.uid, (unsigned)geteuid());
	return false;
}

static void accept_clients(struct ctlsock *s)
{
	char why[128];

	for (int i = 0; i < 64; i++) {
		int fd = accept4(s->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		unsigned k = 0;

		if (fd < 0)
			return; /* EAGAIN, or a client gone already, or no fds: next poll */
		if (!peer_allowed(fd, why, sizeof(why))) {
			refuse(fd, why);
			continue;
		}
		while (k < s->clients_max && s->clients[k].fd >= 0)
			k++;
		if (k == s->clients_max) {
			refuse(fd, "busy: too many clients, try again");
			continue;
		}
		s->clients[k].fd = fd;
		s->clients[k].deadline = nt_mono_ns() / 1000000 + s->deadline_ms;
	}
}

/* Send what is left of the answer; close when all is out or on error. */
static void client_write(struct client *c)
{
	while (c->out_off < c->out_len) {
		ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off,
				 MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n <= 0)
			break;
		c->out_off += (size_t)n;
	}
	client_close(c);
}

/* The line is in (or cannot be): make the answer and start sending it. */
static void client_answer(struct ctlsock *s, struct client *c, size_t line_len, bool too_long)
{
	char msg[96];

	if (too_long) {
		snprintf(msg, sizeof(msg), "request line longer than %d bytes", CTLSOCK_LINE_MAX - 1);
		c->out = error_reply(msg);
	} else {
		c->out = answer(s, c->in, line_len);
	}
	if (!c->out) {
		client_close(c);
		return;
	}
	c->out_len = strlen(c->out);
	shutdown(c->fd, SHUT_RD);
	client_write(c);
}

static void client_read(struct ctlsock *s, struct client *c)
{
	ssize_t n;
	char *nl;

	n = recv(c->fd, c->in + c->in_len, sizeof(c->in) - c->in_len, MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n < 0 || (n == 0 && c->in_len == 0)) {
		client_close(c);
		return;
	}
	if (n == 0) { /* the client shut its write side: the line is what came */
		client_answer(s, c, c->in_len, false);
		return;
	}
	c->in_len += (size_t)n;
	nl = memchr(c->in, '\n', c->in_len);
	if (nl)
		client_answer(s, c, (size_t)(nl - c->in), false);
	else if (c->in_len == sizeof(c->in))
		client_answer(s, c, 0, true);
}

/* Poll set: [0] the wake pipe, [1] the listener, then one per client
 * (map[] says which).  Returns the count. */
static nfds_t pollset(struct ctlsock *s, struct pollfd *pfd, unsigned *map)
{
	nfds_t n = 2;

	pfd[0] = (struct pollfd){ .fd = s->wake[0], .events = POLLIN };
	pfd[1] = (struct pollfd){ .fd = s->listen_fd, .events = POLLIN };
	for (unsigned k = 0; k < s->clients_max; k++) {
		if (s->clients[k].fd < 0)
			continue;
		map[n] = k;
		pfd[n++] = (struct pollfd){ .fd = s->clients[k].fd,
					    .events = s->clients[k].out ? POLLOUT : POLLIN };
	}
	return n;
}

/* Drop clients past their deadline; the milliseconds to the next one, or
 * -1 when no client is connected. */
static int deadlines(struct ctlsock *s)
{
	int64_t now = nt_mono_ns() / 1000000, next = -1;

	for (unsigned k = 0; k < s->clients_max; k++) {
		struct client *c = &s->clients[k];

		if (c->fd < 0)
			continue;
		if (c->deadline <= now) {
			log_msg(LOG_DEBUG, "status socket: a client passed its deadline: dropped");
			client_close(c);
			continue;
		}
		if (next < 0 || c->deadline - now < next)
			next = c->deadline - now;
	}
	return next > INT32_MAX ? INT32_MAX : (int)next;
}

static void *serve(void *arg)
{
	struct ctlsock *s = arg;
	struct pollfd *pfd = calloc(s->clients_max + 2, sizeof(*pfd));
	unsigned *map = calloc(s->clients_max + 2, sizeof(*map));

	while (pfd && map) {
		nfds_t n = pollset(s, pfd, map);
		int r = poll(pfd, n, deadlines(s));

		if (r < 0 && errno != EINTR) {
			log_msg(LOG_DEBUG, "status socket: poll: %s", nt_strerror(errno));
			poll(NULL, 0, 100); /* ENOMEM: breathe, then again */
			continue;
		}
		if (r <= 0)
			continue;
		if (pfd[0].revents)
			break;
		if (pfd[1].revents & POLLIN)
			accept_clients(s);
		for (nfds_t i = 2; i < n; i++) {
			struct client *c = &s->clients[map[i]];

			if (!pfd[i].revents || c->fd != pfd[i].fd)
				continue;
			if (c->out)
				client_write(c);
			else
				client_read(s, c);
		}
	}
	if (!pfd || !map)
		log_msg(LOG_DEBUG, "status socket: out of memory: not serving");
	free(pfd);
	free(map);
	return NULL;
}

/* ==== start, publish, stop =============================================== */

static int thread_start(struct ctlsock *s, struct nt_err *err)
{
	sigset_t all, old;
	int r;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	r = pthread_create(&s->thread, NULL, serve, s);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r)
		return err_set(err, -r, "status socket: cannot start its thread: %s", nt_strerror(r));
	s->thread_started = true;
	return 0;
}

static struct ctlsock *ctlsock_alloc(const char *path, const struct ctlsock_opts *opts)
{
	struct ctlsock *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->listen_fd = s->wake[0] = s->wake[1] = -1;
	s->clients_max = opts && opts->clients_max ? opts->clients_max : CTLSOCK_CLIENTS_MAX;
	s->deadline_ms = opts && opts->deadline_ms ? opts->deadline_ms : CTLSOCK_DEADLINE_MS;
	pthread_mutex_init(&s->lock, NULL);
	s->path = strdup(path);
	s->clients = calloc(s->clients_max, sizeof(*s->clients));
	if (!s->path || !s->clients) {
		ctlsock_stop(s);
		return NULL;
	}
	for (unsigned k = 0; k < s->clients_max; k++)
		s->clients[k].fd = -1;
	return s;
}

struct ctlsock *ctlsock_start(const char *path, const struct ctlsock_opts *opts,
			      struct nt_err *err)
{
	struct sockaddr_un sa;
	struct ctlsock *s;

	if (!path || sockaddr_fill(&sa, path) < 0) {
		err_set(err, -ENAMETOOLONG, "status socket path '%.64s' is empty or longer than %zu bytes",
			path ? path : "", sizeof(sa.sun_path) - 1);
		return NULL;
	}
	if (dir_check(path, err) < 0 || stale_remove(path, &sa, err) < 0)
		return NULL;
	s = ctlsock_alloc(path, opts);
	if (!s) {
		err_set(err, -ENOMEM, "status socket: out of memory");
		return NULL;
	}
	if (pipe2(s->wake, O_CLOEXEC | O_NONBLOCK) < 0) {
		err_set(err, -errno, "status socket: pipe: %s", nt_strerror(errno));
		goto out_stop;
	}
	s->listen_fd = socket_create(s, &sa, err);
	if (s->listen_fd < 0 || thread_start(s, err) < 0)
		goto out_stop;
	log_msg(LOG_DEBUG, "status socket: listening on %s", path);
	return s;

out_stop:
	ctlsock_stop(s);
	return NULL;
}

int ctlsock_publish(struct ctlsock *s, const char *json)
{
	char *line, *old;

	if (strchr(json, '\n'))
		return -EINVAL;
	if (asprintf(&line, "%s\n", json) < 0)
		return -ENOMEM;
	pthread_mutex_lock(&s->lock);
	old = s->doc;
	s->doc = line;
	pthread_mutex_unlock(&s->lock);
	free(old);
	return 0;
}

void ctlsock_stop(struct ctlsock *s)
{
	struct stat st;

	if (!s)
		return;
	if (s->thread_started) {
		if (write(s->wake[1], "", 1) < 0)
			log_msg(LOG_DEBUG, "status socket: waking the thread: %s", nt_strerror(errno));
		pthread_join(s->thread, NULL);
	}
	for (unsigned k = 0; s->clients && k < s->clients_max; k++)
		client_close(&s->clients[k]);
	if (s->listen_fd >= 0) {
		close(s->listen_fd);
		if (lstat(s->path, &st) == 0 && st.st_dev == s->dev && st.st_ino == s->ino)
			unlink(s->path);
	}
	if (s->wake[0] >= 0)
		close(s->wake[0]);
	if (s->wake[1] >= 0)
		close(s->wake[1]);
	pthread_mutex_destroy(&s->lock);
	free(s->clients);
	free(s->doc);
	free(s->path);
	free(s);
}

/* ==== client ============================================================= */

/* Wait for events on fd until deadline.  0, -ETIMEDOUT or -errno. */
static int wait_fd(int fd, short events, int64_t deadline)
{
	for (;;) {
		struct pollfd p = { .fd = fd, .events = events };
		int64_t left = deadline - nt_mono_ns() / 1000000;
		int r;

		if (left <= 0)
			return -ETIMEDOUT;
		r = poll(&p, 1, (int)left);
		if (r > 0)
			return 0;
		if (r < 0 && errno != EINTR)
			return -errno;
	}
}

static int query_connect(const char *path, struct nt_err *err)
{
	struct sockaddr_un sa;
	int fd, r;

	if (sockaddr_fill(&sa, path) < 0)
		return err_set(err, -ENAMETOOLONG, "status socket path '%.64s' is empty or too long", path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return err_set(err, -errno, "socket: %s", nt_strerror(errno));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
		return fd;
	r = -errno;
	close(fd);
	if (r == -ENOENT)
		return err_set(err, r, "no daemon is listening on %s (no such socket)", path);
	if (r == -ECONNREFUSED)
		return err_set(err, r, "no daemon is listening on %s", path);
	if (r == -EACCES || r == -EPERM)
		return err_set(err, -EACCES, "permission denied on %s (the status socket is root's: run as root)", path);
	if (r == -EAGAIN)
		return err_set(err, r, "the daemon on %s accepts no more connections now: try again", path);
	return err_set(err, r, "%s: connect: %s", path, nt_strerror(-r));
}

static int query_send(int fd, const char *path, const char *line, size_t len, int64_t deadline,
		      struct nt_err *err)
{
	size_t off = 0;

	while (off < len) {
		ssize_t n = send(fd, line + off, len - off, MSG_NOSIGNAL | MSG_DONTWAIT);
		int r;

		if (n >= 0) {
			off += (size_t)n;
			continue;
		}
		if (errno == EPIPE || errno == ECONNRESET)
			return -errno; /* it closed on us: its answer may be waiting */
		if (errno != EAGAIN && errno != EINTR)
			return err_set(err, -errno, "%s: sending the request: %s", path, nt_strerror(errno));
		r = wait_fd(fd, POLLOUT, deadline);
		if (r < 0)
			return err_set(err, r, "%s: %s sending the request", path,
				       r == -ETIMEDOUT ? "timed out" : nt_strerror(-r));
	}
	return 0;
}

/* Read until EOF into *ret (NUL-terminated), its length in *ret_len. */
static int query_recv(int fd, const char *path, int64_t deadline, int timeout_ms,
		      char **ret, size_t *ret_len, struct nt_err *err)
{
	char *buf = NULL, *p;
	size_t len = 0, cap = 0;
	ssize_t n;
	int r = 0;

	for (;;) {
		if (len > CTLSOCK_REPLY_MAX) {
			r = err_set(err, -EMSGSIZE, "%s: an answer over %u bytes", path, CTLSOCK_REPLY_MAX);
			break;
		}
		if (cap - len < 4097) {
			size_t ncap = cap ? cap * 2 : 8192;

			p = realloc(buf, ncap);
			if (!p) {
				r = err_set(err, -ENOMEM, "out of memory");
				break;
			}
			buf = p;
			cap = ncap;
		}
		n = recv(fd, buf + len, cap - len - 1, MSG_DONTWAIT);
		if (n > 0) {
			len += (size_t)n;
			continue;
		}
		if (n == 0 || (n < 0 && errno == ECONNRESET)) /* what came is the answer */
			break;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN) {
			r = err_set(err, -errno, "%s: reading the answer: %s", path, nt_strerror(errno));
			break;
		}
		r = wait_fd(fd, POLLIN, deadline);
		if (r == -ETIMEDOUT) {
			r = err_set(err, r, "no answer from the daemon on %s within %d ms", path, timeout_ms);
			break;
		}
		if (r < 0) {
			r = err_set(err, r, "%s: %s", path, nt_strerror(-r));
			break;
		}
	}
	if (r < 0) {
		free(buf);
		return r;
	}
	buf[len] = '\0';
	*ret = buf;
	*ret_len = len;
	return 0;
}

/* An answer that is exactly {"error": "..."} becomes -EREMOTEIO. */
static int reply_check(const char *path, const char *reply, struct nt_err *err)
{
	json_t *o = json_loads(reply, JSON_REJECT_DUPLICATES, NULL);
	json_t *e = o ? json_object_get(o, "error") : NULL;
	int r = 0;

	if (json_is_string(e) && json_object_size(o) == 1)
		r = err_set(err, -EREMOTEIO, "the daemon on %s answered: %s", path, json_string_value(e));
	json_decref(o);
	return r;
}

int ctlsock_peer(const char *path, pid_t *ret_pid, uid_t *ret_uid, struct nt_err *err)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	int fd = query_connect(path, err), r = 0;

	if (fd < 0)
		return fd;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
		r = err_set(err, -errno, "%s: SO_PEERCRED: %s", path, strerror(errno));
	close(fd);
	if (r < 0)
		return r;
	*ret_pid = cred.pid;
	*ret_uid = cred.uid;
	return 0;
}

int ctlsock_query(const char *path, const char *request, int timeout_ms,
		  char **ret_reply, struct nt_err *err)
{
	int64_t deadline = nt_mono_ns() / 1000000 + (timeout_ms > 0 ? timeout_ms : 0);
	char *line = NULL, *reply = NULL;
	size_t len;
	int fd, r;

	if (strchr(request, '\n') || strlen(request) >= CTLSOCK_LINE_MAX)
		return err_set(err, -EINVAL, "request holds a newline or is longer than %d bytes", CTLSOCK_LINE_MAX - 1);
	if (asprintf(&line, "%s\n", request) < 0)
		return err_set(err, -ENOMEM, "out of memory");
	fd = query_connect(path, err);
	if (fd < 0) {
		free(line);
		return fd;
	}
	/* a server that refuses us (busy, peer credentials) may answer and
	 * close before our request is sent: read its answer all the same */
	r = query_send(fd, path, line, strlen(line), deadline, err);
	if (r == 0 || r == -EPIPE || r == -ECONNRESET)
		r = query_recv(fd, path, deadline, timeout_ms, &reply, &len, err);
	close(fd);
	free(line);
	if (r == 0 && (len == 0 || reply[len - 1] != '\n'))
		r = err_set(err, -EPROTO, "the daemon on %s closed the connection without a complete answer", path);
	if (r == 0) {
		reply[len - 1] = '\0';
		r = reply_check(path, reply, err);
	}
	if (r < 0) {
		free(reply);
		return r;
	}
	*ret_reply = reply;
	return 0;
}
