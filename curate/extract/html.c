/* Main-text extraction: text statistics per node, block scoring propagated to ancestors,
 * choice of the main container and its sibling blocks, cleaning inside it, and the text
 * writer. The algorithm is described in docs/extract-html.md. */
#include "curate/extract/html.h"

#include "core/err.h"
#include "core/utf8.h"
#include "curate/extract/html_prep.h"
#include "curate/extract/html_tree.h"

#include <string.h>

/* aux bits */
#define AUX_NEGCTX 0x1u /* inside a boilerplate element (for scoring) */
#define AUX_SCORED 0x2u /* score initialised */
#define AUX_KEEP   0x4u /* chosen as (part of) the main content */
#define AUX_PATH   0x8u /* ancestor of a chosen node */

void html_doc_init(struct html_doc *d)
{
    sl_buf_init(&d->text, (size_t)64 << 20);
    sl_buf_init(&d->title, 4096);
    sl_buf_init(&d->lang, 64);
}

void html_doc_release(struct html_doc *d)
{
    sl_buf_release(&d->text);
    sl_buf_release(&d->title);
    sl_buf_release(&d->lang);
}

/* ---- statistics --------------------------------------------------------------------- */

static int is_space(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

static void text_stats(const unsigned char *s, size_t n, uint32_t *chars, uint32_t *punct)
{
    uint32_t c = 0, p = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char b = s[i];
        if (b < 0x80) {
            if (is_space(b))
                continue;
            c++;
            if (b == ',' || b == '.' || b == ';' || b == '!' || b == '?')
                p++;
        } else if ((b & 0xC0) != 0x80) {
            c++;
            /* ，。、 (CJK), ، (Arabic), । (Devanagari), ។ (Khmer), ။ ၊ (Myanmar),
             * ། (Tibetan), ። ፣ (Ethiopic) */
            if (i + 2 < n &&
                ((b == 0xEF && s[i + 1] == 0xBC && s[i + 2] == 0x8C) ||
                 (b == 0xE3 && s[i + 1] == 0x80 && (s[i + 2] == 0x81 || s[i + 2] == 0x82)) ||
                 (b == 0xE0 && s[i + 1] == 0xA5 && s[i + 2] == 0xA4) ||
                 (b == 0xE1 && s[i + 1] == 0x9F && s[i + 2] == 0x94) ||
                 (b == 0xE1 && s[i + 1] == 0x81 && (s[i + 2] == 0x8A || s[i + 2] == 0x8B)) ||
                 (b == 0xE0 && s[i + 1] == 0xBC && s[i + 2] == 0x8D) ||
                 (b == 0xE1 && s[i + 1] == 0x8D && (s[i + 2] == 0xA2 || s[i + 2] == 0xA3))))
                p++;
            else if (i + 1 < n && b == 0xD8 && s[i + 1] == 0x8C)
                p++;
        }
    }
    *chars = c;
    *punct = p;
}

/* Elements whose whole subtree is boilerplate by their kind. */
static int boiler_tag(unsigned tag)
{
    return tag == HT_NAV || tag == HT_ASIDE || tag == HT_FOOTER || tag == HT_HEADER;
}

/* A <header> holding real paragraphs (a preamble, a lead, a whole post) is content, not
 * a banner: 400+ characters, under 35 % of them in links. */
static int content_header(const struct html_node *n)
{
    return n->tag == HT_HEADER && n->chars >= 400 && n->link_chars * 20 < n->chars * 7 &&
           (n->punct >= 4 || n->chars >= 1000);
}

static int neg_node(const struct html_node *n)
{
    if (n->tag == HT_BODY || n->tag == HT_HTML)
        return 0; /* their classes describe the page ("has-sidebar"), not boilerplate */
    if (boiler_tag(n->tag))
        return !(n->flags & HN_BODY) && !content_header(n);
    return (n->flags & HN_NEG) && !(n->flags & (HN_POS | HN_BODY));
}

