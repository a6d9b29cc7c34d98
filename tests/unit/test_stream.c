/* Tests for core/stream: every codec both ways, multi-member inputs, truncation, detection
 * by content, caps, line reading, atomic writers. */
#include "tests/harness.h"

#include "core/atomic.h"
#include "core/buf.h"
#include "core/err.h"
#include "core/stream.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void make_text(struct sl_buf *b, size_t lines)
{
    for (size_t i = 0; i < lines; i++)
        sl_buf_printf(b, "{\"text\":\"line %zu with some words to compress\"}\n", i);
}

static void compress(enum sl_codec c, const struct sl_buf *in, struct sl_buf *out)
{
    struct sl_writer *w;
    struct sl_writer_opts o = { .codec = c, .level = 0 };
    REQUIRE(sl_writer_open_buf(&w, out, &o) == 0);
    REQUIRE(sl_writer_write(w, in->data, in->len) == 0);
    REQUIRE(sl_writer_commit(w) == 0);
}

static int read_all_mem(const struct sl_buf *in, struct sl_buf *out, enum sl_codec *seen)
{
    struct sl_reader *r;
    int rc = sl_reader_open_source(&r, sl_source_mem(in->data, in->len, "mem"), NULL);
    if (rc)
        return rc;
    rc = sl_reader_read_all(r, out);
    if (seen)
        *seen = sl_reader_codec(r);
    sl_reader_close(r);
    return rc;
}

TEST(stream_roundtrip_all_codecs)
{
    enum sl_codec codecs[] = { SL_CODEC_NONE, SL_CODEC_GZIP, SL_CODEC_ZSTD, SL_CODEC_BZIP2 };
    struct sl_buf text = SL_BUF_INIT;
    make_text(&text, 20000); /* > several internal windows */
    for (size_t i = 0; i < 4; i++) {
        struct sl_buf z = SL_BUF_INIT, back = SL_BUF_INIT;
        compress(codecs[i], &text, &z);
        enum sl_codec seen;
        CHECK_EQ_INT(read_all_mem(&z, &back, &seen), 0);
        CHECK_EQ_INT(seen, codecs[i]);
        CHECK_EQ_MEM(back.data, back.len, text.data, text.len);
        sl_buf_release(&z);
        sl_buf_release(&back);
    }
    sl_buf_release(&text);
}

TEST(stream_multi_member_and_frames)
{
    enum sl_codec codecs[] = { SL_CODEC_GZIP, SL_CODEC_ZSTD, SL_CODEC_BZIP2 };
    struct sl_buf a = SL_BUF_INIT, b = SL_BUF_INIT, both = SL_BUF_INIT;
    sl_buf_puts(&a, "first part\n");
    sl_buf_puts(&b, "second part\n");
    sl_buf_puts(&both, "first part\nsecond part\n");
    for (size_t i = 0; i < 3; i++) {
        struct sl_buf z = SL_BUF_INIT, back = SL_BUF_INIT;
        compress(codecs[i], &a, &z);
        compress(codecs[i], &b, &z); /* appended: a second member/frame/stream */
        CHECK_EQ_INT(read_all_mem(&z, &back, NULL), 0);
        CHECK_EQ_MEM(back.data, back.len, both.data, both.len);
        sl_buf_release(&z);
        sl_buf_release(&back);
    }
    sl_buf_release(&a);
    sl_buf_release(&b);
    sl_buf_release(&both);
}

/* After the last gzip member or bzip2 stream: zero bytes (padding) end the data; any other byte
 * that does not start a member is an error. */
