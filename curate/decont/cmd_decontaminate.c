/* sluice decontaminate: remove downstream task text (benchmark n-grams) from documents,
 * as NeMo Curator's TaskDecontamination does (curate/decont/decont.h). One output shard per
 * input file; every rank builds the same task table from the task files, so the output does
 * not depend on the number of ranks. */
#include "curate/commands.h"

#include "core/alloc.h"
#include "core/err.h"
#include "core/jsonl.h"
#include "core/log.h"
#include "core/options.h"
#include "core/parquet_write.h"
#include "core/stage_docs.h"
#include "core/stream.h"
#include "core/world.h"
#include "curate/decont/decont.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const cmd_decontaminate_usage[] = {
    "sluice decontaminate --tasks TASKS.yaml --out DIR [options] IN...",
    "",
    "Remove benchmark text from JSONL documents: where a word n-gram (lower-cased, ASCII",
    "punctuation as space) of a task text occurs, the n-gram and --margin characters on each",
    "side (extended to a sentence end) are cut out and the document is split; pieces of",
    "--min-length characters or fewer are dropped, documents left with no piece or more than",
    "--max-splits pieces are dropped. TASKS.yaml lists tasks: name, files (JSONL), fields.",
    NULL,
};

struct opts {
    const char *out, *text_key, *tasks;
    struct sl_decont_opts d;
    int force, wait;
    long level;
    const char *out_format; /* --out-format */
    uint64_t row_group_size;
    const char *dset; /* the tasks' n-grams and the settings that cut (JSON), for the plan */
};

/* The options' table: the dispatcher's parser and -h, the settings of the plan (rows marked
 * SL_OPTF_OUTPUT) and the pipeline's decontaminate keys. --tasks and the cutting options
 * are in the settings through "decontaminate". */
#define SL_OPT_STRUCT struct opts

const struct sl_option cmd_decontaminate_options[] = {
    SL_OPT_STRING('o', "out", out, "DIR", "output directory (created)", .required = 1),
    SL_SETTING(SL_OPT_JSON_, "decontaminate", dset),
    SL_OPT_STRING(0, "tasks", tasks, "FILE", "YAML list of tasks: name, files (JSONL), fields",
                  .flags = SL_OPTF_PATH, .required = 1),
    SL_OPT_INTEGER(0, "ngram", d.ngram, "N", "words per n-gram", .def = "13"),
    SL_OPT_INTEGER(0, "min-task-words", d.min_task_words, "N",
                   "task texts shorter than --ngram but with N+ words are one n-gram", .def = "8"),
    SL_OPT_INTEGER(0, "margin", d.margin, "N", "characters cut on each side of a match",
                   .def = "200"),
    SL_OPT_INTEGER(0, "min-length", d.min_length, "N", "drop pieces of N characters or fewer",
                   .def = "200"),
    SL_OPT_INTEGER(0, "max-splits", d.max_splits, "N", "drop documents cut into more pieces",
                   .def = "10"),
    SL_OPT_TEXT_KEY(text_key),
    SL_OPT_ZSTD_LEVEL(level, .flags = SL_OPTF_OUTPUT, .omit = SL_OMIT_DEF),
    SL_OPT_OUT_FORMAT(out_format, row_group_size),
    SL_OPT_FORCE(force),
    SL_OPT_WAIT(wait),
    SL_OPT_COMMON,
    SL_OPT_END_,
};

/* What the units of one run share: the task table and a document's scratch. */
struct decont_run {
    const struct sl_decont *dc;
    struct sl_decont_work dw;
    struct sl_buf text, id, piece_id;
};

/* One document: kept, dropped, or split around the task text it holds. */
static int decont_doc(void *ctx, struct sl_stage_doc *sd, struct sl_doc *doc)
{
    struct decont_run *x = ctx;
    const struct sl_decont *dc = x->dc;
    struct sl_decont_work *dw = &x->dw;
    struct sl_counters *c = sd->u->c;
    size_t n;
    const char *t = sl_doc_text(doc, &n);
    sl_decont_doc(dc, dw, t, n);
    for (size_t k = 0; k < dc->ntasks; k++)
        if (dw->task_matches[k]) {
            char key[160];
            snprintf(key, sizeof(key), "matches_%s", dc->tasks[k].name);
            sl_counters_add(c, key, dw->task_matches[k]);
        }
    sl_counters_add(c, "short_pieces_dropped", dw->short_pieces);
    if (!dw->matches)
        return SL_DOC_KEEP;
    sl_counters_add(c, "documents_contaminated", 1);
    if (dw->dropped) {
        sl_stage_doc_drop(sd, dw->dropped == 1 ? "documents_dropped_max_splits"
                                               : "documents_dropped_empty");
        sl_counters_add(c, "bytes_removed", n);
        return SL_DOC_DROP;
    }
    /* copy the text: setting it replaces the storage t points into */
    sl_buf_reset(&x->text);
    sl_buf_append(&x->text, t, n);
    sl_buf_reset(&x->id);
    if (sl_doc_get_str(doc, "id", &x->id))
        sl_buf_reset(&x->id);
    size_t kept = 0;
    int rc = 0;
    for (size_t k = 0; k < dw->npieces && !rc; k++) {
        const struct sl_decont_piece *p = &dw->pieces[k];
        kept += p->len;
        rc = sl_doc_set_text(doc, x->text.data + p->off, p->len);
        sl_buf_reset(&x->piece_id);
        sl_buf_printf(&x->piece_id, "%.*s-%zu", (int)x->id.len, x->id.data ? x->id.data : "", k);
        if (!rc)
            rc = sl_doc_set_str(doc, "id", x->piece_id.data, x->piece_id.len);
        if (!rc)
            rc = sl_stage_doc_write(sd, doc);
    }
    sl_counters_add(c, "documents_split", 1);
    sl_counters_add(c, "bytes_removed", n - kept);
    return rc ? rc : SL_DOC_WRITTEN;
}

