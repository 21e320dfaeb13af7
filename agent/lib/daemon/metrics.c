/* SPDX-License-Identifier: MIT */
/* metrics.c — Prometheus exposition (see metrics.h).
 *
 * Divisions:
 *   names, values, escaping   what the text format allows and how it spells it
 *   the metric set            families and samples, checked as they are added
 *   rendering                 the set to text 0.0.4
 *   textfile                  temp file, fsync, rename
 *   HTTP endpoint             listen address, libmicrohttpd, the snapshot
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/log.h"
#include "daemon/metrics.h"
#include "daemon/metrics_test.h"

/* ==== names, values, escaping =========================================== */

static bool name_valid(const char *name, bool colon)
{
	size_t n = 0;

	if (!name || !name[0] || !strncmp(name, "__", 2))
		return false;
	for (const char *p = name; *p; p++, n++) {
		char c = *p;
		bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
			  (colon && c == ':') || (p != name && c >= '0' && c <= '9');

		if (!ok || n >= METRICS_NAME_MAX)
			return false;
	}
	return true;
}

bool metrics_name_valid(const char *name)
{
	return name_valid(name, true);
}

bool metrics_label_valid(const char *name)
{
	return name_valid(name, false);
}

/* Well-formed UTF-8 (no overlongs, no surrogates, nothing past U+10FFFF),
 * at most max bytes. */
static bool utf8_valid(const char *s, size_t max)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t len = strlen(s);

	if (len > max)
		return false;
	for (size_t i = 0; i < len;) {
		unsigned c = p[i], need, cp;

		if (c < 0x80) {
			i++;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf)
			need = 1, cp = c & 0x1f;
		else if (c >= 0xe0 && c <= 0xef)
			need = 2, cp = c & 0x0f;
		else if (c >= 0xf0 && c <= 0xf4)
			need = 3, cp = c & 0x07;
		else
			return false;
		if (i + need >= len)
			return false;
		for (unsigned k = 1; k <= need; k++) {
			if ((p[i + k] & 0xc0) != 0x80)
				return false;
			cp = cp << 6 | (p[i + k] & 0x3f);
		}
		if ((need == 2 && cp < 0x800) || (need == 3 && cp < 0x10000) ||
		    (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
			return false;
		i += need + 1;
	}
	return true;
}

char *metrics_format_value(double value, char *buf, size_t size)
{
	if (isnan(value)) {
		snprintf(buf, size, "NaN");
		return buf;
	}
	if (isinf(value)) {
		snprintf(buf, size, "%s", value > 0 ? "+Inf" : "-Inf");
		return buf;
	}
	if (value == trunc(value) && fabs(value) < 9007199254740992.0) {    /* an integer below 2^53: 40, not 4e+01 */
		snprintf(buf, size, "%.0f", value);
		return buf;
	}
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(buf, size, "%.*g", prec, value);
		if (strtod(buf, NULL) == value)
			break;
	}
	return buf;
}

/* A growing output buffer; oom sticks once an allocation failed. */
struct obuf {
	char *p;
	size_t len, cap;
	bool oom;
};

static void ob_put(struct obuf *b, const char *s, size_t n)
{
	if (b->oom)
		return;
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		char *p;

		while (cap < b->len + n + 1)
			cap *= 2;
		p = realloc(b->p, cap);
		if (!p) {
			b->oom = true;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

static void ob_str(struct obuf *b, const char *s)
{
	ob_put(b, s, strlen(s));
}

/* s with '\\' and '\n' escaped, and '"' too when quote (label values). */
static void ob_escaped(struct obuf *b, const char *s, bool quote)
{
	for (; *s; s++) {
		if (*s == '\\')
			ob_str(b, "\\\\");
		else if (*s == '\n')
			ob_str(b, "\\n");
		else if (*s == '"' && quote)
			ob_str(b, "\\\"");
		else
			ob_put(b, s, 1);
	}
}

/* ==== the metric set ===================================================== */

struct sample {
	char *labels; /* rendered label set, "" or "{a=\"x\",b=\"y\"}" */
	double value;
};

struct family {
	char *name;
	char *help;
	enum metric_type type;
	struct sample *samples;
	size_t n, cap;
};

struct metrics {
	struct family *fams;
	size_t n, cap;
};

struct metrics *metrics_new(void)
{
	return calloc(1, sizeof(struct metrics));
}

void metrics_free(struct metrics *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->n; i++) {
		struct family *f = &m->fams[i];

		for (size_t j = 0; j < f->n; j++)
			free(f->samples[j].labels);
		free(f->samples);
		free(f->name);
		free(f->help);
	}
	free(m->fams);
	free(m);
}

static struct family *family_find(const struct metrics *m, const char *name)
{
	for (size_t i = 0; i < m->n; i++)
		if (!strcmp(m->fams[i].name, name))
			return &m->fams[i];
	return NULL;
}

static bool has_suffix(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);

	return n > k && !strcmp(s + n - k, suffix);
}

