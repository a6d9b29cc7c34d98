/* Tokenizer specs and dispatch to the BPE, SentencePiece, tokenizer.json and BERT
 * implementations. */
#include "tokenize/tokenizer.h"

#include "core/alloc.h"
#include "core/atomic.h"
#include "core/buf.h"
#include "core/err.h"
#include "core/file.h"
#include "core/stream.h"
#include "tokenize/bert.h"
#include "tokenize/bpe.h"
#include "tokenize/hf.h"
#include "tokenize/spm.h"
#include "tokenize/tiktoken.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

struct tokenizer_enc {
    const struct tokenizer *t;
    struct bpe_enc *bpe;
    struct hf_enc *hf;
    struct bert_enc *bert;
};

#define SPEC_ROW_(name, arg, kind, variant, opts) { name, arg, kind, variant, opts },
static const struct spec_kind {
    const char *name, *arg;
    enum tokenizer_kind kind;
    int variant;
    const char *opts;
} spec_kinds[] = { TOKENIZER_SPEC_TABLE(SPEC_ROW_) };
#define N_SPEC_KINDS (sizeof(spec_kinds) / sizeof(spec_kinds[0]))

/* The row of the kind that spec starts with (its name, then ',' or ':'), or NULL. */
static const struct spec_kind *spec_kind(const char *spec)
{
    for (size_t i = 0; i < N_SPEC_KINDS; i++) {
        size_t n = strlen(spec_kinds[i].name);
        if (!strncmp(spec, spec_kinds[i].name, n) && (spec[n] == ':' || spec[n] == ','))
            return &spec_kinds[i];
    }
    return NULL;
}

const char *tokenizer_spec_path(const char *spec)
{
    return spec_kind(spec) ? strchr(spec, ':') + 1 : NULL;
}

/* The options between the kind and the colon ("bert,extra-ids=100:"): the count of the
 * only one there is today into *extra_ids. */
static int spec_options(const struct spec_kind *k, const char *spec, uint32_t *extra_ids)
{
    const char *colon = strchr(spec, ':');
    for (const char *p = spec + strlen(k->name); p < colon;) {
        const char *name = p + 1, *end = name;
        while (end < colon && *end != ',')
            end++;
        const char *eq = memchr(name, '=', (size_t)(end - name));
        size_t nl = (size_t)((eq ? eq : end) - name);
        if (!*k->opts || nl != strlen(k->opts) || strncmp(name, k->opts, nl))
            return sl_err_set(SL_ERR_USAGE, "tokenizer '%s': %s: takes no option '%.*s'\nhint: %s",
                              spec, k->name, (int)nl, name,
                              *k->opts ? "its option is extra-ids=N (docs/tokenizers.md)"
                                       : "the form is KIND:PATH");
        uint64_t x = 0;
        const char *v = eq ? eq + 1 : end;
        int ok = v < end;
        for (; v < end && ok; v++) {
            ok = *v >= '0' && *v <= '9' && x <= UINT32_MAX / 10;
            x = x * 10 + (uint64_t)(*v - '0');
        }
        if (!ok || x > UINT32_MAX)
            return sl_err_set(SL_ERR_USAGE, "tokenizer '%s': %s needs a count: %s=N", spec, k->opts,
                              k->opts);
        *extra_ids = (uint32_t)x;
        p = end;
    }
    return 0;
}

const char *tokenizer_kind_name(enum tokenizer_kind k)
{
    for (size_t i = 0; i < N_SPEC_KINDS; i++) /* the first row of the kind */
        if (spec_kinds[i].kind == k)
            return spec_kinds[i].name;
    return "spm"; /* not reached: every kind has a row */
}

