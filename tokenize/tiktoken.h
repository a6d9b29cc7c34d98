/* The tiktoken encodings sluice knows, one row each in one table (tiktoken.c): a family's
 * name, the file names that name it, the number of ranks its file holds, its pattern (the
 * pre-tokenizer), its special tokens and its end-of-document token. A rank file is told by
 * its name (r50k/gpt2, p50k, cl100k, o200k), else by its number of ranks (Meta's files have
 * no name of their own: 128,000 ranks are Llama 3's, 200,000 Llama 4's). The loader
 * (bpe_load_tiktoken), the end-of-document token of a byte-level BPE (tokenizer_open) and
 * the table in docs/tokenizers.md (checked by tests/unit/test_tiktoken.c) read it. */
#ifndef SL_TOKENIZE_TIKTOKEN_H
#define SL_TOKENIZE_TIKTOKEN_H

#include <stddef.h>
#include <stdint.h>

#include "tokenize/pretok.h"

/* A special token and its id; a list ends with { NULL, 0 }. */
struct tiktoken_special {
    const char *name;
    uint32_t id;
};

/* Special tokens named in order with ids from the first after the ranks on: a name, or a
 * run { FORMAT, from, to } that names FORMAT's %d from..to (to < 0: FORMAT is the name).
 * A list ends with a NULL fmt. */
struct tiktoken_names {
    const char *fmt;
    int from, to;
};

struct tiktoken_family {
    const char *name;              /* "cl100k_base" */
    const char *const *file_names; /* substrings of a file's base name that name it; NULL-ended */
    size_t ranks;                  /* the ranks of its file */
    enum pretok_kind pattern;
    const struct tiktoken_special *special; /* ids of their own (OpenAI's), or NULL */
    const struct tiktoken_names *after;     /* or: the ids after the ranks (Meta's) */
    const char *eod;                        /* the end-of-document token */
};

/* The table, n_families rows (the order in which a file name is matched). */
extern const struct tiktoken_family tiktoken_families[];
extern const size_t tiktoken_n_families;

/* The family a rank file's name names (its base name holds one of file_names), or NULL. */
const struct tiktoken_family *tiktoken_family_by_file(const char *path);
/* The family whose file holds n ranks, or NULL. */
const struct tiktoken_family *tiktoken_family_by_ranks(size_t n);
/* The first family with this pattern and special tokens of its own: the special tokens of a
 * rank file whose pattern is given (OpenAI's encoding of that pattern). Never NULL. */
const struct tiktoken_family *tiktoken_family_of_pattern(enum pretok_kind k);

/* The families' end-of-document tokens, each once, in the table's order ("<|endoftext|>",
 * "<|end_of_text|>"): the i-th from 0, NULL past the last. */
const char *tiktoken_eod_token(size_t i);

/* The special tokens of a family with ids after `first` (f->after), as a fresh list whose
 * names are fresh too: tiktoken_specials_free. */
struct tiktoken_special *tiktoken_specials_after(const struct tiktoken_family *f, uint32_t first);
void tiktoken_specials_free(struct tiktoken_special *sp);

#endif
