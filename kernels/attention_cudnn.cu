/* cuDNN's fused flash attention (forward and backward, bf16, causal, grouped-query heads)
 * through the cuDNN backend graph API, from host code only.
 *
 * libcudnn.so.9 is loaded with dlopen at run time, so a binary built here starts on a machine
 * without cuDNN (attention then falls back to our kernels). The operation graphs are those
 * the fused SDPA engines recognise: Q.K^T, scale, causal mask (row/column index, compare,
 * select), softmax with the log-sum-exp kept as "stats", P.V; the backward recomputes P from
 * the stats and forms dV = P^T dO, dS = P (dO V^T - rowsum(dO O)) scale, dK = dS^T Q,
 * dQ = dS K. Plans are built once per shape (seconds) and cached.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/attention.h"
#include "kernels/cuda_common.h"

static __thread char cudnn_msg[1024];

static int set_msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int set_msg(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cudnn_msg, sizeof(cudnn_msg), fmt, ap);
    va_end(ap);
    return -1;
}

extern "C" const char *attn_cudnn_error(void)
{
    return cudnn_msg;
}

#ifndef SL_HAVE_CUDNN

extern "C" const char *sl_cudnn_status_string(int status)
{
    static char buf[48];
    snprintf(buf, sizeof(buf), "cudnn status %d", status);
    return buf;
}

extern "C" struct attn_cudnn *attn_cudnn_new(int deterministic)
{
    (void)deterministic;
    set_msg("built without cuDNN (no cudnn.h when compiling)");
    return NULL;
}

extern "C" void attn_cudnn_free(struct attn_cudnn *a)
{
    (void)a;
}

extern "C" long attn_cudnn_version(void)
{
    return 0;
}

extern "C" int attn_cudnn_prepare(struct attn_cudnn *a, int B, int T, int Hq, int Hkv, int D,
                                  size_t *fwd_workspace, size_t *bwd_workspace)
{
    return set_msg("built without cuDNN");
}

extern "C" int attn_cudnn_is_deterministic(struct attn_cudnn *a, int B, int T, int Hq, int Hkv,
                                           int D)
{
    return 0;
}

extern "C" int attn_cudnn_fwd(struct attn_cudnn *a, sl_bf16 *out, float *lse, const sl_bf16 *qkv,
                              int B, int T, int Hq, int Hkv, int D, float scale, void *workspace,
                              size_t workspace_bytes, cudaStream_t st)
{
    return set_msg("built without cuDNN");
}

extern "C" int attn_cudnn_bwd(struct attn_cudnn *a, sl_bf16 *dqkv, const sl_bf16 *dout,
                              const sl_bf16 *qkv, const sl_bf16 *out, const float *lse, int B,
                              int T, int Hq, int Hkv, int D, float scale, void *workspace,
                              size_t workspace_bytes, cudaStream_t st)
{
    return set_msg("built without cuDNN");
}

#else /* SL_HAVE_CUDNN */

#include <dlfcn.h>
#include <glob.h>
#include <math.h>
#include <float.h>
#include <cudnn_graph.h>

/* ---- the library, loaded once ----------------------------------------------------------- */

static struct {
    void *lib;
    size_t (*GetVersion)(void);
    cudnnStatus_t (*Create)(cudnnHandle_t *);
    cudnnStatus_t (*Destroy)(cudnnHandle_t);
    cudnnStatus_t (*SetStream)(cudnnHandle_t, cudaStream_t);
    const char *(*GetErrorString)(cudnnStatus_t);
    void (*GetLastErrorString)(char *, size_t);
    cudnnStatus_t (*CreateDesc)(cudnnBackendDescriptorType_t, cudnnBackendDescriptor_t *);
    cudnnStatus_t (*DestroyDesc)(cudnnBackendDescriptor_t);
    cudnnStatus_t (*Finalize)(cudnnBackendDescriptor_t);
    cudnnStatus_t (*SetAttr)(cudnnBackendDescriptor_t, cudnnBackendAttributeName_t,
                             cudnnBackendAttributeType_t, int64_t, const void *);
    cudnnStatus_t (*GetAttr)(cudnnBackendDescriptor_t const, cudnnBackendAttributeName_t,
                             cudnnBackendAttributeType_t, int64_t, int64_t *, void *);
    cudnnStatus_t (*Execute)(cudnnHandle_t, cudnnBackendDescriptor_t, cudnnBackendDescriptor_t);
    long version;
    int state; /* 0 not tried, 1 loaded, -1 failed */
    char why[512];
    char path[512];
} api;

extern "C" const char *sl_cudnn_status_string(int status)
{
    static char buf[768];
    const char *name = api.GetErrorString ? api.GetErrorString((cudnnStatus_t)status) : "";
    char last[512] = "";
    if (api.GetLastErrorString)
        api.GetLastErrorString(last, sizeof(last));
    snprintf(buf, sizeof(buf), "%s (%d)%s%s", name, status, last[0] ? ": " : "", last);
    return buf;
}

static void *try_open(const char *path)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (h)
        snprintf(api.path, sizeof(api.path), "%s", path);
    return h;
}

