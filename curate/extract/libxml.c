/* Loading libxml2 (libxml.h). */
#include "curate/extract/libxml.h"

#include "core/dl.h"
#include "core/err.h"

#include <pthread.h>
#include <stdio.h>

struct sl_libxml sl_xml;

static void *lib;
static struct sl_dl_once load_once = SL_DL_ONCE_INIT;
static pthread_once_t init_once = PTHREAD_ONCE_INIT;

/* A row of load's table: each field of sl_xml is xmlFIELD (FIELD for the html functions,
 * __xmlFIELD for the accessors of libxml2's per-thread globals). */
/* clang-format off */
#define SYM(f)  { "xml" #f, (void **)&sl_xml.f }
#define HSYM(f) { #f, (void **)&sl_xml.f }
#define GSYM(f) { "__xml" #f, (void **)&sl_xml.f##_ }
/* clang-format on */

static void init_parser(void)
{
    sl_xml.InitParser();
}

int sl_libxml_load(void)
{
    /* static: this is called for every page and entity, after the first call only to learn
     * that the library is there */
    static const char *const names[] = { "libxml2.so.2" };
    static const struct sl_dl_sym syms[] = {
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
    int rc = sl_dl_load_once(&load_once, &lib, names, sizeof(names) / sizeof(names[0]), syms,
                             sizeof(syms) / sizeof(syms[0]),
                             "extracting HTML and Wikipedia needs libxml2 (Debian package libxml2)",
                             SL_ERR_UNSUPPORTED);
    if (!rc)
        pthread_once(&init_once, init_parser); /* once, before any thread parses */
    return rc;
}
