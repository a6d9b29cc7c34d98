/* NLTK's Punkt trainer (see tokenize/punkt_train.h), written from PunktTrainer of NLTK
 * 3.10.4: _train_tokens, _reclassify_abbrev_types, _get_orthography_data,
 * _is_rare_abbrev_type, _find_sent_starters, _find_collocations and their log-likelihoods.
 * Built with -ffp-contract=off (tokenize/build.mk): a fused multiply-add would round
 * differently from Python. */
#include "tokenize/punkt_train.h"

#include "core/alloc.h"
#include "core/buf.h"
#include "core/err.h"
#include "tokenize/punkt_map.h"
#include "tokenize/punkt_params.h"
#include "tokenize/punkt_uni.h"
#include "tokenize/punkt_word.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* NLTK's PunktTrainer defaults */
#define ABBREV          0.3  /* score at which a type is an abbreviation */
#define ABBREV_BACKOFF  5    /* a rare abbreviation is seen fewer times than this */
#define COLLOCATION     7.88 /* log-likelihood of a collocation */
#define SENT_STARTER    30.0 /* log-likelihood of a frequent sentence starter */
#define MIN_COLLOC_FREQ 1    /* a collocation is seen more often than this */

/* what is known of one distinct token */
enum {
    R_PERIOD_FINAL = 1 << 0,
    R_INITIAL = 1 << 1,
    R_ALPHA = 1 << 2,
    R_NUMBER = 1 << 3,    /* its type starts with ##number## */
    R_NON_PUNCT = 1 << 4, /* its type has a letter */
    R_LOWER = 1 << 5,     /* first character str.islower() */
    R_UPPER = 1 << 6,     /* first character str.isupper() */
    R_INTERNAL = 1 << 7,  /* starts with , : or ; */
    R_SENTBREAK = 1 << 8, /* the first pass's annotations */
    R_ABBR = 1 << 9,
    R_ELLIPSIS = 1 << 10,
};

struct raw {
    uint32_t type;  /* id in types */
    uint32_t okey;  /* type_no_sentperiod: id in the ortho map */
    uint64_t rare;  /* type_fdist[typ] + type_fdist[typ[:-1]], typ its type_no_period */
    unsigned props; /* R_* */
};

struct punkt_trainer {
    struct punkt_map *raws; /* distinct tokens; value: count */
    uint32_t *stream;       /* each token: raw id << 2 | PW_PARASTART | PW_LINESTART */
    size_t n, cap;
    int parastart;
    uint64_t texts;
    struct punkt_words w;
};

struct punkt_trainer *punkt_trainer_new(void)
{
    struct punkt_trainer *t = sl_xcalloc(1, sizeof(*t));
    t->raws = punkt_map_new();
    return t;
}

void punkt_trainer_free(struct punkt_trainer *t)
{
    if (!t)
        return;
    punkt_map_free(t->raws);
    free(t->stream);
    punkt_words_release(&t->w);
    free(t);
}

int punkt_trainer_add(struct punkt_trainer *t, const char *text, size_t n)
{
    /* the texts are joined by "\n\n": a blank line between two */
    if (t->texts++)
        t->parastart = 1;
    t->w.n = 0;
    punkt_words_scan(text, n, &t->parastart, &t->w);
    if (t->n + t->w.n > PUNKT_TRAIN_MAX_TOKENS)
        return sl_err_set(SL_ERR_TOOBIG,
                          "the training text has more than %llu tokens\nhint: Punkt needs far "
                          "less: train on a sample",
                          (unsigned long long)PUNKT_TRAIN_MAX_TOKENS);
    if (t->n + t->w.n > t->cap) {
        t->cap = t->cap ? t->cap : 4096;
        while (t->cap < t->n + t->w.n)
            t->cap *= 2;
        t->stream = sl_xrealloc(t->stream, sl_mul_size(t->cap, sizeof(uint32_t)));
    }
    for (size_t i = 0; i < t->w.n; i++) {
        const struct punkt_word *wd = &t->w.v[i];
        int64_t id = punkt_map_add(t->raws, text + wd->off, wd->len);
        if (id < 0)
            return (int)id;
        (*punkt_map_value(t->raws, (uint32_t)id))++;
        t->stream[t->n++] = (uint32_t)id << 2 | (wd->flags & (PW_PARASTART | PW_LINESTART));
    }
    return 0;
}

