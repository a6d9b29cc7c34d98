/* sluice tokenizer train (punkt-train: tokenize/cmd_punkt.c): SentencePiece models from JSONL or
 * text, with sentences sampled uniformly by a keyed reservoir (each sentence gets a pseudo-random
 * key from the seed, its file and its position; the sample is the N smallest keys, fed to the
 * trainer in input order), so memory is bounded by the sample and the result depends only on the
 * inputs and the settings; and byte-level BPE (tokenize/bpe_train.h) from streamed
 * pre-token counts, written as tokenizer.json and tiktoken ranks. Rank 0 does the work
 * under mpirun. */
#include "tokenize/commands.h"

#include "core/alloc.h"
#include "core/atomic.h"
#include "core/atomic.h"
#include "core/buf.h"
#include "core/err.h"
#include "core/hash.h"
#include "core/inputs.h"
#include "core/jsonl.h"
#include "core/log.h"
#include "core/options.h"
#include "core/progress.h"
#include "core/rng.h"
#include "core/stream.h"
#include "core/utf8.h"
#include "core/world.h"
#include "tokenize/bpe_train.h"
#include "tokenize/hf_write.h"
#include "tokenize/spm_train.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *const cmd_tokenizer_usage[] = {
    "sluice tokenizer train --model-type bpe|unigram|char|word|byte-bpe --vocab-size N --out "
    "PREFIX [options] IN...",
    "sluice tokenizer punkt-train --out DIR [options] IN...",
    "",
    "Train tokenizers: 'train' a SentencePiece model (or a byte-level BPE) for `sluice",
    "tokenize --tokenizer`; 'punkt-train' the parameters of NLTK's Punkt sentence splitter",
    "for `sluice tokenize --split-sentences --punkt DIR`. 'sluice tokenizer train -h' and",
    "'sluice tokenizer punkt-train -h' show their options.",
    NULL,
};

const char *const cmd_tokenizer_train_usage[] = {
    "sluice tokenizer train --model-type bpe|unigram|char|word|byte-bpe --vocab-size N --out "
    "PREFIX [options] IN...",
    "",
    "Train a SentencePiece model on JSONL documents (each line of a document's text is a",
    "sentence) or text files (.txt, one sentence a line), writing PREFIX.model and",
    "PREFIX.vocab. Up to --input-sentence-size sentences are sampled uniformly from all",
    "input. Special ids default to NeMo's: pad 0, unk 1, bos 2, eos 3 (-1 disables one).",
    "",
    "--model-type byte-bpe trains a byte-level BPE (GPT-2 style) on whole documents (text",
    "files: each line with its newline), pre-tokenized by --pattern, and writes",
    "PREFIX.tokenizer.json (Hugging Face tokenizers) and PREFIX.tiktoken (+ its sidecar",
    "PREFIX.tiktoken.json), which `sluice tokenize --tokenizer tiktoken:PREFIX.tiktoken` reads.",
    "Ids: the --special-tokens, the 256 bytes, then the merges.",
    NULL,
};

/* the longest sentence (line) fed to SentencePiece */
#define MAX_SENTENCE_CAP 65536

struct opts {
    const char *model_type, *out, *key, *uds, *control, *pattern, *specials;
    uint64_t vocab_size, sample, max_len, seed, min_freq, max_pretokens;
    double coverage;
    long pad, unk, bos, eos, threads;
    int byte_fallback, split_digits;
    struct sl_strlist extra;
};

struct sent {
    uint64_t key, order;
    char *s;
};

struct reservoir {
    struct sent *h; /* max-heap on key when full */
    size_t n, cap;
    uint64_t seen, too_long;
};

static void sift_down(struct sent *h, size_t n, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, m = i;
        if (l < n && h[l].key > h[m].key)
            m = l;
        if (l + 1 < n && h[l + 1].key > h[m].key)
            m = l + 1;
        if (m == i)
            return;
        struct sent t = h[i];
        h[i] = h[m];
        h[m] = t;
        i = m;
    }
}

