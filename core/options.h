/* Command-line options from a table, so that -h is generated from the same table that
 * parses. GNU style: options and operands may be mixed, "--opt=value" or "--opt value",
 * "-o value" or "-ovalue", "--" ends options. -h/--help and -q/-v (SL_OPT_COMMON) are
 * understood by every command.
 *
 * A table's rows name the members of the command's option struct (by offset, so that the
 * table is constant and the struct is the dispatcher's to allocate), each with its default:
 *
 *   struct opts { const char *out; long level; };
 *   #define SL_OPT_STRUCT struct opts
 *   static const struct sl_option options[] = {
 *       SL_OPT_STRING('o', "out", out, "DIR", "output directory", .required = 1),
 *       SL_OPT_INTEGER(0, "level", level, "N", "compression level", .def = "3"),
 *       SL_OPT_COMMON, SL_OPT_END_ };
 *
 * -h shows "compression level (default 3)"; the struct starts with level 3 (the default is
 * parsed as the option's value would be). The dispatcher (cli/) allocates the struct,
 * applies the defaults (sl_options_init), parses (sl_parse_options), prints -h
 * (sl_usage_print), refuses a missing required option (sl_options_check_required) and
 * releases it (sl_options_release); a command gets the parsed struct (struct sl_cmd).
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
    SL_OPTF_OUTPUT = 1 << 0,     /* changes the output: a member of the command's settings */
    SL_OPTF_INVERT = 1 << 1,     /* a flag written negated (--no-mojibake as "mojibake") */
    SL_OPTF_GIVEN = 1 << 2,      /* written as whether a value was given: true or false */
    SL_OPTF_PAIRED = 1 << 3,     /* with `omit`: left out only when the next row is left out too */
    SL_OPTF_SETTING = 1 << 4,    /* not an option: a value the command works out, written in the
                                  * settings only (no name, not in -h) */
    SL_OPTF_LIST = 1 << 5,       /* the value is a comma-separated list */
    SL_OPTF_KV = 1 << 6,         /* the values are KEY=VALUE */
    SL_OPTF_PATH = 1 << 7,       /* the value names a file the command reads */
    SL_OPTF_NO_KEY = 1 << 8,     /* not a key of the pipeline's stage (sluice run) */
    SL_OPTF_DEF_UNSAID = 1 << 9, /* -h adds no "(default DEF)": the help says the default in
                                  * its own words, or not at all */
    SL_OPTF_ALONE = 1 << 10,     /* a flag that is a task of its own (filter --list, run --keys):
                                  * given, the required options are not asked for */
};

struct sl_option {
    enum sl_opt_type type;
    char short_name;
    const char *long_name;
    size_t off;       /* its member: offset in the option struct (unused: groups, -q, -v) */
    const char *argh; /* argument name in help ("DIR"); NULL for flags */
    const char *help;
    const char *choices;
    /* What follows is set with designated initialisers after a row macro's arguments:
     *   SL_OPT_FLAG_(0, "nfkc", c.nfkc, "normalize to NFKC", .flags = SL_OPTF_OUTPUT) */
    unsigned flags;      /* enum sl_opt_flag */
    const char *setting; /* its member in the settings; NULL: long_name with '_' for '-' */
    /* the member is left out of the settings when its value is this JSON text, or with
     * SL_OMIT_DEF its default's, so that settings written before it was added still match */
    const char *omit;
    /* The default, written as on the command line ("3", "64M", "hq"; a flag: "1"): the
     * member's value before parsing, and what -h shows as " (default DEF)" after the help
     * (unless SL_OPTF_DEF_UNSAID). NULL: zero, NULL, an empty list. */
    const char *def;
    /* a usage error when not given (its value still zero, NULL or an empty list):
     * "--out DIR is required" (a choice's: "--format is required") */
    int required;
};

/* `omit` of a row whose member is left out of the settings when it has its default */
extern const char sl_omit_def[];
#define SL_OMIT_DEF sl_omit_def

struct sl_strlist {
    char **v;
    size_t n, cap;
};

/* The offset of member m of the option struct (SL_OPT_STRUCT, defined before the table),
 * which must have type T: a row of another type is a compiler warning ("comparison of
 * distinct pointer types"), an error in the CI build (WERROR=1). */
#define SL_OPT_OFF_(T, m)                                                                          \
    (offsetof(SL_OPT_STRUCT, m) + 0 * sizeof(&((SL_OPT_STRUCT *)0)->m == (T *)0))

