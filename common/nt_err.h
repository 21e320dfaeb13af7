/* SPDX-License-Identifier: MIT */
/* nt_err.h — the project's one error convention, shared by the agent
 * (libnodetune, the CLI) and the harness.
 *
 * A function named as an action returns 0 or a negative errno.  When it can
 * say more than the errno, it also fills a struct nt_err that the caller
 * passes in (NULL when the caller does not want the message): the code and a
 * message fit for one line, which the program's main() prints behind its
 * prefix ("nodetune: VERB: ..." or "nodetune-harness: ...").  Constructors
 * return NULL and fill err.  Library code never exits and never prints an
 * error itself.
 */
#ifndef NODETUNE_NT_ERR_H
#define NODETUNE_NT_ERR_H

#ifdef __cplusplus
extern "C" {
#endif

/* One error: its code (negative errno) and a message fit for one line. */
struct nt_err {
	int code;
	char msg[1024];
};

/* Record code and message in err (which may be NULL), truncated to fit,
 * made one line by nt_unctrl, so that an argument someone else wrote
 * cannot start a log line of its own.  Returns code, so callers write
 * `return err_set(err, -EINVAL, "...")`. */
int err_set(struct nt_err *err, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* strerror(errnum) with its first letter in lower case ("no such file or
 * directory"), for the middle of a message, after a colon; an initialism
 * ("RPC ...") keeps its case.  Thread-local storage: valid until the same
 * thread's fourth next call, so one message may hold up to four. */
const char *nt_strerror(int errnum);

/* Show as '?', in place, each byte of s that a terminal could take as a
 * control: C0 (newline, tab, ESC), DEL, the C1 controls (U+0080 to U+009F:
 * CSI is U+009B) written in UTF-8 (both bytes), and every byte that is not
 * part of well-formed UTF-8 (a lone 0x9B is CSI to a terminal in 8-bit
 * mode).  Other UTF-8 stays as it is; the length never changes.  Returns s. */
char *nt_unctrl(char *s);

#ifdef __cplusplus
}
#endif

#endif
