/* Charset sniffing and conversion to UTF-8 (iconv, lossy: U+FFFD for bad bytes), and the
 * raw-element stripper that runs before libxml2's HTML parser. */
#include "curate/extract/html_prep.h"

#include "core/buf.h"
#include "core/err.h"
#include "core/utf8.h"

#include <ctype.h>
#include <errno.h>
#include <iconv.h>
#include <string.h>
#include <strings.h>

static const char REPL[3] = { (char)0xEF, (char)0xBF, (char)0xBD }; /* U+FFFD */

struct alias {
    const char *label, *canon;
};

/* WHATWG encoding labels that differ from what iconv should use. */
static const struct alias ALIASES[] = {
    { "utf8", "utf-8" },
    { "unicode-1-1-utf-8", "utf-8" },
    { "x-unicode20utf8", "utf-8" },
    { "unicode20utf8", "utf-8" },
    { "ascii", "windows-1252" },
    { "us-ascii", "windows-1252" },
    { "ansi_x3.4-1968", "windows-1252" },
    { "iso-8859-1", "windows-1252" },
    { "iso8859-1", "windows-1252" },
    { "iso_8859-1", "windows-1252" },
    { "iso88591", "windows-1252" },
    { "latin1", "windows-1252" },
    { "l1", "windows-1252" },
    { "cp1252", "windows-1252" },
    { "x-cp1252", "windows-1252" },
    { "cp819", "windows-1252" },
    { "ibm819", "windows-1252" },
    { "iso-8859-9", "windows-1254" },
    { "latin5", "windows-1254" },
    { "iso-8859-11", "windows-874" },
    { "tis-620", "windows-874" },
    { "gb2312", "gb18030" },
    { "gbk", "gb18030" },
    { "x-gbk", "gb18030" },
    { "gb_2312-80", "gb18030" },
    { "csgb2312", "gb18030" },
    { "chinese", "gb18030" },
    { "shift_jis", "cp932" },
    { "shift-jis", "cp932" },
    { "sjis", "cp932" },
    { "x-sjis", "cp932" },
    { "ms_kanji", "cp932" },
    { "windows-31j", "cp932" },
    { "csshiftjis", "cp932" },
    { "euc-kr", "cp949" },
    { "ks_c_5601-1987", "cp949" },
    { "korean", "cp949" },
    { "windows-949", "cp949" },
    { "big5", "big5-hkscs" },
    { "x-x-big5", "big5-hkscs" },
    { "utf-16", "utf-16le" },
    { "unicode", "utf-16le" },
    { "ucs-2", "utf-16le" },
};

int html_charset_canon(const char *label, size_t n, char out[32])
{
    while (n && isspace((unsigned char)*label)) {
        label++;
        n--;
    }
    while (n && (isspace((unsigned char)label[n - 1]) || label[n - 1] == '"' ||
                 label[n - 1] == '\''))
        n--;
    if (n == 0 || n >= 32)
        return -1;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)label[i];
        if (!(isalnum(c) || c == '-' || c == '_' || c == '.' || c == ':'))
            return -1;
        out[i] = (char)tolower(c);
    }
    out[n] = 0;
    for (size_t i = 0; i < sizeof(ALIASES) / sizeof(ALIASES[0]); i++)
        if (strcmp(out, ALIASES[i].label) == 0) {
            strcpy(out, ALIASES[i].canon);
            break;
        }
    return 0;
}

static const char *find_ci(const char *s, const char *end, const char *needle)
{
    size_t n = strlen(needle);
    for (; s + n <= end; s++)
        if (tolower((unsigned char)*s) == needle[0] && strncasecmp(s, needle, n) == 0)
            return s;
    return NULL;
}

