/* The CUDA trainer's input pipeline: a host thread reads each step's samples from the
 * memory-mapped dataset into pinned buffers two steps ahead; the main thread copies a
 * step's buffer to the device on the copy stream, ordered before the compute stream.
 */
#include "train/gpu_internal.h"

#include "core/alloc.h"
#include "core/err.h"
#include "core/log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ---- the input pipeline -------------------------------------------------------------- */

long gpu_fill_tokens(int32_t *dst, const uint32_t *sample, long b, long T, long N,
                     const struct docmask *dm)
{
    for (long k = 0; k < T; k++) {
        dst[b * T + k] = (int32_t)sample[k];
        dst[N + b * T + k] = (int32_t)sample[k + 1];
    }
    if (!dm)
        return T;
    int32_t *tok = dst + b * T, *tgt = dst + N + b * T;
    long kept = docmask_sample(dm, tok, (int)T, dst + 2 * N + b * T, dst + 3 * N + b * T, NULL);
    for (long k = 0; dm->mask_loss && k < T; k++)
        if (tok[k] == dm->eod)
            tgt[k] = -1; /* the classifier's no-loss row */
    return kept;
}

static void loader_fail(struct gloader *L, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void loader_fail(struct gloader *L, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    pthread_mutex_lock(&L->mu);
    vsnprintf(L->err, sizeof(L->err), fmt, ap);
    L->rc = SL_ERR_STATE;
    pthread_cond_broadcast(&L->cv);
    pthread_mutex_unlock(&L->mu);
    va_end(ap);
}

static void *loader_main(void *arg)
{
    struct gloader *L = arg;
    cudaError_t e = cudaSetDevice(L->dev);
    if (e != cudaSuccess) {
        loader_fail(L, "data thread: cudaSetDevice: %s", cudaGetErrorString(e));
        return NULL;
    }
    long N = L->B * L->T;
    for (long s = L->next; s <= L->last; s++) {
        int slot = (int)(s & 1);
        pthread_mutex_lock(&L->mu);
        while (L->ready[slot] && !L->stop)
            pthread_cond_wait(&L->cv, &L->mu);
        int stop = L->stop, pend = L->pending[slot];
        pthread_mutex_unlock(&L->mu);
        if (stop)
            break;
        if (pend && (e = cudaEventSynchronize(L->copied[slot])) != cudaSuccess) {
            loader_fail(L, "data thread: waiting for a copy: %s", cudaGetErrorString(e));
            return NULL;
        }
        uint64_t base = L->consumed0 + (uint64_t)(s - L->step0 - 1) * (uint64_t)L->global;
        for (long a = 0; a < L->accum; a++)
            for (long b = 0; b < L->B; b++) {
                uint64_t i = base + (uint64_t)(a * L->B * L->W + L->rank * L->B + b);
                if (data_loader_sample(L->data, DATA_TRAIN, i, L->sample)) {
                    loader_fail(L, "%s", sl_err_msg());
                    return NULL;
                }
                long kept = gpu_fill_tokens(L->pinned[slot] + (size_t)a * L->tw * N, L->sample, b,
                                            L->T, N, L->dm);
                L->kept[slot][a] = (b ? L->kept[slot][a] : 0) + kept;
            }
        pthread_mutex_lock(&L->mu);
        L->ready[slot] = 1;
        pthread_cond_broadcast(&L->cv);
        pthread_mutex_unlock(&L->mu);
    }
    return NULL;
}

/* Step s's batch onto the device (copy stream), ordered before the compute stream's work. */
int gpu_loader_take(struct gt *t, long s)
{
    struct gloader *L = &t->ld;
    int slot = (int)(s & 1);
    pthread_mutex_lock(&L->mu);
    while (!L->ready[slot] && !L->rc)
        pthread_cond_wait(&L->cv, &L->mu);
    int ready = L->ready[slot];
    pthread_mutex_unlock(&L->mu);
    if (!ready)
        return sl_err_set(SL_ERR_STATE, "%s", L->err);
    size_t bytes = (size_t)L->accum * t->tw * (size_t)t->N * sizeof(int32_t);
    memcpy(t->kept, L->kept[slot], (size_t)L->accum * sizeof(long));
    /* the device buffer was last read by step s - 2 */
    CUDA_CHECK(cudaStreamWaitEvent(t->copy, t->step_done[slot], 0));
    CUDA_CHECK(
        cudaMemcpyAsync(t->d_tok[slot], L->pinned[slot], bytes, cudaMemcpyHostToDevice, t->copy));
    CUDA_CHECK(cudaEventRecord(L->copied[slot], t->copy));
    CUDA_CHECK(cudaStreamWaitEvent(t->st, L->copied[slot], 0));
    pthread_mutex_lock(&L->mu);
    L->ready[slot] = 0;
    L->pending[slot] = 1;
    pthread_cond_broadcast(&L->cv);
    pthread_mutex_unlock(&L->mu);
    return 0;
}

int gpu_loader_start(struct gt *t, long step0, uint64_t consumed0)
{
    struct gloader *L = &t->ld;
    const struct train_opts *a = t->a;
    pthread_mutex_init(&L->mu, NULL);
    pthread_cond_init(&L->cv, NULL);
    L->data = t->data;
    L->dev = t->dev;
    L->B = a->micro_batch;
    L->T = a->seq_len;
    L->accum = a->accum;
    L->W = t->DP; /* the ranks of a tensor-parallel group read the same samples */
    L->rank = t->dpr;
    L->global = a->global_batch;
    L->dm = t->dm;
    L->tw = t->tw;
    size_t bytes = (size_t)a->accum * t->tw * (size_t)t->N * sizeof(int32_t);
    for (int i = 0; i < 2; i++) {
        L->kept[i] = sl_xcalloc((size_t)a->accum, sizeof(long));
        CUDA_CHECK(cudaHostAlloc((void **)&L->pinned[i], bytes, cudaHostAllocDefault));
        CUDA_CHECK(cudaEventCreateWithFlags(&L->copied[i], cudaEventDisableTiming));
    }
    L->sample = sl_xmalloc((size_t)(a->seq_len + 1) * sizeof(uint32_t));
    L->step0 = step0;
    L->consumed0 = consumed0;
    L->next = step0 + 1;
    L->last = a->steps;
    if (pthread_create(&L->th, NULL, loader_main, L) != 0)
        return sl_err_set(SL_ERR_STATE, "cannot start the data thread: %s", strerror(errno));
    L->started = 1;
    return 0;
}

void gpu_loader_stop(struct gt *t)
{
    struct gloader *L = &t->ld;
    if (L->started) {
        pthread_mutex_lock(&L->mu);
        L->stop = 1;
        pthread_cond_broadcast(&L->cv);
        pthread_mutex_unlock(&L->mu);
        pthread_join(L->th, NULL);
        L->started = 0;
    }
    for (int i = 0; i < 2; i++) {
        if (L->pinned[i])
            cudaFreeHost(L->pinned[i]);
        if (L->copied[i])
            cudaEventDestroy(L->copied[i]);
        L->pinned[i] = NULL;
        L->copied[i] = NULL;
    }
    free(L->sample);
    L->sample = NULL;
    for (int i = 0; i < 2; i++) {
        free(L->kept[i]);
        L->kept[i] = NULL;
    }
    if (L->data) {
        pthread_mutex_destroy(&L->mu);
        pthread_cond_destroy(&L->cv);
        L->data = NULL;
    }
}
