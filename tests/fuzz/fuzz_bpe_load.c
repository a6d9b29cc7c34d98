/* Fuzz the vocabulary loaders: the input is split at the first NUL byte into a vocab.json
 * and a merges.txt (GPT-2 loader), and read whole as a tiktoken rank file. Whatever loads
 * must encode and decode any text back to the same bytes. */
#include "core/buf.h"
#include "tokenize/bpe.h"

#include <stdlib.h>
#include <string.h>

static void exercise(struct bpe *b, const uint8_t *data, size_t size)
{
    struct bpe_enc *e = bpe_enc_new(b);
    struct tok_ids ids = { 0 };
    ids.max = 1 << 20;
    if (bpe_encode(e, (const char *)data, size, &ids) == 0) {
        struct sl_buf out = SL_BUF_INIT;
        if (bpe_decode(b, ids.v, ids.n, &out) != 0 || out.len != size ||
            (size && memcmp(out.data, data, size) != 0))
            abort();
        sl_buf_release(&out);
    }
    tok_ids_release(&ids);
    bpe_enc_free(e);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *nul = memchr(data, 0, size);
    size_t vlen = nul ? (size_t)(nul - data) : size;
    const char *merges = nul ? (const char *)nul + 1 : "";
    size_t mlen = nul ? size - vlen - 1 : 0;
    struct bpe *b;
    if (bpe_load_gpt2_mem(&b, (const char *)data, vlen, merges, mlen, "fuzz.json") == 0) {
        exercise(b, data, size);
        bpe_free(b);
    }
    if (bpe_load_tiktoken_mem(&b, (const char *)data, size, (int)(size % 3), "fuzz.tiktoken") == 0) {
        exercise(b, data, size);
        bpe_free(b);
    }
    return 0;
}