int html_charset_sniff(const char *html, size_t len, char out[32], size_t *bom_len)
{
    const unsigned char *u = (const unsigned char *)html;
    *bom_len = 0;
    if (len >= 3 && u[0] == 0xEF && u[1] == 0xBB && u[2] == 0xBF) {
        *bom_len = 3;
        strcpy(out, "utf-8");
        return 1;
    }
    if (len >= 2 && u[0] == 0xFF && u[1] == 0xFE) {
        *bom_len = 2;
        strcpy(out, "utf-16le");
        return 1;
    }
    if (len >= 2 && u[0] == 0xFE && u[1] == 0xFF) {
        *bom_len = 2;
        strcpy(out, "utf-16be");
        return 1;
    }
    const char *end = html + (len < 4096 ? len : 4096);
    const char *p = html;
    while ((p = find_ci(p, end, "<meta")) != NULL) {
        const char *te = memchr(p, '>', (size_t)(end - p));
        if (!te)
            break;
        const char *c = find_ci(p, te, "charset");
        if (c) {
            c += 7;
            while (c < te && (isspace((unsigned char)*c)))
                c++;
            if (c < te && *c == '=') {
                c++;
                while (c < te && (isspace((unsigned char)*c) || *c == '"' || *c == '\''))
                    c++;
                const char *v = c;
                while (c < te && !isspace((unsigned char)*c) && *c != '"' && *c != '\'' &&
                       *c != ';' && *c != '/' && *c != '>')
                    c++;
                if (html_charset_canon(v, (size_t)(c - v), out) == 0) {
                    /* a page that says UTF-16 in ASCII bytes is not UTF-16 */
                    if (strncmp(out, "utf-16", 6) == 0)
                        strcpy(out, "utf-8");
                    return 1;
                }
            }
        }
        p = te;
    }
    return 0;
}

int html_to_utf8(const char *in, size_t len, const char *charset, struct sl_buf *out,
                 size_t *replaced)
{
    size_t nrep = 0;
    int rc = 0;
    if (replaced)
        *replaced = 0;
    if (!charset || strcmp(charset, "utf-8") == 0 || strcmp(charset, "utf8") == 0)
        goto as_utf8;
    iconv_t cd = iconv_open("UTF-8", charset);
    if (cd == (iconv_t)-1)
        goto as_utf8;
    size_t unit = strncmp(charset, "utf-16", 6) == 0 ? 2 : strncmp(charset, "utf-32", 6) == 0 ? 4 : 1;
    char *ip = (char *)in;
    size_t ileft = len;
    while (ileft > 0) {
        size_t want = ileft < 4096 ? 4096 : ileft + ileft / 2;
        rc = sl_buf_reserve(out, want);
        if (rc) {
            /* near the cap: try a small window before giving up */
            rc = sl_buf_reserve(out, 64);
            if (rc)
                break;
            want = out->cap - out->len;
        } else {
            want = out->cap - out->len;
        }
        char *op = out->data + out->len;
        size_t oleft = want;
        size_t r = iconv(cd, &ip, &ileft, &op, &oleft);
        out->len = (size_t)(op - out->data);
        out->data[out->len] = 0;
        if (r != (size_t)-1)
            break;
        if (errno == E2BIG)
            continue;
        /* EILSEQ (bad or unmappable bytes) or EINVAL (cut at the end): one U+FFFD */
        rc = sl_buf_append(out, REPL, 3);
        if (rc)
            break;
        nrep++;
        size_t skip = unit < ileft ? unit : ileft;
        if (errno == EINVAL)
            skip = ileft;
        ip += skip;
        ileft -= skip;
        iconv(cd, NULL, NULL, NULL, NULL); /* reset shift state */
    }
    iconv_close(cd);
    if (replaced)
        *replaced = nrep;
    return rc;
as_utf8:
    return sl_utf8_repair(out, in, len, replaced);
}

/* Elements whose contents are dropped. `raw`: the content is raw text up to the end tag
 * (or the end of input when it is missing); otherwise only a matching end tag ends it and
 * a missing one drops the start tag alone. */
struct raw_el {
    const char *name;
    unsigned char len, raw;
};
static const struct raw_el RAW[] = {
    { "script", 6, 1 },   { "style", 5, 1 },  { "noscript", 8, 1 }, { "iframe", 6, 1 },
    { "noembed", 7, 1 },  { "noframes", 8, 1 }, { "svg", 3, 0 },    { "math", 4, 0 },
    { "template", 8, 0 }, { "object", 6, 0 }, { "video", 5, 0 },    { "audio", 5, 0 },
    { "select", 6, 0 },   { "canvas", 6, 0 },
};

static int is_name_end(char c)
{
    return c == '>' || c == '/' || c == ' ' || c == '\t' || c == '\n' || c == '\r' ||
           c == '\f';
}

