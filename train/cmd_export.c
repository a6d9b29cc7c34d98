/* sluice export hf: a training checkpoint (or a tokenizer alone) -> a Hugging Face
 * transformers directory. */
#include "train/commands.h"

#include "core/alloc.h"
#include "core/atomic.h"
#include "core/buf.h"
#include "core/err.h"
#include "core/file.h"
#include "core/log.h"
#include "core/options.h"
#include "core/stream.h"
#include "dataset/datainfo.h"
#include "tokenize/bert.h"
#include "tokenize/bpe.h"
#include "tokenize/hf.h"
#include "tokenize/hf_write.h"
#include "tokenize/spm.h"
#include "tokenize/tokenizer.h"
#include "train/checkpoint.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const cmd_export_usage[] = {
    "sluice export hf --out DIR CHECKPOINT",
    "sluice export hf --out DIR --tokenizer SPEC",
    "",
    "Write DIR/config.json and DIR/model.safetensors that transformers loads with",
    "AutoModelForCausalLM: GPT2LMHeadModel for GPT-2/GPT-3 style models, LlamaForCausalLM for",
    "Llama style ones. CHECKPOINT is a step directory (checkpoint.dir/step-NNNNNNNN) or a",
    "checkpoint directory, whose newest step is used. Weights stay fp32. The tokenizer the",
    "training data was made with (carried by the checkpoint, or --tokenizer) goes along, so",
    "that AutoTokenizer gives the ids `sluice tokenize` wrote, with or without",
    "add_special_tokens (none are added): tokenizer.json (+ tokenizer.model) for",
    "SentencePiece, vocab.json + merges.txt for GPT-2 BPE, tokenizer.json for tiktoken ranks",
    "and Hugging Face tokenizers, tokenizer.json + vocab.txt for BERT WordPiece (bert:,",
    "bert-lower:), each with tokenizer_config.json; its special ids go into config.json and",
    "generation_config.json. Without CHECKPOINT only the tokenizer is written.",
    NULL,
};

/* The files of an exported tokenizer, made in memory before any is written. */
#define MAX_FILES 4
struct tok_export {
    const char *name[MAX_FILES];
    struct sl_buf data[MAX_FILES];
    int n;
    long bos, eos;
    const char *bos_s, *eos_s, *unk_s, *pad_s, *cls;
    char *own; /* a special token's text that this struct owns */
    int split_special; /* special tokens' text in a document is ordinary text */
};

static void tok_export_release(struct tok_export *x)
{
    for (int i = 0; i < x->n; i++)
        sl_buf_release(&x->data[i]);
    free(x->own);
}

static struct sl_buf *add_file(struct tok_export *x, const char *name)
{
    x->name[x->n] = name;
    x->data[x->n] = (struct sl_buf)SL_BUF_INIT;
    return &x->data[x->n++];
}

static int read_into(struct tok_export *x, const char *name, const char *from)
{
    struct sl_buf *b = add_file(x, name);
    b->max = (size_t)1 << 31;
    return sl_read_file(from, b);
}

static int spm_files(const struct tokenizer *tok, long eod, const char *path, struct tok_export *x)
{
    int64_t bi = spm_bos_id(tok->spm), ei = spm_eos_id(tok->spm);
    int64_t ui = spm_unk_id(tok->spm), pi = spm_pad_id(tok->spm);
    x->bos = bi;
    x->eos = eod >= 0 ? eod : ei;
    x->bos_s = bi >= 0 ? spm_id_to_piece(tok->spm, (uint32_t)bi) : NULL;
    x->eos_s = x->eos >= 0 ? spm_id_to_piece(tok->spm, (uint32_t)x->eos) : NULL;
    x->unk_s = ui >= 0 ? spm_id_to_piece(tok->spm, (uint32_t)ui) : NULL;
    x->pad_s = pi >= 0 ? spm_id_to_piece(tok->spm, (uint32_t)pi) : NULL;
    x->cls = "PreTrainedTokenizerFast";
    x->split_special = 1;
    struct sl_buf *j = add_file(x, "tokenizer.json");
    int rc = spm_tokenizer_json(tok->spm, j);
    /* the model itself too, for SentencePiece's own tools (transformers reads
     * tokenizer.json: tokenizer_config.json names no slow tokenizer class) */
    return rc ? rc : read_into(x, "tokenizer.model", path);
}

