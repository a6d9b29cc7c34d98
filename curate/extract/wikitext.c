/* Wikitext to plain text in four linear passes: (A) comments and tags, (B) templates,
 * (C) links, (D) lines: headings, lists, tables, bold/italic, entities. Text that must
 * stay literal (<nowiki>, <pre>) travels through the passes as private-use code points
 * U+E000+c and is restored at the end. */
#include "curate/extract/wikitext.h"

#include "core/alloc.h"
#include "core/buf.h"
#include "core/err.h"
#include "core/utf8.h"
#include "curate/extract/libxml.h"

#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))
#define MAX_NEST 8 /* recursion depth for template arguments and link labels */

/* ---- literal escaping --------------------------------------------------------------- */

static int is_markup(unsigned char c)
{
    return c && strchr("[]{}|'=*#:;&<>!_~-", c) != NULL;
}

static int put_literal(struct sl_buf *o, const char *s, size_t n)
{
    int rc = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        unsigned char c = (unsigned char)s[i];
        if (is_markup(c)) {
            char e[3] = { (char)0xEE, (char)(0x80 | (c >> 6)), (char)(0x80 | (c & 0x3F)) };
            rc = sl_buf_append(o, e, 3);
        } else {
            rc = sl_buf_putc(o, (char)c);
        }
    }
    return rc;
}

/* ---- pass A: comments and tags ------------------------------------------------------ */

enum tag_act { T_STRIP, T_DROP, T_LITERAL, T_NEWLINE, T_CELL, T_BR };

struct wtag {
    const char *name;
    unsigned char act;
};

/* sorted */
static const struct wtag WTAGS[] = {
    { "abbr", T_STRIP },
    { "b", T_STRIP },
    { "bdi", T_STRIP },
    { "big", T_STRIP },
    { "blockquote", T_NEWLINE },
    { "br", T_BR },
    { "caption", T_NEWLINE },
    { "categorytree", T_DROP },
    { "ce", T_DROP },
    { "center", T_NEWLINE },
    { "chem", T_DROP },
    { "cite", T_STRIP },
    { "code", T_STRIP },
    { "dd", T_NEWLINE },
    { "del", T_STRIP },
    { "dfn", T_STRIP },
    { "div", T_NEWLINE },
    { "dl", T_NEWLINE },
    { "dt", T_NEWLINE },
    { "em", T_STRIP },
    { "font", T_STRIP },
    { "gallery", T_DROP },
    { "graph", T_DROP },
    { "h1", T_NEWLINE },
    { "h2", T_NEWLINE },
    { "h3", T_NEWLINE },
    { "h4", T_NEWLINE },
    { "h5", T_NEWLINE },
    { "h6", T_NEWLINE },
    { "hiero", T_DROP },
    { "hr", T_NEWLINE },
    { "i", T_STRIP },
    { "imagemap", T_DROP },
    { "includeonly", T_DROP },
    { "indicator", T_DROP },
    { "inputbox", T_DROP },
    { "ins", T_STRIP },
    { "kbd", T_STRIP },
    { "li", T_NEWLINE },
    { "mapframe", T_DROP },
    { "maplink", T_DROP },
    { "mark", T_STRIP },
    { "math", T_DROP },
    { "noinclude", T_STRIP },
    { "nowiki", T_LITERAL },
    { "ol", T_NEWLINE },
    { "onlyinclude", T_STRIP },
    { "p", T_NEWLINE },
    { "poem", T_NEWLINE },
    { "pre", T_LITERAL },
    { "q", T_STRIP },
    { "rb", T_STRIP },
    { "ref", T_DROP },
    { "references", T_DROP },
    { "rp", T_DROP },
    { "rt", T_STRIP },
    { "ruby", T_STRIP },
    { "s", T_STRIP },
    { "samp", T_STRIP },
    { "score", T_DROP },
    { "section", T_STRIP },
    { "small", T_STRIP },
    { "source", T_LITERAL },
    { "span", T_STRIP },
    { "strike", T_STRIP },
    { "strong", T_STRIP },
    { "sub", T_STRIP },
    { "sup", T_STRIP },
    { "syntaxhighlight", T_LITERAL },
    { "table", T_NEWLINE },
    { "td", T_CELL },
    { "templatedata", T_DROP },
    { "templatestyles", T_DROP },
    { "th", T_CELL },
    { "time", T_STRIP },
    { "timeline", T_DROP },
    { "tr", T_NEWLINE },
    { "tt", T_STRIP },
    { "u", T_STRIP },
    { "ul", T_NEWLINE },
    { "var", T_STRIP },
};

/* bsearch's comparison for the tables sorted by name (a name is their first member) */
static int by_name(const void *key, const void *row)
{
    return strcmp(key, *(const char *const *)row);
}

