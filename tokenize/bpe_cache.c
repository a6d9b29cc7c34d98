/* The compiled-vocabulary cache (bpe_cache.h): struct bpe's tables written out after a
 * header, each at a 64-byte boundary, and used where they lie in a read-only mapping of
 * the file, checked before use. */
#include "tokenize/bpe_cache.h"

#include "core/alloc.h"
#include "core/buf.h"
#include "core/err.h"
#include "core/hash.h"
#include "core/stream.h"
#include "tokenize/bpe_impl.h"

#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* Bump when struct bpe's tables or their meaning change: older files are then ignored. */
#define CACHE_VERSION 3
#define TABLE_ALIGN   64
#define CACHE_MAGIC   "SLBPEC\r\n"
#define MAX_SPECIALS  4096

struct head {
    char magic[8];
    uint32_t version, head_size;
    uint64_t key_lo, key_hi;
    uint64_t payload_bytes, payload_hash; /* XXH3 of the file with payload_hash 0 */
    int32_t pretok, tiktoken, whole;
    uint32_t max_len, n_vocab, merge_off, n_merges, nspec;
    uint64_t vmask, pmask, bytes_len, filter_words, spec_bytes;
    int32_t pshift, fshift;
    uint32_t byte_id[256];
};

/* A key is two hashes, each over the cache version, how and arg, then each part's bytes
 * followed by its length (an absent part: UINT64_MAX alone). */
static void key_begin(struct sl_hasher hs[2], const char *how, int arg)
{
    sl_hasher_init(&hs[0], 0x5ca1ab1e);
    sl_hasher_init(&hs[1], 0x0ddba11);
    for (int i = 0; i < 2; i++) {
        sl_hasher_u64(&hs[i], CACHE_VERSION);
        sl_hasher_str(&hs[i], how);
        sl_hasher_u64(&hs[i], (uint64_t)(int64_t)arg);
    }
}

static void key_bytes(struct sl_hasher hs[2], const void *p, size_t n)
{
    sl_hasher_update(&hs[0], p, n);
    sl_hasher_update(&hs[1], p, n);
}

static void key_u64(struct sl_hasher hs[2], uint64_t v)
{
    sl_hasher_u64(&hs[0], v);
    sl_hasher_u64(&hs[1], v);
}

static struct bpe_cache_key key_end(struct sl_hasher hs[2])
{
    struct bpe_cache_key k = { sl_hasher_final(&hs[0]), sl_hasher_final(&hs[1]) };
    return k;
}

struct bpe_cache_key bpe_cache_key(const char *how, int arg, const void *a, size_t alen,
                                   const void *b, size_t blen)
{
    struct sl_hasher hs[2];
    key_begin(hs, how, arg);
    key_bytes(hs, a, alen);
    key_u64(hs, alen);
    if (b)
        key_bytes(hs, b, blen);
    key_u64(hs, b ? blen : UINT64_MAX);
    return key_end(hs);
}

/* A read-only mapping of a regular file of 1 byte to 1 TiB (*n its size), its pages faulted
 * in now, or NULL. When peek is set, the file is mapped only if its first bytes are not a
 * compressed format's (sl_codec_detect): the key then reads it through the reader. */
static const unsigned char *map_file(const char *path, size_t *n, int peek)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    struct stat st;
    int ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 &&
             (uint64_t)st.st_size < ((uint64_t)1 << 40);
    if (ok && peek) {
        unsigned char head[8];
        const char *unsupported = NULL;
        ok = pread(fd, head, sizeof(head), 0) == (ssize_t)sizeof(head) &&
             sl_codec_detect(head, sizeof(head), &unsupported) == SL_CODEC_NONE && !unsupported;
    }
    void *m = ok ? mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0)
                 : MAP_FAILED;
    close(fd);
    if (m == MAP_FAILED)
        return NULL;
    *n = (size_t)st.st_size;
    return m;
}

