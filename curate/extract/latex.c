/* The RedPajama-style arXiv LaTeX cleaner: comments, conditionals, \input resolution
 * among in-memory files, argument-less macro expansion, and the section..bibliography
 * cut. Linear passes over bounded buffers. */
#include "curate/extract/latex.h"

#include "core/alloc.h"
#include "core/buf.h"
#include "core/err.h"

#include <stdlib.h>
#include <string.h>

static int is_letter(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '@';
}

/* Number of backslashes right before p[i]. */
static size_t backslashes_before(const char *p, size_t i)
{
    size_t k = 0;
    while (i > k && p[i - k - 1] == '\\')
        k++;
    return k;
}

int latex_strip_comments(const char *p, size_t n, struct sl_buf *out)
{
    size_t i = 0;
    int rc = 0;
    while (i < n && !rc) {
        const char *nl = memchr(p + i, '\n', n - i);
        size_t e = nl ? (size_t)(nl - p) : n; /* line is [i, e) */
        size_t s = i;
        while (s < e && (p[s] == ' ' || p[s] == '\t'))
            s++;
        if (s < e && p[s] == '%') {
            i = nl ? e + 1 : n; /* whole-line comment: gone with its newline */
            continue;
        }
        size_t cut = e;
        for (size_t k = i; k < e; k++)
            if (p[k] == '%' && backslashes_before(p, k) % 2 == 0) {
                cut = k + 1; /* keep the '%' (it also eats the line break in TeX) */
                break;
            }
        rc = sl_buf_append(out, p + i, cut - i);
        if (!rc && nl)
            rc = sl_buf_putc(out, '\n');
        i = nl ? e + 1 : n;
    }
    return rc;
}

/* Does p[i..] start with the control word `w` (with its backslash) not followed by a letter? */
static int at_cmd(const char *p, size_t n, size_t i, const char *w)
{
    size_t l = strlen(w);
    return i + l <= n && !memcmp(p + i, w, l) && (i + l == n || !is_letter(p[i + l]));
}

/* Find the matching \fi for an \if... whose body starts at i; sets *els to the position of
 * a same-level \else (or (size_t)-1). Returns the position of \fi or n. */
static size_t match_fi(const char *p, size_t n, size_t i, size_t *els)
{
    int depth = 0;
    *els = (size_t)-1;
    for (; i < n; i++) {
        if (p[i] != '\\')
            continue;
        if (i + 1 < n && p[i + 1] == '\\') {
            i++;
            continue;
        }
        if (at_cmd(p, n, i, "\\fi")) {
            if (depth == 0)
                return i;
            depth--;
        } else if (at_cmd(p, n, i, "\\else")) {
            if (depth == 0 && *els == (size_t)-1)
                *els = i;
        } else if (i + 3 < n && !memcmp(p + i, "\\if", 3) && is_letter(p[i + 3]) &&
                   !(i >= 7 && !memcmp(p + i - 7, "\\newif", 6))) {
            depth++;
        } else if (at_cmd(p, n, i, "\\if")) {
            depth++;
        }
    }
    return n;
}

int latex_resolve_conditionals(const char *p, size_t n, struct sl_buf *out)
{
    int rc = 0;
    size_t i = 0, copied = 0;
    while (i < n && !rc) {
        if (p[i] != '\\') {
            i++;
            continue;
        }
        if (i + 16 <= n && !memcmp(p + i, "\\begin{comment}", 15)) {
            const char *e = memmem(p + i, n - i, "\\end{comment}", 13);
            size_t stop = e ? (size_t)(e - p) + 13 : n;
            rc = sl_buf_append(out, p + copied, i - copied);
            i = copied = stop;
            continue;
        }
        int f = at_cmd(p, n, i, "\\iffalse"), t = !f && at_cmd(p, n, i, "\\iftrue");
        if (f || t) {
            size_t body = i + (f ? 8 : 7), els;
            size_t fi = match_fi(p, n, body, &els);
            rc = sl_buf_append(out, p + copied, i - copied);
            /* keep: iffalse -> else part; iftrue -> then part (resolved recursively) */
            size_t ks, ke;
            if (f) {
                ks = els == (size_t)-1 ? fi : els + 5;
                ke = fi;
            } else {
                ks = body;
                ke = els == (size_t)-1 ? fi : els;
            }
            while (ks < ke && (p[ks] == ' ' || p[ks] == '\t'))
                ks++;
            if (!rc && ke > ks)
                rc = latex_resolve_conditionals(p + ks, ke - ks, out);
            i = copied = fi < n ? fi + 3 : n;
            continue;
        }
        i++;
    }
    if (!rc && copied < n)
        rc = sl_buf_append(out, p + copied, n - copied);
    return rc;
}

