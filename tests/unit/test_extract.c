/* Tests for curate/extract and curate/download: HTTP heads and bodies, charsets, the WARC
 * reader on hand-made damage, the LaTeX cleaner, C4 language names, checksum lists. */
#include "tests/harness.h"

#include "core/buf.h"
#include "core/err.h"
#include "core/stream.h"
#include "core/utf8.h"
#include "curate/download/checksum.h"
#include "curate/extract/charset.h"
#include "curate/extract/extract.h"
#include "curate/extract/http.h"
#include "curate/extract/latex.h"
#include "curate/extract/warc.h"

#include <stdlib.h>
#include <zlib.h>

TEST(http_parse_lenient_heads)
{
    const char *r1 = "HTTP/1.1 200 OK\r\nContent-Type: text/HTML; Charset=\"GBK\"\r\n"
                     "content-length: 5\r\nContent-Encoding : gzip\r\n\r\nhello";
    struct http_resp h;
    REQUIRE(http_parse_response(r1, strlen(r1), &h) == 0);
    CHECK_EQ_INT(h.status, 200);
    CHECK_EQ_STR(h.mime, "text/html");
    CHECK_EQ_STR(h.charset, "gbk");
    CHECK_EQ_INT(h.content_length, 5);
    CHECK_EQ_MEM(h.content_encoding.p, h.content_encoding.n, "gzip", 4);
    CHECK_EQ_STR(r1 + h.head_len, "hello");
    /* bare LF, no reason phrase */
    const char *r2 = "HTTP/1.0 404\nServer: x\n\nbody";
    REQUIRE(http_parse_response(r2, strlen(r2), &h) == 0);
    CHECK_EQ_INT(h.status, 404);
    CHECK_EQ_STR(r2 + h.head_len, "body");
    CHECK_EQ_INT(h.content_length, -1);
    CHECK(http_parse_response("GET / HTTP/1.1\r\n\r\n", 18, &h) == SL_ERR_FORMAT);
    CHECK(http_parse_response("HTTP/1.1 2x OK\r\n\r\n", 18, &h) == SL_ERR_FORMAT);
    struct http_span te = { "gzip, Chunked", 13 };
    CHECK(http_has_token(te, "chunked"));
    CHECK(!http_has_token(te, "deflate"));
}

TEST(http_dechunk_and_decode)
{
    const char *c = "4\r\nWiki\r\n5;ext=1\r\npedia\r\nE\r\n in\r\n\r\nchunks.\r\n0\r\n\r\n";
    struct sl_buf out = SL_BUF_INIT;
    CHECK(http_looks_chunked(c, strlen(c)));
    CHECK_EQ_INT(http_dechunk(c, strlen(c), &out), 0);
    CHECK_EQ_STR(out.data, "Wikipedia in\r\n\r\nchunks.");
    sl_buf_reset(&out);
    CHECK(http_dechunk("4\r\nWi", 5, &out) == SL_ERR_CORRUPT); /* cut inside a chunk */
    CHECK(!http_looks_chunked("<html>", 6));
    /* gzip and raw deflate, and the cap on a bomb */
    char big[100000];
    memset(big, 'z', sizeof(big));
    unsigned char z[2000];
    z_stream s;
    memset(&s, 0, sizeof(s));
    REQUIRE(deflateInit2(&s, 9, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY) == Z_OK);
    s.next_in = (Bytef *)big;
    s.avail_in = sizeof(big);
    s.next_out = z;
    s.avail_out = sizeof(z);
    REQUIRE(deflate(&s, Z_FINISH) == Z_STREAM_END);
    size_t zn = sizeof(z) - s.avail_out;
    deflateEnd(&s);
    struct sl_buf dec = SL_BUF_INIT;
    CHECK_EQ_INT(http_decode_content("gzip", 4, (char *)z, zn, &dec), 0);
    CHECK_EQ_INT(dec.len, sizeof(big));
    struct sl_buf small;
    sl_buf_init(&small, 1000);
    CHECK(http_decode_content("x-gzip", 6, (char *)z, zn, &small) == SL_ERR_TOOBIG);
    CHECK(small.len <= 1000);
    sl_buf_reset(&dec);
    CHECK(http_decode_content("gzip", 4, (char *)z, zn / 2, &dec) == SL_ERR_CORRUPT);
    CHECK(http_decode_content("br", 2, "x", 1, &dec) == SL_ERR_UNSUPPORTED);
    sl_buf_release(&out);
    sl_buf_release(&dec);
    sl_buf_release(&small);
}

