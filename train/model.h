/* The decoder-only transformer: its configuration, and the parameter table that lays every
 * tensor out in one slab of floats.
 *
 * One description serves both families: GPT-2/GPT-3 (learned positions, LayerNorm with
 * bias, GELU, tied embeddings) and Llama 2/3 (RoPE with theta and Llama-3.1 scaling,
 * RMSNorm, SwiGLU, grouped-query attention, untied embeddings, no biases). The CPU
 * reference, the CUDA trainer, checkpoints and the HF export all read the same table, so
 * a tensor's name, shape and offset are defined here and nowhere else (names and layout:
 * docs/formats/checkpoint.md).
 */
#ifndef SL_TRAIN_MODEL_H
#define SL_TRAIN_MODEL_H

#include <stddef.h>
#include <stdint.h>

struct sl_cfg;

enum model_norm { MODEL_LAYERNORM, MODEL_RMSNORM };
enum model_act { MODEL_GELU, MODEL_GELU_TANH, MODEL_SWIGLU };
enum model_pos { MODEL_POS_LEARNED, MODEL_POS_ROPE };

struct model_config {
    int vocab_size;        /* real vocabulary (token ids < vocab_size) */
    int padded_vocab_size; /* rows stored for embeddings / lm_head (>= vocab_size) */
    int max_seq_len;       /* max_position_embeddings: learned positions, RoPE tables */
    int n_layers, d_model, n_heads, n_kv_heads, d_ff;
    int head_dim; /* d_model / n_heads */
    enum model_norm norm;
    enum model_act act;
    enum model_pos pos;
    int bias; /* biases on the linear layers (and on LayerNorm) */
    int tied_embeddings;
    float norm_eps;
    double rope_theta;
    /* Llama 3.1 RoPE scaling (rope_scaling.factor > 0 enables it) */
    double rope_factor, rope_low_freq_factor, rope_high_freq_factor;
    int rope_original_max_pos;
    float init_std;
};

/* What a tensor is, for weight decay and for the export. */
enum model_tensor_kind {
    MODEL_T_EMBED,   /* token embedding [padded_vocab, d] */
    MODEL_T_POS,     /* learned positions [max_seq_len, d] */
    MODEL_T_NORM_W,  /* norm gain [d] */
    MODEL_T_NORM_B,  /* LayerNorm bias [d] */
    MODEL_T_LINEAR,  /* linear weight [out, in] (PyTorch layout) */
    MODEL_T_BIAS,    /* linear bias [out] */
    MODEL_T_LM_HEAD, /* untied output projection [padded_vocab, d] */
};

#define MODEL_NAME_MAX 48

struct model_tensor {
    char name[MODEL_NAME_MAX]; /* "layers.3.attn.qkv.weight" */
    enum model_tensor_kind kind;
    int layer;        /* -1 for tensors outside the layers */
    int ndim;         /* 1 or 2 */
    int64_t shape[2]; /* rows, cols (cols = 1 for ndim 1) */
    size_t offset;    /* in floats from the slab start; a multiple of MODEL_ALIGN */
    size_t numel;
    int decay;    /* AdamW weight decay applies (2-D weights and embeddings) */
    int out_proj; /* an output projection into the residual stream (scaled init) */
};

/* Offsets are multiples of this many floats (256 bytes), so vector loads line up. */
#define MODEL_ALIGN 64

/* Per-layer tensor handles into the table (-1 when absent). */
struct model_layer_ids {
    int attn_norm_w, attn_norm_b, qkv_w, qkv_b, attn_proj_w, attn_proj_b;
    int mlp_norm_w, mlp_norm_b, fc_w, fc_b, mlp_proj_w, mlp_proj_b;
};

struct model_layout {
    struct model_tensor *t; /* the table, in slab order */
    int n;
    size_t total;  /* floats in the slab (including alignment gaps) */
    size_t params; /* parameters (sum of numel; padded vocab rows included) */
    int embed, pos, final_norm_w, final_norm_b, lm_head; /* -1 when absent */
    struct model_layer_ids *layer;                       /* n_layers entries */
    int n_layers;
};

/* Read the model section ("model.*" keys) of a config. Errors name the key and file:line;
 * inconsistent shapes (heads that do not divide d_model, kv heads that do not divide
 * heads, an odd head size with RoPE) are SL_ERR_CONFIG. */
int model_config_load(struct model_config *c, struct sl_cfg *root);
/* Check a filled-in config (what load does at its end; also for configs from checkpoints). */
int model_config_check(const struct model_config *c);

