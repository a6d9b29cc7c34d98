/* sluice tokenize: JSONL documents -> Megatron PREFIX_<key>_document.bin/.idx (with
 * --split-sentences, PREFIX_<key>_sentence.bin/.idx: one sequence per sentence, split by the
 * worker threads, a Punkt splitter each, tokenize/punkt.h).
 *
 * Each input file is one unit of work: ranks take files (balanced by size), and inside a
 * rank the reading thread cuts the decompressed input into batches of lines that worker
 * threads parse (JSON, UTF-8) and encode. Finished batches are written in order into one
 * part shard per file and key, their bad lines counted and reported in line order, by one
 * thread at a time: with several workers, by the worker that finds the oldest batch in
 * flight finished (it writes the run of finished ones from there), so that the reading
 * thread only decompresses and splits lines: on many cores it is the one thread that does
 * not multiply, and what it does per byte bounds a rank's throughput. With one worker, and
 * whenever it must wait for a free batch, the reading thread writes. Rank 0 then
 * concatenates the parts in input order. The
 * output therefore depends only on the inputs and the settings: the same bytes for any
 * number of ranks and threads.
 *
 * Resume: the parts folder DIR/.PREFIX.sluice-parts/ is a stage directory run by
 * sl_stage_run_files() (core/stage.h): its plan (settings and inputs) and, per finished
 * input file, a record of its counts and part files. A run with the same plan keeps the
 * finished files' parts and counts and tokenizes the rest; another plan starts afresh.
 * The folder is removed once the output is written.
 */
#include "tokenize/commands.h"

#include "core/alloc.h"
#include "core/atomic.h"
#include "core/buf.h"
#include "core/counters.h"
#include "core/datadir.h"
#include "core/dirlock.h"
#include "core/doc.h"
#include "core/err.h"
#include "core/inputs.h"
#include "core/jsonl.h"
#include "core/log.h"
#include "core/manifest.h"
#include "core/options.h"
#include "core/progress.h"
#include "core/sniff.h"
#include "core/stage.h"
#include "core/stream.h"
#include "core/world.h"
#include "dataset/idx.h"
#include "tokenize/punkt.h"
#include "tokenize/punkt_params.h"
#include "tokenize/tokenizer.h"

#include <dirent.h>
#include <errno.h>
#include <json-c/json.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

const char *const cmd_tokenize_usage[] = {
    "sluice tokenize --tokenizer SPEC --out PREFIX [options] IN...",
    "",
    "Tokenize JSONL documents (.jsonl, .jsonl.zst, .jsonl.gz, .json.gz; files or directories)",
    "into Megatron-LM token shards PREFIX_<key>_document.bin/.idx, one pair per --json-key,",
    "documents in input order. A document whose key is missing or empty is an empty document",
    "(as Megatron's preprocess_data.py writes it); both are counted in PREFIX.manifest.json.",
    "The output is the same for any number of MPI ranks and --workers.",
    "",
    "--split-sentences splits each text into sentences with NLTK's Punkt, as Megatron's",
    "--split-sentences does (BERT data): one sequence per sentence, the document's sentences",
    "one document, in PREFIX_<key>_sentence.bin/.idx. The Punkt model is --punkt DIR (a",
    "punkt_tab directory), else --lang's in NLTK_DATA/tokenizers/punkt_tab/, ~/nltk_data and",
    "the other places NLTK looks, else sluice's own (english).",
    NULL,
};

/* A batch: up to 128 KiB of lines or 4096 of them. Small enough that its buffers (the
 * lines, the decoded texts, the ids) stay in the core's own caches from parsing to writing,
 * and that the ring of batches faults in few pages (1 MiB batches: 8.2k page faults for
 * the 26.6 MB corpus, 64 MB peak; 128 KiB: 5.1k, 53 MB, 4% less CPU). */
#define BATCH_BYTES (1u << 17)
#define BATCH_DOCS  4096

struct opts {
    const char *tokenizer, *out;
    struct sl_strlist keys;
    int append_eod;
    int split, keep_newlines; /* --split-sentences, --keep-newlines */
    const char *lang, *punkt;
    const char *punkt_model; /* a setting: the fingerprint of the Punkt parameters */
    long eod_id;
    long workers;
    uint64_t max_doc;
    int wait;
    /* for the settings: the tokenizer's kind and vocabulary size, the tokens' type */
    const char *kind, *dtype;
    uint64_t vocab_size;
};

/* The options' table: the dispatcher's parser and -h, the settings of the parts folder's
 * plan (rows marked SL_OPTF_OUTPUT) and the pipeline's tokenize keys. */
#define SL_OPT_STRUCT struct opts

