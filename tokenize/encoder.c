/* The threaded encoder of tokenize/encoder.h: batches of lines in a ring, parsed and
 * encoded by worker threads, written in order by whichever thread finds the oldest one
 * finished. */
#include "tokenize/encoder.h"

#include "core/alloc.h"
#include "core/buf.h"
#include "core/counters.h"
#include "core/doc.h"
#include "core/err.h"
#include "core/jsonl.h"
#include "core/progress.h"
#include "dataset/idx.h"
#include "tokenize/punkt.h"
#include "tokenize/tokenizer.h"

#include <json-c/json.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A batch: up to 128 KiB of lines or 4096 of them. Small enough that its buffers (the
 * lines, the decoded texts, the ids) stay in the core's own caches from parsing to writing,
 * and that the ring of batches faults in few pages (1 MiB batches: 8.2k page faults for
 * the 26.6 MB corpus, 64 MB peak; 128 KiB: 5.1k, 53 MB, 4% less CPU). */
#define BATCH_BYTES (1u << 17)
#define BATCH_DOCS  4096

/* Documents of one batch: for each key, the texts (concatenated) and, after encoding, the
 * sequences of each document. */
struct kbatch {
    struct sl_buf text;
    size_t *tend;     /* per text: end offset in text */
    uint32_t *ntexts; /* per document: texts (0: missing key; >1: a list of sentences) */
    uint8_t *kstat;   /* per document: 0 texts, 1 key missing, 2 key not a string (nor a list) */
    uint8_t *listed;  /* per document: its texts were a list (sentences already) */
    size_t ntext, captext;
    uint64_t sentences; /* --split-sentences: sentences found */
    struct tok_ids toks;
    uint32_t *seqlen; /* per sequence */
    size_t nseq, capseq;
    uint32_t *docseq; /* per document: sequences */
    int repaired;
};

/* One input line of a batch and what became of it. */
struct line {
    uint64_t line_no;
    uint64_t bytes;  /* a document's JSON object, + 1 for its newline (bytes_in) */
    size_t end;      /* end offset in the batch's lines */
    size_t msg;      /* a skip's message: offset in the batch's messages */
    uint8_t outcome; /* enum sl_jsonl_outcome */
    uint8_t repaired;
};

struct batch {
    struct kbatch *k;
    struct sl_buf lines; /* the raw lines, back to back (the reading thread) */
    struct line *line;
    size_t nlines, caplines;
    struct sl_buf msgs; /* messages of the skipped lines, NUL-terminated (the workers) */
    const struct sl_jsonl_opts *jo;
    const char *name;
    size_t ndocs, capdocs;
    int state; /* 0 free, 1 filling, 2 queued, 3 encoding, 4 done */
    int rc;
    char err[256];
};

struct encoder {
    struct tokenizer *tok;
    const char *const *keys;
    size_t nkeys;
    const struct punkt_params *punkt; /* sentence splitting */
    int keep_newlines, append_eod;
    uint32_t eod_id;
    char **ckey_tokens, **ckey_empty, **ckey_sentences; /* counter names per key */
    struct batch *ring;
    size_t nring;
    size_t head, tail; /* batches [head, tail) are in flight, in order */
    size_t next_job;   /* next batch index (mod nring) a worker takes */
    pthread_mutex_t mu;
    pthread_cond_t cv_work, cv_done;
    int quit;
    pthread_t *threads;
    long nthreads;
    /* the unit (encoder_begin): its reader, writers and counts */
    struct sl_jsonl_reader *r;
    struct idx_writer **w;
    struct sl_counters *c;
    /* writing finished batches (retire_ready): whether a thread is at it, and the unit's
     * first failure, which stops it (wmsg: its message) */
    int retiring;
    int wrc;
    char wmsg[512];
    int timed;             /* the reading thread's CPU is measured (a system call a time) */
    double cpu0;           /* its CPU time at encoder_begin */
    double reader_writing; /* CPU seconds the reading thread spent writing, this unit */
};

static void kbatch_reset(struct kbatch *k)
{
    sl_buf_reset(&k->text);
    k->ntext = 0;
    k->toks.n = 0;
    k->nseq = 0;
    k->repaired = 0;
    k->sentences = 0;
}

