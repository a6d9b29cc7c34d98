/* Tests for tokenize/spm_enc (sluice's own SentencePiece encoder): ids identical to
 * libsentencepiece's (the oracle, through spm-lib) for seven models (the three reference
 * models and four small ones trained with spm_train 0.1.97 to cover the normalizer options,
 * user-defined and control symbols, byte fallback and both model types) over whole files,
 * their lines, the multilingual reference texts and random strings; load errors. */
#include "tests/harness.h"

#include "core/buf.h"
#include "core/err.h"
#include "core/stream.h"
#include "tokenize/spm.h"
#include "tokenize/spm_enc.h"

#include <stdlib.h>
#include <string.h>

static const char *const models[] = { "test_model.model",           "test_ja_model.model",
                                      "c4_en_301_5Mexp2_spm.model", "spm_uni_id.model",
                                      "spm_bpe_fb.model",           "spm_uni_sfx.model",
                                      "spm_bpe_noesc.model" };
#define NMODELS (sizeof(models) / sizeof(models[0]))

static const char *fixture(const char *name)
{
    static char rel[128];
    snprintf(rel, sizeof(rel), "tokenizer/%s.zst", name);
    return sl_test_fixture(rel);
}

struct pair {
    struct spm *own, *lib;
    const char *name;
    size_t compared, mismatched;
};

/* Encode with both; count a difference (and print the first few). */
static void compare(struct pair *p, const char *text, size_t n)
{
    struct tok_ids a = { 0 }, b = { 0 };
    int ra = spm_encode(p->own, text, n, &a), rb = spm_encode(p->lib, text, n, &b);
    p->compared++;
    if (ra != rb || a.n != b.n || (a.n && memcmp(a.v, b.v, a.n * sizeof(*a.v)))) {
        if (p->mismatched++ < 3)
            fprintf(stderr, "    %s: ids differ (rc %d/%d, %zu/%zu ids) for %zu bytes: '%.*s'\n",
                    p->name, ra, rb, a.n, b.n, n, (int)(n > 80 ? 80 : n), text);
    }
    tok_ids_release(&a);
    tok_ids_release(&b);
}

static void compare_lines(struct pair *p, const char *data, size_t n)
{
    const char *s = data, *end = data + n;
    while (s < end) {
        const char *nl = memchr(s, '\n', (size_t)(end - s));
        const char *le = nl ? nl : end;
        compare(p, s, (size_t)(le - s));
        s = le + 1;
    }
}

/* Random strings from the characters where the rules meet. */
static void compare_random(struct pair *p, unsigned seed, int count)
{
    static const char *const atoms[] = { " ",
                                         "  ",
                                         "\t",
                                         "\n",
                                         "a",
                                         "b",
                                         "the",
                                         "The",
                                         "foo",
                                         "<x>",
                                         "<c>",
                                         "x",
                                         "ABC",
                                         "AB",
                                         "ａ",
                                         "Ａ",
                                         "Ｂ",
                                         "…",
                                         "ﬁ",
                                         "　",
                                         "▁",
                                         "▁▁",
                                         "é",
                                         "e\xcc\x81",
                                         "日本",
                                         "語",
                                         "ア",
                                         "😀",
                                         "0",
                                         "12",
                                         ".",
                                         ",",
                                         "\xff",
                                         "\xc3",
                                         "\xe2\x96",
                                         "\xed\xa0\x80",
                                         "\xf4\x90\x80\x80",
                                         "\xc0\xaf",
                                         "\xef\xbf\xbd",
                                         "\x01",
                                         "Ⅻ",
                                         "㍻",
                                         "ｶﾞ",
                                         "\xc2\xa0",
                                         "\xe3\x80\x80",
                                         "\r\n" };
    char buf[512];
    for (int i = 0; i < count; i++) {
        seed = seed * 1103515245u + 12345u;
        int parts = (int)((seed >> 16) % 24);
        size_t n = 0;
        for (int k = 0; k < parts; k++) {
            seed = seed * 1103515245u + 12345u;
            const char *a = atoms[(seed >> 16) % (sizeof(atoms) / sizeof(atoms[0]))];
            size_t l = strlen(a);
            if (n + l >= sizeof(buf))
                break;
            memcpy(buf + n, a, l);
            n += l;
        }
        compare(p, buf, n);
    }
}

TEST(spm_enc_matches_library)
{
    static const char *const texts[] = { "botchan.txt", "wagahaiwa_head.txt",
                                         "tinyshakespeare.txt" };
    struct sl_buf text[3] = { SL_BUF_INIT, SL_BUF_INIT, SL_BUF_INIT }, cases = SL_BUF_INIT;
    for (int i = 0; i < 3; i++)
        REQUIRE(sl_read_file(fixture(texts[i]), &text[i]) == 0);
    /* cases.jsonl: the texts as JSON lines; compare whole lines (JSON-escaped text) and, below,
     * the texts of sentencepiece_cases */
    REQUIRE(sl_read_file(fixture("cases.jsonl"), &cases) == 0);
    for (size_t k = 0; k < NMODELS; k++) {
        struct pair p = { NULL, NULL, models[k], 0, 0 };
        REQUIRE(spm_load_engine(&p.own, fixture(models[k]), SPM_ENGINE_OWN) == 0);
        REQUIRE(spm_load_engine(&p.lib, fixture(models[k]), SPM_ENGINE_LIB) == 0);
        CHECK_EQ_STR(spm_engine_name(p.own), "sluice");
        CHECK_EQ_STR(spm_engine_name(p.lib), "library");
        for (int i = 0; i < 3; i++) {
            compare(&p, text[i].data, text[i].len); /* the whole file as one text */
            compare_lines(&p, text[i].data, text[i].len);
        }
        compare_lines(&p, cases.data, cases.len);
        compare(&p, "", 0);
        compare_random(&p, 1234u + (unsigned)k, 3000);
        fprintf(stderr, "    %s: %zu texts compared, %zu differ\n", models[k], p.compared,
                p.mismatched);
        CHECK_EQ_INT(p.mismatched, 0);
        spm_free(p.own);
        spm_free(p.lib);
    }
    for (int i = 0; i < 3; i++)
        sl_buf_release(&text[i]);
    sl_buf_release(&cases);
}

