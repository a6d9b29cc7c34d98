/* HTML page -> text: the main-text extractor when built in, else a bounded tag stripper. */
#include "curate/extract/page.h"

#include "core/err.h"
#include "core/utf8.h"

#include <string.h>
#include <strings.h>

#ifdef SL_HAVE_HTML_EXTRACT
#include "curate/extract/html.h"
#endif

void page_text_init(struct page_text *p, size_t max)
{
    sl_buf_init(&p->text, max);
    sl_buf_init(&p->title, max ? (max < 4096 ? max : 4096) : 4096);
    sl_buf_init(&p->lang, 64);
}

void page_text_release(struct page_text *p)
{
    sl_buf_release(&p->text);
    sl_buf_release(&p->title);
    sl_buf_release(&p->lang);
}

#ifdef SL_HAVE_HTML_EXTRACT

const char *page_text_engine(void)
{
    return "main-text";
}

static int copy_capped(struct sl_buf *dst, const struct sl_buf *src)
{
    sl_buf_reset(dst);
    size_t n = src->len;
    if (dst->max && n > dst->max)
        n = dst->max;
    return n ? sl_buf_append(dst, src->data, n) : 0;
}

int page_text_extract(struct page_text *p, const char *html, size_t n)
{
    struct html_doc d;
    html_doc_init(&d);
    /* the bytes are UTF-8 already (charset.h did the conversion): say so, or a <meta>
     * charset in the page would be applied a second time */
    int rc = html_extract(html, n, "utf-8", &d);
    if (!rc)
        rc = copy_capped(&p->text, &d.text);
    if (!rc)
        rc = copy_capped(&p->title, &d.title);
    if (!rc)
        rc = copy_capped(&p->lang, &d.lang);
    html_doc_release(&d);
    return rc;
}

#else

const char *page_text_engine(void)
{
    return "tag-stripper";
}

static const char *const block_tags[] = {
    "p", "div", "br", "li", "ul", "ol", "h1", "h2", "h3", "h4", "h5", "h6", "tr", "table",
    "section", "article", "header", "footer", "blockquote", "pre", "dd", "dt", "hr", "title",
    "td", "th", "nav", "aside", "main", "form", "dl", "figure", "figcaption", NULL,
};

static int tag_is(const char *name, size_t n, const char *const *list)
{
    for (size_t i = 0; list[i]; i++)
        if (strlen(list[i]) == n && !strncasecmp(list[i], name, n))
            return 1;
    return 0;
}

/* Append one entity's text at p (p[0] == '&'); returns bytes consumed (0: not one). */
static size_t entity(const char *p, const char *end, struct sl_buf *out)
{
    static const struct {
        const char *name;
        const char *text;
    } named[] = { { "amp;", "&" }, { "lt;", "<" }, { "gt;", ">" }, { "quot;", "\"" },
                  { "apos;", "'" }, { "nbsp;", " " }, { "#39;", "'" }, { "mdash;", "\xe2\x80\x94" },
                  { "ndash;", "\xe2\x80\x93" }, { "hellip;", "\xe2\x80\xa6" },
                  { "copy;", "\xc2\xa9" } };
    size_t left = (size_t)(end - p) - 1;
    for (size_t i = 0; i < sizeof(named) / sizeof(named[0]); i++) {
        size_t l = strlen(named[i].name);
        if (left >= l && !memcmp(p + 1, named[i].name, l)) {
            sl_buf_puts(out, named[i].text);
            return l + 1;
        }
    }
    if (left >= 3 && p[1] == '#') {
        const char *q = p + 2;
        int hex = (*q == 'x' || *q == 'X');
        if (hex)
            q++;
        unsigned long cp = 0;
        int digits = 0;
        while (q < end && digits < 8) {
            int c = (unsigned char)*q, v;
            if (c >= '0' && c <= '9')
                v = c - '0';
            else if (hex && (c | 32) >= 'a' && (c | 32) <= 'f')
                v = (c | 32) - 'a' + 10;
            else
                break;
            cp = cp * (hex ? 16 : 10) + (unsigned long)v;
            digits++;
            q++;
        }
        if (digits && q < end && *q == ';') {
            char u[4];
            size_t l = sl_utf8_encode(cp && cp <= 0x10ffff ? (uint32_t)cp : 0xfffd, u);
            if (!l)
                l = sl_utf8_encode(0xfffd, u);
            sl_buf_append(out, u, l);
            return (size_t)(q + 1 - p);
        }
    }
    return 0;
}