static void kbatch_release(struct kbatch *k)
{
    sl_buf_release(&k->text);
    free(k->tend);
    free(k->ntexts);
    free(k->kstat);
    free(k->listed);
    tok_ids_release(&k->toks);
    free(k->seqlen);
    free(k->docseq);
}

static void push_text_end(struct kbatch *k)
{
    if (k->ntext == k->captext) {
        k->captext = k->captext ? k->captext * 2 : 1024;
        k->tend = sl_xrealloc(k->tend, k->captext * sizeof(*k->tend));
    }
    k->tend[k->ntext++] = k->text.len;
}

static void push_seq(struct kbatch *k, uint32_t len)
{
    if (k->nseq == k->capseq) {
        k->capseq = k->capseq ? k->capseq * 2 : 1024;
        k->seqlen = sl_xrealloc(k->seqlen, k->capseq * sizeof(*k->seqlen));
    }
    k->seqlen[k->nseq++] = len;
}

static void add_doc(struct encoder *e, struct batch *b, struct sl_doc *doc);

/* A worker's own parsing state. */
struct parser {
    struct sl_doc doc;
    struct sl_buf fixed;
};

/* Parse every line of a batch into documents (worker side): texts into the keys' batches,
 * skipped lines marked with their reason and message. */
static void parse_batch(struct encoder *e, struct parser *ps, struct batch *b)
{
    b->ndocs = 0;
    for (size_t i = 0; i < b->nlines; i++) {
        struct line *li = &b->line[i];
        if (li->outcome != SL_JSONL_DOC)
            continue; /* cut by the reader (too long): its message is there already */
        size_t beg = i ? b->line[i - 1].end : 0;
        struct sl_jsonl_line l = { .line_no = li->line_no, .outcome = SL_JSONL_DOC };
        if (sl_jsonl_parse_line(b->jo, b->name, b->lines.data + beg, li->end - beg, &ps->doc,
                                &ps->fixed, &l)) {
            li->bytes = ps->doc.raw.len + 1;
            add_doc(e, b, &ps->doc);
        } else {
            li->outcome = (uint8_t)l.outcome;
            li->msg = b->msgs.len;
            sl_buf_append(&b->msgs, l.message, strlen(l.message) + 1);
        }
        li->repaired = (uint8_t)l.repaired;
    }
}

/* Megatron's preprocess_data.py hands Punkt a text this many characters at a time */
#define MEGATRON_SPLIT_CHARS 1000000

/* A worker's encoder and, with --split-sentences, its sentence splitter. */
struct wstate {
    struct tokenizer_enc *enc;
    struct punkt *punkt;
    struct punkt_spans spans;
};

/* Encode s[0..n) as one sequence of kb (none when it has no tokens, as Megatron drops
 * sentences without tokens); *nseq counts the sequences. */
static int encode_seq(struct kbatch *kb, struct tokenizer_enc *enc, const char *s, size_t n,
                      uint32_t *nseq)
{
    size_t before = kb->toks.n;
    int rc = tokenizer_encode(enc, s, n, &kb->toks);
    if (rc < 0)
        return rc;
    kb->repaired += rc;
    size_t got = kb->toks.n - before;
    if (got == 0)
        return 0;
    if (got > INT32_MAX)
        return sl_err_set(SL_ERR_TOOBIG, "a document has more tokens than the format allows");
    push_seq(kb, (uint32_t)got);
    (*nseq)++;
    return 0;
}

/* Encode a text as its sentences, each one sequence. */
static int encode_sentences(struct kbatch *kb, struct wstate *ws, const char *s, size_t n,
                            uint32_t *nseq)
{
    ws->spans.n = 0;
    punkt_split_pieces(ws->punkt, s, n, MEGATRON_SPLIT_CHARS, &ws->spans);
    kb->sentences += ws->spans.n;
    for (size_t i = 0; i < ws->spans.n; i++) {
        const struct punkt_span *sp = &ws->spans.v[i];
        int rc = encode_seq(kb, ws->enc, s + sp->start, sp->end - sp->start, nseq);
        if (rc)
            return rc;
    }
    return 0;
}

