/* pii: redact personal data (docs/filters.md "PII"). Hand-written scanners, linear in the
 * text: every candidate is read at most a bounded number of bytes (64 for an e-mail local
 * part, 255 for its domain, 48 for a number, 42 for an IPv6 address, 40 for an IBAN) from a
 * token start, and token starts are word boundaries.
 *
 * Kinds: email, ip (IPv4 and IPv6), phone (E.164 "+CC ...", NANP, national trunk-prefix
 * forms), card (13-19 digits, issuer prefix, Luhn), ssn (AAA-GG-SSSS with the SSA's
 * invalid areas excluded), iban (country length and mod-97). */
#include "core/alloc.h"
#include "core/config.h"
#include "core/err.h"
#include "curate/filter/filter.h"
#include "curate/filter/pii.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

enum { K_EMAIL, K_IP, K_PHONE, K_CARD, K_SSN, K_IBAN, NKIND };
static const char *const kind_names[NKIND] = { "email", "ip", "phone", "card", "ssn", "iban" };
static const char *const kind_default[NKIND] = { "<EMAIL>",       "<IP_ADDRESS>", "<PHONE_NUMBER>",
                                                 "<CREDIT_CARD>", "<US_SSN>",     "<IBAN>" };

#define pii_span sl_pii_match

struct pii {
    int on[NKIND];
    const char *ph[NKIND];
    size_t phlen[NKIND];
    int public_only;
    struct pii_span *v;
    size_t n, cap;
    struct pii_span *em;
    size_t nem, emcap;
    struct sl_buf out, spans;
    struct sl_filter_count counts[NKIND];
};

