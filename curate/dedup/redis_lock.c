/* A lease on a key prefix in a Redis Cluster, renewed by a thread while the run lives
 * (see redis_lock.h). */
#include "curate/dedup/redis_lock.h"

#include "core/alloc.h"
#include "core/err.h"
#include "core/progress.h"
#include "curate/dedup/redis_cluster.h"

#include <errno.h>
#include <hiredis/hiredis.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

struct redis_lock {
    struct redis_cluster *rc; /* the lease's own connections */
    char *prefix, *key, *value;
    pthread_t thread;
    int running;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stop, lost;
    char why[768];
};

/* Compare the value and renew (ARGV[2] ms) or delete, in one step on the node. */
static const char renew_lua[] = "if redis.call('get',KEYS[1])==ARGV[1] then "
                                "return redis.call('pexpire',KEYS[1],ARGV[2]) else return 0 end";
static const char unlock_lua[] = "if redis.call('get',KEYS[1])==ARGV[1] then "
                                 "return redis.call('del',KEYS[1]) else return 0 end";

/* ---- the holder ------------------------------------------------------------------------ */

/* Field 22 of /proc/PID/stat (start time in clock ticks since boot), or "-". */
static void proc_start(long pid, char *out, size_t n)
{
    char path[64], buf[1024];
    snprintf(out, n, "-");
    snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    size_t k = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[k] = '\0';
    char *p = strrchr(buf, ')'); /* the command name may hold spaces and parentheses */
    /* after ") ": field 3 (state) onwards; the start time is field 22 */
    for (int field = 2; p && field < 22; field++)
        p = strchr(p + 1, ' ');
    if (p)
        snprintf(out, n, "%.*s", (int)strcspn(p + 1, " \n"), p + 1);
}

/* 1 when pid is a zombie (or dead): it has exited and waits to be reaped, which a rank
 * whose job ended abruptly can do for long where no init reaps its orphans (a container);
 * kill(pid, 0) still finds it. */
static int proc_exited(long pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0; /* cannot tell: kill(2) decided it runs */
    size_t k = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[k] = '\0';
    const char *p = strrchr(buf, ')');
    return p && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X');
}

static void pid_ns(char *out, size_t n)
{
    ssize_t k = readlink("/proc/self/ns/pid", out, n - 1);
    if (k <= 0)
        k = (ssize_t)snprintf(out, n, "-");
    out[k] = '\0';
    for (ssize_t i = 0; i < k; i++)
        if (out[i] == ' ')
            out[i] = '_';
}

static char *holder_value(void)
{
    char host[256] = "-", start[32], ns[64], when[32];
    if (gethostname(host, sizeof(host) - 1) || !host[0])
        snprintf(host, sizeof(host), "-");
    host[strcspn(host, " ")] = '\0';
    proc_start((long)getpid(), start, sizeof(start));
    pid_ns(ns, sizeof(ns));
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
    return sl_xasprintf("host=%s pid=%ld start=%s ns=%s started=%s", host, (long)getpid(), start,
                        ns, when);
}

/* The value of "name=" in a holder string, "?" when absent. */
static void holder_field(const char *v, const char *name, char *out, size_t n)
{
    size_t nl = strlen(name);
    for (const char *p = v; p && *p; p = strchr(p, ' '), p = p ? p + 1 : NULL)
        if (!strncmp(p, name, nl) && p[nl] == '=') {
            snprintf(out, n, "%.*s", (int)strcspn(p + nl + 1, " "), p + nl + 1);
            return;
        }
    snprintf(out, n, "?");
}

void redis_lock_describe(const char *value, char *out, size_t n)
{
    char host[256], pid[32], when[64];
    holder_field(value, "host", host, sizeof(host));
    holder_field(value, "pid", pid, sizeof(pid));
    holder_field(value, "started", when, sizeof(when));
    snprintf(out, n, "host %s, pid %s, started %s", host, pid, when);
}

/* 1: the holder runs on this machine and lives; 0: on this machine and dead; -1: it runs
 * elsewhere (or cannot be told). */
static int holder_alive(const char *v)
{
    char mine[256] = "", host[256], ns[64], hns[64], pid[32], start[32], now[32];
    if (gethostname(mine, sizeof(mine) - 1))
        return -1;
    mine[strcspn(mine, " ")] = '\0';
    holder_field(v, "host", host, sizeof(host));
    holder_field(v, "ns", hns, sizeof(hns));
    holder_field(v, "pid", pid, sizeof(pid));
    holder_field(v, "start", start, sizeof(start));
    pid_ns(ns, sizeof(ns));
    long p = atol(pid);
    if (strcmp(host, mine) || !strcmp(ns, "-") || strcmp(hns, ns) || p <= 0)
        return -1;
    if ((kill((pid_t)p, 0) && errno == ESRCH) || proc_exited(p))
        return 0;
    proc_start(p, now, sizeof(now));
    if (!strcmp(start, "-") || !strcmp(now, "-"))
        return 1; /* the pid runs; its start time cannot be compared */
    return strcmp(start, now) == 0; /* another process with a reused pid: the holder died */
}

