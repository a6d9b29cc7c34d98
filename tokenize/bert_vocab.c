/* Loading a BERT vocab.txt into struct bert (tokenize/bert.h) as Megatron-LM's
 * _BertWordPieceTokenizer does: bert_tokenization.load_vocab (Python's text mode: lines end
 * at \n, \r\n or \r; each line str.strip()ped; line N is id N-1), then Megatron's [BOS],
 * [EOS] and <extra_id_N> appended when absent. The WordPiece table is tokenize/hf_wp.c's. */
#include "tokenize/bert.h"

#include "core/alloc.h"
#include "core/buf.h"
#include "core/err.h"
#include "core/stream.h"
#include "core/utf8.h"
#include "tokenize/bert_unicode.h"
#include "tokenize/hf_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A vocab.txt is a few hundred KB to a few MB; 256 MiB keeps the token offsets (32 bits)
 * far from overflowing and a wrong file (a corpus given as vocab.txt) from filling memory. */
#define MAX_FILE (256u << 20)
/* BERT's WordpieceTokenizer max_input_chars_per_word: longer words are [UNK] */
#define MAX_WORD_CHARS 200
/* --vocab-extra-ids: T5 uses 100; ids stay below HF_MAX_IDS anyway */
#define MAX_EXTRA_IDS 1000000u

/* The code point that ends at s[end] (valid UTF-8, end > start): its start. */
static size_t char_before(const char *s, size_t start, size_t end)
{
    size_t i = end - 1;
    while (i > start && ((unsigned char)s[i] & 0xC0) == 0x80)
        i--;
    return i;
}

/* str.strip() of the valid UTF-8 s[*a .. *b). */
static void py_strip(const char *s, size_t *a, size_t *b)
{
    uint32_t cp;
    size_t k;
    while (*a < *b && (k = sl_utf8_decode((const unsigned char *)s + *a, *b - *a, &cp)) &&
           bert_py_isspace(cp))
        *a += k;
    while (*b > *a) {
        size_t p = char_before(s, *a, *b);
        if (!sl_utf8_decode((const unsigned char *)s + p, *b - p, &cp) || !bert_py_isspace(cp))
            break;
        *b = p;
    }
}

/* The lines of text as tokens: bytes and offsets by id (line N is id N-1). */
static int read_lines(const char *text, size_t len, const char *name, char **bytes_out,
                      uint32_t **off_out, uint32_t *n_out)
{
    size_t cap = 1024, n = 0;
    uint32_t *off = sl_xmalloc(cap * sizeof(uint32_t));
    char *bytes = sl_xmalloc(len + 1);
    size_t used = 0, pos = 0;
    int rc = 0;
    off[0] = 0;
    while (pos < len && !rc) {
        size_t end = pos;
        while (end < len && text[end] != '\n' && text[end] != '\r')
            end++;
        size_t next =
            end + (end < len) + (end + 1 < len && text[end] == '\r' && text[end + 1] == '\n');
        size_t bad = sl_utf8_validate(text + pos, end - pos);
        size_t a = pos, b = end;
        if (bad < end - pos) {
            rc = sl_err_set(SL_ERR_FORMAT,
                            "cannot load vocabulary '%s': line %zu: not valid UTF-8 (byte %zu of "
                            "the file)\nhint: vocab.txt is read as UTF-8, one token a line",
                            name, n + 1, pos + bad);
            break;
        }
        py_strip(text, &a, &b);
        if (a == b) {
            rc = sl_err_set(SL_ERR_FORMAT,
                            "cannot load vocabulary '%s': line %zu: empty token\nhint: is there "
                            "a blank line? every line of vocab.txt is a token (Megatron would "
                            "give the empty string id %zu)",
                            name, n + 1, n);
            break;
        }
        if (n + 1 >= HF_MAX_IDS) {
            rc = sl_err_set(SL_ERR_TOOBIG,
                            "cannot load vocabulary '%s': more than %u tokens (line %zu)", name,
                            HF_MAX_IDS - 1, n + 1);
            break;
        }
        if (n + 2 > cap) {
            cap *= 2;
            off = sl_xrealloc(off, cap * sizeof(uint32_t));
        }
        memcpy(bytes + used, text + a, b - a);
        used += b - a;
        off[++n] = (uint32_t)used;
        pos = next;
    }
    if (!rc && !n)
        rc = sl_err_set(SL_ERR_FORMAT,
                        "cannot load vocabulary '%s': no tokens\nhint: vocab.txt "
                        "has one token a line",
                        name);
    if (rc) {
        free(off);
        free(bytes);
        return rc;
    }
    *bytes_out = bytes;
    *off_out = off;
    *n_out = (uint32_t)n;
    return 0;
}

