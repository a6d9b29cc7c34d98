/* Byte-level BPE encoding: pre-tokenize, look each piece up in a per-thread cache (a
 * direct-mapped first level for short pieces, then a hash table of every piece met so far
 * up to a memory cap), else take the token the piece is (tiktoken) or merge (linear scan
 * for short pieces, a heap for long ones); decoding. The loaders are in bpe_load.c. */
#include "tokenize/bpe.h"

#include "core/alloc.h"
#include "core/buf.h"
#include "core/err.h"
#include "tokenize/bpe_impl.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define SMALL_PIECE 48
#define CACHE_KEY   24
#define CACHE_IDS   9
/* The first level has 1 << CACHE_BITS_MIN slots (256 KiB) until it has looked up
 * CACHE_GROW pieces, then 1 << CACHE_BITS_MAX (4 MiB): a short input (a document, a
 * prompt) does not pay for zeroing the large table (~1 ms, 5% of a one-document run). */
#define CACHE_BITS_MIN 12
#define CACHE_BITS_MAX 16
#define CACHE_GROW     16384

/* The piece cache: pieces of up to 24 bytes whose encoding has up to 9 ids, keyed by
 * their bytes (zero padded into three words), direct mapped; an entry is one 64-byte
 * cache line. */
struct cache_ent {
    uint64_t k[3];
    uint8_t len, nids;
    uint16_t pad;
    uint32_t ids[CACHE_IDS];
};

/* The second level: an open-addressing table of the pieces (2..255 bytes) met so far
 * with their ids, both kept in an arena. Web text has ~100k distinct pieces in a few MB,
 * more than the first level holds, and many of them longer than 24 bytes (words of
 * non-Latin scripts). A piece enters it when it is met a second time (a bitmap of the
 * pieces' hashes tells, 128 KiB that stay in the CPU's cache), so that the many pieces met
 * once cost no insertion and no lookup. It grows to L2_SLOTS_MAX slots and L2_ARENA_MAX
 * bytes (24 MiB together) and starts over empty when full, so memory stays flat in the
 * input size. */
#define L2_MAX_PIECE 255
#define L2_SLOTS_MIN (1u << 12)
#define L2_SLOTS_MAX (1u << 19)
#define L2_ARENA_MAX ((size_t)16 << 20)
#define SEEN_BITS    (1u << 20)

struct l2_slot {
    uint64_t h;
    uint32_t off; /* in the arena: nids ids, then the piece's bytes */
    uint8_t len;  /* 0: empty */
    uint8_t pad;
    uint16_t nids;
};

struct l2 {
    struct l2_slot *slot;
    uint64_t *seen; /* SEEN_BITS bits: a piece with this hash was met */
    uint32_t mask, used;
    uint32_t *arena; /* in 4-byte units */
    size_t alen, acap;
};

/* The second level shared by the encoders of one stream's threads (bpe_shared_new): the
 * same table, filled by all of them, so that a piece merged by one thread is not merged
 * again by the others, and its memory is held once rather than once per thread. Its size
 * is fixed at the per-thread table's largest (L2_SLOTS_MAX slots, an arena of L2_ARENA_MAX
 * bytes written as it fills) and entries are only ever added, without locks:
 * a slot is taken by a compare-and-swap of its hash, its ids and bytes are written to the
 * arena (space taken by an atomic add), then its `meta` word is published; a reader that
 * finds the hash before the meta treats the piece as absent. When the slots are half used
 * or the arena is full, no more pieces enter (the first level still serves each thread). */
struct sh_slot {
    uint64_t h;    /* 0: empty */
    uint64_t meta; /* 0 until published: SH_READY | nids << 40 | len << 32 | arena offset */
};

#define SH_READY (1ull << 63)

#define SH_MASK (L2_SLOTS_MAX - 1)

struct bpe_shared {
    struct sh_slot *slot; /* L2_SLOTS_MAX */
    uint64_t *seen;       /* as struct l2's, set by all threads */
    uint32_t *arena;      /* L2_ARENA_MAX bytes */
    uint32_t used;
    size_t alen; /* in 4-byte units */
};

