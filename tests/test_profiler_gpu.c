/*
 * The profiling pass on a real GPU: a small managed-memory application of
 * four kernels, one profiled iteration. Each kernel must become a step
 * whose access set is exactly the buffers it uses (a re-read of resident
 * data included, which no fault shows), what the scan names must come
 * back by prefetch after the profile's eviction, not by faults, the link
 * probe's numbers must be plausible, and replay must count faults only
 * when data is not resident. Skips without a device.
 */
#include <umadv.h>

#include <cuda_runtime_api.h>
#include <stdlib.h>
#include <string.h>

#include "api/context.h"
#include "common/util.h"
#include "profiler/profiler.h"
#include "profiler_gpu_kernels.h"
#include "tap.h"

#define NFLOATS (UINT64_C(16) << 20) /* 64 MiB per buffer */

enum { BUF_A, BUF_B, BUF_C, BUF_OUT, BUF_IDLE, NBUF };
static const char *const buf_names[NBUF] = {"A", "B", "C", "OUT", "IDLE"};

typedef struct app {
    float *buf[NBUF];
} app_t;

/* One iteration: 4 kernels. Step 1 re-reads A, which step 0 left
 * resident: only the parameter scan can see that. */
static int app_iteration(const app_t *a)
{
    int err = pg_launch_fill(a->buf[BUF_A], NFLOATS, 1.0f);

    err |= pg_launch_axpy(a->buf[BUF_B], a->buf[BUF_A], NFLOATS);
    err |= pg_launch_sum(a->buf[BUF_A], a->buf[BUF_OUT], NFLOATS);
    err |= pg_launch_axpy(a->buf[BUF_C], a->buf[BUF_B], NFLOATS);
    err |= (int)cudaDeviceSynchronize();
    return err;
}

/* The buffers step @s of the trace touches, as a bit set of BUF_*. */
static unsigned step_buffers(umadv_context_t ctx, const app_t *a, uint32_t s,
                             uint32_t *faults_p)
{
    const umadv_trace_t *t = &ctx->trace;
    const umadv_trace_step_t *st = &t->steps[s];
    unsigned set = 0;

    *faults_p = 0;
    for (uint32_t i = 0; i < st->naccesses; i++) {
        const umadv_trace_access_t *x = &t->accesses[st->first_access + i];
        for (int b = 0; b < NBUF; b++) {
            if (t->allocs[x->alloc].base == (uintptr_t)a->buf[b])
                set |= 1u << b;
        }
        *faults_p += x->faults;
    }
    return set;
}

static void check_steps(umadv_context_t ctx, const app_t *a)
{
    static const char *const names[] = {"pg_fill", "pg_axpy", "pg_sum", "pg_axpy"};
    static const unsigned want[] = {
        1u << BUF_A, 1u << BUF_A | 1u << BUF_B, 1u << BUF_A | 1u << BUF_OUT,
        1u << BUF_B | 1u << BUF_C,
    };
    uint32_t faults, total = 0;

    for (uint32_t s = 0; s < 4; s++) {
        unsigned got = step_buffers(ctx, a, s, &faults);
        const umadv_trace_step_t *st = &ctx->trace.steps[s];

        diag("step %u %s: buffers 0x%x, %u fault groups, %.3f ms", s, st->name ? st->name : "?",
             got, faults, st->duration_ns / 1e6);
        ok(st->name != NULL && strstr(st->name, names[s]) != NULL, "step %u is kernel %s", s,
           names[s]);
        is(got, want[s], "step %u touches exactly its kernel's buffers", s);
        ok(st->duration_ns > 1000, "step %u has the kernel's time", s);
        total += faults;
    }
    /* The profile evicted every buffer; the scan names each kernel's, so
     * they came back by prefetch, not by faults (api/profile.c, FETCHING
     * SCANNED BLOCKS BACK; umadv profile's own GPU test counts faults). */
    is_u64(ctx->profile_fetched, 4 * NFLOATS * sizeof(float),
           "the four buffers the kernels use fetched back once each (%u fault groups)", total);
}