/* Encode every document of a batch (worker side). */
static int encode_batch(struct encoder *e, struct wstate *ws, struct batch *b)
{
    for (size_t k = 0; k < e->nkeys; k++) {
        struct kbatch *kb = &b->k[k];
        size_t t = 0, start = 0;
        for (size_t d = 0; d < b->ndocs; d++) {
            uint32_t nseq = 0;
            for (uint32_t s = 0; s < kb->ntexts[d]; s++, t++) {
                const char *text = kb->text.data + start;
                size_t n = kb->tend[t] - start;
                start = kb->tend[t];
                int split = ws->punkt && !kb->listed[d];
                kb->sentences += ws->punkt && kb->listed[d]; /* a list's items are sentences */
                int rc = split ? encode_sentences(kb, ws, text, n, &nseq)
                               : encode_seq(kb, ws->enc, text, n, &nseq);
                if (rc)
                    return rc;
            }
            if (nseq && e->append_eod) {
                int rc = tok_ids_push(&kb->toks, (uint32_t)e->eod_id);
                if (rc)
                    return rc;
                kb->seqlen[kb->nseq - 1]++;
            }
            kb->docseq[d] = nseq;
        }
    }
    return 0;
}

static void retire_ready(struct encoder *e);

static void *worker(void *arg)
{
    struct encoder *e = arg;
    struct wstate ws = { tokenizer_enc_new(e->tok), NULL, { 0 } };
    if (e->punkt)
        ws.punkt = punkt_new(e->punkt, e->keep_newlines);
    struct parser ps;
    sl_doc_init(&ps.doc);
    sl_buf_init(&ps.fixed, 0);
    pthread_mutex_lock(&e->mu);
    for (;;) {
        while (!e->quit && (e->next_job == e->tail || e->ring[e->next_job % e->nring].state != 2))
            pthread_cond_wait(&e->cv_work, &e->mu);
        if (e->quit)
            break;
        struct batch *b = &e->ring[e->next_job % e->nring];
        e->next_job++;
        b->state = 3;
        pthread_mutex_unlock(&e->mu);
        sl_err_clear();
        parse_batch(e, &ps, b);
        b->rc = encode_batch(e, &ws, b);
        if (b->rc)
            snprintf(b->err, sizeof(b->err), "%s", sl_err_msg());
        pthread_mutex_lock(&e->mu);
        b->state = 4;
        if (e->nthreads > 1) /* one worker: the reading thread writes while it encodes */
            retire_ready(e);
        pthread_cond_broadcast(&e->cv_done);
    }
    pthread_mutex_unlock(&e->mu);
    tokenizer_enc_free(ws.enc);
    punkt_free(ws.punkt);
    punkt_spans_release(&ws.spans);
    sl_doc_release(&ps.doc);
    sl_buf_release(&ps.fixed);
    return NULL;
}

/* Count and report a batch's lines in order, as the JSONL reader would have. */
static void count_lines(struct encoder *e, struct batch *b)
{
    size_t d = 0;
    for (size_t i = 0; i < b->nlines; i++) {
        const struct line *li = &b->line[i];
        struct sl_jsonl_line l;
        l.line_no = li->line_no;
        l.outcome = (enum sl_jsonl_outcome)li->outcome;
        l.repaired = li->repaired;
        l.message[0] = 0;
        if (li->outcome != SL_JSONL_DOC && li->outcome != SL_JSONL_BLANK)
            snprintf(l.message, sizeof(l.message), "%s", b->msgs.data + li->msg);
        sl_jsonl_count_line(e->r, &l);
        if (li->outcome != SL_JSONL_DOC)
            continue;
        sl_counters_add(e->c, "documents_in", 1);
        sl_counters_add(e->c, "bytes_in", li->bytes);
        for (size_t k = 0; k < e->nkeys; k++) {
            uint8_t st = b->k[k].kstat[d];
            if (st) {
                char name[160];
                snprintf(name, sizeof(name), "%s%s%s", st == 1 ? "missing_key" : "key_not_string",
                         k ? "_" : "", k ? e->keys[k] : "");
                sl_counters_add(e->c, name, 1);
            }
        }
        d++;
    }
}