TEST(spm_enc_word_model_uses_library)
{
    struct spm *s = NULL;
    REQUIRE(spm_load(&s, fixture("spm_word.model")) == 0);
    CHECK_EQ_STR(spm_engine_name(s), "library");
    struct tok_ids ids = { 0 };
    CHECK_EQ_INT(spm_encode(s, "I am a cat.", 11, &ids), 0);
    CHECK(ids.n > 0);
    tok_ids_release(&ids);
    spm_free(s);
    struct sl_buf m = SL_BUF_INIT;
    REQUIRE(sl_read_file(fixture("spm_word.model"), &m) == 0);
    struct spm_enc *e;
    CHECK_EQ_INT(spm_enc_load(&e, m.data, m.len, "word.model"), SL_ERR_UNSUPPORTED);
    CHECK_CONTAINS(sl_err_msg(), "word.model");
    sl_buf_release(&m);
}

TEST(spm_enc_bad_models)
{
    struct sl_buf m = SL_BUF_INIT;
    REQUIRE(sl_read_file(fixture("spm_bpe_fb.model"), &m) == 0);
    struct spm_enc *e = NULL;
    REQUIRE(spm_enc_load(&e, m.data, m.len, "ok.model") == 0);
    spm_enc_free(e);
    /* every truncation is refused or loads; none crashes (ASan/fuzz check the rest) */
    size_t refused = 0;
    for (size_t n = 0; n < m.len; n += 7) {
        if (spm_enc_load(&e, m.data, n, "cut.model") == 0) {
            struct tok_ids ids = { 0 };
            spm_enc_encode(e, "hello world foo <x>", 19, &ids);
            tok_ids_release(&ids);
            spm_enc_free(e);
        } else {
            refused++;
            CHECK_CONTAINS(sl_err_msg(), "cut.model");
        }
    }
    CHECK(refused > 0);
    CHECK_EQ_INT(spm_enc_load(&e, m.data, m.len / 2, "half.model"), SL_ERR_FORMAT);
    CHECK_CONTAINS(sl_err_msg(), "half.model");
    CHECK_CONTAINS(sl_err_msg(), "at byte");
    CHECK_EQ_INT(spm_enc_load(&e, "\x0a\x02\x0a\x00", 4, "empty.model"), SL_ERR_FORMAT);
    CHECK_CONTAINS(sl_err_msg(), "empty piece");
    CHECK_EQ_INT(spm_enc_load(&e, "", 0, "nothing.model"), SL_ERR_FORMAT);
    CHECK_CONTAINS(sl_err_msg(), "no pieces");
    /* a piece without the unknown piece */
    CHECK_EQ_INT(spm_enc_load(&e, "\x0a\x03\x0a\x01\x61", 5, "nounk.model"), SL_ERR_FORMAT);
    CHECK_CONTAINS(sl_err_msg(), "no unknown piece");
    sl_buf_release(&m);
}

TEST(spm_enc_invalid_utf8)
{
    struct sl_buf m = SL_BUF_INIT;
    REQUIRE(sl_read_file(fixture("c4_en_301_5Mexp2_spm.model"), &m) == 0);
    struct spm_enc *e = NULL;
    REQUIRE(spm_enc_load(&e, m.data, m.len, "c4.model") == 0);
    struct tok_ids a = { 0 }, b = { 0 };
    /* each invalid byte becomes one U+FFFD that the normalizer does not map (spm_encode:
     * "▁ab" and the three byte pieces of U+FFFD twice, then "cd"); a literal U+FFFD is
     * mapped by this model's character map */
    static const uint32_t want[] = { 449, 242, 194, 192, 242, 194, 192, 21514 };
    CHECK_EQ_INT(spm_enc_encode(e,
                                "ab\xff\xfe"
                                "cd",
                                6, &a),
                 1);
    CHECK_EQ_MEM(a.v, a.n * 4, want, sizeof(want));
    CHECK_EQ_INT(spm_enc_encode(e,
                                "ab\xef\xbf\xbd\xef\xbf\xbd"
                                "cd",
                                10, &b),
                 0);
    CHECK(b.n != a.n);
    /* the output cap */
    struct tok_ids c = { 0 };
    c.max = 2;
    CHECK_EQ_INT(spm_enc_encode(e, "a b c d e f", 11, &c), SL_ERR_TOOBIG);
    tok_ids_release(&a);
    tok_ids_release(&b);
    tok_ids_release(&c);
    spm_enc_free(e);
    sl_buf_release(&m);
}
