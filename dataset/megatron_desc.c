/* Megatron-Core's unique_description texts and their MD5: a json.dumps(indent=4) writer
 * in Python's style, the split matrix, numpy's summation and the tokenizer identifiers. */
#include "dataset/megatron_desc.h"

#include "core/alloc.h"
#include "core/buf.h"
#include "core/err.h"
#include "core/md5.h"

#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const mdesc_split_names[3] = { "train", "valid", "test" };

/* json.dumps(indent=4): four spaces a level */
#define INDENT 4

/* The class of every tokenizer of Megatron's new tokenizer system built by
 * megatron/core/tokenizers/text/utils/build_tokenizer.py without --tokenizer-metadata. */
#define NEW_CLASS "\"megatron.core.tokenizers.text.models.default_tokenizer.DefaultTokenizerText\""

/* Each row: what build_tokenizer() (new system) or megatron/training/tokenizer/tokenizer.py
 * (legacy) passes as the tokenizer's path and options, every option value str()-ed, with
 * the defaults of Megatron-LM's arguments (no special tokens, use_fast False, ...). */
const struct mdesc_tokenizer_kind mdesc_tokenizers[] = {
    { "NullTokenizer", 0, "VOCAB_SIZE",
      "{\"class\": " NEW_CLASS ", \"tokenizer_path\": null, \"vocab_size\": %1}" },
    { "GPT2BPETokenizer", 0, "VOCAB_FILE,MERGE_FILE",
      "{\"class\": " NEW_CLASS ", \"tokenizer_path\": \"GPT2BPETokenizer\", "
      "\"additional_special_tokens\": \"[]\", \"vocab_file\": %1, \"merges_file\": %2, "
      "\"use_fast\": \"False\", \"trust_remote_code\": \"False\", "
      "\"include_special_tokens\": \"False\"}" },
    { "HuggingFaceTokenizer", 0, "MODEL",
      "{\"class\": " NEW_CLASS ", \"tokenizer_path\": %1, \"vocab_file\": \"None\", "
      "\"merges_file\": \"None\", \"additional_special_tokens\": \"[]\", \"use_fast\": "
      "\"False\", \"trust_remote_code\": \"False\", \"include_special_tokens\": \"False\"}" },
    { "SentencePieceTokenizer", 0, "MODEL",
      "{\"class\": " NEW_CLASS ", \"tokenizer_path\": %1, \"legacy\": \"False\", "
      "\"special_tokens\": \"None\"}" },
    { "GPTSentencePieceTokenizer", 0, "MODEL",
      "{\"class\": " NEW_CLASS ", \"tokenizer_path\": %1, \"legacy\": \"False\", "
      "\"special_tokens\": \"None\"}" },
    { "Llama2Tokenizer", 0, "MODEL",
      "{\"class\": " NEW_CLASS ", \"tokenizer_path\": %1, \"legacy\": \"False\", "
      "\"special_tokens\": \"None\"}" },
    { "TikTokenizer", 0, "MODEL",
      "{\"class\": " NEW_CLASS ", \"tokenizer_path\": %1, \"num_special_tokens\": \"1000\", "
      "\"special_tokens\": \"None\"}" },
    { "NullTokenizer", 1, "VOCAB_SIZE",
      "{\"class\": \"_NullTokenizer\", \"tokenizer_path\": [null], \"vocab_size\": %1}" },
    { "GPT2BPETokenizer", 1, "VOCAB_FILE,MERGE_FILE",
      "{\"class\": \"_GPT2BPETokenizer\", \"tokenizer_path\": [%1, %2]}" },
    { "HuggingFaceTokenizer", 1, "MODEL",
      "{\"class\": \"_HuggingFaceTokenizer\", \"tokenizer_path\": [%1]}" },
    { "SentencePieceTokenizer", 1, "MODEL",
      "{\"class\": \"_SentencePieceTokenizer\", \"tokenizer_path\": [%1], "
      "\"vocab_extra_ids\": \"0\"}" },
    { "GPTSentencePieceTokenizer", 1, "MODEL",
      "{\"class\": \"_GPTSentencePieceTokenizer\", \"tokenizer_path\": [%1], "
      "\"vocab_extra_ids\": \"0\"}" },
    { "Llama2Tokenizer", 1, "MODEL",
      "{\"class\": \"_Llama2Tokenizer\", \"tokenizer_path\": [%1], \"vocab_extra_ids\": \"0\"}" },
    { NULL, 0, NULL, NULL },
};

