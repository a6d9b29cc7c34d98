/* Encoding with a Hugging Face tokenizer.json (struct hf): added tokens, normalizers,
 * byte-level BPE on the engine of tokenize/bpe.h, WordPiece with BERT's pre-tokenizer. The
 * steps and their order are those of the `tokenizers` library. */
#include "tokenize/hf.h"

#include "core/alloc.h"
#include "core/buf.h"
#include "core/err.h"
#include "core/utf8.h"
#include "tokenize/bpe.h"
#include "tokenize/bpe_impl.h"
#include "tokenize/hf_impl.h"
#include "tokenize/hf_unicode.h"
#include "tokenize/tiktoken.h"
#include "tokenize/unicat.h"

#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#define MAX_SEGMENT ((size_t)1 << 31)

#define WP_CACHE_BITS 13
#define WP_CACHE_LEN  23
#define WP_CACHE_IDS  6

/* A recent WordPiece word and its ids (len 0: empty). */
struct wp_cache {
    uint8_t len, nids;
    char w[WP_CACHE_LEN];
    uint32_t ids[WP_CACHE_IDS];
};

struct hf_enc {
    const struct hf *h;
    struct bpe_enc *bpe;
    struct sl_buf fix;                /* the text with invalid UTF-8 replaced */
    struct sl_buf norm, tmp, scratch; /* normalizing */
    struct sl_buf word;               /* a word with its prefix */
    struct tok_ids wids;              /* ids of one WordPiece word */
    struct wp_cache *cache;
};

uint32_t hf_vocab_size(const struct hf *h)
{
    return h->vocab_size;
}

const char *hf_describe(const struct hf *h)
{
    return h->desc;
}

int64_t hf_token_id(const struct hf *h, const char *s)
{
    size_t n = strlen(s);
    for (size_t i = 0; i < h->nadded; i++)
        if (h->added[i].len == n && !memcmp(h->added[i].s, s, n))
            return h->added[i].id;
    if (h->model == HF_WORDPIECE)
        return n ? hf_wp_find(&h->wp, s, n) : -1;
    return n ? bpe_token_id(h->bpe, s, n) : -1;
}

/* The added token named s, or -1. */
static int64_t added_named(const struct hf *h, const char *s)
{
    for (size_t i = 0; i < h->nadded; i++)
        if (!strcmp(h->added[i].s, s))
            return h->added[i].id;
    return -1;
}

int64_t hf_eod_id(const struct hf *h)
{
    /* after the tiktoken families' (byte-level BPE layouts), SentencePiece's, Gemma's, BERT's */
    static const char *const others[] = { "</s>", "<eos>", "[SEP]" };
    int64_t id = -1;
    const char *eod;
    for (size_t k = 0; id < 0 && (eod = tiktoken_eod_token(k)); k++)
        id = added_named(h, eod);
    for (size_t k = 0; id < 0 && k < sizeof(others) / sizeof(others[0]); k++)
        id = added_named(h, others[k]);
    return id;
}

const char *hf_added_content(const struct hf *h, uint32_t id)
{
    for (size_t i = 0; i < h->nadded; i++)
        if (h->added[i].id == id)
            return h->added[i].s;
    return NULL;
}

struct hf_enc *hf_enc_new_shared(const struct hf *h, struct bpe_shared *sh)
{
    struct hf_enc *e = sl_xcalloc(1, sizeof(*e));
    e->h = h;
    if (h->bpe)
        e->bpe = bpe_enc_new_shared(h->bpe, sh);
    else
        e->cache = sl_xcalloc((size_t)1 << WP_CACHE_BITS, sizeof(*e->cache));
    return e;
}

struct hf_enc *hf_enc_new(const struct hf *h)
{
    return hf_enc_new_shared(h, NULL);
}

int hf_is_bpe(const struct hf *h)
{
    return h->bpe != NULL;
}

