/* nt_err.c — see nt_err.h. */
#include <stdarg.h>
#include <stdio.h>

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
	for (char *c = err->msg; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			*c = '?';
	return code;
}
