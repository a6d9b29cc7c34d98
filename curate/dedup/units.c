/* Dedup of paragraphs or lines across a corpus (curate/dedup/units.h): the units' hashes are
 * exchanged as document dedup exchanges documents' (curate/dedup/exact.c), then grouped
 * (exact) or run through a partitioned Bloom filter in input order (bloom). */
#include "curate/dedup/units.h"

#include "core/alloc.h"
#include "core/buf.h"
#include "core/doc.h"
#include "core/hash.h"
#include "core/log.h"
#include "core/world.h"
#include "curate/dedup/corpus.h"
#include "curate/dedup/normalize.h"
#include "curate/dedup/shuffle.h"
#include "tokenize/punkt.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* one unit's hash and place: 32 bytes through the exchange */
struct rec {
    uint64_t lo, hi, gid, idx;
};

void dd_bloom_size(uint64_t n, double p, uint64_t *bits, unsigned *parts, unsigned *k)
{
    if (n == 0)
        n = 1;
    uint64_t np = n / DD_BLOOM_PART_MIN;
    *parts = np < 1 ? 1 : np > DD_BLOOM_PARTS ? DD_BLOOM_PARTS : (unsigned)np;
    double m = ceil(-(double)n * log(p) / (M_LN2 * M_LN2));
    uint64_t words = (uint64_t)ceil(m / 64.0 / *parts);
    if (words == 0)
        words = 1;
    *bits = words * 64 * *parts;
    double kk = round((double)*bits / (double)n * M_LN2);
    *k = kk < 1 ? 1 : kk > 64 ? 64 : (unsigned)kk; /* beyond 64 hashes nothing is gained */
}

int dd_units_each(const char *text, size_t len, dd_unit_fn fn, void *ctx)
{
    size_t s = 0;
    if (len == 0) /* an empty text has no units (Dolma skips it) */
        return 0;
    for (uint32_t i = 0;; i++) {
        const char *nl = memchr(text + s, '\n', len - s);
        size_t e = nl ? (size_t)(nl - text) : len;
        int rc = fn(ctx, i, s, e);
        if (rc || !nl)
            return rc;
        s = e + 1;
    }
}

static int is_space(char ch)
{
    return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' || ch == '\v' || ch == '\f';
}

int dd_unit_key(const struct dd_units_cfg *cfg, const char *s, size_t len, struct sl_buf *tmp,
                const char **key, size_t *klen)
{
    size_t a = 0, b = len;
    while (a < b && is_space(s[a]))
        a++;
    while (b > a && is_space(s[b - 1]))
        b--;
    if (cfg->skip_empty && a == b)
        return 0;
    if (cfg->unit == DD_UNIT_PARAGRAPH) {
        *key = s;
        *klen = len;
        return 1;
    }
    sl_buf_reset(tmp);
    if (dd_normalize(s + a, b - a, DD_NORM_LOWER, tmp)) { /* past tmp's cap: compare as is */
        *key = s + a;
        *klen = b - a;
        return 1;
    }
    *key = tmp->data ? tmp->data : "";
    *klen = tmp->len;
    return 1;
}

struct scan_ctx {
    const struct dd_units_cfg *cfg;
    struct punkt_spans sent;
    const char *text;
    uint64_t gid;
    struct sl_buf tmp;
    struct rec *r;
    size_t n, cap;
    uint64_t units;
};

static void add_rec(struct scan_ctx *s, uint32_t index, const char *key, size_t klen)
{
    struct sl_hash128 h = sl_hash128(key, klen, 0);
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 4096;
        s->r = sl_xrealloc(s->r, sl_mul_size(s->cap, sizeof(*s->r)));
    }
    s->r[s->n++] = (struct rec){ h.lo, h.hi, s->gid, index };
}

static int on_unit(void *vctx, uint32_t index, size_t start, size_t end)
{
    struct scan_ctx *s = vctx;
    const char *key;
    size_t klen;
    s->units++;
    if (dd_unit_key(s->cfg, s->text + start, end - start, &s->tmp, &key, &klen))
        add_rec(s, index, key, klen);
    return 0;
}

void dd_span_sentences(const struct dd_units_cfg *cfg, const char *text, size_t len,
                       struct punkt_spans *out)
{
    out->n = 0;
    punkt_split(cfg->punkt, text, len, out);
}