static int has_word_at_line_start(const char *p, size_t n, const char *w)
{
    size_t l = strlen(w);
    for (const char *q = p; (q = memmem(q, (size_t)(p + n - q), w, l)) != NULL; q += l) {
        const char *s = q;
        while (s > p && (s[-1] == ' ' || s[-1] == '\t'))
            s--;
        if (s == p || s[-1] == '\n')
            return 1;
    }
    return 0;
}

static int ends_with(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && !strcmp(s + a - b, suf);
}

static int is_tex_name(const char *s)
{
    return ends_with(s, ".tex") || ends_with(s, ".ltx") || ends_with(s, ".latex") ||
           ends_with(s, ".TEX");
}

long latex_find_main(const struct latex_file *f, size_t n)
{
    long best = -1, ntex = 0, lone = -1;
    int best_doc = 0;
    for (size_t i = 0; i < n; i++) {
        if (is_tex_name(f[i].name) || !strcmp(f[i].name, "data")) {
            ntex++;
            lone = (long)i;
        }
        if (!has_word_at_line_start(f[i].data, f[i].len, "\\documentclass") &&
            !has_word_at_line_start(f[i].data, f[i].len, "\\documentstyle"))
            continue;
        int doc = memmem(f[i].data, f[i].len, "\\begin{document}", 16) != NULL;
        if (best < 0 || doc > best_doc || (doc == best_doc && f[i].len > f[best].len)) {
            best = (long)i;
            best_doc = doc;
        }
    }
    if (best < 0 && ntex == 1)
        best = lone;
    return best;
}

/* Normalise "./a/../b" style names for lookups; out has room for strlen(s)+1. */
static void norm_name(const char *s, char *out)
{
    size_t k = 0;
    while (*s) {
        if (s[0] == '.' && s[1] == '/') {
            s += 2;
            continue;
        }
        if (s[0] == '/' && k == 0) {
            s++;
            continue;
        }
        out[k++] = *s++;
    }
    out[k] = 0;
}

static long find_file(const struct latex_file *f, size_t n, const char *dir, const char *want)
{
    char *a = sl_xasprintf("%s%s", dir, want), *b = sl_xasprintf("%s%s.tex", dir, want);
    char *na = sl_xmalloc(strlen(a) + 1), *nb = sl_xmalloc(strlen(b) + 1);
    norm_name(a, na);
    norm_name(b, nb);
    long hit = -1;
    for (int pass = 0; pass < 2 && hit < 0; pass++)
        for (size_t i = 0; i < n && hit < 0; i++) {
            char *ni = sl_xmalloc(strlen(f[i].name) + 1);
            norm_name(f[i].name, ni);
            if (!strcmp(ni, pass ? na : nb) || (pass == 0 && !strcmp(ni, na)))
                hit = (long)i;
            free(ni);
        }
    free(a);
    free(b);
    free(na);
    free(nb);
    return hit;
}

struct flat {
    const struct latex_file *f;
    size_t n;
    char *dir; /* directory of the main file, "" or "sub/" */
    size_t *missing;
    unsigned char *active; /* files on the current \input chain (no cycles) */
};

static int flatten_one(struct flat *fl, size_t idx, int depth, struct sl_buf *out)
{
    struct sl_buf text = SL_BUF_INIT;
    sl_buf_init(&text, out->max ? out->max : 0);
    int rc = latex_strip_comments(fl->f[idx].data, fl->f[idx].len, &text);
    const char *p = text.data ? text.data : "";
    size_t n = text.len, i = 0, copied = 0;
    fl->active[idx] = 1;
    while (!rc && i < n) {
        const char *bs = memchr(p + i, '\\', n - i);
        if (!bs)
            break;
        i = (size_t)(bs - p);
        size_t l = at_cmd(p, n, i, "\\input") ? 6 : at_cmd(p, n, i, "\\include") ? 8 : 0;
        if (!l || backslashes_before(p, i) % 2) {
            i++;
            continue;
        }
        size_t j = i + l;
        while (j < n && (p[j] == ' ' || p[j] == '\t'))
            j++;
        size_t ns, ne;
        if (j < n && p[j] == '{') {
            ns = j + 1;
            const char *cb = memchr(p + ns, '}', n - ns);
            if (!cb) {
                i = j;
                continue;
            }
            ne = (size_t)(cb - p);
            j = ne + 1;
        } else {
            /* TeX primitive form: \input name */
            ns = j;
            while (j < n && p[j] != ' ' && p[j] != '\n' && p[j] != '\t' && p[j] != '}' && p[j] != '\\')
                j++;
            ne = j;
        }
        if (ne == ns || ne - ns > 1000) {
            i = j;
            continue;
        }
        char *name = sl_xstrndup(p + ns, ne - ns);
        long hit = find_file(fl->f, fl->n, fl->dir, name);
        if (hit < 0)
            hit = find_file(fl->f, fl->n, "", name);
        free(name);
        rc = sl_buf_append(out, p + copied, i - copied);
        if (!rc && hit >= 0 && depth < 8 && !fl->active[hit]) {
            rc = flatten_one(fl, (size_t)hit, depth + 1, out);
        } else if (!rc && hit < 0) {
            (*fl->missing)++;
        }
        i = copied = j;
    }
    if (!rc && copied < n)
        rc = sl_buf_append(out, p + copied, n - copied);
    fl->active[idx] = 0;
    sl_buf_release(&text);
    return rc;
}

