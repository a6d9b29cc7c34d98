/* Unicode classes for the BPE pre-tokenizers: one byte of flags per code point, from a
 * generated two-stage table (tokenize/unicat_table.h, made by tokenize/gen/unicat_gen.c
 * from libutf8proc's general categories; the Unicode version is UNICAT_UNICODE_VERSION).
 * Invalid UTF-8 is classified by the caller (the pre-tokenizers treat each invalid byte as
 * a character with no flags: not a letter, number or space). */
#ifndef SL_TOKENIZE_UNICAT_H
#define SL_TOKENIZE_UNICAT_H

#include <stddef.h>
#include <stdint.h>

enum {
    UC_L = 1,     /* \p{L}: Lu Ll Lt Lm Lo */
    UC_N = 2,     /* \p{N}: Nd Nl No */
    UC_WS = 4,    /* \s: the White_Space property */
    UC_UP = 8,    /* o200k's [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}] */
    UC_LO = 16,   /* o200k's [\p{Ll}\p{Lm}\p{Lo}\p{M}] */
    UC_M = 32,    /* \p{M}: Mn Mc Me */
    UC_CRLF = 64, /* \r or \n */
};

extern const unsigned char unicat_stage1[0x110000 >> 8];
extern const unsigned char unicat_stage2[][256];

/* Flags of code point cp (0 for cp > 0x10FFFF and for surrogates). */
static inline unsigned unicat_class(uint32_t cp)
{
    return cp > 0x10FFFF ? 0 : unicat_stage2[unicat_stage1[cp >> 8]][cp & 255];
}
/* The Unicode version the table was generated from ("15.0.0"). */
const char *unicat_unicode_version(void);

#endif
