/* Charset sniffing and conversion to UTF-8 (iconv, lossy: U+FFFD for bad bytes), and the
 * raw-element stripper that runs before libxml2's HTML parser. */
#include "curate/extract/html_prep.h"

#include "core/buf.h"
#include "core/err.h"
#include "core/utf8.h"
#include "curate/extract/html_tree.h"

#include <ctype.h>
#include <errno.h>
#include <iconv.h>
#include <pthread.h>
#include <stdint.h>
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
    while (n &&
           (isspace((unsigned char)label[n - 1]) || label[n - 1] == '"' || label[n - 1] == '\''))
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
    size_t unit = strncmp(charset, "utf-16", 6) == 0   ? 2
                  : strncmp(charset, "utf-32", 6) == 0 ? 4
                                                       : 1;
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

/* ---- class / id hints --------------------------------------------------------------- */

/* Whole tokens of class/id values (split at anything not a letter or digit) that mark
 * boilerplate. Sorted for bsearch. */
static const char *const NEG_WORDS[] = {
    "ad",          "adblock",       "ads",          "adsense",    "adslot",        "adunit",
    "advert",      "advertisement", "advertising",  "adverts",    "agegate",       "author",
    "authors",     "banner",        "bio",          "breadcrumb", "breadcrumbs",   "byline",
    "bylines",     "caption",       "comment",      "comments",   "consent",       "contentinfo",
    "cookie",      "cookies",       "copyright",    "credit",     "credits",       "dateline",
    "dfp",         "disclaimer",    "disqus",       "donate",     "donation",      "footer",
    "gdpr",        "hidden",        "hide",         "invisible",  "login",         "masthead",
    "menu",        "meta",          "modal",        "more",       "nav",           "navbar",
    "navigation",  "newsletter",    "newsletters",  "outbrain",   "overlay",       "pagination",
    "paywall",     "popular",       "popup",        "print",      "promo",         "promos",
    "promoted",    "promotion",     "rail",         "recirc",     "recirculation", "recommend",
    "recommended", "related",       "share",        "sharebar",   "shares",        "sharing",
    "sidebar",     "signup",        "skip",         "social",     "sponsor",       "sponsored",
    "sronly",      "subscribe",     "subscription", "taboola",    "tag",           "tags",
    "timestamp",   "toolbar",       "tools",        "trending",   "visually",      "widget",
    "widgets",
};

/* Prefixes of such tokens ("comments-area", "sharebuttons", "sidebar2", ...). */
static const char *const NEG_PREFIXES[] = {
    "comment", "sidebar", "newsletter", "breadcrumb", "advert", "sponsor", "social",
    "share",   "related", "subscri",    "footer",     "navbar", "cookie",  "recommend",
};

static const char *const POS_WORDS[] = {
    "article", "articlebody", "blog",  "body",  "content", "entry",
    "main",    "post",        "prose", "story", "text",
};

/* Single tokens that name an article body. */
static const char *const BODY_WORDS[] = {
    "articlebody", "articlecontent", "articletext",  "bodytext",  "postbody",
    "postcontent", "storybody",      "storycontent", "storytext",
};

/* Pairs of consecutive tokens that name an article body ("article-body", "entry_content",
 * "story__text", ...), by word id. */
enum { PW_ARTICLE = 1, PW_STORY, PW_ENTRY, PW_POST, PW_BODY, PW_MAIN, PW_CONTENT, PW_TEXT };
static const char *const PAIR_WORDS[] = { "",     "article", "story",   "entry", "post",
                                          "body", "main",    "content", "text" };
/* for each first word: the second words that complete a pair (bit = 1 << id) */
static const unsigned PAIR_OK[] = {
    [PW_ARTICLE] = 1u << PW_BODY | 1u << PW_CONTENT | 1u << PW_TEXT | 1u << PW_MAIN,
    [PW_STORY] = 1u << PW_BODY | 1u << PW_CONTENT | 1u << PW_TEXT,
    [PW_ENTRY] = 1u << PW_CONTENT,
    [PW_POST] = 1u << PW_CONTENT | 1u << PW_BODY,
    [PW_BODY] = 1u << PW_TEXT,
    [PW_MAIN] = 1u << PW_CONTENT,
    [PW_CONTENT] = 0,
    [PW_TEXT] = 0,
};

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

