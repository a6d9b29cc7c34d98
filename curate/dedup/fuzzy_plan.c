/* The memory a fuzzy dedup run will need (curate/dedup/fuzzy_plan.h). */
#include "curate/dedup/fuzzy_plan.h"

#include "core/err.h"
#include "core/inputs.h"
#include "core/stream.h"
#include "curate/dedup/redis_cluster.h"

#include <hiredis/hiredis.h>
#include <stdlib.h>
#include <string.h>

/* Bands whose band records a round of the memory backend holds (fuzzy_pairs.c). */
#define PLAN_BANDS_PER_ROUND 4
/* sizeof(struct lsh_rec) and of its destination rank (int) */
#define PLAN_REC_BYTES  24
#define PLAN_DEST_BYTES 4
/* The most that sl_world_alltoallv (core/world_mpi.c) packs into one round's send or
 * receive buffer: 1 GiB / P per pair of ranks. */
#define PLAN_A2A_MAX (1ull << 30)
/* Bytes of a Redis key's name beyond the prefix: ":b" + band (two digits) + ":" + 16 hex
 * digits (a bucket), ":s:{" + a slot's tag (up to 7) + "}" (a slot marker). */
#define PLAN_BUCKET_SUFFIX (2 + 2 + 1 + 16)
#define PLAN_MARKER_SUFFIX (4 + 7 + 1)
/* A slot marker: its dictEntry (class 48) and table slot (16 while rehashing); the value
 * "1" is Redis's shared integer object. */
#define PLAN_MARKER_BYTES (48 + 16)
/* The read buffer of the document counter. */
#define PLAN_READ_BYTES (1u << 20)

uint64_t dd_plan_redis_name_bytes(size_t key_len)
{
    uint64_t n = 3 + (uint64_t)key_len + 1; /* sdshdr8, the name, its NUL */
    if (n <= 8)
        return 8;
    if (n <= 128)
        return (n + 15) & ~(uint64_t)15;
    /* above 128 bytes, four classes per doubling: 2^k < n <= 2^(k+1) in steps of 2^(k-2) */
    unsigned k = 63 - (unsigned)__builtin_clzll(n - 1);
    uint64_t step = 1ull << (k - 2);
    return (n + step - 1) / step * step;
}

void dd_plan_memory(const struct dd_plan_in *in, struct dd_plan *out)
{
    memset(out, 0, sizeof(*out));
    uint64_t d = in->docs_rank;
    uint64_t f = in->zstd_frame;
    out->base = in->base_bytes + DD_PLAN_READ_BYTES +
                (f < DD_PLAN_HOLD_MAX ? f : DD_PLAN_HOLD_MAX) +
                (f < DD_PLAN_WINDOW_MAX ? f : DD_PLAN_WINDOW_MAX);
    out->sigs = d * 8 * ((uint64_t)in->bands + 1);
    if (in->redis) {
        uint64_t batch = d < DD_PLAN_BATCH_DOCS ? d : DD_PLAN_BATCH_DOCS;
        uint64_t per_cmd = in->prefix_len + 32 + 8 + DD_PLAN_CMD_BYTES;
        out->work = batch * in->bands * per_cmd;
    } else {
        unsigned round = in->bands < PLAN_BANDS_PER_ROUND ? in->bands : PLAN_BANDS_PER_ROUND;
        uint64_t recs = d * round;
        out->work = recs * (PLAN_REC_BYTES + PLAN_DEST_BYTES + PLAN_REC_BYTES);
        if (in->ranks > 1) {
            /* dd_shuffle's send buffer, and sl_world_alltoallv's packed send and receive
             * buffers of a round (each at most PLAN_A2A_MAX) */
            uint64_t packed =
                recs * PLAN_REC_BYTES < PLAN_A2A_MAX ? recs * PLAN_REC_BYTES : PLAN_A2A_MAX;
            out->work += recs * PLAN_REC_BYTES + 2 * packed;
        }
    }
    out->pairs = d * DD_PLAN_PAIR_BYTES;
    out->pass1 = out->base + out->sigs + out->work + out->pairs;
    out->output = out->base + DD_PLAN_WRITE_BYTES + out->sigs + out->pairs;
    out->rank_peak = out->pass1 > out->output ? out->pass1 : out->output;
    if (!in->redis || !in->masters)
        return;
    uint64_t m = in->masters;
    uint64_t buckets = (in->docs * in->bands + m - 1) / m;
    uint64_t markers = (RC_SLOTS + m - 1) / m;
    out->node_keys = buckets + markers;
    out->node_buckets = buckets * (DD_PLAN_REDIS_KEY_BYTES +
                                   dd_plan_redis_name_bytes(in->prefix_len + PLAN_BUCKET_SUFFIX));
    out->node_markers = markers * (PLAN_MARKER_BYTES +
                                   dd_plan_redis_name_bytes(in->prefix_len + PLAN_MARKER_SUFFIX));
    out->node_peak = in->node_base + out->node_buckets + out->node_markers;
}