static void sift_up(struct sent *h, size_t i)
{
    while (i > 0 && h[(i - 1) / 2].key < h[i].key) {
        struct sent t = h[i];
        h[i] = h[(i - 1) / 2];
        h[(i - 1) / 2] = t;
        i = (i - 1) / 2;
    }
}

static void offer(struct reservoir *r, const struct opts *o, uint64_t order, const char *s,
                  size_t n)
{
    while (n && (s[n - 1] == '\r' || s[n - 1] == '\n'))
        n--;
    if (n == 0)
        return;
    if (n > o->max_len) {
        r->too_long++;
        return;
    }
    r->seen++;
    uint64_t st = o->seed ^ (order * 0x9E3779B97F4A7C15ull);
    uint64_t key = sl_splitmix64(&st);
    if (o->sample && r->n == o->sample) {
        if (key >= r->h[0].key)
            return;
        free(r->h[0].s);
        r->h[0] = (struct sent){ key, order, sl_xstrndup(s, n) };
        sift_down(r->h, r->n, 0);
        return;
    }
    if (r->n == r->cap) {
        r->cap = r->cap ? r->cap * 2 : 4096;
        r->h = sl_xrealloc(r->h, r->cap * sizeof(*r->h));
    }
    r->h[r->n] = (struct sent){ key, order, sl_xstrndup(s, n) };
    sift_up(r->h, r->n);
    r->n++;
}

/* Offer every line of text. */
static void offer_lines(struct reservoir *r, const struct opts *o, uint64_t *order, const char *t,
                        size_t n)
{
    const char *p = t, *end = t + n;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        offer(r, o, (*order)++, p, (size_t)(le - p));
        p = le + 1;
    }
}

static int is_text_file(const char *path)
{
    const char *ends[] = { ".txt", ".txt.gz", ".txt.zst", ".txt.bz2" };
    size_t n = strlen(path);
    for (size_t i = 0; i < 4; i++) {
        size_t m = strlen(ends[i]);
        if (n >= m && !strcmp(path + n - m, ends[i]))
            return 1;
    }
    return 0;
}

static int by_order(const void *a, const void *b)
{
    const struct sent *x = a, *y = b;
    return x->order < y->order ? -1 : x->order > y->order;
}

/* A text callback, for sl_input_docs. */
struct text_fn {
    void (*fn)(void *ctx, const char *t, size_t n);
    void *ctx;
};

static int each_text(void *arg, struct sl_jsonl_reader *r, struct sl_doc *d)
{
    const struct text_fn *f = arg;
    size_t n;
    const char *t = sl_doc_text(d, &n);
    (void)r;
    if (t)
        f->fn(f->ctx, t, n);
    return 0;
}

/* Call fn with the text of each document of a JSONL input (documents without one are
 * passed over; damaged lines are reported through on_skip). */
static int each_jsonl_text(const struct opts *o, const struct sl_input *in,
                           void (*fn)(void *ctx, const char *t, size_t n), void *ctx)
{
    struct sl_jsonl_opts jo = {
        .text_key = o->key, .allow_missing_text = 1, .repair_utf8 = 1, .on_skip = sl_warn_skip
    };
    struct text_fn f = { fn, ctx };
    return sl_input_docs(in, &jo, each_text, &f);
}

struct sample_ctx {
    struct reservoir *r;
    const struct opts *o;
    uint64_t *order;
};

static void sample_text(void *ctx, const char *t, size_t n)
{
    struct sample_ctx *sc = ctx;
    offer_lines(sc->r, sc->o, sc->order, t, n);
}