/* One hash table over all the words above: value = hints | pair id << 8. Built once. */
#define WT_SIZE 512
struct wt_slot {
    const char *w;
    unsigned v;
};
static struct wt_slot WT[WT_SIZE];
static pthread_once_t wt_once = PTHREAD_ONCE_INIT;

static uint32_t wt_hash(const char *w, size_t n)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)w[i]) * 16777619u;
    return h;
}

static void wt_add(const char *w, unsigned v)
{
    uint32_t i = wt_hash(w, strlen(w)) & (WT_SIZE - 1);
    while (WT[i].w && strcmp(WT[i].w, w) != 0)
        i = (i + 1) & (WT_SIZE - 1);
    WT[i].w = w;
    WT[i].v |= v;
}

static void wt_build(void)
{
    for (size_t i = 0; i < NELEM(NEG_WORDS); i++)
        wt_add(NEG_WORDS[i], HN_NEG);
    for (size_t i = 0; i < NELEM(POS_WORDS); i++)
        wt_add(POS_WORDS[i], HN_POS);
    for (size_t i = 0; i < NELEM(BODY_WORDS); i++)
        wt_add(BODY_WORDS[i], HN_BODY | HN_POS);
    for (unsigned i = 1; i < NELEM(PAIR_WORDS); i++)
        wt_add(PAIR_WORDS[i], i << 8);
}

static unsigned wt_get(const char *w, size_t n)
{
    uint32_t i = wt_hash(w, n) & (WT_SIZE - 1);
    while (WT[i].w) {
        if (WT[i].w[0] == w[0] && strncmp(WT[i].w, w, n) == 0 && WT[i].w[n] == 0)
            return WT[i].v;
        i = (i + 1) & (WT_SIZE - 1);
    }
    return 0;
}

/* Hints of one lowercase token; *pair gets its pair-word id (0: none). */
static unsigned word_hints(const char *w, size_t n, unsigned prev_pair, unsigned *pair)
{
    unsigned v = wt_get(w, n);
    *pair = v >> 8;
    if (prev_pair && *pair && (PAIR_OK[prev_pair] >> *pair & 1))
        return HN_BODY | HN_POS;
    v &= 0xff;
    if (v & HN_BODY)
        return v;
    if (v & HN_NEG)
        return HN_NEG;
    if (v)
        return v;
    if (n >= 5)
        for (size_t i = 0; i < NELEM(NEG_PREFIXES); i++) {
            const char *p = NEG_PREFIXES[i];
            if (w[0] == p[0] && w[1] == p[1]) {
                size_t pl = strlen(p);
                if (n >= pl && !memcmp(w, p, pl))
                    return HN_NEG;
            }
        }
    return 0;
}

unsigned html_class_hints(const char *v, size_t n)
{
    char w[40];
    size_t wl = 0;
    unsigned f = 0, prev_pair = 0, pair;
    pthread_once(&wt_once, wt_build);
    for (size_t i = 0; i <= n; i++) {
        unsigned char c = i < n ? (unsigned char)v[i] : 0;
        if (((c | 0x20) >= 'a' && (c | 0x20) <= 'z') || (c >= '0' && c <= '9')) {
            if (wl < sizeof(w))
                w[wl] = (char)(c >= 'A' && c <= 'Z' ? c | 0x20 : c);
            wl++;
            continue;
        }
        if (wl == 0)
            continue;
        if (wl < sizeof(w)) {
            f |= word_hints(w, wl, prev_pair, &pair);
            prev_pair = pair;
        } else {
            prev_pair = 0;
        }
        wl = 0;
    }
    return f;
}

static unsigned role_hints(const char *v, size_t n)
{
    static const char *const neg[] = { "navigation",  "banner",  "contentinfo", "complementary",
                                       "menu",        "menubar", "search",      "dialog",
                                       "alertdialog", "toolbar" };
    for (size_t i = 0; i < NELEM(neg); i++)
        if (strlen(neg[i]) == n && !strncasecmp(v, neg[i], n))
            return HN_NEG;
    if ((n == 4 && !strncasecmp(v, "main", 4)) || (n == 7 && !strncasecmp(v, "article", 7)))
        return HN_POS;
    return 0;
}

/* style="display: none" or "visibility:hidden" */
static int style_hidden(const char *s, size_t n)
{
    char buf[24];
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (isspace(c))
            continue;
        if (k == sizeof(buf) - 1)
            memmove(buf, buf + 1, --k);
        buf[k++] = (char)tolower(c);
        buf[k] = 0;
        if ((k >= 12 && !memcmp(buf + k - 12, "display:none", 12)) ||
            (k >= 17 && !memcmp(buf + k - 17, "visibility:hidden", 17)))
            return 1;
    }
    return 0;
}

