/* sluice's own SentencePiece encoder (spm_enc.h): a protobuf reader for ModelProto, the
 * normalizer (darts-clone double array of the precompiled character map), a byte trie of
 * the pieces for the unigram Viterbi search, and the BPE merge with a heap, each written
 * to give SentencePiece 0.1.97's ids exactly (docs/tokenizers.md says what was checked). */
#include "tokenize/spm_enc.h"

#include "core/alloc.h"
#include "core/err.h"

#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
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

/* ---- protobuf ---------------------------------------------------------------------- */

struct pb {
    const uint8_t *p, *e, *base;
};

static int pb_varint(struct pb *r, uint64_t *v)
{
    *v = 0;
    for (int shift = 0; shift < 64 && r->p < r->e; shift += 7) {
        uint8_t c = *r->p++;
        *v |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80))
            return 0;
    }
    return -1;
}

/* One field: 1, 0 at the end of the message, -1 when malformed. For wire type 2, *v is the
 * length and *pl the payload; for 5 and 1, *pl points at the bytes. */
static int pb_next(struct pb *r, uint32_t *field, int *wt, uint64_t *v, const uint8_t **pl)
{
    if (r->p >= r->e)
        return 0;
    uint64_t key;
    if (pb_varint(r, &key) || (key >> 3) == 0 || (key >> 3) > UINT32_MAX)
        return -1;
    *field = (uint32_t)(key >> 3);
    *wt = (int)(key & 7);
    *pl = r->p;
    switch (*wt) {
    case 0:
        return pb_varint(r, v) ? -1 : 1;
    case 1:
    case 5:
        *v = *wt == 1 ? 8 : 4;
        if (*v > (uint64_t)(r->e - r->p))
            return -1;
        r->p += *v;
        return 1;
    case 2:
        if (pb_varint(r, v) || *v > (uint64_t)(r->e - r->p))
            return -1;
        *pl = r->p;
        r->p += *v;
        return 1;
    default:
        return -1; /* groups are not used by ModelProto */
    }
}

/* ---- hashing and the tables -------------------------------------------------------- */

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

static void ptab_init(struct ptab *t, uint32_t n)
{
    uint32_t cap = 16;
    while (cap < 2 * n + 16)
        cap <<= 1;
    t->slot = sl_xcalloc(cap, sizeof(*t->slot));
    t->mask = cap - 1;
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

/* 0, or -1 when the piece is there already */
static int ptab_add(struct spm_enc *m, struct ptab *t, uint32_t id)
{
    const struct piece *p = &m->p[id];
    if (ptab_find(m, t, m->strs + p->off, p->len) >= 0)
        return -1;
    uint64_t h = hash_bytes(m->strs + p->off, p->len), i = h & t->mask;
    while (t->slot[i])
        i = (i + 1) & t->mask;
    t->slot[i] = ((uint32_t)(h >> 56) << 24) | (id + 1);
    return 0;
}

/* SentencePiece's PieceToId: reserved pieces first, then the others, else <unk>. */
static int32_t piece_to_id(const struct spm_enc *m, const char *s, size_t n)
{
    int64_t id = ptab_find(m, &m->reserved, s, n);
    if (id < 0)
        id = ptab_find(m, &m->normal, s, n);
    return id < 0 ? m->unk : (int32_t)id;
}

struct tkey {
    const char *s;
    uint32_t len;
    int32_t value;
    float score;
    uint8_t type;
};

static int tkey_cmp(const void *a, const void *b)
{
    const struct tkey *x = a, *y = b;
    uint32_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->s, y->s, n);
    return c ? c : (x->len > y->len) - (x->len < y->len);
}

