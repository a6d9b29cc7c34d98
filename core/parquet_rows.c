/* Rows of a Parquet file as lines of JSON: each row group's column chunks read and
 * decoded, then rows assembled from the leaves' repetition and definition levels. */
#include "core/alloc.h"
#include "core/buf.h"
#include "core/err.h"
#include "core/parquet.h"
#include "core/parquet_internal.h"
#include "core/stream.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* rendered rows handed out per refill: enough to amortise the calls */
#define PQ_OUT_CHUNK (256u << 10)

/* How a leaf's values are written. */
enum kind {
    K_BOOL,
    K_INT,
    K_UINT,
    K_FLOAT,
    K_STRING,
    K_BINARY,
    K_DATE,
    K_TS,
    K_TIME,
    K_DECIMAL,
    K_INT96,
    K_UUID,
    K_F16,
    K_NULL,
};

struct leaf {
    struct pq_column c;
    size_t cur, vcur; /* the next entry and value */
    enum kind kind;
    uint8_t *chunk; /* the chunk's bytes as read */
};

struct pq_source {
    struct sl_source base;
    struct sl_parquet *pq;
    size_t rg, end;
    int64_t rows_left; /* of the current row group; -1 before the first */
    struct leaf *lv;
    struct sl_buf out, key;
    size_t out_pos;
    int bad; /* the levels of the row being assembled disagree */
    int err; /* a failure after rows that are still to be handed out: given after them */
    char errmsg[SL_ERR_MSG_MAX];
    const char *text_key, *id_key;
};

/* ---- values ---------------------------------------------------------------------------- */

/* 8 bytes at a time: whether any is below 0x20, '"' or '\\' (a byte that needs an escape;
 * the SWAR tests for a byte below n and a zero byte, on 0x01 and 0x80 in every lane) */
static int needs_escape8(uint64_t w)
{
    const uint64_t ones = 0x0101010101010101ull, high = 0x8080808080808080ull;
    uint64_t q = w ^ (ones * '"'), b = w ^ (ones * '\\');
    uint64_t lt = (w - ones * 0x20) & ~w;
    uint64_t zq = (q - ones) & ~q, zb = (b - ones) & ~b;
    return ((lt | zq | zb) & high) != 0;
}

static void put_str(struct sl_buf *o, const uint8_t *p, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    sl_buf_reserve(o, n + 2);
    sl_buf_putc(o, '"');
    size_t run = 0, i = 0;
    while (i < n) {
        if (i + 8 <= n) {
            uint64_t w;
            memcpy(&w, p + i, 8);
            if (!needs_escape8(w)) {
                i += 8;
                continue;
            }
        }
        uint8_t c = p[i++];
        if (c >= 0x20 && c != '"' && c != '\\')
            continue;
        sl_buf_append(o, p + run, i - 1 - run);
        run = i;
        char e[7] = { '\\', 0 };
        switch (c) {
        case '"':
            e[1] = '"';
            break;
        case '\\':
            e[1] = '\\';
            break;
        case '\n':
            e[1] = 'n';
            break;
        case '\r':
            e[1] = 'r';
            break;
        case '\t':
            e[1] = 't';
            break;
        case '\b':
            e[1] = 'b';
            break;
        case '\f':
            e[1] = 'f';
            break;
        default:
            e[1] = 'u', e[2] = '0', e[3] = '0', e[4] = hex[c >> 4], e[5] = hex[c & 15];
        }
        sl_buf_puts(o, e);
    }
    sl_buf_append(o, p + run, n - run);
    sl_buf_putc(o, '"');
}

static void put_base64(struct sl_buf *o, const uint8_t *p, size_t n)
{
    sl_buf_putc(o, '"');
    sl_buf_base64(o, p, n);
    sl_buf_putc(o, '"');
}

/* The shortest text that reads back as the same double (or float, when single). */
static void put_float(struct sl_buf *o, double v, int single)
{
    if (!isfinite(v)) {
        sl_buf_puts(o, "null");
        return;
    }
    char s[40];
    for (int prec = single ? 6 : 15; prec <= 17; prec++) {
        snprintf(s, sizeof(s), "%.*g", prec, v);
        double back = strtod(s, NULL);
        if (single ? (float)back == (float)v : back == v)
            break;
    }
    sl_buf_puts(o, s);
}

