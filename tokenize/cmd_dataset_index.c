/* sluice dataset index | samples: Megatron-LM's index caches under Megatron's own names, and
 * the token ids of Megatron's training samples (what each data-parallel rank reads). */
#include "tokenize/dataset_index.h"

#include "core/alloc.h"
#include "core/atomic.h"
#include "core/buf.h"
#include "core/err.h"
#include "core/log.h"
#include "core/options.h"
#include "core/progress.h"
#include "dataset/datainfo.h"
#include "dataset/loader.h"
#include "tokenize/tokenizer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const split_names[3] = { "train", "valid", "test" };

/* The samples of each split, from --samples or Megatron's rule
 * (get_train_valid_test_num_samples) over its iteration options. */
static int split_samples(const struct dataset_index_opts *o, uint64_t n[3])
{
    n[0] = n[1] = n[2] = 0;
    if (o->samples) {
        const char *p = o->samples;
        for (int k = 0; k < 3 && *p; k++) {
            char *end;
            n[k] = strtoull(p, &end, 10);
            if (end == p || (*end && *end != ','))
                return sl_err_set(SL_ERR_USAGE, "--samples '%s': expected TRAIN[,VALID[,TEST]]",
                                  o->samples);
            p = *end ? end + 1 : end;
        }
        if (*p)
            return sl_err_set(SL_ERR_USAGE, "--samples '%s': more than three numbers", o->samples);
        return 0;
    }
    if (!o->global_batch || (!o->train_iters && !o->train_samples))
        return sl_err_set(SL_ERR_USAGE,
                          "how many samples? --samples TRAIN,VALID,TEST, or Megatron's "
                          "--train-iters (or --train-samples) and --global-batch-size");
    uint64_t iters = o->train_iters ? o->train_iters : o->train_samples / o->global_batch;
    n[0] = o->train_samples ? o->train_samples : iters * o->global_batch;
    n[1] = (iters / (o->eval_interval ? o->eval_interval : 1) + 1) * o->eval_iters * o->global_batch;
    n[2] = o->eval_iters * o->global_batch;
    return 0;
}

static void note(void *ctx, const char *msg)
{
    (void)ctx;
    sl_info("%s", msg);
}

/* The loader over the options: every split Megatron builds. *spec, *tok: strings it points
 * to (caller frees). */
static int open_data(const struct dataset_index_opts *o, const struct sl_strlist *pre, int write,
                     struct data_loader **d, char **spec, char **tok)
{
    *spec = *tok = NULL;
    struct data_opts dopt;
    memset(&dopt, 0, sizeof(dopt));
    int separate = o->split_path[0] || o->split_path[1] || o->split_path[2];
    if (separate && pre->n)
        return sl_err_set(SL_ERR_USAGE, "--data-path words (PREFIX...) and --*-data-path cannot "
                                        "be used together");
    if (!separate && !pre->n)
        return sl_err_set(SL_ERR_USAGE, "no data: PREFIX... (Megatron's --data-path), or "
                                        "--train-data-path and the others");
    if (!o->seq_length)
        return sl_err_set(SL_ERR_USAGE, "--seq-length L is needed");
    int rc = split_samples(o, dopt.num_samples);
    if (rc)
        return rc;
    struct sl_buf b = SL_BUF_INIT;
    for (size_t i = 0; i < pre->n; i++)
        sl_buf_printf(&b, "%s%s", i ? " " : "", pre->v[i]);
    *spec = sl_buf_detach(&b, NULL);
    /* the default tokenizer: NullTokenizer of the size the tokenize manifest records */
    if (!o->tokenizer) {
        struct data_info di;
        long vocab = -1;
        for (int s = 0; s < 3 && vocab < 0; s++) {
            const char *p = separate ? o->split_path[s] : *spec;
            if (p && !data_info_read(&di, p)) {
                vocab = di.vocab_size;
                data_info_release(&di);
            }
        }
        if (vocab <= 0)
            return sl_err_set(SL_ERR_USAGE,
                              "which tokenizer will Megatron be given? (its cache names hash it; "
                              "no tokenize manifest beside the data says its size)\n"
                              "hint: --megatron-tokenizer NullTokenizer:VOCAB_SIZE, "
                              "GPT2BPETokenizer:VOCAB,MERGES, ... (sluice dataset -h)");
        *tok = sl_xasprintf("NullTokenizer:%ld", vocab);
    }
    dopt.prefix = separate ? NULL : *spec;
    for (int s = 0; s < 3; s++)
        dopt.split_prefix[s] = o->split_path[s];
    dopt.split = separate ? NULL : o->split;
    dopt.seq_len = o->seq_length;
    dopt.seed = (uint32_t)o->seed;
    dopt.cache_dir = o->cache_path;
    dopt.normalize_weights = 1; /* Megatron normalises */
    dopt.write_cache = write;
    dopt.megatron_tokenizer = o->tokenizer ? o->tokenizer : *tok;
    dopt.megatron_path_map = o->path_map;
    dopt.surplus = o->surplus >= 0 ? &o->surplus : NULL;
    dopt.all_splits = 1;
    dopt.note = note;
    return data_loader_open(d, &dopt);
}

