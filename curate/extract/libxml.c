/* Loading libxml2 (libxml.h). */
#include "curate/extract/libxml.h"

#include "core/dl.h"
#include "core/err.h"

#include <pthread.h>
#include <stdio.h>

struct sl_libxml sl_xml;

static void *lib;
static char load_error[512];
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* A row of load's table: each field of sl_xml is xmlFIELD (FIELD for the html functions,
 * __xmlFIELD for the accessors of libxml2's per-thread globals). */
/* clang-format off */
#define SYM(f)  { "xml" #f, (void **)&sl_xml.f }
#define HSYM(f) { #f, (void **)&sl_xml.f }
#define GSYM(f) { "__xml" #f, (void **)&sl_xml.f##_ }
/* clang-format on */

static void load(void)
{
    static const char *const names[] = { "libxml2.so.2" };
    const struct sl_dl_sym syms[] = {
        SYM(InitParser),
        SYM(Free),
        GSYM(GenericError),
        GSYM(GenericErrorContext),
        SYM(SetGenericErrorFunc),
        SYM(ReaderForIO),
        SYM(TextReaderSetStructuredErrorHandler),
        SYM(TextReaderRead),
        SYM(TextReaderNodeType),
        SYM(TextReaderDepth),
        SYM(TextReaderIsEmptyElement),
        SYM(TextReaderConstLocalName),
        SYM(TextReaderConstValue),
        SYM(TextReaderGetAttribute),
        SYM(FreeTextReader),
        HSYM(htmlCreatePushParserCtxt),
        HSYM(htmlCtxtUseOptions),
        HSYM(htmlParseChunk),
        HSYM(htmlFreeParserCtxt),
        HSYM(htmlEntityLookup),
    };
#undef SYM
#undef HSYM
#undef GSYM
    if (sl_dl_load(&lib, names, sizeof(names) / sizeof(names[0]), syms,
                   sizeof(syms) / sizeof(syms[0]),
                   "extracting HTML and Wikipedia needs libxml2 (Debian package libxml2)",
                   SL_ERR_UNSUPPORTED)) {
        snprintf(load_error, sizeof(load_error), "%s", sl_err_msg());
        sl_err_clear();
        return;
    }
    sl_xml.InitParser(); /* once, before any thread parses */
}

int sl_libxml_load(void)
{
    pthread_once(&once, load);
    return lib ? 0 : sl_err_set(SL_ERR_UNSUPPORTED, "%s", load_error);
}
