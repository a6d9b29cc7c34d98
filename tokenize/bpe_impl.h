/* Internals of tokenize/bpe.c and tokenize/bpe_load.c: the vocabulary, its hash tables
 * and the merge table. Not part of the API. */
#ifndef SL_TOKENIZE_BPE_IMPL_H
#define SL_TOKENIZE_BPE_IMPL_H

#include "tokenize/bpe.h"

#include <stdint.h>
#include <string.h>

typedef unsigned char u8;

enum { FL_PRESENT = 1, FL_SPECIAL = 2 };

#define BPE_ID_BITS 20                 /* ids are below 2^20 - 1 */
#define BPE_MAX_IDS ((1u << BPE_ID_BITS) - 1)
#define BPE_RANK_BITS 24               /* merge ranks are below 2^24 - 1 */
#define RANK_NONE UINT32_MAX
#define PAIR_EMPTY UINT64_MAX

struct vslot {
    uint32_t tag, id1; /* id1 = id + 1; 0 is an empty slot */
};

struct special {
    char *name;
    uint32_t id;
};

struct bpe {
    enum pretok_kind pretok;
    int tiktoken;
    int whole;        /* a piece that is a regular token encodes as that token (tiktoken) */
    uint32_t max_len; /* bytes of the longest regular token (when whole) */
    uint32_t n_vocab;
    uint32_t *off; /* token bytes are bytes[off[i] .. off[i+1]) */
    u8 *bytes;
    u8 *flags;
    uint32_t byte_id[256];
    /* token bytes -> id */
    struct vslot *vtab;
    uint64_t vmask;
    /* pair merges: entries (left << 20 | right) << 24 | rank, open addressing */
    uint64_t *ptab;
    uint64_t pmask;
    int pshift;
    uint32_t *merge_id; /* rank -> merged id; NULL: the id is rank + merge_off */
    uint32_t merge_off;
    uint32_t n_merges;  /* entries of merge_id */
    uint32_t *bp;       /* [b1 << 8 | b2]: rank of merging two single-byte tokens */
    uint64_t *filter;   /* one bit per hash of each pair (most pairs do not merge): a
                         * clear bit answers "no merge" without touching ptab */
    int fshift;
    struct special *spec;
    size_t nspec;
    int from_cache; /* read back from the compiled-vocabulary cache (bpe_cache.h) */
    void *map;      /* when set, the tables lie in this mapping of a cache file */
    size_t map_len;
};

static inline uint64_t bpe_mix64(uint64_t h)
{
    h ^= h >> 32;
    h *= 0xd6e8feb86659fd93ull;
    h ^= h >> 32;
    return h;
}

static inline uint64_t bpe_hash_bytes(const u8 *p, size_t n)
{
    uint64_t h = 0x9E3779B97F4A7C15ull ^ ((uint64_t)n * 0xff51afd7ed558ccdull);
    while (n > 8) {
        uint64_t v;
        memcpy(&v, p, 8);
        h = (h ^ v) * 0xbf58476d1ce4e5b9ull;
        h ^= h >> 29;
        p += 8;
        n -= 8;
    }
    uint64_t v;
    if (n >= 4) {
        uint32_t a, c;
        memcpy(&a, p, 4);
        memcpy(&c, p + n - 4, 4);
        v = (uint64_t)a << 32 | c;
    } else if (n) {
        v = (uint64_t)p[0] | (uint64_t)p[n >> 1] << 8 | (uint64_t)p[n - 1] << 16;
    } else {
        v = 0;
    }
    h = (h ^ v) * 0x94d049bb133111ebull;
    return bpe_mix64(h);
}

/* Id of the regular token with these bytes (h: their bpe_hash_bytes), or -1. */
static inline int64_t bpe_vocab_find_h(const struct bpe *b, uint64_t h, const u8 *p, size_t n)
{
    uint32_t tag = (uint32_t)(h >> 32);
    for (uint64_t i = h & b->vmask;; i = (i + 1) & b->vmask) {
        const struct vslot *s = &b->vtab[i];
        if (!s->id1)
            return -1;
        if (s->tag == tag) {
            uint32_t id = s->id1 - 1;
            if (b->off[id + 1] - b->off[id] == n && memcmp(b->bytes + b->off[id], p, n) == 0)
                return id;
        }
    }
}

/* Id of the regular token with these bytes, or -1. */
static inline int64_t bpe_vocab_find(const struct bpe *b, const u8 *p, size_t n)
{
    return bpe_vocab_find_h(b, bpe_hash_bytes(p, n), p, n);
}

static inline uint64_t bpe_pair_key(uint32_t l, uint32_t r)
{
    return (uint64_t)l << BPE_ID_BITS | r;
}

/* A pair's two bits in the filter: both in one word (*word), so one load answers. */
static inline uint64_t bpe_filter_bits(const struct bpe *b, uint64_t key, uint64_t *word)
{
    uint64_t h = (key + 1) * 0xC2B2AE3D27D4EB4Full;
    *word = h >> (b->fshift + 6);
    return (1ull << ((h >> 20) & 63)) | (1ull << ((h >> 26) & 63));
}

/* Rank of merging tokens l and r, or RANK_NONE. */
static inline uint32_t bpe_pair_rank(const struct bpe *b, uint32_t l, uint32_t r)
{
    uint64_t key = bpe_pair_key(l, r);
    if (b->filter) {
        uint64_t w, m = bpe_filter_bits(b, key, &w);
        if ((b->filter[w] & m) != m)
            return RANK_NONE;
    }
    for (uint64_t i = (key * 0x9E3779B97F4A7C15ull) >> b->pshift;; i = (i + 1) & b->pmask) {
        uint64_t e = b->ptab[i];
        if ((e >> BPE_RANK_BITS) == key)
            return (uint32_t)(e & ((1u << BPE_RANK_BITS) - 1));
        if (e == PAIR_EMPTY)
            return RANK_NONE;
    }
}

static inline uint32_t bpe_merged_id(const struct bpe *b, uint32_t rank)
{
    return b->merge_id ? b->merge_id[rank] : rank + b->merge_off;
}

/* BPE of the bytes p[0..n) without the whole-token lookup and without the cache. *ids is
 * valid until the next call on e. */
size_t bpe_merge_bytes(struct bpe_enc *e, const u8 *p, size_t n, const uint32_t **ids);

#endif
