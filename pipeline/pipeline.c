/* Pipelines: YAML sections -> command lines (the key tables, inputs and outputs of each
 * stage, ${var} references, URL lists for languages and Common Crawl path files). */
#include "pipeline/pipeline.h"

#include "core/alloc.h"
#include "core/atomic.h"
#include "core/buf.h"
#include "core/config.h"
#include "core/err.h"
#include "core/stream.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- the key tables ------------------------------------------------------------------ */

enum key_kind {
    K_FLAG,   /* true -> --opt; false -> nothing */
    K_VALUE,  /* --opt VALUE */
    K_REPEAT, /* a value or a list: --opt V for each */
    K_CSV,    /* a value or a list: --opt V1,V2 */
    K_KV,     /* a map (or a list of "k=v"): --opt k=v for each */
    K_RUN,    /* read by the pipeline itself, not a command option */
};

#define F_IN 1 /* the value names a file the command reads ("kind:PATH" too) */

struct key {
    const char *key;
    const char *opt; /* long option; NULL for K_RUN */
    enum key_kind kind;
    int flags;
    const char *help; /* for K_RUN keys */
};

#define FLAG(k, o)                                                                                 \
    {                                                                                              \
        k, o, K_FLAG, 0, NULL                                                                      \
    }
#define VAL(k, o)                                                                                  \
    {                                                                                              \
        k, o, K_VALUE, 0, NULL                                                                     \
    }
#define VALIN(k, o)                                                                                \
    {                                                                                              \
        k, o, K_VALUE, F_IN, NULL                                                                  \
    }
#define RUNKEY(k, h)                                                                               \
    {                                                                                              \
        k, NULL, K_RUN, 0, h                                                                       \
    }
#define END                                                                                        \
    {                                                                                              \
        NULL, NULL, K_RUN, 0, NULL                                                                 \
    }
#define COMMON                                                                                     \
    RUNKEY("in", "inputs (a path or a list); default: the previous document stage's output"),      \
        RUNKEY("out", "output directory; default: WORK/<stage>[/<entry>]"),                        \
        RUNKEY("name", "entry name in a list of runs (default: its position)"),                    \
        FLAG("quiet", "quiet"), FLAG("verbose", "verbose")

static const struct key download_keys[] = {
    { "url", "url", K_REPEAT, 0, NULL },
    VALIN("url_list", "url-list"),
    VAL("url_template", "url-template"),
    { "file_numbers", "file-numbers", K_CSV, 0, NULL },
    VALIN("checksums", "checksums"),
    VAL("retries", "retries"),
    VAL("retry_wait", "retry-wait"),
    VAL("connect_timeout", "connect-timeout"),
    VAL("stall_timeout", "stall-timeout"),
    FLAG("force", "force"),
    RUNKEY("languages", "languages for {lang} in url_template: a list, or a map language -> "
                        "number of files ({total})"),
    RUNKEY("paths_url", "URL of a list of paths (Common Crawl warc.paths.gz); file_numbers "
                        "picks lines (0-based)"),
    RUNKEY("url_prefix", "prefix of each path of paths_url (default: its scheme and host)"),
    COMMON,
    END,
};

static const struct key extract_keys[] = {
    VAL("format", "format"),
    VAL("text_key", "text-key"),
    VAL("source", "source"),
    VAL("max_record", "max-record"),
    FLAG("keep_truncated", "keep-truncated"),
    FLAG("skip_corrupt", "skip-corrupt"),
    FLAG("rm_inputs", "rm-inputs"),
    VAL("id_prefix", "id-prefix"),
    FLAG("reassign_ids", "reassign-ids"),
    VAL("level", "level"),
    FLAG("force", "force"),
    COMMON,
    END,
};

static const struct key clean_keys[] = {
    FLAG("nfkc", "nfkc"),
    FLAG("remove_urls", "remove-urls"),
    FLAG("uncurl_quotes", "uncurl-quotes"),
    FLAG("no_mojibake", "no-mojibake"),
    FLAG("no_entities", "no-entities"),
    VAL("text_key", "text-key"),
    VAL("level", "level"),
    FLAG("force", "force"),
    COMMON,
    END,
};

static const struct key filter_keys[] = {
    VALIN("config", "config"),
    VAL("rejected", "rejected"),
    FLAG("annotate", "annotate"),
    FLAG("split_by_language", "split-by-language"),
    { "set", "set", K_KV, 0, NULL },
    VAL("text_key", "text-key"),
    VAL("max_line", "max-line"),
    FLAG("repair_utf8", "repair-utf8"),
    VAL("level", "level"),
    FLAG("force", "force"),
    COMMON,
    END,
};

static const struct key decontaminate_keys[] = {
    VALIN("tasks", "tasks"),
    VAL("ngram", "ngram"),
    VAL("min_task_words", "min-task-words"),
    VAL("margin", "margin"),
    VAL("min_length", "min-length"),
    VAL("max_splits", "max-splits"),
    VAL("text_key", "text-key"),
    VAL("level", "level"),
    FLAG("force", "force"),
    COMMON,
    END,
};

static const struct key dedup_exact_keys[] = {
    VAL("key", "key"),
    { "norm", "norm", K_CSV, 0, NULL },
    VAL("keep", "keep"),
    VAL("text_key", "text-key"),
    VAL("id_key", "id-key"),
    VAL("max_line", "max-line"),
    VAL("level", "level"),
    FLAG("repair_utf8", "repair-utf8"),
    FLAG("force", "force"),
    COMMON,
    END,
};

static const struct key dedup_fuzzy_keys[] = {
    VAL("preset", "preset"),
    VAL("ngram", "ngram"),
    VAL("bands", "bands"),
    VAL("rows", "rows"),
    { "norm", "norm", K_CSV, 0, NULL },
    VAL("seed", "seed"),
    VAL("hash", "hash"),
    FLAG("verify", "verify"),
    VAL("threshold", "threshold"),
    VAL("anchors", "anchors"),
    FLAG("pairs", "pairs"),
    VAL("backend", "backend"),
    { "redis", "redis", K_CSV, 0, NULL },
    VAL("redis_prefix", "redis-prefix"),
    VAL("redis_batch", "redis-batch"),
    VAL("redis_timeout", "redis-timeout"),
    VAL("index_out", "index-out"),
    VALIN("index_in", "index-in"),
    VAL("text_key", "text-key"),
    VAL("id_key", "id-key"),
    VAL("max_line", "max-line"),
    VAL("level", "level"),
    FLAG("repair_utf8", "repair-utf8"),
    FLAG("force", "force"),
    COMMON,
    END,
};

static const struct key reshard_keys[] = {
    VAL("shards", "shards"),
    VAL("shard_size", "shard-size"),
    VAL("text_key", "text-key"),
    VAL("max_line", "max-line"),
    VAL("level", "level"),
    FLAG("repair_utf8", "repair-utf8"),
    FLAG("skip_corrupt", "skip-corrupt"),
    VAL("id_prefix", "id-prefix"),
    FLAG("reassign_ids", "reassign-ids"),
    FLAG("force", "force"),
    COMMON,
    END,
};

static const struct key tokenizer_train_keys[] = {
    VAL("model_type", "model-type"),
    VAL("vocab_size", "vocab-size"),
    VAL("json_key", "json-key"),
    VAL("input_sentence_size", "input-sentence-size"),
    VAL("seed", "seed"),
    VAL("character_coverage", "character-coverage"),
    FLAG("byte_fallback", "byte-fallback"),
    FLAG("split_digits", "split-digits"),
    { "user_defined_symbols", "user-defined-symbols", K_CSV, 0, NULL },
    { "control_symbols", "control-symbols", K_CSV, 0, NULL },
    VAL("pad_id", "pad-id"),
    VAL("unk_id", "unk-id"),
    VAL("bos_id", "bos-id"),
    VAL("eos_id", "eos-id"),
    VAL("max_sentence_length", "max-sentence-length"),
    VAL("threads", "threads"),
    { "spm_option", "spm-option", K_KV, 0, NULL },
    RUNKEY("prefix", "file name of the model in the output directory (default tokenizer)"),
    COMMON,
    END,
};

