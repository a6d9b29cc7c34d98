/* Zero-shot tasks: reading the public layouts and scoring them as lm-evaluation-harness
 * does (train/eval.h). */
#include "train/eval.h"

#include "core/alloc.h"
#include "core/buf.h"
#include "core/err.h"
#include "core/progress.h"
#include "core/stream.h"
#include "tokenize/tokenizer.h"
#include "train/decode.h"

#include <ctype.h>
#include <json-c/json.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- task files --------------------------------------------------------------------- */

static const char *jstr(struct json_object *o, const char *k)
{
    struct json_object *v;
    if (json_object_object_get_ex(o, k, &v) && json_object_is_type(v, json_type_string))
        return json_object_get_string(v);
    return NULL;
}

/* an int, or a string holding one ("1"), or -1 */
static long jint(struct json_object *o, const char *k)
{
    struct json_object *v;
    if (!json_object_object_get_ex(o, k, &v))
        return -1;
    if (json_object_is_type(v, json_type_int))
        return (long)json_object_get_int64(v);
    if (json_object_is_type(v, json_type_string)) {
        const char *s = json_object_get_string(v);
        char *end;
        long x = strtol(s, &end, 10);
        return end != s && !*end ? x : -1;
    }
    return -1;
}

static size_t utf8_chars(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        n += ((unsigned char)*s & 0xc0) != 0x80;
    return n;
}

/* lm-evaluation-harness's HellaSwag preprocess: strip, " [title]" -> ". ", drop [...] spans,
 * "  " -> " " (one pass, as Python's str.replace) */
static char *hs_pre(const char *in)
{
    while (*in && isspace((unsigned char)*in))
        in++;
    size_t n = strlen(in);
    while (n && isspace((unsigned char)in[n - 1]))
        n--;
    struct sl_buf a = SL_BUF_INIT, b = SL_BUF_INIT;
    for (size_t i = 0; i < n;) {
        if (n - i >= 8 && !memcmp(in + i, " [title]", 8)) {
            sl_buf_puts(&a, ". ");
            i += 8;
        } else {
            sl_buf_putc(&a, in[i++]);
        }
    }
    const char *s = a.data ? a.data : "";
    for (size_t i = 0; s[i];) {
        if (s[i] == '[') {
            const char *close = strchr(s + i, ']');
            if (close) {
                i = (size_t)(close - s) + 1;
                continue;
            }
        }
        sl_buf_putc(&b, s[i++]);
    }
    sl_buf_release(&a);
    s = b.data ? b.data : "";
    struct sl_buf c = SL_BUF_INIT;
    sl_buf_puts(&c, "");
    for (size_t i = 0; s[i];) {
        if (s[i] == ' ' && s[i + 1] == ' ') {
            sl_buf_putc(&c, ' ');
            i += 2;
        } else {
            sl_buf_putc(&c, s[i++]);
        }
    }
    sl_buf_release(&b);
    return sl_buf_detach(&c, NULL);
}

static void item_add_choice(struct eval_item *it, const char *delim, const char *text)
{
    it->cont = sl_xrealloc(it->cont, (size_t)(it->nchoice + 1) * sizeof(char *));
    it->chars = sl_xrealloc(it->chars, (size_t)(it->nchoice + 1) * sizeof(size_t));
    it->cont[it->nchoice] = sl_xasprintf("%s%s", delim, text);
    it->chars[it->nchoice] = utf8_chars(text);
    it->nchoice++;
}

static void item_add_ctx(struct eval_item *it, char *ctx /* owned */)
{
    it->ctx = sl_xrealloc(it->ctx, (size_t)(it->nctx + 1) * sizeof(char *));
    it->ctx[it->nctx++] = ctx;
}

static void item_release(struct eval_item *it)
{
    for (int i = 0; i < it->nctx; i++)
        free(it->ctx[i]);
    for (int i = 0; i < it->nchoice; i++)
        free(it->cont[i]);
    free(it->ctx);
    free(it->cont);
    free(it->chars);
    memset(it, 0, sizeof(*it));
}

/* One JSON object -> an item of the task's format (recognised on the first item). 0, or
 * a message in why. */
