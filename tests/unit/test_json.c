/* Tests for core/json (strict scanning) and core/doc (pass-through documents). */
#include "tests/harness.h"

#include "core/buf.h"
#include "core/doc.h"
#include "core/err.h"
#include "core/json.h"

#include <json-c/json.h>
#include <stdlib.h>

static int valid(const char *s)
{
    struct sl_json_error err;
    return sl_json_scan_object(s, strlen(s), NULL, NULL, &err) == 0;
}

TEST(json_accepts_valid)
{
    CHECK(valid("{}"));
    CHECK(valid(" { \"a\" : 1 , \"b\":[1,2.5e-3,-0,true,false,null,{\"c\":\"d\"}]}\r"));
    CHECK(valid("\xEF\xBB\xBF{\"bom\":1}"));
    CHECK(valid("{\"s\":\"esc \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\u00e9 \\ud83d\\ude00\"}"));
    CHECK(valid("{\"u\":\"\xc3\xa9\xe2\x82\xac\"}"));
}

TEST(json_rejects_invalid)
{
    const char *bad[] = {
        "",           "[]",          "{",             "{\"a\"}",         "{\"a\":}",
        "{\"a\":1,}", "{'a':1}",     "{\"a\":01}",    "{\"a\":1.}",      "{\"a\":.5}",
        "{\"a\":tru}", "{\"a\":\"x\ty\"}", "{\"a\":\"\\x\"}", "{\"a\":\"\\u12\"}", "{\"a\":1} x",
        "{\"a\":\"\xff\"}", "{\"a\":NaN}", "{\"a\":[1 2]}", "{a:1}", "{\"a\":\"unterminated}",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        if (valid(bad[i]))
            sl_test_fail(__FILE__, __LINE__, "accepted invalid JSON: %s", bad[i]);
    }
}

TEST(json_error_position)
{
    struct sl_json_error err;
    const char *s = "{\"a\":1,\"b\":x}";
    CHECK_EQ_INT(sl_json_scan_object(s, strlen(s), NULL, NULL, &err), SL_ERR_FORMAT);
    CHECK_EQ_INT(err.offset, 11);
    CHECK_EQ_STR(err.reason, "unexpected character");
}

TEST(json_depth_cap)
{
    struct sl_buf b = SL_BUF_INIT;
    sl_buf_puts(&b, "{\"a\":");
    for (int i = 0; i < 10000; i++)
        sl_buf_putc(&b, '[');
    for (int i = 0; i < 10000; i++)
        sl_buf_putc(&b, ']');
    sl_buf_putc(&b, '}');
    struct sl_json_error err;
    CHECK_EQ_INT(sl_json_scan_object(b.data, b.len, NULL, NULL, &err), SL_ERR_FORMAT);
    CHECK_EQ_STR(err.reason, "nesting too deep");
    sl_buf_release(&b);
}

TEST(json_decode_string)
{
    struct sl_buf out = SL_BUF_INIT;
    const char *s = "\"a\\u00e9\\ud83d\\ude00\\ud800x\\n\"";
    struct sl_json_error err;
    CHECK(sl_json_decode_string(s, s, s + strlen(s), &out, &err) == s + strlen(s));
    /* lone surrogate -> U+FFFD */
    CHECK_EQ_STR(out.data, "a\xc3\xa9\xf0\x9f\x98\x80\xef\xbf\xbdx\n");
    sl_buf_release(&out);
}

/* Non-ASCII text is checked and copied a run at a time: runs longer than the 16-byte
 * scanner step, an invalid byte or a character cut by the closing quote anywhere in them
 * is reported at its own offset, and a valid run comes out whole. */