TEST(charset_labels_meta_detect_convert)
{
    CHECK_EQ_STR(charset_canonical("ISO-8859-1", 10), "windows-1252");
    CHECK_EQ_STR(charset_canonical("\"gb2312\"", 8), "gb18030");
    CHECK_EQ_STR(charset_canonical("Shift_JIS", 9), "shift_jis");
    CHECK(charset_canonical("klingon", 7) == NULL);
    const char *m1 = "<html><head><META HTTP-EQUIV=\"Content-Type\" CONTENT=\"text/html; charset=EUC-KR\">";
    CHECK_EQ_STR(charset_from_meta(m1, strlen(m1)), "euc-kr");
    CHECK_EQ_STR(charset_from_meta("<meta charset='utf-16'>", 23), "utf-8");
    CHECK(charset_from_meta("<p>charset=gbk</p>", 18) == NULL);
    struct charset_conv cc;
    charset_conv_init(&cc);
    /* "中文网页内容" in GBK, Russian in cp1251, Japanese in Shift_JIS */
    const char gbk[] = "\xd6\xd0\xce\xc4\xcd\xf8\xd2\xb3\xc4\xda\xc8\xdd\xd6\xd0\xce\xc4\xcd\xf8\xd2\xb3";
    CHECK_EQ_STR(charset_detect(&cc, gbk, strlen(gbk)), "gb18030");
    const char ru[] = "\xcf\xf0\xe8\xe2\xe5\xf2 \xec\xe8\xf0, \xfd\xf2\xee \xf2\xe5\xf1\xf2";
    CHECK_EQ_STR(charset_detect(&cc, ru, strlen(ru)), "windows-1251");
    const char sj[] = "\x82\xb1\x82\xea\x82\xcd\x93\xfa\x96\x7b\x8c\xea\x82\xcc\x83\x65\x83\x4c\x83\x58\x83\x67";
    CHECK_EQ_STR(charset_detect(&cc, sj, strlen(sj)), "shift_jis");
    CHECK_EQ_STR(charset_detect(&cc, "caf\xc3\xa9", 5), "utf-8");
    CHECK_EQ_STR(charset_detect(&cc, "caf\xe9 au lait", 13), "windows-1252");
    enum charset_source src;
    CHECK_EQ_STR(charset_choose(&cc, "\xef\xbb\xbfhi", 5, "gbk", &src), "utf-8");
    CHECK_EQ_INT(src, CHARSET_BOM);
    CHECK_EQ_STR(charset_choose(&cc, m1, strlen(m1), "latin1", &src), "windows-1252");
    CHECK_EQ_INT(src, CHARSET_HTTP);
    CHECK_EQ_STR(charset_choose(&cc, m1, strlen(m1), NULL, &src), "euc-kr");
    CHECK_EQ_INT(src, CHARSET_META);
    struct sl_buf out = SL_BUF_INIT;
    size_t rep = 0;
    CHECK_EQ_INT(charset_to_utf8(&cc, "gb18030", gbk, 4, &out, &rep), 0);
    CHECK_EQ_STR(out.data, "中文");
    CHECK_EQ_INT(rep, 0);
    /* invalid bytes become U+FFFD and the output stays valid */
    sl_buf_reset(&out);
    CHECK_EQ_INT(charset_to_utf8(&cc, "shift_jis", "a\x81\xff" "b\x82", 5, &out, &rep), 0);
    CHECK(rep >= 2);
    CHECK_EQ_INT(sl_utf8_validate(out.data, out.len), out.len);
    CHECK_CONTAINS(out.data, "\xef\xbf\xbd");
    sl_buf_reset(&out);
    CHECK(charset_to_utf8(&cc, "no-such-charset", "x", 1, &out, NULL) == SL_ERR_UNSUPPORTED);
    sl_buf_release(&out);
    charset_conv_release(&cc);
}

struct skips {
    int bad, incomplete, bad_header;
};

static void count_skip(void *ctx, const char *reason, const char *message)
{
    struct skips *s = ctx;
    CHECK(message && *message);
    if (!strcmp(reason, "bad_record"))
        s->bad++;
    else if (!strcmp(reason, "incomplete"))
        s->incomplete++;
    else if (!strcmp(reason, "bad_header"))
        s->bad_header++;
}

#define REC(type, body)                                                                    \
    "WARC/1.0\r\nWARC-Type: " type "\r\nWARC-Record-ID: <urn:uuid:1>\r\n"                  \
    "WARC-Target-URI: <http://x/>\r\nContent-Length: " #body "\r\n\r\n"

