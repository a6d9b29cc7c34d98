/* sluice download: fetch corpus files (URLs, a URL list, or a numbered URL template) into
 * a stage directory with a manifest. Each file is fetched into DIR/.NAME.part (kept
 * between runs for Range resume), verified against --checksums when given, and only then
 * renamed to DIR/NAME; MPI ranks split the files. The stage's directory lock (core/stage.h)
 * makes one run at a time the writer of the .part files: their names stay fixed so that
 * the next run continues them. */
#include "curate/commands.h"

#include "core/alloc.h"
#include "core/buf.h"
#include "core/counters.h"
#include "core/err.h"
#include "core/hash.h"
#include "core/inputs.h"
#include "core/log.h"
#include "core/options.h"
#include "core/progress.h"
#include "core/stage.h"
#include "core/stream.h"
#include "core/world.h"
#include "curate/download/checksum.h"
#include "curate/download/fetch.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *const cmd_download_usage[] = {
    "sluice download --out DIR (--url URL... | --url-list FILE | --url-template T --file-numbers "
    "N) [options]",
    "",
    "Download files into DIR, resuming partial downloads (HTTP Range) and retrying with",
    "backoff on 5xx answers and dropped connections. A file appears under its final name",
    "only when complete (and verified, with --checksums); DIR/.NAME.part holds the partial",
    "data in between, so running the same command again continues where it stopped.",
    "--url-template uses {n} or {n:05d} for the numbers of --file-numbers (0,3,5-7).",
    "Only http:// and https:// URLs are fetched (redirects included).",
    "DIR gets a manifest.json; 'sluice extract --rm-inputs' may delete what it lists.",
    NULL,
};

struct opts {
    const char *out, *url_list, *url_template, *file_numbers, *checksums;
    struct sl_strlist urls;
    long retries;
    double retry_wait;
    long connect_timeout, stall_timeout;
    uint64_t min_speed;
    int force, wait, require_checksums;
};

/* Expand "{n}" / "{n:05d}" / "{n:d}" in t for number v. */
static int expand_template(const char *t, uint64_t v, struct sl_buf *out)
{
    const char *p = t;
    int found = 0;
    while (*p) {
        const char *b = strchr(p, '{');
        if (!b) {
            sl_buf_puts(out, p);
            break;
        }
        sl_buf_append(out, p, (size_t)(b - p));
        const char *e = strchr(b, '}');
        if (!e || b[1] != 'n')
            return sl_err_set(SL_ERR_USAGE, "--url-template: expected '{n}' or '{n:05d}' in '%s'",
                              t);
        int width = 0, zero = 0;
        const char *q = b + 2;
        if (*q == ':') {
            q++;
            if (*q == '0') {
                zero = 1;
                q++;
            }
            while (*q >= '0' && *q <= '9')
                width = width * 10 + (*q++ - '0');
            if (*q == 'd')
                q++;
        }
        if (q != e || width > 32)
            return sl_err_set(SL_ERR_USAGE,
                              "--url-template: cannot read '%.*s' (use {n} or {n:05d})",
                              (int)(e - b + 1), b);
        sl_buf_printf(out, zero ? "%0*llu" : "%*llu", width, (unsigned long long)v);
        found = 1;
        p = e + 1;
    }
    if (!found)
        return sl_err_set(SL_ERR_USAGE, "--url-template '%s' has no {n}", t);
    return 0;
}

/* The file name a URL is saved under: the last path segment, without query/fragment. */
static char *url_name(const char *url)
{
    const char *s = strstr(url, "://");
    s = s ? s + 3 : url;
    size_t end = strcspn(s, "?#");
    const char *last = NULL;
    for (size_t i = 0; i < end; i++)
        if (s[i] == '/')
            last = s + i;
    if (!last || (size_t)(s + end - last) <= 1)
        return NULL;
    return sl_xstrndup(last + 1, (size_t)(s + end - last - 1));
}

