/* Megatron's GPT document / sample / shuffle indices, numpy's MT19937 shuffle, the split
 * rule, and .npy files for the cache. */
#include "dataset/gpt_index.h"

#include "core/alloc.h"
#include "core/atomic.h"
#include "core/buf.h"
#include "core/err.h"
#include "core/stream.h"
#include "dataset/idx.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- MT19937 ------------------------------------------------------------------------- */

void mt19937_seed(struct mt19937 *r, uint32_t seed)
{
    for (int i = 0; i < 624; i++) {
        r->mt[i] = seed;
        seed = 1812433253u * (seed ^ (seed >> 30)) + (uint32_t)i + 1u;
    }
    r->pos = 624;
}

static void mt_generate(struct mt19937 *r)
{
    static const uint32_t mag[2] = { 0, 0x9908b0dfu };
    uint32_t *mt = r->mt;
    int k;
    uint32_t y;
    for (k = 0; k < 624 - 397; k++) {
        y = (mt[k] & 0x80000000u) | (mt[k + 1] & 0x7fffffffu);
        mt[k] = mt[k + 397] ^ (y >> 1) ^ mag[y & 1];
    }
    for (; k < 623; k++) {
        y = (mt[k] & 0x80000000u) | (mt[k + 1] & 0x7fffffffu);
        mt[k] = mt[k + 397 - 624] ^ (y >> 1) ^ mag[y & 1];
    }
    y = (mt[623] & 0x80000000u) | (mt[0] & 0x7fffffffu);
    mt[623] = mt[396] ^ (y >> 1) ^ mag[y & 1];
    r->pos = 0;
}

uint32_t mt19937_next32(struct mt19937 *r)
{
    if (r->pos >= 624)
        mt_generate(r);
    uint32_t y = r->mt[r->pos++];
    y ^= y >> 11;
    y ^= (y << 7) & 0x9d2c5680u;
    y ^= (y << 15) & 0xefc60000u;
    y ^= y >> 18;
    return y;
}

uint64_t mt19937_interval(struct mt19937 *r, uint64_t max)
{
    if (max == 0)
        return 0;
    uint64_t mask = max, v;
    mask |= mask >> 1;
    mask |= mask >> 2;
    mask |= mask >> 4;
    mask |= mask >> 8;
    mask |= mask >> 16;
    mask |= mask >> 32;
    if (max <= 0xffffffffu) {
        while ((v = (mt19937_next32(r) & mask)) > max) {
        }
    } else {
        for (;;) {
            uint64_t hi = mt19937_next32(r), lo = mt19937_next32(r);
            v = ((hi << 32) | lo) & mask;
            if (v <= max)
                break;
        }
    }
    return v;
}

void mt19937_shuffle_i32(struct mt19937 *r, int32_t *x, size_t n)
{
    for (size_t i = n; i-- > 1;) {
        size_t j = (size_t)mt19937_interval(r, i);
        int32_t t = x[i];
        x[i] = x[j];
        x[j] = t;
    }
}

void mt19937_shuffle_i64(struct mt19937 *r, int64_t *x, size_t n)
{
    for (size_t i = n; i-- > 1;) {
        size_t j = (size_t)mt19937_interval(r, i);
        int64_t t = x[i];
        x[i] = x[j];
        x[j] = t;
    }
}

/* ---- split --------------------------------------------------------------------------- */

int gpt_split_parse(const char *s, double w[3])
{
    int n = 0;
    w[0] = w[1] = w[2] = 0.0;
    const char *p = s;
    while (*p) {
        if ((*p >= '0' && *p <= '9') || *p == '.') {
            char *end;
            double v = strtod(p, &end);
            if (end == p)
                end = (char *)p + 1;
            if (n >= 3)
                return sl_err_set(SL_ERR_CONFIG, "data.split '%s': more than three parts\n"
                                                 "hint: train,valid,test as in 969,30,1",
                                  s);
            w[n++] = v;
            p = end;
        } else if (*p == '-') {
            return sl_err_set(SL_ERR_CONFIG, "data.split '%s': parts must not be negative", s);
        } else {
            p++;
        }
    }
    double sum = w[0] + w[1] + w[2];
    if (n == 0 || !(sum > 0))
        return sl_err_set(SL_ERR_CONFIG, "data.split '%s': needs positive parts such as 969,30,1", s);
    for (int i = 0; i < 3; i++)
        w[i] = w[i] / sum;
    return 0;
}