/* The id of a token Megatron looks up when it starts (its KeyError: this error). */
static int need(struct bert *b, const char *name, const char *tok, uint32_t *id)
{
    int64_t i = hf_wp_find(&b->wp->wp, tok, strlen(tok));
    if (i >= 0) {
        *id = (uint32_t)i;
        return 0;
    }
    size_t n;
    const char *first = bert_token(b, 0, &n);
    int bom = n >= 3 && !memcmp(first, "\xEF\xBB\xBF", 3);
    return sl_err_set(SL_ERR_FORMAT, "cannot load vocabulary '%s': no '%s' token\nhint: %s", name,
                      tok,
                      bom ? "the file starts with a byte order mark, which becomes part of the "
                            "first token (Python reads vocab.txt as utf-8, not utf-8-sig)"
                          : "Megatron's BertWordPiece tokenizers need [CLS], [SEP], [PAD], "
                            "[MASK] and [UNK] in vocab.txt");
}

/* Megatron's add_token: the next id, unless the token is there already. */
static uint32_t add_token(struct bert *b, const char *tok)
{
    int64_t i = hf_wp_find(&b->wp->wp, tok, strlen(tok));
    return i >= 0 ? (uint32_t)i : hf_wp_add(&b->wp->wp, tok, strlen(tok));
}

int bert_load_mem(struct bert **out, const char *text, size_t len, const char *name, int lower,
                  uint32_t extra_ids)
{
    *out = NULL;
    if (extra_ids > MAX_EXTRA_IDS)
        return sl_err_set(SL_ERR_USAGE, "%u extra ids is too many (at most %u)", extra_ids,
                          MAX_EXTRA_IDS);
    char *bytes;
    uint32_t *off, n;
    int rc = read_lines(text, len, name, &bytes, &off, &n);
    if (rc)
        return rc;
    if ((uint64_t)n + 2 + extra_ids >= HF_MAX_IDS) {
        free(bytes);
        free(off);
        return sl_err_set(SL_ERR_TOOBIG,
                          "cannot load vocabulary '%s': %u tokens and %u extra "
                          "ids are more than %u",
                          name, n, extra_ids, HF_MAX_IDS - 1);
    }
    struct bert *b = sl_xcalloc(1, sizeof(*b));
    struct hf *h = b->wp = sl_xcalloc(1, sizeof(*h));
    h->name = sl_xstrdup(name);
    h->model = HF_WORDPIECE;
    h->prefix = sl_xstrdup("##");
    h->prefix_len = 2;
    h->max_chars = MAX_WORD_CHARS;
    b->lower = lower;
    b->n_file = n;
    b->extra_ids = extra_ids;
    uint32_t dup[2];
    if (hf_wp_build(&h->wp, bytes, off, n, dup)) {
        size_t tl;
        const char *t = bert_token(b, dup[1], &tl);
        rc = sl_err_set(SL_ERR_FORMAT,
                        "cannot load vocabulary '%s': line %u: token '%.*s' is also line %u\nhint: "
                        "a token may appear once (Megatron would give it the later line's id and "
                        "two tokens the same id)",
                        name, dup[1] + 1, tl > 60 ? 60 : (int)tl, t, dup[0] + 1);
    }
    if (!rc && !(rc = need(b, name, "[UNK]", &b->unk)) && !(rc = need(b, name, "[CLS]", &b->cls)) &&
        !(rc = need(b, name, "[SEP]", &b->sep)) && !(rc = need(b, name, "[PAD]", &b->pad)))
        rc = need(b, name, "[MASK]", &b->mask);
    if (rc) {
        bert_free(b);
        return rc;
    }
    h->unk_id = b->unk;
    b->bos = add_token(b, "[BOS]");
    b->eos = add_token(b, "[EOS]");
    for (uint32_t i = 0; i < extra_ids; i++) {
        char tok[32];
        snprintf(tok, sizeof(tok), "<extra_id_%u>", i);
        add_token(b, tok);
    }
    h->vocab_size = h->wp.n_ids;
    snprintf(h->desc, sizeof(h->desc), "BERT WordPiece (%s), %u ids",
             lower ? "lower case" : "cased", h->vocab_size);
    *out = b;
    return 0;
}

