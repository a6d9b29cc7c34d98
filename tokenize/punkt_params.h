/* struct punkt_params: the parameters of a Punkt sentence splitter (NLTK's
 * PunktParameters), read from and written to NLTK's `punkt_tab` layout: a directory per
 * language holding four UTF-8 text files (docs/formats/punkt-tab.md):
 *
 *   abbrev_types.txt    one word type a line: abbreviations, lower case, no final period
 *   collocations.tab    TYPE1 <tab> TYPE2 a line: pairs whose period is no sentence break
 *   sent_starters.txt   one word type a line: frequent sentence starters
 *   ortho_context.tab   TYPE <tab> FLAGS a line: the orthographic contexts (an integer of
 *                       PUNKT_ORTHO_* bits) a type was seen in
 *
 * Lines end in \n, \r\n or \r (Python reads them with universal newlines); an empty line
 * of a .txt file is the empty word type, as NLTK reads it. NLTK writes the lines joined
 * by \n with no final newline, in no particular order; sluice writes them sorted by
 * bytes, so that the same parameters give the same files.
 *
 * Reading is bounded (PUNKT_FILE_MAX bytes a file) and strict where NLTK's loader fails
 * or would silently keep nonsense: a file that is missing, too big or not UTF-8, a
 * collocations line without exactly one tab, an ortho_context line that is not TYPE, a
 * tab and a decimal integer of 64 bits; each refused with SL_ERR_FORMAT (SL_ERR_IO,
 * SL_ERR_NOTFOUND, SL_ERR_TOOBIG) and a message naming the file and line. Parameters are
 * read-only once loaded: any number of threads may split with them. */
#ifndef SL_TOKENIZE_PUNKT_PARAMS_H
#define SL_TOKENIZE_PUNKT_PARAMS_H

#include <stddef.h>
#include <stdint.h>

struct punkt_map;
struct sl_buf;

/* the orthographic context bits of ortho_context.tab (NLTK's _ORTHO_*) */
enum {
    PUNKT_ORTHO_BEG_UC = 1 << 1, /* sentence-initial, upper case */
    PUNKT_ORTHO_MID_UC = 1 << 2, /* sentence-internal, upper case */
    PUNKT_ORTHO_UNK_UC = 1 << 3, /* unknown position, upper case */
    PUNKT_ORTHO_BEG_LC = 1 << 4,
    PUNKT_ORTHO_MID_LC = 1 << 5,
    PUNKT_ORTHO_UNK_LC = 1 << 6,
    PUNKT_ORTHO_UC = PUNKT_ORTHO_BEG_UC | PUNKT_ORTHO_MID_UC | PUNKT_ORTHO_UNK_UC,
    PUNKT_ORTHO_LC = PUNKT_ORTHO_BEG_LC | PUNKT_ORTHO_MID_LC | PUNKT_ORTHO_UNK_LC,
};

/* the four files, in the order they are read */
enum punkt_file {
    PUNKT_FILE_COLLOCATIONS,
    PUNKT_FILE_STARTERS,
    PUNKT_FILE_ABBREVS,
    PUNKT_FILE_ORTHO,
    PUNKT_NFILES
};

/* the largest file read: 1 GiB (NLTK's English model is 0.3 MB; one trained on gigabytes
 * of web text has millions of word types, some hundreds of megabytes) */
#define PUNKT_FILE_MAX ((size_t)1 << 30)

struct punkt_params {
    struct punkt_map *abbrev;   /* word types */
    struct punkt_map *colloc;   /* "TYPE1\tTYPE2" */
    struct punkt_map *starters; /* word types */
    struct punkt_map *ortho;    /* word type -> PUNKT_ORTHO_* bits (the value) */
};

/* The file name of f ("ortho_context.tab"). */
const char *punkt_file_name(enum punkt_file f);

/* Empty parameters (splitting with them breaks at every period, ? and !). */
struct punkt_params *punkt_params_new(void);
void punkt_params_free(struct punkt_params *p);

/* Read the four files of the punkt_tab directory `dir`. 0 and *out (the caller frees it),
 * or an error with a message naming the file and line; *out is then NULL. */
int punkt_params_load(struct punkt_params **out, const char *dir);

/* Add the lines of one file's contents (data[0..n), named `name` in messages) to p. */
int punkt_params_parse(struct punkt_params *p, enum punkt_file f, const char *name,
                       const char *data, size_t n);

/* The contents of file f, as punkt_params_write writes it, appended to out. */
void punkt_params_format(const struct punkt_params *p, enum punkt_file f, struct sl_buf *out);

/* Write the four files into `dir` (created if missing), each atomically. 0 or SL_ERR_IO. */
int punkt_params_write(const struct punkt_params *p, const char *dir);

/* A fingerprint of the parameters (of the four files as written): 16 hex digits + NUL. */
void punkt_params_fingerprint(const struct punkt_params *p, char out[17]);

/* The punkt_tab directory of language `lang`, searched as NLTK searches its data
 * (`tokenizers/punkt_tab/LANG/` under each directory of $NLTK_DATA, colon-separated, then
 * ~/nltk_data, /usr/share/nltk_data, /usr/local/share/nltk_data, /usr/lib/nltk_data,
 * /usr/local/lib/nltk_data), then sluice's own models, DATA_DIR/configs/punkt/LANG/ (when
 * data_dir is not NULL). 0 and *dir (caller frees); SL_ERR_USAGE for a name that is not
 * letters, digits, - and _; SL_ERR_NOTFOUND naming the places looked at. */
int punkt_params_find(const char *lang, const char *data_dir, char **dir);

#endif
