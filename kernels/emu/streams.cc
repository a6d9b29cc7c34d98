/* The order of work between streams, for the emulation (kernels/emu/): every stream runs on
 * the calling thread, so work on two streams never overlaps here; what this file checks is
 * that the program did not rely on that. Each stream has a vector clock (how far it has seen
 * every stream's work); an event records its stream's clock, a wait joins it into the
 * waiting stream's, and a host synchronisation (stream, event, device, a synchronous copy or
 * a free) joins it into the host's, which every later enqueue inherits. Each piece of work
 * notes the device memory it touches, read or written: a kernel the pointers among its
 * arguments (where each points, not how far it reaches), NCCL and the copies their whole
 * ranges. Two accesses from different streams to the same memory, one of them a write, with
 * nothing ordering the earlier before the later, stop the program with both named: on a GPU
 * they may run at once or in either order (a missing cudaStreamWaitEvent).
 * Not modelled: the legacy default stream's implicit ordering is taken as a full
 * synchronisation before and after (some missing waits around it cannot show), accesses a
 * kernel makes through pointers it computes or reads from memory, and host accesses to
 * pinned memory. Accesses every stream has seen are dropped; past HISTORY_MAX the oldest
 * are dropped too (a race with them is then not seen).
 */
#include <stdio.h>
#include <string.h>

#include <deque>
#include <map>
#include <mutex>
#include <vector>

#include "kernels/cuda_common.h"
#include "kernels/emu/emu.h"

#define HISTORY_MAX 65536 /* accesses kept: a trainer step notes a few thousand */

namespace
{

typedef std::vector<unsigned long long> vclock;

struct access {
    int stream;
    unsigned long long epoch; /* the stream's count of work when it was enqueued */
    uintptr_t lo, hi;
    int write;
    const char *what;
};

std::mutex mu;
std::map<const void *, int> ids; /* stream -> index into clocks; the NULL stream is 0 */
std::vector<vclock> clocks;
vclock host;
std::map<const void *, vclock> events;
std::deque<access> hist;

void join(vclock &a, const vclock &b)
{
    if (a.size() < b.size())
        a.resize(b.size(), 0);
    for (size_t i = 0; i < b.size(); i++)
        if (b[i] > a[i])
            a[i] = b[i];
}

unsigned long long seen(const vclock &c, int s)
{
    return (size_t)s < c.size() ? c[s] : 0;
}

int stream_id(cudaStream_t st)
{
    auto it = ids.find((const void *)st);
    if (it != ids.end())
        return it->second;
    if (clocks.empty())
        clocks.emplace_back(); /* the NULL stream */
    int id = st ? (int)clocks.size() : 0;
    if (st)
        clocks.emplace_back();
    ids[(const void *)st] = id;
    return id;
}

void sync_all(void)
{
    for (const vclock &c : clocks)
        join(host, c);
}

/* Drop what every stream and the host have seen. */
void prune(void)
{
    while (!hist.empty()) {
        const access &a = hist.front();
        int all = seen(host, a.stream) >= a.epoch;
        for (size_t t = 0; all && t < clocks.size(); t++)
            all = seen(clocks[t], a.stream) >= a.epoch;
        if (!all && hist.size() <= HISTORY_MAX)
            break;
        hist.pop_front();
    }
}

} // namespace

void sl_emu_stream_work(cudaStream_t st, const char *what, const sl_emu_access *acc, int n)
{
    std::lock_guard<std::mutex> lock(mu);
    const int s = stream_id(st);
    if (s == 0)
        sync_all();
    vclock &c = clocks[s];
    join(c, host);
    c.resize(clocks.size(), 0);
    const unsigned long long e = ++c[s];
    for (int i = 0; i < n; i++) {
        const uintptr_t lo = (uintptr_t)acc[i].p, hi = lo + (acc[i].bytes ? acc[i].bytes : 1);
        for (const access &a : hist) {
            if (a.stream == s || seen(c, a.stream) >= a.epoch || (!a.write && !acc[i].write) ||
                a.hi <= lo || hi <= a.lo)
                continue;
            char msg[512];
            snprintf(msg, sizeof(msg),
                     "%s (stream %d) %s %p, which %s (stream %d) %s before it, and no event "
                     "or synchronisation orders the two",
                     what, s, acc[i].write ? "writes" : "reads", acc[i].p, a.what, a.stream,
                     a.write ? "wrote" : "read");
            sl_cuda_fatal("cuda-emu", msg, "stream order", __FILE__, __LINE__);
        }
    }
    for (int i = 0; i < n; i++) {
        const uintptr_t lo = (uintptr_t)acc[i].p;
        hist.push_back(
            access{ s, e, lo, lo + (acc[i].bytes ? acc[i].bytes : 1), acc[i].write, what });
    }
    if (s == 0)
        join(host, c);
    prune();
}

void sl_emu_stream_record(cudaEvent_t ev, cudaStream_t st)
{
    std::lock_guard<std::mutex> lock(mu);
    vclock &c = clocks[stream_id(st)];
    join(c, host);
    events[(const void *)ev] = c;
}

void sl_emu_stream_wait(cudaStream_t st, cudaEvent_t ev)
{
    std::lock_guard<std::mutex> lock(mu);
    vclock &c = clocks[stream_id(st)];
    join(c, host);
    auto it = events.find((const void *)ev);
    if (it != events.end())
        join(c, it->second);
}

void sl_emu_host_sync_stream(cudaStream_t st)
{
    std::lock_guard<std::mutex> lock(mu);
    join(host, clocks[stream_id(st)]);
}

void sl_emu_host_sync_event(cudaEvent_t ev)
{
    std::lock_guard<std::mutex> lock(mu);
    auto it = events.find((const void *)ev);
    if (it != events.end())
        join(host, it->second);
}

void sl_emu_host_sync_all(void)
{
    std::lock_guard<std::mutex> lock(mu);
    sync_all();
}

void sl_emu_stream_forget(cudaStream_t st, cudaEvent_t ev)
{
    std::lock_guard<std::mutex> lock(mu);
    if (ev)
        events.erase((const void *)ev);
    if (st) {
        /* its work is finished once destroyed: the host has seen it, the id is not reused */
        auto it = ids.find((const void *)st);
        if (it != ids.end()) {
            join(host, clocks[it->second]);
            ids.erase(it);
        }
    }
}
