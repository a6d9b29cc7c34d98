/* Tests for curate/extract/wiki: real exports (schema 0.3 and 0.10, history, UTF-16 LE
 * and BE, bzip2), namespaces, redirects, latest revision, URLs and languages, caps, and
 * broken files. */
#include "tests/harness.h"

#include "core/buf.h"
#include "core/counters.h"
#include "core/doc.h"
#include "core/err.h"
#include "core/stream.h"
#include "core/utf8.h"
#include "curate/extract/wiki.h"

#include <stdio.h>
#include <stdlib.h>

struct got {
    int n, stop_after;
    char id[8][32], title[8][128], url[8][512], lang[8][16], source[8][16];
    struct sl_buf text[8];
};

static void field(struct sl_doc *d, const char *k, char *out, size_t cap)
{
    struct sl_buf b = SL_BUF_INIT;
    out[0] = 0;
    if (sl_doc_get_str(d, k, &b) == 0)
        snprintf(out, cap, "%s", b.data ? b.data : "");
    sl_buf_release(&b);
}

static int collect(void *ctx, struct sl_doc *d)
{
    struct got *g = ctx;
    if (g->n < 8) {
        field(d, "id", g->id[g->n], sizeof(g->id[0]));
        field(d, "title", g->title[g->n], sizeof(g->title[0]));
        field(d, "url", g->url[g->n], sizeof(g->url[0]));
        field(d, "lang", g->lang[g->n], sizeof(g->lang[0]));
        field(d, "source", g->source[g->n], sizeof(g->source[0]));
        size_t n;
        const char *t = sl_doc_text(d, &n);
        sl_buf_reset(&g->text[g->n]);
        sl_buf_append(&g->text[g->n], t, n);
    }
    g->n++;
    return g->stop_after && g->n >= g->stop_after ? 42 : 0;
}

static void got_release(struct got *g)
{
    for (int i = 0; i < 8; i++)
        sl_buf_release(&g->text[i]);
}

static int run(const char *fixture, const struct wiki_opts *o, struct got *g, struct sl_counters *c)
{
    memset(g, 0, sizeof(*g));
    sl_counters_init(c);
    return wiki_extract_file(sl_test_fixture(fixture), o, collect, g, c);
}

TEST(wiki_pear_010)
{
    struct got g;
    struct sl_counters c;
    REQUIRE(run("wiki/article-pear-0.10.xml", NULL, &g, &c) == 0);
    CHECK_EQ_INT(g.n, 1);
    CHECK_EQ_STR(g.id[0], "24278");
    CHECK_EQ_STR(g.title[0], "Pear");
    CHECK_EQ_STR(g.url[0], "https://en.wikipedia.org/wiki/Pear");
    CHECK_EQ_STR(g.lang[0], "en");
    CHECK_EQ_STR(g.source[0], "wikipedia");
    const char *t = g.text[0].data;
    CHECK(strncmp(t, "The pear is any of several tree and shrub species of genus Pyrus", 63) == 0);
    CHECK_CONTAINS(t, "\n\nEtymology\n");
    const char *absent[] = { "{{", "}}", "[[", "]]", "'''", "<ref", "Category:", "thumb|" };
    for (size_t i = 0; i < sizeof(absent) / sizeof(absent[0]); i++)
        if (strstr(t, absent[i]))
            sl_test_fail(__FILE__, __LINE__, "text has \"%s\"", absent[i]);
    CHECK(sl_utf8_validate(t, g.text[0].len) == g.text[0].len);
    CHECK_EQ_INT(sl_counters_get(&c, "wiki_documents"), 1);
    got_release(&g);
    sl_counters_release(&c);
}

TEST(wiki_history_latest_revision)
{
    struct got g;
    struct sl_counters c;
    REQUIRE(run("wiki/article-pear.xml", NULL, &g, &c) == 0); /* schema 0.3, 4 revisions */
    CHECK_EQ_INT(g.n, 1);
    CHECK_CONTAINS(g.text[0].data, "Fruit tree propagation");
    CHECK(!strstr(g.text[0].data, "propagating apples and other fruit trees"));
    got_release(&g);
    sl_counters_release(&c);
}

TEST(wiki_redirects_and_encodings)
{
    const char *files[] = { "wiki/article-pyrus.xml", "wiki/article-pyrus.xml.bz2",
                            "wiki/article-pyrus-utf16.xml" };
    for (size_t i = 0; i < 3; i++) {
        struct got g;
        struct sl_counters c;
        REQUIRE(run(files[i], NULL, &g, &c) == 0);
        CHECK_EQ_INT(g.n, 0);
        CHECK_EQ_INT(sl_counters_get(&c, "wiki_redirects"), 1);
        sl_counters_release(&c);
        /* kept on request: the same redirect text from each encoding */
        struct wiki_opts o = { 0, 1, 0, NULL, 0, NULL };
        REQUIRE(run(files[i], &o, &g, &c) == 0);
        CHECK_EQ_INT(g.n, 1);
        CHECK_EQ_STR(g.title[0], "Pyrus");
        CHECK_CONTAINS(g.text[0].data, "Pear");
        got_release(&g);
        sl_counters_release(&c);
    }
}

