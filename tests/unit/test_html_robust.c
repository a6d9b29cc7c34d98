/* Bad input for curate/extract/html: deep nesting, huge pages, invalid bytes under every
 * charset label, broken markup. Outcomes: rc 0 with valid UTF-8 text, or SL_ERR_TOOBIG
 * past the size cap; never a crash. */
#include "tests/harness.h"

#include "core/buf.h"
#include "core/err.h"
#include "core/utf8.h"
#include "curate/extract/html.h"

#include <stdlib.h>

static void check_valid(const struct html_doc *d)
{
    CHECK(sl_utf8_validate(d->text.data ? d->text.data : "", d->text.len) == d->text.len);
    CHECK(sl_utf8_validate(d->title.data ? d->title.data : "", d->title.len) == d->title.len);
}

TEST(html_deeply_nested)
{
    struct sl_buf b = SL_BUF_INIT;
    const size_t depth = 200000;
    for (size_t i = 0; i < depth; i++)
        sl_buf_puts(&b, i % 3 ? "<div>" : "<span><b>");
    sl_buf_puts(&b, "<p>Deep text, at the bottom, still comes out.</p>");
    for (size_t i = 0; i < depth; i++)
        sl_buf_puts(&b, i % 2 ? "</div>" : "</span>");
    sl_buf_puts(&b, "<p>After the nest.</p>");
    struct html_doc d;
    html_doc_init(&d);
    REQUIRE(html_extract(b.data, b.len, NULL, &d) == 0);
    CHECK_CONTAINS(d.text.data, "Deep text, at the bottom, still comes out.");
    check_valid(&d);
    /* unclosed nesting of block elements that auto-close each other */
    sl_buf_reset(&b);
    for (size_t i = 0; i < depth; i++)
        sl_buf_puts(&b, "<li><table><tr><td>");
    sl_buf_puts(&b, "cell text");
    REQUIRE(html_extract(b.data, b.len, NULL, &d) == 0);
    check_valid(&d);
    html_doc_release(&d);
    sl_buf_release(&b);
}

TEST(html_huge_pages)
{
    struct sl_buf b = SL_BUF_INIT;
    /* ~24 MB of paragraphs and one 4 MB text run without any tag */
    sl_buf_puts(&b, "<html><body><article>");
    for (int i = 0; i < 120000; i++)
        sl_buf_printf(&b, "<p>Paragraph %d of a very long page, with commas, and words.</p>\n", i);
    sl_buf_puts(&b, "<p>");
    for (int i = 0; i < 400000; i++)
        sl_buf_puts(&b, "wordy text ");
    sl_buf_puts(&b, "</p></article></body></html>");
    struct html_doc d;
    html_doc_init(&d);
    REQUIRE(html_extract(b.data, b.len, NULL, &d) == 0);
    CHECK_CONTAINS(d.text.data, "Paragraph 119999 of a very long page");
    CHECK(d.text.len > 4000000);
    check_valid(&d);
    /* over the input cap: refused before anything is read */
    CHECK_EQ_INT(html_extract(b.data, HTML_MAX_INPUT + 1, NULL, &d), SL_ERR_TOOBIG);
    CHECK_EQ_INT(d.text.len, 0);
    html_doc_release(&d);
    sl_buf_release(&b);
}

TEST(html_invalid_bytes_every_charset)
{
    static const char *const cs[] = {
        NULL,           "utf-8",       "windows-1252", "iso-8859-2",    "iso-8859-5", "koi8-r",
        "windows-1251", "shift_jis",   "euc-jp",       "iso-2022-jp",   "gb2312",     "gb18030",
        "big5",         "euc-kr",      "utf-16",       "utf-16le",      "utf-16be",   "utf-32",
        "tis-620",      "windows-874", "x-mac-roman",  "bogus-charset", "",
    };
    uint64_t x = 0x9E3779B97F4A7C15ull;
    struct sl_buf b = SL_BUF_INIT;
    struct html_doc d;
    html_doc_init(&d);
    for (size_t c = 0; c < sizeof(cs) / sizeof(cs[0]); c++) {
        for (int round = 0; round < 20; round++) {
            sl_buf_reset(&b);
            sl_buf_puts(&b, "<html><head><title>t\xff\xfe</title></head><body><p>");
            for (int i = 0; i < 3000; i++) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                unsigned char ch = (unsigned char)(x >> 24);
                sl_buf_putc(&b, (char)(round % 2 ? ch | 0x80 : ch));
            }
            sl_buf_puts(&b, "</p></body></html>");
            int rc = html_extract(b.data, b.len, cs[c], &d);
            if (rc != 0)
                sl_test_fail(__FILE__, __LINE__, "charset %s: rc %d", cs[c] ? cs[c] : "(none)", rc);
            check_valid(&d);
        }
    }
    html_doc_release(&d);
    sl_buf_release(&b);
}

