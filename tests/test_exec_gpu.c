/*
 * The executor on a real GPU: a small chain of kernels over managed
 * memory (9 buffers of 16 MiB and a 16 MiB transient per iteration, 160
 * MiB in all, far below any GPU's free memory) profiled once, then run
 * under every policy in one context with a 64 MiB budget. Checks that the
 * data is bitwise what the host computes, that nothing failed, and that
 * the residency umadv accounted stayed within the budget. The sampled GPU
 * memory is reported, not checked: the driver keeps the GPU memory of
 * evicted managed pages allocated (measured on an H200, driver 580: 256 MiB
 * prefetched to the host left cudaMemGetInfo unchanged, and a fresh buffer
 * touched after that took new memory), so the sample is a high-water mark
 * of what the process's managed data ever occupied. Then, on the driver
 * alone: cudaMemPrefetchBatchAsync against one call per range (256 ranges
 * of 2 MiB, fresh and copied: timings reported), and advice set on a
 * sub-range, used remotely, unset (range attributes, data). Skips without
 * a device.
 */
#include <umadv.h>

#include <stdlib.h>
#include <string.h>

#include "api/context.h"
#include "common/log.h"
#include "common/util.h"
#include "cuda_ops/cudart_util.h"
#include "exec_gpu_kernels.h"
#include "tap.h"

#define LAYERS  8
#define N       (4u << 20)               /* floats per buffer: 16 MiB */
#define BYTES   ((size_t)N * sizeof(float))
#define BUDGET  (64 * UMADV_MIB)
#define ITERS   4

typedef struct model {
    float *act[LAYERS + 1];  /* managed */
    float *ref[LAYERS + 1];  /* the host's copy of the same computation */
    cudaStream_t stream;
} model_t;

static void host_scale_add(float *y, const float *x, float a)
{
    for (size_t i = 0; i < N; i++)
        y[i] = a * y[i] + x[i];
}

/* One iteration on the GPU (steps marked, accesses declared) and on the host. */
static int iteration(umadv_context_t ctx, model_t *m)
{
    float *t, *tref = malloc(BYTES);
    int err = 0;

    umadv_iteration_begin(ctx);
    umadv_malloc(ctx, BYTES, "transient", (void **)&t);
    for (int j = 0; j < LAYERS; j++) {
        umadv_step_begin(ctx, "layer", m->stream);
        umadv_step_access(ctx, m->act[j], BYTES, UMADV_ACCESS_READ);
        umadv_step_access(ctx, m->act[j + 1], BYTES, UMADV_ACCESS_RW);
        if (j == 0) {
            umadv_step_access(ctx, t, BYTES, UMADV_ACCESS_WRITE);
            err |= exec_gpu_copy(t, m->act[0], N, m->stream);
            memcpy(tref, m->ref[0], BYTES);
        }
        err |= exec_gpu_scale_add(m->act[j + 1], m->act[j], N, 0.5f, m->stream);
        host_scale_add(m->ref[j + 1], m->ref[j], 0.5f);
        if (j == LAYERS - 1) {
            umadv_step_access(ctx, t, BYTES, UMADV_ACCESS_READ);
            err |= exec_gpu_scale_add(m->act[j + 1], t, N, 0.5f, m->stream);
            host_scale_add(m->ref[j + 1], tref, 0.5f);
        }
        umadv_step_end(ctx, 0);
    }
    umadv_free(ctx, t);
    free(tref);
    return err;
}

static int data_matches(model_t *m)
{
    cudaStreamSynchronize(m->stream);
    for (int j = 0; j <= LAYERS; j++) {
        if (memcmp(m->act[j], m->ref[j], BYTES) != 0)
            return 0;
    }
    return 1;
}

static int model_init(umadv_context_t ctx, model_t *m)
{
    for (int j = 0; j <= LAYERS; j++) {
        if (umadv_malloc(ctx, BYTES, "act", (void **)&m->act[j]) != UMADV_OK)
            return -1;
        m->ref[j] = malloc(BYTES);
        for (size_t i = 0; i < N; i++)
            m->act[j][i] = m->ref[j][i] = (float)((i * 7 + (size_t)j * 13) % 1000) * 0.25f;
    }
    return UMADV_CUDART_FUNC(cudaStreamCreateWithFlags(&m->stream, cudaStreamNonBlocking));
}

