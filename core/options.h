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

struct sl_buf;

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
    SL_OPT_JSON_,    /* const char *: JSON text (settings rows only, SL_SETTING) */
};

/* What a row is beyond parsing (struct sl_option.flags). */
enum sl_opt_flag {
    SL_OPTF_OUTPUT = 1 << 0,  /* changes the output: a member of the command's settings */
    SL_OPTF_INVERT = 1 << 1,  /* a flag written negated (--no-mojibake as "mojibake") */
    SL_OPTF_GIVEN = 1 << 2,   /* written as whether a value was given: true or false */
    SL_OPTF_PAIRED = 1 << 3,  /* with `omit`: left out only when the next row is left out too */
    SL_OPTF_SETTING = 1 << 4, /* not an option: a value the command works out, written in the
                               * settings only (no name, not in -h) */
    SL_OPTF_LIST = 1 << 5,    /* the value is a comma-separated list */
    SL_OPTF_KV = 1 << 6,      /* the values are KEY=VALUE */
    SL_OPTF_PATH = 1 << 7,    /* the value names a file the command reads */
    SL_OPTF_NO_KEY = 1 << 8,  /* not a key of the pipeline's stage (sluice run) */
};

struct sl_option {
    enum sl_opt_type type;
    char short_name;
    const char *long_name;
    void *value;
    const char *argh; /* argument name in help ("DIR"); NULL for flags */
    const char *help;
    const char *choices;
    /* What follows is set with designated initialisers after a row macro's arguments:
     *   SL_OPT_FLAG_(0, "nfkc", &o.nfkc, "normalize to NFKC", .flags = SL_OPTF_OUTPUT) */
    unsigned flags;      /* enum sl_opt_flag */
    const char *setting; /* its member in the settings; NULL: long_name with '_' for '-' */
    const char *omit;    /* the member is left out when its value is this JSON text (its
                          * default), so settings written before it was added still match */
};

struct sl_strlist {
    char **v;
    size_t n, cap;
};

#define SL_OPT_GROUP_(h)                                                                           \
    {                                                                                              \
        SL_OPT_GROUP, 0, NULL, NULL, NULL, (h), .choices = NULL                                    \
    }
#define SL_OPT_FLAG_(s, l, v, ...)                                                                 \
    {                                                                                              \
        SL_OPT_FLAG, (s), (l), (v), NULL, __VA_ARGS__, .choices = NULL                             \
    }
#define SL_OPT_NEGFLAG_(s, l, v, ...)                                                              \
    {                                                                                              \
        SL_OPT_NEGFLAG, (s), (l), (v), NULL, __VA_ARGS__, .choices = NULL                          \
    }
#define SL_OPT_STRING(s, l, v, a, ...)                                                             \
    {                                                                                              \
        SL_OPT_STR, (s), (l), (v), (a), __VA_ARGS__, .choices = NULL                               \
    }
#define SL_OPT_STRINGS(s, l, v, a, ...)                                                            \
    {                                                                                              \
        SL_OPT_STRS, (s), (l), (v), (a), __VA_ARGS__, .choices = NULL                              \
    }
#define SL_OPT_INTEGER(s, l, v, a, ...)                                                            \
    {                                                                                              \
        SL_OPT_INT, (s), (l), (v), (a), __VA_ARGS__, .choices = NULL                               \
    }
/* --level N: the zstd level of the shards a command writes (checked: 1..22) */
#define SL_OPT_ZSTD_LEVEL(v, ...)                                                                  \
    {                                                                                              \
        SL_OPT_ZLEVEL_, 0, "level", (v), "N", "zstd level of the shards (default 3)",              \
            ##__VA_ARGS__, .choices = NULL                                                         \
    }
#define SL_OPT_UINT64(s, l, v, a, ...)                                                             \
    {                                                                                              \
        SL_OPT_U64, (s), (l), (v), (a), __VA_ARGS__, .choices = NULL                               \
    }
#define SL_OPT_DOUBLE(s, l, v, a, ...)                                                             \
    {                                                                                              \
        SL_OPT_DBL, (s), (l), (v), (a), __VA_ARGS__, .choices = NULL                               \
    }
#define SL_OPT_SIZE(s, l, v, a, ...)                                                               \
    {                                                                                              \
        SL_OPT_SIZE_, (s), (l), (v), (a), __VA_ARGS__, .choices = NULL                             \
    }
#define SL_OPT_CHOICE(s, l, v, c, ...)                                                             \
    {                                                                                              \
        SL_OPT_CHOICE_, (s), (l), (v), (c), __VA_ARGS__, .choices = (c)                            \
    }
/* Rows the JSONL stage commands share (name, help and settings mark in one place); the
 * trailing arguments add fields (.omit = ...) */
