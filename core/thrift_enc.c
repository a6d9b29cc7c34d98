/* The Thrift compact-protocol encoder (core/thrift_enc.h). */
#include "core/thrift_enc.h"

#include "core/buf.h"
#include "core/err.h"
#include "core/parquet_format.h"

#include <string.h>

void sl_tenc_init(struct sl_tenc *t, struct sl_buf *out)
{
    memset(t, 0, sizeof(*t));
    t->out = out;
}

static void put(struct sl_tenc *t, const void *p, size_t n)
{
    if (!t->rc && sl_buf_append(t->out, p, n))
        t->rc = SL_ERR_NOMEM;
}

static void byte(struct sl_tenc *t, unsigned v)
{
    unsigned char c = (unsigned char)v;
    put(t, &c, 1);
}

void sl_tenc_uvarint(struct sl_tenc *t, uint64_t v)
{
    unsigned char b[10]; /* 64 bits, 7 a byte */
    size_t n = 0;
    do {
        b[n] = (unsigned char)(v & 0x7f);
        v >>= 7;
        if (v)
            b[n] |= 0x80;
        n++;
    } while (v);
    put(t, b, n);
}

/* Zigzag: 0, -1, 1, -2 ... as 0, 1, 2, 3 ... so that small negatives stay short. */
static void svarint(struct sl_tenc *t, int64_t v)
{
    sl_tenc_uvarint(t, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

void sl_tenc_begin(struct sl_tenc *t)
{
    if (t->depth >= SL_TENC_DEPTH) {
        if (!t->rc)
            t->rc = sl_err_set(SL_ERR_STATE, "thrift struct nested over %d deep", SL_TENC_DEPTH);
        t->depth++;
        return;
    }
    t->last[t->depth++] = 0;
}

int sl_tenc_end(struct sl_tenc *t)
{
    if (t->depth <= 0) {
        if (!t->rc)
            t->rc = sl_err_set(SL_ERR_STATE, "thrift struct closed but none is open");
        return t->rc;
    }
    byte(t, SL_TC_STOP);
    t->depth--;
    return t->rc;
}

void sl_tenc_field(struct sl_tenc *t, int16_t id, int type)
{
    int16_t *last = t->depth > 0 && t->depth <= SL_TENC_DEPTH ? &t->last[t->depth - 1] : NULL;
    int delta = last ? id - *last : 0;
    if (delta > 0 && delta <= 15) {
        byte(t, (unsigned)(delta << 4 | type));
    } else {
        byte(t, (unsigned)type);
        svarint(t, id);
    }
    if (last)
        *last = id;
}

void sl_tenc_bool(struct sl_tenc *t, int16_t id, int v)
{
    sl_tenc_field(t, id, v ? SL_TC_TRUE : SL_TC_FALSE);
}

void sl_tenc_i32(struct sl_tenc *t, int16_t id, int32_t v)
{
    sl_tenc_field(t, id, SL_TC_I32);
    svarint(t, v);
}

void sl_tenc_i64(struct sl_tenc *t, int16_t id, int64_t v)
{
    sl_tenc_field(t, id, SL_TC_I64);
    svarint(t, v);
}

void sl_tenc_binary(struct sl_tenc *t, int16_t id, const void *p, size_t n)
{
    sl_tenc_field(t, id, SL_TC_BINARY);
    sl_tenc_uvarint(t, n);
    put(t, p, n);
}

void sl_tenc_string(struct sl_tenc *t, int16_t id, const char *s)
{
    sl_tenc_binary(t, id, s, strlen(s));
}

/* The list header after the field's: short form for counts up to 14 (15 marks the long). */
void sl_tenc_list(struct sl_tenc *t, int16_t id, int elem, size_t n)
{
    sl_tenc_field(t, id, SL_TC_LIST);
    if (n < 15) {
        byte(t, (unsigned)(n << 4 | (unsigned)elem));
    } else {
        byte(t, 0xf0u | (unsigned)elem);
        sl_tenc_uvarint(t, n);
    }
}

void sl_tenc_elem_i32(struct sl_tenc *t, int32_t v)
{
    svarint(t, v);
}

void sl_tenc_elem_string(struct sl_tenc *t, const char *s)
{
    size_t n = strlen(s);
    sl_tenc_uvarint(t, n);
    put(t, s, n);
}
