/* sluice generate: load a training checkpoint and continue a prompt on the CPU, with a
 * key/value cache (train/decode.h) and temperature / top-k / top-p sampling
 * (train/sampler.h). Text goes through the tokenizer the training data was made with, or
 * the one given; --ids works on raw token ids.
 */
#include "train/commands.h"

#include "core/alloc.h"
#include "core/buf.h"
#include "core/err.h"
#include "core/log.h"
#include "core/options.h"
#include "core/progress.h"
#include "core/stream.h"
#include "core/world.h"
#include "tokenize/tokenizer.h"
#include "train/checkpoint.h"
#include "dataset/datainfo.h"
#include "train/decode.h"
#include "train/model.h"
#include "train/sampler.h"

#include <errno.h>
#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#ifdef _OPENMP
#include <omp.h>
#endif

const char *const cmd_generate_usage[] = {
    "sluice generate CHECKPOINT --prompt TEXT [options]",
    "",
    "Continue TEXT with the model of a training checkpoint (a step directory, or a checkpoint",
    "directory whose newest step is used), on the CPU with a key/value cache. Prints the",
    "prompt and its continuation on stdout as they are generated. Temperature 0 (or",
    "--top-k 1, or --top-p 0) is greedy decoding. The tokenizer defaults to the one that",
    "made the training data (from its PREFIX.manifest.json); --ids reads and prints token ids.",
    NULL,
};

struct gopts {
    const char *prompt, *tokenizer;
    long max_tokens, top_k;
    double temperature, top_p;
    uint64_t seed;
    long threads;
    int ids, ignore_eod;
};

/* The first prefix of a data.prefix value (a string in Megatron's blend syntax, or a list). */
static char *first_prefix(struct json_object *p)
{
    if (json_object_is_type(p, json_type_array)) {
        for (size_t i = 0; i < json_object_array_length(p); i++) {
            struct json_object *e = json_object_array_get_idx(p, i);
            if (json_object_is_type(e, json_type_string)) {
                const char *s = json_object_get_string(e);
                char *end;
                strtod(s, &end);
                if (end == s || *end)
                    return sl_xstrdup(s);
            }
        }
        return NULL;
    }
    if (!json_object_is_type(p, json_type_string))
        return NULL;
    char *all = sl_xstrdup(json_object_get_string(p)), *save = NULL, *res = NULL;
    for (char *w = strtok_r(all, " \t\n", &save); w; w = strtok_r(NULL, " \t\n", &save)) {
        char *end;
        strtod(w, &end);
        if (end == w || *end) {
            res = sl_xstrdup(w);
            break;
        }
    }
    free(all);
    return res;
}

/* The tokenizer spec recorded by `sluice tokenize` for the data a checkpoint was trained on:
 * config.data.prefix -> PREFIX.manifest.json (PREFIX without its _<key>_document suffix) ->
 * settings.tokenizer. A relative path in the spec is tried as written, then next to the
 * manifest. NULL when any step is missing; *prefix_out is then the data prefix looked at
 * (or NULL), for the message. */
static char *tokenizer_from_checkpoint(const char *step_dir, char **prefix_out)
{
    *prefix_out = NULL;
    /* recorded by the trainer, with absolute paths (dataset/datainfo.h) */
    struct data_info di;
    if (data_info_from_checkpoint(&di, step_dir) == 0 && di.tokenizer) {
        char *recorded = sl_xstrdup(di.tokenizer);
        data_info_release(&di);
        return recorded;
    }
    data_info_release(&di);
    char *jp = sl_xasprintf("%s/checkpoint.json", step_dir), *spec = NULL, *prefix = NULL;
    struct sl_buf b = SL_BUF_INIT;
    b.max = 64u << 20;
    struct json_object *o = NULL, *m = NULL;
    if (sl_read_file(jp, &b) != 0)
        goto out;
    o = json_tokener_parse(b.data ? b.data : "");
    struct json_object *cfg, *data, *p;
    if (!o || !json_object_object_get_ex(o, "config", &cfg) ||
        !json_object_object_get_ex(cfg, "data", &data) ||
        !json_object_object_get_ex(data, "prefix", &p) || !(prefix = first_prefix(p)))
        goto out;
    char *manifest = data_info_manifest_for(prefix);
    if (!manifest)
        goto out;
    sl_buf_release(&b);
    b = (struct sl_buf)SL_BUF_INIT;
    b.max = 64u << 20;
    if (sl_read_file(manifest, &b) == 0)
        m = json_tokener_parse(b.data ? b.data : "");
    struct json_object *settings, *tok;
    if (m && json_object_object_get_ex(m, "settings", &settings) &&
        json_object_object_get_ex(settings, "tokenizer", &tok) &&
        json_object_is_type(tok, json_type_string)) {
        const char *s = json_object_get_string(tok), *colon = strchr(s, ':');
        const char *path = colon ? colon + 1 : s, *slash = strrchr(manifest, '/');
        struct stat sb;
        if (path[0] == '/' || stat(path, &sb) == 0 || !slash)
            spec = sl_xstrdup(s);
        else
            spec = sl_xasprintf("%.*s%.*s/%s", colon ? (int)(colon - s + 1) : 0, s,
                                (int)(slash - manifest), manifest, path);
    }
    free(manifest);
out:
    json_object_put(o);
    json_object_put(m);
    sl_buf_release(&b);
    if (!spec)
        *prefix_out = prefix;
    else
        free(prefix);
    free(jp);
    return spec;
}

