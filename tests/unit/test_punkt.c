/* Tests for the Punkt sentence splitter's parts (tokenize/punkt*.h): the string table, the
 * punkt_tab reader (line ends, errors by file and line) and writer, the model search, the
 * lower case of Python's str.lower, the splitter's spans and pieces, and the trainer's
 * "texts joined by blank lines". Agreement with NLTK itself is tests/cli/t_tokenize_sentences.sh's.
 */
#include "tests/harness.h"

#include "core/atomic.h"
#include "core/buf.h"
#include "core/err.h"
#include "core/rng.h"
#include "tokenize/punkt.h"
#include "tokenize/punkt_map.h"
#include "tokenize/punkt_params.h"
#include "tokenize/punkt_train.h"
#include "tokenize/punkt_uni.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

TEST(punkt_map_ids_values_and_order)
{
    struct punkt_map *m = punkt_map_new();
    char key[32];
    for (int i = 0; i < 10000; i++) {
        snprintf(key, sizeof(key), "k%d", i);
        CHECK_EQ_INT(punkt_map_add(m, key, strlen(key)), i);
        *punkt_map_value(m, (uint32_t)i) = i * 3;
    }
    CHECK_EQ_INT(punkt_map_count(m), 10000);
    for (int i = 0; i < 10000; i += 97) {
        snprintf(key, sizeof(key), "k%d", i);
        CHECK_EQ_INT(punkt_map_find(m, key, strlen(key)), i);
        CHECK_EQ_INT(punkt_map_get(m, key, strlen(key)), i * 3);
        CHECK_EQ_INT(punkt_map_add(m, key, strlen(key)), i); /* again: the same id */
    }
    CHECK(punkt_map_find(m, "k10000", 6) == PUNKT_MAP_MISSING);
    CHECK_EQ_INT(punkt_map_get(m, "nope", 4), 0);
    punkt_map_free(m);

    /* byte order, a prefix first; the empty key; a NUL inside a key */
    m = punkt_map_new();
    const char *keys[] = { "b", "ab", "a", "", "\xc3\xa9", "a\0b" };
    size_t lens[] = { 1, 2, 1, 0, 2, 3 };
    for (int i = 0; i < 6; i++)
        punkt_map_add(m, keys[i], lens[i]);
    CHECK(punkt_map_find(m, "a\0b", 3) == 5);
    CHECK(punkt_map_find(m, "a\0c", 3) == PUNKT_MAP_MISSING);
    uint32_t *ids = punkt_map_sorted(m);
    const uint32_t want[] = { 3, 2, 5, 1, 0, 4 };
    for (int i = 0; i < 6; i++)
        CHECK_EQ_INT(ids[i], want[i]);
    free(ids);
    punkt_map_free(m);
}

TEST(punkt_params_lines_and_ends)
{
    struct punkt_params *p = punkt_params_new();
    /* \r\n, \r and \n end lines; the last may have none; an empty line is the empty type */
    const char *abbr = "mr\r\ndr\rst\n\netc";
    CHECK_EQ_INT(punkt_params_parse(p, PUNKT_FILE_ABBREVS, "a.txt", abbr, strlen(abbr)), 0);
    CHECK_EQ_INT(punkt_map_count(p->abbrev), 5);
    CHECK(punkt_map_find(p->abbrev, "st", 2) != PUNKT_MAP_MISSING);
    CHECK(punkt_map_find(p->abbrev, "", 0) != PUNKT_MAP_MISSING);
    CHECK(punkt_map_find(p->abbrev, "etc", 3) != PUNKT_MAP_MISSING);
    /* ortho: the last line of a type wins; blanks and a sign are accepted, as int() takes them */
    const char *ortho = "the\t32\nmr\t2\nthe\t 34 \nneg\t-3\nplus\t+8";
    CHECK_EQ_INT(punkt_params_parse(p, PUNKT_FILE_ORTHO, "o.tab", ortho, strlen(ortho)), 0);
    CHECK_EQ_INT(punkt_map_get(p->ortho, "the", 3), 34);
    CHECK_EQ_INT(punkt_map_get(p->ortho, "neg", 3), -3);
    CHECK_EQ_INT(punkt_map_get(p->ortho, "plus", 4), 8);
    const char *col = "j\tbach\n##number##\tjanuar";
    CHECK_EQ_INT(punkt_params_parse(p, PUNKT_FILE_COLLOCATIONS, "c.tab", col, strlen(col)), 0);
    CHECK(punkt_map_find(p->colloc, "j\tbach", 6) != PUNKT_MAP_MISSING);
    /* written sorted, joined by \n, no final line end */
    struct sl_buf b = SL_BUF_INIT;
    punkt_params_format(p, PUNKT_FILE_ORTHO, &b);
    CHECK_EQ_STR(b.data, "mr\t2\nneg\t-3\nplus\t8\nthe\t34");
    sl_buf_release(&b);
    punkt_params_free(p);
}

