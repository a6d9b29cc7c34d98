/* Tests for tokenize/encoder: a unit's shard holds each document's tokens as the tokenizer
 * gives them, the same bytes, counts and skip reports in the same order for 1, 2 and 4
 * workers; a write failure stops the unit, is seen by the reading thread within a ring of
 * batches, and the next unit is whole. */
#include "tests/harness.h"

#include "core/alloc.h"
#include "core/buf.h"
#include "core/counters.h"
#include "core/err.h"
#include "core/stream.h"
#include "core/jsonl.h"
#include "dataset/idx.h"
#include "tokenize/encoder.h"
#include "tokenize/tokenizer.h"

#include <stdlib.h>
#include <string.h>

/* More lines than the ring of 4 workers holds (10 batches of at most 4096 lines,
 * tokenize/encoder.h), so that the failure test sees the reading thread stopped. */
#define NLINES   45000
#define EVERY    1000  /* one line in EVERY is not JSON, the next has no "text" */
#define EOD_WIDE 70000 /* an end-of-document id that does not fit uint16 */

static const char *write_input(void)
{
    struct sl_buf b = SL_BUF_INIT;
    for (int i = 0; i < NLINES; i++) {
        if (i % EVERY == 7)
            sl_buf_puts(&b, "{not json\n");
        else if (i % EVERY == 8)
            sl_buf_puts(&b, "{\"id\": 1}\n");
        else
            sl_buf_printf(&b, "{\"text\": \"line %d, word%d\"}\n", i, i * 7919 % 1000);
    }
    const char *p = sl_test_write("encoder.jsonl", b.data, b.len);
    sl_buf_release(&b);
    return p;
}

static void record_skip(void *ctx, const char *reason, const char *message)
{
    sl_buf_printf(ctx, "%s %s\n", reason, message ? message : "");
}

/* One unit: the lines of `path` through e into a shard PREFIX of dtype dt. The unit's rc;
 * *failed_at: the line whose encoder_add_line failed, or -1. */
static int run_unit(struct encoder *e, const char *path, const char *prefix, enum idx_dtype dt,
                    struct sl_counters *c, struct sl_buf *skips, long *failed_at)
{
    struct sl_jsonl_opts jo;
    memset(&jo, 0, sizeof(jo));
    jo.max_line = 1 << 20;
    jo.text_key = "text";
    jo.allow_missing_text = 1;
    jo.repair_utf8 = 1;
    jo.counters = c;
    jo.on_skip = record_skip;
    jo.ctx = skips;
    struct sl_jsonl_reader *r;
    REQUIRE(sl_jsonl_open(&r, path, &jo) == 0);
    struct idx_writer *w;
    REQUIRE(idx_writer_open(&w, prefix, dt) == 0);
    encoder_begin(e, r, &w, c);
    int rc = 0;
    long n = 0;
    *failed_at = -1;
    for (;;) {
        const char *line;
        size_t len;
        struct sl_jsonl_line l;
        int got = sl_jsonl_next_line(r, &line, &len, &l);
        REQUIRE(got >= 0);
        if (!got)
            break;
        rc = encoder_add_line(e, line, len, &l);
        if (rc) {
            *failed_at = n;
            break;
        }
        n++;
    }
    rc = encoder_end(e, rc, NULL);
    if (rc)
        idx_writer_abort(w);
    else
        CHECK_EQ_INT(idx_writer_commit(w), 0);
    sl_jsonl_close(r);
    return rc;
}

static struct tokenizer *open_r50k(void)
{
    char *spec = sl_xasprintf("tiktoken:%s", sl_test_fixture("tokenizer/r50k_base.tiktoken.zst"));
    struct tokenizer *tok = NULL;
    REQUIRE(tokenizer_open(&tok, spec) == 0);
    free(spec);
    return tok;
}

/* The tokens the shard must hold: each document's text through the tokenizer alone, then
 * the end-of-document id; a document without "text" is empty (no end-of-document). */
static void expected_tokens(struct tokenizer *tok, uint32_t eod, struct tok_ids *want)
{
    struct tokenizer_enc *enc = tokenizer_enc_new(tok);
    for (int i = 0; i < NLINES; i++) {
        if (i % EVERY == 7 || i % EVERY == 8)
            continue;
        char text[64];
        snprintf(text, sizeof(text), "line %d, word%d", i, i * 7919 % 1000);
        REQUIRE(tokenizer_encode(enc, text, strlen(text), want) >= 0);
        REQUIRE(tok_ids_push(want, eod) == 0);
    }
    tokenizer_enc_free(enc);
}

static void read_shard(const char *prefix, struct sl_buf *bin, struct sl_buf *idx)
{
    char *p = sl_xasprintf("%s.bin", prefix);
    REQUIRE(sl_read_file(p, bin) == 0);
    free(p);
    p = sl_xasprintf("%s.idx", prefix);
    REQUIRE(sl_read_file(p, idx) == 0);
    free(p);
}

