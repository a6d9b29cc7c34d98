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
    int error_drops; /* on_error: drop */
    pcre2_match_data *md;
    pcre2_match_context *mc;
    struct sl_buf out;
};

/* 1 a pattern matches, 0 none does, or the PCRE2 error (<0) of the first that failed. */
static int any_match(struct rx *x, const char *s, size_t n)
{
    int err = 0;
    for (size_t i = 0; i < x->n; i++) {
        int m = pcre2_match(x->re[i], (PCRE2_SPTR)s, n, 0, 0, x->md, x->mc);
        if (m >= 0)
            return 1;
        if (m != PCRE2_ERROR_NOMATCH && !err)
            err = m;
    }
    return err;
}

/* The counter for a match that failed (the manifest's "<filter>_<event>"). */
static const char *error_event(int e)
{
    if (e == PCRE2_ERROR_MATCHLIMIT)
        return "match_limit_errors";
    if (e == PCRE2_ERROR_DEPTHLIMIT || e == PCRE2_ERROR_HEAPLIMIT || e == PCRE2_ERROR_JIT_STACKLIMIT)
        return "depth_limit_errors";
    return "match_errors";
}

static int rx_apply(struct sl_filter *f, struct sl_fctx *c, struct sl_filter_result *r)
{
    struct rx *x = f->state;
    r->keep = 1;
    r->score = 0;
    if (!x->drop_lines) {
        int m = any_match(x, c->text, c->len);
        if (m < 0)
            r->event = error_event(m);
        if (m > 0 || (m < 0 && x->error_drops))
            return sl_filter_drop(r, m > 0 ? "regex_match" : "regex_error", 1);
        return 0;
    }
    sl_buf_reset(&x->out);
    size_t start = 0, removed = 0;
    for (size_t i = 0; i <= c->len; i++) {
        if (i < c->len && c->text[i] != '\n')
            continue;
        size_t e = i < c->len ? i + 1 : i;
        int m = any_match(x, c->text + start, i - start);
        if (m < 0)
            r->event = error_event(m);
        if (m > 0 || (m < 0 && x->error_drops))
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
    pcre2_match_context_free(x->mc);
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
    /* a match that PCRE2 gives up on (match or depth limit): counted as
     * "<name>_match_limit_errors" / "_depth_limit_errors", and the document (drop_lines:
     * the line) dropped, or kept with on_error: keep */
    const char *on_error = "drop";
    long match_limit = 10000000, depth_limit = 10000000;
    if (!rc) rc = sl_cfg_str(p, "on_error", "drop", &on_error);
    if (!rc && strcmp(on_error, "drop") && strcmp(on_error, "keep"))
        rc = sl_err_set(SL_ERR_CONFIG, "%s: on_error: expected drop or keep, got '%s'",
                        sl_cfg_where(sl_cfg_child(p, "on_error")), on_error);
    x->error_drops = !rc && !strcmp(on_error, "drop");
    if (!rc) rc = sl_cfg_int(p, "match_limit", match_limit, &match_limit);
    if (!rc) rc = sl_cfg_int(p, "depth_limit", depth_limit, &depth_limit);
    if (!rc && (match_limit < 1 || match_limit > 4000000000L || depth_limit < 1 ||
                depth_limit > 4000000000L))
        rc = sl_err_set(SL_ERR_CONFIG, "%s: regex: match_limit and depth_limit must be 1 to 4000000000",
                        sl_cfg_where(p));
    if (!rc) {
        x->mc = pcre2_match_context_create(NULL);
        pcre2_set_match_limit(x->mc, (uint32_t)match_limit);
        pcre2_set_depth_limit(x->mc, (uint32_t)depth_limit);
    }
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
