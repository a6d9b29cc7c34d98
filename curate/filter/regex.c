/* regex: PCRE2 (JIT) patterns that drop the document on a match, or drop the lines that
 * match (docs/filters.md). */
#include "core/alloc.h"
#include "core/config.h"
#include "core/err.h"
#include "curate/filter/filter.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <string.h>

struct rx {
    pcre2_code **re;
    size_t n;
    int drop_lines;
    pcre2_match_data *md;
    struct sl_buf out;
};

static int any_match(struct rx *x, const char *s, size_t n)
{
    for (size_t i = 0; i < x->n; i++)
        if (pcre2_match(x->re[i], (PCRE2_SPTR)s, n, 0, 0, x->md, NULL) >= 0)
            return 1;
    return 0;
}

static int rx_apply(struct sl_filter *f, struct sl_fctx *c, struct sl_filter_result *r)
{
    struct rx *x = f->state;
    r->keep = 1;
    r->score = 0;
    if (!x->drop_lines) {
        if (any_match(x, c->text, c->len)) {
            r->keep = 0;
            r->score = 1;
            r->reason = "regex_match";
        }
        return 0;
    }
    sl_buf_reset(&x->out);
    size_t start = 0, removed = 0;
    for (size_t i = 0; i <= c->len; i++) {
        if (i < c->len && c->text[i] != '\n')
            continue;
        size_t e = i < c->len ? i + 1 : i;
        if (any_match(x, c->text + start, i - start))
            removed++;
        else
            sl_buf_append(&x->out, c->text + start, e - start);
        start = i + 1;
    }
    r->score = (double)removed;
    if (removed)
        sl_fctx_set_text(c, x->out.data ? x->out.data : "", x->out.len);
    return 0;
}

static void rx_release(struct sl_filter *f)
{
    struct rx *x = f->state;
    if (!x)
        return;
    for (size_t i = 0; i < x->n; i++)
        pcre2_code_free(x->re[i]);
    free(x->re);
    pcre2_match_data_free(x->md);
    sl_buf_release(&x->out);
    free(x);
}

int sl_filter_build_regex(struct sl_filter *f, struct sl_cfg *p, const struct sl_filter_env *env)
{
    struct rx *x = sl_xcalloc(1, sizeof(*x));
    f->state = x;
    f->apply = rx_apply;
    f->release = rx_release;
    x->md = pcre2_match_data_create(4, NULL);
    const char *action;
    int icase = 0, rc = sl_cfg_str(p, "action", "drop_document", &action);
    if (!rc) rc = sl_cfg_bool(p, "case_insensitive", 0, &icase);
    if (!rc && strcmp(action, "drop_document") && strcmp(action, "drop_lines"))
        rc = sl_err_set(SL_ERR_CONFIG, "%s: action: expected drop_document or drop_lines, got '%s'",
                        sl_cfg_where(sl_cfg_child(p, "action")), action);
    x->drop_lines = !rc && !strcmp(action, "drop_lines");
    f->modifies = x->drop_lines;
    const char **pats = NULL;
    size_t np = 0;
    if (!rc) rc = sl_cfg_strs(p, "patterns", &pats, &np);
    if (!rc && !np)
        rc = sl_err_set(SL_ERR_CONFIG, "%s: regex: 'patterns' is required (a list of PCRE2 patterns)",
                        sl_cfg_where(p));
    if (!rc) {
        x->re = sl_xcalloc(np, sizeof(*x->re));
        for (size_t i = 0; i < np && !rc; i++) {
            int err;
            PCRE2_SIZE off;
            x->re[i] = pcre2_compile((PCRE2_SPTR)pats[i], PCRE2_ZERO_TERMINATED,
                                     PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF |
                                         (icase ? PCRE2_CASELESS : 0) | (x->drop_lines ? 0 : PCRE2_MULTILINE),
                                     &err, &off, NULL);
            if (!x->re[i]) {
                PCRE2_UCHAR msg[256];
                pcre2_get_error_message(err, msg, sizeof(msg));
                rc = sl_err_set(SL_ERR_CONFIG, "%s: bad pattern '%s' at offset %zu: %s",
                                sl_cfg_where(sl_cfg_child(p, "patterns")), pats[i], (size_t)off, (char *)msg);
                break;
            }
            pcre2_jit_compile(x->re[i], PCRE2_JIT_COMPLETE);
            x->n++;
        }
    }
    free(pats);
    (void)env;
    return rc;
}
