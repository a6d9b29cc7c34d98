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
