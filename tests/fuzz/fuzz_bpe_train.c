/* Fuzz byte-level BPE training and its writers: the input up to its first NUL byte is a
 * rank file's sidecar (parsed with the trained ranks: it may fail, never crash); the rest
 * is text that is counted (a small table, so it is pruned) and trained on. The trained
 * ranks and sidecar must load back, encode any text and decode it to the same bytes, and
 * give back the trained merges; tokenizer.json must be written. */
#include "core/buf.h"
#include "tokenize/bpe.h"
#include "tokenize/bpe_train.h"
#include "tokenize/hf_write.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *nul = memchr(data, 0, size);
    size_t slen = nul ? (size_t)(nul - data) : 0;
    const char *text = nul ? (const char *)nul + 1 : (const char *)data;
    size_t tlen = nul ? size - slen - 1 : size;
    enum pretok_kind kind = (enum pretok_kind)(size % 3);
    struct bpe_counts *c = bpe_counts_new(kind, 64, 32);
    bpe_counts_add_text(c, text, tlen);
    const char *sp[] = { "<|endoftext|>", "<pad>" };
    struct bpe_train_opts o = { 2 + 256 + 64, size % 2, sp, 1 + size % 2 };
    struct bpe_model m;
    if (bpe_train(c, &o, &m) != 0)
        abort();
    struct sl_buf ranks = SL_BUF_INIT, side = SL_BUF_INIT, js = SL_BUF_INIT;
    if (hf_write_tiktoken(&m, &ranks, &side) || hf_write_tokenizer_json(&m, &js))
        abort();
    struct bpe *b;
    if (bpe_load_tiktoken_sidecar_mem(&b, ranks.data, ranks.len, -1, "t.tiktoken", side.data,
                                      side.len, "t.tiktoken.json") != 0)
        abort();
    if (bpe_vocab_size(b) != m.n_vocab || bpe_pretok(b) != kind)
        abort();
    struct bpe_enc *e = bpe_enc_new(b);
    struct tok_ids ids = { 0 };
    ids.max = 1 << 20;
    if (bpe_encode(e, text, tlen, &ids) == 0) {
        struct sl_buf out = SL_BUF_INIT;
        if (bpe_decode(b, ids.v, ids.n, &out) != 0 || out.len != tlen ||
            (tlen && memcmp(out.data, text, tlen) != 0))
            abort();
        sl_buf_release(&out);
    }
    struct bpe_model back;
    if (hf_model_from_bpe(b, &back) == 0) {
        /* the merges that made new tokens (ids from n_special + 256 on, in order); a merge
         * that makes an existing token again has no rank of its own */
        uint32_t k = 0, next = m.n_special + 256;
        for (uint32_t i = 0; i < m.n_merges; i++)
            if (m.merges[i][2] == next) {
                if (k >= back.n_merges || memcmp(back.merges[k], m.merges[i], sizeof(m.merges[i])))
                    abort();
                k++;
                next++;
            }
        bpe_model_release(&back);
    }
    tok_ids_release(&ids);
    bpe_enc_free(e);
    bpe_free(b);
    /* the fuzzed sidecar with the trained ranks */
    if (nul && bpe_load_tiktoken_sidecar_mem(&b, ranks.data, ranks.len, -1, "t.tiktoken",
                                             (const char *)data, slen, "fuzz.json") == 0)
        bpe_free(b);
    sl_buf_release(&ranks);
    sl_buf_release(&side);
    sl_buf_release(&js);
    bpe_model_release(&m);
    bpe_counts_free(c);
    return 0;
}
