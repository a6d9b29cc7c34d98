/* sluice dedup paragraphs: its options, the stage's plan and manifest, and the output phase
 * that cuts the removed units out of each document; the search is the engine's
 * (curate/dedup/units.h). */
#include "curate/commands.h"

#include "core/alloc.h"
#include "core/buf.h"
#include "core/counters.h"
#include "core/doc.h"
#include "core/err.h"
#include "core/jsonl.h"
#include "core/log.h"
#include "core/options.h"
#include "core/stage.h"
#include "core/stage_docs.h"
#include "core/world.h"
#include "curate/dedup/corpus.h"
#include "curate/dedup/units.h"
#include "core/datadir.h"
#include "tokenize/punkt.h"
#include "tokenize/punkt_params.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const cmd_dedup_paragraphs_usage[] = {
    "sluice dedup paragraphs --out DIR [--unit paragraph|line|span3] [--index exact|bloom] IN...",
    "",
    "Remove repeated paragraphs (or lines, or sentences) across the corpus: each text is",
    "cut at every newline, and every paragraph already seen earlier (in an earlier",
    "document in input order, or earlier in the same one) is removed with its newline;",
    "the first occurrence stays. --unit paragraph compares the bytes as they are (Dolma's",
    "paragraph deduper); --unit line compares them stripped of surrounding whitespace and",
    "lowercased (C4's line dedup). --unit span3 compares every run of three sentences",
    "(Punkt: --lang or --punkt) normalised as --norm all, and removes the sentences of a",
    "run seen before (the C4 paper's three-sentence spans). --skip-empty leaves blank",
    "paragraphs alone. A document left with nothing but whitespace is dropped",
    "(left_empty). --index exact groups 128-bit XXH3 hashes partitioned over the ranks;",
    "--index bloom runs them through a Bloom filter sized for --expected-count units",
    "(default: every unit counted by the hashing pass) at --false-positive-rate, and",
    "prints its size first. Writes one part-NNNNN.jsonl.zst per input file and",
    "manifest.json (units_removed: paragraphs, lines or sentences); the output is the same",
    "for any number of ranks.",
    NULL,
};

struct opts {
    const char *out, *unit, *index, *text_key, *id_key, *lang, *punkt;
    double fp_rate;
    uint64_t expected, max_line;
    long level;
    int skip_empty, force, wait, repair_utf8;
    const char *mode, *hash; /* for the settings: "paragraphs", "xxh3-128" */
};

#define SL_OPT_STRUCT struct opts

const struct sl_option cmd_dedup_paragraphs_options[] = {
    SL_SETTING(SL_OPT_STR, "mode", mode, .def = "paragraphs"),
    SL_OPT_STRING('o', "out", out, "DIR", "output directory (created)", .required = 1),
    SL_OPT_CHOICE(0, "unit", unit, "paragraph|line|span3",
                  "paragraphs as they are (Dolma), lines stripped and lowercased (C4), or "
                  "three-sentence spans",
                  .def = "paragraph", .flags = SL_OPTF_OUTPUT),
    SL_OPT_STRING(0, "lang", lang, "LANG", "span3: the Punkt model's language", .def = "english",
                  .flags = SL_OPTF_OUTPUT),
    SL_OPT_STRING(0, "punkt", punkt, "DIR",
                  "span3: the Punkt model, a punkt_tab directory (instead of --lang's)",
                  .flags = SL_OPTF_OUTPUT | SL_OPTF_PATH),
    SL_OPT_FLAG_(0, "skip-empty", skip_empty, "leave blank paragraphs uncompared",
                 .flags = SL_OPTF_OUTPUT),
    SL_OPT_CHOICE(0, "index", index, "exact|bloom", "hashes grouped exactly, or a Bloom filter",
                  .def = "exact", .flags = SL_OPTF_OUTPUT),
    SL_OPT_DOUBLE(0, "false-positive-rate", fp_rate, "P", "bloom: the rate the filter is sized for",
                  .def = "0.00001", .flags = SL_OPTF_OUTPUT),
    SL_OPT_UINT64(0, "expected-count", expected, "N",
                  "bloom: distinct paragraphs to size for (default 0: all counted)", .def = "0",
                  .flags = SL_OPTF_OUTPUT),
    SL_SETTING(SL_OPT_STR, "hash", hash, .def = "xxh3-128"),
    SL_OPT_TEXT_KEY(text_key),
    SL_OPT_ID_KEY(id_key),
    SL_OPT_MAX_LINE(max_line, .omit = SL_OMIT_DEF),
    SL_OPT_ZSTD_LEVEL(level, .flags = SL_OPTF_OUTPUT),
    SL_OPT_REPAIR_UTF8(repair_utf8),
    SL_OPT_FORCE(force),
    SL_OPT_WAIT(wait),
    SL_OPT_COMMON,
    SL_OPT_END_,
};

