/* SPDX-License-Identifier: MIT */
/* textbuf.c — see textbuf.h. */
#include "base/textbuf.h"

#include "nt_err.h"

#include <stdarg.h>
#include <stdio.h>

bool textbuf_appendf(char *buf, size_t size, size_t *len, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (*len >= size)
		return false;
	va_start(ap, fmt);
	n = vsnprintf(buf + *len, size - *len, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= size - *len) {
		buf[*len] = '\0';
		return false;
	}
	*len += (size_t)n;
	return true;
}

char *textbuf_printable(char *s)
{
	for (char *c = s; *c; c++)
		if ((unsigned char)*c < 0x20 || (unsigned char)*c >= 0x7f)
			*c = '?';
	return s;
}

char *textbuf_unctrl(char *s)
{
	return nt_unctrl(s);
}