static int name_ok(const char *n)
{
    return n && n[0] && n[0] != '.' && !strchr(n, '/') && !strchr(n, '\\') &&
           strcmp(n, "manifest.json") != 0 && strcmp(n, "plan") != 0 && strlen(n) < 240;
}

static int collect_urls(const struct opts *o, struct sl_strlist *urls)
{
    int rc = 0;
    for (size_t i = 0; i < o->urls.n; i++)
        sl_strlist_push(urls, o->urls.v[i]);
    if (o->url_list) {
        struct sl_buf b = SL_BUF_INIT;
        sl_buf_init(&b, 256u << 20);
        rc = sl_read_file(o->url_list, &b);
        if (rc) {
            sl_buf_release(&b);
            return sl_err_wrap(rc, "--url-list: ");
        }
        char *p = b.data ? b.data : "", *end = p + b.len;
        while (p < end) {
            char *nl = memchr(p, '\n', (size_t)(end - p));
            char *le = nl ? nl : end;
            while (le > p && (le[-1] == '\r' || le[-1] == ' ' || le[-1] == '\t'))
                le--;
            *le = 0;
            while (*p == ' ' || *p == '\t')
                p++;
            if (*p && *p != '#')
                sl_strlist_push(urls, p);
            p = nl ? nl + 1 : end;
        }
        sl_buf_release(&b);
    }
    if (o->url_template) {
        uint64_t *nums = NULL;
        size_t nn = 0;
        rc = sl_parse_ranges(o->file_numbers, &nums, &nn);
        if (rc)
            return sl_err_wrap(rc, "--file-numbers: ");
        struct sl_buf u = SL_BUF_INIT;
        for (size_t i = 0; i < nn && !rc; i++) {
            sl_buf_reset(&u);
            rc = expand_template(o->url_template, nums[i], &u);
            if (!rc)
                sl_strlist_push(urls, u.data);
        }
        sl_buf_release(&u);
        free(nums);
    }
    return rc;
}

/* Index of the first of names[0..n) equal to an earlier one, with that earlier one in
 * *first; n when all differ. A hash set: linear in n (a Common Crawl snapshot lists 90,000
 * WARC paths). */
static size_t find_duplicate(char *const *names, size_t n, size_t *first)
{
    size_t cap = 16;
    while (cap < 2 * n)
        cap *= 2;
    size_t *slot = sl_xmalloc(cap * sizeof(*slot)); /* index + 1; 0 = empty */
    memset(slot, 0, cap * sizeof(*slot));
    size_t dup = n;
    for (size_t i = 0; i < n && dup == n; i++) {
        size_t k = (size_t)sl_hash64(names[i], strlen(names[i]), 0) & (cap - 1);
        for (; slot[k]; k = (k + 1) & (cap - 1))
            if (!strcmp(names[slot[k] - 1], names[i])) {
                *first = slot[k] - 1;
                dup = i;
                break;
            }
        if (dup == n)
            slot[k] = i + 1;
    }
    free(slot);
    return dup;
}

static void free_argv(char **v, int argc)
{
    for (int i = 0; i < argc; i++)
        free(v[i]);
    free(v);
}

/* Each URL's scheme, and the file name it is saved under into names[i] (unique). 0, or
 * SL_ERR_USAGE naming the URL in its display form. */
static int check_urls(const struct sl_strlist *urls, char **names)
{
    int rc = 0;
    for (size_t i = 0; i < urls->n && !rc; i++) {
        const char *u = urls->v[i];
        char *shown = fetch_url_display(u);
        size_t scheme = strcspn(u, ":/?#"); /* as fetch_url_display reads it */
        if (!fetch_scheme_ok(u) && !strncmp(u + scheme, "://", 3))
            rc = sl_err_set(SL_ERR_USAGE,
                            "cannot download '%s': the scheme '%.*s' is not allowed\n"
                            "hint: sluice fetches http:// and https:// URLs only",
                            shown, (int)(scheme < 32 ? scheme : 32), u);
        else if (!fetch_scheme_ok(u))
            rc = sl_err_set(SL_ERR_USAGE,
                            "cannot download '%s': the URL has no scheme\n"
                            "hint: write it as http://... or https://...",
                            shown);
        else if (!name_ok(names[i] = url_name(u)))
            rc = sl_err_set(SL_ERR_USAGE,
                            "cannot name the file for URL '%s'\n"
                            "hint: the URL must end in a file name (not '/', not hidden)",
                            shown);
        free(shown);
    }
    size_t first = 0, dup = rc ? urls->n : find_duplicate(names, urls->n, &first);
    if (dup < urls->n) {
        char *a = fetch_url_display(urls->v[first]), *b = fetch_url_display(urls->v[dup]);
        rc = sl_err_set(SL_ERR_USAGE, "URLs '%s' and '%s' would both be saved as '%s'", a, b,
                        names[dup]);
        free(a);
        free(b);
    }
    return rc;
}

