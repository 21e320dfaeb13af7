/* SPDX-License-Identifier: MIT */
/* policy.h — policy files: INI in the spirit of tuned profiles.
 *
 *   [main]
 *   summary = GPU training: ranks next to their GPU
 *   include = baseline.conf
 *   [thp]
 *   enabled = madvise
 *
 * A policy is named by a file path, or by a NAME (no '/', no ".conf"): the
 * file NAME.conf in the first directory of the search path that has one
 * (policy_find).  include = takes either form too.
 *
 * Every key is a row of knob_table (knob.h).  Loading validates everything
 * (syntax, sections, keys, values, includes, cross-key rules) before anyone
 * acts on the policy; the first problem is reported as "file:line: what".
 */
#ifndef NODETUNE_POLICY_H
#define NODETUNE_POLICY_H

#include <stdbool.h>
#include <stddef.h>

#include "machine/knob.h"
#include "base/log.h"

#define POLICY_MAX_LINE 4096
#define POLICY_MAX_SIZE (1u << 20)
#define POLICY_MAX_DEPTH 8

/* Refuse files (and included files) not owned by root or writable by group
 * or others: what a root process must do (policy_trust_flags). */
#define POLICY_TRUSTED_ONLY 0x1

/* The trust rule, in one place: the flags policy_load must get in this
 * process, POLICY_TRUSTED_ONLY when it runs as root (euid 0), else 0.
 * Every caller that loads a policy a user or a file names passes this. */
unsigned policy_trust_flags(void);

struct policy_value {
	char *value;   /* NULL when no file in the chain sets the key */
	char *file;    /* where it was set */
	int line;
};

struct policy {
	char *path;                 /* as given: a file or a NAME */
	char *file;                 /* the file read (a NAME's, found on the search path) */
	struct policy_value *v;     /* KNOB_COUNT entries, by enum knob_id;
				     * v[KNOB_MAIN_INCLUDE]: the include = of
				     * file itself, as written (not its parents') */
};

/* ---- names and the search path ----------------------------------------
 *
 * The directories a NAME is looked up in, ':'-separated, the first that has
 * NAME.conf wins: NODETUNE_POLICY_PATH when set (and the process is not
 * set-uid), else policy_path_default: /etc/nodetune/policies, then
 * /usr/share/nodetune/policies, and between the two the install's
 * $(PREFIX)/share/nodetune/policies when PREFIX is not /usr (the Makefile
 * defines it), so that `make install`'s policies have names too; and last,
 * for a binary run from a source checkout's build directory, that
 * checkout's policies/ (policy_checkout_dir), so that a clone's names work
 * before `make install`. */
#define POLICY_PATH_ENV "NODETUNE_POLICY_PATH"
extern const char policy_path_default[];
#define POLICY_NAME_MAX 64          /* bytes of a NAME, NUL excluded */

/* Is s a policy NAME rather than a file: no '/', and not ending in ".conf"? */
bool policy_is_name(const char *s);

/* The search path in force: the environment's, or the default with this
 * binary's checkout policies/ appended (policy_checkout_dir of
 * /proc/self/exe, decided once); never NULL. */
const char *policy_search_path(void);

/* The rule that says a binary runs from a source checkout, in one place.
 * exe (an absolute path, symbolic links resolved, as /proc/self/exe reads)
 * is CHECKOUT/build/FILE or CHECKOUT/build/SUB/FILE (the Makefile's BUILD,
 * build/asan for SAN=1), and CHECKOUT holds the files that prove it is
 * nodetune's source: a regular Makefile, a regular agent/lib/tune/policy.h
 * and a directory policies/.  An installed binary (/usr/sbin/nodetune,
 * /usr/local/bin/nodetune) never qualifies: its directory is not named
 * build.  Only stat()s those paths; trusts nothing found: the search path
 * still checks the directory as any other (POLICY_TRUSTED_ONLY).
 * Returns true with ret (size bytes) "CHECKOUT/policies"; false when exe
 * is not in a checkout's build directory or the result does not fit (ret
 * untouched). */
