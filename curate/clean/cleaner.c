/* sl_clean_text: Unicode and whitespace repair of one text (see cleaner.h). Each pass
 * reads one buffer and writes the other. */
#include "curate/clean/cleaner.h"

#include "core/buf.h"
#include "core/utf8.h"

#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

/* Windows-1252 bytes 0x80..0x9F as code points (0: undefined, read as the C1 control). */
static const uint16_t cp1252_high[32] = {
    0x20AC, 0, 0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021, 0x02C6, 0x2030, 0x0160,
    0x2039, 0x0152, 0, 0x017D, 0, 0, 0x2018, 0x2019, 0x201C, 0x201D, 0x2022, 0x2013,
    0x2014, 0x02DC, 0x2122, 0x0161, 0x203A, 0x0153, 0, 0x017E, 0x0178,
};

/* The byte a code point has in "sloppy" Windows-1252 (undefined bytes as C1), or -1. */
static int cp1252_byte(uint32_t cp)
{
    if (cp < 0x80 || (cp >= 0xA0 && cp <= 0xFF))
        return (int)cp;
    if (cp >= 0x80 && cp <= 0x9F)
        return cp1252_high[cp - 0x80] ? -1 : (int)cp;
    for (int i = 0; i < 32; i++)
        if (cp1252_high[i] == cp)
            return 0x80 + i;
    return -1;
}

static size_t next(const char *s, size_t n, uint32_t *cp)
{
    size_t l = sl_utf8_decode((const unsigned char *)s, n, cp);
    if (!l) {
        *cp = 0xFFFD;
        return 1;
    }
    return l;
}

static void put_cp(struct sl_buf *b, uint32_t cp)
{
    char e[4];
    size_t l = sl_utf8_encode(cp, e);
    sl_buf_append(b, e, l ? l : 0);
}

/* What pass_controls does with C1 controls (U+0080..U+009F). */
enum c1_mode {
    C1_KEEP,      /* leave them: the mojibake repair reads them as the bytes they were */
    C1_MAP_DROP,  /* as the Windows-1252 characters they stand for; the 5 undefined out */
    C1_MAP_KEEP,  /* the same, the 5 undefined kept (as ftfy's fix_c1_controls does) */
};

/* Controls: terminal escapes (ESC [ params final), C1 as `mode` says, other controls out. */
static void pass_controls(const char *s, size_t n, struct sl_buf *o, struct sl_clean_counts *c,
                          enum c1_mode mode)
{
    for (size_t i = 0; i < n;) {
        unsigned char ch = (unsigned char)s[i];
        if (ch == 0x1B) {
            size_t j = i + 1;
            if (j < n && s[j] == '[') {
                j++;
                while (j < n && ((s[j] >= '0' && s[j] <= '9') || s[j] == ';' || s[j] == '?'))
                    j++;
                if (j < n && ((s[j] >= 'A' && s[j] <= 'Z') || (s[j] >= 'a' && s[j] <= 'z')))
                    j++;
            }
            c->terminal_escapes++;
            i = j;
            continue;
        }
        if (ch < 0x20 && ch != '\t' && ch != '\n' && ch != '\r') {
            c->control_chars++;
            i++;
            continue;
        }
        if (ch == 0x7F) {
            c->control_chars++;
            i++;
            continue;
        }
        if (ch < 0x80) {
            sl_buf_putc(o, (char)ch);
            i++;
            continue;
        }
        uint32_t cp;
        size_t l = next(s + i, n - i, &cp);
        if (cp == 0xFFFD && l == 1)
            c->invalid_utf8++;
        if (cp >= 0x80 && cp <= 0x9F && mode != C1_KEEP) {
            uint16_t m = cp1252_high[cp - 0x80];
            if (m || mode == C1_MAP_DROP)
                c->c1_controls++;
            if (m)
                put_cp(o, m);
            else if (mode == C1_MAP_KEEP)
                sl_buf_append(o, s + i, l);
            i += l;
            continue;
        }
        if (cp == 0xFEFF || (cp >= 0xFFF9 && cp <= 0xFFFB)) {
            c->control_chars++;
            i += l;
            continue;
        }
        if (cp == 0xFFFD && l == 1)
            put_cp(o, 0xFFFD);
        else
            sl_buf_append(o, s + i, l);
        i += l;
    }
}