/* The message of parsing `text` as file f, which must fail with `code`. */
static void check_refused(enum punkt_file f, const char *text, size_t n, int code, const char *msg)
{
    struct punkt_params *p = punkt_params_new();
    CHECK_EQ_INT(punkt_params_parse(p, f, "DIR/x", text, n), code);
    CHECK_CONTAINS(sl_err_msg(), msg);
    punkt_params_free(p);
}

TEST(punkt_params_refused_by_line)
{
    check_refused(PUNKT_FILE_COLLOCATIONS, "a\tb\nc\td\te", 9, SL_ERR_FORMAT,
                  "'DIR/x' line 2: expected two word types separated by one tab, got 'c");
    check_refused(PUNKT_FILE_COLLOCATIONS, "a\tb\n\n", 5, SL_ERR_FORMAT, "line 2");
    check_refused(PUNKT_FILE_ORTHO, "a\t2\r\nb\t\r\n", 10, SL_ERR_FORMAT,
                  "'DIR/x' line 2: expected a word type, a tab and an integer");
    check_refused(PUNKT_FILE_ORTHO, "a\t1_0", 5, SL_ERR_FORMAT, "line 1");
    check_refused(PUNKT_FILE_ORTHO, "a\t9223372036854775808", 21, SL_ERR_FORMAT, "line 1");
    check_refused(PUNKT_FILE_ORTHO, "noflags", 7, SL_ERR_FORMAT, "line 1");
    check_refused(PUNKT_FILE_STARTERS, "the\rhe\xff\n", 8, SL_ERR_FORMAT,
                  "'DIR/x' line 2: not UTF-8");
    /* the largest int64 and its negative counterpart are values */
    struct punkt_params *p = punkt_params_new();
    const char *ok = "a\t9223372036854775807\nb\t-9223372036854775808";
    CHECK_EQ_INT(punkt_params_parse(p, PUNKT_FILE_ORTHO, "o", ok, strlen(ok)), 0);
    CHECK(punkt_map_get(p->ortho, "a", 1) == INT64_MAX);
    CHECK(punkt_map_get(p->ortho, "b", 1) == INT64_MIN);
    punkt_params_free(p);
}