static void compute_stats(struct html_tree *t)
{
    struct html_node *n = t->n;
    for (size_t i = 0; i < t->count; i++) {
        n[i].chars = n[i].link_chars = n[i].punct = 0;
        n[i].own_chars = n[i].own_link = n[i].own_punct = 0;
        n[i].score = 0;
        n[i].aux = 0;
    }
    /* bottom-up sums (children come after their parents in the array) */
    for (size_t i = t->count; i-- > 1;) {
        struct html_node *x = &n[i];
        if (x->tag == HT_TEXT) {
            text_stats((const unsigned char *)t->text.data + x->off, x->len, &x->chars, &x->punct);
            x->own_chars = x->chars;
            x->own_punct = x->punct;
            if (x->flags & HN_INLINK)
                x->link_chars = x->own_link = x->chars;
        }
        struct html_node *p = &n[x->parent];
        p->chars += x->chars;
        p->link_chars += x->link_chars;
        p->punct += x->punct;
        if (!HT_IS_BLOCK(x->tag)) {
            p->own_chars += x->own_chars;
            p->own_link += x->own_link;
            p->own_punct += x->own_punct;
        }
    }
    /* top-down: boilerplate context */
    for (size_t i = 1; i < t->count; i++) {
        if (n[i].flags & HN_BODY)
            n[i].aux = 0; /* a named article body is content whatever its wrappers say */
        else
            n[i].aux = (n[n[i].parent].aux & AUX_NEGCTX) | (neg_node(&n[i]) ? AUX_NEGCTX : 0);
    }
}

/* ---- scoring ------------------------------------------------------------------------ */

static float tag_base(unsigned tag)
{
    switch (tag) {
    case HT_DIV:
    case HT_ARTICLE:
    case HT_MAIN:
    case HT_SECTION:
        return 5;
    case HT_PRE:
    case HT_TD:
    case HT_BLOCKQUOTE:
        return 3;
    case HT_ADDRESS:
    case HT_OL:
    case HT_UL:
    case HT_DL:
    case HT_DD:
    case HT_DT:
    case HT_LI:
    case HT_FORM:
        return -3;
    case HT_H1:
    case HT_H2:
    case HT_H3:
    case HT_H4:
    case HT_H5:
    case HT_H6:
    case HT_TH:
        return -5;
    default:
        return 0;
    }
}

static float class_weight(const struct html_node *x)
{
    float w = 0;
    if (x->flags & HN_NEG)
        w -= 25;
    if (x->flags & HN_POS)
        w += 25;
    if (x->flags & HN_BODY)
        w += 25;
    return w;
}

static void init_score(struct html_node *x)
{
    if (x->aux & AUX_SCORED)
        return;
    x->aux |= AUX_SCORED;
    x->score = tag_base(x->tag) + class_weight(x);
}

static float link_density(const struct html_node *x)
{
    return x->chars ? (float)x->link_chars / (float)x->chars : 0.0f;
}

/* Score text blocks and give the score to up to five ancestors; returns the best node. */
static uint32_t choose_top(struct html_tree *t, float *top_score)
{
    struct html_node *n = t->n;
    for (size_t i = 1; i < t->count; i++) {
        struct html_node *x = &n[i];
        if (!HT_IS_BLOCK(x->tag) || x->own_chars < 25 || (x->aux & AUX_NEGCTX))
            continue;
        if (x->tag == HT_BODY || x->tag == HT_HTML)
            continue;
        float own_ld = (float)x->own_link / (float)x->own_chars;
        float s =
            1.0f + (float)x->own_punct + (x->own_chars >= 300 ? 3.0f : (float)(x->own_chars / 100));
        s *= 1.0f - own_ld;
        if (s <= 0)
            continue;
        uint32_t a = x->parent;
        for (int level = 0; level < 5 && a; level++) {
            struct html_node *y = &n[a];
            init_score(y);
            float div = level == 0 ? 1.0f : level == 1 ? 2.0f : (float)level * 3.0f;
            y->score += s / div;
            a = y->parent;
        }
        /* a paragraph-like block that holds its text itself also competes */
        if (x->tag != HT_P && x->tag != HT_LI && !HT_IS_HEADING(x->tag)) {
            init_score(x);
            x->score += s;
        }
    }
    uint32_t best = 0;
    float bs = 0;
    for (size_t i = 1; i < t->count; i++) {
        struct html_node *x = &n[i];
        if (!(x->aux & AUX_SCORED) || (x->aux & AUX_NEGCTX))
            continue;
        float f = x->score * (1.0f - link_density(x));
        x->score = f;
        if (f > bs) {
            bs = f;
            best = (uint32_t)i;
        }
    }
    *top_score = bs;
    return best;
}

static uint32_t lca(const struct html_node *n, uint32_t a, uint32_t b)
{
    while (n[a].depth > n[b].depth)
        a = n[a].parent;
    while (n[b].depth > n[a].depth)
        b = n[b].parent;
    while (a != b) {
        a = n[a].parent;
        b = n[b].parent;
    }
    return a;
}