int latex_flatten(const struct latex_file *f, size_t n, size_t main, struct sl_buf *out,
                  size_t *missing)
{
    size_t dummy = 0;
    struct flat fl = { f, n, NULL, missing ? missing : &dummy, sl_xcalloc(n ? n : 1, 1) };
    fl.dir = sl_xstrdup(f[main].name);
    char *slash = strrchr(fl.dir, '/');
    if (slash)
        slash[1] = 0;
    else
        fl.dir[0] = 0;
    int rc = flatten_one(&fl, main, 0, out);
    free(fl.dir);
    free(fl.active);
    return rc;
}

/* Skip a balanced {...} group at p[i] == '{'; returns the index after it or n. */
static size_t skip_group(const char *p, size_t n, size_t i)
{
    int depth = 0;
    for (; i < n; i++) {
        if (p[i] == '\\') {
            i++;
            continue;
        }
        if (p[i] == '{')
            depth++;
        else if (p[i] == '}' && --depth == 0)
            return i + 1;
    }
    return n;
}

struct macro {
    char *name; /* without backslash */
    char *body;
};

/* Parse a definition at i: \newcommand{\x}{body}, \newcommand\x{body}, \renewcommand...,
 * \def\x{body}. Returns the index after it (and fills m) or 0 when it is not an
 * argument-less definition (then *end still tells where the definition ends, if known). */
static size_t parse_def(const char *p, size_t n, size_t i, struct macro *m, size_t *end)
{
    size_t j;
    int def = 0;
    if (at_cmd(p, n, i, "\\newcommand"))
        j = i + 11;
    else if (at_cmd(p, n, i, "\\renewcommand"))
        j = i + 13;
    else if (at_cmd(p, n, i, "\\providecommand"))
        j = i + 15;
    else if (at_cmd(p, n, i, "\\def")) {
        j = i + 4;
        def = 1;
    } else
        return 0;
    *end = 0;
    if (j < n && p[j] == '*')
        j++;
    while (j < n && p[j] == ' ')
        j++;
    int braced = !def && j < n && p[j] == '{';
    if (braced)
        j++;
    while (j < n && p[j] == ' ')
        j++;
    if (j >= n || p[j] != '\\')
        return 0;
    size_t ns = ++j;
    while (j < n && is_letter(p[j]))
        j++;
    if (j == ns)
        return 0;
    size_t ne = j;
    while (j < n && p[j] == ' ')
        j++;
    if (braced) {
        if (j >= n || p[j] != '}')
            return 0;
        j++;
    }
    while (j < n && (p[j] == ' ' || p[j] == '\n'))
        j++;
    if (j >= n || p[j] != '{')
        return 0; /* arguments ([n] or #1): not expanded */
    size_t bs = j + 1, be = skip_group(p, n, j);
    if (be >= n && (be == 0 || p[be - 1] != '}'))
        return 0;
    *end = be;
    if (memchr(p + bs, '#', be - 1 - bs))
        return 0;
    m->name = sl_xstrndup(p + ns, ne - ns);
    m->body = sl_xstrndup(p + bs, be - 1 - bs);
    return be;
}

