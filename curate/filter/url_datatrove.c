/* url with `rules: datatrove`: the rules of datatrove 0.10's URLFilter, the FineWeb
 * recipe's first filter, in its order, with its drop reasons:
 *
 *   domain               the registered domain (the label left of the public suffix, with
 *                        the suffix) is in the domain blocklist
 *   subdomain            the full host name is in the domain blocklist
 *   url                  the URL, as given, is in the URL blocklist
 *   hard_blacklisted     a word of the URL (runs of ASCII letters and digits, case kept) is
 *                        a banned word
 *   soft_blacklisted     at least soft_word_threshold (2) distinct soft-banned words
 *   blacklisted_subword  a banned sub-word occurs in the URL's letters and digits, lower-cased
 *                        (an Aho-Corasick automaton, one pass)
 *
 * The host is cut from the URL as tldextract 5 cuts it (lenient: scheme optional, user info,
 * port, IPv6 brackets, trailing dots and the ideographic full stops), the public suffix
 * comes from the Public Suffix List through libpsl (ICANN section, no implicit '*' rule:
 * tldextract's defaults), and the blocklist lookups keep the URL's case, as datatrove's do.
 * The blocklists are UT1's adult and malware lists as datatrove ships them
 * (url_filterblacklistsv0_3_0.tar.gz, or a directory with its `domains` and `urls`); the word
 * lists are built in (lexicons/url/). Score: 0 kept, 1 to 6 the reason above that dropped
 * the document (a histogram of reasons in `sluice stats`); each drop is also counted as
 * "<filter name>_<reason>" in the manifest. A document without a URL is kept (datatrove
 * stops on it), counted as "<filter name>_no_url", and has no score.
 */
#include "core/alloc.h"
#include "core/config.h"
#include "core/doc.h"
#include "core/err.h"
#include "core/utf8.h"
#include "curate/filter/aho.h"
#include "curate/filter/filter.h"
#include "curate/filter/lexicons.h"
#include "curate/filter/lineset.h"
#include "curate/filter/strset.h"

#include <libpsl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

/* datatrove's default soft_word_threshold */
#define SOFT_THRESHOLD 2

struct udt {
    struct sl_lineset domains, urls;
    struct sl_strset banned, soft;
    struct sl_aho sub;
    long soft_threshold;
    psl_ctx_t *psl;
    const char *key;
    struct sl_buf url, host, low, norm;
    const struct sl_strset_slot **seen; /* soft words found in one URL */
    size_t nseen, capseen;
    struct sl_filter_count count; /* the reason of a drop, counted in the manifest */
};

/* The reasons, in datatrove's order; a drop's score is its index + 1. */
static const char *const reasons[] = { "domain", "subdomain", "url", "hard_blacklisted",
                                       "soft_blacklisted", "blacklisted_subword" };

