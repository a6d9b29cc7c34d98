/* Fuzz the cleaner and the filter chain on arbitrary text: no crash, the cleaner's output
 * is valid UTF-8 without runs of 3 newlines, and every shipped kind of filter runs. */
#include "core/buf.h"
#include "core/utf8.h"
#include "curate/clean/cleaner.h"
#include "curate/filter/chain.h"

#include <stdlib.h>
#include <string.h>

static struct sl_filter_chain *chain;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!chain) {
        static const char yaml[] =
            "filters:\n  - gopher_repetition\n  - gopher_quality:\n      min_doc_words: 1\n"
            "  - c4_quality:\n      min_num_sentences: 0\n  - fineweb_quality\n  - c4_paragraph\n"
            "  - word_count:\n      min_words: 0\n  - mean_word_length\n  - symbols_to_words\n"
            "  - bullets\n  - ellipsis\n  - words_without_alphabets\n  - common_english_words\n"
            "  - non_alphanumeric\n  - numbers\n  - urls\n  - whitespace\n  - parentheses\n"
            "  - long_word\n  - boilerplate_string\n  - punctuation\n  - repeated_lines\n"
            "  - repeated_paragraphs\n  - repeated_lines_by_char\n  - repeated_paragraphs_by_char\n"
            "  - repeating_top_ngrams\n  - repeating_duplicate_ngrams:\n      n: 5\n"
            "  - pornographic_urls\n  - stop_words\n  - c4_badwords\n"
            "  - regex:\n      patterns: ['a+b', '^x$']\n      action: drop_lines\n";
        if (sl_filter_chain_load_string(&chain, yaml, sizeof(yaml) - 1, "fuzz.yaml"))
            abort();
    }
    struct sl_clean_opts o;
    memset(&o, 0, sizeof(o));
    o.remove_urls = size & 1;
    o.uncurl_quotes = size & 2;
    o.nfkc = size & 4;
    struct sl_clean_counts c;
    memset(&c, 0, sizeof(c));
    struct sl_buf out = SL_BUF_INIT;
    sl_clean_text(&o, (const char *)data, size, &out, &c);
    const char *t = out.data ? out.data : "";
    if (sl_utf8_validate(t, out.len) != out.len)
        abort();
    if (out.len && memmem(t, out.len, "\n\n\n", 3))
        abort();
    struct sl_filter_result res[64];
    struct sl_fctx ctx;
    sl_fctx_init(&ctx, &chain->env);
    /* raw bytes (maybe invalid UTF-8) and cleaned text both go through every filter */
    sl_fctx_begin(&ctx, NULL, (const char *)data, size, (size & 8) ? "zh" : "en");
    sl_filter_chain_run(chain, &ctx, 1, res);
    sl_fctx_begin(&ctx, NULL, t, out.len, "en");
    sl_filter_chain_run(chain, &ctx, 1, res);
    sl_fctx_release(&ctx);
    sl_buf_release(&out);
    return 0;
}
