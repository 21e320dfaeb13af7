/* SPDX-License-Identifier: MIT */
/* fuzz_ctlsock.c — libFuzzer target: the status socket's request-line
 * parser over arbitrary bytes, as the server thread runs it on what a
 * client sent.  A refusal is one printable line (it is sent back inside
 * {"error": ...}); an accepted request names a verb of the table. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "daemon/ctlsock.h"
#include "daemon/ctlsock_test.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct nt_err err = { 0 };
	struct ctlsock_request req = { 0 };
	const char *nl = memchr(data, '\n', size);
	size_t len = nl ? (size_t)(nl - (const char *)data) : size;

	if (ctlsock_parse_request((const char *)data, len, &req, &err) < 0) {
		if (err.code >= 0 || !err.msg[0] || !memchr(err.msg, '\0', sizeof(err.msg)))
			__builtin_trap();
		for (const char *p = err.msg; *p; p++)
			if (*p < 0x20 || *p > 0x7e)
				__builtin_trap();
		return 0;
	}
	if (req.verb != CTLSOCK_STATUS || req.format != CTLSOCK_FORMAT_JSON)
		__builtin_trap();
	return 0;
}