static const struct wtag *wtag_find(const char *name)
{
    return bsearch(name, WTAGS, NELEM(WTAGS), sizeof(WTAGS[0]), by_name);
}

/* End of a tag starting at p ('<'): position after '>' (quotes honoured), or NULL when
 * the line ends first. *selfclose: "/>". */
static const char *wtag_end(const char *p, const char *end, int *selfclose)
{
    char q = 0, prev = 0;
    *selfclose = 0;
    for (p++; p < end; p++) {
        char c = *p;
        if (q) {
            if (c == q)
                q = 0;
            continue;
        }
        if (c == '"' || c == '\'')
            q = c;
        else if (c == '>') {
            *selfclose = prev == '/';
            return p + 1;
        } else if (c == '<')
            return NULL;
        if (!isspace((unsigned char)c))
            prev = c;
    }
    return NULL;
}

/* "</name" + optional spaces + ">" at or after p: its start and end. */
static const char *find_close(const char *p, const char *end, const char *name, size_t n,
                              const char **after)
{
    while (p < end) {
        const char *lt = memchr(p, '<', (size_t)(end - p));
        if (!lt || lt + 2 + n >= end + 1)
            return NULL;
        if (lt + 2 + n <= end && lt[1] == '/' && strncasecmp(lt + 2, name, n) == 0) {
            const char *q = lt + 2 + n;
            while (q < end && isspace((unsigned char)*q))
                q++;
            if (q < end && *q == '>') {
                *after = q + 1;
                return lt;
            }
        }
        p = lt + 1;
    }
    return NULL;
}

static int pass_tags(const char *s, size_t n, struct sl_buf *o)
{
    const char *p = s, *end = s + n, *mark = s;
    int rc = 0;
    while (p < end && !rc) {
        const char *lt = memchr(p, '<', (size_t)(end - p));
        if (!lt)
            break;
        p = lt + 1;
        if (end - lt >= 4 && !memcmp(lt, "<!--", 4)) {
            const char *c = memmem(lt + 4, (size_t)(end - lt - 4), "-->", 3);
            rc = sl_buf_append(o, mark, (size_t)(lt - mark));
            mark = p = c ? c + 3 : end;
            continue;
        }
        int closing = p < end && *p == '/';
        const char *ns = p + closing;
        char name[20];
        size_t k = 0;
        while (ns + k < end && isalnum((unsigned char)ns[k]) && k < sizeof(name) - 1) {
            name[k] = (char)tolower((unsigned char)ns[k]);
            k++;
        }
        name[k] = 0;
        if (k == 0 || (ns + k < end && isalnum((unsigned char)ns[k])))
            continue;
        const struct wtag *t = wtag_find(name);
        if (!t)
            continue;
        int sc;
        const char *te = wtag_end(lt, end, &sc);
        if (!te)
            continue;
        if ((rc = sl_buf_append(o, mark, (size_t)(lt - mark))) != 0)
            break;
        mark = p = te;
        if (closing) {
            if (t->act == T_NEWLINE)
                rc = sl_buf_putc(o, '\n');
            continue;
        }
        if (t->act == T_BR) {
            /* a line break inside a paragraph: an escaped '\n' that pass D keeps */
            rc = sl_buf_append(o, "\xEE\x80\x8A", 3);
            continue;
        }
        if (t->act == T_NEWLINE || t->act == T_CELL) {
            rc = sl_buf_putc(o, t->act == T_CELL ? ' ' : '\n');
            continue;
        }
        if (t->act == T_STRIP || sc)
            continue;
        const char *after;
        const char *ct = find_close(te, end, name, k, &after);
        if (!ct)
            continue; /* no end tag: the start tag alone goes */
        if (t->act == T_LITERAL)
            rc = put_literal(o, te, (size_t)(ct - te));
        mark = p = after;
    }
    if (!rc)
        rc = sl_buf_append(o, mark, (size_t)(end - mark));
    return rc;
}

/* ---- bracket matching (templates and links) ----------------------------------------- */

struct span {
    size_t open, close; /* [open, close) including the brackets */
    unsigned width;     /* 2 or 3 */
};

struct spans {
    struct span *v;
    size_t n, cap;
};

struct opener {
    size_t pos;
    unsigned k;
};

static void spans_add(struct spans *sp, size_t open, size_t close, unsigned width)
{
    if (sp->n == sp->cap) {
        sp->cap = sp->cap ? sp->cap * 2 : 64;
        sp->v = sl_xrealloc(sp->v, sl_mul_size(sp->cap, sizeof(*sp->v)));
    }
    sp->v[sp->n++] = (struct span){ open, close, width };
}