/* ---- commands ------------------------------------------------------------------------------ */

/* Run one command (key argv[key_arg]) on the lease's connections; 0 with *out. */
static int one(struct redis_cluster *rc, int writes, int argc, const char **argv, int key_arg,
               redisReply **out)
{
    struct rc_batch b = { 0 };
    size_t len[RC_MAX_ARGS];
    for (int i = 0; i < argc; i++)
        len[i] = strlen(argv[i]);
    b.writes = writes;
    rc_batch_add_keyed(&b, argc, argv, len, key_arg);
    int k = redis_cluster_exec(rc, &b);
    *out = NULL;
    if (!k) {
        *out = b.c[0].reply;
        b.c[0].reply = NULL;
    }
    rc_batch_release(&b);
    return k;
}

/* EVAL a compare-and-act script on the key: its integer answer, or <0. */
static long long eval(struct redis_cluster *rc, const char *script, const char *key,
                      const char *value, const char *arg)
{
    const char *argv[6] = { "EVAL", script, "1", key, value, arg };
    redisReply *r;
    int k = one(rc, 1, arg ? 6 : 5, argv, 3, &r);
    if (k)
        return k;
    long long v = r->type == REDIS_REPLY_INTEGER ? r->integer : -1;
    if (v < 0)
        sl_err_set(SL_ERR_NET, "redis: the lease script answered '%s'",
                   r->type == REDIS_REPLY_ERROR ? r->str : "something else");
    freeReplyObject(r);
    return v < 0 ? SL_ERR_NET : v;
}

/* The key's value and remaining ms: 1 with them, 0 when the key is gone, or <0. */
static int peek(struct redis_cluster *rc, const char *key, char **value, long long *pttl)
{
    redisReply *r;
    const char *get[2] = { "GET", key }, *ttl[2] = { "PTTL", key };
    int k = one(rc, 0, 2, get, 1, &r);
    if (k)
        return k;
    *value = r->type == REDIS_REPLY_STRING ? sl_xstrndup(r->str, r->len) : NULL;
    freeReplyObject(r);
    if (!*value)
        return 0;
    if ((k = one(rc, 0, 2, ttl, 1, &r))) {
        free(*value);
        return k;
    }
    *pttl = r->type == REDIS_REPLY_INTEGER ? r->integer : -2;
    freeReplyObject(r);
    return 1;
}

const char *redis_lock_value(const struct redis_lock *l)
{
    return l ? l->value : "";
}

int redis_lock_holder(struct redis_cluster *rc, const char *prefix, char **value)
{
    char *key = sl_xasprintf("%s:lock", prefix);
    long long pttl;
    int k = peek(rc, key, value, &pttl);
    free(key);
    if (k <= 0)
        *value = NULL;
    return k < 0 ? k : 0;
}

/* ---- renewal --------------------------------------------------------------------------- */

static void *renew_main(void *arg)
{
    struct redis_lock *l = arg;
    char ms[24];
    snprintf(ms, sizeof(ms), "%d", REDIS_LOCK_TTL_MS);
    double last_ok = sl_now();
    pthread_mutex_lock(&l->mu);
    while (!l->stop) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += (long)(REDIS_LOCK_RENEW_MS % 1000) * 1000000L;
        ts.tv_sec += REDIS_LOCK_RENEW_MS / 1000 + ts.tv_nsec / 1000000000L;
        ts.tv_nsec %= 1000000000L;
        pthread_cond_timedwait(&l->cv, &l->mu, &ts);
        if (l->stop)
            break;
        pthread_mutex_unlock(&l->mu);
        long long v = eval(l->rc, renew_lua, l->key, l->value, ms);
        pthread_mutex_lock(&l->mu);
        if (v == 1) {
            last_ok = sl_now();
        } else if (v == 0) {
            snprintf(l->why, sizeof(l->why),
                     "the lease on redis prefix '%s' (key '%s') was lost: it expired or "
                     "another run took it, and the two runs may have mixed their keys",
                     l->prefix, l->key);
            l->lost = 1;
        } else if (sl_now() - last_ok > REDIS_LOCK_TTL_MS / 1000.0) {
            snprintf(l->why, sizeof(l->why),
                     "could not renew the lease on redis prefix '%s' for %d s: %s", l->prefix,
                     REDIS_LOCK_TTL_MS / 1000, sl_err_msg());
            l->lost = 1;
        }
        if (l->lost)
            break;
    }
    pthread_mutex_unlock(&l->mu);
    return NULL;
}

int redis_lock_check(struct redis_lock *l)
{
    if (!l)
        return 0;
    pthread_mutex_lock(&l->mu);
    int rc = l->lost ? sl_err_set(SL_ERR_STATE, "%s", l->why) : 0;
    pthread_mutex_unlock(&l->mu);
    return rc;
}

