/* textbuf.h — lines appended to a caller's fixed buffer, whole or not at all. */
#ifndef NODETUNE_TEXTBUF_H
#define NODETUNE_TEXTBUF_H

#include <stdbool.h>
#include <stddef.h>

/* Append fmt's text to buf (size bytes, *len used) and advance *len.
 * Returns false when it did not fit: buf then ends, NUL-terminated, with
 * what was there before. */
__attribute__((format(printf, 4, 5)))
bool textbuf_appendf(char *buf, size_t size, size_t *len, const char *fmt, ...);

#endif
