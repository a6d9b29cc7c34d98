/* Tokenizer specs and dispatch to the BPE and SentencePiece implementations. */
#include "tokenize/tokenizer.h"

#include "core/alloc.h"
#include "core/err.h"
#include "tokenize/bpe.h"
#include "tokenize/hf.h"
#include "tokenize/spm.h"

#include <stdlib.h>
#include <string.h>

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