TEST(wiki_namespaces_and_titles)
{
    struct got g;
    struct sl_counters c;
    REQUIRE(run("wiki/pair-0.10.xml", NULL, &g, &c) == 0);
    CHECK_EQ_INT(g.n, 1);
    CHECK_EQ_STR(g.title[0], "\xc3\x87ullu, Agdam");
    CHECK_EQ_STR(g.url[0], "https://en.wikipedia.org/wiki/%C3%87ullu,_Agdam");
    CHECK_EQ_INT(sl_counters_get(&c, "wiki_other_namespace"), 1);
    sl_counters_release(&c);
    got_release(&g);
    struct wiki_opts all = { 1, 0, 0, NULL, 0, NULL };
    REQUIRE(run("wiki/pair-0.10.xml", &all, &g, &c) == 0);
    CHECK_EQ_INT(sl_counters_get(&c, "wiki_other_namespace"), 0);
    CHECK_EQ_INT(g.n + (int)sl_counters_get(&c, "wiki_empty"), 2);
    sl_counters_release(&c);
    got_release(&g);
    /* a page whose only content is a <ref>: nothing left, counted */
    REQUIRE(run("wiki/dummy-reflinks.xml", NULL, &g, &c) == 0);
    CHECK_EQ_INT(g.n, 0);
    CHECK_EQ_INT(sl_counters_get(&c, "wiki_empty"), 1);
    sl_counters_release(&c);
    got_release(&g);
    REQUIRE(run("wiki/dummy-template.xml", NULL, &g, &c) == 0);
    CHECK_EQ_INT(sl_counters_get(&c, "wiki_pages"), 3);
    got_release(&g);
    sl_counters_release(&c);
}

TEST(wiki_utf16_bulgarian_dump)
{
    struct got g;
    struct sl_counters c;
    REQUIRE(run("wiki/bgwiki-latest-pages-articles-shortened.xml.bz2", NULL, &g, &c) == 0);
    CHECK_EQ_INT(g.n, 1);
    CHECK_EQ_STR(g.lang[0], "bg");
    CHECK(strncmp(g.url[0], "https://bg.wikipedia.org/wiki/%D0%93", 36) == 0);
    CHECK(strncmp(g.text[0].data, "\xd0\x93\xd1\x80\xd0\xb8\xd0\xb3", 8) == 0); /* Григ */
    CHECK(!strstr(g.text[0].data, "\xd0\x9a\xd0\xb0\xd1\x82\xd0\xb5\xd0\xb3")); /* Категория */
    CHECK_EQ_INT(sl_counters_get(&c, "wiki_other_namespace"), 2);
    got_release(&g);
    sl_counters_release(&c);
}

TEST(wiki_tables_no_siteinfo)
{
    struct got g;
    struct sl_counters c;
    REQUIRE(run("wiki/enwiki-table-markup.xml.bz2", NULL, &g, &c) == 0);
    CHECK_EQ_INT(g.n, 5);
    for (int i = 0; i < 5; i++) {
        CHECK(!strstr(g.text[i].data, "{|"));
        CHECK(!strstr(g.text[i].data, "|-"));
        CHECK_EQ_STR(g.url[i], ""); /* no <siteinfo>: no url, no lang */
        CHECK_EQ_STR(g.lang[i], "");
    }
    CHECK_CONTAINS(g.text[2].data, " | ");
    got_release(&g);
    sl_counters_release(&c);
    /* the language can come from the options */
    struct wiki_opts o = { 0, 0, 0, "en", 0, NULL };
    REQUIRE(run("wiki/enwiki-table-markup.xml.bz2", &o, &g, &c) == 0);
    CHECK_EQ_STR(g.lang[0], "en");
    got_release(&g);
    sl_counters_release(&c);
}

