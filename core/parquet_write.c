/* The Parquet writer for documents (core/parquet_write.h): the schema, the rows of a row
 * group into columns, and the footer. The column chunks' pages: parquet_pages.c. */
#include "core/parquet_write.h"

#include "core/alloc.h"
#include "core/buf.h"
#include "core/err.h"
#include "core/json.h"
#include "core/log.h"
#include "core/manifest.h"
#include "core/parquet_format.h"
#include "core/parquet_write_internal.h"
#include "core/stream.h"
#include "core/thrift_enc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* FileMetaData.version: 2, the format of the LogicalType annotations written here. */
#define PQ_FILE_VERSION 2

/* ---- schema ---------------------------------------------------------------------------- */

/* The JSON type of a raw value (PQ_K_NULL for null); *i and *d its number. */
static enum pq_kind classify(const char *v, size_t n, int64_t *i, double *d)
{
    if (v[0] == '"')
        return PQ_K_STR;
    if (v[0] == 't' || v[0] == 'f')
        return PQ_K_BOOL;
    if (v[0] == 'n')
        return PQ_K_NULL;
    if (v[0] == '{' || v[0] == '[')
        return PQ_K_JSON;
    char small[64]; /* a number's text, NUL-terminated (longer ones: on the heap) */
    char *s = n < sizeof(small) ? small : sl_xmalloc(n + 1);
    memcpy(s, v, n);
    s[n] = 0;
    enum pq_kind k = PQ_K_DBL;
    if (!memchr(v, '.', n) && !memchr(v, 'e', n) && !memchr(v, 'E', n)) {
        errno = 0;
        long long ll = strtoll(s, NULL, 10);
        k = errno == ERANGE ? PQ_K_JSON : PQ_K_INT; /* beyond 64 bits: exact as JSON text */
        *i = (int64_t)ll;
        *d = (double)ll;
    } else {
        *d = strtod(s, NULL);
    }
    if (s != small)
        free(s);
    return k;
}

/* The type of a column of values of types a and b (first row group). */
static enum pq_kind merge(enum pq_kind a, enum pq_kind b)
{
    if (a == PQ_K_NULL)
        return b;
    if (b == PQ_K_NULL || a == b)
        return a;
    if ((a == PQ_K_INT && b == PQ_K_DBL) || (a == PQ_K_DBL && b == PQ_K_INT))
        return PQ_K_DBL;
    return PQ_K_JSON;
}

/* The column named (name, n), or -1. */
static long find_col(const struct pq_writer *p, const char *name, size_t n)
{
    for (size_t c = 0; c < p->ncols; c++)
        if (p->cols[c].name_len == n && !memcmp(p->cols[c].name, name, n))
            return (long)c;
    return -1;
}

static size_t add_col(struct pq_writer *p, const char *name, size_t n)
{
    if (p->ncols == p->cap) {
        p->cap = p->cap ? 2 * p->cap : 16;
        p->cols = sl_xrealloc(p->cols, p->cap * sizeof(*p->cols));
    }
    struct pq_col *c = &p->cols[p->ncols];
    memset(c, 0, sizeof(*c));
    c->name = sl_xstrndup(name, n);
    c->name_len = n;
    c->kind = PQ_K_NULL;
    sl_buf_init(&c->def, 0);
    sl_buf_init(&c->vals, 0);
    return p->ncols++;
}

/* One member of the row being read: its column's raw value (keys decoded when escaped). */
struct row_scan {
    struct pq_writer *p;
    const char *base;
    int infer; /* the first row group: columns are added and typed */
};

static int row_member(void *ctx, const struct sl_json_member *m)
{
    struct row_scan *rs = ctx;
    struct pq_writer *p = rs->p;
    const char *key = m->key;
    size_t klen = m->key_len;
    if (m->key_escaped) {
        struct sl_json_error e;
        sl_buf_reset(&p->key);
        if (!sl_json_decode_string_valid(rs->base, m->key - 1, m->key + m->key_len + 1, &p->key,
                                         &e))
            return sl_err_set(SL_ERR_FORMAT, "bad key: %s", e.reason);
        key = p->key.data;
        klen = p->key.len;
    }
    long c = find_col(p, key, klen);
    if (c < 0 && !rs->infer) {
        p->dropped++;
        if (!p->dropped_first)
            p->dropped_first = sl_xstrndup(key, klen);
        return 0;
    }
    if (c < 0) {
        c = (long)add_col(p, key, klen);
        p->slot = sl_xrealloc(p->slot, p->cap * sizeof(*p->slot));
    }
    p->slot[c].v = m->val;
    p->slot[c].n = m->val_len;
    if (rs->infer) {
        int64_t i;
        double d;
        p->cols[c].kind = merge(p->cols[c].kind, classify(m->val, m->val_len, &i, &d));
    }
    return 0;
}