/* A regular, uncompressed file's bytes hashed where they lie in a mapping of it (copying
 * o200k_base's 3.6 MB rank file out of the page cache was the largest part of a start that
 * finds its cache entry): 1 when done, 0 to read it through the reader instead. */
static int key_file_mapped(struct sl_hasher hs[2], const char *path)
{
    size_t n;
    const unsigned char *m = map_file(path, &n, 1);
    if (!m)
        return 0;
    key_bytes(hs, m, n);
    key_u64(hs, n);
    munmap((void *)m, n);
    return 1;
}

/* One file's bytes (decompressed, as sl_read_file gives them) into the key, then its length:
 * 0, or the reader's error naming the file. */
static int key_file(struct sl_hasher hs[2], const char *path, char *chunk, size_t chunk_size)
{
    if (key_file_mapped(hs, path))
        return 0;
    struct sl_reader *r;
    int rc = sl_reader_open(&r, path, NULL);
    if (rc)
        return rc;
    uint64_t len = 0;
    for (;;) {
        ssize_t got = sl_reader_read(r, chunk, chunk_size);
        if (got < 0) {
            rc = (int)got;
            break;
        }
        if (got == 0)
            break;
        key_bytes(hs, chunk, (size_t)got);
        len += (uint64_t)got;
    }
    sl_reader_close(r);
    if (!rc)
        key_u64(hs, len);
    return rc;
}

int bpe_cache_key_files(struct bpe_cache_key *k, const char *how, int arg, const char *a,
                        const char *b)
{
    enum { CHUNK = 1 << 16 };
    struct sl_hasher hs[2];
    char *chunk = sl_xmalloc(CHUNK);
    key_begin(hs, how, arg);
    int rc = key_file(hs, a, chunk, CHUNK);
    if (!rc && b)
        rc = key_file(hs, b, chunk, CHUNK);
    if (!rc && !b)
        key_u64(hs, UINT64_MAX);
    free(chunk);
    *k = key_end(hs);
    return rc;
}

char *bpe_cache_dir(void)
{
    const char *d = getenv("SLUICE_CACHE_DIR");
    if (d)
        return *d ? sl_xstrdup(d) : NULL;
    d = getenv("XDG_CACHE_HOME");
    if (d && *d == '/')
        return sl_xasprintf("%s/sluice", d);
    d = getenv("HOME");
    if (d && *d == '/')
        return sl_xasprintf("%s/.cache/sluice", d);
    return NULL;
}

int bpe_cache_on(void)
{
    char *dir = bpe_cache_dir();
    int on = dir != NULL;
    free(dir);
    return on;
}

static char *cache_path(const char *dir, struct bpe_cache_key key)
{
    return sl_xasprintf("%s/bpe-%016llx%016llx.bin", dir, (unsigned long long)key.hi,
                        (unsigned long long)key.lo);
}

/* ---- writing ----------------------------------------------------------------------- */

/* The tables' sizes in bytes, in file order: token offsets, token bytes, flags, token slots,
 * pair slots, merged ids, byte-pair ranks, pair filter (the header's fields, checked or
 * not: the reader compares their sum with the file's size). */
enum { NTABLES = 8 };
static void table_sizes(const struct head *h, uint64_t size[NTABLES])
{
    size[0] = ((uint64_t)h->n_vocab + 1) * sizeof(uint32_t);
    size[1] = h->bytes_len;
    size[2] = h->n_vocab;
    size[3] = (h->vmask + 1) * sizeof(struct vslot);
    size[4] = (h->pmask + 1) * sizeof(uint64_t);
    size[5] = (uint64_t)h->n_merges * sizeof(uint32_t);
    size[6] = 256 * 256 * sizeof(uint32_t);
    size[7] = h->filter_words * sizeof(uint64_t);
}

/* Zero bytes that take an offset in the file to the next table's boundary. */
static size_t pad_of(uint64_t at)
{
    return (size_t)(-at & (TABLE_ALIGN - 1));
}