/* ---- Python's float repr and json string escapes ------------------------------------ */

void mdesc_py_float(struct sl_buf *out, double v)
{
    if (isnan(v) || isinf(v)) {
        sl_buf_puts(out, isnan(v) ? "NaN" : v > 0 ? "Infinity" : "-Infinity");
        return;
    }
    if (v == 0) {
        sl_buf_puts(out, signbit(v) ? "-0.0" : "0.0");
        return;
    }
    /* the shortest %e text that reads back as v: its digits and decimal exponent */
    char s[40];
    for (int p = 1; p <= 17; p++) {
        snprintf(s, sizeof(s), "%.*e", p - 1, v);
        if (strtod(s, NULL) == v)
            break;
    }
    char digits[24];
    int nd = 0, neg = s[0] == '-';
    const char *q = s + neg;
    for (; *q && *q != 'e'; q++)
        if (*q != '.')
            digits[nd++] = *q;
    while (nd > 1 && digits[nd - 1] == '0')
        nd--;
    digits[nd] = 0;
    int decpt = atoi(q + 1) + 1; /* v = 0.DIGITS x 10^decpt */
    if (neg)
        sl_buf_putc(out, '-');
    if (decpt <= -4 || decpt > 16) { /* Python's switch to exponent notation for repr */
        sl_buf_putc(out, digits[0]);
        if (nd > 1)
            sl_buf_printf(out, ".%s", digits + 1);
        int e = decpt - 1;
        sl_buf_printf(out, "e%c%02d", e < 0 ? '-' : '+', e < 0 ? -e : e);
    } else if (decpt <= 0) {
        sl_buf_puts(out, "0.");
        for (int i = 0; i < -decpt; i++)
            sl_buf_putc(out, '0');
        sl_buf_puts(out, digits);
    } else if (decpt >= nd) {
        sl_buf_puts(out, digits);
        for (int i = nd; i < decpt; i++)
            sl_buf_putc(out, '0');
        sl_buf_puts(out, ".0");
    } else {
        sl_buf_printf(out, "%.*s.%s", decpt, digits, digits + decpt);
    }
}

/* The code point of the UTF-8 sequence at s (n bytes left) and its length, or -1 when the
 * bytes are not valid UTF-8. */
static long utf8_at(const unsigned char *s, size_t n, int *len)
{
    int k = s[0] >= 0xf0 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc0 ? 2 : 1;
    if (k == 1 || s[0] > 0xf4 || (size_t)k > n)
        return -1;
    long c = s[0] & (0x7f >> k);
    for (int i = 1; i < k; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return -1;
        c = c << 6 | (s[i] & 0x3f);
    }
    static const long min[5] = { 0, 0, 0x80, 0x800, 0x10000 };
    if (c < min[k] || c > 0x10ffff || (c >= 0xd800 && c < 0xe000))
        return -1;
    *len = k;
    return c;
}

/* A string as json.dumps writes it (ensure_ascii): bytes that are not UTF-8 become the
 * lone surrogates \udcXX, as Python's command line hands such bytes to Megatron. */
static void py_str(struct sl_buf *out, const char *str)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t n = strlen(str);
    sl_buf_putc(out, '"');
    for (size_t i = 0; i < n;) {
        unsigned char c = s[i];
        const char *esc = c == '"' ? "\\\"" : c == '\\' ? "\\\\" : c == '\n' ? "\\n"
                        : c == '\r' ? "\\r" : c == '\t' ? "\\t" : c == '\b' ? "\\b"
                        : c == '\f' ? "\\f" : NULL;
        if (esc) {
            sl_buf_puts(out, esc);
            i++;
        } else if (c >= 0x20 && c < 0x7f) {
            sl_buf_putc(out, (char)c);
            i++;
        } else if (c < 0x80) {
            sl_buf_printf(out, "\\u%04x", c);
            i++;
        } else {
            int len = 1;
            long cp = utf8_at(s + i, n - i, &len);
            if (cp < 0) {
                sl_buf_printf(out, "\\u%04x", 0xdc00 | c);
            } else if (cp < 0x10000) {
                sl_buf_printf(out, "\\u%04lx", cp);
            } else {
                cp -= 0x10000;
                sl_buf_printf(out, "\\u%04lx\\u%04lx", 0xd800 | (cp >> 10), 0xdc00 | (cp & 0x3ff));
            }
            i += (size_t)len;
        }
    }
    sl_buf_putc(out, '"');
}