int tokenizer_open(struct tokenizer **out, const char *spec)
{
    *out = NULL;
    const struct spec_kind *k = spec_kind(spec);
    const char *path = k ? strchr(spec, ':') + 1 : NULL;
    uint32_t extra_ids = 0;
    if (!k || !*path)
        return sl_err_set(SL_ERR_USAGE, "unknown tokenizer '%s'\nhint: use one of %s", spec,
                          TOKENIZER_SPECS);
    int rc = spec_options(k, spec, &extra_ids);
    if (rc)
        return rc;
    struct tokenizer *t = sl_xcalloc(1, sizeof(*t));
    t->spec = sl_xstrdup(spec);
    t->kind = k->kind;
    switch (k->kind) {
    case TOKENIZER_GPT2:
        rc = bpe_load_gpt2_dir(&t->bpe, path);
        break;
    case TOKENIZER_TIKTOKEN:
        rc = bpe_load_tiktoken(&t->bpe, path, -1);
        break;
    case TOKENIZER_SPM:
        rc = spm_load_engine(&t->spm, path, k->variant ? SPM_ENGINE_LIB : SPM_ENGINE_OWN);
        break;
    case TOKENIZER_HF:
        rc = hf_load(&t->hf, path);
        break;
    case TOKENIZER_BERT:
        rc = bert_load(&t->bert, path, k->variant, extra_ids);
        break;
    }
    if (rc) {
        tokenizer_free(t);
        return rc;
    }
    if (t->bert) {
        t->vocab_size = bert_vocab_size(t->bert);
        t->eod_id = t->bert->eos; /* Megatron's eod: [EOS] */
    } else if (t->hf) {
        t->vocab_size = hf_vocab_size(t->hf);
        t->eod_id = hf_eod_id(t->hf);
    } else if (t->bpe) {
        t->vocab_size = bpe_vocab_size(t->bpe);
        /* the end-of-document token of a tiktoken family (GPT-2's files have OpenAI's) */
        t->eod_id = -1;
        const char *eod;
        for (size_t i = 0; t->eod_id < 0 && (eod = tiktoken_eod_token(i)); i++)
            t->eod_id = bpe_special_id(t->bpe, eod);
    } else {
        t->vocab_size = spm_vocab_size(t->spm);
        t->eod_id = spm_eos_id(t->spm);
    }
    *out = t;
    return 0;
}

void tokenizer_free(struct tokenizer *t)
{
    if (!t)
        return;
    bpe_shared_free(t->pieces);
    bpe_free(t->bpe);
    spm_free(t->spm);
    hf_free(t->hf);
    bert_free(t->bert);
    free(t->spec);
    free(t);
}

void tokenizer_share_pieces(struct tokenizer *t)
{
    if ((t->bpe || (t->hf && hf_is_bpe(t->hf))) && !t->pieces)
        t->pieces = bpe_shared_new();
}

struct tokenizer_enc *tokenizer_enc_new(const struct tokenizer *t)
{
    struct tokenizer_enc *e = sl_xcalloc(1, sizeof(*e));
    e->t = t;
    if (t->bert)
        e->bert = bert_enc_new(t->bert);
    else if (t->hf)
        e->hf = hf_enc_new_shared(t->hf, t->pieces);
    else if (t->bpe)
        e->bpe = bpe_enc_new_shared(t->bpe, t->pieces);
    return e;
}

void tokenizer_enc_free(struct tokenizer_enc *e)
{
    if (!e)
        return;
    bpe_enc_free(e->bpe);
    hf_enc_free(e->hf);
    bert_enc_free(e->bert);
    free(e);
}

int tokenizer_encode(struct tokenizer_enc *e, const char *text, size_t n, struct tok_ids *out)
{
    if (e->bert)
        return bert_encode(e->bert, text, n, out);
    if (e->hf)
        return hf_encode(e->hf, text, n, out);
    if (e->bpe)
        return bpe_encode(e->bpe, text, n, out);
    return spm_encode(e->t->spm, text, n, out);
}

int tokenizer_decode(const struct tokenizer *t, const uint32_t *ids, size_t n, struct sl_buf *out)
{
    if (t->bert)
        return bert_decode(t->bert, ids, n, out);
    if (t->hf)
        return hf_decode(t->hf, ids, n, out);
    if (t->bpe)
        return bpe_decode(t->bpe, ids, n, out);
    return spm_decode(t->spm, ids, n, out);
}

/* ---- a spec's files ------------------------------------------------------------------- */

char *tokenizer_spec_absolute(const char *spec)
{
    const char *colon = strchr(spec, ':');
    const char *path = colon ? colon + 1 : spec;
    int kl = colon ? (int)(colon - spec + 1) : 0;
    char buf[PATH_MAX];
    if (path[0] == '/' || !realpath(path, buf))
        return sl_xstrdup(spec);
    return sl_xasprintf("%.*s%s", kl, spec, buf);
}

