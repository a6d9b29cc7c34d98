/* sluice's own SentencePiece encoder (spm_enc.h): a protobuf reader for ModelProto, the
 * normalizer (darts-clone double array of the precompiled character map), a byte trie of
 * the pieces for the unigram Viterbi search, and the BPE merge with a heap, each written
 * to give SentencePiece 0.1.97's ids exactly (docs/tokenizers.md says what was checked). */
#include "tokenize/spm_enc_impl.h"

#include "core/err.h"

#include <float.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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


static void ptab_init(struct ptab *t, uint32_t n)
{
    uint32_t cap = 16;
    while (cap < 2 * n + 16)
        cap <<= 1;
    t->slot = sl_xcalloc(cap, sizeof(*t->slot));
    t->mask = cap - 1;
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
    int rc = m->type == MT_BPE ? encode_bpe(m, sc, &e) : spm_unigram_encode(m, sc, &e);
    return rc ? rc : bad_utf8;
}