static void newline(struct sl_buf *out, int depth)
{
    sl_buf_printf(out, "\n%*s", depth * INDENT, "");
}

/* A parsed JSON value (the tokenizer's identifiers) as json.dumps(indent=4) writes it at
 * nesting depth `depth`. Objects keep their members' order. */
static void py_value(struct sl_buf *out, struct json_object *v, int depth)
{
    switch (json_object_get_type(v)) {
    case json_type_null:
        sl_buf_puts(out, "null");
        break;
    case json_type_boolean:
        sl_buf_puts(out, json_object_get_boolean(v) ? "true" : "false");
        break;
    case json_type_int:
        sl_buf_printf(out, "%lld", (long long)json_object_get_int64(v));
        break;
    case json_type_double:
        mdesc_py_float(out, json_object_get_double(v));
        break;
    case json_type_string:
        py_str(out, json_object_get_string(v));
        break;
    case json_type_array: {
        size_t n = json_object_array_length(v);
        sl_buf_putc(out, '[');
        for (size_t i = 0; i < n; i++) {
            sl_buf_puts(out, i ? "," : "");
            newline(out, depth + 1);
            py_value(out, json_object_array_get_idx(v, i), depth + 1);
        }
        if (n)
            newline(out, depth);
        sl_buf_putc(out, ']');
        break;
    }
    case json_type_object: {
        int first = 1;
        sl_buf_putc(out, '{');
        json_object_object_foreach(v, key, val)
        {
            sl_buf_puts(out, first ? "" : ",");
            newline(out, depth + 1);
            py_str(out, key);
            sl_buf_puts(out, ": ");
            py_value(out, val, depth + 1);
            first = 0;
        }
        if (!first)
            newline(out, depth);
        sl_buf_putc(out, '}');
        break;
    }
    }
}

/* ---- numbers as Megatron computes them ---------------------------------------------- */

/* numpy's pairwise summation of float64 (numpy/_core/src/umath/loops_utils.h.src): plain
 * below 8 values, eight running sums up to its block of 128, halves above. */
static double np_sum(const double *a, size_t n)
{
    if (n < 8) {
        double r = 0.0;
        for (size_t i = 0; i < n; i++)
            r += a[i];
        return r;
    }
    if (n <= 128) {
        double r[8];
        size_t i;
        for (int j = 0; j < 8; j++)
            r[j] = a[j];
        for (i = 8; i < n - n % 8; i += 8)
            for (int j = 0; j < 8; j++)
                r[j] += a[i + j];
        double res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for (; i < n; i++)
            res += a[i];
        return res;
    }
    size_t n2 = n / 2;
    n2 -= n2 % 8;
    return np_sum(a, n2) + np_sum(a + n2, n - n2);
}

void mdesc_normalize(const double *w, size_t n, double *out)
{
    double s = np_sum(w, n);
    for (size_t i = 0; i < n; i++)
        out[i] = w[i] / s;
}

int mdesc_split_matrix(const char *split, double b[3][2], int present[3])
{
    double v[3] = { 0, 0, 0 };
    int n = 0;
    for (const char *p = split; *p;) {
        size_t run = strspn(p, ".0123456789"); /* re.findall(r"[.0-9]+", split) */
        if (!run) {
            p++;
            continue;
        }
        char tok[64];
        char *end;
        snprintf(tok, sizeof(tok), "%.*s", (int)(run < 63 ? run : 63), p);
        double x = strtod(tok, &end);
        if (*end || run > 63 || n >= 3)
            return sl_err_set(SL_ERR_CONFIG,
                              n >= 3 ? "split '%s': more than three parts\nhint: train,valid,test "
                                       "as in 969,30,1"
                                     : "split '%s': '%.*s' is not a number",
                              split, (int)run, p);
        v[n++] = x;
        p += run;
    }
    double w[3];
    mdesc_normalize(v, 3, w);
    if (n == 0 || !(np_sum(v, 3) > 0))
        return sl_err_set(SL_ERR_CONFIG, "split '%s': needs positive parts such as 969,30,1",
                          split);
    /* book-ends [0, w0, w0 + w1, w0 + w1 + w2]; a split is None where it is empty */
    double e[4] = { 0.0, 0.0, 0.0, 0.0 };
    for (int i = 0; i < 3; i++)
        e[i + 1] = e[i] + w[i];
    for (int i = 0; i < 3; i++) {
        present[i] = e[i + 1] > e[i];
        b[i][0] = e[i];
        b[i][1] = e[i + 1];
    }
    return 0;
}

