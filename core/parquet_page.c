/* A column chunk's pages: headers, levels (RLE/bit-packed hybrid,
 * BIT_PACKED) and values (PLAIN, dictionaries, DELTA_BINARY_PACKED,
 * DELTA_LENGTH_BYTE_ARRAY, DELTA_BYTE_ARRAY, BYTE_STREAM_SPLIT). */
#include "core/parquet_internal.h"

#include "core/alloc.h"
#include "core/err.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* a page's size as its header gives it: Parquet writers keep pages near 1 MiB; this
 * bounds what a damaged header can make the reader allocate */
#define PQ_MAX_PAGE (1u << 30)
/* values in one page: writers cut pages at 20,000 (pyarrow) to 1M values; this bounds the
 * level and value arrays a damaged header can ask for */
#define PQ_MAX_PAGE_VALUES (1u << 26)

struct page {
    int type;
    int32_t usize, csize;
    int32_t num_values, num_nulls, num_rows;
    int encoding, def_enc, rep_enc;
    int32_t def_len, rep_len;
    int compressed; /* v2: is_compressed */
};

/* A chunk being decoded: where errors are, the dictionary. */
struct dec {
    struct pq_column *c;
    const struct pq_node *node;
    const struct pq_where *w;
    uint64_t off; /* file offset of the page being decoded */
    int type, codec;
    /* the dictionary: values of the column's type */
    int64_t *di;
    double *dd;
    struct pq_bytes *db;
    size_t dn;
    int have_dict;
    uint64_t left; /* values the chunk's metadata gives that no page has held yet */
};

static int bad(const struct dec *d, const char *fmt, const char *arg)
{
    char what[256];
    snprintf(what, sizeof(what), fmt, arg);
    return sl_err_set(SL_ERR_CORRUPT,
                      "cannot read Parquet file '%s' at byte %llu (row group %zu, column '%s'): "
                      "%s\nhint: the file is damaged; write it again from its source",
                      d->w->name, (unsigned long long)d->off, d->w->rg, d->w->column, what);
}

static void keep_block(struct pq_column *c, void *p)
{
    if (c->nblocks == c->bcap) {
        c->bcap = c->bcap ? 2 * c->bcap : 16;
        c->blocks = sl_xrealloc(c->blocks, c->bcap * sizeof(*c->blocks));
    }
    c->blocks[c->nblocks++] = p;
}

/* ---- page headers -------------------------------------------------------------------- */

static void parse_data_header(struct pq_tin *t, struct page *pg, int v2)
{
    int16_t last = 0, id;
    int ft;
    while (pq_field(t, &last, &id, &ft)) {
        if (ft == SL_TC_STRUCT || ft == SL_TC_BINARY || ft == SL_TC_LIST) {
            pq_skip(t, ft); /* statistics */
            continue;
        }
        int64_t v = pq_int(t, ft);
        if (!v2) {
            switch (id) {
            case SL_PQ_DP_NUM_VALUES:
                pg->num_values = (int32_t)v;
                break;
            case SL_PQ_DP_ENCODING:
                pg->encoding = (int)v;
                break;
            case SL_PQ_DP_DEF_ENCODING:
                pg->def_enc = (int)v;
                break;
            case SL_PQ_DP_REP_ENCODING:
                pg->rep_enc = (int)v;
                break;
            }
        } else {
            switch (id) {
            case SL_PQ_DP2_NUM_VALUES:
                pg->num_values = (int32_t)v;
                break;
            case SL_PQ_DP2_NUM_NULLS:
                pg->num_nulls = (int32_t)v;
                break;
            case SL_PQ_DP2_NUM_ROWS:
                pg->num_rows = (int32_t)v;
                break;
            case SL_PQ_DP2_ENCODING:
                pg->encoding = (int)v;
                break;
            case SL_PQ_DP2_DEF_LEN:
                pg->def_len = (int32_t)v;
                break;
            case SL_PQ_DP2_REP_LEN:
                pg->rep_len = (int32_t)v;
                break;
            case SL_PQ_DP2_IS_COMPRESSED:
                pg->compressed = (int)v;
                break;
            }
        }
    }
}

