/* The data's facts from its tokenize manifests (dataset/datainfo.h). */
#include "dataset/datainfo.h"

#include "core/alloc.h"
#include "core/buf.h"
#include "core/err.h"
#include "core/file.h"
#include "core/stream.h"

#include <json-c/json.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int is_number(const char *w)
{
    char *end;
    strtod(w, &end);
    return end != w && !*end;
}

/* an absolute form of path (realpath when it exists, else cwd + path) */
static char *absolute(const char *path)
{
    char buf[PATH_MAX];
    if (realpath(path, buf))
        return sl_xstrdup(buf);
    if (path[0] == '/' || !getcwd(buf, sizeof(buf)))
        return sl_xstrdup(path);
    return sl_xasprintf("%s/%s", buf, path);
}

char *data_info_manifest_for(const char *prefix)
{
    size_t n = strlen(prefix);
    const char *suffix = "_document";
    size_t sn = strlen(suffix);
    /* PREFIX_text_document -> PREFIX.manifest.json; keys may hold '_', so try each cut */
    if (n > sn && !strcmp(prefix + n - sn, suffix)) {
        for (size_t cut = n - sn; cut > 0; cut--) {
            if (prefix[cut] != '_' || cut == n - sn)
                continue;
            char *cand = sl_xasprintf("%.*s.manifest.json", (int)cut, prefix);
            if (sl_file_exists(cand))
                return cand;
            free(cand);
        }
    }
    char *cand = sl_xasprintf("%s.manifest.json", prefix);
    if (sl_file_exists(cand))
        return cand;
    free(cand);
    return NULL;
}

static struct json_object *read_json(const char *path)
{
    struct sl_buf b = SL_BUF_INIT;
    b.max = 64u << 20;
    struct json_object *o = NULL;
    if (sl_read_file(path, &b) == 0)
        o = json_tokener_parse(b.data ? b.data : "");
    sl_buf_release(&b);
    return o;
}

static const char *jstr(struct json_object *o, const char *key)
{
    struct json_object *v;
    if (o && json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_string))
        return json_object_get_string(v);
    return NULL;
}

static long jlong(struct json_object *o, const char *key, long def)
{
    struct json_object *v;
    if (o && json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_int))
        return (long)json_object_get_int64(v);
    return def;
}

/* the spec with its path made absolute: as written when it exists, else next to the manifest */
static char *resolve_spec(const char *spec, const char *manifest)
{
    const char *colon = strchr(spec, ':');
    const char *path = colon ? colon + 1 : spec, *slash = strrchr(manifest, '/');
    int kl = colon ? (int)(colon - spec + 1) : 0;
    struct stat sb;
    char *p;
    if (path[0] == '/' || stat(path, &sb) == 0 || !slash)
        p = absolute(path);
    else {
        char *near = sl_xasprintf("%.*s/%s", (int)(slash - manifest), manifest, path);
        p = absolute(near);
        free(near);
    }
    char *r = sl_xasprintf("%.*s%s", kl, spec, p);
    free(p);
    return r;
}

int data_info_read(struct data_info *d, const char *prefix)
{
    memset(d, 0, sizeof(*d));
    d->vocab_size = -1;
    d->eod_id = -1;
    if (!prefix)
        return 0;
    char *all = sl_xstrdup(prefix), *save = NULL, *first_with = NULL;
    struct sl_buf abs = SL_BUF_INIT;
    int rc = 0;
    for (char *w = strtok_r(all, " \t\n", &save); w && !rc; w = strtok_r(NULL, " \t\n", &save)) {
        if (abs.len)
            sl_buf_puts(&abs, " ");
        if (is_number(w)) {
            sl_buf_puts(&abs, w);
            continue;
        }
        char *a = absolute(w);
        sl_buf_puts(&abs, a);
        free(a);
        char *man = data_info_manifest_for(w);
        if (!man)
            continue;
        struct json_object *m = read_json(man), *settings = NULL;
        if (!m || !json_object_object_get_ex(m, "settings", &settings) ||
            !jstr(settings, "tokenizer")) {
            json_object_put(m);
            free(man);
            continue;
        }
        char *spec = resolve_spec(jstr(settings, "tokenizer"), man);
        const char *kind = jstr(settings, "tokenizer_kind");
        long vocab = jlong(settings, "vocab_size", -1), eod = jlong(settings, "eod_id", -1);
        if (!d->manifests++) {
            d->manifest = absolute(man);
            d->tokenizer = spec;
            d->kind = kind ? sl_xstrdup(kind) : NULL;
            d->vocab_size = vocab;
            d->eod_id = eod;
            first_with = sl_xstrdup(w);
            spec = NULL;
        } else if (strcmp(spec, d->tokenizer) != 0 || vocab != d->vocab_size) {
            rc = sl_err_set(SL_ERR_CONFIG,
                            "data.prefix: '%s' and '%s' were tokenized with different tokenizers "
                            "('%s', %ld ids against '%s', %ld ids)\nhint: token ids of different "
                            "tokenizers mean different things; re-tokenize one of them with the "
                            "other's tokenizer",
                            first_with, w, d->tokenizer, d->vocab_size, spec, vocab);
        } else if (eod != d->eod_id && d->eod_id >= 0 && eod >= 0) {
            rc = sl_err_set(SL_ERR_CONFIG,
                            "data.prefix: '%s' and '%s' use different end-of-document ids (%ld "
                            "and %ld)",
                            first_with, w, d->eod_id, eod);
        } else if (d->eod_id < 0) {
            d->eod_id = eod;
        }
        free(spec);
        json_object_put(m);
        free(man);
    }
    d->prefix_abs = sl_buf_detach(&abs, NULL);
    free(all);
    free(first_with);
    if (rc)
        data_info_release(d);
    return rc;
}

