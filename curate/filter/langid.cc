// CLD2 and fastText behind the C interface of langid.h.
#include "curate/filter/langid.h"

extern "C" {
#include "core/err.h"
}

#include <cstdio>
#include <cld2/public/compact_lang_det.h>
#include <fasttext/fasttext.h>

#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include <sys/stat.h>

namespace CLD2 {
const char *LanguageCode(Language lang);
}

extern "C" int sl_cld2_detect(const char *text, size_t n, char code[16], double *score)
{
    CLD2::Language l3[3];
    int pct[3];
    int bytes = 0;
    bool reliable = false;
    int len = n > (size_t)(1 << 30) ? (1 << 30) : (int)n;
    CLD2::Language lang = CLD2::DetectLanguageSummary(text, len, true, l3, pct, &bytes, &reliable);
    const char *c = CLD2::LanguageCode(lang);
    snprintf(code, 16, "%s", c ? c : "un");
    double s = 0;
    for (int i = 0; i < 3; i++)
        if (l3[i] == lang)
            s += pct[i] / 100.0;
    if (lang == CLD2::UNKNOWN_LANGUAGE)
        s = 0;
    *score = reliable ? s : s / 2;
    return 0;
}

/* The model, and what predicting needs to build a line's input ids without fastText's
 * Dictionary::getLine: for a pruned (.ftz) model that looks every character n-gram of every
 * token up twice in a std::unordered_map, which is most of the time language ID takes. The
 * same ids come from the n-gram hashes and the model's prune index, read from the file into
 * a rank directory. Used for supervised models without word n-grams (lid.176, GlotLID)
 * after a self-check against the library at load; other models use predictLine. */
struct sl_fasttext {
    fasttext::FastText ft;
    std::shared_ptr<const fasttext::Dictionary> dict;
    bool fast = false;
    int minn = 0, maxn = 0;
    int32_t bucket = 0, nwords = 0;
    uint64_t bucket_magic = 0; /* for fastmod by bucket */
    int64_t prune_size = 0;    /* 0: no n-grams, < 0: not pruned, > 0: the index below */
    /* The prune index as a rank directory: per block of 64 buckets, a bit per bucket that
     * is kept and the number of kept buckets before the block; rows[] in bucket order. */
    struct block {
        uint64_t bits;
        uint32_t before;
    };
    std::vector<block> blocks;
    std::vector<int32_t> rows;
    std::vector<std::string> words; /* the dictionary's entries (words, then labels) */
    std::vector<int32_t> word_tab;  /* open addressing over them by fnv(); -1 = empty */
    /* the ids of each distinct token seen (most tokens of a text repeat): a table of
     * (fnv << 32 | entry + 1) over entries that point into two arenas; emptied when full */
    std::mutex lock;
    std::vector<uint64_t> seen;
    struct entry {
        uint32_t str, len, ids, nids;
    };
    std::vector<entry> entries;
    std::string seen_str;
    std::vector<int32_t> seen_ids;
};

static const size_t seen_max = (size_t)1 << 20; /* slots: up to 512k distinct tokens */

/* The prune index of a version-12 model file: (n-gram bucket, row) pairs. */
static bool read_prune_index(const char *path, int64_t &size,
                             std::vector<std::pair<int32_t, int32_t>> &pairs)
{
    std::ifstream in(path, std::ios::binary);
    int32_t magic = 0, version = 0, dsize = 0, nw = 0, nl = 0;
    int64_t ntokens = 0;
    in.read((char *)&magic, 4);
    in.read((char *)&version, 4);
    if (!in || magic != 793712314 || version != 12)
        return false;
    in.ignore(12 * 4 + 8); /* Args: 12 int32 and a double */
    in.read((char *)&dsize, 4);
    in.read((char *)&nw, 4);
    in.read((char *)&nl, 4);
    in.read((char *)&ntokens, 8);
    in.read((char *)&size, 8);
    for (int32_t i = 0; in && i < dsize; i++) {
        in.ignore(std::numeric_limits<std::streamsize>::max(), '\0'); /* the word */
        in.ignore(8 + 1);                                             /* count, type */
    }
    for (int64_t i = 0; in && i < size; i++) {
        int32_t k = 0, v = 0;
        in.read((char *)&k, 4);
        in.read((char *)&v, 4);
        pairs.emplace_back(k, v);
    }
    return (bool)in;
}

