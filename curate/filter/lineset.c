/* struct sl_lineset: a large read-only string set over a list file's bytes (lineset.h). */
#include "curate/filter/lineset.h"

#include "core/alloc.h"
#include "core/dl.h"
#include "core/err.h"
#include "core/hash.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Entries are at most this long (a domain is at most 253 bytes; UT1's longest URL line is
 * about 2 KB): the offset and hash share one 64-bit slot, the length is found at lookup. */
#define MAX_TEXT ((size_t)UINT32_MAX - 1)
/* lines hashed (and their slots prefetched) before they are inserted: enough to cover a
 * memory access with hashing work */
#define BATCH 16

void sl_lineset_init(struct sl_lineset *s)
{
    memset(s, 0, sizeof(*s));
}

void sl_lineset_release(struct sl_lineset *s)
{
    free(s->text);
    free(s->slot);
    sl_lineset_init(s);
}

static int py_space(unsigned char c)
{
    /* str.strip()'s ASCII white space: \t \n \v \f \r, the separators \x1c-\x1f, space */
    return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f);
}

static uint32_t tag_of(uint64_t h)
{
    return (uint32_t)(h >> 32);
}

/* The NUL-terminated entry e equals str[0..n) (strnlen stays inside e). */
static int same(const char *e, const char *str, size_t n)
{
    return strnlen(e, n + 1) == n && !memcmp(e, str, n);
}

/* Insert the NUL-terminated entry at text offset off (n bytes, hash h); 1 if it was new. */
static int insert(struct sl_lineset *s, uint32_t off, size_t n, uint64_t h)
{
    for (size_t j = h & s->mask;; j = (j + 1) & s->mask) {
        uint64_t v = s->slot[j];
        if (!v) {
            s->slot[j] = (uint64_t)(off + 1) << 32 | tag_of(h);
            s->n++;
            return 1;
        }
        if ((uint32_t)v == tag_of(h)) {
            const char *e = s->text + (v >> 32) - 1;
            if (same(e, s->text + off, n))
                return 0;
        }
    }
}

static void resize(struct sl_lineset *s, size_t want)
{
    size_t cap = 64;
    while (cap < want + want / 2 + 1) /* load at most 2/3 */
        cap *= 2;
    if (s->slot && cap <= s->mask + 1)
        return;
    uint64_t *old = s->slot;
    size_t oldcap = s->slot ? s->mask + 1 : 0;
    s->slot = sl_xcalloc(cap, sizeof(uint64_t));
    s->mask = cap - 1;
    for (size_t i = 0; i < oldcap; i++) {
        if (!old[i])
            continue;
        size_t off = (old[i] >> 32) - 1;
        uint64_t h = sl_hash64(s->text + off, strlen(s->text + off), 0);
        size_t j = h & s->mask;
        while (s->slot[j])
            j = (j + 1) & s->mask;
        s->slot[j] = old[i];
    }
    free(old);
}

int sl_lineset_load(struct sl_lineset *s, char *text, size_t len)
{
    if (len > MAX_TEXT) {
        free(text);
        return sl_err_set(SL_ERR_TOOBIG, "list of %zu bytes is over 4 GiB", len);
    }
    sl_lineset_release(s);
    /* one pass to count lines (the table's size), one to index them; a list without \r
     * (UT1's) is cut with memchr */
    int cr = memchr(text, '\r', len) != NULL;
    size_t lines = 1;
    for (const char *q = text, *qe = text + len; (q = memchr(q, '\n', (size_t)(qe - q))); q++)
        lines++;
    for (size_t i = 0; cr && i < len; i++)
        lines += text[i] == '\r';
    s->text = sl_xrealloc(text, len + 1);
    s->text[len] = 0;
    s->len = len;
    resize(s, lines);
    /* the table is far larger than the caches: lines go in by batches, each batch's slots
     * prefetched while the next hashes are computed (insertion took 2/3 of the load) */
    uint32_t boff[BATCH], blen[BATCH];
    uint64_t bh[BATCH];
    size_t nb = 0;
    char *p = s->text, *end = s->text + len;
    while (p < end) {
        char *a = p, *e = p;
        if (cr) {
            while (e < end && *e != '\n' && *e != '\r')
                e++;
        } else {
            e = memchr(p, '\n', (size_t)(end - p));
            if (!e)
                e = end;
        }
        p = e < end ? e + 1 : end;
        if (e < end && *e == '\r' && p < end && *p == '\n')
            p++;
        if (*a == '#')
            continue;
        while (a < e && py_space((unsigned char)*a))
            a++;
        while (e > a && py_space((unsigned char)e[-1]))
            e--;
        *e = 0; /* the terminator, or white space after the entry */
        boff[nb] = (uint32_t)(a - s->text);
        blen[nb] = (uint32_t)(e - a);
        bh[nb] = sl_hash64(a, blen[nb], 0);
        __builtin_prefetch(&s->slot[bh[nb] & s->mask]);
        if (++nb == BATCH) {
            for (size_t k = 0; k < nb; k++)
                insert(s, boff[k], blen[k], bh[k]);
            nb = 0;
        }
    }
    for (size_t k = 0; k < nb; k++)
        insert(s, boff[k], blen[k], bh[k]);
    return 0;
}

