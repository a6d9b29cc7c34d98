/* struct sl_filter_chain: the filters of a YAML config, in order, and how one document
 * goes through them.
 *
 *   language: en          # default document language (the `lang` member wins)
 *   lang_key: lang
 *   filters:
 *     - gopher_repetition            # a kind with its defaults
 *     - gopher_quality:              # a kind with parameters
 *         min_doc_words: 50
 *     - filter: regex                # or `filter:` + an optional `name:` label
 *       name: no-lorem
 *       patterns: ["(?i)lorem ipsum"]
 *
 * Unknown kinds and parameters, and values of the wrong type, are errors naming the file
 * and line. The chain owns its filters and the parsed config.
 */
#ifndef SL_FILTER_CHAIN_H
#define SL_FILTER_CHAIN_H

#include <stddef.h>

#include "curate/filter/filter.h"

struct sl_buf;
struct sl_doc;

struct sl_filter_chain {
    struct sl_filter *f;
    size_t n;
    struct sl_filter_env env;
    struct sl_words *words;
    struct sl_cfg *cfg;
    char *config_dir;
    int needs_lang; /* some filter reads the document language */
};

/* Load a config file with "a.b=v" overrides applied. On failure *out is NULL. */
int sl_filter_chain_load(struct sl_filter_chain **out, const char *path,
                         char *const *overrides, size_t noverrides);
/* The same from YAML text (tests, fuzzing). */
int sl_filter_chain_load_string(struct sl_filter_chain **out, const char *yaml, size_t len,
                                const char *name);
void sl_filter_chain_free(struct sl_filter_chain *c);

/* The config as JSON (for the plan and manifest). */
int sl_filter_chain_settings(const struct sl_filter_chain *c, struct sl_buf *out);

/* Run one document (text, language) through the filters. With `all` set, every filter
 * runs even after a drop (annotation); otherwise the chain stops at the first drop.
 * res[i] receives filter i's result (res has c->n entries; filters not run get keep=1,
 * reason NULL and score NAN). Returns the index of the first filter that dropped the
 * document, -1 if kept, or < -1 on an error (-2 - code is not used: the error is set and
 * the function returns -2). */
long sl_filter_chain_run(struct sl_filter_chain *c, struct sl_fctx *ctx, int all,
                         struct sl_filter_result *res);

/* sl_filter_chain_run over document doc: its text, and its language from the member
 * env.lang_key when that is a string of 1 to 15 bytes (lang: scratch, the caller's).
 * *version: ctx->version of the unedited text (a filter that edits it changes it). */
long sl_filter_chain_run_doc(struct sl_filter_chain *c, struct sl_fctx *ctx, struct sl_doc *doc,
                             struct sl_buf *lang, int all, struct sl_filter_result *res,
                             unsigned *version);

#endif
