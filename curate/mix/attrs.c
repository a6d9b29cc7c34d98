/* Attributes lines (Dolma's layout) read with json-c, the rules of `sluice mix` over them,
 * and spans cut out of a text by code point. */
#include "curate/mix/attrs.h"

#include "core/alloc.h"
#include "core/err.h"

#include <json-c/json.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const op_text[] = { "<", "<=", ">", ">=", "==", "!=" };

static int name_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-' || c == '.';
}

int sl_attr_rule_parse(struct sl_attr_rule *r, const char *text)
{
    memset(r, 0, sizeof(*r));
    const char *p = text;
    while (*p == ' ')
        p++;
    const char *n0 = p;
    while (name_char(*p))
        p++;
    size_t nlen = (size_t)(p - n0);
    while (*p == ' ')
        p++;
    int op = -1;
    for (int k = SL_ATTR_NE; k >= 0 && op < 0; k--) /* two-byte operators first */
        if (!strncmp(p, op_text[k], strlen(op_text[k])) && (strlen(op_text[k]) == 2 || p[1] != '='))
            op = k;
    if (nlen == 0 || op < 0)
        return sl_err_set(SL_ERR_USAGE,
                          "cannot read rule '%s': expected NAME OP NUMBER\nhint: OP is one of "
                          "< <= > >= == !=, as in 'exp__word_count__score >= 50'",
                          text);
    p += strlen(op_text[op]);
    char *end;
    double v = strtod(p, &end);
    while (end != p && *end == ' ')
        end++;
    if (end == p || *end || isnan(v))
        return sl_err_set(SL_ERR_USAGE, "cannot read rule '%s': expected a number after '%s'", text,
                          op_text[op]);
    r->name = sl_xstrndup(n0, nlen);
    r->op = (enum sl_attr_op)op;
    r->value = v;
    return 0;
}

void sl_attr_rule_release(struct sl_attr_rule *r)
{
    free(r->name);
    r->name = NULL;
}

int sl_attr_rule_holds(const struct sl_attr_rule *r, double s)
{
    switch (r->op) {
    case SL_ATTR_LT:
        return s < r->value;
    case SL_ATTR_LE:
        return s <= r->value;
    case SL_ATTR_GT:
        return s > r->value;
    case SL_ATTR_GE:
        return s >= r->value;
    case SL_ATTR_EQ:
        return s == r->value;
    case SL_ATTR_NE:
        return !isnan(s) && s != r->value;
    }
    return 0;
}

void sl_attr_line_init(struct sl_attr_line *l)
{
    memset(l, 0, sizeof(*l));
    sl_doc_init(&l->doc);
}

void sl_attr_line_release(struct sl_attr_line *l)
{
    json_object_put(l->attrs);
    sl_doc_release(&l->doc);
    sl_buf_release(&l->id);
    free(l->spans);
    memset(l, 0, sizeof(*l));
}

int sl_attr_line_parse(struct sl_attr_line *l, const char *line, size_t len, const char *where)
{
    json_object_put(l->attrs);
    l->attrs = NULL;
    l->nspans = 0;
    sl_buf_reset(&l->id);
    struct sl_json_error err = { 0 };
    if (sl_doc_parse(&l->doc, line, len, &err))
        return sl_err_set(SL_ERR_FORMAT, "%s: not an attributes line: %s at byte %zu", where,
                          err.reason ? err.reason : "not a JSON object", err.offset);
    if (sl_doc_get_text_form(&l->doc, "id", &l->id))
        return sl_err_set(SL_ERR_FORMAT, "%s: not an attributes line: no \"id\"", where);
    l->attrs = sl_doc_get_json(&l->doc, "attributes");
    if (!l->attrs || !json_object_is_type(l->attrs, json_type_object))
        return sl_err_set(SL_ERR_FORMAT, "%s: not an attributes line: %s", where,
                          l->attrs ? "\"attributes\" is not an object" : "no \"attributes\"");
    return 0;
}

/* One [start, end, score] of attribute `name` (json-c gives a null score as NULL). */
static int read_span(json_object *e, struct sl_attr_span *s, const char *name, const char *where)
{
    int ok = json_object_is_type(e, json_type_array) && json_object_array_length(e) == 3;
    json_object *a = ok ? json_object_array_get_idx(e, 0) : NULL,
                *b = ok ? json_object_array_get_idx(e, 1) : NULL,
                *c = ok ? json_object_array_get_idx(e, 2) : NULL;
    ok = ok && json_object_is_type(a, json_type_int) && json_object_is_type(b, json_type_int) &&
         (!c || json_object_is_type(c, json_type_int) || json_object_is_type(c, json_type_double));
    int64_t s0 = ok ? json_object_get_int64(a) : 0, s1 = ok ? json_object_get_int64(b) : 0;
    if (!ok || s0 < 0 || s1 < s0)
        return sl_err_set(SL_ERR_FORMAT,
                          "%s: attribute '%s': expected spans [start, end, score] with "
                          "0 <= start <= end, got %.80s",
                          where, name, json_object_to_json_string(e));
    s->start = (uint64_t)s0;
    s->end = (uint64_t)s1;
    s->score = c ? json_object_get_double(c) : NAN;
    return 0;
}