static void parse_dict_header(struct pq_tin *t, struct page *pg)
{
    int16_t last = 0, id;
    int ft;
    while (pq_field(t, &last, &id, &ft)) {
        if (id == SL_PQ_DICT_NUM_VALUES)
            pg->num_values = (int32_t)pq_int(t, ft);
        else if (id == SL_PQ_DICT_ENCODING)
            pg->encoding = (int)pq_int(t, ft);
        else
            pq_skip(t, ft);
    }
}

/* A PageHeader at t; the header's bytes are consumed. 0 or -1. */
static int parse_page_header(struct pq_tin *t, struct page *pg)
{
    memset(pg, 0, sizeof(*pg));
    pg->type = -1;
    pg->compressed = 1;
    int16_t last = 0, id;
    int ft;
    while (pq_field(t, &last, &id, &ft)) {
        if (id == SL_PQ_PH_TYPE)
            pg->type = (int)pq_int(t, ft);
        else if (id == SL_PQ_PH_UNCOMPRESSED_SIZE)
            pg->usize = (int32_t)pq_int(t, ft);
        else if (id == SL_PQ_PH_COMPRESSED_SIZE)
            pg->csize = (int32_t)pq_int(t, ft);
        else if (id == SL_PQ_PH_DATA && ft == SL_TC_STRUCT)
            parse_data_header(t, pg, 0);
        else if (id == SL_PQ_PH_DATA_V2 && ft == SL_TC_STRUCT)
            parse_data_header(t, pg, 1);
        else if (id == SL_PQ_PH_DICT && ft == SL_TC_STRUCT)
            parse_dict_header(t, pg);
        else
            pq_skip(t, ft);
    }
    if (t->err || pg->type < 0 || pg->usize < 0 || pg->csize < 0 || pg->num_values < 0 ||
        (uint32_t)pg->usize > PQ_MAX_PAGE || pg->def_len < 0 || pg->rep_len < 0)
        return -1;
    return 0;
}

/* Decompress src[0..n) into exactly un bytes at dst (core/parquet_codec.c). */
static int decompress(struct dec *d, const uint8_t *src, size_t n, uint8_t *dst, size_t un)
{
    int r = pq_decompress(d->codec, src, n, dst, un, d->w->name);
    if (r == 1)
        return bad(d, "the page does not decompress%s", "");
    if (r == 2)
        return sl_err_set(
            SL_ERR_UNSUPPORTED,
            "cannot read Parquet file '%s' at byte %llu (row group %zu, column '%s'): "
            "its compression (codec %d) is not supported\nhint: write it with "
            "zstd, snappy, gzip, lz4 or brotli, or uncompressed",
            d->w->name, (unsigned long long)d->off, d->w->rg, d->w->column, d->codec);
    return r;
}

/* ---- the RLE / bit-packed hybrid ---------------------------------------------------- */

static uint64_t bits_at(const uint8_t *p, uint64_t bit, int width)
{
    uint64_t v = 0;
    for (int k = 0; k < width;) {
        uint64_t byte = (bit + (uint64_t)k) >> 3;
        int sh = (int)((bit + (uint64_t)k) & 7);
        int take = 8 - sh < width - k ? 8 - sh : width - k;
        v |= (uint64_t)((p[byte] >> sh) & ((1u << take) - 1)) << k;
        k += take;
    }
    return v;
}

