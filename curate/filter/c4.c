/* c4_quality, c4_paragraph, c4_badwords: the C4 / mC4 rules (Raffel et al. 2020) with the
 * definitions and defaults of datatrove's C4QualityFilter, C4ParagraphFilter and
 * C4BadWordsFilter (docs/filters.md). c4_quality keeps only the lines that pass and writes
 * the shortened text back, as datatrove does. */
#include "core/alloc.h"
#include "core/config.h"
#include "core/doc.h"
#include "core/err.h"
#include "core/hash.h"
#include "core/rng.h"
#include "curate/filter/filter.h"
#include "curate/filter/lexicons.h"
#include "curate/filter/strset.h"
#include "curate/filter/uchar.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdio.h>
#include <string.h>

/* ---- c4_quality ---------------------------------------------------------------------- */

struct c4q {
    int remove_citations, no_terminal_punct, lorem, javascript, curly, policy;
    long min_sentences, min_words_per_line, max_word_length;
    struct sl_buf out, line, low;
    struct sl_wordvec wv;
};

static const char *const policy_substrings[] = {
    "terms of use", "privacy policy", "cookie policy", "uses cookies", "use of cookies",
    "use cookies", NULL,
};

static void ascii_lower(struct sl_buf *dst, const char *s, size_t n)
{
    sl_buf_reset(dst);
    sl_buf_reserve(dst, n);
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        dst->data[i] = (ch >= 'A' && ch <= 'Z') ? (char)(ch + 32) : ch;
    }
    dst->len = n;
    dst->data[n] = 0;
}

/* Remove [digits], [edit], [citation needed] (Python re \[\d*]|\[edit]|\[citation needed]). */
static void remove_citations(struct sl_buf *line)
{
    char *s = line->data;
    size_t n = line->len, o = 0;
    for (size_t i = 0; i < n;) {
        if (s[i] == '[') {
            size_t j = i + 1;
            while (j < n) {
                uint32_t cp;
                size_t l = uc_next(s + j, n - j, &cp);
                if (!uc_isdigit(cp))
                    break;
                j += l;
            }
            if (j < n && s[j] == ']') {
                i = j + 1;
                continue;
            }
            if (n - i >= 6 && !memcmp(s + i, "[edit]", 6)) {
                i += 6;
                continue;
            }
            if (n - i >= 17 && !memcmp(s + i, "[citation needed]", 17)) {
                i += 17;
                continue;
            }
        }
        s[o++] = s[i++];
    }
    line->len = o;
    if (line->data)
        line->data[o] = 0;
}

static int c4q_apply(struct sl_filter *f, struct sl_fctx *c, struct sl_filter_result *r)
{
    struct c4q *q = f->state;
    const struct sl_spanvec *lines = sl_fctx_pylines(c);
    const char *t = c->text;
    long sentences = 0;
    size_t kept = 0;
    sl_buf_reset(&q->out);
    r->keep = 1;
    for (size_t li = 0; li < lines->n; li++) {
        const char *s = t + lines->v[li].off;
        size_t n = lines->v[li].len, a = 0, b = n;
        uc_strip_space(s, &a, &b);
        /* words (str.split) and the longest */
        long nwords = 0;
        int too_long = 0;
        for (size_t i = a; i < b;) {
            uint32_t cp;
            size_t l = uc_next(s + i, b - i, &cp);
            if (uc_isspace(cp)) {
                i += l;
                continue;
            }
            size_t j = i, chars = 0;
            while (j < b) {
                size_t m = uc_next(s + j, b - j, &cp);
                if (uc_isspace(cp))
                    break;
                j += m;
                chars++;
            }
            nwords++;
            if (q->max_word_length != -1 && (long)chars > q->max_word_length)
                too_long = 1;
            i = j;
        }
        if (too_long)
            continue;
        sl_buf_reset(&q->line);
        sl_buf_append(&q->line, s + a, b - a);
        if (q->remove_citations)
            remove_citations(&q->line);
        const char *L = q->line.data ? q->line.data : "";
        size_t ln = q->line.len;
        if (q->no_terminal_punct) {
            char last = ln ? L[ln - 1] : 0;
            int ends_punct = last == '.' || last == '?' || last == '!' || last == '"' || last == '\'';
            if (!ends_punct || (ln >= 3 && !memcmp(L + ln - 3, "...", 3)))
                continue;
        }
        if (nwords < q->min_words_per_line)
            continue;
        ascii_lower(&q->low, L, ln);
        if (q->lorem && memmem(q->low.data, ln, "lorem ipsum", 11))
            return sl_filter_drop(r, "lorem_ipsum", 1);
        if (q->javascript && memmem(q->low.data, ln, "javascript", 10))
            continue;
        if (q->curly && memchr(L, '{', ln))
            return sl_filter_drop(r, "curly_bracket", 1);
        if (q->policy) {
            int hit = 0;
            for (size_t k = 0; policy_substrings[k] && !hit; k++)
                hit = memmem(q->low.data, ln, policy_substrings[k], strlen(policy_substrings[k])) != NULL;
            if (hit)
                continue;
        }
        if (q->min_sentences != -1) {
            sl_words_split(c->env->words, SL_WORDS_RULES, L, ln, &q->wv);
            size_t ns = sl_words_count_sentences(L, &q->wv);
            sentences += (long)(ns ? ns : 1);
        }
        if (kept++)
            sl_buf_putc(&q->out, '\n');
        sl_buf_append(&q->out, L, ln);
    }
    r->score = (double)sentences;
    if (sentences < q->min_sentences)
        return sl_filter_drop(r, "too_few_sentences", (double)sentences);
    /* "\n".join(kept).strip() */
    const char *o = q->out.data ? q->out.data : "";
    size_t a = 0, b = q->out.len;
    uc_strip_space(o, &a, &b);
    if (b - a != c->len || memcmp(o + a, c->text, b - a) != 0)
        sl_fctx_set_text(c, o + a, b - a);
    return 0;
}

