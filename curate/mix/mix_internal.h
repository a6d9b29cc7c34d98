/* What cmd_mix.c and mix_budget.c share: the options of `sluice mix`, a run's rules and
 * attribute files, and the per-unit steps (begin, one document, end) that both passes of a
 * budgeted mix read the documents with. */
#ifndef SL_MIX_INTERNAL_H
#define SL_MIX_INTERNAL_H

#include "core/buf.h"
#include "core/inputs.h"
#include "core/jsonl.h"
#include "core/options.h"
#include "core/stage_docs.h"
#include "curate/mix/attrs.h"

struct mix_opts {
    const char *out, *text_key;
    struct sl_strlist attributes, keep_if, drop_if, remove_spans;
    int force, wait, repair_utf8;
    long level;
    uint64_t max_line;
    /* token budgets (mix_budget_run) */
    uint64_t tokens, seed;
    struct sl_strlist weights;
    const char *source_key, *tokenizer;
    double max_epochs, bytes_per_token;
    long shards;
};

/* The rules of one option, and the manifest's reason for each ("removed_keep_if_NAME"). */
struct rules {
    struct sl_attr_rule *v;
    char **reason;
    size_t n;
};

struct mix_run {
    const struct mix_opts *o;
    struct rules keep, drop, cut;
    size_t nattr;
    /* the unit's attribute files: path, reader, current line */
    char **apath;
    struct sl_jsonl_reader **rd;
    struct sl_attr_line *lines;
    struct sl_attr_cuts cuts;
    struct sl_buf text, where, id;
};

/* The steps of struct sl_stage_docs, ctx a struct mix_run: open the unit's attribute files,
 * decide one document (SL_DOC_KEEP, possibly with its text cut, or SL_DOC_DROP counted under
 * its rule), check the files are read to their end and close them. */
int mix_begin(void *ctx, struct sl_stage_unit *u);
int mix_doc(void *ctx, struct sl_stage_doc *sd, struct sl_doc *d);
int mix_end(void *ctx, struct sl_stage_unit *u, int rc);

/* --tokens: the budgeted mix of m's documents (curate/mix/budget.h) into o->shards shards in
 * a seeded order, the realised mix in the manifest. Collective. */
int mix_budget_run(struct mix_run *m, const struct sl_inputs *in, const char *settings, int argc,
                   const char **argv);

#endif