static int write_batch(struct encoder *e, struct batch *b)
{
    count_lines(e, b);
    for (size_t k = 0; k < e->nkeys; k++) {
        struct kbatch *kb = &b->k[k];
        size_t s = 0, off = 0;
        for (size_t d = 0; d < b->ndocs; d++) {
            for (uint32_t i = 0; i < kb->docseq[d]; i++, s++) {
                int rc = idx_writer_add_sequence(e->w[k], kb->toks.v + off, kb->seqlen[s]);
                if (rc)
                    return rc;
                off += kb->seqlen[s];
            }
            int rc = idx_writer_end_document(e->w[k]);
            if (rc)
                return rc;
            if (!kb->docseq[d])
                sl_counters_add(e->c, e->ckey_empty[k], 1);
        }
        sl_counters_add(e->c, e->ckey_tokens[k], kb->toks.n);
        if (e->punkt)
            sl_counters_add(e->c, e->ckey_sentences[k], kb->sentences);
        if (kb->repaired)
            sl_counters_add(e->c, "repaired_utf8_texts", (uint64_t)kb->repaired);
    }
    return 0;
}

/* Write the finished batches at the head of the ring, in order, unless another thread is
 * at it (called with e->mu held, which it releases while writing). A batch is written
 * once every batch before it is: whoever finds the head batch finished writes it and the
 * run of finished ones after it. After a failure the rest of the unit is dropped unwritten. */
static void retire_ready(struct encoder *e)
{
    if (e->retiring)
        return; /* that thread looks at the head again before it stops */
    e->retiring = 1;
    while (e->head < e->tail && e->ring[e->head % e->nring].state == 4) {
        struct batch *b = &e->ring[e->head % e->nring];
        int failed = e->wrc;
        pthread_mutex_unlock(&e->mu);
        int rc = 0;
        if (!failed) {
            rc = b->rc ? sl_err_set(b->rc, "%s", b->err) : write_batch(e, b);
            if (rc)
                snprintf(e->wmsg, sizeof(e->wmsg), "%s", sl_err_msg());
        }
        pthread_mutex_lock(&e->mu);
        if (rc && !e->wrc)
            e->wrc = rc;
        b->state = 0;
        e->head++;
        pthread_cond_broadcast(&e->cv_done);
    }
    e->retiring = 0;
}

/* Wait until no more than `left` batches are in flight, or, when left > 0, until a batch
 * failed; left 0 waits for them all, failed or not. Meanwhile this thread writes what is
 * ready. The unit's first failure, if any (its message is e->wmsg). */
static int wait_written(struct encoder *e, size_t left)
{
    pthread_mutex_lock(&e->mu);
    for (;;) {
        double t0 = e->timed ? sl_thread_cpu() : 0;
        retire_ready(e);
        if (e->timed)
            e->reader_writing += sl_thread_cpu() - t0;
        if (e->tail - e->head <= left || (left && e->wrc))
            break;
        pthread_cond_wait(&e->cv_done, &e->mu);
    }
    int rc = e->wrc;
    pthread_mutex_unlock(&e->mu);
    return rc;
}

static struct batch *current(struct encoder *e, int *rc)
{
    struct batch *b = &e->ring[e->tail % e->nring];
    if (b->state == 1)
        return b;
    int failed = wait_written(e, e->nring - 1);
    if (failed) {
        *rc = sl_err_set(failed, "%s", e->wmsg);
        return NULL;
    }
    b = &e->ring[e->tail % e->nring];
    b->state = 1;
    b->ndocs = 0;
    b->nlines = 0;
    sl_buf_reset(&b->lines);
    sl_buf_reset(&b->msgs);
    b->rc = 0;
    for (size_t k = 0; k < e->nkeys; k++)
        kbatch_reset(&b->k[k]);
    return b;
}

static void submit(struct encoder *e)
{
    struct batch *b = &e->ring[e->tail % e->nring];
    if (b->state != 1)
        return;
    pthread_mutex_lock(&e->mu);
    b->state = 2;
    e->tail++;
    pthread_cond_broadcast(&e->cv_work);
    pthread_mutex_unlock(&e->mu);
}

