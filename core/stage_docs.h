/* The document-level stage runner: sl_stage_run_files() (core/stage.h) with the loop that
 * every stage of JSONL documents shares, so that a stage supplies only what it does to
 * one document.
 *
 * For each unit it reads each input's documents (sl_input_docs: up to the input's planned
 * size; a document without an id gets "<input's path stem>:<line>"), counts documents_in
 * and bytes_in (the document's line with its newline), counts skipped lines under their
 * reason (skipped_invalid_json, ..., blank_lines, repaired_utf8_lines: core/jsonl.h; a
 * skipped line is a line read, in documents_in too) and warns of them, reports progress
 * every 256 documents, and asks the stage's doc() what to do with each document:
 *   SL_DOC_KEEP     write it, as doc() left it (edited or not), to sd->w; documents_out
 *   SL_DOC_DROP     write nothing (sl_stage_doc_drop counts it under its reason)
 *   SL_DOC_WRITTEN  doc() wrote it, or the pieces it was split into, with
 *                   sl_stage_doc_write (each piece counts in documents_out)
 * or <0 with a message, which fails the unit (its shard is not kept). begin() and end(),
 * both optional, bracket a unit: per-unit files (filter's --rejected) and counts.
 *
 *   struct sl_stage_docs job = { .files = { .stage = { .stage = "clean", ... },
 *                                           .level = (int)o->level },
 *                                .jsonl = { .text_key = o->text_key, .repair_utf8 = 1 },
 *                                .doc = clean_doc,
 *                                .ctx = &run };
 *   rc = sl_stage_run_docs(w, &job, &res);       as sl_stage_run_files
 */
#ifndef SL_STAGE_DOCS_H
#define SL_STAGE_DOCS_H

#include <stdint.h>

#include "core/jsonl.h"
#include "core/stage.h"

struct sl_doc;

enum sl_doc_verdict {
    SL_DOC_KEEP,
    SL_DOC_DROP,
    SL_DOC_WRITTEN,
};

/* One document of a unit, as doc() sees it. */
struct sl_stage_doc {
    struct sl_stage_unit *u;   /* the unit: u->c its counts, u->index, u->name */
    const struct sl_input *in; /* the input being read */
    struct sl_jsonl_reader *r; /* its reader: sl_jsonl_line_no(r), offsets */
    uint64_t bytes;            /* the document's line with its newline (in bytes_in) */
    /* where SL_DOC_KEEP and sl_stage_doc_write write: the unit's shard (NULL for a unit
     * without one: files.no_writer, or read again with files.read_done; then nothing is
     * written, and documents_out still counts), unless doc() sets another writer */
    struct sl_writer *w;
};

/* Count a dropped document under `reason`, the manifest's name for it
 * ("duplicates_removed"); returns SL_DOC_DROP, for doc() to return. */
int sl_stage_doc_drop(struct sl_stage_doc *sd, const char *reason);

/* Write d to sd->w (when there is one) and count it in documents_out: a piece of a split
 * document (doc() then returns SL_DOC_WRITTEN). 0 or <0 with a message. */
int sl_stage_doc_write(struct sl_stage_doc *sd, struct sl_doc *d);

struct sl_stage_docs {
    /* the stage and its units (sl_stage_run_files; process and ctx are the runner's) */
    struct sl_stage_files files;
    /* the reader's options: max_line, text_key, id_key, repair_utf8, allow_missing_text
     * (id_prefix, counters, on_skip and its ctx are the runner's) */
    struct sl_jsonl_opts jsonl;
    /* skipped lines are counted by the reader (core/jsonl.h: every reason's counter is
     * listed, also at 0) and not in documents_in (dedup's manifests: documents_in =
     * documents_out + duplicates_removed) */
    int skips_apart;
    /* optional: before a unit's first document; 0 or <0 (the unit fails) */
    int (*begin)(void *ctx, struct sl_stage_unit *u);
    /* one document: SL_DOC_KEEP, SL_DOC_DROP, SL_DOC_WRITTEN, or <0 with a message */
    int (*doc)(void *ctx, struct sl_stage_doc *sd, struct sl_doc *d);
    /* optional: after the unit's last document, also when begin, reading or doc() failed
     * (rc: the unit's result so far); returns the unit's result */
    int (*end)(void *ctx, struct sl_stage_unit *u, int rc);
    void *ctx;
};

/* Collective: sl_stage_run_files with one unit's documents read as above. */
int sl_stage_run_docs(struct sl_world *w, const struct sl_stage_docs *job,
                      struct sl_stage_result *r);

/* One unit read as sl_stage_run_docs reads it (begin, each document, end; ids, counts and
 * skips the same), outside the runner: for a stage that reads its inputs in a pass of its
 * own before it writes (mix's token budgets). u: index, inputs, ninputs, name and c set
 * by the caller; w NULL (documents_out counts what doc() keeps); no progress is shown. */
int sl_stage_docs_read_unit(const struct sl_stage_docs *job, struct sl_stage_unit *u);

#endif
