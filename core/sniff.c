/* Format sniffing for hints: the first 8 KB of a (possibly compressed) file. */
#include "core/sniff.h"

#include "core/stream.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

static int has(const char *buf, size_t n, const char *needle)
{
    size_t l = strlen(needle);
    for (size_t i = 0; i + l <= n; i++)
        if (!strncasecmp(buf + i, needle, l))
            return 1;
    return 0;
}

const char *sl_sniff_format(const char *path)
{
    struct sl_reader *r = NULL;
    struct sl_reader_opts ro;
    memset(&ro, 0, sizeof(ro));
    ro.max_output = 1u << 20;
    char buf[8192];
    size_t n = 0;
    if (sl_reader_open(&r, path, &ro) != 0)
        return "";
    while (n < sizeof(buf)) {
        ssize_t k = sl_reader_read(r, buf + n, sizeof(buf) - n);
        if (k <= 0)
            break;
        n += (size_t)k;
    }
    sl_reader_close(r);
    if (n == 0)
        return "";
    if (n > 262 && !memcmp(buf + 257, "ustar", 5))
        return "tar";
    if (n >= 4 && !memcmp(buf, "PAR1", 4))
        return "parquet";
    size_t i = 0;
    if (n >= 3 && !memcmp(buf, "\xEF\xBB\xBF", 3))
        i = 3;
    while (i < n && isspace((unsigned char)buf[i]))
        i++;
    const char *p = buf + i;
    size_t m = n - i;
    if (m >= 6 && !memcmp(p, "WARC/", 5))
        return has(p, m, "WARC-Type: conversion") ? "wet" : "warc";
    if (m >= 10 && !memcmp(p, "filedesc:/", 10))
        return "arc";
    if (m && p[0] == '{')
        return "jsonl";
    if (m && p[0] == '[')
        return "json";
    if (has(p, m, "<mediawiki"))
        return "wiki";
    if (has(p, m, "<html") || has(p, m, "<!doctype html") || has(p, m, "<body"))
        return "html";
    if (m >= 5 && !memcmp(p, "<?xml", 5))
        return "xml";
    size_t bad = 0;
    for (size_t j = 0; j < n; j++) {
        unsigned char c = (unsigned char)buf[j];
        bad += c == 0 || (c < 32 && c != '\n' && c != '\r' && c != '\t' && c != '\f');
    }
    return bad * 100 > n ? "binary" : "text";
}

const char *sl_sniff_describe(const char *kind)
{
    static const char *const names[][2] = {
        { "warc", "a WARC file" },
        { "wet", "a WET file" },
        { "arc", "an ARC file" },
        { "jsonl", "JSONL" },
        { "json", "a JSON array" },
        { "html", "an HTML page" },
        { "wiki", "a MediaWiki XML export" },
        { "xml", "XML" },
        { "tar", "a tar archive" },
        { "parquet", "a Parquet file" },
        { "text", "plain text" },
        { "binary", "binary data" },
    };
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (!strcmp(names[i][0], kind))
            return names[i][1];
    return "an unreadable or empty file";
}
