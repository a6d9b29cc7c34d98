/* Byte-level BPE training: a bounded pre-token count table and the merge loop with
 * incremental pair counts and a lazy max-heap (stale entries are re-pushed with the
 * current count when they reach the top), as BpeTrainer of the `tokenizers` library. */
#include "tokenize/bpe_train.h"

#include "core/alloc.h"
#include "core/err.h"
#include "core/hash.h"

#include <stdlib.h>
#include <string.h>

typedef unsigned char u8;

/* ---- pre-token counts -------------------------------------------------------------- */

struct cent {
    uint64_t hash;
    uint64_t count;
    uint32_t off, len; /* bytes in the arena */
};

struct bpe_counts {
    enum pretok_kind kind;
    size_t max_entries, max_piece;
    struct cent *ents;
    size_t n;
    uint32_t *tab; /* index + 1 into ents, 0 empty */
    uint64_t mask;
    u8 *arena;
    size_t arena_len, arena_cap;
    uint32_t *lens; /* pretok_split scratch */
    struct bpe_counts_stats st;
};

#define SPLIT_MAX 4096

static void counts_rehash(struct bpe_counts *c, uint64_t size)
{
    free(c->tab);
    c->tab = sl_xcalloc(size, sizeof(uint32_t));
    c->mask = size - 1;
    for (size_t i = 0; i < c->n; i++) {
        uint64_t j = c->ents[i].hash & c->mask;
        while (c->tab[j])
            j = (j + 1) & c->mask;
        c->tab[j] = (uint32_t)(i + 1);
    }
}

struct bpe_counts *bpe_counts_new(enum pretok_kind kind, size_t max_entries, size_t max_piece)
{
    struct bpe_counts *c = sl_xcalloc(1, sizeof(*c));
    c->kind = kind;
    c->max_entries = max_entries < 16 ? 16 : max_entries;
    if (c->max_entries > 0x7fffffff)
        c->max_entries = 0x7fffffff;
    c->max_piece = max_piece ? max_piece : 1;
    c->lens = sl_xmalloc(SPLIT_MAX * sizeof(uint32_t));
    counts_rehash(c, 1024);
    return c;
}