void gpt_split_ranges(const double w[3], uint64_t n, uint64_t lo[3], uint64_t hi[3])
{
    double b = 0.0;
    for (int i = 0; i < 3; i++) {
        double e = b + w[i];
        if (w[i] > 0 && e > b) {
            /* Python's round(): halves to even, which rint does in the default mode */
            lo[i] = (uint64_t)rint(b * (double)n);
            hi[i] = (uint64_t)rint(e * (double)n);
        } else {
            lo[i] = hi[i] = 0;
        }
        b = e;
    }
}

/* ---- index --------------------------------------------------------------------------- */

void gpt_index_release(struct gpt_index *ix)
{
    free(ix->doc_index);
    free(ix->sample_index);
    free(ix->shuffle_index);
    memset(ix, 0, sizeof(*ix));
}

static void doc_index_fill(int32_t *out, uint64_t lo, uint64_t hi, int epochs, struct mt19937 *rng)
{
    size_t k = 0;
    for (int e = 0; e < epochs; e++)
        for (uint64_t s = lo; s < hi; s++)
            out[k++] = (int32_t)s;
    mt19937_shuffle_i32(rng, out, k);
}

int gpt_index_build(struct gpt_index *ix, const struct idx_reader *r, uint64_t lo, uint64_t hi,
                    const struct gpt_index_opts *o)
{
    memset(ix, 0, sizeof(*ix));
    const uint64_t L = o->seq_len, E = 1;
    if (hi <= lo || hi > idx_reader_sequences(r))
        return sl_err_set(SL_ERR_CONFIG, "'%s': empty sequence range [%llu, %llu)",
                          idx_reader_prefix(r), (unsigned long long)lo, (unsigned long long)hi);
    if (hi > INT32_MAX)
        return sl_err_set(SL_ERR_UNSUPPORTED, "'%s': more than 2^31 sequences",
                          idx_reader_prefix(r));
    uint64_t T = 0;
    for (uint64_t s = lo; s < hi; s++)
        T += idx_reader_seq_len(r, s);
    ix->tokens_per_epoch = T;
    /* fewer tokens than one sample: Megatron repeats the sequences over epochs */
    if (T == 0)
        return sl_err_set(SL_ERR_CONFIG,
                          "'%s': sequences [%llu, %llu) hold no tokens: no sample can be made\n"
                          "hint: give this split a larger share (data.split)",
                          idx_reader_prefix(r), (unsigned long long)lo, (unsigned long long)hi);
    /* epochs: the fewest with epochs * T >= num_samples * L + E */
    uint64_t want = o->num_samples * L + E;
    int epochs = 1;
    for (uint64_t have = T; have < want; have += T)
        epochs++;
    int separate = 0;
    if (epochs > 1) {
        uint64_t sans = ((uint64_t)(epochs - 1) * T - E) / L;
        uint64_t from_final = o->num_samples - sans;
        uint64_t per_epoch = (T - E) / L;
        separate = (double)from_final < (double)(uint64_t)(0.80 * (double)per_epoch);
    }
    ix->num_epochs = epochs;
    ix->separate_final_epoch = separate;
    struct mt19937 rng;
    mt19937_seed(&rng, o->seed);
    uint64_t nseq = hi - lo;
    ix->n_doc = (size_t)(nseq * (uint64_t)epochs);
    ix->doc_index = sl_xmalloc(sl_mul_size(ix->n_doc, sizeof(int32_t)));
    if (!separate || epochs == 1) {
        doc_index_fill(ix->doc_index, lo, hi, epochs, &rng);
    } else {
        doc_index_fill(ix->doc_index, lo, hi, epochs - 1, &rng);
        doc_index_fill(ix->doc_index + nseq * (uint64_t)(epochs - 1), lo, hi, 1, &rng);
    }
    /* sample index (helpers.cpp build_sample_idx, drop-last) */
    uint64_t n = ((uint64_t)epochs * T - E) / L;
    ix->n_samples = (size_t)n;
    ix->sample_index = sl_xmalloc(sl_mul_size((size_t)n + 1, 2 * sizeof(int64_t)));
    int64_t *si = ix->sample_index;
    si[0] = 0;
    si[1] = 0;
    size_t pos = 0;
    int64_t off = 0;
    for (uint64_t k = 1; k <= n; k++) {
        int64_t remaining = (int64_t)(L + E);
        while (remaining != 0) {
            int64_t len = (int64_t)idx_reader_seq_len(r, (uint64_t)ix->doc_index[pos]) - off;
            remaining -= len;
            if (remaining <= 0) {
                off += remaining + len - (int64_t)E;
                remaining = 0;
            } else {
                if (pos == ix->n_doc - 1) {
                    off = (int64_t)idx_reader_seq_len(r, (uint64_t)ix->doc_index[pos]) - (int64_t)E;
                    break;
                }
                pos++;
                off = 0;
            }
        }
        si[2 * k] = (int64_t)pos;
        si[2 * k + 1] = off;
    }
    /* shuffle index */
    ix->shuffle_index = sl_xmalloc(sl_mul_size(n ? (size_t)n : 1, sizeof(int64_t)));
    uint64_t first = n;
    if (separate)
        first = ((uint64_t)(epochs - 1) * T - E) / L;
    if (first > n)
        first = n;
    for (uint64_t k = 0; k < n; k++)
        ix->shuffle_index[k] = (int64_t)k;
    mt19937_shuffle_i64(&rng, ix->shuffle_index, (size_t)first);
    if (first < n)
        mt19937_shuffle_i64(&rng, ix->shuffle_index + first, (size_t)(n - first));
    return 0;
}

