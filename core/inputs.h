/* Input files of a stage: operands (files or directories) expanded into a sorted list,
 * and work assigned to MPI ranks balanced by size.
 *
 * A directory stands for the files under it (recursively, sorted by path) whose names end
 * in one of the accepted extensions; hidden files and directories (".name") are skipped.
 * A directory written by a sluice stage (it has a manifest.json listing "outputs") stands
 * for exactly those outputs, so side files such as duplicates.jsonl are never re-read.
 */
#ifndef SL_INPUTS_H
#define SL_INPUTS_H

#include <stddef.h>
#include <stdint.h>

struct sl_input {
    char *path; /* as opened */
    char *rel;  /* relative to its operand directory, or the base name for a file operand */
    uint64_t size;
    int64_t mtime;
};

struct sl_inputs {
    struct sl_input *v;
    size_t n;
};

/* The extensions a JSONL stage reads by default. */
extern const char *const sl_jsonl_exts[];

/* Expand operands. `exts` is a NULL-terminated list of accepted name endings (NULL: all
 * files). Errors: a missing operand, a directory with no accepted files (named), an
 * unreadable directory. Files given explicitly are taken whatever their extension. */
int sl_inputs_expand(struct sl_inputs *in, const char *const *operands, size_t n,
                     const char *const *exts);
void sl_inputs_release(struct sl_inputs *in);
uint64_t sl_inputs_total_size(const struct sl_inputs *in);

/* Greedy longest-processing-time assignment: items in decreasing size (ties: lower index
 * first) each go to the least-loaded rank (ties: lower rank). owner[i] receives the rank.
 * Deterministic: every rank computes the same answer. */
void sl_assign_by_size(const uint64_t *sizes, size_t n, int nranks, int *owner);

#endif