const struct sl_option cmd_tokenize_options[] = {
    SL_OPT_STRING('t', "tokenizer", tokenizer, "SPEC", TOKENIZER_SPECS,
                  .flags = SL_OPTF_OUTPUT | SL_OPTF_PATH, .required = 1),
    SL_SETTING(SL_OPT_STR, "kind", kind),
    SL_SETTING(SL_OPT_U64, "vocab_size", vocab_size),
    SL_SETTING(SL_OPT_STR, "dtype", dtype),
    SL_OPT_STRING('o', "out", out, "PREFIX", "output prefix: PREFIX_<key>_document.bin/.idx",
                  .required = 1),
    SL_OPT_STRINGS(0, "json-key", keys, "KEY", "member to tokenize (repeatable; default text)",
                   .flags = SL_OPTF_OUTPUT, .setting = "keys"),
    SL_OPT_FLAG_(0, "append-eod", append_eod,
                 "end every non-empty document with the end-of-document token",
                 .flags = SL_OPTF_OUTPUT),
    /* -1 without --append-eod */
    SL_OPT_INTEGER(0, "eod-id", eod_id, "ID",
                   "the end-of-document id (default <|endoftext|>, <|end_of_text|>, the model's "
                   "</s>, BERT's [EOS])",
                   .def = "-1", .flags = SL_OPTF_OUTPUT | SL_OPTF_DEF_UNSAID),
    SL_OPT_INTEGER('j', "workers", workers, "N", "encoding threads per rank (default: the cores)"),
    SL_OPT_SIZE(0, "max-doc-size", max_doc, "SIZE",
                "longest JSONL line accepted; longer ones are reported and skipped", .def = "64M",
                .flags = SL_OPTF_OUTPUT),
    SL_OPT_FLAG_(0, "split-sentences", split,
                 "one sequence per sentence (NLTK Punkt): PREFIX_<key>_sentence.bin/.idx",
                 .flags = SL_OPTF_OUTPUT),
    SL_OPT_STRING(0, "lang", lang, "LANG",
                  "--split-sentences: the Punkt model's language (default english)",
                  .flags = SL_OPTF_OUTPUT),
    SL_OPT_STRING(0, "punkt", punkt, "DIR",
                  "--split-sentences: the Punkt model, a punkt_tab directory (instead of --lang's)",
                  .flags = SL_OPTF_OUTPUT | SL_OPTF_PATH),
    SL_SETTING(SL_OPT_STR, "punkt_model", punkt_model),
    SL_OPT_FLAG_(0, "keep-newlines", keep_newlines,
                 "--split-sentences: sentences keep the whitespace after them (Megatron's)",
                 .flags = SL_OPTF_OUTPUT),
    SL_OPT_WAIT(wait),
    SL_OPT_COMMON,
    SL_OPT_END_,
};

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

