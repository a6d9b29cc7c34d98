/* libxml2, loaded when the first HTML page or MediaWiki export is parsed instead of linked
 * (core/dl.h). Linked, it and ICU, which it brings, were loaded by every sluice command at
 * start-up, though only extraction uses them; with libarchive (extract_arxiv.c, which links
 * libxml2 too) that was a fifth of each command's start-up (sluice --version 12.1 -> 9.5 ms
 * of CPU, medians of 40). Call the functions as sl_xml.NAME (NAME: the function without its
 * xml prefix; the html ones keep theirs) after sl_libxml_load() returned 0; xmlFree is
 * (*sl_xml.Free), xmlGenericError and its context *sl_xml.GenericError_() and
 * *sl_xml.GenericErrorContext_(). */
#ifndef SL_CURATE_EXTRACT_LIBXML_H
#define SL_CURATE_EXTRACT_LIBXML_H

#include <libxml/HTMLparser.h>
#include <libxml/parser.h>
#include <libxml/xmlreader.h>

struct sl_libxml {
    void (*InitParser)(void);
    xmlFreeFunc *Free; /* libxml2's variable xmlFree: the function that frees its strings */
    xmlGenericErrorFunc *(*GenericError_)(void);
    void **(*GenericErrorContext_)(void);
    void (*SetGenericErrorFunc)(void *ctx, xmlGenericErrorFunc handler);
    /* the MediaWiki export reader */
    xmlTextReaderPtr (*ReaderForIO)(xmlInputReadCallback ioread, xmlInputCloseCallback ioclose,
                                    void *ioctx, const char *URL, const char *encoding,
                                    int options);
    void (*TextReaderSetStructuredErrorHandler)(xmlTextReaderPtr reader, xmlStructuredErrorFunc f,
                                                void *arg);
    int (*TextReaderRead)(xmlTextReaderPtr reader);
    int (*TextReaderNodeType)(xmlTextReaderPtr reader);
    int (*TextReaderDepth)(xmlTextReaderPtr reader);
    int (*TextReaderIsEmptyElement)(xmlTextReaderPtr reader);
    const xmlChar *(*TextReaderConstLocalName)(xmlTextReaderPtr reader);
    const xmlChar *(*TextReaderConstValue)(xmlTextReaderPtr reader);
    xmlChar *(*TextReaderGetAttribute)(xmlTextReaderPtr reader, const xmlChar *name);
    void (*FreeTextReader)(xmlTextReaderPtr reader);
    /* the HTML parser */
    htmlParserCtxtPtr (*htmlCreatePushParserCtxt)(htmlSAXHandlerPtr sax, void *user_data,
                                                  const char *chunk, int size, const char *filename,
                                                  xmlCharEncoding enc);
    int (*htmlCtxtUseOptions)(htmlParserCtxtPtr ctxt, int options);
    int (*htmlParseChunk)(htmlParserCtxtPtr ctxt, const char *chunk, int size, int terminate);
    void (*htmlFreeParserCtxt)(htmlParserCtxtPtr ctxt);
    const htmlEntityDesc *(*htmlEntityLookup)(const xmlChar *name);
};

extern struct sl_libxml sl_xml;

/* Load libxml2 and initialise its parser, once for the process (safe from any thread): 0,
 * or SL_ERR_UNSUPPORTED with the reason. */
int sl_libxml_load(void);

#endif
