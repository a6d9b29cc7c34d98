/* The generated Unicode class table (see tokenize/unicat.h). */
#include "tokenize/unicat.h"

#include "tokenize/unicat_table.h"

const char *unicat_unicode_version(void)
{
    return UNICAT_UNICODE_VERSION;
}
