/* The data loader: prefixes, splits, per-split GPT indices (built or cached), blending, and
 * synthetic tokens. */
#include "dataset/loader.h"

#include "core/alloc.h"
#include "core/buf.h"
#include "core/err.h"
#include "core/hash.h"
#include "core/rng.h"
#include "dataset/blend.h"
#include "dataset/gpt_index.h"
#include "dataset/idx.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char *const split_names[3] = { "train", "valid", "test" };

struct component {
    struct idx_reader *r;
    uint64_t lo[3], hi[3];
    struct gpt_index ix[3];
    int built[3];
};

struct data_loader {
    struct data_opts o;
    int synthetic;
    int n;
    struct component *c;
    double *weights;
    uint64_t size[3];
    int16_t *bi[3]; /* blending: dataset of each sample (n > 1) */
    int64_t *bs[3]; /* and its index within that dataset */
    int all_cached;
    char note[256];
    struct data_loader *sub[3]; /* separate splits: split s is sub[s]'s train split */
    int separate;
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

int data_loader_epochs(const struct data_loader *d, enum data_split s)
{
    if (d->separate)
        return d->sub[s] ? data_loader_epochs(d->sub[s], DATA_TRAIN) : 0;
    return d->n && d->c[0].built[s] ? d->c[0].ix[s].num_epochs : 0;
}

int data_loader_cached(const struct data_loader *d)
{
    return d->all_cached;
}

const char *data_loader_note(const struct data_loader *d)
{
    return d->note[0] ? d->note : NULL;
}

uint64_t data_loader_samples(const struct data_loader *d, enum data_split s)
{
    if (d->synthetic)
        return d->o.num_samples[s] ? UINT64_MAX : 0;
    if (d->separate)
        return d->sub[s] ? data_loader_samples(d->sub[s], DATA_TRAIN) : 0;
    return d->size[s];
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
    }
    for (int s = 0; s < 3; s++) {
        free(d->bi[s]);
        free(d->bs[s]);
    }
    free(d->c);
    free(d->weights);
    free(d);
}

/* The cache name: a hash of everything the index depends on. */
static void cache_name(const struct data_loader *d, const struct component *c, int s,
                       uint64_t num_samples, char *out, size_t n)
{
    struct sl_buf desc = SL_BUF_INIT;
    char *abs = realpath(idx_reader_prefix(c->r), NULL);
    sl_buf_printf(&desc,
                  "{\"class\":\"GPTDataset\",\"version\":1,\"prefix\":\"%s\",\"sequences\":%llu,"
                  "\"tokens\":%llu,\"split\":[%llu,%llu],\"seq_len\":%llu,\"num_samples\":%llu,"
                  "\"seed\":%u,\"add_extra_token\":1,\"drop_last\":true}",
                  abs ? abs : idx_reader_prefix(c->r),
                  (unsigned long long)idx_reader_sequences(c->r),
                  (unsigned long long)idx_reader_tokens(c->r), (unsigned long long)c->lo[s],
                  (unsigned long long)c->hi[s], (unsigned long long)d->o.seq_len,
                  (unsigned long long)num_samples, d->o.seed);
    free(abs);
    char hex[33];
    sl_hash128_hex(sl_hash128(desc.data, desc.len, 0), hex);
    snprintf(out, n, "%s-GPTDataset-%s", hex, split_names[s]);
    sl_buf_release(&desc);
}

static int build_component_split(struct data_loader *d, struct component *c, int s,
                                 uint64_t num_samples)
{
    char name[96];
    cache_name(d, c, s, num_samples, name, sizeof(name));
    char *dir = d->o.cache_dir ? sl_xstrdup(d->o.cache_dir)
                               : sl_xasprintf("%s/cache/GPTDataset_indices", idx_reader_prefix(c->r));
    int rc = gpt_index_load(&c->ix[s], dir, name, c->r, d->o.seq_len);
    if (rc == 0) {
        c->built[s] = 1;
        c->ix[s].num_epochs = (int)(c->ix[s].n_doc / (c->hi[s] - c->lo[s]));
        free(dir);
        return 0;
    }
    d->all_cached = 0;
    struct gpt_index_opts go = { d->o.seq_len, num_samples, d->o.seed };
    rc = gpt_index_build(&c->ix[s], c->r, c->lo[s], c->hi[s], &go);
    if (rc) {
        sl_err_wrap(rc, "split '%s': ", split_names[s]);
        free(dir);
        return rc;
    }
    c->built[s] = 1;
    if (d->o.write_cache) {
        rc = gpt_index_save(&c->ix[s], dir, name);
        if (rc) {
            char msg[SL_ERR_MSG_MAX];
            snprintf(msg, sizeof(msg), "%s", sl_err_msg());
            rc = sl_err_set(rc,
                            "cannot write the index cache in '%s': %s\n"
                            "hint: set data.cache_dir to a writable directory",
                            dir, msg);
        }
    }
    free(dir);
    return rc;
}