struct pipeline {
    const struct opts *o;
    const struct tokenizer *tok;
    const struct punkt_params *punkt; /* --split-sentences */
    size_t nkeys;
    struct batch *ring;
    size_t nring;
    size_t head, tail; /* batches [head, tail) are in flight, in order */
    size_t next_job;   /* next batch index (mod nring) a worker takes */
    pthread_mutex_t mu;
    pthread_cond_t cv_work, cv_done;
    int quit;
    pthread_t *threads;
    long nthreads;
    /* writing finished batches (retire_ready): the unit's outputs, whether a thread is at
     * it, and the first failure, which stops the unit (wmsg: its message) */
    struct unit_out *u;
    int retiring;
    int wrc;
    char wmsg[512];
    int timed;             /* -v: the reading thread's CPU is measured (a system call a time) */
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

static void add_doc(struct pipeline *pl, struct batch *b, struct sl_doc *doc);

/* A worker's own parsing state. */
struct parser {
    struct sl_doc doc;
    struct sl_buf fixed;
};

/* Parse every line of a batch into documents (worker side): texts into the keys' batches,
 * skipped lines marked with their reason and message. */
static void parse_batch(struct pipeline *pl, struct parser *ps, struct batch *b)
{
    b->ndocs = 0;
    for (size_t i = 0; i < b->nlines; i++) {
        struct line *li = &b->line[i];
        if (li->outcome != SL_JSONL_DOC)
            continue; /* cut by the reader (too long): its message is there already */
        size_t beg = i ? b->line[i - 1].end : 0;
        struct sl_jsonl_line l = { .line_no = li->line_no, .outcome = SL_JSONL_DOC };
        if (sl_jsonl_parse_line(b->jo, b->name, b->lines.data + beg, li->end - beg, &ps->doc, &ps->fixed,
                                &l)) {
            li->bytes = ps->doc.raw.len + 1;
            add_doc(pl, b, &ps->doc);
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
static int encode_batch(struct pipeline *pl, struct wstate *ws, struct batch *b)
{
    for (size_t k = 0; k < pl->nkeys; k++) {
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
            if (nseq && pl->o->append_eod) {
                int rc = tok_ids_push(&kb->toks, (uint32_t)pl->o->eod_id);
                if (rc)
                    return rc;
                kb->seqlen[kb->nseq - 1]++;
            }
            kb->docseq[d] = nseq;
        }
    }
    return 0;
}

static void retire_ready(struct pipeline *pl);

static void *worker(void *arg)
{
    struct pipeline *pl = arg;
    struct wstate ws = { tokenizer_enc_new(pl->tok), NULL, { 0 } };
    if (pl->punkt)
        ws.punkt = punkt_new(pl->punkt, pl->o->keep_newlines);
    struct parser ps;
    sl_doc_init(&ps.doc);
    sl_buf_init(&ps.fixed, 0);
    pthread_mutex_lock(&pl->mu);
    for (;;) {
        while (!pl->quit && (pl->next_job == pl->tail || pl->ring[pl->next_job % pl->nring].state != 2))
            pthread_cond_wait(&pl->cv_work, &pl->mu);
        if (pl->quit)
            break;
        struct batch *b = &pl->ring[pl->next_job % pl->nring];
        pl->next_job++;
        b->state = 3;
        pthread_mutex_unlock(&pl->mu);
        sl_err_clear();
        parse_batch(pl, &ps, b);
        b->rc = encode_batch(pl, &ws, b);
        if (b->rc)
            snprintf(b->err, sizeof(b->err), "%s", sl_err_msg());
        pthread_mutex_lock(&pl->mu);
        b->state = 4;
        if (pl->nthreads > 1) /* one worker: the reading thread writes while it encodes */
            retire_ready(pl);
        pthread_cond_broadcast(&pl->cv_done);
    }
    pthread_mutex_unlock(&pl->mu);
    tokenizer_enc_free(ws.enc);
    punkt_free(ws.punkt);
    punkt_spans_release(&ws.spans);
    sl_doc_release(&ps.doc);
    sl_buf_release(&ps.fixed);
    return NULL;
}

/* The part shards of one unit being written. */
struct unit_out {
    struct idx_writer **w;
    struct sl_counters *c;
    struct sl_jsonl_reader *r; /* counts and reports the bad lines */
    char **ckey_tokens, **ckey_empty, **ckey_sentences; /* counter names per key */
};

/* Count and report a batch's lines in order, as the JSONL reader would have. */
static void count_lines(struct pipeline *pl, struct batch *b, struct unit_out *u)
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
        sl_jsonl_count_line(u->r, &l);
        if (li->outcome != SL_JSONL_DOC)
            continue;
        sl_counters_add(u->c, "documents_in", 1);
        sl_counters_add(u->c, "bytes_in", li->bytes);
        for (size_t k = 0; k < pl->nkeys; k++) {
            uint8_t st = b->k[k].kstat[d];
            if (st) {
                char name[160];
                snprintf(name, sizeof(name), "%s%s%s", st == 1 ? "missing_key" : "key_not_string",
                         k ? "_" : "", k ? pl->o->keys.v[k] : "");
                sl_counters_add(u->c, name, 1);
            }
        }
        d++;
    }
}

static int write_batch(struct pipeline *pl, struct batch *b, struct unit_out *u)
{
    count_lines(pl, b, u);
    for (size_t k = 0; k < pl->nkeys; k++) {
        struct kbatch *kb = &b->k[k];
        size_t s = 0, off = 0;
        for (size_t d = 0; d < b->ndocs; d++) {
            for (uint32_t i = 0; i < kb->docseq[d]; i++, s++) {
                int rc = idx_writer_add_sequence(u->w[k], kb->toks.v + off, kb->seqlen[s]);
                if (rc)
                    return rc;
                off += kb->seqlen[s];
            }
            int rc = idx_writer_end_document(u->w[k]);
            if (rc)
                return rc;
            if (!kb->docseq[d])
                sl_counters_add(u->c, u->ckey_empty[k], 1);
        }
        sl_counters_add(u->c, u->ckey_tokens[k], kb->toks.n);
        if (pl->punkt)
            sl_counters_add(u->c, u->ckey_sentences[k], kb->sentences);
        if (kb->repaired)
            sl_counters_add(u->c, "repaired_utf8_texts", (uint64_t)kb->repaired);
    }
    return 0;
}

/* Write the finished batches at the head of the ring, in order, unless another thread is
 * at it (called with pl->mu held, which it releases while writing). A batch is written
 * once every batch before it is: whoever finds the head batch finished writes it and the
 * run of finished ones after it. After a failure the rest of the unit is dropped unwritten. */
static void retire_ready(struct pipeline *pl)
{
    if (pl->retiring)
        return; /* that thread looks at the head again before it stops */
    pl->retiring = 1;
    while (pl->head < pl->tail && pl->ring[pl->head % pl->nring].state == 4) {
        struct batch *b = &pl->ring[pl->head % pl->nring];
        int failed = pl->wrc;
        pthread_mutex_unlock(&pl->mu);
        int rc = 0;
        if (!failed) {
            rc = b->rc ? sl_err_set(b->rc, "%s", b->err) : write_batch(pl, b, pl->u);
            if (rc)
                snprintf(pl->wmsg, sizeof(pl->wmsg), "%s", sl_err_msg());
        }
        pthread_mutex_lock(&pl->mu);
        if (rc && !pl->wrc)
            pl->wrc = rc;
        b->state = 0;
        pl->head++;
        pthread_cond_broadcast(&pl->cv_done);
    }
    pl->retiring = 0;
}

/* Wait until no more than `left` batches are in flight, or, when left > 0, until a batch
 * failed; left 0 waits for them all, failed or not. Meanwhile this thread writes what is
 * ready. The unit's first failure, if any (its message is pl->wmsg). */
static int wait_written(struct pipeline *pl, size_t left)
{
    pthread_mutex_lock(&pl->mu);
    for (;;) {
        double t0 = pl->timed ? sl_thread_cpu() : 0;
        retire_ready(pl);
        if (pl->timed)
            pl->reader_writing += sl_thread_cpu() - t0;
        if (pl->tail - pl->head <= left || (left && pl->wrc))
            break;
        pthread_cond_wait(&pl->cv_done, &pl->mu);
    }
    int rc = pl->wrc;
    pthread_mutex_unlock(&pl->mu);
    return rc;
}

static struct batch *current(struct pipeline *pl, int *rc)
{
    struct batch *b = &pl->ring[pl->tail % pl->nring];
    if (b->state == 1)
        return b;
    int failed = wait_written(pl, pl->nring - 1);
    if (failed) {
        *rc = sl_err_set(failed, "%s", pl->wmsg);
        return NULL;
    }
    b = &pl->ring[pl->tail % pl->nring];
    b->state = 1;
    b->ndocs = 0;
    b->nlines = 0;
    sl_buf_reset(&b->lines);
    sl_buf_reset(&b->msgs);
    b->rc = 0;
    for (size_t k = 0; k < pl->nkeys; k++)
        kbatch_reset(&b->k[k]);
    return b;
}

static void submit(struct pipeline *pl)
{
    struct batch *b = &pl->ring[pl->tail % pl->nring];
    if (b->state != 1)
        return;
    pthread_mutex_lock(&pl->mu);
    b->state = 2;
    pl->tail++;
    pthread_cond_broadcast(&pl->cv_work);
    pthread_mutex_unlock(&pl->mu);
}

/* Add one document's texts for every key (worker side). */
static void add_doc(struct pipeline *pl, struct batch *b, struct sl_doc *doc)
{
    if (b->ndocs == b->capdocs) {
        b->capdocs = b->capdocs ? b->capdocs * 2 : 256;
        for (size_t k = 0; k < pl->nkeys; k++) {
            b->k[k].ntexts = sl_xrealloc(b->k[k].ntexts, b->capdocs * sizeof(uint32_t));
            b->k[k].docseq = sl_xrealloc(b->k[k].docseq, b->capdocs * sizeof(uint32_t));
            b->k[k].kstat = sl_xrealloc(b->k[k].kstat, b->capdocs);
            b->k[k].listed = sl_xrealloc(b->k[k].listed, b->capdocs);
        }
    }
    for (size_t k = 0; k < pl->nkeys; k++) {
        struct kbatch *kb = &b->k[k];
        const char *key = pl->o->keys.v[k];
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
                    sl_buf_append(&kb->text, json_object_get_string(s), (size_t)json_object_get_string_len(s));
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
static void add_line(struct batch *b, const char *p, size_t n, const struct sl_jsonl_line *l)
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

/* A unit's part shard for key k: "DIR/part-00007_k0" (.bin, .idx). */
static char *part_prefix(const char *unit_path, size_t key)
{
    return sl_xasprintf("%s_k%zu", unit_path, key);
}

/* Tokenize one input file into its part shards. */
static int run_unit(struct pipeline *pl, struct sl_stage_unit *su, enum idx_dtype dtype)
{
    const struct sl_input *in = &su->inputs[0];
    struct sl_counters *c = su->c;
    uint64_t lines = 0;
    struct unit_out u;
    u.w = sl_xcalloc(pl->nkeys, sizeof(*u.w));
    u.c = c;
    u.ckey_tokens = sl_xcalloc(pl->nkeys, sizeof(char *));
    u.ckey_empty = sl_xcalloc(pl->nkeys, sizeof(char *));
    u.ckey_sentences = sl_xcalloc(pl->nkeys, sizeof(char *));
    int rc = 0;
    for (size_t k = 0; k < pl->nkeys && !rc; k++) {
        char *pp = part_prefix(su->path, k);
        rc = idx_writer_open_part(&u.w[k], pp, dtype);
        free(pp);
        u.ckey_tokens[k] = k ? sl_xasprintf("tokens_%s", pl->o->keys.v[k]) : sl_xstrdup("tokens");
        u.ckey_sentences[k] = k ? sl_xasprintf("sentences_%s", pl->o->keys.v[k]) : sl_xstrdup("sentences");
        u.ckey_empty[k] = k ? sl_xasprintf("empty_documents_%s", pl->o->keys.v[k])
                            : sl_xstrdup("empty_documents");
    }
    struct sl_jsonl_opts jo;
    memset(&jo, 0, sizeof(jo));
    jo.max_line = pl->o->max_doc;
    jo.text_key = pl->o->keys.v[0];
    jo.allow_missing_text = 1;
    jo.repair_utf8 = 1;
    jo.counters = c;
    jo.on_skip = sl_warn_skip;
    struct sl_jsonl_reader *r = NULL;
    if (!rc)
        rc = sl_input_jsonl(&r, in, &jo);
    u.r = r;
    pl->u = &u; /* no batch of the unit before is in flight: the workers see it from here */
    pl->wrc = 0;
    pl->reader_writing = 0;
    double cpu0 = pl->timed ? sl_thread_cpu() : 0;
    /* this thread splits lines; the workers parse them (parse_batch) and, when there are
     * several, write them */
    while (!rc) {
        const char *line;
        size_t len;
        struct sl_jsonl_line l;
        int got = sl_jsonl_next_line(r, &line, &len, &l);
        if (got < 0)
            rc = got;
        if (got <= 0)
            break;
        struct batch *b = current(pl, &rc);
        if (rc)
            break;
        if (!b->nlines) {
            b->jo = sl_jsonl_reader_opts(r);
            b->name = sl_jsonl_name(r);
        }
        add_line(b, line, len, &l);
        if (b->lines.len >= BATCH_BYTES || b->nlines >= BATCH_DOCS)
            submit(pl);
        sl_stage_unit_progress(su, sl_jsonl_bytes_in(r), ++lines);
    }
    submit(pl);
    int failed = wait_written(pl, 0);
    if (failed && !rc)
        rc = sl_err_set(failed, "%s", pl->wmsg);
    /* what bounds one rank on one file with many workers: the reading thread's bytes per
     * CPU second, less what it wrote while it would otherwise have waited */
    if (pl->timed && r) {
        double cpu = sl_thread_cpu() - cpu0, mb = (double)sl_jsonl_bytes(r) / 1e6;
        sl_debug("tokenize: '%s': the reading thread took %.3f CPU s for %.1f MB of JSONL, %.3f s "
                 "of them writing (%.0f MB/s without)",
                 in->path, cpu, mb, pl->reader_writing,
                 mb / (cpu - pl->reader_writing > 1e-6 ? cpu - pl->reader_writing : 1e-6));
    }
    /* a file with bytes but not one JSON document is the wrong input */
    uint64_t bad = 0;
    for (size_t i = 0; i < c->n; i++)
        if (!strncmp(c->names[i], "skipped_", 8))
            bad += c->values[i];
    if (!rc && bad && !sl_counters_get(c, "documents_in")) {
        const char *kind = sl_sniff_format(in->path);
        int raw = !strcmp(kind, "warc") || !strcmp(kind, "wet") || !strcmp(kind, "html") ||
                  !strcmp(kind, "wiki") || !strcmp(kind, "arc");
        rc = sl_err_set(SL_ERR_FORMAT,
                        "'%s': not one JSON document in %llu lines (%s)\nhint: "
                        "tokenize reads JSONL, one {\"text\": ...} object per line; this looks "
                        "like %s%s%s%s",
                        in->path, (unsigned long long)bad,
                        sl_log_level() >= SL_LOG_WARN ? "see the warnings" : "-q hid why",
                        sl_sniff_describe(kind),
                        raw ? ": turn it into documents with `sluice extract --format " : "",
                        raw ? (!strcmp(kind, "arc") ? "warc" : kind) : "",
                        raw                     ? "`"
                        : !strcmp(kind, "text") ? " (jq -Rc '{text: .}' FILE > FILE.jsonl)"
                                                : "");
    }
    for (size_t k = 0; k < pl->nkeys; k++) {
        if (!rc) {
            sl_counters_add(c, "documents_out", k ? 0 : idx_writer_documents(u.w[k]));
            rc = idx_writer_commit(u.w[k]);
        } else {
            idx_writer_abort(u.w[k]);
        }
        free(u.ckey_tokens[k]);
        free(u.ckey_empty[k]);
        free(u.ckey_sentences[k]);
    }
    sl_jsonl_close(r);
    free(u.w);
    free(u.ckey_tokens);
    free(u.ckey_sentences);
    free(u.ckey_empty);
    return rc;
}

static long default_workers(const struct sl_world *w)
{
    cpu_set_t set;
    long n = 1;
    if (sched_getaffinity(0, sizeof(set), &set) == 0)
        n = CPU_COUNT(&set);
    const char *local = getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
    long per = local ? atol(local) : (w->size > 1 ? w->size : 1);
    if (per > 1)
        n = n / per;
    return n < 1 ? 1 : n;
}

/* Remove the files of a folder, then the folder. */
static void rm_dir_files(const char *dir)
{
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
                continue;
            char *f = sl_xasprintf("%s/%s", dir, e->d_name);
            unlink(f);
            free(f);
        }
        closedir(d);
    }
    rmdir(dir);
}

/* Remove the parts folder and everything in it (parts, records, the plan, temporaries). */
static void rm_parts_dir(const char *tmpdir)
{
    char *meta = sl_xasprintf("%s/.sluice", tmpdir);
    rm_dir_files(meta);
    free(meta);
    rm_dir_files(tmpdir);
}

/* Input files a failed run finished (records in the parts folder, besides the plan). */
static int finished_units(const char *tmpdir)
{
    char *meta = sl_xasprintf("%s/.sluice", tmpdir);
    DIR *d = opendir(meta);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d)) != NULL;) {
        size_t l = strlen(e->d_name);
        n += l > 5 && !strcmp(e->d_name + l - 5, ".json") && strcmp(e->d_name, "plan.json");
    }
    if (d)
        closedir(d);
    free(meta);
    return n;
}

