/* SPDX-License-Identifier: MIT */
/* ini.h — the strict line reader of small root-owned configuration files
 * (site limits, gates): "[section]" headers, "key = value" lines, '#' and
 * ';' comments, blank lines; nothing else.  Policies have their own reader
 * (tune/policy.c), which knows the knob table.
 *
 * Refused, as "NAME:LINE: what": a NUL byte, DEL or a control character
 * other than tab (and a CR that ends a line: CRLF is read as LF), a line longer than INI_MAX_LINE, a malformed section
 * header, a line that is neither, a key outside [A-Za-z0-9_.-].  A UTF-8
 * byte order mark at the start is skipped.  Messages quote at most 64
 * bytes of a line.
 */
#ifndef NODETUNE_INI_H
#define NODETUNE_INI_H

#include <stddef.h>

#include "base/log.h"

#define INI_MAX_LINE 4096

/* Called for each "key = value" in order: section is "" before any header;
 * key and value are trimmed of blanks (value may be ""); line counts from
 * 1.  Returns 0 to go on, or a negative errno (with err set, naming
 * NAME:LINE) to stop: ini_parse returns it. */
typedef int ini_fn(const char *section, const char *key, const char *value, int line, void *arg,
		   struct nt_err *err);

/* Strip blanks (space, tab) from both ends of s and a CR from its end, in
 * place.  Returns the first kept byte (within s).  Policies' reader uses it
 * too. */
char *ini_trim(char *s);

/* Read buf[0..len) (untrusted; need not be NUL-terminated; not modified),
 * named name in messages.  Returns 0, -EINVAL (with err "name:line: what"),
 * or what fn returned. */
int ini_parse(const char *name, const char *buf, size_t len, ini_fn *fn, void *arg, struct nt_err *err);

#endif