void bpe_counts_free(struct bpe_counts *c)
{
    if (!c)
        return;
    free(c->ents);
    free(c->tab);
    free(c->arena);
    free(c->lens);
    free(c);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Drop every entry with count <= t, the smallest t that frees half the table. */
static void counts_prune(struct bpe_counts *c)
{
    uint64_t *v = sl_xmalloc(sl_mul_size(c->n, sizeof(uint64_t)));
    for (size_t i = 0; i < c->n; i++)
        v[i] = c->ents[i].count;
    qsort(v, c->n, sizeof(uint64_t), cmp_u64);
    uint64_t t = v[c->n / 2];
    free(v);
    size_t w = 0, aw = 0;
    for (size_t i = 0; i < c->n; i++) {
        struct cent e = c->ents[i];
        if (e.count <= t) {
            c->st.pruned++;
            c->st.pruned_mass += e.count;
            continue;
        }
        memmove(c->arena + aw, c->arena + e.off, e.len);
        e.off = (uint32_t)aw;
        aw += e.len;
        c->ents[w++] = e;
    }
    c->n = w;
    c->arena_len = aw;
    c->st.prunings++;
    counts_rehash(c, c->mask + 1);
}

void bpe_counts_add_piece(struct bpe_counts *c, const void *piece, size_t len, uint64_t n)
{
    c->st.pieces += n;
    if (len == 0)
        return;
    if (len > c->max_piece) {
        c->st.too_long += n;
        return;
    }
    uint64_t h = sl_hash64(piece, len, 0x5eed);
    uint64_t j = h & c->mask;
    for (uint32_t k; (k = c->tab[j]) != 0; j = (j + 1) & c->mask) {
        struct cent *e = &c->ents[k - 1];
        if (e->hash == h && e->len == len && !memcmp(c->arena + e->off, piece, len)) {
            e->count += n;
            return;
        }
    }
    /* a full table, or an arena past 32-bit offsets: drop the rare entries first */
    if (c->n >= c->max_entries || c->arena_len + len > 0xffffffffu) {
        counts_prune(c);
        j = h & c->mask;
        while (c->tab[j])
            j = (j + 1) & c->mask;
    }
    if (c->arena_len + len > c->arena_cap) {
        size_t cap = c->arena_cap ? c->arena_cap : 1 << 16;
        while (cap < c->arena_len + len)
            cap *= 2;
        c->arena = sl_xrealloc(c->arena, cap);
        c->arena_cap = cap;
    }
    if ((c->n + 1) * 2 > c->mask + 1) {
        counts_rehash(c, (c->mask + 1) * 2);
        j = h & c->mask;
        while (c->tab[j])
            j = (j + 1) & c->mask;
    }
    if (c->n % 1024 == 0)
        c->ents = sl_xrealloc(c->ents, sl_mul_size(c->n + 1024, sizeof(*c->ents)));
    memcpy(c->arena + c->arena_len, piece, len);
    c->ents[c->n] = (struct cent){ h, n, (uint32_t)c->arena_len, (uint32_t)len };
    c->arena_len += len;
    c->tab[j] = (uint32_t)(c->n + 1);
    c->n++;
}

void bpe_counts_add_text(struct bpe_counts *c, const char *text, size_t n)
{
    const u8 *s = (const u8 *)text, *end = s + n;
    while (s < end) {
        size_t k = pretok_split(c->kind, s, end, c->lens, SPLIT_MAX);
        for (size_t i = 0; i < k; i++) {
            bpe_counts_add_piece(c, s, c->lens[i], 1);
            s += c->lens[i];
        }
    }
}

void bpe_counts_stats(const struct bpe_counts *c, struct bpe_counts_stats *s)
{
    *s = c->st;
    s->distinct = c->n;
}

/* ---- the byte alphabet ------------------------------------------------------------ */

static int printable(int c)
{
    return (c >= '!' && c <= '~') || (c >= 0xA1 && c <= 0xAC) || (c >= 0xAE && c <= 0xFF);
}

uint32_t bpe_byte_char(unsigned char byte)
{
    if (printable(byte))
        return byte;
    uint32_t n = 0;
    for (int c = 0; c < byte; c++)
        n += !printable(c);
    return 256 + n;
}

/* ---- pairs: counts, the words they occur in, the heap ----------------------------- */

struct pair {
    uint64_t key; /* left << 32 | right */
    int64_t count;
    uint32_t *pos; /* words the pair was seen in (a word at most once in a row) */
    uint32_t npos, cappos;
    uint32_t stamp; /* merge step that last pushed it */
};

struct heap_ent {
    int64_t count;
    uint64_t key;
};

struct trainer {
    struct pair *pairs;
    size_t npairs, cappairs;
    uint32_t *ptab; /* index + 1 */
    uint64_t pmask;
    struct heap_ent *heap;
    size_t nheap, capheap;
    uint32_t *touched; /* pairs with a positive change in this step */
    size_t ntouched, captouched;
    uint32_t step;
};

static uint64_t pkey(uint32_t l, uint32_t r)
{
    return (uint64_t)l << 32 | r;
}

static uint64_t phash(uint64_t key)
{
    key ^= key >> 33;
    key *= 0xff51afd7ed558ccdull;
    key ^= key >> 33;
    return key;
}

static void ptab_grow(struct trainer *t)
{
    uint64_t size = t->pmask ? (t->pmask + 1) * 2 : 1 << 16;
    free(t->ptab);
    t->ptab = sl_xcalloc(size, sizeof(uint32_t));
    t->pmask = size - 1;
    for (size_t i = 0; i < t->npairs; i++) {
        uint64_t j = phash(t->pairs[i].key) & t->pmask;
        while (t->ptab[j])
            j = (j + 1) & t->pmask;
        t->ptab[j] = (uint32_t)(i + 1);
    }
}

/* The pair's index, created with count 0 when new. */
static uint32_t pair_get(struct trainer *t, uint64_t key)
{
    if ((t->npairs + 1) * 2 > t->pmask + 1)
        ptab_grow(t);
    uint64_t j = phash(key) & t->pmask;
    for (uint32_t k; (k = t->ptab[j]) != 0; j = (j + 1) & t->pmask)
        if (t->pairs[k - 1].key == key)
            return k - 1;
    if (t->npairs == t->cappairs) {
        t->cappairs = t->cappairs ? t->cappairs * 2 : 1 << 16;
        t->pairs = sl_xrealloc(t->pairs, sl_mul_size(t->cappairs, sizeof(*t->pairs)));
    }
    t->pairs[t->npairs] = (struct pair){ key, 0, NULL, 0, 0, 0 };
    t->ptab[j] = (uint32_t)(t->npairs + 1);
    return (uint32_t)t->npairs++;
}

static void pair_add_pos(struct pair *p, uint32_t word)
{
    if (p->npos && p->pos[p->npos - 1] == word)
        return;
    if (p->npos == p->cappos) {
        p->cappos = p->cappos ? p->cappos * 2 : 4;
        p->pos = sl_xrealloc(p->pos, sl_mul_size(p->cappos, sizeof(uint32_t)));
    }
    p->pos[p->npos++] = word;
}

/* a before b: higher count, then smaller pair */
static int heap_before(const struct heap_ent *a, const struct heap_ent *b)
{
    return a->count != b->count ? a->count > b->count : a->key < b->key;
}

static void heap_push(struct trainer *t, int64_t count, uint64_t key)
{
    if (t->nheap == t->capheap) {
        t->capheap = t->capheap ? t->capheap * 2 : 1 << 16;
        t->heap = sl_xrealloc(t->heap, sl_mul_size(t->capheap, sizeof(*t->heap)));
    }
    size_t i = t->nheap++;
    struct heap_ent e = { count, key };
    while (i > 0 && heap_before(&e, &t->heap[(i - 1) / 2])) {
        t->heap[i] = t->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    t->heap[i] = e;
}

static struct heap_ent heap_pop(struct trainer *t)
{
    struct heap_ent top = t->heap[0], e = t->heap[--t->nheap];
    size_t i = 0, n = t->nheap;
    for (;;) {
        size_t l = 2 * i + 1, m = l;
        if (l >= n)
            break;
        if (l + 1 < n && heap_before(&t->heap[l + 1], &t->heap[l]))
            m = l + 1;
        if (!heap_before(&t->heap[m], &e))
            break;
        t->heap[i] = t->heap[m];
        i = m;
    }
    if (n)
        t->heap[i] = e;
    return top;
}

/* Count change of pair (l, r) in word w (weight wc). */
static void change(struct trainer *t, uint32_t l, uint32_t r, int sign, uint32_t w, uint64_t wc)
{
    uint32_t k = pair_get(t, pkey(l, r));
    struct pair *p = &t->pairs[k];
    p->count += sign * (int64_t)wc;
    if (sign > 0) {
        pair_add_pos(p, w);
        if (p->stamp != t->step) {
            p->stamp = t->step;
            if (t->ntouched == t->captouched) {
                t->captouched = t->captouched ? t->captouched * 2 : 1024;
                t->touched = sl_xrealloc(t->touched, t->captouched * sizeof(uint32_t));
            }
            t->touched[t->ntouched++] = k;
        }
    }
}

/* ---- the token table -------------------------------------------------------------- */

struct vocab {
    uint32_t *off;
    u8 *bytes;
    size_t n, cap, blen, bcap;
    uint32_t *tab; /* index + 1, by bytes */
    uint64_t mask;
};

static int64_t vocab_find(const struct vocab *v, const u8 *p, size_t n)
{
    uint64_t j = sl_hash64(p, n, 7) & v->mask;
    for (uint32_t k; (k = v->tab[j]) != 0; j = (j + 1) & v->mask) {
        uint32_t id = k - 1;
        if (v->off[id + 1] - v->off[id] == n && !memcmp(v->bytes + v->off[id], p, n))
            return id;
    }
    return -1;
}

static void vocab_rehash(struct vocab *v, uint64_t size)
{
    free(v->tab);
    v->tab = sl_xcalloc(size, sizeof(uint32_t));
    v->mask = size - 1;
    for (size_t id = 0; id < v->n; id++) {
        uint64_t j = sl_hash64(v->bytes + v->off[id], v->off[id + 1] - v->off[id], 7) & v->mask;
        while (v->tab[j])
            j = (j + 1) & v->mask;
        v->tab[j] = (uint32_t)(id + 1);
    }
}

static uint32_t vocab_add(struct vocab *v, const u8 *p, size_t n)
{
    if (v->n + 2 > v->cap) {
        v->cap = v->cap ? v->cap * 2 : 1024;
        v->off = sl_xrealloc(v->off, v->cap * sizeof(uint32_t));
    }
    if (v->blen + n > v->bcap) {
        v->bcap = v->bcap ? v->bcap * 2 : 1 << 16;
        while (v->bcap < v->blen + n)
            v->bcap *= 2;
        v->bytes = sl_xrealloc(v->bytes, v->bcap);
    }
    if (v->n == 0)
        v->off[0] = 0;
    memcpy(v->bytes + v->blen, p, n);
    v->blen += n;
    v->off[v->n + 1] = (uint32_t)v->blen;
    v->n++;
    if (v->n * 2 > v->mask + 1 || !v->tab)
        vocab_rehash(v, v->tab ? (v->mask + 1) * 2 : 1024);
    else {
        uint64_t j = sl_hash64(p, n, 7) & v->mask;
        while (v->tab[j])
            j = (j + 1) & v->mask;
        v->tab[j] = (uint32_t)v->n;
    }
    return (uint32_t)(v->n - 1);
}

/* ---- training --------------------------------------------------------------------- */

int bpe_train(const struct bpe_counts *c, const struct bpe_train_opts *o, struct bpe_model *out)
{
    memset(out, 0, sizeof(*out));
    if ((uint64_t)o->vocab_size < o->n_specials + 256)
        return sl_err_set(
            SL_ERR_USAGE,
            "vocabulary size %u is smaller than the %zu special tokens plus the 256 bytes",
            o->vocab_size, o->n_specials);
    struct vocab v;
    memset(&v, 0, sizeof(v));
    vocab_rehash(&v, 1024);
    for (size_t i = 0; i < o->n_specials; i++) {
        size_t n = strlen(o->specials[i]);
        if (n == 0 || vocab_find(&v, (const u8 *)o->specials[i], n) >= 0) {
            free(v.off);
            free(v.bytes);
            free(v.tab);
            return sl_err_set(SL_ERR_USAGE, "special token '%s' is %s", o->specials[i],
                              n ? "given twice" : "empty");
        }
        vocab_add(&v, (const u8 *)o->specials[i], n);
    }
    /* the bytes in the order of their characters */
    uint32_t byte_id[256];
    for (uint32_t ch = 0; ch < 256 + 68; ch++)
        for (int b = 0; b < 256; b++)
            if (bpe_byte_char((u8)b) == ch) {
                u8 x = (u8)b;
                int64_t have = vocab_find(&v, &x, 1); /* a one-byte special token */
                byte_id[b] = have >= 0 ? (uint32_t)have : vocab_add(&v, &x, 1);
            }

    /* the words: each distinct pre-token as a sequence of ids */
    size_t nw = c->n;
    uint32_t *woff = sl_xmalloc(sl_mul_size(nw + 1, sizeof(uint32_t)));
    uint32_t *wlen = sl_xmalloc(sl_mul_size(nw + 1, sizeof(uint32_t)));
    uint64_t *wc = sl_xmalloc(sl_mul_size(nw + 1, sizeof(uint64_t)));
    uint32_t *sym = sl_xmalloc(sl_mul_size(c->arena_len + 1, sizeof(uint32_t)));
    for (size_t i = 0; i < nw; i++) {
        const struct cent *e = &c->ents[i];
        woff[i] = e->off;
        wlen[i] = e->len;
        wc[i] = e->count;
        for (uint32_t k = 0; k < e->len; k++)
            sym[e->off + k] = byte_id[c->arena[e->off + k]];
    }

    struct trainer t;
    memset(&t, 0, sizeof(t));
    ptab_grow(&t);
    t.step = 1;
    for (size_t i = 0; i < nw; i++)
        for (uint32_t k = 0; k + 1 < wlen[i]; k++)
            change(&t, sym[woff[i] + k], sym[woff[i] + k + 1], 1, (uint32_t)i, wc[i]);
    for (size_t i = 0; i < t.ntouched; i++)
        if (t.pairs[t.touched[i]].count > 0)
            heap_push(&t, t.pairs[t.touched[i]].count, t.pairs[t.touched[i]].key);
    t.ntouched = 0;

    size_t capm = 0;
    while (v.n < o->vocab_size && t.nheap) {
        struct heap_ent top = heap_pop(&t);
        uint32_t pi = pair_get(&t, top.key);
        struct pair *p = &t.pairs[pi];
        if (top.count != p->count) {
            if (p->count > 0)
                heap_push(&t, p->count, p->key);
            continue;
        }
        if (top.count < 1 || (uint64_t)top.count < o->min_frequency)
            break;
        uint32_t a = (uint32_t)(top.key >> 32), b = (uint32_t)top.key;
        /* the new token */
        size_t la = v.off[a + 1] - v.off[a], lb = v.off[b + 1] - v.off[b];
        u8 *nb = sl_xmalloc(la + lb);
        memcpy(nb, v.bytes + v.off[a], la);
        memcpy(nb + la, v.bytes + v.off[b], lb);
        int64_t have = vocab_find(&v, nb, la + lb);
        uint32_t id = have >= 0 ? (uint32_t)have : vocab_add(&v, nb, la + lb);
        free(nb);
        if (out->n_merges == capm) {
            capm = capm ? capm * 2 : 1024;
            out->merges = sl_xrealloc(out->merges, capm * sizeof(*out->merges));
        }
        out->merges[out->n_merges][0] = a;
        out->merges[out->n_merges][1] = b;
        out->merges[out->n_merges][2] = id;
        out->n_merges++;

        /* merge it in every word it occurs in; the list may move as pairs are added */
        t.step++;
        p->count = 0;
        uint32_t *pos = p->pos;
        uint32_t npos = p->npos;
        p->pos = NULL;
        p->npos = p->cappos = 0;
        for (uint32_t q = 0; q < npos; q++) {
            uint32_t w = pos[q];
            uint32_t *s = sym + woff[w];
            uint32_t n = wlen[w], r = 0, o2 = 0;
            while (r < n) {
                if (s[r] == a && r + 1 < n && s[r + 1] == b) {
                    if (o2 > 0) {
                        change(&t, s[o2 - 1], a, -1, w, wc[w]);
                        change(&t, s[o2 - 1], id, 1, w, wc[w]);
                    }
                    if (r + 2 < n) {
                        change(&t, b, s[r + 2], -1, w, wc[w]);
                        change(&t, id, s[r + 2], 1, w, wc[w]);
                    }
                    s[o2++] = id;
                    r += 2;
                } else {
                    s[o2++] = s[r++];
                }
            }
            wlen[w] = o2;
        }
        free(pos);
        /* a merged pair counts nothing now, whatever the changes above said */
        t.pairs[pi].count = 0;
        for (size_t i = 0; i < t.ntouched; i++) {
            struct pair *tp = &t.pairs[t.touched[i]];
            if (tp->count > 0)
                heap_push(&t, tp->count, tp->key);
        }
        t.ntouched = 0;
    }

    for (size_t i = 0; i < t.npairs; i++)
        free(t.pairs[i].pos);
    free(t.pairs);
    free(t.ptab);
    free(t.heap);
    free(t.touched);
    free(woff);
    free(wlen);
    free(wc);
    free(sym);
    free(v.tab);
    out->n_vocab = (uint32_t)v.n;
    out->n_special = (uint32_t)o->n_specials;
    out->off = v.off;
    out->bytes = v.bytes;
    out->pretok = c->kind;
    return 0;
}

int bpe_model_flag(const struct bpe_model *m, uint32_t id)
{
    return m->flags ? m->flags[id] : id < m->n_special ? BPE_TOK_SPECIAL : BPE_TOK_REGULAR;
}

void bpe_model_release(struct bpe_model *m)
{
    free(m->flags);
    free(m->off);
    free(m->bytes);
    free(m->merges);
    memset(m, 0, sizeof(*m));
}
