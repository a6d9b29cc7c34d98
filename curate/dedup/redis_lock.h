/* struct redis_lock: a lease on a key prefix in a Redis Cluster, so that one run at a time
 * writes under it.
 *
 * The lease is the key "PREFIX:lock", whose value names its holder:
 *   host=HOST pid=PID start=TICKS ns=PIDNS started=YYYY-MM-DDTHH:MM:SSZ
 * (TICKS: the process' start time in clock ticks since boot, from /proc/PID/stat; PIDNS:
 * its PID namespace, from /proc/self/ns/pid; "-" where unknown). It is set with SET NX PX
 * REDIS_LOCK_TTL_MS, and a thread with connections of its own renews it every
 * REDIS_LOCK_RENEW_MS, only while the key still holds this holder (a Lua script compares
 * and renews in one step), so a lease that lapsed is never taken back from a run that took
 * it in between. Release deletes it the same way.
 *
 * Taking a lease that is held: a holder on this machine (same host name and PID namespace)
 * is alive exactly when its pid runs with its start time, so a dead one's lease is deleted
 * (compare and delete) and taken at once, and a live one's is refused. A holder elsewhere
 * is watched: a lease that expires is taken; one that is renewed (its TTL grows) is
 * refused. Refusals are SL_ERR_EXISTS and name the holder's host, pid and start time.
 *
 * Library code: never prints; errors are enum sl_err with a message.
 */
#ifndef SL_DEDUP_REDIS_LOCK_H
#define SL_DEDUP_REDIS_LOCK_H

#include <stddef.h>

/* The lease lives this long unless renewed: a run killed with its lease held blocks a run
 * from another machine for at most this long. */
#define REDIS_LOCK_TTL_MS 15000
/* Renewed this often: a second run sees a live holder's TTL grow within about this time. */
#define REDIS_LOCK_RENEW_MS 1000

struct redis_lock;

/* Take the lease on `prefix` (connecting to the seeds on connections of its own). 0 with
 * *out set; SL_ERR_EXISTS when another run holds it; the cluster's errors otherwise. */
int redis_lock_take(struct redis_lock **out, const char *seeds, const char *password,
                    double timeout_s, const char *prefix);

/* 0 while the lease is held; SL_ERR_STATE (with a message) once a renewal found the key
 * gone or another run's. */
int redis_lock_check(struct redis_lock *l);

/* Stop renewing and delete the key if it is still this run's. NULL is a no-op. */
void redis_lock_release(struct redis_lock *l);

/* This run's lease value ("" for NULL). */
const char *redis_lock_value(const struct redis_lock *l);

/* The holder of a lease value, for messages: "host H, pid P, started T" into out. */
void redis_lock_describe(const char *value, char *out, size_t n);

struct redis_cluster;
/* Who holds the lease on `prefix` now: 0 with *value (caller frees; NULL: nobody). */
int redis_lock_holder(struct redis_cluster *rc, const char *prefix, char **value);

#endif
