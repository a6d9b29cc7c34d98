/* wiki_extract_file: a MediaWiki XML export streamed through xmlTextReader, one
 * document per page (latest revision), main namespace, no redirects. */
#include "curate/extract/wiki.h"

#include "core/buf.h"
#include "core/counters.h"
#include "core/doc.h"
#include "core/err.h"
#include "core/inputs.h"
#include "core/stream.h"
#include "curate/extract/libxml.h"
#include "curate/extract/wikitext.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#define MAX_NS 128

struct ns_name {
    int key;
    char name[64];
};

struct wiki_state {
    const char *path;
    const struct sl_input *file; /* NULL: path */
    struct sl_reader *r;
    int read_err; /* an sl_err from the stream, with its message already set */
    char xml_err[300];
    int xml_line;
    /* siteinfo */
    struct sl_buf base, dbname, nsname;
    int ns_key;
    struct ns_name ns[MAX_NS];
    size_t nns;
    char lang[40];
    struct sl_buf url_prefix;
    /* page */
    struct sl_buf title, nsval, id, rev_text, rev_ts, page_text, page_ts;
    int redirect, have_id, have_rev, rev_too_large, page_too_large;
    /* where pages end in the decompressed bytes (UTF-8 and other ASCII-compatible
     * encodings), to salvage the complete pages before a cut */
    uint64_t delivered;       /* decompressed bytes handed to libxml */
    uint64_t last_page_end;   /* offset just after the last "</page>" seen (0: none) */
    uint64_t last_page_start; /* offset of the last "<page>" seen */
    char carry[8];            /* the last bytes of the previous chunk */
    size_t carry_n;
    char last[96]; /* the last bytes of the stream */
    size_t last_n;
    int eof; /* the stream ended (libxml asked past its end) */
    /* the salvage pass: only the first `limit` bytes, then `tail` (the root's end tag) */
    uint64_t limit;
    char tail[80];
    size_t tail_len, tail_pos;
    uint64_t pages_seen, skip_pages;
    char root[64];
};

/* Record where "<page>" and "</page>" occur in b (n bytes at offset s->delivered),
 * including occurrences that straddle the previous chunk. */
static void scan_pages(struct wiki_state *s, const char *b, size_t n)
{
    char tmp[16];
    size_t k = s->carry_n, m = n < 7 ? n : 7;
    memcpy(tmp, s->carry, k);
    memcpy(tmp + k, b, m);
    for (size_t i = 0; i < k; i++) {
        if (i + 7 <= k + m && i + 7 > k && !memcmp(tmp + i, "</page>", 7))
            s->last_page_end = s->delivered - k + i + 7;
        if (i + 6 <= k + m && i + 6 > k && !memcmp(tmp + i, "<page>", 6))
            s->last_page_start = s->delivered - k + i;
    }
    for (const char *q = b; (q = memmem(q, (size_t)(b + n - q), "</page>", 7)) != NULL; q += 7)
        s->last_page_end = s->delivered + (uint64_t)(q - b) + 7;
    for (const char *q = b; (q = memmem(q, (size_t)(b + n - q), "<page>", 6)) != NULL; q += 6)
        s->last_page_start = s->delivered + (uint64_t)(q - b);
    if (n >= 7) {
        memcpy(s->carry, b + n - 7, 7);
        s->carry_n = 7;
    } else {
        size_t keep = k + n > 7 ? 7 - n : k;
        memmove(s->carry, s->carry + k - keep, keep);
        memcpy(s->carry + keep, b, n);
        s->carry_n = keep + n;
    }
}

