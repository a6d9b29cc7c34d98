/* Table-driven option parsing and generated help. */
#include "core/options.h"

#include "core/alloc.h"
#include "core/buf.h"
#include "core/err.h"
#include "core/log.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void sl_strlist_push(struct sl_strlist *l, const char *s)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 8;
        l->v = sl_xrealloc(l->v, l->cap * sizeof(*l->v));
    }
    l->v[l->n++] = sl_xstrdup(s);
}

void sl_strlist_release(struct sl_strlist *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
    memset(l, 0, sizeof(*l));
}

int sl_parse_size(const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || errno || v < 0 || !isfinite(v))
        return sl_err_set(SL_ERR_USAGE, "'%s' is not a size (examples: 4096, 64K, 256M, 1.5G)", s);
    double mul = 1;
    switch (*end) {
    case 'k': case 'K': mul = 1024.0; end++; break;
    case 'm': case 'M': mul = 1024.0 * 1024; end++; break;
    case 'g': case 'G': mul = 1024.0 * 1024 * 1024; end++; break;
    case 't': case 'T': mul = 1024.0 * 1024 * 1024 * 1024; end++; break;
    default: break;
    }
    if (mul > 1 && (*end == 'i' || *end == 'I'))
        end++;
    if (*end == 'b' || *end == 'B')
        end++;
    if (*end)
        return sl_err_set(SL_ERR_USAGE, "'%s' is not a size (examples: 4096, 64K, 256M, 1.5G)", s);
    double r = v * mul;
    if (r >= 18446744073709551615.0)
        return sl_err_set(SL_ERR_USAGE, "size '%s' is too large", s);
    *out = (uint64_t)r;
    return 0;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

int sl_parse_ranges(const char *s, uint64_t **out, size_t *n)
{
    uint64_t *v = NULL;
    size_t len = 0, cap = 0;
    const char *p = s;
    *out = NULL;
    *n = 0;
    while (*p) {
        char *end;
        if (*p < '0' || *p > '9')
            goto bad;
        uint64_t a = strtoull(p, &end, 10), b = a;
        p = end;
        if (*p == '-') {
            p++;
            if (*p < '0' || *p > '9')
                goto bad;
            b = strtoull(p, &end, 10);
            p = end;
            if (b < a)
                goto bad;
            if (b - a > 10000000)
                return sl_err_set(SL_ERR_USAGE, "range in '%s' is too large", s);
        }
        for (uint64_t x = a; x <= b; x++) {
            if (len == cap) {
                cap = cap ? cap * 2 : 16;
                v = sl_xrealloc(v, cap * sizeof(*v));
            }
            v[len++] = x;
        }
        if (*p == ',')
            p++;
        else if (*p)
            goto bad;
    }
    if (!len)
        goto bad;
    qsort(v, len, sizeof(*v), cmp_u64);
    size_t w = 1;
    for (size_t i = 1; i < len; i++)
        if (v[i] != v[w - 1])
            v[w++] = v[i];
    *out = v;
    *n = w;
    return 0;
bad:
    free(v);
    return sl_err_set(SL_ERR_USAGE, "'%s' is not a list of numbers and ranges (example: 0,3,5-7)", s);
}

size_t sl_edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    size_t *row = sl_xcalloc(lb + 1, sizeof(*row));
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t prev = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t cur = row[j];
            size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
            size_t best = prev + cost;
            if (row[j] + 1 < best)
                best = row[j] + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            prev = cur;
        }
    }
    size_t d = row[lb];
    free(row);
    return d;
}

static int takes_arg(const struct sl_option *o)
{
    switch (o->type) {
    case SL_OPT_FLAG: case SL_OPT_NEGFLAG: case SL_OPT_VERBOSE_: case SL_OPT_QUIET_:
    case SL_OPT_GROUP: case SL_OPT_END:
        return 0;
    default:
        return 1;
    }
}

static void opt_name(const struct sl_option *o, char *buf, size_t n)
{
    if (o->long_name)
        snprintf(buf, n, "--%s", o->long_name);
    else
        snprintf(buf, n, "-%c", o->short_name);
}

const char sl_omit_def[] = "(the default)";

/* The member of o that row r names. */
static void *member(const struct sl_option *r, const void *o)
{
    return (char *)o + r->off;
}