/* a % d for 32-bit a and d without a division (Lemire, Kaser, Kurz 2019: "Faster remainder
 * by direct computation"), magic = UINT64_MAX / d + 1. Exact for every 32-bit a. */
static inline uint32_t fastmod(uint32_t a, uint64_t magic, uint32_t d)
{
    uint64_t low = magic * a;
    return (uint32_t)(((__uint128_t)low * d) >> 64);
}

static inline uint32_t popcount64(uint64_t x)
{
    x = x - ((x >> 1) & UINT64_C(0x5555555555555555));
    x = (x & UINT64_C(0x3333333333333333)) + ((x >> 2) & UINT64_C(0x3333333333333333));
    x = (x + (x >> 4)) & UINT64_C(0x0F0F0F0F0F0F0F0F);
    return (uint32_t)((x * UINT64_C(0x0101010101010101)) >> 56);
}

static inline uint32_t fnv(const char *s, size_t n)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++) {
        h ^= (uint32_t)(int8_t)s[i];
        h *= 16777619u;
    }
    return h;
}

/* Dictionary::computeSubwords + pushHash on "<" token ">": the input rows of the token's
 * character n-grams of minn..maxn code points (not the lone "<" or ">"). */
static void subword_ids(const sl_fasttext *m, const std::string &w, std::vector<int32_t> &out)
{
    if (m->prune_size == 0)
        return;
    for (size_t i = 0; i < w.size(); i++) {
        if ((w[i] & 0xC0) == 0x80)
            continue;
        size_t j = i;
        uint32_t f = 2166136261u; /* fnv() of w[i..j), extended as j moves */
        for (int n = 1; j < w.size() && n <= m->maxn; n++) {
            do {
                f = (f ^ (uint32_t)(int8_t)w[j]) * 16777619u;
                j++;
            } while (j < w.size() && (w[j] & 0xC0) == 0x80);
            if (n >= m->minn && !(n == 1 && (i == 0 || j == w.size()))) {
                uint32_t h = fastmod(f, m->bucket_magic, (uint32_t)m->bucket); /* f % bucket */
                if (m->prune_size < 0) {
                    out.push_back(m->nwords + (int32_t)h);
                    continue;
                }
                const sl_fasttext::block &b = m->blocks[h >> 6];
                uint64_t bit = UINT64_C(1) << (h & 63);
                if (b.bits & bit)
                    out.push_back(m->nwords + m->rows[b.before + popcount64(b.bits & (bit - 1))]);
            }
        }
    }
}

/* Dictionary::getId: the entry of a token, or -1. */
static int32_t word_id(const sl_fasttext *m, const std::string &tok)
{
    size_t mask = m->word_tab.size() - 1;
    for (size_t k = fnv(tok.data(), tok.size()) & mask; m->word_tab[k] >= 0; k = (k + 1) & mask)
        if (m->words[(size_t)m->word_tab[k]] == tok)
            return m->word_tab[k];
    return -1;
}

/* The ids fastText's getLine gives for one token. */
static void token_ids(const sl_fasttext *m, const std::string &tok, std::vector<int32_t> &out)
{
    int32_t wid = word_id(m, tok);
    fasttext::entry_type type = wid < 0 ? m->dict->getType(tok) : m->dict->getType(wid);
    if (type != fasttext::entry_type::word)
        return;
    if (wid >= 0) {
        const std::vector<int32_t> &v = m->dict->getSubwords(wid);
        out.insert(out.end(), v.begin(), v.end());
    } else if (tok != fasttext::Dictionary::EOS) {
        subword_ids(m, "<" + tok + ">", out);
    }
}

