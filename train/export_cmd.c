/* sluice export hf: a training checkpoint -> a Hugging Face transformers directory. */
#include "train/commands.h"

#include "core/alloc.h"
#include "core/atomic.h"
#include "core/buf.h"
#include "core/err.h"
#include "core/log.h"
#include "core/options.h"
#include "core/stream.h"
#include "tokenize/bpe.h"
#include "tokenize/bpe.h"
#include "tokenize/hf_write.h"
#include "tokenize/spm.h"
#include "tokenize/tokenizer.h"
#include "train/checkpoint.h"
#include "dataset/datainfo.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

const char *const cmd_export_usage[] = {
    "sluice export hf --out DIR CHECKPOINT",
    "",
    "Write DIR/config.json and DIR/model.safetensors that transformers loads with",
    "AutoModelForCausalLM: GPT2LMHeadModel for GPT-2/GPT-3 style models, LlamaForCausalLM for",
    "Llama style ones. CHECKPOINT is a step directory (checkpoint.dir/step-NNNNNNNN) or a",
    "checkpoint directory, whose newest step is used. Weights stay fp32. The tokenizer the",
    "training data was made with (recorded in the checkpoint, or --tokenizer) goes along:",
    "tokenizer.model + tokenizer_config.json for SentencePiece, vocab.json + merges.txt +",
    "tokenizer_config.json for GPT-2 BPE, tokenizer.json + tokenizer_config.json for",
    "tiktoken ranks; its special ids go into config.json and generation_config.json.",
    NULL,
};

/* Copy a file (tokenizer files: a few MB) to out/name. */
static int copy_file(const char *from, const char *out, const char *name)
{
    struct sl_buf b = SL_BUF_INIT;
    b.max = (size_t)1 << 31;
    int rc = sl_read_file(from, &b);
    if (!rc) {
        char *to = sl_xasprintf("%s/%s", out, name);
        rc = sl_write_file_atomic(to, b.data ? b.data : "", b.len);
        free(to);
    }
    sl_buf_release(&b);
    return rc;
}

static int write_text(const char *out, const char *name, const struct sl_buf *b)
{
    char *to = sl_xasprintf("%s/%s", out, name);
    int rc = sl_write_file_atomic(to, b->data, b->len);
    free(to);
    return rc;
}

static void json_member(struct sl_buf *b, const char *key, const char *value, int last)
{
    sl_buf_printf(b, "  \"%s\": ", key);
    if (value)
        sl_buf_json_str(b, value, strlen(value));
    else
        sl_buf_puts(b, "null");
    sl_buf_puts(b, last ? "\n" : ",\n");
}

static int file_ok(const char *p)
{
    struct stat sb;
    return stat(p, &sb) == 0 && S_ISREG(sb.st_mode);
}

/* tokenizer.model / vocab.json + merges.txt, tokenizer_config.json and
 * special_tokens_map.json for tok; *bos, *eos: its special ids. */
