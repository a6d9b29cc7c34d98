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

/* ---- a unigram model built here, for the word cache -------------------------------- */

static void pb_varint(struct sl_buf *b, uint64_t v)
{
    do {
        unsigned char c = (unsigned char)(v & 0x7F);
        v >>= 7;
        if (v)
            c |= 0x80;
        sl_buf_append(b, &c, 1);
    } while (v);
}

static void pb_bytes(struct sl_buf *b, unsigned field, const void *p, size_t n)
{
    pb_varint(b, (uint64_t)field << 3 | 2);
    pb_varint(b, n);
    sl_buf_append(b, p, n);
}

static void pb_piece(struct sl_buf *model, const char *piece, float score, int type)
{
    struct sl_buf sp = SL_BUF_INIT;
    pb_bytes(&sp, 1, piece, strlen(piece));
    pb_varint(&sp, 2 << 3 | 5);
    sl_buf_append(&sp, &score, 4);
    pb_varint(&sp, 3 << 3 | 0);
    pb_varint(&sp, (uint64_t)type);
    pb_bytes(model, 1, sp.data, sp.len);
    sl_buf_release(&sp);
}

/* Words are encoded one by one through a cache, and a cached word's best path is taken again
 * only where it is sure to be the best path there too: the scores of a path are added to the
 * score reached at the word's start, in float, so a word whose two best paths are nearly tied
 * can round the other way after a long run of large scores. The model's scores are large and
 * the words few, so the texts hold such near ties at every magnitude; ids must equal the
 * library's (taking every cached path unchecked gives hundreds of differences). */
TEST(spm_enc_unigram_word_cache_near_ties)
{
    struct sl_buf model = SL_BUF_INIT, spec = SL_BUF_INIT;
    pb_piece(&model, "<unk>", 0, 2);
    pb_piece(&model, "<s>", 0, 3);
    pb_piece(&model, "</s>", 0, 3);
    static const char *const letters[] = { "a", "b", "c" };
    unsigned seed = 99;
    char piece[16];
    /* every string of 1..4 letters, and each with U+2581 in front */
    for (int len = 1; len <= 4; len++) {
        int count = 1;
        for (int k = 0; k < len; k++)
            count *= 3;
        for (int v = 0; v < count; v++) {
            for (int sp = 0; sp < 2; sp++) {
                size_t n = 0;
                if (sp) {
                    memcpy(piece, "\xe2\x96\x81", 3);
                    n = 3;
                }
                for (int k = 0, x = v; k < len; k++, x /= 3)
                    piece[n++] = letters[x % 3][0];
                piece[n] = 0;
                /* a piece scores the sum of its letters' values, a cost per piece and a
                 * little noise: the segmentations of a word into as many pieces tie
                 * within the noise, and the sums of a few hundred words reach magnitudes
                 * where a float's step is larger than the noise */
                seed = seed * 1103515245u + 12345u;
                double score = -50000.0 * (sp + 1) - (double)((seed >> 8) % 4096) / 1024.0;
                for (int k = 0, x = v; k < len; k++, x /= 3)
                    score -= 100000.0 + 1000.0 * (x % 3);
                pb_piece(&model, piece, (float)score, 1);
            }
        }
    }
    pb_piece(&model, "\xe2\x96\x81", -200000.0f, 1);
    pb_varint(&spec, 3 << 3 | 0); /* TrainerSpec.model_type = UNIGRAM */
    pb_varint(&spec, 1);
    pb_bytes(&model, 2, spec.data, spec.len);
    sl_buf_reset(&spec);
    pb_varint(&spec, 3 << 3 | 0); /* NormalizerSpec: add_dummy_prefix, */
    pb_varint(&spec, 1);
    pb_varint(&spec, 4 << 3 | 0); /* remove_extra_whitespaces, */
    pb_varint(&spec, 1);
    pb_varint(&spec, 5 << 3 | 0); /* escape_whitespaces; no character map */
    pb_varint(&spec, 1);
    pb_bytes(&model, 3, spec.data, spec.len);
    const char *path = sl_test_write("near_ties.model", model.data, model.len);
    struct pair p = { NULL, NULL, "near_ties.model", 0, 0 };
    REQUIRE(spm_load_engine(&p.own, path, SPM_ENGINE_OWN) == 0);
    REQUIRE(spm_load_engine(&p.lib, path, SPM_ENGINE_LIB) == 0);
    /* texts of 50-400 words from a few hundred distinct words, so that most are cached */
    struct sl_buf text = SL_BUF_INIT;
    for (int t = 0; t < 400; t++) {
        sl_buf_reset(&text);
        seed = seed * 1103515245u + 12345u;
        int words = 50 + (int)((seed >> 8) % 350);
        for (int w = 0; w < words; w++) {
            seed = seed * 1103515245u + 12345u;
            unsigned word = (seed >> 8) % 300;
            int len = 2 + (int)(word % 7);
            for (int k = 0; k < len; k++, word = word * 7 + 3)
                sl_buf_append(&text, letters[word % 3], 1);
            sl_buf_append(&text, " ", 1);
        }
        compare(&p, text.data, text.len);
    }
    fprintf(stderr, "    %s: %zu texts compared, %zu differ\n", p.name, p.compared, p.mismatched);
    CHECK_EQ_INT(p.mismatched, 0);
    spm_free(p.own);
    spm_free(p.lib);
    sl_buf_release(&text);
    sl_buf_release(&spec);
    sl_buf_release(&model);
}