static int sample_inputs(const struct opts *o, const struct sl_inputs *in, struct reservoir *r)
{
    int rc = 0;
    struct sl_progress prog;
    sl_progress_start(&prog, "tokenizer train: sampling", sl_inputs_total_size(in), 1, 1);
    uint64_t done = 0;
    for (size_t f = 0; f < in->n && !rc; f++) {
        uint64_t order = (uint64_t)f << 40;
        if (is_text_file(in->v[f].path)) {
            struct sl_reader *rd;
            rc = sl_input_reader(&rd, &in->v[f], NULL);
            const char *line;
            size_t len;
            while (!rc) {
                int got = sl_reader_getline(rd, &line, &len, o->max_len * 4 + 1024);
                if (got == SL_ERR_TOOBIG) {
                    r->too_long++;
                    order++;
                    continue;
                }
                if (got < 0)
                    rc = got;
                if (got <= 0)
                    break;
                offer(r, o, order++, line, len);
            }
            if (!rc)
                sl_reader_close(rd);
        } else {
            struct sample_ctx sc = { r, o, &order };
            rc = each_jsonl_text(o, &in->v[f], sample_text, &sc);
        }
        done += in->v[f].size;
        sl_progress_update(&prog, done, r->seen);
    }
    sl_progress_finish(&prog);
    return rc;
}

/* A message of the SentencePiece trainer with its flag names (--character_coverage) turned
 * into this command's (--character-coverage). Static buffer. */
static const char *ours(const char *msg)
{
    static const char *const map[][2] = {
        { "--model_type", "--model-type" },
        { "--vocab_size", "--vocab-size" },
        { "--character_coverage", "--character-coverage" },
        { "--byte_fallback", "--byte-fallback" },
        { "--split_digits", "--split-digits" },
        { "--user_defined_symbols", "--user-defined-symbols" },
        { "--control_symbols", "--control-symbols" },
        { "--pad_id", "--pad-id" },
        { "--unk_id", "--unk-id" },
        { "--bos_id", "--bos-id" },
        { "--eos_id", "--eos-id" },
        { "--max_sentence_length", "--max-sentence-length" },
        { "--num_threads", "--threads" },
    };
    static char out[SL_ERR_MSG_MAX + 256];
    size_t n = 0;
    for (const char *p = msg; *p && n + 32 < sizeof(out);) {
        size_t k = 0, nmap = sizeof(map) / sizeof(map[0]);
        while (k < nmap && strncmp(p, map[k][0], strlen(map[k][0])) != 0)
            k++;
        /* a whole flag name only: "--pad_id" but not "--pad_identity" */
        if (k < nmap &&
            !(isalnum((unsigned char)p[strlen(map[k][0])]) || p[strlen(map[k][0])] == '_')) {
            n += (size_t)snprintf(out + n, sizeof(out) - n, "%s", map[k][1]);
            p += strlen(map[k][0]);
        } else {
            out[n++] = *p++;
        }
    }
    out[n] = '\0';
    return out;
}

/* ---- byte-level BPE ----------------------------------------------------------------- */

/* the longest pre-token counted (longer ones are skipped and counted) */
#define BBPE_MAX_PIECE 65536

struct count_ctx {
    struct bpe_counts *c;
    uint64_t *docs;
};

static void count_text(void *ctx, const char *t, size_t n)
{
    struct count_ctx *cc = ctx;
    bpe_counts_add_text(cc->c, t, n);
    (*cc->docs)++;
}

