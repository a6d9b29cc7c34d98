/* The data loader: prefixes, splits, per-split GPT indices (built or read from Megatron's
 * cache), blending, and synthetic tokens. */
#include "dataset/loader.h"

#include "core/alloc.h"
#include "core/atomic.h"
#include "core/buf.h"
#include "core/err.h"
#include "core/file.h"
#include "core/rng.h"
#include "core/stream.h"
#include "dataset/blend.h"
#include "dataset/gpt_index.h"
#include "dataset/idx.h"
#include "dataset/megatron_desc.h"

#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const split_names[3] = { "train", "valid", "test" };

/* Megatron's default mid_level_dataset_surplus */
#define DEFAULT_SURPLUS 0.005

struct component {
    struct idx_reader *r;
    char *mpath; /* the dataset_path Megatron gets */
    uint64_t lo[3], hi[3];
    struct gpt_index ix[3];
    int built[3];
};

struct data_loader {
    struct data_opts o;
    struct mdesc md; /* what the cache names hash */
    char *tok_json;
    double surplus;
    int synthetic;
    int n, weighted;
    struct component *c;
    double *weights; /* as given (weighted), else 0 */
    int present[3];  /* Megatron builds split s (its split matrix has a range) */
    double bounds[3][2];
    uint64_t size[3];
    int16_t *bi[3]; /* blending: dataset of each sample (blends) */
    int64_t *bs[3]; /* and its index within that dataset */
    int blended[3];
    int all_cached;
    char note[256];
    struct data_loader *sub[3]; /* separate splits: split s is sub[s]'s split s */
    int separate;
    struct data_cache_info *caches;
    size_t ncaches;
};

int data_loader_synthetic(const struct data_loader *d)
{
    return d->synthetic;
}

int data_loader_prefixes(const struct data_loader *d)
{
    if (d->separate) {
        int n = 0;
        for (int s = 0; s < 3; s++)
            n += d->sub[s] ? d->sub[s]->n : 0;
        return n;
    }
    return d->n;
}

uint64_t data_loader_tokens(const struct data_loader *d)
{
    uint64_t t = 0;
    for (int s = 0; s < 3; s++)
        t += d->sub[s] ? data_loader_tokens(d->sub[s]) : 0;
    for (int i = 0; i < d->n; i++)
        t += idx_reader_tokens(d->c[i].r);
    return t;
}

void data_loader_epochs(const struct data_loader *d, enum data_split s, int *fewest, int *most)
{
    *fewest = *most = 0;
    if (d->separate) {
        if (d->sub[s])
            data_loader_epochs(d->sub[s], s, fewest, most);
        return;
    }
    for (int i = 0, first = 1; i < d->n; i++) {
        if (!d->c[i].built[s])
            continue;
        int e = d->c[i].ix[s].num_epochs;
        *fewest = first || e < *fewest ? e : *fewest;
        *most = first || e > *most ? e : *most;
        first = 0;
    }
}

int data_loader_cached(const struct data_loader *d)
{
    return d->all_cached;
}

const char *data_loader_note(const struct data_loader *d)
{
    return d->note[0] ? d->note : NULL;
}

size_t data_loader_caches(const struct data_loader *d, const struct data_cache_info **out)
{
    *out = d->caches;
    return d->ncaches;
}

uint64_t data_loader_samples(const struct data_loader *d, enum data_split s)
{
    if (d->synthetic)
        return d->o.num_samples[s] ? UINT64_MAX : 0;
    if (d->separate)
        return d->sub[s] ? data_loader_samples(d->sub[s], s) : 0;
    return d->size[s];
}

int data_loader_source(const struct data_loader *d, enum data_split s, uint64_t i,
                       const char **prefix, uint64_t *k)
{
    if (d->separate)
        return d->sub[s] ? data_loader_source(d->sub[s], s, i, prefix, k) : -1;
    if (d->synthetic || i >= d->size[s])
        return -1;
    int c = d->blended[s] ? d->bi[s][i] : 0;
    *prefix = idx_reader_prefix(d->c[c].r);
    *k = d->blended[s] ? (uint64_t)d->bs[s][i] : i;
    return c;
}

