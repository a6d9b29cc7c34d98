/* sluice mix --tokens: a first pass counts the tokens of each document the rules keep (each
 * rank its own inputs), every rank then works out the same mix (curate/mix/budget.h) from
 * what all ranks counted, and a second pass writes it: output shard k, written by rank
 * k mod ranks, holds entries [k * M / N, (k + 1) * M / N) of the M copies in their seeded
 * order, whatever the number of ranks. A rank keeps its shards' documents in memory while
 * it writes them, and reads every input that holds one of them. */
#include "curate/mix/mix_internal.h"

#include "core/alloc.h"
#include "core/counters.h"
#include "core/err.h"
#include "core/log.h"
#include "core/stage.h"
#include "core/stream.h"
#include "core/world.h"
#include "curate/mix/budget.h"
#include "tokenize/tokenizer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* sources of one run, at most (each is a few counters in the manifest) */
#define MAX_SOURCES 4096

struct budget {
    struct mix_run *m;
    struct tokenizer_enc *enc; /* NULL: --bytes-per-token */
    struct tok_ids ids;
    struct sl_buf src;
    char **names; /* sources: this rank's in pass 1, then everyone's (sorted) */
    size_t nnames;
    struct sl_budget_doc *docs; /* kept documents */
    size_t n, cap;
    uint32_t file;
    uint64_t ordinal; /* of the document being read, in its file */
    /* pass 2: the documents to keep, sorted by (file, ordinal), and their lines */
    struct need {
        uint32_t file;
        uint64_t ordinal, off, len;
    } * need;
    size_t nneed, next;
    struct sl_buf lines;
};

static int source_of(struct budget *b, struct sl_doc *d, uint32_t *idx)
{
    sl_buf_reset(&b->src);
    if (sl_doc_get_str(d, b->m->o->source_key, &b->src) || !b->src.len)
        sl_buf_puts(&b->src, "(none)");
    for (size_t i = 0; i < b->nnames; i++)
        if (!strcmp(b->names[i], b->src.data)) {
            *idx = (uint32_t)i;
            return 0;
        }
    if (b->nnames == MAX_SOURCES)
        return sl_err_set(SL_ERR_TOOBIG, "--tokens: more than %d sources (--source-key '%s')",
                          MAX_SOURCES, b->m->o->source_key);
    b->names = sl_xrealloc(b->names, (b->nnames + 1) * sizeof(*b->names));
    b->names[b->nnames] = sl_xstrdup(b->src.data);
    *idx = (uint32_t)b->nnames++;
    return 0;
}

/* Pass 1: a document the rules keep, with its source and tokens (of its text as cut). */
static int count_doc(void *ctx, struct sl_stage_doc *sd, struct sl_doc *d)
{
    struct budget *b = ctx;
    uint64_t ord = b->ordinal++;
    int rc = mix_doc(b->m, sd, d);
    if (rc != SL_DOC_KEEP)
        return rc;
    size_t len;
    const char *text = sl_doc_text(d, &len);
    uint64_t tokens;
    if (b->enc) {
        b->ids.n = 0;
        rc = tokenizer_encode(b->enc, text, len, &b->ids);
        tokens = b->ids.n;
    } else {
        tokens = (uint64_t)ceil((double)len / b->m->o->bytes_per_token);
    }
    uint32_t s = 0;
    if (!rc)
        rc = source_of(b, d, &s);
    if (rc)
        return rc;
    if (b->n == b->cap) {
        b->cap = b->cap ? 2 * b->cap : 1024;
        b->docs = sl_xrealloc(b->docs, b->cap * sizeof(*b->docs));
    }
    b->docs[b->n++] = (struct sl_budget_doc){ b->file, s, ord, tokens };
    return SL_DOC_WRITTEN; /* counted when the mix is made */
}

