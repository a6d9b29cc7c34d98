/* Redis Cluster client: slot map, per-node pipelines, redirects, failover waits
 * (see redis_cluster.h). */
#include "curate/dedup/redis_cluster.h"

#include "core/alloc.h"
#include "core/err.h"
#include "core/progress.h"

#include <errno.h>
#include <hiredis/hiredis.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- the cluster ---------------------------------------------------------------------------- */

struct rc_node {
    char host[256];
    int port;
    char name[264]; /* "host:port", for messages */
    int replicas;
    redisContext *ctx;
    char last_error[160];
};

struct redis_cluster {
    struct rc_node *nodes;
    size_t n;
    int16_t owner[RC_SLOTS];
    char *password;
    unsigned pipeline;
    double timeout_s;
    struct redis_cluster_stats st;
    char problem[512]; /* the last transient problem, for the final message */
    char unsynced[256]; /* masters that had no synced replica at the start */
};

static int node_index(struct redis_cluster *rc, const char *host, int port)
{
    for (size_t i = 0; i < rc->n; i++)
        if (rc->nodes[i].port == port && !strcmp(rc->nodes[i].host, host))
            return (int)i;
    rc->nodes = sl_xrealloc(rc->nodes, (rc->n + 1) * sizeof(*rc->nodes));
    memset(&rc->nodes[rc->n], 0, sizeof(rc->nodes[0]));
    snprintf(rc->nodes[rc->n].host, sizeof(rc->nodes[0].host), "%s", host);
    rc->nodes[rc->n].port = port;
    snprintf(rc->nodes[rc->n].name, sizeof(rc->nodes[0].name), "%s:%d", host, port);
    return (int)rc->n++;
}

static void node_close(struct rc_node *n)
{
    if (n->ctx)
        redisFree(n->ctx);
    n->ctx = NULL;
}

/* Replies are read against a deadline (the cluster's timeout), and a reply may not buffer
 * more than this: a node that announces a 2 GB bulk string and then sends it slowly, or
 * not at all, must neither hold the run past --redis-timeout nor fill the memory. Real
 * replies here are small (sorted-set ranges, CLUSTER SLOTS). */
#define RC_MAX_REPLY_BYTES (256u << 20)

/* One reply from a node by `deadline` (sl_now() seconds). 0 with *out set; SL_ERR_NET
 * when the connection broke or the deadline passed (n->last_error says which: transient);
 * SL_ERR_TOOBIG or SL_ERR_FORMAT for a reply no Redis sends (the message is set). */
static int node_reply(struct rc_node *n, void **out, double deadline)
{
    redisContext *c = n->ctx;
    *out = NULL;
    for (;;) {
        if (redisGetReplyFromReader(c, out) != REDIS_OK) {
            snprintf(n->last_error, sizeof(n->last_error), "%s", c->errstr);
            return sl_err_set(SL_ERR_FORMAT, "redis node %s:%d sent a malformed reply: %s", n->host,
                              n->port, c->errstr);
        }
        if (*out)
            return 0;
        redisReader *r = c->reader;
        size_t pending = r->len - r->pos;
        /* a bulk string waiting for its data: judge it by its announced length (the
         * reader has taken the '$' when the current task is a string) */
        int in_bulk = r->ridx >= 0 && r->rstack[r->ridx].type == REDIS_REPLY_STRING;
        if (pending > 1 && (in_bulk || r->buf[r->pos] == '$')) {
            long long want = 0;
            size_t i = r->pos + !in_bulk;
            while (i < r->len && r->buf[i] >= '0' && r->buf[i] <= '9' && want < LLONG_MAX / 10)
                want = want * 10 + (r->buf[i++] - '0');
            if (want > (long long)RC_MAX_REPLY_BYTES)
                return sl_err_set(SL_ERR_TOOBIG,
                                  "redis node %s:%d announced a bulk reply of %lld bytes (more "
                                  "than %u MiB)\nhint: is it a Redis server?",
                                  n->host, n->port, want, RC_MAX_REPLY_BYTES >> 20);
        }
        if (pending > RC_MAX_REPLY_BYTES)
            return sl_err_set(SL_ERR_TOOBIG,
                              "redis node %s:%d sent more than %u MiB without completing a "
                              "reply\nhint: is it a Redis server?",
                              n->host, n->port, RC_MAX_REPLY_BYTES >> 20);
        double left = deadline - sl_now();
        if (left <= 0) {
            snprintf(n->last_error, sizeof(n->last_error), "no complete reply in time");
            return SL_ERR_NET;
        }
        struct pollfd pf = { c->fd, POLLIN, 0 };
        int pr = poll(&pf, 1, left > 1 ? 1000 : (int)(left * 1000) + 1);
        if (pr < 0 && errno != EINTR) {
            snprintf(n->last_error, sizeof(n->last_error), "poll: %s", strerror(errno));
            return SL_ERR_NET;
        }
        if (pr > 0 && redisBufferRead(c) != REDIS_OK) {
            snprintf(n->last_error, sizeof(n->last_error), "%s",
                     c->errstr[0] ? c->errstr : "connection lost");
            return SL_ERR_NET;
        }
    }
}

