/* sluice export hf: a training checkpoint -> a Hugging Face transformers directory. */
#include "train/commands.h"

#include "core/err.h"
#include "core/log.h"
#include "core/options.h"
#include "train/checkpoint.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const usage[] = {
    "sluice export hf --out DIR CHECKPOINT",
    "",
    "Write DIR/config.json and DIR/model.safetensors that transformers loads with",
    "AutoModelForCausalLM: GPT2LMHeadModel for GPT-2/GPT-3 style models, LlamaForCausalLM for",
    "Llama style ones. CHECKPOINT is a step directory (checkpoint.dir/step-NNNNNNNN) or a",
    "checkpoint directory, whose newest step is used. Weights stay fp32.",
    NULL,
};

int cmd_export(int argc, const char **argv)
{
    const char *out = NULL;
    struct sl_option options[] = {
        SL_OPT_STRING('o', "out", &out, "DIR", "output directory (created)"),
        SL_OPT_COMMON,
        SL_OPT_END_,
    };
    struct sl_strlist rest = { 0 };
    int rc = sl_parse_options(argc, argv, options, &rest);
    if (rc == SL_PARSE_HELP) {
        sl_usage_print(stdout, usage, options);
        sl_strlist_release(&rest);
        return 0;
    }
    if (!rc && (rest.n < 1 || strcmp(rest.v[0], "hf") != 0))
        rc = sl_err_set(SL_ERR_USAGE, "unknown export format%s%s\nhint: the format is 'hf'",
                        rest.n ? " " : "", rest.n ? rest.v[0] : "");
    if (!rc && rest.n != 2)
        rc = sl_err_set(SL_ERR_USAGE, "give exactly one checkpoint");
    if (!rc && !out)
        rc = sl_err_set(SL_ERR_USAGE, "--out DIR is required");
    if (rc) {
        sl_error("%s", sl_err_msg());
        fprintf(stderr, "usage: %s\n", usage[0]);
        sl_strlist_release(&rest);
        return 2;
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
    rc = ckpt_export_hf(path, out, &arch);
    if (rc) {
        sl_error("%s", sl_err_msg());
    } else {
        sl_info("exported '%s' as %s to '%s'", path, arch, out);
    }
    free(latest);
    sl_strlist_release(&rest);
    return rc ? 1 : 0;
}
