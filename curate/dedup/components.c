/* Connected components: union-find on one rank, Large-Star/Small-Star rounds across many
 * (see components.h). */
#include "curate/dedup/components.h"

#include "core/alloc.h"
#include "core/buf.h"
#include "core/world.h"
#include "curate/dedup/dedup.h"
#include "curate/dedup/shingle.h"
#include "curate/dedup/shuffle.h"
#include "curate/dedup/unionfind.h"

#include <stdlib.h>
#include <string.h>

static uint64_t mix(uint64_t x)
{
    x ^= x >> 31;
    x *= 0x7fb5d329728ea185ull;
    x ^= x >> 27;
    x *= 0x81dadef4bc2dd44dull;
    x ^= x >> 33;
    return x;
}

static int owner_of(uint64_t v, int P)
{
    return (int)(((unsigned __int128)mix(v) * (unsigned)P) >> 64);
}

static int local_components(struct dd_edge *e, size_t n, struct dd_edge **labels, size_t *nl)
{
    struct dd_u64s vs = { 0 };
    dd_u64s_reserve(&vs, 2 * n + 1);
    for (size_t i = 0; i < n; i++) {
        vs.v[vs.n++] = e[i].u;
        vs.v[vs.n++] = e[i].v;
    }
    dd_u64s_sort_unique(&vs);
    struct unionfind uf;
    unionfind_init(&uf, vs.n);
    for (size_t i = 0; i < n; i++)
        unionfind_union(&uf, (uint32_t)dd_lower_bound_u64(vs.v, vs.n, e[i].u),
                        (uint32_t)dd_lower_bound_u64(vs.v, vs.n, e[i].v));
    struct dd_edge *out = sl_xmalloc(sl_mul_size(vs.n ? vs.n : 1, sizeof(*out)));
    for (size_t i = 0; i < vs.n; i++) {
        out[i].u = vs.v[i];
        out[i].v = vs.v[unionfind_find(&uf, (uint32_t)i)];
    }
    *labels = out;
    *nl = vs.n;
    unionfind_release(&uf);
    dd_u64s_release(&vs);
    return 0;
}

/* Send directed pairs (first -> second) to the owner of `first`, then sort them there. */
static int group_by_first(const struct sl_world *w, struct dd_edge *d, size_t n,
                          struct sl_buf *buf, size_t *nout)
{
    int *dest = sl_xmalloc(sl_mul_size(n ? n : 1, sizeof(int)));
    for (size_t i = 0; i < n; i++)
        dest[i] = owner_of(d[i].u, w->size);
    int rc = dd_shuffle(w, d, n, sizeof(*d), dest, buf, nout);
    free(dest);
    if (!rc)
        *nout = dd_edges_sort_unique((struct dd_edge *)buf->data, *nout);
    return rc;
}

struct edges {
    struct dd_edge *e;
    size_t n, cap;
};

static void add(struct edges *x, uint64_t u, uint64_t v)
{
    if (x->n == x->cap) {
        x->cap = x->cap ? x->cap * 2 : 1024;
        x->e = sl_xrealloc(x->e, sl_mul_size(x->cap, sizeof(*x->e)));
    }
    x->e[x->n].u = u < v ? u : v;
    x->e[x->n].v = u < v ? v : u;
    x->n++;
}

/* One Large-Star step: for each vertex a with neighbours N, m = min(a, N); every
 * neighbour b > a is linked to m. */
static int large_star(const struct sl_world *w, struct edges *E, struct sl_buf *buf)
{
    struct dd_edge *d = sl_xmalloc(sl_mul_size(2 * E->n + 1, sizeof(*d)));
    for (size_t i = 0; i < E->n; i++) {
        d[2 * i].u = E->e[i].u;
        d[2 * i].v = E->e[i].v;
        d[2 * i + 1].u = E->e[i].v;
        d[2 * i + 1].v = E->e[i].u;
    }
    size_t n;
    int rc = group_by_first(w, d, 2 * E->n, buf, &n);
    free(d);
    if (rc)
        return rc;
    const struct dd_edge *g = (const struct dd_edge *)buf->data;
    E->n = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        uint64_t a = g[i].u;
        uint64_t m = g[i].v < a ? g[i].v : a; /* neighbours are sorted: g[i].v is the least */
        while (j < n && g[j].u == a) {
            if (g[j].v > a)
                add(E, m, g[j].v);
            j++;
        }
        i = j;
    }
    return 0;
}

/* One Small-Star step: for each vertex a with smaller neighbours N, m = min(N); a and
 * every member of N are linked to m. */
