/* SPDX-License-Identifier: MIT */
/* fleet_creds_test.h — what fleet_creds.c exports for its unit test only
 * (tests/unit/fleet/test_fleet_creds.c): fleet.conf's parser, which
 * fleet_creds_load applies to the checked file.  Nothing outside
 * fleet_creds.c and its test includes this. */
#ifndef NODETUNE_FLEET_CREDS_TEST_H
#define NODETUNE_FLEET_CREDS_TEST_H

#include "fleet/fleet_creds.h"

/* Parse fleet.conf's text buf[0..len) (path names it in messages) into
 * *ret.  Returns 0, or -EINVAL with err naming path:line (an unknown key,
 * a key given twice, a line without '=', an empty or relative path, a
 * user with ':'); *ret untouched on error. */
int fleet_creds_parse(const char *buf, size_t len, const char *path, struct fleet_creds *ret, struct nt_err *err);

#endif