static int count_inputs(const struct opts *o, const struct sl_inputs *in, struct bpe_counts *c,
                        uint64_t *docs)
{
    int rc = 0;
    struct sl_progress prog;
    sl_progress_start(&prog, "tokenizer train: counting", sl_inputs_total_size(in), 1, 1);
    uint64_t done = 0;
    struct sl_buf line = SL_BUF_INIT;
    for (size_t f = 0; f < in->n && !rc; f++) {
        if (is_text_file(in->v[f].path)) {
            struct sl_reader *rd;
            rc = sl_input_reader(&rd, &in->v[f], NULL);
            const char *l;
            size_t len;
            while (!rc) {
                int got = sl_reader_getline(rd, &l, &len, (size_t)256 << 20);
                if (got == SL_ERR_TOOBIG) {
                    sl_warn_limited("long line", 20, "'%s' line %llu: longer than 256 MiB, skipped",
                                    in->v[f].path, (unsigned long long)sl_reader_line_no(rd));
                    continue;
                }
                if (got < 0)
                    rc = got;
                if (got <= 0)
                    break;
                sl_buf_reset(&line);
                sl_buf_append(&line, l, len);
                sl_buf_putc(&line, '\n');
                bpe_counts_add_text(c, line.data, line.len);
                (*docs)++;
            }
            if (!rc)
                sl_reader_close(rd);
        } else {
            struct count_ctx cc = { c, docs };
            rc = each_jsonl_text(o, &in->v[f], count_text, &cc);
        }
        done += in->v[f].size;
        sl_progress_update(&prog, done, *docs);
    }
    sl_buf_release(&line);
    sl_progress_finish(&prog);
    return rc;
}

/* Write the three files of a byte-level BPE under PREFIX, each atomically. */
static int write_byte_bpe(const struct bpe_model *m, const char *prefix)
{
    struct sl_buf js = SL_BUF_INIT, ranks = SL_BUF_INIT, side = SL_BUF_INIT;
    int rc = hf_write_tokenizer_json(m, &js);
    rc = rc ? rc : hf_write_tiktoken(m, &ranks, &side);
    char *p1 = sl_xasprintf("%s.tokenizer.json", prefix), *p2 = sl_xasprintf("%s.tiktoken", prefix),
         *p3 = sl_xasprintf("%s.tiktoken.json", prefix);
    /* the sidecar first: a rank file is never read without it */
    rc = rc ? rc : sl_write_file_atomic(p3, side.data, side.len);
    rc = rc ? rc : sl_write_file_atomic(p2, ranks.data, ranks.len);
    rc = rc ? rc : sl_write_file_atomic(p1, js.data, js.len);
    free(p1);
    free(p2);
    free(p3);
    sl_buf_release(&js);
    sl_buf_release(&ranks);
    sl_buf_release(&side);
    return rc;
}

/* Split "A,B" into s (empty items are kept, to be refused by the trainer). */
static void split_commas(const char *list, struct sl_strlist *s)
{
    if (!list || !*list)
        return;
    const char *p = list;
    for (;;) {
        const char *c = strchr(p, ',');
        char *item = sl_xstrndup(p, c ? (size_t)(c - p) : strlen(p));
        sl_strlist_push(s, item);
        free(item);
        if (!c)
            break;
        p = c + 1;
    }
}

static int run_byte_bpe(const struct opts *o, const struct sl_inputs *in)
{
    int k = pretok_from_name(o->pattern, strlen(o->pattern));
    enum pretok_kind kind = k < 0 ? PRETOK_GPT2 : (enum pretok_kind)k;
    struct bpe_counts *c = bpe_counts_new(kind, (size_t)o->max_pretokens, BBPE_MAX_PIECE);
    uint64_t docs = 0;
    int rc = count_inputs(o, in, c, &docs);
    struct bpe_counts_stats st;
    bpe_counts_stats(c, &st);
    if (!rc && st.distinct == 0)
        rc = sl_err_set(SL_ERR_FORMAT, "no text in the input to train on");
    if (!rc) {
        sl_info(
            "tokenizer train: %llu texts, %llu pre-tokens (%s pattern), %llu distinct kept; "
            "%llu pruned in %llu prunings (%llu occurrences), %llu longer than %d bytes skipped",
            (unsigned long long)docs, (unsigned long long)st.pieces, pretok_name(kind),
            (unsigned long long)st.distinct, (unsigned long long)st.pruned,
            (unsigned long long)st.prunings, (unsigned long long)st.pruned_mass,
            (unsigned long long)st.too_long, BBPE_MAX_PIECE);
        if (st.prunings)
            sl_warn(
                "tokenizer train: the pre-token table filled up (--max-pretokens %llu): counts of "
                "rare pre-tokens were dropped",
                (unsigned long long)o->max_pretokens);
    }
    struct sl_strlist sp = { 0 };
    split_commas(o->specials, &sp);
    struct bpe_model m;
    memset(&m, 0, sizeof(m));
    if (!rc) {
        struct bpe_train_opts to = { (uint32_t)o->vocab_size, o->min_freq,
                                     (const char *const *)sp.v, sp.n };
        rc = bpe_train(c, &to, &m);
    }
    if (!rc) {
        if (m.n_vocab < o->vocab_size)
            sl_warn("tokenizer train: the vocabulary has %u tokens, fewer than %llu: no more pairs "
                    "to merge",
                    m.n_vocab, (unsigned long long)o->vocab_size);
        rc = write_byte_bpe(&m, o->out);
    }
    if (!rc)
        sl_info(
            "tokenizer train: %u merges, vocabulary %u; wrote '%s.tokenizer.json', '%s.tiktoken' "
            "and '%s.tiktoken.json'",
            m.n_merges, m.n_vocab, o->out, o->out, o->out);
    bpe_model_release(&m);
    sl_strlist_release(&sp);
    bpe_counts_free(c);
    return rc;
}

