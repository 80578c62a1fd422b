/*
 * The cudart backend on a real GPU: device properties, managed memory from
 * the pool, prefetch to the device and back with data the device wrote,
 * advice, events timing a step. Skips the whole file without a device.
 * Managed memory stays far below any GPU's free memory (64 MiB).
 */
#include <umadv.h>

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "api/context.h"
#include "common/log.h"
#include "common/util.h"
#include "cuda_ops/cuda_ops.h"
#include "cuda_ops/cudart_util.h"
#include "tap.h"

#define BYTES (64 * UMADV_MIB)

static const umadv_cuda_ops_t *ops = &umadv__cuda_ops_cudart;

static void test_device(int device)
{
    umadv_device_props_t props;
    uint64_t free_b = 0, total_b = 0;
    int version = 0;

    is(ops->get_device_props(device, &props), UMADV_OK, "device properties");
    ok(props.name[0] != '\0' && props.total_memory > 0 && props.pci_bus_id[0] != '\0',
       "device %d: %s, %s, %.1f GiB", device, props.name, props.pci_bus_id,
       (double)props.total_memory / (double)UMADV_GIB);
    ok(props.managed_memory, "supports managed memory");
    is(ops->driver_version(&version), UMADV_OK, "driver version");
    ok(version >= 13000, "driver supports CUDA 13 (%d)", version);
    is(ops->mem_get_info(&free_b, &total_b), UMADV_OK, "mem_get_info");
    ok(total_b > 0 && free_b <= total_b && free_b > 4 * BYTES,
       "free %.1f of %.1f GiB, room for the test", (double)free_b / (double)UMADV_GIB,
       (double)total_b / (double)UMADV_GIB);
}

/* Device writes, seen by the host after prefetching back. */
static void test_migration(umadv_context_t ctx, int device, umadv_stream_t stream)
{
    unsigned char *p;
    int host_sees_device = 1;

    is(umadv_malloc(ctx, BYTES, "gpu-test", (void **)&p), UMADV_OK, "64 MiB from the pool");
    ok((uintptr_t)p % ctx->config.section_size == 0, "section aligned");
    memset(p, 0x11, BYTES);
    is(ops->prefetch(p, BYTES, device, stream), UMADV_OK, "prefetch to the device");
    is(UMADV_CUDART_FUNC(cudaMemsetAsync(p, 0x5a, BYTES, (cudaStream_t)stream)), UMADV_OK,
       "device writes the range");
    is(ops->prefetch(p, BYTES, UMADV_CUDA_LOCATION_HOST, stream), UMADV_OK,
       "prefetch back to the host");
    is(ops->stream_synchronize(stream), UMADV_OK, "stream synchronize");
    for (size_t i = 0; i < BYTES; i += 4099)
        host_sees_device &= p[i] == 0x5a;
    ok(host_sees_device && p[BYTES - 1] == 0x5a, "the host reads what the device wrote");

    is(ops->advise(p, BYTES, UMADV_CUDA_ADVISE_SET_READ_MOSTLY, device), UMADV_OK,
       "advise read-mostly");
    is(ops->advise(p, BYTES, UMADV_CUDA_ADVISE_UNSET_READ_MOSTLY, device), UMADV_OK,
       "unset read-mostly");
    is(ops->advise(p, BYTES, UMADV_CUDA_ADVISE_SET_PREFERRED_LOCATION,
                   UMADV_CUDA_LOCATION_HOST), UMADV_OK, "preferred location host");
    is(ops->advise(p, BYTES, UMADV_CUDA_ADVISE_SET_ACCESSED_BY, device), UMADV_OK,
       "accessed-by the device");
    is(umadv_free(ctx, p), UMADV_OK, "free");
}

/* The calling thread's stream capture mode. */
static int thread_mode(void)
{
    enum cudaStreamCaptureMode mode = cudaStreamCaptureModeGlobal, had;

    cudaThreadExchangeStreamCaptureMode(&mode); /* mode: the thread's */
    had = mode;
    cudaThreadExchangeStreamCaptureMode(&mode); /* and back */
    return (int)had;
}

static void *begun_thread(void *arg)
{
    if (ops->thread_begin(0) == UMADV_OK)
        *(int *)arg = thread_mode();
    return NULL;
}

/* A thread of umadv's own, begun: its capture mode relaxed
 * (cuda_ops.h); the application's thread keeps the default. */
static void test_thread_begin(void)
{
    int begun = -1;
    pthread_t t;

    if (pthread_create(&t, NULL, begun_thread, &begun) == 0)
        pthread_join(t, NULL);
    ok(begun == (int)cudaStreamCaptureModeRelaxed &&
           thread_mode() == (int)cudaStreamCaptureModeGlobal,
       "a thread begun (umadv's own) in relaxed capture mode (%d), the test's thread in "
       "global mode", begun);
}

/* A profiled step timed by events on the application's stream. */
static void test_step_timing(umadv_context_t ctx, umadv_stream_t stream)
{
    void *p;

    umadv_malloc(ctx, BYTES, "timed", &p);
    umadv_profile_next_iteration(ctx);
    umadv_iteration_begin(ctx);
    umadv_step_begin(ctx, "memset", stream);
    umadv_step_access(ctx, p, BYTES, UMADV_ACCESS_WRITE);
    UMADV_CUDART_FUNC(cudaMemsetAsync(p, 1, BYTES, (cudaStream_t)stream));
    umadv_step_end(ctx, 0);
    is(umadv_trace_save(ctx, "/dev/null"), UMADV_OK, "profiled iteration completed");
    ok(ctx->trace.nsteps == 1 && ctx->trace.steps[0].duration_ns > 0 &&
       ctx->trace.steps[0].duration_ns < 10000000000ull,
       "step timed by events: %llu ns", ctx->trace.nsteps ?
       (unsigned long long)ctx->trace.steps[0].duration_ns : 0ull);
    umadv_free(ctx, p);
}

int main(void)
{
    umadv_context_params_t params = {.field_mask = UMADV_CONTEXT_FIELD_MAX_MANAGED,
                                     .max_managed = 4 * BYTES};
    umadv_context_t ctx;
    umadv_stream_t stream;
    umadv_stats_t stats = {.size = sizeof(stats)};
    int count = 0;

    if (ops->device_count(&count) != UMADV_OK)
        skip_all("no CUDA device");
    plan(25);
    is(umadv_context_create(&params, &ctx), UMADV_OK, "context on the gpu");
    test_device(ctx->config.device);
    is(ops->stream_create(&stream), UMADV_OK, "stream");
    test_migration(ctx, ctx->config.device, stream);
    test_step_timing(ctx, stream);
    test_thread_begin();
    umadv_get_stats(ctx, &stats);
    ok(stats.managed_bytes == 0 && stats.allocations == 0, "everything freed");
    ops->stream_destroy(stream);
    umadv_context_destroy(ctx);
    return exit_status();
}
