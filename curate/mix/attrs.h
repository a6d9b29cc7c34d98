/* Attributes of documents in Dolma's attributes layout, and the rules of `sluice mix`
 * over them (docs/formats/attributes.md).
 *
 * An attributes file holds one JSON line per document of its documents file, in the same
 * order: {"id": ID, "attributes": {"EXP__TAGGER__NAME": [[start, end, score], ...], ...}}
 * (spans in code points of the text, end excluded; a document-level value is one span
 * over the whole text). A rule is "NAME OP NUMBER", OP one of < <= > >= == !=: over a
 * document it reads the first span's score of NAME; over spans, each span's score. A score
 * that is missing, null or not a number makes every rule false.
 */
#ifndef SL_MIX_ATTRS_H
#define SL_MIX_ATTRS_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/doc.h"

struct json_object;

enum sl_attr_op { SL_ATTR_LT, SL_ATTR_LE, SL_ATTR_GT, SL_ATTR_GE, SL_ATTR_EQ, SL_ATTR_NE };

struct sl_attr_rule {
    char *name; /* owned */
    enum sl_attr_op op;
    double value;
};

/* Parse "NAME OP NUMBER" (spaces around OP optional; NAME of letters, digits, '_', '-', '.').
 * 0, or SL_ERR_USAGE with a message quoting the rule (r is then empty). */
int sl_attr_rule_parse(struct sl_attr_rule *r, const char *text);
void sl_attr_rule_release(struct sl_attr_rule *r);
/* Whether `score OP value` holds; false for NaN. */
int sl_attr_rule_holds(const struct sl_attr_rule *r, double score);

struct sl_attr_span {
    uint64_t start, end; /* code points, end excluded */
    double score;        /* NaN when null */
};

/* One attributes line, parsed; reused from line to line. */
struct sl_attr_line {
    struct sl_doc doc;
    struct sl_buf id;           /* "id": a string decoded, another value as its JSON */
    struct json_object *attrs;  /* the "attributes" object */
    struct sl_attr_span *spans; /* sl_attr_line_spans' result */
    size_t nspans, cap;
};
void sl_attr_line_init(struct sl_attr_line *l);
void sl_attr_line_release(struct sl_attr_line *l);
/* Parse one line: an object with an "id" (in l->id as sl_doc_get_text_form gives it) and
 * an object "attributes". 0, or
 * SL_ERR_FORMAT with a message starting "<where>: " (the caller's "FILE:LINE"). */
int sl_attr_line_parse(struct sl_attr_line *l, const char *line, size_t len, const char *where);
/* Whether the line has attribute `name`. */
int sl_attr_line_has(const struct sl_attr_line *l, const char *name);
/* The spans of attribute `name` into l->spans / l->nspans (none when it is absent). Each
 * must be [start, end, score] with integers 0 <= start <= end and a number or null score,
 * else SL_ERR_FORMAT naming `where` and the attribute. */
int sl_attr_line_spans(struct sl_attr_line *l, const char *name, const char *where);
/* The document-level score of `name`: the first span's score, NaN when there is none. */
int sl_attr_line_score(struct sl_attr_line *l, const char *name, const char *where, double *score);

/* Spans to cut out of one text (code points), from any number of rules and files. */
struct sl_attr_cuts {
    struct sl_attr_span *v;
    size_t n, cap;
};
/* Add the spans of l->spans (sl_attr_line_spans) whose score satisfies r; *added counts
 * them. A span past the text's end (nchar code points) is SL_ERR_FORMAT naming `where`:
 * the attributes belong to another text. */
int sl_attr_cuts_add(struct sl_attr_cuts *c, const struct sl_attr_line *l,
                     const struct sl_attr_rule *r, uint64_t nchar, const char *where,
                     uint64_t *added);
/* The text (valid UTF-8) without the cuts (overlapping spans merge) into out (reset first);
 * *chars: code points cut. Empties c. */
void sl_attr_cuts_apply(struct sl_attr_cuts *c, const char *text, size_t len, struct sl_buf *out,
                        uint64_t *chars);
void sl_attr_cuts_release(struct sl_attr_cuts *c);

/* Code points of UTF-8 text: its bytes that are not continuation bytes (the spans' unit). */
uint64_t sl_attr_nchar(const char *text, size_t len);

/* Dolma's variable name of a tagger's or attribute's name: every byte outside
 * [A-Za-z0-9_] as '_', appended to out. */
void sl_attr_put_name(struct sl_buf *out, const char *name);

#endif