/* What the units of one run share. */
struct tok_run {
    struct pipeline *pl;
    enum idx_dtype dtype;
    struct sl_stage_file *files; /* the last unit's part files, for its record */
    char **names;
};

static void release_files(struct tok_run *t)
{
    for (size_t k = 0; t->names && k < 2 * t->pl->nkeys; k++)
        free(t->names[k]);
    free(t->names);
    free(t->files);
    t->names = NULL;
    t->files = NULL;
}

/* One input file: its part shards (.bin and .idx per key) are the unit's files. */
static int tokenize_unit(void *ctx, struct sl_stage_unit *u)
{
    struct tok_run *t = ctx;
    release_files(t);
    int rc = run_unit(t->pl, u, t->dtype);
    if (rc)
        return rc;
    size_t n = 2 * t->pl->nkeys;
    t->files = sl_xcalloc(n, sizeof(*t->files));
    t->names = sl_xcalloc(n, sizeof(char *));
    for (size_t i = 0; i < n; i++) {
        t->names[i] = sl_xasprintf("%s_k%zu.%s", u->name, i / 2, i % 2 ? "idx" : "bin");
        t->files[i].path = t->names[i];
        t->files[i].documents = sl_counters_get(u->c, "documents_out");
    }
    u->files = t->files;
    u->nfiles = n;
    return 0;
}

