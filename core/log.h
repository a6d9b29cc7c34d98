/* Diagnostics on stderr for commands: levels set by -q/-v, a rank prefix under MPI, and a
 * per-key limit so that a million bad lines do not flood the terminal. Library code does
 * not call these; it returns errors and reports skips through callbacks. */
#ifndef SL_LOG_H
#define SL_LOG_H

#include <stdarg.h>

enum sl_log_level {
    SL_LOG_QUIET = 0, /* errors only */
    SL_LOG_WARN = 1,
    SL_LOG_INFO = 2, /* default */
    SL_LOG_DEBUG = 3,
};

void sl_log_set_level(enum sl_log_level l);
enum sl_log_level sl_log_level(void);
/* Prefix messages with "[rank R] " when size > 1. */
void sl_log_set_rank(int rank, int size);
/* Program name for error lines ("sluice reshard"); the pointer is kept, not copied. */
void sl_log_set_prog(const char *prog);
const char *sl_log_prog(void);

void sl_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void sl_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void sl_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void sl_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A warning that is shown at most `limit` times per `key` (then once "... more"); all
 * occurrences are counted. Returns the number of occurrences so far. */
unsigned long sl_warn_limited(const char *key, unsigned limit, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* An on_skip callback of the JSONL reader (core/jsonl.h) that only warns: the message, 20
 * of each reason at most (ctx unused). */
void sl_warn_skip(void *ctx, const char *reason, const char *message);
/* Print "KEY: N more messages not shown" for each limited key that overflowed. */
void sl_warn_limited_summary(void);
/* Forget every key's count (a command that runs after another in the same process, as
 * under 'sluice run', starts with fresh limits and summary). */
void sl_warn_limited_reset(void);

#endif
