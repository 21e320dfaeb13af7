/* SPDX-License-Identifier: MIT */
/* ctlsock_test.h — what ctlsock.c exports for its tests only
 * (tests/unit/daemon/test_ctlsock.c, tests/fuzz/fuzz_ctlsock.c).  Nothing
 * outside ctlsock.c and those files includes this. */
#ifndef NODETUNE_CTLSOCK_TEST_H
#define NODETUNE_CTLSOCK_TEST_H

#include "daemon/ctlsock.h"

/* Parse one request line line[0..len) (no '\n'; one trailing '\r' is
 * allowed).  Returns 0 and fills *ret_req, or -EINVAL (empty, a byte that
 * is not printable ASCII, too long, a bad argument, too many words),
 * -EOPNOTSUPP (an unknown verb), with err's message one printable line fit
 * to send back.  *ret_req is untouched on failure. */
int ctlsock_parse_request(const char *line, size_t len, struct ctlsock_request *ret_req,
			  struct nt_err *err);

#endif