static int scan_row(struct pq_writer *p, size_t r, int infer)
{
    const char *line = p->lines.data + p->line_off[r];
    size_t n = p->line_off[r + 1] - p->line_off[r];
    for (size_t c = 0; c < p->ncols; c++)
        p->slot[c].v = NULL;
    struct row_scan rs = { p, line, infer };
    struct sl_json_error e = { 0 };
    int rc = sl_json_scan_object(line, n, row_member, &rs, &e);
    if (rc == SL_ERR_FORMAT && e.reason)
        rc = sl_err_set(SL_ERR_FORMAT, "cannot write document %llu to parquet '%s': %s at byte %zu",
                        (unsigned long long)(p->rows_done + r + 1), p->name, e.reason, e.offset);
    return rc;
}

/* The schema of the first row group: text and id first, the rest in order of appearance. */
static int infer_schema(struct pq_writer *p)
{
    p->slot = sl_xcalloc(16, sizeof(*p->slot));
    add_col(p, p->text_key, strlen(p->text_key));
    if (strcmp(p->id_key, p->text_key))
        add_col(p, p->id_key, strlen(p->id_key));
    for (size_t r = 0; r < p->nrows; r++) {
        int rc = scan_row(p, r, 1);
        if (rc)
            return rc;
    }
    p->have_schema = 1;
    return 0;
}

/* ---- rows into columns ---------------------------------------------------------------- */

static void put_bytes(struct pq_col *c, const void *s, size_t n)
{
    uint32_t len = (uint32_t)n;
    unsigned char le[4] = { (unsigned char)len, (unsigned char)(len >> 8),
                            (unsigned char)(len >> 16), (unsigned char)(len >> 24) };
    sl_buf_append(&c->vals, le, 4);
    sl_buf_append(&c->vals, s, n);
}

static void put_u64(struct pq_col *c, uint64_t v)
{
    unsigned char le[8];
    for (int b = 0; b < 8; b++)
        le[b] = (unsigned char)(v >> (8 * b));
    sl_buf_append(&c->vals, le, 8);
}

/* One value (or null) of column c; a value too long for a page fails. */
static int put_value(struct pq_writer *p, struct pq_col *c, const char *v, size_t n)
{
    int64_t i = 0;
    double d = 0;
    enum pq_kind k = v ? classify(v, n, &i, &d) : PQ_K_NULL;
    int is_str = c->kind == PQ_K_STR || pq_is_json(c->kind);
    if (k != PQ_K_NULL && k != c->kind && !pq_is_json(c->kind) &&
        !(c->kind == PQ_K_DBL && k == PQ_K_INT)) {
        p->mismatched++; /* a STRING column: its JSON text; another: null */
        if (!is_str)
            k = PQ_K_NULL;
    }
    if (n > PQ_MAX_VALUE)
        return sl_err_set(SL_ERR_TOOBIG,
                          "cannot write a value of %zu bytes to parquet '%s' (column '%s')", n,
                          p->name, c->name);
    char def = k != PQ_K_NULL;
    sl_buf_append(&c->def, &def, 1);
    if (!def)
        return 0;
    c->nvals++;
    if (k == PQ_K_STR && c->kind == PQ_K_STR) {
        struct sl_json_error e;
        sl_buf_reset(&p->key);
        sl_json_decode_string_valid(v, v, v + n, &p->key, &e);
        put_bytes(c, p->key.data, p->key.len);
    } else if (is_str) {
        put_bytes(c, v, n); /* JSON text */
    } else if (c->kind == PQ_K_INT) {
        put_u64(c, (uint64_t)i);
    } else if (c->kind == PQ_K_DBL) {
        uint64_t bits;
        memcpy(&bits, &d, sizeof(bits));
        put_u64(c, bits);
    } else {
        char b = v[0] == 't';
        sl_buf_append(&c->vals, &b, 1);
    }
    return 0;
}

