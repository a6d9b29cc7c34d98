/* The download stage: its own keys, URL options, URL lists for languages (URL templates),
 * Common Crawl paths files, the URL list a step writes before its command runs, and its
 * summary row (files, not documents). */
#include "pipeline/internal.h"

#include "core/alloc.h"
#include "core/atomic.h"
#include "core/buf.h"
#include "core/config.h"
#include "core/err.h"
#include "core/stream.h"

#include <ctype.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const struct key pl_download_own[] = {
    RUNKEY("languages", "languages for {lang} in url_template: a list, or a map language -> "
                        "number of files ({total})"),
    RUNKEY("paths_url", "URL of a list of paths (Common Crawl warc.paths.gz); file_numbers "
                        "picks lines (0-based)"),
    RUNKEY("url_prefix", "prefix of each path of paths_url (default: its scheme and host)"),
    END,
};

/* {n}, {n:05d}, {n:d}, {lang}, {total}, {total:05d} */
int pl_format_template(const char *tmpl, unsigned long long n, const char *lang,
                       unsigned long long total, char **out)
{
    struct sl_buf b = SL_BUF_INIT;
    const char *p = tmpl;
    int rc = 0;
    while (*p && !rc) {
        if (*p != '{') {
            sl_buf_putc(&b, *p++);
            continue;
        }
        const char *close = strchr(p, '}');
        if (!close) {
            rc = sl_err_set(SL_ERR_CONFIG, "url template '%s': '{' without '}'", tmpl);
            break;
        }
        char field[64];
        size_t fl = (size_t)(close - p - 1);
        if (fl >= sizeof(field)) {
            rc = sl_err_set(SL_ERR_CONFIG, "url template '%s': unknown field", tmpl);
            break;
        }
        memcpy(field, p + 1, fl);
        field[fl] = '\0';
        char *colon = strchr(field, ':');
        const char *spec = "";
        if (colon) {
            *colon = '\0';
            spec = colon + 1;
        }
        if (!strcmp(field, "lang") && !*spec && lang) {
            sl_buf_puts(&b, lang);
        } else if (!strcmp(field, "n") || (!strcmp(field, "total") && total)) {
            unsigned long long v = !strcmp(field, "n") ? n : total;
            int width = 0;
            if (*spec) {
                /* 05d, 2d, d */
                const char *q = spec;
                int zero = *q == '0';
                while (isdigit((unsigned char)*q))
                    width = width * 10 + (*q++ - '0');
                if (strcmp(q, "d") != 0 || width > 20 || (width && !zero && spec[0] != '0')) {
                    rc = sl_err_set(
                        SL_ERR_CONFIG,
                        "url template '%s': cannot read '{%s:%s}' (use {%s} or {%s:05d})", tmpl,
                        field, spec, field, field);
                    break;
                }
            }
            sl_buf_printf(&b, "%0*llu", width, v);
        } else {
            rc = sl_err_set(SL_ERR_CONFIG, "url template '%s': unknown field '{%s}'%s", tmpl, field,
                            !strcmp(field, "lang") ? " (give 'languages')"
                            : !strcmp(field, "total")
                                ? " (give 'languages' as a map: language -> number of files)"
                                : " (use {n}, {lang} or {total})");
            break;
        }
        p = close + 1;
    }
    if (rc) {
        sl_buf_release(&b);
        return rc;
    }
    *out = b.data ? sl_buf_detach(&b, NULL) : sl_xstrdup("");
    return 0;
}

/* The languages of a download section: a map language -> number of files (the numbers
 * into *totals, which the caller frees), or a list of names or "cs,da,de" (NeMo's form). */
static int read_languages(struct loader *L, struct sl_cfg *langs, struct sl_strlist *names,
                          unsigned long long **totals)
{
    int rc = 0;
    if (langs->kind == SL_CFG_MAP) {
        *totals = sl_xcalloc(langs->n + 1, sizeof(**totals));
        for (size_t i = 0; i < langs->n && !rc; i++) {
            long v = 0;
            rc = sl_cfg_node_int(langs->items[i], &v);
            if (!rc && v <= 0)
                rc = pl_where_err(langs->items[i], "expected a number of files > 0");
            langs->items[i]->used = 1;
            pl_push(names, langs->items[i]->key);
            (*totals)[i] = (unsigned long long)v;
        }
        return rc;
    }
    struct sl_strlist raw = { 0 };
    rc = pl_scalars(L, langs, &raw);
    for (size_t i = 0; !rc && i < raw.n; i++) {
        char *dup = sl_xstrdup(raw.v[i]), *save = NULL;
        for (char *tok = strtok_r(dup, ", ", &save); tok; tok = strtok_r(NULL, ", ", &save))
            pl_push(names, tok);
        free(dup);
    }
    sl_strlist_release(&raw);
    return rc;
}