static void cache_json(struct sl_buf *m, const struct data_cache_info *c)
{
    sl_buf_printf(m, "{\"split\": \"%s\", \"class\": \"%s\", \"name\": ", split_names[c->split],
                  c->blended ? "BlendedDataset" : "GPTDataset");
    if (c->name)
        sl_buf_json_str(m, c->name, strlen(c->name));
    else
        sl_buf_puts(m, "null");
    sl_buf_puts(m, ", \"dir\": ");
    if (c->dir)
        sl_buf_json_str(m, c->dir, strlen(c->dir));
    else
        sl_buf_puts(m, "null");
    if (c->prefix) {
        sl_buf_puts(m, ", \"prefix\": ");
        sl_buf_json_str(m, c->prefix, strlen(c->prefix));
    }
    if (c->num_samples < 0)
        sl_buf_puts(m, ", \"num_samples\": null");
    else
        sl_buf_printf(m, ", \"num_samples\": %lld", (long long)c->num_samples);
    sl_buf_printf(m, ", \"samples\": %llu", (unsigned long long)c->samples);
    if (!c->blended)
        sl_buf_printf(m, ", \"epochs\": %d", c->epochs);
    sl_buf_printf(m, ", \"from_cache\": %s, \"written\": %s}", c->loaded ? "true" : "false",
                  c->written ? "true" : "false");
}

int dataset_index_run(const struct dataset_index_opts *o, const struct sl_strlist *pre)
{
    double t0 = sl_now();
    struct data_loader *d = NULL;
    char *spec = NULL, *tok = NULL;
    int rc = open_data(o, pre, 1, &d, &spec, &tok);
    if (rc) {
        sl_error("%s", sl_err_msg());
        free(spec);
        free(tok);
        return rc == SL_ERR_USAGE ? 2 : 1;
    }
    const struct data_cache_info *c;
    size_t n = data_loader_caches(d, &c), built = 0, loaded = 0, blends_uncached = 0;
    struct sl_buf m = SL_BUF_INIT;
    sl_buf_puts(&m, "{\n  \"command\": \"dataset index\",\n  \"megatron_tokenizer\": ");
    const char *t = o->tokenizer ? o->tokenizer : tok;
    sl_buf_json_str(&m, t, strlen(t));
    sl_buf_puts(&m, ",\n  \"indices\": [");
    for (size_t i = 0; i < n; i++) {
        sl_buf_puts(&m, i ? ",\n    " : "\n    ");
        cache_json(&m, &c[i]);
        loaded += c[i].loaded;
        built += !c[i].loaded;
    }
    /* Megatron caches a blend only under --data-cache-path */
    for (int s = 0; s < 3 && !o->cache_path; s++)
        blends_uncached += data_loader_prefixes(d) > 1 && data_loader_samples(d, s) > 0;
    sl_buf_printf(&m, "\n  ],\n  \"built\": %zu,\n  \"from_cache\": %zu,\n  \"wall_s\": %.3f\n}\n",
                  built, loaded, sl_now() - t0);
    fwrite(m.data, 1, m.len, stdout);
    if (o->manifest && (rc = sl_write_file_atomic(o->manifest, m.data, m.len)))
        sl_error("%s", sl_err_msg());
    sl_info("%zu indices: %zu built and written, %zu read from the cache (%.2f s)", n, built,
            loaded, sl_now() - t0);
    if (blends_uncached)
        sl_warn("blends are cached only under --data-cache-path (as Megatron does): "
                "their indices were not written");
    sl_buf_release(&m);
    data_loader_free(d);
    free(spec);
    free(tok);
    return rc ? 1 : 0;
}

/* Whether Megatron's pretraining sampler (MegatronPretrainingSampler, drop_last) gives
 * sample i to the rank: from `consumed` on, groups of micro x dp samples, rank r taking
 * [r micro, (r + 1) micro) of each group; an incomplete last group is dropped. *mb: the
 * rank's micro-batch number. */
