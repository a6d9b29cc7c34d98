/* curate/filter: word splitting, the chain's config errors, single filters on small
 * texts whose decisions are worked out by hand from the definitions, and fastText language
 * ID against the fastText command's own output. */
#include "tests/harness.h"

#include "core/buf.h"
#include "core/err.h"
#include "curate/filter/chain.h"
#include "curate/filter/langid.h"
#include "curate/filter/words.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const char *joined(enum sl_words_mode m, const char *s)
{
    static struct sl_buf b;
    static struct sl_words *w;
    struct sl_wordvec v = { 0 };
    if (!w)
        sl_words_new(&w);
    sl_words_split(w, m, s, strlen(s), &v);
    sl_buf_reset(&b);
    for (size_t i = 0; i < v.n; i++) {
        if (i)
            sl_buf_putc(&b, '|');
        sl_buf_append(&b, s + v.v[i].off, v.v[i].len);
    }
    sl_wordvec_release(&v);
    return b.data ? b.data : "";
}

TEST(words_rules_like_spacy)
{
    /* expected splits are spaCy 3.8's for the same strings */
    CHECK_EQ_STR(joined(SL_WORDS_RULES, "Hello, world. I don't know... U.S. e.g. http://x.com/a. $5 10km (test)"),
                 "Hello|,|world|.|I|do|n't|know|...|U.S.|e.g.|http://x.com/a|.|$|5|10|km|(|test|)");
    CHECK_EQ_STR(joined(SL_WORDS_RULES, "'quoted' can't--really well-known 3-4 a/b"),
                 "'|quoted|'|can't|--|really|well|-|known|3|-|4|a|/|b");
    CHECK_EQ_STR(joined(SL_WORDS_SPACE, "  a, b\tc\n"), "a,|b|c");
    /* unspaced scripts: one word per character */
    CHECK_EQ_STR(joined(SL_WORDS_CHARS, "\xe4\xbd\xa0\xe5\xa5\xbd abc"), "\xe4\xbd\xa0|\xe5\xa5\xbd|abc");
    CHECK_EQ_STR(joined(SL_WORDS_RULES, ""), "");
    CHECK(sl_words_mode_for_lang("zh-Hant") == SL_WORDS_CHARS);
    CHECK(sl_words_mode_for_lang("en") == SL_WORDS_RULES);
}

static struct sl_filter_chain *load(const char *yaml)
{
    struct sl_filter_chain *c = NULL;
    sl_filter_chain_load_string(&c, yaml, strlen(yaml), "t.yaml");
    return c;
}

TEST(filter_config_errors)
{
    CHECK(!load("filters:\n  - gopher_qualty\n"));
    CHECK_CONTAINS(sl_err_msg(), "t.yaml:2: unknown filter 'gopher_qualty'");
    CHECK_CONTAINS(sl_err_msg(), "did you mean 'gopher_quality'");
    CHECK(!load("filters:\n  - gopher_quality:\n      min_doc_words: lots\n"));
    CHECK_CONTAINS(sl_err_msg(), "t.yaml:3");
    CHECK(!load("filters:\n  - gopher_quality:\n      min_doc_wrds: 3\n"));
    CHECK_CONTAINS(sl_err_msg(), "min_doc_wrds");
    CHECK(!load("language: en\n"));
    CHECK_CONTAINS(sl_err_msg(), "filters");
    CHECK(!load("filters:\n  - regex:\n      patterns: ['(unclosed']\n"));
    CHECK_CONTAINS(sl_err_msg(), "bad pattern");
}

static long run1(struct sl_filter_chain *c, const char *text, struct sl_filter_result *res)
{
    struct sl_fctx ctx;
    sl_fctx_init(&ctx, &c->env);
    sl_fctx_begin(&ctx, NULL, text, strlen(text), NULL);
    long r = sl_filter_chain_run(c, &ctx, 1, res);
    sl_fctx_release(&ctx);
    return r;
}

TEST(filter_heuristics_by_hand)
{
    struct sl_filter_result res[8];
    struct sl_filter_chain *c = load("filters:\n  - gopher_quality\n  - word_count:\n      min_words: 3\n"
                                     "  - regex:\n      patterns: ['(?i)lorem ipsum']\n");
    REQUIRE(c);
    /* 6 words, no stop word pair: short for Gopher (< 50), enough for word_count(3) */
    CHECK_EQ_INT(run1(c, "one two three four five six", res), 0);
    CHECK_EQ_STR(res[0].reason, "gopher_short_doc");
    CHECK(res[0].score == 6);
    CHECK(res[1].keep);
    CHECK(res[2].keep);
    CHECK_EQ_INT(run1(c, "Lorem Ipsum dolor", res), 0);
    CHECK(!res[2].keep);
    /* bad input never crashes: empty, whitespace, emoji, invalid UTF-8 */
    run1(c, "", res);
    run1(c, " \n\t\n ", res);
    run1(c, "\xf0\x9f\x98\x80\xf0\x9f\x98\x80", res);
    run1(c, "\xff\xfe bad \xc3", res);
    sl_filter_chain_free(c);
}