struct bpe_enc {
    const struct bpe *b;
    struct cache_ent *cache;
    int cbits;        /* the first level has 1 << cbits slots */
    uint64_t clooked; /* pieces looked up in it while small */
    struct l2 l2;
    struct bpe_shared *sh; /* NULL: the second level is l2, this thread's own */
    uint64_t slow;         /* pieces merged (or looked up whole): bpe_enc_slow_count */
    /* scratch for merging */
    uint32_t *ids, *next, *prev, *pr;
    uint64_t *heap;
    size_t cap;
};

static void enc_reserve(struct bpe_enc *e, size_t n)
{
    if (n <= e->cap)
        return;
    size_t cap = e->cap ? e->cap : 256;
    while (cap < n)
        cap *= 2;
    e->ids = sl_xrealloc(e->ids, sl_mul_size(cap, sizeof(*e->ids)));
    e->next = sl_xrealloc(e->next, sl_mul_size(cap, sizeof(*e->next)));
    e->prev = sl_xrealloc(e->prev, sl_mul_size(cap, sizeof(*e->prev)));
    e->pr = sl_xrealloc(e->pr, sl_mul_size(cap, sizeof(*e->pr)));
    e->heap = sl_xrealloc(e->heap, sl_mul_size(cap * 2, sizeof(*e->heap)));
    e->cap = cap;
}

/* Linear scan for the lowest rank (leftmost on ties): best for short pieces. */
static size_t merge_small(const struct bpe *b, const u8 *p, uint32_t *ids, uint32_t *pr, size_t n)
{
    for (size_t i = 0; i < n; i++)
        ids[i] = b->byte_id[p[i]];
    for (size_t i = 0; i + 1 < n; i++)
        pr[i] = b->bp[(uint32_t)p[i] << 8 | p[i + 1]];
    size_t m = n;
    while (m > 1) {
        size_t best = 0;
        uint32_t br = pr[0];
        for (size_t i = 1; i + 1 < m; i++)
            if (pr[i] < br) {
                br = pr[i];
                best = i;
            }
        if (br == RANK_NONE)
            break;
        ids[best] = bpe_merged_id(b, br);
        for (size_t i = best + 1; i + 1 < m; i++)
            ids[i] = ids[i + 1];
        for (size_t i = best + 1; i + 2 < m; i++)
            pr[i] = pr[i + 1];
        m--;
        if (best > 0)
            pr[best - 1] = bpe_pair_rank(b, ids[best - 1], ids[best]);
        if (best + 1 < m)
            pr[best] = bpe_pair_rank(b, ids[best], ids[best + 1]);
    }
    return m;
}

/* Heap entries are rank << 32 | position: the lowest rank first, leftmost on ties. */
static void heap_push(uint64_t *h, size_t *n, uint64_t x)
{
    size_t i = (*n)++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (h[p] <= x)
            break;
        h[i] = h[p];
        i = p;
    }
    h[i] = x;
}

static uint64_t heap_pop(uint64_t *h, size_t *n)
{
    uint64_t top = h[0], x = h[--*n];
    size_t i = 0, m = *n;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= m)
            break;
        if (c + 1 < m && h[c + 1] < h[c])
            c++;
        if (h[c] >= x)
            break;
        h[i] = h[c];
        i = c;
    }
    if (m)
        h[i] = x;
    return top;
}

#define NIL UINT32_MAX

