/* Punkt parameters in NLTK's punkt_tab layout (see tokenize/punkt_params.h): the reader
 * (strict, bounded, errors by file and line), the writer (sorted lines) and the search for
 * a language's directory. */
#include "tokenize/punkt_params.h"

#include "core/alloc.h"
#include "core/atomic.h"
#include "core/buf.h"
#include "core/err.h"
#include "core/hash.h"
#include "core/utf8.h"
#include "tokenize/punkt_map.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char *const file_names[PUNKT_NFILES] = {
    [PUNKT_FILE_COLLOCATIONS] = "collocations.tab",
    [PUNKT_FILE_STARTERS] = "sent_starters.txt",
    [PUNKT_FILE_ABBREVS] = "abbrev_types.txt",
    [PUNKT_FILE_ORTHO] = "ortho_context.tab",
};

const char *punkt_file_name(enum punkt_file f)
{
    return file_names[f];
}

struct punkt_params *punkt_params_new(void)
{
    struct punkt_params *p = sl_xcalloc(1, sizeof(*p));
    p->abbrev = punkt_map_new();
    p->colloc = punkt_map_new();
    p->starters = punkt_map_new();
    p->ortho = punkt_map_new();
    return p;
}

void punkt_params_free(struct punkt_params *p)
{
    if (!p)
        return;
    punkt_map_free(p->abbrev);
    punkt_map_free(p->colloc);
    punkt_map_free(p->starters);
    punkt_map_free(p->ortho);
    free(p);
}

/* A line's text for a message: at most 40 bytes, cut on a character boundary. */
static int shown(const char *s, size_t n)
{
    return (int)(n > 40 ? sl_utf8_whole(s, 40) : n);
}

/* An ortho_context value: Python's int() of a decimal with optional blanks and sign,
 * limited to 64 bits. 0, or -1 when it is not one. */
static int parse_flags(const char *s, size_t n, int64_t *v)
{
    size_t i = 0;
    while (i < n && (s[i] == ' ' || s[i] == '\t'))
        i++;
    while (n > i && (s[n - 1] == ' ' || s[n - 1] == '\t'))
        n--;
    int neg = 0;
    if (i < n && (s[i] == '+' || s[i] == '-'))
        neg = s[i++] == '-';
    if (i == n)
        return -1;
    uint64_t x = 0;
    for (; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        uint64_t d = (uint64_t)(s[i] - '0');
        if (x > (UINT64_MAX - d) / 10)
            return -1;
        x = x * 10 + d;
    }
    if (x > (uint64_t)INT64_MAX + (uint64_t)neg)
        return -1;
    *v = neg ? (int64_t)(0 - x) : (int64_t)x;
    return 0;
}

static int add_line(struct punkt_params *p, enum punkt_file f, const char *name, size_t line_no,
                    const char *s, size_t n)
{
    const char *tab = memchr(s, '\t', n);
    int64_t id;
    switch (f) {
    case PUNKT_FILE_ABBREVS:
    case PUNKT_FILE_STARTERS:
        id = punkt_map_add(f == PUNKT_FILE_ABBREVS ? p->abbrev : p->starters, s, n);
        break;
    case PUNKT_FILE_COLLOCATIONS:
        if (!tab || memchr(tab + 1, '\t', n - (size_t)(tab + 1 - s)))
            return sl_err_set(SL_ERR_FORMAT,
                              "bad punkt parameters '%s' line %zu: expected two word types "
                              "separated by one tab, got '%.*s'",
                              name, line_no, shown(s, n), s);
        id = punkt_map_add(p->colloc, s, n);
        break;
    default: {
        int64_t v = 0;
        if (!tab || memchr(tab + 1, '\t', n - (size_t)(tab + 1 - s)) ||
            parse_flags(tab + 1, n - (size_t)(tab + 1 - s), &v))
            return sl_err_set(SL_ERR_FORMAT,
                              "bad punkt parameters '%s' line %zu: expected a word type, a tab "
                              "and an integer, got '%.*s'",
                              name, line_no, shown(s, n), s);
        id = punkt_map_add(p->ortho, s, (size_t)(tab - s));
        if (id >= 0)
            *punkt_map_value(p->ortho, (uint32_t)id) = v; /* the last line of a type wins */
        break;
    }
    }
    return id < 0 ? sl_err_wrap((int)id, "'%s' line %zu: ", name, line_no) : 0;
}