void data_info_release(struct data_info *d)
{
    free(d->prefix_abs);
    free(d->manifest);
    free(d->tokenizer);
    free(d->kind);
    memset(d, 0, sizeof(*d));
    d->vocab_size = -1;
    d->eod_id = -1;
}

char *data_info_prefix_hint(const char *prefix)
{
    size_t n = strlen(prefix);
    char *base = sl_xstrdup(prefix);
    if (n > 4 && (!strcmp(base + n - 4, ".bin") || !strcmp(base + n - 4, ".idx")))
        base[n - 4] = 0;
    char *hint = NULL;
    char *b = sl_xasprintf("%s.bin", base), *i = sl_xasprintf("%s.idx", base);
    if (strcmp(base, prefix) != 0 && sl_file_exists(b) && sl_file_exists(i)) {
        hint = sl_xasprintf("\nhint: a prefix names the pair without its extension: "
                            "data.prefix=%s",
                            base);
    } else {
        char *man = sl_xasprintf("%s.manifest.json", base);
        struct json_object *m = sl_file_exists(man) ? read_json(man) : NULL, *settings, *keys;
        if (m && json_object_object_get_ex(m, "settings", &settings) &&
            json_object_object_get_ex(settings, "json_keys", &keys) &&
            json_object_is_type(keys, json_type_array) && json_object_array_length(keys) > 0) {
            const char *k = json_object_get_string(json_object_array_get_idx(keys, 0));
            hint = sl_xasprintf("\nhint: sluice tokenize wrote '%s_%s_document.bin/.idx' for "
                                "--out %s: data.prefix=%s_%s_document",
                                base, k, base, base, k);
        }
        json_object_put(m);
        free(man);
    }
    free(b);
    free(i);
    free(base);
    return hint;
}

static void json_str_or_null(struct sl_buf *out, const char *s)
{
    if (s)
        sl_buf_json_str(out, s, strlen(s));
    else
        sl_buf_puts(out, "null");
}

void data_info_to_json(const struct data_info *d, struct sl_buf *out)
{
    sl_buf_puts(out, "{\"prefix\": ");
    json_str_or_null(out, d->prefix_abs);
    sl_buf_puts(out, ", \"manifest\": ");
    json_str_or_null(out, d->manifest);
    sl_buf_puts(out, ", \"tokenizer\": ");
    json_str_or_null(out, d->tokenizer);
    sl_buf_puts(out, ", \"tokenizer_kind\": ");
    json_str_or_null(out, d->kind);
    sl_buf_printf(out, ", \"vocab_size\": %ld, \"eod_id\": %ld}", d->vocab_size, d->eod_id);
}

/* The spec of the tokenizer a step directory carries ("spm:tokenizer.model", "gpt2:.",
 * relative to it) with the path made absolute, or NULL when its file is not there. */
static char *carried_spec(const char *step_dir, const char *rel)
{
    const char *colon = strchr(rel, ':');
    if (!colon || colon[1] == '/' || strstr(rel, ".."))
        return NULL;
    char *dir = absolute(step_dir);
    char *path = strcmp(colon + 1, ".") ? sl_xasprintf("%s/%s", dir, colon + 1) : sl_xstrdup(dir);
    struct stat sb;
    char *r = stat(path, &sb) == 0 ? sl_xasprintf("%.*s%s", (int)(colon - rel + 1), rel, path)
                                    : NULL;
    free(path);
    free(dir);
    return r;
}

int data_info_from_checkpoint(struct data_info *d, const char *step_dir)
{
    memset(d, 0, sizeof(*d));
    d->vocab_size = -1;
    d->eod_id = -1;
    char *jp = sl_xasprintf("%s/checkpoint.json", step_dir);
    struct json_object *o = read_json(jp), *data = NULL;
    free(jp);
    if (!o)
        return sl_err_set(SL_ERR_FORMAT, "cannot read '%s/checkpoint.json'", step_dir);
    if (json_object_object_get_ex(o, "data", &data)) {
        const char *s;
        if ((s = jstr(data, "prefix")))
            d->prefix_abs = sl_xstrdup(s);
        if ((s = jstr(data, "manifest")))
            d->manifest = sl_xstrdup(s);
        if ((s = jstr(data, "tokenizer")))
            d->tokenizer = sl_xstrdup(s);
        if ((s = jstr(data, "tokenizer_copy"))) {
            char *copy = carried_spec(step_dir, s);
            if (copy) {
                free(d->tokenizer);
                d->tokenizer = copy;
            }
        }
        if ((s = jstr(data, "tokenizer_kind")))
            d->kind = sl_xstrdup(s);
        d->vocab_size = jlong(data, "vocab_size", -1);
        d->eod_id = jlong(data, "eod_id", -1);
        d->manifests = d->manifest != NULL;
    }
    json_object_put(o);
    return 0;
}
