/* The Hugging Face export of a checkpoint: config.json, generation_config.json and
 * model.safetensors that transformers loads (GPT2LMHeadModel or LlamaForCausalLM). */
#include "train/checkpoint.h"
#include "train/checkpoint_impl.h"

#include "tokenize/tokenizer.h"

#include "core/alloc.h"
#include "core/atomic.h"
#include "core/buf.h"
#include "core/err.h"
#include "core/file.h"
#include "core/progress.h"
#include "core/stream.h"
#include "train/safetensors.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>



struct hf_out {
    struct st_tensor *t;
    char **names;
    float **bufs;
    size_t n, cap;
};

/* Add a tensor [rows, cols] built from src (row-major [rows, cols], or the transpose of a
 * row-major [cols, rows] matrix when transpose is set). */
static void hf_add(struct hf_out *o, const char *name, const float *src, int64_t rows, int64_t cols,
                   int transpose, int ndim)
{
    if (o->n == o->cap) {
        o->cap = o->cap ? o->cap * 2 : 64;
        o->t = sl_xrealloc(o->t, o->cap * sizeof(*o->t));
        o->names = sl_xrealloc(o->names, o->cap * sizeof(char *));
        o->bufs = sl_xrealloc(o->bufs, o->cap * sizeof(float *));
    }
    size_t cnt = (size_t)rows * (size_t)cols;
    float *b = sl_xmalloc(cnt * sizeof(float) + 1);
    if (transpose) {
        for (int64_t r = 0; r < rows; r++)
            for (int64_t c = 0; c < cols; c++)
                b[r * cols + c] = src[c * rows + r];
    } else {
        memcpy(b, src, cnt * sizeof(float));
    }
    struct st_tensor *t = &o->t[o->n];
    memset(t, 0, sizeof(*t));
    o->names[o->n] = sl_xstrdup(name);
    o->bufs[o->n] = b;
    t->name = o->names[o->n];
    t->dtype = "F32";
    t->ndim = ndim;
    t->shape[0] = rows;
    t->shape[1] = cols;
    t->data = b;
    t->nbytes = cnt * sizeof(float);
    o->n++;
}

static void hf_release(struct hf_out *o)
{
    for (size_t i = 0; i < o->n; i++) {
        free(o->names[i]);
        free(o->bufs[i]);
    }
    free(o->t);
    free(o->names);
    free(o->bufs);
}

/* 0, or SL_ERR_FORMAT when a tensor of p holds a NaN or infinity: a diverged run's weights
 * would load in transformers and give NaN logits, so they are refused before anything is
 * written. */
static int hf_check_finite(const char *path, const struct model_layout *l, const float *p)
{
    int rc = 0;
    for (int i = 0; i < l->n && !rc; i++) {
        const float *w = p + l->t[i].offset;
        size_t bad = 0, first = 0;
        for (size_t k = 0; k < l->t[i].numel; k++)
            if (!isfinite(w[k]) && !bad++)
                first = k;
        if (bad)
            rc = sl_err_set(SL_ERR_FORMAT,
                            "cannot export '%s': tensor '%s' has %zu non-finite values (the first "
                            "at element %zu)\nhint: the run diverged; export an earlier "
                            "checkpoint",
                            path, l->t[i].name, bad, first);
    }
    return rc;
}

/* A tensor of a class's map (model_hf_gpt2_each, model_hf_llama_each) into o, in the
 * layout transformers stores. */
static int hf_add_tensor(void *ctx, const char *name, float *data, int64_t rows, int64_t cols,
                         int nd, int transposed)
{
    if (transposed)
        hf_add(ctx, name, data, cols, rows, 1, nd);
    else
        hf_add(ctx, name, data, rows, cols, 0, nd);
    return 0;
}

/* OUT/model.safetensors: the model's tensors under transformers' names. */
static int hf_write_weights(const char *out_dir, int gpt2, const struct model_config *c,
                            const struct model_layout *l, const float *p)
{
    struct hf_out o = { 0 };
    if (gpt2)
        model_hf_gpt2_each(c, l, (float *)p, hf_add_tensor, &o);
    else
        model_hf_llama_each(c, l, (float *)p, hf_add_tensor, &o);
    char *sp = sl_xasprintf("%s/model.safetensors", out_dir);
    const char *meta[] = { "format", "pt", NULL };
    int rc = st_write(sp, o.t, o.n, meta);
    free(sp);
    hf_release(&o);
    return rc;
}