/* Mojibake: each run of non-ASCII characters that all have a Windows-1252 byte is turned
 * back into those bytes; when the bytes are valid UTF-8 (with a multi-byte character),
 * they replace the run. */
static int pass_mojibake(const char *s, size_t n, struct sl_buf *o, struct sl_clean_counts *c)
{
    int changed = 0;
    unsigned char bytes[256];
    for (size_t i = 0; i < n;) {
        if ((unsigned char)s[i] < 0x80) {
            sl_buf_putc(o, s[i++]);
            continue;
        }
        /* the run of non-ASCII characters starting here */
        size_t j = i, nb = 0;
        int ok = 1;
        while (j < n && (unsigned char)s[j] >= 0x80) {
            uint32_t cp;
            size_t l = next(s + j, n - j, &cp);
            int b = cp1252_byte(cp);
            if (b < 0 || nb == sizeof(bytes))
                ok = 0;
            else
                bytes[nb++] = (unsigned char)b;
            j += l;
        }
        if (ok && nb >= 2 && sl_utf8_validate((const char *)bytes, nb) == nb) {
            sl_buf_append(o, bytes, nb);
            c->mojibake++;
            changed = 1;
        } else {
            sl_buf_append(o, s + i, j - i);
        }
        i = j;
    }
    return changed;
}

struct entity {
    const char *name;
    uint32_t cp;
};

static const struct entity entities[] = {
    { "amp", '&' },      { "lt", '<' },        { "gt", '>' },         { "quot", '"' },
    { "apos", '\'' },    { "nbsp", 0xA0 },     { "copy", 0xA9 },      { "reg", 0xAE },
    { "trade", 0x2122 }, { "mdash", 0x2014 },  { "ndash", 0x2013 },   { "hellip", 0x2026 },
    { "lsquo", 0x2018 }, { "rsquo", 0x2019 },  { "ldquo", 0x201C },   { "rdquo", 0x201D },
    { "laquo", 0xAB },   { "raquo", 0xBB },    { "bull", 0x2022 },    { "middot", 0xB7 },
    { "deg", 0xB0 },     { "euro", 0x20AC },   { "pound", 0xA3 },     { "yen", 0xA5 },
    { "cent", 0xA2 },    { "sect", 0xA7 },     { "para", 0xB6 },      { "times", 0xD7 },
    { "divide", 0xF7 },  { "eacute", 0xE9 },   { "egrave", 0xE8 },    { "aacute", 0xE1 },
    { "agrave", 0xE0 },  { "oacute", 0xF3 },   { "uacute", 0xFA },    { "iacute", 0xED },
    { "ntilde", 0xF1 },  { "ccedil", 0xE7 },   { "uuml", 0xFC },      { "ouml", 0xF6 },
    { "auml", 0xE4 },    { "szlig", 0xDF },    { "Eacute", 0xC9 },    { "Uuml", 0xDC },
    { "Ouml", 0xD6 },    { "Auml", 0xC4 },     { "shy", 0xAD },       { "ensp", 0x2002 },
    { "emsp", 0x2003 },  { "thinsp", 0x2009 }, { "iexcl", 0xA1 },     { "iquest", 0xBF },
    { NULL, 0 },
};

static int has_tags(const char *s, size_t n)
{
    for (size_t i = 0; i + 1 < n; i++)
        if (s[i] == '<' && ((s[i + 1] | 32) >= 'a' && (s[i + 1] | 32) <= 'z'))
            return 1;
    return 0;
}