/* ---- NLTK's log-likelihoods ---------------------------------------------------------- */

/* Python's math.log raises for x <= 0; the callers turn that into a zero summand */
static int log_ok(double x)
{
    return x > 0;
}

/* _dunning_log_likelihood */
static double dunning(int64_t count_a, int64_t count_b, int64_t count_ab, int64_t n)
{
    double p1 = (double)count_b / (double)n;
    volatile double p2 = 0.99; /* at run time: log() as Python calls it, not folded */
    double null_hypo =
        (double)count_ab * log(p1 + 1e-8) + (double)(count_a - count_ab) * log(1.0 - p1 + 1e-8);
    double alt_hypo = (double)count_ab * log(p2) + (double)(count_a - count_ab) * log(1.0 - p2);
    double likelihood = null_hypo - alt_hypo;
    return -2.0 * likelihood;
}

/* _col_log_likelihood */
static double col_log_likelihood(int64_t count_a, int64_t count_b, int64_t count_ab, int64_t n)
{
    double p = (double)count_b / (double)n;
    double p1 = (double)count_ab / (double)count_a;
    double p2 = n - count_a ? (double)(count_b - count_ab) / (double)(n - count_a) : 1;
    int logs = log_ok(p) && log_ok(1.0 - p);
    double summand1 =
        logs ? (double)count_ab * log(p) + (double)(count_a - count_ab) * log(1.0 - p) : 0;
    double summand2 = logs ? (double)(count_b - count_ab) * log(p) +
                                 (double)(n - count_a - count_b + count_ab) * log(1.0 - p)
                           : 0;
    double summand3 = 0, summand4 = 0;
    if (!(count_a == count_ab || p1 <= 0 || p1 >= 1))
        summand3 = (double)count_ab * log(p1) + (double)(count_a - count_ab) * log(1.0 - p1);
    if (!(count_b == count_ab || p2 <= 0 || p2 >= 1))
        summand4 = (double)(count_b - count_ab) * log(p2) +
                   (double)(n - count_a - count_b + count_ab) * log(1.0 - p2);
    double likelihood = summand1 + summand2 - summand3 - summand4;
    return -2.0 * likelihood;
}

/* ---- training ------------------------------------------------------------------------ */

/* What training derives, besides the parameters. */
struct state {
    struct punkt_map *types; /* value: type_fdist */
    struct raw *raw;
    uint64_t n_tokens, n_period;
    int64_t *starter_counts; /* per type: _sent_starter_fdist */
    struct punkt_map *colloc_counts;
    uint64_t sentbreaks;
    struct sl_buf b, c; /* scratch */
};

static int64_t fdist(const struct state *s, const char *k, size_t n)
{
    return punkt_map_get(s->types, k, n);
}

/* fdist[k] + fdist[k + "."] */
static int64_t with_period(struct state *s, const char *k, size_t n)
{
    sl_buf_reset(&s->c);
    sl_buf_append(&s->c, k, n);
    sl_buf_putc(&s->c, '.');
    return fdist(s, k, n) + fdist(s, s->c.data, s->c.len);
}

/* _reclassify_abbrev_types over every type, adding the abbreviations found. A type without
 * a period is only looked at when it already is an abbreviation, which in one training
 * run it can only be from its period-final type, with the very same score: NLTK's removal
 * branch never fires here, and the order of the types does not matter. */