static void c4q_release(struct sl_filter *f)
{
    struct c4q *q = f->state;
    if (!q)
        return;
    sl_buf_release(&q->out);
    sl_buf_release(&q->line);
    sl_buf_release(&q->low);
    sl_wordvec_release(&q->wv);
    free(q);
}

int sl_filter_build_c4_quality(struct sl_filter *f, struct sl_cfg *p, const struct sl_filter_env *env)
{
    struct c4q *q = sl_xcalloc(1, sizeof(*q));
    f->state = q;
    f->apply = c4q_apply;
    f->release = c4q_release;
    f->modifies = 1;
    int split_paragraph = 1, rc = 0;
    if (!rc) rc = sl_cfg_bool(p, "split_paragraph", 1, &split_paragraph);
    if (!rc) rc = sl_cfg_bool(p, "remove_citations", 1, &q->remove_citations);
    if (!rc) rc = sl_cfg_bool(p, "filter_no_terminal_punct", 1, &q->no_terminal_punct);
    if (!rc) rc = sl_cfg_int(p, "min_num_sentences", 5, &q->min_sentences);
    if (!rc) rc = sl_cfg_int(p, "min_words_per_line", 3, &q->min_words_per_line);
    if (!rc) rc = sl_cfg_int(p, "max_word_length", 1000, &q->max_word_length);
    if (!rc) rc = sl_cfg_bool(p, "filter_lorem_ipsum", 1, &q->lorem);
    if (!rc) rc = sl_cfg_bool(p, "filter_javascript", 1, &q->javascript);
    if (!rc) rc = sl_cfg_bool(p, "filter_curly_bracket", 1, &q->curly);
    if (!rc) rc = sl_cfg_bool(p, "filter_policy", 1, &q->policy);
    if (!rc && !split_paragraph)
        rc = sl_err_set(SL_ERR_CONFIG, "%s: split_paragraph: only true (split at line ends, as C4) is supported",
                        sl_cfg_where(sl_cfg_child(p, "split_paragraph")));
    (void)env;
    return rc;
}

/* ---- c4_paragraph -------------------------------------------------------------------- */

static int c4p_apply(struct sl_filter *f, struct sl_fctx *c, struct sl_filter_result *r)
{
    long min_par = 3, min_len = 200;
    size_t top[3] = { 0, 0, 0 }, nlines = 0;
    const char *t = c->text;
    size_t start = 0;
    for (size_t i = 0; i <= c->len; i++) {
        if (i == c->len || t[i] == '\n') {
            size_t l = uc_count(t + start, i - start);
            nlines++;
            if (l > top[2]) {
                top[2] = l;
                if (top[2] > top[1]) { size_t x = top[1]; top[1] = top[2]; top[2] = x; }
                if (top[1] > top[0]) { size_t x = top[0]; top[0] = top[1]; top[1] = x; }
            }
            start = i + 1;
        }
    }
    (void)f;
    r->keep = 1;
    r->score = (double)top[2];
    if ((long)nlines < min_par || (long)top[2] < min_len)
        return sl_filter_drop(r, "< 3 paragraphs", (double)top[2]);
    return 0;
}

int sl_filter_build_c4_paragraph(struct sl_filter *f, struct sl_cfg *p, const struct sl_filter_env *env)
{
    f->apply = c4p_apply;
    (void)p;
    (void)env;
    return 0;
}

/* ---- c4_badwords ---------------------------------------------------------------------- */

struct bw_lang {
    char lang[16];
    pcre2_code *re; /* NULL: no list for this language */
};

struct c4b {
    double keep_fraction;
    uint64_t seed;
    int fail_missing;
    struct bw_lang langs[64];
    size_t nlangs;
    pcre2_match_data *md;
    struct sl_buf low;
    const char *id_key;
};

/* Words that are common sub-words in languages without spaces; never matched. */
static int allowed(const char *lang, const char *w, size_t n)
{
    static const char *const ja[] = { "sm", "\xe3\x82\xb0\xe3\x83\xad", "\xe5\xa5\xb3\xe3\x81\xae\xe5\xad\x90", NULL };
    (void)lang;
    for (size_t i = 0; ja[i]; i++)
        if (strlen(ja[i]) == n && !memcmp(ja[i], w, n))
            return 1;
    return n == 3 && !memcmp(w, "\xe6\x80\xa7", 3); /* zh */
}

