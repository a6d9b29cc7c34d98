/* --format arxiv: arXiv source tarballs -> one document per paper. An input is either a
 * bulk tar of per-paper files (each a gzipped .tex or a gzipped tar) or one paper itself.
 * Everything is read in memory with libarchive: no archive entry is ever written to
 * disk, so entry names (even "../../etc/passwd") only serve as keys for \input. */
#include "curate/extract/extract.h"

#include "core/alloc.h"
#include "core/buf.h"
#include "core/counters.h"
#include "core/dl.h"
#include "core/doc.h"
#include "core/err.h"
#include "core/stream.h"
#include "core/utf8.h"
#include "curate/extract/latex.h"

#include <archive.h>
#include <archive_entry.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct paper {
    struct latex_file *f;
    char **names;
    struct sl_buf *data;
    size_t n, cap;
    uint64_t bytes;
};

static void paper_clear(struct paper *p)
{
    for (size_t i = 0; i < p->n; i++) {
        free(p->names[i]);
        sl_buf_release(&p->data[i]);
    }
    p->n = 0;
    p->bytes = 0;
}

static void paper_free(struct paper *p)
{
    paper_clear(p);
    free(p->f);
    free(p->names);
    free(p->data);
}

struct arxiv_job {
    const struct extract_input *in;
    const struct extract_opts *o;
    extract_emit_fn emit;
    void *ctx;
    struct sl_counters *c;
    struct sl_doc doc;
    struct sl_buf text;
    struct paper paper;
};

