/* The Hugging Face hub: hf://datasets/ORG/NAME[@REV]/PATH, its resolve URLs and its tree
 * API (folders listed page by page, the next page in a Link header). */
#include "core/alloc.h"
#include "core/err.h"
#include "core/remote_internal.h"

#include <json-c/json.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The hub's address (HF_ENDPOINT, as huggingface_hub reads it), without a trailing '/'. */
char *rm_hf_endpoint(void)
{
    const char *e = getenv("HF_ENDPOINT");
    char *s = sl_xstrdup(e && *e ? e : "https://huggingface.co");
    size_t n = strlen(s);
    while (n && s[n - 1] == '/')
        s[--n] = '\0';
    return s;
}

/* hf://datasets/ORG/NAME[@REV]/PATH into its parts; 0 or SL_ERR_USAGE. */
int rm_hf_parse(const char *url, char **repo, char **rev, char **path)
{
    const char *p = url + 5;
    if (strncmp(p, "datasets/", 9) != 0)
        return sl_err_set(SL_ERR_USAGE,
                          "cannot read '%s': only datasets are read from the hub\nhint: "
                          "hf://datasets/ORG/NAME/PATH",
                          url);
    p += 9;
    const char *s1 = strchr(p, '/');
    const char *s2 = s1 ? strchr(s1 + 1, '/') : NULL;
    if (!s1 || s1 == p || (s2 ? s2 : s1 + strlen(s1)) == s1 + 1)
        return sl_err_set(SL_ERR_USAGE,
                          "cannot read '%s': no dataset named\nhint: hf://datasets/ORG/NAME/PATH",
                          url);
    const char *end = s2 ? s2 : s1 + strlen(s1);
    char *r = sl_xstrndup(p, (size_t)(end - p));
    char *at = strchr(r, '@');
    *rev = sl_xstrdup(at ? at + 1 : "main");
    if (at)
        *at = '\0';
    *repo = r;
    *path = sl_xstrdup(s2 ? s2 + 1 : "");
    return 0;
}

static int cmp_entry(const void *a, const void *b)
{
    return strcmp(((const struct sl_remote_entry *)a)->rel,
                  ((const struct sl_remote_entry *)b)->rel);
}

int rm_hf_list_page(const char *body, size_t n, const char *repo, const char *rev, const char *path,
                    const char *const *exts, struct sl_remote_list *l)
{
    struct json_tokener *tok = json_tokener_new();
    struct json_object *a =
        tok && n <= INT32_MAX && body ? json_tokener_parse_ex(tok, body, (int)n) : NULL;
    json_tokener_free(tok);
    if (!a || !json_object_is_type(a, json_type_array)) {
        json_object_put(a);
        return sl_err_set(SL_ERR_FORMAT, "the hub's answer is not a JSON list");
    }
    size_t pl = strlen(path);
    int main_rev = !strcmp(rev, "main");
    for (size_t i = 0; i < json_object_array_length(a); i++) {
        struct json_object *o = json_object_array_get_idx(a, i), *ty, *p, *sz;
        if (!json_object_object_get_ex(o, "type", &ty) ||
            strcmp(json_object_get_string(ty), "file") ||
            !json_object_object_get_ex(o, "path", &p) ||
            !json_object_is_type(p, json_type_string) ||
            !json_object_object_get_ex(o, "size", &sz) || !json_object_is_type(sz, json_type_int) ||
            json_object_get_int64(sz) < 0)
            continue;
        const char *fp = json_object_get_string(p);
        if (pl && (strncmp(fp, path, pl) || fp[pl] != '/'))
            continue;
        const char *rel = pl ? fp + pl + 1 : fp;
        if (!rm_accepted(rel, exts))
            continue;
        char *u = sl_xasprintf("hf://datasets/%s%s%s/%s", repo, main_rev ? "" : "@",
                               main_rev ? "" : rev, fp);
        rm_list_push(l, u, rel, (uint64_t)json_object_get_int64(sz));
        free(u);
    }
    json_object_put(a);
    return 0;
}

/* The hub's folder `path` of t (hf://datasets/REPO[@REV]/PATH), by its tree API. */
int rm_hf_list(struct sl_remote_list *l, const struct rm_target *t, const char *const *exts)
{
    char *repo, *rev, *path;
    int rc = rm_hf_parse(t->url, &repo, &rev, &path);
    if (rc)
        return rc;
    char *ep = rm_hf_endpoint();
    size_t pl = strlen(path);
    while (pl && path[pl - 1] == '/')
        path[--pl] = '\0';
    char *url = sl_xasprintf("%s/api/datasets/%s/tree/%s%s%s?recursive=true", ep, repo, rev,
                             pl ? "/" : "", path);
    size_t first = l->n;
    while (url && !rc) {
        struct rm_resp r;
        rc = rm_request(t, url, "GET", 0, 0, NULL, RM_LIST_PAGE_MAX, &r);
        if (!rc && rm_hf_list_page(r.body.data, r.body.len, repo, rev, path, exts, l))
            rc = sl_err_wrap(SL_ERR_FORMAT, "cannot list '%s': ", t->shown);
        free(url);
        url = NULL;
        /* the next page, on the same hub only: the token goes nowhere else */
        if (!rc && r.link_next[0] && !strncmp(r.link_next, ep, strlen(ep)))
            url = sl_xstrdup(r.link_next);
        sl_buf_release(&r.body);
    }
    free(url);
    if (!rc && l->n > first)
        qsort(l->v + first, l->n - first, sizeof(*l->v), cmp_entry);
    free(ep);
    free(repo);
    free(rev);
    free(path);
    return rc;
}