/* The output phase on this rank: the removed units of its documents, by gid then index. */
struct cut_run {
    const struct dd_corpus *c;
    const struct dd_units_cfg *uc;
    struct punkt_spans sent;
    unsigned char *gone; /* span3: each sentence removed or not */
    size_t gone_cap;
    const struct dd_fate *rm;
    size_t n, k;
    struct sl_buf out;
    const char *text;
    size_t len;
    uint64_t gid, units, bytes;
};

static int cut_begin(void *ctx, struct sl_stage_unit *u)
{
    (void)ctx;
    sl_counters_add(u->c, "units_removed", 0);
    sl_counters_add(u->c, "bytes_removed", 0);
    sl_counters_add(u->c, "left_empty", 0);
    return 0;
}

static int cut_unit(void *ctx, uint32_t index, size_t start, size_t end)
{
    struct cut_run *a = ctx;
    int has_nl = end < a->len; /* every unit but the last ends at a '\n' */
    if (a->k < a->n && a->rm[a->k].gid == a->gid && a->rm[a->k].keep == index) {
        a->k++;
        a->units++;
        a->bytes += end - start + has_nl;
        return 0;
    }
    sl_buf_append(&a->out, a->text + start, end - start + has_nl);
    return 0;
}

/* span3: the sentences of the removed spans, each with the whitespace after it */
static void cut_spans(struct cut_run *a, size_t len)
{
    dd_span_sentences(a->uc, a->text, len, &a->sent);
    const struct punkt_span *v = a->sent.v;
    size_t n = a->sent.n;
    if (n > a->gone_cap) {
        a->gone_cap = n;
        a->gone = sl_xrealloc(a->gone, n);
    }
    if (n)
        memset(a->gone, 0, n);
    for (; a->k < a->n && a->rm[a->k].gid == a->gid; a->k++)
        for (size_t j = a->rm[a->k].keep; j < a->rm[a->k].keep + DD_SPAN_SENTENCES && j < n; j++)
            a->gone[j] = 1;
    sl_buf_append(&a->out, a->text, n ? v[0].start : len);
    for (size_t j = 0; j < n; j++) {
        size_t e = j + 1 < n ? v[j + 1].start : len;
        if (a->gone[j]) {
            a->units++;
            a->bytes += e - v[j].start;
        } else {
            sl_buf_append(&a->out, a->text + v[j].start, e - v[j].start);
        }
    }
}

static int cut_doc(void *ctx, struct sl_stage_doc *sd, struct sl_doc *d)
{
    struct cut_run *a = ctx;
    a->gid = DD_GID(a->c->gen, sd->u->index, sl_jsonl_line_no(sd->r));
    while (a->k < a->n && a->rm[a->k].gid < a->gid)
        a->k++;
    if (a->k == a->n || a->rm[a->k].gid != a->gid)
        return SL_DOC_KEEP;
    size_t len;
    a->text = sl_doc_text(d, &len);
    a->len = len;
    sl_buf_reset(&a->out);
    a->units = a->bytes = 0;
    if (a->uc->unit == DD_UNIT_SPAN3)
        cut_spans(a, len);
    else
        dd_units_each(a->text, len, cut_unit, a);
    sl_counters_add(sd->u->c, "units_removed", a->units);
    sl_counters_add(sd->u->c, "bytes_removed", a->bytes);
    size_t i = 0;
    while (i < a->out.len && strchr(" \t\n\r\v\f", a->out.data[i]))
        i++;
    if (i == a->out.len)
        return sl_stage_doc_drop(sd, "left_empty");
    int rc = sl_doc_set_text(d, a->out.data, a->out.len);
    return rc ? rc : SL_DOC_KEEP;
}

static int cut(struct dd_corpus *c, struct sl_stage *st, const struct dd_units_cfg *uc,
               const struct dd_fate *rm, size_t n, long level)
{
    struct cut_run a = { .c = c, .uc = uc, .rm = rm, .n = n };
    struct sl_stage_docs job = { .files = { .stage = { .stage = st->cfg.stage, .inputs = &c->in },
                                            .label = "dedup paragraphs: writing",
                                            .level = (int)level,
                                            .begun = st },
                                 .jsonl = { .max_line = c->max_line,
                                            .text_key = c->text_key,
                                            .id_key = c->id_key,
                                            .repair_utf8 = c->repair_utf8 },
                                 .skips_apart = 1,
                                 .begin = cut_begin,
                                 .doc = cut_doc,
                                 .ctx = &a };
    struct sl_stage_result res;
    int rc = sl_stage_run_docs(st->world, &job, &res);
    sl_stage_result_release(&res);
    sl_warn_limited_summary();
    sl_buf_release(&a.out);
    punkt_spans_release(&a.sent);
    free(a.gone);
    return rc;
}

