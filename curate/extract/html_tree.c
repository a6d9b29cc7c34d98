/* Builds struct html_tree from libxml2 HTML SAX events: an explicit stack, capped depth,
 * class/id/role hints turned into flags, hidden and control subtrees skipped. */
#include "curate/extract/html_tree.h"

#include "core/alloc.h"
#include "core/err.h"
#include "core/utf8.h"
#include "curate/extract/libxml.h"

#include <ctype.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- element names ------------------------------------------------------------------ */

enum kind {
    K_INLINE = 0, /* transparent: not stored unless it carries hints */
    K_STORE,      /* stored as its tag */
    K_SKIP,       /* subtree dropped */
};

struct tag_def {
    const char *name;
    uint8_t tag, kind;
};

static const struct tag_def TAGS[] = {
    { "a", HT_A, K_STORE },
    { "abbr", HT_OTHER, K_INLINE },
    { "address", HT_ADDRESS, K_STORE },
    { "area", HT_OTHER, K_SKIP },
    { "article", HT_ARTICLE, K_STORE },
    { "aside", HT_ASIDE, K_STORE },
    { "audio", HT_OTHER, K_SKIP },
    { "b", HT_OTHER, K_INLINE },
    { "base", HT_OTHER, K_SKIP },
    { "blockquote", HT_BLOCKQUOTE, K_STORE },
    { "body", HT_BODY, K_STORE },
    { "br", HT_BR, K_STORE },
    { "button", HT_OTHER, K_SKIP },
    { "canvas", HT_OTHER, K_SKIP },
    { "caption", HT_CAPTION, K_STORE },
    { "center", HT_CENTER, K_STORE },
    { "datalist", HT_OTHER, K_SKIP },
    { "dd", HT_DD, K_STORE },
    { "details", HT_DETAILS, K_STORE },
    { "dialog", HT_BLOCK_OTHER, K_STORE },
    { "dir", HT_UL, K_STORE },
    { "div", HT_DIV, K_STORE },
    { "dl", HT_DL, K_STORE },
    { "dt", HT_DT, K_STORE },
    { "embed", HT_OTHER, K_SKIP },
    { "fieldset", HT_FIELDSET, K_STORE },
    { "figcaption", HT_FIGCAPTION, K_STORE },
    { "figure", HT_FIGURE, K_STORE },
    { "footer", HT_FOOTER, K_STORE },
    { "form", HT_FORM, K_STORE },
    { "frame", HT_OTHER, K_SKIP },
    { "frameset", HT_OTHER, K_SKIP },
    { "h1", HT_H1, K_STORE },
    { "h2", HT_H2, K_STORE },
    { "h3", HT_H3, K_STORE },
    { "h4", HT_H4, K_STORE },
    { "h5", HT_H5, K_STORE },
    { "h6", HT_H6, K_STORE },
    { "head", HT_OTHER, K_INLINE },
    { "header", HT_HEADER, K_STORE },
    { "hgroup", HT_BLOCK_OTHER, K_STORE },
    { "hr", HT_HR, K_STORE },
    { "html", HT_HTML, K_STORE },
    { "i", HT_OTHER, K_INLINE },
    { "iframe", HT_OTHER, K_SKIP },
    { "img", HT_IMG, K_INLINE },
    { "input", HT_OTHER, K_SKIP },
    { "label", HT_OTHER, K_SKIP },
    { "legend", HT_BLOCK_OTHER, K_STORE },
    { "li", HT_LI, K_STORE },
    { "link", HT_OTHER, K_SKIP },
    { "main", HT_MAIN, K_STORE },
    { "map", HT_OTHER, K_SKIP },
    { "math", HT_OTHER, K_SKIP },
    { "menu", HT_UL, K_STORE },
    { "meta", HT_OTHER, K_SKIP },
    { "meter", HT_OTHER, K_SKIP },
    { "nav", HT_NAV, K_STORE },
    { "noembed", HT_OTHER, K_SKIP },
    { "noframes", HT_OTHER, K_SKIP },
    { "noscript", HT_OTHER, K_SKIP },
    { "object", HT_OTHER, K_SKIP },
    { "ol", HT_OL, K_STORE },
    { "optgroup", HT_OTHER, K_SKIP },
    { "option", HT_OTHER, K_SKIP },
    { "output", HT_OTHER, K_SKIP },
    { "p", HT_P, K_STORE },
    { "param", HT_OTHER, K_SKIP },
    { "picture", HT_OTHER, K_INLINE },
    { "pre", HT_PRE, K_STORE },
    { "progress", HT_OTHER, K_SKIP },
    { "rp", HT_OTHER, K_SKIP },
    { "script", HT_OTHER, K_SKIP },
    { "section", HT_SECTION, K_STORE },
    { "select", HT_OTHER, K_SKIP },
    { "source", HT_OTHER, K_SKIP },
    { "style", HT_OTHER, K_SKIP },
    { "summary", HT_SUMMARY, K_STORE },
    { "svg", HT_OTHER, K_SKIP },
    { "table", HT_TABLE, K_STORE },
    { "tbody", HT_BLOCK_OTHER, K_INLINE },
    { "td", HT_TD, K_STORE },
    { "template", HT_OTHER, K_SKIP },
    { "textarea", HT_OTHER, K_SKIP },
    { "tfoot", HT_BLOCK_OTHER, K_INLINE },
    { "th", HT_TH, K_STORE },
    { "thead", HT_BLOCK_OTHER, K_INLINE },
    { "title", HT_TITLE, K_STORE },
    { "tr", HT_TR, K_STORE },
    { "track", HT_OTHER, K_SKIP },
    { "ul", HT_UL, K_STORE },
    { "video", HT_OTHER, K_SKIP },
    { "wbr", HT_OTHER, K_INLINE },
};