/* Heap of candidate merges with lazy invalidation: O(n log n) for long pieces. */
static size_t merge_large(struct bpe_enc *e, const u8 *p, size_t n)
{
    const struct bpe *b = e->b;
    uint32_t *ids = e->ids, *next = e->next, *prev = e->prev, *pr = e->pr;
    uint64_t *h = e->heap;
    size_t hn = 0;
    for (size_t i = 0; i < n; i++) {
        ids[i] = b->byte_id[p[i]];
        next[i] = i + 1 < n ? (uint32_t)(i + 1) : NIL;
        prev[i] = i ? (uint32_t)(i - 1) : NIL;
        pr[i] = i + 1 < n ? b->bp[(uint32_t)p[i] << 8 | p[i + 1]] : RANK_NONE;
        if (pr[i] != RANK_NONE)
            heap_push(h, &hn, (uint64_t)pr[i] << 32 | i);
    }
    while (hn) {
        uint64_t t = heap_pop(h, &hn);
        uint32_t pos = (uint32_t)t, rank = (uint32_t)(t >> 32);
        if (pr[pos] != rank || next[pos] == NIL)
            continue; /* stale: the pair changed or was merged away */
        uint32_t nx = next[pos];
        ids[pos] = bpe_merged_id(b, rank);
        pr[nx] = RANK_NONE;
        next[pos] = next[nx];
        next[nx] = NIL;
        if (next[pos] != NIL)
            prev[next[pos]] = pos;
        pr[pos] = next[pos] != NIL ? bpe_pair_rank(b, ids[pos], ids[next[pos]]) : RANK_NONE;
        if (pr[pos] != RANK_NONE)
            heap_push(h, &hn, (uint64_t)pr[pos] << 32 | pos);
        uint32_t pp = prev[pos];
        if (pp != NIL) {
            pr[pp] = bpe_pair_rank(b, ids[pp], ids[pos]);
            if (pr[pp] != RANK_NONE)
                heap_push(h, &hn, (uint64_t)pr[pp] << 32 | pp);
        }
    }
    size_t m = 0;
    for (uint32_t i = 0; i != NIL; i = next[i])
        ids[m++] = ids[i];
    return m;
}

/* BPE of one piece: ids in e->ids[0..return). */
static size_t merge_piece(struct bpe_enc *e, const u8 *p, size_t n)
{
    enc_reserve(e, n);
    if (n <= SMALL_PIECE)
        return merge_small(e->b, p, e->ids, e->pr, n);
    return merge_large(e, p, n);
}

size_t bpe_merge_bytes(struct bpe_enc *e, const u8 *p, size_t n, const uint32_t **ids)
{
    size_t m = merge_piece(e, p, n);
    *ids = e->ids;
    return m;
}

static inline uint64_t low_bytes(uint64_t v, size_t n)
{
    return n >= 8 ? v : v & ((UINT64_C(1) << (8 * n)) - 1);
}

/* The piece's bytes zero padded into three words (n <= 24); `room` bytes are readable. */
static inline void piece_key(const u8 *p, size_t n, size_t room, uint64_t k[3])
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (room >= 24) {
        uint64_t a, c, d;
        memcpy(&a, p, 8);
        memcpy(&c, p + 8, 8);
        memcpy(&d, p + 16, 8);
        k[0] = low_bytes(a, n);
        k[1] = n > 8 ? low_bytes(c, n - 8) : 0;
        k[2] = n > 16 ? low_bytes(d, n - 16) : 0;
        return;
    }
#endif
    u8 tmp[24] = { 0 };
    memcpy(tmp, p, n);
    memcpy(k, tmp, 24);
}

static inline int emit(struct tok_ids *out, const uint32_t *ids, size_t m)
{
    if (out->cap - out->n < m) {
        int rc = tok_ids_reserve(out, m);
        if (rc)
            return rc;
    }
    memcpy(out->v + out->n, ids, m * sizeof(uint32_t));
    out->n += m;
    return 0;
}

/* A piece that is not in the cache: the token it is (tiktoken's rule), else BPE. */
static size_t encode_slow(struct bpe_enc *e, const u8 *p, size_t n, uint64_t h, uint32_t *one)
{
    const struct bpe *b = e->b;
    if (b->whole && n <= b->max_len) {
        /* h is bpe_hash_bytes of the piece (l2_hash), unless that was 0 */
        int64_t id = bpe_vocab_find_h(b, h != 1 ? h : bpe_hash_bytes(p, n), p, n);
        if (id >= 0) {
            *one = (uint32_t)id;
            return 0;
        }
    }
    return merge_piece(e, p, n);
}

static inline uint64_t piece_hash(const uint64_t k[3], size_t n)
{
    return bpe_mix64((k[0] * 0x9E3779B97F4A7C15ull) ^ (k[1] * 0xC2B2AE3D27D4EB4Full) ^
                     (k[2] * 0xFF51AFD7ED558CCDull) ^ n);
}

/* Empty slots, and the sightings forgotten when the table starts over (not when it is
 * first made: the pieces met until then must still enter it when met again). */
