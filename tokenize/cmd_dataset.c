/* sluice dataset inspect|verify|merge|cat|index|samples: Megatron .bin/.idx token shards and
 * Megatron's index caches (index and samples: tokenize/cmd_dataset_index.c). Only rank 0
 * works under mpirun (one process is what these need); the others wait. */
#include "tokenize/commands.h"

#include "core/alloc.h"
#include "core/atomic.h"
#include "core/buf.h"
#include "core/err.h"
#include "core/log.h"
#include "core/options.h"
#include "core/world.h"
#include "dataset/idx.h"
#include "dataset/datainfo.h"
#include "tokenize/dataset_index.h"
#include "tokenize/tokenizer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

const char *const cmd_dataset_usage[] = {
    "sluice dataset inspect [--json] PREFIX...",
    "sluice dataset verify [--tokenizer SPEC | --vocab-size N] PREFIX...",
    "sluice dataset merge --out PREFIX PREFIX...",
    "sluice dataset cat [--tokenizer SPEC | --ids] [--docs LIST] [--jsonl] PREFIX",
    "sluice dataset index --seq-length L --samples T[,V,T] [options] [W1] PREFIX1 [W2 PREFIX2...]",
    "sluice dataset samples --seq-length L --samples T[,V,T] --from N --to M [options] DATA...",
    "",
    "Work with Megatron-LM MMIDIDX token shards (PREFIX.bin + PREFIX.idx; a PREFIX may be",
    "given with its .bin or .idx extension).",
    "  inspect  documents, sequences, tokens, dtype and the sequence-length histogram",
    "  verify   check every invariant of the index and the .bin size (and token ids below",
    "           the vocabulary size when it is known); exit 1 on the first broken shard",
    "  merge    concatenate shards into one, documents in the order given",
    "  cat      decode documents back to text (one per line; --jsonl for JSON lines)",
    "  index    build Megatron-LM's index caches (GPTDataset, BlendedDataset) under",
    "           Megatron-Core's own names, so Megatron loads them instead of building;",
    "           DATA is Megatron's --data-path (PREFIX, W1 P1 W2 P2..., or P1 P2...)",
    "  samples  print samples N..M of Megatron's order as JSON lines (index, dataset,",
    "           ids), or only those a data-parallel rank reads (--dp-rank, --dp-size)",
    "The cache names hash the tokenizer and the prefix strings Megatron will be given:",
    "--megatron-tokenizer TYPE:ARGS names it (default NullTokenizer:SIZE, SIZE from the",
    "tokenize manifest), e.g. GPT2BPETokenizer:VOCAB,MERGES, HuggingFaceTokenizer:MODEL,",
    "SentencePieceTokenizer:MODEL, legacy:TYPE:ARGS (--legacy-tokenizer), or the JSON of a",
    "description.txt's \"tokenizer\" member (docs/commands/dataset.md).",
    NULL,
};

struct opts {
    int json, ids, jsonl;
    const char *tokenizer, *out, *docs;
    uint64_t vocab_size;
    struct dataset_index_opts io; /* index, samples */
};

/* PREFIX from PREFIX, PREFIX.bin or PREFIX.idx (caller frees). */
static char *prefix_of(const char *arg)
{
    size_t n = strlen(arg);
    if (n > 4 && (!strcmp(arg + n - 4, ".bin") || !strcmp(arg + n - 4, ".idx")))
        n -= 4;
    return sl_xstrndup(arg, n);
}

