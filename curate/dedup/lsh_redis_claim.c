/* What a run's Redis prefix holds and whether the run may use it: the lease, the marker,
 * the slot markers, and the checks at phase boundaries (see lsh_redis.h). */
#include "curate/dedup/lsh_redis.h"

#include "core/alloc.h"
#include "core/err.h"
#include "curate/dedup/redis_cluster.h"
#include "curate/dedup/redis_lock.h"
#include "curate/dedup/redis_watch.h"

#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* SCAN asks for this many keys per call: large enough to be quick, small enough that one
 * call never stalls a node. */
#define SCAN_COUNT "1000"

/* ---- slot markers ------------------------------------------------------------------------ */

/* A hash tag for each slot: the hex strings of 0, 1, 2, ... until every slot has one (about
 * 160 thousand CRC16s of 5 bytes). */
static void make_tags(struct lsh_redis *r)
{
    if (r->tags)
        return;
    r->tags = sl_xcalloc(RC_SLOTS, sizeof(*r->tags));
    size_t left = RC_SLOTS;
    for (unsigned i = 0; left; i++) {
        char t[8];
        int n = snprintf(t, sizeof(t), "%x", i);
        unsigned s = redis_key_slot(t, (size_t)n);
        if (!r->tags[s][0]) {
            memcpy(r->tags[s], t, (size_t)n + 1);
            left--;
        }
    }
}

/* The keys "PREFIX:s:{tag}" of every slot, in slot order, in one pool (stride km). */
static char *slot_keys(struct lsh_redis *r, const char *prefix, size_t *km)
{
    make_tags(r);
    *km = strlen(prefix) + 16;
    char *pool = sl_xmalloc(sl_mul_size(RC_SLOTS, *km));
    for (unsigned s = 0; s < RC_SLOTS; s++)
        snprintf(pool + s * *km, *km, "%s:s:{%s}", prefix, r->tags[s]);
    return pool;
}

/* One command per slot marker (op: SET, EXISTS or DEL), run as one batch. With EXISTS,
 * *missing gets the number that are gone and node (n bytes) the first node missing one. */
static int slot_markers(struct lsh_redis *r, const char *prefix, const char *op, size_t *missing,
                        char *node, size_t n)
{
    size_t km;
    char *pool = slot_keys(r, prefix, &km);
    struct rc_batch b = { 0 };
    int set = !strcmp(op, "SET");
    b.writes = strcmp(op, "EXISTS") != 0;
    for (unsigned s = 0; s < RC_SLOTS; s++) {
        const char *argv[3] = { op, pool + s * km, "1" };
        size_t len[3] = { strlen(op), strlen(pool + s * km), 1 };
        rc_batch_add(&b, set ? 3 : 2, argv, len);
    }
    int rc = redis_cluster_exec(r->rc, &b);
    if (!rc && missing) {
        *missing = 0;
        for (size_t i = 0; i < b.n; i++)
            if (b.c[i].reply->type == REDIS_REPLY_INTEGER && b.c[i].reply->integer == 0 &&
                (*missing)++ == 0)
                snprintf(node, n, "%s", redis_cluster_node_name(r->rc, (size_t)b.c[i].node));
    }
    rc_batch_release(&b);
    free(pool);
    return rc;
}

/* Every slot marker under prefix is there; what: "this run's keys" / "the index ...". */
static int slot_markers_check(struct lsh_redis *r, const char *prefix, const char *what)
{
    size_t missing;
    char node[264] = "";
    int rc = slot_markers(r, prefix, "EXISTS", &missing, node, sizeof(node));
    if (!rc && missing)
        rc = sl_err_set(SL_ERR_STATE,
                        "redis node '%s' lost keys of %s: %zu of the %d slot markers under "
                        "'%s:s:' are gone (the node restarted empty, was flushed, or evicted "
                        "them)\nhint: %s",
                        node, what, missing, RC_SLOTS, prefix,
                        r->index || strcmp(prefix, r->prefix)
                            ? "build the index again (--index-out)"
                            : "run the same command again once the cluster is healthy");
    return rc;
}

/* ---- the marker ---------------------------------------------------------------------------- */

struct marker {
    int present;
    char kind[16], state[16], settings[512], writer[512];
    uint64_t gen, plan;
};