/* days since 1970-01-01 -> civil date (the proleptic Gregorian calendar, by eras of 400
 * years: 146097 days each) */
static void civil(int64_t days, int64_t *y, int *m, int *d)
{
    int64_t z = days + 719468; /* days from 0000-03-01 to 1970-01-01 */
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    *d = (int)(doy - (153 * mp + 2) / 5 + 1);
    *m = (int)(mp < 10 ? mp + 3 : mp - 9);
    *y = yoe + era * 400 + (*m <= 2);
}

static int64_t floordiv(int64_t a, int64_t b)
{
    return a / b - (a % b != 0 && (a < 0) != (b < 0));
}

/* A time of day of `v` units (1000^unit per second) since midnight, with `digits` decimals. */
static void put_clock(struct sl_buf *o, int64_t v, int64_t per_s, int digits)
{
    int64_t s = floordiv(v, per_s), frac = v - s * per_s;
    sl_buf_printf(o, "%02d:%02d:%02d", (int)(s / 3600 % 24), (int)(s / 60 % 60), (int)(s % 60));
    if (digits)
        sl_buf_printf(o, ".%0*lld", digits, (long long)frac);
}

/* A timestamp of v units (unit 1 ms, 2 us, 3 ns) since the epoch. */
static void put_ts(struct sl_buf *o, int64_t v, int unit, int utc)
{
    int64_t per_s = unit == 1 ? 1000 : unit == 2 ? 1000000 : 1000000000;
    int64_t s = floordiv(v, per_s);
    int64_t days = floordiv(s, 86400), y;
    int m, d;
    civil(days, &y, &m, &d);
    sl_buf_printf(o, "\"%04lld-%02d-%02dT", (long long)y, m, d);
    put_clock(o, v - days * 86400 * per_s, per_s, 3 * unit);
    sl_buf_puts(o, utc ? "Z\"" : "\"");
}

static void put_decimal(struct sl_buf *o, __int128 v, int scale)
{
    char dig[64];
    int n = 0, neg = v < 0;
    unsigned __int128 u = neg ? -(unsigned __int128)v : (unsigned __int128)v;
    do {
        dig[n++] = (char)('0' + (int)(u % 10));
        u /= 10;
    } while (u && n < 60);
    while (n <= scale && n < 60)
        dig[n++] = '0';
    if (neg)
        sl_buf_putc(o, '-');
    for (int i = n - 1; i >= 0; i--) {
        sl_buf_putc(o, dig[i]);
        if (i == scale && scale > 0)
            sl_buf_putc(o, '.');
    }
}

static double half(uint16_t h)
{
    int e = (h >> 10) & 31, f = h & 1023;
    double v = e == 0 ? ldexp(f, -24) : e == 31 ? (f ? NAN : INFINITY) : ldexp(f + 1024, e - 25);
    return h & 0x8000 ? -v : v;
}

static void put_bytes_value(struct sl_buf *o, const struct pq_node *nd, enum kind k,
                            const struct pq_bytes *b)
{
    switch (k) {
    case K_STRING:
        put_str(o, b->p, b->len);
        return;
    case K_DECIMAL: {
        if (b->len > 16 || nd->scale < 0 || nd->scale > 38) {
            sl_buf_puts(o, "null");
            return;
        }
        __int128 v = b->len && (b->p[0] & 0x80) ? -1 : 0;
        for (uint32_t i = 0; i < b->len; i++)
            v = (__int128)((unsigned __int128)v << 8 | b->p[i]);
        put_decimal(o, v, nd->scale);
        return;
    }
    case K_INT96: {
        if (b->len != 12) {
            sl_buf_puts(o, "null");
            return;
        }
        int64_t ns = 0, day = 0;
        for (int i = 7; i >= 0; i--)
            ns = (int64_t)((uint64_t)ns << 8 | b->p[i]);
        for (int i = 11; i >= 8; i--)
            day = day << 8 | b->p[i];
        /* Julian day 2440588 is 1970-01-01; writers put the nanoseconds of a time before
         * 1970 below 0 (a day later): brought into the day */
        const int64_t ns_day = 86400ll * 1000000000ll;
        int64_t days = day - 2440588 + floordiv(ns, ns_day), y;
        ns -= floordiv(ns, ns_day) * ns_day;
        int m, d;
        civil(days, &y, &m, &d);
        sl_buf_printf(o, "\"%04lld-%02d-%02dT", (long long)y, m, d);
        put_clock(o, ns, 1000000000, 9);
        sl_buf_putc(o, '"');
        return;
    }
    case K_UUID:
        if (b->len == 16) {
            sl_buf_putc(o, '"');
            for (int i = 0; i < 16; i++)
                sl_buf_printf(o, "%s%02x", i == 4 || i == 6 || i == 8 || i == 10 ? "-" : "",
                              b->p[i]);
            sl_buf_putc(o, '"');
        } else {
            put_base64(o, b->p, b->len);
        }
        return;
    case K_F16:
        if (b->len == 2)
            put_float(o, half((uint16_t)(b->p[0] | b->p[1] << 8)), 1);
        else
            sl_buf_puts(o, "null");
        return;
    default:
        put_base64(o, b->p, b->len);
    }
}

