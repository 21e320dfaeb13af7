/* SPDX-License-Identifier: MIT */
/* textbuf.h — lines appended to a caller's fixed buffer, whole or not at
 * all; text from outside made fit for one line of a terminal or a JSON
 * string. */
#ifndef NODETUNE_TEXTBUF_H
#define NODETUNE_TEXTBUF_H

#include <stdbool.h>
#include <stddef.h>

/* Append fmt's text to buf (size bytes, *len used) and advance *len.
 * Returns false when it did not fit: buf then ends, NUL-terminated, with
 * what was there before. */
__attribute__((format(printf, 4, 5)))
bool textbuf_appendf(char *buf, size_t size, size_t *len, const char *fmt, ...);

/* Replace in s every byte that is not printable ASCII (control characters,
 * DEL, bytes >= 0x80) by '?': text someone else wrote (a process's name, a
 * cgroup, the input quoted by a JSON parser's error) that goes into one
 * line of a message, a JSON string or a page.  Returns s. */
char *textbuf_printable(char *s);

/* Replace in s every control character (C0, DEL, C1 in UTF-8) and every
 * byte outside well-formed UTF-8 by '?', leaving other UTF-8 as it is:
 * text that must stay one line, a log line or a store value shown in a
 * table (nt_unctrl, which err_set applies to messages).  Returns s. */
char *textbuf_unctrl(char *s);

#endif