static void l2_reset(struct l2 *t, uint32_t slots)
{
    if (t->slot)
        memset(t->seen, 0, SEEN_BITS / 8);
    free(t->slot);
    t->slot = sl_xcalloc_table(slots, sizeof(*t->slot));
    t->mask = slots - 1;
    t->used = 0;
    t->alen = 0;
}

/* The ids of piece p (n bytes, hash h) if the table has it: *nids set, else NULL. */
static inline const uint32_t *l2_find(const struct l2 *t, uint64_t h, const u8 *p, size_t n,
                                      size_t *nids)
{
    if (!t->slot)
        return NULL;
    for (uint32_t i = (uint32_t)h & t->mask;; i = (i + 1) & t->mask) {
        const struct l2_slot *s = &t->slot[i];
        if (!s->len)
            return NULL;
        if (s->h == h && s->len == n) {
            const uint32_t *ids = t->arena + s->off;
            if (memcmp(ids + s->nids, p, n) == 0) {
                *nids = s->nids;
                return ids;
            }
        }
    }
}

/* Rebuild the slots at twice the size (the arena stays). */
static void l2_grow(struct l2 *t)
{
    uint32_t slots = (t->mask + 1) * 2;
    struct l2_slot *old = t->slot, *end = old + t->mask + 1;
    t->slot = sl_xcalloc_table(slots, sizeof(*t->slot));
    t->mask = slots - 1;
    for (struct l2_slot *s = old; s < end; s++) {
        if (!s->len)
            continue;
        uint32_t i = (uint32_t)s->h & t->mask;
        while (t->slot[i].len)
            i = (i + 1) & t->mask;
        t->slot[i] = *s;
    }
    free(old);
}

static void l2_add(struct l2 *t, uint64_t h, const u8 *p, size_t n, const uint32_t *ids,
                   size_t nids)
{
    size_t units = nids + (n + 3) / 4;
    if (n > L2_MAX_PIECE || nids > UINT16_MAX)
        return;
    if (!t->slot)
        l2_reset(t, L2_SLOTS_MIN);
    if (t->used + 1 > (t->mask + 1) / 2) {
        if (t->mask + 1 < L2_SLOTS_MAX)
            l2_grow(t);
        else
            l2_reset(t, t->mask + 1); /* full: start over */
    }
    if ((t->alen + units) * 4 > L2_ARENA_MAX)
        l2_reset(t, t->mask + 1);
    if (t->alen + units > t->acap) {
        size_t cap = t->acap ? t->acap : 4096;
        while (cap < t->alen + units)
            cap *= 2;
        t->arena = sl_xrealloc(t->arena, cap * 4);
        t->acap = cap;
    }
    uint32_t i = (uint32_t)h & t->mask;
    while (t->slot[i].len)
        i = (i + 1) & t->mask;
    uint32_t *a = t->arena + t->alen;
    memcpy(a, ids, nids * 4);
    memcpy(a + nids, p, n);
    t->slot[i] = (struct l2_slot){
        .h = h, .off = (uint32_t)t->alen, .len = (uint8_t)n, .nids = (uint16_t)nids
    };
    t->alen += units;
    t->used++;
}

/* The second level's hash of a piece: never 0, which stands for "not computed yet". */
static inline uint64_t l2_hash(const u8 *p, size_t n)
{
    uint64_t h = bpe_hash_bytes(p, n);
    return h ? h : 1;
}

/* l2_hash, with the piece's slot and first-sighting bit prefetched, and its slot in the
 * vocabulary when a piece that is a token is taken whole. */
static inline uint64_t l2_hash_prefetch(const struct bpe_enc *e, const u8 *p, size_t n)
{
    uint64_t h = l2_hash(p, n);
    if (e->b->whole)
        __builtin_prefetch(&e->b->vtab[h & e->b->vmask]);
    if (e->sh) {
        __builtin_prefetch(&e->sh->seen[((h >> 40) & (SEEN_BITS - 1)) >> 6]);
        __builtin_prefetch(&e->sh->slot[(uint32_t)h & SH_MASK]);
        return h;
    }
    const struct l2 *t = &e->l2;
    __builtin_prefetch(&t->seen[((h >> 40) & (SEEN_BITS - 1)) >> 6]);
    if (t->slot)
        __builtin_prefetch(&t->slot[(uint32_t)h & t->mask]);
    return h;
}