static void warn(struct arxiv_job *j, const char *reason, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void warn(struct arxiv_job *j, const char *reason, const char *fmt, ...)
{
    if (!j->o->on_warn)
        return;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    j->o->on_warn(j->o->warn_ctx, reason, msg);
}

static int unsafe_name(const char *s)
{
    return s[0] == '/' || !strncmp(s, "../", 3) || strstr(s, "/../") || !strcmp(s, "..") ||
           (strlen(s) >= 3 && !strcmp(s + strlen(s) - 3, "/.."));
}

static int ends_with(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && !strcmp(s + a - b, suf);
}

/* libarchive is loaded when the first arXiv archive is opened, not linked: it brings
 * libxml2, ICU, nettle, lz4 and acl, which every sluice command loaded at start-up
 * (curate/extract/libxml.h has the figures). */
static struct {
    void *lib;
    struct archive *(*read_new)(void);
    int (*read_support_filter_gzip)(struct archive *);
    int (*read_support_filter_bzip2)(struct archive *);
    int (*read_support_filter_xz)(struct archive *);
    int (*read_support_filter_zstd)(struct archive *);
    int (*read_support_format_tar)(struct archive *);
    int (*read_support_format_raw)(struct archive *);
    int (*read_open_memory)(struct archive *, const void *, size_t);
    int (*read_open)(struct archive *, void *, archive_open_callback *, archive_read_callback *,
                     archive_close_callback *);
    int (*read_next_header)(struct archive *, struct archive_entry **);
    la_ssize_t (*read_data)(struct archive *, void *, size_t);
    int (*read_free)(struct archive *);
    int (*format)(struct archive *);
    const char *(*error_string)(struct archive *);
    la_int64_t (*filter_bytes)(struct archive *, int);
    const char *(*entry_pathname)(struct archive_entry *);
    mode_t (*entry_filetype)(struct archive_entry *);
} ar;

static struct sl_dl_once ar_once = SL_DL_ONCE_INIT;

/* A row of load_archive's table: each field of ar is the function archive_FIELD. */
/* clang-format off */
#define SYM(f) { "archive_" #f, (void **)&ar.f }
/* clang-format on */

/* Load libarchive once for the process (safe from any thread): 0, or the error. */
static int load_archive(void)
{
    static const char *const names[] = { "libarchive.so.13" };
    const struct sl_dl_sym syms[] = {
        SYM(read_new),
        SYM(read_support_filter_gzip),
        SYM(read_support_filter_bzip2),
        SYM(read_support_filter_xz),
        SYM(read_support_filter_zstd),
        SYM(read_support_format_tar),
        SYM(read_support_format_raw),
        SYM(read_open_memory),
        SYM(read_open),
        SYM(read_next_header),
        SYM(read_data),
        SYM(read_free),
        SYM(format),
        SYM(error_string),
        SYM(filter_bytes),
        SYM(entry_pathname),
        SYM(entry_filetype),
    };
#undef SYM
    return sl_dl_load_once(&ar_once, &ar.lib, names, sizeof(names) / sizeof(names[0]), syms,
                           sizeof(syms) / sizeof(syms[0]),
                           "reading arXiv archives needs libarchive (Debian package libarchive13)",
                           SL_ERR_UNSUPPORTED);
}

/* Read the current entry's data into b (cap b->max). 0, SL_ERR_TOOBIG or SL_ERR_CORRUPT. */
static int read_entry(struct archive *a, struct sl_buf *b)
{
    char chunk[1 << 16];
    for (;;) {
        la_ssize_t got = ar.read_data(a, chunk, sizeof(chunk));
        if (got == 0)
            return 0;
        if (got < 0) {
            const char *why = ar.error_string(a);
            return sl_err_set(SL_ERR_CORRUPT, "%s",
                              why && *why ? why : "the archive ends inside this entry (truncated?)");
        }
        if (sl_buf_append(b, chunk, (size_t)got) != 0)
            return SL_ERR_TOOBIG;
    }
}

static struct archive *open_reader(void)
{
    struct archive *a = ar.read_new();
    ar.read_support_filter_gzip(a);
    ar.read_support_filter_bzip2(a);
    ar.read_support_filter_xz(a);
    ar.read_support_filter_zstd(a);
    ar.read_support_format_tar(a);
    ar.read_support_format_raw(a);
    return a;
}

/* The input's bytes for libarchive, read once (the input may be a FIFO, and is read as its
 * stage planned it). Until the first entry says whether the input is a bulk tar or one
 * paper, the bytes handed out are kept (up to the paper cap): one paper is then those
 * bytes and the rest of the source. */
struct feed {
    struct sl_source *src;
    char chunk[1 << 16];
    struct sl_buf kept; /* cap: the paper cap */
    int keep, over;     /* keeping; the paper went past the cap */
    int err;            /* the source's error, its message in msg */
    char msg[SL_ERR_MSG_MAX];
};

static la_ssize_t feed_read(struct archive *a, void *ctx, const void **buf)
{
    (void)a;
    struct feed *f = ctx;
    ssize_t k = f->src->read(f->src, f->chunk, sizeof(f->chunk));
    if (k < 0) {
        f->err = (int)k;
        snprintf(f->msg, sizeof(f->msg), "%s", sl_err_msg());
        return -1;
    }
    if (k > 0 && f->keep && !f->over && sl_buf_append(&f->kept, f->chunk, (size_t)k))
        f->over = 1;
    *buf = f->chunk;
    return k;
}

/* One paper: what was kept and the rest of the source, into whole (cap: the paper cap).
 * 0, SL_ERR_TOOBIG, or the source's error. */
static int feed_rest(struct feed *f, struct sl_buf *whole)
{
    if (f->over || sl_buf_append(whole, f->kept.data, f->kept.len))
        return SL_ERR_TOOBIG;
    for (;;) {
        ssize_t k = f->src->read(f->src, f->chunk, sizeof(f->chunk));
        if (k <= 0)
            return (int)k;
        if (sl_buf_append(whole, f->chunk, (size_t)k))
            return SL_ERR_TOOBIG;
    }
}

/* Collect the text files of one paper from an archive in memory (or a raw gz). */
static int load_paper(struct arxiv_job *j, const char *mem, size_t n, const char *label)
{
    struct paper *p = &j->paper;
    paper_clear(p);
    struct archive *a = open_reader();
    int rc = 0;
    if (ar.read_open_memory(a, mem, n) != ARCHIVE_OK) {
        rc = sl_err_set(SL_ERR_FORMAT, "%s: %s", label, ar.error_string(a));
        ar.read_free(a);
        return rc;
    }
    struct archive_entry *e;
    int raw = ar.format(a) == ARCHIVE_FORMAT_RAW;
    for (;;) {
        int r = ar.read_next_header(a, &e);
        if (r == ARCHIVE_EOF)
            break;
        if (r < ARCHIVE_WARN) {
            rc = sl_err_set(SL_ERR_CORRUPT, "%s: %s", label, ar.error_string(a));
            break;
        }
        raw = ar.format(a) == ARCHIVE_FORMAT_RAW;
        const char *name = raw ? "data" : ar.entry_pathname(e);
        if (!name || ar.entry_filetype(e) != AE_IFREG)
            continue;
        while (name[0] == '.' && name[1] == '/')
            name += 2;
        if (unsafe_name(name)) {
            sl_counters_add(j->c, "unsafe_entry_names", 1);
            warn(j, "unsafe_entry", "%s: archive entry '%s' points outside the paper; read in memory only",
                 label, name);
        }
        int tex = raw || ends_with(name, ".tex") || ends_with(name, ".ltx") ||
                  ends_with(name, ".latex") || ends_with(name, ".TEX");
        if (!tex)
            continue;
        if (p->n == p->cap) {
            p->cap = p->cap ? p->cap * 2 : 16;
            p->names = sl_xrealloc(p->names, p->cap * sizeof(char *));
            p->data = sl_xrealloc(p->data, p->cap * sizeof(struct sl_buf));
        }
        struct sl_buf *b = &p->data[p->n];
        uint64_t left = j->o->max_record > p->bytes ? j->o->max_record - p->bytes : 0;
        sl_buf_init(b, left ? (size_t)left : 1);
        int er = read_entry(a, b);
        if (er == SL_ERR_TOOBIG) {
            sl_buf_release(b);
            rc = SL_ERR_TOOBIG;
            break;
        }
        if (er) {
            sl_buf_release(b);
            rc = sl_err_set(SL_ERR_CORRUPT, "%s: entry '%s': %s", label, name, sl_err_msg());
            break;
        }
        p->names[p->n] = sl_xstrdup(name);
        p->bytes += b->len;
        p->n++;
    }
    ar.read_free(a);
    return rc;
}

/* "1901/1901.00001.gz" -> "1901.00001"; "hep-th9901001.tar.gz" -> "hep-th9901001". */
static void paper_id(const char *name, char *out, size_t n)
{
    const char *b = strrchr(name, '/');
    b = b ? b + 1 : name;
    snprintf(out, n, "%s", b);
    static const char *const exts[] = { ".tar.gz", ".tgz", ".gz", ".tar", ".tex", ".pdf", NULL };
    for (size_t k = 0; exts[k]; k++)
        if (ends_with(out, exts[k])) {
            out[strlen(out) - strlen(exts[k])] = 0;
            break;
        }
}

static int new_style_id(const char *id)
{
    size_t i = 0, d = 0;
    while (id[i] >= '0' && id[i] <= '9')
        i++, d++;
    if (d != 4 || id[i] != '.')
        return 0;
    i++;
    d = 0;
    while (id[i] >= '0' && id[i] <= '9')
        i++, d++;
    return (d == 4 || d == 5) && (id[i] == 0 || id[i] == 'v');
}

/* Is this not text? A NUL byte, or more than 1 byte in 10 a control character (but \t \n
 * \f \r) or not part of a UTF-8 sequence (Latin-1 sources have a few such bytes, binary
 * data has many). */
static int looks_binary(const char *p, size_t n)
{
    size_t bad = 0;
    for (size_t i = 0; i < n;) {
        unsigned char ch = (unsigned char)p[i];
        if (ch == 0)
            return 1;
        if (ch < 0x80) {
            if ((ch < 0x20 && ch != '\t' && ch != '\n' && ch != '\f' && ch != '\r') || ch == 0x7f)
                bad++;
            i++;
            continue;
        }
        uint32_t cp;
        size_t l = sl_utf8_decode((const unsigned char *)p + i, n - i, &cp);
        if (!l) {
            bad++;
            l = 1;
        }
        i += l;
    }
    return bad * 10 > n;
}

/* Does the text hold a TeX control word (a backslash and a letter)? */
static int has_tex_command(const char *p, size_t n)
{
    for (const char *q = p; (q = memchr(q, '\\', (size_t)(p + n - q))) != NULL; q++)
        if (q + 1 < p + n && ((q[1] | 32) >= 'a' && (q[1] | 32) <= 'z'))
            return 1;
    return 0;
}

static int do_paper(struct arxiv_job *j, const char *mem, size_t n, const char *entry_name)
{
    char id[256];
    paper_id(entry_name, id, sizeof(id));
    sl_counters_add(j->c, "documents_in", 1);
    sl_counters_add(j->c, "bytes_in", n);
    if (n >= 4 && !memcmp(mem, "%PDF", 4)) {
        sl_counters_add(j->c, "skipped_pdf_only", 1);
        return 0;
    }
    char label[512];
    snprintf(label, sizeof(label), "%s: paper '%s'", j->in->path, entry_name);
    int rc = load_paper(j, mem, n, label);
    if (rc == SL_ERR_TOOBIG) {
        sl_counters_add(j->c, "skipped_too_large", 1);
        warn(j, "too_large", "%s: larger than --max-record when decompressed, skipped", label);
        return 0;
    }
    if (rc) {
        sl_counters_add(j->c, "skipped_bad_archive", 1);
        warn(j, "bad_archive", "%s, skipped", sl_err_msg());
        return 0;
    }
    struct paper *p = &j->paper;
    if (p->n == 0 && n >= 4 && !memcmp(mem, "%PDF", 4)) {
        sl_counters_add(j->c, "skipped_pdf_only", 1);
        return 0;
    }
    p->f = sl_xrealloc(p->f, (p->n ? p->n : 1) * sizeof(*p->f));
    for (size_t i = 0; i < p->n; i++) {
        p->f[i].name = p->names[i];
        p->f[i].data = p->data[i].data ? p->data[i].data : "";
        p->f[i].len = p->data[i].len;
    }
    long main = latex_find_main(p->f, p->n);
    if (main < 0) {
        sl_counters_add(j->c, p->n ? "skipped_no_main_tex" : "skipped_no_tex", 1);
        return 0;
    }
    if (p->f[main].len >= 4 && !memcmp(p->f[main].data, "%PDF", 4)) {
        sl_counters_add(j->c, "skipped_pdf_only", 1);
        return 0;
    }
    /* random or binary entries (images, object files, junk) are no paper */
    if (looks_binary(p->f[main].data, p->f[main].len)) {
        sl_counters_add(j->c, "skipped_binary", 1);
        warn(j, "binary", "%s: paper '%s': not text (binary data), skipped", j->in->path, entry_name);
        return 0;
    }
    if (!has_tex_command(p->f[main].data, p->f[main].len)) {
        sl_counters_add(j->c, "skipped_not_latex", 1);
        warn(j, "not_latex", "%s: paper '%s': no TeX command in it, skipped", j->in->path,
             entry_name);
        return 0;
    }
    sl_buf_reset(&j->text);
    size_t missing = 0;
    rc = latex_clean_paper(p->f, p->n, (size_t)main, &j->text, &missing);
    if (rc == SL_ERR_TOOBIG) {
        sl_counters_add(j->c, "skipped_too_large", 1);
        return 0;
    }
    if (rc)
        return rc;
    if (missing)
        sl_counters_add(j->c, "missing_inputs", missing);
    if (j->text.len == 0) {
        sl_counters_add(j->c, "skipped_empty", 1);
        return 0;
    }
    /* LaTeX sources are usually ASCII or UTF-8; anything else is repaired */
    struct sl_doc *d = &j->doc;
    sl_doc_reset(d);
    char docid[300];
    snprintf(docid, sizeof(docid), "arxiv:%s", id);
    rc = sl_doc_set_str(d, "id", docid, strlen(docid));
    if (!rc)
        rc = sl_doc_set_str(d, "text", j->text.data, j->text.len);
    if (!rc && new_style_id(id)) {
        char url[300];
        snprintf(url, sizeof(url), "https://arxiv.org/abs/%s", id);
        rc = sl_doc_set_str(d, "url", url, strlen(url));
    }
    const char *src = j->o->source ? j->o->source : "arxiv";
    if (!rc)
        rc = sl_doc_set_str(d, "source", src, strlen(src));
    if (!rc)
        rc = sl_doc_set_str(d, "arxiv_id", id, strlen(id));
    if (!rc)
        rc = sl_doc_set_str(d, "main_file", p->f[main].name, strlen(p->f[main].name));
    if (!rc)
        rc = sl_doc_set_int(d, "source_files", (int64_t)p->n);
    if (rc)
        return rc;
    return j->emit(j->ctx, d);
}

int extract_arxiv_file(const struct extract_input *in, const struct extract_opts *o,
                       extract_emit_fn emit, void *ctx, struct sl_counters *c)
{
    int rc = load_archive();
    if (rc)
        return rc;
    struct arxiv_job j;
    memset(&j, 0, sizeof(j));
    j.in = in;
    j.o = o;
    j.emit = emit;
    j.ctx = ctx;
    j.c = c;
    size_t cap = o->max_record ? (size_t)o->max_record : (64u << 20);
    sl_doc_init(&j.doc);
    sl_buf_init(&j.text, cap);

    struct feed *f = sl_xcalloc(1, sizeof(*f));
    sl_buf_init(&f->kept, cap);
    f->keep = 1;
    struct archive *a = open_reader();
    rc = extract_open_source(in, &f->src);
    if (!rc && ar.read_open(a, f, NULL, feed_read, NULL) != ARCHIVE_OK)
        rc = f->err ? sl_err_set(f->err, "%s", f->msg)
                    : sl_err_set(SL_ERR_IO, "cannot open '%s': %s", in->path, ar.error_string(a));
    if (rc)
        goto out;
    struct archive_entry *e;
    struct sl_buf ent = SL_BUF_INIT;
    sl_buf_init(&ent, cap);
    int bulk = -1; /* unknown until the first regular entry */
    int first = 1;
    for (;;) {
        int r = ar.read_next_header(a, &e);
        if (r == ARCHIVE_EOF)
            break;
        if (r < ARCHIVE_WARN && f->err) {
            rc = sl_err_set(f->err, "%s", f->msg);
            break;
        }
        if (r < ARCHIVE_WARN) {
            const char *why = ar.error_string(a);
            rc = sl_err_set(SL_ERR_CORRUPT, "corrupt archive '%s' after %llu compressed bytes: %s",
                            in->path, (unsigned long long)ar.filter_bytes(a, -1),
                            why && *why ? why : "damaged entry header");
            break;
        }
        int raw = ar.format(a) == ARCHIVE_FORMAT_RAW;
        if (raw ||
            (first && bulk < 0 && ar.entry_filetype(e) == AE_IFREG &&
             !(ends_with(ar.entry_pathname(e), ".gz") || ends_with(ar.entry_pathname(e), ".tgz") ||
               ends_with(ar.entry_pathname(e), ".pdf")))) {
            /* the input is one paper: taken whole below (kept bytes, then the rest) */
            bulk = 0;
            break;
        }
        if (ar.entry_filetype(e) != AE_IFREG)
            continue;
        first = 0;
        bulk = 1;
        f->keep = 0; /* a bulk tar: its papers are read from the archive */
        sl_buf_release(&f->kept);
        const char *name = ar.entry_pathname(e);
        if (unsafe_name(name)) {
            sl_counters_add(c, "unsafe_entry_names", 1);
            if (o->on_warn) {
                char msg[512];
                snprintf(msg, sizeof(msg), "%s: archive entry '%s' points outside the archive; read in memory only",
                         in->path, name);
                o->on_warn(o->warn_ctx, "unsafe_entry", msg);
            }
        }
        sl_buf_reset(&ent);
        int er = read_entry(a, &ent);
        if (er == SL_ERR_TOOBIG) {
            sl_counters_add(c, "documents_in", 1);
            sl_counters_add(c, "skipped_too_large", 1);
            continue;
        }
        if (er && f->err) {
            rc = sl_err_set(f->err, "%s", f->msg); /* the input could not be read */
            break;
        }
        if (er) {
            /* the paper the damage cut: read, not kept */
            sl_counters_add(c, "documents_in", 1);
            sl_counters_add(c, "skipped_incomplete", 1);
            rc = sl_err_set(SL_ERR_CORRUPT, "corrupt archive '%s' at entry '%s': %s", in->path,
                            name, sl_err_msg());
            break;
        }
        rc = do_paper(&j, ent.data ? ent.data : "", ent.len, name);
        if (rc)
            break;
    }
    if (!rc && bulk == 0) {
        /* a single paper (.gz or .tar.gz): load it whole, capped */
        struct sl_buf whole = SL_BUF_INIT;
        sl_buf_init(&whole, cap);
        rc = feed_rest(f, &whole);
        if (rc == SL_ERR_TOOBIG) {
            sl_counters_add(c, "documents_in", 1);
            sl_counters_add(c, "skipped_too_large", 1);
            rc = 0;
        } else if (!rc) {
            rc = do_paper(&j, whole.data ? whole.data : "", whole.len, in->rel);
        }
        sl_buf_release(&whole);
    }
    sl_buf_release(&ent);
out:
    ar.read_free(a);
    sl_source_close(f->src);
    sl_buf_release(&f->kept);
    free(f);
    paper_free(&j.paper);
    sl_doc_release(&j.doc);
    sl_buf_release(&j.text);
    return rc;
}
