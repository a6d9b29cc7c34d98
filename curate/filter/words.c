/* struct sl_words: word splitting (see words.h). The SL_WORDS_RULES mode follows the
 * algorithm of spaCy's tokenizer: each whitespace-separated piece has its special cases,
 * prefixes and suffixes peeled off in a loop, then the middle is kept whole if it is a
 * special case or a URL, else split at infixes. The character classes are written here
 * from spaCy's published definitions; docs/filters.md lists the simplifications. */
#include "curate/filter/words.h"

#include "core/alloc.h"
#include "core/err.h"
#include "curate/filter/lexicons.h"
#include "curate/filter/punct.h"
#include "curate/filter/strset.h"
#include "curate/filter/uchar.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <string.h>

struct sl_words {
    struct sl_strset specials; /* value: (first piece index << 8) | piece count */
    uint32_t *piece_len;       /* byte lengths of the pieces */
    size_t npieces;
    pcre2_code *url;
    pcre2_match_context *mctx;
};

void sl_wordvec_release(struct sl_wordvec *v)
{
    free(v->v);
    memset(v, 0, sizeof(*v));
}

static inline void push(struct sl_wordvec *v, const char *base, size_t off, size_t len)
{
    if (!len)
        return;
    if (v->n == v->cap) {
        v->cap = v->cap ? v->cap * 2 : 256;
        v->v = sl_xrealloc(v->v, sl_mul_size(v->cap, sizeof(*v->v)));
    }
    v->v[v->n].off = (uint32_t)off;
    v->v[v->n].len = (uint32_t)len;
    v->v[v->n].nchar = (uint32_t)uc_count(base + off, len);
    v->n++;
}

/* ---- character classes (spaCy's char_classes, restated) -------------------------------- */

/* The scripts spaCy calls alphabetic: Latin (with its extensions), Cyrillic, Greek, and the
 * "uncased" Ethiopic, Bengali, Hebrew, Arabic-Persian, Sinhala, Devanagari, Kannada, Tamil,
 * Telugu, Hangul, kana and CJK ranges. */
