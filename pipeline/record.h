/* Whether a pipeline step is done: the record `sluice run` keeps in OUT/.sluice/run/step.json.
 *
 * Before a step's command runs, the record gets the command line and the inputs (every
 * file under the paths the command reads: path, size, modification time) with
 * "complete": false; when the command succeeds, the outputs (every file under OUT except
 * dot-files) and "complete": true. A later run compares:
 *   NEW       no record: the command runs (and resumes, or refuses a foreign directory)
 *   PARTIAL   same command and inputs, not finished: the command runs and resumes
 *   STALE     another command line, other inputs, or outputs changed since: it runs again
 *             from scratch (--force where the command has it)
 *   COMPLETE  same command and inputs, every output as recorded: the step is skipped.
 *             Outputs that a later step deleted (extract --rm-inputs) count as present
 *             when that step is COMPLETE.
 * Library code: no printing; rank 0 calls these.
 */
#ifndef PL_RECORD_H
#define PL_RECORD_H

#include <stddef.h>

struct pl_pipeline;
struct pl_step;

enum pl_state { PL_STATE_NEW, PL_STATE_PARTIAL, PL_STATE_STALE, PL_STATE_COMPLETE };

/* "new", "partial", ... */
const char *pl_state_name(enum pl_state s);

/* State of step i. *why (may be NULL; caller frees) says what differs for STALE. */
int pl_step_state(const struct pl_pipeline *p, size_t i, enum pl_state *out, char **why);

/* Write the record of a step that starts: command, inputs, "complete": false. */
int pl_record_begin(const struct pl_step *s);
/* Complete the record: outputs and "complete": true. */
int pl_record_finish(const struct pl_step *s);

#endif
