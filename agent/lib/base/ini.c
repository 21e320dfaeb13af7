/* SPDX-License-Identifier: MIT */
/* ini.c — see ini.h. */
#include "base/ini.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

char *ini_trim(char *s)
{
	char *e;

	while (*s == ' ' || *s == '\t')
		s++;
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
		*--e = '\0';
	return s;
}

static bool name_chars(const char *s)
{
	size_t n = strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-");

	return n > 0 && !s[n];
}

/* One line (NUL-terminated, checked for bytes) into section or fn. */
static int one_line(const char *name, int line, char *s, char section[INI_MAX_LINE + 1], ini_fn *fn,
		    void *arg, struct nt_err *err)
{
	char *eq, *close;

	s = ini_trim(s);
	if (!*s || *s == '#' || *s == ';')
		return 0;
	if (*s == '[') {
		close = strchr(s, ']');
		if (!close || ini_trim(close + 1)[0])
			return err_set(err, -EINVAL, "%s:%d: malformed section header '%.64s' (expected [name])",
				       name, line, s);
		*close = '\0';
		s = ini_trim(s + 1);
		if (!name_chars(s))
			return err_set(err, -EINVAL, "%s:%d: malformed section name '%.64s'", name, line, s);
		memcpy(section, s, strlen(s) + 1);
		return 0;
	}
	eq = strchr(s, '=');
	if (!eq)
		return err_set(err, -EINVAL, "%s:%d: expected 'key = value', '[section]' or a comment, got '%.64s'",
			       name, line, s);
	*eq = '\0';
	if (!name_chars(ini_trim(s)))
		return err_set(err, -EINVAL, "%s:%d: malformed key '%.64s'", name, line, ini_trim(s));
	return fn(section, ini_trim(s), ini_trim(eq + 1), line, arg, err);
}

int ini_parse(const char *name, const char *buf, size_t len, ini_fn *fn, void *arg, struct nt_err *err)
{
	char section[INI_MAX_LINE + 1] = "", text[INI_MAX_LINE + 1];
	const char *p = buf, *end = buf + len, *nl;
	int line = 0, r = 0;

	if (len >= 3 && !memcmp(buf, "\xef\xbb\xbf", 3))
		p += 3;
	for (; p < end && r == 0; p = nl + 1) {
		size_t n;

		line++;
		nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl)
			nl = end;
		n = (size_t)(nl - p);
		if (n > INI_MAX_LINE)
			return err_set(err, -EINVAL, "%s:%d: line longer than %d bytes", name, line, INI_MAX_LINE);
		/* a CR only ends a line (CRLF); within one it would rewrite what a terminal shows */
		for (size_t i = 0; i < n; i++)
			if (((unsigned char)p[i] < 0x20 && p[i] != '\t' && !(p[i] == '\r' && i == n - 1)) || p[i] == 0x7f)
				return err_set(err, -EINVAL, "%s:%d: control character 0x%02x: not a text file",
					       name, line, (unsigned char)p[i]);
		memcpy(text, p, n);
		text[n] = '\0';
		r = one_line(name, line, text, section, fn, arg, err);
	}
	return r;
}
