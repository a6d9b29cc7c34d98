/* Checksum lists (sha256sum/md5sum format) and file digests through libcrypto's EVP,
 * loaded when a digest is first computed (its 3,400 symbol bindings were the largest share
 * of the dynamic linking every sluice command paid at start-up). */
#include "curate/download/checksum.h"

#include "core/alloc.h"
#include "core/buf.h"
#include "core/dl.h"
#include "core/err.h"
#include "core/stream.h"

#include <ctype.h>
#include <errno.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* by name, then by line: the last of equal names is the one that counts */
static int entry_cmp(const void *a, const void *b)
{
    const struct checksum_entry *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : (x->seq > y->seq) - (x->seq < y->seq);
}

int checksum_list_load(struct checksum_list *l, const char *path)
{
    memset(l, 0, sizeof(*l));
    struct sl_buf b = SL_BUF_INIT;
    sl_buf_init(&b, 64u << 20);
    int rc = sl_read_file(path, &b);
    if (rc) {
        sl_buf_release(&b);
        return sl_err_wrap(rc, "cannot read checksums: ");
    }
    size_t cap = 0, line = 0;
    char *p = b.data ? b.data : "", *end = p + b.len;
    while (p < end && !rc) {
        char *nl = memchr(p, '\n', (size_t)(end - p));
        char *le = nl ? nl : end;
        line++;
        while (le > p && (le[-1] == '\r' || le[-1] == ' ' || le[-1] == '\t'))
            le--;
        *le = 0;
        char *s = p;
        p = nl ? nl + 1 : end;
        while (*s == ' ' || *s == '\t')
            s++;
        if (!*s || *s == '#')
            continue;
        size_t h = 0;
        while (isxdigit((unsigned char)s[h]))
            h++;
        char *name = s + h;
        if ((h != 64 && h != 32) || (*name != ' ' && *name != '\t')) {
            rc = sl_err_set(SL_ERR_FORMAT,
                            "%s:%zu: expected 'HEX  NAME' with a sha256 (64 hex digits) or md5 "
                            "(32) digest",
                            path, line);
            break;
        }
        while (*name == ' ' || *name == '\t')
            name++;
        if (*name == '*')
            name++;
        const char *slash = strrchr(name, '/');
        if (slash)
            name = (char *)slash + 1;
        if (!*name) {
            rc = sl_err_set(SL_ERR_FORMAT, "%s:%zu: digest without a file name", path, line);
            break;
        }
        if (l->n == cap) {
            cap = cap ? cap * 2 : 16;
            l->v = sl_xrealloc(l->v, cap * sizeof(*l->v));
        }
        struct checksum_entry *e = &l->v[l->n++];
        e->name = sl_xstrdup(name);
        for (size_t k = 0; k < h; k++)
            e->hex[k] = (char)tolower((unsigned char)s[k]);
        e->hex[h] = 0;
        e->sha256 = h == 64;
        e->seq = l->n - 1;
    }
    sl_buf_release(&b);
    if (!rc && l->n > 1)
        qsort(l->v, l->n, sizeof(*l->v), entry_cmp); /* for checksum_list_find */
    if (rc)
        checksum_list_release(l);
    return rc;
}

void checksum_list_release(struct checksum_list *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i].name);
    free(l->v);
    memset(l, 0, sizeof(*l));
}

const struct checksum_entry *checksum_list_find(const struct checksum_list *l, const char *name)
{
    /* the last entry whose name is <= name; a match is the last one listed */
    size_t lo = 0, hi = l->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(l->v[mid].name, name) <= 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo && !strcmp(l->v[lo - 1].name, name) ? &l->v[lo - 1] : NULL;
}

static struct {
    void *lib;
    EVP_MD_CTX *(*MD_CTX_new)(void);
    void (*MD_CTX_free)(EVP_MD_CTX *);
    const EVP_MD *(*sha256)(void);
    const EVP_MD *(*md5)(void);
    int (*DigestInit_ex)(EVP_MD_CTX *, const EVP_MD *, ENGINE *);
    int (*DigestUpdate)(EVP_MD_CTX *, const void *, size_t);
    int (*DigestFinal_ex)(EVP_MD_CTX *, unsigned char *, unsigned int *);
} ev;

/* A row of load_crypto's table: each field of ev is the function EVP_FIELD. */
/* clang-format off */
#define SYM(f) { "EVP_" #f, (void **)&ev.f }
/* clang-format on */

static int load_crypto(void)
{
    static const char *const names[] = { "libcrypto.so.3" };
    const struct sl_dl_sym syms[] = {
        SYM(MD_CTX_new),    SYM(MD_CTX_free),  SYM(sha256),         SYM(md5),
        SYM(DigestInit_ex), SYM(DigestUpdate), SYM(DigestFinal_ex),
    };
#undef SYM
    return sl_dl_load(
        &ev.lib, names, sizeof(names) / sizeof(names[0]), syms, sizeof(syms) / sizeof(syms[0]),
        "sha256 and md5 digests need libcrypto (Debian package libssl3)", SL_ERR_UNSUPPORTED);
}

/* A digest context for sha256 or md5 (NULL with the error set). */
static EVP_MD_CTX *digest_begin(int sha256)
{
    if (load_crypto())
        return NULL;
    EVP_MD_CTX *ctx = ev.MD_CTX_new();
    if (!ctx || ev.DigestInit_ex(ctx, sha256 ? ev.sha256() : ev.md5(), NULL) != 1) {
        ev.MD_CTX_free(ctx);
        sl_err_set(SL_ERR_NOMEM, "cannot start a digest");
        return NULL;
    }
    return ctx;
}

/* The digest as lowercase hex into out; frees ctx. */
static void digest_end(EVP_MD_CTX *ctx, char out[65])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    if (ev.DigestFinal_ex(ctx, md, &len) == 1) {
        for (unsigned i = 0; i < len; i++)
            snprintf(out + 2 * i, 3, "%02x", md[i]);
        out[2 * len] = 0;
    }
    ev.MD_CTX_free(ctx);
}

int checksum_file(const char *path, int sha256, char out[65])
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return sl_err_set(SL_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
    EVP_MD_CTX *ctx = digest_begin(sha256);
    if (!ctx) {
        fclose(f);
        return sl_err_code();
    }
    unsigned char *buf = sl_xmalloc(1 << 16);
    size_t got;
    while ((got = fread(buf, 1, 1 << 16, f)) > 0)
        ev.DigestUpdate(ctx, buf, got);
    free(buf);
    int rc = ferror(f) ? sl_err_set(SL_ERR_IO, "cannot read '%s'", path) : 0;
    digest_end(ctx, out);
    fclose(f);
    return rc;
}

int checksum_mem(const void *data, size_t n, int sha256, char out[65])
{
    EVP_MD_CTX *ctx = digest_begin(sha256);
    if (!ctx)
        return sl_err_code();
    ev.DigestUpdate(ctx, data, n);
    digest_end(ctx, out);
    return 0;
}