/* Send what was appended to a node's connection. 0 or SL_ERR_NET. */
static int node_flush(struct rc_node *n)
{
    int done = 0;
    while (!done)
        if (redisBufferWrite(n->ctx, &done) != REDIS_OK) {
            snprintf(n->last_error, sizeof(n->last_error), "%s", n->ctx->errstr);
            return SL_ERR_NET;
        }
    return 0;
}

/* A reply that says the node wants a password, or another one. */
static int auth_reply(const char *s)
{
    return !strncmp(s, "NOAUTH", 6) || !strncmp(s, "WRONGPASS", 9);
}

/* The error of a node that refused to let us in (what: its answer). */
static int auth_error(const struct rc_node *n, const char *what)
{
    return sl_err_set(SL_ERR_USAGE,
                      "authentication failed on redis node '%s': %s\nhint: sluice reads the "
                      "password from the environment variable SLUICE_REDIS_PASSWORD",
                      n->name, what);
}

/* Connect (and authenticate) if not connected. 0, SL_ERR_NET (n->last_error says why) or
 * SL_ERR_USAGE (the password was refused: n->last_error has the answer). */
static int node_connect(struct redis_cluster *rc, struct rc_node *n)
{
    if (n->ctx)
        return 0;
    /* every wait is bounded by the cluster's timeout (--redis-timeout) */
    double t = rc->timeout_s < 2 ? rc->timeout_s : 2;
    struct timeval tv = { (time_t)t, (suseconds_t)((t - (double)(time_t)t) * 1e6) };
    redisContext *c = redisConnectWithTimeout(n->host, n->port, tv);
    if (!c || c->err) {
        snprintf(n->last_error, sizeof(n->last_error), "%s",
                 c ? c->errstr : "cannot allocate a connection");
        if (c)
            redisFree(c);
        return SL_ERR_NET;
    }
    t = rc->timeout_s < 15 ? rc->timeout_s : 15;
    struct timeval cmd = { (time_t)t, (suseconds_t)((t - (double)(time_t)t) * 1e6) };
    redisSetTimeout(c, cmd);
    n->ctx = c;
    if (rc->password) {
        void *rp = NULL;
        redisAppendCommand(c, "AUTH %s", rc->password);
        int k = node_flush(n);
        if (!k)
            k = node_reply(n, &rp, sl_now() + rc->timeout_s);
        redisReply *r = rp;
        if (k || r->type == REDIS_REPLY_ERROR) {
            if (!k)
                snprintf(n->last_error, sizeof(n->last_error), "AUTH refused: %s", r->str);
            else if (k != SL_ERR_NET)
                snprintf(n->last_error, sizeof(n->last_error), "%s", sl_err_msg());
            if (r)
                freeReplyObject(r);
            redisFree(c);
            n->ctx = NULL;
            /* a wrong password does not get better by waiting */
            return k == SL_ERR_NET ? SL_ERR_NET : SL_ERR_USAGE;
        }
        freeReplyObject(r);
    }
    rc->st.reconnects++;
    return 0;
}