/* ---- the rewriter ------------------------------------------------------------------- */

/* Elements whose contents are dropped. `raw`: the content is raw text up to the end tag
 * (or the end of input when it is missing); otherwise only a matching end tag ends it and
 * a missing one drops the start tag alone. */
struct raw_el {
    const char *name;
    unsigned char len, raw;
};
static const struct raw_el RAW[] = {
    { "script", 6, 1 },   { "style", 5, 1 },    { "noscript", 8, 1 }, { "iframe", 6, 1 },
    { "noembed", 7, 1 },  { "noframes", 8, 1 }, { "svg", 3, 0 },      { "math", 4, 0 },
    { "template", 8, 0 }, { "object", 6, 0 },   { "video", 5, 0 },    { "audio", 5, 0 },
    { "select", 6, 0 },   { "canvas", 6, 0 },   { "textarea", 8, 1 }, { "xmp", 3, 1 },
};

/* Inline elements that are only formatting: their tags are dropped when they carry no
 * hints (their text stays in place). Void elements that hold no text are dropped always. */
static const char *const TRANSPARENT[] = {
    "abbr",  "acronym", "b",      "bdi",    "bdo", "big",  "cite", "code",    "data", "del", "dfn",
    "em",    "font",    "i",      "ins",    "kbd", "mark", "nobr", "picture", "q",    "s",   "samp",
    "small", "span",    "strike", "strong", "sub", "sup",  "time", "tt",      "u",    "var",
};
static const char *const VOID_DROP[] = { "base",  "col",    "img",   "link",
                                         "param", "source", "track", "wbr" };

#define STACK_BITS 64

struct rw {
    const char *end;
    struct sl_buf *out;
    /* per transparent element name: a bit stack of "start tag was dropped" */
    uint64_t dropped[NELEM(TRANSPARENT)];
    unsigned depth[NELEM(TRANSPARENT)];
};

static int is_name_end(char c)
{
    return c == '>' || c == '/' || c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f';
}

static int is_ws(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f';
}

static int name_index(const char *name, const char *const *list, size_t n)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = strcmp(name, list[mid]);
        if (c == 0)
            return (int)mid;
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return -1;
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

/* find_end_tag for each element of RAW, remembered so that a page of unclosed elements
 * ('<svg>' 200,000 times) is not scanned to its end once per start tag: searches only move
 * forward, so a search that failed from `none_from` fails from any later position, and
 * one that found `at` from `from` finds it again from anywhere in [from, at]. */
struct end_cache {
    const char *none_from;
    const char *from, *at;
};

static const char *find_end_cached(struct end_cache *c, const char *p, const char *end,
                                   const char *name, size_t n)
{
    if (c->none_from && p >= c->none_from)
        return NULL;
    if (c->at && p >= c->from && p <= c->at)
        return c->at;
    const char *et = find_end_tag(p, end, name, n);
    if (!et) {
        c->none_from = p;
    } else {
        c->from = p;
        c->at = et;
    }
    return et;
}

/* An attribute: name [= value]. */
struct attr {
    const char *name, *val;
    size_t nlen, vlen;
};

/* Parse one attribute at *pp (past whitespace); returns 0 at the end of the tag ('>' is
 * consumed, *selfclose set for "/>") or at the end of input. */
static int next_attr(const char **pp, const char *end, struct attr *a, int *selfclose)
{
    const char *p = *pp;
    for (;;) {
        while (p < end && (is_ws(*p) || *p == '/')) {
            if (*p == '/' && p + 1 < end && p[1] == '>')
                *selfclose = 1;
            p++;
        }
        if (p >= end) {
            *pp = end;
            return 0;
        }
        if (*p == '>') {
            *pp = p + 1;
            return 0;
        }
        break;
    }
    a->name = p;
    p++; /* the first character may be anything but space, '/' or '>' (even '=') */
    while (p < end && !is_ws(*p) && *p != '=' && *p != '>' && *p != '/')
        p++;
    a->nlen = (size_t)(p - a->name);
    a->val = NULL;
    a->vlen = 0;
    const char *q = p;
    while (q < end && is_ws(*q))
        q++;
    if (q < end && *q == '=') {
        q++;
        while (q < end && is_ws(*q))
            q++;
        if (q < end && (*q == '"' || *q == '\'')) {
            const char *c = memchr(q + 1, *q, (size_t)(end - q - 1));
            a->val = q + 1;
            a->vlen = c ? (size_t)(c - q - 1) : (size_t)(end - q - 1);
            p = c ? c + 1 : end;
        } else {
            a->val = q;
            while (q < end && !is_ws(*q) && *q != '>')
                q++;
            a->vlen = (size_t)(q - a->val);
            p = q;
        }
    }
    *pp = p;
    return 1;
}

