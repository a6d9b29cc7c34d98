/* Tests for the TensorBoard writer: CRC-32C against the RFC 3720 vectors, the TFRecord
 * framing and Event bytes of a scalar, reading back (restart markers, a truncated tail,
 * damage), the loss curves and their SVG (with the task accuracy panel), and the trainer's
 * log of task scores. */
#include "tests/harness.h"

#include "core/buf.h"
#include "core/err.h"
#include "core/alloc.h"
#include "core/hash.h"
#include "core/stream.h"
#include "train/losscurve.h"
#include "train/tbevents.h"
#include "train/trainlog.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

TEST(crc32c_known_vectors)
{
    unsigned char b[32];
    CHECK_EQ_INT(sl_crc32c(0, "123456789", 9), 0xE3069283u);
    CHECK_EQ_INT(sl_crc32c(0, "", 0), 0);
    /* RFC 3720 B.4: zeros, ones, ascending, descending */
    memset(b, 0, 32);
    CHECK_EQ_INT(sl_crc32c(0, b, 32), 0x8A9136AAu);
    memset(b, 0xff, 32);
    CHECK_EQ_INT(sl_crc32c(0, b, 32), 0x62A8AB43u);
    for (int i = 0; i < 32; i++)
        b[i] = (unsigned char)i;
    CHECK_EQ_INT(sl_crc32c(0, b, 32), 0x46DD794Eu);
    for (int i = 0; i < 32; i++)
        b[i] = (unsigned char)(31 - i);
    CHECK_EQ_INT(sl_crc32c(0, b, 32), 0x113FDB5Cu);
    /* continuing over pieces gives the crc of the whole */
    CHECK_EQ_INT(sl_crc32c(sl_crc32c(0, "12345", 5), "6789", 4), 0xE3069283u);
    /* the TFRecord mask */
    uint32_t c = 0xE3069283u;
    CHECK_EQ_INT(tb_masked_crc("123456789", 9), (uint32_t)(((c >> 15) | (c << 17)) + 0xa282ead8u));
}

struct seen {
    char tags[8][32];
    int64_t steps[8];
    float values[8];
    int n;
};

static int collect(void *ctx, const char *tag, int64_t step, double wall, float value)
{
    struct seen *s = ctx;
    (void)wall;
    if (s->n < 8) {
        snprintf(s->tags[s->n], sizeof(s->tags[0]), "%s", tag ? tag : "(start)");
        s->steps[s->n] = step;
        s->values[s->n] = value;
        s->n++;
    }
    return 0;
}

TEST(tb_event_bytes_and_round_trip)
{
    struct sl_buf b = SL_BUF_INIT;
    REQUIRE(tb_event_scalar(&b, 1.5, 3, "a", 2.0f) == 0);
    /* Event{wall_time=1.5, step=3, summary{value{tag="a", simple_value=2}}} */
    static const unsigned char ev[] = { 0x09, 0,    0,    0,    0,    0,    0,    0xf8,
                                        0x3f, 0x10, 0x03, 0x2a, 0x0a, 0x0a, 0x08, 0x0a,
                                        0x01, 'a',  0x15, 0,    0,    0,    0x40 };
    REQUIRE(b.len == 12 + sizeof(ev) + 4);
    CHECK_EQ_INT((unsigned char)b.data[0], sizeof(ev));
    for (int i = 1; i < 8; i++)
        CHECK_EQ_INT(b.data[i], 0);
    CHECK_EQ_MEM(b.data + 12, sizeof(ev), ev, sizeof(ev));
    uint32_t crc = tb_masked_crc(ev, sizeof(ev)), got;
    memcpy(&got, b.data + 12 + sizeof(ev), 4);
    CHECK_EQ_INT(got, crc);
    memcpy(&got, b.data + 8, 4);
    CHECK_EQ_INT(got, tb_masked_crc(b.data, 8));

    REQUIRE(tb_event_session_start(&b, 2.0, 7) == 0);
    REQUIRE(tb_event_scalar(&b, 2.5, 300, "train/loss", 0.25f) == 0);
    struct sl_buf all = SL_BUF_INIT;
    REQUIRE(tb_event_file_version(&all, 1.0) == 0);
    REQUIRE(sl_buf_append(&all, b.data, b.len) == 0);
    struct seen s = { 0 };
    REQUIRE(tb_parse(all.data, all.len, collect, &s) == 0);
    REQUIRE(s.n == 3);
    CHECK_EQ_STR(s.tags[0], "a");
    CHECK(s.steps[0] == 3 && s.values[0] == 2.0f);
    CHECK_EQ_STR(s.tags[1], "(start)");
    CHECK(s.steps[1] == 7);
    CHECK_EQ_STR(s.tags[2], "train/loss");
    CHECK(s.steps[2] == 300 && s.values[2] == 0.25f);

    /* a truncated last record is the end of the file */
    memset(&s, 0, sizeof(s));
    CHECK(tb_parse(all.data, all.len - 3, collect, &s) == 0);
    CHECK_EQ_INT(s.n, 2);
    /* a damaged byte is an error naming the record */
    all.data[all.len - 6] ^= 0x10;
    memset(&s, 0, sizeof(s));
    CHECK_EQ_INT(tb_parse(all.data, all.len, collect, &s), SL_ERR_CORRUPT);
    CHECK_CONTAINS(sl_err_msg(), "bad data checksum");
    sl_buf_release(&b);
    sl_buf_release(&all);
}

