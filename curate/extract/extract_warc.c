/* --format warc|wet: WARC records -> documents. Responses (and resource records) holding
 * HTML go through HTTP parsing, de-chunking, content decoding, charset detection and
 * conversion to UTF-8, then main-text extraction; WET conversion records are text
 * already. Everything else is counted by type or by the reason it was skipped. */
#include "curate/extract/extract.h"

#include "core/buf.h"
#include "core/counters.h"
#include "core/doc.h"
#include "core/err.h"
#include "core/jsonl.h"
#include "core/utf8.h"
#include "curate/extract/charset.h"
#include "curate/extract/http.h"
#include "curate/extract/page.h"
#include "curate/extract/warc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

const char *extract_lang_639_1(const char *code)
{
    static const char *const map[][2] = {
        { "eng", "en" }, { "deu", "de" }, { "ger", "de" }, { "fra", "fr" }, { "fre", "fr" },
        { "spa", "es" }, { "ita", "it" }, { "por", "pt" }, { "nld", "nl" }, { "dut", "nl" },
        { "rus", "ru" }, { "pol", "pl" }, { "ces", "cs" }, { "cze", "cs" }, { "swe", "sv" },
        { "dan", "da" }, { "nor", "no" }, { "nob", "nb" }, { "fin", "fi" }, { "hun", "hu" },
        { "ron", "ro" }, { "rum", "ro" }, { "ell", "el" }, { "gre", "el" }, { "tur", "tr" },
        { "ukr", "uk" }, { "bul", "bg" }, { "hrv", "hr" }, { "srp", "sr" }, { "slk", "sk" },
        { "slo", "sk" }, { "slv", "sl" }, { "lit", "lt" }, { "lav", "lv" }, { "est", "et" },
        { "cat", "ca" }, { "eus", "eu" }, { "baq", "eu" }, { "glg", "gl" }, { "arg", "an" },
        { "zho", "zh" }, { "chi", "zh" }, { "jpn", "ja" }, { "kor", "ko" }, { "vie", "vi" },
        { "tha", "th" }, { "ind", "id" }, { "msa", "ms" }, { "may", "ms" }, { "hin", "hi" },
        { "ben", "bn" }, { "urd", "ur" }, { "ara", "ar" }, { "fas", "fa" }, { "per", "fa" },
        { "heb", "he" }, { "tam", "ta" }, { "tel", "te" }, { "mar", "mr" }, { "swa", "sw" },
        { "afr", "af" }, { "isl", "is" }, { "ice", "is" }, { "gle", "ga" }, { "cym", "cy" },
        { "wel", "cy" }, { "lat", "la" }, { "epo", "eo" }, { "kat", "ka" }, { "geo", "ka" },
        { "hye", "hy" }, { "arm", "hy" }, { "aze", "az" }, { "kaz", "kk" }, { "uzb", "uz" },
        { "mkd", "mk" }, { "mac", "mk" }, { "sqi", "sq" }, { "alb", "sq" }, { "bel", "be" },
        { "tgl", "tl" }, { "fil", "tl" },
    };
    for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
        if (!strcmp(map[i][0], code))
            return map[i][1];
    return code;
}

/* Per-file state shared by the record handlers. */
struct warc_job {
    const struct extract_input *in;
    const struct extract_opts *o;
    extract_emit_fn emit;
    void *ctx;
    struct sl_counters *c;
    int wet;
    struct sl_buf block, body, decoded, utf8;
    struct page_text page;
    struct charset_conv cs;
    struct sl_doc doc;
    char *stem;
    char charset[40]; /* a resource record's charset parameter */
};

/* The reader's damage reports: garbage between records is no record (bad_records); a
 * header that does not parse or is cut is one record, counted in and skipped; a returned
 * record whose block is cut was counted already (its type's skip, or skipped_incomplete
 * when its block was read), so it only adds to records_cut. */