static int read_cb(void *ctx, char *buf, int len)
{
    struct wiki_state *s = ctx;
    size_t want = (size_t)len;
    if (s->limit) {
        if (s->delivered >= s->limit) {
            size_t k = s->tail_len - s->tail_pos < want ? s->tail_len - s->tail_pos : want;
            memcpy(buf, s->tail + s->tail_pos, k);
            s->tail_pos += k;
            return (int)k;
        }
        if (want > s->limit - s->delivered)
            want = (size_t)(s->limit - s->delivered);
    }
    ssize_t n = sl_reader_read(s->r, buf, want);
    if (n < 0) {
        s->read_err = (int)n;
        return -1;
    }
    if (n == 0)
        s->eof = 1;
    if (!s->limit) {
        scan_pages(s, buf, (size_t)n);
        size_t k = (size_t)n < sizeof(s->last) ? (size_t)n : sizeof(s->last);
        if (s->last_n + k > sizeof(s->last)) {
            size_t drop = s->last_n + k - sizeof(s->last);
            memmove(s->last, s->last + drop, s->last_n - drop);
            s->last_n -= drop;
        }
        memcpy(s->last + s->last_n, buf + n - k, k);
        s->last_n += k;
    }
    s->delivered += (uint64_t)n;
    return (int)n;
}

static int close_cb(void *ctx)
{
    (void)ctx;
    return 0;
}

static void on_xml_error(void *ctx, xmlErrorPtr e)
{
    struct wiki_state *s = ctx;
    if (!e || e->level < XML_ERR_ERROR || s->xml_err[0])
        return;
    snprintf(s->xml_err, sizeof(s->xml_err), "%s", e->message ? e->message : "xml error");
    size_t n = strlen(s->xml_err);
    while (n && (s->xml_err[n - 1] == '\n' || s->xml_err[n - 1] == ' '))
        s->xml_err[--n] = 0;
    s->xml_line = e->line;
}

static void silent_generic(void *ctx, const char *msg, ...)
{
    (void)ctx;
    (void)msg;
}

static void count(struct sl_counters *c, const char *name)
{
    if (c)
        sl_counters_add(c, name, 1);
}

/* A language code: 2-3 lowercase letters, then optional "-part"s; or "simple". */
static void site_lang_guess(struct wiki_state *s);

static int lang_code(const char *l)
{
    size_t i = 0;
    if (!strcmp(l, "simple"))
        return 1;
    while (l[i] >= 'a' && l[i] <= 'z')
        i++;
    if (i < 2 || i > 3)
        return 0;
    while (l[i] == '-') {
        size_t j = ++i;
        while ((l[i] >= 'a' && l[i] <= 'z') || (l[i] >= '0' && l[i] <= '9'))
            i++;
        if (i == j)
            return 0;
    }
    return l[i] == 0;
}

/* "enwiki" -> "en", "zh_yuewiki" -> "zh-yue"; else the host's first label of <base>
 * (*.wikipedia.org only). Names that are not language codes ("commonswiki") give none. */
static void site_lang(struct wiki_state *s)
{
    s->lang[0] = 0;
    site_lang_guess(s);
    if (s->lang[0] && !lang_code(s->lang))
        s->lang[0] = 0;
}

static void site_lang_guess(struct wiki_state *s)
{
    const char *db = s->dbname.data ? s->dbname.data : "";
    size_t n = strlen(db);
    if (n > 4 && !strcmp(db + n - 4, "wiki") && n - 4 < sizeof(s->lang)) {
        for (size_t i = 0; i < n - 4; i++)
            s->lang[i] = db[i] == '_' ? '-' : db[i];
        s->lang[n - 4] = 0;
        return;
    }
    const char *b = s->base.data ? s->base.data : "";
    const char *h = strstr(b, "://");
    if (h) {
        h += 3;
        const char *dot = strchr(h, '.');
        if (dot && strstr(dot, ".wikipedia.org") == dot && (size_t)(dot - h) < sizeof(s->lang)) {
            memcpy(s->lang, h, (size_t)(dot - h));
            s->lang[dot - h] = 0;
        }
    }
}

/* Article path prefix from <base> ("https://en.wikipedia.org/wiki/Main_Page" ->
 * "https://en.wikipedia.org/wiki/"); Wikipedia sites are given https. */
