/* SPDX-License-Identifier: MIT */
/* metrics.h — Prometheus exposition: a metric set, its text rendering, a
 * node_exporter textfile and an HTTP /metrics endpoint.
 *
 * The daemon builds a struct metrics afresh each cycle (declare families,
 * add samples), renders it once to the Prometheus text format 0.0.4, and
 * hands the text to both outlets:
 *
 *   struct metrics *m = metrics_new();
 *   metrics_declare(m, "nodetune_drift_total", METRIC_COUNTER, "Knobs ...", &err);
 *   metrics_add(m, "nodetune_drift_total", (const char *[]){ "knob", k, NULL }, n, &err);
 *   metrics_render(m, &text, &len, &err);
 *   metrics_server_publish(srv, text, len);          // copies
 *   metrics_write_textfile(dir, "nodetune", text, len, &err);
 *   free(text); metrics_free(m);
 *
 * What it promises about the text: one `# HELP` and one `# TYPE` line per
 * family, in declaration order, its samples right below it in the order
 * they were added; label values escaped (\\, \", \n), HELP escaped (\\, \n);
 * every metric and label name valid; each label set sorted by label name
 * and unique within its family; values printed as the shortest decimal that
 * parses back to the same double, and +Inf, -Inf, NaN as Prometheus spells
 * them.  A bad name, label or value is refused when it is added (-EINVAL,
 * with a message naming it), so rendering a set never fails but for memory.
 *
 * Threads: a struct metrics belongs to one thread.  The server runs its own
 * thread (libmicrohttpd's internal polling thread); metrics_server_publish
 * may be called from any thread, and a scrape copies the last published
 * text under a mutex and sends it without holding it, so a slow scraper
 * never blocks the publisher.
 */
#ifndef NODETUNE_METRICS_H
#define NODETUNE_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

#include "nt_err.h"

/* A family's type.  METRIC_INFO is the info-style gauge (`# TYPE x gauge`,
 * name ending in `_info`, every sample's value 1, the facts in labels). */
enum metric_type { METRIC_COUNTER, METRIC_GAUGE, METRIC_INFO };

/* Bounds (refused with -EINVAL beyond them). */
#define METRICS_NAME_MAX 200      /* a metric or label name, bytes */
#define METRICS_LABELS_MAX 16     /* labels on one sample */
#define METRICS_VALUE_MAX 4096    /* a label value or HELP text, bytes */

/* ---- a metric set ------------------------------------------------------- */

struct metrics; /* opaque */

/* An empty set.  Returns NULL (errno ENOMEM) when out of memory. */
struct metrics *metrics_new(void);
/* Free the set and everything in it; NULL is a no-op. */
void metrics_free(struct metrics *m);

/* Declare family name with its type and help text (copied).  A counter's
 * name must end in "_total", an info family's in "_info".  Returns 0, or
 * -EINVAL (a bad name or suffix, help not valid UTF-8 or too long),
 * -EEXIST (name already declared), -ENOMEM; err says which.  On failure
 * the set is unchanged. */
int metrics_declare(struct metrics *m, const char *name, enum metric_type type,
		    const char *help, struct nt_err *err);

/* Add a sample to the declared family name.  labels is NULL or a
 * NULL-terminated array of name, value pairs ({ "gpu", "0", NULL }),
 * copied.  Returns 0, or -ENOENT (family not declared), -EINVAL (a bad
 * label name, a label named twice, an odd array, a value not valid UTF-8 or
 * too long, more than METRICS_LABELS_MAX labels, a counter value that is
 * negative or NaN, an info value other than 1), -EEXIST (the family already
 * has a sample with this label set), -ENOMEM; err says which.  On failure
 * the set is unchanged. */
int metrics_add(struct metrics *m, const char *name, const char *const *labels,
		double value, struct nt_err *err);