static void apply_topology(struct redis_cluster *rc, const struct rc_topology *t)
{
    int16_t map[4096];
    for (size_t i = 0; i < t->n && i < 4096; i++) {
        map[i] = (int16_t)node_index(rc, t->nodes[i].host, t->nodes[i].port);
        rc->nodes[map[i]].replicas = t->nodes[i].replicas;
    }
    for (int s = 0; s < RC_SLOTS; s++)
        rc->owner[s] = t->owner[s] < 0 ? -1 : map[t->owner[s]];
}

static size_t unassigned(const struct redis_cluster *rc)
{
    size_t k = 0;
    for (int s = 0; s < RC_SLOTS; s++)
        k += rc->owner[s] < 0;
    return k;
}

/* Fetch CLUSTER SLOTS from the first node that answers. */
static int refresh(struct redis_cluster *rc)
{
    rc->st.refreshes++;
    int rc_last = SL_ERR_NET;
    for (size_t i = 0; i < rc->n; i++) {
        struct rc_node *n = &rc->nodes[i];
        int k = node_connect(rc, n);
        if (k == SL_ERR_USAGE)
            return auth_error(n, n->last_error);
        if (k)
            continue;
        void *rp = NULL;
        redisAppendCommand(n->ctx, "CLUSTER SLOTS");
        int k2 = node_flush(n);
        if (!k2)
            k2 = node_reply(n, &rp, sl_now() + rc->timeout_s);
        if (k2) {
            if (k2 != SL_ERR_NET)
                snprintf(n->last_error, sizeof(n->last_error), "%s", sl_err_msg());
            node_close(n);
            if (k2 != SL_ERR_NET)
                rc_last = k2;
            continue;
        }
        redisReply *r = rp;
        if (r->type == REDIS_REPLY_ERROR) {
            snprintf(n->last_error, sizeof(n->last_error), "%s", r->str);
            int nocluster = strstr(r->str, "cluster support disabled") != NULL;
            int noauth = auth_reply(r->str);
            freeReplyObject(r);
            if (noauth)
                return auth_error(n, n->last_error);
            if (nocluster)
                return sl_err_set(SL_ERR_CONFIG,
                                  "redis node %s:%d is not part of a cluster: %s\nhint: "
                                  "--backend redis needs a Redis Cluster (cluster-enabled yes)",
                                  n->host, n->port, n->last_error);
            continue;
        }
        struct rc_topology t;
        int prc = redis_parse_slots(r, n->host, &t);
        freeReplyObject(r);
        if (prc) {
            free(t.nodes);
            rc_last = sl_err_wrap(prc, "redis node %s:%d: ", n->host, n->port);
            continue;
        }
        apply_topology(rc, &t);
        free(t.nodes);
        return 0;
    }
    if (rc_last != SL_ERR_NET)
        return rc_last;
    struct {
        char b[1024];
    } msg;
    size_t len = 0;
    msg.b[0] = '\0';
    for (size_t i = 0; i < rc->n && len < sizeof(msg.b) - 1; i++)
        len += (size_t)snprintf(msg.b + len, sizeof(msg.b) - len, "%s%s:%d (%s)", i ? ", " : "",
                                rc->nodes[i].host, rc->nodes[i].port, rc->nodes[i].last_error);
    return sl_err_set(SL_ERR_NET, "cannot reach any Redis Cluster node: %s", msg.b);
}

/* Note in rc->unsynced the masters that have no replica whose first sync has finished
 * (INFO replication on the master: a "slaveN:" line with state=online): such a master's
 * failure takes its slots down instead of failing over. */
static void check_replicas(struct redis_cluster *rc)
{
    size_t len = 0;
    rc->unsynced[0] = '\0';
    for (size_t i = 0; i < rc->n; i++) {
        int master = 0;
        for (int s = 0; s < RC_SLOTS && !master; s++)
            master = rc->owner[s] == (int16_t)i;
        struct rc_node *n = &rc->nodes[i];
        if (!master || node_connect(rc, n))
            continue;
        redisReply *r = redisCommand(n->ctx, "INFO replication");
        int synced = r && r->type == REDIS_REPLY_STRING && r->str &&
                     strstr(r->str, "state=online") != NULL;
        if (r)
            freeReplyObject(r);
        if (!synced && len < sizeof(rc->unsynced) - 1)
            len += (size_t)snprintf(rc->unsynced + len, sizeof(rc->unsynced) - len, "%s%s:%d",
                                    len ? ", " : "", n->host, n->port);
    }
}