TEST(tb_writer_file)
{
    struct tb_writer *w;
    char dir[600];
    snprintf(dir, sizeof(dir), "%s/tb/sub", sl_test_tmpdir());
    REQUIRE(tb_writer_open(&w, dir) == 0);
    CHECK_CONTAINS(tb_writer_path(w), "/events.out.tfevents.");
    REQUIRE(tb_writer_scalar(w, 1, "x", 1.0f) == 0);
    REQUIRE(tb_writer_scalar(w, 2, "x", 0.5f) == 0);
    /* flushed: readable before close */
    struct seen s = { 0 };
    REQUIRE(tb_read_dir(dir, collect, &s) == 0);
    CHECK_EQ_INT(s.n, 2);
    CHECK(tb_writer_close(w) == 0);
    /* a second writer in the same second gets another name */
    REQUIRE(tb_writer_open(&w, dir) == 0);
    REQUIRE(tb_writer_scalar(w, 3, "x", 0.25f) == 0);
    CHECK(tb_writer_close(w) == 0);
    memset(&s, 0, sizeof(s));
    REQUIRE(tb_read_dir(dir, collect, &s) == 0);
    CHECK_EQ_INT(s.n, 3);
    CHECK(tb_read_dir("/nonexistent-sluice-dir", collect, &s) == 0);
}

TEST(loss_curve_and_svg)
{
    struct loss_curve c = { 0 };
    for (int i = 1; i <= 10; i++)
        loss_series_add(&c.train, i, 10.0 / i);
    loss_series_add(&c.val, 5, 2.5);
    loss_series_add(&c.val, 10, 1.5);
    /* a resumed run redoing steps 7.. replaces them */
    loss_series_add(&c.train, 7, 9.0);
    CHECK_EQ_INT(c.train.n, 7);
    CHECK(c.train.v[6].loss == 9.0);
    loss_curve_truncate(&c, 6);
    CHECK_EQ_INT(c.train.n, 6);
    CHECK_EQ_INT(c.val.n, 1);
    loss_series_add(&c.train, 7, NAN);
    struct sl_buf b = SL_BUF_INIT;
    REQUIRE(loss_curve_svg(&c, "run <a&b>", &b) == 0);
    REQUIRE(sl_buf_putc(&b, 0) == 0);
    CHECK_CONTAINS(b.data, "<svg xmlns=\"http://www.w3.org/2000/svg\"");
    CHECK_CONTAINS(b.data, "run &lt;a&amp;b&gt;");
    CHECK_CONTAINS(b.data, ">step</text>");
    CHECK_CONTAINS(b.data, ">validation loss</text>");
    CHECK(!strstr(b.data, "nan"));
    CHECK_CONTAINS(b.data, "</svg>\n");
    sl_buf_release(&b);
    /* empty curves still make a document */
    struct loss_curve e = { 0 };
    REQUIRE(loss_curve_svg(&e, "t", &b) == 0);
    REQUIRE(sl_buf_putc(&b, 0) == 0);
    CHECK_CONTAINS(b.data, "no losses yet");
    sl_buf_release(&b);
    loss_curve_release(&c);
}