/* The settings of PREFIX.manifest.json, under the names it has had since before the option
 * tables (docs/dev.md: tokenizer_kind, json_keys). */
static void manifest_settings(const struct opts *o, const struct tokenizer *tok,
                              enum idx_dtype dtype, struct sl_buf *b)
{
    sl_buf_puts(b, "{\"tokenizer\": ");
    char *spec = tokenizer_spec_absolute(tok->spec); /* read from other directories */
    sl_buf_json_str(b, spec, strlen(spec));
    free(spec);
    sl_buf_printf(b, ", \"tokenizer_kind\": \"%s\", \"vocab_size\": %u, \"dtype\": \"%s\", \"json_keys\": [",
                  tokenizer_kind_name(tok->kind), tok->vocab_size, idx_dtype_name(dtype));
    for (size_t k = 0; k < o->keys.n; k++) {
        if (k)
            sl_buf_puts(b, ", ");
        sl_buf_json_str(b, o->keys.v[k], strlen(o->keys.v[k]));
    }
    sl_buf_printf(b, "], \"append_eod\": %s, \"eod_id\": %ld, \"max_doc_size\": %llu",
                  o->append_eod ? "true" : "false", o->append_eod ? o->eod_id : -1L,
                  (unsigned long long)o->max_doc);
    if (o->split) {
        sl_buf_puts(b, ", \"split_sentences\": true, \"punkt\": ");
        sl_buf_json_str(b, o->punkt, strlen(o->punkt));
        sl_buf_printf(b, ", \"punkt_model\": \"%s\", \"keep_newlines\": %s", o->punkt_model,
                      o->keep_newlines ? "true" : "false");
    }
    sl_buf_putc(b, '}');
}