/* Make room for one more element in *arr (elem bytes each). */
static int grow(void **arr, size_t *cap, size_t n, size_t elem)
{
	size_t ncap = *cap ? *cap * 2 : 8;
	void *p;

	if (n < *cap)
		return 0;
	p = reallocarray(*arr, ncap, elem);
	if (!p)
		return -ENOMEM;
	*arr = p;
	*cap = ncap;
	return 0;
}

int metrics_declare(struct metrics *m, const char *name, enum metric_type type,
		    const char *help, struct nt_err *err)
{
	static const char *const suffix[] = {
		[METRIC_COUNTER] = "_total", [METRIC_GAUGE] = "", [METRIC_INFO] = "_info",
	};
	struct family f = { .type = type };

	if (!metrics_name_valid(name))
		return err_set(err, -EINVAL, "metric name '%.64s' is not [a-zA-Z_:][a-zA-Z0-9_:]* (without a leading __)", name ? name : "");
	if ((unsigned)type > METRIC_INFO)
		return err_set(err, -EINVAL, "%s: unknown metric type %d", name, (int)type);
	if (suffix[type][0] && !has_suffix(name, suffix[type]))
		return err_set(err, -EINVAL, "%s: a %s's name must end in %s", name,
			       type == METRIC_COUNTER ? "counter" : "info metric", suffix[type]);
	if (!help || !utf8_valid(help, METRICS_VALUE_MAX))
		return err_set(err, -EINVAL, "%s: help text missing, not UTF-8 or over %d bytes", name, METRICS_VALUE_MAX);
	if (family_find(m, name))
		return err_set(err, -EEXIST, "%s: family declared twice", name);
	if (grow((void **)&m->fams, &m->cap, m->n, sizeof(*m->fams)) < 0)
		return err_set(err, -ENOMEM, "%s: out of memory", name);
	f.name = strdup(name);
	f.help = strdup(help);
	if (!f.name || !f.help) {
		free(f.name);
		free(f.help);
		return err_set(err, -ENOMEM, "%s: out of memory", name);
	}
	m->fams[m->n++] = f;
	return 0;
}

/* Check labels (name, value pairs) and render them sorted by name into
 * *ret ("" when none). */
static int labels_render(const char *family, const char *const *labels, char **ret,
			 struct nt_err *err)
{
	unsigned idx[METRICS_LABELS_MAX], n = 0;
	struct obuf b = { 0 };

	for (unsigned i = 0; labels && labels[2 * i]; i++) {
		const char *name = labels[2 * i], *value = labels[2 * i + 1];

		if (n == METRICS_LABELS_MAX)
			return err_set(err, -EINVAL, "%s: more than %d labels", family, METRICS_LABELS_MAX);
		if (!metrics_label_valid(name))
			return err_set(err, -EINVAL, "%s: label name '%.64s' is not [a-zA-Z_][a-zA-Z0-9_]* (without a leading __)", family, name);
		if (!value)
			return err_set(err, -EINVAL, "%s: label %s has no value (odd label array)", family, name);
		if (!utf8_valid(value, METRICS_VALUE_MAX))
			return err_set(err, -EINVAL, "%s: label %s: value not UTF-8 or over %d bytes", family, name, METRICS_VALUE_MAX);
		/* insertion sort by name; equal names are an error */
		unsigned j = n;

		for (; j > 0 && strcmp(labels[2 * idx[j - 1]], name) >= 0; j--)
			if (!strcmp(labels[2 * idx[j - 1]], name))
				return err_set(err, -EINVAL, "%s: label %s given twice", family, name);
		memmove(idx + j + 1, idx + j, (n - j) * sizeof(idx[0]));
		idx[j] = i;
		n++;
	}
	ob_str(&b, "");
	for (unsigned k = 0; k < n; k++) {
		ob_str(&b, k ? "," : "{");
		ob_str(&b, labels[2 * idx[k]]);
		ob_str(&b, "=\"");
		ob_escaped(&b, labels[2 * idx[k] + 1], true);
		ob_str(&b, "\"");
	}
	if (n)
		ob_str(&b, "}");
	if (b.oom) {
		free(b.p);
		return err_set(err, -ENOMEM, "%s: out of memory", family);
	}
	*ret = b.p;
	return 0;
}