TEST(punkt_params_write_load_and_find)
{
    char dir[512], lang[600], data[600];
    snprintf(dir, sizeof(dir), "%s/punkt_data/tokenizers/punkt_tab/xx", sl_test_tmpdir());
    struct punkt_params *p = punkt_params_new(), *q = NULL;
    punkt_map_add(p->abbrev, "mr", 2);
    punkt_map_add(p->starters, "the", 3);
    punkt_map_add(p->colloc, "j\tbach", 6);
    *punkt_map_value(p->ortho, (uint32_t)punkt_map_add(p->ortho, "the", 3)) = 34;
    CHECK_EQ_INT(punkt_params_write(p, dir), 0);
    CHECK_EQ_INT(punkt_params_load(&q, dir), 0);
    REQUIRE(q);
    char f1[17], f2[17];
    punkt_params_fingerprint(p, f1);
    punkt_params_fingerprint(q, f2);
    CHECK_EQ_STR(f1, f2);
    *punkt_map_value(q->ortho, 0) = 32; /* any change shows */
    punkt_params_fingerprint(q, f2);
    CHECK(strcmp(f1, f2) != 0);
    punkt_params_free(q);
    punkt_params_free(p);

    /* a missing file is named */
    snprintf(lang, sizeof(lang), "%s/ortho_context.tab", dir);
    remove(lang);
    CHECK_EQ_INT(punkt_params_load(&q, dir), SL_ERR_NOTFOUND);
    CHECK_CONTAINS(sl_err_msg(), "ortho_context.tab");
    CHECK(q == NULL);

    /* NLTK's data path first (NLTK_DATA: colon-separated), then the data directory's */
    char *saved = getenv("NLTK_DATA") ? strdup(getenv("NLTK_DATA")) : NULL;
    snprintf(data, sizeof(data), "%s/nowhere::%s/punkt_data", sl_test_tmpdir(), sl_test_tmpdir());
    setenv("NLTK_DATA", data, 1);
    char *found = NULL;
    CHECK_EQ_INT(punkt_params_find("xx", NULL, &found), 0);
    CHECK_EQ_STR(found, dir);
    free(found);
    snprintf(data, sizeof(data), "%s/sluice_data", sl_test_tmpdir());
    snprintf(lang, sizeof(lang), "%s/configs/punkt/yy", data);
    CHECK_EQ_INT(sl_mkdir_p(lang), 0);
    CHECK_EQ_INT(punkt_params_find("yy", data, &found), 0);
    CHECK_EQ_STR(found, lang);
    free(found);
    CHECK_EQ_INT(punkt_params_find("zz", data, &found), SL_ERR_NOTFOUND);
    CHECK_CONTAINS(sl_err_msg(), "no punkt model for 'zz'");
    CHECK_EQ_INT(punkt_params_find("../xx", data, &found), SL_ERR_USAGE);
    CHECK_EQ_INT(punkt_params_find("", data, &found), SL_ERR_USAGE);
    CHECK(found == NULL);
    if (saved)
        setenv("NLTK_DATA", saved, 1);
    else
        unsetenv("NLTK_DATA");
    free(saved);
}

static void check_lower(const char *in, const char *want)
{
    struct sl_buf b = SL_BUF_INIT;
    punkt_uni_lower(in, strlen(in), &b);
    CHECK_EQ_STR(b.data ? b.data : "", want);
    sl_buf_release(&b);
}

TEST(punkt_lower_as_python)
{
    check_lower("Mr. SMITH", "mr. smith");
    /* Final_Sigma: final after a cased letter, case-ignorable characters skipped */
    check_lower("\xce\x9f\xce\x94\xce\x9f\xce\xa3", "\xce\xbf\xce\xb4\xce\xbf\xcf\x82");
    check_lower("\xce\xa3\xce\x91", "\xcf\x83\xce\xb1");
    check_lower("\xce\xa3", "\xcf\x83");
    check_lower("A\xce\xa3.", "a\xcf\x82.");
    check_lower("A\xce\xa3'B", "a\xcf\x83'b");
    /* full mappings: U+0130 is two characters in lower case */
    check_lower("\xc4\xb0stanbul", "i\xcc\x87stanbul");
    /* a byte that is not UTF-8 is kept */
    check_lower("A\xff"
                "B",
                "a\xff"
                "b");
}

/* Spans are in order, do not overlap, are not empty and lie within the text. */
static void check_spans(const struct punkt_spans *s, size_t n)
{
    size_t last = 0;
    for (size_t i = 0; i < s->n; i++) {
        CHECK(s->v[i].start >= last);
        CHECK(s->v[i].start < s->v[i].end);
        CHECK(s->v[i].end <= n);
        last = s->v[i].end;
    }
}

