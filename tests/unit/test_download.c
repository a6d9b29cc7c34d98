/* Tests for curate/download: response heads (Content-Range against RFC 9110's examples and
 * grammar, status lines, caps, untrusted bytes), a partial file's validators, the display
 * form of URLs. */
#include "tests/harness.h"

#include "core/err.h"
#include "curate/download/fetch.h"
#include "curate/download/part_meta.h"
#include "curate/download/resp_head.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* resp_content_range on a string; 1/0 as it returns, the parts in r[3]. */
static int range_of(const char *s, int64_t r[3])
{
    return resp_content_range(s, strlen(s), &r[0], &r[1], &r[2]);
}

TEST(download_content_range_rfc9110)
{
    int64_t r[3];
    /* the examples of RFC 9110 section 14.4 */
    CHECK(range_of("bytes 42-1233/1234", r));
    CHECK(r[0] == 42 && r[1] == 1233 && r[2] == 1234);
    CHECK(range_of("bytes 42-1233/*", r));
    CHECK(r[0] == 42 && r[1] == 1233 && r[2] == -1);
    CHECK(range_of("bytes */1234", r));
    CHECK(r[0] == -1 && r[1] == -1 && r[2] == 1234);
    /* invalid by its rules: last-pos below first-pos, last-pos at or past the length */
    CHECK(!range_of("bytes 1233-42/1234", r));
    CHECK(!range_of("bytes 42-1234/1234", r));
    CHECK(!range_of("bytes 0-0/0", r));
    /* not the grammar: other units, missing parts, signs, trailing bytes, "* / *" */
    const char *bad[] = { "",
                          "bytes",
                          "items 0-1/2",
                          "bytes=0-1/2",
                          "bytes 0-abc/xyz",
                          "bytes -1-2/3",
                          "bytes 0-1",
                          "bytes 0-/2",
                          "bytes 0-1/2x",
                          "bytes 0-1/2 3",
                          "bytes */*",
                          "bytes 1-2/+3",
                          "bytes 1000000000000000000-1000000000000000001/1000000000000000002" };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        if (range_of(bad[i], r))
            sl_test_fail(__FILE__, __LINE__, "'%s' was read as a range", bad[i]);
    /* 18 digits still read; the unit is case-insensitive; blanks around are allowed */
    CHECK(range_of("BYTES 0-999999999999999998/999999999999999999", r));
    CHECK(r[2] == 999999999999999999LL);
    CHECK(range_of("  bytes  5-9/10 \t", r));
    CHECK(r[0] == 5 && r[1] == 9 && r[2] == 10);
    /* never read past the length: "bytes 0-9/10" cut before its total */
    CHECK(!resp_content_range("bytes 0-9/10", 10, &r[0], &r[1], &r[2]));
}

/* Feed each line of text (split after '\n') to h, each in a buffer of its exact size. */
static int feed(struct resp_head *h, const char *text)
{
    int rc = 0;
    while (*text && !rc) {
        const char *nl = strchr(text, '\n');
        size_t n = nl ? (size_t)(nl - text + 1) : strlen(text);
        char *line = malloc(n ? n : 1);
        memcpy(line, text, n);
        rc = resp_head_line(h, line, n);
        free(line);
        text += n;
    }
    return rc;
}

TEST(download_resp_head_fields)
{
    struct resp_head h;
    resp_head_init(&h);
    /* a redirect, then the answer: only the answer's fields stay */
    CHECK_EQ_INT(feed(&h, "HTTP/1.1 302 Found\r\nLocation: /x\r\nETag: \"old\"\r\n"
                          "Content-Range: bytes 0-1/2\r\n\r\n"
                          "HTTP/2 206\r\ncontent-range: bytes 100-199/1000\r\n"
                          "ETag: W/\"weak\"\r\nETag: \"strong\"\r\nlast-modified: Tue, 07 Jan "
                          "2025 10:00:00 GMT\r\nContent-Length: 100\r\nRetry-After: 7\r\n\r\n"),
                 0);
    CHECK_EQ_INT(h.status, 206);
    CHECK(h.done && h.has_range && h.range_ok);
    CHECK(h.range_first == 100 && h.range_last == 199 && h.range_total == 1000);
    CHECK_EQ_STR(h.range_text, "bytes 100-199/1000");
    CHECK_EQ_STR(h.etag, ""); /* a weak ETag and a strong one: which version is it? */
    CHECK_EQ_STR(h.modified, "Tue, 07 Jan 2025 10:00:00 GMT");
    CHECK_EQ_INT(h.content_length, 100);
    CHECK(h.retry_after == 7);

    /* a line that looks like a status line inside a head is not one */
    resp_head_init(&h);
    feed(&h, "HTTP/1.1 206 Partial\r\nContent-Range: bytes 5-9/10\r\nHTTP/1.1 200 OK\r\n"
             "ETag: \"v1\"\n");
    CHECK_EQ_INT(h.status, 206);
    CHECK(h.range_ok && h.range_first == 5);
    CHECK_EQ_STR(h.etag, "\"v1\"");

    /* two Content-Range lines: neither is believed; chunked: Content-Length does not apply */
    resp_head_init(&h);
    feed(&h, "HTTP/1.1 206 x\r\nContent-Range: bytes 0-9/10\r\nContent-Range: bytes 0-4/10\r\n"
             "Transfer-Encoding: gzip, chunked\r\nContent-Length: 12\r\n");
    CHECK(h.has_range && !h.range_ok);
    CHECK_EQ_STR(h.range_text, "bytes 0-9/10");
    CHECK(h.chunked);

    /* untrusted bytes: control bytes drop a value, the range text shows '?' */
    resp_head_init(&h);
    const char bin[] = "HTTP/1.1 206 x\r\nETag: \"a\x01\"\r\nContent-Range: bytes \xff\x00x\r\n"
                       "Content-Length: 12x\r\nRetry-After: Wed, 21 Oct 2015 07:28:00 GMT\r\n";
    const char *p = bin, *end = bin + sizeof(bin) - 1;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        resp_head_line(&h, p, (size_t)(nl - p + 1));
        p = nl + 1;
    }
    CHECK_EQ_STR(h.etag, "");
    CHECK(h.has_range && !h.range_ok);
    CHECK_EQ_STR(h.range_text, "bytes ??x");
    CHECK_EQ_INT(h.content_length, -1);
    CHECK(h.retry_after == 0);
    CHECK_EQ_INT(h.status, 206);
}

