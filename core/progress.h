/* Progress of long work on stderr: on a terminal a live line (rate, ETA) redrawn at most
 * 10 times a second; otherwise a plain line every 30 s (SLUICE_PROGRESS_INTERVAL seconds
 * to change it); nothing when the log level is below info or `enabled` is 0 (non-zero
 * ranks). Updates are cheap enough to call per document. */
#ifndef SL_PROGRESS_H
#define SL_PROGRESS_H

#include <stdint.h>

struct sl_progress {
    char label[64];
    uint64_t total; /* 0: unknown */
    uint64_t done;
    uint64_t items; /* documents (shown beside bytes) */
    int bytes;      /* units are bytes (shown as MB, GB) */
    int enabled, tty;
    double interval;
    double t0, last;
    int drawn;
};

void sl_progress_start(struct sl_progress *p, const char *label, uint64_t total, int bytes,
                       int enabled);
/* Set the amount done (and items so far); redraws when due. */
void sl_progress_update(struct sl_progress *p, uint64_t done, uint64_t items);
/* Final line (terminal: redraw complete and newline). */
void sl_progress_finish(struct sl_progress *p);

/* Monotonic seconds. */
double sl_now(void);
/* CPU seconds of the calling thread. */
double sl_thread_cpu(void);
/* "1.5 GB", "320 kB", "17 B" into buf. */
const char *sl_human_bytes(double v, char *buf, int n);

#endif
