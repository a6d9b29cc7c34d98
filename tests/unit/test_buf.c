/* Tests for core/buf and core/utf8. */
#include "tests/harness.h"

#include "core/alloc.h"
#include "core/buf.h"
#include "core/err.h"
#include "core/utf8.h"

#include <stdint.h>
#include <stdlib.h>

TEST(buf_append_and_cap)
{
    struct sl_buf b;
    sl_buf_init(&b, 10);
    CHECK_EQ_INT(sl_buf_append(&b, "hello", 5), 0);
    CHECK_EQ_INT(sl_buf_printf(&b, "%d", 1234), 0);
    CHECK_EQ_STR(b.data, "hello1234");
    CHECK_EQ_INT(sl_buf_append(&b, "xy", 2), SL_ERR_TOOBIG);
    CHECK_EQ_STR(b.data, "hello1234"); /* unchanged on failure */
    sl_buf_consume(&b, 5);
    CHECK_EQ_STR(b.data, "1234");
    size_t n;
    char *d = sl_buf_detach(&b, &n);
    CHECK_EQ_INT(n, 4);
    CHECK(b.data == NULL && b.len == 0);
    free(d);
    sl_buf_release(&b);
}

/* Tables for random lookups: zeroed, cache-line aligned, and from 2 MiB on aligned to 2 MiB
 * (a huge page); free() releases them. */
TEST(alloc_table_aligned_and_zeroed)
{
    size_t sizes[] = { 1, 100, 4096, (size_t)2 << 20, (size_t)5 << 20 };
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        unsigned char *p = sl_xcalloc_table(sizes[i], 1);
        size_t align = sizes[i] >= ((size_t)2 << 20) ? (size_t)2 << 20 : 64;
        CHECK_EQ_INT((int)((uintptr_t)p % align), 0);
        size_t nonzero = 0;
        for (size_t k = 0; k < sizes[i]; k++)
            nonzero += p[k] != 0;
        CHECK_EQ_INT((int)nonzero, 0);
        p[sizes[i] - 1] = 1;
        free(p);
    }
    uint64_t *t = sl_xcalloc_table(1000, sizeof(uint64_t));
    CHECK_EQ_INT((int)t[999], 0);
    free(t);
}

TEST(buf_json_str_escapes)
{
    struct sl_buf b = SL_BUF_INIT;
    sl_buf_json_str(&b, "a\"b\\c\n\t\x01/\xc3\xa9", 11);
    CHECK_EQ_STR(b.data, "\"a\\\"b\\\\c\\n\\t\\u0001/\xc3\xa9\"");
    sl_buf_reset(&b);
    /* invalid UTF-8 becomes U+FFFD so the output is always valid JSON */
    sl_buf_json_str(&b, "x\xff" "y", 3);
    CHECK_EQ_STR(b.data, "\"x\xef\xbf\xbdy\"");
    sl_buf_release(&b);
}

TEST(buf_xml_text_escapes)
{
    struct sl_buf b = SL_BUF_INIT;
    CHECK_EQ_INT(sl_buf_xml_text(&b, "a<b> & \"c\" \xc3\xa9"), 0);
    CHECK_EQ_STR(b.data, "a&lt;b&gt; &amp; &quot;c&quot; \xc3\xa9");
    sl_buf_release(&b);
}

TEST(utf8_validate)
{
    CHECK_EQ_INT(sl_utf8_validate("plain ascii text here", 21), 21);
    CHECK_EQ_INT(sl_utf8_validate("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", 9), 9);
    CHECK_EQ_INT(sl_utf8_validate("ab\xc0\xaf", 4), 2);          /* overlong */
    CHECK_EQ_INT(sl_utf8_validate("ab\xed\xa0\x80", 5), 2);      /* surrogate */
    CHECK_EQ_INT(sl_utf8_validate("abcdefgh\xf4\x90\x80\x80", 12), 8); /* > U+10FFFF */
    CHECK_EQ_INT(sl_utf8_validate("abc\xe2\x82", 5), 3);         /* cut */
    CHECK_EQ_INT(sl_utf8_validate("\x80", 1), 0);
}

/* The first invalid offset, one character at a time (the reference). */
static size_t validate_ref(const char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        size_t k = (unsigned char)s[i] < 0x80 ? 1 : sl_utf8_valid_prefix_char((const unsigned char *)s + i, n - i);
        if (!k)
            return i;
        i += k;
    }
    return n;
}

