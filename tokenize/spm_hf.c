/* A SentencePiece model as a Hugging Face tokenizer.json that gives the ids SentencePiece
 * (and sluice's encoder) gives: the normalizer spelled out as the library's steps, the
 * pieces as a Unigram model or as a BPE model whose merges are ranked by the pieces'
 * scores. docs/tokenizers.md ("Exported tokenizers") says what is exact and what is not. */
#include "tokenize/spm_enc_impl.h"

#include "core/buf.h"
#include "core/err.h"
#include "core/json.h"

#include <stdlib.h>
#include <string.h>

/* The score given to pieces that SentencePiece never matches in text (control, unknown,
 * byte and unused pieces): far below any path of normal pieces, so that the Unigram model
 * of tokenizers, which matches every piece of its vocabulary, never picks one. It lowers
 * that model's <unk> score too (its minimum score less 10), which changes nothing while a
 * character without a piece of its own is in no piece either: every path then holds the
 * same number of <unk>. */
#define UNMATCHED_SCORE (-1e9)

static const char *piece_str(const struct spm_enc *m, uint32_t id, size_t *n)
{
    *n = m->p[id].len;
    return m->strs + m->p[id].off;
}

static int put_str(struct sl_buf *b, const char *s, size_t n)
{
    return sl_buf_json_str(b, s, n);
}

/* Pieces the text never reaches through the model: SentencePiece leaves them out of its
 * matcher (control, unknown, byte) or splits them again (unused). */
static int unmatched(const struct piece *p)
{
    return p->type == PT_CONTROL || p->type == PT_UNKNOWN || p->type == PT_BYTE ||
           p->type == PT_UNUSED;
}

/* Whether text can be cut into words at each U+2581 without changing the ids: no piece the
 * model matches holds U+2581 past its first byte (user-defined pieces are matched before
 * the model and do not count). */
static int splits_at_space(const struct spm_enc *m)
{
    if (!m->escape_ws || m->ws_suffix)
        return 0;
    for (uint32_t i = 0; i < m->n; i++) {
        const struct piece *p = &m->p[i];
        if (p->type != PT_NORMAL)
            continue;
        const char *s = m->strs + p->off;
        for (uint32_t o = 1; o + 3 <= p->len; o++)
            if (!memcmp(s + o, SPACE_SYM, 3))
                return 0;
    }
    return 1;
}

static int has_user(const struct spm_enc *m)
{
    for (uint32_t i = 0; i < m->n; i++)
        if (m->p[i].type == PT_USER)
            return 1;
    return 0;
}

/* added_tokens: control and unknown pieces as special tokens (matched in raw text only
 * when special tokens are not split, which the exported configuration turns off), and
 * user-defined pieces as ordinary added tokens matched in normalized text. */
static int added_tokens(const struct spm_enc *m, struct sl_buf *b)
{
    int rc = sl_buf_puts(b, "  \"added_tokens\": [");
    int first = 1;
    for (uint32_t i = 0; i < m->n && !rc; i++) {
        const struct piece *p = &m->p[i];
        if (p->type != PT_CONTROL && p->type != PT_UNKNOWN && p->type != PT_USER)
            continue;
        size_t n;
        const char *s = piece_str(m, i, &n);
        int user = p->type == PT_USER;
        rc = sl_buf_printf(b, "%s\n    {\"id\": %u, \"content\": ", first ? "" : ",", i);
        rc = rc ? rc : put_str(b, s, n);
        rc = rc ? rc
                : sl_buf_printf(b,
                                ", \"single_word\": false, \"lstrip\": false, \"rstrip\": false, "
                                "\"normalized\": %s, \"special\": %s}",
                                user ? "true" : "false", user ? "false" : "true");
        first = 0;
    }
    return rc ? rc : sl_buf_puts(b, first ? "],\n" : "\n  ],\n");
}

/* The normalizer: the precompiled character map, SentencePiece's whitespace rules
 * (leading and trailing spaces dropped, runs of spaces made one) and the escaping of
 * spaces; the dummy prefix is the pre-tokenizer's, so that it is added once, at the start
 * of the text, and not after a user-defined piece. */
