/* Tests for the pipeline schedules (train/schedule.c): every stage's list holds each forward
 * and backward once, a micro-batch's forward before its backward (chunks in order forward,
 * in reverse backward); and all stages together, their transfers run as rendezvous point to
 * point (a send and a receive complete only when both are posted; the transfers of one
 * exchange are posted together, the next exchange waits for them, as NCCL's groups on one
 * stream do), finish without deadlock, each receive getting the message it expects, for
 * 1F1B and interleaved layouts. */
#include "tests/harness.h"

#include "core/alloc.h"
#include "train/schedule.h"

#include <stdlib.h>
#include <string.h>

#define MAXT 8192 /* transfers per stage in the largest layout tested */

/* One posted transfer: to or from a peer stage, the message (forward activation or
 * backward gradient, the virtual stage it comes from, the micro-batch). */
struct xfer {
    int send, peer, fwd, from_virtual;
    long micro;
    int group; /* the exchange it belongs to */
    int done;
};

struct stage_rec {
    const struct pp_sched *s;
    struct xfer x[MAXT];
    int n, groups;
    long pieces;
};

static int virt(const struct pp_sched *s, int chunk)
{
    return chunk * s->pp + s->stage;
}

static int rec_fwd(void *ctx, int c, long a)
{
    struct stage_rec *r = ctx;
    (void)c, (void)a;
    r->pieces++;
    return 0;
}

static int rec_exchange(void *ctx, const struct pp_work *const *send, int nsend,
                        const struct pp_work *const *recv, int nrecv)
{
    struct stage_rec *r = ctx;
    const struct pp_sched *s = r->s;
    int pp = s->pp;
    for (int i = 0; i < nsend && r->n < MAXT; i++) {
        int v = virt(s, send[i]->chunk);
        r->x[r->n++] = (struct xfer){ 1,
                                      (s->stage + (send[i]->fwd ? 1 : pp - 1)) % pp,
                                      send[i]->fwd,
                                      v,
                                      send[i]->micro,
                                      r->groups,
                                      0 };
    }
    for (int i = 0; i < nrecv && r->n < MAXT; i++) {
        int v = virt(s, recv[i]->chunk) + (recv[i]->fwd ? -1 : 1);
        r->x[r->n++] = (struct xfer){ 0,
                                      (s->stage + (recv[i]->fwd ? pp - 1 : 1)) % pp,
                                      recv[i]->fwd,
                                      v,
                                      recv[i]->micro,
                                      r->groups,
                                      0 };
    }
    r->groups++;
    return 0;
}

/* The k-th send from a to b matches the k-th receive of b from a (NCCL and MPI keep each
 * pair's order). Returns 0 when every stage finished, -1 on deadlock, -2 on a mismatch. */
static int simulate(struct stage_rec *st, int pp)
{
    int *cur = sl_xcalloc((size_t)pp, sizeof(int)); /* current group of each stage */
    int *pos = sl_xcalloc((size_t)pp, sizeof(int)); /* first transfer of that group */
    int rc = 0;
    for (;;) {
        int progress = 0, all = 1;
        for (int a = 0; a < pp; a++) {
            struct stage_rec *A = &st[a];
            for (int i = pos[a]; i < A->n && A->x[i].group == cur[a]; i++) {
                struct xfer *x = &A->x[i];
                if (x->done || !x->send)
                    continue;
                /* its index among a's sends to that peer, and the receive of the same index */
                int k = 0;
                for (int j = 0; j < i; j++)
                    k += A->x[j].send && A->x[j].peer == x->peer;
                struct stage_rec *B = &st[x->peer];
                int seen = 0;
                for (int j = 0; j < B->n; j++) {
                    struct xfer *y = &B->x[j];
                    if (y->send || y->peer != a)
                        continue;
                    if (seen++ < k)
                        continue;
                    if (y->group != cur[x->peer] || y->done)
                        break; /* not posted yet */
                    if (y->fwd != x->fwd || y->from_virtual != x->from_virtual ||
                        y->micro != x->micro) {
                        rc = -2;
                        goto out;
                    }
                    x->done = y->done = 1;
                    progress = 1;
                    break;
                }
            }
        }
        for (int a = 0; a < pp; a++) {
            struct stage_rec *A = &st[a];
            int i = pos[a], complete = 1;
            for (; i < A->n && A->x[i].group == cur[a]; i++)
                complete &= A->x[i].done;
            if (complete && cur[a] < A->groups) {
                cur[a]++;
                pos[a] = i;
                progress = 1;
            }
            all &= cur[a] >= A->groups;
        }
        if (all)
            break;
        if (!progress) {
            for (int a = 0; getenv("SCHED_DEBUG") && a < pp; a++)
                for (int i = 0; i < st[a].n; i++)
                    fprintf(stderr, "stage %d group %d/%d: %s %c v%d m%ld peer %d%s\n", a,
                            st[a].x[i].group, cur[a], st[a].x[i].send ? "send" : "recv",
                            st[a].x[i].fwd ? 'f' : 'b', st[a].x[i].from_virtual, st[a].x[i].micro,
                            st[a].x[i].peer, st[a].x[i].done ? " done" : "");
            rc = -1;
            break;
        }
    }
out:
    free(cur);
    free(pos);
    return rc;
}

