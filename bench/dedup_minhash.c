/* MinHash signature throughput of sluice's dedup code, one core, for bench/dedup.sh.
 *
 * usage: dedup_minhash FILE.jsonl NGRAM PERMS REPEAT [HASHES_OUT]
 * Reads the texts of FILE (plain JSONL), then REPEAT times: shingles (NGRAM, no
 * normalisation, as the peers get them) and signs every text with PERMS permutations of
 * the multiply family (MH_FAMILY=multiply32|mersenne for another). Prints one JSON line: documents, text bytes, seconds for
 * text -> signature, and seconds for signing the precomputed shingle hashes alone. With
 * HASHES_OUT, writes the shingle hashes (u64) and row offsets (u64) for the peers' batch
 * API: "<HASHES_OUT>.hashes", "<HASHES_OUT>.offsets".
 */
#include "core/buf.h"
#include "core/doc.h"
#include "core/jsonl.h"
#include "core/progress.h"
#include "curate/dedup/minhash.h"
#include "curate/dedup/shingle.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr, "usage: %s FILE.jsonl NGRAM PERMS REPEAT [HASHES_OUT]\n", argv[0]);
        return 2;
    }
    struct sl_jsonl_reader *r;
    if (sl_jsonl_open(&r, argv[1], NULL)) {
        fprintf(stderr, "cannot open %s\n", argv[1]);
        return 1;
    }
    struct sl_doc d;
    sl_doc_init(&d);
    char **texts = NULL;
    size_t *lens = NULL, n = 0, bytes = 0;
    while (sl_jsonl_next(r, &d) == 1) {
        size_t len;
        const char *t = sl_doc_text(&d, &len);
        texts = realloc(texts, (n + 1) * sizeof(*texts));
        lens = realloc(lens, (n + 1) * sizeof(*lens));
        texts[n] = malloc(len + 1);
        memcpy(texts[n], t, len + 1);
        lens[n] = len;
        bytes += len;
        n++;
    }
    sl_jsonl_close(r);
    sl_doc_release(&d);
    struct dd_shingler sh;
    if (dd_shingler_parse(&sh, argv[2], 1))
        return 2;
    unsigned k = (unsigned)atoi(argv[3]);
    int repeat = atoi(argv[4]);
    struct minhash mh;
    enum dd_mh_family fam = DD_MH_MULTIPLY;
    if (getenv("MH_FAMILY") && minhash_family_parse(getenv("MH_FAMILY"), &fam))
        return 2;
    minhash_init(&mh, k, 1, fam);
    uint64_t sig[DD_MH_MAX_PERM], check = 0;
    struct dd_u64s h = { 0 };
    double t0 = sl_now();
    for (int rep = 0; rep < repeat; rep++)
        for (size_t i = 0; i < n; i++) {
            h.n = 0;
            dd_shingle(&sh, texts[i], lens[i], &h, NULL);
            minhash_sign(&mh, h.v, h.n, sig);
            check ^= sig[0];
        }
    double t_text = sl_now() - t0;
    /* all shingle hashes at once, then signing alone */
    struct dd_u64s all = { 0 }, off = { 0 };
    dd_u64s_push(&off, 0);
    for (size_t i = 0; i < n; i++) {
        dd_shingle(&sh, texts[i], lens[i], &all, NULL);
        dd_u64s_push(&off, all.n);
    }
    t0 = sl_now();
    for (int rep = 0; rep < repeat; rep++)
        for (size_t i = 0; i < n; i++) {
            minhash_sign(&mh, all.v + off.v[i], off.v[i + 1] - off.v[i], sig);
            check ^= sig[1];
        }
    double t_sign = sl_now() - t0;
    if (argc > 5) {
        char p[4096];
        snprintf(p, sizeof(p), "%s.hashes", argv[5]);
        FILE *f = fopen(p, "wb");
        fwrite(all.v, 8, all.n, f);
        fclose(f);
        snprintf(p, sizeof(p), "%s.offsets", argv[5]);
        f = fopen(p, "wb");
        fwrite(off.v, 8, off.n, f);
        fclose(f);
    }
    printf("{\"documents\": %zu, \"text_bytes\": %zu, \"shingles\": %zu, \"repeat\": %d, "
           "\"seconds_text_to_signature\": %.4f, \"seconds_sign_only\": %.4f, \"check\": %llu}\n",
           n, bytes, all.n, repeat, t_text, t_sign, (unsigned long long)(check & 1));
    return 0;
}
