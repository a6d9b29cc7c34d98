/* Encoding and decoding with struct bert (tokenize/bert.h): BERT's BasicTokenizer with
 * Python's semantics (tokenize/bert_unicode.h), words spelled by the WordPiece model of
 * tokenize/hf.c, and Megatron's detokenize. */
#include "tokenize/bert.h"

#include "core/alloc.h"
#include "core/buf.h"
#include "core/err.h"
#include "core/utf8.h"
#include "tokenize/bert_unicode.h"
#include "tokenize/hf.h"
#include "tokenize/hf_impl.h"

#include <stdlib.h>
#include <string.h>

/* Texts longer than this are refused (offsets and counts stay far from overflowing). */
#define MAX_TEXT ((size_t)1 << 31)

struct bert_enc {
    const struct bert *b;
    struct hf_enc *wp;
    struct sl_buf fix;  /* the text with invalid UTF-8 replaced */
    struct sl_buf word; /* one word, after _clean_text */
    struct sl_buf low;  /* that word lower-cased, NFD, without Mn (bert-lower) */
    uint32_t *cp;       /* code points of the word, then of its lower case and NFD */
    size_t cap;
};

struct bert_enc *bert_enc_new(const struct bert *b)
{
    struct bert_enc *e = sl_xcalloc(1, sizeof(*e));
    e->b = b;
    e->wp = hf_enc_new(b->wp);
    return e;
}

void bert_enc_free(struct bert_enc *e)
{
    if (!e)
        return;
    hf_enc_free(e->wp);
    sl_buf_release(&e->fix);
    sl_buf_release(&e->word);
    sl_buf_release(&e->low);
    free(e->cp);
    free(e);
}


/* _run_split_on_punc, then WordPiece of each piece: every punctuation character alone. */
static int split_punct(struct bert_enc *e, const char *w, size_t n, struct tok_ids *out)
{
    const unsigned char *s = (const unsigned char *)w;
    size_t i = 0, start = 0, nch = 0;
    int rc = 0;
    while (i < n && !rc) {
        size_t k;
        uint32_t c = sl_utf8_decode_valid(s + i, &k);
        if (bert_uflags(c) & BU_PUNCT) {
            if (i > start)
                rc = hf_wordpiece(e->wp, w + start, i - start, nch, out);
            if (!rc)
                rc = hf_wordpiece(e->wp, w + i, k, 1, out);
            start = i + k;
            nch = 0;
        } else {
            nch++;
        }
        i += k;
    }
    if (!rc && n > start)
        rc = hf_wordpiece(e->wp, w + start, n - start, nch, out);
    return rc;
}

/* str.lower()'s final sigma: the capital sigma at w[at] follows a cased letter and no cased
 * letter follows it, case-ignorable characters skipped both ways (w: the whole word). */
static int final_sigma(const char *w, size_t n, size_t at)
{
    const unsigned char *s = (const unsigned char *)w;
    unsigned f = 0;
    size_t p = at, k;
    for (;;) { /* back */
        if (p == 0)
            return 0;
        size_t q = p - 1;
        while (q > 0 && (s[q] & 0xC0) == 0x80)
            q--;
        f = bert_uflags(sl_utf8_decode_valid(s + q, &k));
        if (!(f & BU_IGN))
            break;
        p = q;
    }
    if (!(f & BU_CASED))
        return 0;
    for (p = at + 2; p < n; p += k) { /* forward, from after the sigma (2 bytes) */
        f = bert_uflags(sl_utf8_decode_valid(s + p, &k));
        if (!(f & BU_IGN))
            return !(f & BU_CASED);
    }
    return 1;
}

static uint32_t *cp_reserve(struct bert_enc *e, size_t n)
{
    if (n > e->cap) {
        e->cap = n * 2;
        e->cp = sl_xrealloc(e->cp, sl_mul_size(e->cap, sizeof(uint32_t)));
    }
    return e->cp;
}

