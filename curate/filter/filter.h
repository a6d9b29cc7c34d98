/* struct sl_filter: one named filter of a chain, and struct sl_fctx: the document being
 * filtered with its lazily computed views (lines, words) shared by the filters.
 *
 * A filter kind (gopher_quality, c4_quality, regex, ...) is a constructor that reads its
 * parameters from a YAML map (struct sl_cfg: unknown keys are reported by the chain) and
 * fills the vtable. apply() decides keep or drop for one document and reports a score (the
 * measured value of the rule that decided) and, on a drop, a reason. Filters that edit the
 * text (C4 line rules, regex line removal) call sl_fctx_set_text; later filters see the
 * edited text and the chain writes it to the output.
 *
 * Filters are built once and applied by one thread at a time; per-document scratch memory
 * lives in the struct sl_fctx (reused between documents).
 */
#ifndef SL_FILTER_FILTER_H
#define SL_FILTER_FILTER_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "curate/filter/words.h"

struct sl_cfg;
struct sl_doc;

/* What the chain hands every constructor. */
struct sl_filter_env {
    const struct sl_words *words;
    const char *default_lang; /* "en" unless the config says otherwise */
    const char *lang_key;     /* document member with the language ("lang") */
    const char *config_dir;   /* directory of the config file, for relative paths */
};

/* A growable table counting 64-bit keys (duplicate lines, n-grams). It starts small and
 * grows with the number of distinct keys, so a long but repetitive document stays cheap. */
struct sl_hcount_slot {
    uint64_t key;
    uint32_t count;
    uint32_t tag; /* caller data of the first occurrence (its position) */
};
struct sl_hcount {
    struct sl_hcount_slot *v;
    size_t cap, n;
};
/* Empty the table; `expect` (distinct keys expected, at most) sizes it. */
void sl_hcount_reset(struct sl_hcount *h, size_t expect);
/* Add one occurrence; returns the slot (count already incremented; tag set on the first). */
struct sl_hcount_slot *sl_hcount_add(struct sl_hcount *h, uint64_t key, uint32_t tag);
/* The slot of key, or NULL. */
const struct sl_hcount_slot *sl_hcount_find(const struct sl_hcount *h, uint64_t key);
void sl_hcount_release(struct sl_hcount *h);

/* A span of the text. */
struct sl_span {
    uint32_t off, len;
};
struct sl_spanvec {
    struct sl_span *v;
    size_t n, cap;
};
void sl_spanvec_push(struct sl_spanvec *v, size_t off, size_t len);

/* Views of the text that the filters of a family compute once per text and share (the
 * NeMo filters, nemo.c: non-blank lines, paragraphs, character classes, where the n-grams
 * repeat). The family that computes a view decides what its data holds. */
enum sl_fctx_view_id {
    SL_VIEW_NONBLANK_LINES,  /* struct sl_spanvec */
    SL_VIEW_PARAGRAPHS,      /* struct sl_spanvec */
    SL_VIEW_CHAR_CLASSES,    /* counts per class */
    SL_VIEW_REPEATED_NGRAMS, /* positions of repeated n-grams */
    SL_VIEW_COUNT,
};
struct sl_fctx_view {
    void *data;                  /* zeroed on first use; kept between documents */
    void (*release)(void *data); /* frees what data holds (not data itself), or NULL */
    unsigned ver;                /* the text version data holds the view of; 0: none */
};

struct sl_fctx {
    const struct sl_filter_env *env;
    struct sl_doc *doc;
    const char *text;
    size_t len;
    size_t nchar;     /* code points (Python len) */
    char lang[16];    /* the document's language, or env->default_lang */
    unsigned version; /* bumped whenever the text changes */
    struct sl_buf own[2]; /* text replacements alternate between these */
    int cur_own;
    /* cached views, valid while their version matches */
    struct sl_wordvec words[3];
    unsigned words_ver[3];
    struct sl_spanvec pylines; /* str.splitlines() */
    unsigned pylines_ver;
    uint64_t *wprefix[3]; /* sl_fctx_word_prefix, per words mode */
    size_t wprefix_cap[3];
    unsigned wprefix_ver[3];
    /* views that the filters of one family share, by id (sl_fctx_view) */
    struct sl_fctx_view views[SL_VIEW_COUNT];
    /* scratch for filters */
    struct sl_hcount h1, h2;
    struct sl_spanvec s1, s2;
    struct sl_buf b1;
};

void sl_fctx_init(struct sl_fctx *c, const struct sl_filter_env *env);
void sl_fctx_release(struct sl_fctx *c);
/* Start a document: text (not copied; must live until the next begin) and language. */
void sl_fctx_begin(struct sl_fctx *c, struct sl_doc *doc, const char *text, size_t len,
                   const char *lang);
/* Replace the text (copied). */
void sl_fctx_set_text(struct sl_fctx *c, const char *s, size_t n);
/* The view `id`: on first use its data is `size` zeroed bytes, freed with `release` by
 * sl_fctx_release. It holds the current text's view when ->ver == c->version; the caller
 * that computes it sets ->ver = c->version. */