/* The .bin and .idx of output prefix `out` into the manifest, with the index's figures. */
static int manifest_outputs(struct sl_manifest *m, const char *out)
{
    struct idx_reader *r;
    int rc = idx_reader_open(&r, out);
    if (rc)
        return rc;
    const char *base = strrchr(out, '/');
    base = base ? base + 1 : out;
    for (int e = 0; e < 2; e++) {
        char *nm = sl_xasprintf("%s.%s", base, e ? "idx" : "bin");
        char *p = sl_xasprintf("%s.%s", out, e ? "idx" : "bin");
        struct stat sb;
        uint64_t size = stat(p, &sb) == 0 ? (uint64_t)sb.st_size : 0;
        struct sl_manifest_figure fig[] = { { "documents", idx_reader_documents(r) },
                                            { "sequences", idx_reader_sequences(r) },
                                            { "tokens", idx_reader_tokens(r) },
                                            { "bytes", size } };
        sl_manifest_output(m, nm, fig, 4);
        free(p);
        free(nm);
    }
    idx_reader_close(r);
    return 0;
}

static int write_manifest(const struct opts *o, const struct tokenizer *tok, enum idx_dtype dtype,
                          const struct sl_inputs *in, char **outs, const struct sl_counters *c,
                          int argc, const char **argv, double t0, const char *started, int ranks,
                          int resumed)
{
    /* the main counts first, then the others sorted by name */
    static const char *const main_counts[] = { "documents_in", "documents_out", "bytes_in",
                                               "tokens", NULL };
    struct sl_buf settings = SL_BUF_INIT;
    manifest_settings(o, tok, dtype, &settings);
    struct sl_manifest_head h = { .stage = "tokenize",
                                  .argc = argc,
                                  .argv = argv,
                                  .started = started,
                                  .wall_seconds = sl_now() - t0,
                                  .ranks = ranks,
                                  .resumed = resumed,
                                  .settings_json = settings.data,
                                  .inline_lists = 1 };
    struct sl_manifest m;
    sl_manifest_begin(&m, &h);
    sl_buf_release(&settings);
    sl_manifest_inputs(&m, in);
    int rc = 0;
    for (size_t k = 0; k < o->keys.n && !rc; k++)
        rc = manifest_outputs(&m, outs[k]);
    if (rc) {
        sl_manifest_release(&m);
        return rc;
    }
    sl_manifest_counts(&m, main_counts, c);
    char *path = sl_xasprintf("%s.manifest.json", o->out);
    rc = sl_manifest_write(&m, path);
    free(path);
    return rc;
}

/* The encoding threads, waiting for batches. */
static void pipeline_start(struct pipeline *pl, const struct opts *o, struct tokenizer *tok,
                           const struct punkt_params *punkt, const struct sl_world *w)
{
    memset(pl, 0, sizeof(*pl));
    pl->o = o;
    pl->tok = tok;
    pl->punkt = punkt;
    pl->nkeys = o->keys.n;
    pl->timed = sl_log_level() >= SL_LOG_DEBUG;
    pl->nthreads = o->workers > 0 ? o->workers : default_workers(w);
    if (pl->nthreads > 1)
        tokenizer_share_pieces(tok); /* a piece merged by one worker is found by the others */
    pl->nring = (size_t)pl->nthreads * 2 + 2;
    pl->ring = sl_xcalloc(pl->nring, sizeof(*pl->ring));
    for (size_t i = 0; i < pl->nring; i++)
        pl->ring[i].k = sl_xcalloc(pl->nkeys, sizeof(struct kbatch));
    pthread_mutex_init(&pl->mu, NULL);
    pthread_cond_init(&pl->cv_work, NULL);
    pthread_cond_init(&pl->cv_done, NULL);
    pl->threads = sl_xcalloc((size_t)pl->nthreads, sizeof(pthread_t));
    for (long i = 0; i < pl->nthreads; i++)
        pthread_create(&pl->threads[i], NULL, worker, pl);
}

/* Stop and join the encoding threads. */
static void pipeline_stop(struct pipeline *pl)
{
    pthread_mutex_lock(&pl->mu);
    pl->quit = 1;
    pthread_cond_broadcast(&pl->cv_work);
    pthread_mutex_unlock(&pl->mu);
    for (long i = 0; i < pl->nthreads; i++)
        pthread_join(pl->threads[i], NULL);
}

static void pipeline_release(struct pipeline *pl)
{
    for (size_t i = 0; i < pl->nring; i++) {
        for (size_t k = 0; k < pl->nkeys; k++)
            kbatch_release(&pl->ring[i].k[k]);
        free(pl->ring[i].k);
        sl_buf_release(&pl->ring[i].lines);
        sl_buf_release(&pl->ring[i].msgs);
        free(pl->ring[i].line);
    }
    free(pl->ring);
    free(pl->threads);
    pthread_mutex_destroy(&pl->mu);
    pthread_cond_destroy(&pl->cv_work);
    pthread_cond_destroy(&pl->cv_done);
}

