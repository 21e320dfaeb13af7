/* SPDX-License-Identifier: MIT */
/* nt_clock.h — the one clock, shared by the agent and the harness: the
 * monotonic clock for intervals and timeouts, the wall clock for what is
 * written down (documents, journal lines, sequence numbers), the boot clock
 * for a task's start time (proc/PID/stat field 22), and the absolute
 * deadline a timed wait takes.  Each reads clock_gettime(2) once; none can
 * fail on Linux, so none returns an error.
 */
#ifndef NODETUNE_NT_CLOCK_H
#define NODETUNE_NT_CLOCK_H

#include <stdint.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The clock id in nanoseconds. */
static inline int64_t nt_clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* The clock id in seconds, to the nanosecond. */
static inline double nt_clock_s(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* CLOCK_MONOTONIC in nanoseconds. */
static inline int64_t nt_mono_ns(void)
{
	return nt_clock_ns(CLOCK_MONOTONIC);
}

/* CLOCK_MONOTONIC in seconds. */
static inline double nt_mono_s(void)
{
	return nt_clock_s(CLOCK_MONOTONIC);
}

/* CLOCK_MONOTONIC in milliseconds, with the fraction. */
static inline double nt_mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* CLOCK_REALTIME in seconds since the epoch. */
static inline double nt_wall_s(void)
{
	return nt_clock_s(CLOCK_REALTIME);
}

/* The absolute time s seconds (>= 0) from now on clock id, for
 * pthread_cond_timedwait (whose condition variable waits on that clock)
 * or clock_nanosleep(TIMER_ABSTIME). */
static inline struct timespec nt_deadline(clockid_t id, double s)
{
	struct timespec ts;
	time_t whole = (time_t)s;

	clock_gettime(id, &ts);
	ts.tv_sec += whole;
	ts.tv_nsec += (long)((s - (double)whole) * 1e9);
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	return ts;
}

#ifdef __cplusplus
}
#endif

#endif /* NODETUNE_NT_CLOCK_H */