static void put_value(struct sl_buf *o, const struct pq_node *nd, struct leaf *l)
{
    size_t j = l->vcur++;
    int64_t v = 0;
    if (nd->type == SL_PQ_FLOAT || nd->type == SL_PQ_DOUBLE) {
        put_float(o, l->c.v.d[j], nd->type == SL_PQ_FLOAT);
        return;
    }
    if (nd->type == SL_PQ_BYTE_ARRAY || nd->type == SL_PQ_FIXED_LEN_BYTE_ARRAY ||
        nd->type == SL_PQ_INT96) {
        put_bytes_value(o, nd, l->kind, &l->c.v.b[j]);
        return;
    }
    v = l->c.v.i[j];
    switch (l->kind) {
    case K_BOOL:
        sl_buf_puts(o, v ? "true" : "false");
        return;
    case K_UINT:
        sl_buf_printf(o, "%llu",
                      nd->type == SL_PQ_INT32 ? (unsigned long long)(uint32_t)v
                                              : (unsigned long long)(uint64_t)v);
        return;
    case K_DATE: {
        int64_t y;
        int m, d;
        civil((int32_t)v, &y, &m, &d);
        sl_buf_printf(o, "\"%04lld-%02d-%02d\"", (long long)y, m, d);
        return;
    }
    case K_TS:
        put_ts(o, v, nd->time_unit, nd->utc);
        return;
    case K_TIME: {
        int64_t per_s = nd->time_unit == 1 ? 1000 : nd->time_unit == 2 ? 1000000 : 1000000000;
        sl_buf_putc(o, '"');
        put_clock(o, v, per_s, 3 * nd->time_unit);
        sl_buf_putc(o, '"');
        return;
    }
    case K_DECIMAL:
        put_decimal(o, v, nd->scale > 38 || nd->scale < 0 ? 0 : nd->scale);
        return;
    case K_NULL:
        sl_buf_puts(o, "null");
        return;
    default:
        sl_buf_printf(o, "%lld", (long long)v);
    }
}

static enum kind leaf_kind(const struct pq_node *nd, int as_text)
{
    int lt = nd->logical, ct = nd->converted;
    if (lt == SL_PQ_LT_UNKNOWN)
        return K_NULL;
    switch (nd->type) {
    case SL_PQ_BOOLEAN:
        return K_BOOL;
    case SL_PQ_FLOAT:
    case SL_PQ_DOUBLE:
        return K_FLOAT;
    case SL_PQ_INT96:
        return K_INT96;
    case SL_PQ_INT32:
    case SL_PQ_INT64:
        if (lt == SL_PQ_LT_DATE || ct == SL_PQ_CT_DATE)
            return nd->type == SL_PQ_INT32 ? K_DATE : K_INT;
        if (lt == SL_PQ_LT_TIMESTAMP || lt == SL_PQ_LT_TIME)
            return nd->time_unit < 1 || nd->time_unit > 3 ? K_INT
                   : lt == SL_PQ_LT_TIME                  ? K_TIME
                                                          : K_TS;
        if (lt == SL_PQ_LT_DECIMAL || ct == SL_PQ_CT_DECIMAL)
            return K_DECIMAL;
        if ((lt == SL_PQ_LT_INTEGER && !nd->int_signed) ||
            (ct >= SL_PQ_CT_UINT_8 && ct <= SL_PQ_CT_UINT_64))
            return K_UINT;
        return K_INT;
    case SL_PQ_BYTE_ARRAY:
        if (as_text || lt == SL_PQ_LT_STRING || lt == SL_PQ_LT_ENUM || lt == SL_PQ_LT_JSON ||
            ct == SL_PQ_CT_UTF8 || ct == SL_PQ_CT_ENUM || ct == SL_PQ_CT_JSON)
            return K_STRING;
        return lt == SL_PQ_LT_DECIMAL || ct == SL_PQ_CT_DECIMAL ? K_DECIMAL : K_BINARY;
    default: /* FIXED_LEN_BYTE_ARRAY */
        if (as_text)
            return K_STRING;
        return lt == SL_PQ_LT_UUID                                ? K_UUID
               : lt == SL_PQ_LT_FLOAT16                           ? K_F16
               : lt == SL_PQ_LT_DECIMAL || ct == SL_PQ_CT_DECIMAL ? K_DECIMAL
                                                                  : K_BINARY;
    }
}

