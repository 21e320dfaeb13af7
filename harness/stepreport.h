/* SPDX-License-Identifier: MIT */
/* stepreport.h — the harness's side of the step-report protocol
 * (agent/lib/base/steps.h): when nodetune gives the job NODETUNE_STEP_FD or
 * NODETUNE_STEP_FILE, every rank writes one JSON line per measured step,
 * in one write(), as any job may.  Not given: nothing is written. */
#ifndef NODETUNE_STEPREPORT_H
#define NODETUNE_STEPREPORT_H

#include "trainer.h"

/* The descriptor to write step reports to: NODETUNE_STEP_FD when it names
 * an open descriptor, else NODETUNE_STEP_FILE opened for appending; -1
 * when neither is given (or usable: said once on stderr). */
int stepreport_open(void);

/* One line for step (seconds from rec's ms), rank and samples.  A failed
 * write is said once, and reporting stops (the training does not). */
void stepreport_write(int *fd, long step, int rank, double samples, const struct step_rec *rec);

void stepreport_close(int fd);

#endif
