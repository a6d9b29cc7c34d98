/* Command-line options from a table, so that -h is generated from the same table that
 * parses. GNU style: options and operands may be mixed, "--opt=value" or "--opt value",
 * "-o value" or "-ovalue", "--" ends options. -h/--help and -q/-v (SL_OPT_COMMON) are
 * understood by every command.
 *
 *   static const char *const usage[] = { "sluice reshard --out DIR [options] IN...",
 *                                        "", "Split JSONL into balanced shards.", NULL };
 *   struct sl_option opts[] = { SL_OPT_STRING('o', "out", &out, "DIR", "output directory"),
 *                               SL_OPT_COMMON, SL_OPT_END_ };
 *   rc = sl_parse_options(argc, argv, opts, &rest);
 *   if (rc == SL_PARSE_HELP) { sl_usage_print(stdout, usage, opts); return 0; }
 *   if (rc) return sl_usage_error(usage);
 */
#ifndef SL_OPTIONS_H
#define SL_OPTIONS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum sl_opt_type {
    SL_OPT_END = 0,
    SL_OPT_GROUP,    /* a heading in the help text */
    SL_OPT_FLAG,     /* int: set to 1 */
    SL_OPT_NEGFLAG,  /* int: set to 0 */
    SL_OPT_STR,      /* const char *: last one wins */
    SL_OPT_STRS,     /* struct sl_strlist: appended */
    SL_OPT_INT,      /* long */
    SL_OPT_ZLEVEL_,  /* long: a zstd compression level, 1..22 */
    SL_OPT_U64,      /* uint64_t */
    SL_OPT_DBL,      /* double */
    SL_OPT_SIZE_,    /* uint64_t: bytes, with k/K/M/G/T suffixes (powers of 1024) */
    SL_OPT_CHOICE_,  /* const char *: one of the '|'-separated `choices` */
    SL_OPT_VERBOSE_, /* -v: raise the log level */
    SL_OPT_QUIET_,   /* -q: errors only */
};

struct sl_option {
    enum sl_opt_type type;
    char short_name;
    const char *long_name;
    void *value;
    const char *argh; /* argument name in help ("DIR"); NULL for flags */
    const char *help;
    const char *choices;
};

struct sl_strlist {
    char **v;
    size_t n, cap;
};

#define SL_OPT_GROUP_(h) { SL_OPT_GROUP, 0, NULL, NULL, NULL, (h), NULL }
#define SL_OPT_FLAG_(s, l, v, h) { SL_OPT_FLAG, (s), (l), (v), NULL, (h), NULL }
#define SL_OPT_NEGFLAG_(s, l, v, h) { SL_OPT_NEGFLAG, (s), (l), (v), NULL, (h), NULL }
#define SL_OPT_STRING(s, l, v, a, h) { SL_OPT_STR, (s), (l), (v), (a), (h), NULL }
#define SL_OPT_STRINGS(s, l, v, a, h) { SL_OPT_STRS, (s), (l), (v), (a), (h), NULL }
#define SL_OPT_INTEGER(s, l, v, a, h) { SL_OPT_INT, (s), (l), (v), (a), (h), NULL }
/* --level N: the zstd level of the shards a command writes (checked: 1..22) */
#define SL_OPT_ZSTD_LEVEL(v)                                                             \
    { SL_OPT_ZLEVEL_, 0, "level", (v), "N", "zstd level of the shards (default 3)", NULL }
#define SL_OPT_UINT64(s, l, v, a, h) { SL_OPT_U64, (s), (l), (v), (a), (h), NULL }
#define SL_OPT_DOUBLE(s, l, v, a, h) { SL_OPT_DBL, (s), (l), (v), (a), (h), NULL }
#define SL_OPT_SIZE(s, l, v, a, h) { SL_OPT_SIZE_, (s), (l), (v), (a), (h), NULL }
#define SL_OPT_CHOICE(s, l, v, c, h) { SL_OPT_CHOICE_, (s), (l), (v), (c), (h), (c) }
#define SL_OPT_COMMON                                                                     \
    { SL_OPT_QUIET_, 'q', "quiet", NULL, NULL, "only report errors", NULL },              \
    { SL_OPT_VERBOSE_, 'v', "verbose", NULL, NULL, "more detail (repeat for debug)", NULL }
#define SL_OPT_END_ { SL_OPT_END, 0, NULL, NULL, NULL, NULL, NULL }

#define SL_PARSE_HELP 1

/* Parse argv[1..argc) (argv[0] is the command name). Operands go to `rest` (which the
 * caller releases with sl_strlist_release). Returns 0, SL_PARSE_HELP, or SL_ERR_USAGE
 * with a message naming the option. */
int sl_parse_options(int argc, const char **argv, const struct sl_option *opts,
                     struct sl_strlist *rest);

/* Check mode (sluice run --dry-run checks each stage's command line with the command's
 * own parser): while on, sl_parse_options answers a command line that parses with
 * SL_PARSE_HELP, and sl_usage_print and sl_usage_error print nothing, so a command
 * returns 0 right after parsing, without running, or 2 with the parser's message in
 * sl_err_msg(). Checks of option combinations after parsing are not made. */
void sl_options_check_only(int on);

/* Print "usage: LINE\n   or: LINE\n\nDESCRIPTION\n\nOPTIONS" to f. `usage` is a NULL
 * terminated array: synopsis lines, then "" and description lines. */
void sl_usage_print(FILE *f, const char *const *usage, const struct sl_option *opts);

/* A command's usage error: the message of the last error (sl_err_msg()) and the first
 * synopsis line on stderr. Returns 2, the exit code of a usage error:
 *   if (rc) { sl_strlist_release(&rest); return sl_usage_error(usage); } */
int sl_usage_error(const char *const *usage);

/* Operands "FORMAT ARG" of a command with one format (sluice import hf DIR, sluice export
 * hf CKPT): 0, or SL_ERR_USAGE with a message when the first operand is not `format`
 * ("unknown <cmd> format ...") or there is not exactly one operand after it ("give exactly
 * one <arg>"). */
int sl_check_format_operands(const struct sl_strlist *rest, const char *cmd, const char *format,
                             const char *arg);

void sl_strlist_push(struct sl_strlist *l, const char *s);
void sl_strlist_release(struct sl_strlist *l);

/* "256M" -> 268435456. Suffixes k/K/M/G/T (optionally followed by B or iB) are powers of
 * 1024; fractions allowed ("1.5G"). 0 or SL_ERR_USAGE. */
int sl_parse_size(const char *s, uint64_t *out);
/* "0,3,5-7" -> {0,3,5,6,7} (sorted, unique). 0 or SL_ERR_USAGE. Caller frees *out. */
int sl_parse_ranges(const char *s, uint64_t **out, size_t *n);
/* Levenshtein distance, for "did you mean". */
size_t sl_edit_distance(const char *a, const char *b);

#endif
