/* Fuzz decontamination on arbitrary text against a small task table: no crash, pieces in
 * order, disjoint, inside the text, each longer than min_length code points, and the
 * dropped flag consistent with the piece count. */
#include "curate/decont/decont.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static struct sl_decont *dc;
static struct sl_decont_work work;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!dc) {
        char dir[] = "/tmp/fuzz-decont-XXXXXX";
        if (!mkdtemp(dir))
            abort();
        char p[64], y[64];
        snprintf(p, sizeof(p), "%s/t.jsonl", dir);
        snprintf(y, sizeof(y), "%s/t.yaml", dir);
        FILE *f = fopen(p, "w");
        fputs("{\"q\": \"the quick brown fox jumps over the lazy dog\"}\n"
              "{\"q\": [\"a b c d e f g h\", \"one two three four five six seven eight nine\"]}\n",
              f);
        fclose(f);
        f = fopen(y, "w");
        fputs("tasks:\n  - name: t\n    files: [t.jsonl]\n    fields: [q]\n", f);
        fclose(f);
        struct sl_decont_opts o = { 6, 4, 3, 2, 4 };
        if (sl_decont_load(&dc, y, &o))
            abort();
        unlink(p);
        unlink(y);
        rmdir(dir);
        sl_decont_work_init(&work, dc);
    }
    const char *s = (const char *)data;
    sl_decont_doc(dc, &work, s, size);
    size_t prev = 0;
    for (size_t i = 0; i < work.npieces; i++) {
        const struct sl_decont_piece *q = &work.pieces[i];
        if (q->off < prev || q->off + q->len > size)
            abort();
        size_t cp = 0;
        for (size_t k = q->off; k < q->off + q->len; k++)
            cp += (data[k] & 0xC0) != 0x80;
        if (work.matches && (long)cp <= dc->o.min_length && !(i + 1 == work.npieces))
            abort();
        prev = q->off + q->len;
    }
    if (!work.matches && (work.npieces != 1 || work.pieces[0].len != size))
        abort();
    if ((work.dropped == 2) != (work.npieces == 0) ||
        (work.dropped == 1) != ((long)work.npieces > dc->o.max_splits))
        abort();
    return 0;
}