static void *open_cudnn(void)
{
    const char *env = getenv("SLUICE_CUDNN_LIB");
    if (env && *env)
        return try_open(env);
    void *h = try_open("libcudnn.so.9");
    if (h)
        return h;
    static const char *const dirs[] = {
        "/usr/local/cuda/lib64/libcudnn.so.9",
        "/usr/lib/x86_64-linux-gnu/libcudnn.so.9",
        "/usr/lib/aarch64-linux-gnu/libcudnn.so.9",
        "/opt/torch/.venv/lib/python3*/site-packages/nvidia/cudnn/lib/libcudnn.so.9",
        "/usr/local/lib/python3*/dist-packages/nvidia/cudnn/lib/libcudnn.so.9",
        "/usr/local/lib/python3*/site-packages/nvidia/cudnn/lib/libcudnn.so.9",
        "/usr/lib/python3*/dist-packages/nvidia/cudnn/lib/libcudnn.so.9",
    };
    for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
        glob_t gl;
        if (glob(dirs[i], 0, NULL, &gl) == 0) {
            for (size_t k = 0; k < gl.gl_pathc && !h; k++)
                h = try_open(gl.gl_pathv[k]);
            globfree(&gl);
            if (h)
                return h;
        }
    }
    return NULL;
}

#define LOAD_SYM(field, name)                                                                      \
    do {                                                                                           \
        *(void **)&api.field = dlsym(api.lib, name);                                               \
        if (!api.field) {                                                                          \
            snprintf(api.why, sizeof(api.why), "'%s' has no symbol %s", api.path, name);           \
            return -1;                                                                             \
        }                                                                                          \
    } while (0)

static int load_api(void)
{
    if (api.state)
        return api.state > 0 ? 0 : -1;
    api.state = -1;
    api.lib = open_cudnn();
    if (!api.lib) {
        snprintf(api.why, sizeof(api.why),
                 "cannot load libcudnn.so.9: %s\nhint: set SLUICE_CUDNN_LIB to its path",
                 dlerror());
        return -1;
    }
    LOAD_SYM(GetVersion, "cudnnGetVersion");
    LOAD_SYM(Create, "cudnnCreate");
    LOAD_SYM(Destroy, "cudnnDestroy");
    LOAD_SYM(SetStream, "cudnnSetStream");
    LOAD_SYM(GetErrorString, "cudnnGetErrorString");
    LOAD_SYM(CreateDesc, "cudnnBackendCreateDescriptor");
    LOAD_SYM(DestroyDesc, "cudnnBackendDestroyDescriptor");
    LOAD_SYM(Finalize, "cudnnBackendFinalize");
    LOAD_SYM(SetAttr, "cudnnBackendSetAttribute");
    LOAD_SYM(GetAttr, "cudnnBackendGetAttribute");
    LOAD_SYM(Execute, "cudnnBackendExecute");
    *(void **)&api.GetLastErrorString = dlsym(api.lib, "cudnnGetLastErrorString"); /* 9.0+ */
    api.version = (long)api.GetVersion();
    if (api.version < 90000) {
        snprintf(api.why, sizeof(api.why), "cuDNN %ld at '%s' is older than 9.0", api.version,
                 api.path);
        return -1;
    }
    api.state = 1;
    return 0;
}

extern "C" long attn_cudnn_version(void)
{
    return load_api() == 0 ? api.version : 0;
}

/* ---- a graph builder that owns its descriptors -------------------------------------------- */

#define GB_MAX_DESCS 160
#define GB_MAX_OPS   48

struct gb {
    cudnnBackendDescriptor_t descs[GB_MAX_DESCS];
    int ndescs;
    cudnnBackendDescriptor_t ops[GB_MAX_OPS];
    int nops;
    int err;
    int64_t next_uid;
};

static void gb_fail(gb *g, cudnnStatus_t s, const char *what, int line)
{
    if (g->err)
        return;
    g->err = 1;
    set_msg("cudnn graph: %s failed (line %d): %s", what, line, sl_cudnn_status_string((int)s));
}

#define GB_CALL(g, call, what)                                                                     \
    do {                                                                                           \
        if (!(g)->err) {                                                                           \
            cudnnStatus_t s_ = (call);                                                             \
            if (s_ != CUDNN_STATUS_SUCCESS)                                                        \
                gb_fail((g), s_, (what), __LINE__);                                                \
        }                                                                                          \
    } while (0)

static cudnnBackendDescriptor_t gb_new(gb *g, cudnnBackendDescriptorType_t type)
{
    cudnnBackendDescriptor_t d = NULL;
    if (g->err)
        return NULL;
    if (g->ndescs == GB_MAX_DESCS) {
        g->err = 1;
        set_msg("cudnn graph: too many descriptors");
        return NULL;
    }
    GB_CALL(g, api.CreateDesc(type, &d), "cudnnBackendCreateDescriptor");
    if (!g->err)
        g->descs[g->ndescs++] = d;
    return d;
}

static void gb_set(gb *g, cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name,
                   cudnnBackendAttributeType_t type, int64_t n, const void *v, int line)
{
    if (g->err)
        return;
    cudnnStatus_t s = api.SetAttr(d, name, type, n, v);
    if (s != CUDNN_STATUS_SUCCESS) {
        char what[64];
        snprintf(what, sizeof(what), "setting attribute %d", (int)name);
        gb_fail(g, s, what, line);
    }
}
#define SET(g, d, name, type, n, v) gb_set((g), (d), (name), (type), (n), (v), __LINE__)

