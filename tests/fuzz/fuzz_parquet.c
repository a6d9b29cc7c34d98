/* Fuzz the Parquet reader: arbitrary bytes as a Parquet file, read through positional
 * reads from memory (the footer, then every row group's column chunks) and rendered as
 * JSON lines; each line the reader gives must be a JSON object that json-c parses. */
#include "core/buf.h"
#include "core/err.h"
#include "core/parquet.h"
#include "core/stream.h"

#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

struct mem {
    const uint8_t *p;
};

static int mem_read_at(void *ctx, uint64_t off, void *buf, size_t n)
{
    memcpy(buf, ((struct mem *)ctx)->p + off, n);
    return 0;
}

static void check_line(const char *line, size_t len)
{
    struct json_tokener *tok = json_tokener_new_ex(JSON_TOKENER_DEFAULT_DEPTH * 4);
    json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
    struct json_object *o = json_tokener_parse_ex(tok, line, (int)len);
    int deep = json_tokener_get_error(tok) == json_tokener_error_depth;
    /* strings keep the file's bytes: json-c stops at a NUL inside one */
    if ((!o && !deep && !memchr(line, '\0', len)) ||
        (o && !json_object_is_type(o, json_type_object)))
        abort(); /* the reader wrote a line that is not a JSON object */
    json_object_put(o);
    json_tokener_free(tok);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct mem m = { data };
    struct sl_pread pr = { size, mem_read_at, NULL, &m };
    struct sl_parquet *pq;
    if (sl_parquet_open(&pq, &pr, "fuzz") != 0)
        return 0;
    /* the split of its row groups covers them all, in order */
    size_t *b, k = sl_parquet_split(pq, 1024, &b);
    if (b[0] != 0 || b[k] != sl_parquet_row_groups(pq))
        abort();
    free(b);
    struct sl_reader_opts ro = { SL_CODEC_NONE, 1 << 24 };
    struct sl_reader *r;
    if (sl_reader_open_source(&r, sl_parquet_source(pq, 0, 0, NULL, "fuzz"), &ro) != 0)
        return 0;
    const char *line;
    size_t len;
    int rc;
    while ((rc = sl_reader_getline(r, &line, &len, 1 << 20)) != 0) {
        if (rc == 1)
            check_line(line, len);
        else if (rc != SL_ERR_TOOBIG)
            break;
    }
    sl_reader_close(r);
    return 0;
}
