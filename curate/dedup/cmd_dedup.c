/* sluice dedup: what it says when no mode is named (the modes: cmd_dedup_exact.c,
 * cmd_dedup_fuzzy.c, cmd_dedup_paragraphs.c). */
#include "curate/commands.h"

#include "core/log.h"
#include "core/options.h"

#include <stdio.h>

const char *const cmd_dedup_usage[] = {
    "sluice dedup exact --out DIR [options] IN...",
    "sluice dedup fuzzy --out DIR [options] IN...",
    "sluice dedup paragraphs --out DIR [options] IN...",
    "",
    "Remove duplicate documents. 'exact' drops documents whose (optionally normalised)",
    "text, or another member (--key url), has the same 128-bit hash as an earlier one.",
    "'fuzzy' finds near-duplicates with MinHash and LSH (in memory, or in a Redis Cluster)",
    "and keeps the first document of each connected group. 'paragraphs' removes every",
    "paragraph (or line) of a text already seen earlier in the corpus. 'sluice dedup MODE",
    "-h' shows a mode's options.",
    NULL,
};

/* `sluice dedup` with no mode (argv[1] names none: the dispatcher runs exact and fuzzy) */
static int run(const void *opts, const struct sl_strlist *operands, int argc, const char **argv)
{
    if (operands->n)
        sl_error("unknown dedup mode '%s'\nhint: use 'sluice dedup exact', 'sluice dedup fuzzy' "
                 "or 'sluice dedup paragraphs'",
                 operands->v[0]);
    sl_usage_print(stderr, cmd_dedup_usage, NULL);
    return 2;
}

const struct sl_cmd cmd_dedup = { .usage = cmd_dedup_usage, .run = run };
