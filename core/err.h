/* Error codes and the per-thread error message.
 *
 * Library code returns 0 (SL_OK) or a negative enum sl_err and records a human-readable
 * message with sl_err_set(); the caller shows it with sl_err_msg(). Messages follow
 * docs/style: lowercase, failure first, subject quoted, then a hint when one helps.
 */
#ifndef SL_ERR_H
#define SL_ERR_H

#include <stdarg.h>
#include <stddef.h>

enum sl_err {
    SL_OK = 0,
    SL_ERR_IO = -1,          /* open/read/write/rename failed (errno text in message) */
    SL_ERR_NOMEM = -2,       /* allocation failed or a buffer cap was reached */
    SL_ERR_FORMAT = -3,      /* input is not what it claims to be (bad magic, bad syntax) */
    SL_ERR_CORRUPT = -4,     /* input is damaged (truncated stream, checksum mismatch) */
    SL_ERR_TOOBIG = -5,      /* a record, line or value is over its cap */
    SL_ERR_USAGE = -6,       /* bad option or argument from the user */
    SL_ERR_CONFIG = -7,      /* bad configuration value or key */
    SL_ERR_NOTFOUND = -8,    /* a file, key or item does not exist */
    SL_ERR_EXISTS = -9,      /* refusing to overwrite */
    SL_ERR_UNSUPPORTED = -10, /* valid but not handled (e.g. xz stream) */
    SL_ERR_MPI = -11,        /* an MPI call failed */
    SL_ERR_NET = -12,        /* network failure */
    SL_ERR_STATE = -13,      /* API misuse or inconsistent state */
    SL_ERR_INTERRUPTED = -14, /* stopped by a signal or a user request */
    SL_ERR_BUSY = -15,        /* another run holds what this one needs (a directory lock) */
    SL_ERR_PEER = -16         /* another MPI rank failed, and reported why itself */
};

#define SL_ERR_MSG_MAX 1024

/* Record `code` with a printf-style message for this thread; returns `code` so that
 * `return sl_err_set(SL_ERR_IO, "cannot open '%s': %s", path, strerror(errno));` works. */
int sl_err_set(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int sl_err_setv(int code, const char *fmt, va_list ap);

/* Prefix the current message with more context ("reading 'x': " + old message).
 * Returns `code` unchanged. */
int sl_err_wrap(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The message of the last error recorded by this thread ("" if none). */
const char *sl_err_msg(void);

/* The code of the last error recorded by this thread (SL_OK if none). */
int sl_err_code(void);

/* Forget the last error. */
void sl_err_clear(void);

/* A short name for an error code ("io error", "corrupt input", ...). */
const char *sl_err_name(int code);

#endif
