/* Writers of a byte-level BPE: Hugging Face tokenizer.json (as `tokenizers` saves it),
 * tiktoken ranks with their sidecar, GPT-2 vocab.json + merges.txt; and the conversion of
 * a loaded struct bpe into the merge list those need. */
#include "tokenize/hf_write.h"

#include "core/alloc.h"
#include "core/buf.h"
#include "core/err.h"
#include "core/json.h"
#include "tokenize/bpe.h"

#include <stdlib.h>
#include <string.h>

typedef unsigned char u8;

static const char *const re_gpt2 =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";
static const char *const re_cl100k =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
static const char *const re_o200k =
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+"
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+"
    "[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\\p{N}{1,3}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

const char *hf_pattern_regex(enum pretok_kind k)
{
    return k == PRETOK_O200K ? re_o200k : k == PRETOK_CL100K ? re_cl100k : re_gpt2;
}

/* A JSON string as serde_json writes it: UTF-8 as is, '"' '\\' and controls escaped. */
static int json_str(struct sl_buf *b, const void *s, size_t n)
{
    const u8 *p = s;
    int rc = sl_buf_putc(b, '"');
    for (size_t i = 0; i < n && !rc; i++) {
        u8 c = p[i];
        if (c == '"' || c == '\\') {
            rc = sl_buf_putc(b, '\\');
            if (!rc)
                rc = sl_buf_putc(b, (char)c);
        } else if (c < 0x20) {
            const char *e = c == '\b'   ? "\\b"
                            : c == '\f' ? "\\f"
                            : c == '\n' ? "\\n"
                            : c == '\r' ? "\\r"
                            : c == '\t' ? "\\t"
                                        : NULL;
            rc = e ? sl_buf_puts(b, e) : sl_buf_printf(b, "\\u%04x", c);
        } else {
            rc = sl_buf_putc(b, (char)c);
        }
    }
    return rc ? rc : sl_buf_putc(b, '"');
}

/* Token bytes in GPT-2's byte alphabet (UTF-8), appended to b. */
static int byte_level(struct sl_buf *b, const u8 *p, size_t n)
{
    int rc = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        uint32_t cp = bpe_byte_char(p[i]);
        char u[2];
        if (cp < 0x80)
            rc = sl_buf_putc(b, (char)cp);
        else {
            u[0] = (char)(0xC0 | (cp >> 6));
            u[1] = (char)(0x80 | (cp & 0x3F));
            rc = sl_buf_append(b, u, 2);
        }
    }
    return rc;
}

/* The JSON string of token id: the special token's text, or its bytes in the alphabet. */
static int token_str(struct sl_buf *b, const struct bpe_model *m, uint32_t id, struct sl_buf *tmp)
{
    const u8 *p = m->bytes + m->off[id];
    size_t n = m->off[id + 1] - m->off[id];
    if (bpe_model_flag(m, id) == BPE_TOK_SPECIAL)
        return json_str(b, p, n);
    sl_buf_reset(tmp);
    int rc = byte_level(tmp, p, n);
    return rc ? rc : json_str(b, tmp->data, tmp->len);
}

static const char bytelevel_tail[] = "        \"add_prefix_space\": false,\n"
                                     "        \"trim_offsets\": true,\n";

