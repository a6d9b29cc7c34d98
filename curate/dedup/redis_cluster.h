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
 * Key slots, redirects, CLUSTER SLOTS replies and batches (the parts that need no
 * connection) are in redis_slots.c; the rest in redis_cluster.c.
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
 * host means "the node that answered" (default_host). The replicas listed are nodes too
 * (they own no slot). */
struct rc_topology {
    struct rc_topo_node {
        char host[256];
        int port;
        int replicas;   /* replicas listed for this master */
        int replica_of; /* a replica: its master's index; a master: -1 */
    } *nodes;
    size_t n;
    int16_t owner[RC_SLOTS]; /* index into nodes, -1: unassigned */
};
/* 0 or SL_ERR_FORMAT (message says what is wrong). Caller frees t->nodes. */
int redis_parse_slots(const struct redisReply *r, const char *default_host, struct rc_topology *t);

/* One command of a batch. argv strings are the caller's and must stay valid during
 * redis_cluster_exec; argv[1] is the key (rc_batch_add_keyed: argv[key_arg]). */
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
/* A command whose key is argv[key_arg] (EVAL script 1 KEY ...: key_arg 3). */
void rc_batch_add_keyed(struct rc_batch *b, int argc, const char **argv, const size_t *len,
                        int key_arg);
void rc_batch_reset(struct rc_batch *b);
void rc_batch_release(struct rc_batch *b);

struct redis_cluster_stats {
    uint64_t commands, pipelines, moved, ask, reconnects, retries, refreshes;
};

struct redis_cluster;

/* Connect to the cluster through any of the seed nodes ("host:port,host:port") and load
 * the slot map. Errors: no seed reachable (naming each and why), SL_ERR_USAGE when a node
 * refuses the password or wants one ("authentication failed on redis node 'HOST:PORT'";
 * the password itself is never part of a message), not a cluster, slots without a master
 * ("N of 16384 slots are not served"). */
int redis_cluster_open(struct redis_cluster **out, const char *seeds, const char *password,
                       unsigned pipeline, double timeout_s);
void redis_cluster_free(struct redis_cluster *rc);

/* Run every command of the batch; on success each c[i].reply holds its (non-error) reply
 * and c[i].node the node that gave it. SL_ERR_USAGE: authentication failed (NOAUTH,
 * WRONGPASS); a node that is full (OOM) is an error naming it. */
int redis_cluster_exec(struct redis_cluster *rc, struct rc_batch *b);

/* Fetch the slot map again (after a node failed): 0, SL_ERR_NET (no node answered),
 * SL_ERR_USAGE (authentication) or SL_ERR_CONFIG (not a cluster). */
int redis_cluster_refresh(struct redis_cluster *rc);

/* The nodes met so far (seeds, masters and replicas of the slot map, redirect targets),
 * by index 0..redis_cluster_nodes()-1: "host:port", and whether it serves slots in the
 * current slot map (a master). */
size_t redis_cluster_nodes(const struct redis_cluster *rc);
const char *redis_cluster_node_name(const struct redis_cluster *rc, size_t i);
int redis_cluster_node_serves(const struct redis_cluster *rc, size_t i);

/* One command to node i, connecting first: 0 with its reply in *out (an error reply is a
 * reply; the caller frees it with freeReplyObject), SL_ERR_NET when the node does not
 * answer within the timeout (the message names it and why; the connection is dropped),
 * SL_ERR_USAGE when it refuses the password. */
int redis_cluster_node_command(struct redis_cluster *rc, size_t i, int argc, const char **argv,
                               const size_t *len, struct redisReply **out);

const struct redis_cluster_stats *redis_cluster_stats(const struct redis_cluster *rc);
/* Number of master nodes in the current slot map. */
size_t redis_cluster_masters(const struct redis_cluster *rc);

/* The masters (HOST:PORT, comma separated; "" when none) that had no replica with a
 * finished first sync when the cluster was opened: if one of them fails, its slots stay
 * down (no failover), and a run that needs them stops. */
const char *redis_cluster_unsynced(const struct redis_cluster *rc);

#endif
