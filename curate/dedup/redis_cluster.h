/* struct redis_cluster: a Redis Cluster client on top of hiredis' single-node connections.
 *
 * It keeps the slot map (CRC16 of the key, or of its {hash tag}, mod 16384) learnt from
 * CLUSTER SLOTS, sends a batch of commands to their nodes as one pipeline per node (all
 * nodes written before any is read), and follows MOVED (the slot map is updated) and ASK
 * (ASKING, then the command, on the named node) redirects. Connections are made on demand,
 * authenticated with AUTH when a password is given, and remade with exponential backoff;
 * after a connection error the slot map is fetched again, so a replica promoted by a
 * failover is found. TRYAGAIN, CLUSTERDOWN, LOADING and MASTERDOWN are waited out. All
 * waiting is bounded by `timeout_s`: past it, the batch fails with a message naming the
 * node and what it said. Replies are read with poll() against a deadline (no reply waits
 * longer than `timeout_s`), and a reply may not announce or buffer more than 256 MiB: a
 * node that sends a huge bulk length is an error at once, not a long wait or a huge buffer.
 *
 * Writes are made durable before a batch counts as done: when the node has replicas, the
 * pipeline ends with WAIT 1 and a batch whose WAIT saw no replica is sent again. Batches
 * must therefore be idempotent (ZADD, DEL, reads).
 *
 * Library code: never prints; errors come back as enum sl_err with a message.
 */
#ifndef SL_DEDUP_REDIS_CLUSTER_H
#define SL_DEDUP_REDIS_CLUSTER_H

#include <stddef.h>
#include <stdint.h>

struct redisReply;
struct redisContext;

#define RC_SLOTS 16384
#define RC_MAX_ARGS 6

/* Key hash slot: CRC16-CCITT (XMODEM) of the key, or of the first non-empty {tag}. */
unsigned redis_key_slot(const char *key, size_t len);
uint16_t redis_crc16(const char *buf, size_t len);

/* Parse "MOVED 3999 127.0.0.1:6381" / "ASK ..." error text. Returns 1 (moved), 2 (ask) or
 * 0 (not a redirect); host gets at most hostn-1 bytes. */
int redis_parse_redirect(const char *err, size_t len, unsigned *slot, char *host, size_t hostn,
                         int *port);

/* The slot map from a CLUSTER SLOTS reply. Nodes are identified by "host:port"; an empty
 * host means "the node that answered" (default_host). */
struct rc_topology {
    struct rc_topo_node {
        char host[256];
        int port;
        int replicas; /* replicas listed for this master */
    } *nodes;
    size_t n;
    int16_t owner[RC_SLOTS]; /* index into nodes, -1: unassigned */
};
/* 0 or SL_ERR_FORMAT (message says what is wrong). Caller frees t->nodes. */
int redis_parse_slots(const struct redisReply *r, const char *default_host, struct rc_topology *t);

/* One command of a batch. argv strings are the caller's and must stay valid during
 * redis_cluster_exec; argv[1] is the key. */
struct rc_cmd {
    int argc;
    const char *argv[RC_MAX_ARGS];
    size_t len[RC_MAX_ARGS];
    unsigned slot;
    struct redisReply *reply; /* set by exec; freed by rc_batch_reset/release */
    int node, ask_node, redirects, done;
};

struct rc_batch {
    struct rc_cmd *c;
    size_t n, cap;
    int writes; /* the commands write: end each node's pipeline with WAIT */
};

void rc_batch_add(struct rc_batch *b, int argc, const char **argv, const size_t *len);
void rc_batch_reset(struct rc_batch *b);
void rc_batch_release(struct rc_batch *b);

struct redis_cluster_stats {
    uint64_t commands, pipelines, moved, ask, reconnects, retries, refreshes;
};

struct redis_cluster;

/* Connect to the cluster through any of the seed nodes ("host:port,host:port") and load
 * the slot map. Errors: no seed reachable (naming each and why), authentication refused,
 * not a cluster, slots without a master ("N of 16384 slots are not served"). */
int redis_cluster_open(struct redis_cluster **out, const char *seeds, const char *password,
                       unsigned pipeline, double timeout_s);
void redis_cluster_free(struct redis_cluster *rc);

/* Run every command of the batch; on success each c[i].reply holds its (non-error) reply. */
int redis_cluster_exec(struct redis_cluster *rc, struct rc_batch *b);

const struct redis_cluster_stats *redis_cluster_stats(const struct redis_cluster *rc);
/* Number of master nodes in the current slot map. */
size_t redis_cluster_masters(const struct redis_cluster *rc);

/* The masters (HOST:PORT, comma separated; "" when none) that had no replica with a
 * finished first sync when the cluster was opened: if one of them fails, its slots stay
 * down (no failover), and a run that needs them stops. */
const char *redis_cluster_unsynced(const struct redis_cluster *rc);

#endif