/* ---- the descriptions ----------------------------------------------------------------- */

static void member(struct sl_buf *out, int depth, int first, const char *key)
{
    sl_buf_puts(out, first ? "" : ",");
    newline(out, depth);
    py_str(out, key);
    sl_buf_puts(out, ": ");
}

/* The GPTDataset's identifiers as an object at depth `depth`. */
static int gpt_object(struct sl_buf *out, const struct mdesc *m, const struct mdesc_gpt *g, int s,
                      int depth)
{
    struct json_tokener *tk = json_tokener_new();
    struct json_object *tok = json_tokener_parse_ex(tk, m->tokenizer, (int)strlen(m->tokenizer));
    int bad = !tok || json_tokener_get_error(tk) != json_tokener_success ||
              json_object_get_type(tok) != json_type_object;
    json_tokener_free(tk);
    if (bad) {
        json_object_put(tok);
        return sl_err_set(SL_ERR_CONFIG, "the tokenizer's identifiers are not a JSON object: %s",
                          m->tokenizer);
    }
    double b[3][2];
    int present[3], rc = 0;
    if (m->split && (rc = mdesc_split_matrix(m->split, b, present))) {
        json_object_put(tok);
        return rc;
    }
    sl_buf_putc(out, '{');
    member(out, depth + 1, 1, "class");
    py_str(out, "GPTDataset");
    member(out, depth + 1, 0, "dataset_path");
    py_str(out, g->path);
    member(out, depth + 1, 0, "num_samples");
    if (g->num_samples < 0)
        sl_buf_puts(out, "null");
    else
        sl_buf_printf(out, "%lld", (long long)g->num_samples);
    member(out, depth + 1, 0, "index_split");
    py_str(out, mdesc_split_names[s]);
    member(out, depth + 1, 0, "random_seed");
    sl_buf_printf(out, "%u", m->seed);
    member(out, depth + 1, 0, "sequence_length");
    sl_buf_printf(out, "%llu", (unsigned long long)m->seq_len);
    member(out, depth + 1, 0, "split");
    if (m->split)
        py_str(out, m->split);
    else
        sl_buf_puts(out, "null");
    member(out, depth + 1, 0, "split_matrix");
    if (!m->split) {
        sl_buf_puts(out, "null");
    } else {
        sl_buf_putc(out, '[');
        for (int i = 0; i < 3; i++) {
            sl_buf_puts(out, i ? "," : "");
            newline(out, depth + 2);
            if (!present[i]) {
                sl_buf_puts(out, "null");
                continue;
            }
            sl_buf_putc(out, '[');
            newline(out, depth + 3);
            if (i == 0)
                sl_buf_putc(out, '0'); /* the book-ends start with the int 0 */
            else
                mdesc_py_float(out, b[i][0]);
            sl_buf_putc(out, ',');
            newline(out, depth + 3);
            mdesc_py_float(out, b[i][1]);
            newline(out, depth + 2);
            sl_buf_putc(out, ']');
        }
        newline(out, depth + 1);
        sl_buf_putc(out, ']');
    }
    member(out, depth + 1, 0, "tokenizer");
    py_value(out, tok, depth + 1);
    newline(out, depth);
    sl_buf_putc(out, '}');
    json_object_put(tok);
    return 0;
}

int mdesc_gpt(struct sl_buf *out, const struct mdesc *m, const struct mdesc_gpt *g, int s)
{
    return gpt_object(out, m, g, s, 0);
}