static int alnum(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

static int scheme_char(unsigned char c)
{
    return alnum(c) || c == '+' || c == '-' || c == '.';
}

/* Python's str.isspace() for the code point at the start (or, with back set, the end) of
 * s[0..n): its length in bytes, or 0. */
static size_t py_space_at(const char *s, size_t n, int back)
{
    if (!n)
        return 0;
    size_t k = 1;
    if (back)
        while (k < n && k < 4 && ((unsigned char)s[n - k] & 0xC0) == 0x80)
            k++;
    const unsigned char *p = (const unsigned char *)(back ? s + n - k : s);
    uint32_t cp;
    size_t len = sl_utf8_decode(p, back ? k : n, &cp);
    if (!len || (back && len != k))
        return 0;
    int ws = cp == ' ' || (cp >= '\t' && cp <= '\r') || (cp >= 0x1c && cp <= 0x1f) || cp == 0x85 ||
             cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 ||
             cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
    return ws ? len : 0;
}

/* The ideographic full stop U+3002, fullwidth U+FF0E and halfwidth U+FF61, which tldextract
 * reads as dots: 3 if s[0..n) starts (or with back, ends) with one, else 0. */
static size_t odd_dot_at(const char *s, size_t n, int back)
{
    if (n < 3)
        return 0;
    const char *p = back ? s + n - 3 : s;
    return (!memcmp(p, "\xE3\x80\x82", 3) || !memcmp(p, "\xEF\xBC\x8E", 3) ||
            !memcmp(p, "\xEF\xBD\xA1", 3))
               ? 3
               : 0;
}

/* The host of a URL as tldextract's lenient_netloc finds it, with its dots made ASCII, into
 * u->host. */
static void cut_host(struct udt *u, const char *s, size_t n)
{
    const char *end = s + n, *p = s;
    const char *ds = memmem(s, n, "//", 2);
    if (ds == s) {
        p = s + 2;
    } else if (ds && ds - s >= 2 && ds[-1] == ':') {
        const char *q = s;
        while (q < ds - 1 && scheme_char((unsigned char)*q))
            q++;
        if (q == ds - 1)
            p = ds + 2;
    }
    const char *ae = p;
    while (ae < end && *ae != '/' && *ae != '?' && *ae != '#')
        ae++;
    const char *h = p;
    for (const char *q = p; q < ae; q++)
        if (*q == '@')
            h = q + 1;
    const char *he;
    const char *rb = h < ae && *h == '[' ? memchr(h, ']', (size_t)(ae - h)) : NULL;
    if (rb) {
        he = rb + 1;
    } else {
        he = memchr(h, ':', (size_t)(ae - h));
        if (!he)
            he = ae;
        size_t k;
        while ((k = py_space_at(h, (size_t)(he - h), 0)))
            h += k;
        while ((k = py_space_at(h, (size_t)(he - h), 1)))
            he -= k;
        for (;;) {
            if (he > h && he[-1] == '.')
                he--;
            else if ((k = odd_dot_at(h, (size_t)(he - h), 1)))
                he -= k;
            else
                break;
        }
    }
    sl_buf_reset(&u->host);
    while (h < he) {
        size_t k = odd_dot_at(h, (size_t)(he - h), 0);
        sl_buf_putc(&u->host, k ? '.' : *h);
        h += k ? k : 1;
    }
}

/* Lower-case the host into u->low (ASCII and Unicode, code point by code point, as
 * tldextract lower-cases labels before it looks them up); dots stay where they were. */
static void lower_host(struct udt *u)
{
    sl_buf_reset(&u->low);
    const char *s = u->host.data;
    size_t n = u->host.len;
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x80) {
            sl_buf_putc(&u->low, (char)(c >= 'A' && c <= 'Z' ? c + 32 : c));
            i++;
            continue;
        }
        uint32_t cp;
        size_t len = sl_utf8_decode((const unsigned char *)s + i, n - i, &cp);
        if (!len) {
            sl_buf_putc(&u->low, (char)c);
            i++;
            continue;
        }
        char enc[4];
        size_t el = sl_utf8_encode((uint32_t)utf8proc_tolower((utf8proc_int32_t)cp), enc);
        sl_buf_append(&u->low, enc, el);
        i += len;
    }
    sl_buf_putc(&u->low, 0);
    u->low.len--;
}

static int is_suffix(const struct udt *u, const char *lowdom)
{
    return psl_is_public_suffix2(u->psl, lowdom, PSL_TYPE_ICANN | PSL_TYPE_NO_STAR_RULE) == 1;
}

/* The start (in u->host) of the registered domain, or -1 when there is none (no public
 * suffix, the host is a suffix itself, or the label before the suffix is empty): the
 * longest run of trailing labels that the list calls a public suffix, walking leftwards
 * from the last label until an empty label (where tldextract's walk stops too: past an
 * empty label it only continues under a wildcard rule, which it takes as covering it). */
static long registered_start(struct udt *u)
{
    lower_host(u);
    const char *h = u->host.data, *l = u->low.data;
    size_t hn = u->host.len, ln = u->low.len;
    if (!hn)
        return -1;
    long best = -1, best_h = -1; /* label start in low and in host of the longest suffix */
    size_t li = ln, hi = hn;
    for (;;) {
        size_t ls = li, hs = hi;
        while (ls > 0 && l[ls - 1] != '.')
            ls--;
        while (hs > 0 && h[hs - 1] != '.')
            hs--;
        if (ls == li) { /* an empty label */
            if (li < ln && best == (long)li + 1) {
                /* a wildcard rule under the suffix on its right covers it: part of the
                 * suffix (a probe label no exception rule names) */
                char *probe = sl_xasprintf("0-0.%s", l + best);
                int wild = is_suffix(u, probe);
                free(probe);
                if (wild)
                    best = (long)ls, best_h = (long)hs;
            }
            break;
        }
        if (is_suffix(u, l + ls))
            best = (long)ls, best_h = (long)hs;
        if (!ls)
            break;
        li = ls - 1;
        hi = hs - 1;
    }
    if (best <= 0)
        return -1;
    /* the domain label: the one left of the suffix, which must not be empty */
    size_t de = (size_t)best_h - 1, dsx = de;
    while (dsx > 0 && h[dsx - 1] != '.')
        dsx--;
    return dsx == de ? -1 : (long)dsx;
}

