/* Pre-tokenizers of the byte-level BPE encodings: hand-written scanners that split text
 * into the same pieces as the published regular expressions, over any bytes.
 *
 *   PRETOK_GPT2    GPT-2 / r50k_base / p50k_base:
 *     's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 *   PRETOK_CL100K  cl100k_base:
 *     (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
 *      ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
 *   PRETOK_O200K   o200k_base (U = [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}],
 *                              W = [\p{Ll}\p{Lm}\p{Lo}\p{M}], C = the contractions above):
 *     [^\r\n\p{L}\p{N}]?U*W+C?|[^\r\n\p{L}\p{N}]?U+W*C?|\p{N}{1,3}|
 *      ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
 *
 * Semantics are those of a backtracking engine (ordered alternation, greedy quantifiers),
 * as in tiktoken; \s is Unicode White_Space; case-insensitive matching uses Unicode simple
 * case folding (so "'ſ" is a contraction, as in tiktoken). Each byte that is not part of
 * valid UTF-8 counts as one character that is neither letter, number nor space.
 * Equivalence with the regular expressions is tested against PCRE2 (tests/unit/test_bpe.c,
 * tests/fuzz/fuzz_bpe_encode.c) and against tiktoken's ids (tests/fixtures/tokenizer).
 */
#ifndef SL_TOKENIZE_PRETOK_H
#define SL_TOKENIZE_PRETOK_H

#include <stddef.h>
#include <stdint.h>

enum pretok_kind {
    PRETOK_GPT2 = 0,
    PRETOK_CL100K = 1,
    PRETOK_O200K = 2,
};
#define PRETOK_KINDS 3 /* the number of kinds: 0 .. PRETOK_KINDS - 1 */

/* "gpt2", "cl100k", "o200k": the pattern names of sidecars and --pattern. */
const char *pretok_name(enum pretok_kind k);
/* The kind whose name is the n bytes at s, or -1. */
int pretok_from_name(const char *s, size_t n);
/* The regular expression the scanner implements (PCRE2 syntax, \s spelled out as the
 * White_Space class), for differential tests. */
const char *pretok_regex(enum pretok_kind k);

/* Length in bytes (>= 1) of the piece that starts at s; s < end. */
size_t pretok_next(enum pretok_kind k, const unsigned char *s, const unsigned char *end);
/* Split [s, end) into at most `max` consecutive pieces from s on; their lengths go to
 * lens. Returns the number of pieces (0 only when s == end). A piece is never longer than
 * the text, which must be shorter than 4 GiB. */
size_t pretok_split(enum pretok_kind k, const unsigned char *s, const unsigned char *end,
                    uint32_t *lens, size_t max);

#endif