struct sl_fctx_view *sl_fctx_view(struct sl_fctx *c, enum sl_fctx_view_id id, size_t size,
                                  void (*release)(void *data));

enum sl_words_sel { SL_WSEL_AUTO, SL_WSEL_SPACE, SL_WSEL_RULES, SL_WSEL_CHARS };
/* Words of the current text; AUTO means RULES, or CHARS for unspaced languages. */
const struct sl_wordvec *sl_fctx_words(struct sl_fctx *c, enum sl_words_sel sel);
/* Lines as Python's str.splitlines() gives them. */
const struct sl_spanvec *sl_fctx_pylines(struct sl_fctx *c);
/* Prefix polynomial hashes over the words of sl_fctx_words(c, sel): p[0] = 0 and
 * p[i + 1] = p[i] * SL_POLY_BASE + hash(word i) modulo 2^61 - 1 (core/poly61.h), so the n-gram
 * words[i:i+n] hashes to p[i + n] - p[i] * SL_POLY_BASE^n. n + 1 values; cached. */
const uint64_t *sl_fctx_word_prefix(struct sl_fctx *c, enum sl_words_sel sel);

/* A named count a filter adds to the manifest as "<filter name>_<name>". */
struct sl_filter_count {
    const char *name;
    uint64_t n;
};

struct sl_filter_result {
    int keep;
    double score;
    const char *reason; /* static string, set on a drop */
    const char *event;  /* static string: something to count whatever the decision
                           ("match_limit_errors"), as "<filter name>_<event>"; or NULL */
    const struct sl_filter_count *counts; /* added whatever the decision (pii: per kind) */
    size_t ncounts;
    const char *spans_json; /* JSON written as "<filter name>_spans" with --annotate, or NULL */
    size_t spans_len;
};

/* Drop the document for `reason` (a static string), with the score of the rule that
 * decided; returns 0, for apply(): `return sl_filter_drop(r, "too_short", n);`. */
static inline int sl_filter_drop(struct sl_filter_result *r, const char *reason, double score)
{
    r->keep = 0;
    r->reason = reason;
    r->score = score;
    return 0;
}

struct sl_filter {
    const char *kind;
    char *name; /* label in outputs and the manifest (the kind unless the config names it) */
    int (*apply)(struct sl_filter *f, struct sl_fctx *c, struct sl_filter_result *r);
    void (*release)(struct sl_filter *f);
    void *state;
    int modifies; /* may edit the text */
};

/* A filter kind. build() reads parameters from `params` (a map, or NULL for defaults) and
 * sets apply/release/state. Errors name the config file and line. */
struct sl_filter_kind {
    const char *name;
    const char *summary;
    int (*build)(struct sl_filter *f, struct sl_cfg *params, const struct sl_filter_env *env);
};

/* Every known kind, NULL-terminated by a zero entry. */
extern const struct sl_filter_kind sl_filter_kinds[];
const struct sl_filter_kind *sl_filter_kind_find(const char *name);

/* Builders of each family (gopher.c, c4.c, fineweb.c, nemo.c, regex.c, langid.c, ...). */
int sl_filter_build_gopher_quality(struct sl_filter *, struct sl_cfg *, const struct sl_filter_env *);
int sl_filter_build_gopher_repetition(struct sl_filter *, struct sl_cfg *, const struct sl_filter_env *);
int sl_filter_build_c4_quality(struct sl_filter *, struct sl_cfg *, const struct sl_filter_env *);
int sl_filter_build_c4_paragraph(struct sl_filter *, struct sl_cfg *, const struct sl_filter_env *);
int sl_filter_build_c4_badwords(struct sl_filter *, struct sl_cfg *, const struct sl_filter_env *);
int sl_filter_build_fineweb_quality(struct sl_filter *, struct sl_cfg *, const struct sl_filter_env *);
int sl_filter_build_nemo(struct sl_filter *, struct sl_cfg *, const struct sl_filter_env *);
int sl_filter_build_regex(struct sl_filter *, struct sl_cfg *, const struct sl_filter_env *);
int sl_filter_build_url(struct sl_filter *, struct sl_cfg *, const struct sl_filter_env *);
/* `url` with `rules: datatrove` (url_datatrove.c); called by sl_filter_build_url. */
int sl_filter_build_url_datatrove(struct sl_filter *, struct sl_cfg *, const struct sl_filter_env *);
int sl_filter_build_language(struct sl_filter *, struct sl_cfg *, const struct sl_filter_env *);
int sl_filter_build_classifier(struct sl_filter *, struct sl_cfg *, const struct sl_filter_env *);
int sl_filter_build_pii(struct sl_filter *, struct sl_cfg *, const struct sl_filter_env *);
int sl_filter_build_stop_words(struct sl_filter *, struct sl_cfg *, const struct sl_filter_env *);

/* Parse the common "words: auto|space|rules|chars" parameter. */
int sl_filter_words_param(struct sl_cfg *params, enum sl_words_sel def, enum sl_words_sel *out);

#endif