/* Write the buffered rows as a row group. */
static int flush_group(struct pq_writer *p, struct sl_writer *w)
{
    int rc = p->have_schema ? 0 : infer_schema(p);
    for (size_t c = 0; c < p->ncols; c++) {
        sl_buf_reset(&p->cols[c].def);
        sl_buf_reset(&p->cols[c].vals);
        p->cols[c].nvals = 0;
    }
    for (size_t r = 0; !rc && r < p->nrows; r++) {
        rc = scan_row(p, r, 0);
        for (size_t c = 0; !rc && c < p->ncols; c++)
            rc = put_value(p, &p->cols[c], p->slot[c].v, p->slot[c].n);
    }
    if (!rc && !p->pos) {
        rc = sl_writer_emit(w, SL_PQ_MAGIC, SL_PQ_MAGIC_LEN);
        p->pos = SL_PQ_MAGIC_LEN;
    }
    if (rc)
        return rc;
    p->groups = sl_xrealloc(p->groups, (p->ngroups + 1) * sizeof(*p->groups));
    struct pq_group *g = &p->groups[p->ngroups++];
    g->rows = p->nrows;
    g->offset = p->pos;
    g->chunks = sl_xcalloc(p->ncols, sizeof(*g->chunks));
    for (size_t c = 0; !rc && c < p->ncols; c++)
        rc = pq_write_chunk(p, w, &p->cols[c], p->nrows, &g->chunks[c]);
    p->rows_done += p->nrows;
    p->nrows = 0;
    sl_buf_reset(&p->lines);
    return rc;
}

/* ---- the footer ------------------------------------------------------------------------ */

static void schema_element(struct sl_tenc *t, const struct pq_col *c)
{
    sl_tenc_begin(t);
    sl_tenc_i32(t, SL_PQ_SE_TYPE, pq_physical(c->kind));
    sl_tenc_i32(t, SL_PQ_SE_REPETITION, SL_PQ_OPTIONAL);
    sl_tenc_binary(t, SL_PQ_SE_NAME, c->name, c->name_len);
    if (pq_physical(c->kind) == SL_PQ_BYTE_ARRAY) {
        sl_tenc_i32(t, SL_PQ_SE_CONVERTED, SL_PQ_CT_UTF8);
        sl_tenc_field(t, SL_PQ_SE_LOGICAL, SL_TC_STRUCT);
        sl_tenc_begin(t); /* union LogicalType: its STRING member, an empty struct */
        sl_tenc_field(t, SL_PQ_LT_STRING, SL_TC_STRUCT);
        sl_tenc_begin(t);
        sl_tenc_end(t);
        sl_tenc_end(t);
    }
    sl_tenc_end(t);
}

static void column_chunk(struct sl_tenc *t, const struct pq_col *c, const struct pq_chunk *k,
                         int codec)
{
    sl_tenc_begin(t);
    sl_tenc_i64(t, SL_PQ_CC_FILE_OFFSET, (int64_t)(k->dict ? k->dict_off : k->data_off));
    sl_tenc_field(t, SL_PQ_CC_META_DATA, SL_TC_STRUCT);
    sl_tenc_begin(t);
    sl_tenc_i32(t, SL_PQ_CMD_TYPE, pq_physical(c->kind));
    sl_tenc_list(t, SL_PQ_CMD_ENCODINGS, SL_TC_I32, k->dict ? 3 : 2);
    sl_tenc_elem_i32(t, SL_PQ_PLAIN);
    sl_tenc_elem_i32(t, SL_PQ_RLE);
    if (k->dict)
        sl_tenc_elem_i32(t, SL_PQ_RLE_DICTIONARY);
    sl_tenc_list(t, SL_PQ_CMD_PATH, SL_TC_BINARY, 1);
    sl_tenc_uvarint(t, c->name_len);
    sl_buf_append(t->out, c->name, c->name_len);
    sl_tenc_i32(t, SL_PQ_CMD_CODEC, codec);
    sl_tenc_i64(t, SL_PQ_CMD_NUM_VALUES, (int64_t)k->values);
    sl_tenc_i64(t, SL_PQ_CMD_UNCOMPRESSED_SIZE, (int64_t)k->uncompressed);
    sl_tenc_i64(t, SL_PQ_CMD_COMPRESSED_SIZE, (int64_t)k->compressed);
    sl_tenc_i64(t, SL_PQ_CMD_DATA_PAGE_OFFSET, (int64_t)k->data_off);
    if (k->dict)
        sl_tenc_i64(t, SL_PQ_CMD_DICT_PAGE_OFFSET, (int64_t)k->dict_off);
    sl_tenc_end(t);
    sl_tenc_end(t);
}

