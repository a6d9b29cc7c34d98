/* Fuzz the encoder with the real GPT-2, cl100k_base and o200k_base vocabularies (loaded
 * once from tests/fixtures): any bytes encode and decode back exactly, and on valid UTF-8
 * each pre-tokenizer splits exactly as PCRE2 running its regular expression does (inputs
 * with code points whose Unicode class differs between PCRE2's tables and ours, i.e.
 * between Unicode versions, are skipped). */
#include "core/buf.h"
#include "core/utf8.h"
#include "tokenize/bpe.h"
#include "tokenize/pretok.h"
#include "tokenize/unicat.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct bpe *tok[3];
static struct bpe_enc *enc[3];
static pcre2_code *rx[3];
static pcre2_match_data *md[3];
static unsigned char *drift; /* code points whose class PCRE2 sees differently */

static int pcre_class(pcre2_code *c, pcre2_match_data *m, uint32_t cp)
{
    char s[4];
    size_t n = sl_utf8_encode(cp, s);
    return n && pcre2_match(c, (PCRE2_SPTR)s, n, 0, PCRE2_ANCHORED, m, NULL) >= 0;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    const char *dir = "tests/fixtures/tokenizer";
    char a[512], b[512];
    snprintf(a, sizeof(a), "%s/encoder.json.zst", dir);
    snprintf(b, sizeof(b), "%s/vocab.bpe.zst", dir);
    if (bpe_load_gpt2(&tok[0], a, b))
        abort();
    snprintf(a, sizeof(a), "%s/cl100k_base.tiktoken.zst", dir);
    if (bpe_load_tiktoken(&tok[1], a, -1))
        abort();
    snprintf(a, sizeof(a), "%s/o200k_base.tiktoken.zst", dir);
    if (bpe_load_tiktoken(&tok[2], a, -1))
        abort();
    for (int k = 0; k < 3; k++) {
        enc[k] = bpe_enc_new(tok[k]);
        int err;
        PCRE2_SIZE off;
        rx[k] = pcre2_compile((PCRE2_SPTR)pretok_regex((enum pretok_kind)k), PCRE2_ZERO_TERMINATED,
                              PCRE2_UTF | PCRE2_UCP, &err, &off, NULL);
        pcre2_jit_compile(rx[k], PCRE2_JIT_COMPLETE);
        md[k] = pcre2_match_data_create_from_pattern(rx[k], NULL);
    }
    /* the classes the scanners use, as PCRE2 sees them */
    static const char *const cls[] = { "\\p{L}", "\\p{N}", "[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]",
                                       "[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]" };
    static const unsigned bits[] = { UC_L, UC_N, UC_UP, UC_LO };
    drift = calloc(0x110000, 1);
    for (int i = 0; i < 4; i++) {
        int err;
        PCRE2_SIZE off;
        pcre2_code *c = pcre2_compile((PCRE2_SPTR)cls[i], PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP,
                                      &err, &off, NULL);
        pcre2_jit_compile(c, PCRE2_JIT_COMPLETE);
        pcre2_match_data *m = pcre2_match_data_create_from_pattern(c, NULL);
        for (uint32_t cp = 0; cp < 0x110000; cp++) {
            if (cp >= 0xD800 && cp <= 0xDFFF)
                continue;
            if (pcre_class(c, m, cp) != !!(unicat_class(cp) & bits[i]))
                drift[cp] = 1;
        }
        pcre2_match_data_free(m);
        pcre2_code_free(c);
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct tok_ids ids = { 0 };
    struct sl_buf out = SL_BUF_INIT;
    for (int k = 0; k < 3; k++) {
        ids.n = 0;
        if (bpe_encode(enc[k], (const char *)data, size, &ids) != 0)
            abort();
        sl_buf_reset(&out);
        if (bpe_decode(tok[k], ids.v, ids.n, &out) != 0 || out.len != size ||
            (size && memcmp(out.data, data, size) != 0))
            abort();
    }
    tok_ids_release(&ids);
    sl_buf_release(&out);
    if (sl_utf8_validate((const char *)data, size) != size)
        return 0;
    for (size_t i = 0; i < size;) {
        uint32_t cp;
        size_t n = sl_utf8_decode(data + i, size - i, &cp);
        if (!n || drift[cp])
            return 0;
        i += n;
    }
    for (int k = 0; k < 3; k++) {
        size_t pos = 0;
        while (pos < size) {
            int rc = pcre2_match(rx[k], (PCRE2_SPTR)data, size, pos, PCRE2_ANCHORED, md[k], NULL);
            if (rc < 0)
                abort(); /* every position starts a piece */
            size_t end = pcre2_get_ovector_pointer(md[k])[1];
            size_t ours = pretok_next((enum pretok_kind)k, data + pos, data + size);
            if (end != pos + ours) {
                fprintf(stderr, "%s splits differently at byte %zu\n", pretok_name((enum pretok_kind)k), pos);
                abort();
            }
            pos = end;
        }
    }
    return 0;
}
