/* SPDX-License-Identifier: MIT */
/* fuzz_journal.c — libFuzzer target: the journal parser (header, entries,
 * %XX escapes, the path and cgroup-name checks, the line and entry bounds)
 * over arbitrary bytes, through journal_parse, the same parser journal_read
 * streams a file through.  Pure: no file is opened or written.  A refusal
 * is one line naming "fuzz-journal:LINE:"; a journal that parses holds only
 * entries apply could have written, each with every field it needs. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "tune/journal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct nt_err err = { 0 };
	struct journal_state st = { 0 };
	int r = journal_parse((const char *)data, size, "fuzz-journal", &st, &err);

	if (r < 0) {
		if ((r != -EINVAL && r != -ENOMEM) || err.code != r || !memchr(err.msg, '\0', sizeof(err.msg)) ||
		    strchr(err.msg, '\n') || (r == -EINVAL && strncmp(err.msg, "fuzz-journal:", 13)))
			__builtin_trap();
		if (st.root || st.entries || st.n)
			__builtin_trap();     /* nothing handed over on error */
		return 0;
	}
	if (!st.root || st.root[0] != '/' || !st.policy || st.n > JOURNAL_MAX_ENTRIES)
		__builtin_trap();
	for (unsigned i = 0; i < st.n; i++) {
		const struct journal_entry *e = &st.entries[i];

		if (!e->a || !e->a[0] || e->a[0] == '/' || strstr(e->a, "..") == e->a || e->line < 2)
			__builtin_trap();
		if (e->kind == JE_FILE &&
		    (!e->b || !e->raw || strlen(e->a) >= JOURNAL_PATH_MAX || strstr(e->a, "/../") ||
		     (strncmp(e->a, "sys/", 4) && strncmp(e->a, "proc/sys/", 9) && strncmp(e->a, "proc/irq/", 9))))
			__builtin_trap();
		if (e->kind == JE_CGROUP && (strchr(e->a, '/') || strlen(e->a) >= JOURNAL_NAME_MAX))
			__builtin_trap();
	}
	journal_state_release(&st);
	return 0;
}
