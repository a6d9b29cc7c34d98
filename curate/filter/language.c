/* language, classifier and stop_words filters: language ID (CLD2 by default, fastText
 * lid.176 / GlotLID with a model path) writing `lang` and `lang_score`; a fastText quality
 * classifier kept by threshold or by NeMo's Pareto sampling; and a stop-word count in the
 * document's language (docs/filters.md). */
#include "core/alloc.h"
#include "core/config.h"
#include "core/doc.h"
#include "core/err.h"
#include "core/hash.h"
#include "core/rng.h"
#include "curate/filter/filter.h"
#include "curate/filter/langid.h"
#include "curate/filter/lexicons.h"
#include "curate/filter/strset.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *resolve(const struct sl_filter_env *env, const char *path)
{
    if (path[0] == '/' || !env->config_dir)
        return sl_xstrdup(path);
    FILE *f = fopen(path, "rb"); /* relative to the working directory first */
    if (f) {
        fclose(f);
        return sl_xstrdup(path);
    }
    return sl_xasprintf("%s/%s", env->config_dir, path);
}

/* ---- language -------------------------------------------------------------------------- */

struct lf {
    struct sl_fasttext *ft;
    struct sl_strset keep;
    double threshold;
    const char *lang_key, *score_key;
    int write;
};

static int lf_apply(struct sl_filter *f, struct sl_fctx *c, struct sl_filter_result *r)
{
    struct lf *l = f->state;
    char code[64] = "un";
    double s = 0;
    int rc;
    if (l->ft) {
        char labels[1][64];
        double probs[1];
        int got = 0;
        rc = sl_fasttext_predict(l->ft, c->text, c->len, 1, labels, probs, &got);
        if (!rc && got) {
            snprintf(code, sizeof(code), "%s", labels[0]);
            s = probs[0];
        }
    } else {
        char c16[16];
        rc = sl_cld2_detect(c->text, c->len, c16, &s);
        snprintf(code, sizeof(code), "%s", c16);
    }
    if (rc)
        return rc;
    snprintf(c->lang, sizeof(c->lang), "%s", code);
    if (l->write && c->doc) {
        sl_doc_set_str(c->doc, l->lang_key, code, strlen(code));
        sl_doc_set_double(c->doc, l->score_key, round(s * 10000) / 10000);
    }
    if (l->keep.n && !sl_strset_has(&l->keep, code, strlen(code)))
        return sl_filter_drop(r, "language", s);
    if (s < l->threshold)
        return sl_filter_drop(r, "language_score", s);
    r->score = s;
    r->keep = 1;
    return 0;
}

static void lf_release(struct sl_filter *f)
{
    struct lf *l = f->state;
    if (!l)
        return;
    sl_fasttext_free(l->ft);
    sl_strset_release(&l->keep);
    free(l);
}

int sl_filter_build_language(struct sl_filter *f, struct sl_cfg *p, const struct sl_filter_env *env)
{
    struct lf *l = sl_xcalloc(1, sizeof(*l));
    f->state = l;
    f->apply = lf_apply;
    f->release = lf_release;
    sl_strset_init(&l->keep);
    const char *backend, *model;
    int rc = sl_cfg_str(p, "model", NULL, &model);
    if (!rc) rc = sl_cfg_str(p, "backend", model ? "fasttext" : "cld2", &backend);
    if (!rc && strcmp(backend, "cld2") && strcmp(backend, "fasttext"))
        rc = sl_err_set(SL_ERR_CONFIG, "%s: backend: expected cld2 or fasttext, got '%s'",
                        sl_cfg_where(sl_cfg_child(p, "backend")), backend);
    if (!rc && !strcmp(backend, "fasttext")) {
        if (!model)
            rc = sl_err_set(SL_ERR_CONFIG, "%s: the fasttext backend needs 'model' (lid.176.bin/.ftz or GlotLID)",
                            sl_cfg_where(p));
        else {
            char *path = resolve(env, model);
            rc = sl_fasttext_load(&l->ft, path);
            if (rc)
                rc = sl_err_wrap(rc, "%s: ", sl_cfg_where(sl_cfg_child(p, "model")));
            free(path);
        }
    }
    if (!rc) rc = sl_cfg_double(p, "threshold", l->ft ? 0.65 : 0.0, &l->threshold);
    if (!rc) rc = sl_cfg_str(p, "lang_key", "lang", &l->lang_key);
    if (!rc) rc = sl_cfg_str(p, "score_key", "lang_score", &l->score_key);
    if (!rc) rc = sl_cfg_bool(p, "write", 1, &l->write);
    const char **langs = NULL;
    size_t n = 0;
    if (!rc) rc = sl_cfg_strs(p, "languages", &langs, &n);
    for (size_t i = 0; i < n; i++)
        sl_strset_add(&l->keep, langs[i], strlen(langs[i]), 1);
    free(langs);
    return rc;
}

/* ---- classifier ------------------------------------------------------------------------- */

struct cf {
    struct sl_fasttext *ft;
    const char *label, *id_key, *score_key;
    double threshold, alpha;
    uint64_t seed;
    int pareto;
};

static int cf_apply(struct sl_filter *f, struct sl_fctx *c, struct sl_filter_result *r)
{
    struct cf *q = f->state;
    double p;
    int rc = sl_fasttext_prob(q->ft, c->text, c->len, q->label, &p);
    if (rc)
        return rc;
    r->score = p;
    if (q->score_key && c->doc)
        sl_doc_set_double(c->doc, q->score_key, round(p * 10000) / 10000);
    if (!q->pareto) {
        r->keep = p >= q->threshold;
    } else {
        /* keep if pareto(alpha) > 1 - p, with a draw seeded by the document id so the
         * decision does not depend on the order or rank that processes it */
        size_t idn = 0;
        const char *id = c->doc ? sl_doc_get_raw(c->doc, q->id_key, &idn) : NULL;
        struct sl_rng g;
        sl_rng_seed(&g, q->seed ^ sl_hash64(id ? id : c->text, id ? idn : c->len, 3), 0);
        double u = sl_rng_double(&g);
        double x = expm1(-log1p(-u) / q->alpha); /* Lomax(alpha): exp(E / alpha) - 1 */
        r->keep = x > 1 - p;
    }
    if (!r->keep)
        return sl_filter_drop(r, "classifier", p);
    return 0;
}