/* Add one document's texts for every key (worker side). */
static void add_doc(struct encoder *e, struct batch *b, struct sl_doc *doc)
{
    if (b->ndocs == b->capdocs) {
        b->capdocs = b->capdocs ? b->capdocs * 2 : 256;
        for (size_t k = 0; k < e->nkeys; k++) {
            b->k[k].ntexts = sl_xrealloc(b->k[k].ntexts, b->capdocs * sizeof(uint32_t));
            b->k[k].docseq = sl_xrealloc(b->k[k].docseq, b->capdocs * sizeof(uint32_t));
            b->k[k].kstat = sl_xrealloc(b->k[k].kstat, b->capdocs);
            b->k[k].listed = sl_xrealloc(b->k[k].listed, b->capdocs);
        }
    }
    for (size_t k = 0; k < e->nkeys; k++) {
        struct kbatch *kb = &b->k[k];
        const char *key = e->keys[k];
        size_t before = kb->text.len;
        int rc = sl_doc_get_str(doc, key, &kb->text);
        uint32_t nt = 0;
        kb->kstat[b->ndocs] = 0;
        kb->listed[b->ndocs] = 0;
        if (rc == 0) {
            push_text_end(kb);
            nt = 1;
        } else {
            sl_buf_truncate(&kb->text, before);
            struct json_object *v = rc == SL_ERR_FORMAT ? sl_doc_get_json(doc, key) : NULL;
            if (v && json_object_is_type(v, json_type_array)) {
                /* a list of sentences, as preprocess_data.py accepts (not split again) */
                kb->listed[b->ndocs] = 1;
                for (size_t i = 0; i < json_object_array_length(v); i++) {
                    struct json_object *s = json_object_array_get_idx(v, i);
                    if (!json_object_is_type(s, json_type_string))
                        continue;
                    sl_buf_append(&kb->text, json_object_get_string(s),
                                  (size_t)json_object_get_string_len(s));
                    push_text_end(kb);
                    nt++;
                }
            } else {
                kb->kstat[b->ndocs] = rc == SL_ERR_NOTFOUND ? 1 : 2;
            }
            json_object_put(v);
        }
        kb->ntexts[b->ndocs] = nt;
    }
    b->ndocs++;
}

/* Add one line, as read, to the batch being filled (reader side). */
static void batch_add_line(struct batch *b, const char *p, size_t n, const struct sl_jsonl_line *l)
{
    if (b->nlines == b->caplines) {
        b->caplines = b->caplines ? b->caplines * 2 : 1024;
        b->line = sl_xrealloc(b->line, b->caplines * sizeof(*b->line));
    }
    struct line *li = &b->line[b->nlines++];
    sl_buf_append(&b->lines, p, n);
    li->line_no = l->line_no;
    li->end = b->lines.len;
    li->outcome = (uint8_t)l->outcome;
    li->repaired = 0;
    li->bytes = 0;
    li->msg = 0;
    if (l->outcome != SL_JSONL_DOC) { /* cut as too long: the message is kept now */
        li->msg = b->msgs.len;
        sl_buf_append(&b->msgs, l->message, strlen(l->message) + 1);
    }
}