/* "5 6,7" -> ids; each below vocab. */
static int parse_ids(const char *s, int vocab, struct tok_ids *out)
{
    const char *p = s;
    while (*p) {
        while (*p == ' ' || *p == ',' || *p == '\t' || *p == '\n')
            p++;
        if (!*p)
            break;
        char *end;
        errno = 0;
        long long v = strtoll(p, &end, 10);
        if (end == p || errno || v < 0 || v >= vocab)
            return sl_err_set(SL_ERR_USAGE, "--ids: '%.*s' is not a token id below %d",
                              (int)strcspn(p, " ,\t\n"), p, vocab);
        tok_ids_push(out, (uint32_t)v);
        p = end;
    }
    return 0;
}

/* Length of the longest prefix of s[0..n) that does not end inside a UTF-8 sequence. */
static size_t utf8_complete(const char *s, size_t n)
{
    for (size_t back = 1; back <= 4 && back <= n; back++) {
        unsigned char c = (unsigned char)s[n - back];
        if ((c & 0xc0) == 0x80)
            continue;
        size_t need = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : 4;
        return need > back ? n - back : n;
    }
    return n;
}

/* Decode ids, skipping any the tokenizer cannot (one at a time then). */
static void decode_ids(const struct tokenizer *t, const uint32_t *ids, size_t n, struct sl_buf *out)
{
    size_t len0 = out->len;
    if (tokenizer_decode(t, ids, n, out) == 0)
        return;
    out->len = len0;
    for (size_t i = 0; i < n; i++) {
        size_t before = out->len;
        if (tokenizer_decode(t, ids + i, 1, out) != 0)
            out->len = before;
    }
}

/* Streams the continuation: text decoded from prompt + generated ids, printed beyond the
 * decoded prompt, up to the last complete UTF-8 character. */
struct printer {
    const struct tokenizer *tok;
    size_t prompt_ids;
    struct sl_buf base, full;
    size_t printed; /* bytes of the continuation written */
    int ids, last_newline;
};

static void printer_emit(struct printer *p, const struct tok_ids *all, int final)
{
    if (p->ids) {
        for (size_t i = p->printed; i < all->n; i++)
            printf("%s%u", i ? " " : "", all->v[i]);
        p->printed = all->n;
        if (final)
            printf("\n");
        fflush(stdout);
        return;
    }
    p->full.len = 0;
    decode_ids(p->tok, all->v, all->n, &p->full);
    const char *cont = p->full.data ? p->full.data : "";
    size_t n = p->full.len;
    if (n >= p->base.len && !memcmp(cont, p->base.data ? p->base.data : "", p->base.len)) {
        cont += p->base.len;
        n -= p->base.len;
    } else { /* the prompt did not decode to a prefix: the continuation alone */
        p->full.len = 0;
        decode_ids(p->tok, all->v + p->prompt_ids, all->n - p->prompt_ids, &p->full);
        cont = p->full.data ? p->full.data : "";
        n = p->full.len;
    }
    size_t upto = final ? n : utf8_complete(cont, n);
    if (upto > p->printed) {
        fwrite(cont + p->printed, 1, upto - p->printed, stdout);
        p->last_newline = cont[upto - 1] == '\n';
        p->printed = upto;
    }
    if (final && !p->last_newline)
        fputc('\n', stdout);
    fflush(stdout);
}

/* One generation: the model, the tokenizer, the ids so far and the output. The steps return
 * 0, or the exit code after printing the error. */