static void run_policy(umadv_context_t ctx, model_t *m, umadv_policy_t policy)
{
    const char *name = umadv_policy_name(policy);
    umadv_stats_t st = {.size = sizeof(st)}, before = {.size = sizeof(before)};
    umadv_exec_stats_t xs;
    uint64_t t0;
    int err = 0;

    umadv_get_stats(ctx, &before);
    is(umadv_set_policy(ctx, policy), UMADV_OK, "%s: policy set, replay started", name);
    t0 = umadv__now_ns();
    for (int i = 0; i < ITERS; i++)
        err |= iteration(ctx, m);
    cudaStreamSynchronize(m->stream);
    t0 = umadv__now_ns() - t0;
    umadv_get_stats(ctx, &st);
    ok(!err && ctx->replay.exec != NULL && !umadv__exec_broken(ctx->replay.exec),
       "%s: every launch and every migration succeeded", name);
    ok(data_matches(m), "%s: the data is bitwise what the host computed", name);
    diag("%s: %.2f ms/iteration (with the host's reference), waited %.2f ms, fetched %llu MiB in %llu calls, evicted "
         "%llu MiB in %llu calls, drift %llu, resident peak %llu MiB, gpu peak %.1f MiB "
         "(budget %llu MiB)", name, (double)t0 * 1e-6 / ITERS, (double)st.wait_ns * 1e-6,
         (unsigned long long)(st.fetched_bytes >> 20), (unsigned long long)st.fetch_ops,
         (unsigned long long)(st.evicted_bytes >> 20), (unsigned long long)st.evict_ops,
         (unsigned long long)st.drift_ops, (unsigned long long)(st.resident_peak >> 20),
         (double)st.gpu_peak_used / (double)UMADV_MIB,
         (unsigned long long)(BUDGET >> 20));
    if (policy == UMADV_POLICY_ORACLE) {
        ok(st.resident_peak >= (LAYERS + 1) * BYTES && st.evict_ops == before.evict_ops,
           "oracle: everything fetched and kept, nothing evicted (%.1f MiB)",
           (double)st.resident_peak / (double)UMADV_MIB);
        return;
    }
    /* The monitor's samples, not its peak: the GPU is shared, and memory
     * another process frees can leave the device's use below the
     * context's start (a peak of 0 MiB, seen twice on the H100s). */
    umadv__exec_get_stats(ctx->replay.exec, &xs);
    ok(st.resident_peak > 0 && st.resident_peak <= BUDGET && xs.gpu_samples > 0,
       "%s: accounted residency peaked at %.1f MiB, within the budget; monitor sampled "
       "(%llu samples)", name, (double)st.resident_peak / (double)UMADV_MIB,
       (unsigned long long)xs.gpu_samples);
}

/* ---- batch prefetch and sub-range advice on the real driver -------------- */

#define RANGE   (2 * UMADV_MIB)
#define NRANGES 256

/* @n ranges of 2 MiB, every other one of @base, to the device: one call
 * each, or one batch (cudaMemPrefetchBatchAsync directly, so that its
 * error is seen). Returns the host time of the calls and of the whole in
 * *call_ns / *all_ns, or the CUDA error. */
static cudaError_t prefetch_ranges(char *base, int batch, cudaStream_t s, uint64_t *call_ns,
                                   uint64_t *all_ns)
{
    static void *ptrs[NRANGES];
    static size_t sizes[NRANGES];
    struct cudaMemLocation loc = {.type = cudaMemLocationTypeDevice, .id = 0};
    size_t first = 0;
    cudaError_t err = cudaSuccess;
    uint64_t t0 = umadv__now_ns();

    for (int i = 0; i < NRANGES; i++) {
        ptrs[i] = base + (size_t)i * 2 * RANGE;
        sizes[i] = RANGE;
    }
    if (batch)
        err = cudaMemPrefetchBatchAsync(ptrs, sizes, NRANGES, &loc, &first, 1, 0, s);
    for (int i = 0; !batch && i < NRANGES && err == cudaSuccess; i++)
        err = cudaMemPrefetchAsync(ptrs[i], RANGE, loc, 0, s);
    *call_ns = umadv__now_ns() - t0;
    if (err == cudaSuccess)
        err = cudaStreamSynchronize(s);
    *all_ns = umadv__now_ns() - t0;
    return err;
}