struct bpe_shared *bpe_shared_new(void)
{
    struct bpe_shared *s = sl_xcalloc(1, sizeof(*s));
    s->slot = sl_xcalloc_table(L2_SLOTS_MAX, sizeof(*s->slot));
    s->arena = sl_xmalloc_table(L2_ARENA_MAX);
    s->seen = sl_xcalloc(SEEN_BITS / 64, sizeof(uint64_t));
    return s;
}

void bpe_shared_free(struct bpe_shared *s)
{
    if (!s)
        return;
    free(s->slot);
    free(s->arena);
    free(s->seen);
    free(s);
}

/* The ids of piece p (n bytes, hash h) if the shared table holds it (published): *nids set,
 * else NULL. */
static const uint32_t *sh_find(const struct bpe_shared *s, uint64_t h, const u8 *p, size_t n,
                               size_t *nids)
{
    for (uint32_t i = (uint32_t)h & SH_MASK;; i = (i + 1) & SH_MASK) {
        uint64_t sh = __atomic_load_n(&s->slot[i].h, __ATOMIC_ACQUIRE);
        if (!sh)
            return NULL;
        if (sh != h)
            continue;
        uint64_t meta = __atomic_load_n(&s->slot[i].meta, __ATOMIC_ACQUIRE);
        size_t len = (size_t)(meta >> 32) & 0xFF, m = (size_t)(meta >> 40) & 0xFFFF;
        const uint32_t *ids = s->arena + (uint32_t)meta;
        if (!meta)
            return NULL; /* being entered by another thread */
        if (len == n && memcmp(ids + m, p, n) == 0) {
            *nids = m;
            return ids;
        }
    }
}

static void sh_add(struct bpe_shared *s, uint64_t h, const u8 *p, size_t n, const uint32_t *ids,
                   size_t nids)
{
    size_t units = nids + (n + 3) / 4;
    if (nids > UINT16_MAX || __atomic_load_n(&s->used, __ATOMIC_RELAXED) >= L2_SLOTS_MAX / 2)
        return;
    size_t off = __atomic_fetch_add(&s->alen, units, __ATOMIC_RELAXED);
    if ((off + units) * 4 > L2_ARENA_MAX)
        return; /* full */
    memcpy(s->arena + off, ids, nids * 4);
    memcpy(s->arena + off + nids, p, n);
    uint64_t meta = SH_READY | (uint64_t)nids << 40 | (uint64_t)n << 32 | off;
    for (uint32_t i = (uint32_t)h & SH_MASK;; i = (i + 1) & SH_MASK) {
        uint64_t cur = 0;
        if (__atomic_compare_exchange_n(&s->slot[i].h, &cur, h, 0, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE)) {
            __atomic_store_n(&s->slot[i].meta, meta, __ATOMIC_RELEASE);
            __atomic_fetch_add(&s->used, 1, __ATOMIC_RELAXED);
            return;
        }
        if (cur == h)
            return; /* entered (or being entered) by another thread */
    }
}

/* A piece not in the first level, whose hash is h (l2_hash_prefetch; unused for pieces
 * longer than L2_MAX_PIECE): the second level (this thread's own or the shared one), else
 * encode_slow, remembered when the piece was met before. Ids in *ids (e->ids, the table's
 * arena or `one`), their number returned. */