/* The URL list of the languages: template t (from tmpl) for each language and each file
 * number (ns[0..nn) when use_numbers, else 0..its total), into the step's URL list text. */
static int format_urls(struct pl_step *s, struct sl_cfg *tmpl, const char *t,
                       const struct sl_strlist *names, const unsigned long long *totals,
                       int use_numbers, const uint64_t *ns, size_t nn)
{
    int rc = 0;
    struct sl_buf text = SL_BUF_INIT;
    size_t count = 0;
    for (size_t i = 0; !rc && i < names->n; i++) {
        unsigned long long total = totals ? totals[i] : 0;
        size_t m = use_numbers ? nn : (size_t)total;
        for (size_t j = 0; !rc && j < m; j++) {
            unsigned long long n = use_numbers ? ns[j] : j;
            if (total && n >= total)
                continue;
            char *u = NULL;
            rc = pl_format_template(t, n, names->v[i], total, &u);
            if (rc) {
                rc = pl_where_err(tmpl, "%s", sl_err_msg());
            } else {
                sl_buf_printf(&text, "%s\n", u);
                count++;
            }
            free(u);
        }
    }
    if (!rc) {
        s->prep = PL_PREP_URLS;
        s->urls_text = text.data ? sl_buf_detach(&text, NULL) : sl_xstrdup("");
        s->note = sl_xasprintf("%s: %zu URLs (%zu languages x file_numbers) in %s", s->label, count,
                               names->n, s->urls_path);
    }
    sl_buf_release(&text);
    return rc;
}

/* download with `languages`: url_template for each language and file (file_numbers, the
 * string `numbers`, or each language's number of files). */
static int language_urls(struct loader *L, struct pl_step *s, struct sl_cfg *langs,
                         struct sl_cfg *tmpl, struct sl_cfg *nums, const char *numbers)
{
    if (!tmpl)
        return pl_where_err(langs, "'languages' needs a 'url_template' with {lang}");
    char *t = NULL;
    struct sl_strlist names = { 0 };
    unsigned long long *totals = NULL;
    uint64_t *ns = NULL;
    size_t nn = 0;
    int rc = pl_one_scalar(L, tmpl, &t);
    if (!rc)
        rc = read_languages(L, langs, &names, &totals);
    if (!rc && numbers && sl_parse_ranges(numbers, &ns, &nn))
        rc = pl_where_err(nums, "%s", sl_err_msg());
    if (!rc && !numbers && !totals)
        rc = pl_where_err(langs, "give 'file_numbers' (which files of each language), or "
                                 "'languages' as a map: language -> number of files");
    if (!rc && names.n == 0)
        rc = pl_where_err(langs, "no languages given");
    if (!rc)
        rc = format_urls(s, tmpl, t, &names, totals, numbers != NULL, ns, nn);
    free(ns);
    free(totals);
    sl_strlist_release(&names);
    free(t);
    return rc;
}

/* A step that fetches the paths file at `url` into pdir (OUT/.sluice/paths), inserted before
 * the download step s, the pipeline's last, which comes to depend on it. Returns the
 * download step (moved). */
static struct pl_step *insert_paths_fetch(struct pl_pipeline *p, struct pl_step *s, const char *url,
                                          char *pdir, char *label)
{
    struct pl_step main = *s;
    p->n--;
    struct pl_step *f = pl_new_step(p, PL_DOWNLOAD);
    f->label = label;
    f->out = pdir;
    pl_push(&f->argv, "--out");
    pl_push(&f->argv, pdir);
    pl_push(&f->argv, "--url");
    pl_push(&f->argv, url);
    f->aux = 1;
    p->steps = sl_xrealloc(p->steps, (p->n + 1) * sizeof(*p->steps));
    p->steps[p->n++] = main;
    s = &p->steps[p->n - 1];
    pl_add_dep(s, p->n - 2);
    return s;
}