/* The lines of one input. */
static int count_one(const struct sl_input *in, char *buf, uint64_t *lines, uint64_t *bytes)
{
    struct sl_reader *r = NULL;
    int rc = sl_input_reader(&r, in, NULL);
    uint64_t n = 0;
    char last = '\n';
    *bytes = 0;
    while (!rc) {
        ssize_t got = sl_reader_read(r, buf, PLAN_READ_BYTES);
        if (got < 0)
            rc = (int)got;
        if (got <= 0)
            break;
        for (const char *p = buf; (p = memchr(p, '\n', (size_t)(buf + got - p))) != NULL; p++)
            n++;
        last = buf[got - 1];
        *bytes += (uint64_t)got;
    }
    if (r)
        sl_reader_close(r);
    *lines = n + (last != '\n');
    return rc;
}

int dd_plan_count_docs(const struct sl_inputs *in, uint64_t *docs, uint64_t *bytes)
{
    static char buf[PLAN_READ_BYTES];
    int rc = 0;
    for (size_t i = 0; i < in->n && !rc; i++)
        rc = count_one(&in->v[i], buf, &docs[i], &bytes[i]);
    return rc;
}

/* used_memory of node i into *used. */
static int node_used(struct redis_cluster *rc, size_t i, uint64_t *used)
{
    const char *argv[2] = { "INFO", "memory" };
    size_t len[2] = { 4, 6 };
    redisReply *r = NULL;
    int rc_ = redis_cluster_node_command(rc, i, 2, argv, len, &r);
    if (rc_)
        return rc_;
    const char *name = redis_cluster_node_name(rc, i);
    const char *at = r->type == REDIS_REPLY_STRING ? strstr(r->str, "used_memory:") : NULL;
    if (at)
        *used = strtoull(at + strlen("used_memory:"), NULL, 10);
    else
        rc_ = sl_err_set(SL_ERR_UNSUPPORTED,
                         "redis node '%s' gives no used_memory in INFO memory\nhint: allow "
                         "INFO for this user",
                         name);
    freeReplyObject(r);
    return rc_;
}

int dd_plan_redis(const char *seeds, const char *password, double timeout_s, unsigned *masters,
                  uint64_t *used_max)
{
    struct redis_cluster *rc = NULL;
    /* one command at a time: the pipeline length does not matter */
    int rc_ = redis_cluster_open(&rc, seeds, password, 1, timeout_s);
    *masters = 0;
    *used_max = 0;
    for (size_t i = 0; !rc_ && i < redis_cluster_nodes(rc); i++) {
        uint64_t used = 0;
        if (!redis_cluster_node_serves(rc, i))
            continue;
        rc_ = node_used(rc, i, &used);
        if (used > *used_max)
            *used_max = used;
    }
    if (!rc_)
        *masters = (unsigned)redis_cluster_masters(rc);
    if (rc)
        redis_cluster_free(rc);
    return rc_;
}
