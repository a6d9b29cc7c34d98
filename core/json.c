/* Strict JSON scanning for JSONL lines: validate, find top-level members, decode strings. */
#include "core/json.h"

#include "core/buf.h"
#include "core/err.h"
#include "core/utf8.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

static const char *fail(struct sl_json_error *err, const char *base, const char *p,
                        const char *reason)
{
    if (err) {
        err->offset = (size_t)(p - base);
        err->reason = reason;
    }
    return NULL;
}

const char *sl_json_skip_ws(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
        p++;
    return p;
}

/* Advance over bytes that need no attention inside a string (not '"', '\\' or < 0x20);
 * *high is set when a byte >= 0x80 was passed (the run's UTF-8 must then be checked). */
static const char *string_run(const char *p, const char *end, int *high)
{
    int hi = 0;
#if defined(__SSE2__)
    const __m128i quote = _mm_set1_epi8('"');
    const __m128i bslash = _mm_set1_epi8('\\');
    const __m128i ctl = _mm_set1_epi8(0x1F);
    while (end - p >= 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)p);
        /* v <= 0x1F unsigned: min(v, 0x1F) == v */
        __m128i special = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, bslash)),
                                       _mm_cmpeq_epi8(_mm_min_epu8(v, ctl), v));
        int mask = _mm_movemask_epi8(special);
        if (mask) {
            unsigned before = ((unsigned)1 << __builtin_ctz((unsigned)mask)) - 1;
            *high = (hi | (int)((unsigned)_mm_movemask_epi8(v) & before)) != 0;
            return p + __builtin_ctz((unsigned)mask);
        }
        hi |= _mm_movemask_epi8(v);
        p += 16;
    }
#endif
    while (p < end) {
        unsigned char c = (unsigned char)*p;
        if (c == '"' || c == '\\' || c < 0x20)
            break;
        hi |= c >= 0x80;
        p++;
    }
    *high = hi != 0;
    return p;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

static int read_hex4(const char *p, const char *end, uint32_t *out)
{
    if (end - p < 4)
        return 0;
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) {
        int h = hexval(p[i]);
        if (h < 0)
            return 0;
        v = (v << 4) | (uint32_t)h;
    }
    *out = v;
    return 1;
}

static inline const char *decode_string(const char *base, const char *p, const char *end,
                                        struct sl_buf *out, struct sl_json_error *err, int validate)
{
    if (p >= end || *p != '"')
        return fail(err, base, p, "expected a string");
    p++;
    for (;;) {
        int high;
        const char *run = string_run(p, end, &high);
        if (high && validate) {
            size_t ok = sl_utf8_validate(p, (size_t)(run - p));
            if (ok < (size_t)(run - p))
                return fail(err, base, p + ok, "invalid UTF-8 in string");
        }
        if (out && run > p && sl_buf_append(out, p, (size_t)(run - p)))
            return fail(err, base, p, "string over cap");
        p = run;
        if (p >= end)
            return fail(err, base, p, "unterminated string");
        unsigned char c = (unsigned char)*p;
        if (c == '"')
            return p + 1;
        if (c < 0x20)
            return fail(err, base, p, "control character in string");
        /* backslash */
        if (end - p < 2)
            return fail(err, base, p, "unterminated escape");
        char e = p[1];
        char tmp[4];
        size_t tlen = 1;
        switch (e) {
        case '"': tmp[0] = '"'; break;
        case '\\': tmp[0] = '\\'; break;
        case '/': tmp[0] = '/'; break;
        case 'b': tmp[0] = '\b'; break;
        case 'f': tmp[0] = '\f'; break;
        case 'n': tmp[0] = '\n'; break;
        case 'r': tmp[0] = '\r'; break;
        case 't': tmp[0] = '\t'; break;
        case 'u': {
            uint32_t cp;
            if (!read_hex4(p + 2, end, &cp))
                return fail(err, base, p, "bad \\u escape");
            p += 6;
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                uint32_t lo;
                if (end - p >= 6 && p[0] == '\\' && p[1] == 'u' && read_hex4(p + 2, end, &lo) &&
                    lo >= 0xDC00 && lo <= 0xDFFF) {
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                    p += 6;
                } else {
                    cp = 0xFFFD; /* lone high surrogate */
                }
            } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
                cp = 0xFFFD; /* lone low surrogate */
            }
            tlen = sl_utf8_encode(cp, tmp);
            if (out && sl_buf_append(out, tmp, tlen))
                return fail(err, base, p, "string over cap");
            continue;
        }
        default:
            return fail(err, base, p, "bad escape in string");
        }
        if (out && sl_buf_append(out, tmp, tlen))
            return fail(err, base, p, "string over cap");
        p += 2;
    }
}

