/* Tests for core/thrift_enc (bytes worked out by hand from the compact protocol's
 * specification) and core/parquet_write (the file's frame, line cutting, errors, 0 rows;
 * what pyarrow and DuckDB read of its files: tests/cli/t_parquet_out.sh). */
#include "tests/harness.h"

#include "core/buf.h"
#include "core/err.h"
#include "core/parquet_format.h"
#include "core/parquet_write.h"
#include "core/stream.h"
#include "core/thrift_enc.h"

#include <stdlib.h>
#include <string.h>

TEST(thrift_enc_fields)
{
    struct sl_buf b = SL_BUF_INIT;
    struct sl_tenc t;
    sl_tenc_init(&t, &b);
    sl_tenc_begin(&t);
    sl_tenc_i32(&t, 1, 2);              /* delta 1, I32 (5): 0x15; zigzag(2) = 4 */
    sl_tenc_i64(&t, 3, -1);             /* delta 2, I64 (6): 0x26; zigzag(-1) = 1 */
    sl_tenc_string(&t, 20, "ab");       /* delta 17 > 15: type byte 0x08, zigzag(20) = 40 */
    sl_tenc_bool(&t, 21, 1);            /* delta 1, TRUE (1): 0x11, no value byte */
    sl_tenc_list(&t, 22, SL_TC_I32, 3); /* 0x19; 3 elements of I32: 0x35 */
    sl_tenc_elem_i32(&t, 0);
    sl_tenc_elem_i32(&t, -2);            /* zigzag(-2) = 3 */
    sl_tenc_elem_i32(&t, 300);           /* zigzag(300) = 600: 0xd8 0x04 */
    sl_tenc_field(&t, 23, SL_TC_STRUCT); /* 0x1c */
    sl_tenc_begin(&t);
    sl_tenc_i32(&t, 1, 1);  /* ids restart inside: 0x15 0x02 */
    sl_tenc_end(&t);        /* 0x00 */
    sl_tenc_i32(&t, 24, 0); /* delta 1 from 23 again: 0x15 0x00 */
    CHECK_EQ_INT(sl_tenc_end(&t), 0);
    const unsigned char want[] = { 0x15, 0x04, 0x26, 0x01, 0x08, 0x28, 0x02, 'a',
                                   'b',  0x11, 0x19, 0x35, 0x00, 0x03, 0xd8, 0x04,
                                   0x1c, 0x15, 0x02, 0x00, 0x15, 0x00, 0x00 };
    CHECK_EQ_MEM(b.data, b.len, (const char *)want, sizeof(want));
    sl_buf_release(&b);
}

TEST(thrift_enc_long_list_and_errors)
{
    struct sl_buf b = SL_BUF_INIT;
    struct sl_tenc t;
    sl_tenc_init(&t, &b);
    sl_tenc_begin(&t);
    sl_tenc_list(&t, 1, SL_TC_STRUCT, 20); /* 0x19; count >= 15: 0xfc then varint 20 */
    CHECK_EQ_INT(sl_tenc_end(&t), 0);
    const unsigned char want[] = { 0x19, 0xfc, 0x14, 0x00 };
    CHECK_EQ_MEM(b.data, b.len, (const char *)want, sizeof(want));
    CHECK_EQ_INT(sl_tenc_end(&t), SL_ERR_STATE); /* closed more than opened */
    sl_buf_release(&b);
}

/* A Parquet file written into b from `text` (written in pieces of `piece` bytes). */
static int write_pq(struct sl_buf *b, const char *text, size_t piece, uint64_t rows)
{
    struct sl_writer *w;
    struct sl_pq_write_opts o = { .row_group_rows = rows };
    int rc = sl_pq_writer_open(&w, NULL, b, &o);
    if (rc)
        return rc;
    size_t n = strlen(text);
    for (size_t i = 0; !rc && i < n; i += piece)
        rc = sl_writer_write(w, text + i, n - i < piece ? n - i : piece);
    if (rc) {
        sl_writer_abort(w);
        return rc;
    }
    return sl_writer_commit(w);
}

static uint32_t le32(const char *p)
{
    const unsigned char *u = (const unsigned char *)p;
    return (uint32_t)u[0] | (uint32_t)u[1] << 8 | (uint32_t)u[2] << 16 | (uint32_t)u[3] << 24;
}

/* PAR1 at both ends and a footer length that fits between them. */
static int framed(const struct sl_buf *b)
{
    return b->len >= 12 && !memcmp(b->data, "PAR1", 4) &&
           !memcmp(b->data + b->len - 4, "PAR1", 4) && le32(b->data + b->len - 8) + 12 <= b->len;
}

TEST(parquet_write_frame_and_pieces)
{
    const char *docs = "{\"text\":\"\",\"id\":\"a\",\"n\":1}\n"
                       "{\"text\":\"ctl \\u0000\\u001f \\ud83d\\ude00\",\"id\":\"b\",\"n\":null}\n"
                       "\n"
                       "{\"n\":3,\"text\":\"last, no newline\"}";
    struct sl_buf whole = SL_BUF_INIT, pieces = SL_BUF_INIT;
    CHECK_EQ_INT(write_pq(&whole, docs, strlen(docs), 2), 0);
    CHECK(framed(&whole));
    /* the footer names the columns and the writer */
    const char *footer = whole.data + whole.len - 8 - le32(whole.data + whole.len - 8);
    size_t flen = le32(whole.data + whole.len - 8);
    CHECK(memmem(footer, flen, "sluice ", 7) != NULL);
    CHECK(memmem(footer, flen, "text", 4) != NULL);
    /* written a byte at a time: the same lines, the same file */
    CHECK_EQ_INT(write_pq(&pieces, docs, 1, 2), 0);
    CHECK_EQ_MEM(pieces.data, pieces.len, whole.data, whole.len);
    sl_buf_release(&whole);
    sl_buf_release(&pieces);
}

TEST(parquet_write_zero_rows)
{
    struct sl_buf b = SL_BUF_INIT;
    CHECK_EQ_INT(write_pq(&b, "", 1, 0), 0);
    CHECK(framed(&b));
    /* magic, footer, its length, magic: nothing else */
    CHECK_EQ_INT((long)b.len, (long)(12 + le32(b.data + b.len - 8)));
    sl_buf_release(&b);
}

TEST(parquet_write_not_an_object)
{
    struct sl_buf b = SL_BUF_INIT;
    int rc = write_pq(&b, "{\"text\":\"a\"}\n[1,2]\n", 64, 0);
    CHECK_EQ_INT(rc, SL_ERR_FORMAT);
    CHECK_CONTAINS(sl_err_msg(), "document 2");
    CHECK_CONTAINS(sl_err_msg(), "(memory)");
    sl_buf_release(&b);
}

TEST(parquet_write_out_opts)
{
    struct sl_pq_write_opts o;
    CHECK(sl_pq_out_opts(&o, "jsonl.zst", 10, 3, NULL) == NULL);
    CHECK(sl_pq_out_opts(&o, "parquet", 10, 5, "body") == &o);
    CHECK_EQ_INT((long)o.row_group_rows, 10);
    CHECK_EQ_INT(o.level, 5);
    CHECK_EQ_STR(o.text_key, "body");
}