#define TT_SIZE 256
static const struct tag_def *TT[TT_SIZE];
static pthread_once_t tt_once = PTHREAD_ONCE_INIT;

static uint32_t tt_hash(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

static void tt_build(void)
{
    for (size_t i = 0; i < sizeof(TAGS) / sizeof(TAGS[0]); i++) {
        uint32_t h = tt_hash(TAGS[i].name) & (TT_SIZE - 1);
        while (TT[h])
            h = (h + 1) & (TT_SIZE - 1);
        TT[h] = &TAGS[i];
    }
}

static const struct tag_def *tag_lookup(const char *name)
{
    uint32_t h = tt_hash(name) & (TT_SIZE - 1);
    while (TT[h]) {
        if (strcmp(TT[h]->name, name) == 0)
            return TT[h];
        h = (h + 1) & (TT_SIZE - 1);
    }
    return NULL;
}

/* ---- builder ------------------------------------------------------------------------ */

enum { S_TRANSPARENT = 0, S_STORED = 1, S_STORED_A = 2 };

struct builder {
    struct html_tree *t;
    uint32_t cur;         /* current stored node */
    unsigned char *stack; /* per open element: S_* */
    size_t sp, scap;
    size_t skip;    /* >0: inside a dropped subtree (nesting count) */
    unsigned links; /* open <a> count */
    int in_title, title_done;
    int full; /* node or text cap reached */
};

static uint32_t node_new(struct builder *b, uint8_t tag, uint8_t flags)
{
    struct html_tree *t = b->t;
    if (t->count >= HTML_TREE_MAX_NODES) {
        b->full = 1;
        t->truncated = 1;
        return 0;
    }
    if (t->count == t->cap) {
        t->cap = t->cap ? t->cap * 2 : 1024;
        t->n = sl_xrealloc(t->n, sl_mul_size(t->cap, sizeof(*t->n)));
    }
    uint32_t i = (uint32_t)t->count++;
    struct html_node *n = &t->n[i];
    memset(n, 0, sizeof(*n));
    n->tag = tag;
    n->flags = flags;
    n->parent = b->cur;
    struct html_node *p = &t->n[b->cur];
    n->depth = (uint16_t)(p->depth + 1);
    if (p->last)
        t->n[p->last].next = i;
    else
        p->first = i;
    p->last = i;
    return i;
}

static void push(struct builder *b, unsigned char s)
{
    if (b->sp == b->scap) {
        b->scap = b->scap ? b->scap * 2 : 256;
        b->stack = sl_xrealloc(b->stack, b->scap);
    }
    b->stack[b->sp++] = s;
}

static int attr_is(const xmlChar *v, const char *want)
{
    return v && strcasecmp((const char *)v, want) == 0;
}

static void set_lang(struct html_tree *t, const char *v)
{
    size_t n = 0;
    while (*v && isspace((unsigned char)*v))
        v++;
    for (; v[n] && n < sizeof(t->lang) - 1; n++) {
        unsigned char c = (unsigned char)v[n];
        if (!(isalnum(c) || c == '-' || c == '_'))
            break;
    }
    if (n == 0 || n >= sizeof(t->lang) - 1)
        return;
    memcpy(t->lang, v, n);
    t->lang[n] = 0;
}

static void on_start(void *ctx, const xmlChar *xname, const xmlChar **attrs)
{
    struct builder *b = ctx;
    struct html_tree *t = b->t;
    if (b->skip) {
        b->skip++;
        return;
    }
    const char *name = (const char *)xname;
    const struct tag_def *td = tag_lookup(name);
    unsigned kind = td ? td->kind : K_INLINE;
    uint8_t tag = td ? td->tag : HT_OTHER;
    unsigned flags = 0;

    if (tag == HT_HTML && attrs) {
        for (const xmlChar **a = attrs; a[0]; a += 2)
            if (attr_is(a[0], "lang") && a[1] && !t->lang[0])
                set_lang(t, (const char *)a[1]);
    }
    if (!strcmp(name, "meta") && attrs && !t->lang[0]) {
        const xmlChar *he = NULL, *content = NULL;
        for (const xmlChar **a = attrs; a[0]; a += 2) {
            if (attr_is(a[0], "http-equiv"))
                he = a[1];
            else if (attr_is(a[0], "content"))
                content = a[1];
        }
        if (attr_is(he, "content-language") && content)
            set_lang(t, (const char *)content);
    }
    if (kind != K_SKIP && attrs) {
        /* html_rewrite put the class/id/role/style hints into one attribute "h" */
        for (const xmlChar **a = attrs; a[0]; a += 2)
            if (a[0][0] == 'h' && a[0][1] == 0 && a[1]) {
                flags = (unsigned)strtoul((const char *)a[1], NULL, 10);
                if (flags & HN_HIDE)
                    kind = K_SKIP;
                flags &= HN_NEG | HN_POS | HN_BODY;
            }
    }
    if (kind == K_SKIP) {
        b->skip = 1;
        return;
    }
    if (tag == HT_TITLE) {
        if (!b->title_done)
            b->in_title = 1;
        push(b, S_TRANSPARENT);
        return;
    }
    if (kind == K_INLINE && flags)
        kind = K_STORE; /* keep hints of unknown or inline elements */
    if (kind == K_STORE && !b->full && t->n[b->cur].depth < HTML_TREE_MAX_DEPTH) {
        uint32_t i = node_new(b, tag, (uint8_t)flags);
        if (i) {
            b->cur = i;
            if (tag == HT_A)
                b->links++;
            push(b, tag == HT_A ? S_STORED_A : S_STORED);
            return;
        }
    }
    push(b, S_TRANSPARENT);
}

static void on_end(void *ctx, const xmlChar *name)
{
    struct builder *b = ctx;
    (void)name;
    if (b->skip) {
        b->skip--;
        return;
    }
    if (b->sp == 0)
        return;
    unsigned char s = b->stack[--b->sp];
    if (s == S_TRANSPARENT) {
        if (b->in_title && !strcmp((const char *)name, "title")) {
            b->in_title = 0;
            b->title_done = 1;
        }
        return;
    }
    if (s == S_STORED_A && b->links)
        b->links--;
    if (b->cur)
        b->cur = b->t->n[b->cur].parent;
}

static void on_text(void *ctx, const xmlChar *ch, int len)
{
    struct builder *b = ctx;
    struct html_tree *t = b->t;
    if (b->skip || len <= 0)
        return;
    if (b->in_title) {
        /* collapse whitespace; the title buffer has its own cap */
        for (int i = 0; i < len; i++) {
            unsigned char c = ch[i];
            if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f') {
                if (t->title.len && t->title.data[t->title.len - 1] != ' ')
                    sl_buf_putc(&t->title, ' ');
            } else if (sl_buf_putc(&t->title, (char)c) != 0) {
                break;
            }
        }
        return;
    }
    if (b->full)
        return;
    struct html_node *cur = &t->n[b->cur];
    uint8_t fl = b->links ? HN_INLINK : 0;
    if (cur->last) {
        struct html_node *l = &t->n[cur->last];
        if (l->tag == HT_TEXT && l->off + l->len == t->text.len && l->flags == fl) {
            if (sl_buf_append(&t->text, ch, (size_t)len) != 0) {
                b->full = 1;
                t->truncated = 1;
                return;
            }
            l->len += (uint32_t)len;
            return;
        }
    }
    size_t off = t->text.len;
    if (sl_buf_append(&t->text, ch, (size_t)len) != 0) {
        b->full = 1;
        t->truncated = 1;
        return;
    }
    uint32_t i = node_new(b, HT_TEXT, fl);
    if (!i) {
        t->text.len = off;
        return;
    }
    t->n[i].off = (uint32_t)off;
    t->n[i].len = (uint32_t)len;
}