/* Whether every element of the array is a string; why says which is not (a number or null
 * as a choice was scored as an empty continuation and reported as one too long). */
static int all_strings(struct json_object *a, const char *what, char *why, size_t wn)
{
    for (size_t i = 0; i < json_object_array_length(a); i++) {
        struct json_object *e = json_object_array_get_idx(a, i);
        if (!json_object_is_type(e, json_type_string)) {
            snprintf(why, wn, "%s %zu is %s, not a string", what, i,
                     e ? json_type_to_name(json_object_get_type(e)) : "null");
            return 0;
        }
    }
    return 1;
}

/* The layout of an item, told by its members; NULL with why set when none fits. */
static const char *item_layout(struct json_object *o, char *why, size_t wn)
{
    struct json_object *v;
    if (json_object_object_get_ex(o, "endings", &v))
        return "hellaswag";
    if (json_object_object_get_ex(o, "choices", &v) && json_object_is_type(v, json_type_object))
        return "arc";
    if (json_object_object_get_ex(o, "sol1", &v))
        return "piqa";
    if (json_object_object_get_ex(o, "option1", &v))
        return "winogrande";
    if (json_object_object_get_ex(o, "choices", &v))
        return "choice";
    if (jstr(o, "text"))
        return "lambada";
    snprintf(why, wn,
             "not an item of a known layout (HellaSwag endings, ARC choices, "
             "PIQA sol1, Winogrande option1, LAMBADA text, or context + choices)");
    return NULL;
}

