/* policy.h — policy files: INI in the spirit of tuned profiles.
 *
 *   [main]
 *   summary = GPU training: ranks next to their GPU
 *   include = baseline.conf
 *   [thp]
 *   enabled = madvise
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
	char *path;                 /* as given */
	struct policy_value *v;     /* KNOB_COUNT entries, by enum knob_id */
};

/* Load path and its includes.  Returns the policy, or NULL with err->code
 * -EINVAL (bad content), -ENOENT/-EACCES/-EISDIR (file), -EPERM (untrusted
 * file), -ENOMEM, and err->msg one line "file:line: what". */
struct policy *policy_load(const char *path, unsigned flags, struct nt_err *err);

/* Parse a policy from memory: buf[0..len) (untrusted; need not be
 * NUL-terminated, is not modified), named name in messages ("name:line:
 * what") and in p->path.  The same parser and rules as policy_load, except
 * that include= is refused (-EINVAL): a buffer has no directory to resolve
 * a relative include against and no file whose owner could be checked.
 * Returns the policy, or NULL with err->code -EINVAL (bad content), -EFBIG
 * (len > POLICY_MAX_SIZE) or -ENOMEM. */
struct policy *policy_parse_buffer(const char *buf, size_t len, const char *name, struct nt_err *err);

/* The policy p as one self-contained policy text: every key the chain of
 * files set, with its value, under its [section], in knob-table order, each
 * after a comment "# from FILE:LINE" (control characters in FILE shown as
 * '?'), and no include= line.  policy_parse_buffer of the text gives the
 * same value for every key as p.  Returns the text (malloc'd,
 * NUL-terminated; its length in *ret_len when ret_len is not NULL), or NULL
 * (out of memory). */
char *policy_to_text(const struct policy *p, size_t *ret_len);

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

/* policy_value and policy_int for a key by name, for callers that hold a
 * name from outside the code (tests, fuzz targets, a user's input); the key
 * must be a row of knob_table (asserted).  Code that knows its knob uses the
 * enum. */
const char *policy_get(const struct policy *p, const char *section, const char *key);
long long policy_get_int(const struct policy *p, const char *section, const char *key,
			 long long def);

/* Does the policy equal "changes nothing and binds nothing"? */
bool policy_is_empty(const struct policy *p);

#endif
