/* Tests for curate/extract/html: main text kept and boilerplate dropped, block layout,
 * title and language, charsets, hidden and raw elements, the file helper, UDHR pages in
 * ten scripts and three benchmark pages. */
#include "tests/harness.h"

#include "core/buf.h"
#include "core/counters.h"
#include "core/doc.h"
#include "core/err.h"
#include "core/stream.h"
#include "core/utf8.h"
#include "curate/extract/html.h"
#include "curate/extract/html_file.h"
#include "curate/extract/html_prep.h"

#include <json-c/json.h>
#include <stdlib.h>

static const char *extract(struct html_doc *d, const char *html, const char *hint)
{
    REQUIRE(html_extract(html, strlen(html), hint, d) == 0);
    REQUIRE(sl_utf8_validate(d->text.data ? d->text.data : "", d->text.len) == d->text.len);
    return d->text.data ? d->text.data : "";
}

#define PARA(s) "<p>" s " This sentence, with commas, makes the paragraph long enough.</p>"

static const char
    *PAGE =
        "<!doctype html><html lang=\"en-GB\"><head><title>The Story | Site</title>"
        "<script>var x = '<p>not text</p>';</script><style>p{color:red}</style></head><body>"
        "<div id=\"cookie-banner\"><p>We use cookies, to improve things, accept them all now "
        "please.</p></div>"
        "<nav><ul><li><a href=\"/\">Home</a></li><li><a href=\"/n\">News</a></li></ul></nav>"
        "<header class=\"site-header\"><a href=\"/\">Logo</a></header>"
        "<main><article><h1>The Story</h1>"
        "<div class=\"share-tools\"><a href=\"#\">Share on Facebook</a></div>" PARA("First "
                                                                                    "paragraph of "
                                                                                    "the story.") "<!-- a comment, never text -->" PARA("Second paragraph of the story.") "<h2>A subheading</h2>" PARA(
            "Third paragraph under the subheading.") "<ul><li>first item of the "
                                                     "list</li><li>second item of the "
                                                     "list</li></ul>"
                                                     "<table><tr><th>Name</th><th>Value</th></"
                                                     "tr><tr><td>alpha</td><td>1</td></tr></table>"
                                                     "<pre>code   keeps\n  its spaces</pre>"
                                                     "<p style=\"display:none\">hidden by "
                                                     "style</p><p hidden>hidden by attribute</p>"
                                                     "<span aria-hidden=\"true\">aria "
                                                     "hidden</span>" PARA("Fourth paragraph &amp; "
                                                                          "an entity.") "</article>"
                                                                                        "<section "
                                                                                        "class="
                                                                                        "\"comments"
                                                                                        "\"><p>A "
                                                                                        "reader "
                                                                                        "comment, "
                                                                                        "with many "
                                                                                        "words, "
                                                                                        "that is "
                                                                                        "long "
                                                                                        "enough to "
                                                                                        "be a "
                                                                                        "paragraph "
                                                                                        "too.</p></"
                                                                                        "section></"
                                                                                        "main>"
                                                                                        "<aside><p>"
                                                                                        "Sidebar "
                                                                                        "text, "
                                                                                        "related "
                                                                                        "stories, "
                                                                                        "and so "
                                                                                        "on, which "
                                                                                        "is "
                                                                                        "boilerplat"
                                                                                        "e.</p></"
                                                                                        "aside>"
                                                                                        "<footer><"
                                                                                        "p>"
                                                                                        "Copyright "
                                                                                        "2024, all "
                                                                                        "rights "
                                                                                        "reserved, "
                                                                                        "by the "
                                                                                        "company.</"
                                                                                        "p></"
                                                                                        "footer>"
                                                                                        "</body></"
                                                                                        "html>";

TEST(html_main_text_and_boilerplate)
{
    struct html_doc d;
    html_doc_init(&d);
    const char *t = extract(&d, PAGE, NULL);
    CHECK_CONTAINS(t, "First paragraph of the story.");
    CHECK_CONTAINS(t, "Fourth paragraph & an entity.");
    CHECK_CONTAINS(t, "\n\nA subheading\n\nThird paragraph");
    CHECK_CONTAINS(t, "first item of the list\nsecond item of the list");
    CHECK_CONTAINS(t, "Name | Value\nalpha | 1");
    CHECK_CONTAINS(t, "code   keeps\n  its spaces");
    const char *absent[] = { "cookies", "Home",     "Logo",      "Share on",
                             "comment", "Sidebar",  "Copyright", "hidden by",
                             "aria",    "not text", "color:red", "The Story\n" };
    for (size_t i = 0; i < sizeof(absent) / sizeof(absent[0]); i++)
        if (strstr(t, absent[i]))
            sl_test_fail(__FILE__, __LINE__, "text should not contain \"%s\":\n%s", absent[i], t);
    CHECK_EQ_STR(d.title.data, "The Story | Site");
    CHECK_EQ_STR(d.lang.data, "en-GB");
    CHECK(strncmp(t, "First paragraph", 15) == 0);
    html_doc_release(&d);
}

