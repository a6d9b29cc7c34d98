/* The functions of tokenize/spm.h, tokenize/spm_train.h and curate/filter/langid.h for the
 * sluice binary: they forward to the parts of sluice written against C++ libraries
 * (SentencePiece, fastText, CLD2), built into libsluice-cxx.so beside the binary (or the
 * file named by SLUICE_CXX_LIB) and loaded on first use. Linked into the binary, those
 * libraries and the C++ runtime were loaded by every command at start-up, though only
 * SentencePiece models, language identification and classifiers use them. Every other
 * program (the tests, the benchmarks) links the C++ code itself, from libsluice.a. */
#include "core/dl.h"
#include "core/err.h"
#include "curate/filter/langid.h"
#include "tokenize/spm.h"
#include "tokenize/spm_train.h"

#include <limits.h>
#include <stdio.h>

static struct {
    void *lib;
    int (*spm_load_mem_engine)(struct spm **, const void *, size_t, const char *, enum spm_engine);
    int (*spm_load_mem)(struct spm **, const void *, size_t, const char *);
    int (*spm_load)(struct spm **, const char *);
    int (*spm_load_engine)(struct spm **, const char *, enum spm_engine);
    void (*spm_free)(struct spm *);
    int (*spm_encode)(const struct spm *, const char *, size_t, struct tok_ids *);
    int (*spm_decode)(const struct spm *, const uint32_t *, size_t, struct sl_buf *);
    uint32_t (*spm_vocab_size)(const struct spm *);
    int64_t (*spm_piece_to_id)(const struct spm *, const char *);
    const char *(*spm_id_to_piece)(const struct spm *, uint32_t);
    int64_t (*spm_bos_id)(const struct spm *);
    int64_t (*spm_eos_id)(const struct spm *);
    int64_t (*spm_pad_id)(const struct spm *);
    int64_t (*spm_unk_id)(const struct spm *);
    const char *(*spm_model_type)(const struct spm *);
    const char *(*spm_engine_name)(const struct spm *);
    int (*spm_tokenizer_json)(const struct spm *, struct sl_buf *);
    int (*spm_train_sentences)(const char *const *, size_t, const char *const *, size_t,
                               const char *);
    int (*sl_cld2_detect)(const char *, size_t, char[16], double *);
    int (*sl_fasttext_load)(struct sl_fasttext **, const char *);
    void (*sl_fasttext_free)(struct sl_fasttext *);
    int (*sl_fasttext_predict)(const struct sl_fasttext *, const char *, size_t, int,
                               char (*)[64], double *, int *);
    int (*sl_fasttext_prob)(const struct sl_fasttext *, const char *, size_t, const char *,
                            double *);
    int (*sl_fasttext_train)(const struct sl_fasttext_train_opts *);
} cx;

static struct sl_dl_once once = SL_DL_ONCE_INIT;

/* A row of load's table: each field of cx is the function of the same name. */
/* clang-format off */
#define SYM(f) { #f, (void **)&cx.f }
/* clang-format on */

/* Load the library once (safe from any thread): 0, or SL_ERR_UNSUPPORTED with the reason. */
static int load(void)
{
    if (__atomic_load_n(&cx.lib, __ATOMIC_ACQUIRE))
        return 0; /* (without looking for the file again) */
    char path[PATH_MAX];
    if (sl_dl_beside_binary(path, sizeof(path), "libsluice-cxx.so", "SLUICE_CXX_LIB"))
        return sl_err_set(SL_ERR_UNSUPPORTED, "%s", path);
    const char *const names[] = { path };
    const struct sl_dl_sym syms[] = {
        SYM(spm_load_mem_engine), SYM(spm_load_mem),     SYM(spm_load),
        SYM(spm_load_engine),     SYM(spm_free),         SYM(spm_encode),
        SYM(spm_decode),          SYM(spm_vocab_size),   SYM(spm_piece_to_id),
        SYM(spm_id_to_piece),     SYM(spm_bos_id),       SYM(spm_eos_id),
        SYM(spm_pad_id),          SYM(spm_unk_id),       SYM(spm_model_type),
        SYM(spm_engine_name),     SYM(spm_train_sentences), SYM(sl_cld2_detect),
        SYM(sl_fasttext_load),    SYM(sl_fasttext_free), SYM(sl_fasttext_predict),
        SYM(sl_fasttext_prob),    SYM(sl_fasttext_train), SYM(spm_tokenizer_json),
    };
    return sl_dl_load_once(&once, &cx.lib, names, 1, syms, sizeof(syms) / sizeof(syms[0]),
                           "SentencePiece, fastText and CLD2 need sluice's library "
                           "libsluice-cxx.so (built by make beside the binary)",
                           SL_ERR_UNSUPPORTED);
}
#undef SYM