TEST(json_decode_string_non_ascii_runs)
{
    struct sl_buf s = SL_BUF_INIT, out = SL_BUF_INIT;
    struct sl_json_error err;
    for (size_t at = 0; at < 40; at++) {
        for (int kind = 0; kind < 3; kind++) {
            sl_buf_reset(&s);
            sl_buf_putc(&s, '"');
            for (size_t i = 0; i < at; i++)
                sl_buf_puts(&s, i % 3 ? "\xd0\xb6" : "a"); /* ж */
            size_t bad = s.len;
            sl_buf_puts(&s, kind == 0 ? "\xff" : kind == 1 ? "\xe2\x82" : "\xe2\x82\xac");
            for (size_t i = 0; i < 20; i++)
                sl_buf_puts(&s, "\xe6\xb0\xb4"); /* 水 */
            sl_buf_putc(&s, '"');
            sl_buf_reset(&out);
            const char *end = sl_json_decode_string(s.data, s.data, s.data + s.len, &out, &err);
            if (kind == 2) {
                CHECK(end == s.data + s.len);
                CHECK_EQ_MEM(out.data, out.len, s.data + 1, s.len - 2);
            } else {
                CHECK(end == NULL);
                CHECK_EQ_INT(err.offset, bad);
                CHECK_EQ_STR(err.reason, "invalid UTF-8 in string");
            }
        }
    }
    /* a character cut by the closing quote */
    const char *cut = "\"abc\xe2\x82\"";
    CHECK(sl_json_decode_string(cut, cut, cut + strlen(cut), &out, &err) == NULL);
    CHECK_EQ_INT(err.offset, 4);
    sl_buf_release(&s);
    sl_buf_release(&out);
}

TEST(json_agrees_with_json_c_on_strings)
{
    /* our decoding of escapes matches json-c's */
    const char *lines[] = { "{\"text\":\"\\u0041\\u00df\\u6c34\\ud834\\udd1e \\\"q\\\" \\\\ \\/\"}",
                            "{\"text\":\"tab\\there\\r\\nnew\"}" };
    for (size_t i = 0; i < 2; i++) {
        struct sl_doc d;
        sl_doc_init(&d);
        REQUIRE(sl_doc_parse(&d, lines[i], strlen(lines[i]), NULL) == 0);
        size_t n;
        const char *t = sl_doc_text(&d, &n);
        struct json_object *o = json_tokener_parse(lines[i]), *v;
        REQUIRE(o && json_object_object_get_ex(o, "text", &v));
        CHECK_EQ_MEM(t, n, json_object_get_string(v), (size_t)json_object_get_string_len(v));
        json_object_put(o);
        sl_doc_release(&d);
    }
}

TEST(doc_passthrough_is_byte_exact)
{
    const char *line = "{\"id\": 7, \"text\":\"hi\", \"score\": 0.10000, \"meta\": {\"x\": [1, 2e10]}}";
    struct sl_doc d;
    sl_doc_init(&d);
    REQUIRE(sl_doc_parse(&d, line, strlen(line), NULL) == 0);
    struct sl_buf out = SL_BUF_INIT;
    sl_doc_serialize(&d, &out);
    CHECK_EQ_STR(out.data, line);
    /* change text only: every other member keeps its exact bytes */
    sl_doc_set_text(&d, "new \"text\"", 10);
    sl_buf_reset(&out);
    sl_doc_serialize(&d, &out);
    CHECK_EQ_STR(out.data, "{\"id\":7,\"text\":\"new \\\"text\\\"\",\"score\":0.10000,\"meta\":{\"x\": [1, 2e10]}}");
    size_t n;
    const char *t = sl_doc_text(&d, &n);
    CHECK_EQ_MEM(t, n, "new \"text\"", 10);
    sl_buf_release(&out);
    sl_doc_release(&d);
}

TEST(doc_set_get_remove)
{
    struct sl_doc d;
    sl_doc_init(&d);
    const char *line = "{\"text\":\"t\"}";
    REQUIRE(sl_doc_parse(&d, line, strlen(line), NULL) == 0);
    sl_doc_set_int(&d, "n", -5);
    sl_doc_set_double(&d, "score", 0.1);
    sl_doc_set_bool(&d, "ok", 1);
    sl_doc_set_str(&d, "lang", "en", 2);
    sl_doc_prepend_str(&d, "id", "f:1", 3);
    struct sl_buf out = SL_BUF_INIT;
    sl_doc_serialize(&d, &out);
    CHECK_EQ_STR(out.data, "{\"id\":\"f:1\",\"text\":\"t\",\"n\":-5,\"score\":0.1,\"ok\":true,\"lang\":\"en\"}");
    struct sl_buf s = SL_BUF_INIT;
    CHECK_EQ_INT(sl_doc_get_str(&d, "lang", &s), 0);
    CHECK_EQ_STR(s.data, "en");
    CHECK_EQ_INT(sl_doc_get_str(&d, "n", &s), SL_ERR_FORMAT);
    CHECK_EQ_INT(sl_doc_get_str(&d, "missing", &s), SL_ERR_NOTFOUND);
    CHECK_EQ_INT(sl_doc_remove(&d, "n"), 1);
    CHECK(sl_doc_find(&d, "n") < 0);
    struct json_object *o = sl_doc_get_json(&d, "score");
    CHECK(o && json_object_get_double(o) == 0.1);
    json_object_put(o);
    sl_buf_release(&out);
    sl_buf_release(&s);
    sl_doc_release(&d);
}