static void caches_release(struct data_loader *d)
{
    for (size_t i = 0; i < d->ncaches; i++) {
        free(d->caches[i].dir);
        free(d->caches[i].name);
        free(d->caches[i].prefix);
    }
    free(d->caches);
}

void data_loader_free(struct data_loader *d)
{
    if (!d)
        return;
    for (int s = 0; s < 3; s++)
        data_loader_free(d->sub[s]);
    for (int i = 0; i < d->n; i++) {
        for (int s = 0; s < 3; s++)
            gpt_index_release(&d->c[i].ix[s]);
        idx_reader_close(d->c[i].r);
        free(d->c[i].mpath);
    }
    for (int s = 0; s < 3; s++) {
        free(d->bi[s]);
        free(d->bs[s]);
    }
    caches_release(d);
    free(d->tok_json);
    free(d->c);
    free(d->weights);
    free(d);
}

static void add_cache(struct data_loader *d, const struct data_cache_info *c)
{
    if ((d->ncaches & (d->ncaches + 1)) == 0 || !d->caches)
        d->caches = sl_xrealloc(d->caches, (2 * d->ncaches + 2) * sizeof(*d->caches));
    d->caches[d->ncaches++] = *c;
}

static void say(const struct data_loader *d, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void say(const struct data_loader *d, const char *fmt, ...)
{
    if (!d->o.note)
        return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    d->o.note(d->o.note_ctx, msg);
}

/* The description Megatron wrote beside a cache must be the one we hash: anything else
 * is a cache of other settings under our name. */
static int check_description(const char *path, const struct sl_buf *desc)
{
    struct sl_buf b = SL_BUF_INIT;
    int rc = sl_read_file(path, &b);
    if (!rc && (b.len != desc->len || memcmp(b.data, desc->data, b.len) != 0))
        rc = sl_err_set(SL_ERR_CORRUPT,
                        "index cache description '%s' differs from the settings' own\n"
                        "hint: delete the cache files of that name",
                        path);
    sl_buf_release(&b);
    return rc;
}

static int cache_file_exists(const char *dir, const char *name, const char *what)
{
    char *p = sl_xasprintf("%s/%s-%s", dir, name, what);
    int ok = sl_file_exists(p);
    free(p);
    return ok;
}

/* Megatron's cache hit: the description and every array present. */
static int cache_hit(const char *dir, const char *name, const char *const *files)
{
    if (!cache_file_exists(dir, name, "description.txt"))
        return 0;
    for (int i = 0; files[i]; i++)
        if (!cache_file_exists(dir, name, files[i]))
            return 0;
    return 1;
}

static int write_description(const char *dir, const char *name, const struct sl_buf *desc)
{
    int rc = sl_mkdir_p(dir);
    char *p = sl_xasprintf("%s/%s-description.txt", dir, name);
    if (!rc)
        rc = sl_write_file_atomic(p, desc->data, desc->len);
    free(p);
    return rc;
}

static int cache_write_error(int rc, const char *dir)
{
    char msg[SL_ERR_MSG_MAX];
    snprintf(msg, sizeof(msg), "%s", sl_err_msg());
    return sl_err_set(rc,
                      "cannot write the index cache in '%s': %s\n"
                      "hint: set data.cache_dir (--data-cache-path) to a writable directory",
                      dir, msg);
}

/* The GPTDataset of component c for split s asking num_samples (< 0: None): read from
 * Megatron's cache when there, else built (and cached when write_cache). */
static int build_component_split(struct data_loader *d, struct component *c, int s,
                                 int64_t num_samples)
{
    static const char *const files[] = { "document_index.npy", "sample_index.npy",
                                         "shuffle_index.npy", NULL };
    struct mdesc_gpt g = { c->mpath, num_samples };
    struct sl_buf desc = SL_BUF_INIT;
    int rc = mdesc_gpt(&desc, &d->md, &g, s);
    if (rc)
        return rc;
    char hex[33], name[96];
    mdesc_hash(&desc, hex);
    snprintf(name, sizeof(name), "%s-GPTDataset-%s", hex, split_names[s]);
    char *dir = d->o.cache_dir ? sl_xstrdup(d->o.cache_dir)
                               : sl_xasprintf("%s/cache/GPTDataset_indices", idx_reader_prefix(c->r));
    struct data_cache_info info = { .split = s, .blended = 0, .dir = dir, .name = sl_xstrdup(name),
                                    .prefix = sl_xstrdup(idx_reader_prefix(c->r)),
                                    .num_samples = num_samples };
    if (cache_hit(dir, name, files)) {
        char *dp = sl_xasprintf("%s/%s-description.txt", dir, name);
        rc = check_description(dp, &desc);
        free(dp);
        if (!rc)
            rc = gpt_index_load(&c->ix[s], dir, name, c->r, d->o.seq_len);
        if (!rc) {
            c->ix[s].num_epochs = (int)(c->ix[s].n_doc / (c->hi[s] - c->lo[s]));
            info.loaded = 1;
        } else {
            say(d, "%s; building it again", sl_err_msg());
            gpt_index_release(&c->ix[s]);
            rc = 0;
        }
    }
    if (!info.loaded) {
        d->all_cached = 0;
        if (num_samples < 0)
            say(d, "building the %s index of '%s' (one epoch)", split_names[s],
                idx_reader_prefix(c->r));
        else
            say(d, "building the %s index of '%s' (%lld samples asked)", split_names[s],
                idx_reader_prefix(c->r), (long long)num_samples);
        struct gpt_index_opts go = { d->o.seq_len, num_samples < 0 ? 0 : (uint64_t)num_samples,
                                     d->o.seed };
        rc = gpt_index_build(&c->ix[s], c->r, c->lo[s], c->hi[s], &go);
        if (rc)
            sl_err_wrap(rc, "split '%s': ", split_names[s]);
        if (!rc && d->o.write_cache) {
            rc = write_description(dir, name, &desc);
            if (!rc)
                rc = gpt_index_save(&c->ix[s], dir, name);
            if (rc)
                rc = cache_write_error(rc, dir);
            info.written = !rc;
        }
    }
    sl_buf_release(&desc);
    if (rc) {
        free(info.dir);
        free(info.name);
        free(info.prefix);
        return rc;
    }
    c->built[s] = 1;
    info.samples = c->ix[s].n_samples;
    info.epochs = c->ix[s].num_epochs;
    add_cache(d, &info);
    return 0;
}

/* Open the prefixes; each split's sequence range from the split matrix. */
static int open_components(struct data_loader *d, char **prefixes, uint64_t *longest)
{
    int rc = 0;
    *longest = 0;
    d->c = sl_xcalloc((size_t)d->n, sizeof(*d->c));
    const char *map = d->o.megatron_path_map, *eq = map ? strchr(map, '=') : NULL;
    for (int i = 0; i < d->n && !rc; i++) {
        struct component *c = &d->c[i];
        rc = idx_reader_open(&c->r, prefixes[i]);
        if (rc) {
            sl_err_wrap(rc, "data.prefix: ");
            break;
        }
        size_t fl = eq ? (size_t)(eq - map) : 0;
        if (eq && !strncmp(prefixes[i], map, fl))
            c->mpath = sl_xasprintf("%s%s", eq + 1, prefixes[i] + fl);
        else
            c->mpath = sl_xstrdup(prefixes[i]);
        uint64_t ns = idx_reader_sequences(c->r);
        for (int s = 0; s < 3; s++) {
            /* Python's round(): halves to even, which rint does in the default mode */
            c->lo[s] = d->present[s] ? (uint64_t)rint(d->bounds[s][0] * (double)ns) : 0;
            c->hi[s] = d->present[s] ? (uint64_t)rint(d->bounds[s][1] * (double)ns) : 0;
        }
        for (uint64_t q = 0; q < ns; q++) {
            uint64_t len = idx_reader_seq_len(c->r, q);
            if (len > *longest)
                *longest = len;
        }
    }
    return rc;
}

static int empty_split(const struct data_loader *d, const struct component *c, int s)
{
    uint64_t ns = idx_reader_sequences(c->r);
    char hint[200];
    if (d->separate || ns < 3)
        snprintf(hint, sizeof(hint), "it has %llu sequence%s: too few to split; use more data",
                 (unsigned long long)ns, ns == 1 ? "" : "s");
    else
        snprintf(hint, sizeof(hint),
                 "data.split=%llu,1,1 gives each split at least one of its %llu sequences",
                 (unsigned long long)(ns - 2), (unsigned long long)ns);
    return sl_err_set(SL_ERR_CONFIG,
                      "data.split '%s' leaves no sequences of '%s' for the %s split\n"
                      "hint: %s%s",
                      d->o.split ? d->o.split : "", idx_reader_prefix(c->r), split_names[s], hint,
                      s == 1 ? ", or eval.interval=0 turns validation off" : "");
}

/* Several prefixes (or one with a weight): split s draws `want` samples from them, by
 * their weights (each asked for its share and Megatron's surplus) or, unweighted, by the
 * samples of one epoch of each. */
static int build_blend(struct data_loader *d, int s, uint64_t want)
{
    static const char *const files[] = { "dataset_index.npy", "dataset_sample_index.npy", NULL };
    int n = d->n, rc = 0;
    double *w1 = sl_xcalloc((size_t)n, sizeof(double)), *bw = sl_xcalloc((size_t)n, sizeof(double));
    struct mdesc_gpt *g = sl_xcalloc((size_t)n, sizeof(*g));
    uint64_t size = 0;
    if (d->weighted)
        mdesc_normalize(d->weights, (size_t)n, w1);
    for (int i = 0; i < n && !rc; i++) {
        struct component *c = &d->c[i];
        if (c->hi[s] <= c->lo[s]) {
            rc = empty_split(d, c, s);
            break;
        }
        g[i].path = c->mpath;
        g[i].num_samples =
            d->weighted ? (int64_t)blend_component_size(want, w1[i], d->surplus) : -1;
        rc = build_component_split(d, c, s, g[i].num_samples);
        /* the blend's size: the sum of the shares (weighted), or `want` capped at the
         * samples there are (unweighted, each weighed by its samples) */
        if (!rc && d->weighted)
            size += (uint64_t)ceil((double)want * w1[i]);
        if (!rc && !d->weighted) {
            w1[i] = (double)c->ix[s].n_samples;
            size += c->ix[s].n_samples;
        }
    }
    if (!rc && !d->weighted && size > want)
        size = want;
    struct sl_buf desc = SL_BUF_INIT;
    char hex[33], name[96];
    if (!rc) {
        mdesc_normalize(w1, (size_t)n, bw); /* BlendedDataset normalises again */
        rc = mdesc_blend(&desc, &d->md, g, n, s, bw, size);
    }
    mdesc_hash(&desc, hex);
    snprintf(name, sizeof(name), "%s-BlendedDataset-%s", hex, split_names[s]);
    const char *dir = d->o.cache_dir;
    d->size[s] = size;
    d->blended[s] = 1;
    struct data_cache_info info = { .split = s, .blended = 1, .num_samples = (int64_t)size,
                                    .samples = size };
    if (!rc && dir && cache_hit(dir, name, files)) {
        char *dp = sl_xasprintf("%s/%s-description.txt", dir, name);
        rc = check_description(dp, &desc);
        free(dp);
        if (!rc)
            rc = blend_load(dir, name, size, &d->bi[s], &d->bs[s]);
        info.loaded = !rc;
        if (rc) {
            say(d, "%s; building it again", sl_err_msg());
            rc = 0;
        }
    }
    if (!rc && !info.loaded) {
        if (dir)
            d->all_cached = 0;
        d->bi[s] = sl_xmalloc(sl_mul_size(size ? (size_t)size : 1, sizeof(int16_t)));
        d->bs[s] = sl_xmalloc(sl_mul_size(size ? (size_t)size : 1, sizeof(int64_t)));
        blend_build(bw, n, (size_t)size, d->bi[s], d->bs[s]);
        if (dir && d->o.write_cache) {
            rc = write_description(dir, name, &desc);
            if (!rc)
                rc = blend_save(dir, name, size, d->bi[s], d->bs[s]);
            if (rc)
                rc = cache_write_error(rc, dir);
            info.written = !rc;
        }
    }
    for (uint64_t k = 0; k < size && !rc; k++) {
        const struct component *c = &d->c[d->bi[s][k]];
        if (d->bi[s][k] < 0 || d->bi[s][k] >= n || d->bs[s][k] < 0 ||
            (uint64_t)d->bs[s][k] >= c->ix[s].n_samples)
            rc = sl_err_set(SL_ERR_STATE,
                            "the %s blend asks '%s' for more samples than it has (%zu)\n"
                            "hint: raise the surplus (data.mid_level_dataset_surplus, "
                            "Megatron's --mid-level-dataset-surplus)",
                            split_names[s], idx_reader_prefix(c->r), c->ix[s].n_samples);
    }
    if (!rc && dir) {
        info.dir = sl_xstrdup(dir);
        info.name = sl_xstrdup(name);
        add_cache(d, &info);
    }
    sl_buf_release(&desc);
    free(g);
    free(w1);
    free(bw);
    return rc;
}

/* The prefixes of one blend (data.prefix, or one split's own prefixes), their splits and
 * sample indexes. */
static int open_blend(struct data_loader *d, const struct data_opts *o, const char *spec)
{
    char **prefixes = NULL, *storage = NULL;
    int n = 0;
    int rc = blend_parse_prefix(spec, o->normalize_weights, &prefixes, &d->weights, &n, &storage);
    if (rc)
        return rc;
    d->n = n;
    d->weighted = d->weights[0] != 0.0;
    uint64_t longest;
    rc = open_components(d, prefixes, &longest);
    free(prefixes);
    free(storage);
    if (rc)
        return rc;
    if (longest < o->seq_len + 1)
        snprintf(d->note, sizeof(d->note),
                 "every document is shorter than seq_len + 1 = %llu tokens (longest %llu): each "
                 "sample spans several documents, as in Megatron",
                 (unsigned long long)(o->seq_len + 1), (unsigned long long)longest);
    /* Megatron: one prefix without a weight is a GPTDataset (so is one prefix of a split's
     * own blend, weighted or not); anything else a BlendedDataset */
    int single = n == 1 && (!d->weighted || d->separate);
    for (int s = 0; s < 3 && !rc; s++) {
        uint64_t want = o->num_samples[s];
        if (!d->present[s] || (!want && !o->all_splits))
            continue;
        if (!single) {
            rc = build_blend(d, s, want);
        } else if (d->c[0].hi[s] <= d->c[0].lo[s]) {
            rc = empty_split(d, &d->c[0], s);
        } else {
            rc = build_component_split(d, &d->c[0], s, (int64_t)want);
            d->size[s] = d->c[0].ix[s].n_samples;
        }
    }
    return rc;
}

/* data.prefix.{train,validation,test}: one loader per split, each holding that split only
 * (Megatron's blend_per_split: no split string, the split's range all of its data). */
static int open_separate(struct data_loader *d, const struct data_opts *o)
{
    static const char *const names[] = { "train", "validation", "test" };
    d->separate = 1;
    int rc = 0;
    for (int s = 0; s < 3 && !rc; s++) {
        int has = o->split_prefix[s] && o->split_prefix[s][0];
        if (!o->num_samples[s] && !(o->all_splits && has))
            continue;
        if (!has) {
            static const char *const mega[] = { "train", "valid", "test" };
            return sl_err_set(SL_ERR_CONFIG,
                              "the run needs %s samples, and the %s split has no prefixes\n"
                              "hint: set data.prefix.%s (or data.%s_data_path)%s",
                              names[s], names[s], names[s], mega[s],
                              s == 1 ? ", or eval.interval=0 to turn validation off" : "");
        }
        struct data_loader *sub = sl_xcalloc(1, sizeof(*sub));
        d->sub[s] = sub;
        sub->o = *o;
        memset(sub->o.split_prefix, 0, sizeof(sub->o.split_prefix));
        sub->o.split = NULL;
        sub->md = d->md;
        sub->md.split = NULL;
        sub->surplus = d->surplus;
        sub->all_cached = 1;
        sub->separate = 1; /* marks a split's own blend: one prefix is a GPTDataset */
        sub->present[s] = 1;
        sub->bounds[s][0] = 0.0;
        sub->bounds[s][1] = 1.0;
        rc = open_blend(sub, &sub->o, o->split_prefix[s]);
        sub->separate = 0;
        if (rc) {
            sl_err_wrap(rc, "data.prefix.%s: ", names[s]);
            break;
        }
        d->all_cached &= sub->all_cached;
        for (size_t i = 0; i < sub->ncaches; i++)
            add_cache(d, &sub->caches[i]);
        sub->ncaches = 0;
        if (!d->note[0] && sub->note[0])
            memcpy(d->note, sub->note, sizeof(d->note));
    }
    return rc;
}

/* The settings every cache name hashes. */
static int megatron_settings(struct data_loader *d, const struct data_opts *o)
{
    int rc = 0;
    if (o->megatron_tokenizer) {
        rc = mdesc_tokenizer(o->megatron_tokenizer, &d->tok_json);
    } else if (o->vocab_size) {
        char spec[64];
        snprintf(spec, sizeof(spec), "NullTokenizer:%llu", (unsigned long long)o->vocab_size);
        rc = mdesc_tokenizer(spec, &d->tok_json);
    } else {
        rc = sl_err_set(SL_ERR_CONFIG, "the tokenizer Megatron will be given is not known\n"
                                       "hint: name it (--megatron-tokenizer, "
                                       "data.megatron_tokenizer), e.g. NullTokenizer:50257");
    }
    if (o->megatron_path_map && !strchr(o->megatron_path_map, '='))
        rc = sl_err_set(SL_ERR_CONFIG, "path map '%s' is not FROM=TO", o->megatron_path_map);
    d->md.seed = o->seed;
    d->md.seq_len = o->seq_len;
    d->md.split = o->split;
    d->md.tokenizer = d->tok_json;
    d->surplus = o->surplus ? *o->surplus : DEFAULT_SURPLUS;
    if (!rc && o->split) {
        double w[3];
        rc = gpt_split_parse(o->split, w); /* its messages for negative parts */
        if (!rc)
            rc = mdesc_split_matrix(o->split, d->bounds, d->present);
    }
    return rc;
}

int data_loader_open(struct data_loader **out, const struct data_opts *o)
{
    *out = NULL;
    struct data_loader *d = sl_xcalloc(1, sizeof(*d));
    d->o = *o;
    d->all_cached = 1;
    int rc = 0;
    int separate = o->split_prefix[0] || o->split_prefix[1] || o->split_prefix[2];
    if (!separate && (!o->prefix || !strcmp(o->prefix, "synthetic") || !o->prefix[0])) {
        d->synthetic = 1;
        for (int s = 0; s < 3; s++)
            d->size[s] = o->num_samples[s] ? UINT64_MAX : 0;
    } else if (o->seq_len == 0 || o->seq_len > INT_MAX) {
        rc = sl_err_set(SL_ERR_CONFIG, "sequence length %llu is not usable",
                        (unsigned long long)o->seq_len);
    } else {
        if (!separate && !d->o.split)
            d->o.split = "969, 30, 1"; /* Megatron's default --split, as it spells it */
        rc = megatron_settings(d, &d->o);
        if (!rc)
            rc = separate ? open_separate(d, &d->o) : open_blend(d, &d->o, o->prefix);
    }
    if (rc) {
        data_loader_free(d);
        return rc;
    }
    *out = d;
    return 0;
}

int data_loader_sample(const struct data_loader *d, enum data_split s, uint64_t i, uint32_t *out)
{
    if (d->separate) {
        if (!d->sub[s])
            return sl_err_set(SL_ERR_STATE, "no data for this split");
        return data_loader_sample(d->sub[s], s, i, out);
    }
    uint64_t L = d->o.seq_len;
    if (d->synthetic) {
        struct sl_rng r;
        sl_rng_seed(&r, d->o.seed, ((uint64_t)s << 56) ^ i);
        for (uint64_t k = 0; k <= L; k++)
            out[k] = (uint32_t)sl_rng_below(&r, d->o.vocab_size);
        return 0;
    }
    if (i >= d->size[s])
        return sl_err_set(SL_ERR_STATE, "%s sample %llu requested, the split has %llu",
                          split_names[s], (unsigned long long)i, (unsigned long long)d->size[s]);
    const struct component *c = &d->c[0];
    uint64_t k = i;
    if (d->blended[s]) {
        c = &d->c[d->bi[s][i]];
        k = (uint64_t)d->bs[s][i];
    }
    return gpt_index_sample(&c->ix[s], c->r, L, k, out, d->o.vocab_size);
}