TEST(stream_padding_and_trailing_garbage)
{
    enum sl_codec codecs[] = { SL_CODEC_GZIP, SL_CODEC_BZIP2 };
    struct sl_buf text = SL_BUF_INIT;
    make_text(&text, 50);
    const size_t pads[] = { 1, 300, 300000 }; /* the last more than an input window */
    for (size_t i = 0; i < 2; i++) {
        for (size_t j = 0; j < sizeof(pads) / sizeof(pads[0]); j++) {
            size_t pad = pads[j];
            struct sl_buf z = SL_BUF_INIT, back = SL_BUF_INIT;
            compress(codecs[i], &text, &z);
            for (size_t k = 0; k < pad; k++)
                sl_buf_putc(&z, 0);
            CHECK_EQ_INT(read_all_mem(&z, &back, NULL), 0);
            CHECK_EQ_MEM(back.data, back.len, text.data, text.len);
            /* zeros, then a byte that is not: garbage, not padding */
            sl_buf_putc(&z, 'x');
            sl_buf_reset(&back);
            CHECK(read_all_mem(&z, &back, NULL) < 0);
            CHECK_CONTAINS(sl_err_msg(), "trailing garbage");
            sl_buf_release(&z);
            sl_buf_release(&back);
        }
    }
    sl_buf_release(&text);
}

TEST(stream_truncated_is_an_error)
{
    enum sl_codec codecs[] = { SL_CODEC_GZIP, SL_CODEC_ZSTD, SL_CODEC_BZIP2 };
    struct sl_buf text = SL_BUF_INIT;
    make_text(&text, 5000);
    for (size_t i = 0; i < 3; i++) {
        struct sl_buf z = SL_BUF_INIT, back = SL_BUF_INIT;
        compress(codecs[i], &text, &z);
        z.len /= 2;
        int rc = read_all_mem(&z, &back, NULL);
        CHECK_EQ_INT(rc, SL_ERR_CORRUPT);
        CHECK_CONTAINS(sl_err_msg(), "truncated");
        CHECK_CONTAINS(sl_err_msg(), "'mem'");
        CHECK(back.len < text.len);
        sl_buf_release(&z);
        sl_buf_release(&back);
    }
    sl_buf_release(&text);
}

TEST(stream_corrupt_data_is_an_error)
{
    struct sl_buf text = SL_BUF_INIT, z = SL_BUF_INIT, back = SL_BUF_INIT;
    make_text(&text, 2000);
    compress(SL_CODEC_GZIP, &text, &z);
    for (size_t i = 20; i < 60; i++)
        z.data[i] ^= 0x5a;
    CHECK(read_all_mem(&z, &back, NULL) < 0);
    CHECK_CONTAINS(sl_err_msg(), "compressed byte");
    sl_buf_release(&text);
    sl_buf_release(&z);
    sl_buf_release(&back);
}

TEST(stream_zstd_damaged_frame_gives_none_of_its_bytes)
{
    /* three frames; the middle one's checksum is wrong: the first frame comes out whole,
     * nothing of the second, and its lines are counted as dropped */
    struct sl_buf a = SL_BUF_INIT, b = SL_BUF_INIT, z = SL_BUF_INIT, back = SL_BUF_INIT;
    make_text(&a, 3000);
    for (size_t i = 0; i < 20000; i++) /* several zstd blocks, hard to compress */
        sl_buf_printf(&b, "{\"text\":\"%zu %llu\"}\n", i,
                      (unsigned long long)(i * 2654435761u) ^ (i << 17));
    compress(SL_CODEC_ZSTD, &a, &z);
    compress(SL_CODEC_ZSTD, &b, &z);
    z.data[z.len - 1] ^= 0xff; /* the last byte of the frame checksum */
    compress(SL_CODEC_ZSTD, &a, &z);
    struct sl_reader *r;
    REQUIRE(sl_reader_open_source(&r, sl_source_mem(z.data, z.len, "mem"), NULL) == 0);
    int rc = sl_reader_read_all(r, &back);
    CHECK_EQ_INT(rc, SL_ERR_CORRUPT);
    CHECK_CONTAINS(sl_err_msg(), "checksum");
    CHECK_EQ_MEM(back.data, back.len, a.data, a.len);
    CHECK(sl_reader_dropped_lines(r) > 0 && sl_reader_dropped_lines(r) <= 20000);
    CHECK(sl_reader_dropped_bytes(r) > 0);
    sl_reader_close(r);
    /* a frame cut by the end of the data still hands over what came before the cut */
    sl_buf_reset(&z);
    sl_buf_reset(&back);
    compress(SL_CODEC_ZSTD, &b, &z);
    z.len = z.len * 3 / 4;
    CHECK_EQ_INT(read_all_mem(&z, &back, NULL), SL_ERR_CORRUPT);
    CHECK(back.len > 0 && back.len < b.len && !memcmp(back.data, b.data, back.len));
    sl_buf_release(&a);
    sl_buf_release(&b);
    sl_buf_release(&z);
    sl_buf_release(&back);
}

