/* The pipeline schedules, 1F1B and interleaved, for both trainers (train/schedule.h). */
#include "train/schedule.h"

#include "core/alloc.h"
#include "train/parallel.h"

#include <stdlib.h>

long pp_sched_len(const struct pp_sched *s)
{
    return 2 * s->accum * (s->chunks > 1 ? s->chunks : 1);
}

/* 1F1B: pp - stage - 1 warm-up forwards (at most accum), then a forward whenever fewer than
 * warm + 1 micro-batches are in flight, else a backward. */
static void one_f_one_b(const struct pp_sched *s, struct pp_work *w)
{
    long m = s->accum, warm = s->pp - s->stage - 1, fwd = 0, bwd = 0, n = 0;
    if (warm > m)
        warm = m;
    while (bwd < m) {
        int forward = fwd < m && (fwd < warm || fwd - bwd <= warm);
        w[n++] = (struct pp_work){ forward, 0, forward ? fwd++ : bwd++, 0 };
    }
}

/* Virtual micro-batch k of the interleaved schedule: its chunk (forward; a backward runs the
 * chunks in reverse order) and its micro-batch. */
static struct pp_work virtual_work(const struct pp_sched *s, long k, int fwd)
{
    long pp = s->pp, v = s->chunks;
    int c = (int)(k % (pp * v) / pp);
    return (struct pp_work){ fwd, fwd ? c : (int)(v - 1 - c), k / (pp * v) * pp + k % pp, 0 };
}

static void interleaved(const struct pp_sched *s, struct pp_work *w)
{
    long m = s->accum, v = s->chunks, pp = s->pp, total = m * v, n = 0;
    long warm = m == pp ? total : 2 * (pp - s->stage - 1) + (v - 1) * pp;
    if (warm > total)
        warm = total;
    for (long k = 0; k < warm; k++)
        w[n++] = virtual_work(s, k, 1);
    for (long k = 0; k < total - warm; k++) {
        w[n++] = virtual_work(s, k + warm, 1);
        w[n] = virtual_work(s, k, 0);
        w[n++].joined = 1;
    }
    for (long k = total - warm; k < total; k++)
        w[n++] = virtual_work(s, k, 0);
}

void pp_sched_list(const struct pp_sched *s, struct pp_work *w)
{
    if (s->chunks > 1)
        interleaved(s, w);
    else
        one_f_one_b(s, w);
}

static int first_virtual(const struct pp_sched *s, int chunk)
{
    return s->stage == 0 && chunk == 0;
}

static int last_virtual(const struct pp_sched *s, int chunk)
{
    return s->stage == s->pp - 1 && chunk == (s->chunks > 1 ? s->chunks : 1) - 1;
}

int pp_work_receives(const struct pp_sched *s, const struct pp_work *w)
{
    return w->fwd ? !first_virtual(s, w->chunk) : !last_virtual(s, w->chunk);
}

int pp_work_sends(const struct pp_sched *s, const struct pp_work *w)
{
    return w->fwd ? !last_virtual(s, w->chunk) : !first_virtual(s, w->chunk);
}

/* The pieces w[0..n) block by block, each block after the exchange that sends the previous
 * block's results and receives its inputs. */
static int run_list(const struct pp_sched *s, const struct pp_ops *ops, const struct pp_work *w,
                    long n)
{
    const struct pp_work *send[PP_BLOCK], *recv[PP_BLOCK];
    long prev = 0, prev_n = 0; /* the previous block: w[prev, prev + prev_n) */
    int rc = 0;
    for (long k = 0; k < n && !rc;) {
        long len = 1;
        while (k + len < n && w[k + len].joined && len < PP_BLOCK)
            len++;
        int ns = 0, nr = 0;
        for (long i = prev; i < prev + prev_n; i++)
            if (pp_work_sends(s, &w[i]))
                send[ns++] = &w[i];
        for (long i = k; i < k + len; i++)
            if (pp_work_receives(s, &w[i]))
                recv[nr++] = &w[i];
        if (ns || nr)
            rc = ops->exchange(ops->ctx, send, ns, recv, nr);
        for (long i = k; i < k + len && !rc; i++)
            rc = w[i].fwd ? ops->forward(ops->ctx, w[i].chunk, w[i].micro)
                          : ops->backward(ops->ctx, w[i].chunk, w[i].micro);
        prev = k;
        prev_n = len;
        k += len;
    }
    int ns = 0;
    for (long i = prev; i < prev + prev_n && !rc; i++)
        if (pp_work_sends(s, &w[i]))
            send[ns++] = &w[i];
    if (ns)
        rc = ops->exchange(ops->ctx, send, ns, NULL, 0);
    int r = ops->finish ? ops->finish(ops->ctx) : 0;
    return rc ? rc : r;
}

int pp_sched_run(const struct pp_sched *s, const struct pp_ops *ops)
{
    long n = pp_sched_len(s);
    struct pp_work *w = sl_xcalloc((size_t)n, sizeof(*w));
    pp_sched_list(s, w);
    int rc = run_list(s, ops, w, n);
    free(w);
    return rc;
}

int pp_sched_forward(const struct pp_sched *s, const struct pp_ops *ops, long micro)
{
    struct pp_work w[PARALLEL_MAX_VP];
    int n = s->chunks > 1 ? s->chunks : 1;
    if (n > PARALLEL_MAX_VP)
        n = PARALLEL_MAX_VP;
    for (int c = 0; c < n; c++)
        w[c] = (struct pp_work){ 1, c, micro, 0 };
    return run_list(s, ops, w, n);
}
