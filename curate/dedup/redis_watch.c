/* The eviction policy, incarnation (run_id) and eviction count of a Redis Cluster's nodes,
 * checked at the start of a run and at its phase boundaries (see redis_watch.h). */
#include "curate/dedup/redis_watch.h"

#include "core/alloc.h"
#include "core/err.h"
#include "core/progress.h"
#include "curate/dedup/redis_cluster.h"

#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int redis_info_field(const char *info, size_t len, const char *field, char *out, size_t n)
{
    size_t fl = strlen(field);
    for (size_t p = 0; p + fl < len;) {
        /* a line "field:value\r\n" */
        if (!memcmp(info + p, field, fl) && info[p + fl] == ':') {
            size_t q = p + fl + 1, k = 0;
            while (q < len && (unsigned char)info[q] >= 0x20 && k + 1 < n)
                out[k++] = info[q++];
            out[k] = '\0';
            return 0;
        }
        const char *nl = memchr(info + p, '\n', len - p);
        if (!nl)
            break;
        p = (size_t)(nl - info) + 1;
    }
    return -1;
}

static struct rc_watched *watched(struct redis_watch *w, const char *name)
{
    for (size_t i = 0; i < w->n; i++)
        if (!strcmp(w->v[i].name, name))
            return &w->v[i];
    return NULL;
}

/* INFO of node i: its run_id and evicted_keys. 0; SL_ERR_NET (no answer); SL_ERR_USAGE
 * (password); SL_ERR_UNSUPPORTED (INFO refused or without those fields). */
static int node_info(struct redis_cluster *rc, size_t i, char *run_id, size_t n, uint64_t *evicted)
{
    const char *argv[1] = { "INFO" };
    size_t len[1] = { 4 };
    struct redisReply *r;
    int k = redis_cluster_node_command(rc, i, 1, argv, len, &r);
    if (k)
        return k;
    char ev[32];
    const char *name = redis_cluster_node_name(rc, i);
    if (r->type == REDIS_REPLY_ERROR)
        k = sl_err_set(SL_ERR_UNSUPPORTED,
                       "redis node '%s' refused INFO ('%s'): the run cannot check that the "
                       "node keeps its keys\nhint: allow INFO for this user",
                       name, r->str);
    else if (r->type != REDIS_REPLY_STRING)
        k = sl_err_set(SL_ERR_UNSUPPORTED, "redis node '%s' answered INFO with no text", name);
    else if (redis_info_field(r->str, r->len, "run_id", run_id, n) ||
             redis_info_field(r->str, r->len, "evicted_keys", ev, sizeof(ev)))
        k = sl_err_set(SL_ERR_UNSUPPORTED,
                       "redis node '%s' gives no run_id or evicted_keys in INFO: the run "
                       "cannot check that the node keeps its keys",
                       name);
    else
        *evicted = strtoull(ev, NULL, 10);
    freeReplyObject(r);
    return k;
}

/* CONFIG GET maxmemory-policy on node i: 0 (noeviction, or unknown: then w->warning),
 * SL_ERR_CONFIG (an evicting policy), or the error of a node that did not answer. */
static int node_policy(struct redis_watch *w, struct redis_cluster *rc, size_t i)
{
    const char *argv[3] = { "CONFIG", "GET", "maxmemory-policy" };
    size_t len[3] = { 6, 3, 16 };
    struct redisReply *r;
    int k = redis_cluster_node_command(rc, i, 3, argv, len, &r);
    if (k)
        return k;
    const char *name = redis_cluster_node_name(rc, i);
    if (r->type == REDIS_REPLY_ARRAY && r->elements == 2 && r->element[1]->type == REDIS_REPLY_STRING) {
        if (strcmp(r->element[1]->str, "noeviction"))
            k = sl_err_set(SL_ERR_CONFIG,
                           "redis node '%s' has maxmemory-policy '%s': it may evict buckets "
                           "when full, and the run would silently find fewer duplicates\n"
                           "hint: redis-cli -p PORT config set maxmemory-policy noeviction "
                           "on every node (a full node then refuses writes, which stops the "
                           "run with an error)",
                           name, r->element[1]->str);
    } else if (!w->warning[0]) {
        /* CONFIG renamed or forbidden: evictions are still seen in INFO's evicted_keys */
        snprintf(w->warning, sizeof(w->warning),
                 "cannot read maxmemory-policy on redis node '%s' (%s): an eviction will "
                 "stop the run when it is seen, not be prevented",
                 name, r->type == REDIS_REPLY_ERROR ? r->str : "no answer to CONFIG GET");
    }
    freeReplyObject(r);
    return k;
}

