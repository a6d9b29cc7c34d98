/* Union-find with path halving and "smaller index is root". */
#include "curate/dedup/unionfind.h"

#include "core/alloc.h"

#include <stdlib.h>

void unionfind_init(struct unionfind *uf, size_t n)
{
    uf->n = n;
    uf->parent = sl_xmalloc(sl_mul_size(n ? n : 1, sizeof(uint32_t)));
    for (size_t i = 0; i < n; i++)
        uf->parent[i] = (uint32_t)i;
}

void unionfind_release(struct unionfind *uf)
{
    free(uf->parent);
    uf->parent = NULL;
    uf->n = 0;
}

uint32_t unionfind_find(struct unionfind *uf, uint32_t x)
{
    while (uf->parent[x] != x) {
        uf->parent[x] = uf->parent[uf->parent[x]];
        x = uf->parent[x];
    }
    return x;
}

void unionfind_union(struct unionfind *uf, uint32_t a, uint32_t b)
{
    a = unionfind_find(uf, a);
    b = unionfind_find(uf, b);
    if (a == b)
        return;
    if (a < b)
        uf->parent[b] = a;
    else
        uf->parent[a] = b;
}