/* Decode n values of `width` bits (0..32) from p[0..len) into out. 0 or -1 (past the end). */
static int hybrid(const uint8_t *p, size_t len, int width, uint32_t *out, size_t n)
{
    struct pq_tin t = { p, p, p + len, 0 };
    size_t got = 0, vbytes = (size_t)(width + 7) / 8;
    while (got < n) {
        uint64_t h = pq_varint(&t);
        if (t.err)
            return -1;
        if (h & 1) { /* bit-packed: (h >> 1) groups of 8 values */
            uint64_t groups = h >> 1;
            if (groups > (uint64_t)(t.end - t.p) ||
                groups * (uint64_t)width > (uint64_t)(t.end - t.p))
                return -1;
            uint64_t nv = groups * 8;
            for (uint64_t k = 0; k < nv && got < n; k++)
                out[got++] = (uint32_t)bits_at(t.p, k * (uint64_t)width, width);
            t.p += groups * (uint64_t)width;
        } else { /* a run of (h >> 1) copies of one value */
            uint64_t run = h >> 1;
            if (vbytes > (size_t)(t.end - t.p) || run == 0)
                return -1;
            uint32_t v = 0;
            for (size_t b = 0; b < vbytes; b++)
                v |= (uint32_t)t.p[b] << (8 * b);
            t.p += vbytes;
            for (uint64_t k = 0; k < run && got < n; k++)
                out[got++] = v;
        }
    }
    return 0;
}

/* The deprecated BIT_PACKED levels: values packed from each byte's most significant bit. */
static int bitpacked_msb(const uint8_t *p, size_t len, int width, uint32_t *out, size_t n,
                         size_t *used)
{
    uint64_t bits = (uint64_t)n * (uint64_t)width;
    if ((bits + 7) / 8 > len)
        return -1;
    for (size_t i = 0; i < n; i++) {
        uint32_t v = 0;
        for (int k = 0; k < width; k++) {
            uint64_t b = (uint64_t)i * (uint64_t)width + (uint64_t)k;
            v = v << 1 | ((p[b >> 3] >> (7 - (b & 7))) & 1);
        }
        out[i] = v;
    }
    *used = (size_t)((bits + 7) / 8);
    return 0;
}

static int level_width(int max)
{
    int w = 0;
    while (max >> w)
        w++;
    return w;
}

/* Levels of a v1 page (p[*pos..len)), encoded `enc`, consumed: RLE with its 4-byte length. */
static int levels_v1(struct dec *d, const uint8_t *p, size_t len, size_t *pos, int enc, int max,
                     uint32_t *out, size_t n)
{
    int w = level_width(max);
    if (enc == SL_PQ_BIT_PACKED) {
        size_t used;
        if (bitpacked_msb(p + *pos, len - *pos, w, out, n, &used))
            return bad(d, "its levels run past the page's end%s", "");
        *pos += used;
        return 0;
    }
    if (enc != SL_PQ_RLE)
        return bad(d, "its levels have an unknown encoding%s", "");
    if (len - *pos < 4)
        return bad(d, "its levels run past the page's end%s", "");
    const uint8_t *q = p + *pos;
    uint32_t ll =
        (uint32_t)q[0] | (uint32_t)q[1] << 8 | (uint32_t)q[2] << 16 | (uint32_t)q[3] << 24;
    if (ll > len - *pos - 4 || hybrid(q + 4, ll, w, out, n))
        return bad(d, "its levels run past the page's end%s", "");
    *pos += 4 + (size_t)ll;
    return 0;
}

/* ---- values -------------------------------------------------------------------------- */

/* Room for k more values and n more entries in c. */
static void grow_values(struct pq_column *c, size_t k, size_t esize)
{
    if (c->nv + k > c->vcap) {
        size_t cap = c->vcap ? c->vcap : 256;
        while (cap < c->nv + k)
            cap *= 2;
        c->v.i = sl_xrealloc(c->v.i, cap * esize);
        c->vcap = cap;
    }
}

static size_t value_size(int type)
{
    return type == SL_PQ_FLOAT || type == SL_PQ_DOUBLE ? sizeof(double)
           : type == SL_PQ_BYTE_ARRAY || type == SL_PQ_FIXED_LEN_BYTE_ARRAY || type == SL_PQ_INT96
               ? sizeof(struct pq_bytes)
               : sizeof(int64_t);
}

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t le64(const uint8_t *p)
{
    return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
}