static void gb_finalize(gb *g, cudnnBackendDescriptor_t d, const char *what)
{
    GB_CALL(g, api.Finalize(d), what);
}

static void gb_release(gb *g)
{
    for (int i = g->ndescs - 1; i >= 0; i--)
        api.DestroyDesc(g->descs[i]);
    g->ndescs = 0;
    g->nops = 0;
}

struct tdesc {
    cudnnBackendDescriptor_t d;
    int64_t uid;
};

static tdesc gb_tensor(gb *g, int64_t uid, cudnnDataType_t dt, const int64_t dim[4],
                       const int64_t str[4], bool is_virtual, bool by_value = false)
{
    tdesc t = { NULL, uid };
    if (uid < 0)
        t.uid = g->next_uid++;
    t.d = gb_new(g, CUDNN_BACKEND_TENSOR_DESCRIPTOR);
    int64_t align = 16;
    SET(g, t.d, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &dt);
    SET(g, t.d, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dim);
    SET(g, t.d, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, str);
    SET(g, t.d, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &t.uid);
    SET(g, t.d, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align);
    if (is_virtual) {
        bool v = true;
        SET(g, t.d, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &v);
    }
    if (by_value) {
        bool v = true;
        SET(g, t.d, CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &v);
    }
    gb_finalize(g, t.d, "tensor descriptor");
    return t;
}

static tdesc gb_virtual(gb *g, cudnnDataType_t dt, const int64_t dim[4], const int64_t str[4])
{
    return gb_tensor(g, -1, dt, dim, str, true);
}

static void gb_add_op(gb *g, cudnnBackendDescriptor_t op)
{
    if (g->err)
        return;
    if (g->nops == GB_MAX_OPS) {
        g->err = 1;
        set_msg("cudnn graph: too many operations");
        return;
    }
    g->ops[g->nops++] = op;
}