/* Pass 2: the lines of the documents this rank's shards hold. */
static int keep_doc(void *ctx, struct sl_stage_doc *sd, struct sl_doc *d)
{
    struct budget *b = ctx;
    uint64_t ord = b->ordinal++;
    int rc = mix_doc(b->m, sd, d);
    if (rc != SL_DOC_KEEP)
        return rc;
    struct need *nd = b->next < b->nneed ? &b->need[b->next] : NULL;
    if (nd && nd->file == b->file && nd->ordinal == ord) {
        nd->off = b->lines.len;
        rc = sl_doc_serialize(d, &b->lines);
        nd->len = b->lines.len - nd->off;
        b->next++;
    }
    return rc ? rc : SL_DOC_WRITTEN;
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int cmp_need(const void *a, const void *b)
{
    const struct need *x = a, *y = b;
    if (x->file != y->file)
        return x->file < y->file ? -1 : 1;
    return x->ordinal < y->ordinal ? -1 : x->ordinal > y->ordinal;
}

/* Every rank's sources (sorted, unique) and kept documents, their sources renumbered. */
static int gather(struct budget *b, const struct sl_world *w)
{
    struct sl_buf mine = SL_BUF_INIT, all = SL_BUF_INIT;
    for (size_t i = 0; i < b->nnames; i++)
        sl_buf_append(&mine, b->names[i], strlen(b->names[i]) + 1);
    int rc = sl_world_allgather_bytes(w, mine.data, mine.len, &all, NULL);
    char **names = NULL;
    size_t n = 0;
    for (size_t off = 0; !rc && off < all.len; off += strlen(all.data + off) + 1) {
        names = sl_xrealloc(names, (n + 1) * sizeof(*names));
        names[n++] = all.data + off;
    }
    if (n)
        qsort(names, n, sizeof(*names), cmp_name);
    size_t u = 0;
    for (size_t i = 0; i < n; i++)
        if (!u || strcmp(names[u - 1], names[i]))
            names[u++] = names[i];
    for (size_t i = 0; i < b->n; i++) {
        const char *nm = b->names[b->docs[i].source];
        char **hit = bsearch(&nm, names, u, sizeof(*names), cmp_name);
        b->docs[i].source = (uint32_t)(hit - names);
    }
    for (size_t i = 0; i < b->nnames; i++)
        free(b->names[i]);
    b->names = sl_xrealloc(b->names, (u ? u : 1) * sizeof(*b->names));
    for (size_t i = 0; i < u; i++)
        b->names[i] = sl_xstrdup(names[i]);
    b->nnames = u;
    free(names);
    sl_buf_reset(&all);
    if (!rc)
        rc = sl_world_allgather_bytes(w, b->docs, b->n * sizeof(*b->docs), &all, NULL);
    if (!rc) {
        free(b->docs);
        b->n = b->cap = all.len / sizeof(*b->docs);
        b->docs = (struct sl_budget_doc *)sl_buf_detach(&all, NULL);
    }
    sl_buf_release(&mine);
    sl_buf_release(&all);
    return rc;
}

/* Each source's weight: --weights SRC=W, else 1 (0 for sources --weights leaves out). */
static void weights(const struct budget *b, struct sl_budget_source *src)
{
    const struct sl_strlist *wl = &b->m->o->weights;
    for (size_t s = 0; s < b->nnames; s++)
        src[s].weight = wl->n ? 0 : 1;
    for (size_t i = 0; i < wl->n; i++) { /* checked by the command: SOURCE=WEIGHT */
        const char *eq = strchr(wl->v[i], '=');
        double v = strtod(eq + 1, NULL);
        for (size_t s = 0; s < b->nnames; s++)
            if (strlen(b->names[s]) == (size_t)(eq - wl->v[i]) &&
                !strncmp(b->names[s], wl->v[i], (size_t)(eq - wl->v[i])))
                src[s].weight = v;
    }
}

static int budget_begin(void *ctx, struct sl_stage_unit *u)
{
    return mix_begin(((struct budget *)ctx)->m, u);
}

static int budget_end(void *ctx, struct sl_stage_unit *u, int rc)
{
    return mix_end(((struct budget *)ctx)->m, u, rc);
}

/* Read the inputs as a stage reads them, each with the unit of its shard number. */
static int read_inputs(struct budget *b, const struct sl_inputs *in, const uint8_t *want,
                       int (*doc)(void *, struct sl_stage_doc *, struct sl_doc *),
                       struct sl_counters *c)
{
    const struct mix_opts *o = b->m->o;
    struct sl_stage_docs job = { .jsonl = { .max_line = o->max_line,
                                            .text_key = o->text_key,
                                            .repair_utf8 = o->repair_utf8 },
                                 .begin = budget_begin,
                                 .doc = doc,
                                 .end = budget_end,
                                 .ctx = b };
    int rc = 0;
    for (size_t i = 0; i < in->n && !rc; i++) {
        if (!want[i])
            continue;
        char *name = sl_stage_shard_name(i, ".jsonl.zst");
        struct sl_stage_unit u = {
            .index = i, .inputs = &in->v[i], .ninputs = 1, .name = name, .c = c
        };
        b->file = (uint32_t)i;
        b->ordinal = 0;
        rc = sl_stage_docs_read_unit(&job, &u);
        free(name);
    }
    return rc;
}

/* The documents of this rank's shards not written yet (pass 2), sorted; want[i]: input i
 * holds one. */
static void plan_needs(struct budget *b, struct sl_stage *st, const struct sl_budget_entry *e,
                       size_t ne, size_t nshards, const struct sl_world *w, uint8_t *want)
{
    for (size_t k = (size_t)w->rank; k < nshards; k += (size_t)w->size) {
        char *name = sl_stage_shard_name(k, ".jsonl.zst");
        int done = sl_stage_done(st, name);
        free(name);
        for (size_t j = k * ne / nshards; !done && j < (k + 1) * ne / nshards; j++) {
            b->need = b->nneed % 1024 ? b->need
                                      : sl_xrealloc(b->need, (b->nneed + 1024) * sizeof(*b->need));
            b->need[b->nneed++] = (struct need){ .file = e[j].file, .ordinal = e[j].ordinal };
            want[e[j].file] = 1;
        }
    }
    if (b->nneed)
        qsort(b->need, b->nneed, sizeof(*b->need), cmp_need);
    size_t u = 0; /* copies of a document are one need */
    for (size_t i = 0; i < b->nneed; i++)
        if (!u || cmp_need(&b->need[u - 1], &b->need[i]))
            b->need[u++] = b->need[i];
    b->nneed = u;
}

/* Write this rank's shards that are not complete, entries in their order. */
static int write_shards(struct budget *b, struct sl_stage *st, const struct sl_budget_entry *e,
                        size_t ne, size_t nshards, const struct sl_world *w)
{
    struct sl_writer_opts wo = { .codec = SL_CODEC_ZSTD, .level = (int)b->m->o->level };
    int rc = 0;
    for (size_t k = (size_t)w->rank; k < nshards && !rc; k += (size_t)w->size) {
        char *name = sl_stage_shard_name(k, ".jsonl.zst"),
             *path = sl_stage_shard_path(st, k, ".jsonl.zst");
        struct sl_writer *wr = NULL;
        struct sl_counters c;
        sl_counters_init(&c);
        sl_counters_add(&c, "documents_in", 0);
        sl_counters_add(&c, "documents_out", 0);
        if (!sl_stage_done(st, name))
            rc = sl_writer_open(&wr, path, &wo);
        for (size_t j = k * ne / nshards; wr && !rc && j < (k + 1) * ne / nshards; j++) {
            struct need key = { .file = e[j].file, .ordinal = e[j].ordinal };
            const struct need *nd = bsearch(&key, b->need, b->nneed, sizeof(*b->need), cmp_need);
            rc = sl_writer_write(wr, b->lines.data + nd->off, nd->len);
            if (!rc)
                rc = sl_writer_write(wr, "\n", 1);
            sl_counters_add(&c, "documents_out", 1);
        }
        if (wr && !rc)
            rc = sl_stage_commit_shard(st, name, &wr, &c);
        sl_writer_abort(wr);
        sl_counters_release(&c);
        free(name);
        free(path);
    }
    return rc;
}

/* The realised mix, per source, and what became of the documents the rules kept, into c:
 * not_sampled (no copy) and repeated_copies (copies past a document's first), so that
 * documents_in = the removals + not_sampled + documents_out - repeated_copies. */
static void count_mix(const struct budget *b, const struct sl_budget_source *src,
                      const struct sl_budget_entry *e, size_t ne, struct sl_counters *c)
{
    static const char *const what[] = { "documents", "tokens", "target_tokens",
                                        "available_documents", "available_tokens" };
    char key[320];
    uint64_t kept = 0, distinct = 0;
    for (size_t s = 0; s < b->nnames; s++) {
        uint64_t v[] = { src[s].out_docs, src[s].out_tokens, src[s].target, src[s].docs,
                         src[s].tokens };
        for (size_t k = 0; k < 5; k++) {
            snprintf(key, sizeof(key), "mix_%s_%s", b->names[s], what[k]);
            sl_counters_add(c, key, v[k]);
        }
        kept += src[s].docs;
    }
    for (size_t j = 0; j < ne; j++)
        distinct += e[j].copy == 0;
    sl_counters_add(c, "not_sampled", kept - distinct);
    sl_counters_add(c, "repeated_copies", ne - distinct);
}

/* Both passes (after the stage began); rc of this rank, peers' failures as SL_ERR_PEER. */
static int budget_passes(struct budget *b, struct sl_stage *st, const struct sl_inputs *in,
                         struct sl_counters *extra)
{
    const struct mix_opts *o = b->m->o;
    struct sl_world *w = st->world;
    uint8_t *want = sl_xcalloc(in->n ? in->n : 1, 1);
    uint64_t *sizes = sl_xcalloc(in->n ? in->n : 1, sizeof(*sizes));
    int *owner = sl_xcalloc(in->n ? in->n : 1, sizeof(*owner));
    for (size_t i = 0; i < in->n; i++)
        sizes[i] = in->v[i].size;
    sl_assign_by_size(sizes, in->n, w->size, owner);
    for (size_t i = 0; i < in->n; i++)
        want[i] = owner[i] == w->rank;
    int rc = read_inputs(b, in, want, count_doc, extra);
    int64_t bad = rc != 0;
    sl_world_allreduce_i64(w, &bad, 1, SL_MAX);
    struct sl_budget_entry *e = NULL;
    size_t ne = 0, nshards = o->shards ? (size_t)o->shards : (in->n ? in->n : 1);
    struct sl_budget_source *src = NULL;
    if (!bad)
        rc = gather(b, w);
    if (!bad && !rc) {
        src = sl_xcalloc(b->nnames ? b->nnames : 1, sizeof(*src));
        weights(b, src);
        rc = sl_budget_select(b->docs, b->n, src, b->nnames, o->tokens, o->max_epochs, o->seed, &e,
                              &ne);
    }
    if (!bad && !rc) { /* the same on every rank: no rank goes on alone */
        sl_world_reduce_counters(w, extra, 0);
        count_mix(b, src, e, ne, extra);
        memset(want, 0, in->n ? in->n : 1);
        plan_needs(b, st, e, ne, nshards, w, want);
        struct sl_counters again; /* pass 1 counted these documents */
        sl_counters_init(&again);
        rc = read_inputs(b, in, want, keep_doc, &again);
        sl_counters_release(&again);
        if (!rc && b->next != b->nneed)
            rc = sl_err_set(SL_ERR_STATE, "mix: the inputs changed between the two passes");
        if (!rc)
            rc = write_shards(b, st, e, ne, nshards, w);
    }
    if (bad && !rc)
        rc = sl_err_set(SL_ERR_PEER, "another rank failed");
    free(src);
    free(e);
    free(want);
    free(sizes);
    free(owner);
    return rc;
}

int mix_budget_run(struct mix_run *m, const struct sl_inputs *in, const char *settings, int argc,
                   const char **argv)
{
    const struct mix_opts *o = m->o;
    struct sl_world *w = sl_world_get();
    struct budget b = { .m = m };
    struct tokenizer *tok = NULL;
    int rc = o->tokenizer ? tokenizer_open(&tok, o->tokenizer) : 0;
    if (rc)
        return rc;
    if (tok)
        b.enc = tokenizer_enc_new(tok);
    struct sl_stage st;
    struct sl_stage_cfg cfg = { .stage = "mix",
                                .out_dir = o->out,
                                .argc = argc,
                                .argv = argv,
                                .inputs = in,
                                .settings_json = settings,
                                .force = o->force,
                                .wait = o->wait,
                                .rereads_inputs = 1 };
    rc = sl_stage_begin(&st, w, &cfg);
    if (!rc) {
        struct sl_counters extra, totals;
        sl_counters_init(&extra);
        sl_counters_init(&totals);
        rc = budget_passes(&b, &st, in, &extra);
        int64_t bad = rc != 0;
        sl_world_allreduce_i64(w, &bad, 1, SL_MAX);
        size_t nshards = o->shards ? (size_t)o->shards : (in->n ? in->n : 1);
        char **names = sl_xcalloc(nshards, sizeof(*names));
        for (size_t k = 0; k < nshards; k++)
            names[k] = sl_stage_shard_name(k, ".jsonl.zst");
        if (!bad)
            rc = sl_stage_finish(&st, names, nshards, &extra, &totals);
        else if (!rc)
            rc = sl_err_set(SL_ERR_PEER, "another rank failed");
        if (!rc && w->rank == 0)
            sl_info("mix: %llu documents, %llu tokens from %zu sources in '%s'%s",
                    (unsigned long long)sl_counters_get(&totals, "documents_out"),
                    (unsigned long long)o->tokens, b.nnames, o->out,
                    st.resumed ? " (resumed)" : "");
        for (size_t k = 0; k < nshards; k++)
            free(names[k]);
        free(names);
        sl_counters_release(&extra);
        sl_counters_release(&totals);
        sl_stage_release(&st);
    }
    for (size_t i = 0; i < b.nnames; i++)
        free(b.names[i]);
    free(b.names);
    free(b.docs);
    free(b.need);
    free(b.ids.v);
    sl_buf_release(&b.src);
    sl_buf_release(&b.lines);
    tokenizer_enc_free(b.enc);
    tokenizer_free(tok);
    return rc;
}
