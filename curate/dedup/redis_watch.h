/* struct redis_watch: the checks that make a Redis Cluster node that loses keys stop a run
 * instead of changing its answer.
 *
 * redis_watch_begin asks every node of the slot map (masters and replicas):
 *   CONFIG GET maxmemory-policy   any policy but noeviction may drop keys: refused, naming
 *                                 the node (a replica counts too: it evicts once promoted).
 *                                 A node where CONFIG is renamed or forbidden cannot be
 *                                 checked: w->warning says so, and the run relies on the
 *                                 eviction count below, which stops it after the fact.
 *   INFO                          run_id (this incarnation of the server process) and
 *                                 evicted_keys: the baseline.
 * A master must answer INFO (an error otherwise: the run could not check it); a replica
 * that does not answer is skipped until it serves slots. A master that does not answer (a
 * failover under way) is waited for, the slot map fetched again, up to timeout_s.
 *
 * redis_watch_check asks every master INFO again. A master whose run_id changed has
 * restarted: its keys are gone (no persistence) or only those of its last save came back;
 * a master whose evicted_keys grew has dropped keys. Either is an error naming the node.
 * A node first seen serving slots (a replica unknown at the start, promoted) gets its
 * baseline then. A master that does not answer is waited for as above.
 *
 * Library code: never prints; errors are enum sl_err with a message.
 */
#ifndef SL_DEDUP_REDIS_WATCH_H
#define SL_DEDUP_REDIS_WATCH_H

#include <stddef.h>
#include <stdint.h>

struct redis_cluster;

struct redis_watch {
    struct rc_watched {
        char name[264];   /* "host:port" */
        char run_id[48];  /* INFO run_id: 40 hex digits */
        uint64_t evicted; /* INFO evicted_keys at the baseline */
    } *v;
    size_t n;
    char warning[512]; /* what begin could not check, for the caller to show ("" if none) */
};

/* 0, SL_ERR_CONFIG (an evicting policy: the message names the node and the policy),
 * SL_ERR_NET (a master did not answer within timeout_s) or SL_ERR_UNSUPPORTED (a master
 * refused INFO). */
int redis_watch_begin(struct redis_watch *w, struct redis_cluster *rc, double timeout_s);

/* 0, or SL_ERR_STATE naming the master that restarted or evicted keys, or the error of a
 * master that did not answer within timeout_s. */
int redis_watch_check(struct redis_watch *w, struct redis_cluster *rc, double timeout_s);

void redis_watch_release(struct redis_watch *w);

/* The value of FIELD ("run_id") in an INFO reply, copied to out (at most n-1 bytes; control
 * characters end it). 0, or -1 when the field is absent. */
int redis_info_field(const char *info, size_t len, const char *field, char *out, size_t n);

#endif
