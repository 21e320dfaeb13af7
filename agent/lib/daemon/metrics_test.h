/* SPDX-License-Identifier: MIT */
/* metrics_test.h — what metrics.c exports for its unit test only
 * (tests/unit/daemon/test_metrics.c): the name checks and the value
 * formatting that metrics_declare, metrics_add and metrics_render apply.
 * Nothing outside metrics.c and its test includes this. */
#ifndef NODETUNE_METRICS_TEST_H
#define NODETUNE_METRICS_TEST_H

#include <stdbool.h>
#include <stddef.h>

#include "daemon/metrics.h"

/* ---- names -------------------------------------------------------------- */

/* Is name a valid metric name, [a-zA-Z_:][a-zA-Z0-9_:]* (at most
 * METRICS_NAME_MAX bytes, no leading "__", which Prometheus reserves)? */
bool metrics_name_valid(const char *name);
/* Is name a valid label name, [a-zA-Z_][a-zA-Z0-9_]* (at most
 * METRICS_NAME_MAX bytes, no leading "__")? */
bool metrics_label_valid(const char *name);

/* Write value as the exposition format spells it into buf ("+Inf", "-Inf",
 * "NaN", an integer below 2^53 in full ("40", not "4e+01"), else the
 * shortest %.Ng that strtod reads back to value exactly).
 * size must be at least 32.  Returns buf. */
char *metrics_format_value(double value, char *buf, size_t size);

#endif
