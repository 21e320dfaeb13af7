/* SPDX-License-Identifier: MIT */
/* fleet_gate_test.h — what fleet_gate.c exports for its tests only
 * (tests/unit/fleet/test_fleet_gate.c, tests/fuzz/fuzz_fleet.c).  Nothing
 * outside fleet_gate.c and those files includes this. */
#ifndef NODETUNE_FLEET_GATE_TEST_H
#define NODETUNE_FLEET_GATE_TEST_H

#include "fleet/fleet_gate.h"

/* ab's JSON report (untrusted text) into *ret: an object of schema
 * FLEET_GATE_AB_SCHEMA.  0; -EINVAL with err (not such a report, another
 * version); -EIO with err (ab's verdict "error"). */
int fleet_gate_parse(const char *buf, size_t len, struct fleet_gate_result *ret, struct nt_err *err);

#endif
