/* The word lists built into the binary: each file of curate/filter/lexicons/ is included
 * with the assembler's .incbin (see lexicons.h and lexicons/SOURCE.md). Generated list of
 * files; keep in step with the folder (curate/filter/build.mk rebuilds on changes). */
#include "curate/filter/lexicons.h"

#include <string.h>

#define LEXICON(sym, path)                                                                 \
    __asm__(".section .rodata\n"                                                          \
            ".global " #sym "_start\n"                                                    \
            ".type " #sym "_start, @object\n"                                             \
            ".balign 16\n" #sym "_start:\n"                                               \
            ".incbin \"" path "\"\n"                                                      \
            ".global " #sym "_end\n" #sym "_end:\n"                                       \
            ".byte 0\n"                                                                   \
            ".previous\n");                                                               \
    extern const char sym##_start[], sym##_end[];

LEXICON(lex_stopwords_cs, "curate/filter/lexicons/stopwords/cs.txt")
LEXICON(lex_stopwords_da, "curate/filter/lexicons/stopwords/da.txt")
LEXICON(lex_stopwords_de, "curate/filter/lexicons/stopwords/de.txt")
LEXICON(lex_stopwords_el, "curate/filter/lexicons/stopwords/el.txt")
LEXICON(lex_stopwords_en, "curate/filter/lexicons/stopwords/en.txt")
LEXICON(lex_stopwords_es, "curate/filter/lexicons/stopwords/es.txt")
LEXICON(lex_stopwords_fi, "curate/filter/lexicons/stopwords/fi.txt")
LEXICON(lex_stopwords_fr, "curate/filter/lexicons/stopwords/fr.txt")
LEXICON(lex_stopwords_hi, "curate/filter/lexicons/stopwords/hi.txt")
LEXICON(lex_stopwords_hu, "curate/filter/lexicons/stopwords/hu.txt")
LEXICON(lex_stopwords_it, "curate/filter/lexicons/stopwords/it.txt")
LEXICON(lex_stopwords_ja, "curate/filter/lexicons/stopwords/ja.txt")
LEXICON(lex_stopwords_ko, "curate/filter/lexicons/stopwords/ko.txt")
LEXICON(lex_stopwords_lt, "curate/filter/lexicons/stopwords/lt.txt")
LEXICON(lex_stopwords_lv, "curate/filter/lexicons/stopwords/lv.txt")
LEXICON(lex_stopwords_nl, "curate/filter/lexicons/stopwords/nl.txt")
LEXICON(lex_stopwords_no, "curate/filter/lexicons/stopwords/no.txt")
LEXICON(lex_stopwords_pl, "curate/filter/lexicons/stopwords/pl.txt")
LEXICON(lex_stopwords_pt, "curate/filter/lexicons/stopwords/pt.txt")
LEXICON(lex_stopwords_ro, "curate/filter/lexicons/stopwords/ro.txt")
LEXICON(lex_stopwords_ru, "curate/filter/lexicons/stopwords/ru.txt")
LEXICON(lex_stopwords_sk, "curate/filter/lexicons/stopwords/sk.txt")
LEXICON(lex_stopwords_sv, "curate/filter/lexicons/stopwords/sv.txt")
LEXICON(lex_stopwords_th, "curate/filter/lexicons/stopwords/th.txt")
LEXICON(lex_stopwords_zh, "curate/filter/lexicons/stopwords/zh.txt")
LEXICON(lex_badwords_ar, "curate/filter/lexicons/badwords/ar")
LEXICON(lex_badwords_cs, "curate/filter/lexicons/badwords/cs")
LEXICON(lex_badwords_da, "curate/filter/lexicons/badwords/da")
LEXICON(lex_badwords_de, "curate/filter/lexicons/badwords/de")
LEXICON(lex_badwords_en, "curate/filter/lexicons/badwords/en")
LEXICON(lex_badwords_eo, "curate/filter/lexicons/badwords/eo")
LEXICON(lex_badwords_es, "curate/filter/lexicons/badwords/es")
LEXICON(lex_badwords_fa, "curate/filter/lexicons/badwords/fa")
LEXICON(lex_badwords_fi, "curate/filter/lexicons/badwords/fi")
LEXICON(lex_badwords_fil, "curate/filter/lexicons/badwords/fil")
LEXICON(lex_badwords_fr, "curate/filter/lexicons/badwords/fr")
LEXICON(lex_badwords_fr_CA_u_sd_caqc, "curate/filter/lexicons/badwords/fr-CA-u-sd-caqc")
LEXICON(lex_badwords_hi, "curate/filter/lexicons/badwords/hi")
LEXICON(lex_badwords_hu, "curate/filter/lexicons/badwords/hu")
LEXICON(lex_badwords_it, "curate/filter/lexicons/badwords/it")
LEXICON(lex_badwords_ja, "curate/filter/lexicons/badwords/ja")
LEXICON(lex_badwords_kab, "curate/filter/lexicons/badwords/kab")
LEXICON(lex_badwords_ko, "curate/filter/lexicons/badwords/ko")
LEXICON(lex_badwords_nl, "curate/filter/lexicons/badwords/nl")
LEXICON(lex_badwords_no, "curate/filter/lexicons/badwords/no")
LEXICON(lex_badwords_pl, "curate/filter/lexicons/badwords/pl")
LEXICON(lex_badwords_pt, "curate/filter/lexicons/badwords/pt")
LEXICON(lex_badwords_ru, "curate/filter/lexicons/badwords/ru")
LEXICON(lex_badwords_sv, "curate/filter/lexicons/badwords/sv")
LEXICON(lex_badwords_th, "curate/filter/lexicons/badwords/th")
LEXICON(lex_badwords_tlh, "curate/filter/lexicons/badwords/tlh")
LEXICON(lex_badwords_tr, "curate/filter/lexicons/badwords/tr")
LEXICON(lex_badwords_zh, "curate/filter/lexicons/badwords/zh")
LEXICON(lex_url_banned_words_x, "curate/filter/lexicons/url/banned_words.txt")
LEXICON(lex_url_soft_banned_words_x, "curate/filter/lexicons/url/soft_banned_words.txt")
LEXICON(lex_url_banned_subwords_x, "curate/filter/lexicons/url/banned_subwords.txt")
LEXICON(lex_spacy_en_exceptions_x, "curate/filter/lexicons/spacy-en-exceptions.tsv")

