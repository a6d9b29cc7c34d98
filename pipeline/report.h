/* What a pipeline did, from its steps' manifests: a table (documents in and out, bytes,
 * tokens, seconds per step), WORK/summary.json with the same figures, and the stage
 * funnel as an SVG picture (documents left after each stage). Library code: writes to the
 * FILE and paths it is given. */
#ifndef PL_REPORT_H
#define PL_REPORT_H

#include <stdio.h>

struct pl_pipeline;

/* Print the table to `table` (may be NULL), write `json_path` and `svg_path` (either may
 * be NULL). Steps without a manifest yet are left out. 0 or SL_ERR_IO. */
int pl_report(const struct pl_pipeline *p, FILE *table, const char *json_path, const char *svg_path);

#endif