/* ---- rows ------------------------------------------------------------------------------ */

static struct leaf *first_leaf(struct pq_source *s, const struct pq_node *nd)
{
    return &s->lv[nd->first_leaf];
}

/* The current entry's definition level of leaf l (its maximum when it has none). */
static int def_at(struct pq_source *s, struct leaf *l, const struct pq_node *leafnode)
{
    if (l->cur >= l->c.n) {
        s->bad = 1;
        return 0;
    }
    return l->c.def ? l->c.def[l->cur] : leafnode->max_def;
}

/* Every leaf under nd moves past one entry (a null or empty value at nd's level). */
static void skip_entry(struct pq_source *s, const struct pq_node *nd)
{
    for (int k = 0; k < nd->nleaves; k++) {
        struct leaf *l = &s->lv[nd->first_leaf + k];
        if (l->cur >= l->c.n) {
            s->bad = 1;
            continue;
        }
        if (l->c.def && l->c.def[l->cur] == s->pq->m.leaves[nd->first_leaf + k]->max_def)
            s->bad = 1; /* a value where the levels above say none */
        l->cur++;
    }
}

static void emit_field(struct pq_source *s, struct sl_buf *o, const struct pq_node *nd);

static void emit_leaf(struct pq_source *s, struct sl_buf *o, const struct pq_node *nd)
{
    struct leaf *l = &s->lv[nd->leaf];
    int d = def_at(s, l, nd);
    if (s->bad)
        return;
    if (d < nd->max_def) {
        sl_buf_puts(o, "null");
    } else if (l->vcur >= l->c.nv) {
        s->bad = 1;
        return;
    } else {
        put_value(o, nd, l);
    }
    l->cur++;
}

/* One instance of nd as it is (its repetition already handled): a value or an object. */
static void emit_instance(struct pq_source *s, struct sl_buf *o, const struct pq_node *nd);

/* The instances of repeated node rep as an array (elem: what each is written as) or, for
 * a map, an object. */
static void emit_repeated(struct pq_source *s, struct sl_buf *o, const struct pq_node *rep,
                          const struct pq_node *elem, int map)
{
    struct leaf *l = first_leaf(s, rep);
    int d = def_at(s, l, s->pq->m.leaves[rep->first_leaf]);
    if (s->bad)
        return;
    if (d < rep->max_def) {
        sl_buf_puts(o, map ? "{}" : "[]");
        skip_entry(s, rep);
        return;
    }
    sl_buf_putc(o, map ? '{' : '[');
    for (int first = 1; !s->bad; first = 0) {
        if (!first)
            sl_buf_putc(o, ',');
        if (map) {
            s->key.len = 0;
            emit_field(s, &s->key, rep->child[0]);
            const char *k = s->key.data ? s->key.data : "";
            size_t kl = s->key.len;
            if (kl >= 2 && k[0] == '"')
                sl_buf_append(o, k, kl);
            else
                put_str(o, (const uint8_t *)k, kl);
            sl_buf_putc(o, ':');
            emit_field(s, o, rep->child[1]);
        } else if (elem == rep) {
            emit_instance(s, o, rep);
        } else {
            emit_field(s, o, elem);
        }
        if (l->cur >= l->c.n || !l->c.rep || l->c.rep[l->cur] != rep->max_rep)
            break;
    }
    sl_buf_putc(o, map ? '}' : ']');
}