static int inspect(const struct opts *o, const struct sl_strlist *pre)
{
    int failed = 0;
    if (o->json)
        printf("[");
    for (size_t i = 0; i < pre->n; i++) {
        char *p = prefix_of(pre->v[i]);
        struct idx_reader *r;
        if (idx_reader_open(&r, p)) {
            sl_error("%s", sl_err_msg());
            failed = 1;
            free(p);
            continue;
        }
        uint64_t S = idx_reader_sequences(r), D = idx_reader_documents(r);
        uint64_t hist[34] = { 0 }, minl = UINT64_MAX, maxl = 0, empty = 0;
        for (uint64_t s = 0; s < S; s++) {
            uint64_t len = idx_reader_seq_len(r, s);
            int b = 0;
            while (b < 33 && (1ull << b) <= len)
                b++;
            hist[b]++; /* bucket b: [2^(b-1), 2^b) tokens, bucket 0: empty */
            minl = len < minl ? len : minl;
            maxl = len > maxl ? len : maxl;
        }
        for (uint64_t d = 0; d < D; d++)
            empty += idx_reader_doc_index(r, d + 1) == idx_reader_doc_index(r, d);
        uint64_t T = idx_reader_tokens(r);
        if (o->json) {
            struct sl_buf b = SL_BUF_INIT;
            sl_buf_json_str(&b, p, strlen(p));
            printf("%s\n  {\"prefix\": %s, \"dtype\": \"%s\", \"documents\": %llu, "
                   "\"empty_documents\": %llu, "
                   "\"sequences\": %llu, \"tokens\": %llu, \"min_length\": %llu, \"max_length\": "
                   "%llu, "
                   "\"length_histogram\": {",
                   i ? "," : "", b.data, idx_dtype_name(idx_reader_dtype(r)), (unsigned long long)D,
                   (unsigned long long)empty, (unsigned long long)S, (unsigned long long)T,
                   (unsigned long long)(S ? minl : 0), (unsigned long long)maxl);
            int first = 1;
            for (int k = 0; k < 34; k++)
                if (hist[k]) {
                    printf("%s\"%llu\": %llu", first ? "" : ", ", k ? 1ull << (k - 1) : 0ull,
                           (unsigned long long)hist[k]);
                    first = 0;
                }
            printf("}}");
            sl_buf_release(&b);
        } else {
            printf("%s\n  dtype       %s\n  documents   %llu (%llu empty)\n  sequences   %llu\n"
                   "  tokens      %llu\n  length      min %llu, mean %.1f, max %llu\n  histogram"
                   " (sequence length: count)\n",
                   p, idx_dtype_name(idx_reader_dtype(r)), (unsigned long long)D,
                   (unsigned long long)empty, (unsigned long long)S, (unsigned long long)T,
                   (unsigned long long)(S ? minl : 0), S ? (double)T / (double)S : 0.0,
                   (unsigned long long)maxl);
            for (int k = 0; k < 34; k++)
                if (hist[k]) {
                    if (k == 0)
                        printf("    %21s: %llu\n", "0", (unsigned long long)hist[k]);
                    else
                        printf("    %10llu..%-10llu: %llu\n", 1ull << (k - 1), (1ull << k) - 1,
                               (unsigned long long)hist[k]);
                }
        }
        idx_reader_close(r);
        free(p);
    }
    if (o->json)
        printf("\n]\n");
    return failed;
}

/* The tokenizer recorded in the tokenize manifest of prefix (a fresh spec), or NULL. */
static char *manifest_tokenizer(const char *prefix, long *vocab)
{
    struct data_info di;
    char *spec = NULL;
    if (data_info_read(&di, prefix) == 0) {
        spec = di.tokenizer ? sl_xstrdup(di.tokenizer) : NULL;
        if (vocab)
            *vocab = di.vocab_size;
        data_info_release(&di);
    }
    return spec;
}