int metrics_add(struct metrics *m, const char *name, const char *const *labels,
		double value, struct nt_err *err)
{
	struct family *f = name ? family_find(m, name) : NULL;
	char *rendered = NULL;
	int r;

	if (!f)
		return err_set(err, -ENOENT, "metric family '%.64s' is not declared", name ? name : "");
	if (f->type == METRIC_COUNTER && (isnan(value) || value < 0))
		return err_set(err, -EINVAL, "%s: a counter cannot be negative or NaN", name);
	if (f->type == METRIC_INFO && value != 1)
		return err_set(err, -EINVAL, "%s: an info metric's value is 1", name);
	r = labels_render(name, labels, &rendered, err);
	if (r < 0)
		return r;
	for (size_t i = 0; i < f->n; i++) {
		if (!strcmp(f->samples[i].labels, rendered)) {
			r = err_set(err, -EEXIST, "%s%.200s: sample added twice", name, rendered);
			free(rendered);
			return r;
		}
	}
	if (grow((void **)&f->samples, &f->cap, f->n, sizeof(*f->samples)) < 0) {
		free(rendered);
		return err_set(err, -ENOMEM, "%s: out of memory", name);
	}
	f->samples[f->n++] = (struct sample){ .labels = rendered, .value = value };
	return 0;
}

/* ==== rendering ========================================================== */

int metrics_render(const struct metrics *m, char **ret_text, size_t *ret_len,
		   struct nt_err *err)
{
	struct obuf b = { 0 };
	char v[32];

	ob_str(&b, "");
	for (size_t i = 0; i < m->n; i++) {
		const struct family *f = &m->fams[i];

		ob_str(&b, "# HELP ");
		ob_str(&b, f->name);
		ob_str(&b, " ");
		ob_escaped(&b, f->help, false);
		ob_str(&b, "\n# TYPE ");
		ob_str(&b, f->name);
		ob_str(&b, f->type == METRIC_COUNTER ? " counter\n" : " gauge\n");
		for (size_t j = 0; j < f->n; j++) {
			ob_str(&b, f->name);
			ob_str(&b, f->samples[j].labels);
			ob_str(&b, " ");
			ob_str(&b, metrics_format_value(f->samples[j].value, v, sizeof(v)));
			ob_str(&b, "\n");
		}
	}
	if (b.oom) {
		free(b.p);
		return err_set(err, -ENOMEM, "rendering metrics: out of memory");
	}
	*ret_text = b.p;
	*ret_len = b.len;
	return 0;
}

/* ==== textfile =========================================================== */

struct metrics_syscalls metrics_sys = {
	.write = write,
	.fsync = fsync,
	.renameat = renameat,
};