int hf_write_tokenizer_json(const struct bpe_model *m, struct sl_buf *out)
{
    struct sl_buf tmp = SL_BUF_INIT;
    int rc = sl_buf_puts(
        out, "{\n  \"version\": \"1.0\",\n  \"truncation\": null,\n  \"padding\": null,\n");
    uint32_t nspec = 0, last = 0, last_spec = 0;
    for (uint32_t id = 0; id < m->n_vocab; id++) {
        int f = bpe_model_flag(m, id);
        if (f != BPE_TOK_UNUSED)
            last = id;
        if (f == BPE_TOK_SPECIAL) {
            nspec++;
            last_spec = id;
        }
    }
    if (nspec == 0)
        rc = rc ? rc : sl_buf_puts(out, "  \"added_tokens\": [],\n");
    else {
        rc = rc ? rc : sl_buf_puts(out, "  \"added_tokens\": [\n");
        for (uint32_t i = 0; i < m->n_vocab && !rc; i++) {
            if (bpe_model_flag(m, i) != BPE_TOK_SPECIAL)
                continue;
            rc = sl_buf_printf(out, "    {\n      \"id\": %u,\n      \"content\": ", i);
            rc = rc ? rc : token_str(out, m, i, &tmp);
            rc = rc ? rc
                    : sl_buf_printf(out,
                                    ",\n      \"single_word\": false,\n      \"lstrip\": false,\n"
                                    "      \"rstrip\": false,\n      \"normalized\": false,\n"
                                    "      \"special\": true\n    }%s\n",
                                    i < last_spec ? "," : "");
        }
        rc = rc ? rc : sl_buf_puts(out, "  ],\n");
    }
    rc = rc ? rc : sl_buf_puts(out, "  \"normalizer\": null,\n  \"pre_tokenizer\": {\n");
    if (m->pretok == PRETOK_GPT2) {
        rc =
            rc ? rc
               : sl_buf_puts(out, "    \"type\": \"ByteLevel\",\n    \"add_prefix_space\": false,\n"
                                  "    \"trim_offsets\": true,\n    \"use_regex\": true\n  },\n");
    } else {
        rc =
            rc ? rc
               : sl_buf_puts(
                     out,
                     "    \"type\": \"Sequence\",\n    \"pretokenizers\": [\n      {\n"
                     "        \"type\": \"Split\",\n        \"pattern\": {\n          \"Regex\": ");
        const char *re = hf_pattern_regex(m->pretok);
        rc = rc ? rc : json_str(out, re, strlen(re));
        rc = rc ? rc
                : sl_buf_puts(out, "\n        },\n        \"behavior\": \"Isolated\",\n        "
                                   "\"invert\": false\n"
                                   "      },\n      {\n        \"type\": \"ByteLevel\",\n");
        rc = rc ? rc : sl_buf_puts(out, bytelevel_tail);
        rc = rc ? rc : sl_buf_puts(out, "        \"use_regex\": false\n      }\n    ]\n  },\n");
    }
    rc =
        rc ? rc
           : sl_buf_puts(
                 out,
                 "  \"post_processor\": {\n    \"type\": \"ByteLevel\",\n    \"add_prefix_space\": "
                 "true,\n"
                 "    \"trim_offsets\": false,\n    \"use_regex\": true\n  },\n"
                 "  \"decoder\": {\n    \"type\": \"ByteLevel\",\n    \"add_prefix_space\": true,\n"
                 "    \"trim_offsets\": true,\n    \"use_regex\": true\n  },\n"
                 "  \"model\": {\n    \"type\": \"BPE\",\n    \"dropout\": null,\n    "
                 "\"unk_token\": null,\n"
                 "    \"continuing_subword_prefix\": null,\n    \"end_of_word_suffix\": null,\n"
                 "    \"fuse_unk\": false,\n    \"byte_fallback\": false,\n    \"ignore_merges\": "
                 "false,\n"
                 "    \"vocab\": {\n");
    for (uint32_t id = 0; id < m->n_vocab && !rc; id++) {
        if (bpe_model_flag(m, id) == BPE_TOK_UNUSED)
            continue;
        rc = sl_buf_puts(out, "      ");
        rc = rc ? rc : token_str(out, m, id, &tmp);
        rc = rc ? rc : sl_buf_printf(out, ": %u%s\n", id, id < last ? "," : "");
    }
    rc = rc ? rc
            : sl_buf_puts(out, m->n_merges ? "    },\n    \"merges\": [\n"
                                           : "    },\n    \"merges\": []\n");
    for (uint32_t i = 0; i < m->n_merges && !rc; i++) {
        rc = sl_buf_puts(out, "      [\n        ");
        rc = rc ? rc : token_str(out, m, m->merges[i][0], &tmp);
        rc = rc ? rc : sl_buf_puts(out, ",\n        ");
        rc = rc ? rc : token_str(out, m, m->merges[i][1], &tmp);
        rc = rc ? rc : sl_buf_puts(out, i + 1 < m->n_merges ? "\n      ],\n" : "\n      ]\n");
    }
    if (m->n_merges)
        rc = rc ? rc : sl_buf_puts(out, "    ]\n");
    rc = rc ? rc : sl_buf_puts(out, "  }\n}");
    sl_buf_release(&tmp);
    return rc;
}