static void head_of(const struct bpe *b, struct bpe_cache_key key, struct head *h)
{
    memset(h, 0, sizeof(*h));
    memcpy(h->magic, CACHE_MAGIC, 8);
    h->version = CACHE_VERSION;
    h->head_size = sizeof(*h);
    h->key_lo = key.lo;
    h->key_hi = key.hi;
    h->pretok = (int32_t)b->pretok;
    h->tiktoken = b->tiktoken;
    h->whole = b->whole;
    h->max_len = b->max_len;
    h->n_vocab = b->n_vocab;
    h->merge_off = b->merge_off;
    h->n_merges = b->merge_id ? b->n_merges : 0;
    h->nspec = (uint32_t)b->nspec;
    h->vmask = b->vmask;
    h->pmask = b->pmask;
    h->bytes_len = b->off[b->n_vocab];
    h->filter_words = ((uint64_t)1 << (64 - b->fshift)) / 64;
    h->pshift = b->pshift;
    h->fshift = b->fshift;
    memcpy(h->byte_id, b->byte_id, sizeof(h->byte_id));
    for (size_t i = 0; i < b->nspec; i++)
        h->spec_bytes += 8 + strlen(b->spec[i].name);
}

void bpe_cache_write_buf(const struct bpe *b, struct bpe_cache_key key, struct sl_buf *out)
{
    struct head h;
    head_of(b, key, &h);
    uint64_t size[NTABLES];
    table_sizes(&h, size);
    const void *t[NTABLES] = { b->off,  b->bytes,    b->flags, b->vtab,
                               b->ptab, b->merge_id, b->bp,    b->filter };
    size_t at = out->len;
    static const char zeros[TABLE_ALIGN];
    sl_buf_append(out, &h, sizeof(h));
    for (int i = 0; i < NTABLES; i++) {
        sl_buf_append(out, zeros, pad_of(out->len - at));
        sl_buf_append(out, t[i], size[i]);
    }
    sl_buf_append(out, zeros, pad_of(out->len - at));
    for (size_t i = 0; i < b->nspec; i++) {
        uint32_t v[2] = { b->spec[i].id, (uint32_t)strlen(b->spec[i].name) };
        sl_buf_append(out, v, sizeof(v));
        sl_buf_append(out, b->spec[i].name, v[1]);
    }
    struct head *hp = (struct head *)(void *)(out->data + at);
    hp->payload_bytes = out->len - at - sizeof(h);
    hp->payload_hash = 0;
    hp->payload_hash = sl_hash64(out->data + at, out->len - at, 0); /* all but this field */
}

static int write_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n) {
        ssize_t w = write(fd, c, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        c += w;
        n -= (size_t)w;
    }
    return 0;
}

static void mkdirs(const char *dir)
{
    char *p = sl_xstrdup(dir);
    for (char *s = p + 1; *s; s++)
        if (*s == '/') {
            *s = 0;
            mkdir(p, 0755);
            *s = '/';
        }
    mkdir(p, 0755);
    free(p);
}

void bpe_cache_put(const struct bpe *b, struct bpe_cache_key key)
{
    char *dir = bpe_cache_dir();
    if (!dir)
        return;
    mkdirs(dir);
    char *path = cache_path(dir, key);
    static _Atomic unsigned serial;
    char *tmp = sl_xasprintf("%s.%ld.%u.tmp", path, (long)getpid(), ++serial);
    struct sl_buf buf = SL_BUF_INIT;
    bpe_cache_write_buf(b, key, &buf);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd >= 0) {
        int bad = write_all(fd, buf.data, buf.len);
        bad |= close(fd);
        if (bad || rename(tmp, path) != 0)
            unlink(tmp);
    }
    sl_buf_release(&buf);
    free(tmp);
    free(path);
    free(dir);
}