TEST(html_h1_kept_unless_title)
{
    struct html_doc d;
    html_doc_init(&d);
    const char *t = extract(
        &d, "<title>Other</title><body><h1>A Declaration</h1>" PARA("One.") PARA("Two.") "</body>",
        NULL);
    CHECK(strncmp(t, "A Declaration\n\nOne.", 19) == 0);
    html_doc_release(&d);
}

TEST(html_empty_and_textless)
{
    struct html_doc d;
    html_doc_init(&d);
    CHECK_EQ_INT(html_extract("", 0, NULL, &d), 0);
    CHECK_EQ_INT(d.text.len, 0);
    CHECK_EQ_STR(extract(&d, "<html><body><img src=x><script>x</script></body></html>", NULL), "");
    CHECK_EQ_STR(extract(&d, "just some text", NULL), "just some text");
    html_doc_release(&d);
}

TEST(html_charsets)
{
    struct html_doc d;
    html_doc_init(&d);
    /* declared windows-1252 in <meta> */
    CHECK_CONTAINS(
        extract(&d, "<meta charset=\"iso-8859-1\"><p>caf\xe9 cr\xe8me \x93q\x94</p>", NULL),
        "caf\xc3\xa9 cr\xc3\xa8me \xe2\x80\x9cq\xe2\x80\x9d");
    /* http-equiv form, Shift_JIS */
    CHECK_CONTAINS(extract(&d,
                           "<meta http-equiv=\"Content-Type\" content=\"text/html; "
                           "charset=Shift_JIS\"><p>\x93\xfa\x96\x7b\x8c\xea</p>",
                           NULL),
                   "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e");
    /* the caller's hint wins over <meta> */
    CHECK_CONTAINS(extract(&d, "<meta charset=\"utf-8\"><p>\xe9t\xe9</p>", "latin1"),
                   "\xc3\xa9t\xc3\xa9");
    /* a BOM wins over the hint */
    const char u16[] = "\xff\xfe<\0p\0>\0h\0\xe9\0<\0/\0p\0>\0";
    REQUIRE(html_extract(u16, sizeof(u16) - 1, "windows-1252", &d) == 0);
    CHECK_EQ_STR(d.text.data, "h\xc3\xa9");
    /* invalid UTF-8 becomes U+FFFD; an unknown charset is read as UTF-8 */
    CHECK_EQ_STR(extract(&d, "<p>a\xff\xfe b\xc3</p>", NULL),
                 "a\xef\xbf\xbd\xef\xbf\xbd b\xef\xbf\xbd");
    CHECK_EQ_STR(extract(&d, "<p>ok \xc3\xa9</p>", "x-no-such-charset"), "ok \xc3\xa9");
    html_doc_release(&d);
}

TEST(html_charset_names)
{
    char out[32];
    size_t bom;
    CHECK(html_charset_canon(" Latin1 ", 8, out) == 0);
    CHECK_EQ_STR(out, "windows-1252");
    CHECK(html_charset_canon("SJIS", 4, out) == 0);
    CHECK_EQ_STR(out, "cp932");
    CHECK(html_charset_canon("", 0, out) < 0);
    CHECK(html_charset_sniff("<meta content='text/html;charset=euc-kr'>", 41, out, &bom) == 1);
    CHECK_EQ_STR(out, "cp949");
    CHECK(html_charset_sniff("<p>no meta</p>", 14, out, &bom) == 0);
}

TEST(html_class_hints_words)
{
    CHECK(html_class_hints("article-body", 12) & 0x04);
    CHECK(html_class_hints("c-entry_content x", 17) & 0x04);
    CHECK(html_class_hints("social-share", 12) & 0x01);
    CHECK(html_class_hints("commentList", 11) & 0x01);
    CHECK(!(html_class_hints("header-adjacent", 15) & 0x01)); /* "ad" only as a word */
    CHECK(!(html_class_hints("lead paragraph", 14) & 0x01));
}

TEST(html_file_helper)
{
    struct sl_doc doc;
    struct sl_counters c;
    sl_doc_init(&doc);
    sl_counters_init(&c);
    char id[64];
    html_file_id("/a/b/page-1.html.gz", id, sizeof(id));
    CHECK_EQ_STR(id, "page-1");
    html_file_id("x.HTM", id, sizeof(id));
    CHECK_EQ_STR(id, "x");
    const char *p = sl_test_fixture("html/udhr/eng.html.gz");
    CHECK_EQ_INT(html_extract_file(p, &doc, &c), 1);
    struct sl_buf b = SL_BUF_INIT;
    CHECK_EQ_INT(sl_doc_get_str(&doc, "id", &b), 0);
    CHECK_EQ_STR(b.data, "eng");
    sl_buf_reset(&b);
    CHECK_EQ_INT(sl_doc_get_str(&doc, "lang", &b), 0);
    CHECK_EQ_STR(b.data, "en");
    size_t tl;
    CHECK_CONTAINS(sl_doc_text(&doc, &tl), "All human beings are born free");
    /* a page without text: 0, counted */
    const char *e = sl_test_write("empty.html", "<html><body></body></html>", 26);
    CHECK_EQ_INT(html_extract_file(e, &doc, &c), 0);
    CHECK_EQ_INT(sl_counters_get(&c, "html_no_text"), 1);
    CHECK_EQ_INT(sl_counters_get(&c, "html_files"), 2);
    /* a missing file: an error naming it */
    CHECK(html_extract_file("/nonexistent/x.html", &doc, &c) < 0);
    CHECK_CONTAINS(sl_err_msg(), "/nonexistent/x.html");
    sl_buf_release(&b);
    sl_doc_release(&doc);
    sl_counters_release(&c);
}