static void on_skip(void *ctx, const char *reason, const char *message)
{
    struct warc_job *j = ctx;
    if (!strcmp(reason, "incomplete") || !strcmp(reason, "bad_header")) {
        sl_counters_add(j->c, "documents_in", 1);
        sl_counters_add(j->c, !strcmp(reason, "incomplete") ? "skipped_incomplete"
                                                           : "skipped_bad_header", 1);
    } else {
        sl_counters_add(j->c, !strcmp(reason, "cut") ? "records_cut" : "bad_records", 1);
    }
    if (j->o->on_warn)
        j->o->on_warn(j->o->warn_ctx, reason, message);
}

static void skip(struct warc_job *j, const char *reason)
{
    char key[48];
    snprintf(key, sizeof(key), "skipped_%s", reason);
    sl_counters_add(j->c, key, 1);
}

static const char *type_counter(enum warc_type t)
{
    switch (t) {
    case WARC_WARCINFO: return "records_warcinfo";
    case WARC_RESPONSE: return "records_response";
    case WARC_RESOURCE: return "records_resource";
    case WARC_REQUEST: return "records_request";
    case WARC_METADATA: return "records_metadata";
    case WARC_REVISIT: return "records_revisit";
    case WARC_CONVERSION: return "records_conversion";
    case WARC_CONTINUATION: return "records_continuation";
    default: return "records_other";
    }
}

static int is_html_mime(const char *m)
{
    return !strcmp(m, "text/html") || !strcmp(m, "application/xhtml+xml") ||
           !strcmp(m, "application/xhtml") || !strcmp(m, "text/xhtml");
}

/* Does the payload start like an HTML document? */
static int sniff_html(const char *p, size_t n)
{
    size_t i = 0;
    if (n >= 3 && (unsigned char)p[0] == 0xef && (unsigned char)p[1] == 0xbb)
        i = 3;
    while (i < n && i < 512 && (p[i] == ' ' || p[i] == '\t' || p[i] == '\r' || p[i] == '\n'))
        i++;
    static const char *const starts[] = { "<!doctype html", "<html", "<head", "<body", "<!--",
                                          "<meta", "<title", NULL };
    for (size_t k = 0; starts[k]; k++) {
        size_t l = strlen(starts[k]);
        if (n - i >= l && !strncasecmp(p + i, starts[k], l))
            return 1;
    }
    return 0;
}

/* The record id without angle brackets, or "<stem>:<index>". */
static void set_common(struct warc_job *j, const struct warc_record *rec)
{
    struct sl_doc *d = &j->doc;
    sl_doc_reset(d);
    const char *rid = rec->record_id;
    size_t rn = strlen(rid);
    if (rn >= 2 && rid[0] == '<' && rid[rn - 1] == '>') {
        rid++;
        rn -= 2;
    }
    if (rn) {
        sl_doc_set_str(d, "id", rid, rn);
    } else {
        char id[512];
        int l = snprintf(id, sizeof(id), "%s:%llu", j->stem, (unsigned long long)rec->index);
        sl_doc_set_str(d, "id", id, (size_t)l < sizeof(id) ? (size_t)l : sizeof(id) - 1);
    }
}

