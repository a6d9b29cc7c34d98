/* struct sl_buf: a growable byte buffer with an optional size cap.
 *
 * The data is always NUL-terminated (data[len] == 0) once anything was added, so it can
 * be used as a C string when it holds text. A zero-initialised struct is a valid empty
 * buffer (data may be NULL until the first append). The owner calls sl_buf_release().
 * When `max` is non-zero, growth past `max` bytes fails with SL_ERR_TOOBIG and leaves the
 * buffer unchanged: every buffer that holds untrusted input sets a cap.
 */
#ifndef SL_BUF_H
#define SL_BUF_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

struct sl_buf {
    char *data;
    size_t len;
    size_t cap; /* allocated bytes (excluding the terminating NUL slot) */
    size_t max; /* 0: unlimited */
};

#define SL_BUF_INIT {NULL, 0, 0, 0}

void sl_buf_init(struct sl_buf *b, size_t max);
void sl_buf_release(struct sl_buf *b);

/* Ensure room for `extra` more bytes. 0 or SL_ERR_TOOBIG (cap reached). */
int sl_buf_reserve(struct sl_buf *b, size_t extra);

int sl_buf_append(struct sl_buf *b, const void *data, size_t n);
int sl_buf_putc(struct sl_buf *b, char c);
int sl_buf_puts(struct sl_buf *b, const char *s);
int sl_buf_printf(struct sl_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int sl_buf_vprintf(struct sl_buf *b, const char *fmt, va_list ap);

/* Append a JSON string literal (with quotes) for `s`. Invalid UTF-8 is written as U+FFFD,
 * control characters as escapes; `/` is not escaped. */
int sl_buf_json_str(struct sl_buf *b, const char *s, size_t n);
/* Append the standard base64 (RFC 4648, with padding) of p[0..n). */
int sl_buf_base64(struct sl_buf *b, const void *p, size_t n);
/* Append NUL-terminated `s` as XML/SVG text or attribute value: < > & " escaped. */
int sl_buf_xml_text(struct sl_buf *b, const char *s);

/* Set len to 0 (keeps the allocation). */
void sl_buf_reset(struct sl_buf *b);
/* Set the length to n (n <= len). */
void sl_buf_truncate(struct sl_buf *b, size_t n);

/* Take ownership of the data; the buffer becomes empty. Never NULL. */
char *sl_buf_detach(struct sl_buf *b, size_t *len);

/* Remove the first n bytes. */
void sl_buf_consume(struct sl_buf *b, size_t n);

#endif