static int last_prefetched_to_device(const char *p)
{
    int where = -3;

    cudaMemRangeGetAttribute(&where, sizeof(where), cudaMemRangeAttributeLastPrefetchLocation,
                             p, RANGE);
    return where == 0;
}

/* Fresh (never touched) and host-resident ranges, singles against a batch. */
static void measure_batch(cudaStream_t s)
{
    static const char *const what[4] = {"fresh, one call per range", "fresh, one batch call",
                                        "copied, one call per range", "copied, one batch call"};
    size_t span = (size_t)NRANGES * 2 * RANGE;
    cudaError_t err[4];
    uint64_t call[4], all[4];
    int located = 1;

    for (int k = 0; k < 4; k++) {
        char *p = NULL;

        if (cudaMallocManaged((void **)&p, span, cudaMemAttachGlobal) != cudaSuccess) {
            err[k] = cudaErrorMemoryAllocation;
            continue;
        }
        if (k >= 2)
            memset(p, 1, span); /* on the host: the prefetch copies */
        err[k] = prefetch_ranges(p, k % 2, s, &call[k], &all[k]);
        located &= err[k] != cudaSuccess || last_prefetched_to_device(p + 2 * RANGE * 7);
        diag("%s: %d x 2 MiB: %s, calls returned after %.3f ms, done after %.3f ms "
             "(%.1f us per range)", what[k], NRANGES, cudaGetErrorName(err[k]),
             (double)call[k] * 1e-6, (double)all[k] * 1e-6,
             (double)all[k] * 1e-3 / NRANGES);
        cudaFree(p);
    }
    ok(err[1] == cudaSuccess && err[3] == cudaSuccess,
       "cudaMemPrefetchBatchAsync works on this driver (%s, %s)", cudaGetErrorName(err[1]),
       cudaGetErrorName(err[3]));
    ok(located, "the batched ranges were prefetched to the device (range attribute)");
}

/* Through cuda_ops: the batch entry, and advice on a sub-range, set then
 * unset, with a kernel reading the range remotely in between. */
static int range_attr(const void *p, size_t len, enum cudaMemRangeAttribute attr)
{
    int v = -3;

    cudaMemRangeGetAttribute(&v, sizeof(v), attr, (void *)p, len);
    return v;
}