static int span_cmp(const void *a, const void *b)
{
    const struct span *x = a, *y = b;
    return x->open < y->open ? -1 : x->open > y->open;
}

/* Match runs of `lc` and `rc` (braces or square brackets), MediaWiki style: a run of k
 * openers closes with 3 when both sides have 3 or more (only for braces), else 2. */
static void match(const char *s, size_t n, char lc, char rc, int allow3, struct spans *sp)
{
    struct opener *st = NULL;
    size_t sn = 0, scap = 0;
    sp->n = 0;
    for (size_t i = 0; i < n;) {
        char c = s[i];
        if (c != lc && c != rc) {
            const char *a = memchr(s + i, lc, n - i);
            const char *b = memchr(s + i, rc, n - i);
            const char *nx = !a ? b : !b ? a : a < b ? a : b;
            if (!nx)
                break;
            i = (size_t)(nx - s);
            continue;
        }
        size_t j = i;
        while (j < n && s[j] == c)
            j++;
        unsigned k = (unsigned)(j - i);
        if (c == lc) {
            if (k >= 2) {
                if (sn == scap) {
                    scap = scap ? scap * 2 : 64;
                    st = sl_xrealloc(st, sl_mul_size(scap, sizeof(*st)));
                }
                st[sn++] = (struct opener){ i, k };
            }
        } else {
            size_t q = i;
            unsigned m = k;
            while (m >= 2 && sn > 0) {
                struct opener *t = &st[sn - 1];
                unsigned w = (allow3 && t->k >= 3 && m >= 3) ? 3 : 2;
                spans_add(sp, t->pos + t->k - w, q + w, w);
                t->k -= w;
                if (t->k < 2)
                    sn--;
                m -= w;
                q += w;
            }
        }
        i = j;
    }
    free(st);
    if (sp->n > 1)
        qsort(sp->v, sp->n, sizeof(*sp->v), span_cmp);
}

/* Split a template or link body at top-level '|' (not inside nested {{ }} or [[ ]]).
 * Returns the number of parts stored (at most max). */
static size_t split_pipes(const char *s, size_t n, const char **part, size_t *plen, size_t max)
{
    size_t np = 0, start = 0;
    int curly = 0, square = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i < n) {
            char c = s[i];
            if (c == '{' && i + 1 < n && s[i + 1] == '{') {
                curly++;
                i++;
                continue;
            }
            if (c == '}' && i + 1 < n && s[i + 1] == '}' && curly) {
                curly--;
                i++;
                continue;
            }
            if (c == '[' && i + 1 < n && s[i + 1] == '[') {
                square++;
                i++;
                continue;
            }
            if (c == ']' && i + 1 < n && s[i + 1] == ']' && square) {
                square--;
                i++;
                continue;
            }
            if (c != '|' || curly || square)
                continue;
        }
        if (np < max) {
            part[np] = s + start;
            plen[np] = i - start;
            np++;
        }
        start = i + 1;
    }
    return np;
}

static void trim(const char **s, size_t *n)
{
    while (*n && isspace((unsigned char)**s)) {
        (*s)++;
        (*n)--;
    }
    while (*n && isspace((unsigned char)(*s)[*n - 1]))
        (*n)--;
}

/* ---- pass B: templates -------------------------------------------------------------- */

static int pass_templates(const char *s, size_t n, struct sl_buf *o, int depth);

enum tpl_kind { TK_FIRST = 1, TK_SECOND, TK_LAST, TK_CONVERT, TK_TEXT };

struct tpl {
    const char *name;
    unsigned char kind;
    const char *text; /* TK_TEXT */
};

/* Templates that show inline text (lowercase names, sorted). */
static const struct tpl TPLS[] = {
    { "abbr", TK_FIRST, NULL },
    { "big", TK_FIRST, NULL },
    { "convert", TK_CONVERT, NULL },
    { "cvt", TK_CONVERT, NULL },
    { "flag", TK_FIRST, NULL },
    { "ill", TK_FIRST, NULL },
    { "lang", TK_SECOND, NULL },
    { "mdash", TK_TEXT, "\xE2\x80\x94" },
    { "nbsp", TK_TEXT, " " },
    { "ndash", TK_TEXT, "\xE2\x80\x93" },
    { "nobold", TK_FIRST, NULL },
    { "nobr", TK_FIRST, NULL },
    { "nobreak", TK_FIRST, NULL },
    { "nowrap", TK_FIRST, NULL },
    { "okina", TK_TEXT, "\xCA\xBB" },
    { "sic", TK_LAST, NULL },
    { "small", TK_FIRST, NULL },
    { "smaller", TK_FIRST, NULL },
    { "snd", TK_TEXT, " \xE2\x80\x93 " },
    { "spaced ndash", TK_TEXT, " \xE2\x80\x93 " },
    { "transl", TK_LAST, NULL },
    { "transliteration", TK_LAST, NULL },
    { "unicode", TK_FIRST, NULL },
    { "upright", TK_FIRST, NULL },
};