/* PLAIN: k values from p[0..len) appended to the arrays (i, d, b: one is used). */
static int plain(struct dec *d, const uint8_t *p, size_t len, size_t k, int64_t *vi, double *vd,
                 struct pq_bytes *vb)
{
    size_t pos = 0;
    int type = d->type;
    for (size_t j = 0; j < k; j++) {
        switch (type) {
        case SL_PQ_BOOLEAN:
            if ((j >> 3) >= len)
                return bad(d, "its values run past the page's end%s", "");
            vi[j] = (p[j >> 3] >> (j & 7)) & 1;
            continue;
        case SL_PQ_INT32:
            if (len - pos < 4)
                return bad(d, "its values run past the page's end%s", "");
            vi[j] = (int32_t)le32(p + pos);
            pos += 4;
            continue;
        case SL_PQ_INT64:
            if (len - pos < 8)
                return bad(d, "its values run past the page's end%s", "");
            vi[j] = (int64_t)le64(p + pos);
            pos += 8;
            continue;
        case SL_PQ_FLOAT: {
            if (len - pos < 4)
                return bad(d, "its values run past the page's end%s", "");
            uint32_t u = le32(p + pos);
            float f;
            memcpy(&f, &u, 4);
            vd[j] = f;
            pos += 4;
            continue;
        }
        case SL_PQ_DOUBLE: {
            if (len - pos < 8)
                return bad(d, "its values run past the page's end%s", "");
            uint64_t u = le64(p + pos);
            memcpy(&vd[j], &u, 8);
            pos += 8;
            continue;
        }
        case SL_PQ_BYTE_ARRAY: {
            if (len - pos < 4)
                return bad(d, "its values run past the page's end%s", "");
            uint32_t l = le32(p + pos);
            pos += 4;
            if (l > len - pos)
                return bad(d, "a value's length runs past the page's end%s", "");
            vb[j].p = p + pos;
            vb[j].len = l;
            pos += l;
            continue;
        }
        default: { /* INT96 (12 bytes), FIXED_LEN_BYTE_ARRAY */
            size_t w = type == SL_PQ_INT96 ? 12 : (size_t)d->node->type_length;
            if (len - pos < w)
                return bad(d, "its values run past the page's end%s", "");
            vb[j].p = p + pos;
            vb[j].len = (uint32_t)w;
            pos += w;
        }
        }
    }
    return 0;
}

/* DELTA_BINARY_PACKED: up to k values (the header's count must be at least k) into out;
 * *pos advanced past the last miniblock used. */
static int delta_binary(struct dec *d, const uint8_t *p, size_t len, size_t *pos, int64_t *out,
                        size_t k)
{
    struct pq_tin t = { p + *pos, p + *pos, p + len, 0 };
    uint64_t block = pq_varint(&t), nmini = pq_varint(&t), total = pq_varint(&t);
    int64_t v = pq_zigzag(&t);
    if (t.err || block == 0 || block % 128 || nmini == 0 || block % nmini || (block / nmini) % 32 ||
        total < k || block > (1u << 20))
        return bad(d, "its DELTA_BINARY_PACKED header is damaged%s", "");
    uint64_t per = block / nmini;
    size_t got = 0;
    if (k)
        out[got++] = v;
    while (got < k) {
        int64_t min_delta = pq_zigzag(&t);
        if (t.err || (uint64_t)(t.end - t.p) < nmini)
            return bad(d, "its values run past the page's end%s", "");
        const uint8_t *widths = t.p;
        t.p += nmini;
        for (uint64_t m = 0; m < nmini && got < k; m++) {
            int w = widths[m];
            if (w > 64)
                return bad(d, "a miniblock's bit width is over 64%s", "");
            uint64_t bytes = per * (uint64_t)w / 8;
            if (bytes > (uint64_t)(t.end - t.p))
                return bad(d, "its values run past the page's end%s", "");
            for (uint64_t j = 0; j < per && got < k; j++) {
                uint64_t delta = bits_at(t.p, j * (uint64_t)w, w);
                v = (int64_t)((uint64_t)v + (uint64_t)min_delta + delta); /* wraps, as written */
                out[got++] = v;
            }
            t.p += bytes;
        }
    }
    *pos = (size_t)(t.p - p);
    return 0;
}