/* An article split into several containers (around ads or images) shows up as two or
 * more candidates of similar score in different branches: move the top up to their
 * common ancestor when that ancestor holds little else. */
static uint32_t merge_split(struct html_tree *t, uint32_t top, float top_score)
{
    struct html_node *n = t->n;
    for (int round = 0; round < 4; round++) {
        uint32_t up = 0;
        for (size_t i = 1; i < t->count && !up; i++) {
            struct html_node *x = &n[i];
            if (!(x->aux & AUX_SCORED) || (x->aux & AUX_NEGCTX) || x->score < 0.6f * top_score ||
                i == top || link_density(x) > 0.2f)
                continue;
            /* the parts of one article look alike: same content hints, or a close score */
            unsigned kind = HN_POS | HN_BODY;
            if ((x->flags & kind) != (n[top].flags & kind) && x->score < 0.8f * top_score)
                continue;
            uint32_t a = lca(n, top, (uint32_t)i);
            if (a == top || a == i || a == 0)
                continue; /* nested: not a split */
            if (n[a].tag == HT_BODY || n[a].tag == HT_HTML)
                continue;
            if ((float)n[a].chars <= 1.5f * (float)(n[top].chars + x->chars) &&
                link_density(&n[a]) < 0.35f)
                up = a;
        }
        if (!up)
            break;
        top = up;
    }
    return top;
}

/* Mark the top node and the siblings that belong with it. */
static void mark_content(struct html_tree *t, uint32_t top, float top_score)
{
    struct html_node *n = t->n;
    uint32_t parent = n[top].parent;
    float thr = top_score * 0.2f;
    if (thr < 10)
        thr = 10;
    for (uint32_t s = n[parent].first; s; s = n[s].next) {
        struct html_node *x = &n[s];
        if (s == top) {
            x->aux |= AUX_KEEP;
            continue;
        }
        if (!HT_IS_BLOCK(x->tag) || (x->aux & AUX_NEGCTX) || x->chars == 0)
            continue;
        float bonus = ((x->flags & (HN_POS | HN_BODY)) && (n[top].flags & (HN_POS | HN_BODY)))
                          ? top_score * 0.2f
                          : 0;
        if ((x->aux & AUX_SCORED) && x->score + bonus >= thr) {
            x->aux |= AUX_KEEP;
            continue;
        }
        if (x->tag == HT_P || x->tag == HT_BLOCKQUOTE || x->tag == HT_PRE) {
            float ld = link_density(x);
            if ((x->chars > 80 && ld < 0.25f) || (x->chars > 0 && ld == 0 && x->punct > 0))
                x->aux |= AUX_KEEP;
        }
    }
    for (uint32_t a = parent; a; a = n[a].parent)
        n[a].aux |= AUX_PATH;
}

/* ---- writer ------------------------------------------------------------------------- */

enum { SEP_NONE = 0, SEP_CELL, SEP_LINE, SEP_PARA };

struct writer {
    struct sl_buf *out;
    int sep;   /* pending separator before the next text */
    int space; /* pending space */
    int pre;   /* inside <pre> */
    int rc;
};

static int sep_of(unsigned tag)
{
    switch (tag) {
    case HT_LI:
    case HT_DT:
    case HT_DD:
    case HT_TR:
    case HT_BR:
    case HT_CAPTION:
        return SEP_LINE;
    case HT_TD:
    case HT_TH:
        return SEP_CELL;
    default:
        return HT_IS_BLOCK(tag) ? SEP_PARA : SEP_NONE;
    }
}

static void w_sep(struct writer *w, int s)
{
    if (s > w->sep)
        w->sep = s;
}

static void w_text(struct writer *w, const char *s, size_t n)
{
    struct sl_buf *o = w->out;
    size_t i = 0;
    while (i < n && !w->rc) {
        unsigned char c = (unsigned char)s[i];
        if (!w->pre && is_space(c)) {
            w->space = 1;
            i++;
            continue;
        }
        if (o->len) {
            if (w->sep == SEP_PARA)
                w->rc = sl_buf_append(o, "\n\n", 2);
            else if (w->sep == SEP_LINE)
                w->rc = sl_buf_putc(o, '\n');
            else if (w->sep == SEP_CELL)
                w->rc = sl_buf_append(o, " | ", 3);
            else if (w->space && o->data[o->len - 1] != '\n')
                w->rc = sl_buf_putc(o, ' ');
        }
        w->sep = SEP_NONE;
        w->space = 0;
        /* copy the run up to the next space */
        size_t j = i;
        if (w->pre) {
            j = n;
        } else {
            while (j < n && !is_space((unsigned char)s[j]))
                j++;
        }
        if (!w->rc)
            w->rc = sl_buf_append(o, s + i, j - i);
        i = j;
    }
}