/* Is `word` (s[0..n)) in set, and new among this URL's soft words? */
static int new_soft(struct udt *u, const char *s, size_t n)
{
    const struct sl_strset_slot *e = sl_strset_find(&u->soft, s, n);
    if (!e)
        return 0;
    for (size_t i = 0; i < u->nseen; i++)
        if (u->seen[i] == e)
            return 0;
    if (u->nseen == u->capseen) {
        u->capseen = u->capseen ? u->capseen * 2 : 16;
        u->seen = sl_xrealloc(u->seen, u->capseen * sizeof(*u->seen));
    }
    u->seen[u->nseen++] = e;
    return 1;
}

/* The word rules: 4 hard, 5 soft, 6 sub-word, or 0. Words are the pieces of the URL
 * between runs of bytes other than ASCII letters and digits (Python's re.split: an empty
 * word at either end when the URL starts or ends with such a byte). */
static int word_rules(struct udt *u, const char *s, size_t n)
{
    u->nseen = 0;
    long soft = 0;
    size_t i = 0;
    for (;;) {
        size_t j = i;
        while (j < n && alnum((unsigned char)s[j]))
            j++;
        if (sl_strset_has(&u->banned, s + i, j - i))
            return 4;
        soft += new_soft(u, s + i, j - i);
        if (j == n)
            break;
        while (j < n && !alnum((unsigned char)s[j]))
            j++;
        i = j;
    }
    if (soft >= u->soft_threshold)
        return 5;
    sl_buf_reset(&u->norm);
    for (size_t k = 0; k < n; k++) {
        unsigned char c = (unsigned char)s[k];
        if (alnum(c))
            sl_buf_putc(&u->norm, (char)(c >= 'A' && c <= 'Z' ? c + 32 : c));
    }
    return sl_aho_any(&u->sub, u->norm.data, u->norm.len) ? 6 : 0;
}

static int udt_apply(struct sl_filter *f, struct sl_fctx *c, struct sl_filter_result *r)
{
    struct udt *u = f->state;
    r->keep = 1;
    r->score = 0;
    sl_buf_reset(&u->url);
    if (!c->doc || sl_doc_get_str(c->doc, u->key, &u->url) || !u->url.len) {
        r->score = NAN;
        u->count.name = "no_url";
        u->count.n = 1;
        r->counts = &u->count;
        r->ncounts = 1;
        return 0;
    }
    const char *s = u->url.data;
    size_t n = u->url.len;
    int why = 0;
    if (u->domains.n) {
        cut_host(u, s, n);
        long ds = registered_start(u);
        const char *h = u->host.data ? u->host.data : "";
        /* no registered domain: both lookups are of the empty string, as in datatrove */
        if (ds < 0) {
            if (sl_lineset_has(&u->domains, "", 0))
                why = 1;
        } else if (sl_lineset_has(&u->domains, h + ds, u->host.len - (size_t)ds)) {
            why = 1;
        } else {
            /* tldextract's fqdn leaves out a subdomain that is one empty label */
            size_t off = ds == 1 ? 1 : 0;
            if (sl_lineset_has(&u->domains, h + off, u->host.len - off))
                why = 2;
        }
    }
    if (!why && sl_lineset_has(&u->urls, s, n))
        why = 3;
    if (!why)
        why = word_rules(u, s, n);
    if (!why)
        return 0;
    u->count.name = reasons[why - 1];
    u->count.n = 1;
    r->counts = &u->count;
    r->ncounts = 1;
    return sl_filter_drop(r, reasons[why - 1], why);
}

