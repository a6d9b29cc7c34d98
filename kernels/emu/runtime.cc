/* The grid runner of the CUDA emulation (kernels/emu/emu.h): blocks one after another, each
 * block's threads as fibers on the calling OS thread, switched at __syncthreads and at the
 * warp exchanges (shuffles, mma.sync.m16n8k16, ldmatrix), which are carried out when every
 * lane named in the mask has arrived. Launch checks, the shared-memory opt-in, the strict
 * (reversed / shuffled) orders and the fatal diagnostics are here too.
 * Not modelled: blocks running at the same time (one block at a time, so no races between
 * blocks show), warps running ahead of each other between barriers in any order the hardware
 * could choose (only the orders listed in emu.h), registers, occupancy and __launch_bounds__.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include <vector>

#include "kernels/cuda_common.h"
#include "kernels/emu/emu.h"

#if defined(__SANITIZE_ADDRESS__)
/* AddressSanitizer is told of every switch between stacks, and a reused stack is unpoisoned */
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#define ASAN_FIBERS 1
#endif

uint3 sl_emu_threadIdx, sl_emu_blockIdx;
dim3 sl_emu_blockDim, sl_emu_gridDim;
int sl_emu_lane;

/* ---- limits, as an H100 (sm_90) reports them ------------------------------------------- */
#define MAX_THREADS    1024        /* per block */
#define MAX_BLOCK_Z    64          /* blockDim.z */
#define MAX_GRID_X     2147483647u /* 2^31 - 1 */
#define MAX_GRID_YZ    65535u
#define SMEM_DEFAULT   49152      /* dynamic shared memory without the opt-in: 48 KiB */
#define SMEM_OPTIN_MAX 232448     /* cudaDevAttrMaxSharedMemoryPerBlockOptin: 227 KiB */
#define FIBER_STACK    (64 << 10) /* per thread: kernels keep a few KiB of locals */
#define GUARD          4096       /* an unmapped page below each stack: overflow faults */

/* ---- fibers ------------------------------------------------------------------------------ */

#if defined(__x86_64__)
/* void sl_emu_switch(void **save_sp, void *to_sp): push the callee-saved registers, save the
 * stack pointer, load the other one, pop, return into it. The SSE and x87 control words are
 * not switched: kernels do not change rounding modes, and their loads are slow. */
extern "C" void sl_emu_switch(void **save_sp, void *to_sp);
asm(".text\n"
    ".globl sl_emu_switch\n"
    ".hidden sl_emu_switch\n"
    ".type sl_emu_switch,@function\n"
    "sl_emu_switch:\n"
    "  pushq %rbp\n  pushq %rbx\n  pushq %r12\n  pushq %r13\n  pushq %r14\n  pushq %r15\n"
    "  movq %rsp, (%rdi)\n  movq %rsi, %rsp\n"
    "  popq %r15\n  popq %r14\n  popq %r13\n  popq %r12\n  popq %rbx\n  popq %rbp\n"
    "  ret\n"
    ".size sl_emu_switch, .-sl_emu_switch\n");
#else
#include <ucontext.h>
#endif

enum { T_RUN, T_BAR, T_WARP, T_DONE };
enum { OP_SHFL = 1, OP_MMA, OP_LDSM };

struct fiber {
#if defined(__x86_64__)
    void *sp;
#else
    ucontext_t uc;
#endif
    unsigned char *stack; /* FIBER_STACK bytes */
    void *fake;           /* AddressSanitizer's fake stack while switched out */
    uint3 idx;
    int linear, lane, warp, state;
    /* the warp exchange this thread waits at */
    const char *what;
    unsigned mask;
    int src;
    uint64_t val;
    float *c;
    const uint32_t *a;
    uint32_t b0, b1;
    const void *row;
    uint32_t *r0, *r1;
};

struct warp {
    int arrived;
    int op;
    unsigned mask;
    const char *what;
};