static size_t encode_miss(struct bpe_enc *e, const u8 *p, size_t n, uint64_t h, uint32_t *one,
                          const uint32_t **ids)
{
    int again = 0;
    if (n <= L2_MAX_PIECE) {
        uint64_t bit = (h >> 40) & (SEEN_BITS - 1), m1 = 1ull << (bit & 63);
        uint64_t *w = &(e->sh ? e->sh->seen : e->l2.seen)[bit >> 6];
        again = (__atomic_load_n(w, __ATOMIC_RELAXED) & m1) != 0;
        if (!again && e->sh)
            __atomic_fetch_or(w, m1, __ATOMIC_RELAXED); /* other threads set bits too */
        else if (!again)
            *w |= m1;
        size_t m;
        const uint32_t *hit = NULL;
        if (again)
            hit = e->sh ? sh_find(e->sh, h, p, n, &m) : l2_find(&e->l2, h, p, n, &m);
        if (hit) {
            *ids = hit;
            return m;
        }
    }
    size_t m = encode_slow(e, p, n, h, one);
    e->slow++;
    *ids = m ? e->ids : one;
    m = m ? m : 1;
    if (again && e->sh)
        sh_add(e->sh, h, p, n, *ids, m);
    else if (again)
        l2_add(&e->l2, h, p, n, *ids, m);
    return m;
}

static inline int cache_hit(const struct cache_ent *c, const uint64_t k[3], size_t n)
{
    return c->k[0] == k[0] && c->k[1] == k[1] && c->k[2] == k[2] && c->len == n;
}

/* One piece of 2..CACHE_KEY bytes with key k whose first-level slot is c; h: its hash for
 * the second level (0 when not computed yet). */
static inline int encode_cached(struct bpe_enc *e, const u8 *p, size_t n, const uint64_t k[3],
                                uint64_t h, struct cache_ent *c, struct tok_ids *out)
{
    if (cache_hit(c, k, n)) {
        if (out->cap - out->n >= CACHE_IDS) { /* a fixed-size copy, without a call */
            memcpy(out->v + out->n, c->ids, sizeof(c->ids));
            out->n += c->nids;
            return 0;
        }
        return emit(out, c->ids, c->nids);
    }
    uint32_t one = 0;
    const uint32_t *ids;
    size_t m = encode_miss(e, p, n, h ? h : l2_hash(p, n), &one, &ids);
    if (m <= CACHE_IDS) {
        memcpy(c->k, k, 3 * sizeof(uint64_t));
        c->len = (uint8_t)n;
        c->nids = (uint8_t)m;
        memcpy(c->ids, ids, m * sizeof(uint32_t));
    }
    return emit(out, ids, m);
}

/* Move the first level to its large table, its entries with it. */
static void cache_grow(struct bpe_enc *e)
{
    struct cache_ent *old = e->cache, *end = old + ((size_t)1 << e->cbits);
    e->cache = sl_xcalloc_table((size_t)1 << CACHE_BITS_MAX, sizeof(*e->cache));
    for (const struct cache_ent *c = old; c < end; c++)
        if (c->len)
            e->cache[piece_hash(c->k, c->len) >> (64 - CACHE_BITS_MAX)] = *c;
    free(old);
    e->cbits = CACHE_BITS_MAX;
}

#define BATCH 64

/* Pieces are handled in batches, so that the memory latencies of their lookups overlap:
 * every piece's first-level slot is found and prefetched, then the second-level slot of
 * every piece that the first level does not hold, then the pieces are encoded in order
 * (the first level is checked again then: a piece may have entered it earlier in the
 * batch). */
int bpe_encode(struct bpe_enc *e, const char *text, size_t n, struct tok_ids *out)
{
    const struct bpe *b = e->b;
    const u8 *p = (const u8 *)text, *end = p + n;
    enum pretok_kind kind = b->pretok;
    uint32_t lens[BATCH];
    uint64_t key[BATCH][3], hash[BATCH];
    struct cache_ent *slot[BATCH];
    if (n > UINT32_MAX)
        return sl_err_set(SL_ERR_TOOBIG, "cannot encode a text of %zu bytes (4 GiB at most)", n);
    while (p < end) {
        size_t np = pretok_split(kind, p, end, lens, BATCH);
        const u8 *q = p;
        if (e->cbits < CACHE_BITS_MAX && (e->clooked += np) > CACHE_GROW)
            cache_grow(e);
        int shift = 64 - e->cbits;
        for (size_t i = 0; i < np; i++) {
            size_t len = lens[i];
            if (len >= 2 && len <= CACHE_KEY) {
                piece_key(q, len, (size_t)(end - q), key[i]);
                slot[i] = &e->cache[piece_hash(key[i], len) >> shift];
                __builtin_prefetch(slot[i]);
            }
            q += len;
        }
        q = p;
        for (size_t i = 0; i < np; i++) {
            size_t len = lens[i];
            hash[i] = 0;
            if (len > L2_MAX_PIECE)
                hash[i] = 1; /* not used */
            else if (len > CACHE_KEY || (len >= 2 && !cache_hit(slot[i], key[i], len)))
                hash[i] = l2_hash_prefetch(e, q, len);
            q += len;
        }
        for (size_t i = 0; i < np; i++) {
            size_t len = lens[i];
            int rc;
            if (len == 1) {
                rc = tok_ids_push(out, b->byte_id[p[0]]);
            } else if (len <= CACHE_KEY) {
                rc = encode_cached(e, p, len, key[i], hash[i], slot[i], out);
            } else {
                uint32_t one = 0;
                const uint32_t *ids;
                size_t m = encode_miss(e, p, len, hash[i], &one, &ids);
                rc = emit(out, ids, m);
            }
            if (rc)
                return rc;
            p += len;
        }
    }
    return 0;
}