struct lexicon {
    const char *kind, *lang;
    const char *start, *end;
};

static const struct lexicon lexicons[] = {
    { "stopwords", "cs", lex_stopwords_cs_start, lex_stopwords_cs_end },
    { "stopwords", "da", lex_stopwords_da_start, lex_stopwords_da_end },
    { "stopwords", "de", lex_stopwords_de_start, lex_stopwords_de_end },
    { "stopwords", "el", lex_stopwords_el_start, lex_stopwords_el_end },
    { "stopwords", "en", lex_stopwords_en_start, lex_stopwords_en_end },
    { "stopwords", "es", lex_stopwords_es_start, lex_stopwords_es_end },
    { "stopwords", "fi", lex_stopwords_fi_start, lex_stopwords_fi_end },
    { "stopwords", "fr", lex_stopwords_fr_start, lex_stopwords_fr_end },
    { "stopwords", "hi", lex_stopwords_hi_start, lex_stopwords_hi_end },
    { "stopwords", "hu", lex_stopwords_hu_start, lex_stopwords_hu_end },
    { "stopwords", "it", lex_stopwords_it_start, lex_stopwords_it_end },
    { "stopwords", "ja", lex_stopwords_ja_start, lex_stopwords_ja_end },
    { "stopwords", "ko", lex_stopwords_ko_start, lex_stopwords_ko_end },
    { "stopwords", "lt", lex_stopwords_lt_start, lex_stopwords_lt_end },
    { "stopwords", "lv", lex_stopwords_lv_start, lex_stopwords_lv_end },
    { "stopwords", "nl", lex_stopwords_nl_start, lex_stopwords_nl_end },
    { "stopwords", "no", lex_stopwords_no_start, lex_stopwords_no_end },
    { "stopwords", "pl", lex_stopwords_pl_start, lex_stopwords_pl_end },
    { "stopwords", "pt", lex_stopwords_pt_start, lex_stopwords_pt_end },
    { "stopwords", "ro", lex_stopwords_ro_start, lex_stopwords_ro_end },
    { "stopwords", "ru", lex_stopwords_ru_start, lex_stopwords_ru_end },
    { "stopwords", "sk", lex_stopwords_sk_start, lex_stopwords_sk_end },
    { "stopwords", "sv", lex_stopwords_sv_start, lex_stopwords_sv_end },
    { "stopwords", "th", lex_stopwords_th_start, lex_stopwords_th_end },
    { "stopwords", "zh", lex_stopwords_zh_start, lex_stopwords_zh_end },
    { "badwords", "ar", lex_badwords_ar_start, lex_badwords_ar_end },
    { "badwords", "cs", lex_badwords_cs_start, lex_badwords_cs_end },
    { "badwords", "da", lex_badwords_da_start, lex_badwords_da_end },
    { "badwords", "de", lex_badwords_de_start, lex_badwords_de_end },
    { "badwords", "en", lex_badwords_en_start, lex_badwords_en_end },
    { "badwords", "eo", lex_badwords_eo_start, lex_badwords_eo_end },
    { "badwords", "es", lex_badwords_es_start, lex_badwords_es_end },
    { "badwords", "fa", lex_badwords_fa_start, lex_badwords_fa_end },
    { "badwords", "fi", lex_badwords_fi_start, lex_badwords_fi_end },
    { "badwords", "fil", lex_badwords_fil_start, lex_badwords_fil_end },
    { "badwords", "fr", lex_badwords_fr_start, lex_badwords_fr_end },
    { "badwords", "fr-CA-u-sd-caqc", lex_badwords_fr_CA_u_sd_caqc_start, lex_badwords_fr_CA_u_sd_caqc_end },
    { "badwords", "hi", lex_badwords_hi_start, lex_badwords_hi_end },
    { "badwords", "hu", lex_badwords_hu_start, lex_badwords_hu_end },
    { "badwords", "it", lex_badwords_it_start, lex_badwords_it_end },
    { "badwords", "ja", lex_badwords_ja_start, lex_badwords_ja_end },
    { "badwords", "kab", lex_badwords_kab_start, lex_badwords_kab_end },
    { "badwords", "ko", lex_badwords_ko_start, lex_badwords_ko_end },
    { "badwords", "nl", lex_badwords_nl_start, lex_badwords_nl_end },
    { "badwords", "no", lex_badwords_no_start, lex_badwords_no_end },
    { "badwords", "pl", lex_badwords_pl_start, lex_badwords_pl_end },
    { "badwords", "pt", lex_badwords_pt_start, lex_badwords_pt_end },
    { "badwords", "ru", lex_badwords_ru_start, lex_badwords_ru_end },
    { "badwords", "sv", lex_badwords_sv_start, lex_badwords_sv_end },
    { "badwords", "th", lex_badwords_th_start, lex_badwords_th_end },
    { "badwords", "tlh", lex_badwords_tlh_start, lex_badwords_tlh_end },
    { "badwords", "tr", lex_badwords_tr_start, lex_badwords_tr_end },
    { "badwords", "zh", lex_badwords_zh_start, lex_badwords_zh_end },
    { "url-banned-words", "x", lex_url_banned_words_x_start, lex_url_banned_words_x_end },
    { "url-soft-banned-words", "x", lex_url_soft_banned_words_x_start, lex_url_soft_banned_words_x_end },
    { "url-banned-subwords", "x", lex_url_banned_subwords_x_start, lex_url_banned_subwords_x_end },
    { "spacy-en-exceptions", "x", lex_spacy_en_exceptions_x_start, lex_spacy_en_exceptions_x_end },
};