static int write_all(int fd, const char *p, size_t len)
{
	while (len) {
		ssize_t n = metrics_sys.write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Create a fresh temp file ".NAME.prom.XXXXXXXX" in dfd, its name in tmp.
 * Returns the fd or -errno. */
static int temp_create(int dfd, const char *name, char *tmp, size_t size)
{
	for (int tries = 0; tries < 16; tries++) {
		uint32_t r;
		int fd;

		if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != sizeof(r))
			r = (uint32_t)getpid() ^ (uint32_t)clock() ^ (uint32_t)time(NULL) << tries;
		snprintf(tmp, size, ".%s.prom.%08x", name, r);
		fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
		if (fd >= 0)
			return fd;
		if (errno != EEXIST)
			return -errno;
	}
	return -EEXIST;
}

/* Fill, sync and close the temp file fd; rename it over final. */
static int temp_commit(int dfd, int fd, const char *tmp, const char *final,
		       const char *text, size_t len, const char **ret_step)
{
	int r = 0;

	*ret_step = "chmod";
	if (fchmod(fd, 0644) < 0)
		r = -errno;
	if (!r) {
		*ret_step = "write";
		r = write_all(fd, text, len);
	}
	if (!r && metrics_sys.fsync(fd) < 0) {
		*ret_step = "fsync";
		r = -errno;
	}
	if (close(fd) < 0 && !r) {
		*ret_step = "close";
		r = -errno;
	}
	if (!r && metrics_sys.renameat(dfd, tmp, dfd, final) < 0) {
		*ret_step = "rename";
		r = -errno;
	}
	return r;
}

int metrics_write_textfile(const char *dir, const char *name, const char *text,
			   size_t len, struct nt_err *err)
{
	char tmp[METRICS_NAME_MAX + 32], final[METRICS_NAME_MAX + 8];
	const char *step = "open";
	int dfd, fd, r;

	if (!name || !name[0] || name[0] == '.' || strchr(name, '/') || strlen(name) > METRICS_NAME_MAX)
		return err_set(err, -EINVAL, "textfile name '%.64s' must be a plain file name", name ? name : "");
	snprintf(final, sizeof(final), "%s.prom", name);
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		r = -errno;
		return err_set(err, r, "%s: %s", dir, nt_strerror(-r));
	}
	fd = temp_create(dfd, name, tmp, sizeof(tmp));
	if (fd < 0) {
		close(dfd);
		return err_set(err, fd, "%s: creating a temp file: %s", dir, nt_strerror(-fd));
	}
	r = temp_commit(dfd, fd, tmp, final, text, len, &step);
	if (r < 0) {
		unlinkat(dfd, tmp, 0);
		close(dfd);
		return err_set(err, r, "%s/%s: %s: %s (the old file is unchanged)", dir, final, step, nt_strerror(-r));
	}
	/* the new file is in place; a failed directory fsync only weakens
	 * durability across a power loss, which a metrics file can afford */
	if (metrics_sys.fsync(dfd) < 0)
		log_msg(LOG_DEBUG, "%s: fsync: %s", dir, nt_strerror(errno));
	close(dfd);
	return 0;
}

/* ==== HTTP endpoint ====================================================== */

/* PORT: decimal digits only, 0..65535. */
static int port_parse(const char *s, uint16_t *ret)
{
	unsigned long v = 0;

	if (!*s || strlen(s) > 5)
		return -EINVAL;
	for (const char *p = s; *p; p++) {
		if (*p < '0' || *p > '9')
			return -EINVAL;
		v = v * 10 + (unsigned long)(*p - '0');
	}
	if (v > 65535)
		return -EINVAL;
	*ret = (uint16_t)v;
	return 0;
}