/* Set the value v of row o from arg (as given on the command line). */
static int apply(const struct sl_option *o, void *v, const char *arg)
{
    char name[64];
    char *end;
    opt_name(o, name, sizeof(name));
    switch (o->type) {
    case SL_OPT_FLAG: *(int *)v = 1; return 0;
    case SL_OPT_NEGFLAG: *(int *)v = 0; return 0;
    case SL_OPT_VERBOSE_:
        if (sl_log_level() < SL_LOG_DEBUG)
            sl_log_set_level(sl_log_level() < SL_LOG_INFO ? SL_LOG_INFO : sl_log_level() + 1);
        return 0;
    case SL_OPT_QUIET_: sl_log_set_level(SL_LOG_QUIET); return 0;
    case SL_OPT_STR:
    case SL_OPT_JSON_: *(const char **)v = arg; return 0;
    case SL_OPT_STRS: sl_strlist_push(v, arg); return 0;
    case SL_OPT_INT:
    case SL_OPT_ZLEVEL_:
        errno = 0;
        *(long *)v = strtol(arg, &end, 10);
        if (end == arg || *end || errno)
            return sl_err_set(SL_ERR_USAGE, "%s expects an integer, got '%s'", name, arg);
        if (o->type == SL_OPT_ZLEVEL_ && (*(long *)v < 1 || *(long *)v > 22))
            return sl_err_set(SL_ERR_USAGE, "%s must be 1..22", name);
        return 0;
    case SL_OPT_U64:
        errno = 0;
        *(uint64_t *)v = strtoull(arg, &end, 10);
        if (end == arg || *end || errno || arg[0] == '-')
            return sl_err_set(SL_ERR_USAGE, "%s expects a non-negative integer, got '%s'", name, arg);
        return 0;
    case SL_OPT_DBL:
        errno = 0;
        *(double *)v = strtod(arg, &end);
        if (end == arg || *end || errno)
            return sl_err_set(SL_ERR_USAGE, "%s expects a number, got '%s'", name, arg);
        return 0;
    case SL_OPT_SIZE_:
        if (sl_parse_size(arg, v))
            return sl_err_wrap(SL_ERR_USAGE, "%s: ", name);
        return 0;
    case SL_OPT_CHOICE_: {
        size_t al = strlen(arg);
        for (const char *c = o->choices; *c;) {
            const char *bar = strchr(c, '|');
            size_t cl = bar ? (size_t)(bar - c) : strlen(c);
            if (cl == al && memcmp(c, arg, al) == 0) {
                *(const char **)v = arg;
                return 0;
            }
            c += cl + (bar ? 1 : 0);
        }
        return sl_err_set(SL_ERR_USAGE, "%s must be one of %s, got '%s'", name, o->choices, arg);
    }
    default:
        return sl_err_set(SL_ERR_STATE, "bad option table");
    }
}

/* Set v, the member of row o, to the row's default. */
static int apply_def(const struct sl_option *o, void *v)
{
    int rc;
    if (o->type == SL_OPT_FLAG || o->type == SL_OPT_NEGFLAG) {
        rc = strcmp(o->def, "0") && strcmp(o->def, "1") ? SL_ERR_STATE : 0;
        if (!rc)
            *(int *)v = o->def[0] == '1';
    } else if (o->type == SL_OPT_STRS || o->type == SL_OPT_GROUP || o->type == SL_OPT_QUIET_ ||
               o->type == SL_OPT_VERBOSE_) {
        rc = SL_ERR_STATE; /* no default for these */
    } else {
        rc = apply(o, v, o->def);
    }
    if (rc)
        rc = sl_err_set(SL_ERR_STATE, "bad option table: the default '%s' of %s%s", o->def,
                        o->long_name ? "--" : "setting ", o->long_name ? o->long_name : o->setting);
    return rc;
}

int sl_options_init(const struct sl_option *opts, void *o)
{
    for (const struct sl_option *r = opts; r->type != SL_OPT_END; r++)
        if (r->def) {
            int rc = apply_def(r, member(r, o));
            if (rc)
                return rc;
        }
    return 0;
}

int sl_options_check_required(const struct sl_option *opts, const void *o)
{
    for (const struct sl_option *r = opts; r->type != SL_OPT_END; r++)
        if ((r->flags & SL_OPTF_ALONE) && *(const int *)member(r, o))
            return 0;
    for (const struct sl_option *r = opts; r->type != SL_OPT_END; r++) {
        if (!r->required)
            continue;
        const void *v = member(r, o);
        int given;
        switch (r->type) {
        case SL_OPT_STRS: given = ((const struct sl_strlist *)v)->n > 0; break;
        case SL_OPT_INT: case SL_OPT_ZLEVEL_: given = *(const long *)v != 0; break;
        case SL_OPT_U64: case SL_OPT_SIZE_: given = *(const uint64_t *)v != 0; break;
        case SL_OPT_DBL: given = *(const double *)v != 0; break;
        case SL_OPT_FLAG: case SL_OPT_NEGFLAG: given = *(const int *)v != 0; break;
        default: given = *(const char *const *)v != NULL; break;
        }
        if (!given) {
            int arg = r->argh && r->type != SL_OPT_CHOICE_;
            return sl_err_set(SL_ERR_USAGE, "--%s%s%s is required", r->long_name, arg ? " " : "",
                              arg ? r->argh : "");
        }
    }
    return 0;
}