struct progress_ctx {
    struct sl_progress *p;
    uint64_t bytes, files;
};

static void on_bytes(void *ctx, uint64_t n)
{
    struct progress_ctx *pc = ctx;
    pc->bytes += n;
    sl_progress_update(pc->p, pc->bytes, pc->files);
}

static const char *cur_url; /* the display form of the URL being fetched */

static void on_retry(void *ctx, int attempt, double wait, const char *why)
{
    (void)ctx;
    sl_warn("'%s': %s; retry %d in %.1f s", cur_url, why, attempt, wait);
}

static void on_restart(void *ctx, const char *why)
{
    (void)ctx;
    sl_warn("'%s': %s", cur_url, why);
}

/* The command line as the manifest records it: each URL in its display form (no user
 * information, no query values), alone or after "--url=". The caller frees the array and
 * its strings. */
static char **shown_argv(int argc, const char **argv)
{
    char **v = sl_xcalloc((size_t)argc + 1, sizeof(char *));
    for (int i = 0; i < argc; i++) {
        const char *eq = argv[i][0] == '-' ? strchr(argv[i], '=') : NULL;
        if (!strstr(argv[i], "://")) {
            v[i] = sl_xstrdup(argv[i]);
        } else if (eq) {
            char *u = fetch_url_display(eq + 1);
            v[i] = sl_xasprintf("%.*s%s", (int)(eq + 1 - argv[i]), argv[i], u ? u : "***");
            free(u);
        } else {
            v[i] = fetch_url_display(argv[i]);
            if (!v[i])
                v[i] = sl_xstrdup("***");
        }
    }
    return v;
}

/* Fetch one URL to DIR/NAME. 0, or <0 with the message set (the run goes on with the
 * other files and fails at the end). */