/* GPT-2's two files in dir: vocab.json + merges.txt, else encoder.json + vocab.bpe. */
static void gpt2_names(const char *dir, const char **v, const char **m)
{
    char *p = sl_xasprintf("%s/vocab.json", dir);
    int hf = sl_file_exists(p);
    free(p);
    *v = hf ? "vocab.json" : "encoder.json";
    *m = hf ? "merges.txt" : "vocab.bpe";
}

static int missing(const char *spec, const char *path)
{
    return sl_err_set(SL_ERR_NOTFOUND, "tokenizer '%s': no file '%s'", spec, path);
}

/* Whether spec is of kind `kind` (by TOKENIZER_SPEC_TABLE). */
static int spec_is(const char *spec, enum tokenizer_kind kind)
{
    const struct spec_kind *k = spec_kind(spec);
    return k && k->kind == kind;
}

int tokenizer_spec_check(const char *spec)
{
    const char *colon = strchr(spec, ':');
    const char *path = colon ? colon + 1 : spec;
    if (!spec_is(spec, TOKENIZER_GPT2))
        return sl_file_exists(path) ? 0 : missing(spec, path);
    const char *v, *m;
    gpt2_names(path, &v, &m);
    int rc = 0;
    for (int i = 0; i < 2 && !rc; i++) {
        char *p = sl_xasprintf("%s/%s", path, i ? m : v);
        if (!sl_file_exists(p))
            rc = missing(spec, p);
        free(p);
    }
    return rc;
}

/* Copy a (possibly compressed) file to dir/name, decompressed. */
static int copy_one(const char *from, const char *dir, const char *name)
{
    struct sl_buf b = SL_BUF_INIT;
    b.max = (size_t)1 << 31; /* a tokenizer: a few MB; o200k_base's ranks are 3.6 MB */
    int rc = sl_read_file(from, &b);
    if (!rc) {
        char *to = sl_xasprintf("%s/%s", dir, name);
        rc = sl_write_file_atomic(to, b.data ? b.data : "", b.len);
        free(to);
    }
    sl_buf_release(&b);
    return rc ? sl_err_wrap(rc, "cannot copy the tokenizer file '%s': ", from) : 0;
}

/* The name of a copy: "tokenizer" and the file's extension, without a compression suffix
 * ("m.model.zst" -> "tokenizer.model"). */
static char *copy_name(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    char *b = sl_xstrdup(base);
    static const char *const squeezed[] = { ".zst", ".gz", ".bz2", ".xz" };
    for (size_t i = 0; i < sizeof(squeezed) / sizeof(*squeezed); i++) {
        size_t n = strlen(b), k = strlen(squeezed[i]);
        if (n > k && !strcmp(b + n - k, squeezed[i]))
            b[n - k] = 0;
    }
    const char *dot = strrchr(b, '.');
    char *r = sl_xasprintf("tokenizer%s", dot && dot != b ? dot : "");
    free(b);
    return r;
}

int tokenizer_copy_files(const char *spec, const char *dir, char **rel)
{
    *rel = NULL;
    const char *colon = strchr(spec, ':');
    const char *path = colon ? colon + 1 : spec;
    int kl = colon ? (int)(colon - spec + 1) : 0;
    int rc = tokenizer_spec_check(spec);
    if (rc)
        return rc;
    if (spec_is(spec, TOKENIZER_GPT2)) {
        const char *v, *m;
        gpt2_names(path, &v, &m);
        for (int i = 0; i < 2 && !rc; i++) {
            char *p = sl_xasprintf("%s/%s", path, i ? m : v);
            rc = copy_one(p, dir, i ? m : v);
            free(p);
        }
        if (!rc)
            *rel = sl_xstrdup("gpt2:.");
        return rc;
    }
    /* a BERT vocabulary keeps the name every BERT tool looks for */
    char *name = spec_is(spec, TOKENIZER_BERT) ? sl_xstrdup("vocab.txt") : copy_name(path);
    rc = copy_one(path, dir, name);
    if (!rc && spec_is(spec, TOKENIZER_TIKTOKEN)) {
        /* a rank file's special tokens and pattern may be in a sidecar FILE.json */
        char *side = sl_xasprintf("%s.json", path);
        if (sl_file_exists(side)) {
            char *sname = sl_xasprintf("%s.json", name);
            rc = copy_one(side, dir, sname);
            free(sname);
        }
        free(side);
    }
    if (!rc)
        *rel = sl_xasprintf("%.*s%s", kl, spec, name);
    free(name);
    return rc;
}
