/* sluice mix: documents selected by rules over their attributes (sluice tag's, or Dolma's
 * taggers'), and spans of text cut out by them, without scoring again: one pass over the
 * documents and their attribute shards, one output shard per input file. */
#include "curate/commands.h"

#include "core/alloc.h"
#include "core/err.h"
#include "core/jsonl.h"
#include "core/log.h"
#include "core/options.h"
#include "core/stage_docs.h"
#include "core/world.h"
#include "curate/mix/attrs.h"
#include "curate/mix/mix_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const cmd_mix_usage[] = {
    "sluice mix --attributes DIR --out DIR [--keep-if|--drop-if|--remove-spans RULE] IN...",
    "sluice mix [--attributes DIR RULES] --tokens N [--weights SRC=W] --out DIR IN...",
    "",
    "Select JSONL documents by their attributes (sluice tag's, or Dolma's) without scoring",
    "again. The documents of input NNNNN (inputs in sorted order, as sluice tag read them)",
    "have their attributes in DIR/part-NNNNN.jsonl.zst, a line each, in order. A RULE is",
    "NAME OP NUMBER (OP: < <= > >= == !=) on the first span's score of attribute NAME: a",
    "document is kept when every --keep-if holds and no --drop-if does; --remove-spans cuts",
    "the spans of NAME whose score satisfies it out of the text (documents left empty are",
    "dropped). Each removal is counted under its rule. With --tokens, the kept documents",
    "are sampled per source (--source-key) to N tokens in the --weights proportions, at",
    "most --max-epochs repetitions each, and shuffled (--seed) into --shards shards; the",
    "manifest gives each source's target, documents and tokens. The output is the same for",
    "any number of MPI ranks.",
    NULL,
};

#define SL_OPT_STRUCT struct mix_opts
const struct sl_option cmd_mix_options[] = {
    SL_OPT_STRINGS(0, "attributes", attributes, "DIR",
                   "attribute shards of the inputs (sluice tag --out; repeatable)",
                   .flags = SL_OPTF_OUTPUT),
    SL_OPT_STRING('o', "out", out, "DIR", "output directory (created)", .required = 1),
    SL_OPT_STRINGS(0, "keep-if", keep_if, "RULE",
                   "keep only documents where RULE holds: 'exp__word_count__score >= 50'",
                   .flags = SL_OPTF_OUTPUT),
    SL_OPT_STRINGS(0, "drop-if", drop_if, "RULE", "drop documents where RULE holds",
                   .flags = SL_OPTF_OUTPUT),
    SL_OPT_STRINGS(0, "remove-spans", remove_spans, "RULE",
                   "cut the spans of RULE's attribute whose score satisfies it",
                   .flags = SL_OPTF_OUTPUT),
    SL_OPT_UINT64(0, "tokens", tokens, "N",
                  "a mix of N tokens: sources sampled by --weights, shuffled into --shards",
                  .flags = SL_OPTF_OUTPUT),
    SL_OPT_STRINGS(0, "weights", weights, "SRC=W",
                   "weight of a source (repeatable; without it every source weighs 1)",
                   .flags = SL_OPTF_OUTPUT | SL_OPTF_KV),
    SL_OPT_STRING(0, "source-key", source_key, "KEY", "member that names a document's source",
                  .def = "source", .flags = SL_OPTF_OUTPUT),
    SL_OPT_DOUBLE(0, "max-epochs", max_epochs, "E", "most repetitions of a source's tokens",
                  .def = "1", .flags = SL_OPTF_OUTPUT),
    SL_OPT_STRING(0, "tokenizer", tokenizer, "SPEC",
                  "count tokens with it (gpt2:DIR, tiktoken:FILE, spm:FILE, hf:FILE, ...)",
                  .flags = SL_OPTF_OUTPUT),
    SL_OPT_DOUBLE(0, "bytes-per-token", bytes_per_token, "B",
                  "count tokens as ceil(text bytes / B) (without --tokenizer)", .def = "4",
                  .flags = SL_OPTF_OUTPUT),
    SL_OPT_UINT64(0, "seed", seed, "S", "seed of the sampling and the shuffle",
                  .flags = SL_OPTF_OUTPUT),
    SL_OPT_INTEGER(0, "shards", shards, "N", "output shards of a --tokens mix (default: inputs)",
                   .flags = SL_OPTF_OUTPUT),
    SL_OPT_REPAIR_UTF8(repair_utf8),
    SL_OPT_TEXT_KEY(text_key),
    SL_OPT_MAX_LINE(max_line, .omit = SL_OMIT_DEF),
    SL_OPT_ZSTD_LEVEL(level, .flags = SL_OPTF_OUTPUT, .omit = SL_OMIT_DEF),
    SL_OPT_FORCE(force),
    SL_OPT_WAIT(wait),
    SL_OPT_COMMON,
    SL_OPT_END_,
};

