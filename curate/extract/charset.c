/* Web page encodings: WHATWG labels, <meta> sniffing, a small detector for undeclared
 * pages, and iconv conversion to UTF-8 that never fails on bad bytes. */
#include "curate/extract/charset.h"

#include "core/buf.h"
#include "core/err.h"
#include "core/utf8.h"

#include <errno.h>
#include <iconv.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* label -> canonical name; canonical names map to themselves. */
static const char *const labels[][2] = {
    { "utf-8", "utf-8" }, { "utf8", "utf-8" }, { "unicode-1-1-utf-8", "utf-8" },
    { "x-unicode20utf8", "utf-8" }, { "unicode20utf8", "utf-8" },
    { "windows-1252", "windows-1252" }, { "ascii", "windows-1252" },
    { "us-ascii", "windows-1252" }, { "iso-8859-1", "windows-1252" },
    { "iso8859-1", "windows-1252" }, { "iso_8859-1", "windows-1252" },
    { "latin1", "windows-1252" }, { "l1", "windows-1252" }, { "cp1252", "windows-1252" },
    { "x-cp1252", "windows-1252" }, { "cp819", "windows-1252" }, { "ibm819", "windows-1252" },
    { "iso-ir-100", "windows-1252" }, { "csisolatin1", "windows-1252" },
    { "ansi_x3.4-1968", "windows-1252" }, { "iso_8859-1:1987", "windows-1252" },
    { "x-user-defined", "windows-1252" },
    { "iso-8859-2", "iso-8859-2" }, { "latin2", "iso-8859-2" }, { "iso8859-2", "iso-8859-2" },
    { "iso-8859-3", "iso-8859-3" }, { "iso-8859-4", "iso-8859-4" },
    { "iso-8859-5", "iso-8859-5" }, { "iso-8859-6", "iso-8859-6" },
    { "iso-8859-7", "iso-8859-7" }, { "greek", "iso-8859-7" }, { "iso-8859-8", "iso-8859-8" },
    { "iso-8859-8-i", "iso-8859-8" }, { "iso-8859-10", "iso-8859-10" },
    { "iso-8859-13", "iso-8859-13" }, { "iso-8859-14", "iso-8859-14" },
    { "iso-8859-15", "iso-8859-15" }, { "latin9", "iso-8859-15" }, { "iso8859-15", "iso-8859-15" },
    { "iso-8859-16", "iso-8859-16" },
    { "windows-1250", "windows-1250" }, { "cp1250", "windows-1250" }, { "x-cp1250", "windows-1250" },
    { "windows-1251", "windows-1251" }, { "cp1251", "windows-1251" }, { "x-cp1251", "windows-1251" },
    { "windows-1253", "windows-1253" }, { "cp1253", "windows-1253" },
    { "windows-1254", "windows-1254" }, { "cp1254", "windows-1254" }, { "iso-8859-9", "windows-1254" },
    { "latin5", "windows-1254" }, { "windows-1255", "windows-1255" }, { "cp1255", "windows-1255" },
    { "windows-1256", "windows-1256" }, { "cp1256", "windows-1256" },
    { "windows-1257", "windows-1257" }, { "cp1257", "windows-1257" },
    { "windows-1258", "windows-1258" }, { "cp1258", "windows-1258" },
    { "windows-874", "windows-874" }, { "tis-620", "windows-874" }, { "iso-8859-11", "windows-874" },
    { "dos-874", "windows-874" },
    { "koi8-r", "koi8-r" }, { "koi8", "koi8-r" }, { "koi", "koi8-r" }, { "koi8-u", "koi8-u" },
    { "koi8-ru", "koi8-u" }, { "ibm866", "ibm866" }, { "cp866", "ibm866" }, { "866", "ibm866" },
    { "macintosh", "macintosh" }, { "mac", "macintosh" }, { "x-mac-roman", "macintosh" },
    { "gb18030", "gb18030" }, { "gbk", "gb18030" }, { "gb2312", "gb18030" }, { "x-gbk", "gb18030" },
    { "cp936", "gb18030" }, { "ms936", "gb18030" }, { "chinese", "gb18030" },
    { "csgb2312", "gb18030" }, { "euc-cn", "gb18030" }, { "gb_2312-80", "gb18030" },
    { "iso-ir-58", "gb18030" }, { "windows-936", "gb18030" },
    { "big5", "big5" }, { "big5-hkscs", "big5" }, { "cn-big5", "big5" }, { "csbig5", "big5" },
    { "x-x-big5", "big5" },
    { "shift_jis", "shift_jis" }, { "shift-jis", "shift_jis" }, { "sjis", "shift_jis" },
    { "ms_kanji", "shift_jis" }, { "x-sjis", "shift_jis" }, { "windows-31j", "shift_jis" },
    { "csshiftjis", "shift_jis" }, { "ms932", "shift_jis" }, { "cp932", "shift_jis" },
    { "euc-jp", "euc-jp" }, { "x-euc-jp", "euc-jp" }, { "cseucpkdfmtjapanese", "euc-jp" },
    { "iso-2022-jp", "iso-2022-jp" }, { "csiso2022jp", "iso-2022-jp" },
    { "euc-kr", "euc-kr" }, { "ks_c_5601-1987", "euc-kr" }, { "korean", "euc-kr" },
    { "windows-949", "euc-kr" }, { "cp949", "euc-kr" }, { "ksc5601", "euc-kr" },
    { "ks_c_5601-1989", "euc-kr" }, { "iso-ir-149", "euc-kr" }, { "csksc56011987", "euc-kr" },
    { "utf-16le", "utf-16le" }, { "utf-16", "utf-16le" }, { "unicode", "utf-16le" },
    { "ucs-2", "utf-16le" }, { "utf-16be", "utf-16be" },
};