static void marker_field(const char *v, size_t len, const char *name, char *out, size_t n)
{
    size_t nl = strlen(name);
    out[0] = '\0';
    for (size_t p = 0; p < len;) {
        size_t e = p;
        while (e < len && v[e] != '\n')
            e++;
        if (e - p > nl && !memcmp(v + p, name, nl) && v[p + nl] == '=') {
            size_t k = e - p - nl - 1 < n - 1 ? e - p - nl - 1 : n - 1;
            memcpy(out, v + p + nl + 1, k);
            out[k] = '\0';
            return;
        }
        p = e + 1;
    }
}

static int marker_read(struct lsh_redis *r, const char *prefix, struct marker *m)
{
    memset(m, 0, sizeof(*m));
    char *key = sl_xasprintf("%s:meta", prefix);
    struct rc_batch b = { 0 };
    const char *argv[2] = { "GET", key };
    size_t len[2] = { 3, strlen(key) };
    rc_batch_add(&b, 2, argv, len);
    int rc = redis_cluster_exec(r->rc, &b);
    const redisReply *x = rc ? NULL : b.c[0].reply;
    if (x && x->type == REDIS_REPLY_STRING) {
        char num[32];
        m->present = 1;
        marker_field(x->str, x->len, "kind", m->kind, sizeof(m->kind));
        marker_field(x->str, x->len, "state", m->state, sizeof(m->state));
        marker_field(x->str, x->len, "settings", m->settings, sizeof(m->settings));
        marker_field(x->str, x->len, "writer", m->writer, sizeof(m->writer));
        marker_field(x->str, x->len, "gen", num, sizeof(num));
        m->gen = strtoull(num, NULL, 10);
        marker_field(x->str, x->len, "plan", num, sizeof(num));
        m->plan = strtoull(num, NULL, 16);
    }
    rc_batch_release(&b);
    free(key);
    return rc;
}

/* Write (or, state NULL, delete) this run's marker. */
static int marker_write(struct lsh_redis *r, const char *state)
{
    char *key = sl_xasprintf("%s:meta", r->prefix);
    char *val = sl_xasprintf("kind=%s\nstate=%s\ngen=%llu\nplan=%016llx\nsettings=%s\nwriter=%s\n",
                             r->index ? "index" : "run", state ? state : "",
                             (unsigned long long)r->gen, (unsigned long long)r->plan, r->settings,
                             redis_lock_value(r->lock));
    struct rc_batch b = { 0 };
    b.writes = 1;
    const char *argv[3] = { state ? "SET" : "DEL", key, val };
    size_t len[3] = { 3, strlen(key), strlen(val) };
    rc_batch_add(&b, state ? 3 : 2, argv, len);
    int rc = redis_cluster_exec(r->rc, &b);
    rc_batch_release(&b);
    free(key);
    free(val);
    return rc;
}

static void writer(const struct marker *m, char *out, size_t n)
{
    if (m->writer[0])
        redis_lock_describe(m->writer, out, n);
    else
        snprintf(out, n, "an unknown run");
}

/* ---- clearing -------------------------------------------------------------------------------- */

/* The prefix as a SCAN MATCH pattern: glob characters escaped, ":*" appended. */
static char *match_pattern(const char *prefix)
{
    size_t n = strlen(prefix);
    char *p = sl_xmalloc(2 * n + 3), *o = p;
    for (size_t i = 0; i < n; i++) {
        if (strchr("*?[]\\", prefix[i]))
            *o++ = '\\';
        *o++ = prefix[i];
    }
    memcpy(o, ":*", 3);
    return p;
}

/* UNLINK the keys of one SCAN page (but not the lease). */
static int unlink_page(struct lsh_redis *r, const redisReply *keys, const char *lock)
{
    struct rc_batch b = { 0 };
    b.writes = 1;
    for (size_t i = 0; i < keys->elements; i++) {
        const redisReply *k = keys->element[i];
        if (k->type != REDIS_REPLY_STRING || !strcmp(k->str, lock))
            continue;
        const char *argv[2] = { "UNLINK", k->str };
        size_t len[2] = { 6, k->len };
        rc_batch_add(&b, 2, argv, len);
    }
    int rc = b.n ? redis_cluster_exec(r->rc, &b) : 0;
    rc_batch_release(&b);
    return rc;
}