int encoder_new(struct encoder **out, const struct encoder_opts *o)
{
    struct encoder *e = sl_xcalloc(1, sizeof(*e));
    e->tok = o->tok;
    e->keys = o->keys;
    e->nkeys = o->nkeys;
    e->punkt = o->punkt;
    e->keep_newlines = o->keep_newlines;
    e->append_eod = o->append_eod;
    e->eod_id = o->eod_id;
    e->timed = o->timed;
    e->nthreads = o->workers;
    e->ckey_tokens = sl_xcalloc(e->nkeys, sizeof(char *));
    e->ckey_empty = sl_xcalloc(e->nkeys, sizeof(char *));
    e->ckey_sentences = sl_xcalloc(e->nkeys, sizeof(char *));
    for (size_t k = 0; k < e->nkeys; k++) {
        e->ckey_tokens[k] = k ? sl_xasprintf("tokens_%s", e->keys[k]) : sl_xstrdup("tokens");
        e->ckey_sentences[k] =
            k ? sl_xasprintf("sentences_%s", e->keys[k]) : sl_xstrdup("sentences");
        e->ckey_empty[k] =
            k ? sl_xasprintf("empty_documents_%s", e->keys[k]) : sl_xstrdup("empty_documents");
    }
    if (e->nthreads > 1)
        tokenizer_share_pieces(e->tok); /* a piece merged by one worker is found by the others */
    /* two batches a worker (one encoding, one queued), and two more: the one being filled and
     * the finished head waiting to be written */
    e->nring = (size_t)e->nthreads * 2 + 2;
    e->ring = sl_xcalloc(e->nring, sizeof(*e->ring));
    for (size_t i = 0; i < e->nring; i++)
        e->ring[i].k = sl_xcalloc(e->nkeys, sizeof(struct kbatch));
    pthread_mutex_init(&e->mu, NULL);
    pthread_cond_init(&e->cv_work, NULL);
    pthread_cond_init(&e->cv_done, NULL);
    e->threads = sl_xcalloc((size_t)e->nthreads, sizeof(pthread_t));
    for (long i = 0; i < e->nthreads; i++) {
        int err = pthread_create(&e->threads[i], NULL, worker, e);
        if (err) {
            e->nthreads = i; /* those started are stopped */
            encoder_free(e);
            return sl_err_set(SL_ERR_NOMEM, "cannot start encoding thread %ld of %ld: %s", i + 1,
                              o->workers, strerror(err));
        }
    }
    *out = e;
    return 0;
}

void encoder_free(struct encoder *e)
{
    if (!e)
        return;
    pthread_mutex_lock(&e->mu);
    e->quit = 1;
    pthread_cond_broadcast(&e->cv_work);
    pthread_mutex_unlock(&e->mu);
    for (long i = 0; i < e->nthreads; i++)
        pthread_join(e->threads[i], NULL);
    for (size_t i = 0; i < e->nring; i++) {
        for (size_t k = 0; k < e->nkeys; k++)
            kbatch_release(&e->ring[i].k[k]);
        free(e->ring[i].k);
        sl_buf_release(&e->ring[i].lines);
        sl_buf_release(&e->ring[i].msgs);
        free(e->ring[i].line);
    }
    for (size_t k = 0; k < e->nkeys; k++) {
        free(e->ckey_tokens[k]);
        free(e->ckey_empty[k]);
        free(e->ckey_sentences[k]);
    }
    free(e->ckey_tokens);
    free(e->ckey_empty);
    free(e->ckey_sentences);
    free(e->ring);
    free(e->threads);
    pthread_mutex_destroy(&e->mu);
    pthread_cond_destroy(&e->cv_work);
    pthread_cond_destroy(&e->cv_done);
    free(e);
}

void encoder_begin(struct encoder *e, struct sl_jsonl_reader *r, struct idx_writer **w,
                   struct sl_counters *c)
{
    /* no batch of the unit before is in flight: the workers see these from here */
    e->r = r;
    e->w = w;
    e->c = c;
    e->wrc = 0;
    e->reader_writing = 0;
    e->cpu0 = e->timed ? sl_thread_cpu() : 0;
}

int encoder_add_line(struct encoder *e, const char *line, size_t len, const struct sl_jsonl_line *l)
{
    int rc = 0;
    struct batch *b = current(e, &rc);
    if (rc)
        return rc;
    if (!b->nlines) {
        b->jo = sl_jsonl_reader_opts(e->r);
        b->name = sl_jsonl_name(e->r);
    }
    batch_add_line(b, line, len, l);
    if (b->lines.len >= BATCH_BYTES || b->nlines >= BATCH_DOCS)
        submit(e);
    return 0;
}

int encoder_end(struct encoder *e, int rc, struct encoder_stats *st)
{
    submit(e);
    int failed = wait_written(e, 0);
    if (failed && !rc)
        rc = sl_err_set(failed, "%s", e->wmsg);
    if (st) {
        st->cpu = e->timed ? sl_thread_cpu() - e->cpu0 : 0;
        st->writing = e->reader_writing;
    }
    e->r = NULL;
    e->w = NULL;
    e->c = NULL;
    return rc;
}