/* Build from distinct keys, breadth first (no recursion: keys may be long). */
static void trie_build(struct trie *t, struct tkey *k, size_t nk)
{
    qsort(k, nk, sizeof(*k), tkey_cmp);
    size_t total = 1;
    for (size_t i = 0; i < nk; i++)
        total += k[i].len;
    t->node = sl_xmalloc(total * sizeof(*t->node));
    t->edge = sl_xmalloc(total * sizeof(*t->edge));
    struct item {
        uint32_t node, lo, hi, depth;
    } *q = sl_xmalloc(total * sizeof(*q));
    size_t qh = 0, qt = 0, nedges = 0;
    t->nnodes = 1;
    q[qt++] = (struct item){ 0, 0, (uint32_t)nk, 0 };
    while (qh < qt) {
        struct item it = q[qh++];
        uint32_t i = it.lo;
        struct tnode *nd = &t->node[it.node];
        nd->value = -1;
        nd->score = 0;
        nd->type = 0;
        if (i < it.hi && k[i].len == it.depth) {
            nd->value = k[i].value;
            nd->score = k[i].score;
            nd->type = k[i].type;
            i++;
        }
        nd->ebeg = (uint32_t)nedges;
        while (i < it.hi) {
            uint8_t b = (uint8_t)k[i].s[it.depth];
            uint32_t j = i;
            while (j < it.hi && (uint8_t)k[j].s[it.depth] == b)
                j++;
            uint32_t child = t->nnodes++;
            t->edge[nedges++] = (child << 8) | b;
            q[qt++] = (struct item){ child, i, j, it.depth + 1 };
            i = j;
        }
        t->node[it.node].ecnt = (uint32_t)nedges - t->node[it.node].ebeg;
    }
    free(q);
    for (int b = 0; b < 256; b++)
        t->root[b] = -1;
    for (uint32_t e = 0; e < t->node[0].ecnt; e++)
        t->root[t->edge[e] & 0xFF] = (int32_t)(t->edge[e] >> 8);
    /* nodes with many children (the letters after U+2581, say) get a direct table */
    size_t ndense = 0;
    for (uint32_t i = 1; i < t->nnodes; i++)
        ndense += t->node[i].ecnt > DENSE_MIN;
    t->dense = sl_xmalloc((ndense ? ndense : 1) * 256 * sizeof(*t->dense));
    size_t d = 0;
    for (uint32_t i = 1; i < t->nnodes; i++) {
        struct tnode *nd = &t->node[i];
        if (nd->ecnt <= DENSE_MIN)
            continue;
        int32_t *row = t->dense + d * 256;
        for (int b = 0; b < 256; b++)
            row[b] = -1;
        for (uint32_t e = nd->ebeg; e < nd->ebeg + nd->ecnt; e++)
            row[t->edge[e] & 0xFF] = (int32_t)(t->edge[e] >> 8);
        nd->ebeg = (uint32_t)(d * 256);
        nd->ecnt = DENSE_MARK;
        d++;
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

/* Length of the longest key that is a prefix of s, 0 when none. */
static size_t trie_longest(const struct trie *t, const uint8_t *s, size_t n)
{
    size_t best = 0;
    uint32_t node = 0;
    for (size_t i = 0; i < n; i++) {
        int32_t c = trie_child(t, node, s[i]);
        if (c < 0)
            break;
        node = (uint32_t)c;
        if (t->node[node].value >= 0)
            best = i + 1;
    }
    return best;
}

static void trie_release(struct trie *t)
{
    free(t->node);
    free(t->edge);
    free(t->dense);
}

/* ---- loading ----------------------------------------------------------------------- */

static int bad(const char *name, const struct pb *r, const char *what)
{
    return sl_err_set(SL_ERR_FORMAT,
                      "cannot load SentencePiece model '%s': %s at byte %zu\n"
                      "hint: pass the .model file written by spm_train or 'sluice tokenizer train'",
                      name, what, (size_t)(r->p - r->base));
}

static int parse_trainer(struct spm_enc *m, struct pb r, const char *name)
{
    uint32_t f;
    int wt, k;
    uint64_t v;
    const uint8_t *pl;
    while ((k = pb_next(&r, &f, &wt, &v, &pl)) > 0) {
        if (f != 3 && f != 24 && f != 35)
            continue;
        if (wt != 0)
            return bad(name, &r, "trainer_spec field of the wrong type");
        if (f == 3) {
            if (v >= 1 && v <= 4)
                m->type = (int)v;
        } else if (f == 24) {
            m->ws_suffix = v != 0;
        } else {
            m->byte_fallback = v != 0;
        }
    }
    return k < 0 ? bad(name, &r, "malformed trainer_spec") : 0;
}

static int parse_normalizer(struct spm_enc *m, struct pb r, const char *name, const uint8_t **map,
                            size_t *map_n)
{
    uint32_t f;
    int wt, k;
    uint64_t v;
    const uint8_t *pl;
    while ((k = pb_next(&r, &f, &wt, &v, &pl)) > 0) {
        if (f == 2) {
            if (wt != 2)
                return bad(name, &r, "precompiled_charsmap of the wrong type");
            *map = pl;
            *map_n = (size_t)v;
        } else if (f >= 3 && f <= 5) {
            if (wt != 0)
                return bad(name, &r, "normalizer_spec field of the wrong type");
            int *dst = f == 3 ? &m->add_dummy_prefix : f == 4 ? &m->remove_extra_ws : &m->escape_ws;
            *dst = v != 0;
        }
    }
    return k < 0 ? bad(name, &r, "malformed normalizer_spec") : 0;
}

/* The byte of a "<0xXX>" piece (upper-case hex, as SentencePiece writes them), or -1. */
static int piece_byte(const char *s, size_t n)
{
    static const char hex[] = "0123456789ABCDEF";
    if (n != 6 || memcmp(s, "<0x", 3) || s[5] != '>')
        return -1;
    const char *a = memchr(hex, s[3], 16), *b = memchr(hex, s[4], 16);
    if (!a || !b || !s[3] || !s[4])
        return -1;
    return (int)((a - hex) * 16 + (b - hex));
}

/* Growing arrays of the pieces and their bytes while the model is read. */
struct piece_buf {
    size_t cap, str_len, str_cap;
};

/* One SentencePiece (ModelProto field 1) into m->p[m->n]; r is the model, after it. */
static int parse_piece(struct spm_enc *m, const struct pb *r, const uint8_t *pl, uint64_t v,
                       const char *name, struct piece_buf *b)
{
    if (m->n == SPM_MAX_PIECES)
        return bad(name, r, "too many pieces");
    if (m->n == b->cap) {
        b->cap = b->cap ? 2 * b->cap : 1024;
        m->p = sl_xrealloc(m->p, b->cap * sizeof(*m->p));
    }
    struct piece *p = &m->p[m->n];
    *p = (struct piece){ 0, 0, 0.0f, PT_NORMAL };
    const uint8_t *s = NULL;
    size_t slen = 0;
    struct pb sub = { pl, pl + v, r->base };
    uint32_t f2;
    int wt2, k2;
    uint64_t v2;
    const uint8_t *pl2;
    while ((k2 = pb_next(&sub, &f2, &wt2, &v2, &pl2)) > 0) {
        if (f2 == 1 && wt2 == 2) {
            s = pl2;
            slen = (size_t)v2;
        } else if (f2 == 2 && wt2 == 5) {
            memcpy(&p->score, pl2, 4);
        } else if (f2 == 3 && wt2 == 0) {
            if (v2 >= 1 && v2 <= 6)
                p->type = (uint8_t)v2;
        } else if (f2 <= 3) {
            return bad(name, &sub, "piece field of the wrong type");
        }
    }
    if (k2 < 0)
        return bad(name, &sub, "malformed piece");
    if (!slen)
        return bad(name, r, "empty piece");
    if (b->str_len + slen + 1 > b->str_cap) {
        b->str_cap = (b->str_len + slen + 1) * 2;
        m->strs = sl_xrealloc(m->strs, b->str_cap);
    }
    memcpy(m->strs + b->str_len, s, slen);
    m->strs[b->str_len + slen] = 0;
    p->off = (uint32_t)b->str_len;
    p->len = (uint32_t)slen;
    b->str_len += slen + 1;
    if (b->str_len >= (1u << 24)) /* trie nodes are 24-bit */
        return bad(name, r, "pieces too large");
    m->n++;
    return 0;
}

/* The ModelProto: pieces, trainer_spec, normalizer_spec (its character map is returned in
 * map, map_n: it points into data). */
static int parse_model(struct spm_enc *m, const void *data, size_t n, const char *name,
                       const uint8_t **map, size_t *map_n)
{
    struct piece_buf b = { 0, 0, 0 };
    struct pb r = { data, (const uint8_t *)data + n, data };
    uint32_t f;
    int wt, k, rc = 0;
    uint64_t v;
    const uint8_t *pl;
    while (!rc && (k = pb_next(&r, &f, &wt, &v, &pl)) > 0) {
        if (f == 1 && wt == 2)
            rc = parse_piece(m, &r, pl, v, name, &b);
        else if (f == 2 && wt == 2)
            rc = parse_trainer(m, (struct pb){ pl, pl + v, r.base }, name);
        else if (f == 3 && wt == 2)
            rc = parse_normalizer(m, (struct pb){ pl, pl + v, r.base }, name, map, map_n);
        else if (f <= 3)
            rc = bad(name, &r, "field of the wrong type");
    }
    if (rc)
        return rc;
    if (k < 0)
        return bad(name, &r, "malformed protobuf");
    if (!m->n)
        return bad(name, &r, "no pieces");
    if (m->type == MT_WORD || m->type == MT_CHAR)
        return sl_err_set(SL_ERR_UNSUPPORTED,
                          "SentencePiece model '%s': %s models are encoded by the library", name,
                          m->type == MT_WORD ? "word" : "char");
    return 0;
}

/* byte_fallback: the ids of the 256 byte pieces, each of which must be there. */
static int byte_pieces(struct spm_enc *m, const char *name, const int *byte_seen)
{
    static const char hex[] = "0123456789ABCDEF";
    for (int b = 0; b < 256; b++) {
        char s[8];
        memcpy(s, "<0x", 3);
        s[3] = hex[b >> 4];
        s[4] = hex[b & 15];
        s[5] = '>';
        if (!byte_seen[b])
            return sl_err_set(SL_ERR_FORMAT,
                              "cannot load SentencePiece model '%s': byte piece '%.6s' missing "
                              "although byte_fallback is on",
                              name, s);
        m->byte_id[b] = (uint32_t)piece_to_id(m, s, 6);
    }
    return 0;
}

/* The pieces, as InitializePieces checks them: the lookup tables, the score range, the
 * unknown piece and the byte pieces; keys gets the pieces the tries hold (*nkeys), of which
 * *nuser are user-defined. */
static int check_pieces(struct spm_enc *m, const char *name, struct tkey *keys, size_t *nkeys,
                        size_t *nuser)
{
    ptab_init(&m->normal, m->n);
    ptab_init(&m->reserved, m->n);
    int byte_seen[256] = { 0 };
    m->min_score = FLT_MAX;
    m->max_score = FLT_MIN;
    for (uint32_t i = 0; i < m->n; i++) {
        struct piece *p = &m->p[i];
        int normal = p->type == PT_NORMAL || p->type == PT_USER || p->type == PT_UNUSED;
        if (ptab_add(m, normal ? &m->normal : &m->reserved, i))
            return sl_err_set(SL_ERR_FORMAT,
                              "cannot load SentencePiece model '%s': piece %u '%.*s' is defined "
                              "twice",
                              name, i, (int)(p->len > 64 ? 64 : p->len), m->strs + p->off);
        if (normal)
            keys[(*nkeys)++] =
                (struct tkey){ m->strs + p->off, p->len, (int32_t)i, p->score, p->type };
        if (p->type == PT_USER)
            (*nuser)++;
        if (p->type == PT_NORMAL) {
            m->min_score = p->score < m->min_score ? p->score : m->min_score;
            m->max_score = p->score > m->max_score ? p->score : m->max_score;
        }
        if (p->type == PT_UNKNOWN) {
            if (m->unk >= 0)
                return sl_err_set(
                    SL_ERR_FORMAT,
                    "cannot load SentencePiece model '%s': two unknown pieces (%d and %u)", name,
                    m->unk, i);
            m->unk = (int32_t)i;
        }
        if (p->type == PT_BYTE) {
            int b = piece_byte(m->strs + p->off, p->len);
            if (!m->byte_fallback || b < 0)
                return sl_err_set(SL_ERR_FORMAT,
                                  "cannot load SentencePiece model '%s': byte piece %u '%.*s' %s",
                                  name, i, (int)(p->len > 64 ? 64 : p->len), m->strs + p->off,
                                  b < 0 ? "is invalid" : "although byte_fallback is off");
            byte_seen[b] = 1;
        }
    }
    if (m->unk < 0)
        return sl_err_set(SL_ERR_FORMAT, "cannot load SentencePiece model '%s': no unknown piece",
                          name);
    return m->byte_fallback ? byte_pieces(m, name, byte_seen) : 0;
}

/* The tries of the pieces: the user-defined symbols (SentencePiece's PrefixMatcher) and,
 * for unigram models, every piece; whether words can be encoded one by one. */
static void build_matchers(struct spm_enc *m, struct tkey *keys, size_t nkeys, size_t nuser)
{
    if (nuser) {
        struct tkey *uk = sl_xmalloc(nuser * sizeof(*uk));
        size_t j = 0;
        for (size_t i = 0; i < nkeys; i++)
            if (m->p[keys[i].value].type == PT_USER)
                uk[j++] = keys[i];
        trie_build(&m->user, uk, j);
        free(uk);
        m->has_user = 1;
    }
    if (m->type == MT_UNIGRAM)
        trie_build(&m->pieces, keys, nkeys);
    m->split_ws = m->escape_ws && !m->ws_suffix && !nuser;
    for (size_t i = 0; i < nkeys && m->split_ws; i++) {
        const struct piece *p = &m->p[keys[i].value];
        const char *s = m->strs + p->off;
        for (uint32_t o = 1; o + 3 <= p->len; o++)
            if (!memcmp(s + o, SPACE_SYM, 3)) {
                m->split_ws = 0;
                break;
            }
    }
}

/* The precompiled character map: uint32 trie size, the double array, the strings. */
static int load_charsmap(struct spm_enc *m, const uint8_t *map, size_t map_n, const char *name)
{
    uint32_t tsize;
    if (map_n <= 4 || (memcpy(&tsize, map, 4), tsize >= map_n) || tsize > map_n - 4)
        return sl_err_set(SL_ERR_FORMAT,
                          "cannot load SentencePiece model '%s': broken precompiled_charsmap",
                          name);
    m->da_n = tsize / 4;
    m->da = sl_xmalloc(m->da_n ? m->da_n * 4 : 4);
    memcpy(m->da, map + 4, m->da_n * 4);
    m->norm_n = map_n - 4 - tsize;
    m->norm_str = sl_xmalloc(m->norm_n + 1);
    memcpy(m->norm_str, map + 4 + tsize, m->norm_n);
    m->norm_str[m->norm_n] = 0;
    if (!m->da_n) {
        free(m->da);
        m->da = NULL;
        return 0;
    }
    size_t root = (m->da[0] >> 10) << ((m->da[0] & (1u << 9)) >> 6);
    for (unsigned c = 0; c < 128; c++) {
        size_t pos = root ^ c;
        if (pos >= m->da_n || (m->da[pos] & ((1u << 31) | 0xFF)) == c)
            m->ascii_rule[c >> 6] |= 1ull << (c & 63);
        /* a rule that starts with c and needs a character that is not ASCII next (a letter
         * and a combining mark) cannot match c followed by ASCII */
        int pass = 1;
        if (pos < m->da_n && (m->da[pos] & ((1u << 31) | 0xFF)) == c) {
            uint32_t u = m->da[pos];
            size_t next = pos ^ ((u >> 10) << ((u & (1u << 9)) >> 6));
            if ((u >> 8) & 1)
                pass = 0; /* c alone is a rule */
            for (unsigned d = 0; d < 128 && pass; d++) {
                size_t p2 = next ^ d;
                if (p2 < m->da_n && (m->da[p2] & ((1u << 31) | 0xFF)) == d)
                    pass = 0;
            }
        }
        if (pass)
            m->ascii_pass[c >> 6] |= 1ull << (c & 63);
    }
    return 0;
}

int spm_enc_load(struct spm_enc **out, const void *data, size_t n, const char *name)
{
    *out = NULL;
    struct spm_enc *m = sl_xcalloc(1, sizeof(*m));
    m->type = MT_UNIGRAM;
    m->add_dummy_prefix = m->remove_extra_ws = m->escape_ws = 1;
    m->unk = -1;
    const uint8_t *map = NULL;
    size_t map_n = 0, nkeys = 0, nuser = 0;
    struct tkey *keys = NULL;
    int rc = parse_model(m, data, n, name, &map, &map_n);
    if (rc)
        goto out;
    keys = sl_xmalloc(m->n * sizeof(*keys));
    rc = check_pieces(m, name, keys, &nkeys, &nuser);
    if (rc)
        goto out;
    build_matchers(m, keys, nkeys, nuser);
    if (map && map_n)
        rc = load_charsmap(m, map, map_n, name);
out:
    free(keys);
    if (rc) {
        spm_enc_free(m);
        return rc;
    }
    static _Atomic uint64_t serial;
    m->serial = ++serial;
    *out = m;
    return 0;
}

void spm_enc_free(struct spm_enc *m)
{
    if (!m)
        return;
    free(m->p);
    free(m->strs);
    free(m->normal.slot);
    free(m->reserved.slot);
    free(m->da);
    free(m->norm_str);
    trie_release(&m->user);
    trie_release(&m->pieces);
    free(m);
}

/* ---- per-thread scratch ------------------------------------------------------------ */

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

static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;

static void scratch_free(void *p)
{
    struct scratch *s = p;
    if (!s)
        return;
    free(s->cache);
    free(s->ucache);
    free(s->norm);
    free(s->score);
    free(s->start);
    free(s->id);
    free(s->pscore);
    free(s->lead);
    free(s->unkc);
    free(s->sym);
    free(s->heap);
    free(s->rev);
    free(s->stack);
    free(s);
}

static void scratch_key_init(void)
{
    pthread_key_create(&scratch_key, scratch_free);
}

static struct scratch *scratch_get(void)
{
    pthread_once(&scratch_once, scratch_key_init);
    struct scratch *s = pthread_getspecific(scratch_key);
    if (!s) {
        s = sl_xcalloc(1, sizeof(*s));
        pthread_setspecific(scratch_key, s);
    }
    return s;
}

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

static inline void norm_put(struct scratch *s, const char *p, size_t n)
{
    GROW(s->norm, s->norm_cap, s->norm_n + n + 1);
    memcpy(s->norm + s->norm_n, p, n);
    s->norm_n += n;
}

/* ---- normalizer -------------------------------------------------------------------- */

/* SentencePiece's DecodeUTF8 validity (IsValidDecodeUTF8): the length of the character at
 * s, or 0 when it is not valid UTF-8. */
static inline size_t utf8_len(const uint8_t *s, size_t n)
{
    uint8_t c = s[0];
    if (c < 0x80)
        return 1;
    if (n >= 2 && (c & 0xE0) == 0xC0) {
        uint32_t cp = ((uint32_t)(c & 0x1F) << 6) | (s[1] & 0x3F);
        return (s[1] & 0xC0) == 0x80 && cp >= 0x80 ? 2 : 0;
    }
    if (n >= 3 && (c & 0xF0) == 0xE0) {
        uint32_t cp = ((uint32_t)(c & 0x0F) << 12) | ((uint32_t)(s[1] & 0x3F) << 6) | (s[2] & 0x3F);
        return (s[1] & 0xC0) == 0x80 && (s[2] & 0xC0) == 0x80 && cp >= 0x800 &&
                       (cp < 0xD800 || cp >= 0xE000)
                   ? 3
                   : 0;
    }
    if (n >= 4 && (c & 0xF8) == 0xF0) {
        uint32_t cp = ((uint32_t)(c & 0x07) << 18) | ((uint32_t)(s[1] & 0x3F) << 12) |
                      ((uint32_t)(s[2] & 0x3F) << 6) | (s[3] & 0x3F);
        return (s[1] & 0xC0) == 0x80 && (s[2] & 0xC0) == 0x80 && (s[3] & 0xC0) == 0x80 &&
                       cp >= 0x10000 && cp <= 0x10FFFF
                   ? 4
                   : 0;
    }
    return 0;
}

static inline size_t one_char_len(uint8_t c)
{
    return (size_t) "\1\1\1\1\1\1\1\1\1\1\1\1\2\2\3\4"[c >> 4];
}

/* NormalizePrefix: the normalized text of the longest rule at s (or the character itself),
 * in *out and *out_n; returns the bytes consumed. *bad_utf8 is set for an invalid byte. */
static size_t norm_prefix(const struct spm_enc *m, const uint8_t *s, size_t n, const char **out,
                          size_t *out_n, int *bad_utf8)
{
    if (m->has_user) {
        size_t l = trie_longest(&m->user, s, n);
        if (l) {
            *out = (const char *)s;
            *out_n = l;
            return l;
        }
    }
    if (m->da) {
        const uint32_t *a = m->da;
        size_t best = 0, pos = (a[0] >> 10) << ((a[0] & (1u << 9)) >> 6);
        uint32_t val = 0;
        int found = 0;
        for (size_t i = 0; i < n; i++) {
            pos ^= s[i];
            if (pos >= m->da_n)
                break;
            uint32_t u = a[pos];
            if ((u & ((1u << 31) | 0xFF)) != s[i])
                break;
            pos ^= (u >> 10) << ((u & (1u << 9)) >> 6);
            if ((u >> 8) & 1) {
                if (pos >= m->da_n)
                    break;
                if (found++ < 32) { /* SentencePiece keeps the first 32 matches */
                    best = i + 1;
                    val = a[pos] & ((1u << 31) - 1);
                }
            }
        }
        if (best) {
            if (val < m->norm_n) {
                *out = m->norm_str + val;
                *out_n = strlen(m->norm_str + val);
            } else {
                *out = "";
                *out_n = 0;
            }
            return best;
        }
    }
    size_t l = utf8_len(s, n);
    if (!l) {
        *bad_utf8 = 1;
        *out = "\xEF\xBF\xBD";
        *out_n = 3;
        return 1;
    }
    *out = (const char *)s;
    *out_n = l;
    return l;
}

static void normalize(const struct spm_enc *m, struct scratch *sc, const uint8_t *in, size_t n,
                      int *bad_utf8)
{
    sc->norm_n = 0;
    const char *sp;
    size_t sp_n;
    if (m->remove_extra_ws) {
        while (n) {
            size_t used = norm_prefix(m, in, n, &sp, &sp_n, bad_utf8);
            if (!(sp_n == 1 && sp[0] == ' '))
                break;
            in += used;
            n -= used;
        }
    }
    if (!n)
        return;
    GROW(sc->norm, sc->norm_cap, n * 3 + 16);
    const char *ws = m->escape_ws ? SPACE_SYM : " ";
    size_t ws_n = m->escape_ws ? 3 : 1;
    if (!m->ws_suffix && m->add_dummy_prefix)
        norm_put(sc, ws, ws_n);
    int prev_space = m->remove_extra_ws;
    while (n) {
        size_t used;
        /* fast path: printable ASCII other than space with no rule (or none that can match
         * before a next character that is ASCII too) and no user symbol */
        if (!m->has_user && in[0] > 0x20 && in[0] < 0x7f &&
            (!(m->ascii_rule[in[0] >> 6] >> (in[0] & 63) & 1) ||
             ((m->ascii_pass[in[0] >> 6] >> (in[0] & 63) & 1) && (n == 1 || in[1] < 0x80)))) {
            if (sc->norm_n + 1 > sc->norm_cap)
                GROW(sc->norm, sc->norm_cap, sc->norm_n + 2);
            sc->norm[sc->norm_n++] = (char)in[0];
            prev_space = 0;
            in++;
            n--;
            continue;
        }
        if (in[0] == ' ' && !m->has_user &&
            (!(m->ascii_rule[0] >> ' ' & 1) ||
             ((m->ascii_pass[0] >> ' ' & 1) && (n == 1 || in[1] < 0x80)))) {
            if (!prev_space) {
                norm_put(sc, ws, ws_n);
                prev_space = m->remove_extra_ws;
            }
            in++;
            n--;
            continue;
        }
        used = norm_prefix(m, in, n, &sp, &sp_n, bad_utf8);
        if (prev_space)
            while (sp_n && sp[0] == ' ') {
                sp++;
                sp_n--;
            }
        if (sp_n) {
            GROW(sc->norm, sc->norm_cap, sc->norm_n + sp_n * 3 + 1);
            for (size_t i = 0; i < sp_n; i++) {
                if (m->escape_ws && sp[i] == ' ') {
                    memcpy(sc->norm + sc->norm_n, SPACE_SYM, 3);
                    sc->norm_n += 3;
                } else {
                    sc->norm[sc->norm_n++] = sp[i];
                }
            }
            prev_space = sp[sp_n - 1] == ' ';
        }
        in += used;
        n -= used;
        if (!m->remove_extra_ws)
            prev_space = 0;
    }
    if (m->remove_extra_ws)
        while (sc->norm_n >= ws_n && !memcmp(sc->norm + sc->norm_n - ws_n, ws, ws_n))
            sc->norm_n -= ws_n;
    if (m->ws_suffix && m->add_dummy_prefix)
        norm_put(sc, ws, ws_n);
}

/* ---- output ------------------------------------------------------------------------ */

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

/* ---- unigram ----------------------------------------------------------------------- */

static void unigram_reserve(struct scratch *sc, size_t size)
{
    if (size + 1 <= sc->best_cap)
        return;
    size_t cap = sc->best_cap ? sc->best_cap : 256;
    while (cap < size + 1)
        cap *= 2;
    sc->score = sl_xrealloc(sc->score, cap * sizeof(*sc->score));
    sc->start = sl_xrealloc(sc->start, cap * sizeof(*sc->start));
    sc->id = sl_xrealloc(sc->id, cap * sizeof(*sc->id));
    sc->pscore = sl_xrealloc(sc->pscore, cap * sizeof(*sc->pscore));
    sc->lead = sl_xrealloc(sc->lead, cap * sizeof(*sc->lead));
    sc->unkc = sl_xrealloc(sc->unkc, cap * sizeof(*sc->unkc));
    sc->best_cap = cap;
}

/* A candidate for the best path to `end`: taken when it is the first or beats the best so
 * far (ties keep the earlier one, as SentencePiece does); lead[end] follows how far the
 * best is ahead of the next best. */
static inline void viterbi_offer(struct scratch *sc, size_t end, double cand, float stored,
                                 size_t at, int32_t id, float score, uint8_t unk)
{
    float *best = sc->score;
    if (sc->start[end] == -1 || cand > (double)best[end]) {
        if (sc->start[end] != -1)
            sc->lead[end] = (float)(cand - (double)best[end]);
        best[end] = stored;
        sc->start[end] = (int32_t)at;
        sc->id[end] = id;
        sc->pscore[end] = score;
        sc->unkc[end] = unk;
    } else {
        float gap = (float)((double)best[end] - cand);
        if (gap < sc->lead[end])
            sc->lead[end] = gap;
    }
}

/* The Viterbi search over the characters of norm[a..b), with the best score at a in
 * score[a]: the best path to every position of (a, b] (score, start, id, pscore, lead).
 * No piece may cross a or b (a whole text, or a word of a model whose pieces hold U+2581
 * only at their start). */
static void viterbi_span(const struct spm_enc *m, struct scratch *sc, size_t a, size_t b)
{
    const uint8_t *s = (const uint8_t *)sc->norm;
    const float *best = sc->score;
    for (size_t i = a + 1; i <= b; i++) {
        sc->score[i] = 0;
        sc->start[i] = -1;
        sc->lead[i] = FLT_MAX;
    }
    const float unk_score = m->min_score - 10.0f;
    const struct trie *t = &m->pieces;
    size_t at = a;
    while (at < b) {
        const float till_here = best[at];
        size_t mblen = one_char_len(s[at]);
        if (mblen > b - at)
            mblen = b - at;
        int single = 0;
        uint32_t node = 0;
        for (size_t k = at; k < b; k++) {
            int32_t c = trie_child(t, node, s[k]);
            if (c < 0)
                break;
            node = (uint32_t)c;
            const struct tnode *nd = &t->node[node];
            int32_t id = nd->value;
            if (id < 0 || nd->type == PT_UNUSED)
                continue;
            size_t end = k + 1, length = end - at;
            double score = nd->type == PT_USER ? (double)((float)length * m->max_score) - 0.1
                                               : (double)nd->score;
            double cand = score + (double)till_here;
            viterbi_offer(sc, end, cand, (float)cand, at, id, (float)score, 0);
            if (length == mblen)
                single = 1;
        }
        if (!single) {
            float cand = unk_score + till_here;
            viterbi_offer(sc, at + mblen, (double)cand, cand, at, m->unk, unk_score, 1);
        }
        at += mblen;
    }
}

/* Emit the best path from a to b (viterbi_span): read backwards into the stack, then
 * emitted forwards. */
static int unigram_emit(const struct spm_enc *m, struct scratch *sc, struct emit *e, size_t a,
                        size_t b)
{
    size_t np = 0;
    GROW(sc->stack, sc->stack_cap, 16);
    for (size_t end = b; end > a; end = (size_t)sc->start[end]) {
        GROW(sc->stack, sc->stack_cap, np + 1);
        sc->stack[np++] = (uint32_t)end;
    }
    (void)m;
    while (np) {
        size_t end = sc->stack[--np], beg = (size_t)sc->start[end];
        int rc = emit_piece(e, sc->id[end], sc->norm + beg, end - beg);
        if (rc)
            return rc;
    }
    return 0;
}

/* The spacing of floats at magnitude x (x >= 0): what rounding a sum to float may move it
 * by, twice over. */
static inline double float_ulp(double x)
{
    uint64_t bits;
    memcpy(&bits, &x, sizeof(bits));
    uint64_t ex = (bits >> 52) & 0x7FF; /* x in [2^(ex-1023), 2^(ex-1022)) */
    if (ex <= 200)
        ex = 200; /* tiny magnitudes: a tiny step */
    bits = (ex - 22) << 52;
    double r;
    memcpy(&r, &bits, sizeof(r));
    return r;
}

/* Whether a cached word takes the same path when the score at its start is `base`. Inside
 * a word the path depends on the base only through rounding: every candidate is the base
 * plus the exact sum of its pieces' scores, give or take half a float step for each of at
 * most len pieces on each side. A word whose every choice was won by more than that, at
 * the magnitudes of both searches, is chosen the same way; one with a nearer tie is searched
 * again. */
static inline int ucache_holds(const struct ucache_entry *c, float base)
{
    double step = float_ulp(fabs((double)base) + (double)c->span) +
                  float_ulp((double)c->base + (double)c->span);
    return (double)c->margin > 2.0 * ((double)c->len + 2.0) * step;
}

/* Remember the best path through the word a..b just searched, if it fits an entry. */
static void ucache_put(struct scratch *sc, struct ucache_entry *c, size_t a, size_t b)
{
    size_t np = 0;
    float margin = FLT_MAX, span = 0, base = sc->score[a];
    for (size_t i = a + 1; i <= b; i++) {
        if (sc->lead[i] < margin)
            margin = sc->lead[i];
        float d = (float)fabs((double)sc->score[i] - (double)base);
        if (d > span)
            span = d;
    }
    size_t end = b;
    for (; end > a && np < UCACHE_PIECES; np++)
        end = (size_t)sc->start[end];
    if (end > a)
        return; /* more pieces than an entry holds */
    c->len = (uint8_t)(b - a);
    c->npieces = (uint8_t)np;
    c->unk_mask = 0;
    c->margin = margin;
    c->span = span * 1.0001f + FLT_MIN;
    c->base = (float)fabs((double)base);
    memcpy(c->key, sc->norm + a, b - a);
    end = b;
    for (size_t i = np; i-- > 0;) {
        size_t beg = (size_t)sc->start[end];
        c->id[i] = sc->id[end];
        c->plen[i] = (uint8_t)(end - beg);
        c->score[i] = sc->pscore[end];
        if (sc->unkc[end])
            c->unk_mask |= (uint8_t)(1u << i);
        end = beg;
    }
}

/* One word a..b of a unigram model whose pieces hold U+2581 only at their start, the score
 * at a known; c: the word's cache entry (NULL for a word too long for one). Its cached
 * path when the entry has the word and the path holds at this score (ucache_holds), else
 * searched (and remembered). score[b] is set either way, for the next word. */
static int unigram_word(const struct spm_enc *m, struct scratch *sc, struct emit *e, size_t a,
                        size_t b, struct ucache_entry *c)
{
    size_t len = b - a;
    float base = sc->score[a];
    if (c && c->len == len && !memcmp(c->key, sc->norm + a, len) && ucache_holds(c, base)) {
        /* the same sums, in the same order, as viterbi_span takes them */
        size_t off = a;
        for (size_t i = 0; i < c->npieces; i++) {
            int rc = emit_piece(e, c->id[i], sc->norm + off, c->plen[i]);
            if (rc)
                return rc;
            if (c->unk_mask & (1u << i))
                base = c->score[i] + base;
            else
                base = (float)((double)c->score[i] + (double)base);
            off += c->plen[i];
        }
        sc->score[b] = base;
        return 0;
    }
    viterbi_span(m, sc, a, b);
    if (c)
        ucache_put(sc, c, a, b);
    return unigram_emit(m, sc, e, a, b);
}

#define WORD_BATCH 32

static int encode_unigram(const struct spm_enc *m, struct scratch *sc, struct emit *e)
{
    size_t size = sc->norm_n;
    unigram_reserve(sc, size);
    sc->score[0] = 0;
    sc->start[0] = -1;
    if (!m->split_ws) {
        viterbi_span(m, sc, 0, size);
        return unigram_emit(m, sc, e, 0, size);
    }
    /* no piece crosses the start of a U+2581: the best path through the text is the best
     * paths through its words, one after the other. Words go in batches whose cache
     * entries are found and prefetched first, so that their memory latencies overlap. */
    const char *s = sc->norm;
    size_t bound[WORD_BATCH + 1];
    struct ucache_entry *ent[WORD_BATCH];
    size_t beg = 0, i = 1;
    while (beg < size) {
        size_t nw = 0;
        bound[0] = beg;
        while (nw < WORD_BATCH) {
            const char *hit = i + 3 <= size ? memchr(s + i, 0xE2, size - i - 2) : NULL;
            while (hit && memcmp(hit, SPACE_SYM, 3))
                hit = (size_t)(hit + 1 - s) + 3 <= size
                          ? memchr(hit + 1, 0xE2, size - (size_t)(hit + 1 - s) - 2)
                          : NULL;
            size_t end = hit ? (size_t)(hit - s) : size;
            size_t len = end - bound[nw];
            ent[nw] = NULL;
            if (len <= UCACHE_KEY) {
                ent[nw] = &sc->ucache[hash_bytes(s + bound[nw], len) & (UCACHE_SLOTS - 1)];
                __builtin_prefetch(ent[nw]);
            }
            bound[++nw] = end;
            if (end == size)
                break;
            i = end + 3;
        }
        for (size_t k = 0; k < nw; k++) {
            int rc = unigram_word(m, sc, e, bound[k], bound[k + 1], ent[k]);
            if (rc)
                return rc;
        }
        beg = bound[nw];
    }
    return 0;
}

/* ---- BPE --------------------------------------------------------------------------- */

static inline int pair_less(const struct pair *a, const struct pair *b)
{
    return a->score < b->score || (a->score == b->score && a->left > b->left);
}

static void heap_push(struct scratch *sc, struct pair p)
{
    GROW(sc->heap, sc->heap_cap, sc->heap_n + 1);
    size_t i = sc->heap_n++;
    while (i) {
        size_t parent = (i - 1) / 2;
        if (!pair_less(&sc->heap[parent], &p))
            break;
        sc->heap[i] = sc->heap[parent];
        i = parent;
    }
    sc->heap[i] = p;
}

static struct pair heap_pop(struct scratch *sc)
{
    struct pair top = sc->heap[0], last = sc->heap[--sc->heap_n];
    size_t i = 0, n = sc->heap_n;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && pair_less(&sc->heap[c], &sc->heap[c + 1]))
            c++;
        if (!pair_less(&last, &sc->heap[c]))
            break;
        sc->heap[i] = sc->heap[c];
        i = c;
    }
    if (n)
        sc->heap[i] = last;
    return top;
}

