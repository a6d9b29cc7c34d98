/* Fuzz the BERT vocab.txt reader and encoder (tokenize/bert.h): the input is split at the
 * first NUL byte into a vocab.txt and a text; the first byte of the text picks the casing
 * and the count of extra ids. Whatever loads must have its special tokens, encode the text
 * and the file itself to ids below the vocabulary size that decode again, and write a
 * tokenizer.json that tokenize/hf.h loads with the same number of ids. */
#include "core/buf.h"
#include "tokenize/bert.h"
#include "tokenize/hf.h"

#include <stdlib.h>
#include <string.h>

static void exercise(const struct bert *b, const char *text, size_t n)
{
    struct bert_enc *e = bert_enc_new(b);
    struct tok_ids ids = { 0 };
    ids.max = 1 << 20;
    int rc = bert_encode(e, text, n, &ids);
    if (rc >= 0) {
        for (size_t i = 0; i < ids.n; i++)
            if (ids.v[i] >= bert_vocab_size(b))
                abort();
        struct sl_buf out = SL_BUF_INIT;
        if (bert_decode(b, ids.v, ids.n, &out) != 0)
            abort();
        sl_buf_release(&out);
    }
    tok_ids_release(&ids);
    bert_enc_free(e);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *nul = memchr(data, 0, size);
    size_t vlen = nul ? (size_t)(nul - data) : size;
    const char *text = nul ? (const char *)nul + 1 : "";
    size_t tlen = nul ? size - vlen - 1 : 0;
    int lower = tlen ? text[0] & 1 : 0;
    uint32_t extra = tlen ? ((unsigned char)text[0] >> 1) % 8 : 0;
    struct bert *b;
    if (bert_load_mem(&b, (const char *)data, vlen, "fuzz.txt", lower, extra) != 0)
        return 0;
    if (bert_token_id(b, "[UNK]") < 0 || bert_token_id(b, "[EOS]") != b->eos ||
        b->eos >= bert_vocab_size(b) || b->bos >= bert_vocab_size(b))
        abort();
    exercise(b, text, tlen);
    exercise(b, (const char *)data, vlen);
    struct sl_buf j = SL_BUF_INIT;
    struct hf *h;
    if (bert_tokenizer_json(b, &j) != 0 || hf_load_mem(&h, j.data, j.len, "fuzz.json") != 0)
        abort();
    if (hf_vocab_size(h) != bert_vocab_size(b))
        abort();
    hf_free(h);
    sl_buf_release(&j);
    bert_free(b);
    return 0;
}