int redis_cluster_open(struct redis_cluster **out, const char *seeds, const char *password,
                       unsigned pipeline, double timeout_s)
{
    struct redis_cluster *rc = sl_xcalloc(1, sizeof(*rc));
    *out = NULL;
    rc->password = password ? sl_xstrdup(password) : NULL;
    rc->pipeline = pipeline ? pipeline : 1000;
    rc->timeout_s = timeout_s > 0 ? timeout_s : 60;
    for (int s = 0; s < RC_SLOTS; s++)
        rc->owner[s] = -1;
    const char *p = seeds;
    while (*p) {
        size_t len = strcspn(p, ",");
        char item[300];
        if (len == 0 || len >= sizeof(item)) {
            redis_cluster_free(rc);
            return sl_err_set(SL_ERR_USAGE, "bad --redis node list '%s'", seeds);
        }
        memcpy(item, p, len);
        item[len] = '\0';
        char *colon = strrchr(item, ':');
        char *end = NULL;
        long port = colon ? strtol(colon + 1, &end, 10) : 0;
        if (!colon || colon == item || !end || *end || port <= 0 || port > 65535) {
            redis_cluster_free(rc);
            return sl_err_set(SL_ERR_USAGE, "bad Redis node '%s'\nhint: write HOST:PORT", item);
        }
        *colon = '\0';
        node_index(rc, item, (int)port);
        p += len;
        if (*p == ',')
            p++;
    }
    if (!rc->n) {
        redis_cluster_free(rc);
        return sl_err_set(SL_ERR_USAGE, "no Redis nodes given");
    }
    int r = refresh(rc);
    if (!r && unassigned(rc))
        r = sl_err_set(SL_ERR_CONFIG,
                       "the Redis Cluster does not serve every slot: %zu of %d slots have no "
                       "master\nhint: assign them (redis-cli --cluster fix HOST:PORT) or wait "
                       "for the cluster to finish forming",
                       unassigned(rc), RC_SLOTS);
    if (r) {
        redis_cluster_free(rc);
        return r;
    }
    check_replicas(rc);
    *out = rc;
    return 0;
}

const char *redis_cluster_unsynced(const struct redis_cluster *rc)
{
    return rc->unsynced;
}

void redis_cluster_free(struct redis_cluster *rc)
{
    if (!rc)
        return;
    for (size_t i = 0; i < rc->n; i++)
        node_close(&rc->nodes[i]);
    free(rc->nodes);
    free(rc->password);
    free(rc);
}

const struct redis_cluster_stats *redis_cluster_stats(const struct redis_cluster *rc)
{
    return &rc->st;
}

size_t redis_cluster_masters(const struct redis_cluster *rc)
{
    size_t k = 0;
    for (size_t i = 0; i < rc->n; i++) {
        int used = 0;
        for (int s = 0; s < RC_SLOTS && !used; s++)
            used = rc->owner[s] == (int16_t)i;
        k += used;
    }
    return k;
}

int redis_cluster_refresh(struct redis_cluster *rc)
{
    return refresh(rc);
}

size_t redis_cluster_nodes(const struct redis_cluster *rc)
{
    return rc->n;
}

const char *redis_cluster_node_name(const struct redis_cluster *rc, size_t i)
{
    return i < rc->n ? rc->nodes[i].name : "?";
}

int redis_cluster_node_serves(const struct redis_cluster *rc, size_t i)
{
    for (int s = 0; s < RC_SLOTS; s++)
        if (rc->owner[s] == (int16_t)i)
            return 1;
    return 0;
}