/* Delete every key under the prefix (an earlier run's leftovers) but the lease. */
static int clear_prefix(struct lsh_redis *r)
{
    char *pattern = match_pattern(r->prefix), *lock = sl_xasprintf("%s:lock", r->prefix);
    int rc = 0;
    for (size_t i = 0; !rc && i < redis_cluster_nodes(r->rc); i++) {
        if (!redis_cluster_node_serves(r->rc, i))
            continue;
        char cursor[32] = "0";
        do {
            const char *argv[6] = { "SCAN", cursor, "MATCH", pattern, "COUNT", SCAN_COUNT };
            size_t len[6] = { 4, strlen(cursor), 5, strlen(pattern), 5, strlen(SCAN_COUNT) };
            struct redisReply *x;
            rc = redis_cluster_node_command(r->rc, i, 6, argv, len, &x);
            if (rc)
                break;
            if (x->type != REDIS_REPLY_ARRAY || x->elements != 2 ||
                x->element[0]->type != REDIS_REPLY_STRING ||
                x->element[1]->type != REDIS_REPLY_ARRAY)
                rc = sl_err_set(SL_ERR_NET, "redis node '%s' answered SCAN with '%s'",
                                redis_cluster_node_name(r->rc, i),
                                x->type == REDIS_REPLY_ERROR ? x->str : "something else");
            else {
                snprintf(cursor, sizeof(cursor), "%s", x->element[0]->str);
                rc = unlink_page(r, x->element[1], lock);
            }
            freeReplyObject(x);
        } while (!rc && strcmp(cursor, "0"));
    }
    free(pattern);
    free(lock);
    return rc;
}

/* ---- claiming -------------------------------------------------------------------------------- */

/* An index marker fit to build on: complete at generation gen with these settings. */
static int index_usable(struct lsh_redis *r, const char *prefix, const char *dir,
                        const struct marker *m, uint64_t gen)
{
    char who[400];
    writer(m, who, sizeof(who));
    if (!m->present || strcmp(m->kind, "index"))
        return sl_err_set(SL_ERR_STATE,
                          "redis prefix '%s' of the index '%s' holds no index marker ('%s:meta'): "
                          "its keys are gone, or were written by an older sluice\nhint: build "
                          "the index again (--index-out)",
                          prefix, dir, prefix);
    if (strcmp(m->settings, r->settings))
        return sl_err_set(SL_ERR_CONFIG,
                          "redis prefix '%s' holds a dedup index written with other settings: "
                          "%s (this run: %s)\nhint: use the settings the index was built with",
                          prefix, m->settings, r->settings);
    if (strcmp(m->state, "complete"))
        return sl_err_set(SL_ERR_STATE,
                          "the index under redis prefix '%s' has an unfinished extension to "
                          "generation %llu (by %s)\nhint: run that command again to finish it, "
                          "or build the index again",
                          prefix, (unsigned long long)m->gen, who);
    if (m->gen != gen)
        return sl_err_set(SL_ERR_STATE,
                          "the index under redis prefix '%s' is at generation %llu, but '%s' "
                          "is generation %llu: a later run (%s) extended it in place\nhint: "
                          "use the index directory that run wrote (its --index-out)",
                          prefix, (unsigned long long)m->gen, dir, (unsigned long long)gen, who);
    return 0;
}

/* The index read (not written) by this run: usable, intact, and nobody extending it. */
static int old_index_check(struct lsh_redis *r, int at_start)
{
    struct marker m;
    int rc = marker_read(r, r->old_prefix, &m);
    if (!rc)
        rc = index_usable(r, r->old_prefix, r->old_dir, &m, r->old_gen);
    if (!rc && at_start) {
        char *holder = NULL;
        rc = redis_lock_holder(r->rc, r->old_prefix, &holder);
        if (!rc && holder) {
            char who[400];
            redis_lock_describe(holder, who, sizeof(who));
            rc = sl_err_set(SL_ERR_EXISTS,
                            "the index under redis prefix '%s' is being extended by another "
                            "run (%s)\nhint: wait until it ends, then use the index directory "
                            "it writes",
                            r->old_prefix, who);
        }
        free(holder);
    }
    if (!rc)
        rc = slot_markers_check(r, r->old_prefix, "the index this run reads");
    return rc;
}

/* What the prefix holds, for a run that writes it fresh (not a grown index): 0 to keep
 * it (or nothing there), 1 to clear it first, or a refusal. */