static void maybe_add_pair(const struct spm_enc *m, struct scratch *sc, const char *base, int32_t l,
                           int32_t r)
{
    if (l < 0 || r < 0 || sc->sym[l].freeze || sc->sym[r].freeze)
        return;
    size_t len = sc->sym[l].len + sc->sym[r].len;
    int64_t id = ptab_find(m, &m->normal, base + sc->sym[l].off, len);
    if (id < 0)
        return;
    heap_push(sc, (struct pair){ m->p[id].score, l, r, (uint32_t)len });
    if (m->p[id].type == PT_UNUSED) {
        size_t i = 0;
        while (i < sc->rev_n && sc->rev[i].id != (int32_t)id)
            i++;
        if (i == sc->rev_n) {
            GROW(sc->rev, sc->rev_cap, sc->rev_n + 1);
            sc->rev_n++;
        }
        sc->rev[i] = (struct rev){ (int32_t)id, sc->sym[l].len };
    }
}

/* resegment: a merged piece that is UNUSED is split back into the two it was made of */
static int resegment(const struct spm_enc *m, struct scratch *sc, struct emit *e, const char *w,
                     size_t wn)
{
    size_t top = 0;
    GROW(sc->stack, sc->stack_cap, 2);
    sc->stack[top++] = (uint32_t)(w - sc->norm);
    sc->stack[top++] = (uint32_t)wn;
    while (top) {
        size_t len = sc->stack[--top], off = sc->stack[--top];
        const char *p = sc->norm + off;
        int32_t id = piece_to_id(m, p, len);
        if (m->p[id].type == PT_UNUSED) {
            size_t i = 0;
            while (i < sc->rev_n && sc->rev[i].id != id)
                i++;
            if (i < sc->rev_n) {
                uint32_t ll = sc->rev[i].left_len;
                GROW(sc->stack, sc->stack_cap, top + 4);
                sc->stack[top++] = (uint32_t)(off + ll); /* right first: popped last */
                sc->stack[top++] = (uint32_t)(len - ll);
                sc->stack[top++] = (uint32_t)off;
                sc->stack[top++] = ll;
                continue;
            }
        }
        int rc = emit_piece(e, id, p, len);
        if (rc)
            return rc;
    }
    return 0;
}