static int download_one(const struct opts *o, struct sl_stage *st, const char *url,
                        const char *name, const struct checksum_list *sums, struct progress_ctx *pc,
                        struct sl_counters *total)
{
    char *final = sl_xasprintf("%s/%s", o->out, name);
    char *part = sl_xasprintf("%s/.%s.part", o->out, name);
    const struct checksum_entry *want = sums ? checksum_list_find(sums, name) : NULL;
    int unverified = sums && !want; /* --checksums given, but nothing for this file */
    struct sl_counters c;
    sl_counters_init(&c);
    int rc = 0;
    char *shown = NULL;
    struct stat sb;
    if (sl_stage_done(st, name)) {
        sl_counters_add(total, "files_already_present", 1);
        goto out;
    }
    if (stat(final, &sb) == 0) {
        /* a complete file from a run that did not get to record it */
        if (want) {
            char got[65];
            rc = checksum_file(final, want->sha256, got);
            if (!rc && strcmp(got, want->hex) != 0) {
                rc = sl_err_set(SL_ERR_CORRUPT,
                                "'%s' is already in '%s' but its %s is %s, not %s\n"
                                "hint: remove it to download it again",
                                name, o->out, want->sha256 ? "sha256" : "md5", got, want->hex);
                goto out;
            }
        }
        sl_counters_add(&c, "files", 1);
        sl_counters_add(&c, "bytes_out", (uint64_t)sb.st_size);
        sl_counters_add(&c, "files_already_present", 1);
        if (unverified)
            sl_counters_add(&c, "files_unverified", 1);
        if (!rc)
            rc = sl_stage_record(st, name, &c);
        goto out;
    }
    struct fetch_opts fo = { .retries = (int)o->retries,
                             .retry_wait = o->retry_wait,
                             .connect_timeout = o->connect_timeout,
                             .stall_timeout = o->stall_timeout,
                             .min_speed = (long)o->min_speed,
                             .on_retry = on_retry,
                             .on_bytes = on_bytes,
                             .on_restart = on_restart,
                             .ctx = pc };
    shown = fetch_url_display(url);
    cur_url = shown ? shown : name;
    for (int round = 0; round < 2; round++) {
        struct fetch_result fr;
        rc = fetch_url(url, part, &fo, &fr);
        sl_counters_add(&c, "bytes_received", fr.received);
        if (fr.attempts > 1)
            sl_counters_add(&c, "retries", (uint64_t)fr.attempts - 1);
        if (fr.resumed)
            sl_counters_add(&c, "files_resumed", 1);
        if (fr.restarts)
            sl_counters_add(&c, "restarts", (uint64_t)fr.restarts);
        if (fr.bad_responses)
            sl_counters_add(&c, "bad_responses", (uint64_t)fr.bad_responses);
        if (rc)
            break;
        if (want) {
            char got[65];
            rc = checksum_file(part, want->sha256, got);
            if (rc)
                break;
            if (strcmp(got, want->hex) != 0) {
                sl_counters_add(&c, "checksum_mismatches", 1);
                unlink(part); /* the data is wrong: never resume from it */
                fetch_forget(part);
                if (round == 0 && fr.resumed) {
                    sl_warn(
                        "'%s': %s mismatch after a resumed download; downloading it whole again",
                        name, want->sha256 ? "sha256" : "md5");
                    continue;
                }
                rc = sl_err_set(SL_ERR_CORRUPT,
                                "checksum mismatch for '%s': %s is %s, expected %s\n"
                                "hint: the file was removed; check the checksum list or the URL",
                                name, want->sha256 ? "sha256" : "md5", got, want->hex);
                break;
            }
            sl_counters_add(&c, "files_verified", 1);
        } else if (unverified) {
            sl_counters_add(&c, "files_unverified", 1);
        }
        if (rename(part, final) != 0) {
            rc = sl_err_set(SL_ERR_IO, "cannot rename '%s' to '%s': %s", part, final,
                            strerror(errno));
            break;
        }
        fetch_forget(part);
        sl_counters_add(&c, "files", 1);
        sl_counters_add(&c, "bytes_out", fr.size);
        rc = sl_stage_record(st, name, &c);
        break;
    }
out:
    free(shown);
    sl_counters_merge(total, &c);
    sl_counters_release(&c);
    free(final);
    free(part);
    return rc;
}

