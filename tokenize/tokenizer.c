/* Tokenizer specs and dispatch to the BPE and SentencePiece implementations. */
#include "tokenize/tokenizer.h"

#include "core/alloc.h"
#include "core/atomic.h"
#include "core/buf.h"
#include "core/err.h"
#include "core/stream.h"
#include "tokenize/bpe.h"
#include "tokenize/hf.h"
#include "tokenize/spm.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct tokenizer_enc {
    const struct tokenizer *t;
    struct bpe_enc *bpe;
    struct hf_enc *hf;
};

const char *tokenizer_kind_name(enum tokenizer_kind k)
{
    return k == TOKENIZER_GPT2       ? "gpt2"
           : k == TOKENIZER_TIKTOKEN ? "tiktoken"
           : k == TOKENIZER_HF       ? "hf"
                                     : "spm";
}

int tokenizer_open(struct tokenizer **out, const char *spec)
{
    *out = NULL;
    const char *colon = strchr(spec, ':');
    struct tokenizer *t = sl_xcalloc(1, sizeof(*t));
    t->spec = sl_xstrdup(spec);
    int rc;
    if (colon && colon[1] && !strncmp(spec, "gpt2:", 5)) {
        t->kind = TOKENIZER_GPT2;
        rc = bpe_load_gpt2_dir(&t->bpe, colon + 1);
    } else if (colon && colon[1] && !strncmp(spec, "tiktoken:", 9)) {
        t->kind = TOKENIZER_TIKTOKEN;
        rc = bpe_load_tiktoken(&t->bpe, colon + 1, -1);
    } else if (colon && colon[1] && (!strncmp(spec, "spm:", 4) || !strncmp(spec, "spm-lib:", 8))) {
        t->kind = TOKENIZER_SPM;
        rc = spm_load_engine(&t->spm, colon + 1, spec[3] == ':' ? SPM_ENGINE_OWN : SPM_ENGINE_LIB);
    } else if (colon && colon[1] && !strncmp(spec, "hf:", 3)) {
        t->kind = TOKENIZER_HF;
        rc = hf_load(&t->hf, colon + 1);
    } else {
        rc = sl_err_set(
            SL_ERR_USAGE,
            "unknown tokenizer '%s'\nhint: use gpt2:DIR, tiktoken:FILE, spm:FILE, spm-lib:FILE or "
            "hf:tokenizer.json",
            spec);
    }
    if (rc) {
        tokenizer_free(t);
        return rc;
    }
    if (t->hf) {
        t->vocab_size = hf_vocab_size(t->hf);
        t->eod_id = hf_eod_id(t->hf);
    } else if (t->bpe) {
        t->vocab_size = bpe_vocab_size(t->bpe);
        t->eod_id = bpe_special_id(t->bpe, "<|endoftext|>");
        if (t->eod_id < 0) /* Llama 3 and 4 */
            t->eod_id = bpe_special_id(t->bpe, "<|end_of_text|>");
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
    if (t->hf)
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
    free(e);
}

int tokenizer_encode(struct tokenizer_enc *e, const char *text, size_t n, struct tok_ids *out)
{
    if (e->hf)
        return hf_encode(e->hf, text, n, out);
    if (e->bpe)
        return bpe_encode(e->bpe, text, n, out);
    return spm_encode(e->t->spm, text, n, out);
}

int tokenizer_decode(const struct tokenizer *t, const uint32_t *ids, size_t n, struct sl_buf *out)
{
    if (t->hf)
        return hf_decode(t->hf, ids, n, out);
    if (t->bpe)
        return bpe_decode(t->bpe, ids, n, out);
    return spm_decode(t->spm, ids, n, out);
}

/* ---- a spec's files ------------------------------------------------------------------- */

static int is_file(const char *p)
{
    struct stat sb;
    return stat(p, &sb) == 0 && S_ISREG(sb.st_mode);
}

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
    int hf = is_file(p);
    free(p);
    *v = hf ? "vocab.json" : "encoder.json";
    *m = hf ? "merges.txt" : "vocab.bpe";
}

static int missing(const char *spec, const char *path)
{
    return sl_err_set(SL_ERR_NOTFOUND, "tokenizer '%s': no file '%s'", spec, path);
}

int tokenizer_spec_check(const char *spec)
{
    const char *colon = strchr(spec, ':');
    const char *path = colon ? colon + 1 : spec;
    if (strncmp(spec, "gpt2:", 5) != 0)
        return is_file(path) ? 0 : missing(spec, path);
    const char *v, *m;
    gpt2_names(path, &v, &m);
    int rc = 0;
    for (int i = 0; i < 2 && !rc; i++) {
        char *p = sl_xasprintf("%s/%s", path, i ? m : v);
        if (!is_file(p))
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
    if (!strncmp(spec, "gpt2:", 5)) {
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
    char *name = copy_name(path);
    rc = copy_one(path, dir, name);
    if (!rc && !strncmp(spec, "tiktoken:", 9)) {
        /* a rank file's special tokens and pattern may be in a sidecar FILE.json */
        char *side = sl_xasprintf("%s.json", path);
        if (is_file(side)) {
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