static int encode_bpe_span(const struct spm_enc *m, struct scratch *sc, struct emit *e, size_t beg,
                           size_t end)
{
    const char *base = sc->norm;
    size_t nsym = 0;
    for (size_t i = beg; i < end;) {
        GROW(sc->sym, sc->sym_cap, nsym + 1);
        struct sym *y = &sc->sym[nsym];
        size_t l = 0;
        y->freeze = 0;
        if (m->has_user && (l = trie_longest(&m->user, (const uint8_t *)base + i, end - i)))
            y->freeze = 1;
        if (!l) {
            l = one_char_len((uint8_t)base[i]);
            if (l > end - i)
                l = end - i;
        }
        y->off = (uint32_t)i;
        y->len = (uint32_t)l;
        y->prev = (int32_t)nsym - 1;
        i += l;
        y->next = i < end ? (int32_t)nsym + 1 : -1;
        nsym++;
    }
    if (!nsym)
        return 0;
    sc->heap_n = 0;
    sc->rev_n = 0;
    for (size_t i = 1; i < nsym; i++)
        maybe_add_pair(m, sc, base, (int32_t)i - 1, (int32_t)i);
    while (sc->heap_n) {
        struct pair top = heap_pop(sc);
        struct sym *l = &sc->sym[top.left], *r = &sc->sym[top.right];
        if (!l->len || !r->len || l->len + r->len != top.size)
            continue;
        l->len += r->len;
        l->next = r->next;
        if (r->next >= 0)
            sc->sym[r->next].prev = top.left;
        r->len = 0;
        maybe_add_pair(m, sc, base, l->prev, top.left);
        maybe_add_pair(m, sc, base, top.left, l->next);
    }
    for (int32_t i = 0; i != -1; i = sc->sym[i].next) {
        const struct sym *y = &sc->sym[i];
        int rc;
        if (sc->rev_n)
            rc = resegment(m, sc, e, base + y->off, y->len);
        else
            rc = emit_piece(e, piece_to_id(m, base + y->off, y->len), base + y->off, y->len);
        if (rc)
            return rc;
    }
    return 0;
}

