/* report.h — the A/B result as a self-contained HTML page (inline SVG, no
 * script, nothing fetched). */
#ifndef NODETUNE_REPORT_H
#define NODETUNE_REPORT_H

#include <stdio.h>

#include "ab.h"
#include "log.h"

/* Write s with HTML's five special characters escaped. */
void report_escape(FILE *f, const char *s);
/* The page to f.  0, or -EIO when f failed. */
int report_html(FILE *f, const struct ab_config *cfg, const struct ab_result *res);
/* The page to path, through path.tmp and a rename.  0, or -errno with err. */
int report_write(const char *path, const struct ab_config *cfg, const struct ab_result *res, struct nt_err *err);

#endif