void html_tree_init(struct html_tree *t)
{
    memset(t, 0, sizeof(*t));
    sl_buf_init(&t->text, (size_t)1 << 30);
    sl_buf_init(&t->title, 4096);
}

void html_tree_release(struct html_tree *t)
{
    free(t->n);
    sl_buf_release(&t->text);
    sl_buf_release(&t->title);
    memset(t, 0, sizeof(*t));
}

static void silent(void *ctx, const char *msg, ...)
{
    (void)ctx;
    (void)msg;
}

int html_tree_build(struct html_tree *t, const char *html, size_t len)
{
    t->count = 0;
    t->truncated = 0;
    t->lang[0] = 0;
    sl_buf_reset(&t->text);
    sl_buf_reset(&t->title);
    struct builder b;
    int lrc = sl_libxml_load();
    if (lrc)
        return lrc;
    pthread_once(&tt_once, tt_build);
    memset(&b, 0, sizeof(b));
    b.t = t;
    if (t->cap == 0) {
        t->cap = 1024;
        t->n = sl_xmalloc(t->cap * sizeof(*t->n));
    }
    memset(&t->n[0], 0, sizeof(t->n[0]));
    t->n[0].tag = HT_ROOT;
    t->count = 1;

    htmlSAXHandler sax;
    memset(&sax, 0, sizeof(sax));
    sax.startElement = on_start;
    sax.endElement = on_end;
    sax.characters = on_text;
    sax.ignorableWhitespace = on_text;
    sax.warning = silent;
    sax.error = silent;
    sax.fatalError = silent;
    htmlParserCtxtPtr ctx =
        sl_xml.htmlCreatePushParserCtxt(&sax, &b, NULL, 0, NULL, XML_CHAR_ENCODING_UTF8);
    if (!ctx)
        return sl_err_set(SL_ERR_NOMEM, "cannot create the html parser");
    sl_xml.htmlCtxtUseOptions(ctx, HTML_PARSE_RECOVER | HTML_PARSE_NOERROR | HTML_PARSE_NOWARNING |
                                       HTML_PARSE_NONET | HTML_PARSE_IGNORE_ENC);
    /* feed in slices: htmlParseChunk takes an int length */
    const size_t slice = (size_t)1 << 26;
    size_t off = 0;
    do {
        size_t n = len - off < slice ? len - off : slice;
        int last = off + n >= len;
        sl_xml.htmlParseChunk(ctx, html + off, (int)n, last);
        off += n;
    } while (off < len);
    if (len == 0)
        sl_xml.htmlParseChunk(ctx, "", 0, 1);
    sl_xml.htmlFreeParserCtxt(ctx);
    free(b.stack);
    /* drop a trailing space of the title */
    if (t->title.len && t->title.data[t->title.len - 1] == ' ')
        sl_buf_truncate(&t->title, t->title.len - 1);
    /* a title stopped by its cap may end inside a character */
    if (t->title.len)
        sl_buf_truncate(&t->title, sl_utf8_whole(t->title.data, t->title.len));
    return 0;
}
