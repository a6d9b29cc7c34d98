/* --format pile|c4|jsonl: JSONL corpora -> uniform documents. The Pile's meta.pile_set_name
 * becomes `source`; C4/mC4 files give `lang` from their name; generic JSONL takes its text
 * from --text-key. Other members pass through byte for byte. */
#include "curate/extract/extract.h"

#include "core/buf.h"
#include "core/counters.h"
#include "core/doc.h"
#include "core/err.h"
#include "core/inputs.h"
#include "core/jsonl.h"
#include "core/stream.h"

#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *extract_c4_lang(const char *path, char *buf, size_t n)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    if (strncmp(base, "c4-", 3) != 0)
        return NULL;
    const char *p = base + 3;
    /* C4 English: c4-train.00000-of-01024.json.gz, c4-validation..., */
    if (!strncmp(p, "train.", 6) || !strncmp(p, "validation.", 11))
        return "en";
    /* mC4: c4-de.tfrecord-..., c4-de-validation.tfrecord-..., c4-zh-Latn.tfrecord-... */
    size_t k = 0;
    while (p[k] && p[k] != '.' && k + 1 < n) {
        if (!strncmp(p + k, "-validation", 11) || !strncmp(p + k, "-train", 6))
            break;
        k++;
    }
    if (k < 2 || k > 10 || k + 1 >= n)
        return NULL;
    for (size_t i = 0; i < k; i++) {
        char ch = p[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '-'))
            return NULL;
    }
    memcpy(buf, p, k);
    buf[k] = 0;
    if (!strcmp(buf, "und"))
        return NULL;
    return buf;
}

/* One file's documents: where they come from, what to set in each, where they go. */
struct jsonl_job {
    const struct extract_opts *o;
    struct sl_counters *c;
    size_t s_in, s_bytes; /* slots of documents_in and bytes_in */
    const char *text_key;
    int pile;
    const char *lang, *source; /* set when the document has none (NULL: nothing) */
    extract_emit_fn emit;
    void *ctx;
};

static void on_skip(void *ctx, const char *reason, const char *message)
{
    struct jsonl_job *j = ctx;
    if (message && j->o->on_warn)
        j->o->on_warn(j->o->warn_ctx, reason, message);
}

/* The Pile's meta.pile_set_name as the document's source. */
static int pile_source(const struct jsonl_job *j, struct sl_doc *d)
{
    struct json_object *meta = sl_doc_get_json(d, "meta"), *set = NULL;
    int rc;
    if (meta && json_object_object_get_ex(meta, "pile_set_name", &set) &&
        json_object_is_type(set, json_type_string)) {
        /* whole, also past a \u0000 */
        const char *s = json_object_get_string(set);
        rc = sl_doc_set_str(d, "source", s, (size_t)json_object_get_string_len(set));
    } else {
        sl_counters_add(j->c, "documents_without_pile_set_name", 1);
        const char *s = j->o->source ? j->o->source : "pile";
        rc = sl_doc_set_str(d, "source", s, strlen(s));
    }
    if (meta)
        json_object_put(meta);
    return rc;
}

static int jsonl_doc(void *arg, struct sl_jsonl_reader *r, struct sl_doc *d)
{
    struct jsonl_job *j = arg;
    const struct extract_opts *o = j->o;
    int rc = 0;
    (void)r;
    j->c->values[j->s_in]++;
    j->c->values[j->s_bytes] += d->raw.len + 1;
    if (strcmp(j->text_key, "text") != 0) {
        /* the text moves to "text" (set_str copies before the old member goes) */
        size_t tl;
        const char *t = sl_doc_text(d, &tl);
        rc = sl_doc_set_str(d, "text", t, tl);
        sl_doc_remove(d, j->text_key);
    }
    if (!rc && j->pile)
        rc = pile_source(j, d);
    else if (!rc && o->source)
        rc = sl_doc_set_str(d, "source", o->source, strlen(o->source));
    else if (!rc && j->source && sl_doc_find(d, "source") < 0)
        rc = sl_doc_set_str(d, "source", j->source, strlen(j->source));
    if (!rc && j->lang && sl_doc_find(d, "lang") < 0)
        rc = sl_doc_set_str(d, "lang", j->lang, strlen(j->lang));
    return rc ? rc : j->emit(j->ctx, d);
}

static uint64_t skipped_lines(const struct sl_counters *c)
{
    uint64_t n = 0;
    for (size_t i = 0; i < c->n; i++)
        if (!strncmp(c->names[i], "skipped_", 8))
            n += c->values[i];
    return n;
}

int extract_open_source(const struct extract_input *in, struct sl_source **out)
{
    return in->file ? sl_input_source(out, in->file) : sl_source_file(out, in->path);
}

int extract_jsonl_file(const struct extract_input *in, const struct extract_opts *o,
                       extract_emit_fn emit, void *ctx, struct sl_counters *c)
{
    const char *fmt = o->format ? o->format : "jsonl";
    int pile = !strcmp(fmt, "pile"), c4 = !strcmp(fmt, "c4");
    char langbuf[32];
    struct jsonl_job j = { .o = o,
                           .c = c,
                           .text_key = o->text_key && !pile && !c4 ? o->text_key : "text",
                           .pile = pile,
                           .lang = c4 ? extract_c4_lang(in->rel, langbuf, sizeof(langbuf)) : NULL,
                           .source = o->source,
                           .emit = emit,
                           .ctx = ctx };
    if (!j.source && c4)
        j.source = j.lang && strcmp(j.lang, "en") != 0 ? "mc4" : "c4";

    char *stem = sl_jsonl_id_stem(in->rel);
    struct sl_jsonl_opts jo = { .max_line = o->max_record ? (size_t)o->max_record : 0,
                                .text_key = j.text_key,
                                .id_prefix = stem,
                                .max_output = o->max_output,
                                .counters = c,
                                .on_skip = on_skip,
                                .ctx = &j };
    struct sl_jsonl_reader *r = NULL;
    struct sl_source *src = NULL;
    int rc = extract_open_source(in, &src);
    if (!rc)
        rc = sl_jsonl_open_source(&r, src, &jo);
    /* (after the reader's counters, so that the counts keep their order) */
    j.s_in = sl_counters_slot(c, "documents_in");
    j.s_bytes = sl_counters_slot(c, "bytes_in");
    uint64_t skipped0 = skipped_lines(c);
    if (!rc)
        rc = sl_jsonl_each(r, jsonl_doc, &j);
    if (r) {
        /* lines of a damaged zstd frame, held back by the reader and dropped */
        uint64_t dropped = sl_reader_dropped_lines(sl_jsonl_stream(r));
        if (dropped)
            sl_counters_add(c, "skipped_corrupt", dropped);
    }
    /* every line is a document or a skip: the reader's skips are lines read too */
    c->values[j.s_in] += skipped_lines(c) - skipped0;
    sl_jsonl_close(r);
    free(stem);
    return rc;
}