static int write_tokenizer(const struct tokenizer *tok, long eod, const char *out, int max_len,
                           long *bos, long *eos, int write)
{
    const char *path = strchr(tok->spec, ':') + 1;
    const char *bos_s = NULL, *eos_s = NULL, *unk_s = NULL, *pad_s = NULL, *cls;
    char *eos_own = NULL;
    int rc = 0;
    struct sl_buf b = SL_BUF_INIT;
    if (tok->kind == TOKENIZER_SPM) {
        int64_t bi = spm_bos_id(tok->spm), ei = spm_eos_id(tok->spm);
        int64_t ui = spm_unk_id(tok->spm), pi = spm_pad_id(tok->spm);
        *bos = bi;
        *eos = eod >= 0 ? eod : ei;
        bos_s = bi >= 0 ? spm_id_to_piece(tok->spm, (uint32_t)bi) : NULL;
        eos_s = *eos >= 0 ? spm_id_to_piece(tok->spm, (uint32_t)*eos) : NULL;
        unk_s = ui >= 0 ? spm_id_to_piece(tok->spm, (uint32_t)ui) : NULL;
        pad_s = pi >= 0 ? spm_id_to_piece(tok->spm, (uint32_t)pi) : NULL;
        cls = "LlamaTokenizer";
        if (write)
            rc = copy_file(path, out, "tokenizer.model");
    } else if (tok->kind == TOKENIZER_GPT2) {
        *bos = *eos = eod >= 0 ? eod : tok->eod_id;
        bos_s = eos_s = unk_s = "<|endoftext|>";
        cls = "GPT2Tokenizer";
        char *v = sl_xasprintf("%s/vocab.json", path), *m = sl_xasprintf("%s/merges.txt", path);
        if (!file_ok(v)) {
            free(v);
            free(m);
            v = sl_xasprintf("%s/encoder.json", path);
            m = sl_xasprintf("%s/vocab.bpe", path);
        }
        if (write)
            rc = copy_file(v, out, "vocab.json");
        if (!rc && write)
            rc = copy_file(m, out, "merges.txt");
        free(v);
        free(m);
    } else {
        /* tiktoken ranks: tokenizer.json, each token's merge found from the ranks */
        *bos = *eos = eod >= 0 ? eod : tok->eod_id;
        size_t n = 0;
        const unsigned char *e = *eos >= 0 ? bpe_token_bytes(tok->bpe, (uint32_t)*eos, &n) : NULL;
        eos_own = e ? sl_xstrndup((const char *)e, n) : NULL;
        bos_s = eos_s = eos_own;
        cls = "PreTrainedTokenizerFast";
        /* converted in the first pass too: a rank file without merges fails before any
         * file is written */
        struct bpe_model m;
        rc = hf_model_from_bpe(tok->bpe, &m);
        if (!rc) {
            if (write) {
                rc = hf_write_tokenizer_json(&m, &b);
                rc = rc ? rc : write_text(out, "tokenizer.json", &b);
            }
            bpe_model_release(&m);
        } else {
            rc = sl_err_wrap(rc, "cannot write tokenizer.json for '%s': ", tok->spec);
        }
        sl_buf_release(&b);
        b = (struct sl_buf)SL_BUF_INIT;
    }
    if (rc || !write) {
        free(eos_own);
        return rc;
    }
    sl_buf_puts(&b, "{\n");
    json_member(&b, "tokenizer_class", cls, 0);
    json_member(&b, "bos_token", bos_s, 0);
    json_member(&b, "eos_token", eos_s, 0);
    json_member(&b, "unk_token", unk_s, 0);
    json_member(&b, "pad_token", pad_s, 0);
    if (tok->kind == TOKENIZER_SPM)
        sl_buf_puts(&b, "  \"add_bos_token\": true,\n  \"add_eos_token\": false,\n"
                        "  \"legacy\": true,\n  \"sp_model_kwargs\": {},\n");
    else
        sl_buf_puts(&b, "  \"add_prefix_space\": false,\n");
    sl_buf_printf(&b, "  \"clean_up_tokenization_spaces\": false,\n  \"model_max_length\": %d\n}\n",
                  max_len);
    rc = write_text(out, "tokenizer_config.json", &b);
    sl_buf_release(&b);
    if (rc) {
        free(eos_own);
        return rc;
    }
    b = (struct sl_buf)SL_BUF_INIT;
    sl_buf_puts(&b, "{\n");
    json_member(&b, "bos_token", bos_s, 0);
    json_member(&b, "eos_token", eos_s, 0);
    json_member(&b, "unk_token", unk_s, !pad_s);
    if (pad_s)
        json_member(&b, "pad_token", pad_s, 1);
    sl_buf_puts(&b, "}\n");
    rc = write_text(out, "special_tokens_map.json", &b);
    sl_buf_release(&b);
    free(eos_own);
    return rc;
}

/* The options of the run (set by cmd_export) and their table. */
static struct {
    const char *out, *tok_spec;
} xo;