static uint8_t *arena(struct pq_column *c, size_t n)
{
    uint8_t *b = sl_xmalloc(n ? n : 1);
    keep_block(c, b);
    return b;
}

/* DELTA_LENGTH_BYTE_ARRAY, DELTA_BYTE_ARRAY. */
static int delta_bytes(struct dec *d, const uint8_t *p, size_t len, size_t k, struct pq_bytes *vb,
                       int prefixed)
{
    size_t pos = 0;
    int64_t *pre = NULL, *suf = sl_xcalloc(k ? k : 1, sizeof(int64_t));
    int rc = 0;
    if (prefixed) {
        pre = sl_xcalloc(k ? k : 1, sizeof(int64_t));
        rc = delta_binary(d, p, len, &pos, pre, k);
    }
    if (!rc)
        rc = delta_binary(d, p, len, &pos, suf, k);
    uint64_t total = 0;
    for (size_t j = 0; j < k && !rc; j++) {
        if (suf[j] < 0 || (uint64_t)suf[j] > len - pos ||
            (pre && (pre[j] < 0 || pre[j] > UINT32_MAX)))
            rc = bad(d, "a value's length runs past the page's end%s", "");
        else
            total += (uint64_t)suf[j] + (pre ? (uint64_t)pre[j] : 0);
    }
    if (!rc && !pre) {
        for (size_t j = 0; j < k && !rc; j++) {
            if ((uint64_t)suf[j] > len - pos) {
                rc = bad(d, "a value's length runs past the page's end%s", "");
                break;
            }
            vb[j].p = p + pos;
            vb[j].len = (uint32_t)suf[j];
            pos += (size_t)suf[j];
        }
    } else if (!rc) {
        if (total > (uint64_t)PQ_MAX_PAGE * 4)
            rc = bad(d, "its values rebuild to more than 4 GiB%s", "");
        uint8_t *out = rc ? NULL : arena(d->c, (size_t)total);
        size_t o = 0;
        struct pq_bytes prev = { out, 0 };
        for (size_t j = 0; j < k && !rc; j++) {
            if ((uint64_t)pre[j] > prev.len || (uint64_t)suf[j] > len - pos) {
                rc = bad(d, "a value's prefix or length runs past its data%s", "");
                break;
            }
            memcpy(out + o, prev.p, (size_t)pre[j]);
            memcpy(out + o + pre[j], p + pos, (size_t)suf[j]);
            pos += (size_t)suf[j];
            vb[j].p = out + o;
            vb[j].len = (uint32_t)(pre[j] + suf[j]);
            prev = vb[j];
            o += vb[j].len;
        }
    }
    free(pre);
    free(suf);
    return rc;
}

/* BYTE_STREAM_SPLIT of fixed-width values: byte b of value j at b * k + j. */
static int stream_split(struct dec *d, const uint8_t *p, size_t len, size_t k, int64_t *vi,
                        double *vd, struct pq_bytes *vb)
{
    size_t w = d->type == SL_PQ_INT32 || d->type == SL_PQ_FLOAT    ? 4
               : d->type == SL_PQ_INT64 || d->type == SL_PQ_DOUBLE ? 8
               : d->type == SL_PQ_FIXED_LEN_BYTE_ARRAY             ? (size_t)d->node->type_length
                                                                   : 0;
    if (!w)
        return bad(d, "BYTE_STREAM_SPLIT is given for a type it does not apply to%s", "");
    if (k && (len / w) < k)
        return bad(d, "its values run past the page's end%s", "");
    uint8_t *tmp = arena(d->c, k * w);
    for (size_t j = 0; j < k; j++)
        for (size_t b = 0; b < w; b++)
            tmp[j * w + b] = p[b * k + j];
    int t = d->type;
    if (t == SL_PQ_FIXED_LEN_BYTE_ARRAY) {
        for (size_t j = 0; j < k; j++) {
            vb[j].p = tmp + j * w;
            vb[j].len = (uint32_t)w;
        }
        return 0;
    }
    return plain(d, tmp, k * w, k, vi, vd, vb);
}