static const struct tpl LANG_X = { "lang-", TK_FIRST, NULL };

static const struct tpl *tpl_find(const char *name)
{
    if (!strncmp(name, "lang-", 5))
        return &LANG_X;
    return bsearch(name, TPLS, NELEM(TPLS), sizeof(TPLS[0]), by_name);
}

/* Positional argument `idx` (0-based, named arguments skipped) among parts[1..]. */
static int positional(const char **part, const size_t *plen, size_t np, size_t idx, const char **a,
                      size_t *an)
{
    size_t k = 0;
    for (size_t i = 1; i < np; i++) {
        const char *eq = memchr(part[i], '=', plen[i]);
        if (eq) {
            /* a name before '=' without markup means a named argument */
            const char *br = NULL;
            for (const char *q = part[i]; q < eq; q++)
                if (*q == '[' || *q == '{' || *q == '<') {
                    br = q;
                    break;
                }
            if (!br)
                continue;
        }
        if (k++ == idx) {
            *a = part[i];
            *an = plen[i];
            trim(a, an);
            return 1;
        }
    }
    return 0;
}

static int render_template(const char *body, size_t n, struct sl_buf *o, int depth)
{
    const char *part[16];
    size_t plen[16];
    if (depth >= MAX_NEST || n == 0 || body[0] == '#')
        return 0;
    size_t np = split_pipes(body, n, part, plen, 16);
    const char *nm = part[0];
    size_t nl = plen[0];
    trim(&nm, &nl);
    char name[32];
    if (nl == 0 || nl >= sizeof(name))
        return 0;
    for (size_t i = 0; i < nl; i++)
        name[i] = nm[i] == '_' ? ' ' : (char)tolower((unsigned char)nm[i]);
    name[nl] = 0;
    const struct tpl *t = tpl_find(name);
    if (!t)
        return 0;
    const char *a = NULL, *b = NULL;
    size_t an = 0, bn = 0;
    int rc = 0;
    switch (t->kind) {
    case TK_TEXT:
        return sl_buf_puts(o, t->text);
    case TK_FIRST:
        if (positional(part, plen, np, 0, &a, &an))
            rc = pass_templates(a, an, o, depth + 1);
        return rc;
    case TK_SECOND:
        if (positional(part, plen, np, 1, &a, &an))
            rc = pass_templates(a, an, o, depth + 1);
        return rc;
    case TK_LAST: {
        size_t last = 0;
        while (positional(part, plen, np, last, &a, &an))
            last++;
        if (last && positional(part, plen, np, last - 1, &a, &an))
            rc = pass_templates(a, an, o, depth + 1);
        return rc;
    }
    case TK_CONVERT:
        if (positional(part, plen, np, 0, &a, &an)) {
            rc = sl_buf_append(o, a, an);
            if (!rc && positional(part, plen, np, 1, &b, &bn)) {
                rc = sl_buf_putc(o, ' ');
                if (!rc)
                    rc = sl_buf_append(o, b, bn);
            }
        }
        return rc;
    }
    return 0;
}

static int pass_templates(const char *s, size_t n, struct sl_buf *o, int depth)
{
    struct spans sp = { 0 };
    int rc = 0;
    match(s, n, '{', '}', 1, &sp);
    size_t i = 0, k = 0;
    while (i < n && !rc) {
        while (k < sp.n && sp.v[k].open < i)
            k++;
        size_t next = k < sp.n ? sp.v[k].open : n;
        if (next > i)
            rc = sl_buf_append(o, s + i, next - i);
        if (rc || k >= sp.n)
            break;
        struct span *t = &sp.v[k];
        if (t->width == 2)
            rc = render_template(s + t->open + 2, t->close - t->open - 4, o, depth);
        i = t->close;
    }
    free(sp.v);
    return rc;
}

/* ---- pass C: links ------------------------------------------------------------------ */

/* Namespace prefixes (lowercase) whose links are not text: files and categories. */
static const char *const DROP_NS[] = {
    "archivo",     "bestand",   "bild",        "categoria", "categoría", "categorie",  "catégorie",
    "category",    "datei",     "dosya",       "fichier",   "ficheiro",  "fil",        "file",
    "image",       "imagen",    "immagine",    "kategori",  "kategoria", "kategorie",  "kategorija",
    "kuva",        "luokka",    "media",       "plik",      "soubor",    "tiedosto",   "категория",
    "категорија",  "категорія", "изображение", "файл",      "Категория", "Категорија", "Категорія",
    "Изображение", "Файл",      "קובץ",        "קטגוריה",   "تصنيف",     "ملف",        "分类",
    "文件",        "ファイル",  "カテゴリ",    "画像",      "분류",      "파일",
};