/* One word through the cache: replays the cached ids through emit_piece's <unk> rule, or
 * encodes the word into a side buffer, caches it (when it has at most CACHE_IDS ids) and
 * replays it. */
static int encode_bpe_word(const struct spm_enc *m, struct scratch *sc, struct emit *e, size_t beg,
                           size_t end)
{
    size_t len = end - beg;
    if (len > CACHE_KEY)
        return encode_bpe_span(m, sc, e, beg, end);
    const char *w = sc->norm + beg;
    struct cache_entry *c = &sc->cache[hash_bytes(w, len) & (CACHE_SLOTS - 1)];
    uint32_t buf[CACHE_KEY]; /* every id covers at least one byte of the word */
    const uint32_t *ids = c->ids;
    size_t nids = c->nids;
    if (c->len != len || memcmp(c->key, w, len)) {
        struct tok_ids side = { buf, 0, CACHE_KEY, CACHE_KEY };
        struct emit se = { m, &side, 0 };
        if (encode_bpe_span(m, sc, &se, beg, end))
            return encode_bpe_span(m, sc, e, beg, end);
        ids = buf;
        nids = side.n;
        if (nids <= CACHE_IDS) {
            c->len = (uint8_t)len;
            c->nids = (uint8_t)nids;
            memcpy(c->key, w, len);
            memcpy(c->ids, buf, nids * sizeof(*buf));
        }
    }
    int rc = tok_ids_reserve(e->out, nids);
    if (rc)
        return rc;
    for (size_t i = 0; i < nids; i++) {
        uint32_t id = ids[i];
        if (id == (uint32_t)m->unk && !m->byte_fallback) {
            if (e->prev_unk)
                continue;
            e->prev_unk = 1;
        } else {
            e->prev_unk = 0;
        }
        e->out->v[e->out->n++] = id;
    }
    return 0;
}