/* Values of a page (or the dictionary): k of them from p[0..len) in encoding enc. */
static int values(struct dec *d, const uint8_t *p, size_t len, size_t k, int enc, int64_t *vi,
                  double *vd, struct pq_bytes *vb)
{
    switch (enc) {
    case SL_PQ_PLAIN:
        return plain(d, p, len, k, vi, vd, vb);
    case SL_PQ_PLAIN_DICTIONARY:
    case SL_PQ_RLE_DICTIONARY: {
        if (!d->have_dict)
            return bad(d, "a dictionary-encoded page comes without a dictionary%s", "");
        if (len < 1 || p[0] > 32)
            return bad(d, "its dictionary indices are damaged%s", "");
        uint32_t *ix = sl_xcalloc(k ? k : 1, sizeof(uint32_t));
        int rc = hybrid(p + 1, len - 1, p[0], ix, k)
                     ? bad(d, "its dictionary indices run past the page's end%s", "")
                     : 0;
        for (size_t j = 0; j < k && !rc; j++) {
            if (ix[j] >= d->dn) {
                rc = bad(d, "a dictionary index is out of range%s", "");
                break;
            }
            if (vi)
                vi[j] = d->di[ix[j]];
            else if (vd)
                vd[j] = d->dd[ix[j]];
            else
                vb[j] = d->db[ix[j]];
        }
        free(ix);
        return rc;
    }
    case SL_PQ_RLE: {
        if (d->type != SL_PQ_BOOLEAN || len < 4 || le32(p) > len - 4)
            return bad(d, "its RLE values are damaged%s", "");
        uint32_t *b = sl_xcalloc(k ? k : 1, sizeof(uint32_t));
        int rc = hybrid(p + 4, le32(p), 1, b, k)
                     ? bad(d, "its values run past the page's end%s", "")
                     : 0;
        for (size_t j = 0; j < k && !rc; j++)
            vi[j] = b[j];
        free(b);
        return rc;
    }
    case SL_PQ_DELTA_BINARY_PACKED: {
        if (d->type != SL_PQ_INT32 && d->type != SL_PQ_INT64)
            return bad(d, "DELTA_BINARY_PACKED is given for a type it does not apply to%s", "");
        size_t pos = 0;
        int rc = delta_binary(d, p, len, &pos, vi, k);
        for (size_t j = 0; j < k && !rc && d->type == SL_PQ_INT32; j++)
            vi[j] = (int32_t)vi[j];
        return rc;
    }
    case SL_PQ_DELTA_LENGTH_BYTE_ARRAY:
    case SL_PQ_DELTA_BYTE_ARRAY:
        if (d->type != SL_PQ_BYTE_ARRAY && d->type != SL_PQ_FIXED_LEN_BYTE_ARRAY)
            return bad(d, "a DELTA byte-array encoding is given for a type it does not apply to%s",
                       "");
        return delta_bytes(d, p, len, k, vb, enc == SL_PQ_DELTA_BYTE_ARRAY);
    case SL_PQ_BYTE_STREAM_SPLIT:
        return stream_split(d, p, len, k, vi, vd, vb);
    default:
        return bad(d, "its values have an unknown encoding%s", "");
    }
}