const struct sl_option cmd_export_options[] = {
    SL_OPT_STRING('o', "out", &xo.out, "DIR", "output directory (created)"),
    SL_OPT_STRING(0, "tokenizer", &xo.tok_spec, "SPEC",
                  "the data's tokenizer (spm:FILE, gpt2:DIR) when the checkpoint has none"),
    SL_OPT_COMMON,
    SL_OPT_END_,
};

int cmd_export(int argc, const char **argv)
{
    memset(&xo, 0, sizeof(xo));
    struct sl_strlist rest = { 0 };
    int rc = sl_parse_options(argc, argv, cmd_export_options, &rest);
    const char *out = xo.out, *tok_spec = xo.tok_spec;
    if (rc == SL_PARSE_HELP) {
        sl_usage_print(stdout, cmd_export_usage, cmd_export_options);
        sl_strlist_release(&rest);
        return 0;
    }
    if (!rc)
        rc = sl_check_format_operands(&rest, "export", "hf", "checkpoint");
    if (!rc && !out)
        rc = sl_err_set(SL_ERR_USAGE, "--out DIR is required");
    if (rc) {
        sl_strlist_release(&rest);
        return sl_usage_error(cmd_export_usage);
    }
    const char *path = rest.v[1];
    char *latest = NULL;
    char probe[4096];
    snprintf(probe, sizeof(probe), "%s/checkpoint.json", path);
    FILE *f = fopen(probe, "r");
    if (f) {
        fclose(f);
    } else if (ckpt_find_latest(path, &latest) == 0 && latest) {
        path = latest;
    }
    const char *arch = NULL;
    struct data_info di;
    struct tokenizer *tok = NULL;
    long bos = -1, eos = -1;
    struct model_config mc;
    struct ckpt_state st;
    rc = data_info_from_checkpoint(&di, path);
    if (!rc)
        rc = ckpt_read_meta(path, &mc, &st);
    const char *spec = tok_spec ? tok_spec : di.tokenizer;
    if (!rc && spec) {
        rc = tokenizer_open(&tok, spec);
        if (rc)
            sl_err_wrap(rc, "%s: ", tok_spec ? "--tokenizer" : "the checkpoint's tokenizer");
    }
    if (!rc && tok && tok->vocab_size > (uint32_t)mc.vocab_size)
        rc = sl_err_set(SL_ERR_USAGE,
                        "tokenizer '%s' has %u ids, more than the model's vocabulary (%d)", spec,
                        tok->vocab_size, mc.vocab_size);
    if (!rc && !tok)
        bos = eos = di.eod_id;
    int tok_rc = 0;
    if (!rc && tok) /* the ids first: config.json carries them */
        tok_rc = rc = write_tokenizer(tok, di.eod_id, out, mc.max_seq_len, &bos, &eos, 0);
    if (tok_rc > 0)
        rc = 0;
    if (!rc)
        rc = ckpt_export_hf(path, out, bos, eos, &arch);
    if (!rc && tok && !tok_rc)
        rc = write_tokenizer(tok, di.eod_id, out, mc.max_seq_len, &bos, &eos, 1);
    if (rc) {
        sl_error("%s", sl_err_msg());
    } else {
        sl_info("exported '%s' as %s to '%s' (bos %ld, eos %ld)", path, arch, out, bos, eos);
        if (!tok)
            sl_warn("no tokenizer recorded in '%s' (synthetic data or data without a tokenize "
                    "manifest): no tokenizer files written\nhint: --tokenizer SPEC (spm:FILE, "
                    "gpt2:DIR) names the one the data was made with",
                    path);
        else
            sl_info("tokenizer '%s' written as %s", spec,
                    tok->kind == TOKENIZER_SPM ? "tokenizer.model + tokenizer_config.json"
                    : tok->kind == TOKENIZER_GPT2
                        ? "vocab.json + merges.txt + tokenizer_config.json"
                        : "tokenizer.json + tokenizer_config.json");
    }
    tokenizer_free(tok);
    data_info_release(&di);
    free(latest);
    sl_strlist_release(&rest);
    return rc ? 1 : 0;
}