const char *sl_json_decode_string(const char *base, const char *p, const char *end,
                                  struct sl_buf *out, struct sl_json_error *err)
{
    return decode_string(base, p, end, out, err, 1);
}

const char *sl_json_decode_string_valid(const char *base, const char *p, const char *end,
                                        struct sl_buf *out, struct sl_json_error *err)
{
    return decode_string(base, p, end, out, err, 0);
}

static const char *skip_number(const char *base, const char *p, const char *end,
                               struct sl_json_error *err)
{
    const char *start = p;
    if (p < end && *p == '-')
        p++;
    if (p >= end)
        return fail(err, base, start, "bad number");
    if (*p == '0') {
        p++;
    } else if (*p >= '1' && *p <= '9') {
        while (p < end && *p >= '0' && *p <= '9')
            p++;
    } else {
        return fail(err, base, start, "bad number");
    }
    if (p < end && *p == '.') {
        p++;
        if (p >= end || *p < '0' || *p > '9')
            return fail(err, base, start, "bad number");
        while (p < end && *p >= '0' && *p <= '9')
            p++;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < end && (*p == '+' || *p == '-'))
            p++;
        if (p >= end || *p < '0' || *p > '9')
            return fail(err, base, start, "bad number");
        while (p < end && *p >= '0' && *p <= '9')
            p++;
    }
    return p;
}

static const char *skip_literal(const char *base, const char *p, const char *end,
                                const char *lit, struct sl_json_error *err)
{
    size_t n = strlen(lit);
    if ((size_t)(end - p) < n || memcmp(p, lit, n) != 0)
        return fail(err, base, p, "unexpected character");
    return p + n;
}

static const char *skip_value_depth(const char *base, const char *p, const char *end, int depth,
                                    struct sl_json_error *err)
{
    if (p >= end)
        return fail(err, base, p, "unexpected end of input");
    switch (*p) {
    case '"':
        return sl_json_decode_string(base, p, end, NULL, err);
    case '{':
    case '[': {
        char close = *p == '{' ? '}' : ']';
        int is_obj = *p == '{';
        if (depth >= SL_JSON_MAX_DEPTH)
            return fail(err, base, p, "nesting too deep");
        p = sl_json_skip_ws(p + 1, end);
        if (p < end && *p == close)
            return p + 1;
        for (;;) {
            if (is_obj) {
                p = sl_json_decode_string(base, p, end, NULL, err);
                if (!p)
                    return NULL;
                p = sl_json_skip_ws(p, end);
                if (p >= end || *p != ':')
                    return fail(err, base, p, "expected ':'");
                p = sl_json_skip_ws(p + 1, end);
            }
            p = skip_value_depth(base, p, end, depth + 1, err);
            if (!p)
                return NULL;
            p = sl_json_skip_ws(p, end);
            if (p < end && *p == ',') {
                p = sl_json_skip_ws(p + 1, end);
                continue;
            }
            if (p < end && *p == close)
                return p + 1;
            return fail(err, base, p, is_obj ? "expected ',' or '}'" : "expected ',' or ']'");
        }
    }
    case 't':
        return skip_literal(base, p, end, "true", err);
    case 'f':
        return skip_literal(base, p, end, "false", err);
    case 'n':
        return skip_literal(base, p, end, "null", err);
    default:
        if (*p == '-' || (*p >= '0' && *p <= '9'))
            return skip_number(base, p, end, err);
        return fail(err, base, p, "unexpected character");
    }
}