int punkt_params_parse(struct punkt_params *p, enum punkt_file f, const char *name,
                       const char *data, size_t n)
{
    if (n > PUNKT_FILE_MAX)
        return sl_err_set(SL_ERR_TOOBIG,
                          "punkt parameters '%s' are too big (%zu bytes, at most %zu)", name, n,
                          PUNKT_FILE_MAX);
    size_t bad = sl_utf8_validate(data, n);
    size_t line_no = 1;
    for (size_t i = 0; i < n;) {
        size_t e = i;
        while (e < n && data[e] != '\n' && data[e] != '\r')
            e++;
        if (bad >= i && bad < e)
            return sl_err_set(SL_ERR_FORMAT,
                              "bad punkt parameters '%s' line %zu: not UTF-8 (byte %zu)\nhint: "
                              "NLTK writes and reads punkt_tab files as UTF-8",
                              name, line_no, bad - i + 1);
        int rc = add_line(p, f, name, line_no, data + i, e - i);
        if (rc)
            return rc;
        /* \n, \r\n and \r end a line; a last line without one counts all the same */
        if (e < n && data[e] == '\r' && e + 1 < n && data[e + 1] == '\n')
            e++;
        i = e + 1;
        line_no++;
    }
    return 0;
}

/* Read a whole file of at most PUNKT_FILE_MAX bytes. */
static int read_file(const char *path, struct sl_buf *b)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return sl_err_set(errno == ENOENT ? SL_ERR_NOTFOUND : SL_ERR_IO,
                          "cannot read punkt parameters '%s': %s\nhint: a punkt_tab directory "
                          "holds abbrev_types.txt, collocations.tab, sent_starters.txt and "
                          "ortho_context.tab",
                          path, strerror(errno));
    int rc = 0;
    char chunk[65536];
    size_t got;
    while ((got = fread(chunk, 1, sizeof(chunk), f)) > 0) {
        if (b->len + got > PUNKT_FILE_MAX) {
            rc =
                sl_err_set(SL_ERR_TOOBIG, "punkt parameters '%s' are too big (more than %zu bytes)",
                           path, PUNKT_FILE_MAX);
            break;
        }
        sl_buf_append(b, chunk, got);
    }
    if (!rc && ferror(f))
        rc = sl_err_set(SL_ERR_IO, "cannot read punkt parameters '%s': %s", path, strerror(errno));
    fclose(f);
    return rc;
}

int punkt_params_load(struct punkt_params **out, const char *dir)
{
    *out = NULL;
    struct punkt_params *p = punkt_params_new();
    struct sl_buf b = SL_BUF_INIT;
    int rc = 0;
    for (int f = 0; f < PUNKT_NFILES && !rc; f++) {
        char *path = sl_xasprintf("%s/%s", dir, file_names[f]);
        sl_buf_reset(&b);
        rc = read_file(path, &b);
        if (!rc)
            rc = punkt_params_parse(p, (enum punkt_file)f, path, b.data ? b.data : "", b.len);
        free(path);
    }
    sl_buf_release(&b);
    if (rc)
        punkt_params_free(p);
    else
        *out = p;
    return rc;
}

void punkt_params_format(const struct punkt_params *p, enum punkt_file f, struct sl_buf *out)
{
    const struct punkt_map *m = f == PUNKT_FILE_ABBREVS        ? p->abbrev
                                : f == PUNKT_FILE_COLLOCATIONS ? p->colloc
                                : f == PUNKT_FILE_STARTERS     ? p->starters
                                                               : p->ortho;
    uint32_t *ids = punkt_map_sorted(m);
    for (uint32_t i = 0; i < punkt_map_count(m); i++) {
        size_t n;
        const char *k = punkt_map_key(m, ids[i], &n);
        if (i)
            sl_buf_putc(out, '\n');
        sl_buf_append(out, k, n);
        if (f == PUNKT_FILE_ORTHO)
            sl_buf_printf(out, "\t%lld", (long long)punkt_map_get(m, k, n));
    }
    free(ids);
}