static void check_advice(cudaStream_t s)
{
    const umadv_cuda_ops_t *ops = &umadv__cuda_ops_cudart;
    size_t n = 8 * RANGE / sizeof(float);
    float *x = NULL, *y = NULL, *ref = malloc(8 * RANGE), *xs = malloc(8 * RANGE);
    char *sub;
    void *ptrs[2];
    size_t sizes[2] = {RANGE, RANGE};
    int pref_in, pref_out, acc_in, pref_after, acc_after, same;

    cudaMallocManaged((void **)&x, 8 * RANGE, cudaMemAttachGlobal);
    cudaMallocManaged((void **)&y, 8 * RANGE, cudaMemAttachGlobal);
    for (size_t i = 0; i < n; i++)
        x[i] = y[i] = ref[i] = xs[i] = (float)(i % 977) * 0.5f;
    sub = (char *)x + 2 * RANGE; /* chunks 2-5 of x */
    ops->advise(sub, 4 * RANGE, UMADV_CUDA_ADVISE_SET_PREFERRED_LOCATION,
                UMADV_CUDA_LOCATION_HOST);
    ops->advise(sub, 4 * RANGE, UMADV_CUDA_ADVISE_SET_ACCESSED_BY, 0);
    pref_in = range_attr(sub, 4 * RANGE, cudaMemRangeAttributePreferredLocation);
    pref_out = range_attr(x, RANGE, cudaMemRangeAttributePreferredLocation);
    acc_in = range_attr(sub, 4 * RANGE, cudaMemRangeAttributeAccessedBy);
    exec_gpu_scale_add(y, x, n, 0.5f, s);   /* reads the sub-range remotely */
    cudaStreamSynchronize(s);
    ops->advise(sub, 4 * RANGE, UMADV_CUDA_ADVISE_UNSET_PREFERRED_LOCATION, 0);
    ops->advise(sub, 4 * RANGE, UMADV_CUDA_ADVISE_UNSET_ACCESSED_BY, 0);
    pref_after = range_attr(sub, 4 * RANGE, cudaMemRangeAttributePreferredLocation);
    acc_after = range_attr(sub, 4 * RANGE, cudaMemRangeAttributeAccessedBy);
    ptrs[0] = sub;
    ptrs[1] = sub + 2 * RANGE;
    ok(ops->prefetch_batch(ptrs, sizes, 2, 0, s) == UMADV_OK && ops->stream_synchronize(s) ==
       UMADV_OK && last_prefetched_to_device(sub), "cuda_ops: a batch through cudart");
    exec_gpu_scale_add(y, x, n, 0.5f, s);   /* reads it on the gpu */
    cudaStreamSynchronize(s);
    for (int pass = 0; pass < 2; pass++) {
        for (size_t i = 0; i < n; i++)
            ref[i] = 0.5f * ref[i] + xs[i];
    }
    same = memcmp(y, ref, 8 * RANGE) == 0;
    ok(pref_in == cudaCpuDeviceId && pref_out == cudaInvalidDeviceId && acc_in == 0,
       "advice on a sub-range: preferred host and accessed-by gpu there, nothing outside "
       "(%d %d %d)", pref_in, pref_out, acc_in);
    ok(pref_after == cudaInvalidDeviceId && acc_after == cudaInvalidDeviceId,
       "unset: back to no preference, no accessed-by (%d %d)", pref_after, acc_after);
    ok(same, "the data is bitwise what the host computes, through set, remote use, unset");
    cudaFree(x);
    cudaFree(y);
    free(ref);
    free(xs);
}

int main(void)
{
    umadv_context_params_t params = {
        .field_mask  = UMADV_CONTEXT_FIELD_MAX_MANAGED | UMADV_CONTEXT_FIELD_BUDGET,
        .max_managed = 512 * UMADV_MIB,
        .budget      = BUDGET,
    };
    static const umadv_policy_t order[] = {UMADV_POLICY_DEMAND, UMADV_POLICY_PREFETCH_ALL,
                                           UMADV_POLICY_PLAN, UMADV_POLICY_ORACLE};
    umadv_context_t ctx;
    model_t m;
    int count = 0;

    if (umadv__cuda_ops_cudart.device_count(&count) != UMADV_OK)
        skip_all("no CUDA device");
    setenv("UMADV_ARENA_SIZE", "256M", 1);
    setenv("UMADV_PROFILER", "0", 1);   /* this test declares its accesses */
    setenv("UMADV_LINK_PROBE", "0", 1);
    plan(3 + 4 * 4 + 2 + 4);
    is(umadv_context_create(&params, &ctx), UMADV_OK, "context on the gpu, 64 MiB budget");
    is(model_init(ctx, &m), UMADV_OK, "160 MiB of managed buffers");
    umadv_profile_next_iteration(ctx);
    iteration(ctx, &m);
    ok(data_matches(&m), "profiled iteration computed right");
    umadv_plan(ctx);
    for (size_t p = 0; p < UMADV_ARRAY_SIZE(order); p++)
        run_policy(ctx, &m, order[p]);
    measure_batch(m.stream);
    check_advice(m.stream);
    for (int j = 0; j <= LAYERS; j++) {
        umadv_free(ctx, m.act[j]);
        free(m.ref[j]);
    }
    cudaStreamDestroy(m.stream);
    umadv_context_destroy(ctx);
    return exit_status();
}