/* Code points of a chunk of a word: enough of them to amortize, ended before a code point
 * that neither NFD nor its lower case touch, so that no run of combining marks is cut. */
#define CHUNK 256

/* NFD of lo[0..nl) into d (at most 4 code points each): each code point decomposed, then
 * each run of non-starters in the order of their combining classes (stable). */
static size_t nfd(const uint32_t *lo, size_t nl, uint32_t *d)
{
    size_t nd = 0;
    for (size_t i = 0; i < nl; i++) {
        size_t k = bert_uflags(lo[i]) & BU_NFD ? bert_decompose(lo[i], d + nd) : 0;
        if (!k)
            d[nd] = lo[i], k = 1;
        nd += k;
    }
    for (size_t i = 1; i < nd; i++) {
        unsigned c = bert_uflags(d[i]) & BU_NFD ? bert_ccc(d[i]) : 0;
        for (size_t j = i; c && j > 0; j--) {
            unsigned p = bert_uflags(d[j - 1]) & BU_NFD ? bert_ccc(d[j - 1]) : 0;
            if (p <= c)
                break;
            uint32_t t = d[j];
            d[j] = d[j - 1];
            d[j - 1] = t;
        }
    }
    return nd;
}

/* A word with non-ASCII characters, lower case: str.lower(), then _run_strip_accents (NFD,
 * Mn dropped), into e->low as UTF-8, a chunk at a time. */
static int lower_strip(struct bert_enc *e, const char *w, size_t n)
{
    const unsigned char *s = (const unsigned char *)w;
    sl_buf_reset(&e->low);
    for (size_t i = 0; i < n;) {
        /* the chunk's lower case, two code points at most per character */
        size_t nl = 0, k;
        for (size_t m = 0; i < n; m++, i += k) {
            uint32_t *lo = cp_reserve(e, 10 * (nl + 2));
            uint32_t c = sl_utf8_decode_valid(s + i, &k);
            if (c == 0x3A3) {
                lo[nl++] = final_sigma(w, n, i) ? 0x3C2 : 0x3C3;
                continue;
            }
            if (c == 0x130) {
                lo[nl++] = 'i';
                lo[nl++] = 0x307;
                continue;
            }
            unsigned f = bert_uflags(c);
            uint32_t l = f & BU_LOWER ? bert_lower(c) : c;
            if (m >= CHUNK && !(f & BU_NFD) && !(bert_uflags(l) & BU_NFD))
                break;
            lo[nl++] = l;
        }
        uint32_t *d = e->cp + nl;
        size_t nd = nfd(e->cp, nl, d);
        if (sl_buf_reserve(&e->low, nd * 4))
            return SL_ERR_TOOBIG;
        for (size_t j = 0; j < nd; j++)
            if (!(bert_uflags(d[j]) & BU_MN))
                e->low.len += sl_utf8_encode(d[j], e->low.data + e->low.len);
    }
    return 0;
}

/* One word of whitespace_tokenize (cleaned): lower case and accents (bert-lower), then
 * punctuation split and WordPiece. */
static int word(struct bert_enc *e, char *w, size_t n, int ascii, struct tok_ids *out)
{
    if (!e->b->lower)
        return split_punct(e, w, n, out);
    if (ascii) {
        for (size_t i = 0; i < n; i++)
            w[i] = (char)(w[i] >= 'A' && w[i] <= 'Z' ? w[i] + 32 : w[i]);
        return split_punct(e, w, n, out);
    }
    int rc = lower_strip(e, w, n);
    return rc ? rc : split_punct(e, e->low.data, e->low.len, out);
}