int gpt_index_sample(const struct gpt_index *ix, const struct idx_reader *r, uint64_t seq_len,
                     uint64_t i, uint32_t *out, uint64_t vocab_size)
{
    if (i >= ix->n_samples)
        return sl_err_set(SL_ERR_STATE, "'%s': sample %llu of %zu requested", idx_reader_prefix(r),
                          (unsigned long long)i, ix->n_samples);
    int64_t k = ix->shuffle_index[i];
    int64_t b = ix->sample_index[2 * k], bo = ix->sample_index[2 * k + 1];
    int64_t e = ix->sample_index[2 * k + 2], eo = ix->sample_index[2 * k + 3];
    size_t got = 0, want = (size_t)seq_len + 1;
    for (int64_t p = b; p <= e; p++) {
        uint64_t seq = (uint64_t)ix->doc_index[p];
        uint64_t from = p == b ? (uint64_t)bo : 0;
        uint64_t to = p == e ? (uint64_t)eo + 1 : idx_reader_seq_len(r, seq);
        if (to < from || got + (to - from) > want)
            return sl_err_set(SL_ERR_CORRUPT, "'%s': sample %llu does not add up to %zu tokens\n"
                                              "hint: delete the index cache",
                              idx_reader_prefix(r), (unsigned long long)i, want);
        int rc = idx_reader_read(r, seq, from, (size_t)(to - from), out + got);
        if (rc)
            return rc;
        if (vocab_size)
            for (size_t t = got; t < got + (to - from); t++)
                if (out[t] >= vocab_size)
                    return sl_err_set(SL_ERR_FORMAT,
                                      "'%s': token id %u in sequence %llu is outside the model's "
                                      "vocabulary of %llu\n"
                                      "hint: the data was tokenized for another vocabulary; set "
                                      "model.vocab_size or re-tokenize",
                                      idx_reader_prefix(r), out[t], (unsigned long long)seq,
                                      (unsigned long long)vocab_size);
        got += (size_t)(to - from);
    }
    if (got != want)
        return sl_err_set(SL_ERR_CORRUPT, "'%s': sample %llu has %zu tokens, expected %zu",
                          idx_reader_prefix(r), (unsigned long long)i, got, want);
    return 0;
}

/* ---- .npy ---------------------------------------------------------------------------- */

