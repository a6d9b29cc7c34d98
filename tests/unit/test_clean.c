/* curate/clean: mojibake written from real byte sequences, entities, controls, whitespace. */
#include "tests/harness.h"

#include "core/buf.h"
#include "curate/clean/cleaner.h"

#include <string.h>

static const char *clean(const char *in, struct sl_clean_counts *c)
{
    static struct sl_buf out;
    struct sl_clean_opts o;
    memset(&o, 0, sizeof(o));
    memset(c, 0, sizeof(*c));
    sl_clean_text(&o, in, strlen(in), &out, c);
    return out.data ? out.data : "";
}

TEST(clean_mojibake_cp1252)
{
    struct sl_clean_counts c;
    /* "café" encoded as UTF-8 (63 61 66 C3 A9) then decoded as Windows-1252: "cafÃ©" */
    CHECK_EQ_STR(clean("caf\xc3\x83\xc2\xa9", &c), "caf\xc3\xa9");
    CHECK_EQ_INT(c.mojibake, 1);
    /* RIGHT SINGLE QUOTATION MARK (E2 80 99) read as cp1252: "â€™" (C3A2 E282AC E284A2) */
    CHECK_EQ_STR(clean("don\xc3\xa2\xe2\x82\xac\xe2\x84\xa2t", &c), "don\xe2\x80\x99t");
    /* EN DASH (E2 80 93) -> "â€“" */
    CHECK_EQ_STR(clean("1990\xc3\xa2\xe2\x82\xac\xe2\x80\x9c" "2000", &c), "1990\xe2\x80\x93" "2000");
    /* German "für" (66 C3 BC 72) read as Latin-1: "fÃ¼r" */
    CHECK_EQ_STR(clean("f\xc3\x83\xc2\xbcr", &c), "f\xc3\xbcr");
    /* Russian "привет" read as cp1252: "Ð¿Ñ€Ð¸Ð²ÐµÑ‚" */
    CHECK_EQ_STR(clean("\xc3\x90\xc2\xbf\xc3\x91\xe2\x82\xac\xc3\x90\xc2\xb8\xc3\x90\xc2\xb2\xc3\x90\xc2\xb5\xc3\x91\xe2\x80\x9a", &c),
                 "\xd0\xbf\xd1\x80\xd0\xb8\xd0\xb2\xd0\xb5\xd1\x82");
    /* double mojibake of "é": "ÃƒÂ©" */
    CHECK_EQ_STR(clean("\xc3\x83\xc6\x92\xc3\x82\xc2\xa9", &c), "\xc3\xa9");
}

TEST(clean_latin1_mojibake_through_c1)
{
    struct sl_clean_counts c;
    /* "ÁLVARO" (C3 81 ...) read as Latin-1: "Ã" + U+0081, a C1 control that Windows-1252
     * leaves undefined. The repair comes before the C1 pass (ftfy's order). */
    CHECK_EQ_STR(clean("\xc3\x83\xc2\x81LVARO", &c), "\xc3\x81LVARO");
    CHECK_EQ_INT(c.mojibake, 1);
    /* Í Ï Ð Ý: C3 8D, C3 8F, C3 90, C3 9D */
    CHECK_EQ_STR(clean("\xc3\x83\xc2\x8d \xc3\x83\xc2\x8f \xc3\x83\xc2\x90 \xc3\x83\xc2\x9d", &c),
                 "\xc3\x8d \xc3\x8f \xc3\x90 \xc3\x9d");
    /* a lone undefined C1 control with nothing to repair is removed */
    CHECK_EQ_STR(clean("a\xc2\x81" "b", &c), "ab");
    CHECK_EQ_INT(c.c1_controls, 1);
    /* --no-mojibake: the text is not destroyed: the undefined C1 control stays (ftfy's
     * fix_c1_controls keeps it too), the defined ones still become their characters */
    struct sl_buf out = SL_BUF_INIT;
    struct sl_clean_opts o;
    memset(&o, 0, sizeof(o));
    o.no_mojibake = 1;
    memset(&c, 0, sizeof(c));
    const char *in = "\xc3\x83\xc2\x81LVARO \xc2\x93q\xc2\x94";
    sl_clean_text(&o, in, strlen(in), &out, &c);
    CHECK_EQ_STR(out.data, "\xc3\x83\xc2\x81LVARO \xe2\x80\x9cq\xe2\x80\x9d");
    CHECK_EQ_INT(c.c1_controls, 2);
    sl_buf_release(&out);
}