int latex_expand_macros(const char *p, size_t n, struct sl_buf *out)
{
    struct macro *ms = NULL;
    size_t nm = 0, cap = 0;
    struct sl_buf rest = SL_BUF_INIT;
    int rc = 0;
    /* pass 1: collect and remove argument-less definitions */
    size_t i = 0, copied = 0;
    while (i < n && !rc) {
        const char *bs = memchr(p + i, '\\', n - i);
        if (!bs)
            break;
        i = (size_t)(bs - p);
        struct macro m;
        size_t end = 0, after = parse_def(p, n, i, &m, &end);
        if (after) {
            if (nm == cap) {
                cap = cap ? cap * 2 : 16;
                ms = sl_xrealloc(ms, cap * sizeof(*ms));
            }
            if (nm < 4096)
                ms[nm++] = m;
            else {
                free(m.name);
                free(m.body);
            }
            rc = sl_buf_append(&rest, p + copied, i - copied);
            if (after < n && p[after] == '\n')
                after++;
            i = copied = after;
            continue;
        }
        i += 1 + (i + 1 < n);
    }
    if (!rc && copied < n)
        rc = sl_buf_append(&rest, p + copied, n - copied);
    /* pass 2: replace uses (one level; bodies are not re-expanded, as RedPajama does) */
    const char *q = rest.data ? rest.data : "";
    size_t qn = rest.len;
    i = copied = 0;
    while (!rc && nm && i < qn) {
        const char *bs = memchr(q + i, '\\', qn - i);
        if (!bs)
            break;
        i = (size_t)(bs - q);
        size_t ns = i + 1, ne = ns;
        while (ne < qn && is_letter(q[ne]))
            ne++;
        if (ne == ns) {
            i = ne + 1; /* control symbol like \\ or \% */
            continue;
        }
        long hit = -1;
        for (size_t k = nm; k-- > 0;)
            if (strlen(ms[k].name) == ne - ns && !memcmp(ms[k].name, q + ns, ne - ns)) {
                hit = (long)k;
                break;
            }
        if (hit >= 0) {
            rc = sl_buf_append(out, q + copied, i - copied);
            if (!rc)
                rc = sl_buf_puts(out, ms[hit].body);
            /* "\foo{}" and "\foo " lose their terminator */
            if (ne + 1 < qn && q[ne] == '{' && q[ne + 1] == '}')
                ne += 2;
            i = copied = ne;
            continue;
        }
        i = ne;
    }
    if (!rc && copied < qn)
        rc = sl_buf_append(out, q + copied, qn - copied);
    for (size_t k = 0; k < nm; k++) {
        free(ms[k].name);
        free(ms[k].body);
    }
    free(ms);
    sl_buf_release(&rest);
    return rc;
}

static const char *first_of(const char *p, size_t n, const char *const *words, int need_cmd_end)
{
    const char *best = NULL;
    for (size_t k = 0; words[k]; k++) {
        size_t l = strlen(words[k]);
        for (const char *q = p; q && (size_t)(p + n - q) >= l;) {
            q = memmem(q, (size_t)(p + n - q), words[k], l);
            if (!q)
                break;
            if (q > p && q[-1] == '\\') { /* "\\section" is a line break then text */
                q += l;
                continue;
            }
            const char *after = q + l;
            if (need_cmd_end && after < p + n && is_letter(*after)) {
                q = after;
                continue;
            }
            if (!best || q < best)
                best = q;
            break;
        }
    }
    return best;
}

int latex_cut_body(const char *p, size_t n, struct sl_buf *out)
{
    static const char *const heads[] = { "\\part", "\\chapter", "\\section", "\\subsection", NULL };
    static const char *const ends[] = { "\\bibliography{", "\\begin{thebibliography}",
                                        "\\begin{references}", "\\printbibliography",
                                        "\\end{document}", NULL };
    static const char *const docb[] = { "\\begin{document}", NULL };
    const char *s = first_of(p, n, heads, 1);
    if (!s) {
        s = first_of(p, n, docb, 0);
        if (s)
            s += 16;
    }
    if (!s)
        s = p;
    const char *e = first_of(s, (size_t)(p + n - s), ends, 0);
    if (!e)
        e = p + n;
    /* squeeze 3+ newlines (blank lines made by the removals) to 2; trim the ends */
    int rc = 0, nl = 0;
    while (s < e && (*s == '\n' || *s == ' ' || *s == '\t'))
        s++;
    while (e > s && (e[-1] == '\n' || e[-1] == ' ' || e[-1] == '\t'))
        e--;
    for (const char *q = s; q < e && !rc; q++) {
        if (*q == '\n') {
            if (++nl > 2)
                continue;
        } else if (*q != ' ' && *q != '\t') {
            nl = 0;
        } else if (nl) {
            /* spaces on an otherwise blank line */
            const char *r = q;
            while (r < e && (*r == ' ' || *r == '\t'))
                r++;
            if (r < e && *r == '\n') {
                q = r - 1;
                continue;
            }
        }
        rc = sl_buf_putc(out, *q);
    }
    return rc;
}

int latex_clean_paper(const struct latex_file *f, size_t n, size_t main, struct sl_buf *out,
                      size_t *missing)
{
    size_t max = out->max;
    struct sl_buf a = SL_BUF_INIT, b = SL_BUF_INIT, c = SL_BUF_INIT;
    sl_buf_init(&a, max);
    sl_buf_init(&b, max);
    sl_buf_init(&c, max);
    int rc = latex_flatten(f, n, main, &a, missing);
    if (!rc)
        rc = latex_resolve_conditionals(a.data ? a.data : "", a.len, &b);
    if (!rc)
        rc = latex_expand_macros(b.data ? b.data : "", b.len, &c);
    if (!rc)
        rc = latex_cut_body(c.data ? c.data : "", c.len, out);
    sl_buf_release(&a);
    sl_buf_release(&b);
    sl_buf_release(&c);
    return rc;
}