struct bpe_enc *bpe_enc_new_shared(const struct bpe *b, struct bpe_shared *sh)
{
    struct bpe_enc *e = sl_xcalloc(1, sizeof(*e));
    e->b = b;
    e->sh = sh;
    e->cbits = CACHE_BITS_MIN;
    e->cache = sl_xcalloc_table((size_t)1 << e->cbits, sizeof(*e->cache));
    if (!sh)
        e->l2.seen = sl_xcalloc(SEEN_BITS / 64, sizeof(uint64_t));
    return e;
}

struct bpe_enc *bpe_enc_new(const struct bpe *b)
{
    return bpe_enc_new_shared(b, NULL);
}

uint64_t bpe_enc_slow_count(const struct bpe_enc *e)
{
    return e->slow;
}

void bpe_enc_free(struct bpe_enc *e)
{
    if (!e)
        return;
    free(e->cache);
    free(e->l2.slot);
    free(e->l2.seen);
    free(e->l2.arena);
    free(e->ids);
    free(e->next);
    free(e->prev);
    free(e->pr);
    free(e->heap);
    free(e);
}

int bpe_decode(const struct bpe *b, const uint32_t *ids, size_t n, struct sl_buf *out)
{
    for (size_t i = 0; i < n; i++) {
        uint32_t id = ids[i];
        if (id >= b->n_vocab || !(b->flags[id] & FL_PRESENT))
            return sl_err_set(SL_ERR_FORMAT, "token id %u is not in the vocabulary (%u ids)", id,
                              b->n_vocab);
        int rc = sl_buf_append(out, b->bytes + b->off[id], b->off[id + 1] - b->off[id]);
        if (rc)
            return rc;
    }
    return 0;
}

/* ---- accessors -------------------------------------------------------------------- */

uint32_t bpe_vocab_size(const struct bpe *b)
{
    return b->n_vocab;
}

enum pretok_kind bpe_pretok(const struct bpe *b)
{
    return b->pretok;
}

int64_t bpe_special_id(const struct bpe *b, const char *name)
{
    for (size_t i = 0; i < b->nspec; i++)
        if (!strcmp(b->spec[i].name, name))
            return b->spec[i].id;
    return -1;
}

int64_t bpe_token_id(const struct bpe *b, const void *bytes, size_t n)
{
    return n ? bpe_vocab_find(b, bytes, n) : -1;
}

const unsigned char *bpe_token_bytes(const struct bpe *b, uint32_t id, size_t *len)
{
    if (id >= b->n_vocab || !(b->flags[id] & FL_PRESENT))
        return NULL;
    *len = b->off[id + 1] - b->off[id];
    return b->bytes + b->off[id];
}

void bpe_free(struct bpe *b)
{
    if (!b)
        return;
    if (b->map) {
        munmap(b->map, b->map_len);
    } else {
        free(b->off);
        free(b->bytes);
        free(b->flags);
        free(b->vtab);
        free(b->ptab);
        free(b->merge_id);
        free(b->bp);
        free(b->filter);
    }
    for (size_t i = 0; i < b->nspec; i++)
        free(b->spec[i].name);
    free(b->spec);
    free(b);
}