TEST(wiki_caps_stop_and_errors)
{
    struct got g;
    struct sl_counters c;
    struct wiki_opts small = { 0, 0, 1000, NULL, 0, NULL };
    REQUIRE(run("wiki/enwiki-table-markup.xml.bz2", &small, &g, &c) == 0);
    CHECK_EQ_INT(g.n, 0);
    CHECK_EQ_INT(sl_counters_get(&c, "wiki_too_large"), 5);
    sl_counters_release(&c);
    /* emit's non-zero value stops the reading and is returned */
    memset(&g, 0, sizeof(g));
    g.stop_after = 2;
    sl_counters_init(&c);
    CHECK_EQ_INT(wiki_extract_file(sl_test_fixture("wiki/enwiki-table-markup.xml.bz2"), NULL,
                                   collect, &g, &c),
                 42);
    CHECK_EQ_INT(g.n, 2);
    got_release(&g);
    sl_counters_release(&c);
    /* a .bz2 cut in half: the pages before the cut, then SL_ERR_CORRUPT naming the file */
    struct sl_buf raw = SL_BUF_INIT;
    REQUIRE(sl_read_file(sl_test_fixture("wiki/enwiki-table-markup.xml.bz2"), &raw) == 0);
    struct sl_buf z = SL_BUF_INIT;
    FILE *f = fopen(sl_test_fixture("wiki/enwiki-table-markup.xml.bz2"), "rb");
    REQUIRE(f);
    char chunk[65536];
    size_t k;
    while ((k = fread(chunk, 1, sizeof(chunk), f)) > 0)
        sl_buf_append(&z, chunk, k);
    fclose(f);
    const char *cut = sl_test_write("cut.xml.bz2", z.data, z.len / 2);
    memset(&g, 0, sizeof(g));
    sl_counters_init(&c);
    int rc = wiki_extract_file(cut, NULL, collect, &g, &c);
    CHECK(rc == SL_ERR_CORRUPT || rc == SL_ERR_FORMAT);
    CHECK_CONTAINS(sl_err_msg(), "cut.xml.bz2");
    got_release(&g);
    sl_counters_release(&c);
    /* malformed XML after a good page: that page, then SL_ERR_FORMAT with the line */
    struct sl_buf x = SL_BUF_INIT;
    sl_buf_puts(&x, "<mediawiki>\n");
    for (int p = 0; p < 3; p++) {
        sl_buf_printf(&x, "<page><title>A%d</title><ns>0</ns><id>%d</id><revision><text>", p, p);
        for (int i = 0; i < 2000; i++)
            sl_buf_puts(&x, "Words of a page. ");
        sl_buf_puts(&x, "</text></revision></page>\n");
    }
    sl_buf_puts(&x, "<page><title>B</oops></page></mediawiki>");
    const char *bad = sl_test_write("bad.xml", x.data, x.len);
    sl_buf_release(&x);
    memset(&g, 0, sizeof(g));
    sl_counters_init(&c);
    CHECK_EQ_INT(wiki_extract_file(bad, NULL, collect, &g, &c), SL_ERR_FORMAT);
    CHECK_CONTAINS(sl_err_msg(), "bad.xml");
    CHECK_CONTAINS(sl_err_msg(), "line 5");
    CHECK(g.n >= 2); /* the page being read when the error is found may be lost */
    got_release(&g);
    sl_counters_release(&c);
    /* a missing file */
    CHECK_EQ_INT(wiki_extract_file("/nonexistent/dump.xml", NULL, collect, &g, NULL), SL_ERR_IO);
    sl_buf_release(&raw);
    sl_buf_release(&z);
}

static void bz2_append(struct sl_buf *dst, const char *p, size_t n)
{
    struct sl_writer *w;
    struct sl_writer_opts o = { .codec = SL_CODEC_BZIP2, .level = 0 };
    REQUIRE(sl_writer_open_buf(&w, dst, &o) == 0);
    REQUIRE(sl_writer_write(w, p, n) == 0);
    REQUIRE(sl_writer_commit(w) == 0);
}

/* A multistream dump: header, pages and footer in separate bzip2 streams. */
TEST(wiki_multistream_bz2)
{
    struct sl_buf xml = SL_BUF_INIT, z = SL_BUF_INIT;
    REQUIRE(sl_read_file(sl_test_fixture("wiki/pair-0.10.xml"), &xml) == 0);
    const char *p1 = strstr(xml.data, "<page>");
    REQUIRE(p1);
    const char *p2 = strstr(p1 + 1, "<page>");
    REQUIRE(p2);
    const char *foot = strstr(p2, "</mediawiki>");
    REQUIRE(foot);
    bz2_append(&z, xml.data, (size_t)(p1 - xml.data));
    bz2_append(&z, p1, (size_t)(p2 - p1));
    bz2_append(&z, p2, (size_t)(foot - p2));
    bz2_append(&z, foot, strlen(foot));
    const char *path = sl_test_write("multistream.xml.bz2", z.data, z.len);
    struct got a, b;
    struct sl_counters c;
    sl_counters_init(&c);
    memset(&a, 0, sizeof(a));
    memset(&b, 0, sizeof(b));
    struct wiki_opts all = { 1, 0, 0, NULL, 0, NULL };
    REQUIRE(wiki_extract_file(path, &all, collect, &a, &c) == 0);
    REQUIRE(wiki_extract_file(sl_test_fixture("wiki/pair-0.10.xml"), &all, collect, &b, &c) == 0);
    CHECK_EQ_INT(a.n, b.n);
    CHECK(a.n >= 1);
    for (int i = 0; i < a.n && i < 8; i++) {
        CHECK_EQ_STR(a.title[i], b.title[i]);
        CHECK_EQ_MEM(a.text[i].data, a.text[i].len, b.text[i].data, b.text[i].len);
    }
    got_release(&a);
    got_release(&b);
    sl_counters_release(&c);
    sl_buf_release(&xml);
    sl_buf_release(&z);
}