/* ---- reading ----------------------------------------------------------------------- */

/* The file's bytes, read from the start. */
struct src {
    const unsigned char *mem;
    uint64_t size, at;
};

/* n bytes at the reading position (NULL when fewer remain), and the position past them. */
static const void *src_take(struct src *s, uint64_t n)
{
    if (n > s->size - s->at)
        return NULL;
    const void *p = s->mem + s->at;
    s->at += n;
    return p;
}

static int is_pow2(uint64_t x)
{
    return x && !(x & (x - 1));
}

static int bad(const char *what)
{
    return sl_err_set(SL_ERR_FORMAT, "vocabulary cache: %s", what);
}

/* The merged id of a rank, or UINT32_MAX when the rank is out of range. */
static uint32_t merged_of(const struct bpe *b, uint32_t rank, uint32_t n_merges)
{
    if (b->merge_id)
        return rank < n_merges ? b->merge_id[rank] : UINT32_MAX;
    uint64_t id = (uint64_t)rank + b->merge_off;
    return id < UINT32_MAX ? (uint32_t)id : UINT32_MAX;
}

/* The large tables' checks, four 64-bit entries at a time (a second copy for AVX2
 * machines is chosen at load time): with a branch or a maximum per entry, checking
 * o200k_base's 12 MB of them was the largest part of every start. */
typedef int64_t v4i __attribute__((vector_size(32)));
typedef uint64_t v4u __attribute__((vector_size(32)));
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) &&                             \
    !defined(__SANITIZE_ADDRESS__)
#define CHECK_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define CHECK_CLONES
#endif

/* Nonzero when one of the pair table's slots (at t, any alignment) that is used names an id
 * >= n or a rank >= nrank. */
CHECK_CLONES static int pairs_out_of_range(const unsigned char *t, uint64_t slots, int64_t n,
                                           int64_t nrank)
{
    v4i badv = { 0 };
    uint64_t i = 0;
    for (; i + 4 <= slots; i += 4) {
        v4u e;
        memcpy(&e, t + i * 8, sizeof(e));
        v4i used = e != (v4u){ PAIR_EMPTY, PAIR_EMPTY, PAIR_EMPTY, PAIR_EMPTY };
        v4i l = (v4i)(e >> (BPE_RANK_BITS + BPE_ID_BITS));
        v4i r = (v4i)((e >> BPE_RANK_BITS) & BPE_MAX_IDS);
        v4i rank = (v4i)(e & ((1u << BPE_RANK_BITS) - 1));
        badv |= used & ((l >= n) | (r >= n) | (rank >= nrank));
    }
    int bad_ = (badv[0] | badv[1] | badv[2] | badv[3]) != 0;
    for (; i < slots; i++) {
        uint64_t e;
        memcpy(&e, t + i * 8, 8);
        uint64_t key = e >> BPE_RANK_BITS;
        bad_ |= e != PAIR_EMPTY &&
                ((int64_t)(key >> BPE_ID_BITS) >= n || (int64_t)(key & BPE_MAX_IDS) >= n ||
                 (int64_t)(e & ((1u << BPE_RANK_BITS) - 1)) >= nrank);
    }
    return bad_;
}

/* Nonzero when a token slot's id + 1 (slots at t, any alignment) exceeds n. */
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define ID1_SHIFT 32
#else
#define ID1_SHIFT 0
#endif
CHECK_CLONES static int ids_above(const unsigned char *t, uint64_t slots, int64_t n)
{
    _Static_assert(sizeof(struct vslot) == 8 && offsetof(struct vslot, id1) == 4, "vslot");
    v4i badv = { 0 };
    uint64_t i = 0;
    for (; i + 4 <= slots; i += 4) {
        v4u e;
        memcpy(&e, t + i * 8, sizeof(e));
        badv |= (v4i)((e >> ID1_SHIFT) & UINT32_MAX) > n;
    }
    int bad_ = (badv[0] | badv[1] | badv[2] | badv[3]) != 0;
    for (; i < slots; i++) {
        struct vslot v;
        memcpy(&v, t + i * 8, 8);
        bad_ |= v.id1 > n;
    }
    return bad_;
}

