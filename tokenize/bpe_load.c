/* Loading byte-level BPE vocabularies: GPT-2 vocab.json + merges.txt and tiktoken rank
 * files, into the tables of bpe_impl.h. */
#include "tokenize/bpe.h"

#include "core/alloc.h"
#include "core/buf.h"
#include "core/err.h"
#include "core/json.h"
#include "core/stream.h"
#include "core/utf8.h"
#include "tokenize/bpe_cache.h"
#include "tokenize/bpe_impl.h"
#include "tokenize/tiktoken.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_FILE (256u << 20)

static void vocab_insert(struct bpe *b, uint32_t id)
{
    const u8 *p = b->bytes + b->off[id];
    uint64_t h = bpe_hash_bytes(p, b->off[id + 1] - b->off[id]);
    uint64_t i = h & b->vmask;
    while (b->vtab[i].id1)
        i = (i + 1) & b->vmask;
    b->vtab[i].tag = (uint32_t)(h >> 32);
    b->vtab[i].id1 = id + 1;
}

/* The split search of a rank file: every way to cut a token into two tokens.
 *
 * A token of up to ROLL_MIN bytes (every token of OpenAI's and Meta's files: 128 at most)
 * hashes each prefix and suffix with the vocabulary's own hash and looks them up, the
 * first SPLIT_MAX slots prefetched together so that the lookups' memory latencies overlap:
 * O(length^2) a token, bounded. A longer one (a rank file of someone's own, or a hostile
 * one: a 15 MB token took forever) hashes its prefixes left to right and its suffixes
 * right to left, one step a byte, against two tables of every token's hash taken the same
 * way: O(length) a token; the tables are built only when there is such a token. */
#define SPLIT_MAX 64               /* splits of a token whose lookups are prefetched together */
#define ROLL_MIN  1024             /* longer tokens take the rolling hashes */
#define ROLL_K    0x100000001b3ull /* odd: a step of the polynomial hash, mod 2^64 */

struct splits {
    uint32_t (*v)[3];
    size_t n, cap;
};

static void split_add(struct splits *s, int64_t l, int64_t r, uint32_t id)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 4096;
        s->v = sl_xrealloc(s->v, sl_mul_size(s->cap, sizeof(*s->v)));
    }
    s->v[s->n][0] = (uint32_t)l;
    s->v[s->n][1] = (uint32_t)r;
    s->v[s->n][2] = id;
    s->n++;
}

static void splits_short(const struct bpe *b, uint32_t id, struct splits *out)
{
    const u8 *s = b->bytes + b->off[id];
    size_t n = b->off[id + 1] - b->off[id];
    uint64_t hl[SPLIT_MAX], hr[SPLIT_MAX];
    size_t ns = n - 1 < SPLIT_MAX ? n - 1 : SPLIT_MAX;
    for (size_t k = 1; k <= ns; k++) {
        hl[k - 1] = bpe_hash_bytes(s, k);
        hr[k - 1] = bpe_hash_bytes(s + k, n - k);
        __builtin_prefetch(&b->vtab[hl[k - 1] & b->vmask]);
        __builtin_prefetch(&b->vtab[hr[k - 1] & b->vmask]);
    }
    for (size_t k = 1; k < n; k++) {
        int64_t l = k <= ns ? bpe_vocab_find_h(b, hl[k - 1], s, k) : bpe_vocab_find(b, s, k);
        if (l < 0)
            continue;
        int64_t r = k <= ns ? bpe_vocab_find_h(b, hr[k - 1], s + k, n - k)
                            : bpe_vocab_find(b, s + k, n - k);
        if (r >= 0)
            split_add(out, l, r, id);
    }
}

struct roll_tab {
    uint64_t *key;
    uint32_t *id1; /* id + 1, 0 empty */
    uint64_t mask;
};

static void roll_put(struct roll_tab *t, uint64_t key, uint32_t id)
{
    uint64_t i = (key ^ (key >> 29)) & t->mask;
    while (t->id1[i])
        i = (i + 1) & t->mask;
    t->key[i] = key;
    t->id1[i] = id + 1;
}

/* The id of the token whose bytes are s[0..n) and whose hash is key, or -1. */
static int64_t roll_find(const struct bpe *b, const struct roll_tab *t, uint64_t key, const u8 *s,
                         size_t n)
{
    for (uint64_t i = (key ^ (key >> 29)) & t->mask; t->id1[i]; i = (i + 1) & t->mask) {
        uint32_t id = t->id1[i] - 1;
        if (t->key[i] == key && b->off[id + 1] - b->off[id] == n &&
            memcmp(b->bytes + b->off[id], s, n) == 0)
            return id;
    }
    return -1;
}

static int is_regular(const struct bpe *b, uint32_t id)
{
    return (b->flags[id] & (FL_PRESENT | FL_SPECIAL)) == FL_PRESENT;
}