static pcre2_code *compile_badwords(const char *lang, int *err)
{
    size_t len;
    const char *list = sl_lexicon("badwords", lang, &len);
    *err = 0;
    if (!list)
        return NULL;
    struct sl_buf pat = SL_BUF_INIT;
    int substr = !strcmp(lang, "ja") || !strcmp(lang, "th") || !strcmp(lang, "zh");
    sl_buf_puts(&pat, substr ? "(?:" : "(?:\\W|^)(");
    int first = 1;
    const char *p = list, *end = list + len;
    while (p < end) {
        const char *a, *b;
        sl_strset_next_line(&p, end, &a, &b);
        if (a == b && !first)
            continue; /* an empty entry matches everywhere in datatrove; lists have none */
        if (allowed(lang, a, (size_t)(b - a)))
            continue;
        if (!first)
            sl_buf_putc(&pat, '|');
        first = 0;
        for (const char *q = a; q < b; q++) {
            if (strchr("\\^$.|?*+()[]{}-#/ ", *q) && *q)
                sl_buf_putc(&pat, '\\');
            sl_buf_putc(&pat, *q);
        }
    }
    sl_buf_puts(&pat, substr ? ")" : ")(?:\\W|$)");
    PCRE2_SIZE eoff;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)pat.data, pat.len, PCRE2_UTF | PCRE2_UCP, err, &eoff, NULL);
    if (re)
        pcre2_jit_compile(re, PCRE2_JIT_COMPLETE);
    sl_buf_release(&pat);
    return re;
}

static void unicode_lower(struct sl_buf *dst, const char *s, size_t n)
{
    sl_buf_reset(dst);
    sl_buf_reserve(dst, n + 8);
    for (size_t i = 0; i < n;) {
        unsigned char ch = (unsigned char)s[i];
        if (ch < 0x80) {
            sl_buf_putc(dst, (char)((ch >= 'A' && ch <= 'Z') ? ch + 32 : ch));
            i++;
            continue;
        }
        uint32_t cp;
        i += uc_next(s + i, n - i, &cp);
        char enc[4];
        size_t el = sl_utf8_encode((uint32_t)utf8proc_tolower((utf8proc_int32_t)cp), enc);
        sl_buf_append(dst, enc, el ? el : 0);
    }
}

static int c4b_apply(struct sl_filter *f, struct sl_fctx *c, struct sl_filter_result *r)
{
    struct c4b *b = f->state;
    struct bw_lang *L = NULL;
    for (size_t i = 0; i < b->nlangs; i++)
        if (!strcmp(b->langs[i].lang, c->lang))
            L = &b->langs[i];
    if (!L && b->nlangs < 64) {
        L = &b->langs[b->nlangs++];
        snprintf(L->lang, sizeof(L->lang), "%s", c->lang);
        int err;
        L->re = compile_badwords(c->lang, &err);
    }
    r->keep = 1;
    r->score = 0;
    if (!L || !L->re)
        return b->fail_missing ? sl_filter_drop(r, "missing_badwords_lang", 0) : 0;
    unicode_lower(&b->low, c->text, c->len);
    int rc = pcre2_match(L->re, (PCRE2_SPTR)(b->low.data ? b->low.data : ""), b->low.len, 0,
                         PCRE2_NO_UTF_CHECK, b->md, NULL);
    if (rc < 0)
        return 0;
    r->score = 1;
    if (b->keep_fraction > 0) {
        /* a per-document draw, so the result does not depend on processing order */
        struct sl_rng g;
        const char *id;
        size_t idn = 0;
        id = c->doc ? sl_doc_get_raw(c->doc, b->id_key, &idn) : NULL;
        sl_rng_seed(&g, b->seed ^ sl_hash64(id ? id : c->text, id ? idn : c->len, 1), 0);
        if (sl_rng_double(&g) < b->keep_fraction)
            return 0;
    }
    return sl_filter_drop(r, "document_removed_with_badwords", 1);
}

static void c4b_release(struct sl_filter *f)
{
    struct c4b *b = f->state;
    if (!b)
        return;
    for (size_t i = 0; i < b->nlangs; i++)
        pcre2_code_free(b->langs[i].re);
    pcre2_match_data_free(b->md);
    sl_buf_release(&b->low);
    free(b);
}

int sl_filter_build_c4_badwords(struct sl_filter *f, struct sl_cfg *p, const struct sl_filter_env *env)
{
    struct c4b *b = sl_xcalloc(1, sizeof(*b));
    f->state = b;
    f->apply = c4b_apply;
    f->release = c4b_release;
    b->md = pcre2_match_data_create(4, NULL);
    b->id_key = "id";
    int rc = 0;
    if (!rc) rc = sl_cfg_double(p, "keep_fraction", 0.0, &b->keep_fraction);
    if (!rc) rc = sl_cfg_u64(p, "seed", 0, &b->seed);
    if (!rc) rc = sl_cfg_bool(p, "fail_on_missing_language", 0, &b->fail_missing);
    (void)env;
    return rc;
}