/* Nonzero when a value of the table exceeds top. */
CHECK_CLONES static int u32s_above(const uint32_t *t, uint64_t count, uint32_t top)
{
    typedef uint32_t v8u __attribute__((vector_size(32)));
    typedef int32_t v8i __attribute__((vector_size(32)));
    v8i badv = { 0 };
    uint64_t i = 0;
    for (; i + 8 <= count; i += 8) {
        v8u v;
        memcpy(&v, t + i, sizeof(v));
        badv |= v > top;
    }
    int bad_ = 0;
    for (int k = 0; k < 8; k++)
        bad_ |= badv[k] != 0;
    for (; i < count; i++)
        bad_ |= t[i] > top;
    return bad_;
}

/* The part of [p, p + n) that lies in [t, t + tn), as (*from, count of bytes). */
static uint64_t overlap(const unsigned char *p, uint64_t n, const unsigned char *t, uint64_t tn,
                        const unsigned char **from)
{
    const unsigned char *lo = p > t ? p : t, *hi = p + n < t + tn ? p + n : t + tn;
    *from = lo;
    return hi > lo ? (uint64_t)(hi - lo) : 0;
}

/* One pass over the file after its header: its checksum (when check_sum) and the checks of
 * the token and pair tables (vtab, ptab: o200k_base's 12 MB), piece by piece while each
 * piece is in the core's cache. Two passes, the second after the first had pushed the
 * start of the file out of the caches, were most of the time of a start. */
static int verify(const struct src *s, const struct head *h, const void *vtab, const void *ptab,
                  int check_sum)
{
    enum { PIECE = 1 << 17 };
    struct head h0 = *h;
    h0.payload_hash = 0;
    struct sl_hasher hs;
    sl_hasher_init(&hs, 0);
    sl_hasher_update(&hs, &h0, sizeof(h0));
    int64_t n = h->n_vocab;
    int64_t nrank = h->n_merges ? h->n_merges : h->merge_off < n ? n - h->merge_off : 0;
    uint64_t vn = (h->vmask + 1) * 8, pn = (h->pmask + 1) * 8;
    int vbad = 0, pbad = 0;
    for (uint64_t pos = sizeof(*h); pos < s->size; pos += PIECE) {
        uint64_t len = s->size - pos < PIECE ? s->size - pos : PIECE;
        const unsigned char *p = s->mem + pos, *from;
        if (check_sum)
            sl_hasher_update(&hs, p, len);
        uint64_t k = overlap(p, len, vtab, vn, &from);
        if (k)
            vbad |= ids_above(from, k / 8, n);
        k = overlap(p, len, ptab, pn, &from);
        if (k)
            pbad |= pairs_out_of_range(from, k / 8, n, nrank);
    }
    uint64_t sum = sl_hasher_final(&hs); /* also frees its state */
    if (check_sum && sum != h->payload_hash)
        return bad("its checksum does not match (damaged)");
    if (vbad)
        return bad("a vocabulary slot names an id past the end");
    if (pbad)
        return bad("a pair names an id past the end");
    return 0;
}

/* Every id and offset in the tables within bounds, so that encoding cannot read outside
 * them whatever the file holds (the token and pair tables: verify). */