/* The tokens longer than ROLL_MIN bytes; tables of every token's two rolling hashes. */
static void splits_long(const struct bpe *b, size_t longest, struct splits *out)
{
    uint64_t size = 16;
    while (size < 2 * (uint64_t)b->n_vocab + 16)
        size *= 2;
    struct roll_tab L = { sl_xmalloc(size * 8), sl_xcalloc(size, 4), size - 1 };
    struct roll_tab R = { sl_xmalloc(size * 8), sl_xcalloc(size, 4), size - 1 };
    for (uint32_t id = 0; id < b->n_vocab; id++) {
        if (!is_regular(b, id))
            continue;
        const u8 *s = b->bytes + b->off[id];
        size_t n = b->off[id + 1] - b->off[id];
        uint64_t hl = 0, hr = 0;
        for (size_t i = 0; i < n; i++) {
            hl = hl * ROLL_K + s[i] + 1;
            hr = hr * ROLL_K + s[n - 1 - i] + 1;
        }
        roll_put(&L, hl, id);
        roll_put(&R, hr, id);
    }
    uint64_t *hr = sl_xmalloc((longest + 1) * sizeof(*hr));
    for (uint32_t id = 0; id < b->n_vocab; id++) {
        size_t n = b->off[id + 1] - b->off[id];
        if (!is_regular(b, id) || n <= ROLL_MIN)
            continue;
        const u8 *s = b->bytes + b->off[id];
        hr[n] = 0;
        for (size_t k = n; k-- > 1;)
            hr[k] = hr[k + 1] * ROLL_K + s[k] + 1;
        uint64_t hl = 0;
        for (size_t k = 1; k < n; k++) {
            hl = hl * ROLL_K + s[k - 1] + 1;
            int64_t l = roll_find(b, &L, hl, s, k);
            int64_t r = l < 0 ? -1 : roll_find(b, &R, hr[k], s + k, n - k);
            if (r >= 0)
                split_add(out, l, r, id);
        }
    }
    free(hr);
    free(L.key);
    free(L.id1);
    free(R.key);
    free(R.id1);
}

static size_t find_splits(struct bpe *b, uint32_t (**out)[3])
{
    struct splits s = { NULL, 0, 0 };
    size_t longest = 0;
    for (uint32_t id = 0; id < b->n_vocab; id++) {
        if (!is_regular(b, id))
            continue;
        size_t n = b->off[id + 1] - b->off[id];
        longest = n > longest ? n : longest;
        if (n <= ROLL_MIN)
            splits_short(b, id, &s);
    }
    b->max_len = (uint32_t)longest;
    if (longest > ROLL_MIN)
        splits_long(b, longest, &s);
    *out = s.v;
    return s.n;
}

static void pair_table_init(struct bpe *b, size_t n)
{
    uint64_t size = 1024;
    int bits = 10;
    while (size < n * 2) {
        size *= 2;
        bits++;
    }
    b->ptab = sl_xcalloc_table(size, sizeof(*b->ptab));
    for (uint64_t i = 0; i < size; i++)
        b->ptab[i] = PAIR_EMPTY;
    b->pmask = size - 1;
    b->pshift = 64 - bits;
}

/* Set the rank of merging l and r (a later merges.txt line for the same pair wins, as in
 * encoder.py; keep_first keeps the first). */
static void pair_put(struct bpe *b, uint32_t l, uint32_t r, uint32_t rank, int keep_first)
{
    uint64_t key = bpe_pair_key(l, r);
    uint64_t i = (key * 0x9E3779B97F4A7C15ull) >> b->pshift;
    while (b->ptab[i] != PAIR_EMPTY && (b->ptab[i] >> BPE_RANK_BITS) != key)
        i = (i + 1) & b->pmask;
    if (b->ptab[i] != PAIR_EMPTY && keep_first)
        return;
    b->ptab[i] = key << BPE_RANK_BITS | rank;
}

/* The filter of pairs (8-16 bits a pair, two bits of one 64-bit word each: about 4-6%
 * false positives, no false negatives) and the dense table of merges between single-byte tokens. */
static void build_bp(struct bpe *b)
{
    uint64_t n = 0;
    for (uint64_t i = 0; i <= b->pmask; i++)
        n += b->ptab[i] != PAIR_EMPTY;
    int bits = 16;
    while (bits < 34 && (1ull << bits) < n * 8)
        bits++;
    b->filter = sl_xcalloc_table((size_t)((1ull << bits) / 64), sizeof(uint64_t));
    b->fshift = 64 - bits;
    for (uint64_t i = 0; i <= b->pmask; i++)
        if (b->ptab[i] != PAIR_EMPTY) {
            uint64_t w, m = bpe_filter_bits(b, b->ptab[i] >> BPE_RANK_BITS, &w);
            b->filter[w] |= m;
        }
    b->bp = sl_xmalloc(256 * 256 * sizeof(*b->bp));
    for (int c1 = 0; c1 < 256; c1++)
        for (int c2 = 0; c2 < 256; c2++)
            b->bp[c1 << 8 | c2] = bpe_pair_rank(b, b->byte_id[c1], b->byte_id[c2]);
}

/* ---- building --------------------------------------------------------------------- */

/* A token list being collected: (id, bytes) in any order. */
struct toklist {
    uint32_t *id;
    uint32_t *start, *len;
    struct sl_buf bytes;
    size_t n, cap;
};

