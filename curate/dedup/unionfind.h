/* struct unionfind: union-find over dense indices 0..n-1 with path halving; the root of
 * a set is always its smallest index, so components are labelled by their first member.
 * Used for one rank's share of the work and as the reference in tests. */
#ifndef SL_DEDUP_UNIONFIND_H
#define SL_DEDUP_UNIONFIND_H

#include <stddef.h>
#include <stdint.h>

struct unionfind {
    uint32_t *parent;
    size_t n;
};

void unionfind_init(struct unionfind *uf, size_t n);
void unionfind_release(struct unionfind *uf);
uint32_t unionfind_find(struct unionfind *uf, uint32_t x);
/* Join the sets of a and b; the smaller root becomes the root. */
void unionfind_union(struct unionfind *uf, uint32_t a, uint32_t b);

#endif
