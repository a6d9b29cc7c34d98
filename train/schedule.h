/* The pipeline schedules of the trainer, shared by the CPU and GPU paths: the order in which
 * one pipeline stage runs the forwards and backwards of a step's micro-batches through its
 * model chunks, and the transfers between stages that go with them. A backend supplies the
 * work through callbacks (struct pp_ops); the schedule knows nothing of tensors, devices or
 * MPI.
 *
 * Without virtual stages the schedule is 1F1B (Narayanan et al.): stage s runs pp - s - 1
 * warm-up forwards, then one forward and one backward alternately, then the remaining
 * backwards (without pipeline parallelism: forward, backward per micro-batch). With virtual
 * stages it is Megatron-Core's interleaved one (forward_backward_pipelining_with_interleaving):
 * of the accum x vp forwards, virtual micro-batch k runs chunk (k mod pp vp) / pp on
 * micro-batch (k / pp vp) pp + k mod pp (its backward: the chunks in reverse order); stage s
 * runs 2 (pp - s - 1) + (vp - 1) pp warm-up forwards (all of them when accum = pp), then one
 * forward and one backward alternately, then the remaining backwards.
 *
 * Transfers: the pieces run in blocks (one piece; in the interleaved schedule's steady state a
 * forward and the backward after it, as Megatron-Core runs them). Before each block the
 * schedule calls exchange() once with the sends of the previous block's results (a forward's
 * output to the next virtual stage, a backward's input gradient to the previous one) and the
 * receives of this block's inputs (none for the first virtual stage's forwards and the last
 * one's backwards). A backend whose sends and receives wait for their peers (rendezvous
 * point to point, NCCL's) issues them together: the pairing of Megatron's
 * send_forward_recv_backward and send_forward_backward_recv_forward_backward, free of
 * deadlock for every layout (tests/unit/test_schedule.c runs them all as rendezvous). After
 * the last block exchange() sends its results, then finish() waits for every send.
 */
#ifndef SL_TRAIN_SCHEDULE_H
#define SL_TRAIN_SCHEDULE_H

/* One piece of work: the forward or backward of micro-batch `micro` through chunk `chunk`;
 * joined: it runs in the block of the piece before it. */
struct pp_work {
    int fwd;
    int chunk;
    long micro;
    int joined;
};

#define PP_BLOCK 2 /* pieces in a block at most: a forward and a backward */

struct pp_ops {
    void *ctx;
    /* the work, its input received (by the exchange before it) */
    int (*forward)(void *ctx, int chunk, long micro);
    int (*backward)(void *ctx, int chunk, long micro);
    /* send the results of send[0..nsend) and receive the inputs of recv[0..nrecv) (a forward's
     * and a backward's input at most: distinct buffers) */
    int (*exchange)(void *ctx, const struct pp_work *const *send, int nsend,
                    const struct pp_work *const *recv, int nrecv);
    int (*finish)(void *ctx); /* every send complete (NULL: nothing to wait for) */
};

/* Where a stage is: pp stages, this one `stage`, chunks model chunks (virtual stages) each,
 * accum micro-batches a step. */
struct pp_sched {
    int pp, stage, chunks;
    long accum;
};

/* The stage's step in order: pp_sched_len(s) = 2 x accum x chunks pieces into w. */
long pp_sched_len(const struct pp_sched *s);
void pp_sched_list(const struct pp_sched *s, struct pp_work *w);

/* The work's input comes from another stage / its result goes to one (the chunk is not the
 * first virtual stage's for a forward, the last's for a backward; and conversely). */
int pp_work_receives(const struct pp_sched *s, const struct pp_work *w);
int pp_work_sends(const struct pp_sched *s, const struct pp_work *w);

/* Run one step's schedule: every piece in turn with its exchanges; stops at the first
 * error (returned). finish() runs in any case. */
int pp_sched_run(const struct pp_sched *s, const struct pp_ops *ops);

/* Forward only (validation): micro-batch `micro` through every chunk in turn, with the same
 * exchanges. */
int pp_sched_forward(const struct pp_sched *s, const struct pp_ops *ops, long micro);

#endif