static void toklist_add(struct toklist *t, uint32_t id, const void *p, size_t n)
{
    if (t->n == t->cap) {
        t->cap = t->cap ? t->cap * 2 : 1024;
        t->id = sl_xrealloc(t->id, t->cap * sizeof(*t->id));
        t->start = sl_xrealloc(t->start, t->cap * sizeof(*t->start));
        t->len = sl_xrealloc(t->len, t->cap * sizeof(*t->len));
    }
    t->id[t->n] = id;
    t->start[t->n] = (uint32_t)t->bytes.len;
    t->len[t->n] = (uint32_t)n;
    sl_buf_append(&t->bytes, p, n);
    t->n++;
}

static void toklist_release(struct toklist *t)
{
    free(t->id);
    free(t->start);
    free(t->len);
    sl_buf_release(&t->bytes);
}

/* Lay the tokens out by id; fails on a duplicate id. `what` names the source. */
static int build_vocab(struct bpe *b, const struct toklist *t, const char *what)
{
    uint32_t max = 0;
    for (size_t i = 0; i < t->n; i++)
        if (t->id[i] > max)
            max = t->id[i];
    if (t->n == 0)
        return sl_err_set(SL_ERR_FORMAT, "cannot load '%s': no tokens", what);
    if (max >= BPE_MAX_IDS)
        return sl_err_set(SL_ERR_TOOBIG,
                          "cannot load '%s': token id %u is too large (at most %u ids)", what, max,
                          BPE_MAX_IDS);
    b->n_vocab = max + 1;
    b->flags = sl_xcalloc(b->n_vocab, 1);
    uint32_t *src = sl_xmalloc(sl_mul_size(b->n_vocab, sizeof(uint32_t)));
    for (size_t i = 0; i < t->n; i++) {
        if (b->flags[t->id[i]] & FL_PRESENT) {
            free(src);
            return sl_err_set(SL_ERR_FORMAT, "cannot load '%s': token id %u appears twice", what,
                              t->id[i]);
        }
        b->flags[t->id[i]] = FL_PRESENT;
        src[t->id[i]] = (uint32_t)i;
    }
    b->off = sl_xmalloc(sl_mul_size((size_t)b->n_vocab + 1, sizeof(uint32_t)));
    b->bytes = sl_xmalloc(t->bytes.len + 1);
    uint32_t o = 0;
    for (uint32_t id = 0; id < b->n_vocab; id++) {
        b->off[id] = o;
        if (b->flags[id] & FL_PRESENT) {
            memcpy(b->bytes + o, t->bytes.data + t->start[src[id]], t->len[src[id]]);
            o += t->len[src[id]];
        }
    }
    b->off[b->n_vocab] = o;
    free(src);
    return 0;
}

/* Hash every present, non-special token; SL_ERR_FORMAT on two ids with the same bytes. */
static int build_vtab(struct bpe *b, const char *what)
{
    uint64_t size = 1024;
    while (size < (uint64_t)b->n_vocab * 2)
        size *= 2;
    b->vtab = sl_xcalloc_table(size, sizeof(*b->vtab));
    b->vmask = size - 1;
    for (uint32_t id = 0; id < b->n_vocab; id++) {
        if ((b->flags[id] & (FL_PRESENT | FL_SPECIAL)) != FL_PRESENT)
            continue;
        size_t n = b->off[id + 1] - b->off[id];
        if (n == 0)
            return sl_err_set(SL_ERR_FORMAT, "cannot load '%s': token %u is empty", what, id);
        int64_t other = bpe_vocab_find(b, b->bytes + b->off[id], n);
        if (other >= 0)
            return sl_err_set(SL_ERR_FORMAT,
                              "cannot load '%s': tokens %lld and %u have the same bytes", what,
                              (long long)other, id);
        vocab_insert(b, id);
    }
    for (int c = 0; c < 256; c++) {
        u8 byte = (u8)c;
        int64_t id = bpe_vocab_find(b, &byte, 1);
        if (id < 0)
            return sl_err_set(SL_ERR_FORMAT,
                              "cannot load '%s': no token for byte 0x%02x\n"
                              "hint: byte-level BPE needs all 256 single-byte tokens",
                              what, c);
        b->byte_id[c] = (uint32_t)id;
    }
    return 0;
}

static void add_special(struct bpe *b, const char *name, uint32_t id)
{
    b->spec = sl_xrealloc(b->spec, (b->nspec + 1) * sizeof(*b->spec));
    b->spec[b->nspec].name = sl_xstrdup(name);
    b->spec[b->nspec].id = id;
    b->nspec++;
}

/* ---- tiktoken rank files ---------------------------------------------------------- */

static int b64val(u8 c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+')
        return 62;
    if (c == '/')
        return 63;
    return -1;
}