/* The title has a byte cap (4 KiB); a long title of multi-byte characters must not be cut
 * inside one (found by fuzz_html). Every alignment of the cap against 2-, 3- and 4-byte
 * characters. */
TEST(html_long_title_cut_at_a_character)
{
    static const char *const ch[] = { "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80" };
    struct sl_buf b = SL_BUF_INIT;
    struct html_doc d;
    html_doc_init(&d);
    for (int c = 0; c < 3; c++) {
        for (int shift = 0; shift < 4; shift++) {
            sl_buf_reset(&b);
            sl_buf_puts(&b, "<html><head><title>");
            for (int i = 0; i < shift; i++)
                sl_buf_putc(&b, 'x');
            for (int i = 0; i < 3000; i++)
                sl_buf_puts(&b, ch[c]);
            sl_buf_puts(&b, "</title></head><body><p>text</p></body></html>");
            CHECK_EQ_INT(html_extract(b.data, b.len, NULL, &d), 0);
            check_valid(&d);
            CHECK(d.title.len > 4000);
        }
    }
    html_doc_release(&d);
    sl_buf_release(&b);
}

TEST(html_broken_markup)
{
    static const char *const pages[] = {
        "<p>unclosed paragraph <b>bold <i>italic",
        "</div></div></p>stray end tags<p>then text</p>",
        "<script>never closed, var a = '<p>x</p>';",
        "<!-- comment never closed <p>hidden</p>",
        "<p>text</p><!-->x<!--->y",
        "<svg/><p>after a self-closed svg</p><math>",
        "<div class='\"'><p a=b c=\"d>e\">quoted > in attribute</p>",
        "<a href=x><a href=y>nested links</a></a>",
        "<table><td>cell<td>cell 2<tr><th>h</table></td>",
        "<p>\0nul bytes\0 inside</p>",
        "<<<<>>>><p>angles <<< here</p><",
        "<meta charset=\"utf-16\"><p>ascii page that claims utf-16</p>",
        "<html><html><body><body><p>twice</p>",
        "\xef\xbb\xbf<p>utf-8 BOM</p>",
        "<p>&amp;&lt;&#0;&#xD800;&#1114112;&bogus; entities</p>",
    };
    struct html_doc d;
    html_doc_init(&d);
    for (size_t i = 0; i < sizeof(pages) / sizeof(pages[0]); i++) {
        size_t n = i == 9 ? 26 : strlen(pages[i]);
        if (html_extract(pages[i], n, NULL, &d) != 0)
            sl_test_fail(__FILE__, __LINE__, "page %zu: %s", i, sl_err_msg());
        check_valid(&d);
    }
    CHECK_EQ_INT(html_extract(pages[11], strlen(pages[11]), NULL, &d), 0);
    CHECK_CONTAINS(d.text.data, "ascii page that claims utf-16");
    CHECK_EQ_INT(html_extract(pages[13], strlen(pages[13]), NULL, &d), 0);
    CHECK_EQ_STR(d.text.data, "utf-8 BOM");
    html_doc_release(&d);
}

/* Unclosed elements whose contents are dropped (svg, template, math, select, ...) used to
 * search the rest of the page for their end tag once per start tag: 200,000 of them took
 * minutes. Now each page is work linear in its size; this test would hang without that. */
TEST(html_unclosed_elements_are_linear)
{
    static const char *const units[] = { "<svg>",    "<template>",   "<math>",  "<select>",
                                         "<object>", "<video>",      "<audio>", "<canvas>",
                                         "<x",       "<svg><p>x</p>" };
    struct sl_buf b = SL_BUF_INIT;
    struct html_doc d;
    html_doc_init(&d);
    for (size_t u = 0; u < sizeof(units) / sizeof(units[0]); u++) {
        sl_buf_reset(&b);
        for (int i = 0; i < 200000; i++)
            sl_buf_puts(&b, units[u]);
        sl_buf_puts(&b, "<p>The end of the page.</p>");
        REQUIRE(html_extract(b.data, b.len, NULL, &d) == 0);
        check_valid(&d);
    }
    /* an end tag far away is still found, and what follows it is kept */
    sl_buf_reset(&b);
    for (int i = 0; i < 100000; i++)
        sl_buf_puts(&b, "<svg><g>");
    sl_buf_puts(&b, "</svg><p>Text after the drawing stays in the page.</p>");
    REQUIRE(html_extract(b.data, b.len, NULL, &d) == 0);
    CHECK_CONTAINS(d.text.data, "Text after the drawing stays in the page.");
    html_doc_release(&d);
    sl_buf_release(&b);
}