/* span3: each run of DD_SPAN_SENTENCES sentences, normalised */
static int on_spans(struct scan_ctx *s, size_t len)
{
    dd_span_sentences(s->cfg, s->text, len, &s->sent);
    const struct punkt_span *v = s->sent.v;
    s->units += s->sent.n;
    for (size_t i = 0; i + DD_SPAN_SENTENCES <= s->sent.n; i++) {
        size_t a = v[i].start, b = v[i + DD_SPAN_SENTENCES - 1].end;
        sl_buf_reset(&s->tmp);
        int rc = dd_normalize(s->text + a, b - a, DD_NORM_ALL, &s->tmp);
        if (rc)
            return rc;
        add_rec(s, (uint32_t)i, s->tmp.data ? s->tmp.data : "", s->tmp.len);
    }
    return 0;
}

static int on_doc(void *vctx, uint64_t gid, struct sl_doc *d)
{
    struct scan_ctx *s = vctx;
    size_t len;
    s->text = sl_doc_text(d, &len);
    s->gid = gid;
    if (s->cfg->unit == DD_UNIT_SPAN3)
        return on_spans(s, len);
    return dd_units_each(s->text, len, on_unit, s);
}

static int cmp_hash(const void *pa, const void *pb)
{
    const struct rec *a = pa, *b = pb;
    if (a->hi != b->hi)
        return a->hi < b->hi ? -1 : 1;
    if (a->lo != b->lo)
        return a->lo < b->lo ? -1 : 1;
    if (a->gid != b->gid)
        return a->gid < b->gid ? -1 : 1;
    return a->idx < b->idx ? -1 : a->idx > b->idx;
}

static int cmp_place(const void *pa, const void *pb)
{
    const struct rec *a = pa, *b = pb;
    if (a->gid != b->gid)
        return a->gid < b->gid ? -1 : 1;
    return a->idx < b->idx ? -1 : a->idx > b->idx;
}

static int cmp_fate(const void *pa, const void *pb)
{
    const struct dd_fate *a = pa, *b = pb; /* (gid, unit index) */
    if (a->gid != b->gid)
        return a->gid < b->gid ? -1 : 1;
    return a->keep < b->keep ? -1 : a->keep > b->keep;
}

static void push(struct dd_fate **f, size_t *n, size_t *cap, const struct rec *r)
{
    if (*n == *cap) {
        *cap = *cap ? *cap * 2 : 1024;
        *f = sl_xrealloc(*f, sl_mul_size(*cap, sizeof(**f)));
    }
    (*f)[*n].gid = r->gid;
    (*f)[*n].keep = r->idx;
    (*n)++;
}

/* exact: all but the first of each run of equal hashes */
static void find_exact(struct rec *r, size_t n, struct dd_fate **f, size_t *nf)
{
    size_t cap = 0;
    if (n > 1) /* qsort wants a valid pointer even for nothing */
        qsort(r, n, sizeof(*r), cmp_hash);
    for (size_t i = 1; i < n; i++)
        if (r[i].hi == r[i - 1].hi && r[i].lo == r[i - 1].lo)
            push(f, nf, &cap, &r[i]);
}

static int part_of(uint64_t hi, unsigned parts)
{
    return (int)(((hi >> 32) * parts) >> 32); /* the top 32 bits scaled to [0, parts) */
}

static int part_owner(int part, unsigned parts, int size)
{
    return (int)((int64_t)part * size / parts);
}

/* bloom: this rank's parts, each tested and filled in input order */
static void find_bloom(const struct sl_world *w, struct rec *r, size_t n,
                       const struct dd_units_stats *st, struct dd_fate **f, size_t *nf)
{
    unsigned np = st->bloom_parts, k = st->bloom_k;
    uint64_t words = st->bloom_bits / 64 / np, pbits = words * 64;
    uint64_t *parts[DD_BLOOM_PARTS] = { 0 };
    for (unsigned p = 0; p < np; p++)
        if (part_owner((int)p, np, w->size) == w->rank)
            parts[p] = sl_xcalloc(words, sizeof(uint64_t));
    size_t cap = 0;
    if (n > 1)
        qsort(r, n, sizeof(*r), cmp_place);
    for (size_t i = 0; i < n; i++) {
        uint64_t *b = parts[part_of(r[i].hi, np)];
        /* double hashing: position j is lo + j * step, step odd so it cycles fully */
        uint64_t step = r[i].hi | 1, pos = r[i].lo;
        int seen = 1;
        for (unsigned j = 0; j < k; j++, pos += step) {
            uint64_t bit = pos % pbits, mask = 1ull << (bit & 63);
            if (!(b[bit >> 6] & mask)) {
                seen = 0;
                b[bit >> 6] |= mask;
            }
        }
        if (seen)
            push(f, nf, &cap, &r[i]);
    }
    for (unsigned p = 0; p < np; p++)
        free(parts[p]);
}

