/* The Thrift compact protocol (as the Parquet footer and page headers use it) and the
 * footer: the schema, the row groups and their column chunks. */
#include "core/parquet_internal.h"

#include "core/alloc.h"
#include "core/buf.h"
#include "core/err.h"

#include <stdlib.h>
#include <string.h>

/* nesting of Thrift structs and lists that skip() follows; Parquet's own go 5 deep */
#define PQ_MAX_DEPTH 32
/* schema nesting the row assembler follows (recursion per level) */
#define PQ_MAX_SCHEMA_DEPTH 64

static void fail(struct pq_tin *t)
{
    t->err = 1;
    t->p = t->end;
}

uint64_t pq_varint(struct pq_tin *t)
{
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (t->p >= t->end) {
            fail(t);
            return 0;
        }
        uint8_t b = *t->p++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return v;
    }
    fail(t); /* more than 10 bytes */
    return 0;
}

int64_t pq_zigzag(struct pq_tin *t)
{
    uint64_t u = pq_varint(t);
    return (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
}

int pq_field(struct pq_tin *t, int16_t *last, int16_t *id, int *type)
{
    if (t->p >= t->end) {
        fail(t);
        return 0;
    }
    uint8_t b = *t->p++;
    if (b == SL_TC_STOP)
        return 0;
    *type = b & 0x0f;
    int delta = b >> 4;
    *id = delta ? (int16_t)(*last + delta) : (int16_t)pq_zigzag(t);
    *last = *id;
    return !t->err;
}

int64_t pq_int(struct pq_tin *t, int type)
{
    switch (type) {
    case SL_TC_TRUE:
        return 1;
    case SL_TC_FALSE:
        return 0;
    case SL_TC_BYTE:
        if (t->p >= t->end) {
            fail(t);
            return 0;
        }
        return (int8_t)*t->p++;
    case SL_TC_I16:
    case SL_TC_I32:
    case SL_TC_I64:
        return pq_zigzag(t);
    default:
        pq_skip(t, type);
        fail(t); /* not an integer where one is due */
        return 0;
    }
}

const uint8_t *pq_bin(struct pq_tin *t, size_t *len)
{
    uint64_t n = pq_varint(t);
    if (n > (uint64_t)(t->end - t->p)) {
        fail(t);
        *len = 0;
        return t->p;
    }
    const uint8_t *p = t->p;
    t->p += n;
    *len = (size_t)n;
    return p;
}

size_t pq_list(struct pq_tin *t, int *etype)
{
    if (t->p >= t->end) {
        fail(t);
        return 0;
    }
    uint8_t b = *t->p++;
    *etype = b & 0x0f;
    uint64_t n = b >> 4;
    if (n == 15)
        n = pq_varint(t);
    /* every element takes at least a byte: a larger count is damage */
    if (n > (uint64_t)(t->end - t->p)) {
        fail(t);
        return 0;
    }
    return (size_t)n;
}

static void skip_depth(struct pq_tin *t, int type, int depth)
{
    if (depth > PQ_MAX_DEPTH) {
        fail(t);
        return;
    }
    size_t n;
    int et;
    switch (type) {
    case SL_TC_TRUE:
    case SL_TC_FALSE:
        return;
    case SL_TC_BYTE:
        if (t->p < t->end)
            t->p++;
        else
            fail(t);
        return;
    case SL_TC_I16:
    case SL_TC_I32:
    case SL_TC_I64:
        pq_varint(t);
        return;
    case SL_TC_DOUBLE:
        if (t->end - t->p >= 8)
            t->p += 8;
        else
            fail(t);
        return;
    case SL_TC_BINARY:
        pq_bin(t, &n);
        return;
    case SL_TC_LIST:
    case SL_TC_SET:
        n = pq_list(t, &et);
        for (size_t i = 0; i < n && !t->err; i++) {
            if (et == SL_TC_TRUE || et == SL_TC_FALSE)
                skip_depth(t, SL_TC_BYTE, depth + 1); /* a list's bools are a byte each */
            else
                skip_depth(t, et, depth + 1);
        }
        return;
    case SL_TC_MAP: {
        uint64_t m = pq_varint(t);
        if (m == 0)
            return;
        if (t->p >= t->end || m > (uint64_t)(t->end - t->p)) {
            fail(t);
            return;
        }
        uint8_t kv = *t->p++;
        for (uint64_t i = 0; i < m && !t->err; i++) {
            skip_depth(t, kv >> 4, depth + 1);
            skip_depth(t, kv & 0x0f, depth + 1);
        }
        return;
    }
    case SL_TC_STRUCT: {
        int16_t last = 0, id;
        int ft;
        while (pq_field(t, &last, &id, &ft))
            skip_depth(t, ft, depth + 1);
        return;
    }
    default:
        fail(t);
    }
}

void pq_skip(struct pq_tin *t, int type)
{
    skip_depth(t, type, 0);
}

/* ---- the schema ---------------------------------------------------------------------- */

static void parse_unit(struct pq_tin *t, struct pq_node *e)
{
    int16_t last = 0, id;
    int ft;
    while (pq_field(t, &last, &id, &ft)) {
        if (ft == SL_TC_STRUCT && id >= 1 && id <= 3)
            e->time_unit = id; /* MILLIS, MICROS, NANOS */
        pq_skip(t, ft);
    }
}

/* A TimestampType or TimeType: isAdjustedToUTC (1), unit (2). */
static void parse_time(struct pq_tin *t, struct pq_node *e)
{
    int16_t last = 0, id;
    int ft;
    while (pq_field(t, &last, &id, &ft)) {
        if (id == 1 && (ft == SL_TC_TRUE || ft == SL_TC_FALSE))
            e->utc = ft == SL_TC_TRUE;
        else if (id == 2 && ft == SL_TC_STRUCT)
            parse_unit(t, e);
        else
            pq_skip(t, ft);
    }
}

static void parse_logical(struct pq_tin *t, struct pq_node *e)
{
    int16_t last = 0, id;
    int ft;
    while (pq_field(t, &last, &id, &ft)) {
        if (ft != SL_TC_STRUCT) {
            pq_skip(t, ft);
            continue;
        }
        e->logical = id;
        if (id == SL_PQ_LT_TIMESTAMP || id == SL_PQ_LT_TIME) {
            parse_time(t, e);
        } else if (id == SL_PQ_LT_DECIMAL || id == SL_PQ_LT_INTEGER) {
            int16_t l2 = 0, i2;
            int f2;
            while (pq_field(t, &l2, &i2, &f2)) {
                int64_t v = (f2 == SL_TC_STRUCT || f2 == SL_TC_BINARY) ? (pq_skip(t, f2), 0)
                                                                       : pq_int(t, f2);
                if (id == SL_PQ_LT_DECIMAL && i2 == 1)
                    e->scale = (int)v;
                else if (id == SL_PQ_LT_DECIMAL && i2 == 2)
                    e->precision = (int)v;
                else if (i2 == 1)
                    e->int_bits = (int)v;
                else if (i2 == 2)
                    e->int_signed = (int)v;
            }
        } else {
            pq_skip(t, ft);
        }
    }
}

static void parse_element(struct pq_tin *t, struct pq_node *e)
{
    int16_t last = 0, id;
    int ft;
    size_t n;
    e->type = -1;
    e->converted = -1;
    e->repetition = SL_PQ_REQUIRED;
    e->leaf = -1;
    e->int_signed = 1;
    while (pq_field(t, &last, &id, &ft)) {
        switch (id) {
        case SL_PQ_SE_TYPE:
            e->type = (int)pq_int(t, ft);
            break;
        case SL_PQ_SE_TYPE_LENGTH:
            e->type_length = (int)pq_int(t, ft);
            break;
        case SL_PQ_SE_REPETITION:
            e->repetition = (int)pq_int(t, ft);
            break;
        case SL_PQ_SE_NUM_CHILDREN:
            e->nchildren = (int)pq_int(t, ft);
            break;
        case SL_PQ_SE_CONVERTED:
            e->converted = (int)pq_int(t, ft);
            break;
        case SL_PQ_SE_SCALE:
            e->scale = (int)pq_int(t, ft);
            break;
        case SL_PQ_SE_PRECISION:
            e->precision = (int)pq_int(t, ft);
            break;
        case SL_PQ_SE_NAME: {
            if (ft != SL_TC_BINARY) {
                pq_skip(t, ft);
                t->err = 1;
                break;
            }
            const uint8_t *s = pq_bin(t, &n);
            free(e->name);
            e->name = sl_xstrndup((const char *)s, n);
            break;
        }
        case SL_PQ_SE_LOGICAL:
            if (ft == SL_TC_STRUCT)
                parse_logical(t, e);
            else
                pq_skip(t, ft);
            break;
        default:
            pq_skip(t, ft);
        }
    }
}

/* Link nodes[*i] and its subtree; levels from the parent's. */
static int link_tree(struct pq_meta *m, size_t *i, int def, int rep, int depth)
{
    if (*i >= m->nnodes || depth > PQ_MAX_SCHEMA_DEPTH)
        return -1;
    struct pq_node *nd = &m->nodes[(*i)++];
    if (depth > 0) {
        if (nd->repetition < SL_PQ_REQUIRED || nd->repetition > SL_PQ_REPEATED)
            return -1;
        def += nd->repetition != SL_PQ_REQUIRED;
        rep += nd->repetition == SL_PQ_REPEATED;
    }
    nd->max_def = def;
    nd->max_rep = rep;
    nd->first_leaf = (int)m->nleaves;
    if (nd->type >= 0 && depth > 0) {
        if (nd->nchildren > 0 || nd->type > SL_PQ_FIXED_LEN_BYTE_ARRAY)
            return -1;
        if (nd->type == SL_PQ_FIXED_LEN_BYTE_ARRAY &&
            (nd->type_length <= 0 || nd->type_length > (1 << 24)))
            return -1;
        nd->leaf = (int)m->nleaves;
        m->leaves[m->nleaves++] = nd;
        nd->nleaves = 1;
        return 0;
    }
    if (nd->nchildren <= 0 || (size_t)nd->nchildren > m->nnodes - *i)
        return -1;
    nd->child = sl_xcalloc((size_t)nd->nchildren, sizeof(*nd->child));
    for (int c = 0; c < nd->nchildren; c++) {
        nd->child[c] = &m->nodes[*i];
        if (link_tree(m, i, def, rep, depth + 1))
            return -1;
    }
    nd->nleaves = (int)m->nleaves - nd->first_leaf;
    return 0;
}

static int parse_schema(struct pq_tin *t, struct pq_meta *m)
{
    int et;
    size_t n = pq_list(t, &et);
    if (et != SL_TC_STRUCT || n == 0)
        return -1;
    m->nodes = sl_xcalloc(n, sizeof(*m->nodes));
    m->nnodes = n;
    for (size_t i = 0; i < n && !t->err; i++)
        parse_element(t, &m->nodes[i]);
    if (t->err)
        return -1;
    m->leaves = sl_xcalloc(n, sizeof(*m->leaves));
    size_t i = 0;
    if (link_tree(m, &i, 0, 0, 0) || i != n || m->nleaves == 0)
        return -1;
    return 0;
}

/* ---- row groups ---------------------------------------------------------------------- */

static void parse_colmeta(struct pq_tin *t, struct pq_chunk *c, int64_t *data_off,
                          int64_t *dict_off)
{
    int16_t last = 0, id;
    int ft;
    while (pq_field(t, &last, &id, &ft)) {
        switch (id) {
        case SL_PQ_CMD_TYPE:
            c->type = (int)pq_int(t, ft);
            break;
        case SL_PQ_CMD_CODEC:
            c->codec = (int)pq_int(t, ft);
            break;
        case SL_PQ_CMD_NUM_VALUES:
            c->num_values = pq_int(t, ft);
            break;
        case SL_PQ_CMD_COMPRESSED_SIZE:
            c->len = (uint64_t)pq_int(t, ft);
            break;
        case SL_PQ_CMD_DATA_PAGE_OFFSET:
            *data_off = pq_int(t, ft);
            break;
        case SL_PQ_CMD_DICT_PAGE_OFFSET:
            *dict_off = pq_int(t, ft);
            break;
        default:
            pq_skip(t, ft);
        }
    }
}

/* A ColumnChunk: 0, or -1 (damage), or -2 (its data in another file). */
static int parse_chunk(struct pq_tin *t, struct pq_chunk *c)
{
    int16_t last = 0, id;
    int ft, rc = -1;
    int64_t data_off = -1, dict_off = -1;
    c->type = -1;
    while (pq_field(t, &last, &id, &ft)) {
        if (id == SL_PQ_CC_META_DATA && ft == SL_TC_STRUCT) {
            parse_colmeta(t, c, &data_off, &dict_off);
            rc = 0;
        } else if (id == SL_PQ_CC_FILE_PATH) {
            pq_skip(t, ft);
            return -2;
        } else {
            pq_skip(t, ft);
        }
    }
    if (data_off < 0)
        return -1;
    /* the dictionary page comes first when there is one; some writers put 0 for none */
    c->start = (uint64_t)(dict_off > 0 && dict_off < data_off ? dict_off : data_off);
    return rc;
}

static int parse_rowgroup(struct pq_tin *t, struct pq_meta *m, struct pq_rowgroup *g)
{
    int16_t last = 0, id;
    int ft, et, rc = 0;
    size_t ncols = 0;
    g->col = sl_xcalloc(m->nleaves, sizeof(*g->col));
    while (pq_field(t, &last, &id, &ft)) {
        if (id == SL_PQ_RG_COLUMNS && ft == SL_TC_LIST) {
            size_t n = pq_list(t, &et);
            if (et != SL_TC_STRUCT || n != m->nleaves)
                return -1;
            for (size_t c = 0; c < n && !rc && !t->err; c++)
                rc = parse_chunk(t, &g->col[c]);
            ncols = n;
        } else if (id == SL_PQ_RG_NUM_ROWS) {
            g->num_rows = pq_int(t, ft);
        } else {
            pq_skip(t, ft);
        }
    }
    return rc ? rc : ncols == m->nleaves ? 0 : -1;
}

static int corrupt(const char *name, uint64_t off, const char *what)
{
    return sl_err_set(SL_ERR_CORRUPT,
                      "cannot read Parquet file '%s': its footer (at byte %llu) %s\nhint: the file "
                      "is damaged or cut short; write it again from its source",
                      name, (unsigned long long)off, what);
}

/* Check the chunks against the schema and the file. */
static int check_chunks(struct pq_meta *m, uint64_t footer, const char *name, uint64_t off)
{
    for (size_t r = 0; r < m->nrg; r++) {
        struct pq_rowgroup *g = &m->rg[r];
        if (g->num_rows < 0)
            return corrupt(name, off, "gives a negative row count");
        for (size_t c = 0; c < m->nleaves; c++) {
            struct pq_chunk *ch = &g->col[c];
            if (ch->type != m->leaves[c]->type)
                return corrupt(name, off, "gives a column chunk a type that its schema does not");
            if (ch->start < SL_PQ_MAGIC_LEN || ch->start > footer || ch->len > footer - ch->start)
                return corrupt(name, off, "places a column chunk outside the file's data");
            if (ch->num_values < 0)
                return corrupt(name, off, "gives a negative value count");
            g->bytes += ch->len;
        }
    }
    return 0;
}

int pq_meta_parse(struct pq_meta *m, const uint8_t *buf, size_t n, uint64_t off, uint64_t size,
                  const char *name)
{
    memset(m, 0, sizeof(*m));
    struct pq_tin t = { buf, buf, buf + n, 0 };
    int16_t last = 0, id;
    int ft, et, have_schema = 0, rc = 0;
    while (!rc && pq_field(&t, &last, &id, &ft)) {
        if (id == SL_PQ_FMD_SCHEMA && ft == SL_TC_LIST && !have_schema) {
            if (parse_schema(&t, m))
                return corrupt(name, off, "has a schema that does not parse");
            have_schema = 1;
        } else if (id == SL_PQ_FMD_ROW_GROUPS && ft == SL_TC_LIST && have_schema && !m->rg) {
            size_t k = pq_list(&t, &et);
            if (et != SL_TC_STRUCT)
                return corrupt(name, off, "lists row groups that are not structs");
            m->rg = sl_xcalloc(k ? k : 1, sizeof(*m->rg));
            for (size_t r = 0; r < k && !rc && !t.err; r++, m->nrg++)
                rc = parse_rowgroup(&t, m, &m->rg[r]);
        } else if (id == SL_PQ_FMD_NUM_ROWS) {
            m->num_rows = pq_int(&t, ft);
        } else {
            pq_skip(&t, ft);
        }
    }
    if (rc == -2)
        return sl_err_set(SL_ERR_UNSUPPORTED,
                          "cannot read Parquet file '%s': its column chunks are in other files "
                          "(ColumnChunk.file_path)\nhint: read the files that hold the data",
                          name);
    if (rc || t.err)
        return corrupt(name, off + (uint64_t)(t.p - t.start), "does not parse at this point");
    if (!have_schema)
        return corrupt(name, off, "has no schema");
    return check_chunks(m, size - SL_PQ_FOOTER_LEN_BYTES - SL_PQ_MAGIC_LEN, name, off);
}

void pq_meta_release(struct pq_meta *m)
{
    for (size_t i = 0; i < m->nnodes; i++) {
        free(m->nodes[i].name);
        free(m->nodes[i].child);
    }
    for (size_t r = 0; r < m->nrg; r++)
        free(m->rg[r].col);
    /* the row group being parsed when a parse failed */
    if (m->rg && m->nrg == 0)
        free(m->rg[0].col);
    free(m->rg);
    free(m->nodes);
    free(m->leaves);
    memset(m, 0, sizeof(*m));
}

char *pq_leaf_path(const struct pq_meta *m, size_t leaf)
{
    struct sl_buf b = SL_BUF_INIT;
    /* walk from the root down to the leaf through the subtree that holds it */
    const struct pq_node *nd = &m->nodes[0];
    while (nd->leaf < 0) {
        const struct pq_node *next = NULL;
        for (int c = 0; c < nd->nchildren && !next; c++) {
            const struct pq_node *ch = nd->child[c];
            if ((int)leaf >= ch->first_leaf && (int)leaf < ch->first_leaf + ch->nleaves)
                next = ch;
        }
        if (!next)
            break;
        nd = next;
        sl_buf_printf(&b, "%s%s", b.len ? "." : "", nd->name ? nd->name : "?");
    }
    char *s = sl_xstrdup(b.len ? b.data : "?");
    sl_buf_release(&b);
    return s;
}