static void setup_fast(sl_fasttext *m, const char *path)
{
    fasttext::Args a = m->ft.getArgs();
    if (a.model != fasttext::model_name::sup || a.wordNgrams > 1 || a.bucket <= 0)
        return;
    std::vector<std::pair<int32_t, int32_t>> pairs;
    if (!read_prune_index(path, m->prune_size, pairs))
        return;
    m->minn = a.minn;
    m->maxn = a.maxn;
    m->bucket = a.bucket;
    m->bucket_magic = UINT64_MAX / (uint32_t)a.bucket + 1;
    m->nwords = m->dict->nwords();
    std::sort(pairs.begin(), pairs.end());
    m->blocks.assign(((size_t)m->bucket + 63) / 64, sl_fasttext::block{ 0, 0 });
    for (size_t i = 0; i < pairs.size(); i++) {
        if (pairs[i].first < 0 || pairs[i].first >= m->bucket ||
            (i && pairs[i].first == pairs[i - 1].first))
            return; /* not a prune index this reader understands */
        m->blocks[(size_t)pairs[i].first >> 6].bits |= UINT64_C(1) << (pairs[i].first & 63);
        m->rows.push_back(pairs[i].second);
    }
    uint32_t before = 0;
    for (auto &b : m->blocks) {
        b.before = before;
        before += popcount64(b.bits);
    }
    int32_t nentries = m->dict->nwords() + m->dict->nlabels();
    size_t wcap = 16;
    while (wcap < (size_t)nentries * 2)
        wcap *= 2;
    m->word_tab.assign(wcap, -1);
    for (int32_t i = 0; i < nentries; i++) {
        m->words.push_back(m->dict->getWord(i));
        size_t k = fnv(m->words[i].data(), m->words[i].size()) & (wcap - 1);
        while (m->word_tab[k] >= 0)
            k = (k + 1) & (wcap - 1);
        m->word_tab[k] = i;
    }
    /* the same ids as the library for a few tokens, or the library does it all */
    static const char *const probe[] = { "the",
                                         "zzqxj",
                                         "Hello",
                                         "der",
                                         "a",
                                         "\xc3\xa9t\xc3\xa9",
                                         "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e",
                                         "123",
                                         "__label__en",
                                         "</s>" };
    for (const char *t : probe) {
        std::vector<int32_t> ours;
        token_ids(m, t, ours);
        int32_t wid = m->dict->getId(t);
        if (wid != word_id(m, t))
            return;
        fasttext::entry_type type = wid < 0 ? m->dict->getType(t) : m->dict->getType(wid);
        std::vector<int32_t> lib;
        if (type == fasttext::entry_type::word)
            lib = m->dict->getSubwords(std::string(t));
        if (ours != lib)
            return;
    }
    m->fast = true;
}

/* ---- the model file, checked before the library reads it ----------------------------
 * fastText trusts its file: a truncated model reads zero-sized matrices and aborts on an
 * assertion at the first prediction, and a crafted count makes it allocate gigabytes. So
 * the whole layout (fastText 0.9.2, file versions 11 and 12) is walked here first: every
 * count against the bytes left in the file, and the matrix shapes against each other. */

struct model_file {
    FILE *f;
    const char *path;
    uint64_t size, pos;
};

static const uint64_t max_word_bytes = (uint64_t)1 << 20;