static const struct key tokenize_keys[] = {
    VALIN("tokenizer", "tokenizer"),
    { "json_key", "json-key", K_REPEAT, 0, NULL },
    FLAG("append_eod", "append-eod"),
    VAL("eod_id", "eod-id"),
    VAL("workers", "workers"),
    VAL("max_doc_size", "max-doc-size"),
    RUNKEY("prefix", "name of the token shards in the output directory (default: the "
                     "pipeline's name)"),
    COMMON,
    END,
};

/* The trainer's config sections that a train stage may override (flattened to key=value). */
static const char *const train_sections[] = { "model",      "train", "optim", "data", "eval",
                                              "checkpoint", "log",   "debug", NULL };

static const struct key train_keys[] = {
    RUNKEY("config", "the model and run config (configs/models/*.yaml); required"),
    RUNKEY("model", "a map of model.* overrides (default vocab_size: tokenizer_train's)"),
    RUNKEY("train", "a map of train.* overrides (steps, seq_len, micro_batch_size, ...)"),
    RUNKEY("optim", "a map of optim.* overrides (lr, warmup_steps, ...)"),
    RUNKEY("data", "a map of data.* overrides (default prefix: the tokenize stage's)"),
    RUNKEY("eval", "a map of eval.* overrides (interval, iters)"),
    RUNKEY("checkpoint", "a map of checkpoint.* overrides (default dir: OUT/checkpoints)"),
    RUNKEY("log", "a map of log.* overrides (default file: OUT/log.jsonl)"),
    RUNKEY("debug", "a map of debug.* overrides"),
    RUNKEY("in", "the token shards (a prefix or a list); default: the tokenize stage's"),
    RUNKEY("out", "output directory; default: WORK/train"),
    FLAG("quiet", "quiet"),
    FLAG("verbose", "verbose"),
    END,
};

struct stage_def {
    const char *name;
    const char *cmd, *sub;
    const struct key *keys;
    int docs; /* writes documents the next stage reads */
    int can_force;
};

static const struct stage_def stages[PL_NSTAGES] = {
    [PL_DOWNLOAD] = { "download", "download", NULL, download_keys, 1, 1 },
    [PL_EXTRACT] = { "extract", "extract", NULL, extract_keys, 1, 1 },
    [PL_CLEAN] = { "clean", "clean", NULL, clean_keys, 1, 1 },
    [PL_FILTER] = { "filter", "filter", NULL, filter_keys, 1, 1 },
    [PL_DECONTAMINATE] = { "decontaminate", "decontaminate", NULL, decontaminate_keys, 1, 1 },
    [PL_DEDUP_EXACT] = { "dedup_exact", "dedup", "exact", dedup_exact_keys, 1, 1 },
    [PL_DEDUP_FUZZY] = { "dedup_fuzzy", "dedup", "fuzzy", dedup_fuzzy_keys, 1, 1 },
    [PL_RESHARD] = { "reshard", "reshard", NULL, reshard_keys, 1, 1 },
    [PL_TOKENIZER_TRAIN] = { "tokenizer_train", "tokenizer", "train", tokenizer_train_keys, 0, 0 },
    [PL_TOKENIZE] = { "tokenize", "tokenize", NULL, tokenize_keys, 0, 0 },
    [PL_TRAIN] = { "train", "train", NULL, train_keys, 0, 1 },
};

static const char *const top_keys[] = { "name", "work_dir", "stages", NULL };

const char *pl_stage_name(int stage)
{
    return stage >= 0 && stage < PL_NSTAGES ? stages[stage].name : NULL;
}

static const struct key *find_key(const struct key *t, const char *k)
{
    for (; t->key; t++)
        if (!strcmp(t->key, k))
            return t;
    return NULL;
}

void pl_print_keys(FILE *f)
{
    for (int s = 0; s < PL_NSTAGES; s++) {
        const struct stage_def *d = &stages[s];
        if (!d->keys)
            continue;
        fprintf(f, "%s: sluice %s%s%s\n", d->name, d->cmd, d->sub ? " " : "", d->sub ? d->sub : "");
        for (const struct key *k = d->keys; k->key; k++) {
            if (k->kind == K_RUN) {
                fprintf(f, "  %-22s %s\n", k->key, k->help);
                continue;
            }
            const char *how = k->kind == K_FLAG     ? "true: "
                              : k->kind == K_REPEAT ? "each of a list: "
                              : k->kind == K_CSV    ? "a list, comma-joined: "
                              : k->kind == K_KV     ? "each key: value of a map as k=v: "
                                                    : "";
            fprintf(f, "  %-22s %s--%s%s\n", k->key, how, k->opt,
                    k->kind == K_FLAG ? ""
                    : k->kind == K_KV ? " K=V"
                                      : " VALUE");
        }
    }
}

/* ---- small helpers ------------------------------------------------------------------- */

static void push(struct sl_strlist *l, const char *s)
{
    sl_strlist_push(l, s);
}

static char *strlist_join(const struct sl_strlist *l, const char *sep)
{
    struct sl_buf b = SL_BUF_INIT;
    for (size_t i = 0; i < l->n; i++) {
        if (i)
            sl_buf_puts(&b, sep);
        sl_buf_puts(&b, l->v[i]);
    }
    return b.data ? sl_buf_detach(&b, NULL) : sl_xstrdup("");
}

static int needs_quotes(const char *s)
{
    if (!*s)
        return 1;
    for (const char *p = s; *p; p++)
        if (!isalnum((unsigned char)*p) && !strchr("-_./:=,@%+", *p))
            return 1;
    return 0;
}

char *pl_shell_line(const struct sl_strlist *argv)
{
    struct sl_buf b = SL_BUF_INIT;
    sl_buf_puts(&b, "sluice");
    for (size_t i = 0; i < argv->n; i++) {
        const char *a = argv->v[i];
        sl_buf_putc(&b, ' ');
        if (!needs_quotes(a)) {
            sl_buf_puts(&b, a);
            continue;
        }
        sl_buf_putc(&b, '\'');
        for (const char *p = a; *p; p++) {
            if (*p == '\'')
                sl_buf_puts(&b, "'\\''");
            else
                sl_buf_putc(&b, *p);
        }
        sl_buf_putc(&b, '\'');
    }
    return sl_buf_detach(&b, NULL);
}

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

/* ---- loading ------------------------------------------------------------------------- */

struct loader {
    struct pl_pipeline *p;
    struct sl_cfg *root;
    const char *file;
    char *dir;                   /* the pipeline file's directory ("." for a bare name) */
    struct sl_strlist file_refs; /* the ${variables} the file (before overrides) uses */
};

/* A key whose value is null (`key: null`, `key: ~`, the override key=null) is as if it were
 * absent. */
static struct sl_cfg *child(struct sl_cfg *map, const char *key)
{
    struct sl_cfg *c = map && map->kind == SL_CFG_MAP ? sl_cfg_child(map, key) : NULL;
    if (c && c->kind == SL_CFG_NULL) {
        c->used = 1;
        return NULL;
    }
    return c;
}

/* The top-level variable that a value consisting only of "${var}" refers to, following
 * "${a}" -> "${b}" chains; NULL when the value is anything else. */
static struct sl_cfg *sole_var(struct sl_cfg *root, struct sl_cfg *node)
{
    struct sl_cfg *v = node;
    for (int depth = 0; depth < 8 && v && v->kind == SL_CFG_SCALAR; depth++) {
        const char *s = v->value;
        size_t l = strlen(s);
        if (l < 4 || s[0] != '$' || s[1] != '{' || s[l - 1] != '}' || memchr(s + 2, '}', l - 3))
            return depth ? v : NULL;
        char *name = sl_xstrndup(s + 2, l - 3);
        struct sl_cfg *next = sl_cfg_child(root, name);
        free(name);
        if (!next)
            return NULL;
        next->used = 1;
        v = next;
    }
    return v == node ? NULL : v;
}

