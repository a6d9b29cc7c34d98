/* stderr diagnostics with levels, rank prefixes and per-key limits. */
#include "core/log.h"

#include "core/alloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static enum sl_log_level level = SL_LOG_INFO;
static int log_rank, log_size = 1;
static const char *prog = "sluice";

void sl_log_set_level(enum sl_log_level l)
{
    level = l;
}

enum sl_log_level sl_log_level(void)
{
    return level;
}

void sl_log_set_rank(int rank, int size)
{
    log_rank = rank;
    log_size = size;
}

void sl_log_set_prog(const char *p)
{
    prog = p;
}

const char *sl_log_prog(void)
{
    return prog;
}

/* Messages quote outside data (file names, URLs, JSON values): control characters other
 * than newline and tab are written as \xNN (C0 and DEL) or \u00NN (C1, as UTF-8), so that a
 * file named "evil\e]0;x\a.jsonl" cannot retitle or redraw the terminal. */
static void escape_controls(const char *in, char *out, size_t cap)
{
    static const char hex[] = "0123456789abcdef";
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)in; *p && o + 7 < cap; p++) {
        if ((*p < 0x20 && *p != '\n' && *p != '\t') || *p == 0x7f) {
            out[o++] = '\\', out[o++] = 'x';
            out[o++] = hex[*p >> 4], out[o++] = hex[*p & 15];
        } else if (*p == 0xC2 && p[1] >= 0x80 && p[1] <= 0x9F) {
            memcpy(out + o, "\\u00", 4);
            o += 4;
            out[o++] = hex[p[1] >> 4], out[o++] = hex[p[1] & 15];
            p++;
        } else {
            out[o++] = (char)*p;
        }
    }
    out[o] = 0;
}

static void emit(const char *tag, const char *fmt, va_list ap)
{
    char line[4096], safe[4 * sizeof(line)];
    int n = 0;
    if (log_size > 1)
        n = snprintf(line, sizeof(line), "[rank %d] ", log_rank);
    if (tag)
        n += snprintf(line + n, sizeof(line) - (size_t)n, "%s", tag);
    vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
    escape_controls(line, safe, sizeof(safe));
    /* one write per message so ranks do not interleave mid-line */
    fprintf(stderr, "%s\n", safe);
}

void sl_error(const char *fmt, ...)
{
    char tag[128];
    snprintf(tag, sizeof(tag), "%s: error: ", prog);
    va_list ap;
    va_start(ap, fmt);
    emit(tag, fmt, ap);
    va_end(ap);
}

void sl_warn(const char *fmt, ...)
{
    if (level < SL_LOG_WARN)
        return;
    va_list ap;
    va_start(ap, fmt);
    emit("warning: ", fmt, ap);
    va_end(ap);
}

void sl_info(const char *fmt, ...)
{
    if (level < SL_LOG_INFO)
        return;
    va_list ap;
    va_start(ap, fmt);
    emit(NULL, fmt, ap);
    va_end(ap);
}

void sl_debug(const char *fmt, ...)
{
    if (level < SL_LOG_DEBUG)
        return;
    va_list ap;
    va_start(ap, fmt);
    emit("debug: ", fmt, ap);
    va_end(ap);
}

struct limited {
    char *key;
    unsigned long count;
    unsigned limit;
};
static struct limited *lims;
static size_t nlims;

unsigned long sl_warn_limited(const char *key, unsigned limit, const char *fmt, ...)
{
    struct limited *l = NULL;
    for (size_t i = 0; i < nlims; i++)
        if (strcmp(lims[i].key, key) == 0)
            l = &lims[i];
    if (!l) {
        lims = sl_xrealloc(lims, (nlims + 1) * sizeof(*lims));
        l = &lims[nlims++];
        l->key = sl_xstrdup(key);
        l->count = 0;
        l->limit = limit;
    }
    l->count++;
    if (l->count <= limit && level >= SL_LOG_WARN) {
        va_list ap;
        va_start(ap, fmt);
        emit("warning: ", fmt, ap);
        va_end(ap);
    }
    return l->count;
}

void sl_warn_limited_summary(void)
{
    for (size_t i = 0; i < nlims; i++)
        if (lims[i].count > lims[i].limit)
            sl_warn("%s: %lu more not shown (%lu in all)", lims[i].key,
                    lims[i].count - lims[i].limit, lims[i].count);
}

void sl_warn_skip(void *ctx, const char *reason, const char *message)
{
    (void)ctx;
    if (message)
        sl_warn_limited(reason, 20, "%s", message);
}

void sl_warn_limited_reset(void)
{
    for (size_t i = 0; i < nlims; i++)
        free(lims[i].key);
    free(lims);
    lims = NULL;
    nlims = 0;
}
