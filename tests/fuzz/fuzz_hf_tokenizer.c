/* Fuzz the tokenizer.json loader and encoder (tokenize/hf.h): the input is split at the
 * first NUL byte into a tokenizer.json and a text. Whatever loads must encode the text and
 * the file itself to ids below the vocabulary size that decode again; byte-level BPE
 * without a normalizer and without added tokens must give the text back byte for byte. */
#include "core/buf.h"
#include "tokenize/hf.h"
#include "tokenize/hf_impl.h"

#include <stdlib.h>
#include <string.h>

static void exercise(const struct hf *h, const char *text, size_t n)
{
    struct hf_enc *e = hf_enc_new(h);
    struct tok_ids ids = { 0 };
    ids.max = 1 << 20;
    int rc = hf_encode(e, text, n, &ids);
    if (rc >= 0) {
        for (size_t i = 0; i < ids.n; i++)
            if (ids.v[i] >= hf_vocab_size(h))
                abort();
        struct sl_buf out = SL_BUF_INIT;
        if (hf_decode(h, ids.v, ids.n, &out) != 0)
            abort();
        if (h->model == HF_BPE && !h->nsteps && !h->nadded && !h->prefix_space &&
            (out.len != n || (n && memcmp(out.data, text, n))))
            abort();
        sl_buf_release(&out);
    }
    tok_ids_release(&ids);
    hf_enc_free(e);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *nul = memchr(data, 0, size);
    size_t jlen = nul ? (size_t)(nul - data) : size;
    const char *text = nul ? (const char *)nul + 1 : "";
    size_t tlen = nul ? size - jlen - 1 : 0;
    struct hf *h;
    if (hf_load_mem(&h, (const char *)data, jlen, "fuzz.json") == 0) {
        exercise(h, text, tlen);
        exercise(h, (const char *)data, jlen);
        hf_free(h);
    }
    return 0;
}
