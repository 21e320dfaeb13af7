/* SPDX-License-Identifier: MIT */
/* etcd_test.h — what etcd.c exports for its unit test only
 * (tests/unit/fleet/test_etcd.c, whose live tests clean up with it): the
 * fleet never deletes a key (leases and overwrites do).  Nothing outside
 * etcd.c and its test includes this. */
#ifndef NODETUNE_ETCD_TEST_H
#define NODETUNE_ETCD_TEST_H

#include "fleet/etcd.h"

/* Delete key (with prefix: every key that starts with key) through POST
 * /v3/kv/deleterange.  Returns 0 and sets *ret_deleted (may be NULL) to
 * how many keys went, or a negative errno. */
int etcd_delete(struct etcd *e, const char *key, bool prefix, int64_t *ret_deleted, struct nt_err *err);

#endif