static int parse_item(struct eval_task *t, struct json_object *o, struct eval_item *it, char *why,
                      size_t wn)
{
    memset(it, 0, sizeof(*it));
    const char *fmt = t->format ? t->format : item_layout(o, why, wn);
    if (!fmt)
        return -1;
    if (!strcmp(fmt, "hellaswag")) {
        struct json_object *e;
        const char *al = jstr(o, "activity_label"), *a = jstr(o, "ctx_a"), *b = jstr(o, "ctx_b");
        const char *ctx = jstr(o, "ctx");
        if (!json_object_object_get_ex(o, "endings", &e) ||
            !json_object_is_type(e, json_type_array) || json_object_array_length(e) < 2 ||
            (!ctx && !a)) {
            snprintf(why, wn, "a HellaSwag item needs ctx (or ctx_a, ctx_b) and endings");
            return -1;
        }
        if (!all_strings(e, "ending", why, wn))
            return -1;
        char *raw;
        if (a) {
            char *bb = sl_xstrdup(b ? b : "");
            if (bb[0])
                bb[0] = (char)toupper((unsigned char)bb[0]);
            raw = sl_xasprintf("%s%s%s %s", al ? al : "", al ? ": " : "", a, bb);
            free(bb);
        } else {
            raw = sl_xasprintf("%s%s%s", al ? al : "", al ? ": " : "", ctx);
        }
        item_add_ctx(it, hs_pre(raw));
        free(raw);
        for (size_t i = 0; i < json_object_array_length(e); i++) {
            char *p = hs_pre(json_object_get_string(json_object_array_get_idx(e, i)));
            item_add_choice(it, " ", p);
            free(p);
        }
        it->gold = (int)jint(o, "label");
    } else if (!strcmp(fmt, "lambada")) {
        const char *text = jstr(o, "text");
        const char *sp = text ? strrchr(text, ' ') : NULL;
        if (!sp || !sp[1]) {
            snprintf(why, wn, "a LAMBADA item needs text with a last word after a space");
            return -1;
        }
        item_add_ctx(it, sl_xasprintf("%.*s", (int)(sp - text), text));
        item_add_choice(it, " ", sp + 1);
        it->gold = 0;
    } else if (!strcmp(fmt, "arc")) {
        struct json_object *ch, *tx, *lb;
        const char *q = jstr(o, "question"), *key = jstr(o, "answerKey");
        if (!q || !key || !json_object_object_get_ex(o, "choices", &ch) ||
            !json_object_object_get_ex(ch, "text", &tx) ||
            !json_object_object_get_ex(ch, "label", &lb) ||
            !json_object_is_type(tx, json_type_array) ||
            !json_object_is_type(lb, json_type_array) ||
            json_object_array_length(tx) != json_object_array_length(lb) ||
            json_object_array_length(tx) < 2) {
            snprintf(why, wn,
                     "an ARC item needs question, choices.text, choices.label and "
                     "answerKey");
            return -1;
        }
        if (!all_strings(tx, "choices.text", why, wn) || !all_strings(lb, "choices.label", why, wn))
            return -1;
        item_add_ctx(it, sl_xasprintf("Question: %s\nAnswer:", q));
        it->gold = -1;
        for (size_t i = 0; i < json_object_array_length(tx); i++) {
            item_add_choice(it, " ", json_object_get_string(json_object_array_get_idx(tx, i)));
            if (!strcmp(json_object_get_string(json_object_array_get_idx(lb, i)), key))
                it->gold = (int)i;
        }
    } else if (!strcmp(fmt, "piqa")) {
        const char *g = jstr(o, "goal"), *s1 = jstr(o, "sol1"), *s2 = jstr(o, "sol2");
        if (!g || !s1 || !s2) {
            snprintf(why, wn, "a PIQA item needs goal, sol1, sol2 and label");
            return -1;
        }
        item_add_ctx(it, sl_xasprintf("Question: %s\nAnswer:", g));
        item_add_choice(it, " ", s1);
        item_add_choice(it, " ", s2);
        it->gold = (int)jint(o, "label");
    } else if (!strcmp(fmt, "winogrande")) {
        const char *s = jstr(o, "sentence"), *o1 = jstr(o, "option1"), *o2 = jstr(o, "option2");
        const char *us = s ? strchr(s, '_') : NULL;
        if (!us || !o1 || !o2) {
            snprintf(why, wn,
                     "a Winogrande item needs a sentence with '_', option1, option2 "
                     "and answer");
            return -1;
        }
        /* partial scoring: the option goes into the context, the rest of the sentence is the
         * continuation scored for both */
        const char *rest = us + 1;
        while (*rest == ' ')
            rest++;
        size_t rn = strlen(rest);
        while (rn && isspace((unsigned char)rest[rn - 1]))
            rn--;
        char *tail = sl_xasprintf("%.*s", (int)rn, rest);
        item_add_ctx(it, sl_xasprintf("%.*s%s", (int)(us - s), s, o1));
        item_add_ctx(it, sl_xasprintf("%.*s%s", (int)(us - s), s, o2));
        item_add_choice(it, " ", tail);
        item_add_choice(it, " ", tail);
        free(tail);
        it->gold = (int)jint(o, "answer") - 1;
    } else { /* choice */
        struct json_object *ch;
        const char *ctx = jstr(o, "context");
        if (!ctx)
            ctx = jstr(o, "query");
        if (!ctx || !json_object_object_get_ex(o, "choices", &ch) ||
            !json_object_is_type(ch, json_type_array) || json_object_array_length(ch) < 2) {
            snprintf(why, wn, "an item needs context (or query), choices (2 or more) and gold");
            return -1;
        }
        if (!all_strings(ch, "choice", why, wn))
            return -1;
        item_add_ctx(it, sl_xstrdup(ctx));
        for (size_t i = 0; i < json_object_array_length(ch); i++) {
            const char *c = json_object_get_string(json_object_array_get_idx(ch, i));
            item_add_choice(it, "", c ? c : "");
        }
        it->gold = (int)jint(o, "gold");
        if (it->gold < 0)
            it->gold = (int)jint(o, "label");
    }
    if (it->gold < 0 || it->gold >= it->nchoice) {
        snprintf(why, wn, "no valid answer (label/gold/answerKey/answer) among %d choices",
                 it->nchoice);
        item_release(it);
        return -1;
    }
    if (!t->format) {
        t->format = fmt;
        t->kind = !strcmp(fmt, "lambada") ? EVAL_LAMBADA : EVAL_CHOICE;
    }
    return 0;
}

