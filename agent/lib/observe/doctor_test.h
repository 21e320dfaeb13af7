/* SPDX-License-Identifier: MIT */
/* doctor_test.h — what doctor.c exports for its unit test only
 * (tests/unit/observe/test_doctor.c): steps of the module that the test checks one
 * by one.  Nothing outside doctor.c and its test includes this. */
#ifndef NODETUNE_DOCTOR_TEST_H
#define NODETUNE_DOCTOR_TEST_H

#include "observe/doctor.h"

/* "TLB shootdowns", "PSI", "perf events" */
const char *doctor_counter_name(enum doctor_counter c);

#endif