static int small_star(const struct sl_world *w, struct edges *E, struct sl_buf *buf)
{
    struct dd_edge *d = sl_xmalloc(sl_mul_size(E->n + 1, sizeof(*d)));
    for (size_t i = 0; i < E->n; i++) {
        d[i].u = E->e[i].v; /* group by the larger end */
        d[i].v = E->e[i].u;
    }
    size_t n;
    int rc = group_by_first(w, d, E->n, buf, &n);
    free(d);
    if (rc)
        return rc;
    const struct dd_edge *g = (const struct dd_edge *)buf->data;
    E->n = 0;
    for (size_t i = 0; i < n;) {
        uint64_t a = g[i].u, m = g[i].v;
        size_t j = i;
        while (j < n && g[j].u == a) {
            if (g[j].v != m)
                add(E, m, g[j].v);
            j++;
        }
        add(E, m, a);
        i = j;
    }
    return 0;
}

/* Move canonical edges to an owner by edge, drop repeats, and fingerprint the set. */
static int dedupe_all(const struct sl_world *w, struct edges *E, struct sl_buf *buf,
                      uint64_t fp[2])
{
    int *dest = sl_xmalloc(sl_mul_size(E->n + 1, sizeof(int)));
    for (size_t i = 0; i < E->n; i++)
        dest[i] = owner_of(E->e[i].u ^ mix(E->e[i].v), w->size);
    size_t n;
    int rc = dd_shuffle(w, E->e, E->n, sizeof(*E->e), dest, buf, &n);
    free(dest);
    if (rc)
        return rc;
    n = dd_edges_sort_unique((struct dd_edge *)buf->data, n);
    if (n > E->cap) {
        E->cap = n;
        E->e = sl_xrealloc(E->e, sl_mul_size(E->cap, sizeof(*E->e)));
    }
    memcpy(E->e, buf->data, n * sizeof(*E->e));
    E->n = n;
    uint64_t f[2] = { 0, n };
    for (size_t i = 0; i < n; i++)
        f[0] += mix(E->e[i].u * 0x9E3779B97F4A7C15ull ^ mix(E->e[i].v));
    rc = sl_world_allreduce_u64(w, f, 2, SL_SUM);
    fp[0] = f[0];
    fp[1] = f[1];
    return rc;
}

int dd_components(const struct sl_world *w, struct dd_edge *edges, size_t n, int force_star,
                  struct dd_edge **labels, size_t *nlabels, unsigned *rounds)
{
    *labels = NULL;
    *nlabels = 0;
    if (rounds)
        *rounds = 0;
    if (w->size == 1 && !force_star) {
        int rc = local_components(edges, n, labels, nlabels);
        free(edges);
        return rc;
    }
    struct edges E = { edges, n, n };
    struct sl_buf buf = SL_BUF_INIT;
    uint64_t prev[2], cur[2];
    int rc = dedupe_all(w, &E, &buf, prev);
    for (unsigned r = 0; !rc; r++) {
        rc = large_star(w, &E, &buf);
        if (!rc)
            rc = small_star(w, &E, &buf);
        if (!rc)
            rc = dedupe_all(w, &E, &buf, cur);
        if (rc)
            break;
        if (rounds)
            *rounds = r + 1;
        if (cur[0] == prev[0] && cur[1] == prev[1])
            break;
        prev[0] = cur[0];
        prev[1] = cur[1];
    }
    if (!rc) {
        /* stars: (root, x) -> labels (x, root) and (root, root), one per vertex */
        struct dd_edge *lab = sl_xmalloc(sl_mul_size(2 * E.n + 1, sizeof(*lab)));
        int *dest = sl_xmalloc(sl_mul_size(2 * E.n + 1, sizeof(int)));
        for (size_t i = 0; i < E.n; i++) {
            lab[2 * i].u = E.e[i].v;
            lab[2 * i].v = E.e[i].u;
            lab[2 * i + 1].u = E.e[i].u;
            lab[2 * i + 1].v = E.e[i].u;
            dest[2 * i] = owner_of(E.e[i].v, w->size);
            dest[2 * i + 1] = owner_of(E.e[i].u, w->size);
        }
        size_t nl;
        rc = dd_shuffle(w, lab, 2 * E.n, sizeof(*lab), dest, &buf, &nl);
        free(lab);
        free(dest);
        if (!rc) {
            nl = dd_edges_sort_unique((struct dd_edge *)buf.data, nl);
            *labels = sl_xmalloc(sl_mul_size(nl ? nl : 1, sizeof(**labels)));
            memcpy(*labels, buf.data, nl * sizeof(**labels));
            *nlabels = nl;
        }
    }
    free(E.e);
    sl_buf_release(&buf);
    return rc;
}
