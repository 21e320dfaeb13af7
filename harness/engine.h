/* SPDX-License-Identifier: MIT */
/* engine.h — the harness engine (engine.c): nodetune-harness's whole
 * program behind a one-line main().  Options, set-up, the step loop over a
 * trainer row (trainer.h), the summary.  Returns the exit status: 0 done,
 * 2 bad flags or bad input data, 3 a runtime failure. */
#ifndef NODETUNE_HARNESS_ENGINE_H
#define NODETUNE_HARNESS_ENGINE_H

int engine_main(int argc, char **argv);

#endif