struct gen {
    const struct gopts *o;
    char *step_dir, *spec, *data_prefix;
    struct model_config mc;
    struct ckpt_state st;
    struct model_layout l;
    int have_layout;
    float *params;
    struct tokenizer *tok;
    struct tokenizer_enc *enc;
    struct decoder *dec;
    struct sampler smp;
    struct tok_ids all; /* the prompt's ids, then the generated ones */
    struct printer pr;
};

/* The checkpoint's configuration and parameters. */
static int load_model(struct gen *g, const char *ckpt_arg)
{
    int rc = ckpt_resolve(ckpt_arg, &g->step_dir);
    if (!rc)
        rc = ckpt_read_meta(g->step_dir, &g->mc, &g->st);
    if (rc) {
        sl_error("cannot load checkpoint: %s", sl_err_msg());
        return 1;
    }
    model_layout_init(&g->l, &g->mc);
    g->have_layout = 1;
    g->params = aligned_alloc(64, sl_mul_size((g->l.total + 15) / 16 * 16, sizeof(float)));
    if (!g->params) {
        sl_error("cannot allocate %.1f GiB for the parameters of '%s'",
                 (double)g->l.total * sizeof(float) / (1u << 30), g->step_dir);
        return 1;
    }
    if ((rc = ckpt_load(g->step_dir, &g->l, g->params, NULL, NULL))) {
        sl_error("cannot load checkpoint '%s': %s", g->step_dir, sl_err_msg());
        return 1;
    }
    sl_info("checkpoint '%s': step %ld, %llu parameters, %d layers, hidden %d, vocabulary %d, "
            "context %d",
            g->step_dir, g->st.step, (unsigned long long)g->l.params, g->mc.n_layers, g->mc.d_model,
            g->mc.vocab_size, g->mc.max_seq_len);
    return 0;
}

/* --ids: the prompt is token ids. */
static int prompt_from_ids(struct gen *g)
{
    const char *prompt = g->o->prompt;
    if (parse_ids(prompt ? prompt : "", g->mc.vocab_size, &g->all)) {
        sl_error("%s", sl_err_msg());
        return 2;
    }
    if (!g->all.n) {
        sl_error("--ids needs a prompt of at least one token id (--prompt \"ID ...\")");
        return 2;
    }
    return 0;
}

/* The tokenizer given, or the one that made the training data. */
static int open_tokenizer(struct gen *g)
{
    const struct gopts *o = g->o;
    if (o->tokenizer) {
        g->spec = sl_xstrdup(o->tokenizer);
    } else if (!(g->spec = tokenizer_from_checkpoint(g->step_dir, &g->data_prefix))) {
        if (g->data_prefix)
            sl_error("no tokenizer found for the training data of '%s': no "
                     "PREFIX.manifest.json from `sluice tokenize` next to '%s'\n"
                     "hint: give --tokenizer SPEC, or --ids; SPEC is one of " TOKENIZER_SPECS,
                     g->step_dir, g->data_prefix);
        else
            sl_error("no tokenizer is recorded for the data of '%s' (synthetic data?)\n"
                     "hint: give --tokenizer SPEC, or --ids; SPEC is one of " TOKENIZER_SPECS,
                     g->step_dir);
        return 2;
    } else {
        sl_info("tokenizer '%s' (the training data's, from the checkpoint)", g->spec);
    }
    int rc = tokenizer_open(&g->tok, g->spec);
    if (rc) {
        sl_error("%s", sl_err_msg());
        if (!o->tokenizer)
            fprintf(stderr, "hint: this tokenizer is named in the training data's manifest; "
                            "give --tokenizer SPEC\n");
        return rc == SL_ERR_USAGE ? 2 : 1;
    }
    if (g->tok->vocab_size > (uint32_t)g->mc.vocab_size)
        sl_warn("the tokenizer has %u ids, the model %d: is it the tokenizer the model was "
                "trained with?",
                g->tok->vocab_size, g->mc.vocab_size);
    return 0;
}

/* The prompt through the tokenizer; an empty one starts from the end-of-document token. */
static int prompt_from_text(struct gen *g)
{
    int code = open_tokenizer(g);
    if (code)
        return code;
    g->enc = tokenizer_enc_new(g->tok);
    const char *text = g->o->prompt ? g->o->prompt : "";
    if (tokenizer_encode(g->enc, text, strlen(text), &g->all) < 0) {
        sl_error("cannot encode the prompt: %s", sl_err_msg());
        return 1;
    }
    for (size_t i = 0; i < g->all.n; i++)
        if (g->all.v[i] >= (uint32_t)g->mc.vocab_size) {
            sl_error("the prompt encodes to token id %u, beyond the model's vocabulary of %d\n"
                     "hint: is '%s' the tokenizer the model was trained with?",
                     g->all.v[i], g->mc.vocab_size, g->spec);
            return 1;
        }
    if (!g->all.n) {
        if (g->tok->eod_id < 0 || g->tok->eod_id >= g->mc.vocab_size) {
            sl_error("the prompt is empty and the tokenizer has no end-of-document token to "
                     "start from\nhint: give --prompt TEXT");
            return 2;
        }
        tok_ids_push(&g->all, (uint32_t)g->tok->eod_id);
    }
    return 0;
}