/* download with `paths_url`: first fetch the paths file, then download its lines (those
 * of file_numbers, the string `numbers`, or all), each after url_prefix (default: the
 * scheme://host/ of the paths URL). *sp, the download step, moves behind the fetch. */
static int paths_urls(struct loader *L, struct pl_pipeline *p, struct pl_step **sp,
                      struct sl_cfg *paths, struct sl_cfg *prefix, struct sl_cfg *tmpl,
                      const char *numbers)
{
    if (tmpl)
        return pl_where_err(tmpl, "'url_template' does not go with 'paths_url' (the paths "
                                  "file lists the files)");
    char *url = NULL, *pre = NULL;
    int rc = pl_one_scalar(L, paths, &url);
    if (!rc && prefix)
        rc = pl_one_scalar(L, prefix, &pre);
    if (!rc && !pre) {
        const char *h = strstr(url, "://");
        const char *slash = h ? strchr(h + 3, '/') : NULL;
        pre = slash ? sl_xstrndup(url, (size_t)(slash - url + 1)) : sl_xasprintf("%s/", url);
    }
    if (!rc) {
        char *pdir = sl_xasprintf("%s/.sluice/paths", (*sp)->out);
        const char *base = strrchr(url, '/');
        base = base && base[1] ? base + 1 : "paths";
        size_t q = strcspn(base, "?#");
        char *bname = sl_xstrndup(base, q);
        struct pl_step *s =
            insert_paths_fetch(p, *sp, url, pdir, sl_xasprintf("%s/paths", (*sp)->label));
        *sp = s;
        s->prep = PL_PREP_PATHS;
        s->paths_file = sl_xasprintf("%s/%s", pdir, bname);
        pl_push(&s->inputs, s->paths_file);
        s->paths_prefix = pre;
        pre = NULL;
        s->paths_numbers = numbers ? sl_xstrdup(numbers) : NULL;
        s->note =
            sl_xasprintf("%s: lines %s of %s, each prefixed with %s, in %s", s->label,
                         numbers ? numbers : "(all)", s->paths_file, s->paths_prefix, s->urls_path);
        free(bname);
    }
    free(url);
    free(pre);
    return rc;
}

/* download: the URL options, or a URL list for languages / a paths file. */
static int download_urls(struct loader *L, struct sl_cfg *map, struct pl_pipeline *p, size_t idx)
{
    struct sl_cfg *langs = pl_child(map, "languages");
    struct sl_cfg *paths = pl_child(map, "paths_url");
    struct sl_cfg *prefix = pl_child(map, "url_prefix");
    struct sl_cfg *tmpl = pl_child(map, "url_template");
    struct sl_cfg *nums = pl_child(map, "file_numbers");
    int rc = 0;
    if (langs)
        langs->used = 1;
    if (paths)
        paths->used = 1;
    if (prefix)
        prefix->used = 1;
    if (prefix && !paths)
        return pl_where_err(prefix, "'url_prefix' goes with 'paths_url'");
    if (!langs && !paths)
        return 0;
    if (langs && paths)
        return pl_where_err(paths, "give 'languages' or 'paths_url', not both");
    struct pl_step *s = &p->steps[idx];
    char *numbers = NULL;
    if (nums) {
        struct sl_strlist v = { 0 };
        rc = pl_scalars(L, nums, &v);
        if (!rc)
            numbers = pl_strlist_join(&v, ",");
        sl_strlist_release(&v);
        if (rc)
            return rc;
    }
    s->urls_path = sl_xasprintf("%s/.sluice/urls.txt", s->out);
    if (langs)
        rc = language_urls(L, s, langs, tmpl, nums, numbers);
    else
        rc = paths_urls(L, p, &s, paths, prefix, tmpl, numbers);
    free(numbers);
    if (!rc) {
        pl_push(&s->argv, "--url-list");
        pl_push(&s->argv, s->urls_path);
    }
    return rc;
}

