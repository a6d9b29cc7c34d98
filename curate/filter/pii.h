/* The scanner of the pii filter (curate/filter/pii.c), for tests and benchmarks. */
#ifndef SL_FILTER_PII_H
#define SL_FILTER_PII_H

#include <stddef.h>

struct sl_filter;

/* One detected span: bytes [off, off + len) of the text, and its kind. */
struct sl_pii_match {
    size_t off, len;
    int kind;
};

/* "email", "ip", "phone", "card", "ssn", "iban" for kinds 0..5; NULL past the end. */
const char *sl_pii_kind_name(int kind);
/* The spans a built pii filter finds in text (sorted, disjoint; valid until the next
 * call on the filter). */
size_t sl_pii_scan(struct sl_filter *f, const char *text, size_t n,
                   const struct sl_pii_match **out);

#endif