/* Functions that create or train: they load the library. The others take what these made,
 * so the library is there. */
int spm_load_mem_engine(struct spm **out, const void *data, size_t n, const char *name,
                        enum spm_engine engine)
{
    *out = NULL;
    return load() ? SL_ERR_UNSUPPORTED : cx.spm_load_mem_engine(out, data, n, name, engine);
}

int spm_load_mem(struct spm **out, const void *data, size_t n, const char *name)
{
    *out = NULL;
    return load() ? SL_ERR_UNSUPPORTED : cx.spm_load_mem(out, data, n, name);
}

int spm_load(struct spm **out, const char *path)
{
    *out = NULL;
    return load() ? SL_ERR_UNSUPPORTED : cx.spm_load(out, path);
}

int spm_load_engine(struct spm **out, const char *path, enum spm_engine engine)
{
    *out = NULL;
    return load() ? SL_ERR_UNSUPPORTED : cx.spm_load_engine(out, path, engine);
}

int spm_train_sentences(const char *const *sentences, size_t n, const char *const *args,
                        size_t nargs, const char *model_prefix)
{
    return load() ? SL_ERR_UNSUPPORTED
                  : cx.spm_train_sentences(sentences, n, args, nargs, model_prefix);
}

int sl_cld2_detect(const char *text, size_t n, char code[16], double *score)
{
    return load() ? SL_ERR_UNSUPPORTED : cx.sl_cld2_detect(text, n, code, score);
}

int sl_fasttext_load(struct sl_fasttext **out, const char *path)
{
    *out = NULL;
    return load() ? SL_ERR_UNSUPPORTED : cx.sl_fasttext_load(out, path);
}

int sl_fasttext_train(const struct sl_fasttext_train_opts *o)
{
    return load() ? SL_ERR_UNSUPPORTED : cx.sl_fasttext_train(o);
}

void spm_free(struct spm *s)
{
    if (s)
        cx.spm_free(s);
}

int spm_encode(const struct spm *s, const char *text, size_t n, struct tok_ids *out)
{
    return cx.spm_encode(s, text, n, out);
}

int spm_decode(const struct spm *s, const uint32_t *ids, size_t n, struct sl_buf *out)
{
    return cx.spm_decode(s, ids, n, out);
}

uint32_t spm_vocab_size(const struct spm *s)
{
    return cx.spm_vocab_size(s);
}

int64_t spm_piece_to_id(const struct spm *s, const char *piece)
{
    return cx.spm_piece_to_id(s, piece);
}

const char *spm_id_to_piece(const struct spm *s, uint32_t id)
{
    return cx.spm_id_to_piece(s, id);
}

int64_t spm_bos_id(const struct spm *s)
{
    return cx.spm_bos_id(s);
}

int64_t spm_eos_id(const struct spm *s)
{
    return cx.spm_eos_id(s);
}

int64_t spm_pad_id(const struct spm *s)
{
    return cx.spm_pad_id(s);
}

int64_t spm_unk_id(const struct spm *s)
{
    return cx.spm_unk_id(s);
}

const char *spm_model_type(const struct spm *s)
{
    return cx.spm_model_type(s);
}

const char *spm_engine_name(const struct spm *s)
{
    return cx.spm_engine_name(s);
}

int spm_tokenizer_json(const struct spm *s, struct sl_buf *out)
{
    return cx.spm_tokenizer_json(s, out);
}

void sl_fasttext_free(struct sl_fasttext *m)
{
    if (m)
        cx.sl_fasttext_free(m);
}

int sl_fasttext_predict(const struct sl_fasttext *m, const char *text, size_t n, int k,
                        char (*labels)[64], double *probs, int *got)
{
    return cx.sl_fasttext_predict(m, text, n, k, labels, probs, got);
}

int sl_fasttext_prob(const struct sl_fasttext *m, const char *text, size_t n, const char *label,
                     double *prob)
{
    return cx.sl_fasttext_prob(m, text, n, label, prob);
}