static int emit_doc(struct warc_job *j, const struct warc_record *rec, const char *text,
                    size_t len, const char *lang, const char *title, const char *charset)
{
    struct sl_doc *d = &j->doc;
    set_common(j, rec);
    int rc = sl_doc_set_str(d, "text", text, len);
    if (!rc)
        rc = sl_doc_set_str(d, "url", rec->target_uri, strlen(rec->target_uri));
    const char *src = j->o->source ? j->o->source : (j->wet ? "wet" : "warc");
    if (!rc)
        rc = sl_doc_set_str(d, "source", src, strlen(src));
    if (!rc && lang && *lang)
        rc = sl_doc_set_str(d, "lang", lang, strlen(lang));
    if (!rc && title && *title)
        rc = sl_doc_set_str(d, "title", title, strlen(title));
    if (!rc && *rec->date)
        rc = sl_doc_set_str(d, "warc_date", rec->date, strlen(rec->date));
    if (!rc && *rec->record_id)
        rc = sl_doc_set_str(d, "warc_record_id", rec->record_id, strlen(rec->record_id));
    if (!rc && *rec->refers_to)
        rc = sl_doc_set_str(d, "warc_refers_to", rec->refers_to, strlen(rec->refers_to));
    if (!rc)
        rc = sl_doc_set_str(d, "warc_file", j->in->rel, strlen(j->in->rel));
    if (!rc && charset)
        rc = sl_doc_set_str(d, "charset", charset, strlen(charset));
    if (rc)
        return rc;
    return j->emit(j->ctx, d);
}

/* The language of a page: its lang attribute's primary subtag, lowercased. */
static void norm_lang(const struct sl_buf *l, char *out, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < l->len && k + 1 < n; i++) {
        char c = l->data[i];
        if (c == '-' || c == '_')
            break;
        if (!((c | 32) >= 'a' && (c | 32) <= 'z'))
            break;
        out[k++] = (char)(c | 32);
    }
    out[k] = 0;
    /* "utf-8" and the like are charsets put in the wrong attribute */
    if (k < 2 || k > 3 || !strcmp(out, "utf") || (l->len > k + 1 && l->data[k + 1] >= '0' && l->data[k + 1] <= '9'))
        out[0] = 0;
}

/* The record's block into j->block: 1, or 0 when the record is skipped (too large, or cut
 * short: counted, and warned), or <0 when reading must stop. */
static int read_block(struct warc_job *j, struct warc_reader *r)
{
    sl_buf_reset(&j->block);
    int rc = warc_read_block(r, &j->block);
    if (rc == SL_ERR_TOOBIG) {
        skip(j, "too_large");
        return 0;
    }
    if (rc == SL_ERR_CORRUPT) {
        skip(j, "incomplete");
        if (j->o->on_warn)
            j->o->on_warn(j->o->warn_ctx, "incomplete", sl_err_msg());
        return 0;
    }
    return rc ? rc : 1;
}

static int do_wet(struct warc_job *j, struct warc_reader *r, const struct warc_record *rec)
{
    if (strncasecmp(rec->content_type, "text/plain", 10) != 0) {
        skip(j, "non_text");
        return 0;
    }
    int rc = read_block(j, r);
    if (rc <= 0)
        return rc;
    sl_counters_add(j->c, "bytes_in", j->block.len);
    sl_buf_reset(&j->utf8);
    size_t rep = 0;
    rc = sl_utf8_repair(&j->utf8, j->block.data, j->block.len, &rep);
    if (rc)
        return rc;
    if (rep)
        sl_counters_add(j->c, "replaced_chars", rep);
    if (j->utf8.len == 0) {
        skip(j, "empty");
        return 0;
    }
    char lang[16] = "";
    if (*rec->language) {
        size_t k = strcspn(rec->language, ", ");
        if (k < sizeof(lang)) {
            memcpy(lang, rec->language, k);
            lang[k] = 0;
            snprintf(lang, sizeof(lang), "%s", extract_lang_639_1(lang));
        }
    }
    return emit_doc(j, rec, j->utf8.data, j->utf8.len, lang, NULL, NULL);
}

