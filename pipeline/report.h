/* What a pipeline did, from its steps' manifests: a table (documents in and out, bytes,
 * tokens, seconds per step), WORK/summary.json with the same figures, the stage funnel as
 * an SVG picture (documents left after each stage), and from the trainer's log (JSON
 * lines) its steps, last loss and validation loss and the loss curve as an SVG picture.
 * Library code: writes to the FILE and paths it is given. */
#ifndef PL_REPORT_H
#define PL_REPORT_H

#include <stdio.h>

struct pl_pipeline;

/* Print the table to `table` (may be NULL), write `json_path`, the funnel `svg_path` and
 * the loss curve `loss_svg_path` (any may be NULL; no loss curve without a train step
 * that logged). Steps without a manifest yet are left out. 0 or SL_ERR_IO. */
int pl_report(const struct pl_pipeline *p, FILE *table, const char *json_path, const char *svg_path,
              const char *loss_svg_path);

#endif
