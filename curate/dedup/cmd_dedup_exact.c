/* sluice dedup exact: its options, the stage's plan and manifest, and what the run reports;
 * the work is the engine's (curate/dedup/exact.h: 128-bit hashes of the (normalised) text or
 * of another member, partitioned by value over the ranks; the first document (or the
 * longest) of each group of equal hashes kept). */
#include "curate/commands.h"

#include "core/alloc.h"
#include "core/buf.h"
#include "core/counters.h"
#include "core/err.h"
#include "core/log.h"
#include "core/options.h"
#include "core/parquet_write.h"
#include "core/stage.h"
#include "core/world.h"
#include "curate/dedup/corpus.h"
#include "curate/dedup/exact.h"
#include "curate/dedup/normalize.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const cmd_dedup_exact_usage[] = {
    "sluice dedup exact --out DIR [--key KEY] [--norm LIST] [--keep first|longest] IN...",
    "",
    "Remove exact duplicates: documents whose text (or member --key, e.g. url or",
    "metadata.url) has the same 128-bit XXH3 hash, after the normalisations in --norm, as",
    "another document's. Of each group the first document in input order is kept (or the",
    "longest, with --keep longest). Writes one part-NNNNN.jsonl.zst per input file,",
    "duplicates.jsonl (group, kept id, removed ids) and manifest.json. Under mpirun the",
    "hashes are partitioned by value over the ranks; the output is the same for any number",
    "of ranks. Document ids must be unique (missing ids are assigned as '<file>:<line>').",
    NULL,
};

struct opts {
    const char *out, *key, *norm, *keep, *text_key, *id_key;
    uint64_t max_line;
    long level;
    int force, wait, repair_utf8;
    const char *out_format; /* --out-format */
    uint64_t row_group_size;
    const char *mode, *norm_name, *hash; /* for the settings: "exact", --norm's, "xxh3-128" */
    unsigned norm_bits;                  /* --norm, parsed */
};

/* The options' table: the dispatcher's parser and -h, the settings of the plan (rows marked
 * SL_OPTF_OUTPUT) and the pipeline's dedup_exact keys. */
#define SL_OPT_STRUCT struct opts

const struct sl_option cmd_dedup_exact_options[] = {
    SL_SETTING(SL_OPT_STR, "mode", mode, .def = "exact"),
    SL_OPT_STRING('o', "out", out, "DIR", "output directory (created)", .required = 1),
    SL_OPT_STRING(0, "key", key, "KEY",
                  "compare this member instead of the text (url, metadata.url, ...)",
                  .flags = SL_OPTF_OUTPUT),
    SL_OPT_STRING(0, "norm", norm, "LIST",
                  "normalise first: lower,punct,space,digits,accents | all | none", .def = "none",
                  .flags = SL_OPTF_LIST),
    SL_SETTING(SL_OPT_STR, "norm", norm_name),
    SL_OPT_CHOICE(0, "keep", keep, "first|longest", "which document of a group to keep",
                  .def = "first", .flags = SL_OPTF_OUTPUT),
    SL_SETTING(SL_OPT_STR, "hash", hash, .def = "xxh3-128"),
    SL_OPT_TEXT_KEY(text_key),
    SL_OPT_ID_KEY(id_key),
    SL_OPT_MAX_LINE(max_line, .omit = SL_OMIT_DEF),
    SL_OPT_ZSTD_LEVEL(level, .flags = SL_OPTF_OUTPUT),
    SL_OPT_OUT_FORMAT(out_format, row_group_size),
    SL_OPT_REPAIR_UTF8(repair_utf8),
    SL_OPT_FORCE(force),
    SL_OPT_WAIT(wait),
    SL_OPT_COMMON,
    SL_OPT_END_,
};

