/* Fuzz the Punkt parameters reader, the sentence splitter and the trainer: the input up to
 * its first NUL byte is one punkt_tab file (which of the four: the input's size mod 4),
 * parsed into parameters (it may be refused, never crash); the rest is text, split with
 * them in both modes and in pieces (spans in order, not empty, within the text), then
 * trained on. The trained parameters must write out and read back to the same ones. */
#include "core/buf.h"
#include "tokenize/punkt.h"
#include "tokenize/punkt_params.h"
#include "tokenize/punkt_train.h"

#include <stdlib.h>
#include <string.h>

static void check_spans(const struct punkt_spans *s, size_t n)
{
    size_t last = 0;
    for (size_t i = 0; i < s->n; i++) {
        if (s->v[i].start < last || s->v[i].start >= s->v[i].end || s->v[i].end > n)
            abort();
        last = s->v[i].end;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *nul = memchr(data, 0, size);
    size_t plen = nul ? (size_t)(nul - data) : 0;
    const char *text = nul ? (const char *)nul + 1 : (const char *)data;
    size_t tlen = nul ? size - plen - 1 : size;
    struct punkt_params *p = punkt_params_new();
    if (punkt_params_parse(p, (enum punkt_file)(size % PUNKT_NFILES), "fuzz", (const char *)data,
                           plen)) {
        punkt_params_free(p);
        p = punkt_params_new();
    }
    struct punkt_spans s = { 0 };
    for (int keep = 0; keep < 2; keep++) {
        struct punkt *k = punkt_new(p, keep);
        s.n = 0;
        punkt_split(k, text, tlen, &s);
        check_spans(&s, tlen);
        s.n = 0;
        punkt_split_pieces(k, text, tlen, 1 + size % 17, &s);
        check_spans(&s, tlen);
        punkt_free(k);
    }
    punkt_spans_release(&s);
    punkt_params_free(p);

    struct punkt_trainer *t = punkt_trainer_new();
    if (punkt_trainer_add(t, text, tlen) || punkt_trainer_add(t, (const char *)data, plen))
        abort();
    struct punkt_params *q;
    if (punkt_trainer_finish(t, &q, NULL))
        abort();
    punkt_trainer_free(t);
    /* what is written reads back the same, file by file (a trained type never holds a tab
     * or a line end, nor invalid UTF-8 when the text had none) */
    struct punkt_params *r = punkt_params_new();
    struct sl_buf b = SL_BUF_INIT, c = SL_BUF_INIT;
    for (int f = 0; f < PUNKT_NFILES; f++) {
        sl_buf_reset(&b);
        punkt_params_format(q, (enum punkt_file)f, &b);
        if (punkt_params_parse(r, (enum punkt_file)f, "back", b.data ? b.data : "", b.len) == 0) {
            sl_buf_reset(&c);
            punkt_params_format(r, (enum punkt_file)f, &c);
            /* one empty type alone is written as an empty file and read as no type */
            if (b.len != c.len || (b.len && memcmp(b.data, c.data, b.len)))
                abort();
        }
    }
    sl_buf_release(&b);
    sl_buf_release(&c);
    punkt_params_free(r);
    punkt_params_free(q);
    return 0;
}