void sl_lineset_add(struct sl_lineset *s, const char *str, size_t n)
{
    if (sl_lineset_has(s, str, n))
        return;
    /* appended to the text: offsets stay valid */
    size_t off = s->len + 1;
    s->text = sl_xrealloc(s->text, off + n + 1);
    if (!s->len)
        s->text[0] = 0;
    memcpy(s->text + off, str, n);
    s->text[off + n] = 0;
    s->len = off + n;
    resize(s, s->n + 1);
    insert(s, (uint32_t)off, n, sl_hash64(str, n, 0));
}

int sl_lineset_has(const struct sl_lineset *s, const char *str, size_t n)
{
    if (!s->slot)
        return 0;
    uint64_t h = sl_hash64(str, n, 0);
    for (size_t j = h & s->mask;; j = (j + 1) & s->mask) {
        uint64_t v = s->slot[j];
        if (!v)
            return 0;
        if ((uint32_t)v == tag_of(h)) {
            if (same(s->text + (v >> 32) - 1, str, n))
                return 1;
        }
    }
}

/* libarchive, loaded on first use (PKGS_LOADED: only a config naming an archive needs it) */
static struct {
    void *lib;
    struct archive *(*read_new)(void);
    int (*read_support_filter_all)(struct archive *);
    int (*read_support_format_all)(struct archive *);
    int (*read_open_filename)(struct archive *, const char *, size_t);
    int (*read_next_header)(struct archive *, struct archive_entry **);
    la_ssize_t (*read_data)(struct archive *, void *, size_t);
    int (*read_free)(struct archive *);
    const char *(*error_string)(struct archive *);
    const char *(*entry_pathname)(struct archive_entry *);
    la_int64_t (*entry_size)(struct archive_entry *);
    mode_t (*entry_filetype)(struct archive_entry *);
} ar;

static struct sl_dl_once ar_once = SL_DL_ONCE_INIT;

/* clang-format off */
#define SYM(f) { "archive_" #f, (void **)&ar.f }
/* clang-format on */

static int load_archive(void)
{
    static const char *const names[] = { "libarchive.so.13" };
    const struct sl_dl_sym syms[] = {
        SYM(read_new),         SYM(read_support_filter_all), SYM(read_support_format_all),
        SYM(read_open_filename), SYM(read_next_header),      SYM(read_data),
        SYM(read_free),        SYM(error_string),            SYM(entry_pathname),
        SYM(entry_size),       SYM(entry_filetype),
    };
#undef SYM
    return sl_dl_load_once(&ar_once, &ar.lib, names, sizeof(names) / sizeof(names[0]), syms,
                           sizeof(syms) / sizeof(syms[0]),
                           "reading a list archive needs libarchive (Debian package libarchive13)",
                           SL_ERR_UNSUPPORTED);
}

/* The last path component of name. */
static const char *base_name(const char *name)
{
    const char *s = strrchr(name, '/');
    return s ? s + 1 : name;
}

