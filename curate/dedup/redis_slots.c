/* Redis Cluster key slots, redirect errors, CLUSTER SLOTS replies and command batches: the
 * parts of the cluster client that need no connection (see redis_cluster.h). */
#include "curate/dedup/redis_cluster.h"

#include "core/alloc.h"
#include "core/err.h"

#include <hiredis/hiredis.h>
#include <stdlib.h>
#include <string.h>

/* ---- slots -------------------------------------------------------------------------------- */

uint16_t redis_crc16(const char *buf, size_t len)
{
    uint16_t crc = 0;
    for (size_t i = 0; i < len; i++) {
        crc ^= (uint16_t)((unsigned char)buf[i] << 8);
        for (int b = 0; b < 8; b++)
            crc = (crc & 0x8000) ? (uint16_t)((crc << 1) ^ 0x1021) : (uint16_t)(crc << 1);
    }
    return crc;
}

unsigned redis_key_slot(const char *key, size_t len)
{
    const char *open = memchr(key, '{', len);
    if (open) {
        size_t rest = len - (size_t)(open - key) - 1;
        const char *close = memchr(open + 1, '}', rest);
        if (close && close > open + 1)
            return redis_crc16(open + 1, (size_t)(close - open - 1)) & (RC_SLOTS - 1);
    }
    return redis_crc16(key, len) & (RC_SLOTS - 1);
}

int redis_parse_redirect(const char *err, size_t len, unsigned *slot, char *host, size_t hostn,
                         int *port)
{
    int kind;
    size_t p;
    if (len > 6 && !memcmp(err, "MOVED ", 6)) {
        kind = 1;
        p = 6;
    } else if (len > 4 && !memcmp(err, "ASK ", 4)) {
        kind = 2;
        p = 4;
    } else {
        return 0;
    }
    unsigned long s = 0;
    size_t d = 0;
    while (p < len && err[p] >= '0' && err[p] <= '9' && d < 6) {
        s = s * 10 + (unsigned long)(err[p++] - '0');
        d++;
    }
    if (!d || s >= RC_SLOTS || p >= len || err[p] != ' ')
        return 0;
    p++;
    /* host:port, the port after the last ':' (IPv6 hosts have colons) */
    size_t end = len;
    while (end > p && (err[end - 1] == '\r' || err[end - 1] == '\n' || err[end - 1] == ' '))
        end--;
    size_t colon = end;
    while (colon > p && err[colon - 1] != ':')
        colon--;
    if (colon <= p || colon >= end)
        return 0;
    long prt = 0;
    for (size_t i = colon; i < end; i++) {
        if (err[i] < '0' || err[i] > '9' || prt > 65535)
            return 0;
        prt = prt * 10 + (err[i] - '0');
    }
    if (prt <= 0 || prt > 65535)
        return 0;
    size_t hl = colon - 1 - p;
    if (hl + 1 > hostn)
        return 0;
    memcpy(host, err + p, hl);
    host[hl] = '\0';
    *slot = (unsigned)s;
    *port = (int)prt;
    return kind;
}

static int topo_node(struct rc_topology *t, const char *host, size_t hl, int port)
{
    for (size_t i = 0; i < t->n; i++)
        if (t->nodes[i].port == port && strlen(t->nodes[i].host) == hl &&
            !memcmp(t->nodes[i].host, host, hl))
            return (int)i;
    if (t->n >= 4096)
        return -1;
    t->nodes = sl_xrealloc(t->nodes, (t->n + 1) * sizeof(*t->nodes));
    memset(&t->nodes[t->n], 0, sizeof(t->nodes[0]));
    memcpy(t->nodes[t->n].host, host, hl);
    t->nodes[t->n].port = port;
    t->nodes[t->n].replica_of = -1;
    return (int)t->n++;
}