static int attr_is(const struct attr *a, const char *name)
{
    size_t n = strlen(name);
    return a->nlen == n && strncasecmp(a->name, name, n) == 0;
}

/* Append an attribute value as a double-quoted value (quotes and '<' removed). */
static int put_val(struct sl_buf *o, const char *v, size_t n)
{
    int rc = sl_buf_putc(o, '"');
    for (size_t i = 0; i < n && !rc; i++)
        if (v[i] != '"' && v[i] != '<' && v[i] != '>' && v[i] != 0)
            rc = sl_buf_putc(o, v[i]);
    return rc ? rc : sl_buf_putc(o, '"');
}

/* Rewrite the start tag whose name (lowercase, nlen bytes) ends at p. Returns the position
 * after the tag; *rc gets an error. */
static const char *start_tag(struct rw *w, const char *name, size_t nlen, const char *p, int *rc)
{
    const char *end = w->end;
    struct attr a;
    int selfclose = 0;
    unsigned flags = 0;
    const char *lang = NULL, *content = NULL;
    size_t lang_n = 0, content_n = 0;
    int content_lang = 0;
    int is_html = nlen == 4 && !memcmp(name, "html", 4);
    int is_meta = nlen == 4 && !memcmp(name, "meta", 4);
    while (next_attr(&p, end, &a, &selfclose)) {
        if (!a.val)
            goto noval;
        if (attr_is(&a, "class") || attr_is(&a, "id"))
            flags |= html_class_hints(a.val, a.vlen);
        else if (attr_is(&a, "role"))
            flags |= role_hints(a.val, a.vlen);
        else if (attr_is(&a, "itemprop")) {
            if (memmem(a.val, a.vlen, "articleBody", 11))
                flags |= HN_BODY | HN_POS;
        } else if (attr_is(&a, "style")) {
            if (style_hidden(a.val, a.vlen))
                flags |= HN_HIDE;
        } else if (attr_is(&a, "aria-hidden")) {
            if (a.vlen == 4 && !strncasecmp(a.val, "true", 4))
                flags |= HN_HIDE;
        } else if (is_html && attr_is(&a, "lang")) {
            lang = a.val;
            lang_n = a.vlen;
        } else if (is_meta && attr_is(&a, "http-equiv")) {
            content_lang = a.vlen == 16 && !strncasecmp(a.val, "content-language", 16);
        } else if (is_meta && attr_is(&a, "content")) {
            content = a.val;
            content_n = a.vlen;
        }
        continue;
    noval:
        if (attr_is(&a, "hidden"))
            flags |= HN_HIDE;
    }
    if (is_meta && !(content_lang && content))
        return p; /* other metadata is not needed */
    if (!flags) {
        if (name_index(name, VOID_DROP, NELEM(VOID_DROP)) >= 0)
            return p;
    }
    int ti = name_index(name, TRANSPARENT, NELEM(TRANSPARENT));
    if (ti >= 0 && !selfclose) {
        unsigned d = w->depth[ti]++;
        if (d < STACK_BITS) {
            uint64_t bit = (uint64_t)1 << d;
            if (!flags) {
                w->dropped[ti] |= bit;
                return p;
            }
            w->dropped[ti] &= ~bit;
        }
    }
    struct sl_buf *o = w->out;
    *rc = sl_buf_putc(o, '<');
    if (!*rc)
        *rc = sl_buf_append(o, name, nlen);
    if (!*rc && flags) {
        char num[8] = " h=";
        size_t k = 3;
        if (flags >= 100)
            num[k++] = (char)('0' + flags / 100);
        if (flags >= 10)
            num[k++] = (char)('0' + flags / 10 % 10);
        num[k++] = (char)('0' + flags % 10);
        *rc = sl_buf_append(o, num, k);
    }
    if (!*rc && lang) {
        *rc = sl_buf_puts(o, " lang=");
        if (!*rc)
            *rc = put_val(o, lang, lang_n);
    }
    if (!*rc && is_meta) {
        *rc = sl_buf_puts(o, " http-equiv=content-language content=");
        if (!*rc)
            *rc = put_val(o, content, content_n);
    }
    if (!*rc)
        *rc = sl_buf_puts(o, selfclose ? "/>" : ">");
    return p;
}

