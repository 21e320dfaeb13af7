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
	return code;
}