void hf_enc_free(struct hf_enc *e)
{
    if (!e)
        return;
    bpe_enc_free(e->bpe);
    sl_buf_release(&e->fix);
    sl_buf_release(&e->norm);
    sl_buf_release(&e->tmp);
    sl_buf_release(&e->scratch);
    sl_buf_release(&e->word);
    tok_ids_release(&e->wids);
    free(e->cache);
    free(e);
}

/* ---- characters ----------------------------------------------------------------------- */

/* Code point at s (valid UTF-8 or one byte as itself); its length in *k. */
static inline uint32_t cp_at(const unsigned char *s, size_t n, size_t *k)
{
    if (s[0] < 0x80) {
        *k = 1;
        return s[0];
    }
    uint32_t cp;
    *k = sl_utf8_decode(s, n, &cp);
    if (!*k) {
        *k = 1;
        return 0x110000; /* no class */
    }
    return cp;
}

static inline int is_ws(uint32_t cp)
{
    return (unicat_class(cp) & UC_WS) != 0;
}

/* Rust's char::is_alphanumeric or '_' (added tokens' single_word). */
static inline int is_word_char(uint32_t cp)
{
    return cp == '_' || (unicat_class(cp) & (UC_L | UC_N)) != 0;
}

/* Start of the character that ends at s[end] (end > 0). */
static size_t prev_char(const unsigned char *s, size_t start, size_t end)
{
    size_t i = end - 1;
    while (i > start && end - i < 4 && (s[i] & 0xC0) == 0x80)
        i--;
    size_t k;
    cp_at(s + i, end - i, &k);
    return i + k == end ? i : end - 1;
}

/* ---- normalizers ---------------------------------------------------------------------- */

/* c is in the sorted list v (an exception of tokenize/hf_unicode.h) */
static int in_list(const uint32_t *v, size_t n, uint32_t c)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (v[mid] == c)
            return 1;
        if (v[mid] < c)
            lo = mid + 1;
        else
            hi = mid;
    }
    return 0;
}

/* A nonspacing mark (Mn) in the library's tables. */
static int is_mn(uint32_t c)
{
    if (c < 0x300)
        return 0;
    if (utf8proc_category((utf8proc_int32_t)c) == UTF8PROC_CATEGORY_MN)
        return !in_list(hf_mn_keep, hf_mn_keep_n, c);
    return in_list(hf_mn_drop, hf_mn_drop_n, c);
}

static uint32_t to_lower(uint32_t c)
{
    size_t lo = 0, hi = hf_lower_from_n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (hf_lower_from[mid] == c)
            return hf_lower_to[mid];
        if (hf_lower_from[mid] < c)
            lo = mid + 1;
        else
            hi = mid;
    }
    return (uint32_t)utf8proc_tolower((utf8proc_int32_t)c);
}