/* One look at every node for the baseline: 0, SL_ERR_NET (a master did not answer: try
 * again), or the error that stops the run. */
static int begin_once(struct redis_watch *w, struct redis_cluster *rc)
{
    size_t n = redis_cluster_nodes(rc);
    w->n = 0;
    w->warning[0] = '\0';
    w->v = sl_xrealloc(w->v, (n + 1) * sizeof(*w->v));
    for (size_t i = 0; i < n; i++) {
        int master = redis_cluster_node_serves(rc, i);
        struct rc_watched *x = &w->v[w->n];
        int k = node_policy(w, rc, i);
        if (!k)
            k = node_info(rc, i, x->run_id, sizeof(x->run_id), &x->evicted);
        if (k == SL_ERR_NET && !master)
            continue; /* a replica that does not answer: its baseline comes when it serves */
        if (k)
            return k;
        snprintf(x->name, sizeof(x->name), "%s", redis_cluster_node_name(rc, i));
        w->n++;
    }
    return 0;
}

static void sleep_s(double s)
{
    struct timespec ts = { (time_t)s, (long)((s - (double)(time_t)s) * 1e9) };
    nanosleep(&ts, NULL);
}

/* Run once() until it is not SL_ERR_NET (a master that does not answer: a failover under
 * way), fetching the slot map again between tries, for up to timeout_s. */
static int until_answered(struct redis_watch *w, struct redis_cluster *rc, double timeout_s,
                          int (*once)(struct redis_watch *, struct redis_cluster *))
{
    double start = sl_now(), backoff = 0.05;
    for (;;) {
        int k = once(w, rc);
        if (k != SL_ERR_NET)
            return k;
        if (sl_now() - start > timeout_s)
            return sl_err_wrap(k, "the Redis Cluster did not recover within %.0f s: ", timeout_s);
        sleep_s(backoff);
        backoff = backoff * 2 > 1.0 ? 1.0 : backoff * 2;
        int r = redis_cluster_refresh(rc);
        if (r == SL_ERR_USAGE || r == SL_ERR_CONFIG)
            return r;
    }
}

int redis_watch_begin(struct redis_watch *w, struct redis_cluster *rc, double timeout_s)
{
    memset(w, 0, sizeof(*w));
    return until_answered(w, rc, timeout_s, begin_once);
}

/* One look at every master: 0, SL_ERR_NET (a master did not answer: try again), or the
 * error that stops the run. */
static int check_once(struct redis_watch *w, struct redis_cluster *rc)
{
    size_t n = redis_cluster_nodes(rc);
    for (size_t i = 0; i < n; i++) {
        if (!redis_cluster_node_serves(rc, i))
            continue;
        char run_id[48];
        uint64_t ev;
        int k = node_info(rc, i, run_id, sizeof(run_id), &ev);
        if (k)
            return k;
        const char *name = redis_cluster_node_name(rc, i);
        struct rc_watched *x = watched(w, name);
        if (!x) { /* serves slots now, unknown before: its baseline */
            w->v = sl_xrealloc(w->v, (w->n + 1) * sizeof(*w->v));
            x = &w->v[w->n++];
            snprintf(x->name, sizeof(x->name), "%s", name);
            snprintf(x->run_id, sizeof(x->run_id), "%s", run_id);
            x->evicted = ev;
            continue;
        }
        if (strcmp(x->run_id, run_id))
            return sl_err_set(SL_ERR_STATE,
                              "redis node '%s' restarted during the run (its run_id changed "
                              "from %s to %s): the keys it held are lost\nhint: give Redis "
                              "nodes replicas that take over instead of restarting them "
                              "empty",
                              name, x->run_id, run_id);
        if (ev > x->evicted)
            return sl_err_set(SL_ERR_STATE,
                              "redis node '%s' evicted %llu keys during the run: buckets may "
                              "be lost\nhint: set maxmemory-policy noeviction and give the "
                              "nodes enough memory (maxmemory)",
                              name, (unsigned long long)(ev - x->evicted));
    }
    return 0;
}

int redis_watch_check(struct redis_watch *w, struct redis_cluster *rc, double timeout_s)
{
    return until_answered(w, rc, timeout_s, check_once);
}

void redis_watch_release(struct redis_watch *w)
{
    free(w->v);
    memset(w, 0, sizeof(*w));
}