static void udt_release(struct sl_filter *f)
{
    struct udt *u = f->state;
    if (!u)
        return;
    sl_lineset_release(&u->domains);
    sl_lineset_release(&u->urls);
    sl_strset_release(&u->banned);
    sl_strset_release(&u->soft);
    sl_aho_release(&u->sub);
    if (u->psl)
        psl_free(u->psl);
    sl_buf_release(&u->url);
    sl_buf_release(&u->host);
    sl_buf_release(&u->low);
    sl_buf_release(&u->norm);
    free(u->seen);
    free(u);
}

/* datatrove's normalize(): ASCII letters and digits only, lower-cased. */
static void normalize(struct sl_buf *b, const char *s, size_t n)
{
    sl_buf_reset(b);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (alnum(c))
            sl_buf_putc(b, (char)(c >= 'A' && c <= 'Z' ? c + 32 : c));
    }
}

/* One entry of a word list (a line with its terminator, or a config string): skipped when
 * it starts with '#', else normalised into the set or the automaton. */
static void add_word(struct udt *u, struct sl_strset *set, struct sl_aho *aho, const char *s,
                     size_t n)
{
    if (n && s[0] == '#')
        return;
    normalize(&u->norm, s, n);
    const char *w = u->norm.data ? u->norm.data : "";
    if (set)
        sl_strset_add(set, w, u->norm.len, 1);
    else
        sl_aho_add(aho, w, u->norm.len);
}

/* A built-in word list, line by line as Python's text mode splits it. */
static void add_lexicon(struct udt *u, const char *kind, struct sl_strset *set, struct sl_aho *aho)
{
    size_t len;
    const char *t = sl_lexicon(kind, NULL, &len);
    for (size_t i = 0; t && i < len;) {
        size_t j = i;
        while (j < len && t[j] != '\n' && t[j] != '\r')
            j++;
        size_t e = j < len ? j + 1 + (t[j] == '\r' && j + 1 < len && t[j + 1] == '\n') : len;
        add_word(u, set, aho, t + i, e - i);
        i = e;
    }
}

/* One extra entry: a word (normalised), or with ls set a domain or URL (stripped). */
static void add_extra(struct udt *u, const char *s, size_t len, struct sl_lineset *ls,
                      struct sl_strset *set, struct sl_aho *aho)
{
    if (!ls) {
        add_word(u, set, aho, s, len);
        return;
    }
    if (len && s[0] == '#')
        return;
    const char *a = s, *e = s + len;
    size_t k;
    while ((k = py_space_at(a, (size_t)(e - a), 0)))
        a += k;
    while ((k = py_space_at(a, (size_t)(e - a), 1)))
        e -= k;
    sl_lineset_add(ls, a, (size_t)(e - a));
}

/* A config list of extra entries: words (normalised) or, with ls set, domains/URLs; an
 * entry "@PATH" reads a file (relative to the config), one entry a line. */
static int read_extra(struct udt *u, struct sl_cfg *p, const struct sl_filter_env *env,
                      const char *key, struct sl_lineset *ls, struct sl_strset *set,
                      struct sl_aho *aho)
{
    const char **v = NULL;
    size_t n = 0;
    int rc = sl_cfg_strs(p, key, &v, &n);
    for (size_t i = 0; i < n && !rc; i++) {
        if (v[i][0] != '@') {
            add_extra(u, v[i], strlen(v[i]), ls, set, aho);
            continue;
        }
        const char *path = v[i] + 1;
        char *full = (path[0] == '/' || !env->config_dir) ? sl_xstrdup(path)
                                                          : sl_xasprintf("%s/%s", env->config_dir, path);
        char *dir = sl_xstrdup(full), *slash = strrchr(dir, '/');
        const char *base = slash ? slash + 1 : full;
        if (slash)
            *slash = 0;
        char *buf;
        size_t len;
        const char *const names[] = { base };
        rc = sl_lineset_read_members(slash ? (dir[0] ? dir : "/") : ".", names, 1, &buf, &len);
        if (rc) {
            rc = sl_err_wrap(rc, "%s: ", sl_cfg_where(sl_cfg_child(p, key)));
        } else {
            for (size_t a = 0; a < len;) {
                size_t b = a;
                while (b < len && buf[b] != '\n' && buf[b] != '\r')
                    b++;
                size_t e = b < len ? b + 1 + (buf[b] == '\r' && b + 1 < len && buf[b + 1] == '\n') : len;
                size_t k = a;
                while (k < b && (buf[k] == ' ' || buf[k] == '\t'))
                    k++;
                if (k < b) /* blank lines of a file are not entries */
                    add_extra(u, buf + a, e - a, ls, set, aho);
                a = e;
            }
            free(buf);
        }
        free(dir);
        free(full);
    }
    free(v);
    return rc;
}

