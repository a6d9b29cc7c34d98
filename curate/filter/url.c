/* url: block and allow lists on the document's URL member (`rules: lists`, the default):
 * blocked domains (a host matches an entry or is a subdomain of it), blocked substrings of
 * the lower-cased URL, blocked words (the URL split at non-alphanumerics), and allowed
 * domains that always pass. Lists come inline or from files (one entry a line).
 * `rules: datatrove` is datatrove's URLFilter exactly (url_datatrove.c). */
#include "core/alloc.h"
#include "core/config.h"
#include "core/doc.h"
#include "core/err.h"
#include "core/stream.h"
#include "curate/filter/filter.h"
#include "curate/filter/strset.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct uf {
    struct sl_strset block, allow, words;
    char **subs;
    size_t nsubs;
    const char *key;
    struct sl_buf url;
};

static int domain_in(const struct sl_strset *s, const char *host, size_t n)
{
    if (!s->n)
        return 0;
    for (;;) {
        if (sl_strset_has(s, host, n))
            return 1;
        const char *dot = memchr(host, '.', n);
        if (!dot)
            return 0;
        n -= (size_t)(dot + 1 - host);
        host = dot + 1;
    }
}

static int uf_apply(struct sl_filter *f, struct sl_fctx *c, struct sl_filter_result *r)
{
    struct uf *u = f->state;
    r->keep = 1;
    r->score = 0;
    sl_buf_reset(&u->url);
    if (!c->doc || sl_doc_get_str(c->doc, u->key, &u->url) || !u->url.len)
        return 0;
    char *s = u->url.data;
    for (size_t i = 0; i < u->url.len; i++)
        if (s[i] >= 'A' && s[i] <= 'Z')
            s[i] += 32;
    const char *h = strstr(s, "://");
    h = h ? h + 3 : s;
    const char *at = strpbrk(h, "@/?#");
    if (at && *at == '@')
        h = at + 1;
    size_t hn = strcspn(h, "/?#:");
    if (domain_in(&u->allow, h, hn))
        return 0;
    r->score = 1;
    if (domain_in(&u->block, h, hn))
        return sl_filter_drop(r, "blocked_domain", 1);
    for (size_t i = 0; i < u->nsubs; i++)
        if (strstr(s, u->subs[i]))
            return sl_filter_drop(r, "blocked_substring", 1);
    if (u->words.n) {
        for (size_t i = 0; i < u->url.len;) {
            size_t j = i;
            while (j < u->url.len && ((s[j] >= 'a' && s[j] <= 'z') || (s[j] >= '0' && s[j] <= '9') ||
                                      (unsigned char)s[j] >= 0x80))
                j++;
            if (j > i && sl_strset_has(&u->words, s + i, j - i))
                return sl_filter_drop(r, "blocked_word", 1);
            i = j + 1;
        }
    }
    r->score = 0;
    return 0;
}

static void uf_release(struct sl_filter *f)
{
    struct uf *u = f->state;
    if (!u)
        return;
    sl_strset_release(&u->block);
    sl_strset_release(&u->allow);
    sl_strset_release(&u->words);
    for (size_t i = 0; i < u->nsubs; i++)
        free(u->subs[i]);
    free(u->subs);
    sl_buf_release(&u->url);
    free(u);
}

static int read_list(struct sl_cfg *p, const char *key, const struct sl_filter_env *env,
                     struct sl_strset *set, char ***subs, size_t *nsubs)
{
    const char **v = NULL;
    size_t n = 0;
    int rc = sl_cfg_strs(p, key, &v, &n);
    for (size_t i = 0; i < n && !rc; i++) {
        if (v[i][0] == '@') { /* @path: a file with one entry a line */
            const char *path = v[i] + 1;
            char *full = (path[0] == '/' || !env->config_dir) ? sl_xstrdup(path)
                                                              : sl_xasprintf("%s/%s", env->config_dir, path);
            FILE *fp = fopen(full, "rb");
            if (!fp) {
                rc = sl_err_set(SL_ERR_CONFIG, "%s: cannot open list '%s'\nhint: paths are relative to the config file",
                                sl_cfg_where(sl_cfg_child(p, key)), full);
                free(full);
                break;
            }
            struct sl_buf b = SL_BUF_INIT;
            char tmp[65536];
            size_t got;
            while ((got = fread(tmp, 1, sizeof(tmp), fp)) > 0)
                sl_buf_append(&b, tmp, got);
            fclose(fp);
            free(full);
            if (set) {
                sl_strset_add_lines(set, b.data ? b.data : "", b.len, 1, 1);
            } else {
                struct sl_strset tmpset;
                sl_strset_init(&tmpset);
                sl_strset_add_lines(&tmpset, b.data ? b.data : "", b.len, 1, 1);
                for (size_t k = 0; k < tmpset.cap; k++)
                    if (tmpset.slots[k].len != UINT32_MAX) {
                        *subs = sl_xrealloc(*subs, (*nsubs + 1) * sizeof(char *));
                        (*subs)[(*nsubs)++] = sl_xstrdup(sl_strset_str(&tmpset, &tmpset.slots[k]));
                    }
                sl_strset_release(&tmpset);
            }
            sl_buf_release(&b);
        } else if (set) {
            sl_strset_add_lines(set, v[i], strlen(v[i]), 1, 0);
        } else {
            *subs = sl_xrealloc(*subs, (*nsubs + 1) * sizeof(char *));
            char *low = sl_xstrdup(v[i]);
            for (char *q = low; *q; q++)
                if (*q >= 'A' && *q <= 'Z')
                    *q += 32;
            (*subs)[(*nsubs)++] = low;
        }
    }
    free(v);
    return rc;
}

int sl_filter_build_url(struct sl_filter *f, struct sl_cfg *p, const struct sl_filter_env *env)
{
    const char *rules;
    int rc = sl_cfg_str(p, "rules", "lists", &rules);
    if (rc)
        return rc;
    if (!strcmp(rules, "datatrove"))
        return sl_filter_build_url_datatrove(f, p, env);
    if (strcmp(rules, "lists"))
        return sl_err_set(SL_ERR_CONFIG, "%s: unknown url rules '%s'\nhint: lists (block/allow "
                                         "lists, the default) or datatrove (URLFilter's rules)",
                          sl_cfg_where(sl_cfg_child(p, "rules")), rules);
    struct uf *u = sl_xcalloc(1, sizeof(*u));
    f->state = u;
    f->apply = uf_apply;
    f->release = uf_release;
    sl_strset_init(&u->block);
    sl_strset_init(&u->allow);
    sl_strset_init(&u->words);
    rc = sl_cfg_str(p, "url_key", "url", &u->key);
    if (!rc) rc = read_list(p, "block_domains", env, &u->block, NULL, NULL);
    if (!rc) rc = read_list(p, "allow_domains", env, &u->allow, NULL, NULL);
    if (!rc) rc = read_list(p, "block_words", env, &u->words, NULL, NULL);
    if (!rc) rc = read_list(p, "block_substrings", env, NULL, &u->subs, &u->nsubs);
    return rc;
}
