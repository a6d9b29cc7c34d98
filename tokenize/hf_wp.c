/* The WordPiece vocabulary of struct hf (tokenize/hf_impl.h): tokens laid out by id and an
 * open-addressing table from token bytes to id. Filled from a tokenizer.json
 * (tokenize/hf_load.c) or a vocab.txt (tokenize/bert_vocab.c). */
#include "core/alloc.h"
#include "core/err.h"
#include "tokenize/bpe_impl.h"
#include "tokenize/hf_impl.h"

#include <stdlib.h>
#include <string.h>

/* the smallest table: a few probes even for tiny vocabularies */
#define MIN_SLOTS 1024

static uint64_t wp_hash(const char *p, size_t n)
{
    return bpe_hash_bytes((const unsigned char *)p, n);
}

int64_t hf_wp_find(const struct hf_wp *w, const char *s, size_t n)
{
    if (!w->tab)
        return -1;
    for (uint64_t i = wp_hash(s, n) & w->mask;; i = (i + 1) & w->mask) {
        uint32_t id1 = w->tab[i];
        if (!id1)
            return -1;
        uint32_t id = id1 - 1;
        if (w->off[id + 1] - w->off[id] == n && !memcmp(w->bytes + w->off[id], s, n))
            return id;
    }
}

int hf_wp_build(struct hf_wp *w, char *bytes, uint32_t *off, uint32_t n_ids, uint32_t dup[2])
{
    w->bytes = bytes;
    w->off = off;
    w->n_ids = n_ids;
    w->max_len = 0;
    uint64_t count = 0;
    for (uint32_t id = 0; id < n_ids; id++) {
        uint32_t len = off[id + 1] - off[id];
        count += len > 0;
        w->max_len = len > w->max_len ? len : w->max_len;
    }
    uint64_t size = MIN_SLOTS;
    while (size < count * 2) /* at most half full */
        size *= 2;
    w->tab = sl_xcalloc(size, sizeof(uint32_t));
    w->mask = size - 1;
    for (uint32_t id = 0; id < n_ids; id++) {
        uint32_t len = off[id + 1] - off[id];
        if (!len)
            continue;
        uint64_t i = wp_hash(bytes + off[id], len) & w->mask;
        for (; w->tab[i]; i = (i + 1) & w->mask) {
            uint32_t o = w->tab[i] - 1;
            if (off[o + 1] - off[o] == len && !memcmp(bytes + off[o], bytes + off[id], len)) {
                dup[0] = o;
                dup[1] = id;
                return SL_ERR_FORMAT;
            }
        }
        w->tab[i] = id + 1;
    }
    return 0;
}

/* Insert id into a table of twice the slots (when it would be half full). */
static void wp_insert(struct hf_wp *w, uint32_t id)
{
    uint32_t len = w->off[id + 1] - w->off[id];
    uint64_t i = wp_hash(w->bytes + w->off[id], len) & w->mask;
    while (w->tab[i])
        i = (i + 1) & w->mask;
    w->tab[i] = id + 1;
}

uint32_t hf_wp_add(struct hf_wp *w, const char *s, size_t n)
{
    uint32_t id = w->n_ids;
    size_t used = w->off[id];
    w->bytes = sl_xrealloc(w->bytes, used + n + 1);
    memcpy(w->bytes + used, s, n);
    w->off = sl_xrealloc(w->off, ((size_t)id + 2) * sizeof(uint32_t));
    w->off[id + 1] = (uint32_t)(used + n);
    w->n_ids = id + 1;
    w->max_len = n > w->max_len ? (uint32_t)n : w->max_len;
    if ((uint64_t)w->n_ids * 2 > w->mask + 1) { /* grow, and insert everything again */
        free(w->tab);
        w->tab = sl_xcalloc((w->mask + 1) * 2, sizeof(uint32_t));
        w->mask = (w->mask + 1) * 2 - 1;
        for (uint32_t k = 0; k < w->n_ids; k++)
            if (w->off[k + 1] > w->off[k])
                wp_insert(w, k);
    } else {
        wp_insert(w, id);
    }
    return id;
}

void hf_wp_release(struct hf_wp *w)
{
    free(w->bytes);
    free(w->off);
    free(w->tab);
    memset(w, 0, sizeof(*w));
}