static int dictionary(struct dec *d, const struct page *pg, const uint8_t *p, size_t len)
{
    if (d->have_dict)
        return bad(d, "the chunk has a second dictionary%s", "");
    size_t k = (size_t)pg->num_values;
    size_t es = value_size(d->type);
    if (k > len * 8 + 8)
        return bad(d, "the dictionary's count is larger than its page%s", "");
    void *v = sl_xcalloc(k ? k : 1, es);
    keep_block(d->c, v);
    d->di = d->type == SL_PQ_BOOLEAN || d->type == SL_PQ_INT32 || d->type == SL_PQ_INT64 ? v : NULL;
    d->dd = d->type == SL_PQ_FLOAT || d->type == SL_PQ_DOUBLE ? v : NULL;
    d->db = !d->di && !d->dd ? v : NULL;
    d->dn = k;
    d->have_dict = 1;
    return plain(d, p, len, k, d->di, d->dd, d->db);
}

/* ---- data pages ---------------------------------------------------------------------- */

static void grow_entries(struct pq_column *c, size_t k, int def, int rep)
{
    if (c->n + k <= c->cap)
        return;
    size_t cap = c->cap ? c->cap : 256;
    while (cap < c->n + k)
        cap *= 2;
    if (def)
        c->def = sl_xrealloc(c->def, cap * sizeof(uint16_t));
    if (rep)
        c->rep = sl_xrealloc(c->rep, cap * sizeof(uint16_t));
    c->cap = cap;
}

/* A data page's levels (lv: decoded, lvlen bytes from their start) and values. */
static int data_page(struct dec *d, const struct page *pg, int v2, const uint8_t *lv, size_t lvlen,
                     const uint8_t *vals, size_t vlen)
{
    struct pq_column *c = d->c;
    const struct pq_node *nd = d->node;
    size_t k = (size_t)pg->num_values;
    /* a page holds at most the values its chunk has left (its metadata's count; a run of
     * the RLE hybrid makes many values of a few bytes, so the page's size is no bound) */
    if (k > d->left || k > PQ_MAX_PAGE_VALUES)
        return bad(d, "the page holds more values than its column chunk%s", "");
    d->left -= k;
    uint32_t *tmp = sl_xcalloc(k ? k : 1, sizeof(uint32_t));
    grow_entries(c, k, nd->max_def > 0, nd->max_rep > 0);
    int rc = 0;
    size_t pos = 0;
    if (nd->max_rep > 0) {
        if (v2)
            rc = hybrid(lv, (size_t)pg->rep_len, level_width(nd->max_rep), tmp, k)
                     ? bad(d, "its repetition levels run past their end%s", "")
                     : 0;
        else
            rc = levels_v1(d, lv, lvlen, &pos, pg->rep_enc, nd->max_rep, tmp, k);
        for (size_t j = 0; j < k && !rc; j++) {
            if (tmp[j] > (uint32_t)nd->max_rep)
                rc = bad(d, "a repetition level is over the column's maximum%s", "");
            c->rep[c->n + j] = (uint16_t)tmp[j];
        }
    }
    size_t nvals = k;
    if (!rc && nd->max_def > 0) {
        if (v2)
            rc = hybrid(lv + pg->rep_len, (size_t)pg->def_len, level_width(nd->max_def), tmp, k)
                     ? bad(d, "its definition levels run past their end%s", "")
                     : 0;
        else
            rc = levels_v1(d, lv, lvlen, &pos, pg->def_enc, nd->max_def, tmp, k);
        nvals = 0;
        for (size_t j = 0; j < k && !rc; j++) {
            if (tmp[j] > (uint32_t)nd->max_def)
                rc = bad(d, "a definition level is over the column's maximum%s", "");
            c->def[c->n + j] = (uint16_t)tmp[j];
            nvals += tmp[j] == (uint32_t)nd->max_def;
        }
    }
    free(tmp);
    if (rc)
        return rc;
    if (!v2) { /* v1: the values follow the levels in the same buffer */
        vals = lv + pos;
        vlen = lvlen - pos;
    }
    size_t es = value_size(d->type);
    grow_values(c, nvals, es);
    int64_t *vi = es == sizeof(int64_t) && d->type != SL_PQ_FLOAT && d->type != SL_PQ_DOUBLE &&
                          d->type != SL_PQ_BYTE_ARRAY && d->type != SL_PQ_FIXED_LEN_BYTE_ARRAY &&
                          d->type != SL_PQ_INT96
                      ? c->v.i + c->nv
                      : NULL;
    double *vd = d->type == SL_PQ_FLOAT || d->type == SL_PQ_DOUBLE ? c->v.d + c->nv : NULL;
    struct pq_bytes *vb = !vi && !vd ? c->v.b + c->nv : NULL;
    rc = values(d, vals, vlen, nvals, pg->encoding, vi, vd, vb);
    if (rc)
        return rc;
    c->nv += nvals;
    c->n += k;
    return 0;
}