/* data.prefix.{train,validation,test}: one loader per split that needs samples. */
static int open_separate(struct data_loader *d, const struct data_opts *o)
{
    static const char *const names[] = { "train", "validation", "test" };
    d->separate = 1;
    int rc = 0;
    for (int s = 0; s < 3 && !rc; s++) {
        if (!o->num_samples[s])
            continue;
        if (!o->split_prefix[s] || !o->split_prefix[s][0]) {
            static const char *const mega[] = { "train", "valid", "test" };
            return sl_err_set(SL_ERR_CONFIG,
                              "the run needs %s samples, and the %s split has no prefixes\n"
                              "hint: set data.prefix.%s (or data.%s_data_path)%s",
                              names[s], names[s], names[s], mega[s],
                              s == 1 ? ", or eval.interval=0 to turn validation off" : "");
        }
        struct data_opts so = *o;
        memset(so.split_prefix, 0, sizeof(so.split_prefix));
        so.prefix = o->split_prefix[s];
        so.split = "1,0,0";
        memset(so.num_samples, 0, sizeof(so.num_samples));
        so.num_samples[DATA_TRAIN] = o->num_samples[s];
        rc = data_loader_open(&d->sub[s], &so);
        if (rc)
            sl_err_wrap(rc, "data.prefix.%s: ", names[s]);
        else
            d->all_cached &= d->sub[s]->all_cached;
        if (!rc && !d->note[0] && d->sub[s]->note[0])
            memcpy(d->note, d->sub[s]->note, sizeof(d->note));
    }
    return rc;
}

/* Open the blend's prefixes, each split by w3 into train/validation/test ranges; *longest:
 * the longest document. */
static int open_components(struct data_loader *d, char **prefixes, const double *w3,
                           uint64_t *longest)
{
    int rc = 0;
    *longest = 0;
    d->c = sl_xcalloc((size_t)d->n, sizeof(*d->c));
    for (int i = 0; i < d->n && !rc; i++) {
        rc = idx_reader_open(&d->c[i].r, prefixes[i]);
        if (rc) {
            sl_err_wrap(rc, "data.prefix: ");
            break;
        }
        gpt_split_ranges(w3, idx_reader_sequences(d->c[i].r), d->c[i].lo, d->c[i].hi);
        uint64_t ns = idx_reader_sequences(d->c[i].r);
        for (uint64_t q = 0; q < ns; q++) {
            uint64_t len = idx_reader_seq_len(d->c[i].r, q);
            if (len > *longest)
                *longest = len;
        }
    }
    return rc;
}

/* One prefix: split s is its own sample index. */
static int build_single(struct data_loader *d, const struct data_opts *o, int s, uint64_t want)
{
    struct component *c = &d->c[0];
    if (c->hi[s] <= c->lo[s]) {
        uint64_t ns = idx_reader_sequences(c->r);
        char hint[200];
        if (ns >= 3)
            snprintf(hint, sizeof(hint),
                     "data.split=%llu,1,1 gives each split at least one of its %llu "
                     "sequences",
                     (unsigned long long)(ns - 2), (unsigned long long)ns);
        else
            snprintf(hint, sizeof(hint), "it has %llu sequence%s: too few to split; use more data",
                     (unsigned long long)ns, ns == 1 ? "" : "s");
        return sl_err_set(SL_ERR_CONFIG,
                          "data.split '%s' leaves no sequences of '%s' for the %s split\n"
                          "hint: %s%s",
                          o->split ? o->split : "969,30,1", idx_reader_prefix(c->r), split_names[s],
                          hint, s == 1 ? ", or eval.interval=0 turns validation off" : "");
    }
    int rc = build_component_split(d, c, s, want);
    if (!rc)
        d->size[s] = c->ix[s].n_samples;
    return rc;
}

