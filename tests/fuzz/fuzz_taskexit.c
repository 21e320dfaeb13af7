/* SPDX-License-Identifier: MIT */
/* fuzz_taskexit.c — libFuzzer target: the taskstats netlink message parser
 * (taskexit_parse, observe/taskexit.h) over arbitrary bytes.  The kernel
 * writes these, but the parser walks lengths it is given: it must never
 * read past the datagram.  A record given is consistent (a positive pid, a
 * NUL-terminated comm, the CPU the caller named); a refusal is one line
 * with a negative code, and the count of records given before it is what
 * fn saw. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "observe/taskexit.h"
#include "observe/taskexit_test.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int check(const struct taskexit_rec *r, void *arg)
{
	int *n = arg;

	if (r->pid <= 0 || r->tgid < 0 || r->ppid < 0 || r->cpu != 7 || !memchr(r->comm, '\0', sizeof(r->comm)))
		__builtin_trap();
	(*n)++;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct nt_err err = { 0 };
	int n = 0, r = taskexit_parse(data, size, 7, check, &n, &err);

	if (r < 0) {
		if (err.code >= 0 || err.code != r || !memchr(err.msg, '\0', sizeof(err.msg)) || strchr(err.msg, '\n'))
			__builtin_trap();
	} else if (r != n || err.code) {
		__builtin_trap();
	}
	return 0;
}