TEST(warc_reader_steps_over_damage)
{
    /* a good record, garbage, a record without Content-Length, a good one, a cut one */
    const char *w = REC("response", 5) "hello\r\n\r\n"
                    "garbage garbage\n"
                    "WARC/1.0\r\nWARC-Type: metadata\r\n\r\n"
                    "\r\n" REC("request", 3) "abc\r\n\r\n" REC("response", 100) "short";
    struct skips s = { 0, 0, 0 };
    struct warc_opts o = { 0, count_skip, &s };
    struct warc_reader *r;
    REQUIRE(warc_reader_open_source(&r, sl_source_mem(w, strlen(w), "mem"), &o) == 0);
    struct warc_record rec;
    struct sl_buf b = SL_BUF_INIT;
    REQUIRE(warc_next(r, &rec) == 1);
    CHECK_EQ_INT(rec.type, WARC_RESPONSE);
    CHECK_EQ_STR(rec.target_uri, "http://x/");
    CHECK_EQ_INT(warc_read_block(r, &b), 0);
    CHECK_EQ_STR(b.data, "hello");
    REQUIRE(warc_next(r, &rec) == 1);
    CHECK_EQ_INT(rec.type, WARC_REQUEST); /* block not read: skipped */
    REQUIRE(warc_next(r, &rec) == 1);
    CHECK_EQ_INT(rec.content_length, 100);
    sl_buf_reset(&b);
    CHECK(warc_read_block(r, &b) == SL_ERR_CORRUPT);
    CHECK_EQ_STR(b.data, "short");
    CHECK_EQ_INT(warc_next(r, &rec), 0);
    CHECK_EQ_INT(s.bad, 1);        /* the garbage */
    CHECK_EQ_INT(s.bad_header, 1); /* the record without Content-Length */
    warc_reader_close(r);
    /* a block over the cap is skipped and the reader stays in step */
    const char *w2 = REC("response", 10) "0123456789\r\n\r\n" REC("resource", 2) "ok";
    REQUIRE(warc_reader_open_source(&r, sl_source_mem(w2, strlen(w2), "mem"), NULL) == 0);
    struct sl_buf capped;
    sl_buf_init(&capped, 4);
    REQUIRE(warc_next(r, &rec) == 1);
    CHECK(warc_read_block(r, &capped) == SL_ERR_TOOBIG);
    REQUIRE(warc_next(r, &rec) == 1);
    CHECK_EQ_INT(rec.type, WARC_RESOURCE);
    CHECK_EQ_INT(warc_read_block(r, &capped), 0);
    CHECK_EQ_STR(capped.data, "ok");
    CHECK_EQ_INT(warc_next(r, &rec), 0);
    warc_reader_close(r);
    sl_buf_release(&b);
    sl_buf_release(&capped);
}

TEST(warc_reader_fixture_counts)
{
    struct warc_reader *r;
    REQUIRE(warc_reader_open(&r, sl_test_fixture("warc/warcfile.warc.gz"), NULL) == 0);
    struct warc_record rec;
    int n = 0, resp = 0;
    while (warc_next(r, &rec) == 1) {
        n++;
        resp += rec.type == WARC_RESPONSE;
    }
    CHECK_EQ_INT(n, 50);
    CHECK_EQ_INT(resp, 16);
    warc_reader_close(r);
    REQUIRE(warc_reader_open(&r, sl_test_fixture("warc/example.arc.gz"), NULL) == 0);
    REQUIRE(warc_next(r, &rec) == 1);
    CHECK_EQ_STR(rec.version, "ARC");
    REQUIRE(warc_next(r, &rec) == 1);
    CHECK_EQ_STR(rec.target_uri, "http://example.com/");
    CHECK_EQ_STR(rec.date, "2014-02-16T05:02:21Z");
    CHECK_EQ_INT(rec.type, WARC_RESPONSE);
    warc_reader_close(r);
}

static const char *clean(const char *in, int (*fn)(const char *, size_t, struct sl_buf *))
{
    static struct sl_buf b;
    sl_buf_release(&b);
    fn(in, strlen(in), &b);
    return b.data ? b.data : "";
}