static int normalizer(const struct spm_enc *m, struct sl_buf *b)
{
    int rc = sl_buf_puts(b, "  \"normalizer\": {\"type\": \"Sequence\", \"normalizers\": [");
    const char *sep = "";
    if (!rc && m->da_n) {
        /* the map as the model stores it: uint32 size of the double array, the array, the
         * NUL-separated replacement strings */
        struct sl_buf map = SL_BUF_INIT;
        uint32_t tsize = (uint32_t)(m->da_n * 4);
        rc = sl_buf_append(&map, &tsize, 4);
        rc = rc ? rc : sl_buf_append(&map, m->da, m->da_n * 4);
        rc = rc ? rc : sl_buf_append(&map, m->norm_str, m->norm_n);
        rc = rc ? rc : sl_buf_puts(b, "\n    {\"type\": \"Precompiled\", \"precompiled_charsmap\": \"");
        rc = rc ? rc : sl_buf_base64(b, map.data, map.len);
        rc = rc ? rc : sl_buf_puts(b, "\"}");
        sl_buf_release(&map);
        sep = ",";
    }
    /* leading spaces: dropped, or (with user-defined pieces, where the pre-tokenizer adds
     * the dummy prefix to a span that starts the text and does not start with a space)
     * made one, which stands for the prefix */
    if (!rc && m->remove_extra_ws) {
        rc = sl_buf_printf(b,
                           "%s\n    {\"type\": \"Replace\", \"pattern\": {\"Regex\": \"\\\\A +\"}, "
                           "\"content\": \"%s\"},"
                           "\n    {\"type\": \"Replace\", \"pattern\": {\"Regex\": \" +\\\\z\"}, "
                           "\"content\": \"\"},"
                           "\n    {\"type\": \"Replace\", \"pattern\": {\"Regex\": \" {2,}\"}, "
                           "\"content\": \" \"}",
                           sep, has_user(m) && m->add_dummy_prefix && !m->ws_suffix ? " " : "");
        sep = ",";
    }
    /* the dummy prefix: here, before the first character whatever it is, unless a
     * user-defined piece is matched in normalized text (then this normalizer would run on
     * its text too): the pre-tokenizer adds it then, to every span that does not start with
     * a space (after a user-defined piece too, which SentencePiece does not do) */
    if (!rc && m->add_dummy_prefix && !m->ws_suffix && !has_user(m)) {
        rc = sl_buf_printf(b, "%s\n    {\"type\": \"Prepend\", \"prepend\": \" \"}", sep);
        sep = ",";
    }
    if (!rc && m->escape_ws) {
        rc = sl_buf_printf(b,
                           "%s\n    {\"type\": \"Replace\", \"pattern\": {\"String\": \" \"}, "
                           "\"content\": \"" SPACE_SYM "\"}",
                           sep);
        sep = ",";
    }
    if (!rc && m->ws_suffix && m->add_dummy_prefix)
        rc = sl_buf_printf(b,
                           "%s\n    {\"type\": \"Replace\", \"pattern\": {\"Regex\": \"(?<=[\\\\s\\\\S])\\\\z\"}, "
                           "\"content\": \"%s\"}",
                           sep, m->escape_ws ? SPACE_SYM : " ");
    return rc ? rc : sl_buf_puts(b, "\n  ]},\n");
}

static int pre_tokenizer_and_decoder(const struct spm_enc *m, struct sl_buf *b)
{
    const char *ws = m->escape_ws ? SPACE_SYM : " ";
    const char *scheme = m->add_dummy_prefix && !m->ws_suffix && has_user(m) ? "first" : "never";
    int rc = sl_buf_printf(b,
                           "  \"pre_tokenizer\": {\"type\": \"Metaspace\", \"replacement\": \"%s\", "
                           "\"prepend_scheme\": \"%s\", \"split\": %s},\n"
                           "  \"post_processor\": null,\n",
                           ws, scheme, splits_at_space(m) ? "true" : "false");
    rc = rc ? rc
            : sl_buf_printf(b,
                            "  \"decoder\": {\"type\": \"Sequence\", \"decoders\": [\n"
                            "    {\"type\": \"Replace\", \"pattern\": {\"String\": \"%s\"}, "
                            "\"content\": \" \"},\n"
                            "    {\"type\": \"ByteFallback\"},\n    {\"type\": \"Fuse\"}",
                            ws);
    if (!rc && m->add_dummy_prefix)
        rc = sl_buf_printf(b, ",\n    {\"type\": \"Strip\", \"content\": \" \", \"start\": %d, "
                              "\"stop\": %d}",
                           m->ws_suffix ? 0 : 1, m->ws_suffix ? 1 : 0);
    return rc ? rc : sl_buf_puts(b, "\n  ]},\n");
}

static int unigram_model(const struct spm_enc *m, struct sl_buf *b)
{
    int rc = sl_buf_printf(b, "  \"model\": {\"type\": \"Unigram\", \"unk_id\": %d, \"vocab\": [",
                           m->unk);
    for (uint32_t i = 0; i < m->n && !rc; i++) {
        size_t n;
        const char *s = piece_str(m, i, &n);
        rc = sl_buf_puts(b, i ? ",\n    [" : "\n    [");
        rc = rc ? rc : put_str(b, s, n);
        rc = rc ? rc : sl_buf_puts(b, ", ");
        rc = rc ? rc
                : sl_json_put_double(b, unmatched(&m->p[i]) ? UNMATCHED_SCORE
                                                             : (double)m->p[i].score);
        rc = rc ? rc : sl_buf_putc(b, ']');
    }
    return rc ? rc
              : sl_buf_printf(b, "\n  ], \"byte_fallback\": %s}\n}\n",
                              m->byte_fallback ? "true" : "false");
}