int bert_encode(struct bert_enc *e, const char *text, size_t n, struct tok_ids *out)
{
    int replaced = 0;
    if (n > MAX_TEXT)
        return sl_err_set(SL_ERR_TOOBIG, "cannot encode a text of %zu bytes (2 GiB at most)", n);
    if (sl_utf8_validate(text, n) != n) {
        sl_buf_reset(&e->fix);
        int rc = sl_utf8_repair(&e->fix, text, n, NULL);
        if (rc)
            return rc;
        text = e->fix.data;
        n = e->fix.len;
        replaced = 1;
    }
    const unsigned char *s = (const unsigned char *)text;
    struct sl_buf *w = &e->word;
    if (sl_buf_reserve(w, n + 1))
        return sl_err_set(SL_ERR_TOOBIG, "cannot encode a text of %zu bytes", n);
    sl_buf_reset(w);
    int rc = 0, ascii = 1;
    for (size_t i = 0; i < n && !rc;) {
        size_t k;
        uint32_t c = sl_utf8_decode_valid(s + i, &k);
        unsigned f = bert_uflags(c);
        int cjk = c >= 0x3400 && bert_is_cjk(c);
        if (!(f & (BU_DROP | BU_SPACE)) && !cjk) {
            memcpy(w->data + w->len, s + i, k);
            w->len += k;
            ascii &= c < 0x80;
        } else if (!(f & BU_DROP)) { /* the end of a word; a CJK ideograph is one */
            if (w->len)
                rc = word(e, w->data, w->len, ascii, out);
            w->len = 0;
            ascii = 1;
            if (cjk && !rc) {
                memcpy(w->data, s + i, k);
                rc = word(e, w->data, k, 0, out);
            }
        }
        i += k;
    }
    if (!rc && w->len)
        rc = word(e, w->data, w->len, ascii, out);
    w->len = 0;
    return rc ? rc : replaced;
}

/* ---- detokenize --------------------------------------------------------------------- */

/* Python's s.replace(from, to) of buf[start..) in place (to is not longer than from). */
static void replace_all(struct sl_buf *b, size_t start, const char *from, const char *to)
{
    size_t fl = strlen(from), tl = strlen(to), o = start;
    for (size_t i = start; i < b->len;) {
        if (i + fl <= b->len && !memcmp(b->data + i, from, fl)) {
            memcpy(b->data + o, to, tl);
            o += tl;
            i += fl;
        } else {
            b->data[o++] = b->data[i++];
        }
    }
    b->len = o;
    b->data[o] = 0;
}

int bert_decode(const struct bert *b, const uint32_t *ids, size_t n, struct sl_buf *out)
{
    static const char *const cleanup[][2] = {
        { " .", "." },     { " ?", "?" },   { " !", "!" },   { " ,", "," },     { " ' ", "'" },
        { " n't", "n't" }, { " 'm", "'m" }, { " 's", "'s" }, { " 've", "'ve" }, { " 're", "'re" },
    };
    size_t start = out->len;
    int rc = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        size_t len;
        const char *t = bert_token(b, ids[i], &len);
        if (!t) {
            sl_buf_truncate(out, start);
            return sl_err_set(SL_ERR_FORMAT, "token id %u is not in the vocabulary (%u ids)",
                              ids[i], bert_vocab_size(b));
        }
        if (i)
            rc = sl_buf_putc(out, ' ');
        if (!rc)
            rc = sl_buf_append(out, t, len);
    }
    if (rc || out->len == start)
        return rc;
    replace_all(out, start, " ##", "");
    /* .strip(): the white space of str.isspace() at both ends */
    size_t a = start, z = out->len;
    uint32_t c;
    size_t k;
    while (a < z && (k = sl_utf8_decode((unsigned char *)out->data + a, z - a, &c)) &&
           bert_py_isspace(c))
        a += k;
    while (z > a) {
        size_t p = z - 1;
        while (p > a && ((unsigned char)out->data[p] & 0xC0) == 0x80)
            p--;
        if (!sl_utf8_decode((unsigned char *)out->data + p, z - p, &c) || !bert_py_isspace(c))
            break;
        z = p;
    }
    memmove(out->data + start, out->data + a, z - a);
    out->len = start + (z - a);
    out->data[out->len] = 0;
    for (size_t i = 0; i < sizeof(cleanup) / sizeof(cleanup[0]); i++)
        replace_all(out, start, cleanup[i][0], cleanup[i][1]);
    return 0;
}