TEST(loss_curve_task_panel)
{
    struct loss_curve c = { 0 };
    for (int i = 1; i <= 10; i++)
        loss_series_add(&c.train, i, 10.0 / i);
    struct sl_buf b = SL_BUF_INIT;
    /* no task: one panel, as before */
    REQUIRE(loss_curve_svg(&c, "t", &b) == 0);
    REQUIRE(sl_buf_putc(&b, 0) == 0);
    CHECK_CONTAINS(b.data, "height=\"480\"");
    CHECK(!strstr(b.data, "task accuracy"));
    b.len = 0;
    loss_curve_task_add(&c, "hellaswag", 5, 0.25, 0.30);
    loss_curve_task_add(&c, "hellaswag", 10, 0.5, 0.625);
    loss_curve_task_add(&c, "lambada", 5, 0.125, NAN); /* no acc_norm: no such curve */
    loss_curve_task_add(&c, "lambada", 10, 0.375, NAN);
    CHECK_EQ_INT(c.ntasks, 2);
    CHECK_EQ_INT(c.tasks[0].acc.n, 2);
    CHECK_EQ_INT(c.tasks[1].acc_norm.n, 0);
    REQUIRE(loss_curve_svg(&c, "t", &b) == 0);
    REQUIRE(sl_buf_putc(&b, 0) == 0);
    CHECK_CONTAINS(b.data, "height=\"780\"");
    CHECK_CONTAINS(b.data, ">task accuracy</text>");
    CHECK_CONTAINS(b.data, "<polyline class=\"task hellaswag acc\"");
    CHECK_CONTAINS(b.data, "<polyline class=\"task hellaswag acc_norm\"");
    CHECK_CONTAINS(b.data, "<polyline class=\"task lambada acc\"");
    CHECK(!strstr(b.data, "lambada acc_norm"));
    CHECK_CONTAINS(b.data, ">hellaswag acc_norm</text>");
    /* the accuracy panel lies below the loss panel: every task point's y is past 480 */
    const char *p = strstr(b.data, "class=\"task hellaswag acc\"");
    REQUIRE(p != NULL);
    p = strstr(p, "points=\"");
    REQUIRE(p != NULL);
    double x, y;
    REQUIRE(sscanf(p + 8, "%lf,%lf", &x, &y) == 2);
    CHECK(y > 480 && y < 780);
    CHECK(!strstr(b.data, "nan"));
    b.len = 0;
    /* a resumed run drops the later points; the 17th task is not kept */
    loss_curve_truncate(&c, 7);
    CHECK_EQ_INT(c.tasks[0].acc.n, 1);
    CHECK_EQ_INT(c.tasks[0].acc_norm.n, 1);
    for (int i = 0; i < LOSS_CURVE_MAX_TASKS + 3; i++) {
        char name[16];
        snprintf(name, sizeof(name), "t%d", i);
        loss_curve_task_add(&c, name, 5, 0.5, 0.5);
    }
    CHECK_EQ_INT(c.ntasks, LOSS_CURVE_MAX_TASKS);
    sl_buf_release(&b);
    loss_curve_release(&c);
}

struct tb_count {
    int acc, acc_norm, ppl;
};

static int count_tags(void *ctx, const char *tag, int64_t step, double wall, float value)
{
    struct tb_count *n = ctx;
    (void)step, (void)wall, (void)value;
    if (!tag)
        return 0;
    n->acc += !strncmp(tag, "eval/", 5) && strstr(tag, "/acc") && !strstr(tag, "/acc_norm");
    n->acc_norm += strstr(tag, "/acc_norm") != NULL;
    n->ppl += strstr(tag, "/perplexity") != NULL;
    return 0;
}

/* The trainer's log: task scores go to TensorBoard and loss.svg, and a resumed run's plot
 * reads them back from the earlier event file. */
TEST(train_log_task_scores)
{
    char *dir = sl_xasprintf("%s/tasklog", sl_test_tmpdir());
    struct train_log *tl = NULL;
    REQUIRE(train_log_open(&tl, dir, 0) == 0);
    CHECK(train_log_step(tl, 1, 3.0, 1e-3, 1.0, 100, NAN) == 0);
    CHECK(train_log_valid(tl, 2, 2.5) == 0);
    CHECK(train_log_task(tl, 2, "likes", "acc_norm", 0.5, 0.75) == 0);
    CHECK(train_log_task(tl, 2, "lambada", "perplexity", 0.25, 40.0) == 0);
    CHECK(train_log_close(tl) == 0);
    struct tb_count n = { 0 };
    REQUIRE(tb_read_dir(dir, count_tags, &n) == 0);
    CHECK_EQ_INT(n.acc, 2);
    CHECK_EQ_INT(n.acc_norm, 1);
    CHECK_EQ_INT(n.ppl, 1);
    char *svg = sl_xasprintf("%s/loss.svg", dir);
    struct sl_buf b = SL_BUF_INIT;
    REQUIRE(sl_read_file(svg, &b) == 0);
    REQUIRE(sl_buf_putc(&b, 0) == 0);
    CHECK_CONTAINS(b.data, "class=\"task likes acc_norm\"");
    CHECK_CONTAINS(b.data, "class=\"task lambada acc\"");
    CHECK(!strstr(b.data, "lambada perplexity"));
    b.len = 0;
    /* resumed at step 2: the plot still has the tasks (from the first event file) */
    REQUIRE(train_log_open(&tl, dir, 2) == 0);
    CHECK(train_log_step(tl, 3, 2.0, 1e-3, 1.0, 100, NAN) == 0);
    CHECK(train_log_close(tl) == 0);
    REQUIRE(sl_read_file(svg, &b) == 0);
    REQUIRE(sl_buf_putc(&b, 0) == 0);
    CHECK_CONTAINS(b.data, "class=\"task likes acc_norm\"");
    CHECK_CONTAINS(b.data, "class=\"task likes acc\"");
    sl_buf_release(&b);
    free(svg);
    free(dir);
}