int eval_task_load(struct eval_task *t, const char *path, size_t max_items)
{
    memset(t, 0, sizeof(*t));
    t->path = sl_xstrdup(path);
    struct sl_buf b = SL_BUF_INIT;
    b.max = (size_t)1 << 31;
    int rc = sl_read_file(path, &b);
    if (rc) {
        sl_err_wrap(rc, "task file: ");
        return rc;
    }
    size_t line = 0;
    for (size_t i = 0; i < b.len && (!max_items || t->n < max_items);) {
        char *s = b.data + i, *nl = memchr(s, '\n', b.len - i);
        size_t n = nl ? (size_t)(nl - s) : b.len - i;
        i += n + 1;
        line++;
        s[n] = 0;
        size_t k = 0;
        while (k < n && isspace((unsigned char)s[k]))
            k++;
        if (k == n)
            continue;
        struct json_object *o = json_tokener_parse(s);
        char why[200] = "";
        struct eval_item it;
        if (!o || !json_object_is_type(o, json_type_object))
            snprintf(why, sizeof(why), "not a JSON object");
        else if (parse_item(t, o, &it, why, sizeof(why)) == 0) {
            if (t->n == t->cap) {
                t->cap = t->cap ? 2 * t->cap : 256;
                t->items = sl_xrealloc(t->items, t->cap * sizeof(*t->items));
            }
            t->items[t->n++] = it;
            why[0] = 0;
        }
        json_object_put(o);
        if (why[0] && !t->skipped++)
            snprintf(t->first_bad, sizeof(t->first_bad), "%s:%zu: %s", path, line, why);
    }
    sl_buf_release(&b);
    if (!t->n)
        return sl_err_set(SL_ERR_FORMAT, "task file '%s' has no items%s%s", path,
                          t->first_bad[0] ? "; the first bad line: " : "", t->first_bad);
    return 0;
}

void eval_task_release(struct eval_task *t)
{
    for (size_t i = 0; i < t->n; i++)
        item_release(&t->items[i]);
    free(t->items);
    free(t->path);
    memset(t, 0, sizeof(*t));
}

/* ---- scoring ------------------------------------------------------------------------- */

/* Rows per block: the context is run in blocks of this many tokens, the continuations of
 * an item together in blocks of up to this many (the logits of a block take rows x
 * vocab_size floats). */
#define EVAL_ROWS 128

struct eval_scorer {
    struct decoder *dec;
    int V, max_len, rows;
    float *logits0;   /* the logits after the context */
    int32_t *btok;    /* [rows] a block's tokens */
    int *bseg, *bout; /* [rows] each row's first row, the rows whose logits are wanted */
    int32_t *btarget; /* [rows] the token each row predicts */
    double *blp;      /* [rows] its log-probability */
    int *bmax;        /* [rows] whether it is the argmax */
};

int eval_scorer_new(struct eval_scorer **out, const struct model_config *c,
                    const struct model_layout *l, const float *params, int max_len)
{
    *out = NULL;
    struct eval_scorer *s = sl_xcalloc(1, sizeof(*s));
    s->rows = max_len < EVAL_ROWS ? max_len : EVAL_ROWS;
    int rc = decoder_new_rows(&s->dec, c, l, params, max_len, s->rows);
    if (rc) {
        free(s);
        return rc;
    }
    s->V = c->vocab_size;
    s->max_len = max_len;
    s->logits0 = sl_xcalloc((size_t)s->V, sizeof(float));
    size_t R = (size_t)s->rows;
    s->btok = sl_xcalloc(R, sizeof(int32_t));
    s->bseg = sl_xcalloc(R, sizeof(int));
    s->bout = sl_xcalloc(R, sizeof(int));
    s->btarget = sl_xcalloc(R, sizeof(int32_t));
    s->blp = sl_xcalloc(R, sizeof(double));
    s->bmax = sl_xcalloc(R, sizeof(int));
    *out = s;
    return 0;
}

void eval_scorer_free(struct eval_scorer *s)
{
    if (!s)
        return;
    decoder_free(s->dec);
    free(s->logits0);
    free(s->btok);
    free(s->bseg);
    free(s->bout);
    free(s->btarget);
    free(s->blp);
    free(s->bmax);
    free(s);
}

