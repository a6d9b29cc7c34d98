/* Hugging Face transformers checkpoints -> training checkpoints: the inverse of
 * ckpt_export_hf. Reads DIR/config.json (model_type gpt2 or llama) and DIR/model.safetensors
 * or the shards named by DIR/model.safetensors.index.json (F32, BF16 or F16), maps the
 * tensors onto the parameter table of train/model.h and writes OUT/step-00000000 (weights
 * only; a run that resumes from it starts with zero AdamW moments). Names and layouts:
 * docs/formats/checkpoint.md#hugging-face-export.
 */
#ifndef SL_TRAIN_HF_IMPORT_H
#define SL_TRAIN_HF_IMPORT_H

struct hf_import_info {
    const char *arch; /* "GPT2LMHeadModel", "LlamaForCausalLM" */
    int files;        /* safetensors files read */
    int unused;       /* tensors of the files that were not needed (buffers such as attn.bias) */
    char *tokenizer;  /* "spm:DIR/tokenizer.model", "gpt2:DIR" or "hf:DIR/tokenizer.json" when
                       * DIR has one, or NULL */
    char *step_dir;   /* OUT/step-00000000 */
};

/* Errors name the file and the tensor: a missing tensor, a shape that does not fit
 * config.json, an unsupported dtype or model (another model_type, head_dim other than
 * hidden/heads, attention_bias != mlp_bias, rope_scaling other than llama3).
 * pad_to: make_vocab_size_divisible_by (128). */
int hf_import(const char *dir, const char *out, int pad_to, struct hf_import_info *info);
void hf_import_info_release(struct hf_import_info *info);

#endif