/* Input file i's part shard for key k in the parts folder `tmpdir`. */
static char *part_of_input(const char *tmpdir, size_t i, size_t k)
{
    char *name = sl_stage_shard_name(i, "");
    char *unit = sl_xasprintf("%s/%s", tmpdir, name);
    char *p = part_prefix(unit, k);
    free(unit);
    free(name);
    return p;
}

/* Rank 0: the outputs, each the concatenation of its key's parts in input order. A key
 * with one part (one input file) has that part as its output, by hard links: its tokens
 * are not copied again. */
static int concat_parts(const char *tmpdir, const struct sl_inputs *in, char **outs, size_t nkeys,
                        enum idx_dtype dtype)
{
    int rc = 0;
    for (size_t k = 0; k < nkeys && !rc; k++) {
        if (in->n == 1) {
            char *pp = part_of_input(tmpdir, 0, k);
            rc = idx_link_shard(pp, outs[k], dtype);
            free(pp);
            if (rc != SL_ERR_UNSUPPORTED)
                continue;
            rc = 0; /* no hard links here: copy */
        }
        struct idx_writer *iw;
        rc = idx_writer_open(&iw, outs[k], dtype);
        for (size_t i = 0; i < in->n && !rc; i++) {
            char *pp = part_of_input(tmpdir, i, k);
            rc = idx_writer_append_shard(iw, pp);
            free(pp);
        }
        if (!rc)
            rc = idx_writer_commit(iw);
        else
            idx_writer_abort(iw);
    }
    return rc;
}

static void report(const struct opts *o, const struct sl_inputs *in, const struct sl_counters *c,
                   const char *out0, enum idx_dtype dtype, int resumed)
{
    char a[32];
    sl_info("tokenize: %llu documents (%s) from %zu files -> %llu tokens in '%s' (%s)%s",
            (unsigned long long)sl_counters_get(c, "documents_out"),
            sl_human_bytes((double)sl_counters_get(c, "bytes_in"), a, sizeof(a)), in->n,
            (unsigned long long)sl_counters_get(c, "tokens"), out0, idx_dtype_name(dtype),
            resumed ? " (resumed)" : "");
    uint64_t skipped = 0;
    for (size_t i = 0; i < c->n; i++)
        if (!strncmp(c->names[i], "skipped_", 8))
            skipped += c->values[i];
    if (skipped)
        sl_warn("%llu lines skipped (counts by reason in '%s.manifest.json')",
                (unsigned long long)skipped, o->out);
}

/* --split-sentences: the Punkt model (--punkt DIR, else --lang's), its directory in
 * o->punkt (*dir owns it when found by language) and its fingerprint in o->punkt_model. 0,
 * or the exit code (the error reported). */
static int load_punkt(struct opts *o, struct punkt_params **p, char **dir, char fp[17])
{
    *p = NULL;
    *dir = NULL;
    if (!o->split)
        return 0;
    int rc = o->punkt ? 0 : punkt_params_find(o->lang, sl_data_dir(), dir);
    if (!rc && *dir)
        o->punkt = *dir;
    if (!rc)
        rc = punkt_params_load(p, o->punkt);
    if (rc) {
        sl_error("%s", sl_err_msg());
        return rc == SL_ERR_USAGE ? 2 : 1;
    }
    punkt_params_fingerprint(*p, fp);
    o->punkt_model = fp;
    sl_info("tokenize: sentences split by the Punkt model in '%s'%s", o->punkt,
            o->keep_newlines ? " (newlines kept)" : "");
    return 0;
}

/* The temporaries of the outputs that a killed run left (the lock is held). */
static void remove_stale_outputs(const struct opts *o, char **outs, size_t n)
{
    char *p = sl_xasprintf("%s.manifest.json", o->out);
    sl_atomic_remove_stale(p);
    free(p);
    for (size_t k = 0; k < n; k++)
        for (int i = 0; i < 2; i++) {
            p = sl_xasprintf("%s.%s", outs[k], i ? "idx" : "bin");
            sl_atomic_remove_stale(p);
            free(p);
        }
}