static int load_blocklist(struct udt *u, struct sl_cfg *p, const struct sl_filter_env *env)
{
    const char *path;
    int rc = sl_cfg_str(p, "blocklist", NULL, &path);
    if (rc || !path)
        return rc;
    char *full = (path[0] == '/' || !env->config_dir) ? sl_xstrdup(path)
                                                      : sl_xasprintf("%s/%s", env->config_dir, path);
    static const char *const names[] = { "domains", "urls" };
    char *bufs[2];
    size_t lens[2];
    rc = sl_lineset_read_members(full, names, 2, bufs, lens);
    if (rc) {
        rc = sl_err_wrap(rc, "%s: ", sl_cfg_where(sl_cfg_child(p, "blocklist")));
    } else {
        rc = sl_lineset_load(&u->domains, bufs[0], lens[0]);
        if (!rc)
            rc = sl_lineset_load(&u->urls, bufs[1], lens[1]);
        else
            free(bufs[1]);
    }
    free(full);
    return rc;
}

static int load_psl(struct udt *u, struct sl_cfg *p, const struct sl_filter_env *env)
{
    const char *path;
    int rc = sl_cfg_str(p, "psl", NULL, &path);
    if (rc)
        return rc;
    if (!path) {
        u->psl = psl_latest(NULL);
        if (!u->psl)
            return sl_err_set(SL_ERR_NOTFOUND, "url: no Public Suffix List\nhint: install the "
                                               "Debian package publicsuffix, or give psl: PATH");
        return 0;
    }
    char *full = (path[0] == '/' || !env->config_dir) ? sl_xstrdup(path)
                                                      : sl_xasprintf("%s/%s", env->config_dir, path);
    u->psl = psl_load_file(full);
    if (!u->psl)
        rc = sl_err_set(SL_ERR_FORMAT, "%s: cannot read the Public Suffix List '%s'\nhint: a "
                                       "public_suffix_list.dat or .dafsa file",
                        sl_cfg_where(sl_cfg_child(p, "psl")), full);
    free(full);
    return rc;
}

int sl_filter_build_url_datatrove(struct sl_filter *f, struct sl_cfg *p,
                                  const struct sl_filter_env *env)
{
    struct udt *u = sl_xcalloc(1, sizeof(*u));
    f->state = u;
    f->apply = udt_apply;
    f->release = udt_release;
    sl_lineset_init(&u->domains);
    sl_lineset_init(&u->urls);
    sl_strset_init(&u->banned);
    sl_strset_init(&u->soft);
    sl_aho_init(&u->sub);
    int integrated = 1;
    int rc = sl_cfg_str(p, "url_key", "url", &u->key);
    if (!rc) rc = sl_cfg_int(p, "soft_word_threshold", SOFT_THRESHOLD, &u->soft_threshold);
    if (!rc) rc = sl_cfg_bool(p, "use_integrated_lists", 1, &integrated);
    if (!rc && integrated) {
        add_lexicon(u, "url-banned-words", &u->banned, NULL);
        add_lexicon(u, "url-soft-banned-words", &u->soft, NULL);
        add_lexicon(u, "url-banned-subwords", NULL, &u->sub);
        rc = load_blocklist(u, p, env);
    }
    if (!rc) rc = read_extra(u, p, env, "extra_domains", &u->domains, NULL, NULL);
    if (!rc) rc = read_extra(u, p, env, "extra_urls", &u->urls, NULL, NULL);
    if (!rc) rc = read_extra(u, p, env, "banned_words", NULL, &u->banned, NULL);
    if (!rc) rc = read_extra(u, p, env, "soft_banned_words", NULL, &u->soft, NULL);
    if (!rc) rc = read_extra(u, p, env, "banned_subwords", NULL, NULL, &u->sub);
    if (!rc) rc = load_psl(u, p, env);
    sl_aho_build(&u->sub);
    return rc;
}
