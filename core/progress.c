/* Live progress lines on stderr. */
#include "core/progress.h"

#include "core/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

double sl_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

double sl_thread_cpu(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static double now_coarse(void)
{
#ifdef CLOCK_MONOTONIC_COARSE
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
#else
    return sl_now();
#endif
}

const char *sl_human_bytes(double v, char *buf, int n)
{
    static const char *const units[] = { "B", "kB", "MB", "GB", "TB", "PB" };
    int u = 0;
    while (v >= 1000.0 && u < 5) {
        v /= 1000.0;
        u++;
    }
    snprintf(buf, (size_t)n, u ? "%.1f %s" : "%.0f %s", v, units[u]);
    return buf;
}

void sl_progress_start(struct sl_progress *p, const char *label, uint64_t total, int bytes,
                       int enabled)
{
    memset(p, 0, sizeof(*p));
    snprintf(p->label, sizeof(p->label), "%s", label);
    p->total = total;
    p->bytes = bytes;
    p->enabled = enabled && sl_log_level() >= SL_LOG_INFO;
    p->tty = isatty(2);
    const char *iv = getenv("SLUICE_PROGRESS_INTERVAL");
    p->interval = p->tty ? 0.1 : (iv ? atof(iv) : 30.0);
    if (p->interval <= 0)
        p->interval = 30.0;
    p->t0 = sl_now();
    p->last = p->interval >= 1.0 ? now_coarse() : p->t0;
}

static void draw(struct sl_progress *p, double t, int final)
{
    char done[32], total[32], rate[32], line[256];
    double el = t - p->t0;
    double r = el > 0 ? (double)p->done / el : 0;
    if (p->bytes) {
        sl_human_bytes((double)p->done, done, sizeof(done));
        sl_human_bytes((double)p->total, total, sizeof(total));
        sl_human_bytes(r, rate, sizeof(rate));
        strcat(rate, "/s");
    } else {
        snprintf(done, sizeof(done), "%llu", (unsigned long long)p->done);
        snprintf(total, sizeof(total), "%llu", (unsigned long long)p->total);
        snprintf(rate, sizeof(rate), "%.0f/s", r);
    }
    int n = snprintf(line, sizeof(line), "%s: %s", p->label, done);
    if (p->total) {
        double frac = (double)p->done / (double)p->total;
        n += snprintf(line + n, sizeof(line) - (size_t)n, "/%s (%.1f%%)", total, 100.0 * frac);
    }
    if (p->items)
        n += snprintf(line + n, sizeof(line) - (size_t)n, ", %llu docs",
                      (unsigned long long)p->items);
    n += snprintf(line + n, sizeof(line) - (size_t)n, ", %s", rate);
    if (!final && p->total && r > 0 && p->done < p->total) {
        double eta = (double)(p->total - p->done) / r;
        n += snprintf(line + n, sizeof(line) - (size_t)n, ", eta %d:%02d", (int)eta / 60,
                      (int)eta % 60);
    } else if (final) {
        n += snprintf(line + n, sizeof(line) - (size_t)n, ", %.1f s", el);
    }
    if (p->tty)
        fprintf(stderr, "\r%s\x1b[K%s", line, final ? "\n" : "");
    else
        fprintf(stderr, "%s\n", line);
    p->drawn = 1;
}

void sl_progress_update(struct sl_progress *p, uint64_t done, uint64_t items)
{
    p->done = done;
    p->items = items;
    if (!p->enabled)
        return;
    /* the coarse clock is cheap; short intervals (tests) need the precise one */
    double t = p->interval >= 1.0 ? now_coarse() : sl_now();
    if (t - p->last < p->interval)
        return;
    p->last = t;
    draw(p, sl_now(), 0);
}

void sl_progress_finish(struct sl_progress *p)
{
    if (!p->enabled)
        return;
    /* On a terminal close the live line; elsewhere when a line was due (the work took
     * longer than the interval) or one was printed already. */
    double t = sl_now();
    if (p->tty || p->drawn || t - p->t0 >= p->interval)
        draw(p, t, 1);
}