static int gpt2_files(const struct tokenizer *tok, long eod, const char *dir, struct tok_export *x)
{
    x->bos = x->eos = eod >= 0 ? eod : tok->eod_id;
    x->bos_s = x->eos_s = x->unk_s = "<|endoftext|>";
    x->cls = "GPT2Tokenizer";
    x->split_special = 1;
    char *v = sl_xasprintf("%s/vocab.json", dir), *m = sl_xasprintf("%s/merges.txt", dir);
    if (!sl_file_exists(v)) {
        free(v);
        free(m);
        v = sl_xasprintf("%s/encoder.json", dir);
        m = sl_xasprintf("%s/vocab.bpe", dir);
    }
    int rc = read_into(x, "vocab.json", v);
    rc = rc ? rc : read_into(x, "merges.txt", m);
    free(v);
    free(m);
    return rc;
}

static int tiktoken_files(const struct tokenizer *tok, long eod, struct tok_export *x)
{
    x->bos = x->eos = eod >= 0 ? eod : tok->eod_id;
    size_t n = 0;
    const unsigned char *e = x->eos >= 0 ? bpe_token_bytes(tok->bpe, (uint32_t)x->eos, &n) : NULL;
    x->own = e ? sl_xstrndup((const char *)e, n) : NULL;
    x->bos_s = x->eos_s = x->own;
    x->cls = "PreTrainedTokenizerFast";
    x->split_special = 1;
    struct bpe_model m;
    int rc = hf_model_from_bpe(tok->bpe, &m);
    if (rc)
        return sl_err_wrap(rc, "cannot write tokenizer.json for '%s': ", tok->spec);
    rc = hf_write_tokenizer_json(&m, add_file(x, "tokenizer.json"));
    bpe_model_release(&m);
    return rc;
}

/* A tokenizer.json as it is, but for what transformers would add, cut or pad. */
static int hf_files(const struct tokenizer *tok, long eod, const char *path, struct tok_export *x)
{
    x->bos = x->eos = eod >= 0 ? eod : tok->eod_id;
    x->bos_s = x->eos_s = x->eos >= 0 ? hf_added_content(tok->hf, (uint32_t)x->eos) : NULL;
    x->cls = "PreTrainedTokenizerFast";
    x->split_special = 0; /* sluice finds added tokens in the text, as tokenizers does */
    struct sl_buf raw = SL_BUF_INIT;
    raw.max = (size_t)1 << 31;
    int rc = sl_read_file(path, &raw);
    if (!rc)
        rc = hf_write_exported(raw.data ? raw.data : "", raw.len, path,
                               add_file(x, "tokenizer.json"));
    sl_buf_release(&raw);
    return rc;
}

/* BERT WordPiece: a tokenizer.json with the Rust library's BERT normalizer (the ids of
 * Megatron's Python one on most text: docs/tokenizers.md), and vocab.txt for Megatron. */
static int bert_files(const struct tokenizer *tok, long eod, struct tok_export *x)
{
    const struct bert *b = tok->bert;
    size_t n;
    x->bos = b->bos;
    x->eos = eod >= 0 ? eod : tok->eod_id;
    const char *e = x->eos >= 0 ? bert_token(b, (uint32_t)x->eos, &n) : NULL;
    x->own = e ? sl_xstrndup(e, n) : NULL;
    x->bos_s = "[BOS]";
    x->eos_s = x->own;
    x->unk_s = "[UNK]";
    x->pad_s = "[PAD]";
    x->cls = "PreTrainedTokenizerFast";
    x->split_special = 1; /* "[CLS]" in a text is text to Megatron */
    int rc = bert_tokenizer_json(b, add_file(x, "tokenizer.json"));
    return rc ? rc : bert_vocab_txt(b, add_file(x, "vocab.txt"));
}