static int rules_parse(struct rules *r, const struct sl_strlist *l, const char *what)
{
    r->v = sl_xcalloc(l->n ? l->n : 1, sizeof(*r->v));
    r->reason = sl_xcalloc(l->n ? l->n : 1, sizeof(*r->reason));
    for (; r->n < l->n; r->n++) {
        int rc = sl_attr_rule_parse(&r->v[r->n], l->v[r->n]);
        if (rc)
            return rc;
        r->reason[r->n] = sl_xasprintf("removed_%s_%s", what, r->v[r->n].name);
    }
    return 0;
}

static void rules_release(struct rules *r)
{
    for (size_t i = 0; i < r->n; i++) {
        sl_attr_rule_release(&r->v[i]);
        free(r->reason[i]);
    }
    free(r->v);
    free(r->reason);
}

/* "FILE:LINE" of attribute file k's current line, in m->where. */
static const char *where(struct mix_run *m, size_t k)
{
    sl_buf_reset(&m->where);
    sl_buf_printf(&m->where, "%s:%llu", m->apath[k],
                  (unsigned long long)sl_jsonl_line_no(m->rd[k]));
    return m->where.data;
}

/* The next line of each attribute file: the attributes of document doc (same id). */
static int next_lines(struct mix_run *m, struct sl_stage_doc *sd, struct sl_doc *doc)
{
    sl_buf_reset(&m->id);
    sl_doc_get_text_form(doc, "id", &m->id);
    for (size_t k = 0; k < m->nattr; k++) {
        const char *line;
        size_t len;
        struct sl_jsonl_line l;
        int rc = sl_jsonl_next_line(m->rd[k], &line, &len, &l);
        if (rc < 0)
            return rc;
        if (rc == 0)
            return sl_err_set(SL_ERR_FORMAT,
                              "attributes '%s' end at line %llu, before document '%s' of "
                              "'%s':%llu\nhint: are they sluice tag's of these inputs?",
                              m->apath[k], (unsigned long long)sl_jsonl_line_no(m->rd[k]),
                              m->id.data, sd->in->path,
                              (unsigned long long)sl_jsonl_line_no(sd->r));
        if (l.outcome == SL_JSONL_TOO_LONG)
            return sl_err_set(SL_ERR_TOOBIG, "%s", l.message);
        rc = sl_attr_line_parse(&m->lines[k], line, len, where(m, k));
        if (!rc && strcmp(m->lines[k].id.data ? m->lines[k].id.data : "", m->id.data))
            rc = sl_err_set(SL_ERR_FORMAT,
                            "%s: attributes of document '%s' where '%s':%llu has '%s'\nhint: "
                            "attributes must list the documents of their input in order",
                            where(m, k), m->lines[k].id.data, sd->in->path,
                            (unsigned long long)sl_jsonl_line_no(sd->r), m->id.data);
        if (rc)
            return rc;
    }
    return 0;
}

/* The attribute file whose line has `name` (the first), or the first file. */
static size_t holder(const struct mix_run *m, const char *name)
{
    for (size_t k = 0; k < m->nattr; k++)
        if (sl_attr_line_has(&m->lines[k], name))
            return k;
    return 0;
}

/* Whether document rule r holds on the current lines; <0 with a message. */
static int holds(struct mix_run *m, const struct sl_attr_rule *r)
{
    size_t k = holder(m, r->name);
    double s;
    int rc = sl_attr_line_score(&m->lines[k], r->name, where(m, k), &s);
    return rc ? rc : sl_attr_rule_holds(r, s);
}

