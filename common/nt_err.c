/* SPDX-License-Identifier: MIT */
/* nt_err.c — see nt_err.h. */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "nt_err.h"

int err_set(struct nt_err *err, int code, const char *fmt, ...)
{
	va_list ap;

	if (!err)
		return code;
	err->code = code;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	/* one line, whatever the arguments held: a path, a key or a parser's
	 * quote of its input may carry a newline or an escape sequence */
	nt_unctrl(err->msg);
	return code;
}

const char *nt_strerror(int errnum)
{
	static _Thread_local char bufs[4][128];
	static _Thread_local unsigned next;
	char *b = bufs[next++ % 4];

	snprintf(b, sizeof(bufs[0]), "%s", strerror(errnum));
	if (isupper((unsigned char)b[0]) && !isupper((unsigned char)b[1]))
		b[0] = (char)tolower((unsigned char)b[0]);
	return b;
}

/* The length of the well-formed UTF-8 sequence at s (RFC 3629: no
 * overlong form, no surrogate, nothing above U+10FFFF), or 0. */
static int utf8_len(const unsigned char *s)
{
	int n = s[0] >= 0xf0 && s[0] <= 0xf4 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc2 && s[0] <= 0xdf ? 2 : 0;

	for (int i = 1; i < n; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	if ((n == 3 && s[0] == 0xe0 && s[1] < 0xa0) || (n == 3 && s[0] == 0xed && s[1] >= 0xa0) ||
	    (n == 4 && s[0] == 0xf0 && s[1] < 0x90) || (n == 4 && s[0] == 0xf4 && s[1] >= 0x90) || s[0] > 0xf4)
		return 0;
	return n;
}

char *nt_unctrl(char *s)
{
	unsigned char *c = (unsigned char *)s;

	while (*c) {
		int n = *c < 0x80 ? 1 : utf8_len(c);

		if (n == 0 || *c < 0x20 || *c == 0x7f || (n == 2 && c[0] == 0xc2 && c[1] <= 0x9f)) {
			/* a C1 control is both its bytes */
			for (int i = 0; i < (n ? n : 1); i++)
				c[i] = '?';
		}
		c += n ? n : 1;
	}
	return s;
}
