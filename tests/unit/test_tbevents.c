/* Tests for the TensorBoard writer: CRC-32C against the RFC 3720 vectors, the TFRecord
 * framing and Event bytes of a scalar, reading back (restart markers, a truncated tail,
 * damage), and the loss curves and their SVG. */
#include "tests/harness.h"

#include "core/buf.h"
#include "core/err.h"
#include "core/hash.h"
#include "train/losscurve.h"
#include "train/tbevents.h"

#include <math.h>
#include <stdlib.h>

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
    static const unsigned char ev[] = { 0x09, 0, 0, 0, 0, 0, 0, 0xf8, 0x3f, 0x10, 0x03, 0x2a, 0x0a,
                                        0x0a, 0x08, 0x0a, 0x01, 'a', 0x15, 0, 0, 0, 0x40 };
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