static int verify(const struct opts *o, const struct sl_strlist *pre)
{
    uint64_t max_token = o->vocab_size;
    if (!o->tokenizer && !o->vocab_size) {
        /* every id below the size of the tokenizer each prefix was made with */
        int failed = 0;
        for (size_t i = 0; i < pre->n; i++) {
            char *p = prefix_of(pre->v[i]);
            long vocab = -1;
            char *spec = manifest_tokenizer(p, &vocab);
            struct idx_reader *r;
            int rc = idx_reader_open(&r, p);
            if (!rc) {
                rc = idx_reader_verify(r, vocab > 0 ? (uint64_t)vocab : 0);
                if (!rc)
                    printf("ok %s: %llu documents, %llu sequences, %llu tokens (%s)%s%s\n", p,
                           (unsigned long long)idx_reader_documents(r),
                           (unsigned long long)idx_reader_sequences(r),
                           (unsigned long long)idx_reader_tokens(r),
                           idx_dtype_name(idx_reader_dtype(r)),
                           spec ? "; ids below the size of the manifest's tokenizer " : "",
                           spec ? spec : "");
                idx_reader_close(r);
            }
            if (rc) {
                sl_error("%s", sl_err_msg());
                printf("FAILED %s\n", p);
                failed = 1;
            }
            free(spec);
            free(p);
        }
        return failed;
    }
    if (o->tokenizer) {
        struct tokenizer *t;
        if (tokenizer_open(&t, o->tokenizer)) {
            sl_error("%s", sl_err_msg());
            return 1;
        }
        max_token = t->vocab_size;
        tokenizer_free(t);
    }
    int failed = 0;
    for (size_t i = 0; i < pre->n; i++) {
        char *p = prefix_of(pre->v[i]);
        struct idx_reader *r;
        int rc = idx_reader_open(&r, p);
        if (!rc) {
            rc = idx_reader_verify(r, max_token);
            if (!rc)
                printf("ok %s: %llu documents, %llu sequences, %llu tokens (%s)\n", p,
                       (unsigned long long)idx_reader_documents(r),
                       (unsigned long long)idx_reader_sequences(r),
                       (unsigned long long)idx_reader_tokens(r),
                       idx_dtype_name(idx_reader_dtype(r)));
            idx_reader_close(r);
        }
        if (rc) {
            sl_error("%s", sl_err_msg());
            printf("FAILED %s\n", p);
            failed = 1;
        }
        free(p);
    }
    return failed;
}

static int merge(const struct opts *o, const struct sl_strlist *pre)
{
    char *out = prefix_of(o->out);
    int dtype = 0, rc = sl_prepare_out_prefix(out);
    for (size_t i = 0; i < pre->n && !rc; i++) {
        char *p = prefix_of(pre->v[i]);
        struct idx_reader *r;
        rc = idx_reader_open(&r, p);
        if (!rc) {
            if (!dtype)
                dtype = idx_reader_dtype(r);
            else if (dtype != idx_reader_dtype(r))
                rc = sl_err_set(SL_ERR_FORMAT,
                                "cannot merge '%s': its dtype is %s, the first shard's is %s", p,
                                idx_dtype_name(idx_reader_dtype(r)), idx_dtype_name(dtype));
            if (!rc && !strcmp(p, out))
                rc = sl_err_set(SL_ERR_USAGE, "cannot merge '%s' into itself", p);
            idx_reader_close(r);
        }
        free(p);
    }
    /* shards of different tokenizers cannot be merged */
    struct data_info di;
    memset(&di, 0, sizeof(di));
    if (!rc) {
        struct sl_buf all = SL_BUF_INIT;
        for (size_t i = 0; i < pre->n; i++) {
            char *p = prefix_of(pre->v[i]);
            sl_buf_printf(&all, "%s%s", i ? " " : "", p);
            free(p);
        }
        rc = data_info_read(&di, all.data);
        sl_buf_release(&all);
    }
    struct idx_writer *w = NULL;
    if (!rc)
        rc = idx_writer_open(&w, out, (enum idx_dtype)dtype);
    for (size_t i = 0; i < pre->n && !rc; i++) {
        char *p = prefix_of(pre->v[i]);
        rc = idx_writer_append_shard(w, p);
        free(p);
    }
    uint64_t docs = w ? idx_writer_documents(w) : 0, toks = w ? idx_writer_tokens(w) : 0;
    if (!rc)
        rc = idx_writer_commit(w);
    else
        idx_writer_abort(w);
    if (!rc && di.tokenizer) {
        /* the merged shard keeps its tokenizer facts: OUT.manifest.json */
        struct sl_buf m = SL_BUF_INIT;
        sl_buf_puts(&m, "{\n  \"stage\": \"merge\",\n  \"settings\": {\"tokenizer\": ");
        sl_buf_json_str(&m, di.tokenizer, strlen(di.tokenizer));
        sl_buf_printf(&m,
                      ", \"tokenizer_kind\": \"%s\", \"vocab_size\": %ld, \"eod_id\": %ld},\n"
                      "  \"inputs\": [",
                      di.kind ? di.kind : "", di.vocab_size, di.eod_id);
        for (size_t i = 0; i < pre->n; i++) {
            sl_buf_puts(&m, i ? ", " : "");
            sl_buf_json_str(&m, pre->v[i], strlen(pre->v[i]));
        }
        sl_buf_puts(&m, "]\n}\n");
        char *mp = sl_xasprintf("%s.manifest.json", out);
        rc = sl_write_file_atomic(mp, m.data, m.len);
        free(mp);
        sl_buf_release(&m);
    }
    data_info_release(&di);
    if (rc)
        sl_error("%s", sl_err_msg());
    else
        sl_info("merged %zu shards into '%s': %llu documents, %llu tokens", pre->n, out,
                (unsigned long long)docs, (unsigned long long)toks);
    free(out);
    return rc ? 1 : 0;
}

