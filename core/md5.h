/* MD5 (RFC 1321), for the one place sluice must reproduce another tool's digest: the names
 * of Megatron-Core's index cache files (dataset/megatron_desc.h). Not for security. */
#ifndef SL_MD5_H
#define SL_MD5_H

#include <stddef.h>

/* The digest of n bytes. */
void sl_md5(const void *data, size_t n, unsigned char out[16]);
/* The same as 32 lowercase hex digits and a NUL (Python's hexdigest()). */
void sl_md5_hex(const void *data, size_t n, char out[33]);

#endif
