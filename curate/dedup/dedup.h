/* The dedup subcommands (curate/dedup/exact.c, fuzzy.c) and what they share. */
#ifndef SL_DEDUP_DEDUP_H
#define SL_DEDUP_DEDUP_H

#include <stddef.h>
#include <stdint.h>

struct sl_buf;
struct sl_doc;

/* The subcommands; argv is the whole command line, "dedup exact ..." (the manifest
 * records it), argv[1] the subcommand. */
int dedup_exact_main(int argc, const char **argv);
int dedup_fuzzy_main(int argc, const char **argv);

/* The value of member `key` of d into out (appended): strings decoded, other values as raw
 * JSON; "a.b.c" walks into nested objects. 0 or SL_ERR_NOTFOUND. */
int dedup_get_key(struct sl_doc *d, const char *key, struct sl_buf *out);

/* Print a usage error (message from sl_err_msg) and the synopsis; returns 2. */
int dedup_usage_error(const char *synopsis);

#endif
