/* The job's watchdog: heartbeats between neighbouring ranks (core/mpi_watch.h). */
#include "core/mpi_watch.h"

#include "core/alloc.h"
#include "core/err.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* message tags: a heartbeat, and the last word of a rank that ends */
#define TAG_BEAT 1
#define TAG_BYE  2
/* room for a host name (HOST_NAME_MAX is 64 on Linux) and its terminating NUL */
#define HOST_LEN 65

struct sl_mpi_watch {
    MPI_Comm comm;
    int rank, size;
    int peer[2];    /* the neighbours r - 1 and r + 1 (the same rank in a world of 2) */
    double last[2]; /* when each was last heard from (monotonic seconds) */
    int gone[2];    /* it said it ends */
    double timeout, interval;
    char *hosts; /* size host names of HOST_LEN bytes, in rank order */
    void (*lost)(const char *msg);
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stop;
};

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static const char *host_of(const struct sl_mpi_watch *wd, int rank)
{
    return wd->hosts + (size_t)rank * HOST_LEN;
}

/* an empty message to both neighbours; the request is freed at once (nothing to keep) */
static void send_all(struct sl_mpi_watch *wd, int tag)
{
    for (int i = 0; i < 2; i++) {
        if (i == 1 && wd->peer[1] == wd->peer[0])
            break;
        MPI_Request r;
        if (MPI_Isend(NULL, 0, MPI_BYTE, wd->peer[i], tag, wd->comm, &r) == MPI_SUCCESS)
            MPI_Request_free(&r);
    }
}

/* take every message that has come: a heartbeat refreshes its sender, a bye retires it */
static void drain(struct sl_mpi_watch *wd, double t)
{
    for (;;) {
        int flag = 0;
        MPI_Status st;
        if (MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, wd->comm, &flag, &st) != MPI_SUCCESS || !flag)
            return;
        MPI_Recv(NULL, 0, MPI_BYTE, st.MPI_SOURCE, st.MPI_TAG, wd->comm, MPI_STATUS_IGNORE);
        for (int i = 0; i < 2; i++) {
            if (wd->peer[i] != st.MPI_SOURCE)
                continue;
            wd->last[i] = t;
            if (st.MPI_TAG == TAG_BYE)
                wd->gone[i] = 1;
        }
    }
}

static void *watch_main(void *arg)
{
    struct sl_mpi_watch *wd = arg;
    pthread_mutex_lock(&wd->mu);
    while (!wd->stop) {
        pthread_mutex_unlock(&wd->mu);
        double t = now_s();
        send_all(wd, TAG_BEAT);
        drain(wd, t);
        for (int i = 0; i < 2; i++) {
            if (wd->gone[i] || t - wd->last[i] <= wd->timeout)
                continue;
            char msg[512];
            snprintf(msg, sizeof(msg),
                     "rank %d on host '%s' is lost: nothing from it for %.0f s, as seen from "
                     "rank %d on host '%s'\nhint: its host is down or cut off from the others; "
                     "the job stops: run the same command again when the hosts are back "
                     "(finished work is kept); SLUICE_MPI_TIMEOUT sets the wait (now %.0f s)",
                     wd->peer[i], host_of(wd, wd->peer[i]), t - wd->last[i], wd->rank,
                     host_of(wd, wd->rank), wd->timeout);
            wd->lost(msg);
            return NULL;
        }
        /* the next beat, or earlier when told to stop */
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        double end = (double)until.tv_nsec * 1e-9 + wd->interval;
        until.tv_sec += (time_t)end;
        until.tv_nsec = (long)((end - (double)(time_t)end) * 1e9);
        pthread_mutex_lock(&wd->mu);
        if (!wd->stop)
            pthread_cond_timedwait(&wd->cv, &wd->mu, &until);
    }
    pthread_mutex_unlock(&wd->mu);
    return NULL;
}

int sl_mpi_watch_start(MPI_Comm comm, double timeout, void (*lost)(const char *msg),
                       struct sl_mpi_watch **out)
{
    *out = NULL;
    struct sl_mpi_watch *wd = sl_xcalloc(1, sizeof(*wd));
    int rc = 0;
    MPI_Comm_rank(comm, &wd->rank);
    MPI_Comm_size(comm, &wd->size);
    if (wd->size < 2)
        goto out;
    char me[HOST_LEN] = { 0 };
    if (gethostname(me, sizeof(me) - 1))
        snprintf(me, sizeof(me), "?");
    wd->hosts = sl_xcalloc((size_t)wd->size, HOST_LEN);
    if (MPI_Comm_dup(comm, &wd->comm) != MPI_SUCCESS ||
        MPI_Allgather(me, HOST_LEN, MPI_CHAR, wd->hosts, HOST_LEN, MPI_CHAR, comm) != MPI_SUCCESS) {
        rc = sl_err_set(SL_ERR_MPI, "cannot start the MPI watchdog: MPI_Comm_dup or "
                                    "MPI_Allgather failed");
        goto out;
    }
    wd->peer[0] = (wd->rank + wd->size - 1) % wd->size;
    wd->peer[1] = (wd->rank + 1) % wd->size;
    wd->timeout = timeout;
    wd->interval = timeout / 10 < 1 ? timeout / 10 : 1;
    wd->last[0] = wd->last[1] = now_s();
    wd->lost = lost;
    pthread_mutex_init(&wd->mu, NULL);
    pthread_cond_init(&wd->cv, NULL);
    if (pthread_create(&wd->thread, NULL, watch_main, wd)) {
        rc = sl_err_set(SL_ERR_MPI, "cannot start the MPI watchdog's thread");
        goto out;
    }
    *out = wd;
    return 0;
out:
    free(wd->hosts);
    free(wd);
    return rc;
}

void sl_mpi_watch_stop(struct sl_mpi_watch *wd)
{
    if (!wd)
        return;
    pthread_mutex_lock(&wd->mu);
    wd->stop = 1;
    pthread_cond_signal(&wd->cv);
    pthread_mutex_unlock(&wd->mu);
    pthread_join(wd->thread, NULL);
    send_all(wd, TAG_BYE);
    pthread_mutex_destroy(&wd->mu);
    pthread_cond_destroy(&wd->cv);
    free(wd->hosts);
    free(wd);
}
