/* Benchmark decontamination: the task n-gram table and the per-document cut (decont.h). */
#include "curate/decont/decont.h"

#include "core/alloc.h"
#include "core/buf.h"
#include "core/config.h"
#include "core/doc.h"
#include "core/err.h"
#include "core/jsonl.h"
#include "core/poly61.h"

#include <json-c/json.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#define BASE_B UINT64_C(0x0F1E2D3C4B5A6978) /* second polynomial base, below SL_M61 */

/* Python's str.isspace() code points. */
static int py_space(int32_t c)
{
    return (c >= 9 && c <= 13) || (c >= 0x1c && c <= 0x20) || c == 0x85 || c == 0xa0 ||
           c == 0x1680 || (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 ||
           c == 0x202f || c == 0x205f || c == 0x3000;
}

/* string.punctuation */
static int py_punct(int32_t c)
{
    return (c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) ||
           (c >= 123 && c <= 126);
}

static uint64_t mix(uint64_t x)
{
    x ^= x >> 30;
    x *= UINT64_C(0xbf58476d1ce4e5b9);
    x ^= x >> 27;
    x *= UINT64_C(0x94d049bb133111eb);
    x ^= x >> 31;
    return x;
}

/* Words of text with their byte spans and hashes (of the lower-cased bytes) into w->w. */
static void split_words(struct sl_decont_work *w, const char *text, size_t n)
{
    const uint8_t *s = (const uint8_t *)text;
    w->nw = 0;
    size_t i = 0, ws = 0;
    int in = 0;
    uint64_t h = 0;
    while (i <= n) {
        int32_t cp = -1;
        size_t l = 1;
        if (i < n) {
            if (s[i] < 0x80)
                cp = s[i];
            else {
                utf8proc_ssize_t k = utf8proc_iterate(s + i, (utf8proc_ssize_t)(n - i), &cp);
                if (k <= 0) {
                    cp = 0xFFFD;
                    k = 1;
                }
                l = (size_t)k;
            }
        }
        int sep = i >= n || py_space(cp) || py_punct(cp);
        if (sep) {
            if (in) {
                if (w->nw == w->wcap) {
                    w->wcap = w->wcap ? w->wcap * 2 : 256;
                    w->w = sl_xrealloc(w->w, sl_mul_size(w->wcap, sizeof(*w->w)));
                }
                w->w[w->nw].start = (uint32_t)ws;
                w->w[w->nw].end = (uint32_t)i;
                w->w[w->nw].h = mix(h) % SL_M61;
                w->nw++;
                in = 0;
            }
        } else {
            if (!in) {
                in = 1;
                ws = i;
                h = UINT64_C(0xcbf29ce484222325);
            }
            int32_t lc = cp < 128 ? (cp >= 'A' && cp <= 'Z' ? cp + 32 : cp) : utf8proc_tolower(cp);
            /* hash the code point (FNV-1a over its 4 bytes is enough: words are short) */
            for (int b = 0; b < 4; b++) {
                h ^= (uint64_t)((uint32_t)lc >> (8 * b) & 0xff);
                h *= UINT64_C(0x100000001b3);
                if (b == 0 && lc < 128)
                    break;
            }
        }
        i += l;
    }
}

static void prefix(struct sl_decont_work *w)
{
    if (w->pcap < w->nw + 1) {
        w->pcap = (w->nw + 1) * 2;
        w->pa = sl_xrealloc(w->pa, sl_mul_size(w->pcap, sizeof(uint64_t)));
        w->pb = sl_xrealloc(w->pb, sl_mul_size(w->pcap, sizeof(uint64_t)));
    }
    w->pa[0] = w->pb[0] = 0;
    for (size_t i = 0; i < w->nw; i++) {
        w->pa[i + 1] = sl_add61(sl_mul61(w->pa[i], SL_POLY_BASE), w->w[i].h);
        w->pb[i + 1] = sl_add61(sl_mul61(w->pb[i], BASE_B), w->w[i].h);
    }
}

static uint64_t powa[64], powb[64];

static void key_of(const struct sl_decont_work *w, size_t i, int len, uint64_t *a, uint64_t *b)
{
    *a = sl_sub61(w->pa[i + (size_t)len], sl_mul61(w->pa[i], powa[len]));
    *b = sl_sub61(w->pb[i + (size_t)len], sl_mul61(w->pb[i], powb[len])) + 1; /* never 0 */
}

/* The bit of a key in the prefilter (most document n-grams are in no task). */
static inline uint64_t bit_of(const struct sl_decont *d, uint64_t a, uint64_t b)
{
    return ((a ^ (b << 17)) * UINT64_C(0x9E3779B97F4A7C15)) >> 20 & d->bmask;
}

static size_t slot_of(const struct sl_decont *d, uint64_t a, uint64_t b)
{
    size_t j = (size_t)mix(a ^ (b << 7)) & (d->cap - 1);
    while (d->slots[j].b && !(d->slots[j].a == a && d->slots[j].b == b))
        j = (j + 1) & (d->cap - 1);
    return j;
}

static void insert(struct sl_decont *d, uint64_t a, uint64_t b, uint32_t task)
{
    if ((d->n + 1) * 2 > d->cap) {
        struct sl_decont_slot *old = d->slots;
        size_t ocap = d->cap;
        d->cap = d->cap ? d->cap * 2 : 1024;
        d->slots = sl_xcalloc(d->cap, sizeof(*d->slots));
        for (size_t k = 0; k < ocap; k++)
            if (old[k].b)
                d->slots[slot_of(d, old[k].a, old[k].b)] = old[k];
        free(old);
    }
    size_t j = slot_of(d, a, b);
    if (d->slots[j].b)
        return; /* first task in config order keeps it */
    d->slots[j].a = a;
    d->slots[j].b = b;
    d->slots[j].task = task;
    d->n++;
    if ((d->n + 1) * 16 > d->bmask + 1) { /* keep about 16 prefilter bits per key */
        free(d->bits);
        d->bmask = (d->bmask + 1) * 4 - 1;
        d->bits = sl_xcalloc((d->bmask + 1) / 64, sizeof(uint64_t));
        for (size_t k = 0; k < d->cap; k++)
            if (d->slots[k].b) {
                uint64_t h = bit_of(d, d->slots[k].a, d->slots[k].b);
                d->bits[h >> 6] |= UINT64_C(1) << (h & 63);
            }
    } else {
        uint64_t h = bit_of(d, a, b);
        d->bits[h >> 6] |= UINT64_C(1) << (h & 63);
    }
    d->tasks[task].ngrams++;
}

static void add_len(struct sl_decont *d, int len)
{
    for (int k = 0; k < d->nlens; k++)
        if (d->lens[k] == len)
            return;
    d->lens[d->nlens++] = len;
    /* the full n-gram first, then shorter ones ascending (NeMo's order) */
    for (int k = 2; k < d->nlens; k++)
        for (int j = k; j > 1 && d->lens[j] < d->lens[j - 1]; j--) {
            int t = d->lens[j];
            d->lens[j] = d->lens[j - 1];
            d->lens[j - 1] = t;
        }
}

static void add_text(struct sl_decont *d, struct sl_decont_work *w, uint32_t task, const char *s,
                     size_t n)
{
    split_words(w, s, n);
    long N = d->o.ngram;
    if ((long)w->nw < d->o.min_task_words)
        return;
    prefix(w);
    d->tasks[task].texts++;
    uint64_t a, b;
    if ((long)w->nw < N) {
        key_of(w, 0, (int)w->nw, &a, &b);
        add_len(d, (int)w->nw);
        insert(d, a, b, task);
        return;
    }
    for (size_t i = 0; i + (size_t)N <= w->nw; i++) {
        key_of(w, i, (int)N, &a, &b);
        insert(d, a, b, task);
    }
}

static void on_task_skip(void *ctx, const char *reason, const char *message)
{
    struct sl_decont_task *tk = ctx;
    if (!strcmp(reason, "blank_line"))
        return;
    tk->bad_lines++;
    if (!tk->first_bad)
        tk->first_bad = sl_xstrdup(message ? message : reason);
}

static int read_task(struct sl_decont *d, struct sl_decont_work *w, uint32_t t)
{
    struct sl_decont_task *tk = &d->tasks[t];
    struct sl_buf val = SL_BUF_INIT;
    struct sl_doc doc;
    sl_doc_init(&doc);
    int rc = 0;
    for (size_t f = 0; f < tk->nfiles && !rc; f++) {
        struct sl_jsonl_reader *r = NULL;
        struct sl_jsonl_opts jo;
        memset(&jo, 0, sizeof(jo));
        jo.allow_missing_text = 1;
        jo.text_key = tk->fields[0];
        jo.on_skip = on_task_skip;
        jo.ctx = tk;
        rc = sl_jsonl_open(&r, tk->files[f], &jo);
        while (!rc) {
            int got = sl_jsonl_next(r, &doc);
            if (got < 0)
                rc = got;
            if (got <= 0)
                break;
            tk->records++;
            int used = 0;
            for (size_t k = 0; k < tk->nfields; k++) {
                struct json_object *j = sl_doc_get_json(&doc, tk->fields[k]);
                if (!j)
                    continue;
                if (json_object_is_type(j, json_type_string)) {
                    add_text(d, w, t, json_object_get_string(j),
                             (size_t)json_object_get_string_len(j));
                    used = 1;
                } else if (json_object_is_type(j, json_type_array)) {
                    for (size_t e = 0; e < json_object_array_length(j); e++) {
                        struct json_object *x = json_object_array_get_idx(j, e);
                        if (json_object_is_type(x, json_type_string)) {
                            add_text(d, w, t, json_object_get_string(x),
                                     (size_t)json_object_get_string_len(x));
                            used = 1;
                        }
                    }
                }
                json_object_put(j);
            }
            if (!used)
                tk->skipped++;
        }
        sl_jsonl_close(r);
        if (rc)
            rc = sl_err_wrap(rc, "task '%s': ", tk->name);
    }
    sl_doc_release(&doc);
    sl_buf_release(&val);
    return rc;
}

int sl_decont_load(struct sl_decont **out, const char *config, const struct sl_decont_opts *o)
{
    *out = NULL;
    if (o->ngram < 1 || o->ngram > 63)
        return sl_err_set(SL_ERR_USAGE, "--ngram must be 1 to 63, got %ld", o->ngram);
    if (o->min_task_words < 1 || o->min_task_words > o->ngram)
        return sl_err_set(SL_ERR_USAGE, "--min-task-words must be 1 to --ngram (%ld), got %ld",
                          o->ngram, o->min_task_words);
    powa[0] = powb[0] = 1;
    for (int k = 1; k < 64; k++) {
        powa[k] = sl_mul61(powa[k - 1], SL_POLY_BASE);
        powb[k] = sl_mul61(powb[k - 1], BASE_B);
    }
    struct sl_cfg *cfg = NULL;
    int rc = sl_cfg_load_file(&cfg, config);
    if (rc)
        return rc;
    struct sl_decont *d = sl_xcalloc(1, sizeof(*d));
    d->o = *o;
    d->lens[d->nlens++] = (int)o->ngram;
    d->bmask = (1u << 16) - 1;
    d->bits = sl_xcalloc((d->bmask + 1) / 64, sizeof(uint64_t));
    char *tmp = sl_xstrdup(config);
    char *dir = sl_xstrdup(dirname(tmp));
    free(tmp);
    struct sl_cfg *tasks = sl_cfg_child(cfg, "tasks");
    size_t nt = 0;
    while (tasks && sl_cfg_item(tasks, nt))
        nt++;
    if (!nt)
        rc = sl_err_set(
            SL_ERR_CONFIG,
            "%s: no tasks\nhint: tasks: [{name: NAME, files: [F.jsonl], fields: [text]}]", config);
    d->tasks = sl_xcalloc(nt ? nt : 1, sizeof(*d->tasks));
    for (size_t t = 0; t < nt && !rc; t++) {
        struct sl_cfg *it = sl_cfg_item(tasks, t);
        struct sl_decont_task *tk = &d->tasks[t];
        d->ntasks++;
        const char *name = NULL;
        const char **files = NULL, **fields = NULL;
        rc = sl_cfg_str(it, "name", NULL, &name);
        if (!rc && (!name || !*name))
            rc = sl_err_set(SL_ERR_CONFIG, "%s: task without a name", sl_cfg_where(it));
        for (size_t k = 0; !rc && k < t; k++)
            if (!strcmp(d->tasks[k].name, name))
                rc = sl_err_set(SL_ERR_CONFIG, "%s: task '%s' named twice", sl_cfg_where(it), name);
        if (!rc) {
            tk->name = sl_xstrdup(name);
            for (const char *c = name; *c && !rc; c++)
                if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
                      (*c >= '0' && *c <= '9') || *c == '_' || *c == '-' || *c == '.'))
                    rc = sl_err_set(SL_ERR_CONFIG,
                                    "%s: task name '%s': use letters, digits, '_', '-', '.'",
                                    sl_cfg_where(it), name);
        }
        if (!rc)
            rc = sl_cfg_strs(it, "files", &files, &tk->nfiles);
        if (!rc)
            rc = sl_cfg_strs(it, "fields", &fields, &tk->nfields);
        if (!rc && !tk->nfiles)
            rc = sl_err_set(SL_ERR_CONFIG, "%s: task '%s' has no files", sl_cfg_where(it), name);
        if (!rc && !tk->nfields)
            rc = sl_err_set(SL_ERR_CONFIG,
                            "%s: task '%s' has no fields (the members with its texts)",
                            sl_cfg_where(it), name);
        if (!rc) {
            tk->files = sl_xcalloc(tk->nfiles, sizeof(char *));
            tk->fields = sl_xcalloc(tk->nfields, sizeof(char *));
            for (size_t k = 0; k < tk->nfiles; k++)
                tk->files[k] = files[k][0] == '/' ? sl_xstrdup(files[k])
                                                  : sl_xasprintf("%s/%s", dir, files[k]);
            for (size_t k = 0; k < tk->nfields; k++)
                tk->fields[k] = sl_xstrdup(fields[k]);
        }
        free(files);
        free(fields);
    }
    if (!rc)
        rc = sl_cfg_check_unused(cfg);
    struct sl_decont_work w;
    sl_decont_work_init(&w, d);
    for (size_t t = 0; t < d->ntasks && !rc; t++)
        rc = read_task(d, &w, (uint32_t)t);
    sl_decont_work_release(&w);
    free(dir);
    sl_cfg_free(cfg);
    if (rc) {
        sl_decont_free(d);
        return rc;
    }
    *out = d;
    return 0;
}