#define SL_OPT_GROUP_(h)                                                                           \
    {                                                                                              \
        SL_OPT_GROUP, 0, NULL, 0, NULL, (h), .choices = NULL                                       \
    }
#define SL_OPT_FLAG_(s, l, m, ...)                                                                 \
    {                                                                                              \
        SL_OPT_FLAG, (s), (l), SL_OPT_OFF_(int, m), NULL, __VA_ARGS__, .choices = NULL             \
    }
#define SL_OPT_NEGFLAG_(s, l, m, ...)                                                              \
    {                                                                                              \
        SL_OPT_NEGFLAG, (s), (l), SL_OPT_OFF_(int, m), NULL, __VA_ARGS__, .choices = NULL          \
    }
#define SL_OPT_STRING(s, l, m, a, ...)                                                             \
    {                                                                                              \
        SL_OPT_STR, (s), (l), SL_OPT_OFF_(const char *, m), (a), __VA_ARGS__, .choices = NULL      \
    }
#define SL_OPT_STRINGS(s, l, m, a, ...)                                                            \
    {                                                                                              \
        SL_OPT_STRS, (s), (l), SL_OPT_OFF_(struct sl_strlist, m), (a), __VA_ARGS__,                \
            .choices = NULL                                                                        \
    }
#define SL_OPT_INTEGER(s, l, m, a, ...)                                                            \
    {                                                                                              \
        SL_OPT_INT, (s), (l), SL_OPT_OFF_(long, m), (a), __VA_ARGS__, .choices = NULL              \
    }
/* --level N: the zstd level of the shards a command writes (checked: 1..22) */
#define SL_OPT_ZSTD_LEVEL(m, ...)                                                                  \
    {                                                                                              \
        SL_OPT_ZLEVEL_, 0, "level", SL_OPT_OFF_(long, m), "N", "zstd level of the shards",         \
            .def = "3", ##__VA_ARGS__, .choices = NULL                                             \
    }
#define SL_OPT_UINT64(s, l, m, a, ...)                                                             \
    {                                                                                              \
        SL_OPT_U64, (s), (l), SL_OPT_OFF_(uint64_t, m), (a), __VA_ARGS__, .choices = NULL          \
    }
#define SL_OPT_DOUBLE(s, l, m, a, ...)                                                             \
    {                                                                                              \
        SL_OPT_DBL, (s), (l), SL_OPT_OFF_(double, m), (a), __VA_ARGS__, .choices = NULL            \
    }
#define SL_OPT_SIZE(s, l, m, a, ...)                                                               \
    {                                                                                              \
        SL_OPT_SIZE_, (s), (l), SL_OPT_OFF_(uint64_t, m), (a), __VA_ARGS__, .choices = NULL        \
    }
#define SL_OPT_CHOICE(s, l, m, c, ...)                                                             \
    {                                                                                              \
        SL_OPT_CHOICE_, (s), (l), SL_OPT_OFF_(const char *, m), (c), __VA_ARGS__, .choices = (c)   \
    }
/* Rows the JSONL stage commands share (name, help, default and settings mark in one place);
 * the trailing arguments add fields (.omit = ...) */