/* A node entry of CLUSTER SLOTS: [host, port, id, ...]. 0 with host, hl and port set, or -1. */
static int slots_node(const redisReply *m, const char *default_host, const char **host,
                      size_t *hl, int *port)
{
    if (!m || m->type != REDIS_REPLY_ARRAY || m->elements < 2 || !m->element[0] ||
        !m->element[1] || m->element[0]->type != REDIS_REPLY_STRING ||
        m->element[1]->type != REDIS_REPLY_INTEGER || m->element[1]->integer <= 0 ||
        m->element[1]->integer > 65535 || m->element[0]->len >= sizeof(((struct rc_topo_node *)0)->host))
        return -1;
    *host = m->element[0]->str;
    *hl = m->element[0]->len;
    if (*hl == 0 || (*hl == 1 && (*host)[0] == '?')) {
        *host = default_host;
        *hl = strlen(default_host);
    }
    *port = (int)m->element[1]->integer;
    return 0;
}

int redis_parse_slots(const struct redisReply *r, const char *default_host, struct rc_topology *t)
{
    memset(t, 0, sizeof(*t));
    for (int s = 0; s < RC_SLOTS; s++)
        t->owner[s] = -1;
    if (!r || r->type != REDIS_REPLY_ARRAY)
        return sl_err_set(SL_ERR_FORMAT, "CLUSTER SLOTS did not answer with an array");
    for (size_t i = 0; i < r->elements; i++) {
        const redisReply *e = r->element[i];
        if (!e || e->type != REDIS_REPLY_ARRAY || e->elements < 3 || !e->element[0] ||
            !e->element[1] || e->element[0]->type != REDIS_REPLY_INTEGER ||
            e->element[1]->type != REDIS_REPLY_INTEGER)
            return sl_err_set(SL_ERR_FORMAT, "CLUSTER SLOTS entry %zu is malformed", i);
        long long a = e->element[0]->integer, b = e->element[1]->integer;
        if (a < 0 || b < a || b >= RC_SLOTS)
            return sl_err_set(SL_ERR_FORMAT, "CLUSTER SLOTS entry %zu has slots %lld-%lld", i, a,
                              b);
        const char *host;
        size_t hl;
        int port;
        if (slots_node(e->element[2], default_host, &host, &hl, &port))
            return sl_err_set(SL_ERR_FORMAT, "CLUSTER SLOTS entry %zu has a malformed master", i);
        int k = topo_node(t, host, hl, port);
        if (k < 0)
            return sl_err_set(SL_ERR_FORMAT, "CLUSTER SLOTS lists too many nodes");
        t->nodes[k].replica_of = -1;
        int reps = 0;
        for (size_t j = 3; j < e->elements; j++) {
            if (!e->element[j] || e->element[j]->type != REDIS_REPLY_ARRAY)
                continue;
            reps++;
            /* a replica is a node too (its incarnation is checked after a failover) */
            int q = slots_node(e->element[j], default_host, &host, &hl, &port)
                        ? -1
                        : topo_node(t, host, hl, port);
            if (q >= 0 && q != k)
                t->nodes[q].replica_of = k;
        }
        if (reps > t->nodes[k].replicas)
            t->nodes[k].replicas = reps;
        for (long long s = a; s <= b; s++)
            t->owner[s] = (int16_t)k;
    }
    return 0;
}

/* ---- batches ------------------------------------------------------------------------------ */

void rc_batch_add(struct rc_batch *b, int argc, const char **argv, const size_t *len)
{
    rc_batch_add_keyed(b, argc, argv, len, 1);
}

void rc_batch_add_keyed(struct rc_batch *b, int argc, const char **argv, const size_t *len,
                        int key_arg)
{
    if (b->n == b->cap) {
        b->cap = b->cap ? b->cap * 2 : 1024;
        b->c = sl_xrealloc(b->c, b->cap * sizeof(*b->c));
    }
    struct rc_cmd *c = &b->c[b->n++];
    memset(c, 0, sizeof(*c));
    c->argc = argc;
    for (int i = 0; i < argc && i < RC_MAX_ARGS; i++) {
        c->argv[i] = argv[i];
        c->len[i] = len[i];
    }
    c->slot = argc > key_arg ? redis_key_slot(argv[key_arg], len[key_arg]) : 0;
    c->ask_node = -1;
}

void rc_batch_reset(struct rc_batch *b)
{
    for (size_t i = 0; i < b->n; i++)
        if (b->c[i].reply)
            freeReplyObject(b->c[i].reply);
    b->n = 0;
}

void rc_batch_release(struct rc_batch *b)
{
    rc_batch_reset(b);
    free(b->c);
    memset(b, 0, sizeof(*b));
}