/* The spans of the --remove-spans rules cut out of the text; documents left empty dropped. */
static int cut_spans(struct mix_run *m, struct sl_stage_doc *sd, struct sl_doc *doc)
{
    size_t tlen;
    const char *text = sl_doc_text(doc, &tlen);
    uint64_t nchar = sl_attr_nchar(text, tlen), spans = 0, added, chars;
    for (size_t i = 0; i < m->cut.n; i++) {
        const struct sl_attr_rule *r = &m->cut.v[i];
        size_t k = holder(m, r->name);
        int rc = sl_attr_line_spans(&m->lines[k], r->name, where(m, k));
        if (!rc)
            rc = sl_attr_cuts_add(&m->cuts, &m->lines[k], r, nchar, where(m, k), &added);
        if (rc)
            return rc;
        sl_counters_add(sd->u->c, m->cut.reason[i], added);
        spans += added;
    }
    if (!spans)
        return SL_DOC_KEEP;
    sl_attr_cuts_apply(&m->cuts, text, tlen, &m->text, &chars);
    sl_counters_add(sd->u->c, "characters_removed", chars);
    if (m->text.len == 0)
        return sl_stage_doc_drop(sd, "left_empty");
    sl_counters_add(sd->u->c, "edited_documents", 1);
    int rc = sl_doc_set_text(doc, m->text.data, m->text.len);
    return rc ? rc : SL_DOC_KEEP;
}

int mix_doc(void *arg, struct sl_stage_doc *sd, struct sl_doc *doc)
{
    struct mix_run *m = arg;
    int rc = next_lines(m, sd, doc);
    for (size_t i = 0; !rc && i < m->keep.n; i++) {
        rc = holds(m, &m->keep.v[i]);
        if (rc == 0)
            return sl_stage_doc_drop(sd, m->keep.reason[i]);
        rc = rc < 0 ? rc : 0;
    }
    for (size_t i = 0; !rc && i < m->drop.n; i++) {
        rc = holds(m, &m->drop.v[i]);
        if (rc == 1)
            return sl_stage_doc_drop(sd, m->drop.reason[i]);
    }
    return rc ? rc : cut_spans(m, sd, doc);
}

/* A unit's start: its attribute files open, its reasons counted from zero. */
int mix_begin(void *arg, struct sl_stage_unit *u)
{
    struct mix_run *m = arg;
    const struct rules *all[] = { &m->keep, &m->drop, &m->cut };
    for (size_t g = 0; g < 3; g++)
        for (size_t i = 0; i < all[g]->n; i++)
            sl_counters_add(u->c, all[g]->reason[i], 0);
    sl_counters_add(u->c, "left_empty", 0);
    struct sl_jsonl_opts jo = { .max_line = m->o->max_line, .allow_missing_text = 1 };
    for (size_t k = 0; k < m->nattr; k++) {
        free(m->apath[k]);
        m->apath[k] = sl_xasprintf("%s/%s", m->o->attributes.v[k], u->name);
        int rc = sl_jsonl_open(&m->rd[k], m->apath[k], &jo);
        if (rc)
            return sl_err_wrap(rc, "cannot read the attributes of '%s': ", u->inputs[0].path);
    }
    return 0;
}

/* A unit's end: every attribute file read to its end, and closed. */
int mix_end(void *arg, struct sl_stage_unit *u, int rc)
{
    struct mix_run *m = arg;
    (void)u;
    for (size_t k = 0; k < m->nattr; k++) {
        const char *line;
        size_t len;
        struct sl_jsonl_line l;
        if (!rc && m->rd[k] && sl_jsonl_next_line(m->rd[k], &line, &len, &l) != 0)
            rc = sl_err_set(SL_ERR_FORMAT,
                            "%s: more attributes than documents in '%s'\nhint: are they sluice "
                            "tag's of these inputs?",
                            where(m, k), u->inputs[u->ninputs - 1].path);
        sl_jsonl_close(m->rd[k]);
        m->rd[k] = NULL;
    }
    return rc;
}

static int check(void *opts, const struct sl_strlist *operands)
{
    const struct mix_opts *o = opts;
    if (operands->n == 0)
        return sl_err_set(SL_ERR_USAGE, "no inputs given");
    if (!o->attributes.n && (o->keep_if.n || o->drop_if.n || o->remove_spans.n))
        return sl_err_set(SL_ERR_USAGE, "rules need --attributes");
    if (!o->attributes.n && !o->tokens)
        return sl_err_set(SL_ERR_USAGE, "nothing to do: give --attributes and rules, or --tokens");
    if (!o->tokens && (o->weights.n || o->tokenizer || o->shards))
        return sl_err_set(SL_ERR_USAGE, "--weights, --tokenizer and --shards need --tokens");
    if (!(o->max_epochs > 0) || !(o->bytes_per_token > 0) || o->shards < 0)
        return sl_err_set(SL_ERR_USAGE,
                          "--max-epochs, --bytes-per-token and --shards must be positive");
    double wsum = 0;
    for (size_t i = 0; i < o->weights.n; i++) {
        const char *eq = strchr(o->weights.v[i], '=');
        char *end;
        double v = eq ? strtod(eq + 1, &end) : -1;
        if (!eq || eq == o->weights.v[i] || end == eq + 1 || *end || !(v >= 0) || isinf(v))
            return sl_err_set(SL_ERR_USAGE, "--weights '%s': expected SOURCE=WEIGHT, WEIGHT >= 0",
                              o->weights.v[i]);
        wsum += v;
    }
    if (o->weights.n && !(wsum > 0))
        return sl_err_set(SL_ERR_USAGE, "--weights: every weight is 0");
    const struct sl_strlist *all[] = { &o->keep_if, &o->drop_if, &o->remove_spans };
    for (size_t g = 0; g < 3; g++)
        for (size_t i = 0; i < all[g]->n; i++) {
            struct sl_attr_rule r;
            int rc = sl_attr_rule_parse(&r, all[g]->v[i]);
            sl_attr_rule_release(&r);
            if (rc)
                return rc;
        }
    return 0;
}

