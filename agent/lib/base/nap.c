/* SPDX-License-Identifier: MIT */
/* nap.c — see nap.h. */
#include "base/nap.h"

#include <time.h>

#include "nt_clock.h"

int nap_cond_init(pthread_cond_t *c)
{
	pthread_condattr_t a;
	int r;

	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	r = pthread_cond_init(c, &a);
	pthread_condattr_destroy(&a);
	return r;
}

bool nap(pthread_mutex_t *m, pthread_cond_t *c, const bool *stop, double s)
{
	struct timespec ts = nt_deadline(CLOCK_MONOTONIC, s);
	bool ret;

	pthread_mutex_lock(m);
	while (!*stop && pthread_cond_timedwait(c, m, &ts) == 0)
		;
	ret = *stop;
	pthread_mutex_unlock(m);
	return ret;
}
