/* struct sl_aho: Aho-Corasick automaton (see aho.h). */
#include "curate/filter/aho.h"

#include "core/alloc.h"

#include <stdlib.h>
#include <string.h>

/* A transition not set yet while the trie is built (states are < 2^32 - 1). */
#define NONE UINT32_MAX

void sl_aho_init(struct sl_aho *a)
{
    memset(a, 0, sizeof(*a));
    a->nclass = 1;
}

void sl_aho_release(struct sl_aho *a)
{
    free(a->next);
    free(a->out);
    sl_aho_init(a);
}

/* Patterns are added before the byte classes are final, so the trie is first kept with 256
 * columns; sl_aho_build compacts it to nclass columns. */
static uint32_t new_state(struct sl_aho *a)
{
    if (a->nstates == a->cap) {
        a->cap = a->cap ? a->cap * 2 : 64;
        a->next = sl_xrealloc(a->next, sl_mul_size(a->cap, 256 * sizeof(uint32_t)));
        a->out = sl_xrealloc(a->out, a->cap);
    }
    uint32_t s = (uint32_t)a->nstates++;
    for (int c = 0; c < 256; c++)
        a->next[(size_t)s * 256 + c] = NONE;
    a->out[s] = 0;
    return s;
}

void sl_aho_add(struct sl_aho *a, const char *s, size_t n)
{
    if (!n || a->built)
        return;
    if (!a->nstates)
        new_state(a);
    uint32_t st = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!a->cls[c])
            a->cls[c] = (uint8_t)a->nclass++;
        uint32_t *t = &a->next[(size_t)st * 256 + c];
        if (*t == NONE) {
            uint32_t ns = new_state(a); /* may move a->next */
            a->next[(size_t)st * 256 + c] = ns;
        }
        st = a->next[(size_t)st * 256 + c];
    }
    a->out[st] = 1;
    a->npatterns++;
}

/* Breadth-first over the trie: each state's missing transitions become those of its
 * failure state (already complete, being shallower), so the table answers every byte. */
void sl_aho_build(struct sl_aho *a)
{
    if (a->built)
        return;
    a->built = 1;
    if (!a->nstates)
        new_state(a);
    size_t ns = a->nstates;
    uint32_t *fail = sl_xcalloc(ns, sizeof(uint32_t));
    uint32_t *queue = sl_xmalloc(sl_mul_size(ns, sizeof(uint32_t)));
    size_t head = 0, tail = 0;
    uint32_t *row0 = a->next;
    for (int c = 0; c < 256; c++) {
        if (row0[c] == NONE) {
            row0[c] = 0;
        } else {
            fail[row0[c]] = 0;
            queue[tail++] = row0[c];
        }
    }
    while (head < tail) {
        uint32_t s = queue[head++];
        a->out[s] |= a->out[fail[s]];
        uint32_t *row = &a->next[(size_t)s * 256];
        const uint32_t *frow = &a->next[(size_t)fail[s] * 256];
        for (int c = 0; c < 256; c++) {
            if (row[c] == NONE) {
                row[c] = frow[c];
            } else {
                fail[row[c]] = frow[c];
                queue[tail++] = row[c];
            }
        }
    }
    /* compact: one column per class; class 0 (bytes in no pattern) leads to the root */
    uint8_t rep[256] = { 0 };
    for (int c = 255; c >= 0; c--)
        if (a->cls[c])
            rep[a->cls[c]] = (uint8_t)c;
    uint32_t *t = sl_xmalloc(sl_mul_size(ns, a->nclass * sizeof(uint32_t)));
    for (size_t s = 0; s < ns; s++) {
        t[s * a->nclass] = 0;
        for (unsigned k = 1; k < a->nclass; k++)
            t[s * a->nclass + k] = a->next[s * 256 + rep[k]];
    }
    free(a->next);
    a->next = t;
    free(fail);
    free(queue);
}

int sl_aho_any(const struct sl_aho *a, const char *s, size_t n)
{
    if (!a->npatterns)
        return 0;
    uint32_t st = 0;
    for (size_t i = 0; i < n; i++) {
        st = a->next[(size_t)st * a->nclass + a->cls[(unsigned char)s[i]]];
        if (a->out[st])
            return 1;
    }
    return 0;
}