void sl_options_release(const struct sl_option *opts, void *o)
{
    for (const struct sl_option *r = opts; r && r->type != SL_OPT_END; r++)
        if (r->type == SL_OPT_STRS)
            sl_strlist_release(member(r, o));
}

static const struct sl_option *find_long(const struct sl_option *opts, const char *name, size_t n)
{
    for (const struct sl_option *o = opts; o->type != SL_OPT_END; o++)
        if (o->long_name && strlen(o->long_name) == n && memcmp(o->long_name, name, n) == 0)
            return o;
    return NULL;
}

static const struct sl_option *find_short(const struct sl_option *opts, char c)
{
    for (const struct sl_option *o = opts; o->type != SL_OPT_END; o++)
        if (o->short_name == c)
            return o;
    return NULL;
}

/* The options of the peers' tools (Megatron-LM's preprocess_data.py, NeMo, datatrove,
 * spm_train) that have another name here; a hint only when the command has ours. */
static const char *const peer_names[][2] = {
    { "output-prefix", "out" },
    { "output-dir", "out" },
    { "output", "out" },
    { "tokenizer-type", "tokenizer" },
    { "tokenizer-model", "tokenizer" },
    { "vocab-file", "tokenizer" },
    { "merge-file", "tokenizer" },
    { "input", NULL },
    { "model-prefix", "out" },
    { "model_prefix", "out" },
    { "vocab_size", "vocab-size" },
    { "model_type", "model-type" },
    { "character_coverage", "character-coverage" },
    { "log-interval", NULL },
};

static const struct sl_option *find_long_name(const struct sl_option *opts, const char *name)
{
    for (const struct sl_option *o = opts; o->type != SL_OPT_END; o++)
        if (o->long_name && !strcmp(o->long_name, name))
            return o;
    return NULL;
}

static int unknown_long(const struct sl_option *opts, const char *name, size_t n)
{
    char *given = sl_xstrndup(name, n);
    const char *best = NULL;
    size_t bestd = (size_t)-1;
    for (const struct sl_option *o = opts; o->type != SL_OPT_END; o++) {
        if (!o->long_name)
            continue;
        size_t d = sl_edit_distance(given, o->long_name);
        if (d < bestd) {
            bestd = d;
            best = o->long_name;
        }
    }
    if (bestd > 2) {
        /* a peer's name for one of ours; else the option the first word names
         * (--tokenizer-type: --tokenizer, --output-prefix: --out) */
        for (size_t i = 0; i < sizeof(peer_names) / sizeof(peer_names[0]); i++) {
            if (strcmp(given, peer_names[i][0]) != 0)
                continue;
            if (!peer_names[i][1]) {
                if (!strcmp(given, "input")) {
                    int rc = sl_err_set(SL_ERR_USAGE,
                                        "unknown option '--input'\nhint: give the inputs as "
                                        "operands, after the options");
                    free(given);
                    return rc;
                }
                break;
            }
            if (find_long_name(opts, peer_names[i][1])) {
                best = peer_names[i][1];
                bestd = 0;
            }
            break;
        }
    }
    if (bestd > 2) {
        size_t w = strcspn(given, "-_");
        for (const struct sl_option *o = opts; o->type != SL_OPT_END && w >= 3; o++) {
            if (!o->long_name || strchr(o->long_name, '-'))
                continue;
            size_t l = strlen(o->long_name);
            if (l >= 3 && l <= w && !strncmp(given, o->long_name, l)) {
                best = o->long_name;
                bestd = 0;
                break;
            }
        }
    }
    int rc;
    if (best && bestd <= 2)
        rc = sl_err_set(SL_ERR_USAGE, "unknown option '--%s'\nhint: did you mean '--%s'?", given, best);
    else
        rc = sl_err_set(SL_ERR_USAGE, "unknown option '--%s'", given);
    free(given);
    return rc;
}