static int rank_reads(const struct dataset_index_opts *o, uint64_t total, uint64_t i,
                      uint64_t *mb)
{
    if (!o->dp_size)
        return 1;
    uint64_t group = o->micro_batch * (uint64_t)o->dp_size;
    if (i < o->consumed)
        return 0;
    uint64_t g = (i - o->consumed) / group, r = (i - o->consumed) % group / o->micro_batch;
    *mb = g;
    return r == (uint64_t)o->dp_rank && o->consumed + (g + 1) * group <= total;
}

int dataset_samples_run(const struct dataset_index_opts *o, const struct sl_strlist *pre)
{
    int s = 0;
    while (s < 3 && strcmp(split_names[s], o->which))
        s++;
    if (s == 3) {
        sl_error("--split-name '%s': train, valid or test", o->which);
        return 2;
    }
    if (o->dp_size < 0 || (o->dp_size && (o->dp_rank < 0 || o->dp_rank >= o->dp_size)) ||
        !o->micro_batch || o->to < o->from) {
        sl_error("--dp-rank R --dp-size D need 0 <= R < D, --micro-batch-size above 0 and "
                 "--from <= --to");
        return 2;
    }
    struct data_loader *d = NULL;
    char *spec = NULL, *tok = NULL;
    struct tokenizer *tz = NULL;
    int rc = open_data(o, pre, 0, &d, &spec, &tok);
    if (!rc && (o->decode || o->text)) {
        char *found = NULL;
        if (!o->decode) {
            struct data_info di;
            if (!data_info_read(&di, o->split_path[s] ? o->split_path[s] : spec)) {
                found = di.tokenizer ? sl_xstrdup(di.tokenizer) : NULL;
                data_info_release(&di);
            }
            if (!found)
                rc = sl_err_set(SL_ERR_USAGE, "--text: no tokenize manifest names the "
                                              "tokenizer\nhint: --tokenizer SPEC");
        }
        if (!rc)
            rc = tokenizer_open(&tz, o->decode ? o->decode : found);
        free(found);
    }
    uint64_t total = d ? data_loader_samples(d, (enum data_split)s) : 0;
    if (!rc && o->to >= total)
        rc = sl_err_set(SL_ERR_USAGE, "the %s split has %llu samples (0..%lld); --to %llu is "
                                      "past them",
                        split_names[s], (unsigned long long)total, (long long)total - 1,
                        (unsigned long long)o->to);
    size_t L = (size_t)o->seq_length + 1;
    uint32_t *ids = sl_xmalloc(L * sizeof(uint32_t));
    struct sl_buf line = SL_BUF_INIT, text = SL_BUF_INIT;
    for (uint64_t i = o->from; !rc && i <= o->to; i++) {
        uint64_t mb = 0, k = 0;
        if (!rank_reads(o, total, i, &mb))
            continue;
        const char *prefix = NULL;
        int comp = data_loader_source(d, (enum data_split)s, i, &prefix, &k);
        rc = data_loader_sample(d, (enum data_split)s, i, ids);
        if (rc)
            break;
        sl_buf_reset(&line);
        sl_buf_printf(&line, "{\"index\": %llu, ", (unsigned long long)i);
        if (o->dp_size)
            sl_buf_printf(&line, "\"rank\": %lld, \"micro_batch\": %llu, ", (long long)o->dp_rank,
                          (unsigned long long)mb);
        sl_buf_printf(&line, "\"dataset\": %d, \"prefix\": ", comp);
        sl_buf_json_str(&line, prefix, strlen(prefix));
        sl_buf_printf(&line, ", \"dataset_sample\": %llu, \"ids\": [", (unsigned long long)k);
        for (size_t t = 0; t < L; t++)
            sl_buf_printf(&line, t ? ", %u" : "%u", ids[t]);
        sl_buf_putc(&line, ']');
        if (tz) {
            sl_buf_reset(&text);
            rc = tokenizer_decode(tz, ids, L, &text);
            sl_buf_puts(&line, ", \"text\": ");
            sl_buf_json_str(&line, text.data ? text.data : "", text.len);
        }
        sl_buf_puts(&line, "}\n");
        fwrite(line.data, 1, line.len, stdout);
    }
    if (rc)
        sl_error("%s", sl_err_msg());
    free(ids);
    sl_buf_release(&line);
    sl_buf_release(&text);
    tokenizer_free(tz);
    data_loader_free(d);
    free(spec);
    free(tok);
    return rc ? (rc == SL_ERR_USAGE ? 2 : 1) : 0;
}