/* Render the set to the text format 0.0.4.  *ret_text (NUL-terminated,
 * caller frees) and *ret_len (without the NUL) are set on success.
 * Returns 0 or -ENOMEM; on failure the outputs are untouched. */
int metrics_render(const struct metrics *m, char **ret_text, size_t *ret_len,
		   struct nt_err *err);

/* ---- node_exporter textfile -------------------------------------------- */

/* Write text to DIR/NAME.prom atomically: a temp file ".NAME.prom.XXXXXX"
 * in dir (which node_exporter ignores) is created O_EXCL|O_NOFOLLOW, mode
 * 0644 exactly, written, fsync'd, renamed over DIR/NAME.prom, and the
 * directory fsync'd.  name is a plain file name (no '/', not starting with
 * '.', without the ".prom").  Returns 0 or -errno (-EINVAL for a bad name,
 * -ENOENT/-ENOTDIR/-EACCES for dir, -ENOSPC, -EIO, ...), err naming the
 * path and the step.  On failure DIR/NAME.prom is left as it was and the
 * temp file is removed. */
int metrics_write_textfile(const char *dir, const char *name, const char *text,
			   size_t len, struct nt_err *err);

/* The system calls metrics_write_textfile makes that tests fail on purpose
 * (they may swap entries and must restore them). */
struct metrics_syscalls {
	ssize_t (*write)(int fd, const void *buf, size_t count);
	int (*fsync)(int fd);
	int (*renameat)(int olddirfd, const char *oldpath, int newdirfd, const char *newpath);
};
extern struct metrics_syscalls metrics_sys;

/* ---- HTTP endpoint ------------------------------------------------------ */

#define METRICS_DEFAULT_LISTEN "127.0.0.1:9477"
#define METRICS_CONNECTIONS_MAX 16    /* open connections at once */
#define METRICS_PER_IP_MAX 8          /* of them from one address */
#define METRICS_TIMEOUT_S 10          /* idle connection closed after */
#define METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* Parse a listen address: "A.B.C.D:PORT", "[IPV6]:PORT" or ":PORT" (every
 * address, IPv6 and IPv4 where the host has IPv6, else IPv4).  Addresses
 * are numeric (no host names); PORT is decimal 0..65535, 0 meaning a free
 * port chosen at bind time.  Fills *ret_sa and *ret_len.  Returns 0, or
 * -EINVAL with err saying what is wrong; outputs untouched on failure. */
int metrics_parse_listen(const char *addr, struct sockaddr_storage *ret_sa,
			 socklen_t *ret_len, struct nt_err *err);

struct metrics_server; /* opaque */

/* Bind exactly addr (metrics_parse_listen), listen, and serve in a thread
 * of its own: GET and HEAD /metrics answer the last published text (503
 * until the first publish), another path 404, another method on /metrics
 * 405.  At most METRICS_CONNECTIONS_MAX connections, METRICS_PER_IP_MAX
 * from one address, each closed after METRICS_TIMEOUT_S idle seconds.
 * The thread blocks every signal, so the caller's threads receive them.
 * Returns the server, or NULL with err set: -EINVAL (bad addr),
 * -EADDRINUSE (the port is taken), -EADDRNOTAVAIL (not an address of this
 * host), -EACCES (a privileged port), -ENOMEM, -EIO (libmicrohttpd failed
 * to start). */
struct metrics_server *metrics_server_start(const char *addr, struct nt_err *err);

/* The port bound (useful after asking for port 0). */
unsigned short metrics_server_port(const struct metrics_server *s);

/* Make text[0..len) what the next scrapes get (copied; the previous text is
 * freed).  Safe from any thread.  Returns 0, or -ENOMEM with the previous
 * text still served. */
int metrics_server_publish(struct metrics_server *s, const char *text, size_t len);

/* Stop the thread (a scrape in flight is cut), close the listen socket and
 * every connection, and free; NULL is a no-op. */
void metrics_server_stop(struct metrics_server *s);

#endif