static void pass_entities(const char *s, size_t n, struct sl_buf *o, struct sl_clean_counts *c)
{
    for (size_t i = 0; i < n;) {
        if (s[i] != '&') {
            const char *amp = memchr(s + i, '&', n - i);
            size_t stop = amp ? (size_t)(amp - s) : n;
            sl_buf_append(o, s + i, stop - i);
            i = stop;
            continue;
        }
        size_t j = i + 1;
        uint32_t cp = 0;
        int ok = 0;
        if (j < n && s[j] == '#') {
            j++;
            int hex = j < n && (s[j] == 'x' || s[j] == 'X');
            j += (size_t)hex;
            size_t d0 = j;
            while (j < n && j - d0 < 7 && (hex ? strchr("0123456789abcdefABCDEF", s[j]) != NULL && s[j] : (s[j] >= '0' && s[j] <= '9'))) {
                cp = cp * (hex ? 16 : 10) + (uint32_t)(s[j] <= '9' ? s[j] - '0' : (s[j] | 32) - 'a' + 10);
                j++;
            }
            ok = j > d0 && j < n && s[j] == ';' && cp > 0 && cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF);
            if (ok && cp >= 0x80 && cp <= 0x9F && cp1252_high[cp - 0x80])
                cp = cp1252_high[cp - 0x80]; /* as browsers do */
        } else {
            while (j < n && j - i < 10 && ((s[j] | 32) >= 'a' && (s[j] | 32) <= 'z'))
                j++;
            if (j < n && s[j] == ';')
                for (const struct entity *e = entities; e->name; e++)
                    if (strlen(e->name) == j - i - 1 && !memcmp(e->name, s + i + 1, j - i - 1)) {
                        cp = e->cp;
                        ok = 1;
                        break;
                    }
        }
        if (ok) {
            put_cp(o, cp);
            c->html_entities++;
            i = j + 1;
        } else {
            sl_buf_putc(o, '&');
            i++;
        }
    }
}

static int pass_normalize(const char *s, size_t n, int nfkc, struct sl_buf *o)
{
    utf8proc_uint8_t *res = NULL;
    utf8proc_ssize_t m = utf8proc_map((const utf8proc_uint8_t *)s, (utf8proc_ssize_t)n, &res,
                                      UTF8PROC_STABLE | UTF8PROC_COMPOSE | (nfkc ? UTF8PROC_COMPAT : 0));
    if (m < 0) {
        sl_buf_append(o, s, n);
        return 0;
    }
    sl_buf_append(o, res, (size_t)m);
    int changed = (size_t)m != n || memcmp(res, s, n) != 0;
    free(res);
    return changed;
}

static void pass_urls_quotes(const struct sl_clean_opts *opt, const char *s, size_t n, struct sl_buf *o,
                             struct sl_clean_counts *c)
{
    for (size_t i = 0; i < n;) {
        if (opt->remove_urls &&
            ((n - i >= 7 && !memcmp(s + i, "http://", 7)) || (n - i >= 8 && !memcmp(s + i, "https://", 8)) ||
             (n - i >= 4 && !memcmp(s + i, "www.", 4)))) {
            size_t j = i + 4;
            while (j < n && !strchr(" \t\n\r\f\v", s[j]))
                j++;
            if (j > i + (s[i] == 'w' ? 4 : (s[i + 4] == 's' ? 8 : 7))) {
                c->urls_removed++;
                i = j;
                continue;
            }
        }
        if (opt->uncurl_quotes && n - i >= 3 && (unsigned char)s[i] == 0xE2 && (unsigned char)s[i + 1] == 0x80) {
            unsigned char t = (unsigned char)s[i + 2];
            if (t >= 0x98 && t <= 0x9F) {
                sl_buf_putc(o, t <= 0x9B ? '\'' : '"');
                c->quotes_uncurled++;
                i += 3;
                continue;
            }
        }
        sl_buf_putc(o, s[i++]);
    }
}

/* \r\n and \r to \n; spaces and tabs at line ends dropped; 3+ newlines to 2. A line of
 * only spaces and tabs is empty once its spaces go, so the newlines of a run are counted
 * at the end of the output, not in the input. */
