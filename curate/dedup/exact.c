/* Exact duplicates (curate/dedup/exact.h): 128-bit hashes of the (normalised) text or of
 * another member, shuffled to the rank that owns their value, sorted, and grouped. */
#include "curate/dedup/exact.h"

#include "core/alloc.h"
#include "core/buf.h"
#include "core/doc.h"
#include "core/hash.h"
#include "core/world.h"
#include "curate/dedup/corpus.h"
#include "curate/dedup/dedup.h"
#include "curate/dedup/normalize.h"
#include "curate/dedup/shuffle.h"

#include <stdlib.h>
#include <string.h>

struct rec {
    uint64_t lo, hi, gid, len;
};

struct scan_ctx {
    const struct dd_exact_cfg *cfg;
    struct sl_buf val, tmp;
    struct rec *r;
    size_t n, cap;
    uint64_t missing_key;
};

static int on_doc(void *vctx, uint64_t gid, struct sl_doc *d)
{
    struct scan_ctx *s = vctx;
    const char *v;
    size_t len, text_len;
    sl_doc_text(d, &text_len); /* --keep longest compares the texts as they are */
    if (s->cfg->key) {
        sl_buf_reset(&s->val);
        if (dd_get_key(d, s->cfg->key, &s->val)) {
            s->missing_key++;
            return 0;
        }
        v = s->val.data ? s->val.data : "";
        len = s->val.len;
    } else {
        v = sl_doc_text(d, &len);
    }
    if (s->cfg->norm) {
        sl_buf_reset(&s->tmp);
        int rc = dd_normalize(v, len, s->cfg->norm, &s->tmp);
        if (rc)
            return rc;
        v = s->tmp.data ? s->tmp.data : "";
        len = s->tmp.len;
    }
    struct sl_hash128 h = sl_hash128(v, len, 0);
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 4096;
        s->r = sl_xrealloc(s->r, sl_mul_size(s->cap, sizeof(*s->r)));
    }
    s->r[s->n].lo = h.lo;
    s->r[s->n].hi = h.hi;
    s->r[s->n].gid = gid;
    s->r[s->n].len = text_len;
    s->n++;
    return 0;
}
static int cmp_rec(const void *pa, const void *pb)
{
    const struct rec *a = pa, *b = pb;
    if (a->hi != b->hi)
        return a->hi < b->hi ? -1 : 1;
    if (a->lo != b->lo)
        return a->lo < b->lo ? -1 : 1;
    return a->gid < b->gid ? -1 : a->gid > b->gid;
}

/* Group equal hashes (this rank's share) into fates. */
static int find_groups(const struct sl_world *w, struct scan_ctx *s, int longest,
                       struct dd_fate **fates, size_t *nf)
{
    int *dest = sl_xmalloc((s->n + 1) * sizeof(int));
    for (size_t i = 0; i < s->n; i++)
        dest[i] = (int)(((unsigned __int128)s->r[i].hi * (unsigned)w->size) >> 64);
    struct sl_buf buf = SL_BUF_INIT;
    size_t n;
    int rc = dd_shuffle(w, s->r, s->n, sizeof(*s->r), dest, &buf, &n);
    free(dest);
    free(s->r);
    s->r = NULL;
    if (rc) {
        sl_buf_release(&buf);
        return rc;
    }
    struct rec *r = (struct rec *)buf.data;
    if (n > 1) /* qsort wants a valid pointer even for nothing */
        qsort(r, n, sizeof(*r), cmp_rec);
    size_t cap = 0;
    *fates = NULL;
    *nf = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (j < n && r[j].hi == r[i].hi && r[j].lo == r[i].lo)
            j++;
        if (j - i > 1) {
            uint64_t keep = r[i].gid, best = r[i].len;
            if (longest)
                for (size_t k = i + 1; k < j; k++)
                    if (r[k].len > best) {
                        best = r[k].len;
                        keep = r[k].gid;
                    }
            for (size_t k = i; k < j; k++) {
                if (*nf == cap) {
                    cap = cap ? cap * 2 : 1024;
                    *fates = sl_xrealloc(*fates, cap * sizeof(**fates));
                }
                (*fates)[*nf].gid = r[k].gid;
                (*fates)[*nf].keep = keep;
                (*nf)++;
            }
        }
        i = j;
    }
    sl_buf_release(&buf);
    return 0;
}

int dd_exact_find(struct dd_corpus *c, const struct dd_exact_cfg *cfg, struct dd_fate **fates,
                  size_t *nf, uint64_t *missing_key)
{
    struct scan_ctx s;
    memset(&s, 0, sizeof(s));
    s.cfg = cfg;
    sl_buf_init(&s.tmp, 0);
    *fates = NULL;
    *nf = 0;
    int rc = dd_corpus_scan(c, "dedup exact: hashing", 1, on_doc, &s);
    sl_buf_release(&s.val);
    sl_buf_release(&s.tmp);
    if (!rc)
        rc = find_groups(c->w, &s, cfg->longest, fates, nf);
    if (!rc)
        rc = dd_fates_to_owners(c, fates, nf);
    if (rc) {
        free(*fates);
        *fates = NULL;
        *nf = 0;
    }
    free(s.r);
    *missing_key = s.missing_key;
    return rc;
}