/* log softmax(lg)[tok] in double, and whether tok is the argmax */
static double logprob(const float *lg, int V, int tok, int *is_max)
{
    float mx = lg[0];
    int am = 0;
    for (int i = 1; i < V; i++)
        if (lg[i] > mx) {
            mx = lg[i];
            am = i;
        }
    double sum = 0;
    for (int i = 0; i < V; i++)
        sum += exp((double)lg[i] - mx);
    *is_max = am == tok;
    return (double)lg[tok] - mx - log(sum);
}

/* The log-probabilities of the n rows of logits lg ([n, V]) for their targets. */
static void logprobs(struct eval_scorer *s, const float *lg, int n)
{
    int V = s->V;
#pragma omp parallel for schedule(static) if ((double)n * V >= 65536.0)
    for (int r = 0; r < n; r++)
        s->blp[r] = logprob(lg + (size_t)r * V, V, s->btarget[r], &s->bmax[r]);
}

/* Run the rows btok[0..n) of one block (bseg: their runs; NULL with commit) and add each
 * row's log-probability of its target to the sums of its choice (row_choice). */
static int score_block(struct eval_scorer *s, int n, int commit, const int *row_choice, double *ll,
                       int *greedy)
{
    for (int r = 0; r < n; r++)
        s->bout[r] = r;
    const float *lg =
        decoder_block(s->dec, s->btok, commit ? NULL : s->bseg, n, s->bout, n, commit);
    if (!lg)
        return sl_err_set(SL_ERR_STATE, "a block of %d tokens does not fit the decoder", n);
    logprobs(s, lg, n);
    for (int r = 0; r < n; r++) {
        ll[row_choice[r]] += s->blp[r];
        greedy[row_choice[r]] &= s->bmax[r];
    }
    return 0;
}

int eval_scorer_loglik(struct eval_scorer *s, const int32_t *ctx, int nctx,
                       const int32_t *const *cont, const int *ncont, int nchoice, double *ll,
                       int *greedy)
{
    int longest = 0;
    for (int i = 0; i < nchoice; i++)
        longest = ncont[i] > longest ? ncont[i] : longest;
    if (longest < 1 || longest >= s->max_len)
        return sl_err_set(SL_ERR_FORMAT, "a continuation of %d tokens does not fit a context of %d",
                          longest, s->max_len);
    /* ids the model has no embedding for: another tokenizer's text (an error, not a skip:
     * every item would be scored wrong) */
    for (int i = 0; i <= nchoice; i++) {
        const int32_t *v = i < nchoice ? cont[i] : ctx;
        int m = i < nchoice ? ncont[i] : nctx;
        for (int k = 0; k < m; k++)
            if (v[k] < 0 || v[k] >= s->V)
                return sl_err_set(SL_ERR_CONFIG,
                                  "token id %d is outside the model's vocabulary of %d ids\nhint: "
                                  "score with the tokenizer the model was trained with "
                                  "(--tokenizer)",
                                  (int)v[k], s->V);
    }
    /* keep the context's last tokens when the whole does not fit (the harness truncates
     * on the left) */
    int keep = nctx;
    if (keep + longest - 1 > s->max_len)
        keep = s->max_len - longest + 1;
    ctx += nctx - keep;
    /* the context, in blocks of rows; the logits of its last token only */
    decoder_reset(s->dec);
    const float *lg = NULL;
    for (int i = 0; i < keep; i += s->rows) {
        int n = keep - i < s->rows ? keep - i : s->rows, last = n - 1;
        lg = decoder_block(s->dec, ctx + i, NULL, n, &last, i + n == keep, 1);
        if (!lg)
            return sl_err_set(SL_ERR_STATE, "decoder full");
    }
    memcpy(s->logits0, lg, (size_t)s->V * sizeof(float));
    /* the first token of every choice from the context's logits: one normaliser */
    {
        float mx = s->logits0[0];
        int am = 0;
        for (int i = 1; i < s->V; i++)
            if (s->logits0[i] > mx) {
                mx = s->logits0[i];
                am = i;
            }
        double sum = 0;
        for (int i = 0; i < s->V; i++)
            sum += exp((double)s->logits0[i] - mx);
        double lse = log(sum);
        for (int c = 0; c < nchoice; c++) {
            ll[c] = (double)s->logits0[cont[c][0]] - mx - lse;
            greedy[c] = am == cont[c][0];
        }
    }
    /* the rest of the choices: consecutive runs of rows in shared blocks (a run sees the
     * context and its own rows); a choice longer than a block alone, in committed blocks
     * that are dropped afterwards */
    int room = s->max_len - keep < s->rows ? s->max_len - keep : s->rows;
    int row_choice[EVAL_ROWS];
    int n = 0, rc = 0;
    for (int c = 0; c < nchoice && !rc; c++) {
        int m = ncont[c] - 1; /* rows of choice c: its tokens but the last */
        if (m <= 0)
            continue;
        if (m > room) {
            if (n && (rc = score_block(s, n, 0, row_choice, ll, greedy)))
                break;
            n = 0;
            for (int i = 0; i < m && !rc; i += s->rows) {
                int k = m - i < s->rows ? m - i : s->rows;
                for (int r = 0; r < k; r++) {
                    s->btok[r] = cont[c][i + r];
                    s->btarget[r] = cont[c][i + r + 1];
                    row_choice[r] = c;
                }
                rc = score_block(s, k, 1, row_choice, ll, greedy);
            }
            decoder_truncate(s->dec, keep);
            continue;
        }
        if (n + m > room) {
            rc = score_block(s, n, 0, row_choice, ll, greedy);
            n = 0;
        }
        for (int r = 0; r < m && !rc; r++) {
            s->btok[n + r] = cont[c][r];
            s->btarget[n + r] = cont[c][r + 1];
            s->bseg[n + r] = n;
            row_choice[n + r] = c;
        }
        n += m;
    }
    if (!rc && n)
        rc = score_block(s, n, 0, row_choice, ll, greedy);
    return rc;
}

