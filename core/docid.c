/* Document ids for merged corpora: --id-prefix and --reassign-ids (see docid.h). */
#include "core/docid.h"

#include "core/buf.h"
#include "core/doc.h"

#include <string.h>

int sl_docid_active(const struct sl_docid_opts *o)
{
    return o && (o->prefix || o->reassign);
}

int sl_docid_apply(const struct sl_docid_opts *o, struct sl_doc *doc, const char *shard,
                   uint64_t index)
{
    if (!sl_docid_active(o))
        return 0;
    struct sl_buf id = SL_BUF_INIT;
    if (o->prefix) {
        sl_buf_puts(&id, o->prefix);
        sl_buf_putc(&id, ':');
    }
    size_t before = id.len;
    int have = 0;
    if (!o->reassign) {
        if (sl_doc_get_str(doc, "id", &id) == 0) {
            have = 1;
        } else {
            /* a number or another JSON value: its text */
            size_t len = 0;
            const char *raw = sl_doc_get_raw(doc, "id", &len);
            if (raw && !(len == 4 && !memcmp(raw, "null", 4))) {
                id.len = before;
                sl_buf_append(&id, raw, len);
                have = 1;
            }
        }
    }
    if (!have) {
        id.len = before;
        size_t stem = strcspn(shard, ".");
        sl_buf_append(&id, shard, stem);
        sl_buf_printf(&id, ":%llu", (unsigned long long)index);
    }
    int rc = sl_doc_set_str(doc, "id", id.data ? id.data : "", id.len);
    sl_buf_release(&id);
    return rc;
}
