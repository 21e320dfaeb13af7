/* SPDX-License-Identifier: MIT */
/* steps.c — see steps.h.  One line is one JSON object, parsed with
 * jansson (no hand-written JSON); the checks below are what the rest of
 * nodetune relies on. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "base/steps.h"
#include "base/steps_test.h"
#include "base/textbuf.h"

static int bad(struct nt_err *err, const char *what)
{
	return err_set(err, -EINVAL, "%s", what);
}

static bool name_ok(const char *s)
{
	size_t n = strlen(s);

	return n >= 1 && n < STEPS_NAME_MAX && strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789_") == n;
}

/* A number of seconds in [0, 1e6]. */
static bool seconds_ok(const json_t *v, double *ret)
{
	double d;

	if (!json_is_number(v))
		return false;
	d = json_number_value(v);
	if (!isfinite(d) || d < 0 || d > 1e6)
		return false;
	*ret = d;
	return true;
}

static int parse_phases(const json_t *ph, struct step_report *r, struct nt_err *err)
{
	const char *k;
	json_t *v;

	if (!json_is_object(ph))
		return bad(err, "'phases' must be an object of names and seconds");
	if (json_object_size(ph) > STEPS_PHASES_MAX)
		return err_set(err, -EINVAL, "'phases' has more than %d names", STEPS_PHASES_MAX);
	json_object_foreach((json_t *)ph, k, v) {
		if (!name_ok(k))
			return bad(err, "a phase name must be 1-32 of [a-z0-9_]");
		if (!seconds_ok(v, &r->phase_s[r->n_phases]))
			return err_set(err, -EINVAL, "phase '%s' must be a number of seconds >= 0", k);
		snprintf(r->phase[r->n_phases], STEPS_NAME_MAX, "%s", k);
		r->n_phases++;
	}
	return 0;
}

static int parse_object(const json_t *o, struct step_report *r, struct nt_err *err)
{
	const json_t *step = json_object_get(o, "step"), *t = json_object_get(o, "t");
	const json_t *samples = json_object_get(o, "samples"), *rank = json_object_get(o, "rank");
	const json_t *ph = json_object_get(o, "phases");

	if (!json_is_integer(step) || json_integer_value(step) < 0)
		return bad(err, "'step' must be a whole number >= 0");
	r->step = json_integer_value(step);
	if (!seconds_ok(t, &r->t))
		return bad(err, "'t' must be a number of seconds >= 0 (the step's wall time)");
	if (samples && (!json_is_number(samples) || !isfinite(json_number_value(samples)) ||
			json_number_value(samples) < 0 || json_number_value(samples) > 1e12))
		return bad(err, "'samples' must be a number >= 0");
	r->samples = samples ? json_number_value(samples) : 0;
	if (rank && (!json_is_integer(rank) || json_integer_value(rank) < 0 ||
		     json_integer_value(rank) > STEPS_RANK_MAX))
		return bad(err, "'rank' must be a whole number from 0 to 65535");
	r->rank = rank ? (int)json_integer_value(rank) : 0;
	return ph ? parse_phases(ph, r, err) : 0;
}

int steps_parse_line(const char *line, size_t len, struct step_report *ret, struct nt_err *err)
{
	struct step_report r = { 0 };
	json_error_t je;
	json_t *o;
	int rc;

	if (len > STEPS_LINE_MAX)
		return err_set(err, -EINVAL, "a line of %zu bytes (at most %d)", len, STEPS_LINE_MAX);
	if (memchr(line, '\0', len))
		return bad(err, "a NUL byte");
	o = json_loadb(line, len, JSON_REJECT_DUPLICATES, &je);
	if (!o)
		return err_set(err, -EINVAL, "not JSON: %s", textbuf_printable(je.text));
	rc = json_is_object(o) ? parse_object(o, &r, err) : bad(err, "not a JSON object");
	json_decref(o);
	if (rc == 0)
		*ret = r;
	return rc;
}

static int push(struct steps *s, size_t *cap, const struct step_report *r)
{
	if (s->n == STEPS_MAX)
		return -E2BIG;
	if (s->n == *cap) {
		size_t c = *cap ? *cap * 2 : 256;
		struct step_report *g = realloc(s->r, c * sizeof(*g));

		if (!g)
			return -ENOMEM;
		s->r = g;
		*cap = c;
	}
	s->r[s->n++] = *r;
	if (r->rank > s->max_rank)
		s->max_rank = r->rank;
	return 0;
}

int steps_parse(const char *buf, size_t len, const char *name, struct steps *ret, struct nt_err *err)
{
	struct steps s = { .max_rank = -1 };
	size_t cap = 0, off = 0;
	unsigned lineno = 0;

	while (off < len) {
		const char *nl = memchr(buf + off, '\n', len - off);
		size_t n = nl ? (size_t)(nl - (buf + off)) : len - off;
		struct step_report r;
		struct nt_err e = { 0 };
		int rc;

		lineno++;
		if (n > 0 && steps_parse_line(buf + off, n, &r, &e) < 0) {
			if (!s.bad_lines++)
				snprintf(s.first_bad, sizeof(s.first_bad), "%.64s:%u: %.160s", name, lineno, e.msg);
		} else if (n > 0 && (rc = push(&s, &cap, &r)) < 0) {
			steps_release(&s);
			return err_set(err, rc, rc == -E2BIG ? "%s: more than %d steps" : "%s: out of memory", name,
				       STEPS_MAX);
		}
		off += n + (nl != NULL);
	}
	*ret = s;
	return 0;
}

int steps_read(const char *path, size_t max_bytes, struct steps *ret, struct nt_err *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	char *buf;
	size_t len = 0;
	ssize_t n = 0;
	int r;

	if (fd < 0)
		return err_set(err, -errno, "%s: %s", path, nt_strerror(errno));
	buf = malloc(max_bytes + 1);
	if (!buf) {
		close(fd);
		return err_set(err, -ENOMEM, "out of memory");
	}
	while (len < max_bytes && ((n = read(fd, buf + len, max_bytes - len)) > 0 || (n < 0 && errno == EINTR)))
		len += n > 0 ? (size_t)n : 0;
	r = n < 0 && errno != EAGAIN ? -errno : 0;
	close(fd);
	if (r < 0)
		err_set(err, r, "%s: %s", path, nt_strerror(-r));
	else
		r = steps_parse(buf, len, path, ret, err);
	free(buf);
	return r;
}

void steps_release(struct steps *s)
{
	if (!s)
		return;
	free(s->r);
	memset(s, 0, sizeof(*s));
	s->max_rank = -1;
}