TEST(stream_detects_by_content_not_name)
{
    struct sl_buf text = SL_BUF_INIT, z = SL_BUF_INIT, back = SL_BUF_INIT;
    sl_buf_puts(&text, "{\"text\":\"gzip data in a .zst file\"}\n");
    compress(SL_CODEC_GZIP, &text, &z);
    const char *path = sl_test_write("misnamed.jsonl.zst", z.data, z.len);
    CHECK_EQ_INT(sl_read_file(path, &back), 0);
    CHECK_EQ_MEM(back.data, back.len, text.data, text.len);
    sl_buf_release(&text);
    sl_buf_release(&z);
    sl_buf_release(&back);
}

TEST(stream_unsupported_and_empty)
{
    struct sl_buf xz = SL_BUF_INIT, back = SL_BUF_INIT;
    sl_buf_append(&xz, "\xfd" "7zXZ\0\0\0\0", 10);
    CHECK_EQ_INT(read_all_mem(&xz, &back, NULL), SL_ERR_UNSUPPORTED);
    CHECK_CONTAINS(sl_err_msg(), "xz");
    struct sl_buf empty = SL_BUF_INIT;
    CHECK_EQ_INT(read_all_mem(&empty, &back, NULL), 0);
    CHECK_EQ_INT(back.len, 0);
    sl_buf_release(&xz);
    sl_buf_release(&back);
}

TEST(stream_output_cap_stops_bombs)
{
    struct sl_buf zeros = SL_BUF_INIT, z = SL_BUF_INIT, back = SL_BUF_INIT;
    sl_buf_reserve(&zeros, 8u << 20);
    memset(zeros.data, 0, 8u << 20);
    zeros.len = 8u << 20;
    compress(SL_CODEC_GZIP, &zeros, &z);
    CHECK(z.len < 100000);
    struct sl_reader *r;
    struct sl_reader_opts o = { SL_CODEC_AUTO, 1u << 20 };
    REQUIRE(sl_reader_open_source(&r, sl_source_mem(z.data, z.len, "bomb.gz"), &o) == 0);
    CHECK_EQ_INT(sl_reader_read_all(r, &back), SL_ERR_TOOBIG);
    CHECK_CONTAINS(sl_err_msg(), "bomb.gz");
    sl_reader_close(r);
    /* by lines (no newline in 8 MB of zeros): the cap is fatal, not "line too long, go on",
     * so a caller that skips long lines stops instead of looping */
    REQUIRE(sl_reader_open_source(&r, sl_source_mem(z.data, z.len, "bomb.gz"), &o) == 0);
    const char *line;
    size_t len;
    int rc;
    int calls = 0;
    while ((rc = sl_reader_getline(r, &line, &len, 4096)) == SL_ERR_TOOBIG && ++calls < 10000)
        ;
    CHECK_EQ_INT(rc, SL_ERR_CORRUPT);
    CHECK_CONTAINS(sl_err_msg(), "compression bomb");
    CHECK_EQ_INT(sl_reader_getline(r, &line, &len, 4096), SL_ERR_CORRUPT);
    sl_reader_close(r);
    sl_buf_release(&zeros);
    sl_buf_release(&z);
    sl_buf_release(&back);
}