static struct {
    std::vector<fiber> f;
    std::vector<warp> w;
    std::vector<int> order;
    unsigned char *stacks;
    int nstacks;
#if defined(__x86_64__)
    void *sched_sp;
#else
    ucontext_t sched;
#endif
    const void *sched_bottom; /* the scheduler's stack, for AddressSanitizer */
    size_t sched_size;
    fiber *cur;
    int n, live, at_bar;
    const char *kernel;
    const void *key;
    void (*body)(void *);
    void *ctx;
    /* strict order */
    int strict; /* SL_CUDA_EMU_STRICT: 0 no, 1 reversed, 2 shuffled, 3 alternating */
    int mode;   /* of this launch: 0 natural, 1 reversed, 2 shuffled */
    uint64_t rng;
    unsigned long long launches;
    /* shared memory */
    size_t smem;
    std::vector<std::pair<const void *, int>> optin;
} g;

alignas(128) static unsigned char dyn_smem[SMEM_OPTIN_MAX];

/* the static __shared__ variables, each with the kernel that declares it */
struct shared_var {
    unsigned char *p;
    size_t bytes;
    const void *key;
};
static std::vector<shared_var> shared_vars;

static void fatal(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
static void fatal(const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    char where[160];
    snprintf(where, sizeof(where), "kernel '%s' block (%u,%u,%u)%s", g.kernel ? g.kernel : "?",
             sl_emu_blockIdx.x, sl_emu_blockIdx.y, sl_emu_blockIdx.z,
             g.mode == 1   ? " [strict: reversed]"
             : g.mode == 2 ? " [strict: shuffled]"
                           : "");
    fflush(stdout); /* so that the message follows what the program printed so far */
    sl_cuda_fatal("cuda-emu", msg, where, __FILE__, __LINE__);
}

static uint64_t next_rand(void) /* splitmix64 */
{
    uint64_t z = (g.rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static void shuffle(int *v, int n)
{
    for (int i = n - 1; i > 0; i--) {
        int j = (int)(next_rand() % (uint64_t)(i + 1));
        int t = v[i];
        v[i] = v[j];
        v[j] = t;
    }
}

static void yield(void)
{
    fiber *f = g.cur;
#ifdef ASAN_FIBERS
    __sanitizer_start_switch_fiber(&f->fake, g.sched_bottom, g.sched_size);
#endif
#if defined(__x86_64__)
    sl_emu_switch(&f->sp, g.sched_sp);
#else
    swapcontext(&f->uc, &g.sched);
#endif
#ifdef ASAN_FIBERS
    __sanitizer_finish_switch_fiber(f->fake, &g.sched_bottom, &g.sched_size);
#endif
}

static void thread_exit(void);

static void fiber_entry(void)
{
#ifdef ASAN_FIBERS
    __sanitizer_finish_switch_fiber(NULL, &g.sched_bottom, &g.sched_size);
#endif
    g.body(g.ctx);
    thread_exit();
}

static void stacks_reserve(int n)
{
    if (g.nstacks >= n)
        return;
    /* once, for the largest block a launch can have: 1024 stacks, each above a guard page */
    size_t per = FIBER_STACK + GUARD, bytes = per * MAX_THREADS;
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    if (p == MAP_FAILED)
        fatal("cannot map %zu bytes of fiber stacks", bytes);
    g.stacks = (unsigned char *)p;
    for (int i = 0; i < MAX_THREADS; i++)
        mprotect(g.stacks + per * i, GUARD, PROT_NONE);
    g.nstacks = MAX_THREADS;
    g.f.resize(MAX_THREADS);
    for (int i = 0; i < MAX_THREADS; i++)
        g.f[i].stack = g.stacks + per * i + GUARD;
}

static void fiber_start(fiber *f)
{
#ifdef ASAN_FIBERS
    __asan_unpoison_memory_region(f->stack, FIBER_STACK);
#endif
#if defined(__x86_64__)
    /* a frame that sl_emu_switch pops: six registers, the entry as return address, and a
     * zero where the entry's own return address would be (so that the entry starts with the
     * stack aligned as after a call) */
    /* the tops of the stacks are FIBER_STACK + GUARD apart, a multiple of the page size, so
     * they would all fall in one cache set: start each at a different 64-byte offset */
    const size_t color = (size_t)(f->linear & 63) * 64;
    uint64_t *sp = (uint64_t *)(((uintptr_t)(f->stack + FIBER_STACK - color)) & ~(uintptr_t)15);
    *--sp = 0;
    *--sp = (uint64_t)(uintptr_t)fiber_entry;
    for (int i = 0; i < 6; i++)
        *--sp = 0;
    f->sp = sp;
#else
    getcontext(&f->uc);
    f->uc.uc_stack.ss_sp = f->stack;
    f->uc.uc_stack.ss_size = FIBER_STACK;
    f->uc.uc_link = NULL;
    makecontext(&f->uc, fiber_entry, 0);
#endif
}

static void run(fiber *f)
{
    g.cur = f;
    sl_emu_threadIdx = f->idx;
    sl_emu_lane = f->lane;
#ifdef ASAN_FIBERS
    void *fake = NULL;
    __sanitizer_start_switch_fiber(&fake, f->stack, FIBER_STACK);
#endif
#if defined(__x86_64__)
    sl_emu_switch(&g.sched_sp, f->sp);
#else
    swapcontext(&g.sched, &f->uc);
#endif
#ifdef ASAN_FIBERS
    __sanitizer_finish_switch_fiber(fake, NULL, NULL);
#endif
}

/* ---- barriers and warp exchanges --------------------------------------------------------- */

static void release_barrier(void)
{
    for (int i = 0; i < g.n; i++)
        if (g.f[i].state == T_BAR)
            g.f[i].state = T_RUN;
    g.at_bar = 0;
}

void sl_emu_syncthreads(void)
{
    g.cur->state = T_BAR;
    if (++g.at_bar == g.live)
        release_barrier();
    yield();
}

static void thread_exit(void)
{
    fiber *f = g.cur;
    f->state = T_DONE;
    g.live--;
    const warp *w = &g.w[f->warp];
    if (w->arrived && (w->mask >> f->lane & 1))
        fatal("thread %d exits while lanes of its warp wait for it at %s", f->linear, w->what);
    if (g.at_bar && g.at_bar == g.live)
        release_barrier();
#ifdef ASAN_FIBERS
    __sanitizer_start_switch_fiber(NULL, g.sched_bottom, g.sched_size); /* this stack is done */
#endif
#if defined(__x86_64__)
    void *dead;
    sl_emu_switch(&dead, g.sched_sp);
#else
    setcontext(&g.sched);
#endif
    abort(); /* not reached: a finished fiber is never resumed */
}

static uint16_t bf16_half(uint32_t v, int hi)
{
    return (uint16_t)(hi ? v >> 16 : v);
}

static float bf16_bits_to_float(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* D = A B + C for the warp, A 16x16 and B 16x8 bf16, C/D fp32, from and to the fragments of
 * the 32 lanes (PTX ISA, mma.m16n8k16 .row.col; g = lane / 4, q = lane % 4, the lower half
 * of a 32-bit register holding the smaller column or row index):
 *   a0 = A[g][2q,2q+1]   a1 = A[g+8][2q,2q+1]   a2 = A[g][2q+8,2q+9]   a3 = A[g+8][2q+8,2q+9]
 *   b0 = B[2q,2q+1][g]   b1 = B[2q+8,2q+9][g]
 *   c0,c1 = C[g][2q,2q+1]                       c2,c3 = C[g+8][2q,2q+1]
 * Each element is C plus the 16 products summed in k order in fp32 (the tensor cores' order
 * and rounding are not modelled). */
static void do_mma(fiber *lanes)
{
    float A[16][16], B[16][8], C[16][8];
    for (int l = 0; l < 32; l++) {
        const fiber *f = &lanes[l];
        const int gr = l >> 2, q = l & 3;
        for (int h = 0; h < 2; h++) {
            A[gr][2 * q + h] = bf16_bits_to_float(bf16_half(f->a[0], h));
            A[gr + 8][2 * q + h] = bf16_bits_to_float(bf16_half(f->a[1], h));
            A[gr][2 * q + 8 + h] = bf16_bits_to_float(bf16_half(f->a[2], h));
            A[gr + 8][2 * q + 8 + h] = bf16_bits_to_float(bf16_half(f->a[3], h));
            B[2 * q + h][gr] = bf16_bits_to_float(bf16_half(f->b0, h));
            B[2 * q + 8 + h][gr] = bf16_bits_to_float(bf16_half(f->b1, h));
            C[gr][2 * q + h] = f->c[h];
            C[gr + 8][2 * q + h] = f->c[2 + h];
        }
    }
    for (int l = 0; l < 32; l++) {
        const int gr = l >> 2, q = l & 3;
        for (int e = 0; e < 4; e++) {
            const int i = gr + (e >> 1) * 8, j = 2 * q + (e & 1);
            float acc = C[i][j];
            for (int k = 0; k < 16; k++)
                acc = fmaf(A[i][k], B[k][j], acc);
            lanes[l].c[e] = acc;
        }
    }
}

static int in_shared(const void *p, size_t bytes)
{
    const unsigned char *c = (const unsigned char *)p;
    if (c >= dyn_smem && c + bytes <= dyn_smem + g.smem)
        return 1;
    for (const auto &v : shared_vars)
        if (v.key == g.key && c >= v.p && c + bytes <= v.p + v.bytes)
            return 1;
    return 0;
}

/* ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16: lanes 0-7 give the rows of matrix 0, lanes
 * 8-15 those of matrix 1 (16 bytes each, 16-byte aligned, in shared memory); transposed,
 * lane l receives in register m the elements (2(l%4), l/4) and (2(l%4)+1, l/4) of matrix m. */
static void do_ldmatrix(fiber *lanes)
{
    uint16_t M[2][8][8];
    for (int l = 0; l < 16; l++) {
        const void *p = lanes[l].row;
        if ((uintptr_t)p & 15)
            fatal("ldmatrix row address %p of lane %d is not 16-byte aligned", p, l);
        if (!in_shared(p, 16))
            fatal("ldmatrix row address %p of lane %d is not in shared memory", p, l);
        memcpy(M[l >> 3][l & 7], p, 16);
    }
    for (int l = 0; l < 32; l++) {
        const int r = 2 * (l & 3), c = l >> 2;
        *lanes[l].r0 = (uint32_t)M[0][r][c] | (uint32_t)M[0][r + 1][c] << 16;
        *lanes[l].r1 = (uint32_t)M[1][r][c] | (uint32_t)M[1][r + 1][c] << 16;
    }
}

static void do_shfl(fiber *lanes, unsigned mask)
{
    uint64_t in[32];
    for (int l = 0; l < 32; l++)
        in[l] = (mask >> l & 1) ? lanes[l].val : 0;
    for (int l = 0; l < 32; l++) {
        if (!(mask >> l & 1))
            continue;
        const int s = lanes[l].src;
        if (s >= 0 && !(mask >> s & 1))
            fatal("%s: lane %d reads lane %d, which is not in the mask 0x%08x", lanes[l].what, l, s,
                  mask);
        lanes[l].val = s >= 0 ? in[s] : in[l];
    }
}

/* This lane arrives at a warp exchange; the last lane named in the mask carries it out. */
static void warp_arrive(int op, const char *what, unsigned mask)
{
    fiber *f = g.cur;
    warp *w = &g.w[f->warp];
    const int first = f->warp * 32, nlanes = g.n - first < 32 ? g.n - first : 32;
    const unsigned exists = nlanes == 32 ? 0xffffffffu : (1u << nlanes) - 1;
    f->what = what;
    f->mask = mask;
    if (mask & ~exists)
        fatal("%s (thread %d): mask 0x%08x names lanes that do not exist (warp %d has %d)", what,
              f->linear, mask, f->warp, nlanes);
    if (!(mask >> f->lane & 1))
        fatal("%s (thread %d): the calling lane %d is not in the mask 0x%08x", what, f->linear,
              f->lane, mask);
    /* the first lane to arrive checks for exited lanes: a lane named in the mask cannot exit
     * while others wait (thread_exit) */
    for (int l = 0; w->arrived == 0 && l < nlanes; l++)
        if ((mask >> l & 1) && g.f[first + l].state == T_DONE)
            fatal("%s (thread %d): mask 0x%08x names lane %d, which has exited", what, f->linear,
                  mask, l);
    if (w->arrived == 0) {
        w->op = op;
        w->what = what;
        w->mask = mask;
    } else if (w->op != op || w->what != what || w->mask != mask) {
        fatal("lanes of warp %d meet at different exchanges: %s (mask 0x%08x) and %s "
              "(mask 0x%08x, thread %d)",
              f->warp, w->what, w->mask, what, mask, f->linear);
    }
    f->state = T_WARP;
    if (++w->arrived == (mask == 0xffffffffu ? 32 : __builtin_popcount(mask))) {
        fiber *lanes = &g.f[first];
        if (op == OP_SHFL)
            do_shfl(lanes, mask);
        else if (op == OP_MMA)
            do_mma(lanes);
        else
            do_ldmatrix(lanes);
        for (int l = 0; l < nlanes; l++)
            if (mask >> l & 1)
                lanes[l].state = T_RUN;
        w->arrived = 0;
    }
    yield();
}

uint64_t sl_emu_shfl(const char *what, unsigned mask, uint64_t v, int src)
{
    g.cur->val = v;
    g.cur->src = src;
    warp_arrive(OP_SHFL, what, mask);
    return g.cur->val;
}

void sl_emu_mma_m16n8k16_bf16(float c[4], const uint32_t a[4], uint32_t b0, uint32_t b1)
{
    fiber *f = g.cur;
    f->c = c;
    f->a = a;
    f->b0 = b0;
    f->b1 = b1;
    warp_arrive(OP_MMA, "mma.sync.aligned.m16n8k16", 0xffffffffu);
}

void sl_emu_ldmatrix_x2_trans(uint32_t &r0, uint32_t &r1, const void *row)
{
    fiber *f = g.cur;
    f->row = row;
    f->r0 = &r0;
    f->r1 = &r1;
    warp_arrive(OP_LDSM, "ldmatrix.sync.aligned.m8n8.x2.trans", 0xffffffffu);
}

bool sl_emu_shared_register(void *p, size_t bytes)
{
    shared_vars.push_back({ (unsigned char *)p, bytes, g.key });
    memset(p, 0xff, bytes);
    return true;
}

void *sl_emu_dynamic_smem(void)
{
    return dyn_smem;
}

/* ---- a block, a grid ---------------------------------------------------------------------- */

static void deadlock(void)
{
    int bar = 0, wait = 0, done = 0;
    const char *what = "";
    for (int i = 0; i < g.n; i++) {
        bar += g.f[i].state == T_BAR;
        done += g.f[i].state == T_DONE;
        if (g.f[i].state == T_WARP) {
            wait++;
            what = g.f[i].what;
        }
    }
    fatal("deadlock: of %d threads, %d wait at __syncthreads, %d at a warp exchange%s%s, "
          "%d have exited",
          g.n, bar, wait, wait ? " " : "", what, done);
}

static void run_block(void)
{
    const dim3 b = sl_emu_blockDim;
    g.live = g.n;
    g.at_bar = 0;
    for (int i = 0; i < g.n; i++) {
        fiber *f = &g.f[i];
        f->idx = make_uint3((unsigned)i % b.x, (unsigned)i / b.x % b.y, (unsigned)i / (b.x * b.y));
        f->linear = i;
        f->lane = i & 31;
        f->warp = i >> 5;
        f->state = T_RUN;
        fiber_start(f);
    }
    for (auto &w : g.w)
        w.arrived = 0;
    /* shared memory starts as garbage: NaN in bf16 and fp32 */
    for (const auto &v : shared_vars)
        if (v.key == g.key)
            memset(v.p, 0xff, v.bytes);
    memset(dyn_smem, 0xff, g.smem);
    while (g.live > 0) {
        if (g.mode == 2)
            shuffle(g.order.data(), g.n);
        int ran = 0;
        for (int k = 0; k < g.n; k++) {
            fiber *f = &g.f[g.order[k]];
            if (f->state == T_RUN) {
                run(f);
                ran++;
            }
        }
        if (!ran)
            deadlock();
    }
}

static int optin_of(const void *key)
{
    for (auto &p : g.optin)
        if (p.first == key)
            return p.second;
    return 0;
}

extern "C" cudaError_t cudaFuncSetAttribute(const void *func, enum cudaFuncAttribute attr,
                                            int value)
{
    if (attr != cudaFuncAttributeMaxDynamicSharedMemorySize)
        return cudaSuccess; /* the carve-out preference has no effect here */
    if (value < 0 || value > SMEM_OPTIN_MAX)
        return cudaErrorInvalidValue;
    for (auto &p : g.optin)
        if (p.first == func) {
            p.second = value;
            return cudaSuccess;
        }
    g.optin.push_back({ func, value });
    return cudaSuccess;
}

cudaError_t sl_emu_record_error(cudaError_t e); /* kernels/emu/cudart.cc */

static int check_launch(const char *name, const void *key, dim3 grid, dim3 block, size_t smem)
{
    const unsigned long long threads = (unsigned long long)block.x * block.y * block.z;
    fflush(stdout); /* a refusal's note below then follows what the program printed */
    if (!threads || threads > MAX_THREADS || block.z > MAX_BLOCK_Z || !grid.x || !grid.y ||
        !grid.z || grid.x > MAX_GRID_X || grid.y > MAX_GRID_YZ || grid.z > MAX_GRID_YZ) {
        fprintf(stderr,
                "cuda-emu: launch of '%s': grid (%u,%u,%u) block (%u,%u,%u) is not a "
                "valid configuration\n",
                name, grid.x, grid.y, grid.z, block.x, block.y, block.z);
        sl_emu_record_error(cudaErrorInvalidConfiguration);
        return -1;
    }
    const int optin = optin_of(key);
    const size_t allowed = optin > SMEM_DEFAULT ? (size_t)optin : SMEM_DEFAULT;
    if (smem > allowed) {
        fprintf(stderr,
                "cuda-emu: launch of '%s': %zu bytes of dynamic shared memory, %zu "
                "allowed (cudaFuncSetAttribute MaxDynamicSharedMemorySize: %d)\n",
                name, smem, allowed, optin);
        sl_emu_record_error(cudaErrorInvalidValue);
        return -1;
    }
    return 0;
}

/* SL_CUDA_EMU_STRICT: "reversed" or "shuffled" for that order in every launch, another
 * value but "0" for the two alternating launch by launch */
static void strict_init(void)
{
    static int done;
    if (done)
        return;
    done = 1;
    const char *s = getenv("SL_CUDA_EMU_STRICT"), *seed = getenv("SL_CUDA_EMU_SEED");
    g.strict = !s || !*s || !strcmp(s, "0") ? 0
               : !strcmp(s, "reversed")     ? 1
               : !strcmp(s, "shuffled")     ? 2
                                            : 3;
    g.rng = seed ? strtoull(seed, NULL, 10) : 1;
}

void sl_emu_run_grid(const char *name, const void *key, dim3 grid, dim3 block, size_t smem,
                     cudaStream_t st, void (*body)(void *), void *ctx)
{
    (void)st; /* every stream is the host thread: the launch completes before it returns */
    if (g.kernel)
        fatal("kernel '%s' launched from inside a kernel (dynamic parallelism)", name);
    if (check_launch(name, key, grid, block, smem))
        return;
    strict_init();
    stacks_reserve(MAX_THREADS);
    g.kernel = name;
    g.key = key;
    g.body = body;
    g.ctx = ctx;
    g.smem = smem;
    g.n = (int)(block.x * block.y * block.z);
    g.w.assign((size_t)(g.n + 31) / 32, warp{});
    g.mode = g.strict == 3 ? 1 + (int)(g.launches & 1) : g.strict;
    g.launches++;
    g.order.resize((size_t)g.n);
    for (int i = 0; i < g.n; i++)
        g.order[i] = g.mode == 1 ? g.n - 1 - i : i;
    sl_emu_blockDim = block;
    sl_emu_gridDim = grid;
    const unsigned long long nblocks = (unsigned long long)grid.x * grid.y * grid.z;
    std::vector<unsigned long long> border;
    if (g.mode == 2) {
        border.resize(nblocks);
        for (unsigned long long i = 0; i < nblocks; i++)
            border[i] = i;
        for (unsigned long long i = nblocks - 1; i > 0; i--)
            std::swap(border[i], border[next_rand() % (i + 1)]);
    }
    for (unsigned long long k = 0; k < nblocks; k++) {
        const unsigned long long i = g.mode == 1 ? nblocks - 1 - k : g.mode == 2 ? border[k] : k;
        sl_emu_blockIdx = make_uint3((unsigned)(i % grid.x), (unsigned)(i / grid.x % grid.y),
                                     (unsigned)(i / ((unsigned long long)grid.x * grid.y)));
        run_block();
    }
    g.kernel = NULL;
}