/* canonical -> iconv name */
static const char *iconv_name(const char *canon)
{
    static const char *const map[][2] = {
        { "shift_jis", "CP932" }, { "euc-kr", "CP949" }, { "big5", "BIG5-HKSCS" },
        { "windows-874", "CP874" }, { "gb18030", "GB18030" },
    };
    for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
        if (!strcmp(map[i][0], canon))
            return map[i][1];
    return canon; /* glibc accepts the others as spelled (case-insensitive) */
}

const char *charset_canonical(const char *label, size_t n)
{
    char low[40];
    while (n && (*label == ' ' || *label == '\t' || *label == '"' || *label == '\'')) {
        label++;
        n--;
    }
    while (n && (label[n - 1] == ' ' || label[n - 1] == '"' || label[n - 1] == '\''))
        n--;
    if (n == 0 || n >= sizeof(low))
        return NULL;
    for (size_t i = 0; i < n; i++)
        low[i] = (char)(label[i] >= 'A' && label[i] <= 'Z' ? label[i] + 32 : label[i]);
    low[n] = 0;
    for (size_t i = 0; i < sizeof(labels) / sizeof(labels[0]); i++)
        if (!strcmp(labels[i][0], low))
            return labels[i][1];
    return NULL;
}

void charset_conv_init(struct charset_conv *c)
{
    memset(c, 0, sizeof(*c));
}

void charset_conv_release(struct charset_conv *c)
{
    for (unsigned i = 0; i < CHARSET_CACHE; i++)
        if (c->cache[i].cd)
            iconv_close((iconv_t)c->cache[i].cd);
    memset(c, 0, sizeof(*c));
}

static iconv_t get_cd(struct charset_conv *c, const char *canon)
{
    for (unsigned i = 0; i < CHARSET_CACHE; i++)
        if (c->cache[i].cd && !strcmp(c->cache[i].name, canon)) {
            iconv((iconv_t)c->cache[i].cd, NULL, NULL, NULL, NULL); /* reset state */
            return (iconv_t)c->cache[i].cd;
        }
    iconv_t cd = iconv_open("UTF-8", iconv_name(canon));
    if (cd == (iconv_t)-1)
        return cd;
    unsigned k = c->next++ % CHARSET_CACHE;
    if (c->cache[k].cd)
        iconv_close((iconv_t)c->cache[k].cd);
    snprintf(c->cache[k].name, sizeof(c->cache[k].name), "%s", canon);
    c->cache[k].cd = cd;
    return cd;
}

static int ascii_lower(int ch)
{
    return ch >= 'A' && ch <= 'Z' ? ch + 32 : ch;
}