static void json_member(struct sl_buf *b, const char *key, const char *value)
{
    sl_buf_printf(b, "  \"%s\": ", key);
    if (value)
        sl_buf_json_str(b, value, strlen(value));
    else
        sl_buf_puts(b, "null");
    sl_buf_puts(b, ",\n");
}

/* tokenizer_config.json and special_tokens_map.json of x (max_len 0: not known). */
static void config_files(struct tok_export *x, int max_len)
{
    struct sl_buf *b = add_file(x, "tokenizer_config.json");
    sl_buf_puts(b, "{\n");
    json_member(b, "tokenizer_class", x->cls);
    json_member(b, "bos_token", x->bos_s);
    json_member(b, "eos_token", x->eos_s);
    json_member(b, "unk_token", x->unk_s);
    json_member(b, "pad_token", x->pad_s);
    /* sluice's shards hold a document's ids and nothing around them */
    sl_buf_printf(b,
                  "  \"add_bos_token\": false,\n  \"add_eos_token\": false,\n"
                  "  \"add_prefix_space\": false,\n  \"split_special_tokens\": %s,\n"
                  "  \"clean_up_tokenization_spaces\": false",
                  x->split_special ? "true" : "false");
    if (max_len > 0)
        sl_buf_printf(b, ",\n  \"model_max_length\": %d", max_len);
    sl_buf_puts(b, "\n}\n");
    b = add_file(x, "special_tokens_map.json");
    sl_buf_puts(b, "{\n");
    json_member(b, "bos_token", x->bos_s);
    json_member(b, "eos_token", x->eos_s);
    json_member(b, "unk_token", x->unk_s);
    json_member(b, "pad_token", x->pad_s);
    b->len -= 2; /* the last ",\n" */
    sl_buf_puts(b, "\n}\n");
}

/* Every file of tok's export into x; nothing is written yet. */
static int tok_export_make(const struct tokenizer *tok, long eod, int max_len, struct tok_export *x)
{
    memset(x, 0, sizeof(*x));
    x->bos = x->eos = -1;
    const char *path = tokenizer_spec_path(tok->spec);
    int rc = tok->kind == TOKENIZER_SPM    ? spm_files(tok, eod, path, x)
             : tok->kind == TOKENIZER_GPT2 ? gpt2_files(tok, eod, path, x)
             : tok->kind == TOKENIZER_HF   ? hf_files(tok, eod, path, x)
             : tok->kind == TOKENIZER_BERT ? bert_files(tok, eod, x)
                                           : tiktoken_files(tok, eod, x);
    if (rc)
        return sl_err_wrap(rc, "tokenizer '%s': ", tok->spec);
    config_files(x, max_len);
    return 0;
}

static int tok_export_write(const struct tok_export *x, const char *out)
{
    int rc = sl_mkdir_p(out);
    for (int i = 0; i < x->n && !rc; i++) {
        char *to = sl_xasprintf("%s/%s", out, x->name[i]);
        rc = sl_write_file_atomic(to, x->data[i].data ? x->data[i].data : "", x->data[i].len);
        free(to);
    }
    return rc;
}

static void tok_export_names(const struct tok_export *x, char *s, size_t n)
{
    size_t k = 0;
    s[0] = 0;
    for (int i = 0; i < x->n && k < n; i++)
        k += (size_t)snprintf(s + k, n - k, "%s%s", i ? " + " : "", x->name[i]);
}

struct opts {
    const char *out, *tok_spec;
};

/* The options' table (the dispatcher's parser and -h). */
#define SL_OPT_STRUCT struct opts
const struct sl_option cmd_export_options[] = {
    SL_OPT_STRING('o', "out", out, "DIR", "output directory (created)"),
    SL_OPT_STRING(
        0, "tokenizer", tok_spec, "SPEC",
        "the data's tokenizer, for a checkpoint that carries none, or alone: " TOKENIZER_SPECS),
    SL_OPT_COMMON,
    SL_OPT_END_,
};

/* The step directory of a checkpoint operand (a step directory, or the newest step); the
 * operand itself when it names neither, for reading it to say what is missing. */
static char *step_dir(const char *path)
{
    char *step;
    return ckpt_resolve(path, &step) == 0 ? step : sl_xstrdup(path);
}

