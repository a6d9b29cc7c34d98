/* struct encoder: JSONL lines -> token sequences in .bin/.idx shards, on worker threads,
 * written in input order. `sluice tokenize` runs one per rank; anything that turns lines of
 * documents into a Megatron shard can.
 *
 * Thread model. The caller's thread (the reading thread) reads lines and hands them to the
 * encoder, which cuts them into batches (up to 128 KiB or 4096 lines) in a ring of
 * 2 * workers + 2. Worker threads parse a batch's lines (JSON, UTF-8), take the texts of
 * every key and encode them (with a Punkt splitter each under sentence splitting). Finished
 * batches are written in order, their bad lines counted and reported in line order, by one
 * thread at a time: with several workers, by the worker that finds the oldest batch in
 * flight finished (it writes the run of finished ones from there), so that the reading
 * thread only decompresses and splits lines: on many cores it is the one thread that does
 * not multiply, and what it does per byte bounds a rank's throughput. With one worker, and
 * whenever it must wait for a free batch, the reading thread writes. The output therefore
 * depends only on the lines and the options: the same bytes, counts and warnings, in the
 * same order, for any number of workers.
 *
 * A unit is one run of lines into one set of writers (one per key): encoder_begin, then
 * encoder_add_line per line, then encoder_end, all on the reading thread; one unit at a
 * time. Errors: a failure to encode or to write stops the unit: its later batches are
 * dropped unwritten, and the reading thread sees the failure (its code and message) at its
 * next batch (encoder_add_line) or at encoder_end. The writers are then the caller's to
 * abort.
 */
#ifndef SL_TOKENIZE_ENCODER_H
#define SL_TOKENIZE_ENCODER_H

#include <stddef.h>
#include <stdint.h>

struct encoder;
struct idx_writer;
struct punkt_params;
struct sl_counters;
struct sl_jsonl_line;
struct sl_jsonl_reader;
struct tokenizer;

struct encoder_opts {
    /* The tokenizer, shared by the workers (with several, its merged pieces too:
     * tokenizer_share_pieces). The caller keeps it alive until encoder_free. */
    struct tokenizer *tok;
    /* The members to tokenize, one writer each; keys[0] is the reader's text key. The
     * counters of keys[k], k > 0, carry "_KEY" (tokens_title). Kept by reference. */
    const char *const *keys;
    size_t nkeys;
    /* Non-NULL: each text is split into sentences, each one sequence (a text given as a
     * list of strings is taken as its sentences); kept by reference. keep_newlines: the
     * sentences keep the whitespace after them (tokenize/punkt.h). */
    const struct punkt_params *punkt;
    int keep_newlines;
    /* append_eod: every document with a sequence ends with eod_id. */
    int append_eod;
    uint32_t eod_id;
    long workers; /* encoding threads, >= 1 */
    /* Measure the reading thread's CPU time per unit (a system call a time; -v). */
    int timed;
};

/* The reading thread's CPU seconds in a unit (encoder_opts.timed), and of them those it
 * spent writing finished batches. */
struct encoder_stats {
    double cpu, writing;
};

/* Start the workers, waiting for batches, in *e. 0, or SL_ERR_NOMEM when a thread cannot
 * be started (those started are stopped). */
int encoder_new(struct encoder **e, const struct encoder_opts *o);

/* Stop and join the workers, then free. Call it between units; NULL is a no-op. */
void encoder_free(struct encoder *e);

/* Begin a unit. The lines come from reader r (its options and file name parse them; the
 * bad ones are counted and reported through it, sl_jsonl_count_line); sequences go to
 * w[0..nkeys), each document ending one document of every writer; the counts to c:
 * documents_in, bytes_in, tokens, empty_documents, sentences (with punkt), key_not_string
 * and missing_key (documents whose key is no string, or missing), repaired_utf8_texts, and
 * the reader's skipped_* counts. All are borrowed until encoder_end. */
void encoder_begin(struct encoder *e, struct sl_jsonl_reader *r, struct idx_writer **w,
                   struct sl_counters *c);

/* Add one line as sl_jsonl_next_line read it (l: its number and outcome; a line the reader
 * cut keeps its message). 0, or the unit's failure (message set): stop reading, call
 * encoder_end. */
int encoder_add_line(struct encoder *e, const char *line, size_t len,
                     const struct sl_jsonl_line *l);

/* End the unit: wait until every batch is written (this thread writes meanwhile). rc is
 * the reading side's own error, if any: it is returned as it is. Else 0 or the unit's
 * first failure, its message set. st (may be NULL) gets the unit's statistics. */
int encoder_end(struct encoder *e, int rc, struct encoder_stats *st);

#endif
