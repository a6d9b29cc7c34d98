/* curate/filter: word splitting, the chain's config errors, and single filters on small
 * texts whose decisions are worked out by hand from the definitions. */
#include "tests/harness.h"

#include "core/buf.h"
#include "core/err.h"
#include "curate/filter/chain.h"
#include "curate/filter/words.h"

#include <math.h>
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
    struct sl_filter_chain *c = load("filters:\n  - gopher_repetition:\n"
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