static int is_digit(int c)
{
    return c >= '0' && c <= '9';
}
static int is_alpha(int c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
static int is_alnum(int c)
{
    return is_digit(c) || is_alpha(c);
}
static int is_word(int c)
{
    return is_alnum(c) || c == '_' || c >= 0x80;
}
static int is_upper(int c)
{
    return c >= 'A' && c <= 'Z';
}
static int is_hex(int c)
{
    return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}
static int is_local(int c)
{
    return is_alnum(c) || (c && c < 0x80 && strchr("!#$%&'*+/=?^_`{|}~-.", c));
}

static void push(struct pii_span **v, size_t *n, size_t *cap, size_t off, size_t len, int kind)
{
    if (*n == *cap) {
        *cap = *cap ? *cap * 2 : 16;
        *v = sl_xrealloc(*v, sl_mul_size(*cap, sizeof(**v)));
    }
    (*v)[*n].off = off;
    (*v)[*n].len = len;
    (*v)[*n].kind = kind;
    (*n)++;
}

/* ---- e-mail ------------------------------------------------------------------------ */

/* A domain label at s[i..]: letters/digits with interior hyphens. Returns its end, or i. */
static size_t label_end(const unsigned char *s, size_t n, size_t i)
{
    size_t j = i, last = i;
    while (j < n && j - i < 64 && (is_alnum(s[j]) || s[j] == '-')) {
        if (is_alnum(s[j]))
            last = j + 1;
        j++;
    }
    return is_alnum(s[i]) ? last : i;
}

/* The e-mail address around the '@' at a (local part not before lo), or 0. */
static int scan_email(const unsigned char *s, size_t n, size_t a, size_t lo, size_t *off,
                      size_t *len)
{
    size_t st = a;
    while (st > lo && a - st < 64 && is_local(s[st - 1]))
        st--;
    if (st > lo && a - st >= 64)
        return 0; /* a longer run: not read back further */
    /* no "..", no leading/trailing dot; the first character starts a word */
    if (st == a || s[a - 1] == '.')
        return 0;
    for (size_t k = a - 1; k > st; k--)
        if (s[k] == '.' && s[k - 1] == '.') {
            st = k + 1;
            break;
        }
    while (st < a && (s[st] == '.' || !is_word(s[st])))
        st++;
    if (st == a)
        return 0;
    size_t p = a + 1, labels = 0, tld = p, end = p;
    while (p < n && p - a < 255) {
        size_t e = label_end(s, n, p);
        if (e == p)
            break;
        labels++;
        tld = p;
        end = e;
        if (e + 1 < n && s[e] == '.' && is_alnum(s[e + 1]))
            p = e + 1;
        else
            break;
    }
    if (labels < 2)
        return 0;
    /* the top-level label: two or more letters (not "x.png"-like digits) */
    if (end - tld < 2)
        return 0;
    for (size_t k = tld; k < end; k++)
        if (!is_alpha(s[k]))
            return 0;
    /* "logo@2x.png": an image name, not an address */
    static const char *const ext[] = { "png", "jpg", "jpeg", "gif",  "svg", "webp",
                                       "bmp", "ico", "tif",  "tiff", "avif" };
    for (size_t k = 0; k < sizeof(ext) / sizeof(ext[0]); k++)
        if (end - tld == strlen(ext[k]) && !strncasecmp((const char *)s + tld, ext[k], end - tld))
            return 0;
    *off = st;
    *len = end - st;
    return 1;
}

/* ---- IP addresses ------------------------------------------------------------------ */

/* Dotted IPv4 at s[i..] (no leading zeros, octets <= 255); its end, or 0. */
static size_t ipv4_end(const unsigned char *s, size_t n, size_t i, unsigned oct[4])
{
    size_t p = i;
    for (int k = 0; k < 4; k++) {
        if (k) {
            if (p >= n || s[p] != '.')
                return 0;
            p++;
        }
        size_t q = p;
        unsigned v = 0;
        while (q < n && is_digit(s[q]) && q - p < 4)
            v = v * 10 + (unsigned)(s[q++] - '0');
        if (q == p || q - p > 3 || v > 255 || (q - p > 1 && s[p] == '0'))
            return 0;
        oct[k] = v;
        p = q;
    }
    return p;
}

/* Python's ipaddress.IPv4Address.is_global (3.11): not private, not 100.64.0.0/10. */
static int ipv4_global(const unsigned o[4])
{
    unsigned a = o[0], b = o[1], c = o[2], d = o[3];
    if (a == 0 || a == 10 || a == 127 || a >= 240)
        return 0;
    if ((a == 169 && b == 254) || (a == 172 && b >= 16 && b <= 31) || (a == 192 && b == 168))
        return 0;
    if (a == 192 && b == 0 && c == 0 && (d < 8 || d == 170 || d == 171))
        return 0;
    if ((a == 192 && b == 0 && c == 2) || (a == 198 && (b == 18 || b == 19)) ||
        (a == 198 && b == 51 && c == 100) || (a == 203 && b == 0 && c == 113))
        return 0;
    if (a == 100 && b >= 64 && b <= 127)
        return 0;
    return 1;
}

/* The end of a number-like token: not followed by a word character or by ".d" / "-d". */
static int clean_end(const unsigned char *s, size_t n, size_t e)
{
    if (e >= n)
        return 1;
    if (is_word(s[e]))
        return 0;
    if ((s[e] == '.' || s[e] == '-') && e + 1 < n && is_alnum(s[e + 1]))
        return 0;
    return 1;
}

static size_t scan_ipv4(const struct pii *x, const unsigned char *s, size_t n, size_t i)
{
    unsigned o[4];
    size_t e = ipv4_end(s, n, i, o);
    if (!e || !clean_end(s, n, e))
        return 0;
    if (x->public_only && !ipv4_global(o))
        return 0;
    return e;
}

static size_t scan_ipv6(const unsigned char *s, size_t n, size_t i)
{
    size_t p = i, groups = 0, end = 0;
    int dbl = 0, digit = 0;
    if (p + 1 < n && s[p] == ':' && s[p + 1] == ':') {
        dbl = 1;
        p += 2;
        end = p;
    }
    while (p < n && p - i < 48) {
        size_t q = p;
        while (q < n && is_hex(s[q]) && q - p < 5) {
            digit |= is_digit(s[q]);
            q++;
        }
        if (q == p)
            break;
        if (q - p > 4)
            return 0;
        if (q + 1 < n && s[q] == '.' && is_digit(s[q + 1])) { /* trailing dotted IPv4 */
            unsigned o[4];
            size_t e = ipv4_end(s, n, p, o);
            if (!e || groups > 6)
                return 0;
            groups += 2;
            end = e;
            break;
        }
        groups++;
        end = q;
        if (q + 1 < n && s[q] == ':' && s[q + 1] == ':') {
            if (dbl)
                break;
            dbl = 1;
            end = q + 2;
            p = q + 2;
        } else if (q + 1 < n && s[q] == ':' && is_hex(s[q + 1]))
            p = q + 1;
        else
            break;
    }
    if (!end || !digit)
        return 0;
    if (dbl ? groups > 7 : groups != 8)
        return 0;
    if (end < n && is_word(s[end]))
        return 0;
    if (end + 1 < n && s[end] == ':' && (is_hex(s[end + 1]) || s[end + 1] == ':'))
        return 0;
    if (end + 1 < n && s[end] == '.' && is_alnum(s[end + 1]))
        return 0;
    return end;
}

/* ---- numbers: phone, card, SSN ------------------------------------------------------ */

#define MAXG 10
struct num {
    int plus;
    int ng;
    size_t gs[MAXG], ge[MAXG]; /* digits of group k: s[gs..ge) */
    char sep[MAXG];            /* separator before group k (0: none) */
    int paren[MAXG];
    size_t end[MAXG]; /* end of the token if it stops after group k */
};

static int luhn(const char *d, size_t n)
{
    int sum = 0;
    for (size_t k = 0; k < n; k++) {
        int v = d[n - 1 - k] - '0';
        if (k & 1) {
            v *= 2;
            if (v > 9)
                v -= 9;
        }
        sum += v;
    }
    return sum % 10 == 0;
}

static int card_prefix(const char *d, size_t n)
{
    int p2 = (d[0] - '0') * 10 + (d[1] - '0');
    int p4 = p2 * 100 + (d[2] - '0') * 10 + (d[3] - '0');
    if (d[0] == '4')
        return n == 13 || n == 16 || n == 19;
    if ((p2 >= 51 && p2 <= 55) || (p4 >= 2221 && p4 <= 2720))
        return n == 16;
    if (p2 == 34 || p2 == 37)
        return n == 15;
    if (p2 == 30 || p2 == 36 || p2 == 38 || p2 == 39)
        return n >= 14 && n <= 19;
    if (p2 == 35 || p2 == 62 || p2 == 64 || p2 == 65 || p4 == 6011)
        return n >= 16 && n <= 19;
    return 0;
}

/* Is groups [0, g] a card, an SSN or a phone number? Returns the kind or -1. */
static int classify(const struct num *t, int g, const unsigned char *s, const int on[NKIND])
{
    char d[64];
    size_t nd = 0;
    int parens = 0, seps_same = 1;
    char sep1 = g > 0 ? t->sep[1] : 0;
    for (int k = 0; k <= g; k++) {
        for (size_t q = t->gs[k]; q < t->ge[k] && nd < sizeof(d); q++)
            d[nd++] = (char)s[q];
        parens += t->paren[k];
        if (k > 0 && t->sep[k] != sep1)
            seps_same = 0;
    }
    size_t len0 = t->ge[0] - t->gs[0], lenl = t->ge[g] - t->gs[g];
    if (!t->plus && !parens) {
        /* SSN: AAA-GG-SSSS */
        if (on[K_SSN] && g == 2 && sep1 == '-' && seps_same && len0 == 3 &&
            t->ge[1] - t->gs[1] == 2 && lenl == 4) {
            int area = (d[0] - '0') * 100 + (d[1] - '0') * 10 + (d[2] - '0');
            if (area && area != 666 && area < 900 && !(d[3] == '0' && d[4] == '0') &&
                memcmp(d + 5, "0000", 4))
                return K_SSN;
        }
        /* card: one run, or groups of 4 (Amex 4-6-5, Diners 4-6-4) with one separator */
        if (on[K_CARD] && nd >= 13 && nd <= 19 &&
            (g == 0 || (seps_same && (sep1 == ' ' || sep1 == '-')))) {
            int shape = g == 0;
            if (!shape && len0 == 4) {
                shape = 1;
                for (int k = 1; k < g; k++)
                    if (t->ge[k] - t->gs[k] != 4)
                        shape = 0;
                if (!shape && g == 2 && t->ge[1] - t->gs[1] == 6 && (lenl == 5 || lenl == 4))
                    shape = 1;
            }
            if (shape && card_prefix(d, nd) && luhn(d, nd))
                return K_CARD;
        }
    }
    if (!on[K_PHONE])
        return -1;
    if (t->plus) {
        /* E.164: country code not 0, 8 to 15 digits */
        if (d[0] != '0' && nd >= 8 && nd <= 15 && (g == 0 || seps_same || parens))
            return K_PHONE;
        return -1;
    }
    if (g == 0 || !seps_same)
        if (!(parens && g >= 1))
            return -1;
    /* NANP: [1] (NXX) NXX-XXXX */
    int k0 = 0;
    if (nd == 11 && d[0] == '1' && len0 == 1)
        k0 = 1;
    if (nd - (size_t)k0 == 10 && g - k0 == 2 && t->ge[k0] - t->gs[k0] == 3 &&
        t->ge[k0 + 1] - t->gs[k0 + 1] == 3 && lenl == 4 && d[k0] >= '2' && d[k0 + 3] >= '2') {
        /* "(555) 123" parenthesised area code, or one separator kind */
        return K_PHONE;
    }
    /* national trunk prefix: 0AB..., 9 to 11 digits, area group 2..5 digits, last >= 2 */
    if (d[0] == '0' && d[1] != '0' && nd >= 9 && nd <= 11 && len0 >= 2 && len0 <= 5 && lenl >= 2 &&
        !(sep1 == '.' && g < 3))
        return K_PHONE;
    return -1;
}

/* Read a number token at s[i] ('+', '(' or a digit): groups of digits with single
 * separators ' ', '-', '.', a group possibly in parentheses. Returns groups read. */
static int read_num(const unsigned char *s, size_t n, size_t i, struct num *t)
{
    size_t p = i;
    t->plus = 0;
    t->ng = 0;
    if (s[p] == '+') {
        t->plus = 1;
        p++;
    }
    char sep = 0;
    while (t->ng < MAXG && p < n && p - i < 48) {
        int par = 0;
        size_t q = p;
        if (s[q] == '(') {
            par = 1;
            q++;
        }
        size_t ds = q;
        while (q < n && is_digit(s[q]) && q - ds < 20)
            q++;
        if (q == ds || (q < n && is_digit(s[q])))
            break;
        size_t de = q;
        if (par) {
            if (q >= n || s[q] != ')')
                break;
            q++;
        }
        int k = t->ng++;
        t->gs[k] = ds;
        t->ge[k] = de;
        t->sep[k] = sep;
        t->paren[k] = par;
        t->end[k] = q;
        /* separator: one of " -." before a digit or '(' ; after ')' also none */
        if (q + 1 < n && (s[q] == ' ' || s[q] == '-' || s[q] == '.') &&
            (is_digit(s[q + 1]) || s[q + 1] == '(')) {
            sep = (char)s[q];
            p = q + 1;
        } else if (par && q < n && is_digit(s[q])) {
            sep = ' ';
            p = q;
        } else
            break;
    }
    return t->ng;
}

static size_t scan_number(const struct pii *x, const unsigned char *s, size_t n, size_t i,
                          int *kind)
{
    /* not inside a longer space-separated run of digits that did not qualify as a whole */
    if (i >= 2 && s[i - 1] == ' ' && is_digit(s[i - 2]))
        return 0;
    struct num t;
    int ng = read_num(s, n, i, &t);
    for (int g = ng - 1; g >= 0; g--) {
        size_t e = t.end[g];
        /* the token may stop after group g only before a space-separated group or its end */
        if (g + 1 < ng && t.sep[g + 1] != ' ')
            continue;
        if (g + 1 == ng && !clean_end(s, n, e))
            continue;
        int k = classify(&t, g, s, x->on);
        if (k >= 0) {
            *kind = k;
            return e;
        }
    }
    return 0;
}

/* ---- IBAN --------------------------------------------------------------------------- */

static const struct {
    char cc[3];
    unsigned char len;
} iban_len[] = {
    { "AD", 24 }, { "AE", 23 }, { "AL", 28 }, { "AT", 20 }, { "AZ", 28 }, { "BA", 20 },
    { "BE", 16 }, { "BG", 22 }, { "BH", 22 }, { "BR", 29 }, { "BY", 28 }, { "CH", 21 },
    { "CR", 22 }, { "CY", 28 }, { "CZ", 24 }, { "DE", 22 }, { "DK", 18 }, { "DO", 28 },
    { "EE", 20 }, { "EG", 29 }, { "ES", 24 }, { "FI", 18 }, { "FO", 18 }, { "FR", 27 },
    { "GB", 22 }, { "GE", 22 }, { "GI", 23 }, { "GL", 18 }, { "GR", 27 }, { "GT", 28 },
    { "HR", 21 }, { "HU", 28 }, { "IE", 22 }, { "IL", 23 }, { "IQ", 23 }, { "IS", 26 },
    { "IT", 27 }, { "JO", 30 }, { "KW", 30 }, { "KZ", 20 }, { "LB", 28 }, { "LC", 32 },
    { "LI", 21 }, { "LT", 20 }, { "LU", 20 }, { "LV", 21 }, { "MC", 27 }, { "MD", 24 },
    { "ME", 22 }, { "MK", 19 }, { "MR", 27 }, { "MT", 31 }, { "MU", 30 }, { "NL", 18 },
    { "NO", 15 }, { "PK", 24 }, { "PL", 28 }, { "PS", 29 }, { "PT", 25 }, { "QA", 29 },
    { "RO", 24 }, { "RS", 22 }, { "SA", 24 }, { "SC", 31 }, { "SE", 24 }, { "SI", 19 },
    { "SK", 24 }, { "SM", 27 }, { "ST", 25 }, { "SV", 28 }, { "TL", 23 }, { "TN", 24 },
    { "TR", 26 }, { "UA", 29 }, { "VA", 22 }, { "VG", 24 }, { "XK", 20 },
};

static size_t scan_iban(const unsigned char *s, size_t n, size_t i)
{
    if (i + 4 > n || !is_upper(s[i]) || !is_upper(s[i + 1]) || !is_digit(s[i + 2]) ||
        !is_digit(s[i + 3]))
        return 0;
    size_t want = 0;
    for (size_t k = 0; k < sizeof(iban_len) / sizeof(iban_len[0]); k++)
        if (iban_len[k].cc[0] == s[i] && iban_len[k].cc[1] == s[i + 1])
            want = iban_len[k].len;
    if (!want)
        return 0;
    char c[40];
    size_t nc = 0, p = i;
    int spaced = -1; /* unknown, 0 compact, 1 groups of 4 */
    while (nc < want && p < n) {
        if (nc && nc % 4 == 0 && spaced != 0) {
            if (s[p] == ' ') {
                if (spaced < 0)
                    spaced = 1;
                p++;
                if (p >= n)
                    return 0;
            } else if (spaced == 1)
                return 0;
            else
                spaced = 0;
        }
        if (!is_upper(s[p]) && !is_digit(s[p]))
            return 0;
        c[nc++] = (char)s[p++];
    }
    if (nc < want || (p < n && is_word(s[p])))
        return 0;
    /* mod 97 of BBAN + country + check digits, letters as 10..35 */
    unsigned r = 0;
    for (size_t k = 0; k < nc; k++) {
        char ch = c[(k + 4) % nc];
        if (is_digit(ch))
            r = (r * 10 + (unsigned)(ch - '0')) % 97;
        else
            r = (r * 100 + (unsigned)(ch - 'A' + 10)) % 97;
    }
    return r == 1 ? p : 0;
}

/* ---- the filter ---------------------------------------------------------------------- */

/* Byte classes: T_START may start a number or IBAN token; T_SEP may come right before one
 * (not a word character, nor one of ".-+/@#&=%$\\" that join numbers and identifiers). */
enum { T_START = 1, T_SEP = 2 };
static unsigned char cls[256];

static void init_classes(void)
{
    for (int c = 0; c < 256; c++) {
        cls[c] = 0;
        if (is_digit(c) || is_upper(c) || c == '+' || c == '(')
            cls[c] |= T_START;
        if (!(is_word(c) || (c && strchr(".-+/@#&=%$\\", c))))
            cls[c] |= T_SEP;
    }
}

/* IPv6 addresses: found from their first ':' (at most 4 hex digits after the start). */
static void find_ipv6(struct pii *x, const unsigned char *s, size_t n)
{
    size_t from = 0;
    const unsigned char *a;
    while (from < n && (a = memchr(s + from, ':', n - from)) != NULL) {
        size_t c = (size_t)(a - s), k = c;
        while (k > from && c - k < 5 && is_hex(s[k - 1]))
            k--;
        size_t e = 0;
        int ok = c - k <= 4 && (k < c || (c + 1 < n && s[c + 1] == ':'));
        if (ok && k > 0 && (!(cls[s[k - 1]] & T_SEP) || s[k - 1] == ':'))
            ok = 0;
        if (ok)
            e = scan_ipv6(s, n, k);
        if (e) {
            push(&x->em, &x->nem, &x->emcap, k, e - k, K_IP);
            from = e;
        } else
            from = c + 1;
    }
}

/* Find the spans (sorted, not overlapping) in x->v. */
static void pii_scan(struct pii *x, const unsigned char *s, size_t n)
{
    x->n = x->nem = 0;
    /* pre-pass: e-mails from their '@', then IPv6 from their ':', merged into x->em */
    if (x->on[K_EMAIL]) {
        size_t last = 0;
        const unsigned char *a = s;
        while ((a = memchr(a, '@', n - (size_t)(a - s))) != NULL) {
            size_t off, len, at = (size_t)(a - s);
            if (scan_email(s, n, at, last, &off, &len)) {
                push(&x->em, &x->nem, &x->emcap, off, len, K_EMAIL);
                last = off + len;
                a = s + last;
            } else
                a++;
            if ((size_t)(a - s) >= n)
                break;
        }
    }
    if (x->on[K_IP]) {
        size_t nmail = x->nem;
        find_ipv6(x, s, n);
        if (nmail && x->nem > nmail) { /* merge the two sorted lists, e-mails win overlaps */
            size_t nv6 = x->nem - nmail, a = 0, b = nmail, m = 0;
            struct pii_span *t = sl_xmalloc(sl_mul_size(x->nem, sizeof(*t)));
            size_t end = 0;
            while (a < nmail || b < nmail + nv6) {
                struct pii_span *p =
                    (b >= nmail + nv6 || (a < nmail && x->em[a].off <= x->em[b].off)) ? &x->em[a++]
                                                                                      : &x->em[b++];
                if (m && p->off < end) {
                    if (p->kind == K_EMAIL && t[m - 1].kind == K_IP) { /* replace the address */
                        t[m - 1] = *p;
                        end = p->off + p->len;
                    }
                    continue;
                }
                t[m++] = *p;
                end = p->off + p->len;
            }
            memcpy(x->em, t, m * sizeof(*t));
            x->nem = m;
            free(t);
        }
    }
    size_t ei = 0;
    for (size_t i = 0; i < n;) {
        if (ei < x->nem && i >= x->em[ei].off) {
            if (x->n && x->v[x->n - 1].off + x->v[x->n - 1].len > x->em[ei].off) {
                ei++; /* inside the previous span */
                continue;
            }
            push(&x->v, &x->n, &x->cap, x->em[ei].off, x->em[ei].len, x->em[ei].kind);
            i = x->em[ei].off + x->em[ei].len;
            ei++;
            continue;
        }
        size_t lim = ei < x->nem ? x->em[ei].off : n; /* a match must end before the next one */
        /* the next token start: a T_START byte after a T_SEP one */
        unsigned prev = i ? cls[s[i - 1]] : T_SEP;
        size_t j = i;
        while (j < lim) {
            unsigned k = cls[s[j]];
            if ((prev >> 1) & k & 1)
                break;
            prev = k;
            j++;
        }
        if (j >= lim) {
            i = lim;
            continue;
        }
        i = j;
        int c = s[i];
        size_t e = 0;
        int kind = -1;
        if (is_upper(c)) {
            if (x->on[K_IBAN] && (e = scan_iban(s, n, i)))
                kind = K_IBAN;
        } else if (x->on[K_IP] && is_digit(c) && (e = scan_ipv4(x, s, n, i)))
            kind = K_IP;
        else if ((is_digit(c) || (i + 1 < n && is_digit(s[i + 1]))) &&
                 (x->on[K_PHONE] || x->on[K_CARD] || x->on[K_SSN]))
            e = scan_number(x, s, n, i, &kind);
        if (e && kind >= 0 && e <= lim) {
            push(&x->v, &x->n, &x->cap, i, e - i, kind);
            i = e;
        } else
            i++;
    }
}

static int pii_apply(struct sl_filter *f, struct sl_fctx *c, struct sl_filter_result *r)
{
    struct pii *x = f->state;
    const unsigned char *s = (const unsigned char *)c->text;
    size_t n = c->len;
    r->keep = 1;
    pii_scan(x, s, n);
    for (int k = 0; k < NKIND; k++)
        x->counts[k].n = 0;
    r->score = (double)x->n;
    r->counts = x->counts;
    r->ncounts = NKIND;
    if (!x->n)
        return 0;
    /* spans for --annotate: [kind, start, end, original] with code-point offsets */
    sl_buf_reset(&x->spans);
    sl_buf_putc(&x->spans, '[');
    size_t cp = 0, at = 0;
    for (size_t k = 0; k < x->n; k++) {
        const struct pii_span *sp = &x->v[k];
        for (; at < sp->off; at++)
            cp += (s[at] & 0xC0) != 0x80;
        size_t cps = cp;
        for (; at < sp->off + sp->len; at++)
            cp += (s[at] & 0xC0) != 0x80;
        if (k)
            sl_buf_putc(&x->spans, ',');
        sl_buf_printf(&x->spans, "[\"%s\",%zu,%zu,", kind_names[sp->kind], cps, cp);
        sl_buf_json_str(&x->spans, (const char *)s + sp->off, sp->len);
        sl_buf_putc(&x->spans, ']');
        x->counts[sp->kind].n++;
    }
    sl_buf_putc(&x->spans, ']');
    r->spans_json = x->spans.data;
    r->spans_len = x->spans.len;
    sl_buf_reset(&x->out);
    size_t prev = 0;
    for (size_t k = 0; k < x->n; k++) {
        sl_buf_append(&x->out, (const char *)s + prev, x->v[k].off - prev);
        sl_buf_append(&x->out, x->ph[x->v[k].kind], x->phlen[x->v[k].kind]);
        prev = x->v[k].off + x->v[k].len;
    }
    sl_buf_append(&x->out, (const char *)s + prev, n - prev);
    sl_fctx_set_text(c, x->out.data, x->out.len);
    return 0;
}

static void pii_release(struct sl_filter *f)
{
    struct pii *x = f->state;
    if (!x)
        return;
    free(x->v);
    free(x->em);
    sl_buf_release(&x->out);
    sl_buf_release(&x->spans);
    free(x);
}

int sl_filter_build_pii(struct sl_filter *f, struct sl_cfg *p, const struct sl_filter_env *env)
{
    struct pii *x = sl_xcalloc(1, sizeof(*x));
    f->state = x;
    f->apply = pii_apply;
    f->release = pii_release;
    f->modifies = 1;
    (void)env;
    init_classes(); /* the same values every time */
    const char **kinds = NULL;
    size_t nk = 0;
    int rc = 0;
    if (sl_cfg_child(p, "kinds"))
        rc = sl_cfg_strs(p, "kinds", &kinds, &nk);
    else
        for (int k = 0; k < NKIND; k++)
            x->on[k] = 1;
    for (size_t i = 0; i < nk && !rc; i++) {
        int k = 0;
        while (k < NKIND && strcmp(kinds[i], kind_names[k]))
            k++;
        if (k == NKIND)
            rc = sl_err_set(
                SL_ERR_CONFIG,
                "%s: pii: unknown kind '%s'\nhint: kinds are email, ip, phone, card, ssn, iban",
                sl_cfg_where(sl_cfg_child(p, "kinds")), kinds[i]);
        else
            x->on[k] = 1;
    }
    free(kinds);
    for (int k = 0; k < NKIND && !rc; k++) {
        char path[64];
        snprintf(path, sizeof(path), "placeholders.%s", kind_names[k]);
        rc = sl_cfg_str(p, path, kind_default[k], &x->ph[k]);
        if (!rc)
            x->phlen[k] = strlen(x->ph[k]);
        x->counts[k].name = kind_names[k];
    }
    if (!rc)
        rc = sl_cfg_bool(p, "public_ips_only", 0, &x->public_only);
    return rc;
}

const char *sl_pii_kind_name(int kind)
{
    return kind >= 0 && kind < NKIND ? kind_names[kind] : NULL;
}

size_t sl_pii_scan(struct sl_filter *f, const char *text, size_t n, const struct sl_pii_match **out)
{
    struct pii *x = f->state;
    pii_scan(x, (const unsigned char *)text, n);
    *out = x->v;
    return x->n;
}