static int export_checkpoint(const char *path, const char *out, const char *tok_spec)
{
    struct data_info di;
    struct model_config mc;
    struct ckpt_state st;
    struct tokenizer *tok = NULL;
    struct tok_export x;
    memset(&x, 0, sizeof(x));
    const char *arch = NULL;
    int rc = data_info_from_checkpoint(&di, path);
    rc = rc ? rc : ckpt_read_meta(path, &mc, &st);
    const char *spec = tok_spec ? tok_spec : di.tokenizer;
    if (!rc && spec && (rc = tokenizer_open(&tok, spec)))
        sl_err_wrap(rc, "%s: ", tok_spec ? "--tokenizer" : "the checkpoint's tokenizer");
    if (!rc && tok && tok->vocab_size > (uint32_t)mc.vocab_size)
        rc = sl_err_set(SL_ERR_USAGE,
                        "tokenizer '%s' has %u ids, more than the model's vocabulary (%d)", spec,
                        tok->vocab_size, mc.vocab_size);
    long bos = di.eod_id, eos = di.eod_id;
    /* the tokenizer's files first, in memory: config.json carries its ids, and a tokenizer
     * that cannot be exported stops the export before any file is written */
    if (!rc && tok && !(rc = tok_export_make(tok, di.eod_id, mc.max_seq_len, &x))) {
        bos = x.bos;
        eos = x.eos;
    }
    rc = rc ? rc : ckpt_export_hf(path, out, bos, eos, &arch);
    rc = rc ? rc : tok ? tok_export_write(&x, out) : 0;
    if (!rc) {
        sl_info("exported '%s' as %s to '%s' (bos %ld, eos %ld)", path, arch, out, bos, eos);
        char names[256];
        tok_export_names(&x, names, sizeof(names));
        if (tok)
            sl_info("tokenizer '%s' written as %s", spec, names);
        else
            sl_warn("no tokenizer recorded in '%s' (synthetic data or data without a tokenize "
                    "manifest): no tokenizer files written\nhint: --tokenizer SPEC names the one the "
                    "data was made with: " TOKENIZER_SPECS,
                    path);
    }
    tok_export_release(&x);
    tokenizer_free(tok);
    data_info_release(&di);
    return rc;
}

static int export_tokenizer(const char *spec, const char *out)
{
    struct tokenizer *tok = NULL;
    struct tok_export x;
    memset(&x, 0, sizeof(x));
    int rc = tokenizer_open(&tok, spec);
    if (rc)
        sl_err_wrap(rc, "--tokenizer: ");
    rc = rc ? rc : tok_export_make(tok, -1, 0, &x);
    rc = rc ? rc : tok_export_write(&x, out);
    if (!rc) {
        char names[256];
        tok_export_names(&x, names, sizeof(names));
        sl_info("tokenizer '%s' written to '%s' as %s (eos %ld)", spec, out, names, x.eos);
    }
    tok_export_release(&x);
    tokenizer_free(tok);
    return rc;
}

/* `export hf CKPT`, or `export hf --tokenizer SPEC` alone */
static int check(void *opts, const struct sl_strlist *rest)
{
    const struct opts *o = opts;
    int tok_only = rest->n == 1 && o->tok_spec;
    int rc = 0;
    if (!tok_only || strcmp(rest->v[0], "hf") != 0)
        rc = sl_check_format_operands(rest, "export", "hf", "checkpoint");
    if (!rc && !o->out)
        rc = sl_err_set(SL_ERR_USAGE, "--out DIR is required");
    return rc;
}

static int run(const void *opts, const struct sl_strlist *rest, int argc, const char **argv)
{
    const struct opts *o = opts;
    if (rest->n == 1) /* hf, with --tokenizer */
        return export_tokenizer(o->tok_spec, o->out);
    char *path = step_dir(rest->v[1]);
    int rc = export_checkpoint(path, o->out, o->tok_spec);
    free(path);
    return rc;
}

const struct sl_cmd cmd_export =
    SL_CMD(cmd_export_usage, cmd_export_options, struct opts, check, run);
