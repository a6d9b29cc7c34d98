/* What the tools learn about token shards from the files beside them: the tokenize manifest
 * (PREFIX.manifest.json, written by `sluice tokenize`) of every prefix of a data.prefix
 * value gives the tokenizer (spec, kind, vocabulary size, end-of-document id). The prefixes
 * of one run must share one tokenizer. The facts are recorded in checkpoint.json ("data":
 * {...}) so that export, generate and eval find the tokenizer and the data from any
 * directory.
 */
#ifndef SL_DATASET_DATAINFO_H
#define SL_DATASET_DATAINFO_H

struct sl_buf;

struct data_info {
    char *prefix_abs; /* data.prefix with every path made absolute (Megatron syntax) */
    char *manifest;   /* the first manifest found (absolute), or NULL */
    char *tokenizer;  /* tokenizer spec with its path absolute ("spm:/x/m.model"), or NULL */
    char *kind;       /* "gpt2", "tiktoken", "spm", or NULL */
    long vocab_size;  /* the tokenizer's size, or -1 when no manifest says it */
    long eod_id;      /* the end-of-document id the data holds, or -1 */
    int manifests;    /* prefixes with a manifest */
};

/* The manifest of a prefix: PREFIX_<key>_document -> PREFIX.manifest.json, else
 * PREFIX.manifest.json. A fresh string, or NULL when there is none. */
char *data_info_manifest_for(const char *prefix);

/* Read the manifests of every path of a data.prefix value ("A", "0.3 A 0.7 B", "A B").
 * Prefixes made with different tokenizers are SL_ERR_CONFIG naming both. Prefixes without a
 * manifest are skipped. */
int data_info_read(struct data_info *d, const char *prefix);
void data_info_release(struct data_info *d);

/* A hint for a prefix whose .bin/.idx pair is missing ("tokens/web" or "tokens/web.bin"
 * when tokenize wrote tokens/web_text_document): a fresh "\nhint: ..." string, or NULL. */
char *data_info_prefix_hint(const char *prefix);

/* Append the facts as a JSON object. */
void data_info_to_json(const struct data_info *d, struct sl_buf *out);
/* Read the "data" member of a step directory's checkpoint.json (fields absent stay
 * NULL/-1). 0 also when the checkpoint records nothing. */
int data_info_from_checkpoint(struct data_info *d, const char *step_dir);

#endif