static int is_cjk(uint32_t c)
{
    return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) ||
           (c >= 0x20000 && c <= 0x2A6DF) || (c >= 0x2A700 && c <= 0x2B73F) ||
           (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
           (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

/* BertNormalizer's control characters: categories Cc Cf Co, except \t \n \r (not the
 * unassigned ones). */
static int is_bert_control(uint32_t c)
{
    if (c == '\t' || c == '\n' || c == '\r')
        return 0;
    if (c < 0x80)
        return c < 0x20 || c == 0x7F;
    utf8proc_category_t cat = utf8proc_category((utf8proc_int32_t)c);
    return (cat == UTF8PROC_CATEGORY_CC || cat == UTF8PROC_CATEGORY_CF ||
            cat == UTF8PROC_CATEGORY_CO || cat == UTF8PROC_CATEGORY_CS) &&
           !in_list(hf_clean_keep, hf_clean_keep_n, c);
}

/* A Unicode form of [s, s+n) appended to o. ASCII is left as it is: only the runs of
 * other characters go to libutf8proc, each with the ASCII character before it (the only
 * one such a run can compose with: two ASCII characters never compose, and an ASCII
 * character is a starter, so nothing is reordered across it). */
static int unicode_form(const char *s, size_t n, int options, struct sl_buf *o)
{
    size_t i = 0;
    int rc = 0;
    while (i < n && !rc) {
        size_t a = i;
        while (i < n && (unsigned char)s[i] < 0x80)
            i++;
        if (i == n) {
            rc = sl_buf_append(o, s + a, n - a);
            break;
        }
        size_t start = i > a ? i - 1 : i; /* the ASCII character before the run */
        if (start > a)
            rc = sl_buf_append(o, s + a, start - a);
        while (i < n && (unsigned char)s[i] >= 0x80)
            i++;
        if (rc)
            break;
        utf8proc_uint8_t *dst = NULL;
        utf8proc_ssize_t m =
            utf8proc_map((const utf8proc_uint8_t *)s + start, (utf8proc_ssize_t)(i - start), &dst,
                         (utf8proc_option_t)(UTF8PROC_STABLE | options));
        if (m < 0)
            return sl_err_set(SL_ERR_FORMAT, "cannot normalize text: %s", utf8proc_errmsg(m));
        rc = sl_buf_append(o, dst, (size_t)m);
        free(dst);
    }
    return rc;
}

static int is_bert_punct(uint32_t c);

void hf_build_tables(struct hf *h)
{
    h->uflags = sl_xcalloc(0x10000, 1);
    h->ulower = sl_xmalloc(0x10000 * sizeof(uint16_t));
    for (uint32_t c = 0; c < 0x10000; c++) {
        unsigned f = 0;
        uint32_t lo = c;
        if (c < 0xD800 || c > 0xDFFF) {
            f |= is_bert_control(c) ? HF_UF_CTRL : 0;
            f |= is_ws(c) ? HF_UF_WS : 0;
            f |= is_cjk(c) ? HF_UF_CJK : 0;
            f |= is_mn(c) ? HF_UF_MN : 0;
            f |= is_bert_punct(c) ? HF_UF_PUNCT : 0;
            lo = to_lower(c);
            if (lo != c && lo < 0x10000 && c != 0x130)
                f |= HF_UF_LOWER;
        }
        h->uflags[c] = (unsigned char)f;
        h->ulower[c] = (uint16_t)(f & HF_UF_LOWER ? lo : c);
    }
}


/* The HF_UF_* flags of c (a table lookup in the BMP). */
static inline unsigned uflags_of(const struct hf *h, uint32_t c)
{
    if (c < 0x10000)
        return h->uflags[c];
    uint32_t lo = to_lower(c);
    return (is_bert_control(c) ? HF_UF_CTRL : 0) | (is_ws(c) ? HF_UF_WS : 0) |
           (is_cjk(c) ? HF_UF_CJK : 0) | (is_mn(c) ? HF_UF_MN : 0) |
           (is_bert_punct(c) ? HF_UF_PUNCT : 0) | (lo != c ? HF_UF_LOWER : 0);
}

/* One normalizer step from [s, s+n) (valid UTF-8) to o. */
static int norm_step(const struct hf *h, int step, const char *s, size_t n, struct sl_buf *o,
                     struct sl_buf *scratch)
{
    switch (step) {
    case HF_N_NFC:
        return unicode_form(s, n, UTF8PROC_COMPOSE, o);
    case HF_N_NFD:
        return unicode_form(s, n, UTF8PROC_DECOMPOSE, o);
    case HF_N_NFKC:
        return unicode_form(s, n, UTF8PROC_COMPOSE | UTF8PROC_COMPAT, o);
    case HF_N_NFKD:
        return unicode_form(s, n, UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT, o);
    case HF_N_BERT_STRIP: {
        sl_buf_reset(scratch);
        int rc = unicode_form(s, n, UTF8PROC_DECOMPOSE, scratch);
        if (rc)
            return rc;
        return norm_step(h, HF_N_STRIP, scratch->data ? scratch->data : "", scratch->len, o, NULL);
    }
    default:
        break;
    }
    /* at most 3 bytes out for each byte in: CJK gets a space on each side, and a lower
     * case letter is at most 3 bytes where the upper case one was 2 */
    if (n > (SIZE_MAX - 16) / 3 || sl_buf_reserve(o, 3 * n + 16))
        return sl_err_set(SL_ERR_TOOBIG, "cannot normalize a text of %zu bytes", n);
    const unsigned char *p = (const unsigned char *)s, *end = p + n;
    unsigned char *w = (unsigned char *)o->data + o->len;
    while (p < end) {
        if (*p < 0x80) {
            unsigned char c = *p++;
            if (step == HF_N_LOWER)
                *w++ = (unsigned char)(c >= 'A' && c <= 'Z' ? c + 32 : c);
            else if (step != HF_N_BERT_CLEAN)
                *w++ = c;
            else if (c == '\t' || c == '\n' || c == '\r' || c == ' ')
                *w++ = ' ';
            else if (c >= 0x20 && c != 0x7F)
                *w++ = c; /* other controls are dropped */
            continue;
        }
        size_t k;
        uint32_t c = sl_utf8_decode_valid(p, &k);
        unsigned f = uflags_of(h, c);
        if (step == HF_N_LOWER) {
            if (c == 0x130) {
                memcpy(w, "i\xCC\x87", 3);
                w += 3;
            } else if (f & HF_UF_LOWER) {
                w += sl_utf8_encode(c < 0x10000 ? h->ulower[c] : to_lower(c), (char *)w);
            } else {
                memcpy(w, p, k);
                w += k;
            }
        } else if (step == HF_N_STRIP) {
            if (!(f & HF_UF_MN)) {
                memcpy(w, p, k);
                w += k;
            }
        } else if (step == HF_N_BERT_CLEAN) {
            if (c == 0xFFFD || (f & HF_UF_CTRL)) {
            } else if (f & HF_UF_WS) {
                *w++ = ' ';
            } else {
                memcpy(w, p, k);
                w += k;
            }
        } else if (step == HF_N_BERT_CJK) {
            int cjk = (f & HF_UF_CJK) != 0;
            if (cjk)
                *w++ = ' ';
            memcpy(w, p, k);
            w += k;
            if (cjk)
                *w++ = ' ';
        }
        p += k;
    }
    o->len = (size_t)((char *)w - o->data);
    o->data[o->len] = 0;
    return 0;
}

/* The largest byte of s (0x7F or below: ASCII; below 0xCC: no code point from U+0300 on,
 * where the combining marks start). */
static unsigned char max_byte(const char *s, size_t n)
{
    unsigned char m = 0;
    for (size_t i = 0; i < n; i++)
        m = (unsigned char)s[i] > m ? (unsigned char)s[i] : m;
    return m;
}

/* Normalize [s, s+n) into e->norm. ASCII text is done in place (the Unicode forms and
 * accent stripping leave it alone), as is NFC of text without combining marks. */
static int normalize(struct hf_enc *e, const char *s, size_t n)
{
    const struct hf *h = e->h;
    sl_buf_reset(&e->norm);
    if (sl_buf_append(&e->norm, s, n))
        return sl_err_set(SL_ERR_TOOBIG, "cannot normalize a text of %zu bytes", n);
    unsigned char top = max_byte(s, n);
    for (int i = 0; i < h->nsteps; i++) {
        int step = h->steps[i];
        if (top < 0x80) {
            char *p = e->norm.data;
            size_t len = e->norm.len, o = 0;
            if (step == HF_N_LOWER) {
                for (size_t k = 0; k < len; k++)
                    p[k] = (char)(p[k] >= 'A' && p[k] <= 'Z' ? p[k] + 32 : p[k]);
            } else if (step == HF_N_BERT_CLEAN) {
                for (size_t k = 0; k < len; k++) {
                    char c = p[k];
                    if (c == '\t' || c == '\n' || c == '\r' || c == ' ')
                        p[o++] = ' ';
                    else if ((unsigned char)c >= 0x20 && c != 0x7F)
                        p[o++] = c; /* other controls are dropped */
                }
                e->norm.len = o;
                if (p)
                    p[o] = 0;
            }
            continue;
        }
        if (step == HF_N_NFC && top < 0xCC)
            continue;
        sl_buf_reset(&e->tmp);
        int rc =
            norm_step(h, step, e->norm.data ? e->norm.data : "", e->norm.len, &e->tmp, &e->scratch);
        if (rc)
            return rc;
        struct sl_buf t = e->norm;
        e->norm = e->tmp;
        e->tmp = t;
        if (step != HF_N_BERT_CJK && step != HF_N_STRIP)
            top = max_byte(e->norm.data ? e->norm.data : "", e->norm.len);
    }
    return 0;
}

/* ---- byte-level BPE ------------------------------------------------------------------- */

static int emit_ids(struct tok_ids *out, const uint32_t *ids, size_t m)
{
    int rc = tok_ids_reserve(out, m);
    if (rc)
        return rc;
    memcpy(out->v + out->n, ids, m * sizeof(uint32_t));
    out->n += m;
    return 0;
}

/* BPE of one word (a space first when the ByteLevel pre-tokenizer adds one to each
 * piece), with ignore_merges' whole-word lookup. */
static int bpe_word(struct hf_enc *e, const unsigned char *p, size_t n, struct tok_ids *out)
{
    const struct hf *h = e->h;
    if (h->prefix_space == 2 && p[0] != ' ') {
        sl_buf_reset(&e->word);
        if (sl_buf_putc(&e->word, ' ') || sl_buf_append(&e->word, p, n))
            return SL_ERR_TOOBIG;
        p = (const unsigned char *)e->word.data;
        n = e->word.len;
    }
    if (h->ignore_merges) {
        int64_t id = bpe_token_id(h->bpe, p, n);
        if (id >= 0)
            return tok_ids_push(out, (uint32_t)id);
    }
    const uint32_t *ids;
    size_t m = bpe_merge_bytes(e->bpe, p, n, &ids);
    return emit_ids(out, ids, m);
}

/* A number piece of the cl100k split, one code point a word (Qwen2's \p{N}). */
static int digits(struct hf_enc *e, const unsigned char *p, size_t n, struct tok_ids *out)
{
    int rc = 0;
    for (size_t i = 0; i < n && !rc;) {
        size_t k;
        cp_at(p + i, n - i, &k);
        rc = e->h->prefix_space == 2 ? bpe_word(e, p + i, k, out)
                                     : bpe_encode(e->bpe, (const char *)p + i, k, out);
        i += k;
    }
    return rc;
}

static int is_ws_piece(const unsigned char *p, size_t n)
{
    size_t k;
    if (!is_ws(cp_at(p, n, &k)))
        return 0;
    return k == n || is_ws(cp_at(p + k, n - k, &k));
}

static int encode_bpe(struct hf_enc *e, const char *text, size_t n, struct tok_ids *out)
{
    const struct hf *h = e->h;
    if (!n)
        return 0;
    if (h->prefix_space == 1 && text[0] != ' ') {
        sl_buf_reset(&e->word);
        if (sl_buf_putc(&e->word, ' ') || sl_buf_append(&e->word, text, n))
            return SL_ERR_TOOBIG;
        return bpe_encode(e->bpe, e->word.data, e->word.len, out);
    }
    if (!h->split_digits && h->prefix_space != 2)
        return bpe_encode(e->bpe, text, n, out);
    /* piece by piece */
    const unsigned char *s = (const unsigned char *)text, *end = s + n, *q = s;
    const unsigned char *run = s, *last = NULL; /* pieces not yet encoded; the last one */
    int last_ws = 0, rc = 0;
    uint32_t lens[64];
    while (q < end && !rc) {
        size_t np = pretok_split(h->kind, q, end, lens, 64);
        for (size_t i = 0; i < np && !rc; i++) {
            size_t len = lens[i], k;
            int number = h->split_digits && (unicat_class(cp_at(q, len, &k)) & UC_N) && k < len;
            if (h->prefix_space == 2) {
                rc = number ? digits(e, q, len, out) : bpe_word(e, q, len, out);
            } else if (number) {
                /* encode the pieces before it as one text: their split is the same, except
                 * that a whitespace piece at the end must be encoded alone (\s+(?!\S)) */
                if (last && last_ws) {
                    if (last > run)
                        rc = bpe_encode(e->bpe, (const char *)run, (size_t)(last - run), out);
                    if (!rc)
                        rc = bpe_encode(e->bpe, (const char *)last, (size_t)(q - last), out);
                } else if (q > run) {
                    rc = bpe_encode(e->bpe, (const char *)run, (size_t)(q - run), out);
                }
                if (!rc)
                    rc = digits(e, q, len, out);
                run = q + len;
                last = NULL;
                last_ws = 0;
            } else {
                last = q;
                last_ws = is_ws_piece(q, len);
            }
            q += len;
        }
    }
    if (!rc && h->prefix_space != 2 && run < end)
        rc = bpe_encode(e->bpe, (const char *)run, (size_t)(end - run), out);
    return rc;
}

/* ---- WordPiece ------------------------------------------------------------------------ */

static int is_bert_punct(uint32_t c)
{
    if (c < 0x80)
        return (c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) ||
               (c >= 123 && c <= 126);
    utf8proc_category_t cat = utf8proc_category((utf8proc_int32_t)c);
    if (cat >= UTF8PROC_CATEGORY_PC && cat <= UTF8PROC_CATEGORY_PO)
        return !in_list(hf_punct_not, hf_punct_not_n, c);
    return in_list(hf_punct_extra, hf_punct_extra_n, c);
}

/* WordPiece of one word into e->wids: greedy longest match first from the left, the
 * pieces after the first with the continuing-subword prefix; the unknown token alone when a
 * position has no match or the word is too long. */
static int wordpiece_word(struct hf_enc *e, const char *w, size_t n, size_t nchars)
{
    const struct hf *h = e->h;
    e->wids.n = 0;
    if (nchars > h->max_chars)
        return tok_ids_push(&e->wids, h->unk_id);
    struct sl_buf *cand = &e->word;
    size_t start = 0;
    while (start < n) {
        size_t pre = start ? h->prefix_len : 0;
        size_t end = n;
        if (pre + (end - start) > h->wp.max_len) {
            end = start + (h->wp.max_len > pre ? h->wp.max_len - pre : 0);
            while (end > start && ((unsigned char)w[end] & 0xC0) == 0x80)
                end--;
        }
        const char *base = w + start;
        if (pre) { /* the prefix and the rest of the word, once */
            sl_buf_reset(cand);
            if (sl_buf_append(cand, h->prefix, pre) || sl_buf_append(cand, w + start, end - start))
                return SL_ERR_TOOBIG;
            base = cand->data;
        }
        int64_t id = -1;
        while (end > start) {
            id = hf_wp_find(&h->wp, base, pre + (end - start));
            if (id >= 0)
                break;
            end = prev_char((const unsigned char *)w, start, end);
        }
        if (id < 0) {
            e->wids.n = 0;
            return tok_ids_push(&e->wids, h->unk_id);
        }
        int rc = tok_ids_push(&e->wids, (uint32_t)id);
        if (rc)
            return rc;
        start = end;
    }
    return 0;
}

int hf_wordpiece(struct hf_enc *e, const char *w, size_t n, size_t nchars, struct tok_ids *out)
{
    struct wp_cache *c = NULL;
    if (n <= WP_CACHE_LEN) {
        uint64_t hsh = bpe_hash_bytes((const unsigned char *)w, n);
        c = &e->cache[hsh >> (64 - WP_CACHE_BITS)];
        if (c->len == n && !memcmp(c->w, w, n))
            return emit_ids(out, c->ids, c->nids);
    }
    int rc = wordpiece_word(e, w, n, nchars);
    if (rc)
        return rc;
    if (c && e->wids.n <= WP_CACHE_IDS) {
        memcpy(c->w, w, n);
        c->len = (uint8_t)n;
        c->nids = (uint8_t)e->wids.n;
        memcpy(c->ids, e->wids.v, e->wids.n * sizeof(uint32_t));
    }
    return emit_ids(out, e->wids.v, e->wids.n);
}

/* BertPreTokenizer: words split at whitespace (dropped) and punctuation (kept alone). */
static int encode_wordpiece(struct hf_enc *e, const char *text, size_t n, struct tok_ids *out)
{
    const unsigned char *s = (const unsigned char *)text;
    size_t i = 0, w = 0, nch = 0;
    int rc = 0;
    while (i < n && !rc) {
        size_t k = 1;
        int ws, punct;
        if (s[i] < 0x80) {
            unsigned char c = s[i];
            ws = c == ' ' || (c >= '\t' && c <= '\r');
            punct = (c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) ||
                    (c >= 123 && c <= 126);
        } else {
            unsigned f = uflags_of(e->h, sl_utf8_decode_valid(s + i, &k));
            ws = (f & HF_UF_WS) != 0;
            punct = !ws && (f & HF_UF_PUNCT);
        }
        if (ws || punct) {
            if (i > w)
                rc = hf_wordpiece(e, text + w, i - w, nch, out);
            if (!rc && punct)
                rc = hf_wordpiece(e, text + i, k, 1, out);
            w = i + k;
            nch = 0;
        } else {
            nch++;
        }
        i += k;
    }
    if (!rc && n > w)
        rc = hf_wordpiece(e, text + w, n - w, nch, out);
    return rc;
}

/* ---- added tokens and the whole text -------------------------------------------------- */

static int model_encode(struct hf_enc *e, const char *s, size_t n, struct tok_ids *out)
{
    const struct hf *h = e->h;
    if (h->model == HF_WORDPIECE)
        return encode_wordpiece(e, s, n, out);
    size_t before = out->n;
    int rc = encode_bpe(e, s, n, out);
    if (!rc && h->nsynth) { /* bytes the vocabulary has no token for are dropped */
        size_t o = before;
        for (size_t i = before; i < out->n; i++)
            if (out->v[i] - h->synth_lo >= h->nsynth)
                out->v[o++] = out->v[i];
        out->n = o;
    }
    return rc;
}

static int split_added(struct hf_enc *e, const char *text, size_t n, int normalized,
                       struct tok_ids *out);

/* A text between added tokens: normalized (then split at the normalized added tokens),
 * pre-tokenized and encoded. */
static int segment(struct hf_enc *e, const char *s, size_t n, int normalized, struct tok_ids *out)
{
    if (!n)
        return 0;
    if (!normalized && e->h->nsteps) {
        int rc = normalize(e, s, n);
        if (rc)
            return rc;
        /* e->norm is not touched again until this segment is done */
        return split_added(e, e->norm.data ? e->norm.data : "", e->norm.len, 1, out);
    }
    return model_encode(e, s, n, out);
}

/* Find the added tokens (normalized or not) in text, leftmost-longest; encode the rest. */
static int split_added(struct hf_enc *e, const char *text, size_t n, int normalized,
                       struct tok_ids *out)
{
    const struct hf *h = e->h;
    const unsigned char *first = normalized ? h->first_norm : h->first_raw;
    const unsigned char *s = (const unsigned char *)text;
    size_t seg = 0, i = 0;
    int rc = 0;
    if (!h->nadded)
        return segment(e, text, n, normalized, out);
    while (i < n && !rc) {
        if (!first[s[i]] ||
            (i + 1 < n && !(h->pair[s[i]][s[i + 1] >> 6] & (1ull << (s[i + 1] & 63))))) {
            i++;
            continue;
        }
        const struct hf_added *m = NULL;
        for (uint32_t k = h->first_at[s[i]]; k < h->first_at[s[i] + 1]; k++) {
            const struct hf_added *a = &h->added[h->by_first[k]];
            if (a->normalized == normalized && a->len <= n - i &&
                (a->len == 1 || a->s[1] == (char)s[i + 1]) && !memcmp(a->s, s + i, a->len)) {
                m = a;
                break;
            }
        }
        if (!m) {
            i++;
            continue;
        }
        size_t ms = i, me = i + m->len, k;
        if (m->single_word) {
            int before = ms > 0 &&
                         is_word_char(cp_at(s + prev_char(s, 0, ms), ms - prev_char(s, 0, ms), &k));
            int after = me < n && is_word_char(cp_at(s + me, n - me, &k));
            if (before || after) {
                i = me;
                continue;
            }
        }
        if (m->lstrip)
            while (ms > seg) {
                size_t p = prev_char(s, seg, ms);
                if (!is_ws(cp_at(s + p, ms - p, &k)))
                    break;
                ms = p;
            }
        if (m->rstrip)
            while (me < n && is_ws(cp_at(s + me, n - me, &k)))
                me += k;
        if (ms > seg)
            rc = segment(e, text + seg, ms - seg, normalized, out);
        if (!rc)
            rc = tok_ids_push(out, m->id);
        seg = i = me;
    }
    if (!rc && seg < n)
        rc = segment(e, text + seg, n - seg, normalized, out);
    return rc;
}

int hf_encode(struct hf_enc *e, const char *text, size_t n, struct tok_ids *out)
{
    const struct hf *h = e->h;
    int replaced = 0;
    if (n > MAX_SEGMENT)
        return sl_err_set(SL_ERR_TOOBIG, "cannot encode a text of %zu bytes (2 GiB at most)", n);
    if ((h->nsteps || h->model == HF_WORDPIECE) && sl_utf8_validate(text, n) != n) {
        sl_buf_reset(&e->fix);
        int rc = sl_utf8_repair(&e->fix, text, n, NULL);
        if (rc)
            return rc;
        text = e->fix.data;
        n = e->fix.len;
        replaced = 1;
    }
    int rc = split_added(e, text, n, 0, out);
    return rc ? rc : replaced;
}

int hf_decode(const struct hf *h, const uint32_t *ids, size_t n, struct sl_buf *out)
{
    for (size_t i = 0; i < n; i++) {
        uint32_t id = ids[i];
        if (id >= h->vocab_size)
            return sl_err_set(SL_ERR_FORMAT, "token id %u is not in the vocabulary (%u ids)", id,
                              h->vocab_size);
        const struct hf_added *a = NULL;
        size_t lo = 0, hi = h->nadded; /* the first added token with this id */
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (h->added[h->by_id[mid]].id < id)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo < h->nadded && h->added[h->by_id[lo]].id == id)
            a = &h->added[h->by_id[lo]];
        int rc;
        if (a) {
            rc = sl_buf_append(out, a->s, a->len);
        } else if (h->model == HF_BPE) {
            rc = bpe_decode(h->bpe, &id, 1, out);
        } else {
            if (id >= h->wp.n_ids || h->wp.off[id] == h->wp.off[id + 1])
                return sl_err_set(SL_ERR_FORMAT, "token id %u is not in the vocabulary (%u ids)",
                                  id, h->vocab_size);
            const char *t = h->wp.bytes + h->wp.off[id];
            size_t len = h->wp.off[id + 1] - h->wp.off[id];
            if (len >= h->prefix_len && h->prefix_len && !memcmp(t, h->prefix, h->prefix_len)) {
                t += h->prefix_len;
                len -= h->prefix_len;
            } else if (i > 0) {
                rc = sl_buf_putc(out, ' ');
                if (rc)
                    return rc;
            }
            rc = sl_buf_append(out, t, len);
        }
        if (rc)
            return rc;
    }
    return 0;
}