TEST(download_resp_head_cap)
{
    struct resp_head h;
    resp_head_init(&h);
    char line[1024];
    memset(line, 'p', sizeof(line));
    memcpy(line, "X-Pad: ", 7);
    line[sizeof(line) - 2] = '\r';
    line[sizeof(line) - 1] = '\n';
    CHECK_EQ_INT(resp_head_line(&h, "HTTP/1.1 200 OK\r\n", 17), 0);
    int rc = 0, lines = 0;
    while (!rc && lines < 1000) {
        rc = resp_head_line(&h, line, sizeof(line));
        lines++;
    }
    CHECK_EQ_INT(rc, SL_ERR_TOOBIG);
    CHECK_EQ_INT(lines, (RESP_HEAD_MAX - 17) / sizeof(line) + 1);
    CHECK(h.bytes <= RESP_HEAD_MAX);
    CHECK_CONTAINS(sl_err_msg(), "response header over 64 KiB");
    /* one line over the cap, also as a status line */
    size_t big = RESP_HEAD_MAX + 1;
    char *b = malloc(big);
    memcpy(b, "HTTP/1.1 200 ", 13);
    memset(b + 13, 'x', big - 13);
    resp_head_init(&h);
    CHECK_EQ_INT(resp_head_line(&h, b, big), SL_ERR_TOOBIG);
    CHECK_EQ_INT(h.status, 0);
    free(b);
}

TEST(download_part_meta)
{
    char part[512];
    snprintf(part, sizeof(part), "%s/.f.bin.part", sl_test_tmpdir());
    struct part_meta m, back;
    CHECK_EQ_INT(part_meta_load(part, &back), 0);
    CHECK(back.size == -1 && !back.etag[0] && !back.modified[0]);
    memset(&m, 0, sizeof(m));
    strcpy(m.etag, "\"5f3a-1c0e\"");
    strcpy(m.modified, "Tue, 07 Jan 2025 10:00:00 GMT");
    m.size = 3447780;
    REQUIRE(part_meta_save(part, &m) == 0);
    CHECK_EQ_INT(part_meta_load(part, &back), 1);
    CHECK_EQ_STR(back.etag, m.etag);
    CHECK_EQ_STR(back.modified, m.modified);
    CHECK(back.size == 3447780);
    char tmp[600];
    snprintf(tmp, sizeof(tmp), "%s.validator.tmp", part);
    CHECK(access(tmp, F_OK) != 0);
    /* only what is known is written */
    m.etag[0] = 0;
    m.size = -1;
    REQUIRE(part_meta_save(part, &m) == 0);
    CHECK_EQ_INT(part_meta_load(part, &back), 1);
    CHECK_EQ_STR(back.etag, "");
    CHECK(back.size == -1);
    /* the one-line form of earlier versions */
    char *path = part_meta_path(part);
    FILE *f = fopen(path, "w");
    fputs("\"abc\"", f);
    fclose(f);
    CHECK_EQ_INT(part_meta_load(part, &back), 1);
    CHECK_EQ_STR(back.etag, "\"abc\"");
    f = fopen(path, "w");
    fputs("Tue, 07 Jan 2025 10:00:00 GMT\n", f);
    fclose(f);
    part_meta_load(part, &back);
    CHECK_EQ_STR(back.modified, "Tue, 07 Jan 2025 10:00:00 GMT");
    part_meta_remove(part);
    CHECK(access(path, F_OK) != 0);
    free(path);
}

TEST(download_url_display)
{
    const char *cases[][2] = {
        { "https://host/a/b.bin", "https://host/a/b.bin" },
        { "https://ann:pw@host:8080/b.bin", "https://***@host:8080/b.bin" },
        { "https://tok@host/b.bin?x=1#frag", "https://***@host/b.bin?x=***#frag" },
        { "https://h/b?X-Amz-Signature=ab12&X-Amz-Credential=k%2F1&part=3",
          "https://h/b?X-Amz-Signature=***&X-Amz-Credential=***&part=***" },
        { "https://h/b?SECRETTOKEN&a=", "https://h/b?***&a=***" },
        { "https://h/b?", "https://h/b?" },
        { "https://h/p@q/b.bin", "https://h/p@q/b.bin" }, /* '@' in the path is no user */
        { "no-scheme@host/x", "***@host/x" },
        { "h/p?a=1&b=x://u:p@h/", "h/p?a=***&b=***" }, /* "://" in the query is no scheme */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *d = fetch_url_display(cases[i][0]);
        CHECK_EQ_STR(d, cases[i][1]);
        free(d);
    }
}