static int run(const void *opts, const struct sl_strlist *operands, int argc, const char **argv)
{
    const struct opts *o = opts;
    struct sl_world *w = sl_world_get();
    struct sl_strlist urls = { 0 };
    struct checksum_list sums = { 0 };
    char **names = NULL;
    int rc = collect_urls(o, &urls);
    if (!rc && urls.n == 0)
        rc = sl_err_set(SL_ERR_USAGE, "no URLs to download (empty --url-list?)");
    if (rc) {
        sl_error("%s", sl_err_msg());
        sl_strlist_release(&urls);
        return rc == SL_ERR_USAGE ? 2 : 1;
    }
    names = sl_xcalloc(urls.n, sizeof(char *));
    rc = check_urls(&urls, names);
    if (!rc && o->checksums)
        rc = checksum_list_load(&sums, o->checksums);
    if (!rc && o->checksums) {
        /* files the list does not cover: refused with --require-checksums, else warned
         * about (and counted as files_unverified) */
        size_t missing = 0, shown = 0;
        struct sl_buf list = SL_BUF_INIT;
        for (size_t i = 0; i < urls.n; i++)
            if (!checksum_list_find(&sums, names[i])) {
                if (missing++ < 5)
                    sl_buf_printf(&list, "%s'%s'", shown++ ? ", " : "", names[i]);
            }
        if (missing && o->require_checksums)
            rc = sl_err_set(SL_ERR_USAGE,
                            "%zu of %zu files have no entry in '%s' (%s%s) and "
                            "--require-checksums is given\nhint: add their digests to the list, "
                            "or drop --require-checksums to download them unverified",
                            missing, urls.n, o->checksums, list.data, missing > 5 ? ", ..." : "");
        else if (missing && w->rank == 0)
            sl_warn("%zu of %zu files have no entry in '%s' and will not be verified (%s%s); "
                    "they are counted as files_unverified",
                    missing, urls.n, o->checksums, list.data, missing > 5 ? ", ..." : "");
        sl_buf_release(&list);
    }
    if (!rc && o->require_checksums && !o->checksums)
        rc = sl_err_set(SL_ERR_USAGE, "--require-checksums needs --checksums FILE");
    if (!rc)
        rc = fetch_global_init();
    struct sl_inputs none = { NULL, 0 };
    struct sl_buf settings = SL_BUF_INIT;
    sl_options_settings_json(cmd_download_options, o, &settings);
    struct sl_stage st;
    int have_stage = 0;
    char **argv_shown = shown_argv(argc, argv); /* no secrets in the manifest */
    if (!rc) {
        struct sl_stage_cfg cfg = { .stage = "download",
                                    .out_dir = o->out,
                                    .argc = argc,
                                    .argv = (const char **)argv_shown,
                                    .inputs = &none,
                                    .settings_json = settings.data,
                                    .force = o->force,
                                    .wait = o->wait,
                                    .size_only_records = 1 };
        rc = sl_stage_begin(&st, w, &cfg);
        have_stage = !rc;
    }
    if (rc) {
        int code = rc == SL_ERR_USAGE ? 2 : 1;
        sl_error("%s", sl_err_msg());
        for (size_t i = 0; i < urls.n; i++)
            free(names[i]);
        free(names);
        sl_strlist_release(&urls);
        checksum_list_release(&sums);
        sl_buf_release(&settings);
        free_argv(argv_shown, argc);
        return code;
    }

    struct sl_progress prog;
    sl_progress_start(&prog, "download", 0, 1, w->rank == 0);
    struct progress_ctx pc = { &prog, 0, 0 };
    struct sl_counters total;
    sl_counters_init(&total);
    int64_t failed = 0;
    double t0 = sl_now();
    for (size_t i = 0; i < urls.n; i++) {
        if ((int)(i % (size_t)w->size) != w->rank)
            continue;
        int r = download_one(o, &st, urls.v[i], names[i], o->checksums ? &sums : NULL, &pc, &total);
        if (r) {
            sl_error("%s", sl_err_msg());
            failed++;
        }
        pc.files++;
        sl_progress_update(&prog, pc.bytes, pc.files);
    }
    sl_progress_finish(&prog);
    double dt = sl_now() - t0;
    sl_world_allreduce_i64(w, &failed, 1, SL_SUM);
    uint64_t sums_v[2] = { pc.bytes, 0 };
    sl_world_allreduce_u64(w, sums_v, 1, SL_SUM);
    if (!failed) {
        rc = sl_stage_finish(&st, names, urls.n, NULL, NULL);
        if (rc)
            sl_error("%s", sl_err_msg());
        else if (w->rank == 0) {
            char a[32], b[32];
            sl_info("download: %zu files in '%s'; %s received in %.1f s (%s/s)", urls.n, o->out,
                    sl_human_bytes((double)sums_v[0], a, sizeof(a)), dt,
                    sl_human_bytes(dt > 0 ? (double)sums_v[0] / dt : 0, b, sizeof(b)));
        }
    } else if (w->rank == 0) {
        sl_error("%lld of %zu files failed; the others are complete\n"
                 "hint: run the same command again to retry the failed ones (partial files resume)",
                 (long long)failed, urls.n);
    }
    if (have_stage)
        sl_stage_release(&st);
    fetch_global_cleanup();
    sl_counters_release(&total);
    for (size_t i = 0; i < urls.n; i++)
        free(names[i]);
    free(names);
    sl_strlist_release(&urls);
    checksum_list_release(&sums);
    sl_buf_release(&settings);
    free_argv(argv_shown, argc);
    return failed || rc ? 1 : 0;
}

