/* SPDX-License-Identifier: MIT */
/* obs_test.h — what obs.c exports for its unit test only
 * (tests/unit/observe/test_obs.c): steps of the module that the test checks one
 * by one.  Nothing outside obs.c and its test includes this. */
#ifndef NODETUNE_OBS_TEST_H
#define NODETUNE_OBS_TEST_H

#include "observe/obs.h"

/* %sys of cpu between two samples (0..100; -1 when it did not run). */
double obs_sys_percent(const struct obs_stat *a, const struct obs_stat *b, int cpu);

/* The counts so far (children folded in as they exit); 0 or -errno. */
int obs_perf_read(const struct obs_perf *p, uint64_t out[OBS_PERF_N]);

#endif