/* Width of the fused qkv projection: (n_heads + 2 * n_kv_heads) * head_dim. */
int model_qkv_dim(const struct model_config *c);
/* Rows of the first MLP projection: d_ff, or 2 * d_ff for SwiGLU (gate rows, then up). */
int model_fc_dim(const struct model_config *c);

/* Build the tensor table for c. Caller releases with model_layout_release. */
void model_layout_init(struct model_layout *l, const struct model_config *c);
void model_layout_release(struct model_layout *l);
/* Layer li's tensors: the table's [*first, *end), contiguous in the slab from
 * t[*first].offset to t[*end].offset (the final norm follows the last layer). */
void model_layer_span(const struct model_layout *l, int li, int *first, int *end);
/* The buckets of ZeRO-2 and -3: the floats of the largest layer's run of the slab, and of
 * the tensors outside the layers (embeddings, final norm, output layer), each of those
 * rounded up to MODEL_ALIGN. */
void model_layout_buckets(const struct model_layout *l, size_t *max_layer, size_t *outer);
/* Index of a tensor by name, or -1. */
int model_layout_find(const struct model_layout *l, const char *name);

/* Parameters excluding the token embedding and learned positions (and the untied head). */
uint64_t model_params_nonembed(const struct model_config *c);
/* Model FLOPs per token of one training step (forward + backward) at sequence length
 * seq_len, by the formula of docs/trainer.md. */
double model_flops_per_token(const struct model_config *c, int seq_len);

/* Fill params (the slab, l->total floats) with the initial weights: normal(0, init_std)
 * for weights and embeddings, init_std / sqrt(2 * n_layers) for the output projections
 * into the residual stream, zeros for biases and padded vocabulary rows, ones for norm
 * gains. Deterministic in seed; independent of the number of threads. */
void model_init_params(const struct model_config *c, const struct model_layout *l, float *params,
                       uint64_t seed);

/* RoPE inverse frequencies (head_dim / 2 values), with Llama 3.1 scaling when configured. */
void model_rope_inv_freq(const struct model_config *c, double *inv_freq);

/* Short names: "layernorm", "gelu_tanh", "rope", ... */
const char *model_norm_name(enum model_norm n);
const char *model_act_name(enum model_act a);
const char *model_pos_name(enum model_pos p);

/* Append the config as a JSON object ({"vocab_size":...}) / parse it back (the checkpoint
 * JSON's "model" member). */
struct sl_buf;
int model_config_to_json(const struct model_config *c, struct sl_buf *out);
int model_config_from_json(struct model_config *c, const char *json, size_t len);
/* Append the model keys after "model:\n  vocab_size: N..." as indented YAML lines (every
 * key but vocab_size, which the caller writes first), in the names of the config files. */
void model_config_to_yaml(const struct model_config *c, struct sl_buf *out);

/* The tensor maps between our parameters and transformers' state dicts, one per class, that
 * export and import share: each tensor's name there and the slice of our parameters p it
 * is. fn gets the name, the data, our shape (rows, columns: 1 for a vector), the number of
 * dimensions (1 or 2) and whether transformers stores the matrix transposed ([cols, rows]);
 * a non-zero return stops the walk and is returned. Both walk the tensors in the order of
 * the class's state dict.
 *   GPT2LMHeadModel: transformer.wte/wpe, transformer.h.N.{ln_1, attn.c_attn, attn.c_proj,
 *     ln_2, mlp.c_fc, mlp.c_proj}, transformer.ln_f, lm_head when untied; the Conv1D
 *     weights (c_attn, c_proj, c_fc) are stored transposed.
 *   LlamaForCausalLM: model.embed_tokens, model.layers.N.{input_layernorm,
 *     self_attn.{q,k,v,o}_proj, post_attention_layernorm, mlp.{gate,up,down}_proj},
 *     model.norm, lm_head when untied; our fused qkv and gate/up matrices split into their
 *     projections. */
typedef int (*model_hf_tensor_fn)(void *ctx, const char *name, float *data, int64_t rows,
                                  int64_t cols, int nd, int transposed);
int model_hf_gpt2_each(const struct model_config *c, const struct model_layout *l, float *p,
                       model_hf_tensor_fn fn, void *ctx);
int model_hf_llama_each(const struct model_config *c, const struct model_layout *l, float *p,
                        model_hf_tensor_fn fn, void *ctx);

#endif