#define SL_OPT_TEXT_KEY(m, ...)                                                                    \
    SL_OPT_STRING(0, "text-key", m, "KEY", "member that holds the text", .def = "text",            \
                  .flags = SL_OPTF_OUTPUT, ##__VA_ARGS__)
#define SL_OPT_ID_KEY(m)                                                                           \
    SL_OPT_STRING(0, "id-key", m, "KEY", "member that holds the id", .def = "id",                  \
                  .flags = SL_OPTF_OUTPUT)
/* its default is SL_JSONL_DEFAULT_MAX_LINE's (core/jsonl.h; tests/unit/test_options.c) */
#define SL_OPT_MAX_LINE(m, ...)                                                                    \
    SL_OPT_SIZE(0, "max-line", m, "SIZE", "longest line accepted", .def = "64M",                   \
                .flags = SL_OPTF_OUTPUT, ##__VA_ARGS__)
#define SL_OPT_REPAIR_UTF8(m)                                                                      \
    SL_OPT_FLAG_(0, "repair-utf8", m,                                                              \
                 "replace invalid UTF-8 with U+FFFD instead of skipping the line",                 \
                 .flags = SL_OPTF_OUTPUT)
/* --id-prefix and --reassign-ids into a member struct sl_docid (core/docid.h); in the
 * settings only when asked for, so that earlier outputs stay valid */
#define SL_OPT_DOCIDS(m)                                                                           \
    SL_OPT_STRING(0, "id-prefix", m.prefix, "P",                                                   \
                  "prefix every document id with P: (corpora whose ids repeat)",                   \
                  .flags = SL_OPTF_OUTPUT | SL_OPTF_PAIRED, .omit = SL_OMIT_DEF),                  \
        SL_OPT_FLAG_(0, "reassign-ids", m.reassign,                                                \
                     "new ids: <output shard>:<position>, after the --id-prefix",                  \
                     .flags = SL_OPTF_OUTPUT, .omit = SL_OMIT_DEF)
/* --out-format and --row-group-size: a document stage's shards as JSONL (zstd) or Parquet
 * (core/parquet_write.h, whose default row group is SL_PQ_ROW_GROUP_ROWS); in the settings
 * only when not the default, so that earlier outputs stay valid */
#define SL_OPT_OUT_FORMAT(fmt, rows)                                                               \
    SL_OPT_CHOICE(0, "out-format", fmt, "jsonl.zst|parquet", "format of the output shards",        \
                  .def = "jsonl.zst", .flags = SL_OPTF_OUTPUT, .omit = SL_OMIT_DEF),               \
        SL_OPT_UINT64(0, "row-group-size", rows, "N", "rows of a Parquet row group",               \
                      .def = "1000", .flags = SL_OPTF_OUTPUT, .omit = SL_OMIT_DEF)
#define SL_OPT_FORCE(m)                                                                            \
    SL_OPT_FLAG_(0, "force", m, "replace the outputs of a different earlier run")
/* Another run holds the output directory (core/dirlock.h): wait instead of refusing. Not a
 * key of the pipeline's stages: `sluice run --wait` waits for the directories it runs in. */
#define SL_OPT_WAIT(m)                                                                             \
    SL_OPT_FLAG_(0, "wait", m,                                                                     \
                 "wait for another run writing in the output directory (default: refuse)",         \
                 .flags = SL_OPTF_NO_KEY)
/* The endpoint of s3:// inputs and --out (core/remote.h): not a setting, not a pipeline key
 * (where the bytes are is not what they are). */
#define SL_OPT_S3_ENDPOINT(m)                                                                      \
    SL_OPT_STRING(0, "s3-endpoint", m, "URL",                                                      \
                  "S3-compatible endpoint of s3:// inputs and outputs (default: "                  \
                  "AWS_ENDPOINT_URL, else AWS)",                                                   \
                  .flags = SL_OPTF_NO_KEY)
/* A copy of remote inputs (core/remote.h, sl_remote_set_cache_dir): not a setting. */
#define SL_OPT_CACHE_DIR(m)                                                                        \
    SL_OPT_STRING(0, "cache-dir", m, "DIR",                                                        \
                  "keep a copy of remote inputs in DIR, by URL and ETag (default: none)",          \
                  .flags = SL_OPTF_NO_KEY)
#define SL_OPT_COMMON                                                                              \
    { SL_OPT_QUIET_, 'q', "quiet", 0, NULL, "only report errors", .choices = NULL },               \
    {                                                                                              \
        SL_OPT_VERBOSE_, 'v', "verbose", 0, NULL, "more detail (repeat for debug)",                \
            .choices = NULL                                                                        \
    }
#define SL_OPT_END_                                                                                \
    {                                                                                              \
        SL_OPT_END, 0, NULL, 0, NULL, NULL, .choices = NULL                                        \
    }
/* A settings row: a value the command works out after parsing (the tokenizer's vocabulary
 * size, a filter config's contents), written in the settings at this place in the table;
 * not an option. t is SL_OPT_STR, SL_OPT_JSON_ (const char *), SL_OPT_INT (long),
 * SL_OPT_U64 (uint64_t) or SL_OPT_FLAG (int). */
#define SL_SETTING(t, name, m, ...)                                                                \
    {                                                                                              \
        (t), 0, NULL, offsetof(SL_OPT_STRUCT, m), NULL, NULL,                                      \
            .choices = NULL, .flags = SL_OPTF_SETTING | SL_OPTF_OUTPUT, .setting = (name),         \
            __VA_ARGS__                                                                            \
    }

/* A command as the dispatcher (cli/) runs it: its usage text (synopsis lines, "",
 * description; NULL-terminated), its option table (NULL: no options, every argument is an
 * operand), the size of the option struct the table's rows point into, and two functions.
 *
 * check (optional) gets the struct parsed (defaults applied, required options given) and
 * the operands, and makes the command's own checks of them; it may set members that follow
 * from the options (not allocate: only an SL_OPT_STRINGS list is released after). 0, or an
 * error with a message: a usage error (the message and the first synopsis line on stderr,
 * exit 2).
 *
 * run does the work, with the whole command line (argv[0] the command's name; for a
 * subcommand the parent's, as a manifest records it). It returns 0; a negative enum sl_err
 * with a message, which the dispatcher prints (exit 1; SL_ERR_PEER: another MPI rank
 * failed and said why, nothing printed); or a positive exit code, the failure reported by
 * run itself. With rank0 set, run runs on MPI rank 0 alone (one process is what the
 * command needs) and every rank exits with its exit code. */
struct sl_cmd {
    const char *const *usage;
    const struct sl_option *options;
    size_t size;
    int (*check)(void *opts, const struct sl_strlist *operands);
    int (*run)(const void *opts, const struct sl_strlist *operands, int argc, const char **argv);
    int rank0;
};

/* A command's struct sl_cmd: SL_CMD(usage, options, struct opts, check, run), then any
 * field more (.rank0 = 1). */
#define SL_CMD(u, opts, T, chk, fn, ...)                                                           \
    {                                                                                              \
        .usage = (u), .options = (opts), .size = sizeof(T), .check = (chk), .run = (fn),           \
        __VA_ARGS__                                                                                \
    }

#define SL_PARSE_HELP 1

/* The settings of a run (the plan's "settings": what makes the outputs what they are; a
 * run with other settings does not resume an earlier one): a JSON object of the rows
 * marked SL_OPTF_OUTPUT, in table order, each under its `setting` name (default: the long
 * name with '_' for '-'), their values read from the option struct at `opts`, appended to
 * out without spaces:
 *   flag: true/false (SL_OPTF_INVERT: negated); string, choice: "..." or null;
 *   strings: [...]; integer, level: %ld; uint64, size: %llu; double: %.6g;
 *   SL_OPTF_GIVEN: whether a value was given (true/false); SL_OPT_JSON_: the text as is.
 * A row with `omit` is left out when its value is that text (SL_OMIT_DEF: its default's;
 * with SL_OPTF_PAIRED: when the next row's is its omit text too). Returns 0 or
 * SL_ERR_NOMEM from the buffer. */
int sl_options_settings_json(const struct sl_option *opts, const void *o, struct sl_buf *out);

/* An option's key in a pipeline's stage section: its long name with '_' for '-'
 * ("text-key": "text_key"), into buf (n bytes); returns buf. */
const char *sl_option_key(const struct sl_option *o, char *buf, size_t n);

/* The option struct o (zeroed, of the table's struct) set to the rows' defaults. 0, or
 * SL_ERR_STATE naming a row whose default does not parse (a mistake in the table). */
int sl_options_init(const struct sl_option *opts, void *o);

/* Parse argv[1..argc) (argv[0] is the command name) into the option struct o. Operands go
 * to `rest` (which the caller releases with sl_strlist_release). Returns 0, SL_PARSE_HELP,
 * or SL_ERR_USAGE with a message naming the option. */
int sl_parse_options(int argc, const char **argv, const struct sl_option *opts, void *o,
                     struct sl_strlist *rest);

/* 0 when every row marked `required` has a value in o, else SL_ERR_USAGE naming the first
 * one that has none, in table order ("--out DIR is required"). Not when a row marked
 * SL_OPTF_ALONE is set: its task needs nothing else. */
int sl_options_check_required(const struct sl_option *opts, const void *o);

/* Release what parsing allocated in o (the lists of SL_OPT_STRINGS rows). */
void sl_options_release(const struct sl_option *opts, void *o);

/* Print "usage: LINE\n   or: LINE\n\nDESCRIPTION\n\nOPTIONS" to f. `usage` is a NULL
 * terminated array: synopsis lines, then "" and description lines. */
void sl_usage_print(FILE *f, const char *const *usage, const struct sl_option *opts);

/* A command's usage error: the message of the last error (sl_err_msg()) and the first
 * synopsis line on stderr. Returns 2, the exit code of a usage error. */
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
