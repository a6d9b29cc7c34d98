/* YAML configuration trees (libyaml) with command-line overrides.
 *
 * A config is a tree of struct sl_cfg nodes: maps, sequences and scalars, each with its
 * file position. Overrides "a.b.c=value" (MaxText/NeMo style) set or create a path; the
 * value is read as YAML, so "stages=[extract,clean]" gives a sequence. Getters convert
 * scalars and report type errors as "FILE:LINE: a.b.c: expected an integer, got 'x'".
 * Every node read by a getter is marked used, so a command can reject unknown keys
 * (typos) with sl_cfg_check_unused.
 */
#ifndef SL_CONFIG_H
#define SL_CONFIG_H

#include <stddef.h>
#include <stdint.h>

struct sl_buf;

enum sl_cfg_kind { SL_CFG_NULL, SL_CFG_SCALAR, SL_CFG_MAP, SL_CFG_SEQ };

struct sl_cfg {
    enum sl_cfg_kind kind;
    char *key;   /* name within the parent map, NULL otherwise */
    char *value; /* scalar text ("" for null) */
    int quoted;  /* the scalar was quoted: always a string */
    int line;    /* 1-based; 0 for nodes made by overrides */
    struct sl_cfg **items;
    size_t n, cap;
    struct sl_cfg *parent;
    int used;
    char *file; /* source name (root only; children look it up) */
};

int sl_cfg_load_file(struct sl_cfg **out, const char *path);
int sl_cfg_load_string(struct sl_cfg **out, const char *text, size_t len, const char *name);
/* An empty map (a config built from overrides only). */
struct sl_cfg *sl_cfg_new(const char *name);
void sl_cfg_free(struct sl_cfg *c);

/* Apply "a.b.c=value"; numeric segments index sequences ("filters.2.max=3"). */
int sl_cfg_override(struct sl_cfg *root, const char *assignment);

/* Node at a dotted path or NULL. Does not mark it used. */
struct sl_cfg *sl_cfg_get(struct sl_cfg *root, const char *path);
/* Child of a map by key, or item of a sequence by index. */
struct sl_cfg *sl_cfg_child(struct sl_cfg *node, const char *key);
struct sl_cfg *sl_cfg_item(struct sl_cfg *node, size_t i);

/* Typed getters: *out = def when the path is absent (or null). 0 or SL_ERR_CONFIG. */
int sl_cfg_str(struct sl_cfg *root, const char *path, const char *def, const char **out);
int sl_cfg_int(struct sl_cfg *root, const char *path, long def, long *out);
int sl_cfg_u64(struct sl_cfg *root, const char *path, uint64_t def, uint64_t *out);
int sl_cfg_double(struct sl_cfg *root, const char *path, double def, double *out);
int sl_cfg_bool(struct sl_cfg *root, const char *path, int def, int *out);
int sl_cfg_size(struct sl_cfg *root, const char *path, uint64_t def, uint64_t *out);
/* A sequence of scalars (or one scalar, or a comma-separated scalar) as strings. The
 * strings belong to the config. *n = 0 when absent. Caller frees the array. */
int sl_cfg_strs(struct sl_cfg *root, const char *path, const char ***out, size_t *n);

/* Scalar conversions of one node (for walking sequences of maps). */
int sl_cfg_node_int(struct sl_cfg *node, long *out);
int sl_cfg_node_double(struct sl_cfg *node, double *out);
int sl_cfg_node_bool(struct sl_cfg *node, int *out);

/* Mark a node and its whole subtree used (for sections handed elsewhere). */
void sl_cfg_mark_used(struct sl_cfg *node);
/* SL_ERR_CONFIG naming the first scalar or empty node below root that no getter read,
 * with the nearest known sibling as a hint. */
int sl_cfg_check_unused(struct sl_cfg *root);

/* "FILE:LINE" of a node, for messages (static buffer per thread). */
const char *sl_cfg_where(const struct sl_cfg *node);
/* Dotted path of a node ("train.optim.lr"). Caller frees. */
char *sl_cfg_path(const struct sl_cfg *node);

/* Append the tree as JSON (scalars typed as YAML 1.2 core schema would). */
int sl_cfg_to_json(const struct sl_cfg *node, struct sl_buf *out);

#endif