static const char *const stopword_langs[] = { "cs", "da", "de", "el", "en", "es", "fi", "fr", "hi", "hu", "it", "ja", "ko", "lt", "lv", "nl", "no", "pl", "pt", "ro", "ru", "sk", "sv", "th", "zh", NULL };
static const char *const badword_langs[] = { "ar", "cs", "da", "de", "en", "eo", "es", "fa", "fi", "fil", "fr", "fr-CA-u-sd-caqc", "hi", "hu", "it", "ja", "kab", "ko", "nl", "no", "pl", "pt", "ru", "sv", "th", "tlh", "tr", "zh", NULL };

const char *sl_lexicon(const char *kind, const char *lang, size_t *len)
{
    int any_lang = !strcmp(kind, "spacy-en-exceptions") || !strncmp(kind, "url-", 4);
    for (size_t i = 0; i < sizeof(lexicons) / sizeof(lexicons[0]); i++) {
        if (strcmp(lexicons[i].kind, kind) != 0)
            continue;
        if (!any_lang && (!lang || strcmp(lexicons[i].lang, lang) != 0))
            continue;
        *len = (size_t)(lexicons[i].end - lexicons[i].start);
        return lexicons[i].start;
    }
    *len = 0;
    return NULL;
}

const char *const *sl_lexicon_langs(const char *kind)
{
    if (!strcmp(kind, "stopwords"))
        return stopword_langs;
    if (!strcmp(kind, "badwords"))
        return badword_langs;
    static const char *const none[] = { NULL };
    return none;
}
