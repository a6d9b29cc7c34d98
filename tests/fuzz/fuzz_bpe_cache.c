/* Fuzz the compiled-vocabulary cache reader (tokenize/bpe_cache.h). A valid cache file of a
 * small vocabulary (256 bytes and a few merges) is patched by the input, read as
 * 8-byte records (file offset, 32-bit value), and read back without its checksum and key,
 * so that the fuzzer reaches the table checks: whatever the reader accepts must encode the
 * input and decode the ids without reading outside its tables (ASan checks). The ids need
 * not give the text back: a patched vocabulary may be wrong, never out of bounds. */
#include "core/buf.h"
#include "tokenize/bpe.h"
#include "tokenize/bpe_cache.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct sl_buf image = SL_BUF_INIT;
static struct bpe_cache_key key;

static void build_image(void)
{
    static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    struct sl_buf f = SL_BUF_INIT;
    for (int c = 0; c < 256; c++) {
        char line[32];
        int n = snprintf(line, sizeof(line), "%c%c== %d\n", b64[c >> 2], b64[(c & 3) << 4], c);
        sl_buf_append(&f, line, (size_t)n);
    }
    /* "bc", "abcd", "th", "the", " the" */
    static const char more[] = "YmM= 256\nYWJjZA== 257\ndGg= 258\ndGhl 259\nIHRoZQ== 260\n";
    sl_buf_append(&f, more, strlen(more));
    struct bpe *b = NULL;
    if (bpe_load_tiktoken_mem(&b, f.data, f.len, PRETOK_CL100K, "fuzz.tiktoken") != 0)
        abort();
    key = bpe_cache_key("fuzz", 0, f.data, f.len, NULL, 0);
    bpe_cache_write_buf(b, key, &image);
    bpe_free(b);
    sl_buf_release(&f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!image.len)
        build_image();
    char *copy = malloc(image.len);
    memcpy(copy, image.data, image.len);
    size_t len = image.len;
    size_t i = 0;
    for (; i + 8 <= size && i < 8 * 64; i += 8) {
        uint32_t at, v;
        memcpy(&at, data + i, 4);
        memcpy(&v, data + i + 4, 4);
        if (at == UINT32_MAX) { /* a record of all ones cuts the file at v */
            len = v % (image.len + 1);
            continue;
        }
        at %= (uint32_t)(image.len - 3);
        memcpy(copy + at, &v, 4);
    }
    struct bpe *b = NULL;
    if (bpe_cache_read_mem(&b, copy, len, key, 0) == 0) {
        struct bpe_enc *e = bpe_enc_new(b);
        struct tok_ids ids = { 0 };
        ids.max = 1 << 20;
        const char *text = (const char *)data + i;
        size_t n = size - i;
        if (bpe_encode(e, text, n, &ids) == 0) {
            struct sl_buf out = SL_BUF_INIT;
            bpe_decode(b, ids.v, ids.n, &out);
            sl_buf_release(&out);
        }
        ids.n = 0;
        static const char fixed[] = " the abcd bcd, thethe 123 \xc3\xa9\xff";
        bpe_encode(e, fixed, sizeof(fixed) - 1, &ids);
        tok_ids_release(&ids);
        bpe_enc_free(e);
        bpe_free(b);
    }
    free(copy);
    return 0;
}