/* Append text, collapsing runs of spaces; `nl` requests a line break before more text. */
struct strip_state {
    struct sl_buf *out;
    int space, nl;
};

static int put_text(struct strip_state *s, const char *p, size_t n)
{
    int rc = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        char c = p[i];
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f') {
            s->space = 1;
            continue;
        }
        if (s->out->len) {
            if (s->nl)
                rc = sl_buf_putc(s->out, '\n');
            else if (s->space)
                rc = sl_buf_putc(s->out, ' ');
        }
        s->nl = s->space = 0;
        if (!rc && c == '&') {
            size_t used = entity(p + i, p + n, s->out);
            if (used) {
                i += used - 1;
                continue;
            }
        }
        if (!rc)
            rc = sl_buf_putc(s->out, c);
    }
    return rc;
}

int page_text_extract(struct page_text *pt, const char *html, size_t n)
{
    sl_buf_reset(&pt->text);
    sl_buf_reset(&pt->title);
    sl_buf_reset(&pt->lang);
    struct strip_state s = { &pt->text, 0, 0 };
    const char *p = html, *end = html + n;
    const char *skip_until = NULL; /* inside script/style/... : the closing tag name */
    int in_title = 0;
    int rc = 0;
    while (p < end && !rc) {
        const char *lt = memchr(p, '<', (size_t)(end - p));
        const char *stop = lt ? lt : end;
        if (!skip_until) {
            if (in_title) {
                struct strip_state ts = { &pt->title, 0, 0 };
                put_text(&ts, p, (size_t)(stop - p));
            } else {
                rc = put_text(&s, p, (size_t)(stop - p));
            }
        }
        if (!lt)
            break;
        p = lt + 1;
        if (p + 3 <= end && !memcmp(p, "!--", 3)) {
            const char *e = memmem(p, (size_t)(end - p), "-->", 3);
            p = e ? e + 3 : end;
            continue;
        }
        int closing = p < end && *p == '/';
        const char *name = p + closing;
        const char *q = name;
        while (q < end && (((*q | 32) >= 'a' && (*q | 32) <= 'z') || (*q >= '0' && *q <= '9')))
            q++;
        size_t nl = (size_t)(q - name);
        const char *gt = memchr(q, '>', (size_t)(end - q));
        const char *tag_end = gt ? gt + 1 : end;
        if (skip_until) {
            if (closing && strlen(skip_until) == nl && !strncasecmp(name, skip_until, nl))
                skip_until = NULL;
            p = tag_end;
            continue;
        }
        if (!closing && nl) {
            static const char *const skipped[] = { "script", "style", "noscript", "template",
                                                   "svg", "iframe", NULL };
            for (size_t i = 0; skipped[i]; i++)
                if (strlen(skipped[i]) == nl && !strncasecmp(name, skipped[i], nl))
                    skip_until = skipped[i];
            if (nl == 4 && !strncasecmp(name, "html", 4) && pt->lang.len == 0) {
                const char *l = memmem(q, (size_t)(tag_end - q), "lang=", 5);
                if (l) {
                    l += 5;
                    if (l < tag_end && (*l == '"' || *l == '\''))
                        l++;
                    const char *le = l;
                    while (le < tag_end && le - l < 32 &&
                           (((*le | 32) >= 'a' && (*le | 32) <= 'z') || *le == '-' || *le == '_'))
                        le++;
                    sl_buf_append(&pt->lang, l, (size_t)(le - l));
                }
            }
        }
        if (nl == 5 && !strncasecmp(name, "title", 5))
            in_title = !closing;
        if (nl && tag_is(name, nl, block_tags))
            s.nl = 1;
        p = tag_end;
    }
    return rc;
}

#endif