static int do_html(struct warc_job *j, struct warc_reader *r, const struct warc_record *rec)
{
    const struct extract_opts *o = j->o;
    if (*rec->truncated && !o->keep_truncated) {
        skip(j, "truncated");
        return 0;
    }
    if (o->max_record && rec->content_length > o->max_record) {
        skip(j, "too_large");
        return 0;
    }
    int rc = read_block(j, r);
    if (rc <= 0)
        return rc;
    sl_counters_add(j->c, "bytes_in", j->block.len);

    const char *body = j->block.data;
    size_t blen = j->block.len;
    const char *charset = NULL;
    char mime[64] = "";
    struct http_resp h;
    int http = rec->type == WARC_RESPONSE &&
               (blen >= 5 && !memcmp(body, "HTTP/", 5));
    if (rec->type == WARC_RESPONSE && !http) {
        /* ARC records of old crawls may hold the bare document */
        if (strcmp(rec->version, "ARC") != 0 ||
            strncasecmp(rec->content_type, "text/html", 9) != 0) {
            skip(j, strncasecmp(rec->content_type, "application/http", 16) == 0 ||
                            !strcmp(rec->version, "ARC")
                        ? "bad_http"
                        : "non_html");
            return 0;
        }
        snprintf(mime, sizeof(mime), "text/html");
    }
    if (http) {
        if (http_parse_response(body, blen, &h) != 0) {
            skip(j, "bad_http");
            return 0;
        }
        if (h.status != 200 && !o->keep_non_200) {
            skip(j, "non_200");
            return 0;
        }
        snprintf(mime, sizeof(mime), "%s", h.mime);
        if (h.charset[0])
            charset = h.charset;
        body += h.head_len;
        blen -= h.head_len;
        /* transfer encoding first, then content encoding */
        if (h.transfer_encoding.n && http_has_token(h.transfer_encoding, "chunked") &&
            http_looks_chunked(body, blen)) {
            sl_buf_reset(&j->body);
            if (http_dechunk(body, blen, &j->body) != 0) {
                sl_counters_add(j->c, "bad_chunked_bodies", 1);
                if (j->body.len == 0) {
                    /* not really chunked after all: keep the raw body */
                    sl_buf_append(&j->body, body, blen);
                }
            }
            body = j->body.data ? j->body.data : "";
            blen = j->body.len;
        }
        if (h.content_encoding.n) {
            sl_buf_reset(&j->decoded);
            rc = http_decode_content(h.content_encoding.p, h.content_encoding.n, body, blen,
                                     &j->decoded);
            if (rc == SL_ERR_TOOBIG) {
                skip(j, "too_large");
                return 0;
            }
            if (rc) {
                skip(j, "bad_encoding");
                return 0;
            }
            body = j->decoded.data ? j->decoded.data : "";
            blen = j->decoded.len;
        }
    } else if (!mime[0]) {
        /* resource records: the WARC Content-Type describes the payload */
        const char *ct = rec->content_type;
        size_t k = strcspn(ct, "; ");
        snprintf(mime, sizeof(mime), "%.*s", (int)(k < 63 ? k : 63), ct);
        for (char *q = mime; *q; q++)
            *q = (char)(*q >= 'A' && *q <= 'Z' ? *q + 32 : *q);
        const char *cs = strcasestr(ct, "charset=");
        if (cs) {
            snprintf(j->charset, sizeof(j->charset), "%.*s", (int)strcspn(cs + 8, "; \""), cs + 8);
            charset = j->charset;
        }
    }
    if (!(mime[0] ? is_html_mime(mime) : sniff_html(body, blen))) {
        skip(j, "non_html");
        return 0;
    }
    if (blen == 0) {
        skip(j, "empty");
        return 0;
    }
    enum charset_source src;
    const char *cs = charset_choose(&j->cs, body, blen, charset, &src);
    static const char *const src_names[] = { "charset_from_bom", "charset_from_http",
                                             "charset_from_meta", "charset_detected" };
    sl_counters_add(j->c, src_names[src], 1);
    sl_buf_reset(&j->utf8);
    size_t rep = 0;
    rc = charset_to_utf8(&j->cs, cs, body, blen, &j->utf8, &rep);
    if (rc == SL_ERR_UNSUPPORTED) {
        /* a label iconv does not know: read as UTF-8 with replacements */
        rc = charset_to_utf8(&j->cs, "utf-8", body, blen, &j->utf8, &rep);
        cs = "utf-8";
    }
    if (rc == SL_ERR_TOOBIG) {
        skip(j, "too_large");
        return 0;
    }
    if (rc)
        return rc;
    if (rep)
        sl_counters_add(j->c, "replaced_chars", rep);
    rc = page_text_extract(&j->page, j->utf8.data, j->utf8.len);
    if (rc == SL_ERR_TOOBIG) {
        skip(j, "too_large");
        return 0;
    }
    if (rc) {
        skip(j, "bad_html");
        return 0;
    }
    if (j->page.text.len == 0) {
        skip(j, "empty");
        return 0;
    }
    char lang[8];
    norm_lang(&j->page.lang, lang, sizeof(lang));
    return emit_doc(j, rec, j->page.text.data, j->page.text.len, lang,
                    j->page.title.len ? j->page.title.data : NULL, cs);
}

