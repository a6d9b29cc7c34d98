/* Fast non-cryptographic hashing (xxHash XXH3), a file-content fingerprint, and CRC-32C. */
#ifndef SL_HASH_H
#define SL_HASH_H

#include <stddef.h>
#include <stdint.h>

struct sl_hash128 {
    uint64_t lo, hi;
};

uint64_t sl_hash64(const void *data, size_t n, uint64_t seed);
struct sl_hash128 sl_hash128(const void *data, size_t n, uint64_t seed);
/* 32 lowercase hex digits (+NUL) of a 128-bit hash. */
void sl_hash128_hex(struct sl_hash128 h, char out[33]);

/* Streaming 64-bit hash for things built piece by piece (plans, settings). */
struct sl_hasher {
    void *state;
};
void sl_hasher_init(struct sl_hasher *h, uint64_t seed);
void sl_hasher_update(struct sl_hasher *h, const void *data, size_t n);
void sl_hasher_str(struct sl_hasher *h, const char *s); /* includes the terminating NUL */
void sl_hasher_u64(struct sl_hasher *h, uint64_t v);
uint64_t sl_hasher_final(struct sl_hasher *h); /* also frees the state */

/* CRC-32C (Castagnoli, reflected polynomial 0x82F63B78, as iSCSI, ext4 and TFRecord use it)
 * of data, continuing from crc (0 to start): sl_crc32c(0, "123456789", 9) = 0xE3069283.
 * Bytewise from a table: for records of kilobytes, not for bulk data. */
uint32_t sl_crc32c(uint32_t crc, const void *data, size_t n);

#endif