/* Pointwise y = mode(x[, b[, t]]) with math precision prec; axis for GEN_INDEX. */
static void gb_pw(gb *g, cudnnPointwiseMode_t mode, cudnnDataType_t prec, tdesc x, const tdesc *b,
                  const tdesc *t, tdesc y, int64_t axis = -1)
{
    cudnnBackendDescriptor_t pw = gb_new(g, CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
    SET(g, pw, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode);
    SET(g, pw, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &prec);
    if (mode == CUDNN_POINTWISE_GEN_INDEX)
        SET(g, pw, CUDNN_ATTR_POINTWISE_AXIS, CUDNN_TYPE_INT64, 1, &axis);
    gb_finalize(g, pw, "pointwise descriptor");
    cudnnBackendDescriptor_t op = gb_new(g, CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
    SET(g, op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &pw);
    SET(g, op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x.d);
    if (b)
        SET(g, op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &b->d);
    if (t)
        SET(g, op, CUDNN_ATTR_OPERATION_POINTWISE_TDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &t->d);
    SET(g, op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y.d);
    float one = 1.0f;
    SET(g, op, CUDNN_ATTR_OPERATION_POINTWISE_ALPHA1, CUDNN_TYPE_FLOAT, 1, &one);
    SET(g, op, CUDNN_ATTR_OPERATION_POINTWISE_ALPHA2, CUDNN_TYPE_FLOAT, 1, &one);
    gb_finalize(g, op, "pointwise operation");
    gb_add_op(g, op);
}

static void gb_reduce(gb *g, cudnnReduceTensorOp_t mode, tdesc x, tdesc y)
{
    cudnnDataType_t prec = CUDNN_DATA_FLOAT;
    cudnnBackendDescriptor_t rd = gb_new(g, CUDNN_BACKEND_REDUCTION_DESCRIPTOR);
    SET(g, rd, CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &prec);
    SET(g, rd, CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 1, &mode);
    gb_finalize(g, rd, "reduction descriptor");
    cudnnBackendDescriptor_t op = gb_new(g, CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR);
    SET(g, op, CUDNN_ATTR_OPERATION_REDUCTION_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &rd);
    SET(g, op, CUDNN_ATTR_OPERATION_REDUCTION_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x.d);
    SET(g, op, CUDNN_ATTR_OPERATION_REDUCTION_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y.d);
    gb_finalize(g, op, "reduction operation");
    gb_add_op(g, op);
}

static void gb_matmul(gb *g, tdesc a, tdesc b, tdesc c)
{
    cudnnDataType_t prec = CUDNN_DATA_FLOAT;
    cudnnBackendDescriptor_t md = gb_new(g, CUDNN_BACKEND_MATMUL_DESCRIPTOR);
    SET(g, md, CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &prec);
    gb_finalize(g, md, "matmul descriptor");
    cudnnBackendDescriptor_t op = gb_new(g, CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR);
    SET(g, op, CUDNN_ATTR_OPERATION_MATMUL_ADESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &a.d);
    SET(g, op, CUDNN_ATTR_OPERATION_MATMUL_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &b.d);
    SET(g, op, CUDNN_ATTR_OPERATION_MATMUL_CDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &c.d);
    SET(g, op, CUDNN_ATTR_OPERATION_MATMUL_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &md);
    gb_finalize(g, op, "matmul operation");
    gb_add_op(g, op);
}

static void gb_reshape(gb *g, tdesc x, tdesc y)
{
    cudnnBackendDescriptor_t op = gb_new(g, CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR);
    SET(g, op, CUDNN_ATTR_OPERATION_RESHAPE_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x.d);
    SET(g, op, CUDNN_ATTR_OPERATION_RESHAPE_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y.d);
    gb_finalize(g, op, "reshape operation");
    gb_add_op(g, op);
}

/* The causal mask: keep score[.., row, col] where row >= col, else -inf. */
static tdesc gb_causal(gb *g, tdesc s, tdesc ninf, const int64_t *sdim, const int64_t *sstr)
{
    tdesc row = gb_virtual(g, CUDNN_DATA_INT32, sdim, sstr);
    gb_pw(g, CUDNN_POINTWISE_GEN_INDEX, CUDNN_DATA_FLOAT, s, NULL, NULL, row, 2);
    tdesc col = gb_virtual(g, CUDNN_DATA_INT32, sdim, sstr);
    gb_pw(g, CUDNN_POINTWISE_GEN_INDEX, CUDNN_DATA_FLOAT, s, NULL, NULL, col, 3);
    tdesc keep = gb_virtual(g, CUDNN_DATA_BOOLEAN, sdim, sstr);
    gb_pw(g, CUDNN_POINTWISE_CMP_GE, CUDNN_DATA_BOOLEAN, row, &col, NULL, keep);
    tdesc out = gb_virtual(g, CUDNN_DATA_FLOAT, sdim, sstr);
    gb_pw(g, CUDNN_POINTWISE_BINARY_SELECT, CUDNN_DATA_FLOAT, s, &ninf, &keep, out);
    return out;
}

/* ---- plans ------------------------------------------------------------------------------ */

enum {
    UID_Q = 1,
    UID_K,
    UID_V,
    UID_O,
    UID_STATS,
    UID_SCALE,
    UID_NEGINF,
    UID_DO,
    UID_DQ,
    UID_DK,
    UID_DV,
    UID_ONE,
    UID_SSUM,
    UID_DQACC,
    UID_FIRST_VIRTUAL = 100
};

#define MAX_CACHED 32

struct sdpa_plan {
    int B, T, Hq, Hkv, D, bwd;
    int status; /* 1 built, -1 unsupported */
    int deterministic;
    char why[512];
    gb g;
    cudnnBackendDescriptor_t plan;
    int64_t engine_ws;
    size_t ssum_off, dqacc_off, total_ws; /* workspace layout (bwd) */
};

struct attn_cudnn {
    cudnnHandle_t handle;
    int want_det;
    int nplans;
    sdpa_plan *plans[MAX_CACHED];
    sdpa_plan *last[2]; /* the last forward and backward plan used: the usual hit */
};

static size_t align256(size_t x)
{
    return (x + 255) & ~(size_t)255;
}

/* Heuristics (mode A, then the fallback list), the first engine config that finalizes. */
static int build_plan(attn_cudnn *a, sdpa_plan *p)
{
    gb *g = &p->g;
    cudnnBackendDescriptor_t graph = gb_new(g, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
    SET(g, graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, g->nops, g->ops);
    SET(g, graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &a->handle);
    gb_finalize(g, graph, "operation graph (cuDNN does not support this attention graph)");
    const cudnnBackendHeurMode_t modes[2] = { CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK };
    for (int mi = 0; mi < 2 && !g->err; mi++) {
        cudnnBackendDescriptor_t heur = gb_new(g, CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
        SET(g, heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
            &graph);
        SET(g, heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &modes[mi]);
        gb_finalize(g, heur, "engine heuristics");
        if (g->err)
            break;
        int64_t count = 0;
        GB_CALL(g,
                api.GetAttr(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0,
                            &count, NULL),
                "engine heuristics count");
        if (g->err || count <= 0)
            continue;
        if (count > 16)
            count = 16;
        cudnnBackendDescriptor_t cfgs[16];
        for (int64_t i = 0; i < count; i++)
            cfgs[i] = gb_new(g, CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
        int64_t got = 0;
        GB_CALL(g,
                api.GetAttr(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                            count, &got, cfgs),
                "engine heuristics results");
        for (int64_t i = 0; i < got && !g->err; i++) {
            cudnnBackendDescriptor_t plan = NULL;
            if (api.CreateDesc(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &plan) !=
                CUDNN_STATUS_SUCCESS)
                continue;
            cudnnStatus_t s = api.SetAttr(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
                                          CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cfgs[i]);
            if (s == CUDNN_STATUS_SUCCESS)
                s = api.SetAttr(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1,
                                &a->handle);
            if (s == CUDNN_STATUS_SUCCESS)
                s = api.Finalize(plan);
            int64_t ws = 0, n = 0;
            if (s == CUDNN_STATUS_SUCCESS)
                s = api.GetAttr(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1,
                                &n, &ws);
            if (s != CUDNN_STATUS_SUCCESS) {
                set_msg("cudnn: no engine config finalizes: %s", sl_cudnn_status_string((int)s));
                api.DestroyDesc(plan);
                continue;
            }
            if (g->ndescs < GB_MAX_DESCS) {
                g->descs[g->ndescs++] = plan;
            } else {
                api.DestroyDesc(plan);
                continue;
            }
            p->plan = plan;
            p->engine_ws = ws;
            return 0;
        }
    }
    if (!g->err)
        set_msg("cudnn: no engine for this attention graph (cuDNN %ld)", api.version);
    return -1;
}

static void dims4(int64_t d[4], int64_t a, int64_t b, int64_t c, int64_t e)
{
    d[0] = a;
    d[1] = b;
    d[2] = c;
    d[3] = e;
}

/* Tensors shared by both graphs. */
struct sdpa_tensors {
    tdesc q, k, v, o, stats, scale, ninf;
    int64_t sdim[4], sstr[4], rdim[4], rstr[4];
};

static void common_tensors(gb *g, sdpa_tensors *t, int B, int T, int Hq, int Hkv, int D, int bwd)
{
    const int64_t S3 = (int64_t)(Hq + 2 * Hkv) * D;
    int64_t dim[4], str[4], one[4] = { 1, 1, 1, 1 };
    dims4(dim, B, Hq, T, D);
    dims4(str, (int64_t)T * S3, D, S3, 1);
    t->q = gb_tensor(g, UID_Q, CUDNN_DATA_BFLOAT16, dim, str, false);
    /* K as K^T: [B, Hkv, D, T] */
    dims4(dim, B, Hkv, D, T);
    dims4(str, (int64_t)T * S3, D, 1, S3);
    t->k = gb_tensor(g, UID_K, CUDNN_DATA_BFLOAT16, dim, str, false);
    /* V as is (forward) or as V^T (backward) */
    if (bwd) {
        dims4(dim, B, Hkv, D, T);
        dims4(str, (int64_t)T * S3, D, 1, S3);
    } else {
        dims4(dim, B, Hkv, T, D);
        dims4(str, (int64_t)T * S3, D, S3, 1);
    }
    t->v = gb_tensor(g, UID_V, CUDNN_DATA_BFLOAT16, dim, str, false);
    dims4(dim, B, Hq, T, D);
    dims4(str, (int64_t)T * Hq * D, D, (int64_t)Hq * D, 1);
    t->o = gb_tensor(g, UID_O, CUDNN_DATA_BFLOAT16, dim, str, false);
    dims4(t->rdim, B, Hq, T, 1);
    dims4(t->rstr, (int64_t)Hq * T, T, 1, 1);
    t->stats = gb_tensor(g, UID_STATS, CUDNN_DATA_FLOAT, t->rdim, t->rstr, false);
    t->scale = gb_tensor(g, UID_SCALE, CUDNN_DATA_FLOAT, one, one, false, true);
    t->ninf = gb_tensor(g, UID_NEGINF, CUDNN_DATA_FLOAT, one, one, false, true);
    dims4(t->sdim, B, Hq, T, T);
    dims4(t->sstr, (int64_t)Hq * T * T, (int64_t)T * T, T, 1);
}

static void graph_fwd(gb *g, int B, int T, int Hq, int Hkv, int D)
{
    sdpa_tensors t;
    common_tensors(g, &t, B, T, Hq, Hkv, D, 0);
    tdesc s = gb_virtual(g, CUDNN_DATA_FLOAT, t.sdim, t.sstr);
    gb_matmul(g, t.q, t.k, s);
    tdesc s2 = gb_virtual(g, CUDNN_DATA_FLOAT, t.sdim, t.sstr);
    gb_pw(g, CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT, s, &t.scale, NULL, s2);
    tdesc s3 = gb_causal(g, s2, t.ninf, t.sdim, t.sstr);
    tdesc m = gb_virtual(g, CUDNN_DATA_FLOAT, t.rdim, t.rstr);
    gb_reduce(g, CUDNN_REDUCE_TENSOR_MAX, s3, m);
    tdesc s4 = gb_virtual(g, CUDNN_DATA_FLOAT, t.sdim, t.sstr);
    gb_pw(g, CUDNN_POINTWISE_SUB, CUDNN_DATA_FLOAT, s3, &m, NULL, s4);
    tdesc e = gb_virtual(g, CUDNN_DATA_FLOAT, t.sdim, t.sstr);
    gb_pw(g, CUDNN_POINTWISE_EXP, CUDNN_DATA_FLOAT, s4, NULL, NULL, e);
    tdesc z = gb_virtual(g, CUDNN_DATA_FLOAT, t.rdim, t.rstr);
    gb_reduce(g, CUDNN_REDUCE_TENSOR_ADD, e, z);
    tdesc lz = gb_virtual(g, CUDNN_DATA_FLOAT, t.rdim, t.rstr);
    gb_pw(g, CUDNN_POINTWISE_LOG, CUDNN_DATA_FLOAT, z, NULL, NULL, lz);
    gb_pw(g, CUDNN_POINTWISE_ADD, CUDNN_DATA_FLOAT, m, &lz, NULL, t.stats);
    tdesc pm = gb_virtual(g, CUDNN_DATA_BFLOAT16, t.sdim, t.sstr);
    gb_pw(g, CUDNN_POINTWISE_DIV, CUDNN_DATA_FLOAT, e, &z, NULL, pm);
    gb_matmul(g, pm, t.v, t.o);
}

static void graph_bwd(gb *g, int B, int T, int Hq, int Hkv, int D, int det)
{
    sdpa_tensors t;
    common_tensors(g, &t, B, T, Hq, Hkv, D, 1);
    const int64_t S3 = (int64_t)(Hq + 2 * Hkv) * D;
    int64_t dim[4], str[4], one[4] = { 1, 1, 1, 1 };
    dims4(dim, B, Hq, T, D);
    dims4(str, (int64_t)T * Hq * D, D, (int64_t)Hq * D, 1);
    tdesc dO = gb_tensor(g, UID_DO, CUDNN_DATA_BFLOAT16, dim, str, false);
    dims4(str, (int64_t)T * S3, D, S3, 1);
    tdesc dQ = gb_tensor(g, UID_DQ, CUDNN_DATA_BFLOAT16, dim, str, false);
    dims4(dim, B, Hkv, T, D);
    tdesc dK = gb_tensor(g, UID_DK, CUDNN_DATA_BFLOAT16, dim, str, false);
    tdesc dV = gb_tensor(g, UID_DV, CUDNN_DATA_BFLOAT16, dim, str, false);
    tdesc onet = gb_tensor(g, UID_ONE, CUDNN_DATA_FLOAT, one, one, false, true);
    tdesc ssum = gb_tensor(g, UID_SSUM, CUDNN_DATA_FLOAT, t.rdim, t.rstr, false);

    /* softmax_sum = rowsum(dO * O) */
    int64_t fdim[4], fstr[4];
    dims4(fdim, B, Hq, T, D);
    dims4(fstr, (int64_t)Hq * T * D, (int64_t)T * D, (int64_t)Hq * D, 1);
    tdesc dOO = gb_virtual(g, CUDNN_DATA_FLOAT, fdim, fstr);
    gb_pw(g, CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT, dO, &t.o, NULL, dOO);
    tdesc rs = gb_virtual(g, CUDNN_DATA_FLOAT, t.rdim, t.rstr);
    gb_reduce(g, CUDNN_REDUCE_TENSOR_ADD, dOO, rs);
    gb_pw(g, CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT, rs, &onet, NULL, ssum);

    /* P = exp(scale * Q K^T - stats), masked */
    tdesc s = gb_virtual(g, CUDNN_DATA_FLOAT, t.sdim, t.sstr);
    gb_matmul(g, t.q, t.k, s);
    tdesc s2 = gb_virtual(g, CUDNN_DATA_FLOAT, t.sdim, t.sstr);
    gb_pw(g, CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT, s, &t.scale, NULL, s2);
    tdesc s3 = gb_virtual(g, CUDNN_DATA_FLOAT, t.sdim, t.sstr);
    gb_pw(g, CUDNN_POINTWISE_SUB, CUDNN_DATA_FLOAT, s2, &t.stats, NULL, s3);
    tdesc s4 = gb_causal(g, s3, t.ninf, t.sdim, t.sstr);
    tdesc p = gb_virtual(g, CUDNN_DATA_FLOAT, t.sdim, t.sstr);
    gb_pw(g, CUDNN_POINTWISE_EXP, CUDNN_DATA_FLOAT, s4, NULL, NULL, p);

    /* dV = P^T dO (summed over the query heads of a group) */
    int64_t tdim[4], tstr[4];
    dims4(tdim, B, Hq, T, T);
    dims4(tstr, (int64_t)Hq * T * T, (int64_t)T * T, 1, T);
    tdesc pt = gb_virtual(g, CUDNN_DATA_BFLOAT16, tdim, tstr);
    gb_reshape(g, p, pt);
    int64_t hdim[4], hstr[4];
    dims4(hdim, B, Hq, T, D);
    dims4(hstr, (int64_t)Hq * T * D, (int64_t)T * D, D, 1);
    if (Hq == Hkv) {
        gb_matmul(g, pt, dO, dV);
    } else {
        tdesc dvf = gb_virtual(g, CUDNN_DATA_BFLOAT16, hdim, hstr);
        gb_matmul(g, pt, dO, dvf);
        gb_reduce(g, CUDNN_REDUCE_TENSOR_ADD, dvf, dV);
    }

    /* dS = P (dO V^T - softmax_sum) scale */
    tdesc dp = gb_virtual(g, CUDNN_DATA_FLOAT, t.sdim, t.sstr);
    gb_matmul(g, dO, t.v, dp);
    tdesc c = gb_virtual(g, CUDNN_DATA_FLOAT, t.sdim, t.sstr);
    gb_pw(g, CUDNN_POINTWISE_SUB, CUDNN_DATA_FLOAT, dp, &ssum, NULL, c);
    tdesc d = gb_virtual(g, CUDNN_DATA_FLOAT, t.sdim, t.sstr);
    gb_pw(g, CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT, c, &p, NULL, d);
    tdesc ds = gb_virtual(g, CUDNN_DATA_FLOAT, t.sdim, t.sstr);
    gb_pw(g, CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT, d, &t.scale, NULL, ds);

    /* dK = dS^T Q */
    tdesc dst = gb_virtual(g, CUDNN_DATA_BFLOAT16, tdim, tstr);
    gb_reshape(g, ds, dst);
    if (Hq == Hkv) {
        gb_matmul(g, dst, t.q, dK);
    } else {
        tdesc dkf = gb_virtual(g, CUDNN_DATA_BFLOAT16, hdim, hstr);
        gb_matmul(g, dst, t.q, dkf);
        gb_reduce(g, CUDNN_REDUCE_TENSOR_ADD, dkf, dK);
    }

    /* dQ = dS K, through an fp32 accumulator unless deterministic */
    int64_t kdim[4], kstr[4];
    dims4(kdim, B, Hkv, T, D);
    dims4(kstr, (int64_t)T * S3, D, S3, 1);
    tdesc kn = gb_virtual(g, CUDNN_DATA_BFLOAT16, kdim, kstr);
    gb_reshape(g, t.k, kn);
    if (det) {
        gb_matmul(g, ds, kn, dQ);
    } else {
        tdesc acc = gb_tensor(g, UID_DQACC, CUDNN_DATA_FLOAT, hdim, hstr, false);
        gb_matmul(g, ds, kn, acc);
        gb_pw(g, CUDNN_POINTWISE_IDENTITY, CUDNN_DATA_FLOAT, acc, NULL, NULL, dQ);
    }
}

static const char *unsupported_reason(int T, int Hq, int Hkv, int D, int bwd)
{
    if (D % 8 || D > 128)
        return "head dim must be a multiple of 8 and at most 128";
    if (Hkv <= 0 || Hq % Hkv)
        return "query heads must be a multiple of key/value heads";
    if (T < 2)
        return "sequence length must be at least 2";
    if (api.version == 91000 || api.version == 91001)
        return "cuDNN 9.10.0/9.10.1 have known bf16 attention bugs (use 9.10.2 or newer)";
    if (bwd && T % 128 && api.version <= 91500)
        return "backward with T % 128 != 0 needs cuDNN newer than 9.15";
    return NULL;
}

static sdpa_plan *get_plan(attn_cudnn *a, int B, int T, int Hq, int Hkv, int D, int bwd)
{
    sdpa_plan *l = a->last[bwd != 0];
    if (l && l->B == B && l->T == T && l->Hq == Hq && l->Hkv == Hkv && l->D == D)
        return l;
    for (int i = 0; i < a->nplans; i++) {
        sdpa_plan *p = a->plans[i];
        if (p->B == B && p->T == T && p->Hq == Hq && p->Hkv == Hkv && p->D == D && p->bwd == bwd)
            return a->last[bwd != 0] = p;
    }
    if (a->nplans == MAX_CACHED) {
        set_msg("cudnn: more than %d attention shapes", MAX_CACHED);
        return NULL;
    }
    sdpa_plan *p = (sdpa_plan *)calloc(1, sizeof(*p));
    if (!p) {
        set_msg("cudnn: out of memory");
        return NULL;
    }
    p->B = B, p->T = T, p->Hq = Hq, p->Hkv = Hkv, p->D = D, p->bwd = bwd;
    p->status = -1;
    const char *why = unsupported_reason(T, Hq, Hkv, D, bwd);
    if (why) {
        snprintf(p->why, sizeof(p->why), "cudnn: %s", why);
    } else {
        /* backward: try the deterministic graph first when asked */
        for (int attempt = 0; attempt < 2 && p->status < 0; attempt++) {
            int det = bwd && a->want_det && attempt == 0;
            if (attempt == 1 && !(bwd && a->want_det))
                break;
            gb_release(&p->g);
            p->g.err = 0;
            p->g.next_uid = UID_FIRST_VIRTUAL;
            if (bwd)
                graph_bwd(&p->g, B, T, Hq, Hkv, D, det);
            else
                graph_fwd(&p->g, B, T, Hq, Hkv, D);
            if (!p->g.err && build_plan(a, p) == 0) {
                p->status = 1;
                p->deterministic = det;
            } else {
                snprintf(p->why, sizeof(p->why), "%s", cudnn_msg);
            }
        }
        if (p->status < 0)
            gb_release(&p->g);
    }
    if (p->status > 0) {
        size_t off = align256((size_t)p->engine_ws);
        p->ssum_off = off;
        p->dqacc_off = 0;
        if (bwd) {
            off += align256((size_t)B * Hq * T * sizeof(float));
            if (!p->deterministic) {
                p->dqacc_off = off;
                off += align256((size_t)B * Hq * T * D * sizeof(float));
            }
        }
        p->total_ws = off;
    }
    a->plans[a->nplans++] = p;
    return a->last[bwd != 0] = p;
}

extern "C" struct attn_cudnn *attn_cudnn_new(int deterministic)
{
    if (load_api() != 0) {
        set_msg("%s", api.why);
        return NULL;
    }
    attn_cudnn *a = (attn_cudnn *)calloc(1, sizeof(*a));
    if (!a) {
        set_msg("cudnn: out of memory");
        return NULL;
    }
    cudnnStatus_t s = api.Create(&a->handle);
    if (s != CUDNN_STATUS_SUCCESS) {
        set_msg("cudnnCreate failed: %s", sl_cudnn_status_string((int)s));
        free(a);
        return NULL;
    }
    a->want_det = deterministic;
    return a;
}

extern "C" void attn_cudnn_free(struct attn_cudnn *a)
{
    if (!a)
        return;
    for (int i = 0; i < a->nplans; i++) {
        gb_release(&a->plans[i]->g);
        free(a->plans[i]);
    }
    api.Destroy(a->handle);
    free(a);
}

extern "C" int attn_cudnn_prepare(struct attn_cudnn *a, int B, int T, int Hq, int Hkv, int D,
                                  size_t *fwd_workspace, size_t *bwd_workspace)
{
    sdpa_plan *f = get_plan(a, B, T, Hq, Hkv, D, 0);
    if (!f)
        return -1;
    if (f->status < 0)
        return set_msg("%s", f->why);
    sdpa_plan *b = get_plan(a, B, T, Hq, Hkv, D, 1);
    if (!b)
        return -1;
    if (b->status < 0)
        return set_msg("%s", b->why);
    *fwd_workspace = f->total_ws;
    *bwd_workspace = b->total_ws;
    return 0;
}

extern "C" int attn_cudnn_is_deterministic(struct attn_cudnn *a, int B, int T, int Hq, int Hkv,
                                           int D)
{
    sdpa_plan *b = get_plan(a, B, T, Hq, Hkv, D, 1);
    return b && b->status > 0 && b->deterministic;
}

static void execute(attn_cudnn *a, sdpa_plan *p, const int64_t *uids, void **ptrs, int n,
                    void *workspace, cudaStream_t st)
{
    cudnnBackendDescriptor_t vp = NULL;
    CUDNN_CHECK(api.CreateDesc(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &vp));
    CUDNN_CHECK(api.SetAttr(vp, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, n, uids));
    CUDNN_CHECK(
        api.SetAttr(vp, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, n, ptrs));
    CUDNN_CHECK(
        api.SetAttr(vp, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace));
    CUDNN_CHECK(api.Finalize(vp));
    CUDNN_CHECK(api.SetStream(a->handle, st));
    CUDNN_CHECK(api.Execute(a->handle, p->plan, vp));
    CUDNN_CHECK(api.DestroyDesc(vp));
}

extern "C" int attn_cudnn_fwd(struct attn_cudnn *a, sl_bf16 *out, float *lse, const sl_bf16 *qkv,
                              int B, int T, int Hq, int Hkv, int D, float scale, void *workspace,
                              size_t workspace_bytes, cudaStream_t st)
{
    sdpa_plan *p = get_plan(a, B, T, Hq, Hkv, D, 0);
    if (!p)
        return -1;
    if (p->status < 0)
        return set_msg("%s", p->why);
    if (workspace_bytes < p->total_ws)
        return set_msg("cudnn attention forward needs %zu bytes of workspace, got %zu", p->total_ws,
                       workspace_bytes);
    float ninf = api.version >= 91000 ? -INFINITY : -FLT_MAX;
    const int64_t uids[] = { UID_Q, UID_K, UID_V, UID_O, UID_STATS, UID_SCALE, UID_NEGINF };
    const size_t hd = (size_t)D;
    void *ptrs[] = {
        (void *)qkv, (void *)(qkv + Hq * hd), (void *)(qkv + (Hq + Hkv) * hd), out, lse, &scale,
        &ninf
    };
    execute(a, p, uids, ptrs, 7, workspace, st);
    return 0;
}

extern "C" int attn_cudnn_bwd(struct attn_cudnn *a, sl_bf16 *dqkv, const sl_bf16 *dout,
                              const sl_bf16 *qkv, const sl_bf16 *out, const float *lse, int B,
                              int T, int Hq, int Hkv, int D, float scale, void *workspace,
                              size_t workspace_bytes, cudaStream_t st)
{
    sdpa_plan *p = get_plan(a, B, T, Hq, Hkv, D, 1);
    if (!p)
        return -1;
    if (p->status < 0)
        return set_msg("%s", p->why);
    if (workspace_bytes < p->total_ws)
        return set_msg("cudnn attention backward needs %zu bytes of workspace, got %zu",
                       p->total_ws, workspace_bytes);
    float ninf = api.version >= 91000 ? -INFINITY : -FLT_MAX, one = 1.0f;
    char *ws = (char *)workspace;
    const size_t hd = (size_t)D;
    int64_t uids[14] = { UID_Q,  UID_K,  UID_V,  UID_O,  UID_STATS, UID_SCALE, UID_NEGINF,
                         UID_DO, UID_DQ, UID_DK, UID_DV, UID_ONE,   UID_SSUM,  UID_DQACC };
    void *ptrs[14] = { (void *)qkv,
                       (void *)(qkv + Hq * hd),
                       (void *)(qkv + (Hq + Hkv) * hd),
                       (void *)out,
                       (void *)lse,
                       &scale,
                       &ninf,
                       (void *)dout,
                       dqkv,
                       dqkv + Hq * hd,
                       dqkv + (Hq + Hkv) * hd,
                       &one,
                       ws + p->ssum_off,
                       ws + p->dqacc_off };
    int n = p->deterministic ? 13 : 14;
    if (!p->deterministic && api.version < 90600)
        CUDA_CHECK(
            cudaMemsetAsync(ws + p->dqacc_off, 0, (size_t)B * Hq * T * D * sizeof(float), st));
    execute(a, p, uids, ptrs, n, workspace, st);
    return 0;
}

#endif /* SL_HAVE_CUDNN */