static int cat(const struct opts *o, const struct sl_strlist *pre)
{
    if (pre->n != 1) {
        sl_error("cat takes one PREFIX");
        return 2;
    }
    struct tokenizer *t = NULL;
    if (!o->ids && tokenizer_open(&t, o->tokenizer)) {
        sl_error("%s", sl_err_msg());
        return 1;
    }
    char *p = prefix_of(pre->v[0]);
    struct idx_reader *r = NULL;
    int rc = idx_reader_open(&r, p);
    uint64_t D = r ? idx_reader_documents(r) : 0;
    uint64_t *list = NULL;
    size_t nlist = 0;
    if (!rc && o->docs)
        rc = sl_parse_ranges(o->docs, &list, &nlist);
    if (!rc && !o->docs) {
        nlist = D;
        list = sl_xcalloc(D ? D : 1, sizeof(uint64_t));
        for (uint64_t d = 0; d < D; d++)
            list[d] = d;
    }
    struct sl_buf text = SL_BUF_INIT, line = SL_BUF_INIT;
    uint32_t *ids = NULL;
    size_t cap = 0;
    for (size_t i = 0; i < nlist && !rc; i++) {
        uint64_t d = list[i];
        if (d >= D) {
            rc = sl_err_set(SL_ERR_USAGE, "document %llu does not exist ('%s' has %llu: 0..%lld)",
                            (unsigned long long)d, p, (unsigned long long)D, (long long)D - 1);
            break;
        }
        sl_buf_reset(&text);
        size_t n = 0;
        for (uint64_t s = idx_reader_doc_index(r, d); s < idx_reader_doc_index(r, d + 1) && !rc;
             s++) {
            size_t len = idx_reader_seq_len(r, s);
            if (n + len > cap) {
                cap = (n + len) * 2;
                ids = sl_xrealloc(ids, cap * sizeof(uint32_t));
            }
            rc = idx_reader_read(r, s, 0, len, ids + n);
            n += len;
        }
        if (rc)
            break;
        if (o->ids) {
            for (size_t k = 0; k < n; k++)
                sl_buf_printf(&text, k ? (o->jsonl ? ",%u" : " %u") : "%u", ids[k]);
        } else {
            rc = tokenizer_decode(t, ids, n, &text);
            if (rc) {
                sl_err_wrap(rc, "'%s' document %llu: ", p, (unsigned long long)d);
                break;
            }
        }
        sl_buf_reset(&line);
        if (o->jsonl) {
            sl_buf_printf(&line, "{\"document\":%llu,\"%s\":", (unsigned long long)d,
                          o->ids ? "ids" : "text");
            if (o->ids)
                sl_buf_printf(&line, "[%s]}\n", text.data ? text.data : "");
            else {
                sl_buf_json_str(&line, text.data ? text.data : "", text.len);
                sl_buf_puts(&line, "}\n");
            }
        } else {
            sl_buf_append(&line, text.data ? text.data : "", text.len);
            sl_buf_putc(&line, '\n');
        }
        fwrite(line.data, 1, line.len, stdout);
    }
    if (rc)
        sl_error("%s", sl_err_msg());
    free(ids);
    free(list);
    sl_buf_release(&text);
    sl_buf_release(&line);
    idx_reader_close(r);
    tokenizer_free(t);
    free(p);
    return rc ? (rc == SL_ERR_USAGE ? 2 : 1) : 0;
}