int npy_write(const char *path, const char *descr, const uint64_t *shape, int ndim,
              const void *data, size_t elem_size)
{
    struct sl_buf h = SL_BUF_INIT;
    sl_buf_printf(&h, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
    size_t count = 1;
    for (int d = 0; d < ndim; d++) {
        sl_buf_printf(&h, "%llu,%s", (unsigned long long)shape[d], d + 1 < ndim ? " " : "");
        count *= (size_t)shape[d];
    }
    if (ndim == 2)
        sl_buf_truncate(&h, h.len - 1); /* "(3, 2)" not "(3, 2,)" */
    sl_buf_puts(&h, "), }");
    while ((10 + h.len + 1) % 64)
        sl_buf_putc(&h, ' ');
    sl_buf_putc(&h, '\n');
    unsigned char pre[10] = { 0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(h.len & 0xff),
                              (unsigned char)(h.len >> 8) };
    struct sl_atomic_file f;
    int rc = sl_atomic_open(&f, path);
    if (!rc)
        rc = sl_atomic_write(&f, pre, sizeof(pre));
    if (!rc)
        rc = sl_atomic_write(&f, h.data, h.len);
    if (!rc && count)
        rc = sl_atomic_write(&f, data, count * elem_size);
    if (!rc)
        rc = sl_atomic_commit(&f);
    else
        sl_atomic_abort(&f);
    sl_buf_release(&h);
    return rc;
}

int npy_read_i64(const char *path, int64_t **out, uint64_t *shape, int *ndim)
{
    *out = NULL;
    struct sl_buf b = SL_BUF_INIT;
    struct sl_reader *rd;
    struct sl_reader_opts ro = { SL_CODEC_NONE, 0 };
    int rc = sl_reader_open(&rd, path, &ro);
    if (rc)
        return rc;
    rc = sl_reader_read_all(rd, &b);
    sl_reader_close(rd);
    if (rc)
        return rc;
    rc = SL_ERR_CORRUPT;
    if (b.len < 10 || memcmp(b.data, "\x93NUMPY\x01\x00", 8) != 0)
        goto bad;
    size_t hl = (unsigned char)b.data[8] | (size_t)(unsigned char)b.data[9] << 8;
    if (10 + hl > b.len)
        goto bad;
    char *hdr = sl_xstrndup(b.data + 10, hl);
    const char *d = strstr(hdr, "'descr': '"), *s = strstr(hdr, "'shape': (");
    size_t es = 0;
    int sgn = 1;
    if (d) {
        d += 10;
        if (!strncmp(d, "<i4", 3))
            es = 4;
        else if (!strncmp(d, "<u4", 3))
            es = 4, sgn = 0;
        else if (!strncmp(d, "<i8", 3))
            es = 8;
        else if (!strncmp(d, "<i2", 3))
            es = 2;
    }
    *ndim = 0;
    if (s) {
        s += 10;
        while (*s && *s != ')' && *ndim < 2) {
            char *end;
            unsigned long long v = strtoull(s, &end, 10);
            if (end == s)
                break;
            shape[(*ndim)++] = v;
            s = end;
            while (*s == ',' || *s == ' ')
                s++;
        }
    }
    int fortran = strstr(hdr, "'fortran_order': True") != NULL;
    free(hdr);
    if (!es || !s || *ndim == 0 || fortran)
        goto bad;
    uint64_t count = shape[0] * (*ndim == 2 ? shape[1] : 1);
    if (count > (b.len - 10 - hl) / es || (b.len - 10 - hl) != count * es)
        goto bad;
    int64_t *v = sl_xmalloc(sl_mul_size(count ? (size_t)count : 1, sizeof(int64_t)));
    const unsigned char *p = (const unsigned char *)b.data + 10 + hl;
    for (uint64_t i = 0; i < count; i++, p += es) {
        uint64_t x = 0;
        for (size_t k = 0; k < es; k++)
            x |= (uint64_t)p[k] << (8 * k);
        if (sgn && es < 8 && (x >> (8 * es - 1)) & 1)
            x |= ~0ull << (8 * es);
        v[i] = (int64_t)x;
    }
    *out = v;
    sl_buf_release(&b);
    return 0;
bad:
    sl_buf_release(&b);
    return sl_err_set(SL_ERR_CORRUPT, "cannot read index cache '%s': not a valid .npy array", path);
}

static char *cache_path(const char *dir, const char *name, const char *what)
{
    return sl_xasprintf("%s/%s-%s.npy", dir, name, what);
}

int gpt_index_save(const struct gpt_index *ix, const char *dir, const char *name)
{
    int rc = sl_mkdir_p(dir);
    if (rc)
        return rc;
    char *p = cache_path(dir, name, "document_index");
    uint64_t shape[2] = { ix->n_doc, 0 };
    rc = npy_write(p, "<i4", shape, 1, ix->doc_index, 4);
    free(p);
    if (rc)
        return rc;
    /* Megatron's dtypes: int32 sample index unless values need int64; uint32 shuffle */
    size_t rows = ix->n_samples + 1;
    int wide = ix->n_doc > INT32_MAX;
    for (size_t i = 0; i < 2 * rows && !wide; i++)
        wide = ix->sample_index[i] > INT32_MAX;
    p = cache_path(dir, name, "sample_index");
    shape[0] = rows;
    shape[1] = 2;
    if (wide) {
        rc = npy_write(p, "<i8", shape, 2, ix->sample_index, 8);
    } else {
        int32_t *t = sl_xmalloc(sl_mul_size(2 * rows, sizeof(int32_t)));
        for (size_t i = 0; i < 2 * rows; i++)
            t[i] = (int32_t)ix->sample_index[i];
        rc = npy_write(p, "<i4", shape, 2, t, 4);
        free(t);
    }
    free(p);
    if (rc)
        return rc;
    p = cache_path(dir, name, "shuffle_index");
    shape[0] = ix->n_samples;
    if (ix->n_samples >= 0xfffffffeu) {
        rc = npy_write(p, "<i8", shape, 1, ix->shuffle_index, 8);
    } else {
        uint32_t *t = sl_xmalloc(sl_mul_size(ix->n_samples ? ix->n_samples : 1, sizeof(uint32_t)));
        for (size_t i = 0; i < ix->n_samples; i++)
            t[i] = (uint32_t)ix->shuffle_index[i];
        rc = npy_write(p, "<u4", shape, 1, t, 4);
        free(t);
    }
    free(p);
    return rc;
}

int gpt_index_load(struct gpt_index *ix, const char *dir, const char *name,
                   const struct idx_reader *r, uint64_t seq_len)
{
    memset(ix, 0, sizeof(*ix));
    uint64_t s1[2], s2[2], s3[2];
    int d1, d2, d3, rc;
    int64_t *doc = NULL, *smp = NULL, *shf = NULL;
    char *p1 = cache_path(dir, name, "document_index"), *p2 = cache_path(dir, name, "sample_index"),
         *p3 = cache_path(dir, name, "shuffle_index");
    FILE *probe = fopen(p3, "rb");
    if (!probe) {
        rc = SL_ERR_NOTFOUND;
        goto out;
    }
    fclose(probe);
    if ((rc = npy_read_i64(p1, &doc, s1, &d1)) || (rc = npy_read_i64(p2, &smp, s2, &d2)) ||
        (rc = npy_read_i64(p3, &shf, s3, &d3)))
        goto out;
    rc = SL_ERR_CORRUPT;
    if (d1 != 1 || d2 != 2 || s2[1] != 2 || d3 != 1 || s2[0] != s3[0] + 1 || s1[0] == 0)
        goto bad;
    uint64_t nseq = idx_reader_sequences(r);
    for (uint64_t i = 0; i < s1[0]; i++)
        if (doc[i] < 0 || (uint64_t)doc[i] >= nseq)
            goto bad;
    for (uint64_t i = 0; i < s2[0]; i++) {
        if (smp[2 * i] < 0 || (uint64_t)smp[2 * i] >= s1[0] || smp[2 * i + 1] < 0)
            goto bad;
        if (smp[2 * i + 1] > (int64_t)idx_reader_seq_len(r, (uint64_t)doc[smp[2 * i]]))
            goto bad;
    }
    for (uint64_t i = 0; i < s3[0]; i++)
        if (shf[i] < 0 || (uint64_t)shf[i] >= s3[0])
            goto bad;
    ix->n_doc = (size_t)s1[0];
    ix->doc_index = sl_xmalloc(ix->n_doc * sizeof(int32_t));
    for (size_t i = 0; i < ix->n_doc; i++)
        ix->doc_index[i] = (int32_t)doc[i];
    ix->sample_index = smp;
    ix->shuffle_index = shf;
    ix->n_samples = (size_t)s3[0];
    smp = shf = NULL;
    (void)seq_len;
    rc = 0;
    goto out;
bad:
    rc = sl_err_set(SL_ERR_CORRUPT, "index cache '%s/%s-*' does not match the data", dir, name);
out:
    free(doc);
    free(smp);
    free(shf);
    free(p1);
    free(p2);
    free(p3);
    return rc;
}
