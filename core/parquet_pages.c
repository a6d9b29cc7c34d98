/* The pages of a column chunk (core/parquet_write.h): the dictionary when it pays, data
 * pages v1 of definition levels and values, each ZSTD-compressed behind its Thrift
 * PageHeader. */
#include "core/alloc.h"
#include "core/buf.h"
#include "core/err.h"
#include "core/hash.h"
#include "core/parquet_format.h"
#include "core/parquet_write.h"
#include "core/parquet_write_internal.h"
#include "core/stream.h"
#include "core/thrift_enc.h"

#include <stdlib.h>
#include <string.h>
#include <zstd.h>

/* Rows of a data page at most: pyarrow's data_page_row_count_limit (20000), so that pages
 * of tiny values stay small too. */
#define PAGE_ROWS 20000
/* Groups of 8 values in one bit-packed run of the RLE hybrid: 63, the most a one-byte run
 * header holds ((63 << 1 | 1) < 128), which every reader accepts. */
#define RUN_GROUPS 63

struct pages {
    ZSTD_CCtx *cc;
    struct sl_buf body, comp, hdr, tmp;
    size_t *off;     /* BYTE_ARRAY values' offsets in vals (nvals + 1) */
    uint32_t *idx;   /* each value's dictionary index */
    uint32_t *dist;  /* the distinct values, as value numbers, in order of appearance */
    uint32_t *table; /* open addressing: 1 + a distinct value's number, 0 empty */
    size_t cap_vals, cap_table;
};

int pq_physical(enum pq_kind k)
{
    switch (k) {
    case PQ_K_INT:
        return SL_PQ_INT64;
    case PQ_K_DBL:
        return SL_PQ_DOUBLE;
    case PQ_K_BOOL:
        return SL_PQ_BOOLEAN;
    default:
        return SL_PQ_BYTE_ARRAY;
    }
}

void pq_pages_release(struct pq_writer *p)
{
    struct pages *g = p->pages;
    if (!g)
        return;
    ZSTD_freeCCtx(g->cc);
    sl_buf_release(&g->body);
    sl_buf_release(&g->comp);
    sl_buf_release(&g->hdr);
    sl_buf_release(&g->tmp);
    free(g->off);
    free(g->idx);
    free(g->dist);
    free(g->table);
    free(g);
    p->pages = NULL;
}

static struct pages *pages_of(struct pq_writer *p, size_t nvals)
{
    struct pages *g = p->pages;
    if (!g) {
        g = p->pages = sl_xcalloc(1, sizeof(*g));
        g->cc = ZSTD_createCCtx();
        sl_buf_init(&g->body, 0);
        sl_buf_init(&g->comp, 0);
        sl_buf_init(&g->hdr, 0);
        sl_buf_init(&g->tmp, 0);
    }
    if (nvals + 1 > g->cap_vals) {
        g->cap_vals = nvals + 1;
        g->off = sl_xrealloc(g->off, g->cap_vals * sizeof(*g->off));
        g->idx = sl_xrealloc(g->idx, g->cap_vals * sizeof(*g->idx));
        g->dist = sl_xrealloc(g->dist, g->cap_vals * sizeof(*g->dist));
    }
    return g;
}

static uint32_t le32(const char *p)
{
    const unsigned char *u = (const unsigned char *)p;
    return (uint32_t)u[0] | (uint32_t)u[1] << 8 | (uint32_t)u[2] << 16 | (uint32_t)u[3] << 24;
}

static void put_le32(struct sl_buf *b, uint32_t v)
{
    unsigned char le[4] = { (unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16),
                            (unsigned char)(v >> 24) };
    sl_buf_append(b, le, 4);
}

/* Bits to write the numbers 0..n-1 (at least 1). */
static int bit_width(size_t n)
{
    int bw = 1;
    while (bw < 32 && ((size_t)1 << bw) < n)
        bw++;
    return bw;
}

/* ---- the dictionary ---------------------------------------------------------------------- */

/* Index the chunk's BYTE_ARRAY values: 1 (and g->idx, g->dist, *ndist) when a dictionary
 * is smaller than the plain values and fits SL_PQ_DICT_BYTES, else 0. */
static int build_dict(struct pages *g, const struct pq_col *c, size_t *ndist)
{
    size_t n = c->nvals, want = 4;
    while (want < 2 * n) /* at most half full */
        want *= 2;
    if (want > g->cap_table) {
        free(g->table);
        g->table = sl_xmalloc(want * sizeof(*g->table));
        g->cap_table = want;
    }
    memset(g->table, 0, want * sizeof(*g->table));
    size_t nd = 0, dict_bytes = 0;
    for (size_t i = 0; i < n; i++) {
        const char *v = c->vals.data + g->off[i];
        size_t len = g->off[i + 1] - g->off[i];
        size_t h = (size_t)sl_hash64(v, len, 0) & (want - 1);
        for (;; h = (h + 1) & (want - 1)) {
            uint32_t e = g->table[h];
            if (!e) {
                g->table[h] = (uint32_t)nd + 1;
                g->dist[nd] = (uint32_t)i;
                g->idx[i] = (uint32_t)nd++;
                dict_bytes += len;
                break;
            }
            size_t j = g->dist[e - 1];
            if (g->off[j + 1] - g->off[j] == len && !memcmp(c->vals.data + g->off[j], v, len)) {
                g->idx[i] = e - 1;
                break;
            }
        }
        if (dict_bytes > SL_PQ_DICT_BYTES)
            return 0;
    }
    *ndist = nd;
    /* the indices bit-packed, and a run header per RUN_GROUPS groups of 8 */
    size_t index_bytes = (n * (size_t)bit_width(nd) + 7) / 8 + n / (8 * RUN_GROUPS) + 2;
    return nd > 0 && dict_bytes + index_bytes < c->vals.len;
}