void sl_decont_free(struct sl_decont *d)
{
    if (!d)
        return;
    for (size_t t = 0; t < d->ntasks; t++) {
        struct sl_decont_task *tk = &d->tasks[t];
        for (size_t k = 0; k < tk->nfiles && tk->files; k++)
            free(tk->files[k]);
        for (size_t k = 0; k < tk->nfields && tk->fields; k++)
            free(tk->fields[k]);
        free(tk->files);
        free(tk->fields);
        free(tk->name);
        free(tk->first_bad);
    }
    free(d->tasks);
    free(d->slots);
    free(d->bits);
    free(d);
}

void sl_decont_settings(const struct sl_decont *d, struct sl_buf *out)
{
    sl_buf_printf(out,
                  "{\"ngram\":%ld,\"min_task_words\":%ld,\"margin\":%ld,\"min_length\":%ld,\"max_"
                  "splits\":%ld,\"tasks\":[",
                  d->o.ngram, d->o.min_task_words, d->o.margin, d->o.min_length, d->o.max_splits);
    for (size_t t = 0; t < d->ntasks; t++) {
        const struct sl_decont_task *tk = &d->tasks[t];
        if (t)
            sl_buf_putc(out, ',');
        sl_buf_puts(out, "{\"name\":");
        sl_buf_json_str(out, tk->name, strlen(tk->name));
        sl_buf_puts(out, ",\"files\":[");
        for (size_t k = 0; k < tk->nfiles; k++) {
            if (k)
                sl_buf_putc(out, ',');
            sl_buf_json_str(out, tk->files[k], strlen(tk->files[k]));
        }
        sl_buf_puts(out, "],\"fields\":[");
        for (size_t k = 0; k < tk->nfields; k++) {
            if (k)
                sl_buf_putc(out, ',');
            sl_buf_json_str(out, tk->fields[k], strlen(tk->fields[k]));
        }
        sl_buf_printf(out,
                      "],\"records\":%llu,\"texts\":%llu,\"ngrams\":%llu,\"records_without_text\":%"
                      "llu,\"bad_lines\":%llu}",
                      (unsigned long long)tk->records, (unsigned long long)tk->texts,
                      (unsigned long long)tk->ngrams, (unsigned long long)tk->skipped,
                      (unsigned long long)tk->bad_lines);
    }
    sl_buf_puts(out, "]}");
}