static int check_tables(const struct bpe *b, const struct head *h)
{
    uint32_t n = b->n_vocab;
    if (b->off[0] != 0 || b->off[n] != h->bytes_len)
        return bad("token offsets do not span the token bytes");
    for (uint32_t i = 0; i < n; i++) {
        if (b->off[i + 1] < b->off[i])
            return bad("token offsets go backwards");
    }
    for (int c = 0; c < 256; c++)
        if (b->byte_id[c] >= n || b->off[b->byte_id[c] + 1] - b->off[b->byte_id[c]] != 1)
            return bad("a byte's token is not one byte");
    if (h->n_merges && u32s_above(b->merge_id, h->n_merges, n - 1))
        return bad("a merge makes an id past the end");
    for (uint32_t i = 0; i < 256 * 256; i++)
        if (b->bp[i] != RANK_NONE && merged_of(b, b->bp[i], h->n_merges) >= n)
            return bad("a byte pair names an id past the end");
    for (size_t i = 0; i < b->nspec; i++)
        if (b->spec[i].id >= n)
            return bad("a special token's id is past the end");
    return 0;
}

static int read_specials(struct bpe *b, struct src *s, const struct head *h)
{
    if (h->nspec > MAX_SPECIALS || h->spec_bytes > (uint64_t)h->nspec * (8 + 4096))
        return bad("too many special tokens");
    b->spec = sl_xcalloc(h->nspec ? h->nspec : 1, sizeof(*b->spec));
    for (uint32_t i = 0; i < h->nspec; i++) {
        uint32_t v[2];
        const void *p = src_take(s, sizeof(v));
        if (!p)
            return bad("a special token is cut");
        memcpy(v, p, sizeof(v));
        if (v[1] > 4096 || !(p = src_take(s, v[1])))
            return bad("a special token is cut");
        char *name = sl_xmalloc((size_t)v[1] + 1);
        memcpy(name, p, v[1]);
        name[v[1]] = 0;
        b->spec[b->nspec].name = name;
        b->spec[b->nspec].id = v[0];
        b->nspec++;
    }
    return 0;
}

/* Points b's tables at t[] (file order, as table_sizes); no merged-id table when the file
 * has none. */
static void set_tables(struct bpe *b, const void *const t[NTABLES])
{
    b->off = (uint32_t *)t[0];
    b->bytes = (u8 *)t[1];
    b->flags = (u8 *)t[2];
    b->vtab = (struct vslot *)t[3];
    b->ptab = (uint64_t *)t[4];
    b->merge_id = b->n_merges ? (uint32_t *)t[5] : NULL;
    b->bp = (uint32_t *)t[6];
    b->filter = (uint64_t *)t[7];
}

/* The file's tables: used where they lie when borrow is set (the bytes then belong to the
 * tokenizer: a mapping of the file, unmapped by bpe_free), else copied into fresh tables. */
