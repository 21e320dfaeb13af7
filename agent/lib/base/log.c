/* SPDX-License-Identifier: MIT */
/* log.c — see log.h. */
#include "base/log.h"
#include "base/textbuf.h"

#include <stdarg.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include <stdio.h>
#include <string.h>

static int log_level = LOG_NOTICE;
static const char *log_prefix = "nodetune";
static bool log_syslog;

void log_set_level(int level)
{
	log_level = level;
}

int log_get_level(void)
{
	return log_level;
}

void log_set_prefix(const char *prefix)
{
	log_prefix = prefix;
}

bool log_stderr_is_journal(void)
{
	const char *env = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;
	int n = 0;

	if (!env || sscanf(env, "%llu:%llu%n", &dev, &ino, &n) != 2 || env[n] || fstat(STDERR_FILENO, &st) < 0)
		return false;
	return (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

void log_set_syslog(bool on)
{
	log_syslog = on;
}

void log_msg_impl(int level, const char *fmt, ...)
{
	char line[2048];
	const char *tag = "";
	va_list ap;

	if (level == LOG_WARNING)
		tag = "warning: ";
	else if (level == LOG_DEBUG)
		tag = "debug: ";

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	/* One line, whatever the arguments held (a path, a store value, a
	 * process's name): no one else's text starts a line of its own in the
	 * journal or moves a terminal's cursor. */
	textbuf_unctrl(line);
	/* One write per message, so lines from several ranks do not interleave. */
	if (log_syslog)
		fprintf(stderr, "<%d>%s: %s%s\n", level & LOG_PRIMASK, log_prefix, tag, line);
	else
		fprintf(stderr, "%s: %s%s\n", log_prefix, tag, line);
}

void log_note_add(char **notes, unsigned *n, unsigned max, const char *fmt, ...)
{
	va_list ap;
	char *s;

	if (*n >= max)
		return;
	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) >= 0)
		notes[(*n)++] = s;
	va_end(ap);
}

void notef(note_fn note, void *arg, int level, const char *fmt, ...)
{
	char msg[2048];   /* as long as a log line */
	va_list ap;

	if (!note)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	note(level, msg, arg);
}