static void norm_ws(const char *s, struct sl_buf *o)
{
    sl_buf_reset(o);
    for (; *s; s++) {
        if (*s == ' ' || *s == '\n' || *s == '\t' || *s == '\r') {
            if (o->len && o->data[o->len - 1] != ' ')
                sl_buf_putc(o, ' ');
        } else {
            sl_buf_putc(o, *s);
        }
    }
    while (o->len && o->data[o->len - 1] == ' ')
        o->len--;
    sl_buf_putc(o, 0);
    o->len--;
}

/* Every block of the reference text appears, in order, in the extracted text. */
TEST(html_udhr_pages_whole)
{
    struct sl_buf ref = SL_BUF_INIT, page = SL_BUF_INIT, got = SL_BUF_INIT, blk = SL_BUF_INIT;
    REQUIRE(sl_read_file(sl_test_fixture("html/udhr/udhr.jsonl"), &ref) == 0);
    struct html_doc d;
    html_doc_init(&d);
    int pages = 0;
    for (char *line = strtok(ref.data, "\n"); line; line = strtok(NULL, "\n")) {
        struct json_object *j = json_tokener_parse(line), *code, *text;
        REQUIRE(j && json_object_object_get_ex(j, "code", &code) &&
                json_object_object_get_ex(j, "text", &text));
        char path[128];
        snprintf(path, sizeof(path), "html/udhr/%s.html.gz", json_object_get_string(code));
        sl_buf_reset(&page);
        REQUIRE(sl_read_file(sl_test_fixture(path), &page) == 0);
        REQUIRE(html_extract(page.data, page.len, NULL, &d) == 0);
        norm_ws(d.text.data ? d.text.data : "", &got);
        const char *at = got.data;
        char *reftext = strdup(json_object_get_string(text)), *save = NULL;
        for (char *b = strtok_r(reftext, "\n", &save); b; b = strtok_r(NULL, "\n", &save)) {
            norm_ws(b, &blk);
            if (!blk.len)
                continue;
            const char *f = strstr(at, blk.data);
            if (!f) {
                sl_test_fail(__FILE__, __LINE__, "%s: block missing: %.60s", path, blk.data);
                break;
            }
            at = f + blk.len;
        }
        free(reftext);
        json_object_put(j);
        pages++;
    }
    CHECK_EQ_INT(pages, 10);
    html_doc_release(&d);
    sl_buf_release(&ref);
    sl_buf_release(&page);
    sl_buf_release(&got);
    sl_buf_release(&blk);
}

/* Three benchmark pages: the article's first and last paragraphs come out, and the text
 * is about as long as the ground truth (no page furniture). */
TEST(html_benchmark_pages)
{
    struct sl_buf gt = SL_BUF_INIT, page = SL_BUF_INIT, first = SL_BUF_INIT, last = SL_BUF_INIT;
    REQUIRE(sl_read_file(sl_test_fixture("html/aeb/ground-truth.json"), &gt) == 0);
    struct json_object *j = json_tokener_parse(gt.data);
    REQUIRE(j);
    struct html_doc d;
    html_doc_init(&d);
    int n = 0;
    json_object_object_foreach(j, key, val)
    {
        struct json_object *body;
        REQUIRE(json_object_object_get_ex(val, "articleBody", &body));
        const char *truth = json_object_get_string(body);
        char path[160];
        snprintf(path, sizeof(path), "html/aeb/%s.html.gz", key);
        sl_buf_reset(&page);
        REQUIRE(sl_read_file(sl_test_fixture(path), &page) == 0);
        REQUIRE(html_extract(page.data, page.len, NULL, &d) == 0);
        const char *nl = strchr(truth, '\n');
        sl_buf_reset(&first);
        sl_buf_append(&first, truth, nl ? (size_t)(nl - truth) : strlen(truth));
        const char *lnl = strrchr(truth, '\n');
        sl_buf_reset(&last);
        sl_buf_puts(&last, lnl ? lnl + 1 : truth);
        CHECK_CONTAINS(d.text.data, first.data);
        CHECK_CONTAINS(d.text.data, last.data);
        double ratio = (double)d.text.len / (double)strlen(truth);
        if (ratio < 0.9 || ratio > 1.25)
            sl_test_fail(__FILE__, __LINE__, "%s: length ratio %.2f", key, ratio);
        n++;
    }
    CHECK_EQ_INT(n, 3);
    json_object_put(j);
    html_doc_release(&d);
    sl_buf_release(&gt);
    sl_buf_release(&page);
    sl_buf_release(&first);
    sl_buf_release(&last);
}