static int read_cache(struct bpe **out, struct src *s, struct bpe_cache_key key, int check_sum,
                      int borrow)
{
    *out = NULL;
    struct head h;
    const void *hp = src_take(s, sizeof(h));
    if (!hp)
        return bad("shorter than its header");
    memcpy(&h, hp, sizeof(h));
    if (memcmp(h.magic, CACHE_MAGIC, 8) || h.version != CACHE_VERSION || h.head_size != sizeof(h))
        return bad("not a vocabulary cache of this version");
    if (check_sum && (h.key_lo != key.lo || h.key_hi != key.hi))
        return bad("made from other files");
    if (h.payload_bytes != s->size - sizeof(h))
        return bad("its size is not the one recorded");
    /* the tables' sizes: each within what the payload holds, and as the loaders make them */
    if (h.n_vocab == 0 || h.n_vocab > BPE_MAX_IDS || h.bytes_len > h.payload_bytes ||
        !is_pow2(h.vmask + 1) || h.vmask + 1 < h.n_vocab || h.vmask >= (1ull << 32) ||
        !is_pow2(h.pmask + 1) || h.pmask >= (1ull << 40) ||
        (h.pshift != 64 - __builtin_ctzll(h.pmask + 1)) || h.fshift < 30 || h.fshift > 48 ||
        h.filter_words != ((uint64_t)1 << (64 - h.fshift)) / 64 ||
        h.n_merges >= (1u << BPE_RANK_BITS) || h.pretok < PRETOK_GPT2 || h.pretok > PRETOK_O200K ||
        h.nspec > MAX_SPECIALS || h.spec_bytes > (uint64_t)h.nspec * (8 + 4096))
        return bad("table sizes out of range");
    struct bpe *b = sl_xcalloc(1, sizeof(*b));
    b->pretok = (enum pretok_kind)h.pretok;
    b->tiktoken = h.tiktoken;
    b->whole = h.whole;
    b->max_len = h.max_len;
    b->n_vocab = h.n_vocab;
    b->merge_off = h.merge_off;
    b->n_merges = h.n_merges;
    b->vmask = h.vmask;
    b->pmask = h.pmask;
    b->pshift = h.pshift;
    b->fshift = h.fshift;
    memcpy(b->byte_id, h.byte_id, sizeof(b->byte_id));
    /* each table at the next 64-byte boundary, the special tokens' records too */
    uint64_t size[NTABLES], need = 0;
    table_sizes(&h, size);
    for (int i = 0; i < NTABLES; i++)
        need += size[i] + pad_of(sizeof(h) + need);
    need += pad_of(sizeof(h) + need) + h.spec_bytes;
    int rc = need != h.payload_bytes ? bad("its tables do not add up to its size") : 0;
    const void *at[NTABLES] = { NULL };
    for (int i = 0; i < NTABLES && !rc; i++) {
        s->at += pad_of(s->at);
        if (!(at[i] = src_take(s, size[i])))
            rc = bad("cut inside its tables");
    }
    if (!rc) {
        s->at += pad_of(s->at);
        rc = read_specials(b, s, &h);
    }
    if (!rc && s->at != s->size)
        rc = bad("bytes after its tables");
    /* the checksum covers the whole file, with its own field as 0 */
    if (!rc)
        rc = verify(s, &h, at[3], at[4], check_sum);
    /* the rest of the checks, on the tables where they lie */
    if (!rc) {
        set_tables(b, at);
        rc = check_tables(b, &h);
    }
    if (rc) {
        static const void *const none[NTABLES];
        set_tables(b, none); /* the caller's bytes */
        bpe_free(b);
        return rc;
    }
    if (borrow) {
        b->map = (void *)s->mem;
        b->map_len = s->size;
    } else {
        void *to[NTABLES];
        for (int i = 0; i < NTABLES; i++) {
            if (i == 5 && !h.n_merges) {
                to[i] = NULL;
                continue;
            }
            /* the tables looked up at random may use huge pages (sl_xmalloc_table) */
            to[i] =
                i == 3 || i == 4 || i == 7 ? sl_xmalloc_table(size[i]) : sl_xmalloc(size[i] + 1);
            memcpy(to[i], at[i], size[i]);
        }
        set_tables(b, (const void *const *)to);
    }
    b->from_cache = 1;
    *out = b;
    return 0;
}

int bpe_cache_read_mem(struct bpe **out, const void *data, size_t n, struct bpe_cache_key key,
                       int check_sum)
{
    struct src s = { .mem = data, .size = n };
    return read_cache(out, &s, key, check_sum, 0);
}

struct bpe *bpe_cache_get(struct bpe_cache_key key)
{
    char *dir = bpe_cache_dir();
    if (!dir)
        return NULL;
    char *path = cache_path(dir, key);
    struct bpe *b = NULL;
    size_t n;
    /* mapped, not read: no fresh pages to zero and fill (most of the load's time) */
    const unsigned char *m = map_file(path, &n, 0);
    if (m) {
        struct src s = { .mem = m, .size = n };
        if (read_cache(&b, &s, key, 1, 1)) {
            b = NULL;
            munmap((void *)m, n);
        }
        sl_err_clear();
    }
    free(path);
    free(dir);
    return b;
}

int bpe_from_cache(const struct bpe *b)
{
    return b->from_cache;
}
