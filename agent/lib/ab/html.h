/* SPDX-License-Identifier: MIT */
/* html.h — the A/B result as a self-contained HTML page (inline SVG, no
 * script, nothing fetched). */
#ifndef NODETUNE_HTML_H
#define NODETUNE_HTML_H

#include <stdio.h>

#include "ab/ab.h"
#include "base/log.h"

/* The page to path, through path.tmp and a rename.  0, or -errno with err. */
int html_ab_write(const char *path, const struct ab_config *cfg, const struct ab_result *res, struct nt_err *err);

#endif
