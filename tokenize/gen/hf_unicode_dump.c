/* Dumps, for every code point, what tokenize/hf.c decides from libutf8proc alone (BERT
 * clean_text, lower case, NFD + nonspacing marks dropped, BERT punctuation), for
 * tokenize/gen/hf_unicode_gen.py to compare with the tokenizers library. */
#include <stdio.h>
#include <utf8proc.h>
#include <stdlib.h>
#include "tokenize/unicat.h"
static int ctrl(int c)
{
    if (c == '\t' || c == '\n' || c == '\r')
        return 0;
    int cat = utf8proc_category(c);
    return cat == UTF8PROC_CATEGORY_CC || cat == UTF8PROC_CATEGORY_CF ||
           cat == UTF8PROC_CATEGORY_CO || cat == UTF8PROC_CATEGORY_CS;
}
int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    if (argv[1][0] == 'v') {
        printf("%s\n", utf8proc_unicode_version());
        return 0;
    }
    int mode = atoi(argv[1]);
    for (int c = 1; c < 0x110000; c++) {
        if (c >= 0xD800 && c < 0xE000)
            continue;
        if (mode == 0) {
            int a = (c == 0xFFFD || ctrl(c)) ? 1 : ((unicat_class(c) & UC_WS) ? 2 : 0);
            if (a)
                printf("%x %d\n", c, a);
        }
        if (mode == 1) {
            int l = c == 0x130 ? -1 : utf8proc_tolower(c);
            if (l != c)
                printf("%x %x\n", c, l);
        }
        if (mode == 2) {
            utf8proc_uint8_t b[8];
            int n = utf8proc_encode_char(c, b);
            utf8proc_uint8_t *d;
            utf8proc_ssize_t m = utf8proc_map(b, n, &d, UTF8PROC_STABLE | UTF8PROC_DECOMPOSE);
            /* strip Mn */ utf8proc_int32_t cps[32];
            int k = 0;
            utf8proc_ssize_t i = 0;
            while (i < m) {
                utf8proc_int32_t x;
                i += utf8proc_iterate(d + i, m - i, &x);
                if (utf8proc_category(x) != UTF8PROC_CATEGORY_MN)
                    cps[k++] = x;
            }
            if (!(k == 1 && cps[0] == c)) {
                printf("%x", c);
                for (int j = 0; j < k; j++)
                    printf(" %x", cps[j]);
                printf("\n");
            }
            free(d);
        }
        if (mode == 3) {
            int cat = utf8proc_category(c);
            int p = (c < 0x80) ? ((c >= 33 && c <= 47) || (c >= 58 && c <= 64) ||
                                  (c >= 91 && c <= 96) || (c >= 123 && c <= 126))
                               : (cat >= UTF8PROC_CATEGORY_PC && cat <= UTF8PROC_CATEGORY_PO);
            if (p)
                printf("%x\n", c);
        }
    }
}