/* ---- a task --------------------------------------------------------------------------- */

static int encode(struct tokenizer_enc *e, const char *s, struct tok_ids *out)
{
    out->n = 0;
    int rc = tokenizer_encode(e, s, strlen(s), out);
    return rc < 0 ? rc : 0;
}

static void ids_json(FILE *f, const int32_t *v, int n)
{
    fputc('[', f);
    for (int i = 0; i < n; i++)
        fprintf(f, "%s%d", i ? "," : "", v[i]);
    fputc(']', f);
}

int eval_task_run(const struct eval_task *t, const struct tokenizer *tok, int64_t eod_id,
                  struct eval_scorer *s, struct eval_result *r, FILE *details)
{
    memset(r, 0, sizeof(*r));
    r->ppl = NAN;
    struct tokenizer_enc *e = tokenizer_enc_new(tok);
    struct tok_ids whole = { 0 }, ce = { 0 };
    double t0 = sl_now(), ll_sum = 0;
    size_t right = 0, right_norm = 0;
    int rc = 0;
    int32_t **conts = NULL, *ctxs = NULL;
    int *ncont = NULL, *greedy = NULL, cap = 0;
    double *ll = NULL;
    for (size_t i = 0; i < t->n && !rc; i++) {
        const struct eval_item *it = &t->items[i];
        if (it->nchoice > cap) {
            cap = it->nchoice;
            conts = sl_xrealloc(conts, (size_t)cap * sizeof(*conts));
            ncont = sl_xrealloc(ncont, (size_t)cap * sizeof(int));
            greedy = sl_xrealloc(greedy, (size_t)cap * sizeof(int));
            ll = sl_xrealloc(ll, (size_t)cap * sizeof(double));
        }
        /* per context group: Winogrande has one context per choice, the rest one shared */
        int skip = 0;
        for (int g = 0; g < it->nctx && !rc && !skip; g++) {
            int first = it->nctx == 1 ? 0 : g, last = it->nctx == 1 ? it->nchoice : g + 1;
            /* the harness's pair encoding: the context's trailing whitespace moves into the
             * continuation; continuation ids = enc(ctx + cont) after len(enc(ctx)) */
            const char *cx = it->ctx[g];
            size_t cl = strlen(cx), sp = cl;
            while (sp > 0 && isspace((unsigned char)cx[sp - 1]))
                sp--;
            char *ctx = sl_xasprintf("%.*s", (int)sp, cx);
            if ((rc = encode(e, ctx, &ce)))
                break;
            int nctx = (int)ce.n;
            ctxs = sl_xrealloc(ctxs, (size_t)(nctx + 1) * sizeof(int32_t));
            for (int k = 0; k < nctx; k++)
                ctxs[k] = (int32_t)ce.v[k];
            if (!nctx) {
                if (eod_id < 0) {
                    rc = sl_err_set(SL_ERR_FORMAT,
                                    "'%s' item %zu: empty context and no end-of-document token",
                                    t->path, i + 1);
                    free(ctx);
                    break;
                }
                ctxs[nctx++] = (int32_t)eod_id;
            }
            for (int c = first; c < last && !rc; c++) {
                char *full = sl_xasprintf("%s%s%s", ctx, cx + sp, it->cont[c]);
                rc = encode(e, full, &whole);
                free(full);
                size_t from = nctx == (int)ce.n ? ce.n : 0;
                if (!rc && whole.n <= from)
                    skip = 1;
                int n = rc || skip ? 0 : (int)(whole.n - from);
                conts[c] = sl_xcalloc((size_t)(n > 0 ? n : 1), sizeof(int32_t));
                for (int k = 0; k < n; k++)
                    conts[c][k] = (int32_t)whole.v[from + k];
                ncont[c] = n;
            }
            if (!rc && !skip) {
                rc = eval_scorer_loglik(s, ctxs, nctx, (const int32_t *const *)(conts + first),
                                        ncont + first, last - first, ll + first, greedy + first);
                if (rc == SL_ERR_FORMAT) {
                    rc = 0;
                    skip = 1;
                } else if (rc) {
                    char msg[SL_ERR_MSG_MAX];
                    snprintf(msg, sizeof(msg), "%s", sl_err_msg());
                    rc = sl_err_set(rc, "task '%s', item %zu: %s", t->path, i + 1, msg);
                }
            }
            if (details && !rc && !skip) {
                for (int c = first; c < last; c++) {
                    fprintf(details, "{\"item\":%zu,\"choice\":%d,\"gold\":%d,\"ctx\":", i, c,
                            it->gold);
                    ids_json(details, ctxs, nctx);
                    fputs(",\"cont\":", details);
                    ids_json(details, conts[c], ncont[c]);
                    fprintf(details, ",\"loglik\":%.17g,\"greedy\":%d}\n", ll[c], greedy[c]);
                }
            }
            for (int c = first; c < last; c++)
                free(conts[c]);
            free(ctx);
        }
        if (rc)
            break;
        if (skip) {
            r->skipped_long++;
            continue;
        }
        r->items++;
        if (t->kind == EVAL_LAMBADA) {
            right += greedy[0];
            ll_sum += ll[0];
            continue;
        }
        int best = 0, best_n = 0;
        for (int c = 1; c < it->nchoice; c++) {
            if (ll[c] > ll[best])
                best = c;
            double a = ll[c] / (double)(it->chars[c] ? it->chars[c] : 1);
            double b = ll[best_n] / (double)(it->chars[best_n] ? it->chars[best_n] : 1);
            if (a > b)
                best_n = c;
        }
        right += best == it->gold;
        right_norm += best_n == it->gold;
    }
    r->seconds = sl_now() - t0;
    if (r->items) {
        r->acc = (double)right / (double)r->items;
        r->acc_norm = t->kind == EVAL_LAMBADA ? NAN : (double)right_norm / (double)r->items;
        if (t->kind == EVAL_LAMBADA)
            r->ppl = exp(-ll_sum / (double)r->items);
    }
    free(conts);
    free(ctxs);
    free(ncont);
    free(greedy);
    free(ll);
    free(whole.v);
    free(ce.v);
    tokenizer_enc_free(e);
    return rc;
}
