/* SPDX-License-Identifier: MIT */
/* nap.h — a thread's timed sleep that another thread can cut short: a
 * condition variable timed on CLOCK_MONOTONIC (a wall-clock step neither
 * ends a nap early nor stretches it), waited on until a stop flag is set
 * or the time is up.  The fleet's threads use it (fleet_host's watch and
 * lease threads, fleet_ctl's lease keeper).
 */
#ifndef NODETUNE_NAP_H
#define NODETUNE_NAP_H

#include <pthread.h>
#include <stdbool.h>

/* Initialise c for nap(): its timed waits run on CLOCK_MONOTONIC.  0, or
 * the error pthread_cond_init(3) returned. */
int nap_cond_init(pthread_cond_t *c);

/* Sleep s seconds (>= 0) on c, or until *stop is true; m guards *stop and
 * is not held by the caller.  A broadcast on c that does not set *stop
 * does not end the nap.  Returns *stop, read under m at the end. */
bool nap(pthread_mutex_t *m, pthread_cond_t *c, const bool *stop, double s);

#endif