static int is_list(const struct pq_node *nd)
{
    return (nd->logical == SL_PQ_LT_LIST || nd->converted == SL_PQ_CT_LIST) && nd->nchildren == 1 &&
           nd->child[0]->repetition == SL_PQ_REPEATED;
}

static int is_map(const struct pq_node *nd)
{
    if (!(nd->logical == SL_PQ_LT_MAP || nd->converted == SL_PQ_CT_MAP ||
          nd->converted == SL_PQ_CT_MAP_KEY_VALUE) ||
        nd->nchildren != 1)
        return 0;
    const struct pq_node *kv = nd->child[0];
    return kv->repetition == SL_PQ_REPEATED && kv->type < 0 && kv->nchildren == 2;
}

/* The element of a list whose repeated child is rep (the format's rules for the older
 * two-level layouts: a repeated leaf, a repeated group of several fields, or one named
 * "array" or "<list>_tuple", is itself the element). */
static const struct pq_node *list_element(const struct pq_node *list, const struct pq_node *rep)
{
    if (rep->type >= 0 || rep->nchildren != 1 || (rep->name && !strcmp(rep->name, "array")))
        return rep;
    if (rep->name && list->name) {
        size_t n = strlen(list->name);
        if (!strncmp(rep->name, list->name, n) && !strcmp(rep->name + n, "_tuple"))
            return rep;
    }
    return rep->child[0];
}

static void emit_instance(struct pq_source *s, struct sl_buf *o, const struct pq_node *nd)
{
    if (nd->type >= 0) {
        emit_leaf(s, o, nd);
    } else if (is_list(nd)) {
        emit_repeated(s, o, nd->child[0], list_element(nd, nd->child[0]), 0);
    } else if (is_map(nd)) {
        emit_repeated(s, o, nd->child[0], NULL, 1);
    } else {
        sl_buf_putc(o, '{');
        for (int c = 0; c < nd->nchildren && !s->bad; c++) {
            if (c)
                sl_buf_putc(o, ',');
            const char *name = nd->child[c]->name ? nd->child[c]->name : "";
            put_str(o, (const uint8_t *)name, strlen(name));
            sl_buf_putc(o, ':');
            emit_field(s, o, nd->child[c]);
        }
        sl_buf_putc(o, '}');
    }
}

static void emit_field(struct pq_source *s, struct sl_buf *o, const struct pq_node *nd)
{
    if (nd->repetition == SL_PQ_REPEATED) {
        emit_repeated(s, o, nd, nd, 0);
        return;
    }
    if (nd->repetition == SL_PQ_OPTIONAL) {
        int d = def_at(s, first_leaf(s, nd), s->pq->m.leaves[nd->first_leaf]);
        if (s->bad)
            return;
        if (d < nd->max_def) {
            sl_buf_puts(o, "null");
            skip_entry(s, nd);
            return;
        }
    }
    emit_instance(s, o, nd);
}

/* ---- the source ------------------------------------------------------------------------ */

static int levels_disagree(struct pq_source *s, uint64_t row)
{
    return sl_err_set(SL_ERR_CORRUPT,
                      "cannot read Parquet file '%s': row %llu of row group %zu: the columns' "
                      "repetition and definition levels disagree\nhint: the file is damaged; "
                      "write it again from its source",
                      s->pq->name, (unsigned long long)row, s->rg);
}

/* Read and decode row group s->rg. */
static int load_rowgroup(struct pq_source *s)
{
    struct pq_meta *m = &s->pq->m;
    const struct pq_rowgroup *g = &m->rg[s->rg];
    int rc = 0;
    for (size_t c = 0; c < m->nleaves && !rc; c++) {
        struct leaf *l = &s->lv[c];
        const struct pq_chunk *ch = &g->col[c];
        free(l->chunk);
        l->chunk = sl_xmalloc(ch->len ? ch->len : 1);
        rc = s->pq->pr.read_at(s->pq->pr.ctx, ch->start, l->chunk, ch->len);
        char *path = rc ? NULL : pq_leaf_path(m, c);
        struct pq_where w = { s->pq->name, s->rg, path };
        if (!rc)
            rc = pq_column_decode(&l->c, m->leaves[c], ch, l->chunk, ch->len, ch->start, &w);
        free(path);
        l->cur = l->vcur = 0;
    }
    s->rows_left = g->num_rows;
    return rc;
}