/* Several prefixes: split s draws `want` samples from them by their weights. */
static int build_blend(struct data_loader *d, int s, uint64_t want)
{
    int rc = 0;
    for (int i = 0; i < d->n && !rc; i++) {
        struct component *c = &d->c[i];
        if (c->hi[s] <= c->lo[s])
            return sl_err_set(SL_ERR_CONFIG,
                              "data.split leaves no sequences of '%s' for the %s split",
                              idx_reader_prefix(c->r), split_names[s]);
        rc = build_component_split(d, c, s, blend_component_size(want, d->weights[i]));
    }
    if (rc)
        return rc;
    d->size[s] = want;
    d->bi[s] = sl_xmalloc(sl_mul_size((size_t)want, sizeof(int16_t)));
    d->bs[s] = sl_xmalloc(sl_mul_size((size_t)want, sizeof(int64_t)));
    blend_build(d->weights, d->n, (size_t)want, d->bi[s], d->bs[s]);
    for (uint64_t k = 0; k < want; k++) {
        const struct component *c = &d->c[d->bi[s][k]];
        if ((uint64_t)d->bs[s][k] >= c->ix[s].n_samples)
            return sl_err_set(SL_ERR_STATE, "blending over-requested '%s' (%s split)",
                              idx_reader_prefix(c->r), split_names[s]);
    }
    return 0;
}

/* The prefixes of data.prefix, their splits and sample indexes. */
static int open_blend(struct data_loader *d, const struct data_opts *o)
{
    double w3[3];
    int rc = gpt_split_parse(o->split ? o->split : "969,30,1", w3);
    if (rc)
        return rc;
    char **prefixes = NULL, *storage = NULL;
    double *weights = NULL;
    int n = 0;
    rc = blend_parse_prefix(o->prefix, o->normalize_weights, &prefixes, &weights, &n, &storage);
    if (rc)
        return rc;
    d->n = n;
    d->weights = weights;
    uint64_t longest;
    rc = open_components(d, prefixes, w3, &longest);
    free(prefixes);
    free(storage);
    if (rc)
        return rc;
    if (n > 1 && weights[0] == 0.0) {
        /* unweighted prefixes: weighed by their tokens (Megatron weighs by samples) */
        double total = 0.0;
        for (int i = 0; i < n; i++)
            total += (double)idx_reader_tokens(d->c[i].r);
        for (int i = 0; i < n; i++)
            weights[i] = total > 0 ? (double)idx_reader_tokens(d->c[i].r) / total : 1.0 / n;
    }
    if (longest < o->seq_len + 1)
        snprintf(d->note, sizeof(d->note),
                 "every document is shorter than seq_len + 1 = %llu tokens (longest %llu): each "
                 "sample spans several documents, as in Megatron",
                 (unsigned long long)(o->seq_len + 1), (unsigned long long)longest);
    for (int s = 0; s < 3 && !rc; s++) {
        uint64_t want = o->num_samples[s];
        if (want)
            rc = n == 1 ? build_single(d, o, s, want) : build_blend(d, s, want);
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
    if (o->split_prefix[0] || o->split_prefix[1] || o->split_prefix[2]) {
        rc = open_separate(d, o);
    } else if (!o->prefix || !strcmp(o->prefix, "synthetic") || !o->prefix[0]) {
        d->synthetic = 1;
        for (int s = 0; s < 3; s++)
            d->size[s] = o->num_samples[s] ? UINT64_MAX : 0;
    } else if (o->seq_len == 0 || o->seq_len > INT_MAX) {
        rc = sl_err_set(SL_ERR_CONFIG, "sequence length %llu is not usable",
                        (unsigned long long)o->seq_len);
    } else {
        rc = open_blend(d, o);
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
        return data_loader_sample(d->sub[s], DATA_TRAIN, i, out);
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
    if (d->n > 1) {
        c = &d->c[d->bi[s][i]];
        k = (uint64_t)d->bs[s][i];
    }
    return gpt_index_sample(&c->ix[s], c->r, L, k, out, d->o.vocab_size);
}
