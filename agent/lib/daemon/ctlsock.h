/* SPDX-License-Identifier: MIT */
/* ctlsock.h — the daemon's status socket, and the client `nodetune status`
 * uses to ask it.
 *
 * Server: a unix stream socket (default /run/nodetune/nodetune.sock, mode
 * 0600) served by a thread of its own, so nothing a client does can stall
 * the daemon's loop: every socket is nonblocking, a request line is at most
 * CTLSOCK_LINE_MAX bytes, each client has a deadline after which it is
 * dropped, at most clients_max are served at once (more get a "busy" line
 * and are closed), and no write raises SIGPIPE.  The daemon publishes a
 * JSON document with ctlsock_publish() whenever its state changes; the
 * thread answers from a copy of it.  Peers are checked with SO_PEERCRED:
 * root and the daemon's own effective uid are served, others get an error
 * line and are closed.
 *
 * Protocol (text, one exchange per connection):
 *   client: one request line, "VERB [ARG]", ended by '\n' (or by the client
 *           shutting down its write side); printable ASCII, words separated
 *           by spaces
 *   server: one JSON document on one line, '\n', then closes
 * Requests (the table in ctlsock.c; a new one is a row):
 *   status [json]   the last published status document
 * A request the server cannot answer gets {"error": "..."}: an unknown
 * verb, a bad line, a line too long, no status published yet, busy, a peer
 * not allowed.
 */
#ifndef NODETUNE_CTLSOCK_H
#define NODETUNE_CTLSOCK_H

#include <stddef.h>
#include <sys/types.h>

#include "nt_err.h"

#define CTLSOCK_DEFAULT_PATH "/run/nodetune/nodetune.sock"
#define CTLSOCK_LINE_MAX 4096            /* request line, its '\n' included */
#define CTLSOCK_REPLY_MAX (16u << 20)    /* the most a client accepts */
#define CTLSOCK_CLIENTS_MAX 16           /* default clients at once */
#define CTLSOCK_DEADLINE_MS 2000         /* default: a client's whole exchange */

/* ---- requests ----------------------------------------------------------- */

enum ctlsock_verb { CTLSOCK_STATUS };
enum ctlsock_format { CTLSOCK_FORMAT_JSON };

struct ctlsock_request {
	enum ctlsock_verb verb;
	enum ctlsock_format format;
};

/* ---- server ------------------------------------------------------------- */

/* Tunables; a zero field takes the default. */
struct ctlsock_opts {
	unsigned clients_max;   /* CTLSOCK_CLIENTS_MAX */
	unsigned deadline_ms;   /* CTLSOCK_DEADLINE_MS */
};

struct ctlsock; /* opaque */

/* Create the socket at path and start serving it in a thread (every signal
 * blocked in it, so the caller's threads receive them).  opts may be NULL.
 * The directory must exist (systemd's RuntimeDirectory=nodetune makes
 * /run/nodetune), belong to root or the effective uid and be writable by
 * no one else.  An existing socket nobody listens on is stale and replaced.
 * Returns the server, or NULL with err set: -EPERM (the directory is
 * writable by group or others, or owned by another user), -ENOTDIR,
 * -ENOENT (no such directory), -EEXIST (path exists and is not a socket:
 * left alone), -EADDRINUSE (another process listens on path: left alone),
 * -ENAMETOOLONG (longer than a unix socket address holds), -ENOMEM,
 * -EAGAIN (no thread), or the errno of socket/bind/listen. */
struct ctlsock *ctlsock_start(const char *path, const struct ctlsock_opts *opts,
			      struct nt_err *err);

/* Make json (one JSON document, copied) what the next requests get; it
 * must not contain a newline.  Never blocks on clients (a mutex held for a
 * pointer swap).  Returns 0, -EINVAL (a newline in json) or -ENOMEM; on
 * failure the previous document is still served. */
int ctlsock_publish(struct ctlsock *s, const char *json);

/* Stop the thread (joined), close every client and the socket, remove the
 * socket file if it is still the one this server created, and free.
 * NULL is a no-op. */
void ctlsock_stop(struct ctlsock *s);

/* ---- client ------------------------------------------------------------- */

/* Send request (one line, without '\n') to the server at path and read its
 * answer, all within timeout_ms.  On success *ret_reply is the answer
 * without its '\n' (NUL-terminated; the caller frees).  Returns 0, or:
 *   -ENOENT, -ECONNREFUSED  no daemon is listening on path
 *   -EACCES                 permission denied on path (not root?)
 *   -ETIMEDOUT              no complete answer within timeout_ms
 *   -EREMOTEIO              the server answered {"error": "..."} (err holds
 *                           its message)
 *   -EPROTO                 closed without an answer
 *   -EMSGSIZE               an answer over CTLSOCK_REPLY_MAX
 *   -EINVAL                 a bad request (a newline, too long)
 *   -ENOMEM, or another socket errno
 * with err's message naming path.  *ret_reply is untouched on failure. */
int ctlsock_query(const char *path, const char *request, int timeout_ms,
		  char **ret_reply, struct nt_err *err);

/* Who listens on path: the kernel's credentials of the daemon's socket
 * (SO_PEERCRED: the process that created it, as this process's PID
 * namespace sees it; pid 0 when it cannot).  Returns 0 with *ret_pid and
 * *ret_uid, or query's connect errors (-ENOENT, -ECONNREFUSED: no daemon;
 * -EACCES) with err; outputs untouched on error. */
int ctlsock_peer(const char *path, pid_t *ret_pid, uid_t *ret_uid, struct nt_err *err);

#endif