static int prefix_is(const char *p, size_t n, const char *const *list, size_t ln)
{
    char low[48];
    if (n == 0 || n >= sizeof(low))
        return 0;
    for (size_t i = 0; i < n; i++)
        low[i] = (char)tolower((unsigned char)p[i]);
    low[n] = 0;
    for (size_t i = 0; i < ln; i++)
        if (!strcmp(low, list[i]))
            return 1;
    return 0;
}

/* A language code prefix ("fr", "zh-yue", "simple") of an interlanguage link. */
static int lang_prefix(const char *p, size_t n)
{
    if (n == 6 && !memcmp(p, "simple", 6))
        return 1;
    if (n < 2)
        return 0;
    size_t i = 0;
    while (i < n && islower((unsigned char)p[i]))
        i++;
    if (i < 2 || i > 3)
        return 0;
    while (i < n) {
        if (p[i] != '-')
            return 0;
        i++;
        size_t j = i;
        while (i < n && islower((unsigned char)p[i]))
            i++;
        if (i == j)
            return 0;
    }
    return 1;
}

static int pass_links(const char *s, size_t n, struct sl_buf *o, int depth);

static int render_link(const char *body, size_t n, struct sl_buf *o, int depth)
{
    const char *part[2];
    size_t plen[2];
    if (depth >= MAX_NEST)
        return 0;
    size_t np = split_pipes(body, n, part, plen, 2);
    const char *tg = part[0];
    size_t tl = plen[0];
    trim(&tg, &tl);
    int colon = tl && tg[0] == ':';
    if (colon) {
        tg++;
        tl--;
        trim(&tg, &tl);
    }
    const char *c = memchr(tg, ':', tl);
    if (c) {
        const char *pre = tg;
        size_t pl = (size_t)(c - tg);
        trim(&pre, &pl);
        if (!colon && prefix_is(pre, pl, DROP_NS, NELEM(DROP_NS)))
            return 0;
        if (!colon && np == 1 && lang_prefix(pre, pl))
            return 0; /* interlanguage link */
    }
    if (np > 1) {
        /* the label is everything after the first top-level '|' */
        const char *lb = part[1];
        size_t ll = (size_t)(body + n - lb);
        trim(&lb, &ll);
        if (ll)
            return pass_links(lb, ll, o, depth + 1);
        /* pipe trick: target without namespace and parenthesis */
        if (c)
            tl -= (size_t)(c + 1 - tg), tg = c + 1;
        const char *par = memchr(tg, '(', tl);
        if (par)
            tl = (size_t)(par - tg);
        trim(&tg, &tl);
    }
    return sl_buf_append(o, tg, tl);
}

static int ext_scheme(const char *p, size_t n)
{
    static const char *const schemes[] = { "http://", "https://", "ftp://", "//",
                                           "mailto:", "irc://",   "news:",  "ftps://" };
    for (size_t i = 0; i < NELEM(schemes); i++) {
        size_t l = strlen(schemes[i]);
        if (n >= l && strncasecmp(p, schemes[i], l) == 0)
            return 1;
    }
    return 0;
}

/* Copy s[i..j) resolving external links [url label]. */
static int copy_ext(const char *s, size_t i, size_t j, struct sl_buf *o)
{
    int rc = 0;
    while (i < j && !rc) {
        const char *b = memchr(s + i, '[', j - i);
        if (!b)
            break;
        size_t at = (size_t)(b - s);
        if (!ext_scheme(b + 1, j - at - 1)) {
            rc = sl_buf_append(o, s + i, at + 1 - i);
            i = at + 1;
            continue;
        }
        const char *e = b + 1;
        while (e < s + j && *e != ']' && *e != '\n')
            e++;
        if (e >= s + j || *e != ']') {
            rc = sl_buf_append(o, s + i, at + 1 - i);
            i = at + 1;
            continue;
        }
        rc = sl_buf_append(o, s + i, at - i);
        const char *sp = b + 1;
        while (sp < e && !isspace((unsigned char)*sp))
            sp++;
        while (sp < e && isspace((unsigned char)*sp))
            sp++;
        if (!rc && sp < e)
            rc = sl_buf_append(o, sp, (size_t)(e - sp));
        i = (size_t)(e - s) + 1;
    }
    if (!rc && i < j)
        rc = sl_buf_append(o, s + i, j - i);
    return rc;
}