/* The options' table: the dispatcher's parser and -h, and the pipeline's download keys. No
 * option changes what a URL's file holds: the settings are empty. */
#define SL_OPT_STRUCT struct opts

const struct sl_option cmd_download_options[] = {
    SL_OPT_STRING('o', "out", out, "DIR", "output directory (created)", .required = 1),
    SL_OPT_STRINGS(0, "url", urls, "URL", "a URL to fetch (repeatable)"),
    SL_OPT_STRING(0, "url-list", url_list, "FILE", "a file of URLs, one a line ('#' comments)",
                  .flags = SL_OPTF_PATH),
    SL_OPT_STRING(0, "url-template", url_template, "T",
                  "URL with {n} or {n:02d} for each of --file-numbers"),
    SL_OPT_STRING(0, "file-numbers", file_numbers, "LIST", "numbers for the template: 0,3,5-7",
                  .flags = SL_OPTF_LIST),
    SL_OPT_STRING(0, "checksums", checksums, "FILE",
                  "sha256sum or md5sum lines to verify the files against", .flags = SL_OPTF_PATH),
    SL_OPT_FLAG_(0, "require-checksums", require_checksums,
                 "refuse to start when a file has no entry in --checksums",
                 .flags = SL_OPTF_NO_KEY),
    SL_OPT_INTEGER(0, "retries", retries, "N", "retries per file after the first attempt",
                   .def = "5"),
    SL_OPT_DOUBLE(0, "retry-wait", retry_wait, "SECONDS",
                  "wait before the first retry, doubled each time up to 60", .def = "1"),
    SL_OPT_INTEGER(0, "connect-timeout", connect_timeout, "SECONDS", "connect timeout",
                   .def = "30"),
    SL_OPT_INTEGER(0, "stall-timeout", stall_timeout, "SECONDS",
                   "give up an attempt slower than --min-speed for this long", .def = "60"),
    SL_OPT_SIZE(0, "min-speed", min_speed, "BYTES",
                "slowest transfer rate, bytes/s over --stall-timeout", .def = "1K",
                .flags = SL_OPTF_NO_KEY),
    SL_OPT_FLAG_(0, "force", force, "reuse a directory that holds another stage's outputs"),
    SL_OPT_WAIT(wait),
    SL_OPT_COMMON,
    SL_OPT_END_,
};

static int check(void *opts, const struct sl_strlist *operands)
{
    const struct opts *o = opts;
    if (operands->n)
        return sl_err_set(SL_ERR_USAGE, "unexpected operand '%s' (URLs go after --url)",
                          operands->v[0]);
    if (!o->urls.n && !o->url_list && !o->url_template)
        return sl_err_set(SL_ERR_USAGE,
                          "nothing to download: give --url, --url-list or --url-template");
    if ((!o->url_template) != (!o->file_numbers))
        return sl_err_set(SL_ERR_USAGE, "--url-template and --file-numbers go together");
    if (o->retries < 0 || o->retries > 100)
        return sl_err_set(SL_ERR_USAGE, "--retries must be 0..100");
    if (o->retry_wait < 0 || o->retry_wait > 600)
        return sl_err_set(SL_ERR_USAGE, "--retry-wait must be 0..600 seconds");
    if (o->stall_timeout < 1 || o->stall_timeout > 86400)
        return sl_err_set(SL_ERR_USAGE, "--stall-timeout must be 1..86400 seconds");
    if (o->min_speed > (1ull << 40))
        return sl_err_set(SL_ERR_USAGE, "--min-speed must be at most 1T bytes/s");
    return 0;
}

const struct sl_cmd cmd_download =
    SL_CMD(cmd_download_usage, cmd_download_options, struct opts, check, run);