TEST(latex_pieces)
{
    /* comment rules of arxiv_latex_cleaner */
    CHECK_EQ_STR(clean("a\n% gone\n  %gone too\nText% inline\n100\\% sure\\\\% c\n", latex_strip_comments),
                 "a\nText%\n100\\% sure\\\\%\n");
    CHECK_EQ_STR(clean("x\\begin{comment}hidden\\end{comment}y", latex_resolve_conditionals), "xy");
    CHECK_EQ_STR(clean("\\iffalse no\\else yes\\fi|\\iftrue A\\else B\\fi|\\iffalse \\ifx a\\fi\\fi!",
                       latex_resolve_conditionals),
                 "yes|A|!");
    CHECK_EQ_STR(clean("\\newcommand{\\R}{\\mathbb{R}}\n\\def\\eps{\\varepsilon}\n"
                       "\\newcommand{\\f}[1]{#1}x \\in \\R, \\eps{} \\Rx \\f{1}",
                       latex_expand_macros),
                 "\\newcommand{\\f}[1]{#1}x \\in \\mathbb{R}, \\varepsilon \\Rx \\f{1}");
    CHECK_EQ_STR(clean("\\documentclass{a}\n\\begin{document}\n\\maketitle\n\\section{A}\nbody\n\n\n\n"
                       "more\n\\bibliography{refs}\nafter",
                       latex_cut_body),
                 "\\section{A}\nbody\n\nmore");
    CHECK_EQ_STR(clean("\\begin{document}\nno sections\n\\end{document}\nx", latex_cut_body), "no sections");
}

TEST(latex_main_and_inputs)
{
    struct latex_file f[] = {
        { "sec/intro.tex", "Intro text \\input{deeper}", 25 },
        { "sec/deeper.tex", "deep", 4 },
        { "main.tex", "\\documentclass{x}\n\\begin{document}\n\\section{S}\n\\input{sec/intro}\n% \\input{nothere}\n\\include{missing}\n\\end{document}", 0 },
        { "old.tex", "\\documentclass{x}\nold draft", 0 },
        { "loop.tex", "\\input{loop}", 12 },
    };
    f[2].len = strlen(f[2].data);
    f[3].len = strlen(f[3].data);
    CHECK_EQ_INT(latex_find_main(f, 5), 2);
    struct sl_buf out = SL_BUF_INIT;
    size_t missing = 0;
    CHECK_EQ_INT(latex_clean_paper(f, 5, 2, &out, &missing), 0);
    CHECK_EQ_STR(out.data, "\\section{S}\nIntro text");
    CHECK_EQ_INT(missing, 2); /* "deeper" is looked up beside main.tex, then by name; "missing" */
    sl_buf_reset(&out);
    CHECK_EQ_INT(latex_flatten(f, 5, 4, &out, &missing), 0); /* no endless recursion */
    sl_buf_release(&out);
}

TEST(c4_lang_and_lang_codes)
{
    char b[32];
    CHECK_EQ_STR(extract_c4_lang("x/c4-de.tfrecord-00000-of-01024.json.gz", b, sizeof(b)), "de");
    CHECK_EQ_STR(extract_c4_lang("c4-zh-Latn.tfrecord-00001-of-00064.json.gz", b, sizeof(b)), "zh-Latn");
    CHECK_EQ_STR(extract_c4_lang("c4-de-validation.tfrecord-00000-of-00008.json.gz", b, sizeof(b)), "de");
    CHECK_EQ_STR(extract_c4_lang("c4-train.00000-of-01024.json.gz", b, sizeof(b)), "en");
    CHECK(extract_c4_lang("part-0.json.gz", b, sizeof(b)) == NULL);
    CHECK_EQ_STR(extract_lang_639_1("spa"), "es");
    CHECK_EQ_STR(extract_lang_639_1("xyz"), "xyz");
}

TEST(checksum_lists)
{
    const char *text = "# sums\n"
                       "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08  dir/a.txt\n"
                       "098F6BCD4621D373CADE4E832627B4F6 *b.bin\n\n";
    const char *p = sl_test_write("sums", text, strlen(text));
    struct checksum_list l;
    REQUIRE(checksum_list_load(&l, p) == 0);
    CHECK_EQ_INT(l.n, 2);
    const struct checksum_entry *e = checksum_list_find(&l, "a.txt");
    REQUIRE(e);
    CHECK(e->sha256);
    e = checksum_list_find(&l, "b.bin");
    REQUIRE(e);
    CHECK(!e->sha256);
    CHECK_EQ_STR(e->hex, "098f6bcd4621d373cade4e832627b4f6");
    char hex[65];
    const char *f = sl_test_write("t", "test", 4);
    CHECK_EQ_INT(checksum_file(f, 1, hex), 0);
    CHECK_EQ_STR(hex, "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08");
    CHECK_EQ_INT(checksum_file(f, 0, hex), 0);
    CHECK_EQ_STR(hex, "098f6bcd4621d373cade4e832627b4f6");
    checksum_list_release(&l);
    const char *bad = sl_test_write("bad", "abc  x\n", 7);
    CHECK(checksum_list_load(&l, bad) == SL_ERR_FORMAT);
    CHECK_CONTAINS(sl_err_msg(), ":1:");
}