static int fresh_prefix(struct lsh_redis *r, const struct marker *m, size_t missing)
{
    const char *kind = r->index ? "index" : "run";
    if (!m->present)
        return missing < RC_SLOTS; /* slot markers without a marker: a node lost it */
    if (m->plan == r->plan && !strcmp(m->kind, kind))
        return 0; /* this plan's keys: a subset of what the run writes */
    if (!strcmp(m->kind, "run") || !strcmp(m->state, "building"))
        return 1; /* a run's, or an index never finished: nobody can use them */
    char who[400];
    writer(m, who, sizeof(who));
    if (strcmp(m->settings, r->settings))
        return sl_err_set(SL_ERR_CONFIG,
                          "redis prefix '%s' holds a dedup index written with other settings: "
                          "%s (this run: %s; written by %s)\nhint: give this run another "
                          "--redis-prefix",
                          r->prefix, m->settings, r->settings, who);
    return sl_err_set(SL_ERR_CONFIG,
                      "redis prefix '%s' holds another dedup index (generation %llu, written "
                      "by %s)\nhint: to add to it, pass its directory with --index-in; "
                      "otherwise give this run another --redis-prefix",
                      r->prefix, (unsigned long long)m->gen, who);
}

/* Settle what the prefix holds and write this run's marker and slot markers. */
static int claim_prefix(struct lsh_redis *r, const struct lsh_redis_plan *p)
{
    struct marker m;
    size_t missing = RC_SLOTS;
    char node[264];
    int rc = marker_read(r, r->prefix, &m);
    /* no marker: are there slot markers (a node lost the marker)? */
    if (!rc && !m.present && !p->grow)
        rc = slot_markers(r, r->prefix, "EXISTS", &missing, node, sizeof(node));
    if (rc)
        return rc;
    if (p->grow) {
        /* this plan's unfinished (or finished) extension, or the index it builds on */
        if (!(m.present && m.plan == r->plan && m.gen == r->gen && !strcmp(m.kind, "index")))
            rc = index_usable(r, r->prefix, p->old_dir, &m, p->gen - 1);
        if (!rc)
            rc = slot_markers_check(r, r->prefix, "the index this run extends");
        return rc ? rc : marker_write(r, "extending");
    }
    rc = fresh_prefix(r, &m, missing);
    if (rc < 0)
        return rc;
    if (rc == 1)
        rc = clear_prefix(r);
    if (!rc)
        rc = marker_write(r, "building");
    if (!rc)
        rc = slot_markers(r, r->prefix, "SET", NULL, NULL, 0);
    return rc;
}

int lsh_redis_claim(struct lsh_redis *r, const struct lsh_redis_plan *p)
{
    r->index = p->index;
    r->gen = p->gen;
    r->plan = p->plan;
    r->settings = sl_xstrdup(p->settings);
    r->old_gen = p->old_gen;
    r->old_prefix = p->old_prefix ? sl_xstrdup(p->old_prefix) : NULL;
    r->old_dir = sl_xstrdup(p->old_dir ? p->old_dir : "");
    int rc = redis_lock_take(&r->lock, r->seeds, r->password, r->timeout_s, r->prefix);
    if (!rc) {
        rc = redis_watch_begin(&r->watch, r->rc, r->timeout_s);
        r->watching = 1;
        snprintf(r->warning, sizeof(r->warning), "%s", r->watch.warning);
    }
    if (!rc)
        rc = claim_prefix(r, p);
    if (!rc && r->old_prefix)
        rc = old_index_check(r, 1);
    return rc;
}

int lsh_redis_check(struct lsh_redis *r)
{
    /* the causes first: a node that restarted empty also loses the lease if it held it */
    int rc = redis_watch_check(&r->watch, r->rc, r->timeout_s);
    if (!rc)
        rc = slot_markers_check(r, r->prefix,
                                r->index ? "the index this run writes" : "this run");
    if (!rc)
        rc = redis_lock_check(r->lock);
    if (!rc && r->old_prefix)
        rc = old_index_check(r, 0);
    return rc;
}

int lsh_redis_finish(struct lsh_redis *r)
{
    int rc = redis_lock_check(r->lock);
    if (!rc && r->index)
        return marker_write(r, "complete");
    if (!rc)
        rc = slot_markers(r, r->prefix, "DEL", NULL, NULL, 0);
    if (!rc)
        rc = marker_write(r, NULL);
    return rc;
}