TEST(gopher_repetition_ngrams_by_hand)
{
    struct sl_filter_result res[2];
    /* duplicated n-grams join words without a space (datatrove "".join): "ab c" and "a bc"
     * are the same 2-gram "abc"; 3 of the 11 characters are repeated */
    struct sl_filter_chain *c =
        load("filters:\n  - gopher_repetition:\n"
             "      top_n_grams: [[2, 1.0]]\n      dup_n_grams: [[2, 0.2]]\n");
    REQUIRE(c);
    CHECK_EQ_INT(run1(c, "ab c x a bc", res), 0);
    CHECK_EQ_STR(res[0].reason, "duplicated_2_n_grams");
    CHECK(fabs(res[0].score - 3.0 / 11) < 1e-12);
    CHECK_EQ_INT(run1(c, "ab c x a bd", res), -1); /* kept */
    sl_filter_chain_free(c);
    /* the top 2-gram "a b" occurs 3 times: 3 * 3 of 13 characters */
    c = load("filters:\n  - gopher_repetition:\n      top_n_grams: [[2, 0.5]]\n"
             "      dup_n_grams: [[5, 1.0]]\n");
    REQUIRE(c);
    CHECK_EQ_INT(run1(c, "a b a b a b c", res), 0);
    CHECK_EQ_STR(res[0].reason, "top_2_gram");
    CHECK(fabs(res[0].score - 9.0 / 13) < 1e-12);
    sl_filter_chain_free(c);
    /* 60000 distinct words twice: the counting tables grow past their starting size and
     * the second half is all duplicated 5-grams */
    c = load("filters:\n  - gopher_repetition:\n      dup_line_frac: 0\n      dup_para_frac: 0\n"
             "      dup_line_char_frac: 0\n      dup_para_char_frac: 0\n"
             "      top_n_grams: [[2, 1.0]]\n      dup_n_grams: [[5, 0.4]]\n");
    REQUIRE(c);
    struct sl_buf t = SL_BUF_INIT;
    char w[16];
    for (int half = 0; half < 2; half++)
        for (int i = 0; i < 60000; i++) {
            int n = snprintf(w, sizeof(w), "w%d ", i);
            sl_buf_append(&t, w, (size_t)n);
        }
    sl_buf_putc(&t, 0);
    CHECK_EQ_INT(run1(c, t.data, res), 0);
    CHECK_EQ_STR(res[0].reason, "duplicated_5_n_grams");
    CHECK(res[0].score > 0.4 && res[0].score < 0.5);
    sl_buf_release(&t);
    sl_filter_chain_free(c);
}

