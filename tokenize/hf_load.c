/* Loading a Hugging Face tokenizer.json into struct hf (tokenize/hf_impl.h): the whole
 * text is checked with the strict scanner of core/json.h (syntax errors give a byte
 * offset), the parts are read with json-c, the BPE vocabulary and merges go to the
 * byte-level BPE loader of tokenize/bpe.h. */
#include "tokenize/hf.h"

#include "core/alloc.h"
#include "core/buf.h"
#include "core/err.h"
#include "core/json.h"
#include "core/stream.h"
#include "core/utf8.h"
#include "tokenize/bpe.h"
#include "tokenize/bpe_impl.h"
#include "tokenize/hf_impl.h"
#include "tokenize/hf_write.h"

#include <json-c/json.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_FILE      (512u << 20)
#define MAX_ADDED_LEN 4096u

/* The Split regexes sluice implements (as tokenizer.json files spell them): each pattern's
 * own (hf_pattern_regex), and Qwen2's, cl100k's with single digits. */
static const struct {
    const char *re; /* NULL: the pattern's own */
    enum pretok_kind kind;
    int split_digits;
    const char *name;
} known_re[] = {
    { NULL, PRETOK_GPT2, 0, "gpt2" },
    { NULL, PRETOK_CL100K, 0, "llama3/cl100k" },
    { "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| "
      "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
      PRETOK_CL100K, 1, "qwen2" },
    { NULL, PRETOK_O200K, 0, "o200k" },
};

/* Spans of the top-level members. */
struct span {
    const char *p;
    size_t n;
    int set;
};

struct load {
    struct hf *h;
    const char *name;
    const char *base;
    struct span model, normalizer, pre, added;
    int split_seen, bytelevel_seen;
};

static size_t off_of(const struct load *L, const struct span *s)
{
    return s->set ? (size_t)(s->p - L->base) : 0;
}