/* The sampler and the decoder with its key/value cache. */
static int start_decoder(struct gen *g)
{
    const struct gopts *o = g->o;
    if (sampler_init(&g->smp, g->mc.vocab_size, o->temperature, (int)o->top_k, o->top_p, o->seed)) {
        sl_error("%s", sl_err_msg());
        return 2;
    }
    if (decoder_new(&g->dec, &g->mc, &g->l, g->params, g->mc.max_seq_len)) {
        sl_error("%s", sl_err_msg());
        return 1;
    }
    return 0;
}

/* Print the prompt (as given, or its ids) before the continuation. */
static void echo_prompt(struct gen *g)
{
    const struct gopts *o = g->o;
    struct printer *pr = &g->pr;
    pr->tok = g->tok;
    pr->ids = o->ids;
    pr->prompt_ids = g->all.n;
    if (o->ids) {
        printer_emit(pr, &g->all, 0);
        return;
    }
    decode_ids(g->tok, g->all.v, g->all.n, &pr->base);
    if (o->prompt && o->prompt[0]) {
        fputs(o->prompt, stdout);
        pr->last_newline = o->prompt[strlen(o->prompt) - 1] == '\n';
    } else {
        pr->last_newline = 1;
    }
    fflush(stdout);
}

/* The prompt's last window through the cache, then one token per step, printed as it comes;
 * a full cache drops its oldest quarter and is refilled from the tokens kept. */
static void decode_loop(struct gen *g)
{
    const struct gopts *o = g->o;
    struct decoder *dec = g->dec;
    struct tok_ids *all = &g->all;
    const struct tokenizer *tok = g->tok;
    int V = g->mc.vocab_size;
    int W = decoder_max_len(dec), keep = W - W / 4;
    if (all->n > (size_t)W)
        sl_warn("the prompt has %zu tokens, the model's context %d: its last %d are used", all->n,
                W, W);
    const float *logits = NULL;
    double t0 = sl_now();
    size_t start = all->n > (size_t)W ? all->n - (size_t)W : 0;
    for (size_t i = start; i + 1 < all->n; i++)
        decoder_feed(dec, (int32_t)all->v[i]);
    logits = decoder_step(dec, (int32_t)all->v[all->n - 1]);
    double t_prompt = sl_now() - t0;
    int vlimit = V;
    if (tok && tok->vocab_size < (uint32_t)vlimit)
        vlimit = (int)tok->vocab_size;
    float *masked = NULL;
    if (vlimit < V)
        masked = sl_xmalloc((size_t)V * sizeof(float));
    int refills = 0;
    for (long made = 0; made < o->max_tokens; made++) {
        if (masked) { /* ids the tokenizer cannot decode are never picked */
            memcpy(masked, logits, (size_t)vlimit * sizeof(float));
            for (int i = vlimit; i < V; i++)
                masked[i] = -INFINITY;
        }
        int32_t next = sampler_pick(&g->smp, masked ? masked : logits);
        if (tok && !o->ignore_eod && tok->eod_id >= 0 && next == tok->eod_id)
            break;
        tok_ids_push(all, (uint32_t)next);
        printer_emit(&g->pr, all, 0);
        if (made + 1 == o->max_tokens)
            break;
        if (decoder_len(dec) == W) {
            decoder_reset(dec);
            refills++;
            for (size_t i = all->n - (size_t)keep; i + 1 < all->n; i++)
                decoder_feed(dec, (int32_t)all->v[i]);
        }
        logits = decoder_step(dec, next);
    }
    printer_emit(&g->pr, all, 1);
    free(masked);
    size_t prompt_ids = g->pr.prompt_ids;
    double dt = sl_now() - t0 - t_prompt;
    sl_info("%ld tokens generated in %.2f s (%.1f tokens/s; prompt %zu tokens in %.2f s%s)",
            (long)(all->n - prompt_ids), dt, dt > 0 ? (double)(all->n - prompt_ids) / dt : 0.0,
            prompt_ids, t_prompt, refills ? ", context window slid" : "");
}

