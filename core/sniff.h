/* What a file looks like, from its first few kilobytes (decompressed): to turn "0 records
 * read" into a hint that names the right format. */
#ifndef SL_SNIFF_H
#define SL_SNIFF_H

/* One of "warc", "wet", "arc", "jsonl", "json", "html", "wiki" (a MediaWiki XML export),
 * "xml", "tar", "parquet", "text" (printable text of another kind), "binary", or "" when
 * the file cannot be read or is empty. Static strings. */
const char *sl_sniff_format(const char *path);

/* A human name for a result of sl_sniff_format: "a WARC file", "plain text", ... */
const char *sl_sniff_describe(const char *kind);

#endif
