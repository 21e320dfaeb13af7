/* SPDX-License-Identifier: MIT */
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
 *   cgroup NAME ID            a job cgroup this apply created, and the identity
 *                             of its directories (jobcg.h: the device, inode
 *                             and birth time of each), without which a group
 *                             of that name is not ours
 *   cgroup NAME               the same, written before identities: still read
 *                             (b NULL); revert leaves such a group in place
 *   commit                    the apply completed
 *
 * Trust (DESIGN.md "Trust"): the journal steers writes made as root, so it
 * is read only from a state dir owned by the effective uid and writable by
 * no one else (not a symlink), and only when the journal itself is a
 * regular file of that uid with no group or other permission bits.  Each
 * entry must be one apply can write: a file path below sys/, proc/sys/ or
 * proc/irq/ (the knob table's and the IRQ planner's paths, agent/knob.c and
 * agent/plan.c; the cgroup roots are below sys/fs/cgroup), relative, with no
 * "." or ".." component; a cgroup name as the [cgroup] name knob accepts.
 * One bad line refuses the whole journal.
 */
#ifndef NODETUNE_JOURNAL_H
#define NODETUNE_JOURNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "base/log.h"

#define JOURNAL_DEFAULT_DIR "/run/nodetune"

/* Bounds of what a journal may hold (the reader refuses more, the writer
 * never writes more). */
#define JOURNAL_LINE_MAX 32768      /* bytes of one line, newline excluded */
#define JOURNAL_MAX_ENTRIES 65536   /* file and cgroup entries */
#define JOURNAL_PATH_MAX 256        /* a file entry's path, NUL included (plan_host.path) */
#define JOURNAL_VALUE_MAX 256       /* its effective value, NUL included (PLAN_VALUE_MAX) */
#define JOURNAL_RAW_MAX 1024        /* its exact bytes, NUL included (apply.c's RAW_MAX) */
#define JOURNAL_NAME_MAX 65         /* a cgroup name, NUL included (knob.c's KT_NAME) */

enum journal_kind { JE_FILE, JE_CGROUP };

struct journal_entry {
	enum journal_kind kind;
	char *a;       /* path, or cgroup name */
	char *b;       /* original effective value (JE_FILE); identity (JE_CGROUP,
		        * jobcg.h; NULL in a journal written before identities) */
	char *raw;     /* original bytes (JE_FILE) */
	unsigned line; /* its line in the journal, for messages */
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
 * An existing state_dir must be a directory (not a symlink) owned by the
 * effective uid and not writable by group or others, and a journal in it a
 * regular file of that uid with mode 0600 or stricter: otherwise NULL with
 * err -EPERM (-ENOTDIR: not a directory), and nothing is created in it.
 * Other errors: -EBUSY when another nodetune holds the lock, -EACCES, ... */
struct journal *journal_open(const char *state_dir, struct nt_err *err);
/* Release the lock and free; NULL is a no-op. */
void journal_close(struct journal *j);

/* Path of the journal file, for messages. */
const char *journal_path(const struct journal *j);

/* Start a new journal (fails with -EEXIST when one exists). */
int journal_begin(struct journal *j, const char *root, const char *policy, struct nt_err *err);
/* Append one entry and make it durable before returning.  b and raw are
 * for JE_FILE; b is a JE_CGROUP's identity (NULL: none), raw NULL.  -E2BIG when the line or the entry count
 * would pass the bounds above (nothing written). */
int journal_record(struct journal *j, enum journal_kind kind, const char *a, const char *b,
		   const char *raw, struct nt_err *err);
/* Replace the journal with one holding st (its root, policy, entries and
 * committed mark; the header names this process), atomically: the whole
 * text goes to journal.new, 0600, is fsync'd and renamed over the journal,
 * and the directory fsync'd, so a crash leaves either the old journal or
 * the new one, never a mix.  Entries are checked as journal_record checks
 * them (-EINVAL, -E2BIG: nothing replaced).  For the daemon, which keeps
 * one journal of the originals of every knob its policy governs while the
 * policy changes under it. */
int journal_rewrite(struct journal *j, const struct journal_state *st, struct nt_err *err);
/* Mark the apply complete. */
int journal_commit(struct journal *j, struct nt_err *err);
/* Read the journal.  -ENOENT when there is none; -EPERM when the file is
 * not to be trusted (owner, mode, type: see journal_open); -EINVAL (with
 * file:line) when any line is corrupt or not one apply writes: then
 * nothing is returned.  Memory stays bounded (JOURNAL_LINE_MAX) whatever
 * the file holds.  Free with journal_state_release(); *ret is untouched on
 * error. */
int journal_read(struct journal *j, struct journal_state *ret, struct nt_err *err);
/* Parse a journal's text: buf[0..len) (NUL bytes allowed, refused as
 * corrupt), name for "name:line: ..." messages.  A torn last line (no
 * newline: the process died appending it) is dropped, unless it is the
 * header.  Returns 0 with *ret (free with journal_state_release()), or
 * -EINVAL (corrupt; every check journal_read makes on a line), -ENOMEM,
 * with err; *ret is untouched on error.  Pure: no I/O. */
int journal_parse(const char *buf, size_t len, const char *name, struct journal_state *ret,
		  struct nt_err *err);
void journal_state_release(struct journal_state *st);
/* Delete the journal (after a complete revert). */
int journal_remove(struct journal *j, struct nt_err *err);

#endif