static int run(const void *opts, const struct sl_strlist *operands, int argc, const char **argv)
{
    struct opts so = *(const struct opts *)opts, *o = &so; /* with --norm's name */
    unsigned norm = o->norm_bits;
    struct sl_world *w = sl_world_get();
    struct dd_corpus c;
    int rc = dd_corpus_init(&c, w, (const char *const *)operands->v, operands->n);
    if (rc) {
        dd_corpus_release(&c);
        return rc;
    }
    c.text_key = o->text_key;
    c.id_key = o->id_key;
    c.max_line = o->max_line;
    c.repair_utf8 = o->repair_utf8;

    char nn[64];
    struct sl_buf settings = SL_BUF_INIT;
    o->norm_name = dd_norm_name(norm, nn, sizeof(nn));
    sl_options_settings_json(cmd_dedup_exact_options, o, &settings);
    struct sl_stage st;
    rc = dd_corpus_stage_begin(&c, &st, w, "dedup-exact", o->out, argc, argv, settings.data,
                               o->force, o->wait);
    if (rc) {
        sl_buf_release(&settings);
        dd_corpus_release(&c);
        return rc;
    }

    struct dd_exact_cfg ec = { o->key, norm, !strcmp(o->keep, "longest") };
    struct dd_fate *fates;
    size_t nf;
    uint64_t missing_key, groups = 0;
    rc = dd_exact_find(&c, &ec, &fates, &nf, &missing_key);
    struct sl_pq_write_opts pq;
    const struct sl_pq_write_opts *pqo =
        sl_pq_out_opts(&pq, o->out_format, o->row_group_size, o->level, o->text_key);
    struct dd_apply_opts ao = { 0, o->level, NULL, NULL, NULL, 0, pqo, NULL, NULL };
    if (!rc)
        rc = dd_corpus_apply(&c, &st, fates, nf, &ao, &groups);

    struct sl_counters extra, totals;
    sl_counters_init(&extra);
    sl_counters_init(&totals);
    if (!rc) {
        sl_counters_add(&extra, "missing_key", missing_key);
        rc = sl_world_reduce_counters(w, &extra, 0);
        if (w->rank == 0)
            sl_counters_set(&extra, "duplicate_groups", groups);
    }
    if (!rc) {
        char **names = sl_xcalloc(c.in.n + 1, sizeof(char *));
        for (size_t i = 0; i < c.in.n; i++)
            names[i] = sl_stage_shard_name(i, pqo ? ".parquet" : ".jsonl.zst");
        rc = sl_stage_finish(&st, names, c.in.n, &extra, &totals);
        for (size_t i = 0; i < c.in.n; i++)
            free(names[i]);
        free(names);
    }
    if (!rc && w->rank == 0) {
        sl_info("dedup exact: %llu of %llu documents removed as duplicates (%llu groups); "
                "%llu kept in '%s'%s",
                (unsigned long long)sl_counters_get(&totals, "duplicates_removed"),
                (unsigned long long)sl_counters_get(&totals, "documents_in"),
                (unsigned long long)groups,
                (unsigned long long)sl_counters_get(&totals, "documents_out"), o->out,
                st.resumed ? " (resumed)" : "");
        if (missing_key || sl_counters_get(&totals, "missing_key"))
            sl_warn("%llu documents have no '%s' and were kept without comparison",
                    (unsigned long long)sl_counters_get(&totals, "missing_key"), o->key);
    }
    sl_counters_release(&extra);
    sl_counters_release(&totals);
    sl_stage_release(&st);
    sl_buf_release(&settings);
    dd_corpus_release(&c);
    return rc;
}

static int check(void *opts, const struct sl_strlist *operands)
{
    struct opts *o = opts;
    if (operands->n == 0)
        return sl_err_set(SL_ERR_USAGE, "no inputs given");
    int rc = dd_norm_parse(o->norm, &o->norm_bits);
    if (!rc && o->key && !*o->key)
        rc = sl_err_set(SL_ERR_USAGE, "--key must name a member");
    return rc;
}

const struct sl_cmd cmd_dedup_exact =
    SL_CMD(cmd_dedup_exact_usage, cmd_dedup_exact_options, struct opts, check, run);
