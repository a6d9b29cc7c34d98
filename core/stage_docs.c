/* The document-level stage runner (core/stage_docs.h): each unit's inputs read document by
 * document, counted, and handed to the stage's doc(). */
#include "core/stage_docs.h"

#include "core/doc.h"
#include "core/err.h"
#include "core/inputs.h"
#include "core/log.h"
#include "core/stream.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Progress is reported every this many documents: often enough for a live line, rarely
 * enough that its cost does not show. */
#define PROGRESS_EVERY 256

/* One unit being read. */
struct docs_unit {
    const struct sl_stage_docs *job;
    struct sl_stage_doc sd;
    uint64_t read;  /* bytes of the unit's inputs before the current one */
    uint64_t ndocs; /* documents of the current input */
    /* slots of documents_in, documents_out and bytes_in (made by the first document, so
     * that a unit's record has the counters in the order the stages had them) */
    size_t s_in, s_out, s_bytes;
};

/* A skipped or repaired line: counted under its reason and in documents_in, its message
 * warned. */
static void on_skip(void *ctx, const char *reason, const char *message)
{
    struct docs_unit *du = ctx;
    struct sl_counters *c = du->sd.u->c;
    char buf[64];
    const char *key = sl_jsonl_skip_counter(reason, buf, sizeof(buf));
    sl_counters_add(c, key, 1);
    if (!strncmp(key, "skipped_", 8))
        c->values[du->s_in]++;
    sl_warn_skip(NULL, reason, message);
}

int sl_stage_doc_write(struct sl_stage_doc *sd, struct sl_doc *d)
{
    int rc = sd->w ? sl_doc_write(d, sd->w) : 0;
    sl_counters_add(sd->u->c, "documents_out", 1);
    return rc;
}

int sl_stage_doc_drop(struct sl_stage_doc *sd, const char *reason)
{
    sl_counters_add(sd->u->c, reason, 1);
    return SL_DOC_DROP;
}

static int on_doc(void *ctx, struct sl_jsonl_reader *r, struct sl_doc *d)
{
    struct docs_unit *du = ctx;
    struct sl_stage_doc *sd = &du->sd;
    struct sl_counters *c = sd->u->c;
    sd->r = r;
    sd->bytes = d->raw.len + 1;
    sd->w = sd->u->w;
    if (du->s_bytes == SIZE_MAX)
        du->s_bytes = sl_counters_slot(c, "bytes_in");
    c->values[du->s_in]++;
    c->values[du->s_bytes] += sd->bytes;
    int rc = du->job->doc(du->job->ctx, sd, d);
    if (rc == SL_DOC_KEEP)
        rc = sl_stage_doc_write(sd, d);
    if (rc == SL_DOC_DROP || rc == SL_DOC_WRITTEN)
        rc = 0;
    if (++du->ndocs % PROGRESS_EVERY == 0)
        sl_stage_unit_progress(sd->u, du->read + sl_jsonl_bytes_in(r), c->values[du->s_out]);
    return rc;
}

int sl_stage_docs_read_unit(const struct sl_stage_docs *job, struct sl_stage_unit *u)
{
    struct docs_unit du = { .job = job, .sd = { .u = u } };
    du.s_in = sl_counters_slot(u->c, "documents_in");
    du.s_out = sl_counters_slot(u->c, "documents_out");
    du.s_bytes = SIZE_MAX;
    int rc = job->begin ? job->begin(job->ctx, u) : 0;
    for (size_t i = 0; i < u->ninputs && !rc; i++) {
        const struct sl_input *in = &u->inputs[i];
        char *stem = sl_jsonl_id_stem(in->rel);
        struct sl_jsonl_opts jo = job->jsonl;
        jo.id_prefix = stem;
        jo.counters = job->skips_apart ? u->c : NULL;
        jo.on_skip = job->skips_apart ? sl_warn_skip : on_skip;
        jo.ctx = &du;
        du.sd.in = in;
        du.ndocs = 0;
        rc = sl_input_docs(in, &jo, on_doc, &du);
        du.read += in->size;
        free(stem);
    }
    return job->end ? job->end(job->ctx, u, rc) : rc;
}

/* process() of sl_stage_run_files: the unit's inputs, document by document. */
static int read_unit(void *ctx, struct sl_stage_unit *u)
{
    return sl_stage_docs_read_unit(ctx, u);
}

int sl_stage_run_docs(struct sl_world *w, const struct sl_stage_docs *job,
                      struct sl_stage_result *r)
{
    struct sl_stage_files files = job->files;
    files.process = read_unit;
    files.ctx = (void *)job;
    return sl_stage_run_files(w, &files, r);
}