int redis_cluster_node_command(struct redis_cluster *rc, size_t i, int argc, const char **argv,
                               const size_t *len, struct redisReply **out)
{
    *out = NULL;
    if (i >= rc->n)
        return sl_err_set(SL_ERR_STATE, "redis: no node %zu", i);
    struct rc_node *n = &rc->nodes[i];
    int k = node_connect(rc, n);
    if (k == SL_ERR_USAGE)
        return auth_error(n, n->last_error);
    void *rp = NULL;
    if (!k) {
        redisAppendCommandArgv(n->ctx, argc, argv, len);
        k = node_flush(n);
    }
    if (!k)
        k = node_reply(n, &rp, sl_now() + rc->timeout_s);
    if (k) {
        if (k == SL_ERR_NET)
            sl_err_set(SL_ERR_NET, "redis node '%s' did not answer %.*s: %s", n->name,
                       (int)len[0], argv[0], n->last_error);
        node_close(n);
        return k;
    }
    *out = rp;
    return 0;
}

static int transient_error(const char *s)
{
    return !strncmp(s, "TRYAGAIN", 8) || !strncmp(s, "CLUSTERDOWN", 11) ||
           !strncmp(s, "LOADING", 7) || !strncmp(s, "MASTERDOWN", 10);
}

static void sleep_s(double s)
{
    struct timespec ts = { (time_t)s, (long)((s - (double)(time_t)s) * 1e9) };
    nanosleep(&ts, NULL);
}

/* One pass: the commands sent to each node (at most `pipeline` each), and what the pass
 * learnt for the caller. */
struct rc_pass {
    size_t **list; /* per node: indexes into the batch */
    size_t *cnt;
    int *retry, *conn_fail;
    double deadline;
};

/* The pending commands, to the node that serves their slot (or that an ASK named). */
static void pass_assign(struct redis_cluster *rc, struct rc_batch *b, struct rc_pass *ps)
{
    for (size_t i = 0; i < b->n; i++) {
        struct rc_cmd *c = &b->c[i];
        if (c->done)
            continue;
        int node = c->ask_node >= 0 ? c->ask_node : rc->owner[c->slot];
        if (node < 0) {
            snprintf(rc->problem, sizeof(rc->problem), "slot %u has no master", c->slot);
            *ps->retry = 1;
            *ps->conn_fail = 1;
            continue;
        }
        if (ps->cnt[node] >= rc->pipeline)
            continue;
        if (!ps->list[node])
            ps->list[node] = sl_xmalloc(rc->pipeline * sizeof(size_t));
        ps->list[node][ps->cnt[node]++] = i;
        c->node = node;
    }
}

/* Write node k's pipeline (with a WAIT after writes when it has replicas). A node that
 * cannot be reached keeps its commands pending; a refused password is a hard error. */
static int pass_send(struct redis_cluster *rc, struct rc_batch *b, struct rc_pass *ps, size_t k)
{
    struct rc_node *n = &rc->nodes[k];
    int cr = node_connect(rc, n);
    if (cr == SL_ERR_USAGE)
        return auth_error(n, n->last_error);
    if (cr) {
        snprintf(rc->problem, sizeof(rc->problem), "node %s:%d: %s", n->host, n->port,
                 n->last_error);
        ps->cnt[k] = 0; /* not sent: pending */
        *ps->retry = 1;
        *ps->conn_fail = 1;
        return 0;
    }
    for (size_t j = 0; j < ps->cnt[k]; j++) {
        struct rc_cmd *c = &b->c[ps->list[k][j]];
        if (c->ask_node >= 0) {
            const char *asking = "ASKING";
            size_t al = 6;
            redisAppendCommandArgv(n->ctx, 1, &asking, &al);
        }
        redisAppendCommandArgv(n->ctx, c->argc, c->argv, c->len);
        rc->st.commands++;
    }
    if (b->writes && n->replicas > 0)
        redisAppendCommand(n->ctx, "WAIT 1 5000");
    rc->st.pipelines++;
    int done = 0;
    while (!done)
        if (redisBufferWrite(n->ctx, &done) != REDIS_OK)
            break;
    return 0;
}

/* An error reply: a redirect (MOVED updates the slot map, ASK sends the command to the
 * other node once), a state worth a retry, or a hard error. */
