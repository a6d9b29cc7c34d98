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

struct opts {
    const char *out;
    long pad;
};

/* The options' table (the dispatcher's parser and -h). */
#define SL_OPT_STRUCT struct opts
const struct sl_option cmd_import_options[] = {
    SL_OPT_STRING('o', "out", out, "CKPT", "checkpoint directory to write (created)"),
    SL_OPT_INTEGER(0, "make-vocab-size-divisible-by", pad, "N",
                   "pad the embedding rows to a multiple of N (128, as model.*)", .def = "128",
                   .flags = SL_OPTF_DEF_UNSAID),
    SL_OPT_COMMON,
    SL_OPT_END_,
};

static int check(void *opts, const struct sl_strlist *rest)
{
    const struct opts *o = opts;
    int rc = sl_check_format_operands(rest, "import", "hf", "Hugging Face directory");
    if (!rc && !o->out)
        rc = sl_err_set(SL_ERR_USAGE, "--out CKPT is required");
    if (!rc && (o->pad < 1 || o->pad > 65536))
        rc = sl_err_set(SL_ERR_USAGE, "--make-vocab-size-divisible-by must be in [1, 65536]");
    return rc;
}

static int run(const void *opts, const struct sl_strlist *rest, int argc, const char **argv)
{
    const struct opts *o = opts;
    const char *dir = rest->v[1];
    struct hf_import_info info;
    int rc = hf_import(dir, o->out, (int)o->pad, &info);
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
                          dir, mc.vocab_size, o->pad);
            model_config_to_yaml(&mc, &y);
            char *yp = sl_xasprintf("%s/model.yaml", o->out);
            rc = sl_write_file_atomic(yp, y.data, y.len);
            free(yp);
            sl_buf_release(&y);
        }
    }
    if (!rc) {
        sl_info("imported '%s' (%s, %d file%s%s) as '%s'", dir, info.arch, info.files,
                info.files == 1 ? "" : "s", info.unused ? ", tensors not needed were skipped" : "",
                info.step_dir);
        if (info.tokenizer)
            sl_info("tokenizer '%s' recorded", info.tokenizer);
    }
    hf_import_info_release(&info);
    return rc;
}

const struct sl_cmd cmd_import =
    SL_CMD(cmd_import_usage, cmd_import_options, struct opts, check, run);