/* Append the text of a subtree, whitespace collapsed and ASCII lowercased, to b (at
 * most `max` bytes). */
static void plain_text(const struct html_tree *t, uint32_t root, struct sl_buf *b, size_t max)
{
    const struct html_node *n = t->n;
    uint32_t x = root;
    for (;;) {
        const struct html_node *e = &n[x];
        if (e->tag == HT_TEXT) {
            for (uint32_t i = 0; i < e->len && b->len < max; i++) {
                unsigned char c = (unsigned char)t->text.data[e->off + i];
                if (is_space(c)) {
                    if (b->len && b->data[b->len - 1] != ' ')
                        sl_buf_putc(b, ' ');
                } else {
                    sl_buf_putc(b, (char)(c >= 'A' && c <= 'Z' ? c | 0x20 : c));
                }
            }
        } else if (e->first) {
            x = e->first;
            continue;
        }
        while (x != root && !n[x].next)
            x = n[x].parent;
        if (x == root)
            break;
        x = n[x].next;
    }
    while (b->len && b->data[b->len - 1] == ' ')
        b->len--;
}

/* Is this <h1> the page title again (its text within <title>, or <title> within it)? */
static int h1_is_title(const struct html_tree *t, const struct html_node *h)
{
    struct sl_buf a = SL_BUF_INIT, b = SL_BUF_INIT;
    int same = 0;
    plain_text(t, (uint32_t)(h - t->n), &a, 1024);
    for (size_t i = 0; i < t->title.len && b.len < 4096; i++) {
        unsigned char c = (unsigned char)t->title.data[i];
        sl_buf_putc(&b, (char)(c >= 'A' && c <= 'Z' ? c | 0x20 : c));
    }
    if (a.len == 0)
        same = 1;
    else if (b.len && (strstr(b.data, a.data) || strstr(a.data, b.data)))
        same = 1;
    sl_buf_release(&a);
    sl_buf_release(&b);
    return same;
}

/* Should this element inside the content be left out? */
static int drop_inside(const struct html_tree *t, const struct html_node *x, uint32_t top_chars)
{
    if (x->tag == HT_TEXT)
        return 0;
    if (x->flags & HN_BODY)
        return 0;
    if (boiler_tag(x->tag))
        return !content_header(x);
    if (x->tag == HT_FIGURE || x->tag == HT_FIGCAPTION || x->tag == HT_FORM)
        return 1;
    if (x->tag == HT_H1)
        return h1_is_title(t, x);
    if ((x->flags & HN_NEG) && x->chars * 10 < top_chars * 6)
        return 1;
    if (HT_IS_BLOCK(x->tag) && x->chars > 0) {
        float ld = link_density(x);
        if (ld > 0.6f)
            return 1;
        if ((x->tag == HT_UL || x->tag == HT_OL) && ld > 0.4f) {
            /* a link list has short items; a content list may link its first words */
            uint32_t items = 0;
            for (uint32_t c = x->first; c; c = t->n[c].next)
                items += t->n[c].tag == HT_LI;
            if (!items || x->chars / items < 120)
                return 1;
        }
    }
    return 0;
}

/* Write the subtree at `root` (iteratively). */
static void write_subtree(struct html_tree *t, uint32_t root, struct writer *w, int clean,
                          uint32_t top_chars)
{
    struct html_node *n = t->n;
    uint32_t x = root;
    for (;;) {
        struct html_node *e = &n[x];
        int enter = 0;
        if (e->tag == HT_TEXT) {
            w_text(w, t->text.data + e->off, e->len);
        } else if (x == root || !clean || !drop_inside(t, e, top_chars)) {
            if (e->tag == HT_BR) {
                w_sep(w, SEP_LINE);
            } else {
                w_sep(w, sep_of(e->tag));
                if (e->tag == HT_PRE)
                    w->pre++;
                enter = e->first != 0;
                if (!enter && e->tag == HT_PRE)
                    w->pre--;
            }
        }
        if (enter) {
            x = e->first;
            continue;
        }
        /* leave: move to the next sibling, closing finished parents */
        while (x != root && !n[x].next) {
            x = n[x].parent;
            w_sep(w, sep_of(n[x].tag));
            if (n[x].tag == HT_PRE && w->pre)
                w->pre--;
        }
        if (x == root || w->rc)
            break;
        x = n[x].next;
    }
}