int mdesc_blend(struct sl_buf *out, const struct mdesc *m, const struct mdesc_gpt *g, int n,
                int s, const double *weights, uint64_t size)
{
    sl_buf_putc(out, '{');
    member(out, 1, 1, "class");
    py_str(out, "BlendedDataset");
    member(out, 1, 0, "datasets");
    sl_buf_putc(out, '[');
    for (int i = 0; i < n; i++) {
        sl_buf_puts(out, i ? "," : "");
        newline(out, 2);
        int rc = gpt_object(out, m, &g[i], s, 2);
        if (rc)
            return rc;
    }
    if (n)
        newline(out, 1);
    sl_buf_putc(out, ']');
    member(out, 1, 0, "split");
    py_str(out, mdesc_split_names[s]);
    member(out, 1, 0, "weights");
    sl_buf_putc(out, '[');
    for (int i = 0; i < n; i++) {
        sl_buf_puts(out, i ? "," : "");
        newline(out, 2);
        mdesc_py_float(out, weights[i]);
    }
    if (n)
        newline(out, 1);
    sl_buf_putc(out, ']');
    member(out, 1, 0, "size");
    sl_buf_printf(out, "%llu", (unsigned long long)size);
    newline(out, 0);
    sl_buf_putc(out, '}');
    return 0;
}

void mdesc_hash(const struct sl_buf *desc, char hex[33])
{
    sl_md5_hex(desc->data ? desc->data : "", desc->len, hex);
}

/* ---- tokenizer identifiers ------------------------------------------------------------ */

int mdesc_tokenizer(const char *spec, char **json)
{
    *json = NULL;
    spec += strspn(spec, " \t\n");
    if (spec[0] == '{') {
        struct json_object *o = json_tokener_parse(spec);
        int ok = o && json_object_get_type(o) == json_type_object;
        json_object_put(o);
        if (!ok)
            return sl_err_set(SL_ERR_CONFIG, "Megatron tokenizer '%s' is not a JSON object\n"
                                             "hint: copy the \"tokenizer\" member of a "
                                             "description.txt Megatron wrote",
                              spec);
        *json = sl_xstrdup(spec);
        return 0;
    }
    int legacy = !strncmp(spec, "legacy:", 7);
    const char *type = legacy ? spec + 7 : spec, *colon = strchr(type, ':');
    size_t tl = colon ? (size_t)(colon - type) : strlen(type);
    const struct mdesc_tokenizer_kind *k = mdesc_tokenizers;
    for (; k->type; k++)
        if (k->legacy == legacy && strlen(k->type) == tl && !strncmp(k->type, type, tl))
            break;
    if (!k->type)
        return sl_err_set(SL_ERR_CONFIG,
                          "Megatron tokenizer '%s' is unknown\n"
                          "hint: TYPE:ARGS with a --tokenizer-type such as NullTokenizer:50257 or "
                          "GPT2BPETokenizer:VOCAB,MERGES (legacy:TYPE:ARGS with "
                          "--legacy-tokenizer), or the identifiers as a JSON object",
                          spec);
    /* the arguments: one, or two split at the first comma */
    int want = strchr(k->args, ',') ? 2 : 1;
    const char *a = colon ? colon + 1 : "", *comma = strchr(a, ',');
    if (!colon || !*a || (want == 2) != (comma != NULL))
        return sl_err_set(SL_ERR_CONFIG, "Megatron tokenizer '%s': expected %s%s:%s", spec,
                          legacy ? "legacy:" : "", k->type, k->args);
    struct sl_buf arg[2] = { SL_BUF_INIT, SL_BUF_INIT }, out = SL_BUF_INIT;
    size_t l0 = want == 2 ? (size_t)(comma - a) : strlen(a);
    if (!strcmp(k->args, "VOCAB_SIZE")) {
        /* Megatron's --vocab-size is an int, str()-ed: "050" is "50" */
        char *end;
        unsigned long long v = strtoull(a, &end, 10);
        if (*end || !v || a[0] == '-' || a[0] == '+')
            return sl_err_set(SL_ERR_CONFIG, "Megatron tokenizer '%s': '%s' is not a "
                                             "vocabulary size", spec, a);
        sl_buf_printf(&arg[0], "\"%llu\"", v);
    } else {
        sl_buf_json_str(&arg[0], a, l0);
    }
    if (want == 2)
        sl_buf_json_str(&arg[1], comma + 1, strlen(comma + 1));
    for (const char *p = k->json; *p; p++) {
        if (p[0] == '%' && (p[1] == '1' || p[1] == '2')) {
            sl_buf_puts(&out, arg[p[1] - '1'].data);
            p++;
        } else {
            sl_buf_putc(&out, *p);
        }
    }
    sl_buf_release(&arg[0]);
    sl_buf_release(&arg[1]);
    *json = sl_buf_detach(&out, NULL);
    return 0;
}