static int find_abbrevs(struct state *s, struct punkt_params *p)
{
    for (uint32_t id = 0; id < punkt_map_count(s->types); id++) {
        size_t n;
        const char *typ = punkt_map_key(s->types, id, &n);
        if (!punkt_type_is_non_punct(typ, n) ||
            (n == strlen(PUNKT_NUMBER_TYPE) && !memcmp(typ, PUNKT_NUMBER_TYPE, n)))
            continue;
        if (typ[n - 1] != '.' || punkt_map_find(p->abbrev, typ, n) != PUNKT_MAP_MISSING)
            continue;
        n--;
        int64_t num_periods = 1, chars = (int64_t)punkt_uni_count(typ, n);
        for (size_t i = 0; i < n; i++)
            num_periods += typ[i] == '.';
        int64_t num_nonperiods = chars - num_periods + 1;
        int64_t with = fdist(s, typ, n + 1), without = fdist(s, typ, n);
        double ll = dunning(with + without, (int64_t)s->n_period, with, (int64_t)s->n_tokens);
        double f_length = exp(-(double)num_nonperiods);
        double f_penalty = pow((double)num_nonperiods, (double)-without);
        double score = ll * f_length * (double)num_periods * f_penalty;
        if (score >= ABBREV && punkt_map_add(p->abbrev, typ, n) < 0)
            return SL_ERR_TOOBIG;
    }
    return 0;
}

/* Each distinct token's type, properties and first-pass annotations. */
static int describe(struct punkt_trainer *t, struct state *s, struct punkt_params *p, int pass)
{
    for (uint32_t id = 0; id < punkt_map_count(t->raws); id++) {
        size_t n;
        const char *tok = punkt_map_key(t->raws, id, &n);
        struct raw *r = &s->raw[id];
        if (pass == 0) {
            int64_t count = *punkt_map_value(t->raws, id);
            sl_buf_reset(&s->b);
            punkt_tok_type(tok, n, &s->b);
            int64_t ty = punkt_map_add(s->types, s->b.data, s->b.len);
            if (ty < 0)
                return (int)ty;
            r->type = (uint32_t)ty;
            *punkt_map_value(s->types, r->type) += count;
            int cs = punkt_tok_first_case(tok, n);
            r->props =
                (tok[n - 1] == '.' ? R_PERIOD_FINAL : 0) |
                (punkt_tok_is_initial(tok, n) ? R_INITIAL : 0) |
                (punkt_tok_is_alpha(tok, n) ? R_ALPHA : 0) |
                (!strncmp(s->b.data, PUNKT_NUMBER_TYPE, strlen(PUNKT_NUMBER_TYPE)) ? R_NUMBER : 0) |
                (punkt_type_is_non_punct(s->b.data, s->b.len) ? R_NON_PUNCT : 0) |
                (cs == PUNKT_CASE_LOWER   ? R_LOWER
                 : cs == PUNKT_CASE_UPPER ? R_UPPER
                                          : 0) |
                (strchr(",:;", tok[0]) && tok[0] ? R_INTERNAL : 0);
            s->n_tokens += (uint64_t)count;
            s->n_period += r->props & R_PERIOD_FINAL ? (uint64_t)count : 0;
            continue;
        }
        unsigned fp = punkt_first_pass(p, tok, n, &s->c);
        r->props |= (fp & PW_SENTBREAK ? R_SENTBREAK : 0) | (fp & PW_ABBR ? R_ABBR : 0) |
                    (fp & PW_ELLIPSIS ? R_ELLIPSIS : 0);
        size_t tn;
        const char *typ = punkt_map_key(s->types, r->type, &tn);
        if (r->props & R_SENTBREAK)
            tn = punkt_type_no_period(typ, tn);
        int64_t ok = punkt_map_add(p->ortho, typ, tn);
        if (ok < 0)
            return (int)ok;
        r->okey = (uint32_t)ok;
        /* the count of a rare abbreviation: the type without its period, and that less its
         * last character (as NLTK counts it) */
        r->rare = (uint64_t)fdist(s, typ, tn) +
                  (uint64_t)(tn ? fdist(s, typ, punkt_uni_prev(typ, tn)) : 0);
    }
    return 0;
}