/* End of the tag starting at p (just past its '>'), honouring quoted attribute values;
 * end when unterminated. *selfclose tells whether it ended with "/>". */
static const char *tag_end(const char *p, const char *end, int *selfclose)
{
    char prev = 0;
    *selfclose = 0;
    while (p < end) {
        char c = *p;
        if ((c == '"' || c == '\'') && prev == '=') {
            const char *q = memchr(p + 1, c, (size_t)(end - p - 1));
            if (!q)
                return end;
            p = q + 1;
            prev = c;
            continue;
        }
        if (c == '>') {
            *selfclose = prev == '/';
            return p + 1;
        }
        if (!isspace((unsigned char)c))
            prev = c;
        p++;
    }
    return end;
}

/* Find "</name" (any case, followed by a name end) at or after p; NULL if none. */
static const char *find_end_tag(const char *p, const char *end, const char *name, size_t n)
{
    while (p < end) {
        const char *lt = memchr(p, '<', (size_t)(end - p));
        if (!lt || lt + 2 + n > end)
            return NULL;
        if (lt[1] == '/' && strncasecmp(lt + 2, name, n) == 0 &&
            (lt + 2 + n == end || is_name_end(lt[2 + n])))
            return lt;
        p = lt + 1;
    }
    return NULL;
}

static int drop_nuls(struct sl_buf *out, size_t from)
{
    char *s = out->data + from, *e = out->data + out->len;
    char *z = memchr(s, 0, (size_t)(e - s));
    if (!z)
        return 0;
    char *w = z;
    for (char *r = z; r < e; r++)
        if (*r)
            *w++ = *r;
    out->len = (size_t)(w - out->data);
    out->data[out->len] = 0;
    return 0;
}

int html_strip_raw(const char *html, size_t len, struct sl_buf *out)
{
    const char *p = html, *end = html + len, *mark = html;
    size_t start = out->len;
    int rc;
    while (p < end) {
        const char *lt = memchr(p, '<', (size_t)(end - p));
        if (!lt)
            break;
        p = lt + 1;
        if (end - lt >= 4 && lt[1] == '!' && lt[2] == '-' && lt[3] == '-') {
            const char *q = lt + 4, *stop;
            if (q < end && *q == '>')
                stop = q + 1;
            else if (q + 1 < end && q[0] == '-' && q[1] == '>')
                stop = q + 2;
            else {
                const char *c = memmem(q, (size_t)(end - q), "-->", 3);
                stop = c ? c + 3 : end;
            }
            if ((rc = sl_buf_append(out, mark, (size_t)(lt - mark))) != 0)
                return rc;
            mark = p = stop;
            continue;
        }
        if (p >= end || !isalpha((unsigned char)*p))
            continue;
        const char *ne = p;
        while (ne < end && isalnum((unsigned char)*ne))
            ne++;
        size_t n = (size_t)(ne - p);
        if (ne < end && !is_name_end(*ne))
            continue;
        const struct raw_el *el = NULL;
        for (size_t i = 0; i < sizeof(RAW) / sizeof(RAW[0]); i++)
            if (RAW[i].len == n && strncasecmp(p, RAW[i].name, n) == 0) {
                el = &RAW[i];
                break;
            }
        if (!el)
            continue;
        int selfclose;
        const char *te = tag_end(ne, end, &selfclose);
        const char *stop;
        if (selfclose && !el->raw) {
            stop = te;
        } else {
            const char *et = find_end_tag(te, end, el->name, n);
            if (et) {
                int sc;
                stop = tag_end(et + 2 + n, end, &sc);
            } else {
                stop = el->raw ? end : te;
            }
        }
        if ((rc = sl_buf_append(out, mark, (size_t)(lt - mark))) != 0)
            return rc;
        /* keep a separator so that words on both sides do not merge */
        if ((rc = sl_buf_putc(out, ' ')) != 0)
            return rc;
        mark = p = stop;
    }
    if ((rc = sl_buf_append(out, mark, (size_t)(end - mark))) != 0)
        return rc;
    if (out->len == 0 && (rc = sl_buf_reserve(out, 1)) != 0)
        return rc;
    return drop_nuls(out, start);
}