/* ---- taking and releasing -------------------------------------------------------------- */

/* One attempt: 1 taken, 0 held by *holder (set; the caller frees), <0 an error. */
static int try_take(struct redis_lock *l, char **holder, long long *pttl)
{
    char ms[24];
    snprintf(ms, sizeof(ms), "%d", REDIS_LOCK_TTL_MS);
    const char *argv[6] = { "SET", l->key, l->value, "NX", "PX", ms };
    redisReply *r;
    int k = one(l->rc, 1, 6, argv, 1, &r);
    if (k)
        return k;
    int taken = r->type == REDIS_REPLY_STATUS;
    freeReplyObject(r);
    if (taken)
        return 1;
    k = peek(l->rc, l->key, holder, pttl);
    return k < 0 ? k : 0; /* k == 0: it expired just now; the caller tries again */
}

static int refuse(const struct redis_lock *l, const char *holder, const char *why)
{
    char who[400];
    redis_lock_describe(holder, who, sizeof(who));
    return sl_err_set(SL_ERR_EXISTS,
                      "redis prefix '%s' is in use by another run (%s)%s\nhint: wait until "
                      "that run ends, or give this run other inputs or another --redis-prefix",
                      l->prefix, who, why);
}

/* Take the lease, waiting out a holder elsewhere whose lease is not renewed. */
static int take(struct redis_lock *l)
{
    char *seen = NULL;
    long long seen_ttl = 0;
    double deadline = 0;
    int rc = 0;
    for (;;) {
        char *holder = NULL;
        long long pttl = -2;
        rc = try_take(l, &holder, &pttl);
        if (rc) {
            rc = rc > 0 ? 0 : rc;
            break;
        }
        if (!holder)
            continue; /* expired between SET and GET */
        int alive = holder_alive(holder);
        if (alive == 0) { /* a dead process on this machine */
            long long k = eval(l->rc, unlock_lua, l->key, holder, NULL);
            free(holder);
            if (k < 0) {
                rc = (int)k;
                break;
            }
            continue;
        }
        int same = seen && !strcmp(seen, holder);
        if (alive == 1 || pttl == -1 || (same && pttl > seen_ttl + 50) ||
            (same && sl_now() > deadline)) {
            rc = refuse(l, holder,
                        alive == 1    ? ""
                        : pttl == -1  ? ": its lock key has no expiry"
                                      : ": it renews its lease");
            free(holder);
            break;
        }
        if (!same) { /* watch this holder's lease for up to its TTL */
            free(seen);
            seen = holder;
            deadline = sl_now() + (double)(pttl > 0 ? pttl : 0) / 1000 + 2;
        } else {
            free(holder);
        }
        seen_ttl = pttl;
        struct timespec ts = { 0, 100 * 1000000L };
        nanosleep(&ts, NULL);
    }
    free(seen);
    return rc;
}

int redis_lock_take(struct redis_lock **out, const char *seeds, const char *password,
                    double timeout_s, const char *prefix)
{
    *out = NULL;
    struct redis_lock *l = sl_xcalloc(1, sizeof(*l));
    pthread_mutex_init(&l->mu, NULL);
    pthread_cond_init(&l->cv, NULL);
    l->prefix = sl_xstrdup(prefix);
    l->key = sl_xasprintf("%s:lock", prefix);
    l->value = holder_value();
    int rc = redis_cluster_open(&l->rc, seeds, password, 64, timeout_s);
    if (!rc)
        rc = take(l);
    if (!rc && pthread_create(&l->thread, NULL, renew_main, l) == 0) {
        l->running = 1;
    } else if (!rc) {
        eval(l->rc, unlock_lua, l->key, l->value, NULL);
        rc = sl_err_set(SL_ERR_NOMEM, "cannot start the thread that renews the redis lease");
    }
    if (rc) {
        redis_cluster_free(l->rc);
        l->rc = NULL;
        redis_lock_release(l);
        return rc;
    }
    *out = l;
    return 0;
}

void redis_lock_release(struct redis_lock *l)
{
    if (!l)
        return;
    /* the caller's error message survives the release */
    char saved[SL_ERR_MSG_MAX];
    int code = sl_err_code();
    snprintf(saved, sizeof(saved), "%s", sl_err_msg());
    if (l->running) {
        pthread_mutex_lock(&l->mu);
        l->stop = 1;
        pthread_cond_signal(&l->cv);
        pthread_mutex_unlock(&l->mu);
        pthread_join(l->thread, NULL);
        /* a failure leaves the key to expire */
        eval(l->rc, unlock_lua, l->key, l->value, NULL);
    }
    redis_cluster_free(l->rc);
    pthread_mutex_destroy(&l->mu);
    pthread_cond_destroy(&l->cv);
    free(l->prefix);
    free(l->key);
    free(l->value);
    free(l);
    if (code)
        sl_err_set(code, "%s", saved);
    else
        sl_err_clear();
}