static void cf_release(struct sl_filter *f)
{
    struct cf *q = f->state;
    if (q)
        sl_fasttext_free(q->ft);
    free(q);
}

int sl_filter_build_classifier(struct sl_filter *f, struct sl_cfg *p, const struct sl_filter_env *env)
{
    struct cf *q = sl_xcalloc(1, sizeof(*q));
    f->state = q;
    f->apply = cf_apply;
    f->release = cf_release;
    const char *model, *mode;
    int rc = sl_cfg_str(p, "model", NULL, &model);
    if (!rc && !model)
        rc = sl_err_set(SL_ERR_CONFIG, "%s: classifier: 'model' is required (a fastText model, see 'sluice classifier train')",
                        sl_cfg_where(p));
    if (!rc) {
        char *path = resolve(env, model);
        rc = sl_fasttext_load(&q->ft, path);
        if (rc)
            rc = sl_err_wrap(rc, "%s: ", sl_cfg_where(sl_cfg_child(p, "model")));
        free(path);
    }
    if (!rc) rc = sl_cfg_str(p, "label", "__label__hq", &q->label);
    if (!rc) rc = sl_cfg_str(p, "mode", "threshold", &mode);
    if (!rc && strcmp(mode, "threshold") && strcmp(mode, "pareto"))
        rc = sl_err_set(SL_ERR_CONFIG, "%s: mode: expected threshold or pareto, got '%s'",
                        sl_cfg_where(sl_cfg_child(p, "mode")), mode);
    q->pareto = !rc && !strcmp(mode, "pareto");
    if (!rc) rc = sl_cfg_double(p, "threshold", 0.5, &q->threshold);
    if (!rc) rc = sl_cfg_double(p, "alpha", 3, &q->alpha);
    if (!rc) rc = sl_cfg_u64(p, "seed", 42, &q->seed);
    if (!rc) rc = sl_cfg_str(p, "id_key", "id", &q->id_key);
    if (!rc) rc = sl_cfg_str(p, "score_key", NULL, &q->score_key);
    if (!rc && q->alpha <= 0)
        rc = sl_err_set(SL_ERR_CONFIG, "%s: alpha: must be > 0", sl_cfg_where(sl_cfg_child(p, "alpha")));
    return rc;
}

/* ---- stop_words ------------------------------------------------------------------------- */

struct swl {
    char lang[16];
    struct sl_strset set;
    int have;
};

struct swf {
    long min;
    struct swl langs[32];
    size_t n;
    enum sl_words_sel words;
    struct sl_buf low;
};

static int sw_apply(struct sl_filter *f, struct sl_fctx *c, struct sl_filter_result *r)
{
    struct swf *s = f->state;
    struct swl *L = NULL;
    for (size_t i = 0; i < s->n; i++)
        if (!strcmp(s->langs[i].lang, c->lang))
            L = &s->langs[i];
    if (!L && s->n < 32) {
        L = &s->langs[s->n++];
        snprintf(L->lang, sizeof(L->lang), "%s", c->lang);
        sl_strset_init(&L->set);
        size_t len;
        char base[8];
        snprintf(base, sizeof(base), "%.2s", c->lang);
        const char *list = sl_lexicon("stopwords", base, &len);
        if (list) {
            sl_strset_add_lines(&L->set, list, len, 1, 0);
            L->have = 1;
        }
    }
    r->keep = 1;
    r->score = 0;
    if (!L || !L->have)
        return 0; /* no list for this language: not judged */
    const struct sl_wordvec *w = sl_fctx_words(c, s->words);
    struct sl_hcount *seen = &c->h1;
    sl_hcount_reset(seen, 16);
    long found = 0;
    for (size_t i = 0; i < w->n; i++) {
        const char *t = c->text + w->v[i].off;
        size_t n = w->v[i].len;
        sl_buf_reset(&s->low);
        sl_buf_append(&s->low, t, n);
        for (size_t k = 0; k < n; k++)
            if (s->low.data[k] >= 'A' && s->low.data[k] <= 'Z')
                s->low.data[k] += 32;
        const struct sl_strset_slot *e = sl_strset_find(&L->set, s->low.data, n);
        if (e && sl_hcount_add(seen, e->hash, 0)->count == 1)
            found++;
    }
    if (found < s->min)
        return sl_filter_drop(r, "stop_words", (double)found);
    r->score = (double)found;
    return 0;
}

static void sw_release(struct sl_filter *f)
{
    struct swf *s = f->state;
    if (!s)
        return;
    for (size_t i = 0; i < s->n; i++)
        sl_strset_release(&s->langs[i].set);
    sl_buf_release(&s->low);
    free(s);
}

int sl_filter_build_stop_words(struct sl_filter *f, struct sl_cfg *p, const struct sl_filter_env *env)
{
    struct swf *s = sl_xcalloc(1, sizeof(*s));
    f->state = s;
    f->apply = sw_apply;
    f->release = sw_release;
    int rc = sl_cfg_int(p, "min_stop_words", 2, &s->min);
    if (!rc) rc = sl_filter_words_param(p, SL_WSEL_AUTO, &s->words);
    (void)env;
    return rc;
}