/* An end tag: dropped when its transparent start tag was dropped. */
static const char *end_tag(struct rw *w, const char *name, const char *lt, const char *p, int *rc)
{
    const char *gt = memchr(p, '>', (size_t)(w->end - p));
    const char *after = gt ? gt + 1 : w->end;
    int ti = name_index(name, TRANSPARENT, NELEM(TRANSPARENT));
    if (ti >= 0 && w->depth[ti] > 0) {
        unsigned d = --w->depth[ti];
        if (d < STACK_BITS && (w->dropped[ti] >> d & 1))
            return after;
    } else if (ti >= 0) {
        return after; /* stray end tag of a formatting element */
    }
    *rc = sl_buf_append(w->out, lt, (size_t)(after - lt));
    return after;
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

int html_rewrite(const char *html, size_t len, struct sl_buf *out)
{
    const char *p = html, *end = html + len, *mark = html;
    size_t start = out->len;
    int rc = 0;
    struct rw w;
    memset(&w, 0, sizeof(w));
    w.end = end;
    w.out = out;
    struct end_cache ends[NELEM(RAW)];
    memset(ends, 0, sizeof(ends));
    while (p < end && !rc) {
        const char *lt = memchr(p, '<', (size_t)(end - p));
        if (!lt)
            break;
        p = lt + 1;
        if (p >= end)
            break;
        if (*p == '!' && end - lt >= 4 && lt[2] == '-' && lt[3] == '-') {
            const char *q = lt + 4, *stop;
            if (q < end && *q == '>')
                stop = q + 1;
            else if (q + 1 < end && q[0] == '-' && q[1] == '>')
                stop = q + 2;
            else {
                const char *c = memmem(q, (size_t)(end - q), "-->", 3);
                stop = c ? c + 3 : end;
            }
            rc = sl_buf_append(out, mark, (size_t)(lt - mark));
            mark = p = stop;
            continue;
        }
        int closing = *p == '/';
        const char *ns = p + closing;
        if (ns >= end || !isalpha((unsigned char)*ns))
            continue;
        char name[16];
        size_t n = 0;
        const char *ne = ns;
        /* stop at the cap: "<x<x<x..." is one long name, and scanning it to its end
         * from every '<' would be quadratic */
        while (ne < end && !is_name_end(*ne) && n < sizeof(name)) {
            if (n < sizeof(name) - 1)
                name[n] = (char)tolower((unsigned char)*ne);
            n++;
            ne++;
        }
        if (n >= sizeof(name)) {
            /* a long (custom) element name: keep the tag as it is */
            continue;
        }
        name[n] = 0;
        if ((rc = sl_buf_append(out, mark, (size_t)(lt - mark))) != 0)
            break;
        if (closing) {
            mark = p = end_tag(&w, name, lt, ne, &rc);
            continue;
        }
        const struct raw_el *el = NULL;
        size_t eli = 0;
        for (size_t i = 0; i < NELEM(RAW); i++)
            if (RAW[i].len == n && memcmp(name, RAW[i].name, n) == 0) {
                el = &RAW[i];
                eli = i;
                break;
            }
        if (!el) {
            mark = p = start_tag(&w, name, n, ne, &rc);
            continue;
        }
        /* a raw element: skip its start tag, contents and end tag */
        struct attr a;
        int selfclose = 0;
        const char *te = ne;
        while (next_attr(&te, end, &a, &selfclose))
            ;
        const char *stop;
        if (selfclose && !el->raw) {
            stop = te;
        } else {
            const char *et = find_end_cached(&ends[eli], te, end, el->name, n);
            if (et) {
                const char *gt = memchr(et, '>', (size_t)(end - et));
                stop = gt ? gt + 1 : end;
            } else {
                stop = el->raw ? end : te;
            }
        }
        /* keep a separator so that words on both sides do not merge */
        rc = sl_buf_putc(out, ' ');
        mark = p = stop;
    }
    if (!rc)
        rc = sl_buf_append(out, mark, (size_t)(end - mark));
    if (!rc && out->len == 0)
        rc = sl_buf_reserve(out, 1);
    if (rc)
        return rc;
    return drop_nuls(out, start);
}