static void site_url(struct wiki_state *s)
{
    const char *b = s->base.data;
    sl_buf_reset(&s->url_prefix);
    if (!b)
        return;
    const char *w = strstr(b, "/wiki/");
    if (!w)
        return;
    if (!strncmp(b, "http://", 7) && strstr(b, ".wikipedia.org/")) {
        sl_buf_puts(&s->url_prefix, "https://");
        b += 7;
    }
    sl_buf_append(&s->url_prefix, b, (size_t)(w + 6 - b));
}

static void url_title(struct sl_buf *o, const char *t, size_t n)
{
    static const char keep[] = "-._~!$&'()*+,;=:@/";
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)t[i];
        if (c == ' ')
            sl_buf_putc(o, '_');
        else if (isalnum(c) || (c < 0x80 && c && strchr(keep, c)))
            sl_buf_putc(o, (char)c);
        else
            sl_buf_printf(o, "%%%02X", c);
    }
}

/* The namespace of a page without <ns> (schema 0.3): from its title prefix. */
static int title_ns(const struct wiki_state *s, const char *title)
{
    const char *c = strchr(title, ':');
    if (!c)
        return 0;
    size_t n = (size_t)(c - title);
    for (size_t i = 0; i < s->nns; i++)
        if (s->ns[i].key != 0 && strlen(s->ns[i].name) == n &&
            !strncasecmp(s->ns[i].name, title, n))
            return s->ns[i].key;
    return 0;
}

static int is_redirect_text(const char *t)
{
    while (*t && isspace((unsigned char)*t))
        t++;
    return !strncasecmp(t, "#redirect", 9);
}

static void swap_buf(struct sl_buf *a, struct sl_buf *b)
{
    struct sl_buf t = *a;
    *a = *b;
    *b = t;
}

static int finish_page(struct wiki_state *s, const struct wiki_opts *o,
                       int (*emit)(void *, struct sl_doc *), void *ctx, struct sl_counters *c,
                       struct sl_doc *doc, struct sl_buf *text)
{
    const char *title = s->title.data ? s->title.data : "";
    if (s->pages_seen++ < s->skip_pages)
        return 0; /* the salvage pass: handled by the first pass */
    count(c, "wiki_pages");
    int ns = s->nsval.len ? atoi(s->nsval.data) : title_ns(s, title);
    if (ns != 0 && !o->all_namespaces) {
        count(c, "wiki_other_namespace");
        return 0;
    }
    if (s->page_too_large) {
        count(c, "wiki_too_large");
        return 0;
    }
    const char *wt = s->page_text.data ? s->page_text.data : "";
    if ((s->redirect || is_redirect_text(wt)) && !o->keep_redirects) {
        count(c, "wiki_redirects");
        return 0;
    }
    sl_buf_reset(text);
    int rc = wikitext_to_text(wt, s->page_text.len, text);
    if (rc && rc != SL_ERR_TOOBIG)
        return rc;
    if (text->len == 0) {
        count(c, "wiki_empty");
        return 0;
    }
    sl_doc_reset(doc);
    const char *id = s->id.data ? s->id.data : "";
    if ((rc = sl_doc_set_str(doc, "id", id, s->id.len)) != 0 ||
        (rc = sl_doc_set_str(doc, "title", title, s->title.len)) != 0 ||
        (rc = sl_doc_set_text(doc, text->data, text->len)) != 0)
        return rc;
    if (s->url_prefix.len) {
        struct sl_buf u = SL_BUF_INIT;
        sl_buf_append(&u, s->url_prefix.data, s->url_prefix.len);
        url_title(&u, title, s->title.len);
        rc = sl_doc_set_str(doc, "url", u.data, u.len);
        sl_buf_release(&u);
        if (rc)
            return rc;
    }
    if ((rc = sl_doc_set_str(doc, "source", "wikipedia", 9)) != 0)
        return rc;
    const char *lang = s->lang[0] ? s->lang : o->lang;
    if (lang && *lang && (rc = sl_doc_set_str(doc, "lang", lang, strlen(lang))) != 0)
        return rc;
    count(c, "wiki_documents");
    return emit(ctx, doc);
}