static int reply_error(struct redis_cluster *rc, struct rc_cmd *c, const struct rc_node *n,
                       const redisReply *r, int *retry)
{
    unsigned slot;
    char host[256];
    int port;
    int kind = redis_parse_redirect(r->str, r->len, &slot, host, sizeof(host), &port);
    if (kind && ++c->redirects > 32)
        return sl_err_set(SL_ERR_NET, "redis: too many redirects for slot %u (last: %s)", c->slot,
                          r->str);
    if (kind == 1) {
        rc->owner[slot] = (int16_t)node_index(rc, host, port);
        rc->st.moved++;
    } else if (kind == 2) {
        c->ask_node = node_index(rc, host, port);
        rc->st.ask++;
    } else if (transient_error(r->str)) {
        snprintf(rc->problem, sizeof(rc->problem), "node %s:%d answered '%s'", n->host, n->port,
                 r->str);
        *retry = 1;
    } else if (auth_reply(r->str)) {
        return auth_error(n, r->str);
    } else if (!strncmp(r->str, "OOM", 3)) {
        return sl_err_set(SL_ERR_NET,
                          "redis node '%s' is full: it answered '%s' to %.*s\nhint: give the "
                          "nodes more memory (maxmemory) or add masters; the run can be resumed",
                          n->name, r->str, (int)c->len[0], c->argv[0]);
    } else {
        return sl_err_set(SL_ERR_NET, "redis node %s:%d answered '%s' to %.*s", n->host, n->port,
                          r->str, (int)c->len[0], c->argv[0]);
    }
    return 0;
}

/* A reply from node n; a lost connection sets *broken and is no hard error. */
static int read_reply(struct rc_node *n, void **rp, double deadline, int *broken)
{
    int got = node_reply(n, rp, deadline);
    if (got) {
        *broken = got == SL_ERR_NET;
        return got == SL_ERR_NET ? 0 : got;
    }
    return 0;
}

/* The reply to one command (after the reply to its ASKING). */
static int read_cmd(struct redis_cluster *rc, struct rc_batch *b, struct rc_node *n,
                    struct rc_cmd *c, struct rc_pass *ps, int *broken)
{
    void *rp = NULL;
    int hard;
    if (c->ask_node >= 0) {
        if ((hard = read_reply(n, &rp, ps->deadline, broken)) || *broken)
            return hard;
        freeReplyObject(rp);
        rp = NULL;
    }
    if ((hard = read_reply(n, &rp, ps->deadline, broken)) || *broken)
        return hard;
    redisReply *r = rp;
    c->ask_node = -1;
    if (r->type == REDIS_REPLY_ERROR) {
        hard = reply_error(rc, c, n, r, ps->retry);
        freeReplyObject(r);
        return hard;
    }
    if (c->reply)
        freeReplyObject(c->reply);
    c->reply = r;
    c->done = b->writes && n->replicas > 0 ? 2 : 1; /* 2: waits for WAIT */
    return 0;
}

/* The reply to WAIT: the writes of node k are durable when a replica acknowledged them. */
static int read_wait(struct redis_cluster *rc, struct rc_batch *b, struct rc_pass *ps, size_t k,
                     int *broken)
{
    struct rc_node *n = &rc->nodes[k];
    void *rp = NULL;
    int hard = read_reply(n, &rp, ps->deadline, broken);
    if (hard || *broken)
        return hard;
    redisReply *r = rp;
    int ok = r->type == REDIS_REPLY_INTEGER && r->integer >= 1;
    if (!ok)
        snprintf(rc->problem, sizeof(rc->problem),
                 "node %s:%d: no replica acknowledged the writes (WAIT)", n->host, n->port);
    freeReplyObject(r);
    for (size_t j = 0; j < ps->cnt[k]; j++) {
        struct rc_cmd *c = &b->c[ps->list[k][j]];
        if (c->done == 2)
            c->done = ok ? 1 : 0;
    }
    if (!ok)
        *ps->retry = 1;
    return 0;
}