/* Every stage value that is only "${var}" of a null variable becomes null itself, so that
 * `redis=null` on the command line drops the option that `redis: ${redis}` gives. */
static void null_vars(struct sl_cfg *root, struct sl_cfg *node)
{
    if (node->kind == SL_CFG_SCALAR) {
        struct sl_cfg *v = sole_var(root, node);
        if (v && v->kind == SL_CFG_NULL) {
            node->kind = SL_CFG_NULL;
            free(node->value);
            node->value = sl_xstrdup("");
        }
        return;
    }
    for (size_t i = 0; i < node->n; i++)
        null_vars(root, node->items[i]);
}

static int where_err(struct sl_cfg *node, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int where_err(struct sl_cfg *node, const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    char *path = sl_cfg_path(node);
    int rc =
        sl_err_set(SL_ERR_CONFIG, "%s: %s: %s", sl_cfg_where(node), path[0] ? path : "(top)", msg);
    free(path);
    return rc;
}

/* Replace each ${key} in s by the top-level scalar `key` (name and work_dir always known). */
static int expand_depth(struct loader *L, struct sl_cfg *node, const char *s, char **out, int depth)
{
    struct sl_buf b = SL_BUF_INIT;
    const char *p = s;
    int rc = 0;
    while (*p && !rc) {
        if (p[0] != '$' || p[1] != '{') {
            sl_buf_putc(&b, *p++);
            continue;
        }
        const char *close = strchr(p, '}');
        if (!close) {
            rc = where_err(node, "'${' without '}' in '%s'", s);
            break;
        }
        char *var = sl_xstrndup(p + 2, (size_t)(close - p - 2));
        if (!strcmp(var, "name")) {
            sl_buf_puts(&b, L->p->name);
        } else if (!strcmp(var, "work_dir")) {
            sl_buf_puts(&b, L->p->work_dir);
        } else {
            struct sl_cfg *v = sl_cfg_child(L->root, var);
            int is_stage = 0;
            for (int i = 0; i < PL_NSTAGES; i++)
                is_stage |= !strcmp(var, stages[i].name);
            if (!v || is_stage || !strcmp(var, "stages")) {
                rc = where_err(node,
                               "unknown variable '${%s}'\nhint: define '%s:' at the top of "
                               "the pipeline, or give %s=VALUE on the command line",
                               var, var, var);
            } else if (v->kind == SL_CFG_NULL) {
                rc = where_err(node,
                               "variable '${%s}' is null in '%s'\nhint: a null variable "
                               "unsets a key only when the value is just '${%s}'",
                               var, s, var);
            } else if (v->kind != SL_CFG_SCALAR) {
                rc = where_err(node, "variable '${%s}' is not a single value", var);
            } else if (depth > 8) {
                rc = where_err(node, "variable '${%s}' refers to itself", var);
            } else {
                v->used = 1;
                char *sub = NULL;
                rc = expand_depth(L, v, v->value, &sub, depth + 1);
                if (!rc)
                    sl_buf_puts(&b, sub);
                free(sub);
            }
        }
        free(var);
        p = close + 1;
    }
    if (rc) {
        sl_buf_release(&b);
        return rc;
    }
    *out = b.data ? sl_buf_detach(&b, NULL) : sl_xstrdup("");
    return 0;
}

static int expand(struct loader *L, struct sl_cfg *node, char **out)
{
    node->used = 1;
    return expand_depth(L, node, node->value ? node->value : "", out, 0);
}

/* A scalar or a list of scalars (a scalar "a,b" stays one value unless split). */
static int scalars(struct loader *L, struct sl_cfg *node, struct sl_strlist *out)
{
    node->used = 1;
    if (node->kind == SL_CFG_NULL)
        return 0;
    if (node->kind == SL_CFG_SCALAR) {
        char *v = NULL;
        int rc = expand(L, node, &v);
        if (!rc)
            push(out, v);
        free(v);
        return rc;
    }
    if (node->kind != SL_CFG_SEQ)
        return where_err(node, "expected a value or a list of values");
    for (size_t i = 0; i < node->n; i++) {
        struct sl_cfg *it = node->items[i];
        if (it->kind != SL_CFG_SCALAR)
            return where_err(it, "expected a value");
        char *v = NULL;
        int rc = expand(L, it, &v);
        if (rc)
            return rc;
        push(out, v);
        free(v);
    }
    return 0;
}

static int one_scalar(struct loader *L, struct sl_cfg *node, char **out)
{
    node->used = 1;
    if (node->kind != SL_CFG_SCALAR)
        return where_err(node, "expected a single value");
    return expand(L, node, out);
}

/* The path in a value that names an input: "spm:x.model" -> "x.model"; "gpt2:DIR" -> DIR. */
static const char *input_path(const char *v)
{
    const char *colon = strchr(v, ':');
    if (colon && colon - v < 12 && strncmp(colon, "://", 3) != 0) {
        int word = 1;
        for (const char *q = v; q < colon; q++)
            word &= isalnum((unsigned char)*q) != 0;
        if (word)
            return colon + 1;
    }
    return v;
}

const char *pl_data_dir(void)
{
    static char dir[4096];
    static int done;
    if (done)
        return dir[0] ? dir : NULL;
    done = 1;
    const char *env = getenv("SLUICE_DATA_DIR");
    struct stat sb;
    if (env && *env) {
        snprintf(dir, sizeof(dir), "%s", env);
        return dir;
    }
    char exe[4096];
    ssize_t k = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (k <= 0)
        return NULL;
    exe[k] = '\0';
    char *slash = strrchr(exe, '/');
    if (!slash)
        return NULL;
    *slash = '\0';
    /* installed: PREFIX/bin or PREFIX/libexec/sluice; a build: SRC/build */
    static const char *const rel[] = { "../share/sluice", "../../share/sluice", "..", NULL };
    for (int i = 0; rel[i]; i++) {
        char cand[4096 + 64], probe[4096 + 96];
        snprintf(cand, sizeof(cand), "%s/%s", exe, rel[i]);
        snprintf(probe, sizeof(probe), "%s/configs/pipelines", cand);
        if (stat(probe, &sb) == 0 && S_ISDIR(sb.st_mode) && realpath(cand, dir))
            return dir;
    }
    dir[0] = '\0';
    return NULL;
}

/* PATH relative to the working directory when it lies below it, else absolute. */
static char *short_path(const char *abs)
{
    char cwd[4096];
    if (getcwd(cwd, sizeof(cwd))) {
        size_t l = strlen(cwd);
        if (!strncmp(abs, cwd, l) && abs[l] == '/')
            return sl_xstrdup(abs + l + 1);
    }
    return sl_xstrdup(abs);
}

static int exists(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0;
}

/* A relative input path written in the pipeline file names a file beside the pipeline
 * file; when there is none there, one in sluice's data directory (its configs/ and
 * examples/). Paths given on the command line (key=value, or a value that is just a
 * ${variable} set there) and paths below work_dir stay relative to the working directory.
 * "kind:PATH" (spm:, gpt2:) keeps its kind. Caller frees. */
static char *resolve_input(struct loader *L, struct sl_cfg *node, const char *v)
{
    const char *path = input_path(v);
    size_t kindlen = (size_t)(path - v);
    if (!*path || path[0] == '/' || strstr(path, "://") || node->line == 0)
        return sl_xstrdup(v);
    const char *wd = L->p->work_dir;
    size_t wl = strlen(wd);
    if (wl && !strncmp(path, wd, wl) && (path[wl] == '/' || !path[wl]))
        return sl_xstrdup(v);
    /* the output of an earlier step (its out: is relative to the working directory) */
    for (size_t k = 0; k < L->p->n; k++) {
        const char *o = L->p->steps[k].out;
        size_t ol = o ? strlen(o) : 0;
        if (ol && !strncmp(path, o, ol) && (path[ol] == '/' || !path[ol]))
            return sl_xstrdup(v);
    }
    if (node->kind == SL_CFG_SCALAR && !strncmp(node->value, "${", 2)) {
        size_t nl = strcspn(node->value + 2, "}");
        char *var = sl_xstrndup(node->value + 2, nl);
        struct sl_cfg *vn = sl_cfg_child(L->root, var);
        int cli = !strcmp(var, "work_dir") || !strcmp(var, "name") || (vn && vn->line == 0);
        free(var);
        if (cli)
            return sl_xstrdup(v);
    }
    char *beside = !strcmp(L->dir, ".") ? sl_xstrdup(path) : sl_xasprintf("%s/%s", L->dir, path);
    char *found = NULL;
    if (exists(beside)) {
        found = beside;
        beside = NULL;
    } else if (pl_data_dir()) {
        char *bundled = sl_xasprintf("%s/%s", pl_data_dir(), path);
        char real[4096];
        if (exists(bundled) && realpath(bundled, real))
            found = short_path(real);
        free(bundled);
    }
    if (!found) {
        found = beside;
        beside = NULL;
    }
    char *out = sl_xasprintf("%.*s%s", (int)kindlen, v, found);
    free(found);
    free(beside);
    return out;
}

int pl_find_pipeline(const char *arg, char **path)
{
    *path = NULL;
    if (exists(arg) || strchr(arg, '/') || !pl_data_dir()) {
        *path = sl_xstrdup(arg);
        return 0;
    }
    const char *dd = pl_data_dir();
    size_t l = strlen(arg);
    int has_ext =
        (l > 5 && !strcmp(arg + l - 5, ".yaml")) || (l > 4 && !strcmp(arg + l - 4, ".yml"));
    char *cand = sl_xasprintf("%s/configs/pipelines/%s%s", dd, arg, has_ext ? "" : ".yaml");
    if (exists(cand)) {
        *path = cand;
        return 0;
    }
    free(cand);
    *path = sl_xstrdup(arg);
    return 0;
}

struct entry {
    struct sl_cfg *map; /* the section (or list item); NULL-kind sections are empty maps */
    char *name;         /* list entries: their name */
};

/* Unknown keys of a section: FILE:LINE and the nearest known key. */
static int check_keys(struct sl_cfg *map, const struct key *t, int in_list)
{
    for (size_t i = 0; map->kind == SL_CFG_MAP && i < map->n; i++) {
        struct sl_cfg *c = map->items[i];
        const struct key *k = find_key(t, c->key);
        if (k && (strcmp(k->key, "name") != 0 || in_list))
            continue;
        const char *best = NULL;
        size_t bestd = (size_t)-1;
        for (const struct key *q = t; q->key; q++) {
            size_t d = sl_edit_distance(c->key, q->key);
            if (d < bestd) {
                bestd = d;
                best = q->key;
            }
        }
        if (k)
            return where_err(c, "'name' is only for the entries of a list of runs");
        if (best && bestd <= 3)
            return where_err(c,
                             "unknown key '%s'\nhint: did you mean '%s'? ('sluice run --keys' "
                             "lists every stage's keys)",
                             c->key, best);
        return where_err(c, "unknown key '%s'\nhint: 'sluice run --keys' lists every stage's keys",
                         c->key);
    }
    return 0;
}

/* Append the options of a section to argv (table order); collect input paths. */
static int section_options(struct loader *L, const struct key *t, struct sl_cfg *map,
                           struct pl_step *s)
{
    for (const struct key *k = t; k->key; k++) {
        if (k->kind == K_RUN)
            continue;
        struct sl_cfg *c = map->kind == SL_CFG_MAP ? sl_cfg_child(map, k->key) : NULL;
        if (!c)
            continue;
        c->used = 1;
        if (c->kind == SL_CFG_NULL)
            continue;
        char opt[64];
        snprintf(opt, sizeof(opt), "--%s", k->opt);
        int rc = 0;
        switch (k->kind) {
        case K_FLAG: {
            int on = 0;
            rc = sl_cfg_node_bool(c, &on);
            if (!rc && on) {
                push(&s->argv, opt);
                if (!strcmp(k->key, "rm_inputs"))
                    s->rm_inputs = 1;
            }
            break;
        }
        case K_VALUE: {
            char *v = NULL;
            rc = one_scalar(L, c, &v);
            if (!rc && (k->flags & F_IN)) {
                char *r = resolve_input(L, c, v);
                free(v);
                v = r;
                push(&s->inputs, input_path(v));
            }
            if (!rc) {
                push(&s->argv, opt);
                push(&s->argv, v);
            }
            free(v);
            break;
        }
        case K_REPEAT:
        case K_CSV: {
            struct sl_strlist vs = { 0 };
            rc = scalars(L, c, &vs);
            if (!rc && k->kind == K_REPEAT) {
                for (size_t i = 0; i < vs.n; i++) {
                    push(&s->argv, opt);
                    push(&s->argv, vs.v[i]);
                }
            } else if (!rc && vs.n) {
                char *j = strlist_join(&vs, ",");
                push(&s->argv, opt);
                push(&s->argv, j);
                free(j);
            }
            sl_strlist_release(&vs);
            break;
        }
        case K_KV: {
            if (c->kind == SL_CFG_MAP) {
                for (size_t i = 0; i < c->n && !rc; i++) {
                    struct sl_cfg *it = c->items[i];
                    char *v = NULL;
                    rc = one_scalar(L, it, &v);
                    if (!rc) {
                        char *kv = sl_xasprintf("%s=%s", it->key, v);
                        push(&s->argv, opt);
                        push(&s->argv, kv);
                        free(kv);
                    }
                    free(v);
                }
            } else {
                struct sl_strlist vs = { 0 };
                rc = scalars(L, c, &vs);
                for (size_t i = 0; !rc && i < vs.n; i++) {
                    if (!strchr(vs.v[i], '=')) {
                        rc = where_err(c, "expected KEY=VALUE, got '%s'", vs.v[i]);
                        break;
                    }
                    push(&s->argv, opt);
                    push(&s->argv, vs.v[i]);
                }
                sl_strlist_release(&vs);
            }
            break;
        }
        case K_RUN:
            break;
        }
        if (rc)
            return rc;
    }
    return 0;
}

static struct pl_step *new_step(struct pl_pipeline *p, int stage)
{
    p->steps = sl_xrealloc(p->steps, (p->n + 1) * sizeof(*p->steps));
    struct pl_step *s = &p->steps[p->n++];
    memset(s, 0, sizeof(*s));
    s->stage = stage;
    s->can_force = stages[stage].can_force;
    push(&s->argv, stages[stage].cmd);
    if (stages[stage].sub)
        push(&s->argv, stages[stage].sub);
    return s;
}

static void step_release(struct pl_step *s)
{
    free(s->label);
    free(s->out);
    sl_strlist_release(&s->argv);
    sl_strlist_release(&s->inputs);
    free(s->deps);
    free(s->counts_manifest);
    free(s->urls_path);
    free(s->urls_text);
    free(s->paths_file);
    free(s->paths_prefix);
    free(s->paths_numbers);
    free(s->note);
    free(s->train_log);
    free(s->fresh_rm[0]);
    free(s->fresh_rm[1]);
}

static void add_dep(struct pl_step *s, size_t d)
{
    for (size_t i = 0; i < s->ndeps; i++)
        if (s->deps[i] == d)
            return;
    s->deps = sl_xrealloc(s->deps, (s->ndeps + 1) * sizeof(*s->deps));
    s->deps[s->ndeps++] = d;
}

/* What the chain has produced so far. */
struct flow {
    struct sl_strlist docs; /* output directories of the last document stage */
    size_t *doc_steps;      /* their step indices */
    size_t ndoc;
    char *tok_model; /* tokenizer_train's model */
    size_t tok_step;
    char *vocab_size; /* tokenizer_train's vocab_size, when given */
    char *tokens;     /* tokenize's first prefix (PREFIX_text_document) */
    size_t tokens_step;
};

static void flow_set_docs(struct flow *f, const struct pl_pipeline *p, size_t first)
{
    sl_strlist_release(&f->docs);
    free(f->doc_steps);
    f->doc_steps = sl_xcalloc(p->n - first + 1, sizeof(size_t));
    f->ndoc = 0;
    for (size_t i = first; i < p->n; i++) {
        if (p->steps[i].aux)
            continue;
        push(&f->docs, p->steps[i].out);
        f->doc_steps[f->ndoc++] = i;
    }
}

/* download: the URL options, or a URL list for languages / a paths file. */
static int download_urls(struct loader *L, struct sl_cfg *map, struct pl_pipeline *p, size_t idx)
{
    struct sl_cfg *langs = child(map, "languages");
    struct sl_cfg *paths = child(map, "paths_url");
    struct sl_cfg *prefix = child(map, "url_prefix");
    struct sl_cfg *tmpl = child(map, "url_template");
    struct sl_cfg *nums = child(map, "file_numbers");
    int rc = 0;
    if (langs)
        langs->used = 1;
    if (paths)
        paths->used = 1;
    if (prefix)
        prefix->used = 1;
    if (prefix && !paths)
        return where_err(prefix, "'url_prefix' goes with 'paths_url'");
    if (!langs && !paths)
        return 0;
    if (langs && paths)
        return where_err(paths, "give 'languages' or 'paths_url', not both");
    struct pl_step *s = &p->steps[idx];
    char *numbers = NULL;
    if (nums) {
        struct sl_strlist v = { 0 };
        rc = scalars(L, nums, &v);
        if (!rc)
            numbers = strlist_join(&v, ",");
        sl_strlist_release(&v);
        if (rc)
            return rc;
    }
    s->urls_path = sl_xasprintf("%s/.sluice/urls.txt", s->out);
    if (langs) {
        if (!tmpl) {
            free(numbers);
            return where_err(langs, "'languages' needs a 'url_template' with {lang}");
        }
        char *t = NULL;
        rc = one_scalar(L, tmpl, &t);
        struct sl_strlist names = { 0 };
        unsigned long long *totals = NULL;
        if (!rc && langs->kind == SL_CFG_MAP) {
            totals = sl_xcalloc(langs->n + 1, sizeof(*totals));
            for (size_t i = 0; i < langs->n && !rc; i++) {
                long v = 0;
                rc = sl_cfg_node_int(langs->items[i], &v);
                if (!rc && v <= 0)
                    rc = where_err(langs->items[i], "expected a number of files > 0");
                langs->items[i]->used = 1;
                push(&names, langs->items[i]->key);
                totals[i] = (unsigned long long)v;
            }
        } else if (!rc) {
            struct sl_strlist raw = { 0 };
            rc = scalars(L, langs, &raw);
            for (size_t i = 0; !rc && i < raw.n; i++) {
                /* "cs,da,de" (NeMo's form) or a list */
                char *dup = sl_xstrdup(raw.v[i]), *save = NULL;
                for (char *tok = strtok_r(dup, ", ", &save); tok; tok = strtok_r(NULL, ", ", &save))
                    push(&names, tok);
                free(dup);
            }
            sl_strlist_release(&raw);
        }
        uint64_t *ns = NULL;
        size_t nn = 0;
        if (!rc && numbers && sl_parse_ranges(numbers, &ns, &nn))
            rc = where_err(nums, "%s", sl_err_msg());
        if (!rc && !numbers && !totals)
            rc = where_err(langs, "give 'file_numbers' (which files of each language), or "
                                  "'languages' as a map: language -> number of files");
        if (!rc && names.n == 0)
            rc = where_err(langs, "no languages given");
        struct sl_buf text = SL_BUF_INIT;
        size_t count = 0;
        for (size_t i = 0; !rc && i < names.n; i++) {
            unsigned long long total = totals ? totals[i] : 0;
            size_t m = numbers ? nn : (size_t)total;
            for (size_t j = 0; !rc && j < m; j++) {
                unsigned long long n = numbers ? ns[j] : j;
                if (total && n >= total)
                    continue;
                char *u = NULL;
                rc = pl_format_template(t, n, names.v[i], total, &u);
                if (rc) {
                    rc = where_err(tmpl, "%s", sl_err_msg());
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
            s->note = sl_xasprintf("%s: %zu URLs (%zu languages x file_numbers) in %s", s->label,
                                   count, names.n, s->urls_path);
        }
        sl_buf_release(&text);
        free(ns);
        free(totals);
        sl_strlist_release(&names);
        free(t);
    } else {
        if (tmpl) {
            free(numbers);
            return where_err(tmpl, "'url_template' does not go with 'paths_url' (the paths "
                                   "file lists the files)");
        }
        char *url = NULL, *pre = NULL;
        rc = one_scalar(L, paths, &url);
        if (!rc && prefix)
            rc = one_scalar(L, prefix, &pre);
        if (!rc && !pre) {
            /* scheme://host/ of the paths URL */
            const char *h = strstr(url, "://");
            const char *slash = h ? strchr(h + 3, '/') : NULL;
            pre = slash ? sl_xstrndup(url, (size_t)(slash - url + 1)) : sl_xasprintf("%s/", url);
        }
        if (!rc) {
            /* first fetch the paths file itself, into OUT/.sluice/paths */
            char *pdir = sl_xasprintf("%s/.sluice/paths", s->out);
            const char *base = strrchr(url, '/');
            base = base && base[1] ? base + 1 : "paths";
            size_t q = strcspn(base, "?#");
            char *bname = sl_xstrndup(base, q);
            char *label = sl_xasprintf("%s/paths", s->label);
            /* insert the fetch before the main download step */
            struct pl_step main = *s;
            p->n--;
            struct pl_step *f = new_step(p, PL_DOWNLOAD);
            f->label = label;
            f->out = pdir;
            push(&f->argv, "--out");
            push(&f->argv, pdir);
            push(&f->argv, "--url");
            push(&f->argv, url);
            f->aux = 1;
            p->steps = sl_xrealloc(p->steps, (p->n + 1) * sizeof(*p->steps));
            p->steps[p->n++] = main;
            s = &p->steps[p->n - 1];
            add_dep(s, p->n - 2);
            s->prep = PL_PREP_PATHS;
            s->paths_file = sl_xasprintf("%s/%s", pdir, bname);
            push(&s->inputs, s->paths_file);
            s->paths_prefix = pre;
            pre = NULL;
            s->paths_numbers = numbers ? sl_xstrdup(numbers) : NULL;
            s->note = sl_xasprintf("%s: lines %s of %s, each prefixed with %s, in %s", s->label,
                                   numbers ? numbers : "(all)", s->paths_file, s->paths_prefix,
                                   s->urls_path);
            free(bname);
        }
        free(url);
        free(pre);
    }
    free(numbers);
    if (!rc) {
        push(&s->argv, "--url-list");
        push(&s->argv, s->urls_path);
    }
    return rc;
}

/* The options of a download step, minus what download_urls turned into a URL list. */
static int download_options(struct loader *L, struct sl_cfg *map, struct pl_step *s)
{
    int list = child(map, "languages") || child(map, "paths_url");
    if (!list)
        return section_options(L, download_keys, map, s);
    /* url_template and file_numbers were read into the URL list */
    static const struct key rest[] = {
        { "url", "url", K_REPEAT, 0, NULL },
        VALIN("url_list", "url-list"),
        VALIN("checksums", "checksums"),
        VAL("retries", "retries"),
        VAL("retry_wait", "retry-wait"),
        VAL("connect_timeout", "connect-timeout"),
        VAL("stall_timeout", "stall-timeout"),
        FLAG("force", "force"),
        FLAG("quiet", "quiet"),
        FLAG("verbose", "verbose"),
        END,
    };
    struct sl_cfg *u = child(map, "url");
    struct sl_cfg *ul = child(map, "url_list");
    if (u || ul)
        return where_err(u ? u : ul, "'%s' does not go with 'languages' or 'paths_url'",
                         u ? "url" : "url_list");
    return section_options(L, rest, map, s);
}

/* Flatten a map of trainer keys into "a.b=value" overrides (lists as YAML flow lists). */
static int flatten(struct loader *L, struct sl_cfg *node, const char *path, struct sl_strlist *out,
                   int *seen_vocab, int *seen_prefix, char **log, char **ckpt)
{
    node->used = 1;
    if (node->kind == SL_CFG_MAP) {
        for (size_t i = 0; i < node->n; i++) {
            char *sub = sl_xasprintf("%s.%s", path, node->items[i]->key);
            int rc = flatten(L, node->items[i], sub, out, seen_vocab, seen_prefix, log, ckpt);
            free(sub);
            if (rc)
                return rc;
        }
        return 0;
    }
    struct sl_strlist vs = { 0 };
    int rc = scalars(L, node, &vs);
    if (rc) {
        sl_strlist_release(&vs);
        return rc;
    }
    char *v;
    if (node->kind == SL_CFG_SEQ) {
        char *j = strlist_join(&vs, ", ");
        v = sl_xasprintf("[%s]", j);
        free(j);
    } else {
        v = sl_xstrdup(vs.n ? vs.v[0] : "");
    }
    char *kv = sl_xasprintf("%s=%s", path, v);
    push(out, kv);
    free(kv);
    *seen_vocab |= !strcmp(path, "model.vocab_size");
    *seen_prefix |= !strcmp(path, "data.prefix") || !strcmp(path, "data");
    if (!strcmp(path, "log.file")) {
        free(*log);
        *log = sl_xstrdup(v);
    }
    if (!strcmp(path, "checkpoint.dir")) {
        free(*ckpt);
        *ckpt = sl_xstrdup(v);
    }
    free(v);
    sl_strlist_release(&vs);
    return 0;
}

/* train: sluice train CONFIG section.key=value ... with the pipeline's defaults (data
 * from the tokenize stage, vocabulary from tokenizer_train, checkpoints and the log in
 * OUT). */
static int build_train(struct loader *L, struct sl_cfg *sec, struct flow *fl)
{
    struct pl_pipeline *p = L->p;
    if (sec->kind != SL_CFG_MAP)
        return where_err(sec, "'train' takes one map: config and the trainer's sections");
    int rc = check_keys(sec, train_keys, 0);
    if (rc)
        return rc;
    struct sl_cfg *cf = child(sec, "config");
    if (!cf)
        return where_err(sec, "'train' needs 'config:' (a trainer config, e.g. "
                              "configs/models/tiny-gpt.yaml)");
    size_t idx = p->n;
    struct pl_step *s = new_step(p, PL_TRAIN);
    s->label = sl_xstrdup("train");
    struct sl_cfg *o = child(sec, "out");
    char *config = NULL, *log = NULL, *ckpt = NULL;
    if (o)
        rc = one_scalar(L, o, &s->out);
    else
        s->out = sl_xasprintf("%s/train", p->work_dir);
    if (!rc)
        rc = one_scalar(L, cf, &config);
    if (rc)
        return rc;
    {
        char *r = resolve_input(L, cf, config);
        free(config);
        config = r;
    }
    push(&s->argv, config);
    push(&s->inputs, config);
    free(config);
    int seen_vocab = 0, seen_prefix = 0;
    for (int k = 0; train_sections[k] && !rc; k++) {
        struct sl_cfg *c = child(sec, train_sections[k]);
        if (!c)
            continue;
        if (c->kind != SL_CFG_MAP && strcmp(train_sections[k], "data") != 0)
            rc = where_err(c, "expected a map of %s.* keys", train_sections[k]);
        else
            rc = flatten(L, c, train_sections[k], &s->argv, &seen_vocab, &seen_prefix, &log, &ckpt);
    }
    struct sl_cfg *in = child(sec, "in");
    struct sl_strlist prefixes = { 0 };
    if (!rc && in && seen_prefix)
        rc = where_err(in, "give 'in' or 'data.prefix', not both");
    if (!rc && in) {
        rc = scalars(L, in, &prefixes);
        if (!rc && prefixes.n == 0)
            rc = where_err(in, "no inputs given");
        for (size_t i = 0; !rc && i < prefixes.n; i++) {
            char *end = NULL;
            strtod(prefixes.v[i], &end);
            if ((end && !*end) || strchr(prefixes.v[i], ' '))
                continue; /* a weight, or "W1 P1 W2 P2" in one value */
            struct sl_cfg *it = in->kind == SL_CFG_SEQ ? in->items[i] : in;
            char *r = resolve_input(L, it, prefixes.v[i]);
            free(prefixes.v[i]);
            prefixes.v[i] = r;
        }
    } else if (!rc && !seen_prefix) {
        if (!fl->tokens)
            rc = where_err(sec, "'train' has no data: give 'in:' (token shard prefixes), "
                                "'data: {prefix: ...}', or a 'tokenize' stage before it");
        else {
            push(&prefixes, fl->tokens);
            add_dep(&p->steps[idx], fl->tokens_step);
        }
    }
    s = &p->steps[idx];
    if (!rc && prefixes.n) {
        char *j = strlist_join(&prefixes, " ");
        char *kv = sl_xasprintf("data.prefix=%s", j);
        push(&s->argv, kv);
        free(kv);
        free(j);
        for (size_t i = 0; i < prefixes.n; i++) {
            /* weights (numbers) among the prefixes are not files */
            char *end = NULL;
            strtod(prefixes.v[i], &end);
            if (end && !*end)
                continue;
            char *bin = sl_xasprintf("%s.bin", prefixes.v[i]);
            char *ix = sl_xasprintf("%s.idx", prefixes.v[i]);
            push(&s->inputs, bin);
            push(&s->inputs, ix);
            free(bin);
            free(ix);
            for (size_t k = 0; k < idx; k++)
                if (p->steps[k].stage == PL_TOKENIZE && p->steps[k].argv.n > 2 &&
                    !strncmp(prefixes.v[i], p->steps[k].argv.v[2], strlen(p->steps[k].argv.v[2])))
                    add_dep(s, k);
        }
    }
    sl_strlist_release(&prefixes);
    if (!rc && !seen_vocab && fl->vocab_size) {
        char *kv = sl_xasprintf("model.vocab_size=%s", fl->vocab_size);
        push(&s->argv, kv);
        free(kv);
        add_dep(s, fl->tok_step);
    }
    if (!rc) {
        /* the index caches, checkpoints and the log stay in the step's directory */
        int have_cache = 0;
        for (size_t i = 0; i < s->argv.n; i++)
            have_cache |= !strncmp(s->argv.v[i], "data.cache_dir=", 15);
        char *kv = sl_xasprintf("data.cache_dir=%s/index-cache", s->out);
        if (!have_cache)
            push(&s->argv, kv);
        free(kv);
        if (!ckpt) {
            s->fresh_rm[0] = sl_xasprintf("%s/checkpoints", s->out);
            kv = sl_xasprintf("checkpoint.dir=%s", s->fresh_rm[0]);
            push(&s->argv, kv);
            free(kv);
        }
        if (!log) {
            s->fresh_rm[1] = sl_xasprintf("%s/log.jsonl", s->out);
            s->train_log = sl_xstrdup(s->fresh_rm[1]);
            kv = sl_xasprintf("log.file=%s", s->train_log);
            push(&s->argv, kv);
            free(kv);
        } else {
            s->train_log = log;
            log = NULL;
        }
        struct sl_cfg *q = child(sec, "quiet"), *v = child(sec, "verbose");
        int on = 0;
        if (q)
            q->used = 1;
        if (v)
            v->used = 1;
        if (q && !(rc = sl_cfg_node_bool(q, &on)) && on)
            push(&s->argv, "--quiet");
        on = 0;
        if (!rc && v && !(rc = sl_cfg_node_bool(v, &on)) && on)
            push(&s->argv, "--verbose");
    }
    free(log);
    free(ckpt);
    return rc;
}

static int build_stage(struct loader *L, int stage, struct sl_cfg *sec, struct flow *fl)
{
    struct pl_pipeline *p = L->p;
    const struct stage_def *d = &stages[stage];
    sec->used = 1;
    if (stage == PL_TRAIN)
        return build_train(L, sec, fl);
    struct entry *ents = NULL;
    size_t ne = 0;
    int in_list = sec->kind == SL_CFG_SEQ;
    if (in_list) {
        if (stage == PL_TOKENIZER_TRAIN || stage == PL_TOKENIZE)
            return where_err(sec, "'%s' takes one map, not a list", d->name);
        if (sec->n == 0)
            return where_err(sec, "an empty list of runs");
        ents = sl_xcalloc(sec->n, sizeof(*ents));
        for (size_t i = 0; i < sec->n; i++) {
            ents[ne].map = sec->items[i];
            ents[ne].map->used = 1;
            if (ents[ne].map->kind != SL_CFG_MAP && ents[ne].map->kind != SL_CFG_NULL) {
                free(ents);
                return where_err(sec->items[i], "expected a map of options");
            }
            ne++;
        }
    } else if (sec->kind == SL_CFG_MAP || sec->kind == SL_CFG_NULL ||
               (sec->kind == SL_CFG_SCALAR && !sec->value[0])) {
        ents = sl_xcalloc(1, sizeof(*ents));
        ents[0].map = sec;
        ne = 1;
    } else {
        return where_err(sec, "expected a map of options (or a list of them)");
    }
    int rc = 0;
    size_t first = p->n;
    for (size_t e = 0; e < ne && !rc; e++) {
        struct sl_cfg *m = ents[e].map;
        rc = check_keys(m, d->keys, in_list);
        if (rc)
            break;
        char *name = NULL;
        struct sl_cfg *nm = child(m, "name");
        if (nm)
            rc = one_scalar(L, nm, &name);
        else if (in_list)
            name = sl_xasprintf("%zu", e);
        if (rc)
            break;
        if (name && (!name[0] || strchr(name, '/') || name[0] == '.')) {
            rc = where_err(nm, "an entry name is a plain file name, got '%s'", name);
            free(name);
            break;
        }
        size_t idx = p->n;
        struct pl_step *s = new_step(p, stage);
        s->label = name ? sl_xasprintf("%s/%s", d->name, name) : sl_xstrdup(d->name);
        struct sl_cfg *o = child(m, "out");
        if (o)
            rc = one_scalar(L, o, &s->out);
        else
            s->out = name ? sl_xasprintf("%s/%s/%s", p->work_dir, d->name, name)
                          : sl_xasprintf("%s/%s", p->work_dir, d->name);
        free(name);
        if (rc)
            break;
        /* --out */
        push(&s->argv, "--out");
        if (stage == PL_TOKENIZER_TRAIN || stage == PL_TOKENIZE) {
            struct sl_cfg *px = child(m, "prefix");
            char *pfx = NULL;
            if (px)
                rc = one_scalar(L, px, &pfx);
            else
                pfx = sl_xstrdup(stage == PL_TOKENIZE ? p->name : "tokenizer");
            if (!rc && (!pfx[0] || strchr(pfx, '/')))
                rc = where_err(px, "a prefix is a plain file name, got '%s'", pfx);
            if (!rc) {
                char *full = sl_xasprintf("%s/%s", s->out, pfx);
                push(&s->argv, full);
                if (stage == PL_TOKENIZER_TRAIN) {
                    free(fl->tok_model);
                    fl->tok_model = sl_xasprintf("%s.model", full);
                    fl->tok_step = idx;
                    struct sl_cfg *vs = child(m, "vocab_size");
                    free(fl->vocab_size);
                    fl->vocab_size = NULL;
                    if (vs)
                        rc = one_scalar(L, vs, &fl->vocab_size);
                } else {
                    s->counts_manifest = sl_xasprintf("%s.manifest.json", full);
                    /* the first --json-key names the shards the trainer reads */
                    struct sl_cfg *jk = child(m, "json_key");
                    struct sl_strlist keys = { 0 };
                    if (jk)
                        rc = scalars(L, jk, &keys);
                    free(fl->tokens);
                    fl->tokens = sl_xasprintf("%s_%s_document", full, keys.n ? keys.v[0] : "text");
                    fl->tokens_step = idx;
                    sl_strlist_release(&keys);
                }
                free(full);
            }
            free(pfx);
            if (rc)
                break;
        } else {
            push(&s->argv, s->out);
            s->counts_manifest = sl_xasprintf("%s/manifest.json", s->out);
        }
        /* options */
        if (stage == PL_DOWNLOAD) {
            rc = download_options(L, m, s);
            if (!rc)
                rc = download_urls(L, m, p, idx);
            s = &p->steps[p->n - 1];
            if (rc)
                break;
        } else {
            rc = section_options(L, d->keys, m, s);
            if (rc)
                break;
        }
        if (stage == PL_TOKENIZE) {
            if (!child(m, "tokenizer")) {
                if (!fl->tok_model) {
                    rc = where_err(m, "'tokenize' needs 'tokenizer:' (gpt2:DIR, tiktoken:FILE, "
                                      "spm:FILE), or a 'tokenizer_train' stage before it");
                    break;
                }
                char *spec = sl_xasprintf("spm:%s", fl->tok_model);
                push(&s->argv, "--tokenizer");
                push(&s->argv, spec);
                push(&s->inputs, fl->tok_model);
                free(spec);
                add_dep(s, fl->tok_step);
            }
        }
        /* inputs */
        if (stage == PL_DOWNLOAD) {
            if (m->kind == SL_CFG_MAP && child(m, "in")) {
                rc = where_err(child(m, "in"), "'download' reads URLs, not 'in'");
                break;
            }
        } else {
            struct sl_cfg *in = child(m, "in");
            struct sl_strlist ops = { 0 };
            if (in) {
                rc = scalars(L, in, &ops);
                if (!rc && ops.n == 0)
                    rc = where_err(in, "no inputs given");
                for (size_t i = 0; !rc && i < ops.n; i++) {
                    struct sl_cfg *it = in->kind == SL_CFG_SEQ ? in->items[i] : in;
                    char *r = resolve_input(L, it, ops.v[i]);
                    free(ops.v[i]);
                    ops.v[i] = r;
                }
            } else if (fl->docs.n) {
                for (size_t i = 0; i < fl->docs.n; i++) {
                    push(&ops, fl->docs.v[i]);
                    add_dep(s, fl->doc_steps[i]);
                }
            } else {
                rc = where_err(m,
                               "'%s' has no inputs: give 'in:' (files or directories), or a "
                               "stage before it",
                               d->name);
            }
            for (size_t i = 0; !rc && i < ops.n; i++) {
                push(&s->argv, ops.v[i]);
                push(&s->inputs, ops.v[i]);
                /* an input that is an earlier step's output */
                for (size_t k = 0; k < idx; k++)
                    if (!strcmp(p->steps[k].out, ops.v[i]))
                        add_dep(s, k);
            }
            sl_strlist_release(&ops);
            if (rc)
                break;
        }
    }
    free(ents);
    if (!rc && d->docs)
        flow_set_docs(fl, p, first);
    return rc;
}

static int load_selection(struct loader *L, int present[PL_NSTAGES], int sel[PL_NSTAGES])
{
    struct sl_cfg *st = sl_cfg_child(L->root, "stages");
    if (!st || st->kind == SL_CFG_NULL) {
        if (st)
            st->used = 1;
        memcpy(sel, present, sizeof(int) * PL_NSTAGES);
        return 0;
    }
    const char **names = NULL;
    size_t n = 0;
    int rc = sl_cfg_strs(L->root, "stages", &names, &n);
    if (rc)
        return rc;
    st = sl_cfg_child(L->root, "stages");
    memset(sel, 0, sizeof(int) * PL_NSTAGES);
    for (size_t i = 0; i < n && !rc; i++) {
        int found = -1;
        for (int s = 0; s < PL_NSTAGES; s++)
            if (!strcmp(names[i], stages[s].name))
                found = s;
        struct sl_cfg *node = st->kind == SL_CFG_SEQ && i < st->n ? st->items[i] : st;
        if (found < 0) {
            const char *best = NULL;
            size_t bestd = (size_t)-1;
            for (int s = 0; s < PL_NSTAGES; s++) {
                size_t dd = sl_edit_distance(names[i], stages[s].name);
                if (dd < bestd) {
                    bestd = dd;
                    best = stages[s].name;
                }
            }
            if (bestd <= 3)
                rc =
                    where_err(node, "unknown stage '%s'\nhint: did you mean '%s'?", names[i], best);
            else
                rc = where_err(node,
                               "unknown stage '%s'\nhint: the stages are download, extract, "
                               "clean, filter, decontaminate, dedup_exact, dedup_fuzzy, reshard, "
                               "tokenizer_train, tokenize, train",
                               names[i]);
        } else if (!present[found]) {
            rc = where_err(node,
                           "stage '%s' has no section in '%s'\nhint: add a '%s:' section "
                           "(it may be empty)",
                           names[i], L->file, names[i]);
        } else {
            sel[found] = 1;
        }
    }
    free(names);
    return rc;
}

/* The names of the variables that the values under node refer to as ${name}. */
static void collect_refs(const struct sl_cfg *node, struct sl_strlist *out)
{
    if (node->kind == SL_CFG_SCALAR) {
        for (const char *q = node->value; (q = strstr(q, "${")) != NULL; q += 2) {
            size_t l = strcspn(q + 2, "}");
            if (q[2 + l] != '}')
                break;
            char *name = sl_xstrndup(q + 2, l);
            push(out, name);
            free(name);
        }
        return;
    }
    for (size_t i = 0; i < node->n; i++)
        collect_refs(node->items[i], out);
}

static int check_top(struct loader *L)
{
    struct sl_cfg *r = L->root;
    for (size_t i = 0; i < r->n; i++) {
        struct sl_cfg *c = r->items[i];
        /* a null variable, or one of the file whose only use an override replaced */
        int referenced = 0;
        for (size_t j = 0; j < L->file_refs.n && !referenced; j++)
            referenced = !strcmp(L->file_refs.v[j], c->key);
        if (referenced)
            c->used = 1;
        if (c->used)
            continue;
        const char *best = NULL;
        size_t bestd = (size_t)-1;
        for (int s = 0; s < PL_NSTAGES + 3; s++) {
            const char *k = s < PL_NSTAGES ? stages[s].name : top_keys[s - PL_NSTAGES];
            size_t d = sl_edit_distance(c->key, k);
            if (d < bestd) {
                bestd = d;
                best = k;
            }
        }
        if (best && bestd <= 3)
            return where_err(c, "unknown key '%s'\nhint: did you mean '%s'?", c->key, best);
        return where_err(c,
                         "unknown key '%s'\nhint: a top-level key is a stage, 'name', "
                         "'work_dir', 'stages', or a variable that a value uses as '${%s}'",
                         c->key, c->key);
    }
    return sl_cfg_check_unused(r);
}

int pl_pipeline_load(struct pl_pipeline *p, const char *path, const char *const *overrides,
                     size_t n)
{
    memset(p, 0, sizeof(*p));
    struct sl_cfg *root = NULL;
    int rc = sl_cfg_load_file(&root, path);
    if (rc)
        return rc;
    if (root->kind == SL_CFG_NULL)
        root->kind = SL_CFG_MAP;
    if (root->kind != SL_CFG_MAP) {
        sl_cfg_free(root);
        return sl_err_set(SL_ERR_CONFIG, "%s: a pipeline is a map of stages", path);
    }
    struct sl_strlist refs = { 0 };
    collect_refs(root, &refs);
    for (size_t i = 0; i < n && !rc; i++)
        rc = sl_cfg_override(root, overrides[i]);
    if (rc) {
        sl_strlist_release(&refs);
        sl_cfg_free(root);
        return rc;
    }
    p->cfg = root;
    char *dtmp = sl_xstrdup(path), *dslash = strrchr(dtmp, '/');
    if (dslash)
        *(dslash == dtmp ? dslash + 1 : dslash) = '\0';
    struct loader L = { p, root, path, dslash ? dtmp : sl_xstrdup("."), refs };
    if (!dslash)
        free(dtmp);
    for (int s = 0; s < PL_NSTAGES; s++) {
        struct sl_cfg *sec = sl_cfg_child(root, stages[s].name);
        if (sec)
            null_vars(root, sec);
    }
    struct flow fl;
    memset(&fl, 0, sizeof(fl));

    /* name and work_dir first: values may refer to them */
    struct sl_cfg *nm = sl_cfg_child(root, "name"), *wd = sl_cfg_child(root, "work_dir");
    p->work_dir = sl_xstrdup("");
    if (nm) {
        char *v = NULL;
        p->name = sl_xstrdup("");
        rc = one_scalar(&L, nm, &v);
        free(p->name);
        p->name = v ? v : sl_xstrdup("");
    } else {
        const char *b = strrchr(path, '/');
        b = b ? b + 1 : path;
        size_t l = strlen(b);
        if (l > 5 && !strcmp(b + l - 5, ".yaml"))
            l -= 5;
        else if (l > 4 && !strcmp(b + l - 4, ".yml"))
            l -= 4;
        p->name = sl_xstrndup(b, l);
    }
    if (!rc && (!p->name[0] || strchr(p->name, '/')))
        rc = where_err(nm ? nm : root, "the pipeline's name is a plain file name, got '%s'",
                       p->name);
    if (!rc) {
        if (wd) {
            char *w = NULL;
            rc = one_scalar(&L, wd, &w);
            free(p->work_dir);
            p->work_dir = w ? w : sl_xstrdup("");
            if (!rc && !p->work_dir[0])
                rc = where_err(wd, "an empty work_dir");
        } else {
            free(p->work_dir);
            p->work_dir = sl_xstrdup(p->name);
        }
    }
    if (!rc) {
        /* strip trailing slashes so outputs compare as strings */
        size_t l = strlen(p->work_dir);
        while (l > 1 && p->work_dir[l - 1] == '/')
            p->work_dir[--l] = '\0';
    }
    int present[PL_NSTAGES] = { 0 }, sel[PL_NSTAGES] = { 0 };
    for (int s = 0; s < PL_NSTAGES; s++)
        present[s] = sl_cfg_child(root, stages[s].name) != NULL;
    if (!rc)
        rc = load_selection(&L, present, sel);
    for (int s = 0; s < PL_NSTAGES && !rc; s++) {
        if (!present[s])
            continue;
        size_t first = p->n;
        rc = build_stage(&L, s, sl_cfg_child(root, stages[s].name), &fl);
        for (size_t i = first; i < p->n; i++)
            p->steps[i].selected = sel[s];
    }
    if (!rc && p->n == 0)
        rc = sl_err_set(SL_ERR_CONFIG,
                        "%s: no stages: give at least one of download, extract, "
                        "clean, filter, decontaminate, dedup_exact, dedup_fuzzy, reshard, "
                        "tokenizer_train, tokenize, train",
                        path);
    if (!rc)
        rc = check_top(&L);
    sl_strlist_release(&fl.docs);
    free(fl.doc_steps);
    free(fl.tok_model);
    free(fl.vocab_size);
    free(fl.tokens);
    free(L.dir);
    sl_strlist_release(&L.file_refs);
    if (rc) {
        pl_pipeline_release(p);
        return rc;
    }
    return 0;
}

void pl_pipeline_release(struct pl_pipeline *p)
{
    for (size_t i = 0; i < p->n; i++)
        step_release(&p->steps[i]);
    free(p->steps);
    free(p->name);
    free(p->work_dir);
    sl_cfg_free(p->cfg);
    memset(p, 0, sizeof(*p));
}

/* ---- preparation: URL lists ---------------------------------------------------------- */

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