/* A value of the parsed line is decoded without checking its UTF-8 again (the parse did);
 * a value set since is still checked; a line with invalid UTF-8 in a string does not parse. */
TEST(doc_get_str_checks_what_the_parse_did_not)
{
    struct sl_doc d;
    sl_doc_init(&d);
    const char *line = "{\"text\":\"caf\xc3\xa9 \\u00e9\"}";
    REQUIRE(sl_doc_parse(&d, line, strlen(line), NULL) == 0);
    struct sl_buf s = SL_BUF_INIT;
    CHECK_EQ_INT(sl_doc_get_str(&d, "text", &s), 0);
    CHECK_EQ_STR(s.data, "caf\xc3\xa9 \xc3\xa9");
    sl_doc_set_raw(&d, "text", "\"bad \xff\"", 7);
    sl_buf_reset(&s);
    CHECK(sl_doc_get_str(&d, "text", &s) != 0);
    sl_doc_set_raw(&d, "other", "\"\xc3\"", 3);
    CHECK(sl_doc_get_str(&d, "other", &s) != 0);
    const char *bad = "{\"text\":\"x\xff\"}";
    struct sl_json_error err;
    CHECK_EQ_INT(sl_doc_parse(&d, bad, strlen(bad), &err), SL_ERR_FORMAT);
    CHECK_CONTAINS(err.reason, "UTF-8");
    sl_doc_reset(&d);
    sl_doc_set_raw(&d, "text", "\"\xe2\x82\"", 4);
    CHECK(sl_doc_get_str(&d, "text", &s) != 0);
    sl_buf_release(&s);
    sl_doc_release(&d);
}

TEST(doc_escaped_keys)
{
    struct sl_doc d;
    sl_doc_init(&d);
    const char *line = "{\"te\\u0078t\":\"escaped key\"}";
    REQUIRE(sl_doc_parse(&d, line, strlen(line), NULL) == 0);
    size_t n;
    const char *t = sl_doc_text(&d, &n);
    REQUIRE(t);
    CHECK_EQ_MEM(t, n, "escaped key", 11);
    sl_doc_release(&d);
}

TEST(json_put_double_roundtrips)
{
    double vals[] = { 0.1, 1.0 / 3, 1e300, -2.5, 123456789.0, 5e-324 };
    for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
        struct sl_buf b = SL_BUF_INIT;
        sl_json_put_double(&b, vals[i]);
        CHECK(strtod(b.data, NULL) == vals[i]);
        sl_buf_release(&b);
    }
}

/* a BOM is skipped at the start of a line only: one after blanks or a second one is not
 * JSON, as a strict parser says (found by fuzz_jsonl's differential check) */
TEST(doc_bom_only_at_line_start)
{
    struct sl_doc d;
    sl_doc_init(&d);
    const char ok_line[] = "\xEF\xBB\xBF {\"text\":\"a\"}";
    CHECK_EQ_INT(sl_doc_parse(&d, ok_line, sizeof(ok_line) - 1, NULL), 0);
    const char *bad[] = { "\t\xEF\xBB\xBF{\"text\":\"a\"}",
                          "\xEF\xBB\xBF\xEF\xBB\xBF{\"text\":\"a\"}", " \xEF\xBB\xBF{}" };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct sl_json_error err = { 0, NULL };
        CHECK_EQ_INT(sl_doc_parse(&d, bad[i], strlen(bad[i]), &err), SL_ERR_FORMAT);
        CHECK(err.reason != NULL);
    }
    sl_doc_release(&d);
}