/* rank 0 trains (rank0) */
static int run(const void *opts, const struct sl_strlist *operands, int argc, const char **argv)
{
    const struct opts *o = opts;
    static const char *const exts[] = { ".jsonl",     ".jsonl.zst", ".jsonl.gz", ".json.gz",
                                        ".jsonl.bz2", ".txt",       ".txt.gz",   ".txt.zst",
                                        ".parquet",   NULL };
    struct sl_inputs in;
    int rc = sl_inputs_expand(&in, (const char *const *)operands->v, operands->n, exts);
    if (rc)
        return rc;
    /* the output directory before the training, not after it */
    if ((rc = sl_prepare_out_prefix(o->out)) != 0) {
        sl_inputs_release(&in);
        return rc;
    }
    if (!strcmp(o->model_type, "byte-bpe")) {
        rc = run_byte_bpe(o, &in);
        sl_inputs_release(&in);
        return rc;
    }
    struct reservoir r;
    memset(&r, 0, sizeof(r));
    rc = sample_inputs(o, &in, &r);
    if (!rc && r.n == 0)
        rc = sl_err_set(SL_ERR_FORMAT, "no sentences in the input to train on");
    if (!rc) {
        qsort(r.h, r.n, sizeof(*r.h), by_order);
        const char **s = sl_xcalloc(r.n, sizeof(char *));
        for (size_t i = 0; i < r.n; i++)
            s[i] = r.h[i].s;
        struct sl_strlist a = { 0 };
        char buf[512];
#define ARG(...) (snprintf(buf, sizeof(buf), __VA_ARGS__), sl_strlist_push(&a, buf))
        ARG("--model_type=%s", o->model_type);
        ARG("--vocab_size=%llu", (unsigned long long)o->vocab_size);
        ARG("--character_coverage=%.6g", o->coverage);
        ARG("--pad_id=%ld", o->pad);
        ARG("--unk_id=%ld", o->unk);
        ARG("--bos_id=%ld", o->bos);
        ARG("--eos_id=%ld", o->eos);
        ARG("--byte_fallback=%s", o->byte_fallback ? "true" : "false");
        ARG("--split_digits=%s", o->split_digits ? "true" : "false");
        ARG("--max_sentence_length=%llu", (unsigned long long)o->max_len);
        ARG("--input_sentence_size=0");
        ARG("--shuffle_input_sentence=false");
        ARG("--num_threads=%ld", o->threads > 0 ? o->threads : sysconf(_SC_NPROCESSORS_ONLN));
        if (o->uds)
            ARG("--user_defined_symbols=%s", o->uds);
        if (o->control)
            ARG("--control_symbols=%s", o->control);
        if (sl_log_level() < SL_LOG_DEBUG)
            ARG("--minloglevel=1");
        for (size_t i = 0; i < o->extra.n; i++)
            ARG("--%s", o->extra.v[i]);
#undef ARG
        sl_info("tokenizer train: %zu sentences sampled of %llu (%llu longer than %llu bytes "
                "skipped); training %s, vocabulary %llu",
                r.n, (unsigned long long)r.seen, (unsigned long long)r.too_long,
                (unsigned long long)o->max_len, o->model_type, (unsigned long long)o->vocab_size);
        rc = spm_train_sentences(s, r.n, (const char *const *)a.v, a.n, o->out);
        if (rc)
            rc = sl_err_set(rc, "%s", ours(sl_err_msg()));
        else
            sl_info("tokenizer train: wrote '%s.model' and '%s.vocab'", o->out, o->out);
        free(s);
        sl_strlist_release(&a);
    }
    for (size_t i = 0; i < r.n; i++)
        free(r.h[i].s);
    free(r.h);
    sl_inputs_release(&in);
    return rc;
}

