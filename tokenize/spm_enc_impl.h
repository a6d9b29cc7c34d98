/* Internals of sluice's SentencePiece encoder, shared by tokenize/spm_enc.c (loading, the
 * normalizer, BPE models) and tokenize/spm_unigram.c (unigram models): the model, its
 * tries and tables, the per-thread scratch with the word caches, and the output rule for
 * <unk>. Not part of the API (tokenize/spm_enc.h). */
#ifndef SL_TOKENIZE_SPM_ENC_IMPL_H
#define SL_TOKENIZE_SPM_ENC_IMPL_H

#include "core/alloc.h"
#include "tokenize/ids.h"
#include "tokenize/spm_enc.h"

#include <stdint.h>
#include <string.h>

enum { PT_NORMAL = 1, PT_UNKNOWN = 2, PT_CONTROL = 3, PT_USER = 4, PT_UNUSED = 5, PT_BYTE = 6 };
enum { MT_UNIGRAM = 1, MT_BPE = 2, MT_WORD = 3, MT_CHAR = 4 };

#define SPM_MAX_PIECES ((1u << 24) - 2) /* ids + 1 fit in 24 bits */
#define SPACE_SYM      "\xe2\x96\x81"

struct piece {
    uint32_t off, len;
    float score;
    uint8_t type;
};

/* A byte trie: node 0 is the root, whose children are also in a direct table. A node's
 * edges are contiguous, (child << 8) | label, sorted by label. */
struct tnode {
    int32_t value; /* piece id or -1 */
    float score;   /* the piece's score and type, copied here for the Viterbi search */
    uint32_t ebeg;
    uint16_t ecnt;
    uint8_t type;
};

struct trie {
    int32_t root[256];
    struct tnode *node;
    uint32_t *edge;
    int32_t *dense; /* 256 children (or -1) for each node with more than DENSE_MIN edges */
    uint32_t nnodes;
};
#define DENSE_MIN  12
#define DENSE_MARK 0xFFFF /* ecnt of a node whose children are in dense[ebeg..ebeg+256) */

/* Open addressing from piece bytes to id. */
struct ptab {
    uint32_t *slot; /* id + 1, 0 = empty */
    uint32_t mask;
};

struct spm_enc {
    int type;
    uint32_t n;
    struct piece *p;
    char *strs;
    struct ptab normal, reserved; /* SentencePiece's pieces_ and reserved_id_map_ */
    int32_t unk;
    int byte_fallback;
    uint32_t byte_id[256];
    float min_score, max_score;
    int add_dummy_prefix, remove_extra_ws, escape_ws, ws_suffix;
    uint32_t *da; /* precompiled charsmap: double array units */
    size_t da_n;
    char *norm_str; /* the replacement strings, NUL-terminated */
    size_t norm_n;
    int has_user;
    struct trie user;       /* user-defined symbols (longest match, never normalized) */
    struct trie pieces;     /* unigram: every piece of pieces_ */
    int split_ws;           /* no piece holds U+2581 past its start: words (a span from one
                             * U+2581 to the next) are encoded one by one, through a cache */
    uint64_t ascii_rule[2]; /* ASCII bytes that start a rule of the character map */
    uint64_t ascii_pass[2]; /* ASCII bytes that stay themselves when ASCII follows them */
    uint64_t serial;        /* tells the per-thread word caches apart */
};


static inline uint64_t hash_bytes(const char *s, size_t n)
{
    uint64_t h = 0x9E3779B97F4A7C15ull ^ (n * 0xff51afd7ed558ccdull);
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, s, 8);
        h = (h ^ w) * 0xbf58476d1ce4e5b9ull;
        h ^= h >> 31;
        s += 8;
        n -= 8;
    }
    if (n) {
        uint64_t w = 0;
        memcpy(&w, s, n);
        h = (h ^ w) * 0x94d049bb133111ebull;
        h ^= h >> 29;
    }
    return h ^ (h >> 32);
}

static inline int bytes_eq(const char *a, const char *b, size_t n)
{
    while (n >= 8) {
        uint64_t x, y;
        memcpy(&x, a, 8);
        memcpy(&y, b, 8);
        if (x != y)
            return 0;
        a += 8;
        b += 8;
        n -= 8;
    }
    while (n--)
        if (*a++ != *b++)
            return 0;
    return 1;
}

/* A slot holds (8-bit tag from the hash << 24) | (id + 1); 0 is empty. */
static inline int64_t ptab_find(const struct spm_enc *m, const struct ptab *t, const char *s,
                                size_t n)
{
    uint64_t h = hash_bytes(s, n);
    uint32_t tag = (uint32_t)(h >> 56) << 24;
    for (uint64_t i = h & t->mask;; i = (i + 1) & t->mask) {
        uint32_t v = t->slot[i];
        if (!v)
            return -1;
        if ((v & 0xFF000000u) != tag)
            continue;
        const struct piece *p = &m->p[(v & 0xFFFFFFu) - 1];
        if (p->len == n && bytes_eq(m->strs + p->off, s, n))
            return (v & 0xFFFFFFu) - 1;
    }
}