static int pass_links(const char *s, size_t n, struct sl_buf *o, int depth)
{
    struct spans sp = { 0 };
    int rc = 0;
    match(s, n, '[', ']', 0, &sp);
    size_t i = 0, k = 0;
    while (i < n && !rc) {
        while (k < sp.n && sp.v[k].open < i)
            k++;
        size_t next = k < sp.n ? sp.v[k].open : n;
        if (next > i)
            rc = copy_ext(s, i, next, o);
        if (rc || k >= sp.n)
            break;
        struct span *t = &sp.v[k];
        rc = render_link(s + t->open + 2, t->close - t->open - 4, o, depth);
        i = t->close;
    }
    free(sp.v);
    return rc;
}

/* ---- pass D: lines ------------------------------------------------------------------ */

enum { L_NONE, L_PARA, L_LIST, L_HEAD, L_ROW };

#define MAX_PENDING 8

struct lines {
    struct sl_buf *o;
    /* headings wait until text follows them, so that empty sections leave nothing */
    struct sl_buf pend[MAX_PENDING];
    int pend_level[MAX_PENDING];
    int npend;
    int last;   /* kind of the last line written */
    int tables; /* table nesting */
    struct sl_buf row, cell;
    int rc;
};

/* Inline text: bold/italic marks, magic words, entities; spaces collapsed. */
static int put_inline(struct sl_buf *o, const char *s, size_t n)
{
    int rc = 0;
    size_t i = 0;
    while (i < n && !rc) {
        unsigned char c = (unsigned char)s[i];
        if (c == '\'' && i + 1 < n && s[i + 1] == '\'') {
            size_t j = i;
            while (j < n && s[j] == '\'')
                j++;
            size_t k = j - i;
            size_t keep = k == 4 ? 1 : k > 5 ? k - 5 : 0;
            for (size_t q = 0; q < keep && !rc; q++)
                rc = sl_buf_putc(o, '\'');
            i = j;
            continue;
        }
        if (c == '_' && i + 1 < n && s[i + 1] == '_') {
            size_t j = i + 2;
            while (j < n && j - i < 40 && isupper((unsigned char)s[j]))
                j++;
            if (j >= i + 4 && j + 1 < n && s[j] == '_' && s[j + 1] == '_') {
                i = j + 2;
                continue;
            }
        }
        if (c == '&') {
            size_t j = i + 1;
            while (j < n && j - i < 34 && (isalnum((unsigned char)s[j]) || s[j] == '#'))
                j++;
            if (j < n && s[j] == ';' && j > i + 1) {
                uint32_t cp = 0;
                int ok = 0;
                if (s[i + 1] == '#') {
                    char num[16];
                    size_t l = j - i - 2;
                    if (l > 0 && l < sizeof(num)) {
                        memcpy(num, s + i + 2, l);
                        num[l] = 0;
                        char *endp;
                        unsigned long v = (num[0] == 'x' || num[0] == 'X')
                                              ? strtoul(num + 1, &endp, 16)
                                              : strtoul(num, &endp, 10);
                        if (*endp == 0 && endp != num) {
                            cp = v > 0x10FFFF ? 0xFFFD : (uint32_t)v;
                            ok = 1;
                        }
                    }
                } else {
                    char nm[34];
                    memcpy(nm, s + i + 1, j - i - 1);
                    nm[j - i - 1] = 0;
                    const htmlEntityDesc *e =
                        sl_libxml_load() ? NULL : sl_xml.htmlEntityLookup((const xmlChar *)nm);
                    if (e) {
                        cp = e->value;
                        ok = 1;
                    }
                }
                if (ok) {
                    char u[4];
                    if (cp == 0 || cp == 0xA0)
                        cp = ' ';
                    size_t ul = sl_utf8_encode(cp, u);
                    if (!ul)
                        ul = sl_utf8_encode(0xFFFD, u);
                    rc = sl_buf_append(o, u, ul);
                    i = j + 1;
                    continue;
                }
            }
        }
        if (isspace(c)) {
            if (o->len && o->data[o->len - 1] != ' ' && o->data[o->len - 1] != '\n')
                rc = sl_buf_putc(o, ' ');
            i++;
            continue;
        }
        /* a run of ordinary bytes */
        size_t j = i + 1;
        while (j < n && s[j] != '\'' && s[j] != '_' && s[j] != '&' && !isspace((unsigned char)s[j]))
            j++;
        rc = sl_buf_append(o, s + i, j - i);
        i = j;
    }
    return rc;
}