int punkt_params_write(const struct punkt_params *p, const char *dir)
{
    int rc = sl_mkdir_p(dir);
    struct sl_buf b = SL_BUF_INIT;
    for (int f = 0; f < PUNKT_NFILES && !rc; f++) {
        sl_buf_reset(&b);
        punkt_params_format(p, (enum punkt_file)f, &b);
        char *path = sl_xasprintf("%s/%s", dir, file_names[f]);
        rc = sl_write_file_atomic(path, b.data ? b.data : "", b.len);
        free(path);
    }
    sl_buf_release(&b);
    return rc;
}

void punkt_params_fingerprint(const struct punkt_params *p, char out[17])
{
    struct sl_hasher h;
    sl_hasher_init(&h, 0);
    struct sl_buf b = SL_BUF_INIT;
    for (int f = 0; f < PUNKT_NFILES; f++) {
        sl_buf_reset(&b);
        punkt_params_format(p, (enum punkt_file)f, &b);
        sl_hasher_u64(&h, b.len);
        sl_hasher_update(&h, b.data ? b.data : "", b.len);
    }
    sl_buf_release(&b);
    snprintf(out, 17, "%016llx", (unsigned long long)sl_hasher_final(&h));
}

static int is_dir(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

int punkt_params_find(const char *lang, const char *data_dir, char **dir)
{
    *dir = NULL;
    int ok = lang[0] != 0;
    for (const char *c = lang; *c; c++)
        ok &= (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
              *c == '-' || *c == '_';
    if (!ok)
        return sl_err_set(SL_ERR_USAGE,
                          "bad language name '%s': a punkt model is named by letters, digits, - "
                          "and _ (english, german, ...)",
                          lang);
    /* NLTK's data path: $NLTK_DATA's directories, then the usual places */
    struct sl_buf roots = SL_BUF_INIT;
    const char *env = getenv("NLTK_DATA"), *home = getenv("HOME");
    if (env)
        sl_buf_puts(&roots, env);
    if (home && *home)
        sl_buf_printf(&roots, ":%s/nltk_data", home);
    sl_buf_puts(&roots, ":/usr/share/nltk_data:/usr/local/share/nltk_data:/usr/lib/nltk_data"
                        ":/usr/local/lib/nltk_data");
    for (char *r = roots.data, *next; r && !*dir; r = next) {
        next = strchr(r, ':');
        if (next)
            *next++ = 0;
        if (!*r)
            continue;
        char *cand = r[0] == '~' && r[1] == '/' && home
                         ? sl_xasprintf("%s%s/tokenizers/punkt_tab/%s", home, r + 1, lang)
                         : sl_xasprintf("%s/tokenizers/punkt_tab/%s", r, lang);
        if (is_dir(cand))
            *dir = cand;
        else
            free(cand);
    }
    if (!*dir && data_dir) {
        char *cand = sl_xasprintf("%s/configs/punkt/%s", data_dir, lang);
        if (is_dir(cand))
            *dir = cand;
        else
            free(cand);
    }
    sl_buf_release(&roots);
    if (*dir)
        return 0;
    return sl_err_set(SL_ERR_NOTFOUND,
                      "no punkt model for '%s': not in tokenizers/punkt_tab/%s of $NLTK_DATA, "
                      "~/nltk_data or /usr/{,local/}{share,lib}/nltk_data, nor among sluice's "
                      "models%s%s\nhint: name its punkt_tab directory with --punkt DIR, or train "
                      "one with `sluice tokenizer punkt-train`",
                      lang, lang, data_dir ? " in " : "",
                      data_dir ? data_dir : " (no data directory)");
}