/* "cannot load tokenizer 'F': PATH: MESSAGE (at byte N)" */
static int fail(const struct load *L, int code, const struct span *at, const char *path,
                const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static int fail(const struct load *L, int code, const struct span *at, const char *path,
                const char *fmt, ...)
{
    char msg[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (at && at->set)
        return sl_err_set(code, "cannot load tokenizer '%s': %s: %s (in the value at byte %zu)",
                          L->name, path, msg, off_of(L, at));
    return sl_err_set(code, "cannot load tokenizer '%s': %s: %s", L->name, path, msg);
}

static int top_member(void *ctx, const struct sl_json_member *m)
{
    struct load *L = ctx;
    struct span *s = sl_json_key_eq(m, "model")           ? &L->model
                     : sl_json_key_eq(m, "normalizer")    ? &L->normalizer
                     : sl_json_key_eq(m, "pre_tokenizer") ? &L->pre
                     : sl_json_key_eq(m, "added_tokens")  ? &L->added
                                                          : NULL;
    if (s) {
        s->p = m->val;
        s->n = m->val_len;
        s->set = !(m->val_len == 4 && !memcmp(m->val, "null", 4));
    }
    return 0;
}

/* Parse one span with json-c (the scanner already checked its syntax). */
static int parse_span(const struct load *L, const struct span *s, const char *path,
                      struct json_object **out)
{
    *out = NULL;
    if (s->n > INT_MAX - 1)
        return fail(L, SL_ERR_TOOBIG, s, path, "value of %zu bytes is too large", s->n);
    struct json_tokener *tok = json_tokener_new_ex(SL_JSON_MAX_DEPTH);
    if (!tok)
        return sl_err_set(SL_ERR_NOMEM, "cannot load tokenizer '%s': out of memory", L->name);
    *out = json_tokener_parse_ex(tok, s->p, (int)s->n);
    enum json_tokener_error je = json_tokener_get_error(tok);
    json_tokener_free(tok);
    if (!*out || je != json_tokener_success) {
        json_object_put(*out);
        *out = NULL;
        return fail(L, SL_ERR_FORMAT, s, path, "not valid JSON (%s)", json_tokener_error_desc(je));
    }
    return 0;
}

static const char *type_name(struct json_object *o)
{
    return o ? json_type_to_name(json_object_get_type(o)) : "null";
}

/* Member `key` of object o: NULL when absent or null. */
static struct json_object *member(struct json_object *o, const char *key)
{
    struct json_object *v = NULL;
    if (!json_object_object_get_ex(o, key, &v))
        return NULL;
    return v;
}

static int get_bool(const struct load *L, const struct span *at, struct json_object *o,
                    const char *path, const char *key, int dflt, int *out)
{
    struct json_object *v = member(o, key);
    *out = dflt;
    if (!v)
        return 0;
    if (!json_object_is_type(v, json_type_boolean))
        return fail(L, SL_ERR_FORMAT, at, path, "'%s' must be true or false, not %s", key,
                    type_name(v));
    *out = json_object_get_boolean(v);
    return 0;
}

/* A string member (NULL when absent or null). */
static int get_str(const struct load *L, const struct span *at, struct json_object *o,
                   const char *path, const char *key, const char **out)
{
    struct json_object *v = member(o, key);
    *out = NULL;
    if (!v)
        return 0;
    if (!json_object_is_type(v, json_type_string))
        return fail(L, SL_ERR_FORMAT, at, path, "'%s' must be a string, not %s", key, type_name(v));
    *out = json_object_get_string(v);
    return 0;
}

static int get_type(const struct load *L, const struct span *at, struct json_object *o,
                    const char *path, const char **out)
{
    if (!json_object_is_type(o, json_type_object))
        return fail(L, SL_ERR_FORMAT, at, path, "expected an object, found %s", type_name(o));
    int rc = get_str(L, at, o, path, "type", out);
    if (!rc && !*out)
        rc = fail(L, SL_ERR_FORMAT, at, path, "no \"type\" member");
    return rc;
}

/* ---- normalizer --------------------------------------------------------------------- */

static int add_step(const struct load *L, const struct span *at, const char *path, int step)
{
    struct hf *h = L->h;
    if (h->nsteps == HF_MAX_STEPS)
        return fail(L, SL_ERR_UNSUPPORTED, at, path, "more than %d normalizer steps", HF_MAX_STEPS);
    h->steps[h->nsteps++] = step;
    return 0;
}

static int parse_normalizer(const struct load *L, const struct span *at, struct json_object *o,
                            const char *path, int depth)
{
    const char *type;
    int rc = get_type(L, at, o, path, &type);
    if (rc)
        return rc;
    if (!strcmp(type, "NFC"))
        return add_step(L, at, path, HF_N_NFC);
    if (!strcmp(type, "NFD"))
        return add_step(L, at, path, HF_N_NFD);
    if (!strcmp(type, "NFKC"))
        return add_step(L, at, path, HF_N_NFKC);
    if (!strcmp(type, "NFKD"))
        return add_step(L, at, path, HF_N_NFKD);
    if (!strcmp(type, "Lowercase"))
        return add_step(L, at, path, HF_N_LOWER);
    if (!strcmp(type, "StripAccents"))
        return add_step(L, at, path, HF_N_STRIP);
    if (!strcmp(type, "BertNormalizer")) {
        int clean, cjk, lower, strip;
        struct json_object *sa = member(o, "strip_accents");
        if ((rc = get_bool(L, at, o, path, "clean_text", 1, &clean)) ||
            (rc = get_bool(L, at, o, path, "handle_chinese_chars", 1, &cjk)) ||
            (rc = get_bool(L, at, o, path, "lowercase", 1, &lower)))
            return rc;
        if ((rc = get_bool(L, at, o, path, "strip_accents", lower, &strip)))
            return rc;
        (void)sa;
        if ((clean && (rc = add_step(L, at, path, HF_N_BERT_CLEAN))) ||
            (cjk && (rc = add_step(L, at, path, HF_N_BERT_CJK))) ||
            (strip && (rc = add_step(L, at, path, HF_N_BERT_STRIP))) ||
            (lower && (rc = add_step(L, at, path, HF_N_LOWER))))
            return rc;
        return 0;
    }
    if (!strcmp(type, "Sequence")) {
        struct json_object *list = member(o, "normalizers");
        if (!list || !json_object_is_type(list, json_type_array))
            return fail(L, SL_ERR_FORMAT, at, path, "a Sequence needs a \"normalizers\" array");
        if (depth > 8)
            return fail(L, SL_ERR_UNSUPPORTED, at, path, "Sequence nested too deep");
        for (size_t i = 0; i < json_object_array_length(list); i++) {
            char sub[128];
            snprintf(sub, sizeof(sub), "%.80s.normalizers[%zu]", path, i);
            if ((rc = parse_normalizer(L, at, json_object_array_get_idx(list, i), sub, depth + 1)))
                return rc;
        }
        return 0;
    }
    return fail(
        L, SL_ERR_UNSUPPORTED, at, path,
        "normalizer '%.60s' is not supported\nhint: sluice reads NFC, NFD, NFKC, NFKD, Lowercase, "
        "StripAccents, BertNormalizer and Sequence normalizers",
        type);
}

/* ---- pre-tokenizer ------------------------------------------------------------------ */

static int parse_pre(struct load *L, const struct span *at, struct json_object *o, const char *path,
                     int depth)
{
    struct hf *h = L->h;
    const char *type;
    int rc = get_type(L, at, o, path, &type);
    if (rc)
        return rc;
    if (!strcmp(type, "BertPreTokenizer")) {
        if (h->model != HF_WORDPIECE || depth > 0)
            return fail(L, SL_ERR_UNSUPPORTED, at, path,
                        "BertPreTokenizer is supported only alone, with a WordPiece model");
        return 0;
    }
    if (h->model != HF_BPE)
        return fail(
            L, SL_ERR_UNSUPPORTED, at, path,
            "pre-tokenizer '%.60s' is not supported with a WordPiece model\nhint: sluice reads "
            "WordPiece with BertPreTokenizer",
            type);
    if (!strcmp(type, "ByteLevel")) {
        int prefix, use_regex;
        if ((rc = get_bool(L, at, o, path, "add_prefix_space", 1, &prefix)) ||
            (rc = get_bool(L, at, o, path, "use_regex", 1, &use_regex)))
            return rc;
        if (L->bytelevel_seen)
            return fail(L, SL_ERR_UNSUPPORTED, at, path, "two ByteLevel pre-tokenizers");
        L->bytelevel_seen = 1;
        if (use_regex) {
            if (L->split_seen)
                return fail(L, SL_ERR_UNSUPPORTED, at, path,
                            "a Split followed by ByteLevel with use_regex is not supported");
            h->kind = PRETOK_GPT2;
            h->prefix_space = prefix ? 1 : 0;
        } else {
            if (!L->split_seen)
                return fail(L, SL_ERR_UNSUPPORTED, at, path,
                            "ByteLevel without use_regex needs a Split before it (Sequence)");
            h->prefix_space = prefix ? 2 : 0;
        }
        return 0;
    }
    if (!strcmp(type, "Split")) {
        struct json_object *pat = member(o, "pattern"), *re = NULL;
        const char *behavior;
        int invert;
        if ((rc = get_str(L, at, o, path, "behavior", &behavior)) ||
            (rc = get_bool(L, at, o, path, "invert", 0, &invert)))
            return rc;
        if (!pat || !json_object_is_type(pat, json_type_object) || !(re = member(pat, "Regex")) ||
            !json_object_is_type(re, json_type_string))
            return fail(
                L, SL_ERR_UNSUPPORTED, at, path,
                "a Split needs a \"pattern\": {\"Regex\": \"...\"} (sluice does not split on "
                "plain strings)");
        if (L->split_seen || L->bytelevel_seen)
            return fail(L, SL_ERR_UNSUPPORTED, at, path,
                        "only one Split, before the ByteLevel pre-tokenizer, is supported");
        const char *s = json_object_get_string(re);
        size_t i;
        for (i = 0; i < sizeof(known_re) / sizeof(known_re[0]); i++)
            if (!strcmp(s, known_re[i].re ? known_re[i].re : hf_pattern_regex(known_re[i].kind)))
                break;
        if (i == sizeof(known_re) / sizeof(known_re[0]))
            return fail(
                L, SL_ERR_UNSUPPORTED, at, path,
                "the Split regex '%.300s' is not one sluice knows\nhint: sluice implements the "
                "GPT-2, Llama 3 (cl100k), Qwen2 and o200k pre-tokenizer regexes",
                s);
        if (!behavior || strcmp(behavior, "Isolated") || invert)
            return fail(
                L, SL_ERR_UNSUPPORTED, at, path,
                "a Split with behavior '%.40s'%s is not supported (only Isolated, not inverted)",
                behavior ? behavior : "(none)", invert ? ", inverted," : "");
        h->kind = known_re[i].kind;
        h->split_digits = known_re[i].split_digits;
        L->split_seen = 1;
        return 0;
    }
    if (!strcmp(type, "Sequence")) {
        struct json_object *list = member(o, "pretokenizers");
        if (!list || !json_object_is_type(list, json_type_array))
            return fail(L, SL_ERR_FORMAT, at, path, "a Sequence needs a \"pretokenizers\" array");
        if (depth > 0)
            return fail(L, SL_ERR_UNSUPPORTED, at, path,
                        "nested Sequence pre-tokenizers are not supported");
        for (size_t i = 0; i < json_object_array_length(list); i++) {
            char sub[128];
            snprintf(sub, sizeof(sub), "%.80s.pretokenizers[%zu]", path, i);
            if ((rc = parse_pre(L, at, json_object_array_get_idx(list, i), sub, depth + 1)))
                return rc;
        }
        return 0;
    }
    return fail(
        L, SL_ERR_UNSUPPORTED, at, path,
        "pre-tokenizer '%.60s' is not supported\nhint: sluice reads BPE models with byte-level "
        "pre-tokenization (ByteLevel, or Split + ByteLevel)",
        type);
}

/* ---- models ------------------------------------------------------------------------- */

static int vocab_id(const struct load *L, const struct span *at, const char *path, const char *tok,
                    struct json_object *v, uint32_t *id)
{
    int64_t x = json_object_is_type(v, json_type_int) ? json_object_get_int64(v) : -1;
    if (x < 0 || x >= HF_MAX_IDS)
        return fail(L, SL_ERR_FORMAT, at, path,
                    "token '%.40s' has id %.40s (ids are integers from 0 to %u)", tok,
                    json_object_to_json_string(v), HF_MAX_IDS - 1);
    *id = (uint32_t)x;
    return 0;
}

/* GPT-2's byte-to-unicode alphabet: printable bytes stand for themselves, the others are
 * U+0100 on, in byte order. */
static uint32_t byte_symbol(int c)
{
    int printable = (c >= '!' && c <= '~') || (c >= 0xA1 && c <= 0xAC) || (c >= 0xAE && c <= 0xFF);
    if (printable)
        return (uint32_t)c;
    int n = 0;
    for (int b = 0; b < c; b++)
        n += !((b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF));
    return 256u + (uint32_t)n;
}

/* A NUL-terminated copy of a short string, valid until the next call. */
static const char *cstr_tmp(const char *s, size_t n)
{
    static __thread char tmp[8];
    memcpy(tmp, s, n < 7 ? n : 7);
    tmp[n < 7 ? n : 7] = 0;
    return tmp;
}

static int vocab_member(void *ctx, const struct sl_json_member *m)
{
    struct span *s = ctx;
    if (sl_json_key_eq(m, "vocab")) {
        s->p = m->val;
        s->n = m->val_len;
        s->set = 1;
    }
    return 0;
}

static int load_bpe(struct load *L, struct json_object *model)
{
    struct hf *h = L->h;
    const struct span *at = &L->model;
    struct json_object *merges = member(model, "merges"), *vocab = member(model, "vocab"),
                       *dropout = member(model, "dropout");
    const char *cont, *eow;
    int rc, fallback;
    if ((rc = get_str(L, at, model, "model", "continuing_subword_prefix", &cont)) ||
        (rc = get_str(L, at, model, "model", "end_of_word_suffix", &eow)) ||
        (rc = get_bool(L, at, model, "model", "ignore_merges", 0, &h->ignore_merges)) ||
        (rc = get_bool(L, at, model, "model", "byte_fallback", 0, &fallback)))
        return rc;
    if (dropout && !(json_object_is_type(dropout, json_type_double) ||
                     json_object_is_type(dropout, json_type_int)))
        return fail(L, SL_ERR_FORMAT, at, "model", "'dropout' must be a number or null, not %s",
                    type_name(dropout));
    if (dropout && json_object_get_double(dropout) != 0.0)
        return fail(L, SL_ERR_UNSUPPORTED, at, "model",
                    "BPE dropout %g is not supported (it makes encoding random)",
                    json_object_get_double(dropout));
    if ((cont && *cont) || (eow && *eow))
        return fail(L, SL_ERR_UNSUPPORTED, at, "model",
                    "a continuing_subword_prefix or end_of_word_suffix is not supported with "
                    "byte-level BPE");
    if (!vocab || !json_object_is_type(vocab, json_type_object))
        return fail(L, SL_ERR_FORMAT, at, "model.vocab",
                    "expected an object of token -> id, found %s", type_name(vocab));
    if (!merges || !json_object_is_type(merges, json_type_array))
        return fail(L, SL_ERR_FORMAT, at, "model.merges", "expected an array, found %s",
                    type_name(merges));
    /* the vocabulary goes to the BPE loader as text: find its span */
    struct span vs = { NULL, 0, 0 };
    struct sl_json_error jerr = { 0, NULL };
    rc = sl_json_scan_object(at->p, at->n, vocab_member, &vs, &jerr);
    if (rc || !vs.set)
        return fail(L, SL_ERR_FORMAT, at, "model", "cannot find the vocabulary");
    /* the merges as merges.txt lines */
    struct sl_buf mt = SL_BUF_INIT;
    sl_buf_init(&mt, MAX_FILE);
    size_t nm = json_object_array_length(merges);
    for (size_t i = 0; i < nm && !rc; i++) {
        struct json_object *e = json_object_array_get_idx(merges, i);
        const char *a = NULL, *b = NULL;
        size_t al = 0, bl = 0;
        if (json_object_is_type(e, json_type_string)) {
            a = json_object_get_string(e);
            const char *sp = strchr(a, ' ');
            if (sp && !strchr(sp + 1, ' ')) {
                al = (size_t)(sp - a);
                b = sp + 1;
                bl = strlen(b);
            }
        } else if (json_object_is_type(e, json_type_array) && json_object_array_length(e) == 2 &&
                   json_object_is_type(json_object_array_get_idx(e, 0), json_type_string) &&
                   json_object_is_type(json_object_array_get_idx(e, 1), json_type_string)) {
            a = json_object_get_string(json_object_array_get_idx(e, 0));
            b = json_object_get_string(json_object_array_get_idx(e, 1));
            al = (size_t)json_object_get_string_len(json_object_array_get_idx(e, 0));
            bl = (size_t)json_object_get_string_len(json_object_array_get_idx(e, 1));
            if (memchr(a, ' ', al) || memchr(b, ' ', bl) || memchr(a, '\n', al) ||
                memchr(b, '\n', bl))
                b = NULL; /* not in the byte-level alphabet */
        }
        if (!b || !al || !bl || (i == 0 && al >= 8 && !memcmp(a, "#version", 8))) {
            char path[64];
            snprintf(path, sizeof(path), "model.merges[%zu]", i);
            rc = fail(L, SL_ERR_FORMAT, at, path,
                      "expected \"A B\" or [\"A\", \"B\"] with two byte-level symbols, found %.60s",
                      json_object_to_json_string(e));
            break;
        }
        if (sl_buf_append(&mt, a, al) || sl_buf_putc(&mt, ' ') || sl_buf_append(&mt, b, bl) ||
            sl_buf_putc(&mt, '\n'))
            rc = fail(L, SL_ERR_TOOBIG, at, "model.merges", "over %u bytes", MAX_FILE);
    }
    /* GPT-NeoX's vocabulary has no token for the bytes that UTF-8 never uses (0xC0, 0xC1,
     * 0xF5-0xFF): the BPE engine gets tokens for them with ids above all others, which
     * encoding drops (as the library drops a character it has no token for). Any other
     * missing byte is refused: text would be lost. */
    struct sl_buf vt = SL_BUF_INIT;
    const char *vtext = vs.p;
    size_t vlen = vs.n;
    uint32_t real_max = 0;
    json_object_object_foreach(vocab, vk, vv)
    {
        (void)vk;
        if (json_object_is_type(vv, json_type_int) && json_object_get_int64(vv) >= 0 &&
            json_object_get_int64(vv) < HF_MAX_IDS &&
            (uint32_t)json_object_get_int64(vv) > real_max)
            real_max = (uint32_t)json_object_get_int64(vv);
    }
    uint32_t next = real_max + 1 > h->vocab_size ? real_max + 1 : h->vocab_size;
    for (int c = 0; c < 256 && !rc; c++) {
        char sym[4];
        size_t k = sl_utf8_encode(byte_symbol(c), sym);
        struct json_object *v;
        if (json_object_object_get_ex(vocab, cstr_tmp(sym, k), &v))
            continue;
        if (c != 0xC0 && c != 0xC1 && c < 0xF5)
            continue; /* a byte of UTF-8 text: refused by the BPE loader */
        if (!h->nsynth) {
            sl_buf_append(&vt, vs.p, vs.n - 1); /* up to the closing brace */
            h->synth_lo = next;
        }
        sl_buf_printf(&vt, "%s\"%.*s\":%u", vs.n > 2 ? "," : "", (int)k, sym, next++);
        h->nsynth++;
    }
    if (h->nsynth) {
        sl_buf_putc(&vt, '}');
        vtext = vt.data;
        vlen = vt.len;
    }
    if (!rc) {
        rc = bpe_load_gpt2_mem(&h->bpe, vtext, vlen, mt.data ? mt.data : "", mt.len, L->name);
        if (rc) {
            /* name the part of the file: "cannot load merges 'F': line 3 ..." */
            char *msg = sl_xstrdup(sl_err_msg());
            const char *rest = strstr(msg, "': ");
            rest = rest ? rest + 3 : msg;
            int merges_msg = !strncmp(msg, "cannot load merges", 18);
            char *nl = strstr(msg, "\nhint: byte-level");
            if (nl)
                *nl = 0;
            if (merges_msg)
                sl_err_set(rc, "cannot load tokenizer '%s': model.merges (entry N is line N+1): %s",
                           L->name, rest);
            else
                sl_err_set(rc,
                           "cannot load tokenizer '%s': model.vocab (the value at byte %zu): %s%s",
                           L->name, (size_t)(vs.p - L->base), rest,
                           nl ? "\nhint: sluice reads BPE tokenizer.json files with byte-level "
                                "pre-tokenization, whose vocabulary has all 256 byte symbols"
                              : "");
            free(msg);
        }
    }
    sl_buf_release(&mt);
    sl_buf_release(&vt);
    if (rc)
        return rc;
    h->bpe->pretok = h->kind;
    if (h->ignore_merges) {
        /* a piece that is a token is that token, whatever its length */
        h->bpe->whole = 1;
        h->bpe->max_len = UINT32_MAX;
    }
    if (real_max + 1 > h->vocab_size)
        h->vocab_size = real_max + 1;
    return 0;
}

static int load_wordpiece(struct load *L, struct json_object *model)
{
    struct hf *h = L->h;
    const struct span *at = &L->model;
    struct json_object *vocab = member(model, "vocab"),
                       *mc = member(model, "max_input_chars_per_word");
    const char *unk, *prefix;
    int rc;
    if ((rc = get_str(L, at, model, "model", "unk_token", &unk)) ||
        (rc = get_str(L, at, model, "model", "continuing_subword_prefix", &prefix)))
        return rc;
    if (!unk)
        return fail(L, SL_ERR_FORMAT, at, "model", "a WordPiece model needs an \"unk_token\"");
    if (mc && (!json_object_is_type(mc, json_type_int) || json_object_get_int64(mc) < 0 ||
               json_object_get_int64(mc) > (1 << 30)))
        return fail(L, SL_ERR_FORMAT, at, "model",
                    "'max_input_chars_per_word' must be an integer from 0 to %d", 1 << 30);
    h->max_chars = mc ? (uint32_t)json_object_get_int64(mc) : 100;
    h->prefix = sl_xstrdup(prefix ? prefix : "##");
    h->prefix_len = strlen(h->prefix);
    if (!vocab || !json_object_is_type(vocab, json_type_object))
        return fail(L, SL_ERR_FORMAT, at, "model.vocab",
                    "expected an object of token -> id, found %s", type_name(vocab));
    /* lay the tokens out by id */
    uint32_t max = 0;
    size_t total = 0, count = 0;
    json_object_object_foreach(vocab, k, v)
    {
        uint32_t id;
        if ((rc = vocab_id(L, at, "model.vocab", k, v, &id)))
            return rc;
        max = id > max ? id : max;
        total += strlen(k);
        count++;
    }
    if (!count)
        return fail(L, SL_ERR_FORMAT, at, "model.vocab", "no tokens");
    struct hf_wp *w = &h->wp;
    uint32_t n_ids = max + 1;
    uint32_t *off = sl_xcalloc((size_t)n_ids + 1, sizeof(uint32_t));
    char *bytes = sl_xmalloc(total + 1);
    /* the length of each id's token in off[id + 1], then the offsets */
    json_object_object_foreach(vocab, k2, v2)
    {
        uint32_t id = (uint32_t)json_object_get_int64(v2);
        if (off[id + 1]) {
            rc = fail(L, SL_ERR_FORMAT, at, "model.vocab", "id %u is given to two tokens ('%.40s')",
                      id, k2);
            break;
        }
        off[id + 1] = (uint32_t)strlen(k2);
        if (!off[id + 1]) {
            rc = fail(L, SL_ERR_FORMAT, at, "model.vocab", "empty token (id %u)", id);
            break;
        }
    }
    if (rc) {
        free(off);
        free(bytes);
        return rc;
    }
    for (uint32_t id = 0; id < n_ids; id++)
        off[id + 1] += off[id];
    json_object_object_foreach(vocab, k3, v3)
    {
        uint32_t id = (uint32_t)json_object_get_int64(v3);
        memcpy(bytes + off[id], k3, off[id + 1] - off[id]);
    }
    uint32_t dup[2];
    if (hf_wp_build(w, bytes, off, n_ids, dup))
        return fail(L, SL_ERR_FORMAT, at, "model.vocab", "ids %u and %u have the same token",
                    dup[0], dup[1]);
    int64_t u = hf_wp_find(w, unk, strlen(unk));
    if (u < 0)
        return fail(L, SL_ERR_FORMAT, at, "model.unk_token", "'%.60s' is not in the vocabulary",
                    unk);
    h->unk_id = (uint32_t)u;
    if (w->n_ids > h->vocab_size)
        h->vocab_size = w->n_ids;
    return 0;
}

/* ---- added tokens ------------------------------------------------------------------- */

static int cmp_added(const void *a, const void *b)
{
    const struct hf_added *x = a, *y = b;
    if (x->len != y->len)
        return x->len > y->len ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static int load_added(struct load *L, struct json_object *list)
{
    struct hf *h = L->h;
    const struct span *at = &L->added;
    if (!json_object_is_type(list, json_type_array))
        return fail(L, SL_ERR_FORMAT, at, "added_tokens", "expected an array, found %s",
                    type_name(list));
    size_t n = json_object_array_length(list);
    if (n > HF_MAX_IDS)
        return fail(L, SL_ERR_TOOBIG, at, "added_tokens", "%zu added tokens (at most %u)", n,
                    HF_MAX_IDS);
    h->added = sl_xcalloc(n ? n : 1, sizeof(*h->added));
    int rc = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        struct json_object *o = json_object_array_get_idx(list, i), *idv = NULL;
        char path[48];
        snprintf(path, sizeof(path), "added_tokens[%zu]", i);
        const char *content;
        int sw, ls, rs, norm, special;
        if (!json_object_is_type(o, json_type_object))
            return fail(L, SL_ERR_FORMAT, at, path, "expected an object, found %s", type_name(o));
        if ((rc = get_str(L, at, o, path, "content", &content)) ||
            (rc = get_bool(L, at, o, path, "single_word", 0, &sw)) ||
            (rc = get_bool(L, at, o, path, "lstrip", 0, &ls)) ||
            (rc = get_bool(L, at, o, path, "rstrip", 0, &rs)) ||
            (rc = get_bool(L, at, o, path, "special", 0, &special)) ||
            (rc = get_bool(L, at, o, path, "normalized", !special, &norm)))
            return rc;
        idv = member(o, "id");
        if (!content || !*content)
            return fail(L, SL_ERR_FORMAT, at, path, "no \"content\" (or an empty one)");
        size_t len = strlen(content);
        if (len > MAX_ADDED_LEN || len != (size_t)json_object_get_string_len(member(o, "content")))
            return fail(L, SL_ERR_FORMAT, at, path, "content of %zu bytes (at most %u, no NUL)",
                        len, MAX_ADDED_LEN);
        uint32_t id;
        if (!idv)
            return fail(L, SL_ERR_FORMAT, at, path, "no \"id\"");
        if ((rc = vocab_id(L, at, path, content, idv, &id)))
            return rc;
        struct hf_added *a = &h->added[h->nadded++];
        a->s = sl_xstrdup(content);
        a->len = (uint32_t)len;
        a->id = id;
        a->special = (unsigned char)special;
        a->lstrip = (unsigned char)ls;
        a->rstrip = (unsigned char)rs;
        a->single_word = (unsigned char)sw;
        a->normalized = (unsigned char)(norm && h->nsteps > 0);
        if (id >= h->vocab_size)
            h->vocab_size = id + 1;
    }
    /* leftmost-longest matching tries the longest first; a content given twice keeps the
     * first entry */
    qsort(h->added, h->nadded, sizeof(*h->added), cmp_added);
    h->by_first = sl_xmalloc((h->nadded ? h->nadded : 1) * sizeof(uint32_t));
    h->by_id = sl_xmalloc((h->nadded ? h->nadded : 1) * sizeof(uint32_t));
    for (size_t i = 0; i < h->nadded; i++) {
        struct hf_added *a = &h->added[i];
        (a->normalized ? h->first_norm : h->first_raw)[(unsigned char)a->s[0]] = 1;
        h->first_at[(unsigned char)a->s[0] + 1]++;
        unsigned char b1 = (unsigned char)a->s[0];
        if (a->len == 1)
            memset(h->pair[b1], 0xFF, sizeof(h->pair[b1]));
        else
            h->pair[b1][(unsigned char)a->s[1] >> 6] |= 1ull << ((unsigned char)a->s[1] & 63);
    }
    for (int c = 0; c < 256; c++)
        h->first_at[c + 1] += h->first_at[c];
    uint32_t fill[256];
    memcpy(fill, h->first_at, sizeof(fill));
    for (size_t i = 0; i < h->nadded; i++)
        h->by_first[fill[(unsigned char)h->added[i].s[0]]++] = (uint32_t)i;
    uint64_t *key = sl_xmalloc((h->nadded ? h->nadded : 1) * sizeof(uint64_t));
    for (size_t i = 0; i < h->nadded; i++)
        key[i] = (uint64_t)h->added[i].id << 32 | i;
    qsort(key, h->nadded, sizeof(uint64_t), cmp_u64);
    for (size_t i = 0; i < h->nadded; i++)
        h->by_id[i] = (uint32_t)key[i];
    free(key);
    return 0;
}

/* ---- the whole file ----------------------------------------------------------------- */

int hf_load_mem(struct hf **out, const char *json, size_t len, const char *name)
{
    *out = NULL;
    struct hf *h = sl_xcalloc(1, sizeof(*h));
    h->name = sl_xstrdup(name);
    struct load L;
    memset(&L, 0, sizeof(L));
    L.h = h;
    L.name = name;
    L.base = json;
    struct json_object *model = NULL, *norm = NULL, *pre = NULL, *added = NULL;
    struct sl_json_error jerr = { 0, NULL };
    int rc = sl_json_scan_object(json, len, top_member, &L, &jerr);
    if (rc == SL_ERR_FORMAT && jerr.reason)
        rc = sl_err_set(
            SL_ERR_FORMAT,
            "cannot load tokenizer '%s': not a JSON object (%s at byte %zu)\nhint: is the file "
            "complete? a tokenizer.json is one JSON object",
            name, jerr.reason, jerr.offset);
    if (!rc && !L.model.set)
        rc = sl_err_set(SL_ERR_FORMAT,
                        "cannot load tokenizer '%s': no \"model\"\nhint: is this a Hugging Face "
                        "tokenizer.json?",
                        name);
    if (!rc)
        rc = parse_span(&L, &L.model, "model", &model);
    const char *type = NULL;
    if (!rc)
        rc = get_type(&L, &L.model, model, "model", &type);
    if (!rc) {
        if (!strcmp(type, "BPE"))
            h->model = HF_BPE;
        else if (!strcmp(type, "WordPiece"))
            h->model = HF_WORDPIECE;
        else
            rc = fail(&L, SL_ERR_UNSUPPORTED, &L.model, "model",
                      "model type '%.40s' is not supported\nhint: sluice reads BPE (byte-level) "
                      "and WordPiece "
                      "tokenizer.json files; for SentencePiece models use spm:FILE.model",
                      type);
    }
    if (!rc && L.normalizer.set && !(rc = parse_span(&L, &L.normalizer, "normalizer", &norm)))
        rc = parse_normalizer(&L, &L.normalizer, norm, "normalizer", 0);
    if (!rc && !L.pre.set)
        rc = fail(
            &L, SL_ERR_UNSUPPORTED, NULL, "pre_tokenizer",
            "none is given\nhint: sluice reads BPE models with byte-level pre-tokenization and "
            "WordPiece with BertPreTokenizer");
    if (!rc && !(rc = parse_span(&L, &L.pre, "pre_tokenizer", &pre)))
        rc = parse_pre(&L, &L.pre, pre, "pre_tokenizer", 0);
    if (!rc && h->model == HF_BPE && !L.bytelevel_seen)
        rc = fail(&L, SL_ERR_UNSUPPORTED, &L.pre, "pre_tokenizer",
                  "no ByteLevel pre-tokenizer\nhint: sluice reads BPE models with byte-level "
                  "pre-tokenization "
                  "(GPT-2, GPT-NeoX, Llama 3, Qwen2 layouts)");
    /* the added tokens first: their ids are needed to place the BPE engine's extra bytes */
    if (!rc && L.added.set && !(rc = parse_span(&L, &L.added, "added_tokens", &added)))
        rc = load_added(&L, added);
    if (!rc)
        rc = h->model == HF_BPE ? load_bpe(&L, model) : load_wordpiece(&L, model);
    json_object_put(model);
    json_object_put(norm);
    json_object_put(pre);
    json_object_put(added);
    if (rc) {
        hf_free(h);
        return rc;
    }
    if (h->nsteps || h->model == HF_WORDPIECE)
        hf_build_tables(h);
    if (h->model == HF_BPE)
        snprintf(h->desc, sizeof(h->desc), "BPE, byte-level, %s%s split%s%s, %zu added tokens",
                 pretok_name(h->kind), h->split_digits ? " (single digits)" : "",
                 h->prefix_space ? ", prefix space" : "", h->ignore_merges ? ", ignore_merges" : "",
                 h->nadded);
    else
        snprintf(h->desc, sizeof(h->desc), "WordPiece, %u ids, %zu added tokens", h->wp.n_ids,
                 h->nadded);
    *out = h;
    return 0;
}

int hf_load(struct hf **out, const char *path)
{
    struct sl_buf buf = SL_BUF_INIT;
    sl_buf_init(&buf, MAX_FILE);
    int rc = sl_read_file(path, &buf);
    if (rc) {
        *out = NULL;
        sl_buf_release(&buf);
        return sl_err_wrap(rc, "cannot load tokenizer: ");
    }
    rc = hf_load_mem(out, buf.data ? buf.data : "", buf.len, path);
    sl_buf_release(&buf);
    return rc;
}

void hf_free(struct hf *h)
{
    if (!h)
        return;
    bpe_free(h->bpe);
    hf_wp_release(&h->wp);
    free(h->prefix);
    for (size_t i = 0; i < h->nadded; i++)
        free(h->added[i].s);
    free(h->added);
    free(h->by_first);
    free(h->by_id);
    free(h->uflags);
    free(h->ulower);
    free(h->name);
    free(h);
}