int sl_attr_line_has(const struct sl_attr_line *l, const char *name)
{
    json_object *v = NULL;
    return l->attrs && json_object_object_get_ex(l->attrs, name, &v);
}

int sl_attr_line_spans(struct sl_attr_line *l, const char *name, const char *where)
{
    l->nspans = 0;
    json_object *v = NULL;
    if (!l->attrs || !json_object_object_get_ex(l->attrs, name, &v) || v == NULL)
        return 0;
    if (!json_object_is_type(v, json_type_array))
        return sl_err_set(SL_ERR_FORMAT, "%s: attribute '%s': expected a list of spans, got %.80s",
                          where, name, json_object_to_json_string(v));
    size_t n = json_object_array_length(v);
    if (n > l->cap) {
        l->cap = n;
        l->spans = sl_xrealloc(l->spans, n * sizeof(*l->spans));
    }
    for (size_t i = 0; i < n; i++) {
        int rc = read_span(json_object_array_get_idx(v, i), &l->spans[i], name, where);
        if (rc)
            return rc;
    }
    l->nspans = n;
    return 0;
}

int sl_attr_line_score(struct sl_attr_line *l, const char *name, const char *where, double *score)
{
    int rc = sl_attr_line_spans(l, name, where);
    *score = !rc && l->nspans ? l->spans[0].score : NAN;
    return rc;
}

int sl_attr_cuts_add(struct sl_attr_cuts *c, const struct sl_attr_line *l,
                     const struct sl_attr_rule *r, uint64_t nchar, const char *where,
                     uint64_t *added)
{
    *added = 0;
    for (size_t i = 0; i < l->nspans; i++) {
        const struct sl_attr_span *s = &l->spans[i];
        if (!sl_attr_rule_holds(r, s->score))
            continue;
        if (s->end > nchar)
            return sl_err_set(SL_ERR_FORMAT,
                              "%s: attribute '%s': span [%llu, %llu] ends past the text (%llu "
                              "characters)\nhint: are these the attributes of other documents?",
                              where, r->name, (unsigned long long)s->start,
                              (unsigned long long)s->end, (unsigned long long)nchar);
        if (c->n == c->cap) {
            c->cap = c->cap ? 2 * c->cap : 16;
            c->v = sl_xrealloc(c->v, c->cap * sizeof(*c->v));
        }
        c->v[c->n++] = *s;
        (*added)++;
    }
    return 0;
}

static int cmp_span(const void *a, const void *b)
{
    const struct sl_attr_span *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

void sl_attr_cuts_apply(struct sl_attr_cuts *c, const char *text, size_t len, struct sl_buf *out,
                        uint64_t *chars)
{
    sl_buf_reset(out);
    *chars = 0;
    if (c->n)
        qsort(c->v, c->n, sizeof(*c->v), cmp_span);
    size_t k = 0, i = 0;
    uint64_t cp = 0, cut_end = 0; /* the merged cuts reach code point cut_end (excluded) */
    while (i < len) {
        size_t j = i + 1; /* the code point's bytes: its lead and continuation bytes */
        while (j < len && ((unsigned char)text[j] & 0xC0) == 0x80)
            j++;
        for (; k < c->n && c->v[k].start <= cp; k++)
            if (c->v[k].end > cut_end)
                cut_end = c->v[k].end;
        if (cp < cut_end)
            (*chars)++;
        else
            sl_buf_append(out, text + i, j - i);
        cp++;
        i = j;
    }
    c->n = 0;
}

void sl_attr_cuts_release(struct sl_attr_cuts *c)
{
    free(c->v);
    memset(c, 0, sizeof(*c));
}

uint64_t sl_attr_nchar(const char *text, size_t len)
{
    uint64_t n = 0;
    for (size_t i = 0; i < len; i++)
        n += ((unsigned char)text[i] & 0xC0) != 0x80;
    return n;
}

void sl_attr_put_name(struct sl_buf *out, const char *name)
{
    for (const char *p = name; *p; p++)
        sl_buf_putc(out, (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                                 (*p >= '0' && *p <= '9') || *p == '_'
                             ? *p
                             : '_');
}