/* Case-insensitive search for an ASCII needle. */
static const char *find_ci(const char *p, const char *end, const char *needle)
{
    size_t nl = strlen(needle);
    for (; p + nl <= end; p++) {
        size_t k = 0;
        while (k < nl && ascii_lower((unsigned char)p[k]) == needle[k])
            k++;
        if (k == nl)
            return p;
    }
    return NULL;
}

const char *charset_from_meta(const char *html, size_t n)
{
    const char *end = html + (n < 4096 ? n : 4096);
    const char *p = html;
    while ((p = find_ci(p, end, "<meta")) != NULL) {
        const char *tag_end = memchr(p, '>', (size_t)(end - p));
        if (!tag_end)
            tag_end = end;
        const char *q = find_ci(p, tag_end, "charset");
        if (q) {
            q += 7;
            while (q < tag_end && (*q == ' ' || *q == '\t'))
                q++;
            if (q < tag_end && *q == '=') {
                q++;
                while (q < tag_end && (*q == ' ' || *q == '"' || *q == '\''))
                    q++;
                const char *v = q;
                while (q < tag_end && (((*q | 32) >= 'a' && (*q | 32) <= 'z') ||
                                       (*q >= '0' && *q <= '9') || *q == '-' || *q == '_' ||
                                       *q == '.' || *q == ':'))
                    q++;
                const char *cs = charset_canonical(v, (size_t)(q - v));
                if (cs) {
                    /* a page that says utf-16 in ASCII bytes is not utf-16 */
                    if (!strncmp(cs, "utf-16", 6))
                        cs = "utf-8";
                    return cs;
                }
            }
        }
        p = tag_end;
    }
    return NULL;
}

/* Decode a sample with `canon`; counts invalid sequences and what the characters are. */
struct sample_stats {
    size_t errors, chars, nonascii, kana, hangul, han, spaces;
};

static int sample_decode(struct charset_conv *c, const char *canon, const char *p, size_t n,
                         struct sample_stats *st)
{
    memset(st, 0, sizeof(*st));
    iconv_t cd = get_cd(c, canon);
    if (cd == (iconv_t)-1)
        return -1;
    char out[8192];
    char *in = (char *)p;
    size_t inleft = n;
    while (inleft) {
        char *o = out;
        size_t oleft = sizeof(out);
        size_t r = iconv(cd, &in, &inleft, &o, &oleft);
        size_t made = sizeof(out) - oleft;
        for (size_t i = 0; i < made;) {
            uint32_t cp;
            size_t l = sl_utf8_decode((const unsigned char *)out + i, made - i, &cp);
            if (!l)
                break;
            i += l;
            st->chars++;
            if (cp == ' ')
                st->spaces++;
            if (cp >= 0x80)
                st->nonascii++;
            if (cp >= 0x3040 && cp <= 0x30ff)
                st->kana++;
            else if (cp >= 0xac00 && cp <= 0xd7a3)
                st->hangul++;
            else if (cp >= 0x4e00 && cp <= 0x9fff)
                st->han++;
        }
        if (r == (size_t)-1) {
            if (errno == E2BIG)
                continue;
            st->errors++;
            if (errno == EINVAL)
                break;
            in++;
            inleft--;
            iconv(cd, NULL, NULL, NULL, NULL);
        }
    }
    return 0;
}

const char *charset_detect(struct charset_conv *c, const char *p, size_t n)
{
    if (n > (64u << 10))
        n = 64u << 10;
    size_t bad = sl_utf8_validate(p, n);
    /* valid, or only cut inside the last character of the sample */
    if (bad == n || (n >= (64u << 10) && n - bad < 4))
        return "utf-8";
    struct sample_stats s;
    if (!sample_decode(c, "shift_jis", p, n, &s) && s.errors == 0 && s.kana * 10 >= s.nonascii)
        return "shift_jis";
    if (!sample_decode(c, "euc-jp", p, n, &s) && s.errors == 0 && s.kana * 10 >= s.nonascii)
        return "euc-jp";
    /* Korean separates words with spaces; Chinese does not */
    if (!sample_decode(c, "euc-kr", p, n, &s) && s.errors == 0 && s.hangul * 2 >= s.nonascii &&
        s.spaces * 8 >= s.hangul)
        return "euc-kr";
    if (!sample_decode(c, "gb18030", p, n, &s) && s.errors == 0 && s.han * 2 >= s.nonascii)
        return "gb18030";
    if (!sample_decode(c, "big5", p, n, &s) && s.errors == 0 && s.han * 2 >= s.nonascii)
        return "big5";
    /* single-byte: many high bytes among the letters suggests Cyrillic */
    size_t high = 0, letters = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char b = (unsigned char)p[i];
        if (b >= 0xc0)
            high++;
        if (b >= 0xc0 || ((b | 32) >= 'a' && (b | 32) <= 'z'))
            letters++;
    }
    if (letters && high * 10 >= letters * 4)
        return "windows-1251";
    return "windows-1252";
}

