/* Text normalisation for dedup hashing (see normalize.h): one pass over the UTF-8 input,
 * ASCII handled byte by byte, other code points through small range tables. */
#include "curate/dedup/normalize.h"

#include "core/buf.h"
#include "core/err.h"
#include "core/utf8.h"

#include <stdio.h>
#include <string.h>

static const struct {
    const char *name;
    unsigned flag;
} names[] = {
    { "lower", DD_NORM_LOWER },   { "punct", DD_NORM_PUNCT },     { "space", DD_NORM_SPACE },
    { "digits", DD_NORM_DIGITS }, { "accents", DD_NORM_ACCENTS },
};

int dd_norm_parse(const char *spec, unsigned *flags)
{
    *flags = 0;
    if (!strcmp(spec, "none") || !*spec)
        return 0;
    if (!strcmp(spec, "all")) {
        *flags = DD_NORM_ALL;
        return 0;
    }
    const char *p = spec;
    while (*p) {
        size_t len = strcspn(p, ",");
        size_t i;
        for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
            if (strlen(names[i].name) == len && !strncmp(p, names[i].name, len))
                break;
        if (i == sizeof(names) / sizeof(names[0]))
            return sl_err_set(SL_ERR_USAGE,
                              "unknown normalisation '%.*s'\nhint: use a comma list of lower, "
                              "punct, space, digits, accents, or 'all' or 'none'",
                              (int)len, p);
        *flags |= names[i].flag;
        p += len;
        if (*p == ',')
            p++;
    }
    return 0;
}

const char *dd_norm_name(unsigned flags, char *out, size_t n)
{
    size_t len = 0;
    out[0] = '\0';
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (flags & names[i].flag)
            len += (size_t)snprintf(out + len, len < n ? n - len : 0, "%s%s", len ? "," : "",
                                    names[i].name);
    if (!len)
        snprintf(out, n, "none");
    return out;
}

/* Base letters of U+00C0..U+017F with their diacritics removed ('.': no change). */
static const char latin_base[] = "AAAAAA.CEEEEIIII"
                                 ".NOOOOO.OUUUUY.."
                                 "aaaaaa.ceeeeiiii"
                                 ".nooooo.ouuuuy.y"
                                 "AaAaAaCcCcCcCcDd"
                                 "DdEeEeEeEeEeGgGg"
                                 "GgGgHhHhIiIiIiIi"
                                 "Ii..JjKk.LlLlLlL"
                                 "lLlNnNnNnn..OoOo"
                                 "Oo..RrRrRrSsSsSs"
                                 "SsTtTtTtUuUuUuUu"
                                 "UuUuWwYyYZzZzZzs";

static uint32_t strip_accent(uint32_t c)
{
    if (c >= 0xC0 && c <= 0x17F) {
        char b = latin_base[c - 0xC0];
        return b == '.' ? c : (uint32_t)(unsigned char)b;
    }
    if (c >= 0x386 && c <= 0x3CE) { /* Greek letters with tonos or dialytika */
        switch (c) {
        case 0x386: return 0x391;
        case 0x388: return 0x395;
        case 0x389: return 0x397;
        case 0x38A: case 0x3AA: return 0x399;
        case 0x38C: return 0x39F;
        case 0x38E: case 0x3AB: return 0x3A5;
        case 0x38F: return 0x3A9;
        case 0x390: case 0x3AF: case 0x3CA: return 0x3B9;
        case 0x3AC: return 0x3B1;
        case 0x3AD: return 0x3B5;
        case 0x3AE: return 0x3B7;
        case 0x3B0: case 0x3CB: case 0x3CD: return 0x3C5;
        case 0x3CC: return 0x3BF;
        case 0x3CE: return 0x3C9;
        default: break;
        }
    }
    return c;
}

static uint32_t to_lower(uint32_t c)
{
    if (c < 0x80)
        return (c >= 'A' && c <= 'Z') ? c + 32 : c;
    if (c >= 0xC0 && c <= 0xDE && c != 0xD7)
        return c + 32;
    if (c >= 0x100 && c <= 0x17F) {
        if (c == 0x130)
            return 'i';
        if (c == 0x178)
            return 0xFF;
        if ((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E))
            return (c & 1) ? c + 1 : c;
        if (c == 0x131 || c == 0x138 || c == 0x149 || c == 0x17F)
            return c;
        return (c & 1) ? c : c + 1;
    }
    if (c >= 0x391 && c <= 0x3A9 && c != 0x3A2)
        return c + 32;
    if (c >= 0x386 && c <= 0x38F) {
        if (c == 0x386)
            return 0x3AC;
        if (c >= 0x388 && c <= 0x38A)
            return c + 0x25;
        if (c == 0x38C)
            return 0x3CC;
        if (c == 0x38E || c == 0x38F)
            return c + 0x3F;
    }
    if (c >= 0x410 && c <= 0x42F)
        return c + 32;
    if (c >= 0x400 && c <= 0x40F)
        return c + 0x50;
    if ((c >= 0x460 && c <= 0x481) || (c >= 0x48A && c <= 0x4BF))
        return (c & 1) ? c : c + 1;
    return c;
}