static int run(const void *opts, const struct sl_strlist *operands, int argc, const char **argv)
{
    struct opts so = *(const struct opts *)opts, *o = &so; /* with what the tokenizer says */
    struct sl_world *w = sl_world_get();
    double t0 = sl_now();
    char started[32];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(started, sizeof(started), "%Y-%m-%dT%H:%M:%SZ", &tm);

    struct tokenizer *tok = NULL;
    int rc = tokenizer_open(&tok, o->tokenizer);
    if (rc) {
        sl_error("%s", sl_err_msg());
        return rc == SL_ERR_USAGE ? 2 : 1;
    }
    if (o->append_eod && o->eod_id < 0) {
        if (tok->eod_id < 0) {
            sl_error("--append-eod: the tokenizer '%s' has no end-of-document token\n"
                     "hint: name one with --eod-id ID",
                     o->tokenizer);
            tokenizer_free(tok);
            return 2;
        }
        o->eod_id = tok->eod_id;
    }
    if (o->append_eod && (uint64_t)o->eod_id >= tok->vocab_size) {
        sl_error("--eod-id %ld is not below the vocabulary size %u", o->eod_id, tok->vocab_size);
        tokenizer_free(tok);
        return 2;
    }
    enum idx_dtype dtype = idx_dtype_for_vocab(tok->vocab_size);
    struct punkt_params *punkt;
    char *punkt_dir, fp[17];
    rc = load_punkt(o, &punkt, &punkt_dir, fp);
    if (rc) {
        tokenizer_free(tok);
        return rc;
    }

    struct sl_inputs in;
    rc = sl_inputs_expand(&in, (const char *const *)operands->v, operands->n, sl_jsonl_exts);
    if (rc) {
        tokenizer_free(tok);
        punkt_params_free(punkt);
        free(punkt_dir);
        return rc;
    }
    /* the temporary directory for the part shards, beside the output */
    char *dir = sl_xstrdup(o->out), *slash = strrchr(dir, '/');
    const char *base = slash ? slash + 1 : o->out;
    if (slash)
        *slash = 0;
    else
        strcpy(dir, ".");
    char *tmpdir = sl_xasprintf("%s/.%s.sluice-parts", dir, base);
    /* the parts folder's lock is held until the outputs are written from the parts: one
     * run at a time per prefix (core/dirlock.h); its lost temporaries are then stale */
    struct sl_dirlock *lock = NULL;
    rc = sl_stage_lock(w, tmpdir, o->wait, argc, argv, &lock);
    if (rc) {
        free(tmpdir);
        free(dir);
        sl_inputs_release(&in);
        tokenizer_free(tok);
        return rc;
    }
    struct sl_buf settings = SL_BUF_INIT;
    o->kind = tokenizer_kind_name(tok->kind);
    o->vocab_size = tok->vocab_size;
    o->dtype = idx_dtype_name(dtype);
    sl_options_settings_json(cmd_tokenize_options, o, &settings);

    struct pipeline pl;
    pipeline_start(&pl, o, tok, punkt, w);
    struct tok_run t = { .pl = &pl, .dtype = dtype };
    /* the parts folder's plan: an earlier run with another plan is discarded */
    struct sl_stage_files job = { .stage = { .stage = "tokenize",
                                             .out_dir = tmpdir,
                                             .argc = argc,
                                             .argv = argv,
                                             .inputs = &in,
                                             .settings_json = settings.data,
                                             .force = 1 },
                                  .ext = "",
                                  .no_writer = 1,
                                  .process = tokenize_unit,
                                  .ctx = &t };
    struct sl_stage_result res;
    rc = sl_stage_run_files(w, &job, &res);
    sl_warn_limited_summary();
    pipeline_stop(&pl);
    release_files(&t);
    if (rc && !res.peer_failed)
        sl_error("%s", sl_err_msg());

    char **outs = sl_xcalloc(pl.nkeys, sizeof(char *));
    for (size_t k = 0; k < pl.nkeys; k++)
        outs[k] = sl_xasprintf("%s_%s_%s", o->out, o->keys.v[k], o->split ? "sentence" : "document");
    int failed = rc != 0;
    if (!failed && w->rank == 0)
        remove_stale_outputs(o, outs, pl.nkeys);
    if (!failed && w->rank == 0) {
        rc = concat_parts(tmpdir, &in, outs, pl.nkeys, dtype);
        if (!rc)
            rc = write_manifest(o, tok, dtype, &in, outs, &res.totals, argc, argv, t0, started,
                                w->size, res.resumed);
        if (rc) {
            sl_error("%s", sl_err_msg());
            failed = 1;
        } else {
            report(o, &in, &res.totals, outs[0], dtype, res.resumed);
        }
    }
    sl_world_barrier(w);
    int kept = w->rank == 0 && failed ? finished_units(tmpdir) : 0;
    if (w->rank == 0 && (!failed || !kept))
        rm_parts_dir(tmpdir); /* a failed run keeps the parts of finished files, for a rerun */
    else if (kept)
        sl_info("the parts of %d finished input file%s are kept in '%s': the same command "
                "again goes on from there",
                kept, kept == 1 ? "" : "s", tmpdir);
    for (size_t k = 0; k < pl.nkeys; k++)
        free(outs[k]);
    free(outs);
    sl_stage_result_release(&res);
    pipeline_release(&pl);
    sl_buf_release(&settings);
    sl_dirlock_release(lock);
    free(tmpdir);
    free(dir);
    sl_inputs_release(&in);
    tokenizer_free(tok);
    punkt_params_free(punkt);
    free(punkt_dir);
    return failed ? 1 : 0;
}

static int check(void *opts, const struct sl_strlist *operands)
{
    struct opts *o = opts;
    if (operands->n == 0)
        return sl_err_set(SL_ERR_USAGE, "no inputs given");
    if (o->workers < 0 || o->workers > 1024)
        return sl_err_set(SL_ERR_USAGE, "--workers must be 0..1024");
    if (o->max_doc < 16)
        return sl_err_set(SL_ERR_USAGE, "--max-doc-size is too small");
    if (o->eod_id >= 0)
        o->append_eod = 1;
    if (!o->split && (o->lang || o->punkt || o->keep_newlines))
        return sl_err_set(SL_ERR_USAGE, "--%s splits sentences: give --split-sentences too",
                          o->lang    ? "lang"
                          : o->punkt ? "punkt"
                                     : "keep-newlines");
    if (o->split && !o->lang)
        o->lang = "english";
    for (size_t k = 0; k < o->keys.n; k++)
        for (size_t j = 0; j < k; j++)
            if (!strcmp(o->keys.v[k], o->keys.v[j]))
                return sl_err_set(SL_ERR_USAGE, "--json-key '%s' is given twice", o->keys.v[k]);
    if (o->keys.n == 0)
        sl_strlist_push(&o->keys, "text");
    return 0;
}

const struct sl_cmd cmd_tokenize =
    SL_CMD(cmd_tokenize_usage, cmd_tokenize_options, struct opts, check, run);
