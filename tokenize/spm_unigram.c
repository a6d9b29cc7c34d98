/* The unigram model's search (tokenize/spm_enc_impl.h): SentencePiece's Viterbi over the
 * piece trie, and, where no piece holds U+2581 past its start, word by word through a
 * per-thread cache whose paths are reused only where float rounding cannot change them. */
#include "tokenize/spm_enc_impl.h"

#include <float.h>
#include <math.h>

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

int spm_unigram_encode(const struct spm_enc *m, struct scratch *sc, struct emit *e)
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