int sl_parse_options(int argc, const char **argv, const struct sl_option *opts, void *o,
                     struct sl_strlist *rest)
{
    int only_operands = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (only_operands || a[0] != '-' || a[1] == '\0') {
            sl_strlist_push(rest, a);
            continue;
        }
        if (strcmp(a, "--") == 0) {
            only_operands = 1;
            continue;
        }
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0)
            return SL_PARSE_HELP;
        const struct sl_option *r;
        const char *arg = NULL;
        char name[64];
        if (a[1] == '-') {
            const char *nm = a + 2;
            const char *eq = strchr(nm, '=');
            size_t nl = eq ? (size_t)(eq - nm) : strlen(nm);
            r = find_long(opts, nm, nl);
            if (!r)
                return unknown_long(opts, nm, nl);
            if (eq) {
                if (!takes_arg(r))
                    return sl_err_set(SL_ERR_USAGE, "option '--%s' takes no value", r->long_name);
                arg = eq + 1;
            }
        } else {
            r = find_short(opts, a[1]);
            if (!r)
                return sl_err_set(SL_ERR_USAGE, "unknown option '-%c'", a[1]);
            if (a[2]) {
                if (!takes_arg(r)) {
                    /* bundled flags: -qv */
                    for (const char *c = a + 1; *c; c++) {
                        const struct sl_option *f = find_short(opts, *c);
                        if (!f || takes_arg(f))
                            return sl_err_set(SL_ERR_USAGE, "unknown option '-%c' in '%s'", *c, a);
                        int rc = apply(f, member(f, o), NULL);
                        if (rc)
                            return rc;
                    }
                    continue;
                }
                arg = a + 2;
            }
        }
        opt_name(r, name, sizeof(name));
        if (takes_arg(r) && !arg) {
            if (i + 1 >= argc)
                return sl_err_set(SL_ERR_USAGE, "option '%s' needs a value%s%s", name,
                                  r->argh ? " " : "", r->argh ? r->argh : "");
            arg = argv[++i];
        }
        int rc = apply(r, member(r, o), arg);
        if (rc)
            return rc;
    }
    return 0;
}

void sl_usage_print(FILE *f, const char *const *usage, const struct sl_option *opts)
{
    size_t i = 0;
    for (; usage[i] && usage[i][0]; i++)
        fprintf(f, "%s %s\n", i == 0 ? "usage:" : "   or:", usage[i]);
    for (; usage[i]; i++)
        fprintf(f, "%s%s\n", usage[i][0] ? "" : "", usage[i]);
    if (!opts)
        return;
    fputc('\n', f);
    for (const struct sl_option *o = opts; o->type != SL_OPT_END; o++) {
        if (o->flags & SL_OPTF_SETTING)
            continue;
        if (o->type == SL_OPT_GROUP) {
            fprintf(f, "\n%s\n", o->help);
            continue;
        }
        char left[96];
        int n = 0;
        if (o->short_name && o->long_name)
            n = snprintf(left, sizeof(left), "-%c, --%s", o->short_name, o->long_name);
        else if (o->long_name)
            n = snprintf(left, sizeof(left), "    --%s", o->long_name);
        else
            n = snprintf(left, sizeof(left), "-%c", o->short_name);
        if (takes_arg(o) && o->argh)
            snprintf(left + n, sizeof(left) - (size_t)n, " %s", o->argh);
        const char *help = o->help ? o->help : "";
        int def = o->def && !(o->flags & SL_OPTF_DEF_UNSAID);
        if (strlen(left) <= 26)
            fprintf(f, "    %-26s  %s", left, help);
        else
            fprintf(f, "    %s\n    %-26s  %s", left, "", help);
        if (def)
            fprintf(f, " (default %s)", o->def);
        fputc('\n', f);
    }
}

int sl_usage_error(const char *const *usage)
{
    sl_error("%s", sl_err_msg());
    fprintf(stderr, "usage: %s\n", usage[0]);
    return 2;
}

int sl_check_format_operands(const struct sl_strlist *rest, const char *cmd, const char *format,
                             const char *arg)
{
    if (rest->n < 1 || strcmp(rest->v[0], format) != 0)
        return sl_err_set(SL_ERR_USAGE, "unknown %s format%s%s\nhint: the format is '%s'", cmd,
                          rest->n ? " " : "", rest->n ? rest->v[0] : "", format);
    if (rest->n != 2)
        return sl_err_set(SL_ERR_USAGE, "give exactly one %s", arg);
    return 0;
}

const char *sl_option_key(const struct sl_option *o, char *buf, size_t n)
{
    snprintf(buf, n, "%s", o->long_name ? o->long_name : "");
    for (char *c = buf; *c; c++)
        if (*c == '-')
            *c = '_';
    return buf;
}