/* ---- encodings ----------------------------------------------------------------------------- */

static void uvarint(struct sl_buf *b, uint64_t v)
{
    do {
        unsigned char x = (unsigned char)(v & 0x7f);
        v >>= 7;
        if (v)
            x |= 0x80;
        sl_buf_append(b, &x, 1);
    } while (v);
}

/* Definition levels (0 or 1) as RLE runs of the hybrid, bit width 1: a run's header is its
 * length << 1, its value one byte. */
static void encode_levels(struct sl_buf *b, const char *def, size_t n)
{
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && def[j] == def[i])
            j++;
        uvarint(b, (uint64_t)(j - i) << 1);
        sl_buf_append(b, &def[i], 1);
        i = j;
    }
}

/* n values of bw bits, least significant bit first, as bit-packed runs of the hybrid (the
 * last group padded with zeros). */
static void encode_packed(struct sl_buf *b, const uint32_t *v, size_t n, int bw)
{
    for (size_t i = 0; i < n;) {
        size_t cnt = n - i < 8 * RUN_GROUPS ? n - i : 8 * RUN_GROUPS;
        size_t groups = (cnt + 7) / 8;
        uvarint(b, (uint64_t)groups << 1 | 1);
        uint64_t acc = 0;
        int bits = 0;
        for (size_t k = 0; k < groups * 8; k++) {
            acc |= (uint64_t)(k < cnt ? v[i + k] : 0) << bits;
            bits += bw;
            while (bits >= 8) {
                unsigned char x = (unsigned char)acc;
                sl_buf_append(b, &x, 1);
                acc >>= 8;
                bits -= 8;
            }
        }
        i += cnt;
    }
}

/* ---- pages ----------------------------------------------------------------------------------- */

/* Compress g->body and write it behind its header; counts into *k. `head` writes the
 * PageHeader's page-type-specific fields. */
static int emit_page(struct pq_writer *p, struct sl_writer *w, struct pages *g, int type,
                     void (*head)(struct sl_tenc *, const void *), const void *arg,
                     struct pq_chunk *k)
{
    size_t bound = ZSTD_compressBound(g->body.len);
    sl_buf_reset(&g->comp);
    if (sl_buf_reserve(&g->comp, bound))
        return sl_err_set(SL_ERR_NOMEM, "cannot compress a page of parquet '%s'", p->name);
    size_t zn = ZSTD_compressCCtx(g->cc, g->comp.data, bound, g->body.data, g->body.len, p->level);
    if (ZSTD_isError(zn))
        return sl_err_set(SL_ERR_IO, "cannot compress a page of parquet '%s': %s", p->name,
                          ZSTD_getErrorName(zn));
    if (g->body.len > INT32_MAX || zn > INT32_MAX)
        return sl_err_set(SL_ERR_TOOBIG, "cannot write a page of %zu bytes to parquet '%s'",
                          g->body.len, p->name);
    sl_buf_reset(&g->hdr);
    struct sl_tenc t;
    sl_tenc_init(&t, &g->hdr);
    sl_tenc_begin(&t);
    sl_tenc_i32(&t, SL_PQ_PH_TYPE, type);
    sl_tenc_i32(&t, SL_PQ_PH_UNCOMPRESSED_SIZE, (int32_t)g->body.len);
    sl_tenc_i32(&t, SL_PQ_PH_COMPRESSED_SIZE, (int32_t)zn);
    head(&t, arg);
    int rc = sl_tenc_end(&t);
    if (!rc)
        rc = sl_writer_emit(w, g->hdr.data, g->hdr.len);
    if (!rc)
        rc = sl_writer_emit(w, g->comp.data, zn);
    k->uncompressed += g->hdr.len + g->body.len;
    k->compressed += g->hdr.len + zn;
    p->pos += g->hdr.len + zn;
    return rc;
}

struct data_head {
    size_t rows;
    int encoding;
};

static void data_head(struct sl_tenc *t, const void *arg)
{
    const struct data_head *d = arg;
    sl_tenc_field(t, SL_PQ_PH_DATA, SL_TC_STRUCT);
    sl_tenc_begin(t);
    sl_tenc_i32(t, SL_PQ_DP_NUM_VALUES, (int32_t)d->rows);
    sl_tenc_i32(t, SL_PQ_DP_ENCODING, d->encoding);
    sl_tenc_i32(t, SL_PQ_DP_DEF_ENCODING, SL_PQ_RLE);
    sl_tenc_i32(t, SL_PQ_DP_REP_ENCODING, SL_PQ_RLE);
    sl_tenc_end(t);
}