void sl_decont_work_init(struct sl_decont_work *w, const struct sl_decont *d)
{
    memset(w, 0, sizeof(*w));
    w->task_matches = sl_xcalloc(d->ntasks ? d->ntasks : 1, sizeof(uint64_t));
}

void sl_decont_work_release(struct sl_decont_work *w)
{
    free(w->w);
    free(w->pa);
    free(w->pb);
    free(w->pieces);
    free(w->task_matches);
    memset(w, 0, sizeof(*w));
}

static void push_piece(struct sl_decont_work *w, size_t off, size_t len)
{
    if (w->npieces == w->piececap) {
        w->piececap = w->piececap ? w->piececap * 2 : 8;
        w->pieces = sl_xrealloc(w->pieces, sl_mul_size(w->piececap, sizeof(*w->pieces)));
    }
    w->pieces[w->npieces].off = off;
    w->pieces[w->npieces].len = len;
    w->npieces++;
}

static size_t cps(const char *s, size_t a, size_t b)
{
    size_t c = 0;
    for (size_t i = a; i < b; i++)
        c += ((unsigned char)s[i] & 0xC0) != 0x80;
    return c;
}

static int sent_end(char c)
{
    return c == '.' || c == '!' || c == '?';
}

void sl_decont_doc(const struct sl_decont *d, struct sl_decont_work *w, const char *s, size_t n)
{
    w->npieces = 0;
    w->matches = w->short_pieces = 0;
    w->dropped = 0;
    for (size_t t = 0; t < d->ntasks; t++)
        w->task_matches[t] = 0;
    split_words(w, s, n);
    prefix(w);
    size_t cur = 0, wi = 0;
    for (;;) {
        long hit = -1;
        int hlen = 0;
        uint32_t task = 0;
        for (size_t i = wi; i < w->nw && hit < 0 && d->n; i++)
            for (int k = 0; k < d->nlens; k++) {
                int L = d->lens[k];
                if (i + (size_t)L > w->nw)
                    continue;
                uint64_t a, b;
                key_of(w, i, L, &a, &b);
                uint64_t h = bit_of(d, a, b);
                if (!(d->bits[h >> 6] >> (h & 63) & 1))
                    continue;
                size_t j = slot_of(d, a, b);
                if (d->slots[j].b) {
                    hit = (long)i;
                    hlen = L;
                    task = d->slots[j].task;
                    break;
                }
            }
        if (hit < 0) {
            push_piece(w, cur, n - cur);
            break;
        }
        w->matches++;
        w->task_matches[task]++;
        size_t ws = w->w[hit].start, we = w->w[hit + hlen - 1].end;
        /* before: back `margin` code points from the n-gram, then to a sentence end */
        size_t pos = ws;
        long m = d->o.margin;
        int before = 1;
        while (m > 0) {
            if (pos <= cur) {
                before = 0;
                break;
            }
            pos--;
            while (pos > cur && ((unsigned char)s[pos] & 0xC0) == 0x80)
                pos--;
            m--;
        }
        if (before) {
            while (pos > cur && !sent_end(s[pos]))
                pos--;
            if (pos > cur) {
                if ((long)cps(s, cur, pos + 1) > d->o.min_length)
                    push_piece(w, cur, pos + 1 - cur);
                else
                    w->short_pieces++;
            }
        }
        /* after: forward `margin` code points, then past the next sentence end */
        pos = we;
        for (m = d->o.margin; m > 0 && pos < n; m--) {
            pos++;
            while (pos < n && ((unsigned char)s[pos] & 0xC0) == 0x80)
                pos++;
        }
        while (pos < n && !sent_end(s[pos]))
            pos++;
        if (pos + 1 >= n)
            break;
        cur = pos + 1;
        if ((long)cps(s, cur, n) <= d->o.min_length) {
            w->short_pieces++;
            break;
        }
        while (wi < w->nw && w->w[wi].start < cur)
            wi++;
    }
    if (!w->npieces)
        w->dropped = 2;
    else if ((long)w->npieces > d->o.max_splits)
        w->dropped = 1;
}
