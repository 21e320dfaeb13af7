/* SPDX-License-Identifier: MIT */
/* fuzz_pidstat.c — libFuzzer target: the /proc/PID/stat line parser
 * (procfs_pid_stat_parse, observe/procfs.h) over arbitrary bytes.  A
 * process names itself, so the comm between '(' and the last ')' is
 * anything a task chose.  A line that parses is consistent: a positive pid,
 * a NUL-terminated comm, a CPU below PROCFS_MAX_CPUS, ticks = utime +
 * stime, the priority the policy says; a refusal is one line with a
 * negative code and leaves the output untouched. */
#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "observe/procfs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct procfs_pid_stat st, before;
	struct nt_err err = { 0 };

	memset(&st, 0x5a, sizeof(st));
	memset(&before, 0x5a, sizeof(before));
	if (procfs_pid_stat_parse((const char *)data, size, &st, &err) < 0) {
		if (err.code >= 0 || !memchr(err.msg, '\0', sizeof(err.msg)) || strchr(err.msg, '\n') ||
		    memcmp(&st, &before, sizeof(st)))
			__builtin_trap();
		return 0;
	}
	if (st.pid <= 0 || !memchr(st.comm, '\0', sizeof(st.comm)) || st.cpu < 0 || st.cpu >= PROCFS_MAX_CPUS ||
	    st.ticks != st.utime + st.stime || st.zombie != (st.state == 'Z' || st.state == 'X') ||
	    st.priority != ((st.policy == SCHED_FIFO || st.policy == SCHED_RR) ? st.rt_priority : st.nice))
		__builtin_trap();
	return 0;
}