static void dict_head(struct sl_tenc *t, const void *arg)
{
    sl_tenc_field(t, SL_PQ_PH_DICT, SL_TC_STRUCT);
    sl_tenc_begin(t);
    sl_tenc_i32(t, SL_PQ_DICT_NUM_VALUES, (int32_t) * (const size_t *)arg);
    sl_tenc_i32(t, SL_PQ_DICT_ENCODING, SL_PQ_PLAIN);
    sl_tenc_end(t);
}

/* Where value i starts in c->vals (the chunk's PLAIN bytes). */
static size_t value_at(const struct pages *g, const struct pq_col *c, size_t i)
{
    switch (pq_physical(c->kind)) {
    case SL_PQ_BYTE_ARRAY:
        return g->off[i];
    case SL_PQ_BOOLEAN:
        return i;
    default:
        return 8 * i;
    }
}

/* The data page of rows r0..r1 (values v0..v1). */
static int data_page(struct pq_writer *p, struct sl_writer *w, struct pages *g,
                     const struct pq_col *c, size_t r0, size_t r1, size_t v0, size_t v1, int bw,
                     struct pq_chunk *k)
{
    sl_buf_reset(&g->body);
    sl_buf_reset(&g->tmp);
    encode_levels(&g->tmp, c->def.data + r0, r1 - r0);
    put_le32(&g->body, (uint32_t)g->tmp.len);
    sl_buf_append(&g->body, g->tmp.data, g->tmp.len);
    if (k->dict) {
        unsigned char b = (unsigned char)bw;
        sl_buf_append(&g->body, &b, 1);
        encode_packed(&g->body, g->idx + v0, v1 - v0, bw);
    } else if (pq_physical(c->kind) == SL_PQ_BOOLEAN) {
        unsigned char x = 0;
        for (size_t i = v0; i < v1; i++) {
            x |= (unsigned char)((c->vals.data[i] ? 1 : 0) << ((i - v0) & 7));
            if (((i - v0) & 7) == 7 || i + 1 == v1) {
                sl_buf_append(&g->body, &x, 1);
                x = 0;
            }
        }
    } else {
        size_t a = value_at(g, c, v0), b = value_at(g, c, v1);
        sl_buf_append(&g->body, c->vals.data + a, b - a);
    }
    struct data_head d = { r1 - r0, k->dict ? SL_PQ_RLE_DICTIONARY : SL_PQ_PLAIN };
    return emit_page(p, w, g, SL_PQ_DATA_PAGE, data_head, &d, k);
}

static int dict_page(struct pq_writer *p, struct sl_writer *w, struct pages *g,
                     const struct pq_col *c, size_t nd, struct pq_chunk *k)
{
    sl_buf_reset(&g->body);
    for (size_t d = 0; d < nd; d++) {
        size_t j = g->dist[d];
        sl_buf_append(&g->body, c->vals.data + g->off[j], g->off[j + 1] - g->off[j]);
    }
    k->dict_off = p->pos;
    return emit_page(p, w, g, SL_PQ_DICTIONARY_PAGE, dict_head, &nd, k);
}

int pq_write_chunk(struct pq_writer *p, struct sl_writer *w, const struct pq_col *c, size_t rows,
                   struct pq_chunk *k)
{
    struct pages *g = pages_of(p, c->nvals);
    if (!g->cc)
        return sl_err_set(SL_ERR_NOMEM, "cannot start a zstd compressor for parquet '%s'", p->name);
    memset(k, 0, sizeof(*k));
    k->values = rows;
    size_t nd = 0;
    int bw = 0, rc = 0;
    if (pq_physical(c->kind) == SL_PQ_BYTE_ARRAY) {
        /* g->off: where each value (its 4-byte length, then its bytes) starts */
        size_t o = 0;
        for (size_t i = 0; i < c->nvals; i++) {
            g->off[i] = o;
            o += 4 + le32(c->vals.data + o);
        }
        g->off[c->nvals] = o;
        k->dict = build_dict(g, c, &nd);
        bw = bit_width(nd);
        if (k->dict)
            rc = dict_page(p, w, g, c, nd, k);
    }
    k->data_off = p->pos;
    size_t r0 = 0, v0 = 0;
    while (!rc && r0 < rows) {
        size_t r1 = r0, v1 = v0;
        size_t start = value_at(g, c, v0);
        while (r1 < rows && r1 - r0 < PAGE_ROWS &&
               (r1 == r0 || value_at(g, c, v1) - start < SL_PQ_PAGE_BYTES)) {
            v1 += c->def.data[r1] ? 1 : 0;
            r1++;
        }
        rc = data_page(p, w, g, c, r0, r1, v0, v1, bw, k);
        r0 = r1;
        v0 = v1;
    }
    return rc;
}