TEST(punkt_split_spans)
{
    struct punkt_params *p = punkt_params_new();
    punkt_map_add(p->abbrev, "mr", 2);
    struct punkt *k = punkt_new(p, 0), *kn = punkt_new(p, 1);
    struct punkt_spans s = { 0 };
    /* without quotes to realign, the sentences of --keep-newlines hold the whole text, the
     * whitespace after each included; the default ones end where their words do */
    const char *t = "Mr. Smith left. He came back!\n\nWhy? Because.\n\tThe end.  ";
    punkt_split(kn, t, strlen(t), &s);
    check_spans(&s, strlen(t));
    CHECK(s.n >= 4);
    for (size_t i = 0; i + 1 < s.n; i++)
        CHECK_EQ_INT(s.v[i].end, s.v[i + 1].start);
    CHECK_EQ_INT(s.v[0].start, 0);
    CHECK_EQ_INT(s.v[s.n - 1].end, strlen(t) - 2);
    size_t nkeep = s.n;
    s.n = 0;
    punkt_split(k, t, strlen(t), &s);
    check_spans(&s, strlen(t));
    CHECK_EQ_INT(s.n, nkeep);
    for (size_t i = 0; i < s.n; i++)
        CHECK(!strchr(" \t\n", t[s.v[i].end - 1]) && !strchr(" \t\n", t[s.v[i].start]));
    /* nothing to split: no sentence */
    s.n = 0;
    punkt_split(k, " \n\t ", 4, &s);
    CHECK_EQ_INT(s.n, 0);
    /* pieces of 10 characters (here, 2-byte ones): spans never cross a piece's end */
    const char *u = "\xc3\xa9\xc3\xa9. \xc3\xa9\xc3\xa9\xc3\xa9 "
                    "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9. \xc3\xa9.";
    s.n = 0;
    punkt_split_pieces(k, u, strlen(u), 10, &s);
    check_spans(&s, strlen(u));
    for (size_t i = 0; i < s.n; i++) {
        size_t a = punkt_uni_count(u, s.v[i].start), b = punkt_uni_count(u, s.v[i].end);
        CHECK(a / 10 == (b - 1) / 10);
    }
    /* random byte strings of sentence material: spans stay well-formed */
    struct sl_rng rng;
    sl_rng_seed(&rng, 42, 0);
    static const char *const bits[] = { ". ", "?",        "!",    "\n",       " ", "A",
                                        "b",  "Mr.",      "1.",   "\"",       ")", "...",
                                        "--", "\xc3\x89", "\xff", "\xce\xa3", "J." };
    char buf[512];
    for (int r = 0; r < 2000; r++) {
        size_t n = 0, parts = sl_rng_below(&rng, 60);
        for (size_t i = 0; i < parts; i++) {
            const char *x = bits[sl_rng_below(&rng, sizeof(bits) / sizeof(bits[0]))];
            memcpy(buf + n, x, strlen(x));
            n += strlen(x);
        }
        for (int nl = 0; nl < 2; nl++) {
            s.n = 0;
            punkt_split(nl ? kn : k, buf, n, &s);
            check_spans(&s, n);
        }
    }
    punkt_spans_release(&s);
    punkt_free(k);
    punkt_free(kn);
    punkt_params_free(p);
}

TEST(punkt_train_texts_joined_by_blank_lines)
{
    const char *a = "Mr. Smith met Dr. Jones at 5 p.m. on the U.S. coast. He left. The end.\n"
                    "J. Bach wrote it. Mr. Bach did. Then he went home.";
    const char *b = "Dr. Who? Mr. Smith again. The U.S. flag. It is J. Bach. The end.";
    struct punkt_trainer *t1 = punkt_trainer_new(), *t2 = punkt_trainer_new();
    CHECK_EQ_INT(punkt_trainer_add(t1, a, strlen(a)), 0);
    CHECK_EQ_INT(punkt_trainer_add(t1, b, strlen(b)), 0);
    struct sl_buf j = SL_BUF_INIT;
    sl_buf_printf(&j, "%s\n\n%s", a, b);
    CHECK_EQ_INT(punkt_trainer_add(t2, j.data, j.len), 0);
    struct punkt_params *p1, *p2;
    struct punkt_train_stats st;
    CHECK_EQ_INT(punkt_trainer_finish(t1, &p1, &st), 0);
    CHECK_EQ_INT(punkt_trainer_finish(t2, &p2, NULL), 0);
    CHECK_EQ_INT(st.texts, 2);
    CHECK(st.tokens > 40);
    CHECK(punkt_map_count(p1->ortho) > 0);
    char f1[17], f2[17];
    punkt_params_fingerprint(p1, f1);
    punkt_params_fingerprint(p2, f2);
    CHECK_EQ_STR(f1, f2);
    punkt_params_free(p1);
    punkt_params_free(p2);
    punkt_trainer_free(t1);
    punkt_trainer_free(t2);
    sl_buf_release(&j);

    /* nothing added: empty parameters */
    struct punkt_trainer *t = punkt_trainer_new();
    struct punkt_params *p;
    CHECK_EQ_INT(punkt_trainer_finish(t, &p, &st), 0);
    CHECK_EQ_INT(st.tokens, 0);
    CHECK_EQ_INT(punkt_map_count(p->abbrev) + punkt_map_count(p->ortho), 0);
    punkt_params_free(p);
    punkt_trainer_free(t);
}