/* A merge of two pieces into a third, ranked by the third's score (SentencePiece merges
 * the pair whose piece scores highest, the leftmost first: the BPE model of tokenizers
 * merges the pair of lowest rank, the leftmost first). */
struct merge {
    float score;
    uint32_t id, left, right;
};

static int merge_cmp(const void *a, const void *b)
{
    const struct merge *x = a, *y = b;
    if (x->score != y->score)
        return x->score > y->score ? -1 : 1;
    if (x->id != y->id)
        return x->id < y->id ? -1 : 1;
    return x->left < y->left ? -1 : x->left > y->left;
}

/* Every split of a normal piece at a character boundary into two normal pieces. */
static size_t collect_merges(const struct spm_enc *m, struct merge **out)
{
    size_t n = 0, cap = 0;
    struct merge *v = NULL;
    for (uint32_t i = 0; i < m->n; i++) {
        const struct piece *p = &m->p[i];
        if (p->type != PT_NORMAL)
            continue;
        const char *s = m->strs + p->off;
        for (uint32_t k = 1; k < p->len; k++) {
            if (((unsigned char)s[k] & 0xC0) == 0x80)
                continue;
            int64_t l = ptab_find(m, &m->normal, s, k);
            int64_t r = ptab_find(m, &m->normal, s + k, p->len - k);
            if (l < 0 || r < 0 || m->p[l].type != PT_NORMAL || m->p[r].type != PT_NORMAL)
                continue;
            if (n == cap) {
                cap = cap ? 2 * cap : 4096;
                v = sl_xrealloc(v, cap * sizeof(*v));
            }
            v[n++] = (struct merge){ p->score, i, (uint32_t)l, (uint32_t)r };
        }
    }
    if (n)
        qsort(v, n, sizeof(*v), merge_cmp);
    *out = v;
    return n;
}

static int bpe_model(const struct spm_enc *m, struct sl_buf *b)
{
    size_t n;
    int rc = sl_buf_puts(b, "  \"model\": {\"type\": \"BPE\", \"dropout\": null, \"unk_token\": ");
    const char *s = piece_str(m, (uint32_t)m->unk, &n);
    rc = rc ? rc : put_str(b, s, n);
    rc = rc ? rc
            : sl_buf_printf(b,
                            ", \"continuing_subword_prefix\": null, \"end_of_word_suffix\": null, "
                            "\"fuse_unk\": true, \"byte_fallback\": %s, \"ignore_merges\": false,"
                            "\n  \"vocab\": {",
                            m->byte_fallback ? "true" : "false");
    for (uint32_t i = 0; i < m->n && !rc; i++) {
        s = piece_str(m, i, &n);
        rc = sl_buf_puts(b, i ? ",\n    " : "\n    ");
        rc = rc ? rc : put_str(b, s, n);
        rc = rc ? rc : sl_buf_printf(b, ": %u", i);
    }
    rc = rc ? rc : sl_buf_puts(b, "\n  },\n  \"merges\": [");
    struct merge *v = NULL;
    size_t nm = rc ? 0 : collect_merges(m, &v);
    for (size_t i = 0; i < nm && !rc; i++) {
        rc = sl_buf_puts(b, i ? ",\n    [" : "\n    [");
        s = piece_str(m, v[i].left, &n);
        rc = rc ? rc : put_str(b, s, n);
        rc = rc ? rc : sl_buf_puts(b, ", ");
        s = piece_str(m, v[i].right, &n);
        rc = rc ? rc : put_str(b, s, n);
        rc = rc ? rc : sl_buf_putc(b, ']');
    }
    free(v);
    return rc ? rc : sl_buf_puts(b, "\n  ]}\n}\n");
}

int spm_enc_tokenizer_json(const struct spm_enc *m, struct sl_buf *out)
{
    int rc = sl_buf_puts(out, "{\n  \"version\": \"1.0\",\n  \"truncation\": null,\n"
                              "  \"padding\": null,\n");
    rc = rc ? rc : added_tokens(m, out);
    rc = rc ? rc : normalizer(m, out);
    rc = rc ? rc : pre_tokenizer_and_decoder(m, out);
    rc = rc ? rc : m->type == MT_BPE ? bpe_model(m, out) : unigram_model(m, out);
    return rc ? sl_err_set(rc, "cannot write tokenizer.json: over %zu bytes", out->max) : 0;
}