static void check_link(umadv_context_t ctx)
{
    const umadv_link_model_t *l = &ctx->link;

    diag("link: fetch %.1f GB/s + %.1f us, evict %.1f GB/s + %.1f us, paging %.2f GB/s",
         l->fetch_bw / 1e9, l->fetch_latency * 1e6, l->evict_bw / 1e9, l->evict_latency * 1e6,
         l->fault_bw / 1e9);
    ok(l->fetch_bw > 5e9 && l->fetch_bw < 2e12, "fetch bandwidth plausible");
    ok(l->evict_bw > 1e9 && l->evict_bw < 2e12, "eviction bandwidth plausible");
    ok(l->fault_bw > 2e8 && l->fault_bw < l->fetch_bw * 2, "demand paging plausible");
    ok(l->fetch_latency < 5e-3 && l->evict_latency < 5e-3, "call latencies plausible");
    ok(memcmp(&ctx->trace.link, l, sizeof(*l)) == 0, "the trace carries the measured link");
    ok(ctx->trace.device.name[0] != '\0' && ctx->trace.device.memory > 0 &&
       ctx->trace.device.driver_version > 0, "and the device: %s", ctx->trace.device.name);
}

static void check_replay(umadv_context_t ctx, const app_t *a)
{
    uint64_t resident, evicted;

    umadv_iteration_begin(ctx);
    app_iteration(a);
    umadv_iteration_begin(ctx);
    resident = ctx->iteration_faults;
    for (int b = 0; b < NBUF; b++)
        cudaMemPrefetchAsync(a->buf[b], NFLOATS * sizeof(float),
                             (struct cudaMemLocation){.type = cudaMemLocationTypeHost}, 0, 0);
    cudaDeviceSynchronize();
    app_iteration(a);
    umadv_iteration_begin(ctx);
    evicted = ctx->iteration_faults;
    diag("replay: %llu fault groups with data resident, %llu after eviction",
         (unsigned long long)resident, (unsigned long long)evicted);
    ok(evicted > 0 && resident * 10 < evicted, "replay counts faults, few while resident");
}

int main(void)
{
    umadv_context_t ctx = NULL;
    int count = 0;
    app_t a;

    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0)
        skip_all("no CUDA device");
    plan(26);
    /* Count the faults of every iteration: replay counts them only in some
     * iterations by default, and this test runs no schedule. */
    setenv("UMADV_FAULT_PERIOD", "1", 1);
    /* One pass, which evicts and fetches back what the scan names: with
     * two, a program that fits is profiled by a first pass, which evicts
     * nothing (umadv(7), UMADV_PROFILE_PASSES). */
    setenv("UMADV_PROFILE_PASSES", "1", 1);
    is(umadv_context_create(NULL, &ctx), UMADV_OK, "context on the gpu");
    ok(ctx != NULL && ctx->profiler != NULL, "cupti profiler attached");
    if (ctx == NULL || ctx->profiler == NULL)
        return exit_status();
    for (int b = 0; b < NBUF; b++)
        umadv_malloc(ctx, NFLOATS * sizeof(float), buf_names[b], (void **)&a.buf[b]);
    is(app_iteration(&a), 0, "warm-up iteration");
    umadv_profile_next_iteration(ctx);
    umadv_iteration_begin(ctx);
    is(app_iteration(&a), 0, "profiled iteration");
    umadv_iteration_begin(ctx);
    ok(ctx->record == UMADV_CTX_REC_DONE, "recorded");
    is(ctx->trace.nsteps, 4, "one step per kernel");
    if (ctx->record == UMADV_CTX_REC_DONE && ctx->trace.nsteps == 4)
        check_steps(ctx, &a);
    else
        for (int i = 0; i < 13; i++)
            skip("no recorded trace", "steps");
    if (getenv("UMADV_TEST_TRACE") != NULL)
        umadv_trace_save(ctx, getenv("UMADV_TEST_TRACE"));
    check_link(ctx);
    check_replay(ctx, &a);
    umadv_context_destroy(ctx);
    return exit_status();
}
