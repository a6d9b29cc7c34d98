/* Tests for core/jsonl: ids, bad lines reported with file:line:col and counted. */
#include "tests/harness.h"

#include "core/buf.h"
#include "core/counters.h"
#include "core/err.h"
#include "core/jsonl.h"
#include "core/stream.h"

#include <stdlib.h>

struct seen {
    char msgs[16][256];
    int n;
};

static void on_skip(void *ctx, const char *reason, const char *message)
{
    struct seen *s = ctx;
    if (message && s->n < 16)
        snprintf(s->msgs[s->n++], 256, "%s|%s", reason, message);
}

static struct sl_jsonl_reader *open_text(const char *text, struct sl_counters *c, struct seen *s,
                                         const char *prefix, int repair)
{
    struct sl_jsonl_opts o;
    memset(&o, 0, sizeof(o));
    o.counters = c;
    o.on_skip = on_skip;
    o.ctx = s;
    o.id_prefix = prefix;
    o.repair_utf8 = repair;
    o.max_line = 64;
    struct sl_jsonl_reader *r;
    if (sl_jsonl_open_source(&r, sl_source_mem(text, strlen(text), "in.jsonl"), &o))
        return NULL;
    return r;
}

TEST(jsonl_reads_and_skips)
{
    const char *text = "{\"text\":\"a\"}\n"
                       "not json\n"
                       "\n"
                       "{\"id\":\"x\",\"text\":\"b\"}\n"
                       "{\"title\":\"no text\"}\n"
                       "{\"text\":5}\n"
                       "{\"text\":\"bad \xff utf8\"}\n"
                       "{\"text\":\"this line is much longer than the sixty-four byte cap of the test\"}\n"
                       "{\"text\":\"c\"}";
    struct sl_counters c;
    sl_counters_init(&c);
    struct seen s = { .n = 0 };
    struct sl_jsonl_reader *r = open_text(text, &c, &s, "in", 0);
    REQUIRE(r);
    struct sl_doc d;
    sl_doc_init(&d);
    struct sl_buf out = SL_BUF_INIT;
    int got;
    while ((got = sl_jsonl_next(r, &d)) == 1) {
        sl_doc_serialize(&d, &out);
        sl_buf_putc(&out, '\n');
    }
    CHECK_EQ_INT(got, 0);
    CHECK_EQ_STR(out.data, "{\"id\":\"in:1\",\"text\":\"a\"}\n"
                           "{\"id\":\"x\",\"text\":\"b\"}\n"
                           "{\"id\":\"in:9\",\"text\":\"c\"}\n");
    CHECK_EQ_INT(sl_counters_get(&c, "skipped_invalid_json"), 1);
    CHECK_EQ_INT(sl_counters_get(&c, "blank_lines"), 1);
    CHECK_EQ_INT(sl_counters_get(&c, "skipped_missing_text"), 1);
    CHECK_EQ_INT(sl_counters_get(&c, "skipped_text_not_string"), 1);
    CHECK_EQ_INT(sl_counters_get(&c, "skipped_invalid_utf8"), 1);
    CHECK_EQ_INT(sl_counters_get(&c, "skipped_line_too_long"), 1);
    CHECK_EQ_INT(s.n, 5);
    CHECK_CONTAINS(s.msgs[0], "invalid_json|in.jsonl:2:1: expected a JSON object");
    CHECK_CONTAINS(s.msgs[1], "missing_text|in.jsonl:5:");
    CHECK_CONTAINS(s.msgs[3], "invalid_utf8|in.jsonl:7:14:");
    CHECK_CONTAINS(s.msgs[4], "in.jsonl:8: line longer than 64 bytes");
    sl_jsonl_close(r);
    sl_doc_release(&d);
    sl_buf_release(&out);
    sl_counters_release(&c);
}

TEST(jsonl_repair_utf8)
{
    struct sl_counters c;
    sl_counters_init(&c);
    struct seen s = { .n = 0 };
    struct sl_jsonl_reader *r = open_text("{\"text\":\"bad \xff utf8\"}\n", &c, &s, NULL, 1);
    REQUIRE(r);
    struct sl_doc d;
    sl_doc_init(&d);
    CHECK_EQ_INT(sl_jsonl_next(r, &d), 1);
    size_t n;
    const char *t = sl_doc_text(&d, &n);
    CHECK_EQ_MEM(t, n, "bad \xef\xbf\xbd utf8", 12);
    CHECK_EQ_INT(sl_counters_get(&c, "repaired_utf8_lines"), 1);
    sl_jsonl_close(r);
    sl_doc_release(&d);
    sl_counters_release(&c);
}

TEST(jsonl_truncated_stream_is_fatal)
{
    struct sl_buf text = SL_BUF_INIT, z = SL_BUF_INIT;
    for (int i = 0; i < 30000; i++)
        sl_buf_printf(&text, "{\"text\":\"document number %d\"}\n", i);
    struct sl_writer *w;
    struct sl_writer_opts wo = { .codec = SL_CODEC_ZSTD, .level = 0 };
    sl_writer_open_buf(&w, &z, &wo);
    sl_writer_write(w, text.data, text.len);
    sl_writer_commit(w);
    z.len -= 10;
    struct sl_jsonl_reader *r;
    REQUIRE(sl_jsonl_open_source(&r, sl_source_mem(z.data, z.len, "cut.jsonl.zst"), NULL) == 0);
    struct sl_doc d;
    sl_doc_init(&d);
    int got, docs = 0;
    while ((got = sl_jsonl_next(r, &d)) == 1)
        docs++;
    CHECK_EQ_INT(got, SL_ERR_CORRUPT);
    CHECK_CONTAINS(sl_err_msg(), "cut.jsonl.zst");
    CHECK(docs > 0 && docs < 30000);
    sl_jsonl_close(r);
    sl_doc_release(&d);
    sl_buf_release(&text);
    sl_buf_release(&z);
}

TEST(jsonl_id_stem)
{
    char *s = sl_jsonl_id_stem("./web/part-7.jsonl.zst");
    CHECK_EQ_STR(s, "web/part-7");
    free(s);
    s = sl_jsonl_id_stem("c4-train.00000-of-01024.json.gz");
    CHECK_EQ_STR(s, "c4-train.00000-of-01024");
    free(s);
}