static void trim_buf(struct sl_buf *b)
{
    size_t i = 0;
    while (i < b->len && isspace((unsigned char)b->data[i]))
        i++;
    sl_buf_consume(b, i);
    while (b->len && isspace((unsigned char)b->data[b->len - 1]))
        b->len--;
    if (b->data)
        b->data[b->len] = 0;
}

/* One pass of the XML reader over s->r: pages to emit. 0, or emit's error; *xml_r gets
 * the last xmlTextReaderRead result (<0: the XML or the stream failed). */
static int parse_pass(struct wiki_state *s, xmlTextReaderPtr xr, const struct wiki_opts *o,
                      size_t cap, int (*emit)(void *, struct sl_doc *), void *ctx,
                      struct sl_counters *c, struct sl_doc *doc, struct sl_buf *text, int *xml_r)
{
    int rc = 0;
    struct sl_buf *field = NULL;
    size_t field_cap = 0;
    int in_page = 0, in_site = 0, in_rev = 0, page_depth = 0;
    int r;
    while ((r = sl_xml.TextReaderRead(xr)) == 1) {
        int type = sl_xml.TextReaderNodeType(xr);
        int depth = sl_xml.TextReaderDepth(xr);
        if (type == XML_READER_TYPE_ELEMENT) {
            const char *name = (const char *)sl_xml.TextReaderConstLocalName(xr);
            int empty = sl_xml.TextReaderIsEmptyElement(xr);
            field = NULL;
            field_cap = 4096;
            if (!name)
                continue;
            if (depth == 0 && !s->root[0])
                snprintf(s->root, sizeof(s->root), "%s", name);
            if (!in_page) {
                if (!strcmp(name, "page")) {
                    in_page = 1;
                    page_depth = depth;
                    sl_buf_reset(&s->title);
                    sl_buf_reset(&s->nsval);
                    sl_buf_reset(&s->id);
                    sl_buf_reset(&s->page_text);
                    sl_buf_reset(&s->page_ts);
                    s->redirect = s->have_id = s->have_rev = s->page_too_large = 0;
                } else if (!strcmp(name, "siteinfo")) {
                    in_site = 1;
                } else if (in_site && !strcmp(name, "base")) {
                    sl_buf_reset(&s->base);
                    field = &s->base;
                } else if (in_site && !strcmp(name, "dbname")) {
                    sl_buf_reset(&s->dbname);
                    field = &s->dbname;
                } else if (in_site && !strcmp(name, "namespace")) {
                    xmlChar *k = sl_xml.TextReaderGetAttribute(xr, (const xmlChar *)"key");
                    s->ns_key = k ? atoi((const char *)k) : 0;
                    (*sl_xml.Free)(k);
                    sl_buf_reset(&s->nsname);
                    field = &s->nsname;
                    field_cap = 63;
                }
            } else {
                int rel = depth - page_depth;
                if (rel == 1) {
                    if (!strcmp(name, "title")) {
                        sl_buf_reset(&s->title);
                        field = &s->title;
                    } else if (!strcmp(name, "ns")) {
                        sl_buf_reset(&s->nsval);
                        field = &s->nsval;
                        field_cap = 32;
                    } else if (!strcmp(name, "id") && !s->have_id) {
                        s->have_id = 1;
                        field = &s->id;
                        field_cap = 32;
                    } else if (!strcmp(name, "redirect")) {
                        s->redirect = 1;
                    } else if (!strcmp(name, "revision")) {
                        in_rev = 1;
                        sl_buf_reset(&s->rev_text);
                        sl_buf_reset(&s->rev_ts);
                        s->rev_too_large = 0;
                    }
                } else if (rel == 2 && in_rev) {
                    if (!strcmp(name, "text")) {
                        sl_buf_reset(&s->rev_text);
                        field = &s->rev_text;
                        field_cap = cap;
                    } else if (!strcmp(name, "timestamp")) {
                        sl_buf_reset(&s->rev_ts);
                        field = &s->rev_ts;
                        field_cap = 64;
                    }
                }
            }
            if (empty)
                field = NULL;
        } else if (type == XML_READER_TYPE_TEXT || type == XML_READER_TYPE_CDATA ||
                   type == XML_READER_TYPE_SIGNIFICANT_WHITESPACE) {
            if (!field)
                continue;
            const char *v = (const char *)sl_xml.TextReaderConstValue(xr);
            size_t vn = v ? strlen(v) : 0;
            if (field->len + vn > field_cap) {
                if (field == &s->rev_text)
                    s->rev_too_large = 1;
                continue;
            }
            sl_buf_append(field, v, vn);
        } else if (type == XML_READER_TYPE_END_ELEMENT) {
            const char *name = (const char *)sl_xml.TextReaderConstLocalName(xr);
            field = NULL;
            if (!name)
                continue;
            if (in_site && !in_page) {
                if (!strcmp(name, "namespace") && s->nns < MAX_NS) {
                    trim_buf(&s->nsname);
                    s->ns[s->nns].key = s->ns_key;
                    snprintf(s->ns[s->nns].name, sizeof(s->ns[0].name), "%s",
                             s->nsname.data ? s->nsname.data : "");
                    s->nns++;
                } else if (!strcmp(name, "siteinfo")) {
                    in_site = 0;
                    trim_buf(&s->base);
                    trim_buf(&s->dbname);
                    site_lang(s);
                    site_url(s);
                }
                continue;
            }
            if (!in_page)
                continue;
            int rel = depth - page_depth;
            if (rel == 1 && !strcmp(name, "revision")) {
                in_rev = 0;
                /* keep the latest revision: ISO 8601 timestamps compare as strings;
                 * without timestamps the later one in the file wins */
                const char *a = s->rev_ts.data ? s->rev_ts.data : "";
                const char *b = s->page_ts.data ? s->page_ts.data : "";
                if (!s->have_rev || strcmp(a, b) >= 0) {
                    swap_buf(&s->page_text, &s->rev_text);
                    swap_buf(&s->page_ts, &s->rev_ts);
                    s->page_too_large = s->rev_too_large;
                    s->have_rev = 1;
                }
            } else if (rel == 0 && !strcmp(name, "page")) {
                in_page = 0;
                trim_buf(&s->title);
                trim_buf(&s->id);
                trim_buf(&s->nsval);
                rc = finish_page(s, o, emit, ctx, c, doc, text);
                if (rc)
                    break;
            }
        }
    }
    *xml_r = r;
    return rc;
}