/* Decode standard base64 with padding into out; 0 or -1. */
static int b64_decode(const u8 *p, size_t n, struct sl_buf *out)
{
    if (n == 0 || n % 4)
        return -1;
    for (size_t i = 0; i < n; i += 4) {
        int v[4];
        int pad = 0;
        for (int k = 0; k < 4; k++) {
            if (p[i + k] == '=' && i + 4 == n && k >= 2) {
                v[k] = 0;
                pad++;
            } else {
                if (pad)
                    return -1;
                v[k] = b64val(p[i + k]);
                if (v[k] < 0)
                    return -1;
            }
        }
        uint32_t x =
            (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 | (uint32_t)v[3];
        u8 o[3] = { (u8)(x >> 16), (u8)(x >> 8), (u8)x };
        sl_buf_append(out, o, (size_t)(3 - pad));
    }
    return 0;
}

/* The special tokens and pattern of a rank file, from its sidecar FILE.json (written by
 * `sluice tokenizer train --model-type byte-bpe`): {"pattern": "gpt2", "special_tokens":
 * {"<|endoftext|>": 0}}. */
struct tk_sidecar {
    int kind;
    struct tiktoken_special *spec; /* names owned; ends with { NULL, 0 } */
    size_t n;
    const char *name, *base;
    struct sl_buf str;
};

static int sidecar_special(void *ctx, const struct sl_json_member *m)
{
    struct tk_sidecar *c = ctx;
    struct sl_json_error err = { 0, NULL };
    sl_buf_reset(&c->str);
    if (!sl_json_decode_string(c->base, m->key - 1, m->key + m->key_len + 1, &c->str, &err) ||
        c->str.len == 0 || memchr(c->str.data, 0, c->str.len))
        return sl_err_set(SL_ERR_FORMAT,
                          "cannot load '%s': a special token name is not a non-empty string",
                          c->name);
    int64_t id = 0;
    int ok = m->val_len > 0 && m->val_len < 11;
    for (size_t i = 0; ok && i < m->val_len; i++) {
        ok = m->val[i] >= '0' && m->val[i] <= '9';
        id = id * 10 + (m->val[i] - '0');
    }
    if (!ok || id >= BPE_MAX_IDS)
        return sl_err_set(SL_ERR_FORMAT, "cannot load '%s': special token '%s' has no valid id",
                          c->name, c->str.data);
    if (c->n >= 4096)
        return sl_err_set(SL_ERR_TOOBIG, "cannot load '%s': more than 4096 special tokens",
                          c->name);
    c->spec = sl_xrealloc(c->spec, (c->n + 2) * sizeof(*c->spec));
    c->spec[c->n].name = sl_xstrdup(c->str.data);
    c->spec[c->n].id = (uint32_t)id;
    c->n++;
    c->spec[c->n] = (struct tiktoken_special){ NULL, 0 };
    return 0;
}

static int sidecar_member(void *ctx, const struct sl_json_member *m)
{
    struct tk_sidecar *c = ctx;
    struct sl_json_error err = { 0, NULL };
    if (sl_json_key_eq(m, "pattern")) {
        c->kind =
            m->val_len >= 2 && m->val[0] == '"' ? pretok_from_name(m->val + 1, m->val_len - 2) : -1;
        if (c->kind < 0)
            return sl_err_set(
                SL_ERR_FORMAT,
                "cannot load '%s': pattern %.*s is not \"gpt2\", \"cl100k\" or \"o200k\"", c->name,
                (int)(m->val_len > 40 ? 40 : m->val_len), m->val);
    } else if (sl_json_key_eq(m, "special_tokens")) {
        if (m->val[0] != '{')
            return sl_err_set(SL_ERR_FORMAT, "cannot load '%s': special_tokens is not an object",
                              c->name);
        if (!c->spec)
            c->spec = sl_xcalloc(1, sizeof(*c->spec));
        int rc = sl_json_scan_object(m->val, m->val_len, sidecar_special, c, &err);
        if (rc == SL_ERR_FORMAT && err.reason)
            return sl_err_set(SL_ERR_FORMAT, "cannot load '%s': special_tokens: %s", c->name,
                              err.reason);
        return rc;
    }
    return 0;
}

static void sidecar_release(struct tk_sidecar *c)
{
    for (size_t i = 0; i < c->n; i++)
        free((char *)c->spec[i].name);
    free(c->spec);
    sl_buf_release(&c->str);
}

static int load_tiktoken(struct bpe **out, const char *data, size_t len, int kind, const char *name,
                         const struct tiktoken_special *custom);

int bpe_load_tiktoken_mem(struct bpe **out, const char *data, size_t len, int kind,
                          const char *name)
{
    return load_tiktoken(out, data, len, kind, name, NULL);
}

/* custom: the special tokens of a sidecar, or NULL for the built-in ones of `kind` */
static int load_tiktoken(struct bpe **out, const char *data, size_t len, int kind, const char *name,
                         const struct tiktoken_special *custom)
{
    *out = NULL;
    struct bpe *b = sl_xcalloc(1, sizeof(*b));
    b->tiktoken = 1;
    struct toklist t;
    memset(&t, 0, sizeof(t));
    struct sl_buf tok = SL_BUF_INIT;
    int rc = 0;
    const u8 *p = (const u8 *)data, *end = p + len;
    uint64_t line = 0;
    while (p < end && !rc) {
        const u8 *nl = memchr(p, '\n', (size_t)(end - p));
        const u8 *le = nl ? nl : end;
        line++;
        const u8 *sp = memchr(p, ' ', (size_t)(le - p));
        if (le == p) {
            p = le + 1;
            continue;
        }
        const u8 *re = le;
        if (re > p && re[-1] == '\r')
            re--;
        sl_buf_reset(&tok);
        uint64_t rank = 0;
        int ok = sp && sp > p && sp + 1 < re && b64_decode(p, (size_t)(sp - p), &tok) == 0;
        for (const u8 *q = sp ? sp + 1 : re; ok && q < re; q++) {
            if (*q < '0' || *q > '9' || rank > 0x7fffffff)
                ok = 0;
            else
                rank = rank * 10 + (uint64_t)(*q - '0');
        }
        if (!ok || rank > 0x7ffffffe) {
            rc = sl_err_set(SL_ERR_FORMAT,
                            "cannot load tiktoken ranks '%s': line %llu is not '<base64> <rank>'\n"
                            "hint: sluice reads the plain .tiktoken rank files",
                            name, (unsigned long long)line);
            break;
        }
        toklist_add(&t, (uint32_t)rank, tok.data ? tok.data : "", tok.len);
        p = le + (nl ? 1 : 0);
    }
    sl_buf_release(&tok);
    /* the family: the one of the pattern given, else the one the name or the count tells */
    const struct tiktoken_family *fam = NULL;
    if (!rc && kind >= 0)
        fam = tiktoken_family_of_pattern((enum pretok_kind)kind);
    else if (!rc && !(fam = tiktoken_family_by_file(name)) &&
             !(fam = tiktoken_family_by_ranks(t.n)))
        rc = sl_err_set(SL_ERR_USAGE,
                        "cannot tell the pre-tokenizer of '%s' (%zu ranks)\n"
                        "hint: name the file after its encoding (r50k_base, cl100k_base, "
                        "o200k_base), or give it a sidecar %s.json with its \"pattern\"",
                        name, t.n, name);
    struct tiktoken_special *named = NULL; /* Meta's special tokens after the ranks */
    if (!rc && fam->after && !custom)
        custom = named = tiktoken_specials_after(fam, (uint32_t)t.n);
    if (!rc) {
        b->pretok = fam->pattern;
        const struct tiktoken_special *sp = custom ? custom : fam->special;
        uint32_t maxrank = 0;
        for (size_t i = 0; i < t.n; i++)
            maxrank = t.id[i] > maxrank ? t.id[i] : maxrank;
        for (; custom && sp->name; sp++) {
            /* a sidecar's ids are its own: one that is also a rank fails in build_vocab */
            toklist_add(&t, sp->id, sp->name, strlen(sp->name));
            add_special(b, sp->name, sp->id);
        }
        for (; sp->name; sp++) {
            if (sp->id <= maxrank && t.n)
                continue; /* a custom rank file that uses the id: no special there */
            toklist_add(&t, sp->id, sp->name, strlen(sp->name));
            add_special(b, sp->name, sp->id);
        }
        rc = build_vocab(b, &t, name);
    }
    tiktoken_specials_free(named);
    if (!rc) {
        for (size_t i = 0; i < b->nspec; i++)
            b->flags[b->spec[i].id] |= FL_SPECIAL;
        rc = build_vtab(b, name);
    }
    if (!rc) {
        /* every split of a token into two tokens merges at the token's rank; the splits
         * are found once, then the table is sized for them */
        uint32_t(*pairs)[3] = NULL;
        size_t npairs = find_splits(b, &pairs);
        pair_table_init(b, npairs);
        for (size_t i = 0; i < npairs; i++)
            pair_put(b, pairs[i][0], pairs[i][1], pairs[i][2], 1);
        free(pairs);
        build_bp(b);
        /* tiktoken takes a piece that is a token as that token (BPE gives the same unless
         * merging a token's bytes does not reach it): a piece is looked up before it is
         * merged, which also spares checking every token here */
        b->whole = 1;
    }
    toklist_release(&t);
    if (rc) {
        bpe_free(b);
        return rc;
    }
    *out = b;
    return 0;
}

int bpe_load_tiktoken(struct bpe **out, const char *path, int kind)
{
    *out = NULL;
    /* the sidecar of a trained rank file: its pattern and special tokens */
    char *scname = sl_xasprintf("%s.json", path);
    int side = access(scname, R_OK) == 0;
    /* the same bytes under another name may take another pre-tokenizer: the key has the
     * one the name gives */
    const struct tiktoken_family *by_name = kind >= 0 ? NULL : tiktoken_family_by_file(path);
    int pretok = kind >= 0 ? kind : by_name ? (int)by_name->pattern : -1, cache = bpe_cache_on();
    struct bpe_cache_key key;
    if (cache && !bpe_cache_key_files(&key, "tiktoken", pretok, path, side ? scname : NULL) &&
        (*out = bpe_cache_get(key)) != NULL) {
        free(scname);
        return 0;
    }
    struct sl_buf buf = SL_BUF_INIT, js = SL_BUF_INIT;
    sl_buf_init(&buf, MAX_FILE);
    sl_buf_init(&js, 16u << 20);
    int rc = sl_read_file(path, &buf);
    if (!rc && side)
        rc = sl_read_file(scname, &js);
    if (rc)
        rc = sl_err_wrap(rc, "cannot load tiktoken ranks: ");
    if (!rc) {
        rc = bpe_load_tiktoken_sidecar_mem(out, buf.data ? buf.data : "", buf.len, kind, path,
                                           side ? (js.data ? js.data : "") : NULL, js.len, scname);
        /* the key of the bytes read (the files may have changed since they were hashed) */
        if (!rc && cache)
            bpe_cache_put(*out, bpe_cache_key("tiktoken", pretok, buf.data ? buf.data : "", buf.len,
                                              side ? (js.data ? js.data : "") : NULL, js.len));
    }
    free(scname);
    sl_buf_release(&js);
    sl_buf_release(&buf);
    return rc;
}

int bpe_load_tiktoken_sidecar_mem(struct bpe **out, const char *data, size_t len, int kind,
                                  const char *name, const char *sidecar, size_t sidecar_len,
                                  const char *sidecar_name)
{
    *out = NULL;
    if (!sidecar)
        return load_tiktoken(out, data, len, kind, name, NULL);
    struct tk_sidecar sc;
    memset(&sc, 0, sizeof(sc));
    sc.kind = -1;
    sc.name = sidecar_name;
    sc.base = sidecar;
    struct sl_json_error err = { 0, NULL };
    int rc = sl_json_scan_object(sidecar, sidecar_len, sidecar_member, &sc, &err);
    if (rc == SL_ERR_FORMAT && err.reason)
        rc = sl_err_set(SL_ERR_FORMAT, "cannot load '%s': not a JSON object (%s at byte %zu)",
                        sidecar_name, err.reason, err.offset);
    if (!rc && kind < 0 && sc.kind >= 0)
        kind = sc.kind;
    if (!rc && !sc.spec)
        sc.spec = sl_xcalloc(1, sizeof(*sc.spec)); /* no special tokens */
    if (!rc)
        rc = load_tiktoken(out, data, len, kind, name, sc.spec);
    sidecar_release(&sc);
    return rc;
}

/* ---- GPT-2 vocab.json + merges.txt ------------------------------------------------ */

/* GPT-2's bytes_to_unicode: printable bytes map to themselves, the other 68 to U+0100... */
static void byte_unicode_maps(uint32_t b2u[256], int16_t u2b[324])
{
    int n = 0;
    for (int c = 0; c < 324; c++)
        u2b[c] = -1;
    for (int c = 0; c < 256; c++) {
        int printable =
            (c >= '!' && c <= '~') || (c >= 0xA1 && c <= 0xAC) || (c >= 0xAE && c <= 0xFF);
        b2u[c] = printable ? (uint32_t)c : (uint32_t)(256 + n++);
        u2b[b2u[c]] = (int16_t)c;
    }
}

/* Symbol text (UTF-8 in the byte alphabet) -> bytes. 0, or -1 when a character is not in
 * the alphabet (out then holds the raw text). */
static int unmap_symbol(const int16_t u2b[324], const char *s, size_t n, struct sl_buf *out)
{
    sl_buf_reset(out);
    size_t i = 0;
    while (i < n) {
        uint32_t cp;
        size_t k = sl_utf8_decode((const u8 *)s + i, n - i, &cp);
        if (!k || cp >= 324 || u2b[cp] < 0) {
            sl_buf_reset(out);
            sl_buf_append(out, s, n);
            return -1;
        }
        sl_buf_putc(out, (char)u2b[cp]);
        i += k;
    }
    return 0;
}

struct vocab_ctx {
    const int16_t *u2b;
    struct toklist *t;
    struct sl_buf *sym, *key;
    u8 **mapped;
    size_t nmapped;
    const char *name;
    const char *base;
};

/* One "token": id member of vocab.json. */
static int vocab_member(void *ctx, const struct sl_json_member *m)
{
    struct vocab_ctx *c = ctx;
    const char *key = m->key;
    size_t klen = m->key_len;
    if (m->key_escaped) {
        struct sl_json_error err;
        sl_buf_reset(c->key);
        if (!sl_json_decode_string(c->base, m->key - 1, m->key + m->key_len + 1, c->key, &err))
            return sl_err_set(SL_ERR_FORMAT, "cannot load vocabulary of '%s': %s", c->name,
                              err.reason);
        key = c->key->data ? c->key->data : "";
        klen = c->key->len;
    }
    int64_t id = 0;
    int ok = m->val_len > 0 && m->val_len < 11;
    for (size_t i = 0; ok && i < m->val_len; i++) {
        ok = m->val[i] >= '0' && m->val[i] <= '9';
        id = id * 10 + (m->val[i] - '0');
    }
    if (!ok || id > 0x7ffffffe)
        return sl_err_set(SL_ERR_FORMAT,
                          "cannot load vocabulary of '%s': token '%.*s' has no valid id", c->name,
                          (int)(klen > 40 ? 40 : klen), key);
    if (klen == 0)
        return sl_err_set(SL_ERR_FORMAT, "cannot load vocabulary of '%s': empty token", c->name);
    int mapped = unmap_symbol(c->u2b, key, klen, c->sym) == 0 && c->sym->len > 0;
    if (c->t->n == c->nmapped) {
        c->nmapped = c->nmapped ? c->nmapped * 2 : 1024;
        *c->mapped = sl_xrealloc(*c->mapped, c->nmapped);
    }
    (*c->mapped)[c->t->n] = (u8)mapped;
    toklist_add(c->t, (uint32_t)id, c->sym->data ? c->sym->data : "", c->sym->len);
    return 0;
}

int bpe_load_gpt2_mem(struct bpe **out, const char *vocab, size_t vocab_len, const char *merges,
                      size_t merges_len, const char *name)
{
    *out = NULL;
    uint32_t b2u[256];
    int16_t u2b[324];
    byte_unicode_maps(b2u, u2b);
    struct bpe *b = sl_xcalloc(1, sizeof(*b));
    b->pretok = PRETOK_GPT2;
    struct toklist t;
    memset(&t, 0, sizeof(t));
    struct sl_buf sym = SL_BUF_INIT, sym2 = SL_BUF_INIT;
    u8 *mapped = NULL; /* token could be written in the byte alphabet */
    int rc = 0;
    uint64_t merge_count = 0;

    /* vocab.json with the JSONL scanner of core/json.h (json-c is 10x slower here) */
    struct vocab_ctx vc = { u2b, &t, &sym, &sym2, &mapped, 0, name, vocab };
    struct sl_json_error jerr = { 0, NULL };
    rc = sl_json_scan_object(vocab, vocab_len, vocab_member, &vc, &jerr);
    if (rc == SL_ERR_FORMAT && jerr.reason)
        rc = sl_err_set(SL_ERR_FORMAT,
                        "cannot load vocabulary of '%s': not a JSON object of token -> id (%s at "
                        "byte %zu)",
                        name, jerr.reason, jerr.offset);
    if (!rc)
        rc = build_vocab(b, &t, name);
    if (!rc) {
        /* hash everything written in the byte alphabet, to resolve merge symbols */
        for (size_t i = 0; i < t.n; i++)
            if (!mapped[i])
                b->flags[t.id[i]] |= FL_SPECIAL;
        rc = build_vtab(b, name);
        /* multi-byte tokens are special (<|endoftext|>) until a merge produces them */
        for (size_t i = 0; i < t.n; i++)
            if (t.len[i] > 1 || !mapped[i])
                b->flags[t.id[i]] |= FL_SPECIAL; /* not yet produced by a merge */
    }
    if (!rc) {
        const u8 *p = (const u8 *)merges, *end = p + merges_len;
        /* count lines for the table size */
        size_t nlines = 1;
        for (const u8 *q = p; q < end; q++)
            nlines += *q == '\n';
        pair_table_init(b, nlines);
        b->merge_id = sl_xmalloc(sl_mul_size(nlines, sizeof(uint32_t)));
        uint64_t line = 0, rank = 0;
        while (p < end && !rc) {
            const u8 *nl = memchr(p, '\n', (size_t)(end - p));
            const u8 *le = nl ? nl : end;
            line++;
            const u8 *re = le;
            if (re > p && re[-1] == '\r')
                re--;
            if (re == p || (line == 1 && re - p >= 8 && memcmp(p, "#version", 8) == 0)) {
                p = le + (nl ? 1 : 0);
                continue;
            }
            const u8 *sp = memchr(p, ' ', (size_t)(re - p));
            if (!sp || sp == p || sp + 1 >= re || memchr(sp + 1, ' ', (size_t)(re - sp - 1))) {
                rc = sl_err_set(
                    SL_ERR_FORMAT,
                    "cannot load merges '%s': line %llu is not two symbols separated by a space",
                    name, (unsigned long long)line);
                break;
            }
            int64_t l = -1, r = -1, m = -1;
            if (unmap_symbol(u2b, (const char *)p, (size_t)(sp - p), &sym) == 0)
                l = bpe_vocab_find(b, (const u8 *)sym.data, sym.len);
            if (unmap_symbol(u2b, (const char *)sp + 1, (size_t)(re - sp - 1), &sym2) == 0)
                r = bpe_vocab_find(b, (const u8 *)sym2.data, sym2.len);
            if (l >= 0 && r >= 0) {
                sl_buf_append(&sym, sym2.data, sym2.len);
                m = bpe_vocab_find(b, (const u8 *)sym.data, sym.len);
            }
            if (m < 0) {
                const char *which = l < 0   ? "its first symbol"
                                    : r < 0 ? "its second symbol"
                                            : "the merged token";
                rc = sl_err_set(SL_ERR_FORMAT,
                                "cannot load merges '%s': line %llu ('%.*s'): %s is not in the "
                                "vocabulary\nhint: are the vocabulary and merges files from the "
                                "same tokenizer?",
                                name, (unsigned long long)line, (int)(re - p > 60 ? 60 : re - p),
                                (const char *)p, which);
                break;
            }
            if (rank >= (1u << BPE_RANK_BITS) - 1) {
                rc = sl_err_set(SL_ERR_TOOBIG, "cannot load merges '%s': more than %u merges", name,
                                (1u << BPE_RANK_BITS) - 2);
                break;
            }
            b->merge_id[rank] = (uint32_t)m;
            b->n_merges = (uint32_t)rank + 1;
            pair_put(b, (uint32_t)l, (uint32_t)r, (uint32_t)rank, 0);
            merge_count = rank + 1;
            b->flags[m] &= (u8)~FL_SPECIAL;
            rank++;
            p = le + (nl ? 1 : 0);
        }
    }
    if (!rc) {
        for (uint32_t id = 0; id < b->n_vocab; id++)
            if (b->flags[id] & FL_SPECIAL) {
                char *s =
                    sl_xstrndup((const char *)b->bytes + b->off[id], b->off[id + 1] - b->off[id]);
                add_special(b, s, id);
                free(s);
            }
        /* merge k usually makes token k + 256 (GPT-2 and most merges files): then the
         * merged id is computed, not looked up */
        int64_t off = merge_count ? (int64_t)b->merge_id[0] : 0;
        int affine = 1;
        for (uint64_t r = 0; r < merge_count && affine; r++)
            affine = (int64_t)b->merge_id[r] == (int64_t)r + off;
        if (affine && off >= 0) {
            free(b->merge_id);
            b->merge_id = NULL;
            b->merge_off = (uint32_t)off;
        }
        build_bp(b);
    }
    free(mapped);
    sl_buf_release(&sym);
    sl_buf_release(&sym2);
    toklist_release(&t);
    if (rc) {
        bpe_free(b);
        return rc;
    }
    *out = b;
    return 0;
}

/* 1 when a merges file has a line other than blanks and the leading "#version". */
static int has_merges(const char *p, size_t n)
{
    const char *end = p + n;
    for (int first = 1; p < end; first = 0) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        size_t len = (size_t)(le - p);
        while (len && (p[len - 1] == '\r' || p[len - 1] == ' ' || p[len - 1] == '\t'))
            len--;
        if (len && !(first && len >= 8 && !memcmp(p, "#version", 8)))
            return 1;
        p = nl ? nl + 1 : end;
    }
    return 0;
}