static int mf_fail(const model_file &mf, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int mf_fail(const model_file &mf, const char *fmt, ...)
{
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    return sl_err_set(SL_ERR_CORRUPT,
                      "cannot load fastText model '%s': %s (at byte %llu of %llu)\nhint: is the "
                      "file complete, and a fastText .bin or .ftz model?",
                      mf.path, what, (unsigned long long)mf.pos, (unsigned long long)mf.size);
}

static bool mf_read(model_file &mf, void *p, size_t n)
{
    if (mf.size - mf.pos < n || fread(p, 1, n, mf.f) != n)
        return false;
    mf.pos += n;
    return true;
}

/* skip n bytes that must be in the file */
static bool mf_skip(model_file &mf, uint64_t n)
{
    if (mf.size - mf.pos < n || fseeko(mf.f, (off_t)n, SEEK_CUR) != 0)
        return false;
    mf.pos += n;
    return true;
}

/* A bool as fastText writes it, one byte of 0 or 1, into *flag: the KIND flag of the MATRIX
 * matrix. Any other byte is refused: read into a C++ bool it is undefined behaviour (the
 * library reads it so), and the library and this check could then take different branches. */
static int mf_flag(model_file &mf, bool *flag, const char *matrix, const char *kind)
{
    uint8_t b = 0;
    if (!mf_read(mf, &b, 1))
        return mf_fail(mf, "the file ends before the %s matrix's %s flag", matrix, kind);
    if (b > 1)
        return mf_fail(mf, "the %s matrix's %s flag is %u, where fastText writes 0 or 1", matrix,
                       kind, (unsigned)b);
    *flag = b == 1;
    return 0;
}

/* A DenseMatrix or QuantMatrix: its shape into rows, cols. */
static int mf_matrix(model_file &mf, bool quant, const char *name, int64_t &rows, int64_t &cols)
{
    bool qnorm = false;
    if (quant) {
        int rc = mf_flag(mf, &qnorm, name, "norm");
        if (rc)
            return rc;
    }
    if (!mf_read(mf, &rows, 8) || !mf_read(mf, &cols, 8))
        return mf_fail(mf, "the file ends in the %s matrix", name);
    if (rows < 0 || cols <= 0 || cols > (1 << 20) || (uint64_t)rows > mf.size)
        return mf_fail(mf, "the %s matrix has an impossible shape %lld x %lld", name,
                       (long long)rows, (long long)cols);
    if (!quant) {
        uint64_t bytes = (uint64_t)rows * (uint64_t)cols * 4;
        if (bytes / 4 / (uint64_t)cols != (uint64_t)rows || !mf_skip(mf, bytes))
            return mf_fail(mf, "the %s matrix (%lld x %lld floats) needs %llu bytes, %llu are left",
                           name, (long long)rows, (long long)cols,
                           (unsigned long long)((uint64_t)rows * (uint64_t)cols * 4),
                           (unsigned long long)(mf.size - mf.pos));
        return 0;
    }
    int32_t codesize = 0;
    if (!mf_read(mf, &codesize, 4) || codesize < 0 || !mf_skip(mf, (uint64_t)codesize))
        return mf_fail(mf, "the %s matrix's %d bytes of codes are not in the file", name, codesize);
    for (int pq = 0; pq < (qnorm ? 2 : 1); pq++) {
        if (pq == 1 && !mf_skip(mf, (uint64_t)rows))
            return mf_fail(mf, "the %s matrix's %lld norm codes are not in the file", name,
                           (long long)rows);
        int32_t q[4]; /* dim, nsubq, dsub, lastdsub */
        if (!mf_read(mf, q, sizeof(q)))
            return mf_fail(mf, "the file ends in the %s matrix's quantizer", name);
        int64_t want_dim = pq == 0 ? cols : 1;
        if (q[0] != want_dim || q[2] <= 0 || q[1] != (q[0] + q[2] - 1) / q[2] || q[3] <= 0 ||
            q[3] > q[2] || (int64_t)(q[1] - 1) * q[2] + q[3] != q[0])
            return mf_fail(mf,
                           "the %s matrix's quantizer (dim %d, %d subquantizers of %d, last %d) "
                           "does not fit its %lld columns",
                           name, q[0], q[1], q[2], q[3], (long long)want_dim);
        if (pq == 0 && (int64_t)codesize != rows * q[1])
            return mf_fail(mf, "the %s matrix has %d bytes of codes, its %lld rows need %lld", name,
                           codesize, (long long)rows, (long long)(rows * q[1]));
        if (!mf_skip(mf, (uint64_t)q[0] * 256 * 4))
            return mf_fail(mf, "the %s matrix's centroids (%d x 256 floats) are not in the file",
                           name, q[0]);
    }
    return 0;
}

static int check_model_file(const char *path)
{
    model_file mf = { fopen(path, "rb"), path, 0, 0 };
    if (!mf.f)
        return sl_err_set(SL_ERR_IO, "cannot open fastText model '%s': %s", path, strerror(errno));
    int rc = 0;
    struct stat st;
    int32_t head[2], args[12], dict[3];
    double t;
    int64_t ntokens, prune, in_rows, in_cols, out_rows, out_cols, count, prev_count = 0;
    int64_t nw = 0, need_rows;
    bool quant = false, qout = false;
    if (fstat(fileno(mf.f), &st) != 0) {
        rc = sl_err_set(SL_ERR_IO, "cannot stat fastText model '%s': %s", path, strerror(errno));
        goto out;
    }
    mf.size = (uint64_t)st.st_size;
    if (!mf_read(mf, head, sizeof(head)) || head[0] != 793712314) {
        rc = sl_err_set(SL_ERR_FORMAT,
                        "cannot load fastText model '%s': bad magic\nhint: is it "
                        "a fastText .bin or .ftz file?",
                        path);
        goto out;
    }
    if (head[1] < 11 || head[1] > 12) {
        rc = sl_err_set(SL_ERR_FORMAT,
                        "cannot load fastText model '%s': file version %d (this "
                        "fastText reads 11 and 12)",
                        path, head[1]);
        goto out;
    }
    /* dim ws epoch minCount neg wordNgrams loss model bucket minn maxn lrUpdateRate, t */
    if (!mf_read(mf, args, sizeof(args)) || !mf_read(mf, &t, 8)) {
        rc = mf_fail(mf, "the file ends in its header");
        goto out;
    }
    /* subwords and word n-grams are hashed into `bucket` rows: none means a division by 0 */
    if (args[0] <= 0 || args[0] > (1 << 20) || args[5] < 1 || args[5] > 64 || args[6] < 1 ||
        args[6] > 4 || args[7] < 1 || args[7] > 3 || args[8] < 0 || args[9] < 0 || args[10] < 0 ||
        args[10] > 64 || (args[10] > 0 && args[9] > args[10]) ||
        ((args[10] > 0 || args[5] > 1) && args[8] == 0)) {
        rc = mf_fail(mf,
                     "impossible settings in its header (dim %d, wordNgrams %d, loss %d, "
                     "model %d, bucket %d, minn %d, maxn %d)",
                     args[0], args[5], args[6], args[7], args[8], args[9], args[10]);
        goto out;
    }
    if (!mf_read(mf, dict, sizeof(dict)) || !mf_read(mf, &ntokens, 8) || !mf_read(mf, &prune, 8)) {
        rc = mf_fail(mf, "the file ends in its dictionary header");
        goto out;
    }
    /* an entry is at least its NUL, an 8-byte count and a type byte */
    if (dict[0] < 0 || dict[1] < 0 || dict[2] < 0 || (int64_t)dict[1] + dict[2] != dict[0] ||
        (uint64_t)dict[0] * 10 > mf.size - mf.pos) {
        rc = mf_fail(mf,
                     "its dictionary claims %d entries (%d words, %d labels), more than the "
                     "file can hold",
                     dict[0], dict[1], dict[2]);
        goto out;
    }
    for (int32_t i = 0; i < dict[0]; i++) {
        uint64_t len = 0;
        int c;
        while ((c = getc(mf.f)) != EOF && c != 0 && len < max_word_bytes)
            len++;
        mf.pos += len + (c == 0);
        if (c != 0) {
            rc = mf_fail(mf,
                         c == EOF ? "the file ends in dictionary entry %d"
                                  : "dictionary entry %d is longer than 1 MiB",
                         i);
            goto out;
        }
        unsigned char rest[9];
        if (!mf_read(mf, rest, 9) || rest[8] > 1) {
            rc = mf_fail(mf, "dictionary entry %d is cut or has an unknown type", i);
            goto out;
        }
        /* hierarchical softmax builds its Huffman tree from the counts and assumes them
         * non-negative, below the 1e15 it gives its inner nodes and in decreasing order,
         * as fastText writes them (other counts send its tree walk on without end) */
        memcpy(&count, rest, 8);
        if (args[6] == 1 && (count < 0 || count >= (int64_t)1e15 ||
                             (i > 0 && i != dict[1] && count > prev_count))) {
            rc = mf_fail(mf,
                         "dictionary entry %d has count %lld, out of the decreasing order "
                         "hierarchical softmax needs",
                         i, (long long)count);
            goto out;
        }
        prev_count = count;
        if ((rest[8] == 0) != (i < dict[1])) {
            rc = mf_fail(mf, "dictionary entry %d is a %s where the header says %s", i,
                         rest[8] ? "label" : "word", i < dict[1] ? "words come" : "labels come");
            goto out;
        }
    }
    nw = dict[1];
    need_rows = nw + ((args[10] > 0 || args[5] > 1) ? args[8] : 0);
    if (prune >= 0) {
        if ((uint64_t)prune > (mf.size - mf.pos) / 8) {
            rc = mf_fail(mf, "its prune index claims %lld entries, more than the file holds",
                         (long long)prune);
            goto out;
        }
        need_rows = nw;
        for (int64_t i = 0; i < prune; i++) {
            int32_t kv[2];
            if (!mf_read(mf, kv, 8) || kv[0] < 0 || kv[0] >= args[8] || kv[1] < 0) {
                rc = mf_fail(mf, "prune index entry %lld is outside the %d buckets", (long long)i,
                             args[8]);
                goto out;
            }
            need_rows = std::max(need_rows, nw + (int64_t)kv[1] + 1);
        }
    } else if (prune != -1) {
        rc = mf_fail(mf, "its prune index size is %lld", (long long)prune);
        goto out;
    }
    rc = mf_flag(mf, &quant, "input", "quantization");
    if (rc)
        goto out;
    rc = mf_matrix(mf, quant, "input", in_rows, in_cols);
    if (rc)
        goto out;
    if (in_cols != args[0] || in_rows < need_rows) {
        rc = mf_fail(mf, "the input matrix is %lld x %lld, the dictionary needs %lld x %d",
                     (long long)in_rows, (long long)in_cols, (long long)need_rows, args[0]);
        goto out;
    }
    rc = mf_flag(mf, &qout, "output", "quantization");
    if (rc)
        goto out;
    rc = mf_matrix(mf, quant && qout, "output", out_rows, out_cols);
    if (rc)
        goto out;
    if (out_cols != args[0] || out_rows != (args[7] == 3 ? dict[2] : dict[1])) {
        rc = mf_fail(mf, "the output matrix is %lld x %lld, the model needs %d x %d",
                     (long long)out_rows, (long long)out_cols, args[7] == 3 ? dict[2] : dict[1],
                     args[0]);
        goto out;
    }
out:
    fclose(mf.f);
    return rc;
}

extern "C" int sl_fasttext_load(struct sl_fasttext **out, const char *path)
{
    *out = nullptr;
    int rc = check_model_file(path);
    if (rc)
        return rc;
    sl_fasttext *m = nullptr;
    try {
        m = new sl_fasttext;
        m->ft.loadModel(std::string(path));
        m->dict = m->ft.getDictionary();
        setup_fast(m, path);
        *out = m;
        return 0;
    } catch (const std::exception &e) {
        delete m; /* what the library had read before it threw */
        return sl_err_set(
            SL_ERR_FORMAT,
            "cannot load fastText model '%s': %s\nhint: is it a fastText .bin or .ftz file?", path,
            e.what());
    }
}

extern "C" void sl_fasttext_free(struct sl_fasttext *m)
{
    delete m;
}

static std::string one_line(const char *text, size_t n)
{
    std::string s(text, n);
    for (auto &ch : s)
        if (ch == '\n' || ch == '\r')
            ch = ' ';
    s.push_back('\n');
    return s;
}

/* token_ids through the table of tokens seen (the caller holds m->lock). */
static void seen_token_ids(sl_fasttext *m, const char *s, size_t n, std::string &tok,
                           std::vector<int32_t> &out)
{
    if (m->seen.empty() || m->entries.size() >= seen_max / 2 ||
        m->seen_ids.size() >= ((size_t)1 << 26)) {
        m->seen.assign(1024, 0);
        m->entries.clear();
        m->seen_str.clear();
        m->seen_ids.clear();
    } else if (m->entries.size() >= m->seen.size() / 2) { /* grow: a small table stays in cache */
        std::vector<uint64_t> t(m->seen.size() * 2, 0);
        for (uint64_t x : m->seen)
            if (x) {
                size_t j = (uint32_t)(x >> 32) & (t.size() - 1);
                while (t[j])
                    j = (j + 1) & (t.size() - 1);
                t[j] = x;
            }
        m->seen.swap(t);
    }
    uint32_t h = fnv(s, n);
    size_t mask = m->seen.size() - 1, k = h & mask;
    for (; m->seen[k]; k = (k + 1) & mask) {
        if ((uint32_t)(m->seen[k] >> 32) != h)
            continue;
        const sl_fasttext::entry &e = m->entries[(uint32_t)m->seen[k] - 1];
        if (e.len == n && !memcmp(m->seen_str.data() + e.str, s, n)) {
            out.insert(out.end(), m->seen_ids.begin() + e.ids,
                       m->seen_ids.begin() + e.ids + e.nids);
            return;
        }
    }
    tok.assign(s, n);
    size_t before = out.size();
    token_ids(m, tok, out);
    sl_fasttext::entry e = { (uint32_t)m->seen_str.size(), (uint32_t)n,
                             (uint32_t)m->seen_ids.size(), (uint32_t)(out.size() - before) };
    m->seen_str.append(s, n);
    m->seen_ids.insert(m->seen_ids.end(), out.begin() + (long)before, out.end());
    m->entries.push_back(e);
    m->seen[k] = (uint64_t)h << 32 | (uint32_t)m->entries.size();
}

/* fastText's Dictionary::getLine on one line of text: the ids of the tokens (runs of bytes
 * other than ' ', '\t', '\v', '\f', '\0', '\n', '\r'; a newline counts as a space here, as
 * in one_line) and of the end-of-line token. */
static void line_ids(sl_fasttext *m, const char *text, size_t n, std::vector<int32_t> &out)
{
    auto sep = [](char ch) {
        return ch == ' ' || ch == '\n' || ch == '\r' || ch == '\t' || ch == '\v' || ch == '\f' ||
               ch == '\0';
    };
    std::lock_guard<std::mutex> g(m->lock);
    std::string tok;
    for (size_t i = 0; i < n;) {
        if (sep(text[i])) {
            i++;
            continue;
        }
        size_t j = i + 1;
        while (j < n && !sep(text[j]))
            j++;
        seen_token_ids(m, text + i, j - i, tok, out);
        i = j;
    }
    token_ids(m, fasttext::Dictionary::EOS, out);
}

extern "C" int sl_fasttext_predict(const struct sl_fasttext *cm, const char *text, size_t n, int k,
                                   char (*labels)[64], double *probs, int *got)
{
    *got = 0;
    struct sl_fasttext *m = const_cast<struct sl_fasttext *>(cm); /* its table of tokens seen */
    try {
        std::vector<std::pair<fasttext::real, std::string>> pred;
        if (m->fast) {
            std::vector<int32_t> ids;
            line_ids(m, text, n, ids);
            fasttext::Predictions p;
            m->ft.predict(k, ids, p, 0.0);
            for (const auto &x : p)
                pred.emplace_back(std::exp(x.first), m->dict->getLabel(x.second));
        } else {
            std::istringstream in(one_line(text, n));
            m->ft.predictLine(in, pred, k, 0.0);
        }
        for (size_t i = 0; i < pred.size() && (int)i < k; i++) {
            const char *lab = pred[i].second.c_str();
            if (!strncmp(lab, "__label__", 9))
                lab += 9;
            snprintf(labels[i], 64, "%s", lab);
            probs[i] = pred[i].first;
            (*got)++;
        }
        return 0;
    } catch (const std::exception &e) {
        return sl_err_set(SL_ERR_STATE, "fastText prediction failed: %s", e.what());
    }
}

extern "C" int sl_fasttext_prob(const struct sl_fasttext *m, const char *text, size_t n,
                                const char *label, double *prob)
{
    if (!strncmp(label, "__label__", 9))
        label += 9;
    char labels[16][64];
    double probs[16];
    int got;
    *prob = 0;
    int rc = sl_fasttext_predict(m, text, n, 16, labels, probs, &got);
    for (int i = 0; !rc && i < got; i++)
        if (!strcmp(labels[i], label))
            *prob = probs[i];
    return rc;
}

extern "C" int sl_fasttext_train(const struct sl_fasttext_train_opts *o)
{
    try {
        fasttext::Args a;
        a.input = o->input;
        a.output = o->output;
        a.model = fasttext::model_name::sup;
        a.loss = fasttext::loss_name::softmax;
        a.minn = 0;
        a.maxn = 0;
        a.lr = o->lr > 0 ? o->lr : 0.1;
        a.epoch = o->epoch > 0 ? o->epoch : 5;
        a.dim = o->dim > 0 ? o->dim : 100;
        a.wordNgrams = o->word_ngrams > 0 ? o->word_ngrams : 2;
        a.minCount = o->min_count > 0 ? o->min_count : 1;
        a.seed = o->seed;
        a.thread = o->thread > 0 ? o->thread : 1;
        a.verbose = o->verbose;
        fasttext::FastText ft;
        ft.train(a);
        ft.saveModel(std::string(o->output));
        return 0;
    } catch (const std::exception &e) {
        return sl_err_set(SL_ERR_STATE, "fastText training failed: %s", e.what());
    }
}