static void report(const struct opts *o, const struct sl_stage *st, const struct sl_counters *t,
                   const struct dd_units_stats *us)
{
    sl_info("dedup paragraphs: %llu of %llu %s removed (%llu bytes), %llu documents left "
            "empty and dropped; %llu of %llu documents kept in '%s'%s",
            (unsigned long long)sl_counters_get(t, "units_removed"), (unsigned long long)us->units,
            !strcmp(o->unit, "line")    ? "lines"
            : !strcmp(o->unit, "span3") ? "sentences"
                                        : "paragraphs",
            (unsigned long long)sl_counters_get(t, "bytes_removed"),
            (unsigned long long)sl_counters_get(t, "left_empty"),
            (unsigned long long)sl_counters_get(t, "documents_out"),
            (unsigned long long)sl_counters_get(t, "documents_in"), o->out,
            st->resumed ? " (resumed)" : "");
}

static int finish(const struct opts *o, struct sl_stage *st, struct dd_corpus *c,
                  const struct dd_units_stats *us)
{
    struct sl_counters extra, totals;
    sl_counters_init(&extra);
    sl_counters_init(&totals);
    if (c->w->rank == 0) {
        sl_counters_set(&extra, "units_in", us->units);
        sl_counters_set(&extra, "units_compared", us->compared);
        if (us->bloom_bits) {
            sl_counters_set(&extra, "bloom_bits", us->bloom_bits);
            sl_counters_set(&extra, "bloom_hashes", us->bloom_k);
            sl_counters_set(&extra, "bloom_expected_count", us->bloom_count);
        }
    }
    char **names = sl_xcalloc(c->in.n + 1, sizeof(char *));
    for (size_t i = 0; i < c->in.n; i++)
        names[i] = sl_stage_shard_name(i, ".jsonl.zst");
    int rc = sl_stage_finish(st, names, c->in.n, &extra, &totals);
    for (size_t i = 0; i < c->in.n; i++)
        free(names[i]);
    free(names);
    if (!rc && c->w->rank == 0)
        report(o, st, &totals, us);
    sl_counters_release(&extra);
    sl_counters_release(&totals);
    return rc;
}

/* span3: the Punkt model of --punkt DIR, else of --lang. 0 or an error (message set). */
static int load_punkt(const struct opts *o, struct punkt_params **p)
{
    char *dir = NULL;
    int rc = o->punkt ? 0 : punkt_params_find(o->lang, sl_data_dir(), &dir);
    if (!rc)
        rc = punkt_params_load(p, o->punkt ? o->punkt : dir);
    free(dir);
    return rc;
}

static int run(const void *opts, const struct sl_strlist *operands, int argc, const char **argv)
{
    const struct opts *o = opts;
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

    struct sl_buf settings = SL_BUF_INIT;
    sl_options_settings_json(cmd_dedup_paragraphs_options, o, &settings);
    struct sl_stage st;
    rc = dd_corpus_stage_begin(&c, &st, w, "dedup-paragraphs", o->out, argc, argv, settings.data,
                               o->force, o->wait);
    if (rc) {
        sl_buf_release(&settings);
        dd_corpus_release(&c);
        return rc;
    }
    struct dd_units_cfg uc = { .unit = !strcmp(o->unit, "line")    ? DD_UNIT_LINE
                                       : !strcmp(o->unit, "span3") ? DD_UNIT_SPAN3
                                                                   : DD_UNIT_PARAGRAPH,
                               .skip_empty = o->skip_empty,
                               .bloom = !strcmp(o->index, "bloom"),
                               .fp_rate = o->fp_rate,
                               .expected = o->expected };
    struct punkt_params *pp = NULL;
    if (uc.unit == DD_UNIT_SPAN3) {
        rc = load_punkt(o, &pp);
        if (!rc)
            uc.punkt = punkt_new(pp, 0);
    }
    struct dd_fate *rm = NULL;
    size_t nr = 0;
    struct dd_units_stats us;
    if (!rc)
        rc = dd_units_find(&c, &uc, &rm, &nr, &us);
    if (!rc)
        rc = cut(&c, &st, &uc, rm, nr, o->level);
    free(rm);
    if (uc.punkt)
        punkt_free(uc.punkt);
    punkt_params_free(pp);
    if (!rc)
        rc = finish(o, &st, &c, &us);
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
    if (!(o->fp_rate > 0 && o->fp_rate < 1))
        return sl_err_set(SL_ERR_USAGE,
                          "--false-positive-rate %g is out of range\nhint: give a rate "
                          "between 0 and 1, e.g. 0.00001",
                          o->fp_rate);
    return 0;
}

const struct sl_cmd cmd_dedup_paragraphs =
    SL_CMD(cmd_dedup_paragraphs_usage, cmd_dedup_paragraphs_options, struct opts, check, run);