#define SL_OPT_TEXT_KEY(v, ...)                                                                    \
    SL_OPT_STRING(0, "text-key", (v), "KEY", "member that holds the text (default text)",          \
                  .flags = SL_OPTF_OUTPUT, ##__VA_ARGS__)
#define SL_OPT_ID_KEY(v)                                                                           \
    SL_OPT_STRING(0, "id-key", (v), "KEY", "member that holds the id (default id)",                \
                  .flags = SL_OPTF_OUTPUT)
#define SL_OPT_MAX_LINE(v, ...)                                                                    \
    SL_OPT_SIZE(0, "max-line", (v), "SIZE", "longest line accepted (default 64M)",                 \
                .flags = SL_OPTF_OUTPUT, ##__VA_ARGS__)
#define SL_OPT_REPAIR_UTF8(v)                                                                      \
    SL_OPT_FLAG_(0, "repair-utf8", (v),                                                            \
                 "replace invalid UTF-8 with U+FFFD instead of skipping the line",                 \
                 .flags = SL_OPTF_OUTPUT)
/* --id-prefix and --reassign-ids into a struct sl_docid (core/docid.h); in the settings only
 * when asked for, so that earlier outputs stay valid */
#define SL_OPT_DOCIDS(ids)                                                                         \
    SL_OPT_STRING(0, "id-prefix", &(ids)->prefix, "P",                                             \
                  "prefix every document id with P: (corpora whose ids repeat)",                   \
                  .flags = SL_OPTF_OUTPUT | SL_OPTF_PAIRED, .omit = "null"),                       \
        SL_OPT_FLAG_(0, "reassign-ids", &(ids)->reassign,                                          \
                     "new ids: <output shard>:<position>, after the --id-prefix",                  \
                     .flags = SL_OPTF_OUTPUT, .omit = "false")
#define SL_OPT_FORCE(v)                                                                            \
    SL_OPT_FLAG_(0, "force", (v), "replace the outputs of a different earlier run")
/* Another run holds the output directory (core/dirlock.h): wait instead of refusing. Not a
 * key of the pipeline's stages: `sluice run --wait` waits for the directories it runs in. */
#define SL_OPT_WAIT(v)                                                                             \
    SL_OPT_FLAG_(0, "wait", (v),                                                                   \
                 "wait for another run writing in the output directory (default: refuse)",         \
                 .flags = SL_OPTF_NO_KEY)
#define SL_OPT_COMMON                                                                              \
    { SL_OPT_QUIET_, 'q', "quiet", NULL, NULL, "only report errors", .choices = NULL },            \
    {                                                                                              \
        SL_OPT_VERBOSE_, 'v', "verbose", NULL, NULL, "more detail (repeat for debug)",             \
            .choices = NULL                                                                        \
    }
#define SL_OPT_END_                                                                                \
    {                                                                                              \
        SL_OPT_END, 0, NULL, NULL, NULL, NULL, .choices = NULL                                     \
    }
/* A settings row: a value the command works out after parsing (the tokenizer's vocabulary
 * size, a filter config's contents), written in the settings at this place in the table;
 * not an option. t is SL_OPT_STR, SL_OPT_JSON_ (const char *), SL_OPT_INT (long),
 * SL_OPT_U64 (uint64_t) or SL_OPT_FLAG (int). */
#define SL_SETTING(t, name, v, ...)                                                                \
    {                                                                                              \
        (t), 0, NULL, (v), NULL, NULL, .choices = NULL, .flags = SL_OPTF_SETTING | SL_OPTF_OUTPUT, \
                                       .setting = (name), __VA_ARGS__                              \
    }

#define SL_PARSE_HELP 1

/* The settings of a run (the plan's "settings": what makes the outputs what they are; a
 * run with other settings does not resume an earlier one): a JSON object of the rows
 * marked SL_OPTF_OUTPUT, in table order, each under its `setting` name (default: the long
 * name with '_' for '-'), appended to out without spaces:
 *   flag: true/false (SL_OPTF_INVERT: negated); string, choice: "..." or null;
 *   strings: [...]; integer, level: %ld; uint64, size: %llu; double: %.6g;
 *   SL_OPTF_GIVEN: whether a value was given (true/false); SL_OPT_JSON_: the text as is.
 * A row with `omit` is left out when its value is that text (with SL_OPTF_PAIRED: when
 * the next row's is its omit text too). Returns 0 or SL_ERR_NOMEM from the buffer. */
int sl_options_settings_json(const struct sl_option *opts, struct sl_buf *out);

/* An option's key in a pipeline's stage section: its long name with '_' for '-'
 * ("text-key": "text_key"), into buf (n bytes); returns buf. */
const char *sl_option_key(const struct sl_option *o, char *buf, size_t n);

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