/* Render rows until the output holds a chunk or the range ends. 0 or <0. */
static int render(struct pq_source *s)
{
    struct pq_meta *m = &s->pq->m;
    const struct pq_node *root = &m->nodes[0];
    while (s->out.len < PQ_OUT_CHUNK) {
        if (s->rows_left == 0 || s->rows_left < 0) {
            if (s->rows_left == 0) {
                for (size_t c = 0; c < m->nleaves; c++)
                    if (s->lv[c].cur != s->lv[c].c.n)
                        return levels_disagree(s, (uint64_t)m->rg[s->rg].num_rows);
                s->rg++;
            }
            if (s->rg >= s->end)
                return 0;
            int rc = load_rowgroup(s);
            if (rc)
                return rc;
            continue;
        }
        uint64_t row = (uint64_t)(m->rg[s->rg].num_rows - s->rows_left);
        for (size_t c = 0; c < m->nleaves; c++) {
            struct leaf *l = &s->lv[c];
            if (l->cur >= l->c.n || (l->c.rep && l->c.rep[l->cur] != 0))
                return levels_disagree(s, row);
        }
        s->bad = 0;
        emit_instance(s, &s->out, root);
        if (s->bad)
            return levels_disagree(s, row);
        sl_buf_putc(&s->out, '\n');
        s->rows_left--;
    }
    return 0;
}

static ssize_t src_read(struct sl_source *src, void *buf, size_t n)
{
    struct pq_source *s = (struct pq_source *)src;
    if (s->out_pos == s->out.len) {
        if (s->err)
            return sl_err_set(s->err, "%s", s->errmsg);
        s->out.len = s->out_pos = 0;
        int rc = render(s);
        if (rc && s->out.len == 0)
            return rc;
        if (rc) { /* the rows before the damage first */
            s->err = rc;
            snprintf(s->errmsg, sizeof(s->errmsg), "%s", sl_err_msg());
        }
    }
    size_t k = s->out.len - s->out_pos;
    if (k > n)
        k = n;
    memcpy(buf, s->out.data + s->out_pos, k);
    s->out_pos += k;
    return (ssize_t)k;
}

static void src_close(struct sl_source *src)
{
    struct pq_source *s = (struct pq_source *)src;
    for (size_t c = 0; c < s->pq->m.nleaves; c++) {
        pq_column_release(&s->lv[c].c);
        free(s->lv[c].chunk);
    }
    free(s->lv);
    sl_parquet_close(s->pq);
    sl_buf_release(&s->out);
    sl_buf_release(&s->key);
    free(src->name);
    free(s);
}

struct sl_source *sl_parquet_source(struct sl_parquet *pq, size_t first, size_t end,
                                    const struct sl_parquet_opts *opts, const char *name)
{
    struct pq_source *s = sl_xcalloc(1, sizeof(*s));
    s->base.read = src_read;
    s->base.close = src_close;
    s->base.name = sl_xstrdup(name);
    s->pq = pq;
    s->end = end && end < pq->m.nrg ? end : pq->m.nrg;
    s->rg = first < s->end ? first : s->end;
    s->rows_left = -1;
    s->text_key = opts && opts->text_key ? opts->text_key : "text";
    s->id_key = opts && opts->id_key ? opts->id_key : "id";
    s->lv = sl_xcalloc(pq->m.nleaves, sizeof(*s->lv));
    sl_buf_init(&s->out, 0);
    sl_buf_init(&s->key, 0);
    for (size_t c = 0; c < pq->m.nleaves; c++)
        s->lv[c].kind = leaf_kind(pq->m.leaves[c], 0);
    /* the text and id columns are text whatever their annotation */
    const struct pq_node *root = &pq->m.nodes[0];
    for (int c = 0; c < root->nchildren; c++) {
        const struct pq_node *ch = root->child[c];
        if (ch->type >= 0 && ch->name &&
            (!strcmp(ch->name, s->text_key) || !strcmp(ch->name, s->id_key)))
            s->lv[ch->leaf].kind = leaf_kind(ch, 1);
    }
    return &s->base;
}