/* The JSON text of a settings row's value p (its member), into v. */
static void setting_value(const struct sl_option *o, const void *p, struct sl_buf *v)
{
    if (o->flags & SL_OPTF_GIVEN) {
        int given = o->type == SL_OPT_STRS ? ((const struct sl_strlist *)p)->n > 0
                                           : *(const char *const *)p != NULL;
        sl_buf_puts(v, given ? "true" : "false");
        return;
    }
    switch (o->type) {
    case SL_OPT_FLAG:
    case SL_OPT_NEGFLAG:
        sl_buf_puts(v, !*(const int *)p != !(o->flags & SL_OPTF_INVERT) ? "true" : "false");
        return;
    case SL_OPT_STR:
    case SL_OPT_CHOICE_: {
        const char *s = *(const char *const *)p;
        if (s)
            sl_buf_json_str(v, s, strlen(s));
        else
            sl_buf_puts(v, "null");
        return;
    }
    case SL_OPT_JSON_: {
        const char *j = *(const char *const *)p;
        sl_buf_puts(v, j ? j : "null");
        return;
    }
    case SL_OPT_STRS: {
        const struct sl_strlist *l = p;
        sl_buf_putc(v, '[');
        for (size_t i = 0; i < l->n; i++) {
            if (i)
                sl_buf_putc(v, ',');
            sl_buf_json_str(v, l->v[i], strlen(l->v[i]));
        }
        sl_buf_putc(v, ']');
        return;
    }
    case SL_OPT_INT:
    case SL_OPT_ZLEVEL_:
        sl_buf_printf(v, "%ld", *(const long *)p);
        return;
    case SL_OPT_U64:
    case SL_OPT_SIZE_:
        sl_buf_printf(v, "%llu", (unsigned long long)*(const uint64_t *)p);
        return;
    case SL_OPT_DBL:
        sl_buf_printf(v, "%.6g", *(const double *)p);
        return;
    default:
        sl_buf_puts(v, "null");
        return;
    }
}

/* Whether row r, whose value's JSON text is v, is left out by its `omit` alone. */
static int omitted(const struct sl_option *r, const struct sl_buf *v)
{
    if (!r->omit)
        return 0;
    const char *omit = r->omit;
    struct sl_buf d = SL_BUF_INIT;
    if (omit == SL_OMIT_DEF) {
        /* the JSON text of the default: the value of a member that holds only it */
        union {
            int i;
            long l;
            uint64_t u;
            double x;
            const char *s;
            struct sl_strlist list;
        } m;
        memset(&m, 0, sizeof(m));
        if (r->def)
            apply_def(r, &m);
        setting_value(r, &m, &d);
        omit = d.data ? d.data : "";
    }
    int same = strcmp(v->data ? v->data : "", omit) == 0;
    sl_buf_release(&d);
    return same;
}

int sl_options_settings_json(const struct sl_option *opts, const void *o, struct sl_buf *out)
{
    struct sl_buf v = SL_BUF_INIT;
    int first = 1, rc = sl_buf_putc(out, '{');
    int keep_next = 0; /* the row before (SL_OPTF_PAIRED) is written: write this one too */
    for (const struct sl_option *r = opts; !rc && r->type != SL_OPT_END; r++) {
        if (!(r->flags & SL_OPTF_OUTPUT))
            continue;
        sl_buf_reset(&v);
        setting_value(r, member(r, o), &v);
        int keep = keep_next || !omitted(r, &v);
        keep_next = 0;
        if (!keep && (r->flags & SL_OPTF_PAIRED)) {
            /* left out only when the next row is left out too */
            const struct sl_option *n = r + 1;
            while (n->type != SL_OPT_END && !(n->flags & SL_OPTF_OUTPUT))
                n++;
            if (n->type != SL_OPT_END) {
                struct sl_buf nv = SL_BUF_INIT;
                setting_value(n, member(n, o), &nv);
                keep = !omitted(n, &nv);
                sl_buf_release(&nv);
            }
        }
        if (!keep)
            continue;
        if (r->flags & SL_OPTF_PAIRED)
            keep_next = 1;
        char name[64];
        const char *key = r->setting ? r->setting : sl_option_key(r, name, sizeof(name));
        if (!first)
            rc = sl_buf_putc(out, ',');
        first = 0;
        if (!rc)
            rc = sl_buf_json_str(out, key, strlen(key));
        if (!rc)
            rc = sl_buf_putc(out, ':');
        if (!rc)
            rc = sl_buf_append(out, v.data ? v.data : "", v.len);
    }
    if (!rc)
        rc = sl_buf_putc(out, '}');
    sl_buf_release(&v);
    return rc;
}