/* The options' table: the dispatcher's parser and -h, and the pipeline's tokenizer_train
 * keys (the byte-bpe options are not pipeline keys). */
#define SL_OPT_STRUCT struct opts

const struct sl_option cmd_tokenizer_train_options[] = {
    SL_OPT_CHOICE(0, "model-type", model_type, "unigram|bpe|char|word|byte-bpe", "model type",
                  .def = "unigram"),
    SL_OPT_UINT64(0, "vocab-size", vocab_size, "N", "vocabulary size", .required = 1),
    SL_OPT_STRING('o', "out", out, "PREFIX", "writes PREFIX.model and PREFIX.vocab", .required = 1),
    SL_OPT_STRING(0, "json-key", key, "KEY", "member of JSONL documents with the text",
                  .def = "text"),
    SL_OPT_UINT64(0, "input-sentence-size", sample, "N",
                  "sentences sampled uniformly from all input (default 1000000; 0: all)",
                  .def = "1000000", .flags = SL_OPTF_DEF_UNSAID),
    SL_OPT_UINT64(0, "seed", seed, "N", "seed of the sample", .def = "0"),
    SL_OPT_DOUBLE(0, "character-coverage", coverage, "F", "characters covered", .def = "0.9995"),
    SL_OPT_FLAG_(0, "byte-fallback", byte_fallback, "unknown characters as <0xNN> byte pieces"),
    SL_OPT_FLAG_(0, "split-digits", split_digits, "every digit is its own piece"),
    SL_OPT_STRING(0, "user-defined-symbols", uds, "A,B", "pieces always kept whole",
                  .flags = SL_OPTF_LIST),
    SL_OPT_STRING(0, "control-symbols", control, "A,B", "control pieces", .flags = SL_OPTF_LIST),
    SL_OPT_INTEGER(0, "pad-id", pad, "ID", "default 0", .def = "0", .flags = SL_OPTF_DEF_UNSAID),
    SL_OPT_INTEGER(0, "unk-id", unk, "ID", "default 1", .def = "1", .flags = SL_OPTF_DEF_UNSAID),
    SL_OPT_INTEGER(0, "bos-id", bos, "ID", "default 2", .def = "2", .flags = SL_OPTF_DEF_UNSAID),
    SL_OPT_INTEGER(0, "eos-id", eos, "ID", "default 3", .def = "3", .flags = SL_OPTF_DEF_UNSAID),
    SL_OPT_UINT64(0, "max-sentence-length", max_len, "N",
                  "longer sentences are skipped (default 4192 bytes, at most 65536)", .def = "4192",
                  .flags = SL_OPTF_DEF_UNSAID),
    SL_OPT_INTEGER(0, "threads", threads, "N", "training threads (default: the cores)"),
    SL_OPT_STRINGS(0, "spm-option", extra, "NAME=VALUE", "any other spm_train option (repeatable)",
                   .flags = SL_OPTF_KV),
    SL_OPT_CHOICE(0, "pattern", pattern, "gpt2|cl100k|o200k",
                  "byte-bpe: pre-tokenizer regex of that encoding", .def = "gpt2",
                  .flags = SL_OPTF_NO_KEY),
    SL_OPT_STRING(0, "special-tokens", specials, "A,B",
                  "byte-bpe: special tokens, ids 0.. (default <|endoftext|>; '' for none)",
                  .def = "<|endoftext|>", .flags = SL_OPTF_NO_KEY | SL_OPTF_DEF_UNSAID),
    SL_OPT_UINT64(0, "min-frequency", min_freq, "N",
                  "byte-bpe: pairs seen fewer times are not merged", .def = "0",
                  .flags = SL_OPTF_NO_KEY),
    SL_OPT_UINT64(0, "max-pretokens", max_pretokens, "N",
                  "byte-bpe: distinct pre-tokens counted; the rarest are dropped past it",
                  .def = "4000000", .flags = SL_OPTF_NO_KEY),
    SL_OPT_COMMON,
    SL_OPT_END_,
};