static void mix_release(struct mix_run *m)
{
    rules_release(&m->keep);
    rules_release(&m->drop);
    rules_release(&m->cut);
    for (size_t k = 0; k < m->nattr; k++) {
        free(m->apath[k]);
        sl_jsonl_close(m->rd[k]);
        sl_attr_line_release(&m->lines[k]);
    }
    free(m->apath);
    free(m->rd);
    free(m->lines);
    sl_attr_cuts_release(&m->cuts);
    sl_buf_release(&m->text);
    sl_buf_release(&m->where);
    sl_buf_release(&m->id);
}

static int run(const void *opts, const struct sl_strlist *operands, int argc, const char **argv)
{
    const struct mix_opts *o = opts;
    struct sl_world *w = sl_world_get();
    struct mix_run m = { .o = o, .nattr = o->attributes.n };
    m.apath = sl_xcalloc(m.nattr ? m.nattr : 1, sizeof(*m.apath));
    m.rd = sl_xcalloc(m.nattr ? m.nattr : 1, sizeof(*m.rd));
    m.lines = sl_xcalloc(m.nattr ? m.nattr : 1, sizeof(*m.lines));
    for (size_t k = 0; k < m.nattr; k++)
        sl_attr_line_init(&m.lines[k]);
    int rc = rules_parse(&m.keep, &o->keep_if, "keep_if");
    if (!rc)
        rc = rules_parse(&m.drop, &o->drop_if, "drop_if");
    if (!rc)
        rc = rules_parse(&m.cut, &o->remove_spans, "spans");
    struct sl_inputs in = { 0 };
    if (!rc)
        rc = sl_inputs_expand(&in, (const char *const *)operands->v, operands->n, sl_jsonl_exts);
    if (rc) {
        mix_release(&m);
        return rc;
    }
    struct sl_buf settings = SL_BUF_INIT;
    sl_options_settings_json(cmd_mix_options, o, &settings);
    struct sl_stage_docs job = { .files = { .stage = { .stage = "mix",
                                                       .out_dir = o->out,
                                                       .argc = argc,
                                                       .argv = argv,
                                                       .inputs = &in,
                                                       .settings_json = settings.data,
                                                       .force = o->force,
                                                       .wait = o->wait },
                                            .level = (int)o->level },
                                 .jsonl = { .max_line = o->max_line,
                                            .text_key = o->text_key,
                                            .repair_utf8 = o->repair_utf8 },
                                 .begin = mix_begin,
                                 .doc = mix_doc,
                                 .end = mix_end,
                                 .ctx = &m };
    if (o->tokens) {
        rc = mix_budget_run(&m, &in, settings.data, argc, argv);
        goto out;
    }
    struct sl_stage_result res;
    rc = sl_stage_run_docs(w, &job, &res);
    if (!rc && w->rank == 0) {
        uint64_t din = sl_counters_get(&res.totals, "documents_in"),
                 dout = sl_counters_get(&res.totals, "documents_out");
        sl_info("mix: kept %llu of %llu documents in '%s'%s", (unsigned long long)dout,
                (unsigned long long)din, o->out, res.resumed ? " (resumed)" : "");
    }
    sl_stage_result_release(&res);
out:
    sl_buf_release(&settings);
    sl_inputs_release(&in);
    mix_release(&m);
    return rc;
}

const struct sl_cmd cmd_mix = SL_CMD(cmd_mix_usage, cmd_mix_options, struct mix_opts, check, run);