/* Write every node marked AUX_KEEP in document order. */
static void write_kept(struct html_tree *t, struct writer *w, uint32_t top_chars)
{
    struct html_node *n = t->n;
    uint32_t x = n[0].first;
    while (x) {
        struct html_node *e = &n[x];
        if (e->aux & AUX_KEEP) {
            write_subtree(t, x, w, 1, top_chars);
            w_sep(w, SEP_PARA);
        } else if ((e->aux & AUX_PATH) && e->first) {
            x = e->first;
            continue;
        }
        while (x && !n[x].next)
            x = n[x].parent;
        if (!x)
            break;
        x = n[x].next;
    }
}

static void trim_end(struct sl_buf *b)
{
    while (b->len && is_space((unsigned char)b->data[b->len - 1]))
        b->len--;
    if (b->data)
        b->data[b->len] = 0;
}

static uint32_t find_body(const struct html_tree *t)
{
    for (size_t i = 1; i < t->count; i++)
        if (t->n[i].tag == HT_BODY)
            return (uint32_t)i;
    return 0;
}

int html_extract(const char *html, size_t len, const char *charset_hint, struct html_doc *out)
{
    return html_extract_max(html, len, charset_hint, HTML_MAX_INPUT, out);
}

int html_extract_max(const char *html, size_t len, const char *charset_hint, size_t max_input,
                     struct html_doc *out)
{
    struct sl_buf conv = SL_BUF_INIT, stripped = SL_BUF_INIT;
    struct html_tree t;
    int rc = 0;
    sl_buf_reset(&out->text);
    sl_buf_reset(&out->title);
    sl_buf_reset(&out->lang);
    if (len > max_input)
        return sl_err_set(SL_ERR_TOOBIG, "html page of %zu bytes is over the %zu-byte cap", len,
                          max_input);
    html_tree_init(&t);

    /* 1. charset -> UTF-8 */
    char cs[32] = "utf-8";
    size_t bom = 0;
    char sniffed[32];
    int have = html_charset_sniff(html, len, sniffed, &bom);
    if (bom)
        memcpy(cs, sniffed, sizeof(cs));
    else if (charset_hint && html_charset_canon(charset_hint, strlen(charset_hint), cs) == 0)
        ;
    else if (have)
        memcpy(cs, sniffed, sizeof(cs));
    const char *src = html + bom;
    size_t n = len - bom;
    if (strcmp(cs, "utf-8") != 0 || sl_utf8_validate(src, n) != n) {
        sl_buf_init(&conv, 4 * n + 4096);
        if ((rc = html_to_utf8(src, n, cs, &conv, NULL)) != 0)
            goto out;
        src = conv.data ? conv.data : "";
        n = conv.len;
    }
    /* 2. strip comments and raw elements */
    sl_buf_init(&stripped, 0);
    if ((rc = sl_buf_reserve(&stripped, n / 2 + 64)) != 0)
        goto out;
    if ((rc = html_rewrite(src, n, &stripped)) != 0)
        goto out;
    sl_buf_release(&conv);
    /* 3. parse */
    if ((rc = html_tree_build(&t, stripped.data, stripped.len)) != 0)
        goto out;
    sl_buf_release(&stripped);
    sl_buf_append(&out->title, t.title.data ? t.title.data : "", t.title.len);
    sl_buf_puts(&out->lang, t.lang);
    if (t.count <= 1)
        goto out;
    /* 4. choose and write */
    compute_stats(&t);
    float top_score = 0;
    uint32_t top = choose_top(&t, &top_score);
    struct writer w = { &out->text, SEP_NONE, 0, 0, 0 };
    if (top) {
        top = merge_split(&t, top, top_score);
        mark_content(&t, top, top_score);
        write_kept(&t, &w, t.n[top].chars);
    }
    trim_end(&out->text);
    if (out->text.len < 50) {
        /* nothing article-like: fall back to the cleaned body */
        uint32_t body = find_body(&t);
        sl_buf_reset(&out->text);
        w = (struct writer){ &out->text, SEP_NONE, 0, 0, 0 };
        write_subtree(&t, body, &w, 1, t.n[body].chars);
        trim_end(&out->text);
    }
    if (w.rc == SL_ERR_TOOBIG)
        trim_end(&out->text); /* keep what fits */
out:
    sl_buf_release(&conv);
    sl_buf_release(&stripped);
    html_tree_release(&t);
    return rc;
}