/* The options' table (the dispatcher's parser and -h). */
#define SL_OPT_STRUCT struct opts

const struct sl_option cmd_dataset_options[] = {
    SL_OPT_GROUP_("inspect"),
    SL_OPT_FLAG_(0, "json", json, "print JSON instead of text"),
    SL_OPT_GROUP_("verify, cat"),
    SL_OPT_STRING('t', "tokenizer", tokenizer, "SPEC", TOKENIZER_SPECS),
    SL_OPT_UINT64(0, "vocab-size", vocab_size, "N", "verify: every token id must be below N"),
    SL_OPT_GROUP_("merge"),
    SL_OPT_STRING('o', "out", out, "PREFIX", "the merged shard"),
    SL_OPT_GROUP_("cat"),
    SL_OPT_STRING(0, "docs", docs, "LIST", "documents to print: 0,3,5-7 (default: all)"),
    SL_OPT_FLAG_(0, "ids", ids, "print token ids instead of decoded text"),
    SL_OPT_FLAG_(0, "jsonl", jsonl, "one JSON object per document"),
    SL_OPT_GROUP_("index, samples (Megatron's names)"),
    SL_OPT_UINT64(0, "seq-length", io.seq_length, "L", "tokens per sample, less one"),
    SL_OPT_UINT64(0, "seed", io.seed, "N", "the shuffles' seed", .def = "1234"),
    SL_OPT_STRING(0, "split", io.split, "S",
                  "train,valid,test shares, as given to Megatron "
                  "(default '969, 30, 1')"),
    SL_OPT_STRING(0, "samples", io.samples, "T,V,T", "samples of each split, or:"),
    SL_OPT_UINT64(0, "train-iters", io.train_iters, "N", "Megatron's rule: train N x G,"),
    SL_OPT_UINT64(0, "train-samples", io.train_samples, "N", "(or N samples)"),
    SL_OPT_UINT64(0, "global-batch-size", io.global_batch, "G",
                  "valid (N / I + 1) x E x G, test E x G"),
    SL_OPT_UINT64(0, "eval-interval", io.eval_interval, "I", "(default 1000)", .def = "1000",
                  .flags = SL_OPTF_DEF_UNSAID),
    SL_OPT_UINT64(0, "eval-iters", io.eval_iters, "E", "(default 100)", .def = "100",
                  .flags = SL_OPTF_DEF_UNSAID),
    SL_OPT_STRING(0, "train-data-path", io.split_path[0], "DATA", "a split's own data"),
    SL_OPT_STRING(0, "valid-data-path", io.split_path[1], "DATA", "(instead of PREFIX...)"),
    SL_OPT_STRING(0, "test-data-path", io.split_path[2], "DATA", ""),
    SL_OPT_STRING(0, "data-cache-path", io.cache_path, "DIR",
                  "the cache (default PREFIX/cache/GPTDataset_indices; blends only here)"),
    SL_OPT_STRING(0, "megatron-tokenizer", io.tokenizer, "SPEC",
                  "the tokenizer Megatron will be given (see above)"),
    SL_OPT_STRING(0, "path-map", io.path_map, "FROM=TO",
                  "Megatron gets the prefixes with a leading FROM as TO"),
    /* -1: Megatron's default */
    SL_OPT_DOUBLE(0, "mid-level-dataset-surplus", io.surplus, "X", "(default 0.005)", .def = "-1",
                  .flags = SL_OPTF_DEF_UNSAID),
    SL_OPT_GROUP_("index"),
    SL_OPT_STRING(0, "manifest", io.manifest, "FILE", "also write the JSON summary to FILE"),
    SL_OPT_GROUP_("samples"),
    SL_OPT_STRING(0, "split-name", io.which, "NAME", "train (default), valid or test",
                  .def = "train", .flags = SL_OPTF_DEF_UNSAID),
    SL_OPT_UINT64(0, "from", io.from, "N", "first sample", .def = "0"),
    /* UINT64_MAX: not given */
    SL_OPT_UINT64(0, "to", io.to, "M", "last sample (inclusive)", .def = "18446744073709551615",
                  .flags = SL_OPTF_DEF_UNSAID),
    SL_OPT_INTEGER(0, "dp-rank", io.dp_rank, "R", "only what data-parallel rank R reads"),
    SL_OPT_INTEGER(0, "dp-size", io.dp_size, "D", "of D ranks (Megatron's sampler)"),
    SL_OPT_UINT64(0, "micro-batch-size", io.micro_batch, "M", "(default 1)", .def = "1",
                  .flags = SL_OPTF_DEF_UNSAID),
    SL_OPT_UINT64(0, "consumed-samples", io.consumed, "C", "where the sampler starts (0)"),
    SL_OPT_FLAG_(0, "text", io.text, "also decode (--tokenizer, default the manifest's)"),
    SL_OPT_COMMON,
    SL_OPT_END_,
};