static int generate(const struct gopts *o, const char *ckpt_arg)
{
    struct gen g;
    memset(&g, 0, sizeof(g));
    g.o = o;
    int code = load_model(&g, ckpt_arg);
    if (!code)
        code = o->ids ? prompt_from_ids(&g) : prompt_from_text(&g);
    if (!code)
        code = start_decoder(&g);
    if (!code) {
        echo_prompt(&g);
        decode_loop(&g);
    }
    sl_buf_release(&g.pr.base);
    sl_buf_release(&g.pr.full);
    tok_ids_release(&g.all);
    sampler_release(&g.smp);
    decoder_free(g.dec);
    tokenizer_enc_free(g.enc);
    tokenizer_free(g.tok);
    free(g.params);
    if (g.have_layout)
        model_layout_release(&g.l);
    free(g.spec);
    free(g.data_prefix);
    free(g.step_dir);
    return code;
}

/* The options' table (the dispatcher's parser and -h). */
#define SL_OPT_STRUCT struct gopts

const struct sl_option cmd_generate_options[] = {
    SL_OPT_STRING('p', "prompt", prompt, "TEXT", "the text to continue (--ids: token ids)"),
    SL_OPT_INTEGER('n', "max-tokens", max_tokens, "N", "tokens to generate", .def = "128"),
    SL_OPT_DOUBLE(0, "temperature", temperature, "T",
                  "divide the logits by T (default 0.8; 0: greedy)", .def = "0.8",
                  .flags = SL_OPTF_DEF_UNSAID),
    SL_OPT_INTEGER(0, "top-k", top_k, "K",
                   "sample from the K most likely tokens (default 40; 0: all)", .def = "40",
                   .flags = SL_OPTF_DEF_UNSAID),
    SL_OPT_DOUBLE(0, "top-p", top_p, "P",
                  "keep the most likely tokens up to probability P (default 0.95; 1: all)",
                  .def = "0.95", .flags = SL_OPTF_DEF_UNSAID),
    SL_OPT_UINT64(0, "seed", seed, "S", "random seed", .def = "1234"),
    SL_OPT_STRING('t', "tokenizer", tokenizer, "SPEC",
                  TOKENIZER_SPECS "; default: the training data's"),
    SL_OPT_INTEGER(0, "threads", threads, "N", "OpenMP threads (default: all cores)"),
    SL_OPT_FLAG_(0, "ids", ids, "the prompt and the output are token ids"),
    SL_OPT_FLAG_(0, "ignore-eod", ignore_eod,
                 "go on past the end-of-document token (default: stop there)"),
    SL_OPT_COMMON,
    SL_OPT_END_,
};

static int check(void *opts, const struct sl_strlist *rest)
{
    const struct gopts *o = opts;
    if (rest->n != 1)
        return sl_err_set(SL_ERR_USAGE,
                          rest->n ? "give exactly one checkpoint" : "no checkpoint given");
    if (o->max_tokens < 0)
        return sl_err_set(SL_ERR_USAGE, "--max-tokens must be 0 or more");
    if (o->top_k < 0 || o->top_k > 0x7fffffff)
        return sl_err_set(SL_ERR_USAGE, "--top-k must be 0 (off) or more");
    if (!isfinite(o->temperature) || o->temperature < 0)
        return sl_err_set(SL_ERR_USAGE, "--temperature must be 0 or more");
    if (!isfinite(o->top_p) || o->top_p < 0 || o->top_p > 1)
        return sl_err_set(SL_ERR_USAGE, "--top-p must be in [0, 1]");
    if (o->threads < 0)
        return sl_err_set(SL_ERR_USAGE, "--threads must be 0 (all cores) or more");
    if (o->ids && o->tokenizer)
        return sl_err_set(SL_ERR_USAGE, "--ids and --tokenizer cannot be used together");
    if (o->ids && (!o->prompt || !o->prompt[0]))
        return sl_err_set(SL_ERR_USAGE, "--ids needs --prompt \"ID ...\"");
    return 0;
}

static int run(const void *opts, const struct sl_strlist *rest, int argc, const char **argv)
{
    const struct gopts *o = opts;
#ifdef _OPENMP
    if (o->threads > 0)
        omp_set_num_threads((int)o->threads);
#endif
    /* under mpirun, rank 0 generates (one output, not one per rank) */
    return sl_world_get()->rank == 0 ? generate(o, rest->v[0]) : 0;
}

const struct sl_cmd cmd_generate =
    SL_CMD(cmd_generate_usage, cmd_generate_options, struct gopts, check, run);