static int check(void *opts, const struct sl_strlist *operands)
{
    const struct opts *o = opts;
    if (o->d.margin < 0 || o->d.min_length < 0 || o->d.max_splits < 1)
        return sl_err_set(SL_ERR_USAGE,
                          "--margin and --min-length must be >= 0, --max-splits >= 1");
    return operands->n ? 0 : sl_err_set(SL_ERR_USAGE, "no inputs given");
}

static int run(const void *opts, const struct sl_strlist *operands, int argc, const char **argv)
{
    struct opts o = *(const struct opts *)opts; /* with the settings it works out */
    struct sl_world *w = sl_world_get();
    struct sl_inputs in;
    int rc = sl_inputs_expand(&in, (const char *const *)operands->v, operands->n, sl_jsonl_exts);
    if (rc)
        return rc;
    /* every rank reads the task files itself: the table depends on them alone */
    struct sl_decont *dc = NULL;
    rc = sl_decont_load(&dc, o.tasks, &o.d);
    if (rc) {
        sl_inputs_release(&in);
        return rc;
    }
    for (size_t t = 0; t < dc->ntasks && w->rank == 0; t++) {
        const struct sl_decont_task *tk = &dc->tasks[t];
        if (tk->bad_lines)
            sl_warn("task '%s': %llu unreadable lines skipped (first: %s)", tk->name,
                    (unsigned long long)tk->bad_lines, tk->first_bad);
        if (tk->skipped)
            sl_warn("task '%s': %llu of %llu records have none of the fields", tk->name,
                    (unsigned long long)tk->skipped, (unsigned long long)tk->records);
    }
    struct sl_buf dset = SL_BUF_INIT, settings = SL_BUF_INIT;
    sl_decont_settings(dc, &dset);
    o.dset = dset.data;
    sl_options_settings_json(cmd_decontaminate_options, &o, &settings);
    struct decont_run x = { .dc = dc };
    struct sl_pq_write_opts pq;
    sl_decont_work_init(&x.dw, dc);
    struct sl_stage_docs job = { .files = { .stage = { .stage = "decontaminate",
                                                       .out_dir = o.out,
                                                       .argc = argc,
                                                       .argv = argv,
                                                       .inputs = &in,
                                                       .settings_json = settings.data,
                                                       .force = o.force,
                                                       .wait = o.wait },
                                            .level = (int)o.level,
                                            .parquet =
                                                sl_pq_out_opts(&pq, o.out_format, o.row_group_size,
                                                               o.level, o.text_key) },
                                 .jsonl = { .text_key = o.text_key },
                                 .doc = decont_doc,
                                 .ctx = &x };
    struct sl_stage_result res;
    rc = sl_stage_run_docs(w, &job, &res);
    sl_warn_limited_summary();
    if (!rc && w->rank == 0)
        sl_info("decontaminate: %llu of %llu documents contaminated, %llu dropped; %llu "
                "documents in '%s'%s",
                (unsigned long long)sl_counters_get(&res.totals, "documents_contaminated"),
                (unsigned long long)sl_counters_get(&res.totals, "documents_in"),
                (unsigned long long)(sl_counters_get(&res.totals, "documents_dropped_max_splits") +
                                     sl_counters_get(&res.totals, "documents_dropped_empty")),
                (unsigned long long)sl_counters_get(&res.totals, "documents_out"), o.out,
                res.resumed ? " (resumed)" : "");
    sl_stage_result_release(&res);
    sl_decont_work_release(&x.dw);
    sl_buf_release(&x.text);
    sl_buf_release(&x.id);
    sl_buf_release(&x.piece_id);
    sl_buf_release(&settings);
    sl_buf_release(&dset);
    sl_inputs_release(&in);
    sl_decont_free(dc);
    return rc;
}

const struct sl_cmd cmd_decontaminate =
    SL_CMD(cmd_decontaminate_usage, cmd_decontaminate_options, struct opts, check, run);
