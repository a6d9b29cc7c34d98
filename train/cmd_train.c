/* sluice train: CONFIG.yaml and its key=value overrides into a config tree for the
 * trainer's driver (train/train_run.h: train_run; the keys: train/train_config.h).
 */
#include "train/commands.h"

#include "core/alloc.h"
#include "core/config.h"
#include "core/err.h"
#include "core/log.h"
#include "core/options.h"
#include "train/train_run.h"

#include <stdlib.h>
#include <string.h>

const char *const cmd_train_usage[] = {
    "sluice train CONFIG.yaml [key=value ...]",
    "",
    "Train a GPT- or Llama-style model (configs/models/*.yaml) on .bin/.idx prefixes",
    "(data.prefix, Megatron syntax: \"0.3 PREFIX_A 0.7 PREFIX_B\") or on synthetic tokens",
    "(data=synthetic). Overrides use dotted keys: train.steps=200 optim.lr=3e-4.",
    "train.device=auto (default) trains on the GPU when this build has CUDA and one is",
    "present, else on the CPU reference path (OpenMP; MPI ranks are data parallel).",
    "See docs/trainer.md for every key.",
    NULL,
};

struct opts {
    const char *tb;
    int print_only;
};

/* The options' table (the dispatcher's parser and -h). */
#define SL_OPT_STRUCT struct opts
const struct sl_option cmd_train_options[] = {
    SL_OPT_FLAG_(0, "print-config", print_only,
                 "print the resolved configuration (defaults and values from the data "
                 "included) as YAML and exit"),
    SL_OPT_STRING(0, "tensorboard", tb, "DIR",
                  "TensorBoard events and loss.svg in DIR (log.tensorboard_dir)"),
    SL_OPT_COMMON,
    SL_OPT_END_,
};

/* CONFIG.yaml and its key=value overrides: a config that does not load fails before the
 * overrides are looked at (exit 2), a bad override is a usage error. */
static int run(const void *opts, const struct sl_strlist *rest, int argc, const char **argv)
{
    const struct opts *o = opts;
    struct sl_cfg *root = NULL;
    size_t first = 0;
    int rc = 0;
    if (rest->n && !strchr(rest->v[0], '=')) {
        first = 1;
        if (sl_cfg_load_file(&root, rest->v[0])) {
            sl_error("%s", sl_err_msg());
            return 2;
        }
    }
    if (!root)
        rc = sl_err_set(SL_ERR_USAGE, "no config given");
    for (size_t i = first; !rc && i < rest->n; i++) {
        if (!strchr(rest->v[i], '='))
            rc = sl_err_set(SL_ERR_USAGE, "'%s' is not a key=value override", rest->v[i]);
        else
            rc = sl_cfg_override(root, rest->v[i]);
    }
    if (!rc && o->tb) {
        char *kv = sl_xasprintf("log.tensorboard_dir=%s", o->tb);
        rc = sl_cfg_override(root, kv);
        free(kv);
    }
    if (!rc)
        rc = train_run(root, o->print_only);
    else
        rc = sl_usage_error(cmd_train_usage);
    sl_cfg_free(root);
    return rc;
}

const struct sl_cmd cmd_train = SL_CMD(cmd_train_usage, cmd_train_options, struct opts, NULL, run);