static int sp_uncased(uint32_t c)
{
    return (c >= 0x1200 && c <= 0x137F) || (c >= 0x0980 && c <= 0x09FF) ||
           (c >= 0x0591 && c <= 0x05F4) || (c >= 0xFB1D && c <= 0xFB4F) ||
           (c >= 0x0620 && c <= 0x064A) || (c >= 0x066E && c <= 0x06D5) ||
           (c >= 0x06E5 && c <= 0x06FF) || (c >= 0x0750 && c <= 0x077F) ||
           (c >= 0x08A0 && c <= 0x08BD) || (c >= 0xFB50 && c <= 0xFBB1) ||
           (c >= 0xFBD3 && c <= 0xFD3D) || (c >= 0xFD50 && c <= 0xFDC7) ||
           (c >= 0xFDF0 && c <= 0xFDFB) || (c >= 0xFE70 && c <= 0xFEFC) ||
           (c >= 0x1EE00 && c <= 0x1EEBB) || (c >= 0x0D80 && c <= 0x0DFF) ||
           (c >= 0x0900 && c <= 0x097F) || (c >= 0x0C80 && c <= 0x0CFF) ||
           (c >= 0x0B80 && c <= 0x0BFF) || (c >= 0x0C00 && c <= 0x0C7F) ||
           (c >= 0xAC00 && c <= 0xD7AF) || (c >= 0x1100 && c <= 0x11FF) ||
           (c >= 0x3040 && c <= 0x30FF) || c == 0x30FC || (c >= 0x4E00 && c <= 0x9FFF) ||
           (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2EBEF) ||
           (c >= 0x2E80 && c <= 0x2FDF) || (c >= 0x2FF0 && c <= 0x303F) ||
           (c >= 0x31C0 && c <= 0x31EF) || (c >= 0x3200 && c <= 0x33FF) ||
           (c >= 0xF900 && c <= 0xFAFF) || (c >= 0xFE30 && c <= 0xFE4F) ||
           (c >= 0x1F200 && c <= 0x1F2FF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

/* Cyrillic and Greek letters spaCy lists (Russian, Ukrainian, Tatar, Macedonian, Greek):
 * 1 lower case, 2 upper case, 0 not listed. */
static int sp_cyr_greek(uint32_t c)
{
    if ((c >= 0x0430 && c <= 0x044F) || (c >= 0x03B1 && c <= 0x03C9))
        return 1;
    if ((c >= 0x0410 && c <= 0x042F) || (c >= 0x0391 && c <= 0x03A9 && c != 0x03A2))
        return 2;
    switch (c) {
    case 0x0451: case 0x0456: case 0x0457: case 0x0454: case 0x0491: case 0x04D9: case 0x04E9:
    case 0x04AF: case 0x0497: case 0x04A3: case 0x04BB: case 0x0453: case 0x0455: case 0x0458:
    case 0x0459: case 0x045A: case 0x045C: case 0x0450: case 0x045D: case 0x03AC: case 0x03AD:
    case 0x03AF: case 0x03CC: case 0x03CE: case 0x03AE: case 0x03CD:
        return 1;
    case 0x0401: case 0x0406: case 0x0407: case 0x0404: case 0x0490: case 0x04D8: case 0x04E8:
    case 0x04AE: case 0x0496: case 0x04A2: case 0x04BA: case 0x0403: case 0x0405: case 0x0408:
    case 0x0409: case 0x040A: case 0x040C: case 0x0400: case 0x040D: case 0x0386: case 0x0388:
    case 0x038A: case 0x038C: case 0x038F: case 0x0389: case 0x038E:
        return 2;
    }
    return 0;
}

/* Latin letters with their extensions (supplement, extended A-E, phonetic, Vietnamese,
 * full width). */
static int sp_latin(uint32_t c)
{
    return (c >= 0xC0 && c <= 0x24F && c != 0xD7 && c != 0xF7) || (c >= 0x250 && c <= 0x2AF) ||
           (c >= 0x1D00 && c <= 0x1D25) || (c >= 0x1D6B && c <= 0x1D77) ||
           (c >= 0x1D79 && c <= 0x1D9A) || (c >= 0x1E00 && c <= 0x1EFF) ||
           (c >= 0x2C60 && c <= 0x2C7F) || (c >= 0xA722 && c <= 0xA7FF) ||
           (c >= 0xAB30 && c <= 0xAB6F) || (c >= 0xFF21 && c <= 0xFF3A) ||
           (c >= 0xFF41 && c <= 0xFF5A);
}

static int sp_alpha(uint32_t c)
{
    if (c < 0x80)
        return (c | 32) >= 'a' && (c | 32) <= 'z';
    if (sp_uncased(c) || sp_cyr_greek(c))
        return 1;
    return sp_latin(c);
}

static int sp_lower(uint32_t c)
{
    if (c < 0x80)
        return c >= 'a' && c <= 'z';
    if (sp_uncased(c))
        return 1;
    int k = sp_cyr_greek(c);
    if (k)
        return k == 1;
    return sp_latin(c) && utf8proc_category((utf8proc_int32_t)c) != UTF8PROC_CATEGORY_LU;
}

static int sp_upper(uint32_t c)
{
    if (c < 0x80)
        return c >= 'A' && c <= 'Z';
    if (sp_uncased(c))
        return 1;
    int k = sp_cyr_greek(c);
    if (k)
        return k == 2;
    return sp_latin(c) && utf8proc_category((utf8proc_int32_t)c) == UTF8PROC_CATEGORY_LU;
}

/* PUNCT: … , : ; ! ? ¿ ؟ ¡ ( ) [ ] { } < > _ # * & 。 ？ ！ ， 、 ； ： ～ · । ، ۔ ؛ ٪ */
static int sp_punct(uint32_t c)
{
    if (c < 0x80)
        return c && strchr(",:;!?()[]{}<>_#*&", (int)c) != NULL;
    switch (c) {
    case 0x2026: case 0xBF: case 0x61F: case 0xA1: case 0x3002: case 0xFF1F: case 0xFF01:
    case 0xFF0C: case 0x3001: case 0xFF1B: case 0xFF1A: case 0xFF5E: case 0xB7: case 0x964:
    case 0x60C: case 0x6D4: case 0x61B: case 0x66A:
        return 1;
    }
    return 0;
}

/* QUOTES: ' " ” “ ` ‘ ´ ’ ‚ , „ » « 「 」 『 』 （ ） 〔 〕 【 】 《 》 〈 〉 〈 〉 ⟦ ⟧ */
static int sp_quote(uint32_t c)
{
    if (c < 0x80)
        return c == '\'' || c == '"' || c == '`' || c == ',';
    switch (c) {
    case 0x201D: case 0x201C: case 0x2018: case 0xB4: case 0x2019: case 0x201A: case 0x201E:
    case 0xBB: case 0xAB: case 0x300C: case 0x300D: case 0x300E: case 0x300F: case 0xFF08:
    case 0xFF09: case 0x3014: case 0x3015: case 0x3010: case 0x3011: case 0x300A: case 0x300B:
    case 0x3008: case 0x3009: case 0x2329: case 0x232A: case 0x27E6: case 0x27E7:
        return 1;
    }
    return 0;
}

/* Single-character currency signs: $ £ € ¥ ฿ ₽ ﷼ ₴ and U+20A0..U+20BF. */
static int sp_currency(uint32_t c)
{
    return c == '$' || c == 0xA3 || c == 0x20AC || c == 0xA5 || c == 0xE3F || c == 0xFDFC ||
           (c >= 0x20A0 && c <= 0x20BF);
}

/* ICONS: "other symbols" (category So: dingbats, emoji, ...). */
static int sp_icon(uint32_t c)
{
    if (c < 0xA6)
        return 0;
    return utf8proc_category((utf8proc_int32_t)c) == UTF8PROC_CATEGORY_SO;
}

static inline uint32_t cp_at(const char *s, size_t n, size_t i, size_t *len)
{
    uint32_t cp;
    *len = uc_next(s + i, n - i, &cp);
    return cp;
}

static inline uint32_t cp_before(const char *s, size_t i)
{
    size_t l = uc_prev_len(s, i);
    uint32_t cp;
    uc_next(s + i - l, l, &cp);
    return cp;
}

/* s[0..n) starts / ends with a string literal (the length is known at compile time). */
#define STARTS(s, n, lit) ((n) >= sizeof(lit) - 1 && !memcmp((s), (lit), sizeof(lit) - 1))
#define ENDS(s, n, lit)                                                                            \
    ((n) >= sizeof(lit) - 1 && !memcmp((s) + (n) - (sizeof(lit) - 1), (lit), sizeof(lit) - 1))

static size_t prefix_len(const char *s, size_t n)
{
    size_t l;
    uint32_t c = cp_at(s, n, 0, &l);
    if (c == 0xA7 || c == '%' || c == '=' || c == 0x2014 || c == 0x2013)
        return l;
    if (c == '+')
        return (n > 1 && s[1] >= '0' && s[1] <= '9') ? 0 : 1;
    if (sp_punct(c))
        return l;
    if (c == '.') {
        size_t r = 0;
        while (r < n && s[r] == '.')
            r++;
        return r >= 2 ? r : 0;
    }
    if (sp_quote(c) || sp_currency(c))
        return l;
    if (STARTS(s, n, "US$"))
        return 3;
    if (STARTS(s, n, "C$") || STARTS(s, n, "A$"))
        return 2;
    if (sp_icon(c))
        return l;
    return 0;
}

/* UNITS (a number followed by one of these is split) */
#define U(x)                                                                                       \
    {                                                                                              \
        x, sizeof(x) - 1                                                                           \
    }
static const struct {
    const char *s;
    size_t len;
} units[] = {
    U("km"), U("km²"), U("km³"),  U("m"),     U("m²"),  U("m³"),   U("dm"),   U("dm²"),  U("dm³"),
    U("cm"), U("cm²"), U("cm³"),  U("mm"),    U("mm²"), U("mm³"),  U("ha"),   U("µm"),   U("nm"),
    U("yd"), U("in"),  U("ft"),   U("kg"),    U("g"),   U("mg"),   U("µg"),   U("t"),    U("lb"),
    U("oz"), U("m/s"), U("km/h"), U("kmh"),   U("mph"), U("hPa"),  U("Pa"),   U("mbar"), U("mb"),
    U("MB"), U("kb"),  U("KB"),   U("gb"),    U("GB"),  U("tb"),   U("TB"),   U("T"),    U("G"),
    U("M"),  U("K"),   U("%"),    U("км"),    U("км²"), U("км³"),  U("м"),    U("м²"),   U("м³"),
    U("дм"), U("дм²"), U("дм³"),  U("см"),    U("см²"), U("см³"),  U("мм"),   U("мм²"),  U("мм³"),
    U("нм"), U("кг"),  U("г"),    U("мг"),    U("м/с"), U("км/ч"), U("кПа"),  U("Па"),   U("мбар"),
    U("Кб"), U("КБ"),  U("кб"),   U("Мб"),    U("МБ"),  U("мб"),   U("Гб"),   U("ГБ"),   U("гб"),
    U("Тб"), U("ТБ"),  U("тб"),   U("كم"),    U("كم²"), U("كم³"),  U("م"),    U("م²"),   U("م³"),
    U("سم"), U("سم²"), U("سم³"),  U("مم"),    U("مم²"), U("مم³"),  U("غرام"), U("جرام"), U("جم"),
    U("كغ"), U("ملغ"), U("كوب"),  U("اكواب"),
};
#undef U
#define UNIT_MAXLEN 10 /* bytes of the longest unit */

static int is_unit(const char *s, size_t n)
{
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
        if (units[i].len == n && !memcmp(units[i].s, s, n))
            return 1;
    return 0;
}

/* Leftmost p >= 1 where s[p..n) is a unit right after an ASCII digit; n when none. */
static size_t unit_start(const char *s, size_t n)
{
    for (size_t p = n > UNIT_MAXLEN ? n - UNIT_MAXLEN : 1; p < n; p++)
        if (s[p - 1] >= '0' && s[p - 1] <= '9' && is_unit(s + p, n - p))
            return p;
    return n;
}

static inline int ascii_digit_before(const char *s, size_t i)
{
    return i > 0 && s[i - 1] >= '0' && s[i - 1] <= '9';
}

/* Leftmost start of a suffix match (every suffix pattern is anchored at the end), as a
 * length from the end; 0 when none matches. */
static size_t suffix_len(const char *s, size_t n)
{
    if (!n)
        return 0;
    size_t best = n; /* start position; n = none */
    size_t ll = uc_prev_len(s, n);
    uint32_t last;
    uc_next(s + n - ll, ll, &last);
#define CAND(p)                                                                            \
    do {                                                                                   \
        if ((p) < best)                                                                    \
            best = (p);                                                                    \
    } while (0)
    if (sp_punct(last) || sp_quote(last) || sp_icon(last) || last == 0x2014 || last == 0x2013)
        CAND(n - ll);
    if (last == 0x2026 && ENDS(s, n, "\xe2\x80\xa6\xe2\x80\xa6")) /* …… */
        CAND(n - 6);
    if ((last | 32) == 's' && n >= 2) {
        if (s[n - 2] == '\'')
            CAND(n - 2);
        else if (ENDS(s, n - 1, "\xe2\x80\x99"))
            CAND(n - 4);
    }
    if (last == '.') {
        size_t r = 0;
        while (r < n && s[n - 1 - r] == '.')
            r++;
        if (r >= 2)
            CAND(n - r);
        if (n >= 2) {
            size_t pl = uc_prev_len(s, n - 1);
            uint32_t prev;
            uc_next(s + n - 1 - pl, pl, &prev);
            /* °F. °C. °K. */
            if ((prev == 'F' || prev == 'f' || prev == 'C' || prev == 'c' || prev == 'K' ||
                 prev == 'k') &&
                ENDS(s, n - 2, "\xc2\xb0"))
                CAND(n - 1);
            /* after a digit, lower-case letter, % ² - +, punctuation or a quote */
            if ((prev >= '0' && prev <= '9') || sp_lower(prev) || prev == '%' || prev == 0xB2 ||
                prev == '-' || prev == '+' || sp_punct(prev) || prev == '|' || prev == '(' ||
                prev == '?' || prev == ':' || prev == ')' || sp_quote(prev))
                CAND(n - 1);
            /* after two upper-case letters */
            if (sp_upper(prev) && n - 1 - pl > 0 && sp_upper(cp_before(s, n - 1 - pl)))
                CAND(n - 1);
        }
    }
    if (last == '+' && ascii_digit_before(s, n - 1))
        CAND(n - 1);
    if (sp_currency(last) && ascii_digit_before(s, n - ll))
        CAND(n - ll);
    if (last == '$') {
        if (ENDS(s, n, "US$") && ascii_digit_before(s, n - 3))
            CAND(n - 3);
        if ((ENDS(s, n, "C$") || ENDS(s, n, "A$")) && ascii_digit_before(s, n - 2))
            CAND(n - 2);
    }
    if (best > 0)
        CAND(unit_start(s, n));
#undef CAND
    return best < n ? n - best : 0;
}

static const struct sl_strset_slot *special(const struct sl_words *w, const char *s, size_t n)
{
    if (!w->specials.n)
        return NULL;
    return sl_strset_find(&w->specials, s, n);
}

static int url_match(const struct sl_words *w, const char *s, size_t n)
{
    if (!w->url || n < 4 || !memchr(s, '.', n))
        return 0;
    /* one match block per thread, kept for the life of the thread */
    static __thread pcre2_match_data *md;
    if (!md)
        md = pcre2_match_data_create(4, NULL);
    if (sl_utf8_validate(s, n) != n)
        return 0;
    int rc = pcre2_match(w->url, (PCRE2_SPTR)s, n, 0, PCRE2_NO_UTF_CHECK, md, w->mctx);
    return rc >= 0;
}

static void emit_special(const struct sl_words *w, const struct sl_strset_slot *e, const char *base,
                         size_t off, struct sl_wordvec *out)
{
    size_t first = (size_t)(e->value >> 8), count = (size_t)(e->value & 0xFF);
    for (size_t i = 0; i < count; i++) {
        push(out, base, off, w->piece_len[first + i]);
        off += w->piece_len[first + i];
    }
}

static void split_infixes(const char *base, size_t off, size_t n, struct sl_wordvec *out)
{
    const char *s = base + off;
    size_t i = 0, start = 0;
    while (i < n) {
        size_t l;
        uint32_t c = cp_at(s, n, i, &l);
        size_t m = 0;
        uint32_t prev = i ? cp_before(s, i) : 0;
        size_t nl = 0;
        uint32_t next = i + l < n ? cp_at(s, n, i + l, &nl) : 0;
        if (c == '.' && next == '.') {
            m = 0;
            while (i + m < n && s[i + m] == '.')
                m++;
        } else if (c == 0x2026 || sp_icon(c)) {
            m = l;
        } else if (i && (c == '+' || c == '-' || c == '*' || c == '^') && prev >= '0' &&
                   prev <= '9' && ((next >= '0' && next <= '9') || next == '-')) {
            m = 1;
        } else if (i && c == '.' && (sp_lower(prev) || sp_quote(prev)) &&
                   (sp_upper(next) || sp_quote(next))) {
            m = 1;
        } else if (i && c == ',' && sp_alpha(prev) && sp_alpha(next)) {
            m = 1;
        } else if (i && (sp_alpha(prev) || (prev >= '0' && prev <= '9'))) {
            if (c == '-' || c == 0x2013 || c == 0x2014 || c == '~') {
                if (sp_alpha(next)) {
                    m = l;
                } else if (c == '-' && next == '-') {
                    size_t k = i + 2;
                    uint32_t a = 0;
                    size_t al;
                    if (k < n)
                        a = cp_at(s, n, k, &al);
                    if (sp_alpha(a)) {
                        m = 2;
                    } else if (a == '-' && k + 1 < n) {
                        uint32_t b = cp_at(s, n, k + 1, &al);
                        if (sp_alpha(b))
                            m = 3;
                    }
                } else if (c == 0x2014 && next == 0x2014 && i + 2 * l < n) {
                    size_t al;
                    if (sp_alpha(cp_at(s, n, i + 2 * l, &al)))
                        m = 2 * l;
                }
            } else if ((c == ':' || c == '<' || c == '>' || c == '=' || c == '/') && sp_alpha(next)) {
                m = 1;
            }
        }
        if (!m) {
            i += l;
            continue;
        }
        if (i != 0) {
            if (i != start)
                push(out, base, off + start, i - start);
            push(out, base, off + i, m);
            start = i + m;
        }
        i += m;
    }
    if (start < n)
        push(out, base, off + start, n - start);
}

/* spaCy's second pass: consecutive words of one piece that together spell a special case
 * containing affix characters ("a" "." -> "a.", ")" ":" -> "):") are re-split as that
 * special case says. Leftmost, then longest, match first. */
static void merge_specials(const struct sl_words *w, const char *base, struct sl_wordvec *v,
                           size_t first)
{
    size_t i = first;
    while (i + 1 < v->n) {
        size_t maxl = v->n - i < 5 ? v->n - i : 5;
        size_t done = 0;
        for (size_t L = maxl; L >= 2 && !done; L--) {
            size_t off = v->v[i].off, end = v->v[i + L - 1].off + v->v[i + L - 1].len;
            const struct sl_strset_slot *e = special(w, base + off, end - off);
            if (!e)
                continue;
            size_t f = (size_t)(e->value >> 8), cnt = (size_t)(e->value & 0xFF);
            /* rebuild: words before i, the special pieces, words after i + L */
            struct sl_word tail[8];
            size_t ntail = v->n - (i + L);
            struct sl_word *rest = NULL;
            if (ntail > 8) {
                rest = sl_xmalloc(ntail * sizeof(*rest));
            }
            struct sl_word *t = rest ? rest : tail;
            memcpy(t, v->v + i + L, ntail * sizeof(*t));
            v->n = i;
            size_t o = off;
            for (size_t k = 0; k < cnt; k++) {
                push(v, base, o, w->piece_len[f + k]);
                o += w->piece_len[f + k];
            }
            for (size_t k = 0; k < ntail; k++) {
                if (v->n == v->cap) {
                    v->cap *= 2;
                    v->v = sl_xrealloc(v->v, sl_mul_size(v->cap, sizeof(*v->v)));
                }
                v->v[v->n++] = t[k];
            }
            free(rest);
            i += cnt;
            done = 1;
        }
        if (!done)
            i++;
    }
}

struct span {
    size_t off, len;
};

/* One whitespace-free piece through spaCy's affix loop. */
static void split_piece(const struct sl_words *w, const char *base, size_t off, size_t n,
                        struct sl_wordvec *out, struct span *pre, struct span *suf, size_t stack)
{
    size_t a = off, b = off + n, last = (size_t)-1;
    size_t npre = 0, nsuf = 0, first_word = out->n;
    const struct sl_strset_slot *sp = NULL;
    /* Fast path: ASCII letters only. No prefix, suffix, infix or URL rule can apply, so the
     * piece is a special case or one word. */
    size_t k = 0;
    while (k < n && (unsigned)(((unsigned char)base[off + k] | 32) - 'a') < 26)
        k++;
    if (k == n) {
        if ((sp = special(w, base + off, n)) == NULL) {
            push(out, base, off, n);
            return;
        }
        emit_special(w, sp, base, off, out);
        if (out->n - first_word >= 2)
            merge_specials(w, base, out, first_word);
        return;
    }
    while (b > a && b - a != last) {
        if (special(w, base + a, b - a))
            break;
        last = b - a;
        size_t pl = prefix_len(base + a, b - a);
        if (pl && b - a > pl && special(w, base + a + pl, b - a - pl)) {
            if (npre < stack)
                pre[npre++] = (struct span){ a, pl };
            a += pl;
            break;
        }
        size_t sl = suffix_len(base + a + pl, b - a - pl);
        if (sl && b - a > sl && special(w, base + a, b - a - sl)) {
            if (nsuf < stack)
                suf[nsuf++] = (struct span){ b - sl, sl };
            b -= sl;
            break;
        }
        if (npre >= stack || nsuf >= stack)
            break; /* pathological run of punctuation: the rest stays one word */
        if (pl && sl && pl + sl <= b - a) {
            pre[npre++] = (struct span){ a, pl };
            suf[nsuf++] = (struct span){ b - sl, sl };
            a += pl;
            b -= sl;
        } else if (pl) {
            pre[npre++] = (struct span){ a, pl };
            a += pl;
        } else if (sl) {
            suf[nsuf++] = (struct span){ b - sl, sl };
            b -= sl;
        }
    }
    for (size_t i = 0; i < npre; i++)
        push(out, base, pre[i].off, pre[i].len);
    if (b > a) {
        if ((sp = special(w, base + a, b - a)) != NULL)
            emit_special(w, sp, base, a, out);
        else if (url_match(w, base + a, b - a))
            push(out, base, a, b - a);
        else
            split_infixes(base, a, b - a, out);
    }
    while (nsuf > 0) {
        nsuf--;
        push(out, base, suf[nsuf].off, suf[nsuf].len);
    }
    if (out->n - first_word >= 2)
        merge_specials(w, base, out, first_word);
}

enum sl_words_mode sl_words_mode_for_lang(const char *lang)
{
    static const char *const unspaced[] = { "zh", "ja", "th", "lo", "km", "my", "bo", NULL };
    if (!lang)
        return SL_WORDS_RULES;
    for (size_t i = 0; unspaced[i]; i++) {
        size_t l = strlen(unspaced[i]);
        if (!strncmp(lang, unspaced[i], l) && (lang[l] == 0 || lang[l] == '-' || lang[l] == '_'))
            return SL_WORDS_CHARS;
    }
    return SL_WORDS_RULES;
}

/* Split words that contain characters of unspaced scripts: each such character alone, the
 * runs between them as they are. */
static void split_unspaced(const char *base, struct sl_wordvec *v)
{
    size_t n0 = v->n;
    int any = 0;
    for (size_t i = 0; i < n0 && !any; i++) {
        const char *s = base + v->v[i].off;
        for (size_t j = 0; j < v->v[i].len; j++)
            if ((unsigned char)s[j] >= 0xE0) {
                any = 1;
                break;
            }
    }
    if (!any)
        return;
    struct sl_wordvec tmp = *v;
    struct sl_wordvec nv = { 0 };
    for (size_t i = 0; i < tmp.n; i++) {
        size_t off = tmp.v[i].off, len = tmp.v[i].len, j = 0, run = 0;
        const char *s = base + off;
        while (j < len) {
            uint32_t c;
            size_t l = uc_next(s + j, len - j, &c);
            if (uc_unspaced(c)) {
                if (j > run)
                    push(&nv, base, off + run, j - run);
                push(&nv, base, off + j, l);
                run = j + l;
            }
            j += l;
        }
        if (len > run)
            push(&nv, base, off + run, len - run);
    }
    free(tmp.v);
    *v = nv;
}

/* Length of the whitespace character at s (n > 0 bytes), or 0 when it is not one. */
static inline size_t space_len(const char *s, size_t n)
{
    unsigned char b = (unsigned char)s[0];
    if (b < 0x80)
        return b == ' ' || (b >= 0x09 && b <= 0x0D) || (b >= 0x1C && b <= 0x1F);
    if (b != 0xC2 && b != 0xE1 && b != 0xE2 && b != 0xE3)
        return 0; /* no other lead byte starts a space character */
    uint32_t c;
    size_t l = uc_next(s, n, &c);
    return uc_isspace(c) ? l : 0;
}

void sl_words_split(const struct sl_words *w, enum sl_words_mode mode, const char *s, size_t n,
                    struct sl_wordvec *out)
{
    out->n = 0;
    struct span pre[64], suf[64];
    size_t i = 0;
    while (i < n) {
        size_t l = space_len(s + i, n - i);
        if (l) {
            i += l;
            continue;
        }
        size_t j = i + 1;
        while (j < n && !space_len(s + j, n - j))
            j++;
        if (mode == SL_WORDS_SPACE)
            push(out, s, i, j - i);
        else
            split_piece(w, s, i, j - i, out, pre, suf, 64);
        i = j;
    }
    if (mode == SL_WORDS_CHARS)
        split_unspaced(s, out);
}

static int all_punct(const char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        uint32_t c;
        i += uc_next(s + i, n - i, &c);
        if (!uc_ispunct_cat(c))
            return 0;
    }
    return n > 0;
}

size_t sl_words_count_sentences(const char *s, const struct sl_wordvec *words)
{
    if (!words->n)
        return 0;
    size_t count = 1;
    int seen = 0;
    for (size_t i = 0; i < words->n; i++) {
        const char *t = s + words->v[i].off;
        size_t n = words->v[i].len;
        uint32_t c = 0;
        int is_end = 0;
        if (words->v[i].nchar == 1) {
            uc_next(t, n, &c);
            is_end = sl_punct_is_sentence_end(c);
        }
        if (seen && !is_end && !all_punct(t, n)) {
            count++;
            seen = 0;
        } else if (is_end) {
            seen = 1;
        }
    }
    return count;
}

/* A URL as spaCy's URL_MATCH accepts it: optional scheme and user info, a host of
 * dot-separated labels ending in a lower-case TLD (or an IPv4 address), optional port and
 * path. Written for PCRE2 from that definition. */
static const char url_pattern[] =
    "^(?:[\\w+\\-.]{2,}://)?"
    "(?:\\S+(?::\\S*)?@)?"
    "(?:"
    "(?:[1-9]\\d?|1\\d\\d|2[01]\\d|22[0-3])(?:\\.(?:1?\\d{1,2}|2[0-4]\\d|25[0-5])){2}"
    "(?:\\.(?:[1-9]\\d?|1\\d\\d|2[0-4]\\d|25[0-4]))"
    "|"
    "(?:(?:[A-Za-z0-9\\x{a1}-\\x{ffff}][A-Za-z0-9\\x{a1}-\\x{ffff}_-]{0,62})?"
    "[A-Za-z0-9\\x{a1}-\\x{ffff}]\\.)+"
    "(?:[\\p{Ll}\\p{Lo}\\p{Mn}\\p{Mc}]{2,63})"
    ")"
    "(?::\\d{2,5})?"
    "(?:[/?#]\\S*)?$";

int sl_words_new(struct sl_words **out)
{
    struct sl_words *w = sl_xcalloc(1, sizeof(*w));
    sl_strset_init(&w->specials);
    size_t len;
    const char *tsv = sl_lexicon("spacy-en-exceptions", NULL, &len);
    size_t cap = 0;
    const char *p = tsv, *end = tsv ? tsv + len : NULL;
    while (p && p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *e = nl ? nl : end;
        if (e > p && *p != '#') {
            const char *tab = memchr(p, '\t', (size_t)(e - p));
            if (tab) {
                size_t first = w->npieces, count = 0;
                const char *q = tab + 1;
                while (q <= e) {
                    const char *t2 = memchr(q, '\t', (size_t)(e - q));
                    const char *pe = t2 ? t2 : e;
                    if (w->npieces == cap) {
                        cap = cap ? cap * 2 : 1024;
                        w->piece_len = sl_xrealloc(w->piece_len, cap * sizeof(uint32_t));
                    }
                    w->piece_len[w->npieces++] = (uint32_t)(pe - q);
                    count++;
                    q = pe + 1;
                    if (!t2)
                        break;
                }
                if (count > 0 && count < 256)
                    sl_strset_add(&w->specials, p, (size_t)(tab - p),
                                  (int64_t)((first << 8) | count));
            }
        }
        p = nl ? nl + 1 : end;
    }
    int err;
    PCRE2_SIZE eoff;
    w->url = pcre2_compile((PCRE2_SPTR)url_pattern, PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP,
                           &err, &eoff, NULL);
    if (!w->url) {
        sl_words_free(w);
        *out = NULL;
        return sl_err_set(SL_ERR_STATE, "cannot compile the built-in URL pattern (offset %zu)",
                          (size_t)eoff);
    }
    pcre2_jit_compile(w->url, PCRE2_JIT_COMPLETE);
    w->mctx = pcre2_match_context_create(NULL);
    pcre2_set_match_limit(w->mctx, 100000);
    *out = w;
    return 0;
}

void sl_words_free(struct sl_words *w)
{
    if (!w)
        return;
    sl_strset_release(&w->specials);
    free(w->piece_len);
    pcre2_code_free(w->url);
    pcre2_match_context_free(w->mctx);
    free(w);
}