int bert_load(struct bert **out, const char *path, int lower, uint32_t extra_ids)
{
    struct sl_buf buf = SL_BUF_INIT;
    sl_buf_init(&buf, MAX_FILE);
    int rc = sl_read_file(path, &buf);
    if (rc) {
        *out = NULL;
        sl_buf_release(&buf);
        if (rc == SL_ERR_TOOBIG)
            return sl_err_set(rc,
                              "cannot load vocabulary '%s': larger than %u MiB\nhint: is it "
                              "a vocab.txt (one token a line)?",
                              path, MAX_FILE >> 20);
        return sl_err_wrap(rc, "cannot load vocabulary: ");
    }
    rc = bert_load_mem(out, buf.data ? buf.data : "", buf.len, path, lower, extra_ids);
    sl_buf_release(&buf);
    return rc;
}

void bert_free(struct bert *b)
{
    if (!b)
        return;
    hf_free(b->wp);
    free(b);
}

uint32_t bert_vocab_size(const struct bert *b)
{
    return b->wp->vocab_size;
}

const char *bert_token(const struct bert *b, uint32_t id, size_t *len)
{
    const struct hf_wp *w = &b->wp->wp;
    if (id >= w->n_ids) {
        *len = 0;
        return NULL;
    }
    *len = w->off[id + 1] - w->off[id];
    return w->bytes + w->off[id];
}

int64_t bert_token_id(const struct bert *b, const char *s)
{
    return hf_wp_find(&b->wp->wp, s, strlen(s));
}

int bert_vocab_txt(const struct bert *b, struct sl_buf *out)
{
    int rc = 0;
    for (uint32_t id = 0; id < b->n_file && !rc; id++) {
        size_t n;
        const char *t = bert_token(b, id, &n);
        rc = sl_buf_append(out, t, n);
        rc = rc ? rc : sl_buf_putc(out, '\n');
    }
    return rc;
}

int bert_tokenizer_json(const struct bert *b, struct sl_buf *out)
{
    const uint32_t special[] = { b->pad, b->unk, b->cls, b->sep, b->mask, b->bos, b->eos };
    size_t n;
    int rc = 0; /* any failure is the cap */
    rc |= sl_buf_puts(out,
                      "{\n  \"version\": \"1.0\",\n  \"truncation\": null,\n  \"padding\": null,\n"
                      "  \"added_tokens\": [");
    /* the special tokens, then <extra_id_N> (which may be in the file already) */
    for (uint32_t i = 0; i < 7 + b->extra_ids; i++) {
        uint32_t id = i < 7 ? special[i] : 0;
        if (i >= 7) {
            char tok[32];
            snprintf(tok, sizeof(tok), "<extra_id_%u>", i - 7);
            id = (uint32_t)bert_token_id(b, tok);
        }
        const char *t = bert_token(b, id, &n);
        rc |= sl_buf_printf(out, "%s\n    {\"id\": %u, \"content\": ", i ? "," : "", id);
        rc |= sl_buf_json_str(out, t, n);
        rc |= sl_buf_puts(out, ", \"single_word\": false, \"lstrip\": false, \"rstrip\": false, "
                               "\"normalized\": false, \"special\": true}");
    }
    rc |= sl_buf_printf(
        out,
        "\n  ],\n  \"normalizer\": {\"type\": \"BertNormalizer\", \"clean_text\": true, "
        "\"handle_chinese_chars\": true, \"strip_accents\": null, \"lowercase\": %s},\n"
        "  \"pre_tokenizer\": {\"type\": \"BertPreTokenizer\"},\n"
        "  \"post_processor\": null,\n"
        "  \"decoder\": {\"type\": \"WordPiece\", \"prefix\": \"##\", \"cleanup\": true},\n"
        "  \"model\": {\"type\": \"WordPiece\", \"unk_token\": \"[UNK]\", "
        "\"continuing_subword_prefix\": \"##\", \"max_input_chars_per_word\": %d, "
        "\"vocab\": {",
        b->lower ? "true" : "false", MAX_WORD_CHARS);
    for (uint32_t id = 0; id < bert_vocab_size(b); id++) {
        const char *t = bert_token(b, id, &n);
        rc |= sl_buf_puts(out, id ? ",\n    " : "\n    ");
        rc |= sl_buf_json_str(out, t, n);
        rc |= sl_buf_printf(out, ": %u", id);
    }
    rc |= sl_buf_puts(out, "\n  }}\n}\n");
    return rc ? SL_ERR_TOOBIG : 0;
}