/* Ship the removed units to the ranks that read their documents; sort them. */
static int to_owners(const struct dd_corpus *c, struct dd_fate **f, size_t *n)
{
    int *dest = sl_xmalloc((*n + 1) * sizeof(int));
    for (size_t i = 0; i < *n; i++)
        dest[i] = dd_corpus_owner(c, (*f)[i].gid);
    struct sl_buf buf = SL_BUF_INIT;
    size_t m;
    int rc = dd_shuffle(c->w, *f, *n, sizeof(**f), dest, &buf, &m);
    free(dest);
    free(*f);
    *f = NULL;
    *n = 0;
    if (rc) {
        sl_buf_release(&buf);
        return rc;
    }
    if (m > 1)
        qsort(buf.data, m, sizeof(struct dd_fate), cmp_fate);
    size_t len;
    *f = (struct dd_fate *)sl_buf_detach(&buf, &len);
    *n = m;
    return 0;
}

/* Size the Bloom filter and say so on rank 0, before it is made. */
static void plan_bloom(const struct sl_world *w, const struct dd_units_cfg *cfg,
                       struct dd_units_stats *st)
{
    st->bloom_count = cfg->expected ? cfg->expected : st->compared;
    dd_bloom_size(st->bloom_count, cfg->fp_rate, &st->bloom_bits, &st->bloom_parts, &st->bloom_k);
    if (w->rank == 0)
        sl_info("dedup paragraphs: Bloom filter of %.2f MiB (%llu bits in %u parts over %d ranks, "
                "%u hashes) for %llu units at a false-positive rate of %g",
                (double)st->bloom_bits / 8 / 1048576, (unsigned long long)st->bloom_bits,
                st->bloom_parts, w->size, st->bloom_k, (unsigned long long)st->bloom_count,
                cfg->fp_rate);
}

int dd_units_find(struct dd_corpus *c, const struct dd_units_cfg *cfg, struct dd_fate **removed,
                  size_t *nr, struct dd_units_stats *st)
{
    const struct sl_world *w = c->w;
    struct scan_ctx s;
    memset(&s, 0, sizeof(s));
    memset(st, 0, sizeof(*st));
    s.cfg = cfg;
    sl_buf_init(&s.tmp, 0);
    *removed = NULL;
    *nr = 0;
    if (cfg->bloom && cfg->expected) /* known before the hashing pass: said first */
        plan_bloom(w, cfg, st);
    int rc = dd_corpus_scan(c, "dedup paragraphs: hashing", 1, on_doc, &s);
    sl_buf_release(&s.tmp);
    punkt_spans_release(&s.sent);
    uint64_t tot[2] = { s.units, s.n };
    if (!rc)
        rc = sl_world_allreduce_u64(w, tot, 2, SL_SUM);
    int *dest = NULL;
    if (!rc) {
        st->units = tot[0];
        st->compared = tot[1];
        if (cfg->bloom && !cfg->expected)
            plan_bloom(w, cfg, st);
        dest = sl_xmalloc((s.n + 1) * sizeof(int));
        for (size_t i = 0; i < s.n; i++)
            dest[i] = cfg->bloom ? part_owner(part_of(s.r[i].hi, st->bloom_parts),
                                              st->bloom_parts, w->size)
                                 : (int)(((unsigned __int128)s.r[i].hi * (unsigned)w->size) >> 64);
    }
    struct sl_buf buf = SL_BUF_INIT;
    size_t n = 0;
    if (!rc)
        rc = dd_shuffle(w, s.r, s.n, sizeof(*s.r), dest, &buf, &n);
    free(dest);
    free(s.r);
    if (!rc && cfg->bloom) {
        find_bloom(w, (struct rec *)buf.data, n, st, removed, nr);
    } else if (!rc) {
        find_exact((struct rec *)buf.data, n, removed, nr);
    }
    sl_buf_release(&buf);
    if (!rc)
        rc = to_owners(c, removed, nr);
    if (rc) {
        free(*removed);
        *removed = NULL;
        *nr = 0;
    }
    return rc;
}
