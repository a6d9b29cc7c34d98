/* Fuzz the Redis Cluster reply handling: arbitrary bytes through hiredis' RESP reader, each
 * reply through the CLUSTER SLOTS parser, and error and status texts through the
 * MOVED/ASK parser. Invariants: every slot owner is a listed node, redirects name a slot
 * below 16384 and a port in 1..65535. */
#include "curate/dedup/redis_cluster.h"

#include <hiredis/hiredis.h>
#include <stdlib.h>
#include <string.h>

static void check_redirect(const char *s, size_t n)
{
    unsigned slot;
    char host[64];
    int port;
    int k = redis_parse_redirect(s, n, &slot, host, sizeof(host), &port);
    if (k && (slot >= RC_SLOTS || port < 1 || port > 65535 || strlen(host) >= sizeof(host)))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    check_redirect((const char *)data, size);
    redisReader *r = redisReaderCreate();
    redisReaderFeed(r, (const char *)data, size);
    for (int i = 0; i < 64; i++) {
        void *reply = NULL;
        if (redisReaderGetReply(r, &reply) != REDIS_OK || !reply)
            break;
        redisReply *rp = reply;
        struct rc_topology t;
        if (redis_parse_slots(rp, "seed", &t) == 0) {
            for (int s = 0; s < RC_SLOTS; s++)
                if (t.owner[s] >= (int)t.n)
                    abort();
            for (size_t i = 0; i < t.n; i++) /* a replica names a master that is listed */
                if (t.nodes[i].replica_of >= (int)t.n || t.nodes[i].replica_of == (int)i)
                    abort();
        }
        free(t.nodes);
        if (rp->type == REDIS_REPLY_ERROR || rp->type == REDIS_REPLY_STATUS)
            check_redirect(rp->str, rp->len);
        freeReplyObject(rp);
    }
    redisReaderFree(r);
    return 0;
}