const char *sl_json_skip_value(const char *base, const char *p, const char *end,
                               struct sl_json_error *err)
{
    return skip_value_depth(base, p, end, 0, err);
}

int sl_json_scan_object(const char *text, size_t len,
                        int (*member)(void *ctx, const struct sl_json_member *m), void *ctx,
                        struct sl_json_error *err)
{
    const char *p = text, *end = text + len;
    if (len >= 3 && memcmp(p, "\xEF\xBB\xBF", 3) == 0)
        p += 3;
    p = sl_json_skip_ws(p, end);
    if (p >= end) {
        fail(err, text, p, "empty line");
        return SL_ERR_FORMAT;
    }
    if (*p != '{') {
        fail(err, text, p, "expected a JSON object");
        return SL_ERR_FORMAT;
    }
    p = sl_json_skip_ws(p + 1, end);
    if (p < end && *p == '}') {
        p++;
        goto tail;
    }
    for (;;) {
        struct sl_json_member m;
        if (p >= end || *p != '"') {
            fail(err, text, p, "expected a member name");
            return SL_ERR_FORMAT;
        }
        const char *kend = sl_json_decode_string(text, p, end, NULL, err);
        if (!kend)
            return SL_ERR_FORMAT;
        m.key = p + 1;
        m.key_len = (size_t)(kend - p - 2);
        m.key_escaped = memchr(m.key, '\\', m.key_len) != NULL;
        p = sl_json_skip_ws(kend, end);
        if (p >= end || *p != ':') {
            fail(err, text, p, "expected ':'");
            return SL_ERR_FORMAT;
        }
        p = sl_json_skip_ws(p + 1, end);
        const char *vend = skip_value_depth(text, p, end, 1, err);
        if (!vend)
            return SL_ERR_FORMAT;
        m.val = p;
        m.val_len = (size_t)(vend - p);
        if (member) {
            int rc = member(ctx, &m);
            if (rc)
                return rc;
        }
        p = sl_json_skip_ws(vend, end);
        if (p < end && *p == ',') {
            p = sl_json_skip_ws(p + 1, end);
            continue;
        }
        if (p < end && *p == '}') {
            p++;
            break;
        }
        fail(err, text, p, "expected ',' or '}'");
        return SL_ERR_FORMAT;
    }
tail:
    p = sl_json_skip_ws(p, end);
    if (p != end) {
        fail(err, text, p, "trailing characters after the object");
        return SL_ERR_FORMAT;
    }
    return 0;
}

int sl_json_key_eq(const struct sl_json_member *m, const char *key)
{
    size_t n = strlen(key);
    if (!m->key_escaped)
        return m->key_len == n && memcmp(m->key, key, n) == 0;
    struct sl_buf dec = SL_BUF_INIT;
    const char *start = m->key - 1;
    int eq = 0;
    if (sl_json_decode_string(start, start, m->key + m->key_len + 1, &dec, NULL))
        eq = dec.len == n && memcmp(dec.data, key, n) == 0;
    sl_buf_release(&dec);
    return eq;
}

int sl_json_put_double(struct sl_buf *out, double v)
{
    if (!isfinite(v))
        return sl_buf_puts(out, "null");
    char tmp[40];
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(tmp, sizeof(tmp), "%.*g", prec, v);
        if (strtod(tmp, NULL) == v)
            break;
    }
    /* Keep it a JSON number that reads back as a float: "1" stays "1" (JSON has one
     * number type), "inf"-like output cannot occur here. */
    return sl_buf_puts(out, tmp);
}
