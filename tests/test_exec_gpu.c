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
 * of what the process's managed data ever occupied. Skips without a device.
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
    ok(st.resident_peak > 0 && st.resident_peak <= BUDGET && st.gpu_peak_used > 0,
       "%s: accounted residency peaked at %.1f MiB, within the budget; monitor sampled",
       name, (double)st.resident_peak / (double)UMADV_MIB);
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
    plan(3 + 4 * 4);
    is(umadv_context_create(&params, &ctx), UMADV_OK, "context on the gpu, 64 MiB budget");
    is(model_init(ctx, &m), UMADV_OK, "160 MiB of managed buffers");
    umadv_profile_next_iteration(ctx);
    iteration(ctx, &m);
    ok(data_matches(&m), "profiled iteration computed right");
    umadv_plan(ctx);
    for (size_t p = 0; p < UMADV_ARRAY_SIZE(order); p++)
        run_policy(ctx, &m, order[p]);
    for (int j = 0; j <= LAYERS; j++) {
        umadv_free(ctx, m.act[j]);
        free(m.ref[j]);
    }
    cudaStreamDestroy(m.stream);
    umadv_context_destroy(ctx);
    return exit_status();
}
