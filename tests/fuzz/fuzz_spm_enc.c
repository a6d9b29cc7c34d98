/* Fuzz sluice's SentencePiece model reader and encoder (tokenize/spm_enc.h): the input is
 * read as a serialized ModelProto; whatever loads must encode the input itself and a few
 * fixed texts (spaces, rules of the usual character maps, invalid UTF-8) without a crash,
 * an out-of-bounds read or a hang. */
#include "tokenize/spm_enc.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const texts[] = {
        "",
        " ",
        "   hello  world  ",
        "I saw a cat.\nfoo <x> bar",
        "\xef\xbd\x81\xef\xbc\xa1\xe2\x80\xa6 \xe3\x80\x80\xef\xac\x81",
        "ab\xff\xc3 \xe2\x96\x81\xe2\x96\x81x",
        "\xe6\x97\xa5\xe6\x9c\xac"
    };
    struct spm_enc *m;
    if (spm_enc_load(&m, data, size, "fuzz.model") != 0)
        return 0;
    struct tok_ids ids = { 0 };
    ids.max = 1 << 20;
    for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
        ids.n = 0;
        int rc = spm_enc_encode(m, texts[i], strlen(texts[i]), &ids);
        if (rc < 0 && rc != -5) /* SL_ERR_TOOBIG only */
            abort();
    }
    ids.n = 0;
    spm_enc_encode(m, (const char *)data, size > 4096 ? 4096 : size, &ids);
    tok_ids_release(&ids);
    spm_enc_free(m);
    return 0;
}