TEST(stream_zstd_window_within_cap)
{
    /* a zstd frame header asking for a 2 GiB window (window descriptor 0xA8: 2^31), then
     * junk; under an output cap it is refused instead of allocated */
    static const unsigned char frame[] = { 0x28, 0xb5, 0x2f, 0xfd, 0x00, 0xa8, 0xca, 0x8a,
                                           0xfe, 0x35, 0x04, 0xc7, 0x5c, 0x35, 0x90, 0x86 };
    struct sl_buf back = SL_BUF_INIT;
    struct sl_reader *r;
    struct sl_reader_opts o = { SL_CODEC_AUTO, 1u << 22 };
    REQUIRE(sl_reader_open_source(&r, sl_source_mem(frame, sizeof(frame), "w.zst"), &o) == 0);
    CHECK(sl_reader_read_all(r, &back) < 0);
    CHECK_CONTAINS(sl_err_msg(), "w.zst");
    CHECK_CONTAINS(sl_err_msg(), "too much memory"); /* refused at the header */
    sl_reader_close(r);
    sl_buf_release(&back);
}

TEST(stream_getline)
{
    const char *data = "one\ntwo\r\n\nthis line is long\nlast";
    struct sl_reader *r;
    REQUIRE(sl_reader_open_source(&r, sl_source_mem(data, strlen(data), "m"), NULL) == 0);
    const char *line;
    size_t len;
    CHECK_EQ_INT(sl_reader_getline(r, &line, &len, 10), 1);
    CHECK_EQ_MEM(line, len, "one", 3);
    CHECK_EQ_INT(sl_reader_getline(r, &line, &len, 10), 1);
    CHECK_EQ_MEM(line, len, "two\r", 4);
    CHECK_EQ_INT(sl_reader_getline(r, &line, &len, 10), 1);
    CHECK_EQ_INT(len, 0);
    CHECK_EQ_INT(sl_reader_getline(r, &line, &len, 10), SL_ERR_TOOBIG);
    CHECK_CONTAINS(sl_err_msg(), "m:4");
    CHECK_EQ_INT(sl_reader_line_no(r), 4);
    CHECK_EQ_INT(sl_reader_getline(r, &line, &len, 10), 1);
    CHECK_EQ_MEM(line, len, "last", 4);
    CHECK_EQ_INT(sl_reader_getline(r, &line, &len, 10), 0);
    CHECK_EQ_INT(sl_reader_out_offset(r), strlen(data));
    sl_reader_close(r);
}

TEST(stream_getline_across_windows)
{
    /* lines longer than the decoder window are assembled */
    struct sl_buf text = SL_BUF_INIT, z = SL_BUF_INIT;
    for (int i = 0; i < 3; i++) {
        for (int j = 0; j < 700000; j++)
            sl_buf_putc(&text, (char)('a' + (i + j) % 26));
        sl_buf_putc(&text, '\n');
    }
    compress(SL_CODEC_ZSTD, &text, &z);
    struct sl_reader *r;
    REQUIRE(sl_reader_open_source(&r, sl_source_mem(z.data, z.len, "m"), NULL) == 0);
    const char *line;
    size_t len;
    for (int i = 0; i < 3; i++) {
        CHECK_EQ_INT(sl_reader_getline(r, &line, &len, 1u << 20), 1);
        CHECK_EQ_INT(len, 700000);
        CHECK_EQ_MEM(line, len, text.data + (size_t)i * 700001, 700000);
    }
    CHECK_EQ_INT(sl_reader_getline(r, &line, &len, 1u << 20), 0);
    sl_reader_close(r);
    sl_buf_release(&text);
    sl_buf_release(&z);
}