TEST(clean_leaves_real_text)
{
    struct sl_clean_counts c;
    /* Latin-1 letters that do not form UTF-8: "ção", "Ærø", "naïve" stay */
    CHECK_EQ_STR(clean("a\xc3\xa7\xc3\xa3o \xc3\x86r\xc3\xb8 na\xc3\xafve", &c),
                 "a\xc3\xa7\xc3\xa3o \xc3\x86r\xc3\xb8 na\xc3\xafve");
    CHECK_EQ_INT(c.mojibake, 0);
    CHECK_EQ_STR(clean("plain ASCII text", &c), "plain ASCII text");
}

TEST(clean_entities_controls_whitespace)
{
    struct sl_clean_counts c;
    CHECK_EQ_STR(clean("Tom &amp; Jerry &#8211; &lt;3 &eacute;t&#xE9;", &c), "Tom & Jerry \xe2\x80\x93 <3 \xc3\xa9t\xc3\xa9");
    CHECK_EQ_INT(c.html_entities, 5);
    /* left alone when the text still has tags */
    CHECK_EQ_STR(clean("<p>a &amp; b</p>", &c), "<p>a &amp; b</p>");
    /* terminal escapes, C0 controls, BOM; C1 0x93/0x94 as cp1252 quotes */
    CHECK_EQ_STR(clean("\x1b[31mred\x1b[0m\x01 \xef\xbb\xbfok \xc2\x93q\xc2\x94", &c), "red ok \xe2\x80\x9cq\xe2\x80\x9d");
    CHECK_EQ_INT(c.terminal_escapes, 2);
    CHECK_EQ_INT(c.c1_controls, 2);
    /* NFC: e + COMBINING ACUTE -> é */
    CHECK_EQ_STR(clean("e\xcc\x81", &c), "\xc3\xa9");
    CHECK_EQ_INT(c.normalized, 1);
    /* whitespace: CRLF, trailing spaces, 3+ newlines */
    CHECK_EQ_STR(clean("a  \r\nb\n\n\n\n\nc \t", &c), "a\nb\n\nc");
    CHECK_EQ_INT(c.newlines_collapsed, 1);
    /* a line of only tabs or spaces inside a run of newlines is empty too (found by
     * fuzz_clean: "\n\n\n\t\n" left three newlines) */
    CHECK_EQ_STR(clean("t\r\n\n\n\t\n\n \n\nthe end", &c), "t\n\nthe end");
    CHECK_EQ_INT(c.newlines_collapsed, 1);
    CHECK_EQ_STR(clean("a\n\t\n \nb\n\n  x", &c), "a\n\nb\n\n  x");
    /* invalid UTF-8 becomes U+FFFD */
    CHECK_EQ_STR(clean("x\xff" "y", &c), "x\xef\xbf\xbdy");
    CHECK_EQ_STR(clean("", &c), "");
}

TEST(clean_options)
{
    struct sl_buf out = SL_BUF_INIT;
    struct sl_clean_counts c;
    memset(&c, 0, sizeof(c));
    struct sl_clean_opts o;
    memset(&o, 0, sizeof(o));
    o.remove_urls = o.uncurl_quotes = o.nfkc = 1;
    const char *in = "see https://x.org/a?b=1 and www.y.com \xe2\x80\x9cq\xe2\x80\x9d \xef\xac\x81";
    sl_clean_text(&o, in, strlen(in), &out, &c);
    CHECK_EQ_STR(out.data, "see  and  \"q\" fi");
    CHECK_EQ_INT(c.urls_removed, 2);
    CHECK_EQ_INT(c.quotes_uncurled, 2);
    sl_buf_release(&out);
}