static int encode_bpe(const struct spm_enc *m, struct scratch *sc, struct emit *e)
{
    size_t n = sc->norm_n;
    if (!m->split_ws)
        return encode_bpe_span(m, sc, e, 0, n);
    /* no piece crosses the start of a U+2581: merge each word on its own (same result) */
    size_t beg = 0;
    const char *s = sc->norm;
    for (size_t i = 1; i + 3 <= n; i++) {
        const char *hit = memchr(s + i, 0xE2, n - i - 2);
        if (!hit)
            break;
        i = (size_t)(hit - s);
        if (!memcmp(s + i, SPACE_SYM, 3)) {
            int rc = encode_bpe_word(m, sc, e, beg, i);
            if (rc)
                return rc;
            beg = i;
            i += 2;
        }
    }
    return encode_bpe_word(m, sc, e, beg, n);
}

/* This thread's word cache, emptied for model m (a cache holds one model's words). */
static void caches_reset(const struct spm_enc *m, struct scratch *sc)
{
    if (m->type == MT_BPE) {
        if (!sc->cache)
            sc->cache = sl_xcalloc_table(CACHE_SLOTS, sizeof(*sc->cache));
        memset(sc->cache, 0, CACHE_SLOTS * sizeof(*sc->cache));
        if (sc->ucache)
            memset(sc->ucache, 0, UCACHE_SLOTS * sizeof(*sc->ucache));
    } else {
        if (!sc->ucache)
            sc->ucache = sl_xcalloc_table(UCACHE_SLOTS, sizeof(*sc->ucache));
        memset(sc->ucache, 0, UCACHE_SLOTS * sizeof(*sc->ucache));
        if (sc->cache)
            memset(sc->cache, 0, CACHE_SLOTS * sizeof(*sc->cache));
    }
    sc->cache_serial = m->serial;
}

int spm_enc_encode(const struct spm_enc *m, const char *text, size_t n, struct tok_ids *out)
{
    struct scratch *sc = scratch_get();
    int bad_utf8 = 0;
    normalize(m, sc, (const uint8_t *)text, n, &bad_utf8);
    if (!sc->norm_n)
        return bad_utf8;
    struct emit e = { m, out, 0 };
    if (m->split_ws && sc->cache_serial != m->serial)
        caches_reset(m, sc);
    int rc = m->type == MT_BPE ? encode_bpe(m, sc, &e) : encode_unigram(m, sc, &e);
    return rc ? rc : bad_utf8;
}