/* _get_orthography_data over the token stream. */
static void orthography(const struct punkt_trainer *t, const struct state *s,
                        struct punkt_params *p)
{
    enum { INTERNAL, INITIAL, UNKNOWN } context = INTERNAL;
    static const int flags[3][2] = {
        [INTERNAL] = { PUNKT_ORTHO_MID_LC, PUNKT_ORTHO_MID_UC },
        [INITIAL] = { PUNKT_ORTHO_BEG_LC, PUNKT_ORTHO_BEG_UC },
        [UNKNOWN] = { PUNKT_ORTHO_UNK_LC, PUNKT_ORTHO_UNK_UC },
    };
    for (size_t i = 0; i < t->n; i++) {
        const struct raw *r = &s->raw[t->stream[i] >> 2];
        if ((t->stream[i] & PW_PARASTART) && context != UNKNOWN)
            context = INITIAL;
        if ((t->stream[i] & PW_LINESTART) && context == INTERNAL)
            context = UNKNOWN;
        if (r->props & (R_LOWER | R_UPPER))
            *punkt_map_value(p->ortho, r->okey) |= flags[context][(r->props & R_LOWER) ? 0 : 1];
        if (r->props & R_SENTBREAK)
            context = r->props & (R_NUMBER | R_INITIAL) ? UNKNOWN : INITIAL;
        else if (r->props & (R_ELLIPSIS | R_ABBR))
            context = UNKNOWN;
        else
            context = INTERNAL;
    }
}

/* The pairs of tokens whose first ends in a period: rare abbreviations, sentence-starter
 * and collocation counts. */
static int pairs(const struct punkt_trainer *t, struct state *s, struct punkt_params *p)
{
    for (size_t i = 0; i + 1 < t->n; i++) {
        const struct raw *a = &s->raw[t->stream[i] >> 2], *b = &s->raw[t->stream[i + 1] >> 2];
        s->sentbreaks += (a->props & R_SENTBREAK) != 0;
        if (!(a->props & R_PERIOD_FINAL))
            continue;
        size_t an, bn;
        const char *at = punkt_map_key(s->types, a->type, &an);
        const char *bt = punkt_map_key(s->types, b->type, &bn);
        size_t anp = punkt_type_no_period(at, an);
        if ((a->props & (R_ABBR | R_SENTBREAK)) == R_SENTBREAK && a->rare < ABBREV_BACKOFF &&
            punkt_map_find(p->abbrev, at, anp) == PUNKT_MAP_MISSING) {
            int64_t oc = (b->props & R_LOWER) ? *punkt_map_value(p->ortho, b->okey) : 0;
            if (((b->props & R_INTERNAL) ||
                 ((oc & PUNKT_ORTHO_BEG_UC) && !(oc & PUNKT_ORTHO_MID_UC))) &&
                punkt_map_add(p->abbrev, at, anp) < 0)
                return SL_ERR_TOOBIG;
        }
        if ((a->props & R_SENTBREAK) && !(a->props & (R_NUMBER | R_INITIAL)) &&
            (b->props & R_ALPHA))
            s->starter_counts[b->type]++;
        if ((a->props & R_SENTBREAK) && (a->props & (R_NUMBER | R_INITIAL)) &&
            (a->props & R_NON_PUNCT) && (b->props & R_NON_PUNCT)) {
            sl_buf_reset(&s->b);
            sl_buf_append(&s->b, at, anp);
            sl_buf_putc(&s->b, '\t');
            sl_buf_append(&s->b, bt, (b->props & R_SENTBREAK) ? punkt_type_no_period(bt, bn) : bn);
            int64_t id = punkt_map_add(s->colloc_counts, s->b.data, s->b.len);
            if (id < 0)
                return (int)id;
            (*punkt_map_value(s->colloc_counts, (uint32_t)id))++;
        }
    }
    if (t->n)
        s->sentbreaks += (s->raw[t->stream[t->n - 1] >> 2].props & R_SENTBREAK) != 0;
    return 0;
}