int extract_warc_file(const struct extract_input *in, const struct extract_opts *o,
                      extract_emit_fn emit, void *ctx, struct sl_counters *c)
{
    struct warc_job j;
    memset(&j, 0, sizeof(j));
    j.in = in;
    j.o = o;
    j.emit = emit;
    j.ctx = ctx;
    j.c = c;
    j.wet = o->format && !strcmp(o->format, "wet");
    size_t cap = o->max_record ? (size_t)o->max_record : (64u << 20);
    sl_buf_init(&j.block, cap);
    sl_buf_init(&j.body, cap);
    sl_buf_init(&j.decoded, cap);
    sl_buf_init(&j.utf8, cap);
    page_text_init(&j.page, cap);
    charset_conv_init(&j.cs);
    sl_doc_init(&j.doc);
    j.stem = sl_jsonl_id_stem(in->rel);

    struct warc_opts wo = { o->max_output, on_skip, &j };
    struct warc_reader *r = NULL;
    struct sl_source *src = NULL;
    int rc = extract_open_source(in, &src);
    if (!rc)
        rc = warc_reader_open_source(&r, src, &wo);
    struct warc_record rec;
    size_t s_in = sl_counters_slot(c, "documents_in");
    while (!rc) {
        int got = warc_next(r, &rec);
        if (got <= 0) {
            rc = got;
            break;
        }
        c->values[s_in]++;
        sl_counters_add(c, type_counter(rec.type), 1);
        switch (rec.type) {
        case WARC_RESPONSE:
        case WARC_RESOURCE:
            rc = do_html(&j, r, &rec);
            break;
        case WARC_CONVERSION:
            rc = do_wet(&j, r, &rec);
            break;
        case WARC_REVISIT:
            skip(&j, "revisit");
            break;
        case WARC_WARCINFO:
            skip(&j, "warcinfo");
            break;
        case WARC_REQUEST:
            skip(&j, "request");
            break;
        case WARC_METADATA:
            skip(&j, "metadata");
            break;
        default:
            skip(&j, "other_type");
            break;
        }
        if (rc == SL_ERR_CORRUPT || rc == SL_ERR_TOOBIG || rc == SL_ERR_FORMAT ||
            rc == SL_ERR_UNSUPPORTED || rc == SL_ERR_IO)
            skip(&j, "corrupt"); /* the stream broke inside this record's block */
    }
    if (rc < 0 && r && warc_reader_pending(r)) {
        /* the stream broke inside a record before its header was read whole */
        c->values[s_in]++;
        skip(&j, "corrupt");
    }
    if (rc && r)
        rc = sl_err_wrap(rc, "%s", "");
    warc_reader_close(r);
    free(j.stem);
    sl_doc_release(&j.doc);
    charset_conv_release(&j.cs);
    page_text_release(&j.page);
    sl_buf_release(&j.block);
    sl_buf_release(&j.body);
    sl_buf_release(&j.decoded);
    sl_buf_release(&j.utf8);
    return rc;
}
