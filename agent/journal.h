/* journal.h — the crash-safe record of host changes.
 *
 * Before any host change, the original value is appended to STATE_DIR/journal
 * and fsync'd (file and directory); revert restores from it in reverse
 * order, also after the applying process died (SIGKILL, power loss: the
 * journal has every change that may have happened, and restoring one that
 * did not is a no-op).  STATE_DIR/lock is flock'ed while a process applies
 * or reverts, so two never interleave.
 *
 * Format (text, one entry a line, fields tab-separated, %XX-escaped):
 *   nodetune-journal 1  root ROOT  policy FILE  pid PID
 *   file PATH VALUE RAW       a file below ROOT: its effective value before,
 *                             and its exact bytes (restored into captured trees)
 *   cgroup NAME               a job cgroup this apply created
 *   commit                    the apply completed
 */
#ifndef NODETUNE_JOURNAL_H
#define NODETUNE_JOURNAL_H

#include <stdbool.h>

#include "log.h"

#define JOURNAL_DEFAULT_DIR "/run/nodetune"

enum journal_kind { JE_FILE, JE_CGROUP };

struct journal_entry {
	enum journal_kind kind;
	char *a;       /* path, or cgroup name */
	char *b;       /* original effective value (JE_FILE) */
	char *raw;     /* original bytes (JE_FILE) */
};

struct journal_state {
	char *root;          /* fsroot the changes were made under */
	char *policy;
	long pid;
	bool committed;
	struct journal_entry *entries;
	unsigned n;
};

struct journal; /* opaque: the open state dir, holding the lock */

/* Open (creating, mode 0700) state_dir and take its lock without waiting.
 * Returns NULL with err: -EBUSY when another nodetune holds the lock,
 * -EACCES, -ENOTDIR, ... */
struct journal *journal_open(const char *state_dir, struct nt_err *err);
/* Release the lock and free; NULL is a no-op. */
void journal_close(struct journal *j);

/* Does a journal exist (changes in effect, or an apply that died)? */
bool journal_exists(const struct journal *j);
/* Path of the journal file, for messages. */
const char *journal_path(const struct journal *j);

/* Start a new journal (fails with -EEXIST when one exists). */
int journal_begin(struct journal *j, const char *root, const char *policy, struct nt_err *err);
/* Append one entry and make it durable before returning.  b and raw are
 * for JE_FILE (NULL otherwise). */
int journal_record(struct journal *j, enum journal_kind kind, const char *a, const char *b,
		   const char *raw, struct nt_err *err);
/* Mark the apply complete. */
int journal_commit(struct journal *j, struct nt_err *err);
/* Read the journal.  -ENOENT when there is none; -EINVAL (with file:line)
 * when it is corrupt.  Free with journal_state_release(). */
int journal_read(struct journal *j, struct journal_state *ret, struct nt_err *err);
void journal_state_release(struct journal_state *st);
/* Delete the journal (after a complete revert). */
int journal_remove(struct journal *j, struct nt_err *err);

/* %XX escaping of tab, newline, '%' and control bytes; exposed for tests. */
char *journal_escape(const char *s);
char *journal_unescape(const char *s);

#endif