static void check_layout(int pp, int chunks, long accum)
{
    struct pp_sched *s = sl_xcalloc((size_t)pp, sizeof(*s));
    struct stage_rec *st = sl_xcalloc((size_t)pp, sizeof(*st));
    for (int a = 0; a < pp; a++) {
        s[a] = (struct pp_sched){ pp, a, chunks, accum };
        st[a].s = &s[a];
        /* the list: each piece once, forward before backward, chunk order */
        long n = pp_sched_len(&s[a]);
        struct pp_work *w = sl_xcalloc((size_t)n, sizeof(*w));
        pp_sched_list(&s[a], w);
        long *fdone = sl_xcalloc((size_t)(chunks * accum), sizeof(long));
        long *bdone = sl_xcalloc((size_t)(chunks * accum), sizeof(long));
        int order_ok = 1;
        for (long k = 0; k < n; k++) {
            long i = w[k].chunk * accum + w[k].micro;
            if (w[k].fwd) {
                order_ok &= !fdone[i] && (w[k].chunk == 0 || fdone[i - accum]);
                fdone[i] = 1;
            } else {
                order_ok &= fdone[i] && !bdone[i] && (w[k].chunk == chunks - 1 || bdone[i + accum]);
                bdone[i] = 1;
            }
        }
        for (long i = 0; i < chunks * accum; i++)
            order_ok &= fdone[i] && bdone[i];
        CHECK(order_ok);
        free(fdone);
        free(bdone);
        free(w);
        struct pp_ops ops = { &st[a], rec_fwd, rec_fwd, rec_exchange, NULL };
        CHECK_EQ_INT(pp_sched_run(&s[a], &ops), 0);
        CHECK_EQ_INT(st[a].pieces, n);
        CHECK(st[a].n < MAXT);
    }
    int rc = simulate(st, pp);
    if (rc)
        fprintf(stderr, "  pp %d, %d chunks, %ld micro-batches: %s\n", pp, chunks, accum,
                rc == -1 ? "deadlock" : "a receive gets another message");
    CHECK_EQ_INT(rc, 0);
    free(st);
    free(s);
}

TEST(schedule_1f1b_runs_every_piece_without_deadlock)
{
    for (int pp = 1; pp <= 4; pp++)
        for (long accum = 1; accum <= 9; accum++)
            check_layout(pp, 1, accum);
}

TEST(schedule_interleaved_runs_every_piece_without_deadlock)
{
    /* the interleaved schedule takes micro-batches in multiples of pp */
    for (int pp = 2; pp <= 4; pp++)
        for (int v = 2; v <= 3; v++)
            for (long accum = pp; accum <= 4 * pp; accum += pp)
                check_layout(pp, v, accum);
}

TEST(schedule_1f1b_order)
{
    /* stage 0 of 2, 3 micro-batches: one warm-up forward, then F B alternately */
    struct pp_sched s = { 2, 0, 1, 3 };
    struct pp_work w[6];
    pp_sched_list(&s, w);
    static const int fwd[6] = { 1, 1, 0, 1, 0, 0 }, micro[6] = { 0, 1, 0, 2, 1, 2 };
    for (int k = 0; k < 6; k++) {
        CHECK_EQ_INT(w[k].fwd, fwd[k]);
        CHECK_EQ_INT(w[k].micro, micro[k]);
    }
}
