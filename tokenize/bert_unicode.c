/* Lookups in the generated Python Unicode tables (see tokenize/bert_unicode.h). */
#include "tokenize/bert_unicode.h"

#include "tokenize/bert_unicode_table.h"

/* Hangul syllables: Unicode chapter 3.12 (S = SBase + (L * VCount + V) * TCount + T) */
#define H_SBASE  0xAC00u
#define H_LBASE  0x1100u
#define H_VBASE  0x1161u
#define H_TBASE  0x11A7u
#define H_VCOUNT 21u
#define H_TCOUNT 28u
#define H_NCOUNT (H_VCOUNT * H_TCOUNT)
#define H_SCOUNT (19u * H_NCOUNT)

uint32_t bert_lower(uint32_t cp)
{
    size_t lo = 0, hi = BERT_LOWER_RUNS; /* the last run starting at or before cp */
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if ((uint32_t)bert_lower_runs[mid][0] <= cp)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (!lo)
        return cp;
    const int32_t *r = bert_lower_runs[lo - 1];
    if (cp > (uint32_t)r[1] || (cp - (uint32_t)r[0]) % (uint32_t)r[2])
        return cp;
    return (uint32_t)((int32_t)cp + r[3]);
}

int bert_py_isspace(uint32_t cp)
{
    for (size_t i = 0; i < BERT_PY_SPACES && bert_py_space[i] <= cp; i++)
        if (bert_py_space[i] == cp)
            return 1;
    return 0;
}

size_t bert_decompose(uint32_t cp, uint32_t out[4])
{
    if (cp - H_SBASE < H_SCOUNT) {
        uint32_t s = cp - H_SBASE, t = s % H_TCOUNT;
        out[0] = H_LBASE + s / H_NCOUNT;
        out[1] = H_VBASE + (s % H_NCOUNT) / H_TCOUNT;
        out[2] = H_TBASE + t;
        return t ? 3 : 2;
    }
    size_t lo = 0, hi = BERT_NFD_CPS;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (bert_nfd_cp[mid] == cp) {
            size_t n = bert_nfd_at[mid + 1] - bert_nfd_at[mid];
            for (size_t k = 0; k < n; k++)
                out[k] = bert_nfd_pool[bert_nfd_at[mid] + k];
            return n;
        }
        if (bert_nfd_cp[mid] < cp)
            lo = mid + 1;
        else
            hi = mid;
    }
    return 0;
}

unsigned bert_ccc(uint32_t cp)
{
    size_t lo = 0, hi = BERT_CCC_RUNS;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (bert_ccc_runs[mid][1] < cp)
            lo = mid + 1;
        else if (bert_ccc_runs[mid][0] > cp)
            hi = mid;
        else
            return bert_ccc_runs[mid][2];
    }
    return 0;
}

const char *bert_unicode_version(void)
{
    return BERT_UNICODE_VERSION;
}

const char *bert_python_version(void)
{
    return BERT_PYTHON_VERSION;
}