/* Node k's connection broke: close it, and send its whole pipeline again. */
static void pass_broken(struct redis_cluster *rc, struct rc_batch *b, struct rc_pass *ps, size_t k)
{
    struct rc_node *n = &rc->nodes[k];
    snprintf(rc->problem, sizeof(rc->problem), "node %s:%d: %s", n->host, n->port,
             n->last_error[0]    ? n->last_error
             : n->ctx->errstr[0] ? n->ctx->errstr
                                 : "connection lost");
    snprintf(n->last_error, sizeof(n->last_error), "%s", rc->problem);
    node_close(n);
    /* nothing of this pipeline is known to be durable: send it all again */
    for (size_t j = 0; j < ps->cnt[k]; j++)
        if (b->c[ps->list[k][j]].done == 2)
            b->c[ps->list[k][j]].done = 0;
    *ps->retry = 1;
    *ps->conn_fail = 1;
}

/* Read node k's replies. */
static int pass_read(struct redis_cluster *rc, struct rc_batch *b, struct rc_pass *ps, size_t k)
{
    struct rc_node *n = &rc->nodes[k];
    int broken = 0, hard = 0;
    for (size_t j = 0; j < ps->cnt[k] && !broken && !hard; j++)
        hard = read_cmd(rc, b, n, &b->c[ps->list[k][j]], ps, &broken);
    if (!broken && !hard && b->writes && n->replicas > 0)
        hard = read_wait(rc, b, ps, k, &broken);
    if (broken)
        pass_broken(rc, b, ps, k);
    return hard;
}

/* One pass over the pending commands: returns 0 when the pass ran (some commands may
 * still be pending: *retry says whether a wait is due), or a hard error. */
static int exec_pass(struct redis_cluster *rc, struct rc_batch *b, int *retry, int *conn_fail,
                     double deadline)
{
    size_t nn = rc->n;
    struct rc_pass ps = { .list = sl_xcalloc(nn, sizeof(size_t *)),
                          .cnt = sl_xcalloc(nn, sizeof(size_t)),
                          .retry = retry,
                          .conn_fail = conn_fail,
                          .deadline = deadline };
    pass_assign(rc, b, &ps);
    int hard = 0;
    for (size_t k = 0; k < nn && !hard; k++) /* write every node's pipeline */
        if (ps.cnt[k])
            hard = pass_send(rc, b, &ps, k);
    for (size_t k = 0; k < nn && !hard; k++) /* read the replies */
        if (ps.cnt[k])
            hard = pass_read(rc, b, &ps, k);
    if (hard) /* replies may be left unread: these connections cannot be reused */
        for (size_t k = 0; k < nn; k++)
            if (ps.cnt[k])
                node_close(&rc->nodes[k]);
    for (size_t k = 0; k < nn; k++)
        free(ps.list[k]);
    free(ps.list);
    free(ps.cnt);
    return hard;
}

int redis_cluster_exec(struct redis_cluster *rc, struct rc_batch *b)
{
    double start = sl_now(), backoff = 0.05;
    for (;;) {
        int retry = 0, conn_fail = 0;
        /* a pass waits at most timeout_s for its replies (a node that stalls mid-reply) */
        int hard = exec_pass(rc, b, &retry, &conn_fail, sl_now() + rc->timeout_s);
        if (hard)
            return hard;
        size_t pending = 0;
        for (size_t i = 0; i < b->n; i++)
            pending += !b->c[i].done;
        if (!pending)
            return 0;
        if (!retry)
            continue; /* more than one pipeline's worth, or redirects: go on at once */
        rc->st.retries++;
        if (sl_now() - start > rc->timeout_s)
            return sl_err_set(SL_ERR_NET,
                              "the Redis Cluster did not recover within %.0f s: %s%s%s%s\nhint: "
                              "check the nodes (redis-cli --cluster check HOST:PORT); a failed "
                              "master needs a synced replica to take over (INFO replication on "
                              "the replica: master_link_status:up)",
                              rc->timeout_s, rc->problem,
                              rc->unsynced[0] ? "; at the start, master " : "", rc->unsynced,
                              rc->unsynced[0] ? " had no synced replica" : "");
        sleep_s(backoff);
        backoff = backoff * 2 > 1.0 ? 1.0 : backoff * 2;
        if (conn_fail) {
            int r = refresh(rc);
            if (r == SL_ERR_USAGE || r == SL_ERR_CONFIG)
                return r;
            if (r && !rc->problem[0])
                snprintf(rc->problem, sizeof(rc->problem), "%s", sl_err_msg());
        }
    }
}