static int b64(struct sl_buf *b, const u8 *p, size_t n)
{
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    int rc = 0;
    for (size_t i = 0; i < n && !rc; i += 3) {
        uint32_t x = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0) |
                     (i + 2 < n ? p[i + 2] : 0);
        char o[4] = { tab[x >> 18], tab[(x >> 12) & 63], i + 1 < n ? tab[(x >> 6) & 63] : '=',
                      i + 2 < n ? tab[x & 63] : '=' };
        rc = sl_buf_append(b, o, 4);
    }
    return rc;
}

int hf_write_tiktoken(const struct bpe_model *m, struct sl_buf *ranks, struct sl_buf *sidecar)
{
    int rc = 0;
    for (uint32_t id = 0; id < m->n_vocab && !rc; id++) {
        if (bpe_model_flag(m, id) != BPE_TOK_REGULAR)
            continue;
        rc = b64(ranks, m->bytes + m->off[id], m->off[id + 1] - m->off[id]);
        rc = rc ? rc : sl_buf_printf(ranks, " %u\n", id);
    }
    rc = rc ? rc
            : sl_buf_printf(sidecar, "{\"pattern\": \"%s\", \"special_tokens\": {",
                            pretok_name(m->pretok));
    for (uint32_t id = 0, first = 1; id < m->n_vocab && !rc; id++) {
        if (bpe_model_flag(m, id) != BPE_TOK_SPECIAL)
            continue;
        rc = sl_buf_puts(sidecar, first ? "" : ", ");
        rc = rc ? rc : json_str(sidecar, m->bytes + m->off[id], m->off[id + 1] - m->off[id]);
        rc = rc ? rc : sl_buf_printf(sidecar, ": %u", id);
        first = 0;
    }
    return rc ? rc : sl_buf_puts(sidecar, "}}\n");
}

int hf_write_gpt2(const struct bpe_model *m, struct sl_buf *vocab, struct sl_buf *merges)
{
    struct sl_buf tmp = SL_BUF_INIT;
    int rc = sl_buf_putc(vocab, '{');
    for (uint32_t id = 0, first = 1; id < m->n_vocab && !rc; id++) {
        if (bpe_model_flag(m, id) == BPE_TOK_UNUSED)
            continue;
        rc = sl_buf_puts(vocab, first ? "" : ",");
        rc = rc ? rc : token_str(vocab, m, id, &tmp);
        rc = rc ? rc : sl_buf_printf(vocab, ":%u", id);
        first = 0;
    }
    rc = rc ? rc : sl_buf_puts(vocab, "}");
    rc = rc ? rc : sl_buf_puts(merges, "#version: 0.2\n");
    for (uint32_t i = 0; i < m->n_merges && !rc; i++) {
        for (int k = 0; k < 2 && !rc; k++) {
            uint32_t id = m->merges[i][k];
            rc = byte_level(merges, m->bytes + m->off[id], m->off[id + 1] - m->off[id]);
            rc = rc ? rc : sl_buf_putc(merges, k ? '\n' : ' ');
        }
    }
    sl_buf_release(&tmp);
    return rc;
}

/* ---- from a loaded struct bpe ----------------------------------------------------- */