/* The JSON array of the JSON columns' names ("" when there are none). */
static void json_columns(const struct pq_writer *p, struct sl_buf *b)
{
    for (size_t c = 0; c < p->ncols; c++) {
        if (!pq_is_json(p->cols[c].kind))
            continue;
        sl_buf_putc(b, b->len ? ',' : '[');
        sl_buf_json_str(b, p->cols[c].name, p->cols[c].name_len);
    }
    if (b->len)
        sl_buf_putc(b, ']');
}

static int write_footer(struct pq_writer *p, struct sl_writer *w)
{
    struct sl_buf b, js;
    sl_buf_init(&b, 0);
    sl_buf_init(&js, 0);
    struct sl_tenc t;
    sl_tenc_init(&t, &b);
    sl_tenc_begin(&t);
    sl_tenc_i32(&t, SL_PQ_FMD_VERSION, PQ_FILE_VERSION);
    sl_tenc_list(&t, SL_PQ_FMD_SCHEMA, SL_TC_STRUCT, p->ncols + 1);
    sl_tenc_begin(&t); /* the root */
    sl_tenc_string(&t, SL_PQ_SE_NAME, "schema");
    sl_tenc_i32(&t, SL_PQ_SE_NUM_CHILDREN, (int32_t)p->ncols);
    sl_tenc_end(&t);
    for (size_t c = 0; c < p->ncols; c++)
        schema_element(&t, &p->cols[c]);
    sl_tenc_i64(&t, SL_PQ_FMD_NUM_ROWS, (int64_t)p->rows_done);
    sl_tenc_list(&t, SL_PQ_FMD_ROW_GROUPS, SL_TC_STRUCT, p->ngroups);
    for (size_t g = 0; g < p->ngroups; g++) {
        const struct pq_group *rg = &p->groups[g];
        uint64_t unc = 0, comp = 0;
        for (size_t c = 0; c < p->ncols; c++) {
            unc += rg->chunks[c].uncompressed;
            comp += rg->chunks[c].compressed;
        }
        sl_tenc_begin(&t);
        sl_tenc_list(&t, SL_PQ_RG_COLUMNS, SL_TC_STRUCT, p->ncols);
        for (size_t c = 0; c < p->ncols; c++)
            column_chunk(&t, &p->cols[c], &rg->chunks[c], SL_PQ_ZSTD);
        sl_tenc_i64(&t, SL_PQ_RG_TOTAL_BYTE_SIZE, (int64_t)unc);
        sl_tenc_i64(&t, SL_PQ_RG_NUM_ROWS, (int64_t)rg->rows);
        sl_tenc_i64(&t, SL_PQ_RG_FILE_OFFSET, (int64_t)rg->offset);
        sl_tenc_i64(&t, SL_PQ_RG_TOTAL_COMPRESSED, (int64_t)comp);
        sl_tenc_field(&t, SL_PQ_RG_ORDINAL, SL_TC_I16);
        sl_tenc_uvarint(&t, (uint64_t)g << 1); /* zigzag of a non-negative i16 */
        sl_tenc_end(&t);
    }
    json_columns(p, &js);
    if (js.len) {
        sl_tenc_list(&t, SL_PQ_FMD_KV_META, SL_TC_STRUCT, 1);
        sl_tenc_begin(&t);
        sl_tenc_string(&t, SL_PQ_KV_KEY, "sluice.json_columns");
        sl_tenc_binary(&t, SL_PQ_KV_VALUE, js.data, js.len);
        sl_tenc_end(&t);
    }
    char *by = sl_xasprintf("sluice %s", sl_version());
    sl_tenc_string(&t, SL_PQ_FMD_CREATED_BY, by);
    free(by);
    int rc = sl_tenc_end(&t);
    uint32_t n = (uint32_t)b.len;
    unsigned char tail[SL_PQ_FOOTER_LEN_BYTES + SL_PQ_MAGIC_LEN] = { (unsigned char)n,
                                                                     (unsigned char)(n >> 8),
                                                                     (unsigned char)(n >> 16),
                                                                     (unsigned char)(n >> 24) };
    memcpy(tail + SL_PQ_FOOTER_LEN_BYTES, SL_PQ_MAGIC, SL_PQ_MAGIC_LEN);
    if (!rc)
        rc = sl_writer_emit(w, b.data, b.len);
    if (!rc)
        rc = sl_writer_emit(w, tail, sizeof(tail));
    sl_buf_release(&b);
    sl_buf_release(&js);
    return rc;
}