bool policy_checkout_dir(const char *exe, char *ret, size_t size);

/* Find NAME on search (a ':'-separated list of absolute directories; an
 * empty item is skipped).  With POLICY_TRUSTED_ONLY, every directory of the
 * path that exists must be owned by root and not writable by group or
 * others (the file found is checked when it is read).  Returns 0 with
 * ret_path (size bytes) the file; -EINVAL (not a valid NAME: [A-Za-z0-9_]
 * then [A-Za-z0-9._-], at most POLICY_NAME_MAX; or a relative directory),
 * -ENOENT (no directory has it), -EPERM (an untrusted directory),
 * -ENAMETOOLONG, with err one line.  ret_path is untouched on error. */
int policy_find(const char *search, const char *name, unsigned flags, char *ret_path, size_t size,
		struct nt_err *err);

/* The error of a NAME that no directory of search has (name "": of a
 * search path with no policy at all), in one place: the directories it
 * looked in, and how to add one (NAME.conf in the first, or
 * NODETUNE_POLICY_PATH).  Returns -ENOENT, with err one line. */
int policy_err_not_found(const char *search, const char *name, struct nt_err *err);

/* One policy on the search path. */
struct policy_entry {
	char name[POLICY_NAME_MAX + 1];
	char path[4096];
	bool shadowed;              /* a directory before this one has the same NAME */
};

/* Every NAME.conf (a regular file with a valid NAME) in the directories of
 * search, directory by directory in path order, by name within one.  The
 * same trust rule as policy_find.  Returns the number of entries (>= 0)
 * with *ret (malloc'd, the caller frees; NULL when 0), or -EINVAL, -EPERM,
 * -ENOMEM, with err.  A directory that does not exist is skipped. */
int policy_list(const char *search, unsigned flags, struct policy_entry **ret, struct nt_err *err);

/* ---- loading ---------------------------------------------------------- */

/* Load path (a file, or a NAME found with policy_find on the search path in
 * force) and its includes.  Returns the policy, or NULL with err->code
 * -EINVAL (bad content), -ENOENT/-EACCES/-EISDIR (file or NAME not found),
 * -EPERM (untrusted file or directory), -ENOMEM, and err->msg one line
 * "file:line: what". */
struct policy *policy_load(const char *path, unsigned flags, struct nt_err *err);

/* Parse a policy from memory: buf[0..len) (untrusted; need not be
 * NUL-terminated, is not modified), named name in messages ("name:line:
 * what") and in p->path.  The same parser and rules as policy_load, except
 * that include= is refused (-EINVAL): a buffer has no directory to resolve
 * a relative include against and no file whose owner could be checked.
 * Returns the policy, or NULL with err->code -EINVAL (bad content), -EFBIG
 * (len > POLICY_MAX_SIZE) or -ENOMEM. */
struct policy *policy_parse_buffer(const char *buf, size_t len, const char *name, struct nt_err *err);

/* Flatten a policy file with its includes (item 7 of issue 24: what a
 * controller stores, signs and hosts validate as a buffer):
 * policy_load(path, flags) then policy_to_text, with a header comment
 * naming path.  Returns 0 with *ret_text (malloc'd) and *ret_len, or what
 * policy_load fails with (err as there; -ENOMEM); outputs untouched on
 * error. */
int policy_flatten(const char *path, unsigned flags, char **ret_text, size_t *ret_len, struct nt_err *err);

/* Free; NULL is a no-op. */
void policy_free(struct policy *p);

/* The value of knob k, or NULL when unset. */
const char *policy_value(const struct policy *p, enum knob_id k);

/* Same, as an integer (the row validated it); def when unset. */
long long policy_int(const struct policy *p, enum knob_id k, long long def);

#endif
