/* Per-thread error message storage behind enum sl_err. */
#include "core/err.h"

#include <stdio.h>
#include <string.h>

static _Thread_local char err_msg[SL_ERR_MSG_MAX];
static _Thread_local int err_code;

int sl_err_setv(int code, const char *fmt, va_list ap)
{
    /* the arguments may point into err_msg (sl_err_set(c, "...: %s", sl_err_msg())) */
    char msg[sizeof(err_msg)];
    vsnprintf(msg, sizeof(msg), fmt, ap);
    memcpy(err_msg, msg, sizeof(err_msg));
    err_code = code;
    return code;
}

int sl_err_set(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    sl_err_setv(code, fmt, ap);
    va_end(ap);
    return code;
}

int sl_err_wrap(int code, const char *fmt, ...)
{
    char prefix[SL_ERR_MSG_MAX];
    char old[SL_ERR_MSG_MAX];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(prefix, sizeof(prefix), fmt, ap);
    va_end(ap);
    memcpy(old, err_msg, sizeof(old));
    snprintf(err_msg, sizeof(err_msg), "%s%s", prefix, old);
    err_code = code;
    return code;
}

const char *sl_err_msg(void)
{
    return err_msg;
}

int sl_err_code(void)
{
    return err_code;
}

void sl_err_clear(void)
{
    err_msg[0] = '\0';
    err_code = SL_OK;
}

const char *sl_err_name(int code)
{
    switch (code) {
    case SL_OK: return "ok";
    case SL_ERR_IO: return "i/o error";
    case SL_ERR_NOMEM: return "out of memory";
    case SL_ERR_FORMAT: return "bad format";
    case SL_ERR_CORRUPT: return "corrupt input";
    case SL_ERR_TOOBIG: return "too big";
    case SL_ERR_USAGE: return "usage error";
    case SL_ERR_CONFIG: return "configuration error";
    case SL_ERR_NOTFOUND: return "not found";
    case SL_ERR_EXISTS: return "already exists";
    case SL_ERR_UNSUPPORTED: return "unsupported";
    case SL_ERR_MPI: return "mpi error";
    case SL_ERR_NET: return "network error";
    case SL_ERR_STATE: return "invalid state";
    case SL_ERR_INTERRUPTED: return "interrupted";
    case SL_ERR_BUSY: return "busy";
    case SL_ERR_PEER: return "another rank failed";
    }
    return "unknown error";
}