int hf_model_from_bpe(const struct bpe *b, struct bpe_model *out)
{
    memset(out, 0, sizeof(*out));
    uint32_t n = bpe_vocab_size(b);
    struct sl_buf bytes = SL_BUF_INIT;
    out->off = sl_xmalloc(sl_mul_size((size_t)n + 1, sizeof(uint32_t)));
    out->flags = sl_xcalloc(n ? n : 1, 1);
    out->pretok = bpe_pretok(b);
    int rc = 0;
    for (uint32_t id = 0; id < n; id++) {
        size_t len = 0;
        const u8 *p = bpe_token_bytes(b, id, &len);
        out->off[id] = (uint32_t)bytes.len;
        if (!p)
            out->flags[id] = BPE_TOK_UNUSED;
        else {
            sl_buf_append(&bytes, p, len);
            if (bpe_token_id(b, p, len) != (int64_t)id)
                out->flags[id] = BPE_TOK_SPECIAL;
        }
    }
    out->off[n] = (uint32_t)bytes.len;
    out->n_vocab = n;
    out->bytes = (u8 *)sl_buf_detach(&bytes, NULL);
    /* each token's merge: its bytes merged with the merges of lower rank only end in two
     * parts (rank = id) */
    size_t capm = 0;
    uint32_t *parts = NULL;
    size_t capp = 0;
    for (uint32_t id = 0; id < n && !rc; id++) {
        const u8 *p = out->bytes + out->off[id];
        size_t len = out->off[id + 1] - out->off[id];
        if (len < 2 || out->flags[id] != BPE_TOK_REGULAR)
            continue;
        if (len > capp) {
            capp = len;
            parts = sl_xrealloc(parts, sl_mul_size(capp + 1, sizeof(uint32_t)));
        }
        /* parts as byte offsets: part k is [parts[k], parts[k+1]) */
        size_t np = len;
        for (size_t k = 0; k <= len; k++)
            parts[k] = (uint32_t)k;
        while (np > 2) {
            int64_t best = -1;
            size_t bi = 0;
            for (size_t k = 0; k + 1 < np; k++) {
                int64_t r = bpe_token_id(b, p + parts[k], parts[k + 2] - parts[k]);
                if (r >= 0 && r < (int64_t)id && (best < 0 || r < best)) {
                    best = r;
                    bi = k;
                }
            }
            if (best < 0)
                break;
            memmove(parts + bi + 1, parts + bi + 2, (np - bi - 1) * sizeof(uint32_t));
            np--;
        }
        int64_t l = np == 2 ? bpe_token_id(b, p, parts[1]) : -1;
        int64_t r = np == 2 ? bpe_token_id(b, p + parts[1], len - parts[1]) : -1;
        if (l < 0 || r < 0) {
            rc = sl_err_set(
                SL_ERR_FORMAT,
                "token %u is not reached by merging lower-ranked tokens: it has no BPE merge", id);
            break;
        }
        if (out->n_merges == capm) {
            capm = capm ? capm * 2 : 1024;
            out->merges = sl_xrealloc(out->merges, capm * sizeof(*out->merges));
        }
        out->merges[out->n_merges][0] = (uint32_t)l;
        out->merges[out->n_merges][1] = (uint32_t)r;
        out->merges[out->n_merges][2] = id;
        out->n_merges++;
    }
    free(parts);
    if (rc)
        bpe_model_release(out);
    return rc;
}

struct export_ctx {
    struct sl_buf *out;
    int n, rc;
};

static int export_member(void *ctx, const struct sl_json_member *m)
{
    struct export_ctx *x = ctx;
    int drop = sl_json_key_eq(m, "post_processor") || sl_json_key_eq(m, "truncation") ||
               sl_json_key_eq(m, "padding");
    int rc = sl_buf_puts(x->out, x->n++ ? ",\n  \"" : "{\n  \"");
    rc = rc ? rc : sl_buf_append(x->out, m->key, m->key_len);
    rc = rc ? rc : sl_buf_puts(x->out, "\": ");
    rc = rc ? rc : drop ? sl_buf_puts(x->out, "null") : sl_buf_append(x->out, m->val, m->val_len);
    x->rc = rc;
    return rc ? 1 : 0;
}

int hf_write_exported(const char *json, size_t n, const char *name, struct sl_buf *out)
{
    struct export_ctx x = { out, 0, 0 };
    struct sl_json_error err = { 0, NULL };
    int rc = sl_json_scan_object(json, n, export_member, &x, &err);
    if (x.rc)
        return x.rc;
    if (rc)
        return sl_err_set(SL_ERR_FORMAT, "cannot read '%s': %s at byte %zu", name,
                          err.reason ? err.reason : "not a JSON object", err.offset);
    return sl_buf_puts(out, x.n ? "\n}\n" : "{}\n");
}
