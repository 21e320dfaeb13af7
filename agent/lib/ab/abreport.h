/* SPDX-License-Identifier: MIT */
/* abreport.h — an A/B experiment's result for people and for programs.
 *
 * The text report: the verdict, the effect with its interval, the noise
 * (and the budget an undecided experiment would need), steps and stalls,
 * rank skew, the claimed explanations, the evidence lines, and what could
 * not be counted.  The JSON report carries the same, plus each trial's
 * figure and each arm's watch (abwatch_arm_json).
 */
#ifndef NODETUNE_ABREPORT_H
#define NODETUNE_ABREPORT_H

#include <jansson.h>
#include <stdio.h>

#include "ab/ab.h"

/* The version of the report's shape (docs/schema/ab.schema.json): a
 * contract with the fleet's gate, which reads it (FLEET_GATE_AB_SCHEMA). */
#define ABREPORT_SCHEMA "nodetune.ab/1"

/* The report as a JSON object, "schema": ABREPORT_SCHEMA first (a new
 * reference; NULL on ENOMEM); an arm that failed gives {"schema": ...,
 * "verdict": "error", "error": ...}. */
json_t *abreport_json(const struct ab_config *cfg, const struct ab_result *res);

/* The name of an interval at level 1 - level_alpha, for the text and HTML
 * reports, into buf (always NUL-terminated): its confidence in percent with
 * as many decimals as show how far it is from 100% ("95% CI", "99.87% CI",
 * never "100.0%"); when the level is not the experiment's alpha, because
 * sequential looks spent only part of it, it says so: "99.99931% CI
 * (sequential: 4 looks, the last at level 6.9e-06)". */
void abreport_ci_name(double alpha, double level_alpha, int looks, char *buf, size_t size);

/* The text report to out.  0, or -EIO when out failed. */
int abreport_print(FILE *out, const struct ab_config *cfg, const struct ab_result *res);

#endif