/* Open s->r on path and an XML reader over it (NULL with the error in *rc). */
static xmlTextReaderPtr open_xml(struct wiki_state *s, const char *path, int *rc)
{
    *rc = s->file ? sl_input_reader(&s->r, s->file, NULL) : sl_reader_open(&s->r, path, NULL);
    if (*rc)
        return NULL;
    xmlTextReaderPtr xr = sl_xml.ReaderForIO(read_cb, close_cb, s, path, NULL,
                                             XML_PARSE_NONET | XML_PARSE_HUGE | XML_PARSE_COMPACT |
                                                 XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
    if (!xr) {
        *rc = s->read_err ? s->read_err
                          : sl_err_set(SL_ERR_FORMAT, "cannot read '%s': not an XML export", path);
        return NULL;
    }
    sl_xml.TextReaderSetStructuredErrorHandler(xr, on_xml_error, s);
    return xr;
}

/* Did the stream end right after the root element's end tag (whitespace aside)? */
static int ends_with_root_end(const struct wiki_state *s)
{
    char tag[80];
    int tl = snprintf(tag, sizeof(tag), "</%s>", s->root);
    size_t n = s->last_n;
    while (n && (s->last[n - 1] == ' ' || s->last[n - 1] == '\n' || s->last[n - 1] == '\r' ||
                 s->last[n - 1] == '\t'))
        n--;
    return s->root[0] && tl > 0 && (size_t)tl <= n &&
           !memcmp(s->last + n - (size_t)tl, tag, (size_t)tl);
}

int wiki_extract_file(const char *path, const struct wiki_opts *o,
                      int (*emit)(void *ctx, struct sl_doc *doc), void *ctx, struct sl_counters *c)
{
    static const struct wiki_opts defaults = { 0, 0, 0, NULL, 0, NULL };
    struct wiki_state s;
    struct sl_doc doc;
    struct sl_buf text;
    xmlTextReaderPtr xr = NULL;
    int rc = sl_libxml_load(), r = 0;
    if (rc)
        return rc;
    if (!o)
        o = &defaults;
    size_t cap = o->max_page_bytes ? o->max_page_bytes : (size_t)64 << 20;
    memset(&s, 0, sizeof(s));
    s.path = path;
    s.file = o->file;
    sl_buf_init(&text, cap * 2 + 4096);
    sl_doc_init(&doc);
    xmlGenericErrorFunc old_generic = *sl_xml.GenericError_();
    void *old_generic_ctx = *sl_xml.GenericErrorContext_();
    sl_xml.SetGenericErrorFunc(NULL, silent_generic);
    xr = open_xml(&s, path, &rc);
    if (!xr)
        goto out;
    rc = parse_pass(&s, xr, o, cap, emit, ctx, c, &doc, &text, &r);
    if (rc || r >= 0)
        goto out;
    int cut = s.eof && !ends_with_root_end(&s);
    if (s.read_err)
        rc = s.read_err; /* the stream's message names the file and offset */
    else if (cut)
        rc = sl_err_set(SL_ERR_CORRUPT,
                        "'%s' is cut short: the XML ends at decompressed byte %llu (line %d) "
                        "inside %s, before the end tag of <%s>; the last complete page ends at "
                        "byte %llu",
                        path, (unsigned long long)s.delivered, s.xml_line,
                        s.last_page_start > s.last_page_end ? "a page" : "the export",
                        s.root[0] ? s.root : "mediawiki", (unsigned long long)s.last_page_end);
    else
        rc = sl_err_set(SL_ERR_FORMAT, "cannot parse '%s': xml error at line %d: %s", path,
                        s.xml_line, s.xml_err[0] ? s.xml_err : "malformed xml");
    if ((cut || s.read_err) && s.last_page_start > s.last_page_end)
        count(c, "wiki_incomplete"); /* the page the cut went through */
    /* (a FIFO cannot be read again) */
    int rereadable = !o->file || S_ISREG((mode_t)o->file->mode);
    if (o->salvage && rereadable && (cut || s.read_err) && s.last_page_end && s.root[0]) {
        /* the XML reader parses ahead and drops what it holds at an error: read the file
         * again up to the end of the last complete page, close the root there, and emit
         * the pages the first pass did not reach */
        char *saved = strdup(sl_err_msg());
        int rc0 = rc;
        sl_xml.FreeTextReader(xr);
        sl_reader_close(s.r);
        s.r = NULL;
        s.limit = s.last_page_end;
        s.tail_len = (size_t)snprintf(s.tail, sizeof(s.tail), "\n</%s>\n", s.root);
        s.skip_pages = s.pages_seen;
        s.pages_seen = 0;
        s.delivered = 0;
        s.nns = 0;
        s.eof = s.read_err = 0;
        s.xml_err[0] = 0;
        xr = open_xml(&s, path, &rc);
        if (xr)
            rc = parse_pass(&s, xr, o, cap, emit, ctx, c, &doc, &text, &r);
        if (!rc)
            rc = sl_err_set(rc0, "%s", saved ? saved : "damaged export");
        free(saved);
    }
out:
    sl_xml.SetGenericErrorFunc(old_generic_ctx, old_generic);
    if (c)
        sl_counters_add(c, "bytes_in", s.limit ? s.limit : s.delivered);
    if (xr)
        sl_xml.FreeTextReader(xr);
    if (s.r)
        sl_reader_close(s.r);
    sl_doc_release(&doc);
    sl_buf_release(&text);
    struct sl_buf *bufs[] = { &s.base, &s.dbname,   &s.nsname, &s.url_prefix, &s.title,  &s.nsval,
                              &s.id,   &s.rev_text, &s.rev_ts, &s.page_text,  &s.page_ts };
    for (size_t i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++)
        sl_buf_release(bufs[i]);
    return rc;
}