int metrics_parse_listen(const char *addr, struct sockaddr_storage *ret_sa,
			 socklen_t *ret_len, struct nt_err *err)
{
	struct sockaddr_storage sa = { 0 };
	struct sockaddr_in *in4 = (struct sockaddr_in *)&sa;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&sa;
	char host[INET6_ADDRSTRLEN + 2];
	const char *colon = addr ? strrchr(addr, ':') : NULL;
	size_t hlen;
	uint16_t port;

	if (!colon || port_parse(colon + 1, &port) < 0)
		return err_set(err, -EINVAL, "listen address '%.64s': want ADDR:PORT with PORT 0..65535 (e.g. 127.0.0.1:9477, [::1]:9477, :9477)", addr ? addr : "");
	hlen = (size_t)(colon - addr);
	if (hlen >= sizeof(host))
		return err_set(err, -EINVAL, "listen address '%.64s': address too long", addr);
	memcpy(host, addr, hlen);
	host[hlen] = '\0';
	if (hlen == 0) {
		in6->sin6_family = AF_INET6;
		in6->sin6_addr = in6addr_any;
	} else if (host[0] == '[' && host[hlen - 1] == ']' && hlen > 2) {
		host[hlen - 1] = '\0';
		in6->sin6_family = AF_INET6;
		if (inet_pton(AF_INET6, host + 1, &in6->sin6_addr) != 1)
			return err_set(err, -EINVAL, "listen address '%.64s': '%s' is not a numeric IPv6 address", addr, host + 1);
	} else {
		in4->sin_family = AF_INET;
		if (inet_pton(AF_INET, host, &in4->sin_addr) != 1)
			return err_set(err, -EINVAL, "listen address '%.64s': '%s' is not a numeric IPv4 address (IPv6 goes in brackets; no host names)", addr, host);
	}
	if (sa.ss_family == AF_INET6)
		in6->sin6_port = htons(port);
	else
		in4->sin_port = htons(port);
	*ret_sa = sa;
	*ret_len = sa.ss_family == AF_INET6 ? sizeof(*in6) : sizeof(*in4);
	return 0;
}

struct metrics_server {
	struct MHD_Daemon *mhd;
	pthread_mutex_t lock;
	char *text; /* the last published text, NULL before the first */
	size_t len;
	unsigned short port;
};

/* A socket bound to sa and listening; for the any-address IPv6 form, dual
 * stack, falling back to IPv4 on a host without IPv6.  fd or -errno. */
static int listen_socket(struct sockaddr_storage *sa, socklen_t len)
{
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)sa;
	bool any6 = sa->ss_family == AF_INET6 && IN6_IS_ADDR_UNSPECIFIED(&in6->sin6_addr);
	int one = 1, v6only = !any6, fd, r;

	fd = socket(sa->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 && errno == EAFNOSUPPORT && any6) {
		struct sockaddr_in in4 = { .sin_family = AF_INET, .sin_port = in6->sin6_port,
					   .sin_addr.s_addr = htonl(INADDR_ANY) };

		memset(sa, 0, sizeof(*sa));
		memcpy(sa, &in4, sizeof(in4));
		return listen_socket(sa, sizeof(in4));
	}
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (sa->ss_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, sizeof(v6only));
	if (bind(fd, (struct sockaddr *)sa, len) < 0 || listen(fd, 64) < 0) {
		r = -errno;
		close(fd);
		return r;
	}
	return fd;
}

static unsigned short socket_port(int fd)
{
	struct sockaddr_storage sa;
	socklen_t len = sizeof(sa);

	if (getsockname(fd, (struct sockaddr *)&sa, &len) < 0)
		return 0;
	if (sa.ss_family == AF_INET6)
		return ntohs(((struct sockaddr_in6 *)&sa)->sin6_port);
	return ntohs(((struct sockaddr_in *)&sa)->sin_port);
}

static enum MHD_Result reply(struct MHD_Connection *conn, unsigned status,
			     const char *body, size_t len, bool copy)
{
	struct MHD_Response *resp;
	enum MHD_Result ret;

	resp = MHD_create_response_from_buffer(len, (void *)body,
					       copy ? MHD_RESPMEM_MUST_COPY : MHD_RESPMEM_PERSISTENT);
	if (!resp)
		return MHD_NO;
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
				status == MHD_HTTP_OK ? METRICS_CONTENT_TYPE : "text/plain; charset=utf-8");
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	ret = MHD_queue_response(conn, status, resp);
	MHD_destroy_response(resp);
	return ret;
}

/* The response holds its own copy of the snapshot, made under the lock;
 * sending happens after, without it. */
static enum MHD_Result serve_metrics(struct metrics_server *s, struct MHD_Connection *conn)
{
	static const char none[] = "no metrics published yet\n";
	struct MHD_Response *resp = NULL;
	enum MHD_Result ret;