/* ---- the writer's hooks ----------------------------------------------------------------- */

static int pq_line(void *state, struct sl_writer *w, const char *s, size_t n)
{
    struct pq_writer *p = state;
    if (!n)
        return 0; /* a blank line is no document */
    if (p->nrows + 2 > p->off_cap) {
        p->off_cap = p->off_cap ? 2 * p->off_cap : 1024;
        p->line_off = sl_xrealloc(p->line_off, p->off_cap * sizeof(*p->line_off));
    }
    p->line_off[p->nrows] = p->lines.len;
    if (sl_buf_append(&p->lines, s, n))
        return sl_err_set(SL_ERR_NOMEM, "cannot buffer a row group of parquet '%s'", p->name);
    p->line_off[++p->nrows] = p->lines.len;
    if (p->nrows >= p->group_rows || p->lines.len >= p->group_bytes)
        return flush_group(p, w);
    return 0;
}

static int pq_finish(void *state, struct sl_writer *w)
{
    struct pq_writer *p = state;
    int rc = p->nrows ? flush_group(p, w) : 0;
    if (!rc && !p->have_schema) { /* no rows: the text and id columns, as strings */
        add_col(p, p->text_key, strlen(p->text_key));
        if (strcmp(p->id_key, p->text_key))
            add_col(p, p->id_key, strlen(p->id_key));
        p->have_schema = 1;
    }
    if (!rc && !p->pos) {
        rc = sl_writer_emit(w, SL_PQ_MAGIC, SL_PQ_MAGIC_LEN);
        p->pos = SL_PQ_MAGIC_LEN;
    }
    if (!rc)
        rc = write_footer(p, w);
    if (!rc && (p->dropped || p->mismatched))
        sl_warn(
            "parquet '%s': %llu member(s) not in the schema dropped%s%s%s, %llu value(s) not of "
            "their column's type written as null (or, in a string column, as their JSON "
            "text)\nhint: the schema is that of the first row "
            "group (docs/formats/parquet-out.md)",
            p->name, (unsigned long long)p->dropped, p->dropped_first ? " (first: '" : "",
            p->dropped_first ? p->dropped_first : "", p->dropped_first ? "')" : "",
            (unsigned long long)p->mismatched);
    return rc;
}

static void pq_release(void *state)
{
    struct pq_writer *p = state;
    for (size_t c = 0; c < p->ncols; c++) {
        free(p->cols[c].name);
        sl_buf_release(&p->cols[c].def);
        sl_buf_release(&p->cols[c].vals);
    }
    for (size_t g = 0; g < p->ngroups; g++)
        free(p->groups[g].chunks);
    free(p->groups);
    free(p->cols);
    free(p->slot);
    free(p->line_off);
    free(p->dropped_first);
    free(p->name);
    sl_buf_release(&p->lines);
    sl_buf_release(&p->key);
    pq_pages_release(p);
    free(p);
}

int sl_pq_writer_open(struct sl_writer **out, const char *path, struct sl_buf *dst,
                      const struct sl_pq_write_opts *opts)
{
    struct pq_writer *p = sl_xcalloc(1, sizeof(*p));
    struct sl_pq_write_opts o = opts ? *opts : (struct sl_pq_write_opts){ 0 };
    p->name = sl_xstrdup(path ? path : "(memory)");
    p->level = o.level ? o.level : 3;
    p->group_rows = o.row_group_rows ? o.row_group_rows : SL_PQ_ROW_GROUP_ROWS;
    p->group_bytes = o.row_group_bytes ? o.row_group_bytes : SL_PQ_ROW_GROUP_BYTES;
    p->text_key = o.text_key ? o.text_key : "text";
    p->id_key = o.id_key ? o.id_key : "id";
    sl_buf_init(&p->lines, 0);
    sl_buf_init(&p->key, 0);
    struct sl_writer_opts wo = { .codec = SL_CODEC_NONE, .no_sync = o.no_sync };
    struct sl_writer_format f = { pq_line, pq_finish, pq_release, p };
    return sl_writer_open_format(out, path, dst, &wo, &f);
}

const struct sl_pq_write_opts *sl_pq_out_opts(struct sl_pq_write_opts *o, const char *format,
                                              uint64_t rows, long level, const char *text_key)
{
    if (!format || strcmp(format, "parquet"))
        return NULL;
    *o = (struct sl_pq_write_opts){ .level = (int)level,
                                    .row_group_rows = rows,
                                    .text_key = text_key };
    return o;
}