static inline int32_t trie_child(const struct trie *t, uint32_t node, uint8_t b)
{
    if (node == 0)
        return t->root[b];
    const struct tnode *nd = &t->node[node];
    if (nd->ecnt == DENSE_MARK)
        return t->dense[nd->ebeg + b];
    const uint32_t *e = t->edge + nd->ebeg;
    uint32_t n = nd->ecnt;
    if (n <= 8) {
        for (uint32_t i = 0; i < n; i++)
            if ((uint8_t)e[i] == b)
                return (int32_t)(e[i] >> 8);
        return -1;
    }
    uint32_t lo = 0, hi = n;
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        if ((uint8_t)e[mid] < b)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && (uint8_t)e[lo] == b ? (int32_t)(e[lo] >> 8) : -1;
}

struct sym {
    int32_t prev, next;
    uint32_t off, len;
    uint8_t freeze;
};

struct pair {
    float score;
    int32_t left, right;
    uint32_t size;
};

struct rev {
    int32_t id;
    uint32_t left_len;
};

/* The per-thread cache of BPE words: the ids of a word (a span from one U+2581 to the
 * next) of up to CACHE_KEY bytes that gave at most CACHE_IDS ids, direct-mapped. */
#define CACHE_SLOTS 65536
#define CACHE_KEY   22
#define CACHE_IDS   8
struct cache_entry {
    uint8_t len, nids;
    char key[CACHE_KEY];
    uint32_t ids[CACHE_IDS];
};

/* The per-thread cache of unigram words: the best path through a word of up to UCACHE_KEY
 * bytes with at most UCACHE_PIECES pieces, with what it takes to tell whether the same word
 * elsewhere in a sentence takes the same path (encode_unigram_words). Direct-mapped, 128
 * bytes an entry. */
#define UCACHE_SLOTS  32768
#define UCACHE_KEY    40
#define UCACHE_PIECES 8
struct ucache_entry {
    uint8_t len, npieces;
    uint8_t unk_mask;         /* piece i is the <unk> candidate of one character */
    uint8_t plen[UCACHE_PIECES];
    char key[UCACHE_KEY];
    float margin;             /* the smallest lead of a best candidate over the next one */
    float span;               /* the largest |score| reached inside the word, from its start */
    float base;               /* |the score at the word's start| when it was searched */
    int32_t id[UCACHE_PIECES];
    float score[UCACHE_PIECES];
};

struct scratch {
    struct cache_entry *cache;
    struct ucache_entry *ucache;
    uint64_t cache_serial;
    char *norm;
    size_t norm_n, norm_cap;
    float *score;
    int32_t *start, *id;
    float *pscore; /* the score of the piece that ends the best path to each position */
    float *lead;   /* how far the best candidate at each position is ahead of the next */
    uint8_t *unkc; /* the best path to the position ends with an unknown character */
    size_t best_cap;
    struct sym *sym;
    size_t sym_cap;
    struct pair *heap;
    size_t heap_n, heap_cap;
    struct rev *rev;
    size_t rev_n, rev_cap;
    uint32_t *stack;
    size_t stack_cap;
};


#define GROW(ptr, cap, need)                                                                       \
    do {                                                                                           \
        if ((need) > (cap)) {                                                                      \
            size_t c_ = (cap) ? (cap) : 64;                                                        \
            while (c_ < (need))                                                                    \
                c_ *= 2;                                                                           \
            (ptr) = sl_xrealloc((ptr), c_ * sizeof(*(ptr)));                                       \
            (cap) = c_;                                                                            \
        }                                                                                          \
    } while (0)

static inline size_t one_char_len(uint8_t c)
{
    return (size_t) "\1\1\1\1\1\1\1\1\1\1\1\1\2\2\3\4"[c >> 4];
}

struct emit {
    const struct spm_enc *m;
    struct tok_ids *out;
    int prev_unk;
};

/* PopulateSentencePieceText: byte fallback for <unk>, or one <unk> for a run of them. */
static inline int emit_piece(struct emit *e, int32_t id, const char *w, size_t wn)
{
    const struct spm_enc *m = e->m;
    if (id == m->unk) {
        if (m->byte_fallback) {
            int rc = tok_ids_reserve(e->out, wn);
            if (rc)
                return rc;
            for (size_t i = 0; i < wn; i++)
                e->out->v[e->out->n++] = m->byte_id[(uint8_t)w[i]];
            return 0;
        }
        if (e->prev_unk)
            return 0;
        e->prev_unk = 1;
        return tok_ids_push(e->out, (uint32_t)id);
    }
    e->prev_unk = 0;
    return tok_ids_push(e->out, (uint32_t)id);
}

/* The unigram search of the normalized text in sc->norm, emitted through e
 * (tokenize/spm_unigram.c). */
int spm_unigram_encode(const struct spm_enc *m, struct scratch *sc, struct emit *e);

#endif