static void pass_whitespace(const char *s, size_t n, struct sl_buf *o, struct sl_clean_counts *c)
{
    int collapsing = 0; /* inside a run whose third newline was dropped (counted once) */
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        if (ch == '\r') {
            c->crlf++;
            if (i + 1 < n && s[i + 1] == '\n')
                i++;
            ch = '\n';
        }
        if (ch == '\n') {
            size_t k = o->len;
            while (k > 0 && (o->data[k - 1] == ' ' || o->data[k - 1] == '\t'))
                k--;
            if (k != o->len) {
                c->trailing_spaces++;
                sl_buf_truncate(o, k);
            }
            if (k >= 2 && o->data[k - 1] == '\n' && o->data[k - 2] == '\n') {
                if (!collapsing)
                    c->newlines_collapsed++;
                collapsing = 1;
                continue;
            }
        } else if (ch != ' ' && ch != '\t') {
            collapsing = 0;
        }
        sl_buf_putc(o, ch);
    }
    size_t k = o->len;
    while (k > 0 && (o->data[k - 1] == ' ' || o->data[k - 1] == '\t'))
        k--;
    if (k != o->len) {
        c->trailing_spaces++;
        sl_buf_truncate(o, k);
    }
}

int sl_clean_text(const struct sl_clean_opts *opt, const char *s, size_t n, struct sl_buf *out,
                  struct sl_clean_counts *c)
{
    struct sl_buf a = SL_BUF_INIT, b = SL_BUF_INIT;
    /* ftfy's order: the mojibake repair sees the C1 controls (Latin-1 mojibake of Á is
     * "Ã" + U+0081), the C1 controls are read as Windows-1252 after it */
    pass_controls(s, n, &a, c, C1_KEEP);
    if (!opt->no_mojibake) {
        for (int round = 0; round < 3; round++) {
            sl_buf_reset(&b);
            int changed = pass_mojibake(a.data ? a.data : "", a.len, &b, c);
            struct sl_buf t = a;
            a = b;
            b = t;
            if (!changed)
                break;
        }
    }
    /* C1 controls left (and any the re-decoded bytes hold) as Windows-1252; without the
     * mojibake repair the 5 that Windows-1252 leaves undefined are kept, so a later repair
     * can still read them */
    sl_buf_reset(&b);
    pass_controls(a.data ? a.data : "", a.len, &b, c,
                  opt->no_mojibake ? C1_MAP_KEEP : C1_MAP_DROP);
    {
        struct sl_buf t = a;
        a = b;
        b = t;
    }
    if (!opt->no_entities && !has_tags(a.data ? a.data : "", a.len)) {
        sl_buf_reset(&b);
        pass_entities(a.data ? a.data : "", a.len, &b, c);
        struct sl_buf t = a;
        a = b;
        b = t;
    }
    if (!opt->no_normalize) {
        sl_buf_reset(&b);
        c->normalized += (uint64_t)pass_normalize(a.data ? a.data : "", a.len, opt->nfkc, &b);
        struct sl_buf t = a;
        a = b;
        b = t;
    }
    if (opt->remove_urls || opt->uncurl_quotes) {
        sl_buf_reset(&b);
        pass_urls_quotes(opt, a.data ? a.data : "", a.len, &b, c);
        struct sl_buf t = a;
        a = b;
        b = t;
    }
    sl_buf_reset(out);
    int rc = 0;
    if (!opt->no_whitespace) {
        struct sl_buf w = SL_BUF_INIT;
        pass_whitespace(a.data ? a.data : "", a.len, &w, c);
        rc = sl_buf_append(out, w.data ? w.data : "", w.len);
        sl_buf_release(&w);
    } else {
        rc = sl_buf_append(out, a.data ? a.data : "", a.len);
    }
    sl_buf_release(&a);
    sl_buf_release(&b);
    return rc;
}