/* One page at data[*pos..n): its header, then its body; *pos past it. */
static int one_page(struct dec *d, const uint8_t *data, size_t n, size_t *pos, uint64_t off)
{
    d->off = off + *pos;
    struct pq_tin t = { data + *pos, data + *pos, data + n, 0 };
    struct page pg;
    if (parse_page_header(&t, &pg))
        return bad(d, "its page header does not parse%s", "");
    size_t hdr = (size_t)(t.p - t.start);
    if ((size_t)pg.csize > n - *pos - hdr)
        return bad(d, "the page runs past the column chunk's end%s", "");
    const uint8_t *body = t.p;
    size_t clen = (size_t)pg.csize, ulen = (size_t)pg.usize;
    d->off += hdr;
    *pos += hdr + clen;
    if (pg.type == SL_PQ_INDEX_PAGE)
        return 0;
    if (pg.type != SL_PQ_DATA_PAGE && pg.type != SL_PQ_DATA_PAGE_V2 &&
        pg.type != SL_PQ_DICTIONARY_PAGE)
        return bad(d, "the page's type is unknown%s", "");
    int v2 = pg.type == SL_PQ_DATA_PAGE_V2;
    size_t lvl = v2 ? (size_t)pg.def_len + (size_t)pg.rep_len : 0;
    if (lvl > clen || lvl > ulen)
        return bad(d, "its levels are longer than the page%s", "");
    const uint8_t *plainb = body;
    size_t plen = clen;
    if (d->codec != SL_PQ_UNCOMPRESSED && (!v2 || pg.compressed)) {
        uint8_t *u = arena(d->c, ulen - lvl);
        int rc = decompress(d, body + lvl, clen - lvl, u, ulen - lvl);
        if (rc)
            return rc;
        plainb = u;
        plen = ulen - lvl;
    } else {
        plainb = body + lvl;
        plen = clen - lvl;
    }
    if (pg.type == SL_PQ_DICTIONARY_PAGE)
        return dictionary(d, &pg, plainb, plen);
    if (v2)
        return data_page(d, &pg, 1, body, lvl, plainb, plen);
    return data_page(d, &pg, 0, plainb, plen, NULL, 0);
}

int pq_column_decode(struct pq_column *c, const struct pq_node *node, const struct pq_chunk *ch,
                     const uint8_t *data, size_t n, uint64_t off, const struct pq_where *w)
{
    pq_column_release(c);
    struct dec d = { .c = c,
                     .node = node,
                     .w = w,
                     .off = off,
                     .type = node->type,
                     .codec = ch->codec,
                     .left = (uint64_t)ch->num_values };
    size_t pos = 0;
    int rc = 0;
    while (!rc && pos < n && c->n < (uint64_t)ch->num_values)
        rc = one_page(&d, data, n, &pos, off);
    if (!rc && c->n != (uint64_t)ch->num_values) {
        d.off = off + pos;
        rc = bad(&d, "the column chunk's pages hold another number of values than its metadata%s",
                 "");
    }
    return rc;
}

void pq_column_release(struct pq_column *c)
{
    free(c->def);
    free(c->rep);
    free(c->v.i);
    for (size_t i = 0; i < c->nblocks; i++)
        free(c->blocks[i]);
    free(c->blocks);
    memset(c, 0, sizeof(*c));
}