int bpe_load_gpt2(struct bpe **out, const char *vocab_path, const char *merges_path)
{
    *out = NULL;
    struct bpe_cache_key key;
    int cache = bpe_cache_on();
    if (cache && !bpe_cache_key_files(&key, "gpt2", 0, vocab_path, merges_path) &&
        (*out = bpe_cache_get(key)) != NULL)
        return 0;
    struct sl_buf v = SL_BUF_INIT, m = SL_BUF_INIT;
    sl_buf_init(&v, MAX_FILE);
    sl_buf_init(&m, MAX_FILE);
    int rc = sl_read_file(vocab_path, &v);
    if (rc)
        rc = sl_err_wrap(rc, "cannot load vocabulary: ");
    if (!rc && (rc = sl_read_file(merges_path, &m)))
        rc = sl_err_wrap(rc, "cannot load merges: ");
    if (!rc && !has_merges(m.data ? m.data : "", m.len))
        rc = sl_err_set(SL_ERR_FORMAT,
                        "cannot load merges '%s' (with vocabulary '%s'): the file has no merges "
                        "(%zu bytes)\nhint: a merges file has one 'A B' pair a line after its "
                        "'#version' line; was it cut or saved empty?",
                        merges_path, vocab_path, m.len);
    if (!rc) {
        /* messages name the file they are about */
        rc = bpe_load_gpt2_mem(out, v.data ? v.data : "", v.len, m.data ? m.data : "", m.len,
                               vocab_path);
        /* the key of the bytes read (the files may have changed since they were hashed) */
        if (!rc && cache)
            bpe_cache_put(*out, bpe_cache_key("gpt2", 0, v.data ? v.data : "", v.len,
                                              m.data ? m.data : "", m.len));
        if (rc && strstr(sl_err_msg(), "cannot load merges '")) {
            char *msg = sl_xstrdup(sl_err_msg());
            const char *rest = strstr(msg, "': ") + 3;
            sl_err_set(rc, "cannot load merges '%s' (with vocabulary '%s'): %s", merges_path,
                       vocab_path, rest);
            free(msg);
        }
    }
    sl_buf_release(&v);
    sl_buf_release(&m);
    return rc;
}

int bpe_load_gpt2_dir(struct bpe **out, const char *dir)
{
    static const char *const pairs[][2] = { { "vocab.json", "merges.txt" },
                                            { "encoder.json", "vocab.bpe" } };
    for (size_t i = 0; i < 2; i++) {
        char *v = sl_xasprintf("%s/%s", dir, pairs[i][0]);
        char *m = sl_xasprintf("%s/%s", dir, pairs[i][1]);
        FILE *f = fopen(v, "rb");
        if (f) {
            fclose(f);
            int rc = bpe_load_gpt2(out, v, m);
            free(v);
            free(m);
            return rc;
        }
        free(v);
        free(m);
    }
    *out = NULL;
    return sl_err_set(
        SL_ERR_NOTFOUND,
        "cannot load GPT-2 tokenizer from '%s': no vocab.json or encoder.json there\n"
        "hint: the directory needs vocab.json + merges.txt (or encoder.json + vocab.bpe)",
        dir);
}