/* finalize_training: the frequent sentence starters, then the collocations. */
static int finalize(struct state *s, struct punkt_params *p)
{
    int64_t n = (int64_t)s->n_tokens;
    for (uint32_t id = 0; id < punkt_map_count(s->types); id++) {
        int64_t at_break = s->starter_counts[id];
        size_t tn;
        const char *typ = punkt_map_key(s->types, id, &tn);
        if (!at_break)
            continue;
        int64_t typ_count = with_period(s, typ, tn);
        if (typ_count < at_break)
            continue;
        double ll = col_log_likelihood((int64_t)s->sentbreaks, typ_count, at_break, n);
        if (ll >= SENT_STARTER &&
            (double)n / (double)s->sentbreaks > (double)typ_count / (double)at_break &&
            punkt_map_add(p->starters, typ, tn) < 0)
            return SL_ERR_TOOBIG;
    }
    for (uint32_t id = 0; id < punkt_map_count(s->colloc_counts); id++) {
        size_t kn;
        const char *k = punkt_map_key(s->colloc_counts, id, &kn);
        const char *tab = memchr(k, '\t', kn);
        size_t n1 = (size_t)(tab - k), n2 = kn - n1 - 1;
        if (punkt_map_find(p->starters, tab + 1, n2) != PUNKT_MAP_MISSING)
            continue;
        int64_t col_count = *punkt_map_value(s->colloc_counts, id);
        int64_t c1 = with_period(s, k, n1), c2 = with_period(s, tab + 1, n2);
        if (c1 > 1 && c2 > 1 && MIN_COLLOC_FREQ < col_count && col_count <= (c1 < c2 ? c1 : c2)) {
            double ll = col_log_likelihood(c1, c2, col_count, n);
            if (ll >= COLLOCATION && (double)n / (double)c1 > (double)c2 / (double)col_count &&
                punkt_map_add(p->colloc, k, kn) < 0)
                return SL_ERR_TOOBIG;
        }
    }
    return 0;
}

/* The ortho map less its types seen with no case (NLTK records only contexts it saw). */
static int drop_empty_ortho(struct punkt_params *p)
{
    struct punkt_map *m = punkt_map_new();
    for (uint32_t id = 0; id < punkt_map_count(p->ortho); id++) {
        int64_t v = *punkt_map_value(p->ortho, id);
        size_t n;
        const char *k = punkt_map_key(p->ortho, id, &n);
        int64_t nid = v ? punkt_map_add(m, k, n) : 0;
        if (nid < 0) {
            punkt_map_free(m);
            return (int)nid;
        }
        if (v)
            *punkt_map_value(m, (uint32_t)nid) = v;
    }
    punkt_map_free(p->ortho);
    p->ortho = m;
    return 0;
}

int punkt_trainer_finish(struct punkt_trainer *t, struct punkt_params **out,
                         struct punkt_train_stats *st)
{
    *out = NULL;
    struct punkt_params *p = punkt_params_new();
    struct state s;
    memset(&s, 0, sizeof(s));
    s.types = punkt_map_new();
    s.colloc_counts = punkt_map_new();
    s.raw = sl_xcalloc((size_t)punkt_map_count(t->raws) + 1, sizeof(struct raw));
    int rc = describe(t, &s, p, 0);
    if (!rc)
        rc = find_abbrevs(&s, p);
    if (!rc)
        rc = describe(t, &s, p, 1);
    if (!rc) {
        orthography(t, &s, p);
        s.starter_counts = sl_xcalloc((size_t)punkt_map_count(s.types) + 1, sizeof(int64_t));
        rc = pairs(t, &s, p);
    }
    if (!rc)
        rc = finalize(&s, p);
    if (!rc)
        rc = drop_empty_ortho(p);
    if (st) {
        st->texts = t->texts;
        st->tokens = s.n_tokens;
        st->types = punkt_map_count(s.types);
        st->period_tokens = s.n_period;
        st->sentence_breaks = s.sentbreaks;
    }
    punkt_map_free(s.types);
    punkt_map_free(s.colloc_counts);
    free(s.raw);
    free(s.starter_counts);
    sl_buf_release(&s.b);
    sl_buf_release(&s.c);
    if (rc)
        punkt_params_free(p);
    else
        *out = p;
    return rc;
}
