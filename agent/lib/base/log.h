/* SPDX-License-Identifier: MIT */
/* log.h — one logging entry point and a small error carrier.
 *
 * Library code logs at LOG_DEBUG only; main() decides what the user sees.
 * Errors travel up as 0 / -errno plus a one-line message in struct nt_err
 * (common/nt_err.h), which main() prints as "nodetune: <verb>: <message>".
 */
#ifndef NODETUNE_LOG_H
#define NODETUNE_LOG_H

#include <stdbool.h>
#include <syslog.h>

#include "nt_err.h"   /* struct nt_err, err_set: the error convention */

/* Threshold: messages above it (less severe) are dropped. Default LOG_NOTICE. */
void log_set_level(int level);
int log_get_level(void);
/* Prefix printed before every message, e.g. "nodetune: discover". Not copied. */
void log_set_prefix(const char *prefix);
/* Start every line with its syslog priority, "<3>" (sd-daemon(3)'s
 * SD_ERR...), which journald reads and strips. */
void log_set_syslog(bool on);

/* Is stderr connected to journald: JOURNAL_STREAM ("DEV:INODE", set by
 * systemd for a service's output) names the file stderr is?  False when
 * unset, malformed, or another file (a terminal, a pipe the variable was
 * inherited across), as systemd.exec(5) advises. */
bool log_stderr_is_journal(void);

/* One line on stderr: prefix, message, '\n'; a control character in the
 * message (from a path, a store value, a process's name) is shown as '?'. */
void log_msg_impl(int level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* The level is checked before the arguments are evaluated. */
#define log_msg(level, ...)                                   \
	do {                                                  \
		if ((level) <= log_get_level())               \
			log_msg_impl((level), __VA_ARGS__);   \
	} while (0)

/* A message for the user at a syslog level (LOG_ERR, LOG_WARNING, ...),
 * handed to whoever decides what the user sees: the library's long-running
 * parts (the launcher, watch, the daemon, the fleet's controller and host)
 * take one of these instead of logging above LOG_DEBUG themselves.  msg is
 * valid during the call only.  May be called in a forked child. */
typedef void (*note_fn)(int level, const char *msg, void *arg);

/* Format a message (at most 2047 bytes, as long as a log line) and pass it
 * to note; note NULL: nothing. */
void notef(note_fn note, void *arg, int level, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Append a formatted note to notes[0..max) (*n counts them); notes past
 * max, or on out of memory, are dropped.  The caller frees each note. */
void log_note_add(char **notes, unsigned *n, unsigned max, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

#endif