/* Start a new output line of kind k. */
static void line_start(struct lines *L, int k)
{
    struct sl_buf *o = L->o;
    if (!o->len || L->rc)
        return;
    int para = !(k == L->last && (k == L_LIST || k == L_ROW)) && !(L->last == L_HEAD);
    if (k == L_PARA && L->last == L_PARA) {
        L->rc = sl_buf_putc(o, ' ');
        return;
    }
    L->rc = sl_buf_append(o, para ? "\n\n" : "\n", para ? 2 : 1);
}

static void put_line(struct lines *L, int kind, const char *s, size_t n);

static void flush_headings(struct lines *L)
{
    int np = L->npend;
    L->npend = 0;
    for (int i = 0; i < np; i++)
        put_line(L, L_HEAD, L->pend[i].data ? L->pend[i].data : "", L->pend[i].len);
}

static void heading(struct lines *L, int level, const char *s, size_t n)
{
    while (L->npend && L->pend_level[L->npend - 1] >= level)
        L->npend--;
    if (L->npend == MAX_PENDING)
        return;
    sl_buf_reset(&L->pend[L->npend]);
    sl_buf_append(&L->pend[L->npend], s, n);
    L->pend_level[L->npend++] = level;
}

static void put_line(struct lines *L, int kind, const char *s, size_t n)
{
    trim(&s, &n);
    if (!n || L->rc)
        return;
    if (kind != L_HEAD && L->npend)
        flush_headings(L);
    size_t before = L->o->len;
    line_start(L, kind);
    size_t mid = L->o->len;
    L->rc = put_inline(L->o, s, n);
    /* nothing visible: undo the separator */
    size_t k = mid;
    while (k < L->o->len && (L->o->data[k] == ' '))
        k++;
    if (k == L->o->len) {
        sl_buf_truncate(L->o, before);
        return;
    }
    /* trailing space from collapsed whitespace */
    while (L->o->len > mid && L->o->data[L->o->len - 1] == ' ')
        L->o->len--;
    L->o->data[L->o->len] = 0;
    L->last = kind;
}

static void cell_add(struct lines *L, const char *s, size_t n)
{
    /* "attrs | content": the content is after the first '|' */
    const char *bar = memchr(s, '|', n);
    if (bar) {
        n -= (size_t)(bar + 1 - s);
        s = bar + 1;
    }
    trim(&s, &n);
    if (!n)
        return;
    size_t before = L->row.len;
    if (L->row.len)
        sl_buf_append(&L->row, " | ", 3);
    size_t mid = L->row.len;
    if (put_inline(&L->row, s, n) != 0)
        L->rc = SL_ERR_TOOBIG;
    if (L->row.len == mid)
        sl_buf_truncate(&L->row, before);
}

static void row_flush(struct lines *L)
{
    if (L->row.len)
        put_line(L, L_ROW, L->row.data, L->row.len);
    sl_buf_reset(&L->row);
}

/* Cells of a table line after its marker ('|' or '!'), split at "||" (and "!!"). */
static void cells(struct lines *L, const char *s, size_t n, int header)
{
    size_t start = 0;
    for (size_t i = 0; i + 1 < n; i++) {
        if ((s[i] == '|' && s[i + 1] == '|') || (header && s[i] == '!' && s[i + 1] == '!')) {
            cell_add(L, s + start, i - start);
            start = i + 2;
            i++;
        }
    }
    cell_add(L, s + start, n - start);
}

static void do_line(struct lines *L, const char *s, size_t n)
{
    const char *t = s;
    size_t tn = n;
    trim(&t, &tn);
    /* tables */
    if (tn >= 2 && t[0] == '{' && t[1] == '|') {
        if (L->tables == 0)
            L->last = L_NONE;
        row_flush(L);
        L->tables++;
        return;
    }
    if (L->tables) {
        if (tn >= 2 && t[0] == '|' && t[1] == '}') {
            row_flush(L);
            if (--L->tables == 0)
                L->last = L_NONE;
            return;
        }
        if (tn >= 2 && t[0] == '|' && t[1] == '-') {
            row_flush(L);
            return;
        }
        if (tn >= 2 && t[0] == '|' && t[1] == '+') {
            row_flush(L);
            cell_add(L, t + 2, tn - 2);
            row_flush(L);
            return;
        }
        if (tn >= 1 && (t[0] == '|' || t[0] == '!')) {
            cells(L, t + 1, tn - 1, t[0] == '!');
            return;
        }
        /* a continuation of the last cell */
        if (tn) {
            if (L->row.len)
                sl_buf_putc(&L->row, ' ');
            if (put_inline(&L->row, t, tn) != 0)
                L->rc = SL_ERR_TOOBIG;
        }
        return;
    }
    if (tn == 0) {
        if (L->last == L_PARA || L->last == L_LIST)
            L->last = L_NONE;
        return;
    }
    /* headings: == title == */
    if (t[0] == '=') {
        size_t a = 0, b = 0;
        while (a < tn && t[a] == '=')
            a++;
        while (b < tn - a && t[tn - 1 - b] == '=')
            b++;
        size_t lvl = a < b ? a : b;
        if (lvl >= 1 && tn > 2 * lvl) {
            const char *h = t + lvl;
            size_t hn = tn - 2 * lvl;
            trim(&h, &hn);
            if (hn)
                heading(L, (int)lvl, h, hn);
            return;
        }
    }
    /* horizontal rule */
    if (tn >= 4 && !strncmp(t, "----", 4)) {
        size_t k = 0;
        while (k < tn && t[k] == '-')
            k++;
        if (k == tn) {
            L->last = L_NONE;
            return;
        }
    }
    /* list items: * # : ; markers */
    if (s[0] == '*' || s[0] == '#' || s[0] == ':' || s[0] == ';') {
        size_t k = 0;
        while (k < n && (s[k] == '*' || s[k] == '#' || s[k] == ':' || s[k] == ';'))
            k++;
        put_line(L, L_LIST, s + k, n - k);
        return;
    }
    put_line(L, L_PARA, s, n);
}