static int check(void *opts, const struct sl_strlist *operands)
{
    const struct opts *o = opts;
    int rc = 0;
    int bbpe = !strcmp(o->model_type, "byte-bpe");
    if (!rc && bbpe) {
        size_t nspec = 0;
        for (const char *q = o->specials; *o->specials && q;
             q = strchr(q, ','), q = q ? q + 1 : NULL)
            nspec++;
        if (o->vocab_size < nspec + 256 || o->vocab_size > 0x7fffffff)
            rc = sl_err_set(
                SL_ERR_USAGE,
                "--vocab-size must be at least the %zu special tokens plus the 256 bytes, and "
                "below 2^31 (got %llu)",
                nspec, (unsigned long long)o->vocab_size);
    }
    if (!rc && bbpe && sl_utf8_validate(o->specials, strlen(o->specials)) != strlen(o->specials))
        rc = sl_err_set(SL_ERR_USAGE, "--special-tokens is not valid UTF-8");
    if (!rc && bbpe && o->max_pretokens < 1024)
        rc = sl_err_set(SL_ERR_USAGE, "--max-pretokens must be at least 1024 (got %llu)",
                        (unsigned long long)o->max_pretokens);
    if (!rc && operands->n == 0)
        rc = sl_err_set(SL_ERR_USAGE, "no inputs given");
    /* SentencePiece's memory grows with the longest sentence it is given (the unigram
     * lattice, the BPE symbol lists): a 3 MB one takes 1.9 GB, a 30 MB one 9 GB */
    if (!rc && (o->max_len == 0 || o->max_len > MAX_SENTENCE_CAP))
        rc = sl_err_set(SL_ERR_USAGE,
                        "--max-sentence-length must be 1..%d bytes (got %llu)\nhint: the "
                        "trainer's memory grows with the longest sentence; longer lines are "
                        "skipped and counted",
                        MAX_SENTENCE_CAP, (unsigned long long)o->max_len);
    if (!rc && (o->coverage <= 0 || o->coverage > 1))
        rc = sl_err_set(SL_ERR_USAGE, "--character-coverage must be in (0, 1]");
    for (size_t i = 0; !rc && i < o->extra.n; i++)
        if (!strchr(o->extra.v[i], '=') || !strncmp(o->extra.v[i], "input", 5) ||
            !strncmp(o->extra.v[i], "model_prefix", 12))
            rc = sl_err_set(SL_ERR_USAGE,
                            "--spm-option '%s': expected NAME=VALUE (not input or model_prefix)",
                            o->extra.v[i]);
    return rc;
}

/* `sluice tokenizer train`, also as `sluice tokenizer [options] train IN...` (the command
 * table's fallback of `sluice tokenizer`) */
const struct sl_cmd cmd_tokenizer_train = SL_CMD(
    cmd_tokenizer_train_usage, cmd_tokenizer_train_options, struct opts, check, run, .rank0 = 1);
