/* Tests for core/buf and core/utf8. */
#include "tests/harness.h"

#include "core/buf.h"
#include "core/err.h"
#include "core/utf8.h"

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