/* Read the current entry (at most MAX_TEXT bytes) into a malloc'ed buffer. */
static int read_entry(struct archive *a, const char *path, const char *name, char **out,
                      size_t *len)
{
    size_t cap = 1 << 20, n = 0;
    char *b = sl_xmalloc(cap + 1);
    for (;;) {
        if (n == cap) {
            if (cap > MAX_TEXT / 2) {
                free(b);
                return sl_err_set(SL_ERR_TOOBIG, "list '%s' in '%s': over 4 GiB", name, path);
            }
            cap *= 2;
            b = sl_xrealloc(b, cap + 1);
        }
        la_ssize_t got = ar.read_data(a, b + n, cap - n);
        if (got < 0) {
            int rc = sl_err_set(SL_ERR_CORRUPT, "cannot read list '%s' in '%s': %s", name,
                                path, ar.error_string(a));
            free(b);
            return rc;
        }
        if (!got)
            break;
        n += (size_t)got;
    }
    b[n] = 0;
    *out = b;
    *len = n;
    return 0;
}

static int read_archive(const char *path, const char *const *names, size_t nnames, char **bufs,
                        size_t *lens)
{
    int rc = load_archive();
    if (rc)
        return rc;
    struct archive *a = ar.read_new();
    ar.read_support_filter_all(a);
    ar.read_support_format_all(a);
    if (ar.read_open_filename(a, path, 1 << 20) != ARCHIVE_OK) {
        rc = sl_err_set(SL_ERR_FORMAT, "cannot read list archive '%s': %s", path,
                        ar.error_string(a));
        goto out;
    }
    struct archive_entry *e;
    for (;;) {
        int r = ar.read_next_header(a, &e);
        if (r == ARCHIVE_EOF)
            break;
        if (r < ARCHIVE_WARN) {
            rc = sl_err_set(SL_ERR_CORRUPT, "cannot read list archive '%s': %s", path,
                            ar.error_string(a));
            goto out;
        }
        const char *name = ar.entry_pathname(e);
        if (!name || ar.entry_filetype(e) != AE_IFREG)
            continue;
        for (size_t i = 0; i < nnames; i++)
            if (!bufs[i] && !strcmp(base_name(name), names[i])) {
                rc = read_entry(a, path, names[i], &bufs[i], &lens[i]);
                if (rc)
                    goto out;
                break;
            }
    }
out:
    ar.read_free(a);
    return rc;
}

static int read_plain(const char *path, const char *name, char **out, size_t *len)
{
    char *full = sl_xasprintf("%s/%s", path, name);
    FILE *fp = fopen(full, "rb");
    int rc = 0;
    if (!fp) {
        rc = sl_err_set(errno == ENOENT ? SL_ERR_NOTFOUND : SL_ERR_IO, "cannot open list '%s': %s",
                        full, strerror(errno));
        goto out;
    }
    struct stat st;
    if (fstat(fileno(fp), &st) || (size_t)st.st_size > MAX_TEXT) {
        rc = sl_err_set(SL_ERR_TOOBIG, "list '%s': over 4 GiB or not a file", full);
        fclose(fp);
        goto out;
    }
    char *b = sl_xmalloc((size_t)st.st_size + 1);
    size_t n = fread(b, 1, (size_t)st.st_size, fp);
    int bad = ferror(fp);
    fclose(fp);
    if (bad) {
        free(b);
        rc = sl_err_set(SL_ERR_IO, "cannot read list '%s'", full);
        goto out;
    }
    b[n] = 0;
    *out = b;
    *len = n;
out:
    free(full);
    return rc;
}

int sl_lineset_read_members(const char *path, const char *const *names, size_t nnames,
                            char **bufs, size_t *lens)
{
    struct stat st;
    for (size_t i = 0; i < nnames; i++)
        bufs[i] = NULL;
    if (stat(path, &st))
        return sl_err_set(errno == ENOENT ? SL_ERR_NOTFOUND : SL_ERR_IO,
                          "cannot open list source '%s': %s", path, strerror(errno));
    int rc = 0;
    if (S_ISDIR(st.st_mode)) {
        for (size_t i = 0; i < nnames && !rc; i++)
            rc = read_plain(path, names[i], &bufs[i], &lens[i]);
    } else {
        rc = read_archive(path, names, nnames, bufs, lens);
        for (size_t i = 0; i < nnames && !rc; i++)
            if (!bufs[i])
                rc = sl_err_set(SL_ERR_NOTFOUND, "list archive '%s' has no member '%s'\n"
                                "hint: datatrove's url_filterblacklistsv0_3_0.tar.gz holds "
                                "'domains' and 'urls'", path, names[i]);
    }
    if (rc)
        for (size_t i = 0; i < nnames; i++) {
            free(bufs[i]);
            bufs[i] = NULL;
        }
    return rc;
}