const char *charset_choose(struct charset_conv *c, const char *p, size_t n,
                           const char *http_charset, enum charset_source *src)
{
    enum charset_source dummy;
    if (!src)
        src = &dummy;
    const unsigned char *u = (const unsigned char *)p;
    *src = CHARSET_BOM;
    if (n >= 3 && u[0] == 0xef && u[1] == 0xbb && u[2] == 0xbf)
        return "utf-8";
    if (n >= 2 && u[0] == 0xff && u[1] == 0xfe)
        return "utf-16le";
    if (n >= 2 && u[0] == 0xfe && u[1] == 0xff)
        return "utf-16be";
    if (http_charset && *http_charset) {
        const char *cs = charset_canonical(http_charset, strlen(http_charset));
        if (cs) {
            *src = CHARSET_HTTP;
            return cs;
        }
    }
    const char *cs = charset_from_meta(p, n);
    if (cs) {
        *src = CHARSET_META;
        return cs;
    }
    *src = CHARSET_DETECTED;
    return charset_detect(c, p, n);
}

static int put_fffd(struct sl_buf *out, size_t *replaced)
{
    if (replaced)
        (*replaced)++;
    return sl_buf_append(out, "\xef\xbf\xbd", 3);
}

int charset_to_utf8(struct charset_conv *c, const char *charset, const char *p, size_t n,
                    struct sl_buf *out, size_t *replaced)
{
    size_t rep = 0;
    const char *canon = charset_canonical(charset, strlen(charset));
    if (!canon)
        canon = charset;
    const unsigned char *u = (const unsigned char *)p;
    if (!strcmp(canon, "utf-8")) {
        if (n >= 3 && u[0] == 0xef && u[1] == 0xbb && u[2] == 0xbf) {
            p += 3;
            n -= 3;
        }
        int rc = sl_utf8_repair(out, p, n, &rep);
        if (replaced)
            *replaced += rep;
        return rc;
    }
    if (!strncmp(canon, "utf-16", 6) && n >= 2 &&
        ((u[0] == 0xff && u[1] == 0xfe) || (u[0] == 0xfe && u[1] == 0xff))) {
        canon = u[0] == 0xff ? "utf-16le" : "utf-16be";
        p += 2;
        n -= 2;
    }
    iconv_t cd = get_cd(c, canon);
    if (cd == (iconv_t)-1)
        return sl_err_set(SL_ERR_UNSUPPORTED, "charset '%s' is not supported by iconv", charset);
    size_t start = out->len;
    char *in = (char *)p;
    size_t inleft = n;
    int rc = 0;
    while (inleft && !rc) {
        /* room: most legacy bytes become at most 3 UTF-8 bytes (plus a little) */
        size_t want = inleft * 3 + 16;
        if (want > (1u << 20))
            want = 1u << 20;
        if (out->max && out->max - out->len < want)
            want = out->max - out->len;
        if (want < 8 || sl_buf_reserve(out, want) != 0) {
            rc = sl_err_set(SL_ERR_TOOBIG, "converted text larger than %zu bytes", out->max);
            break;
        }
        char *o = out->data + out->len;
        size_t oleft = want;
        size_t r = iconv(cd, &in, &inleft, &o, &oleft);
        out->len += want - oleft;
        out->data[out->len] = 0;
        if (r == (size_t)-1) {
            if (errno == E2BIG)
                continue;
            rc = put_fffd(out, &rep);
            if (errno == EINVAL) /* cut at the end */
                break;
            in++;
            inleft--;
            iconv(cd, NULL, NULL, NULL, NULL);
        }
    }
    (void)start;
    if (replaced)
        *replaced += rep;
    return rc;
}