/* sl_utf8_validate checks long texts 16 bytes at a time: random mixtures of ASCII runs,
 * valid characters at the edges of their ranges and every kind of fault (overlong,
 * surrogate, above U+10FFFF, stray and missing continuations, cut at the end), at every
 * alignment, give the offset the one-character-at-a-time check gives. */
TEST(utf8_validate_blocks_equal_reference)
{
    static const char *const parts[] = {
        "a",          "plain ascii run ", "\xc2\x80",         "\xdf\xbf",         "\xe0\xa0\x80",
        "\xed\x9f\xbf", "\xee\x80\x80",   "\xef\xbf\xbf",     "\xf0\x90\x80\x80", "\xf4\x8f\xbf\xbf",
        "\xd0\xb6",   "\xe6\xb0\xb4",     "\xf0\x9f\x98\x80", "\xc3\xa9\xc3\xa9",
        /* faults */
        "\xc0\x80",   "\xc1\xbf",         "\xe0\x9f\xbf",     "\xed\xa0\x80",     "\xf0\x8f\xbf\xbf",
        "\xf4\x90\x80\x80", "\xf5\x80\x80\x80", "\x80",       "\xbf\xbf",         "\xff",
        "\xe2\x82",   "\xf0\x9f\x98",     "\xc3",             "\xe2\x82\xac\x80",
    };
    const size_t nvalid = 14, nparts = sizeof(parts) / sizeof(parts[0]);
    uint64_t x = 12345;
    char buf[512];
    size_t bad = 0;
    for (int iter = 0; iter < 200000; iter++) {
        size_t n = 0;
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        size_t target = 60 + (x >> 33) % 300;
        int faults = (int)((x >> 20) % 4); /* 0: valid text */
        while (n < target) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            size_t k = (x >> 33) % (faults && (x >> 12) % 40 == 0 ? nparts : nvalid);
            size_t len = strlen(parts[k]);
            if (n + len > sizeof(buf))
                break;
            memcpy(buf + n, parts[k], len);
            n += len;
        }
        size_t want = validate_ref(buf, n), got = sl_utf8_validate(buf, n);
        if (want != got && bad++ < 5)
            sl_test_fail(__FILE__, __LINE__, "iteration %d (%zu bytes): offset %zu, want %zu", iter, n, got, want);
    }
    CHECK_EQ_INT(bad, 0);
}

TEST(utf8_whole)
{
    CHECK_EQ_INT(sl_utf8_whole("abc", 3), 3);
    CHECK_EQ_INT(sl_utf8_whole("", 0), 0);
    CHECK_EQ_INT(sl_utf8_whole("a\xc3\xa9", 3), 3);             /* whole */
    CHECK_EQ_INT(sl_utf8_whole("a\xc3", 2), 1);                 /* cut after the lead */
    CHECK_EQ_INT(sl_utf8_whole("a\xe2\x82", 3), 1);             /* cut 3-byte */
    CHECK_EQ_INT(sl_utf8_whole("a\xf0\x9f\x98", 4), 1);         /* cut 4-byte */
    CHECK_EQ_INT(sl_utf8_whole("a\xf0\x9f\x98\x80", 5), 5);     /* whole 4-byte */
    CHECK_EQ_INT(sl_utf8_whole("a\x80\x80\x80\x80", 5), 5);     /* not a cut character */
    CHECK_EQ_INT(sl_utf8_whole("\xe2\x82", 2), 0);
}

TEST(utf8_repair_maximal_subparts)
{
    struct sl_buf b = SL_BUF_INIT;
    size_t n;
    /* E2 82 is a cut 3-byte sequence: one U+FFFD; FF alone: one more */
    sl_utf8_repair(&b, "a\xe2\x82" "b\xff", 5, &n);
    CHECK_EQ_STR(b.data, "a\xef\xbf\xbd" "b\xef\xbf\xbd");
    CHECK_EQ_INT(n, 2);
    sl_buf_release(&b);
}

TEST(utf8_encode_decode)
{
    char out[4];
    uint32_t cp;
    CHECK_EQ_INT(sl_utf8_encode(0x1F600, out), 4);
    CHECK_EQ_INT(sl_utf8_decode((unsigned char *)out, 4, &cp), 4);
    CHECK_EQ_INT(cp, 0x1F600);
    CHECK_EQ_INT(sl_utf8_encode(0xD800, out), 0);
    CHECK_EQ_INT(sl_utf8_encode(0x110000, out), 0);
}
