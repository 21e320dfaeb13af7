/* SPDX-License-Identifier: MIT */
/* fuzz_procirq.c — libFuzzer target: the per-CPU table parser of
 * proc/interrupts and proc/softirqs (procfs_irqtab_parse, observe/procfs.h: the one parser of both files) over arbitrary
 * bytes.  A table that parses is consistent: every column a CPU below
 * PROCFS_MAX_CPUS, every label a short non-empty string, every count
 * readable; a refusal is one line naming the line. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "observe/procfs.h"
#include "observe/procfs_test.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct procfs_irqtab t;
	struct nt_err err = { 0 };
	uint64_t sum = 0;

	if (procfs_irqtab_parse((const char *)data, size, &t, &err) < 0) {
		if (err.code >= 0 || !memchr(err.msg, '\0', sizeof(err.msg)) || strchr(err.msg, '\n'))
			__builtin_trap();
		return 0;
	}
	if (t.n_cols < 1 || t.n_rows < 0)
		__builtin_trap();
	for (int k = 0; k < t.n_cols; k++)
		if (t.col_cpu[k] < 0 || t.col_cpu[k] >= PROCFS_MAX_CPUS)
			__builtin_trap();
	for (int i = 0; i < t.n_rows; i++) {
		if (!t.rows[i].label[0] || !memchr(t.rows[i].label, '\0', sizeof(t.rows[i].label)) ||
		    !memchr(t.rows[i].name, '\0', sizeof(t.rows[i].name)))
			__builtin_trap();
		for (int k = 0; k < t.n_cols; k++)
			sum += t.counts[(size_t)i * (size_t)t.n_cols + (size_t)k];
	}
	procfs_irqtab_free(&t);
	return (int)(sum & 0);
}
