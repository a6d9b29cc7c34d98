/* sluice import hf: a Hugging Face transformers directory -> a training checkpoint. */
#include "train/commands.h"

#include "core/alloc.h"
#include "core/atomic.h"
#include "core/buf.h"
#include "core/err.h"
#include "core/log.h"
#include "core/options.h"
#include "train/checkpoint.h"
#include "train/hf_import.h"
#include "train/model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const cmd_import_usage[] = {
    "sluice import hf DIR --out CKPT",
    "",
    "Read a Hugging Face GPT-2 (GPT2LMHeadModel) or Llama (LlamaForCausalLM) checkpoint:",
    "DIR/config.json and DIR/model.safetensors, or the shards listed in",
    "DIR/model.safetensors.index.json (F32, BF16 or F16), and write the training checkpoint",
    "CKPT/step-00000000 (fp32 weights, no optimizer state) and CKPT/model.yaml (its model",
    "section). `sluice eval`, `generate` and `export` read it; `sluice train CKPT/model.yaml",
    "train.resume=CKPT/step-00000000 ...` continues pretraining it. A tokenizer in DIR",
    "(tokenizer.model, or vocab.json + merges.txt) is recorded with it.",
    NULL,
};

/* The options of the run (set by cmd_import) and their table. */
static struct {
    const char *out;
    long pad;
} io;

const struct sl_option cmd_import_options[] = {
    SL_OPT_STRING('o', "out", &io.out, "CKPT", "checkpoint directory to write (created)"),
    SL_OPT_INTEGER(0, "make-vocab-size-divisible-by", &io.pad, "N",
                   "pad the embedding rows to a multiple of N (128, as model.*)"),
    SL_OPT_COMMON,
    SL_OPT_END_,
};

int cmd_import(int argc, const char **argv)
{
    memset(&io, 0, sizeof(io));
    io.pad = 128;
    struct sl_strlist rest = { 0 };
    int rc = sl_parse_options(argc, argv, cmd_import_options, &rest);
    const char *out = io.out;
    long pad = io.pad;
    if (rc == SL_PARSE_HELP) {
        sl_usage_print(stdout, cmd_import_usage, cmd_import_options);
        sl_strlist_release(&rest);
        return 0;
    }
    if (!rc)
        rc = sl_check_format_operands(&rest, "import", "hf", "Hugging Face directory");
    if (!rc && !out)
        rc = sl_err_set(SL_ERR_USAGE, "--out CKPT is required");
    if (!rc && (pad < 1 || pad > 65536))
        rc = sl_err_set(SL_ERR_USAGE, "--make-vocab-size-divisible-by must be in [1, 65536]");
    if (rc) {
        sl_strlist_release(&rest);
        return sl_usage_error(cmd_import_usage);
    }
    struct hf_import_info info;
    rc = hf_import(rest.v[1], out, (int)pad, &info);
    if (!rc) {
        /* the model section, for continuing pretraining */
        struct model_config mc;
        struct ckpt_state st;
        rc = ckpt_read_meta(info.step_dir, &mc, &st);
        if (!rc) {
            struct sl_buf y = SL_BUF_INIT;
            sl_buf_printf(&y,
                          "# the model of '%s' (sluice import hf)\nmodel:\n  vocab_size: %d\n"
                          "  make_vocab_size_divisible_by: %ld\n",
                          rest.v[1], mc.vocab_size, pad);
            model_config_to_yaml(&mc, &y);
            char *yp = sl_xasprintf("%s/model.yaml", out);
            rc = sl_write_file_atomic(yp, y.data, y.len);
            free(yp);
            sl_buf_release(&y);
        }
    }
    if (rc) {
        sl_error("%s", sl_err_msg());
    } else {
        sl_info("imported '%s' (%s, %d file%s%s) as '%s'", rest.v[1], info.arch, info.files,
                info.files == 1 ? "" : "s", info.unused ? ", tensors not needed were skipped" : "",
                info.step_dir);
        if (info.tokenizer)
            sl_info("tokenizer '%s' recorded", info.tokenizer);
    }
    hf_import_info_release(&info);
    sl_strlist_release(&rest);
    return rc ? 1 : 0;
}