TEST(encoder_same_shard_for_any_workers)
{
    const char *path = write_input();
    struct tokenizer *tok = open_r50k();
    const char *keys[] = { "text" };
    uint32_t eod = (uint32_t)tok->eod_id;
    struct tok_ids want = { 0 };
    expected_tokens(tok, eod, &want);
    const int nbad = NLINES / EVERY; /* of each kind */
    struct sl_buf bin1 = SL_BUF_INIT, idx1 = SL_BUF_INIT, skips1 = SL_BUF_INIT;
    static const long workers[] = { 1, 2, 4 };
    for (size_t t = 0; t < 3; t++) {
        struct encoder_opts o = { .tok = tok,
                                  .keys = keys,
                                  .nkeys = 1,
                                  .append_eod = 1,
                                  .eod_id = eod,
                                  .workers = workers[t] };
        struct encoder *e;
        REQUIRE(encoder_new(&e, &o) == 0);
        struct sl_counters c;
        sl_counters_init(&c);
        struct sl_buf skips = SL_BUF_INIT;
        char *prefix = sl_xasprintf("%s/enc_w%ld", sl_test_tmpdir(), workers[t]);
        long failed_at;
        CHECK_EQ_INT(run_unit(e, path, prefix, IDX_U16, &c, &skips, &failed_at), 0);
        encoder_free(e);
        CHECK_EQ_INT(sl_counters_get(&c, "documents_in"), NLINES - nbad);
        CHECK_EQ_INT(sl_counters_get(&c, "skipped_invalid_json"), nbad);
        CHECK_EQ_INT(sl_counters_get(&c, "missing_key"), nbad);
        CHECK_EQ_INT(sl_counters_get(&c, "empty_documents"), nbad);
        CHECK_EQ_INT(sl_counters_get(&c, "tokens"), want.n);
        struct sl_buf bin = SL_BUF_INIT, idx = SL_BUF_INIT;
        read_shard(prefix, &bin, &idx);
        REQUIRE(bin.len == want.n * 2);
        int same = 1;
        for (size_t i = 0; i < want.n && same; i++) {
            uint16_t v;
            memcpy(&v, bin.data + 2 * i, 2);
            same = v == want.v[i];
        }
        CHECK(same);
        CHECK_CONTAINS(skips.data, "invalid_json");
        if (t == 0) {
            bin1 = bin;
            idx1 = idx;
            skips1 = skips;
        } else {
            CHECK_EQ_MEM(bin.data, bin.len, bin1.data, bin1.len);
            CHECK_EQ_MEM(idx.data, idx.len, idx1.data, idx1.len);
            CHECK_EQ_MEM(skips.data, skips.len, skips1.data, skips1.len);
            sl_buf_release(&bin);
            sl_buf_release(&idx);
            sl_buf_release(&skips);
        }
        sl_counters_release(&c);
        free(prefix);
    }
    sl_buf_release(&bin1);
    sl_buf_release(&idx1);
    sl_buf_release(&skips1);
    tok_ids_release(&want);
    tokenizer_free(tok);
}

/* A write failure (an end-of-document id too wide for a uint16 shard) stops the unit: the
 * reading thread is told before it has filled more than the ring (2 * workers + 2 batches
 * of at most 4096 lines), encoder_end returns it, and the next unit, into an int32 shard,
 * is whole. */
TEST(encoder_write_failure_stops_the_unit)
{
    const char *path = write_input();
    struct tokenizer *tok = open_r50k();
    const char *keys[] = { "text" };
    static const long workers[] = { 1, 4 };
    for (size_t t = 0; t < 2; t++) {
        struct encoder_opts o = { .tok = tok,
                                  .keys = keys,
                                  .nkeys = 1,
                                  .append_eod = 1,
                                  .eod_id = EOD_WIDE,
                                  .workers = workers[t] };
        struct encoder *e;
        REQUIRE(encoder_new(&e, &o) == 0);
        struct sl_counters c;
        sl_counters_init(&c);
        struct sl_buf skips = SL_BUF_INIT;
        char *prefix = sl_xasprintf("%s/fail_w%ld", sl_test_tmpdir(), workers[t]);
        long failed_at;
        int rc = run_unit(e, path, prefix, IDX_U16, &c, &skips, &failed_at);
        CHECK_EQ_INT(rc, SL_ERR_FORMAT);
        CHECK_CONTAINS(sl_err_msg(), "token id 70000 does not fit");
        CHECK(failed_at >= 0 && failed_at <= (2 * workers[t] + 2) * 4096);
        sl_counters_release(&c);

        sl_counters_init(&c);
        char *prefix2 = sl_xasprintf("%s/wide_w%ld", sl_test_tmpdir(), workers[t]);
        CHECK_EQ_INT(run_unit(e, path, prefix2, IDX_I32, &c, &skips, &failed_at), 0);
        CHECK_EQ_INT(failed_at, -1);
        struct idx_reader *r;
        REQUIRE(idx_reader_open(&r, prefix2) == 0);
        CHECK_EQ_INT(idx_reader_documents(r), NLINES - NLINES / EVERY);
        idx_reader_close(r);
        encoder_free(e);
        sl_counters_release(&c);
        sl_buf_release(&skips);
        free(prefix);
        free(prefix2);
    }
    tokenizer_free(tok);
}