/* config.json of GPT2LMHeadModel or LlamaForCausalLM into j (bos, eos: an id or null). */
static void hf_config_json(struct sl_buf *j, int gpt2, const struct model_config *c,
                           const char *bos, const char *eos)
{
    if (gpt2) {
        sl_buf_printf(
            j,
            "{\n  \"architectures\": [\"GPT2LMHeadModel\"],\n  \"model_type\": \"gpt2\",\n"
            "  \"vocab_size\": %d,\n  \"n_positions\": %d,\n  \"n_ctx\": %d,\n"
            "  \"n_embd\": %d,\n  \"n_layer\": %d,\n  \"n_head\": %d,\n  \"n_inner\": %d,\n"
            "  \"activation_function\": \"%s\",\n  \"layer_norm_epsilon\": %.9g,\n"
            "  \"initializer_range\": %.9g,\n  \"resid_pdrop\": 0.0,\n  \"embd_pdrop\": 0.0,\n"
            "  \"attn_pdrop\": 0.0,\n  \"scale_attn_weights\": true,\n"
            "  \"tie_word_embeddings\": %s,\n  \"bos_token_id\": %s,\n  \"eos_token_id\": %s,\n"
            "  \"torch_dtype\": \"float32\"\n}\n",
            c->vocab_size, c->max_seq_len, c->max_seq_len, c->d_model, c->n_layers, c->n_heads,
            c->d_ff, c->act == MODEL_GELU_TANH ? "gelu_new" : "gelu", (double)c->norm_eps,
            (double)c->init_std, c->tied_embeddings ? "true" : "false", bos, eos);
        return;
    }
    sl_buf_printf(j,
                  "{\n  \"architectures\": [\"LlamaForCausalLM\"],\n  \"model_type\": \"llama\",\n"
                  "  \"vocab_size\": %d,\n  \"hidden_size\": %d,\n  \"intermediate_size\": %d,\n"
                  "  \"num_hidden_layers\": %d,\n  \"num_attention_heads\": %d,\n"
                  "  \"num_key_value_heads\": %d,\n  \"head_dim\": %d,\n"
                  "  \"max_position_embeddings\": %d,\n  \"rms_norm_eps\": %.9g,\n"
                  "  \"rope_theta\": %.17g,\n  \"hidden_act\": \"silu\",\n"
                  "  \"attention_bias\": %s,\n  \"mlp_bias\": %s,\n  \"tie_word_embeddings\": %s,\n"
                  "  \"initializer_range\": %.9g,\n  \"torch_dtype\": \"float32\",\n"
                  "  \"bos_token_id\": %s,\n  \"eos_token_id\": %s,\n",
                  c->vocab_size, c->d_model, c->d_ff, c->n_layers, c->n_heads, c->n_kv_heads,
                  c->head_dim, c->max_seq_len, (double)c->norm_eps, c->rope_theta,
                  c->bias ? "true" : "false", c->bias ? "true" : "false",
                  c->tied_embeddings ? "true" : "false", (double)c->init_std, bos, eos);
    if (c->rope_factor > 0)
        sl_buf_printf(j,
                      "  \"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": %.17g, "
                      "\"low_freq_factor\": %.17g, \"high_freq_factor\": %.17g, "
                      "\"original_max_position_embeddings\": %d}\n}\n",
                      c->rope_factor, c->rope_low_freq_factor, c->rope_high_freq_factor,
                      c->rope_original_max_pos);
    else
        sl_buf_puts(j, "  \"rope_scaling\": null\n}\n");
}

/* OUT/config.json, and OUT/generation_config.json: what transformers' generate() reads,
 * the special ids (greedy settings are its defaults). */
static int hf_write_configs(const char *out_dir, int gpt2, const struct model_config *c,
                            long bos_id, long eos_id)
{
    char bos[24] = "null", eos[24] = "null";
    if (bos_id >= 0 && bos_id < c->vocab_size)
        snprintf(bos, sizeof(bos), "%ld", bos_id);
    if (eos_id >= 0 && eos_id < c->vocab_size)
        snprintf(eos, sizeof(eos), "%ld", eos_id);
    struct sl_buf j = SL_BUF_INIT;
    hf_config_json(&j, gpt2, c, bos, eos);
    char *cp = sl_xasprintf("%s/config.json", out_dir);
    int rc = sl_write_file_atomic(cp, j.data, j.len);
    free(cp);
    sl_buf_release(&j);
    if (rc)
        return rc;
    j = (struct sl_buf)SL_BUF_INIT;
    sl_buf_printf(&j,
                  "{\n  \"_from_model_config\": true,\n  \"bos_token_id\": %s,\n"
                  "  \"eos_token_id\": %s,\n  \"max_length\": %d\n}\n",
                  bos, eos, c->max_seq_len);
    cp = sl_xasprintf("%s/generation_config.json", out_dir);
    rc = sl_write_file_atomic(cp, j.data, j.len);
    free(cp);
    sl_buf_release(&j);
    return rc;
}

int ckpt_export_hf(const char *path, const char *out_dir, long bos_id, long eos_id,
                   const char **arch)
{
    struct model_config c;
    struct ckpt_state st;
    int rc = ckpt_read_meta(path, &c, &st);
    if (rc)
        return rc;
    int gpt2 = c.pos == MODEL_POS_LEARNED && c.norm == MODEL_LAYERNORM && c.act != MODEL_SWIGLU &&
               c.bias && c.n_kv_heads == c.n_heads;
    int llama = c.pos == MODEL_POS_ROPE && c.norm == MODEL_RMSNORM && c.act == MODEL_SWIGLU;
    if (!gpt2 && !llama)
        return sl_err_set(SL_ERR_UNSUPPORTED,
                          "cannot export '%s': no transformers class has this mix (%s, %s, %s, "
                          "bias %s)\nhint: GPT2LMHeadModel needs learned positions, LayerNorm, "
                          "GELU and biases; LlamaForCausalLM needs RoPE, RMSNorm and SwiGLU",
                          path, model_pos_name(c.pos), model_norm_name(c.norm),
                          model_act_name(c.act), c.bias ? "on" : "off");
    *arch = gpt2 ? "GPT2LMHeadModel" : "LlamaForCausalLM";
    struct model_layout l;
    model_layout_init(&l, &c);
    float *p = sl_xcalloc(l.total, sizeof(float));
    rc = ckpt_load(path, &l, p, NULL, NULL);
    if (!rc)
        rc = hf_check_finite(path, &l, p);
    if (!rc)
        rc = sl_mkdir_p(out_dir);
    if (!rc)
        rc = hf_write_weights(out_dir, gpt2, &c, &l, p);
    if (!rc)
        rc = hf_write_configs(out_dir, gpt2, &c, bos_id, eos_id);
    free(p);
    model_layout_release(&l);
    return rc;
}