/* The subcommand (the first operand) and its operands checked. */
static int check(void *opts, const struct sl_strlist *rest)
{
    const struct opts *o = opts;
    const char *sub = rest->n ? rest->v[0] : NULL;
    static const char *const subs = "inspect, verify, merge, cat, index or samples";
    int megatron = sub && (!strcmp(sub, "index") || !strcmp(sub, "samples"));
    if (!sub)
        return sl_err_set(SL_ERR_USAGE, "no subcommand given (%s)", subs);
    if (!megatron && strcmp(sub, "inspect") && strcmp(sub, "verify") && strcmp(sub, "merge") &&
        strcmp(sub, "cat"))
        return sl_err_set(SL_ERR_USAGE, "unknown subcommand '%s' (%s)", sub, subs);
    if (!strcmp(sub, "samples") && o->io.to == UINT64_MAX)
        return sl_err_set(SL_ERR_USAGE, "samples needs --to M (and --from N)");
    if (!megatron && rest->n < 2)
        return sl_err_set(SL_ERR_USAGE, "no PREFIX given");
    if (!strcmp(sub, "merge") && !o->out)
        return sl_err_set(SL_ERR_USAGE, "merge needs --out PREFIX");
    int tokenizer = o->tokenizer != NULL;
    if (!strcmp(sub, "cat") && !o->tokenizer && !o->ids) {
        char *p = prefix_of(rest->v[1]), *found = manifest_tokenizer(p, NULL);
        free(p);
        free(found);
        if (!found)
            return sl_err_set(SL_ERR_USAGE,
                              "cat needs --tokenizer SPEC (or --ids): no tokenize manifest beside "
                              "'%s' names one",
                              rest->v[1]);
        tokenizer = 1;
    }
    if (tokenizer && o->vocab_size)
        return sl_err_set(SL_ERR_USAGE, "--tokenizer and --vocab-size cannot be used together");
    return 0;
}

/* rank 0 works (rank0) */
static int run(const void *opts, const struct sl_strlist *rest, int argc, const char **argv)
{
    struct opts o = *(const struct opts *)opts; /* with cat's tokenizer from the manifest */
    const char *sub = rest->v[0];
    char *found = NULL;
    if (!strcmp(sub, "cat") && !o.tokenizer && !o.ids) {
        char *p = prefix_of(rest->v[1]);
        o.tokenizer = found = manifest_tokenizer(p, NULL);
        free(p);
    }
    struct sl_strlist pre = { rest->v + 1, rest->n - 1, 0 };
    int code;
    o.io.decode = o.tokenizer;
    if (!strcmp(sub, "index"))
        code = dataset_index_run(&o.io, &pre);
    else if (!strcmp(sub, "samples"))
        code = dataset_samples_run(&o.io, &pre);
    else if (!strcmp(sub, "inspect"))
        code = inspect(&o, &pre);
    else if (!strcmp(sub, "verify"))
        code = verify(&o, &pre);
    else if (!strcmp(sub, "merge"))
        code = merge(&o, &pre);
    else
        code = cat(&o, &pre);
    free(found);
    return code;
}

const struct sl_cmd cmd_dataset =
    SL_CMD(cmd_dataset_usage, cmd_dataset_options, struct opts, check, run, .rank0 = 1);
