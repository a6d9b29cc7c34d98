/* Punkt's word tokens (NLTK's PunktLanguageVars.word_tokenize and PunktToken), shared by
 * the sentence splitter (tokenize/punkt.h) and the trainer (tokenize/punkt_train.h).
 *
 * A text is cut into lines at '\n'; a line of nothing but whitespace (str.isspace) has no
 * tokens and makes the next token a paragraph start; the first token of every other line
 * is a line start. Within a line the tokens are what NLTK's word regex finds, left to
 * right, first alternative first:
 *   - multi-character punctuation: "--..." (2+ hyphens), "..." (2+ periods), ". . ." (2+
 *     period-whitespace pairs and a period);
 *   - a word: from a character that is not one of ( " ` { [ : ; & # * @ ) } ] - , up to the
 *     first place that is whitespace, the end, a non-word character ( ) " ; } ] * : @ ' ( {
 *     [ ? ! and the curly quotes and guillemets ), multi-character punctuation, or a comma
 *     followed by one of those;
 *   - any other single non-whitespace character.
 * So periods stay on their words ("Mr.", "U.S.A.", "end."), other punctuation does not.
 * Whitespace here is the regex module's \s, as NLTK's regex sees it (tokenize/punkt_uni.h).
 *
 * Token properties are those of PunktToken, computed from the token's bytes. */
#ifndef SL_TOKENIZE_PUNKT_WORD_H
#define SL_TOKENIZE_PUNKT_WORD_H

#include <stddef.h>
#include <stdint.h>

struct sl_buf;
struct punkt_params;

/* a token's flags: where it stands, and the annotations of the two passes */
enum {
    PW_PARASTART = 1,
    PW_LINESTART = 2,
    PW_SENTBREAK = 4,
    PW_ABBR = 8,
    PW_ELLIPSIS = 16,
};

struct punkt_word {
    size_t off, len; /* the token's bytes in the text scanned */
    unsigned flags;
};

/* NLTK's _re_non_word_chars: the characters that cannot be inside a word (one list for the
 * word tokenizer and the splitter's period context). */
int punkt_is_nonword(uint32_t c);

struct punkt_words {
    struct punkt_word *v;
    size_t n, cap;
};

void punkt_words_release(struct punkt_words *w);

/* Append the tokens of text[0..n) to out (offsets from text). *parastart is whether the
 * next token starts a paragraph: 0 for a new text; it carries over to the next call, so a
 * text scanned in pieces (whole lines each) gives the tokens of the whole. */
void punkt_words_scan(const char *text, size_t n, int *parastart, struct punkt_words *out);

/* PunktToken's properties of the token s[0..n) (n >= 1). */
int punkt_tok_is_ellipsis(const char *s, size_t n); /* two or more periods, nothing else */
int punkt_tok_is_initial(const char *s, size_t n);  /* a letter and a period */
int punkt_tok_is_alpha(const char *s, size_t n);    /* letters only (\w less \d) */
int punkt_tok_is_numeric(const char *s, size_t n);  /* -?[.,]?\d[\d,.-]*\.? : type ##number## */
int punkt_tok_is_sent_end(const char *s, size_t n); /* exactly ".", "?" or "!" */
/* PUNKT_CASE_LOWER or _UPPER by the first character's str.islower/isupper, else 0 */
enum { PUNKT_CASE_NONE, PUNKT_CASE_LOWER, PUNKT_CASE_UPPER };
int punkt_tok_first_case(const char *s, size_t n);

/* The token's type, appended to out: "##number##" for a number, else its lower case. */
void punkt_tok_type(const char *s, size_t n, struct sl_buf *out);
#define PUNKT_NUMBER_TYPE "##number##"

/* A type without its final period, when it is longer than one character and has one: the
 * new length (type_no_period). */
static inline size_t punkt_type_no_period(const char *t, size_t n)
{
    return n > 1 && t[n - 1] == '.' ? n - 1 : n;
}

/* Whether a type has a letter in it (_re_non_punct: [^\W\d]; "##number##" has). */
int punkt_type_is_non_punct(const char *t, size_t n);

/* NLTK's first pass for one token (its annotations depend on the token alone): ".", "?"
 * and "!" are sentence breaks; periods only, an ellipsis; another token that ends in a
 * period is an abbreviation when its lower case without that period (or the part of it
 * after its last hyphen) is in the parameters' abbreviations, else a sentence break.
 * Returns the PW_SENTBREAK / PW_ABBR / PW_ELLIPSIS bits; tmp is scratch space. */
unsigned punkt_first_pass(const struct punkt_params *p, const char *s, size_t n,
                          struct sl_buf *tmp);

#endif