	pthread_mutex_lock(&s->lock);
	if (s->text)
		resp = MHD_create_response_from_buffer(s->len, s->text, MHD_RESPMEM_MUST_COPY);
	pthread_mutex_unlock(&s->lock);
	if (!resp)
		return reply(conn, MHD_HTTP_SERVICE_UNAVAILABLE, none, sizeof(none) - 1, false);
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, METRICS_CONTENT_TYPE);
	ret = MHD_queue_response(conn, MHD_HTTP_OK, resp);
	MHD_destroy_response(resp);
	return ret;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *conn, const char *url,
			      const char *method, const char *version, const char *upload,
			      size_t *upload_size, void **con_cls)
{
	static const char not_found[] = "not found: metrics are at /metrics\n";
	static const char bad_method[] = "method not allowed: GET or HEAD\n";

	(void)version;
	(void)upload;
	(void)upload_size;
	(void)con_cls;
	if (strcmp(url, "/metrics"))
		return reply(conn, MHD_HTTP_NOT_FOUND, not_found, sizeof(not_found) - 1, false);
	if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD))
		return reply(conn, MHD_HTTP_METHOD_NOT_ALLOWED, bad_method, sizeof(bad_method) - 1, false);
	return serve_metrics(cls, conn);
}

__attribute__((format(printf, 2, 0)))
static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	char msg[512];

	(void)cls;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	msg[strcspn(msg, "\n")] = '\0';
	log_msg(LOG_DEBUG, "metrics server: %s", msg);
}

/* Start libmicrohttpd on the listening fd, its thread with every signal
 * blocked (a thread inherits its creator's mask). */
static struct MHD_Daemon *mhd_start(struct metrics_server *s, int fd)
{
	sigset_t all, old;
	struct MHD_Daemon *d;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | MHD_USE_ERROR_LOG,
			     0, NULL, NULL, handle, s,
			     MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
			     MHD_OPTION_LISTEN_SOCKET, fd,
			     MHD_OPTION_CONNECTION_LIMIT, (unsigned)METRICS_CONNECTIONS_MAX,
			     MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)METRICS_PER_IP_MAX,
			     MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)METRICS_TIMEOUT_S,
			     MHD_OPTION_END);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return d;
}

struct metrics_server *metrics_server_start(const char *addr, struct nt_err *err)
{
	struct sockaddr_storage sa;
	struct metrics_server *s;
	socklen_t len;
	int fd, mhd_fd;

	if (metrics_parse_listen(addr, &sa, &len, err) < 0)
		return NULL;
	s = calloc(1, sizeof(*s));
	if (!s) {
		err_set(err, -ENOMEM, "metrics server: out of memory");
		return NULL;
	}
	pthread_mutex_init(&s->lock, NULL);
	fd = listen_socket(&sa, len);
	if (fd < 0) {
		err_set(err, fd, "metrics server: cannot listen on %s: %s", addr, nt_strerror(-fd));
		goto out_free;
	}
	s->port = socket_port(fd);
	/* libmicrohttpd gets a duplicate: it closes the socket it is given
	 * at stop, and whether it does so on a failed start is not
	 * documented, so ours is closed here either way and never twice */
	mhd_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	s->mhd = mhd_fd >= 0 ? mhd_start(s, mhd_fd) : NULL;
	close(fd);
	if (!s->mhd) {
		err_set(err, -EIO, "metrics server: libmicrohttpd failed to start on %s", addr);
		goto out_free;
	}
	log_msg(LOG_DEBUG, "metrics server: listening on %s (port %u)", addr, s->port);
	return s;

out_free:
	pthread_mutex_destroy(&s->lock);
	free(s);
	return NULL;
}

unsigned short metrics_server_port(const struct metrics_server *s)
{
	return s->port;
}

int metrics_server_publish(struct metrics_server *s, const char *text, size_t len)
{
	char *copy = malloc(len + 1), *old;

	if (!copy)
		return -ENOMEM;
	memcpy(copy, text, len);
	copy[len] = '\0';
	pthread_mutex_lock(&s->lock);
	old = s->text;
	s->text = copy;
	s->len = len;
	pthread_mutex_unlock(&s->lock);
	free(old);
	return 0;
}

void metrics_server_stop(struct metrics_server *s)
{
	if (!s)
		return;
	if (s->mhd)
		MHD_stop_daemon(s->mhd); /* joins its thread, closes the listen fd */
	pthread_mutex_destroy(&s->lock);
	free(s->text);
	free(s);
}