TEST(stream_atomic_writer)
{
    char path[600];
    snprintf(path, sizeof(path), "%s/out.zst", sl_test_tmpdir());
    struct sl_writer *w;
    REQUIRE(sl_writer_open(&w, path, NULL) == 0);
    sl_writer_write(w, "abc\n", 4);
    struct stat st;
    CHECK(stat(path, &st) != 0); /* nothing under the final name yet */
    /* the temporary is this process's own: .out.zst.PID-HOST.tmp */
    char *tmp = sl_atomic_tmp_name(path), want[64];
    snprintf(want, sizeof(want), "/.out.zst.%ld-", (long)getpid());
    CHECK(strstr(tmp, want) != NULL);
    CHECK(stat(tmp, &st) == 0);
    sl_writer_abort(w);
    CHECK(stat(path, &st) != 0);
    CHECK(stat(tmp, &st) != 0); /* and no temporary left */
    free(tmp);

    REQUIRE(sl_writer_open(&w, path, NULL) == 0);
    sl_writer_write(w, "abc\n", 4);
    CHECK_EQ_INT(sl_writer_commit(w), 0);
    struct sl_buf back = SL_BUF_INIT;
    CHECK_EQ_INT(sl_read_file(path, &back), 0);
    CHECK_EQ_STR(back.data, "abc\n");
    sl_buf_release(&back);
}

/* Appending part of a file: in the kernel into a plain file (after what was written and
 * buffered), read and written into a compressed one or a buffer; a source shorter than
 * asked is an error naming it. */
TEST(stream_writer_copy_fd)
{
    struct sl_buf src = SL_BUF_INIT;
    make_text(&src, 50000);
    const char *sp = sl_test_write("src.bin", src.data, src.len);
    int fd = open(sp, O_RDONLY);
    REQUIRE(fd >= 0);
    static const char *const names[] = { "plain.bin", "packed.zst" };
    for (int i = 0; i < 2; i++) {
        char path[700];
        snprintf(path, sizeof(path), "%s/%s", sl_test_tmpdir(), names[i]);
        struct sl_writer *w;
        REQUIRE(sl_writer_open(&w, path, NULL) == 0);
        CHECK_EQ_INT(sl_writer_write(w, "head:", 5), 0);
        CHECK_EQ_INT(sl_writer_copy_fd(w, fd, 100, src.len - 200, sp), 0);
        CHECK_EQ_INT(sl_writer_write(w, ":tail", 5), 0);
        CHECK_EQ_INT((int)sl_writer_bytes_in(w), (int)(src.len - 200 + 10));
        REQUIRE(sl_writer_commit(w) == 0);
        struct sl_buf back = SL_BUF_INIT;
        REQUIRE(sl_read_file(path, &back) == 0);
        REQUIRE(back.len == src.len - 200 + 10);
        CHECK(!memcmp(back.data, "head:", 5));
        CHECK(!memcmp(back.data + 5, src.data + 100, src.len - 200));
        CHECK(!memcmp(back.data + back.len - 5, ":tail", 5));
        sl_buf_release(&back);
    }
    struct sl_buf mem = SL_BUF_INIT;
    struct sl_writer *w;
    REQUIRE(sl_writer_open_buf(&w, &mem, NULL) == 0);
    CHECK_EQ_INT(sl_writer_copy_fd(w, fd, 0, 10, sp), 0);
    CHECK_EQ_INT(sl_writer_copy_fd(w, fd, src.len - 5, 10, sp), SL_ERR_CORRUPT);
    CHECK_CONTAINS(sl_err_msg(), "src.bin");
    sl_writer_abort(w);
    sl_buf_release(&mem);
    char path[700];
    snprintf(path, sizeof(path), "%s/short.bin", sl_test_tmpdir());
    REQUIRE(sl_writer_open(&w, path, NULL) == 0);
    CHECK_EQ_INT(sl_writer_copy_fd(w, fd, src.len - 5, 10, sp), SL_ERR_CORRUPT);
    sl_writer_abort(w);
    close(fd);
    sl_buf_release(&src);
}

TEST(stream_unwritable_directory)
{
    struct sl_writer *w;
    CHECK_EQ_INT(sl_writer_open(&w, "/proc/sluice-cannot/x.zst", NULL), SL_ERR_IO);
    CHECK_CONTAINS(sl_err_msg(), "cannot create");
    CHECK(w == NULL);
}