static int pass_lines(const char *s, size_t n, struct sl_buf *o)
{
    struct lines L;
    memset(&L, 0, sizeof(L));
    L.o = o;
    sl_buf_init(&L.row, o->max);
    size_t i = 0;
    while (i < n && !L.rc) {
        const char *nl = memchr(s + i, '\n', n - i);
        size_t e = nl ? (size_t)(nl - s) : n;
        do_line(&L, s + i, e - i);
        i = e + 1;
    }
    row_flush(&L);
    sl_buf_release(&L.row);
    for (int k = 0; k < MAX_PENDING; k++)
        sl_buf_release(&L.pend[k]);
    return L.rc;
}

/* ---- final clean-up ----------------------------------------------------------------- */

/* Restore escaped literals, drop empty brackets left by removed templates ("()", "( )",
 * "(; "), and trailing spaces. */
static int finish(const char *s, size_t n, struct sl_buf *o)
{
    int rc = 0;
    size_t i = 0;
    while (i < n && !rc) {
        unsigned char c = (unsigned char)s[i];
        if (c == 0xEE && i + 2 < n && ((unsigned char)s[i + 1] & 0xFE) == 0x80) {
            rc = sl_buf_putc(
                o, (char)((((unsigned char)s[i + 1] & 1) << 6) | ((unsigned char)s[i + 2] & 0x3F)));
            i += 3;
            continue;
        }
        if (c == '(') {
            size_t j = i + 1;
            while (j < n && (s[j] == ' ' || s[j] == ',' || s[j] == ';'))
                j++;
            if (j < n && s[j] == ')') {
                /* "()" with separators only: drop it and one space before */
                if (o->len && o->data[o->len - 1] == ' ')
                    o->len--;
                i = j + 1;
                continue;
            }
            if (j > i + 1 && (s[i + 1] == ',' || s[i + 1] == ';')) {
                rc = sl_buf_putc(o, '(');
                i = j;
                continue;
            }
        }
        if ((c == ',' || c == '.' || c == ';') && o->len > 1 && o->data[o->len - 1] == ' ' &&
            o->data[o->len - 2] != ' ' && o->data[o->len - 2] != '\n')
            o->len--; /* "named , plural" after a removed template */
        if (c == ' ' && o->len && o->data[o->len - 1] == ' ') {
            i++;
            continue;
        }
        rc = sl_buf_putc(o, (char)c);
        i++;
    }
    while (o->len && isspace((unsigned char)o->data[o->len - 1]))
        o->len--;
    if (o->data)
        o->data[o->len] = 0;
    return rc;
}

int wikitext_to_text(const char *wt, size_t len, struct sl_buf *out)
{
    struct sl_buf a, b;
    size_t cap = out->max ? out->max : 0;
    int rc;
    sl_buf_init(&a, cap ? cap + len : 0);
    sl_buf_init(&b, cap ? cap + len : 0);
    if ((rc = pass_tags(wt, len, &a)) != 0)
        goto out;
    if ((rc = pass_templates(a.data ? a.data : "", a.len, &b, 0)) != 0)
        goto out;
    sl_buf_reset(&a);
    if ((rc = pass_links(b.data ? b.data : "", b.len, &a, 0)) != 0)
        goto out;
    sl_buf_reset(&b);
    if ((rc = pass_lines(a.data ? a.data : "", a.len, &b)) != 0)
        goto out;
    rc = finish(b.data ? b.data : "", b.len, out);
out:
    sl_buf_release(&a);
    sl_buf_release(&b);
    return rc;
}