static int is_space(uint32_t c)
{
    if (c < 0x80)
        return c == ' ' || (c >= 9 && c <= 13);
    return c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) ||
           c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

/* Zero-width characters, dropped with DD_NORM_SPACE. */
static int is_zero_width(uint32_t c)
{
    return (c >= 0x200B && c <= 0x200D) || c == 0x2060 || c == 0xFEFF;
}

static int is_punct(uint32_t c)
{
    if (c < 0x80)
        return (c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) ||
               (c >= 123 && c <= 126);
    if (c >= 0xA1 && c <= 0xBF)
        return c != 0xAA && c != 0xB5 && c != 0xBA;
    if (c == 0xD7 || c == 0xF7)
        return 1;
    if (c >= 0x2010 && c <= 0x205E)
        return 1;
    if (c >= 0x3001 && c <= 0x303F)
        return 1;
    if ((c >= 0xFF01 && c <= 0xFF0F) || (c >= 0xFF1A && c <= 0xFF20) ||
        (c >= 0xFF3B && c <= 0xFF40) || (c >= 0xFF5B && c <= 0xFF65))
        return 1;
    return c == 0x60C || c == 0x61B || c == 0x61F || c == 0x6D4 || c == 0x964 || c == 0x965 ||
           c == 0x37E || c == 0x387 || c == 0x589 || c == 0x5BE || c == 0x5C3 || c == 0xE5A ||
           c == 0xE5B || c == 0x104A || c == 0x104B || c == 0x1362 || c == 0x1363;
}

#define SPACE_MARK 0xFF

/* What each ASCII byte becomes under `flags` (SPACE_MARK: collapsible whitespace). */
static const unsigned char *ascii_table(unsigned flags)
{
    static unsigned char tab[DD_NORM_ALL + 1][128];
    static int ready[DD_NORM_ALL + 1];
    flags &= DD_NORM_ALL;
    if (__atomic_load_n(&ready[flags], __ATOMIC_ACQUIRE))
        return tab[flags];
    for (uint32_t c = 0; c < 128; c++) {
        uint32_t o = c;
        if ((flags & DD_NORM_PUNCT) && is_punct(o))
            o = ' ';
        if ((flags & DD_NORM_SPACE) && is_space(o)) {
            tab[flags][c] = SPACE_MARK;
            continue;
        }
        if (flags & DD_NORM_LOWER)
            o = to_lower(o);
        if ((flags & DD_NORM_DIGITS) && o >= '0' && o <= '9')
            o = '0';
        tab[flags][c] = (unsigned char)o;
    }
    __atomic_store_n(&ready[flags], 1, __ATOMIC_RELEASE);
    return tab[flags];
}

int dd_normalize(const char *s, size_t n, unsigned flags, struct sl_buf *out)
{
    const unsigned char *tab = ascii_table(flags);
    if (sl_buf_reserve(out, n + 1))
        return SL_ERR_TOOBIG;
    const unsigned char *p = (const unsigned char *)s, *end = p + n;
    char *o = out->data + out->len;
    const char *o0 = out->data + out->len;
    int space = flags & DD_NORM_SPACE;
    int pending = 0; /* a space is owed before the next non-space character */
    while (p < end) {
        uint32_t c;
        size_t len;
        if (*p < 0x80) {
            unsigned char t = tab[*p++];
            if (t == SPACE_MARK) {
                pending = 1;
            } else {
                if (pending && o > o0)
                    *o++ = ' ';
                pending = 0;
                *o++ = (char)t;
            }
            continue;
        } else {
            len = sl_utf8_decode(p, (size_t)(end - p), &c);
            if (!len) { /* invalid byte: keep it */
                if (pending && o > o0)
                    *o++ = ' ';
                pending = 0;
                *o++ = (char)*p++;
                continue;
            }
        }
        p += len;
        if ((flags & DD_NORM_ACCENTS) && c >= 0x300 && c <= 0x36F)
            continue;
        if (space && is_zero_width(c))
            continue;
        if ((flags & DD_NORM_PUNCT) && is_punct(c))
            c = ' ';
        if (space && is_space(c)) {
            pending = 1;
            continue;
        }
        if (flags & DD_NORM_ACCENTS)
            c = strip_accent(c);
        if (flags & DD_NORM_LOWER)
            c = to_lower(c);
        if ((flags & DD_NORM_DIGITS) && c >= '0' && c <= '9')
            c = '0';
        if (pending && o > o0)
            *o++ = ' ';
        pending = 0;
        if (c < 0x80)
            *o++ = (char)c;
        else
            o += sl_utf8_encode(c, o);
    }
    out->len = (size_t)(o - out->data);
    out->data[out->len] = '\0';
    return 0;
}