TEST(fasttext_lid_matches_fasttext)
{
    /* Debian fasttext 0.9.2's `predict-prob lid.176.ftz - 5` on the edge cases of
     * shared/data/models/fasttext-lid/reference-predictions.jsonl (top two, printed %g) */
    static const struct {
        const char *text, *l1, *p1, *l2, *p2;
    } cases[] = {
        { "", "en", "0.124504", "ca", "0.0859483" },
        { " ", "en", "0.124504", "ca", "0.0859483" },
        { "hello", "en", "0.242472", "fr", "0.0951117" },
        { "HELLO", "en", "0.124504", "ca", "0.0859483" },
        { "Hello, world!", "en", "0.124504", "ca", "0.0859483" },
        { "the", "en", "0.726528", "de", "0.0196972" },
        { "der die das", "de", "0.997284", "it", "0.000902442" },
        { "This is a plain English sentence about the weather in London.", "en", "0.920336", "es",
          "0.00473299" },
        { "Ceci est une phrase en fran\xc3\xa7"
          "ais.",
          "fr", "0.996551", "la", "0.000562615" },
        { "Esto es una frase en espa\xc3\xb1ol.", "es", "0.980928", "ast", "0.00406934" },
        { "\xd0\xad\xd1\x82\xd0\xbe "
          "\xd0\xbf\xd1\x80\xd0\xb5\xd0\xb4\xd0\xbb\xd0\xbe\xd0\xb6\xd0\xb5\xd0\xbd\xd0\xb8\xd0\xb5"
          " \xd0\xbd\xd0\xb0 \xd1\x80\xd1\x83\xd1\x81\xd1\x81\xd0\xba\xd0\xbe\xd0\xbc "
          "\xd1\x8f\xd0\xb7\xd1\x8b\xd0\xba\xd0\xb5.",
          "ru", "0.986854", "hy", "0.00456783" },
        { "\xe8\xbf\x99\xe6\x98\xaf\xe4\xb8\x80\xe4\xb8\xaa\xe4\xb8\xad\xe6\x96\x87\xe5\x8f\xa5\xe5"
          "\xad\x90\xe3\x80\x82",
          "zh", "0.999712", "wuu", "0.000303688" },
        { "\xe3\x81\x93\xe3\x82\x8c\xe3\x81\xaf\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e\xe3\x81\xae\xe6"
          "\x96\x87\xe3\x81\xa7\xe3\x81\x99\xe3\x80\x82",
          "ja", "0.999884", "uk", "4.87553e-05" },
        { "\xec\x9d\xb4\xea\xb2\x83\xec\x9d\x80 \xed\x95\x9c\xea\xb5\xad\xec\x96\xb4 "
          "\xeb\xac\xb8\xec\x9e\xa5\xec\x9e\x85\xeb\x8b\x88\xeb\x8b\xa4.",
          "ko", "1.00007", "en", "1.04769e-05" },
        { "\xe0\xa4\xaf\xe0\xa4\xb9 \xe0\xa4\xb9\xe0\xa4\xbf\xe0\xa4\x82\xe0\xa4\xa6\xe0\xa5\x80 "
          "\xe0\xa4\xae\xe0\xa5\x87\xe0\xa4\x82 \xe0\xa4\x8f\xe0\xa4\x95 "
          "\xe0\xa4\xb5\xe0\xa4\xbe\xe0\xa4\x95\xe0\xa5\x8d\xe0\xa4\xaf "
          "\xe0\xa4\xb9\xe0\xa5\x88\xe0\xa5\xa4",
          "hi", "0.986596", "el", "0.00508388" },
        { "\xce\x91\xcf\x85\xcf\x84\xce\xae \xce\xb5\xce\xaf\xce\xbd\xce\xb1\xce\xb9 "
          "\xce\xbc\xce\xb9\xce\xb1 "
          "\xce\xb5\xce\xbb\xce\xbb\xce\xb7\xce\xbd\xce\xb9\xce\xba\xce\xae "
          "\xcf\x80\xcf\x81\xcf\x8c\xcf\x84\xce\xb1\xcf\x83\xce\xb7.",
          "el", "0.99785", "ja", "0.000646746" },
        { "Der Hund and the cat sind friends.", "de", "0.888362", "en", "0.0518883" },
        { "https://example.com/index.html?q=1", "en", "0.598696", "de", "0.0625333" },
        { "12345 67890", "en", "0.124504", "ca", "0.0859483" },
        { "!!! ??? ...", "en", "0.272133", "sh", "0.199082" },
        { "\xf0\x9f\x98\x80 \xf0\x9f\x91\x8d", "en", "0.124504", "ca", "0.0859483" },
        { "a\tb\tc", "en", "0.124504", "ca", "0.0859483" },
        { "word word word word word word word word word word word word word word word word word "
          "word word word word word word word word word word word word word word word word word "
          "word word word word word word word word word word word word word word word word word "
          "word word word word word word word word word word word word word word word word word "
          "word word word word word word word word word word word word word word word word word "
          "word word word word word word word word word word word word word word word word word "
          "word word word word word word word word word word word word word word word word word "
          "word word word word word word word word word word word word word word word word word "
          "word word word word word word word word word word word word word word word word word "
          "word word word word word word word word word word word word word word word word word "
          "word word word word word word word word word word word word word word word word word "
          "word word word word word word word word word word word word word ",
          "en", "0.590129", "it", "0.147825" },
        { "\xd0\x9f\xd1\x80\xd0\xb8\xd0\xb2\xd0\xb5\xd1\x82 \xd0\xbc\xd0\xb8\xd1\x80 hello world "
          "\xe4\xbd\xa0\xe5\xa5\xbd\xe4\xb8\x96\xe7\x95\x8c",
          "zh", "0.486942", "sr", "0.258554" },
        { "na\xc3\xafve caf\xc3\xa9 r\xc3\xa9sum\xc3\xa9", "fr", "0.980708", "en", "0.00591495" },
        { "NFD: cafe\xcc\x81", "ru", "0.896726", "vep", "0.0147611" },
    };
    struct sl_fasttext *m = NULL;
    REQUIRE(sl_fasttext_load(&m, sl_test_fixture("filter/lid.176.ftz")) == 0);
    for (int pass = 0; pass < 2; pass++) /* the second pass sees every token again */
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
            char labels[5][64], p[32];
            double probs[5];
            int got = 0;
            CHECK(sl_fasttext_predict(m, cases[i].text, strlen(cases[i].text), 5, labels, probs,
                                      &got) == 0);
            REQUIRE(got >= 2);
            CHECK_EQ_STR(labels[0], cases[i].l1);
            snprintf(p, sizeof(p), "%g", probs[0]);
            CHECK_EQ_STR(p, cases[i].p1);
            CHECK_EQ_STR(labels[1], cases[i].l2);
            snprintf(p, sizeof(p), "%g", probs[1]);
            CHECK_EQ_STR(p, cases[i].p2);
        }
    sl_fasttext_free(m);
}