/* The options of a download step, minus what download_urls turned into a URL list. */
static int download_options(struct loader *L, struct sl_cfg *map, struct pl_step *s)
{
    int list = pl_child(map, "languages") || pl_child(map, "paths_url");
    const struct key *all = pl_stage_keys(PL_DOWNLOAD);
    if (!list)
        return pl_section_options(L, all, map, s);
    /* url_template and file_numbers were read into the URL list */
    struct key rest[64];
    size_t n = 0;
    for (const struct key *k = all; k->key && n < sizeof(rest) / sizeof(rest[0]) - 1; k++)
        if (strcmp(k->key, "url_template") && strcmp(k->key, "file_numbers"))
            rest[n++] = *k;
    rest[n] = (struct key)END;
    struct sl_cfg *u = pl_child(map, "url");
    struct sl_cfg *ul = pl_child(map, "url_list");
    if (u || ul)
        return pl_where_err(u ? u : ul, "'%s' does not go with 'languages' or 'paths_url'",
                            u ? "url" : "url_list");
    return pl_section_options(L, rest, map, s);
}

/* OUT and OUT/manifest.json, the options, the URL list (no inputs: 'in' is refused). */
int pl_download_build(struct loader *L, struct sl_cfg *m, struct pl_step *s, size_t idx,
                      struct flow *fl)
{
    (void)fl;
    pl_push(&s->argv, s->out);
    s->counts_manifest = sl_xasprintf("%s/manifest.json", s->out);
    int rc = download_options(L, m, s);
    if (!rc)
        rc = download_urls(L, m, L->p, idx);
    if (!rc && m->kind == SL_CFG_MAP && pl_child(m, "in"))
        rc = pl_where_err(pl_child(m, "in"), "'download' reads URLs, not 'in'");
    return rc;
}

/* A download's counts are the files it wrote (its manifest's outputs). */
void pl_download_report(struct pl_row *r, struct json_object *m)
{
    if (!m)
        return;
    struct json_object *outs = NULL;
    r->docs_in = r->docs_out = json_object_object_get_ex(m, "outputs", &outs)
                                   ? (unsigned long long)json_object_array_length(outs)
                                   : 0;
    r->files = 1;
}

static int write_list(const char *path, const char *text, size_t len)
{
    char *dir = sl_xstrdup(path);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = '\0';
    int rc = slash ? sl_mkdir_p(dir) : 0;
    free(dir);
    if (!rc)
        rc = sl_write_file_atomic(path, text, len);
    return rc;
}

int pl_step_prepare(const struct pl_step *s)
{
    if (s->prep == PL_PREP_URLS)
        return write_list(s->urls_path, s->urls_text, strlen(s->urls_text));
    if (s->prep != PL_PREP_PATHS)
        return 0;
    uint64_t *ns = NULL;
    size_t nn = 0;
    if (s->paths_numbers && sl_parse_ranges(s->paths_numbers, &ns, &nn))
        return sl_err_wrap(SL_ERR_CONFIG, "file_numbers: ");
    struct sl_reader *r = NULL;
    struct sl_reader_opts ro;
    memset(&ro, 0, sizeof(ro));
    ro.max_output = 1ull << 32;
    int rc = sl_reader_open(&r, s->paths_file, &ro);
    struct sl_buf text = SL_BUF_INIT;
    uint64_t lineno = 0;
    size_t k = 0;
    while (!rc) {
        const char *line;
        size_t len;
        int got = sl_reader_getline(r, &line, &len, 1u << 16);
        if (got < 0) {
            rc = got;
            break;
        }
        if (got == 0)
            break;
        while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
            len--;
        if (!len)
            continue;
        uint64_t this = lineno++;
        if (ns) {
            while (k < nn && ns[k] < this)
                k++;
            if (k >= nn)
                break;
            if (ns[k] != this)
                continue;
        }
        sl_buf_puts(&text, s->paths_prefix);
        sl_buf_append(&text, line, len);
        sl_buf_putc(&text, '\n');
    }
    sl_reader_close(r);
    free(ns);
    if (!rc && text.len == 0)
        rc = sl_err_set(SL_ERR_NOTFOUND, "'%s' has no paths%s", s->paths_file,
                        s->paths_numbers ? " at the lines file_numbers picks" : "");
    if (!rc)
        rc = write_list(s->urls_path, text.data, text.len);
    sl_buf_release(&text);
    return rc;
}
