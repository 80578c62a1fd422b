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

#include <cuda.h>

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

/* ---- page calls in umadv's own context -------------------------------- */

typedef CUresult (*ctx_get_current_fn)(CUcontext *ctx);

/* A staged round trip as a lane makes it with its page calls apart
 * (exec/worker.c, PAGE CALLS APART): the copies on @stream in the
 * application's context, the discard and the population on a stream of
 * umadv's own context, the copy back waiting for the population by an
 * event of that context. The data comes back intact, and the calls were
 * made in another context. */
static void test_page_calls_apart(umadv_stream_t stream)
{
    ctx_get_current_fn get_current = umadv__cudart_driver_entry("cuCtxGetCurrent",
                                                                CUDART_VERSION);
    CUcontext mine = NULL, apart = NULL;
    umadv_stream_t page = NULL;
    umadv_event_t populated = NULL;
    unsigned char *managed = NULL, *pinned = NULL;
    umadv_status_t status;
    size_t size = BYTES;
    void *range;
    int intact = 1;

    if (get_current == NULL) {
        for (int i = 0; i < 3; i++)
            skip("the driver has no cuCtxGetCurrent", "page calls apart");
        return;
    }
    get_current(&mine);
    ops->malloc_managed(BYTES, 0, (void **)&managed);
    ops->host_alloc(BYTES, UMADV_PIN_WAITED, (void **)&pinned);
    range = managed;
    status = ops->apart_enter(0);
    if (status == UMADV_OK) {
        get_current(&apart);
        if ((status = ops->stream_create(&page)) == UMADV_OK)
            status = ops->event_create(&populated);
        ops->apart_leave();
    }
    ok(status == UMADV_OK && apart != NULL && apart != mine,
       "apart_enter: a context not the application's, a stream and an event made there");
    UMADV_CUDART_FUNC(cudaMemsetAsync(managed, 0x33, BYTES, (cudaStream_t)stream));
    if (status == UMADV_OK)
        status = ops->memcpy_async(pinned, managed, BYTES, stream);
    if (status == UMADV_OK)
        status = ops->stream_synchronize(stream);
    if (status == UMADV_OK && (status = ops->apart_enter(0)) == UMADV_OK) {
        status = ops->discard_batch(&range, &size, 1, page);
        if (status == UMADV_OK)
            status = ops->discard_and_prefetch_batch(&range, &size, 1, 0, page);
        if (status == UMADV_OK)
            status = ops->event_record(populated, page);
        ops->apart_leave();
    }
    if (status == UMADV_OK)
        status = ops->stream_wait_event(stream, populated);
    if (status == UMADV_OK)
        status = ops->memcpy_async(managed, pinned, BYTES, stream);
    if (status == UMADV_OK)
        status = ops->stream_synchronize(stream);
    get_current(&apart);
    ok(status == UMADV_OK && apart == mine,
       "copied out here, discarded and populated apart, copied back here after the "
       "population's event; the application's context current again");
    for (size_t i = 0; i < BYTES; i += 4093)
        intact &= managed[i] == 0x33;
    ok(intact && managed[BYTES - 1] == 0x33, "the range holds its bytes after the round trip");
    if (ops->apart_enter(0) == UMADV_OK) {
        if (populated != NULL)
            ops->event_destroy(populated);
        if (page != NULL)
            ops->stream_destroy(page);
        ops->apart_leave();
    }
    ops->host_free(pinned, BYTES);
    ops->free(managed, BYTES);
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
    plan(28);
    is(umadv_context_create(&params, &ctx), UMADV_OK, "context on the gpu");
    test_device(ctx->config.device);
    is(ops->stream_create(&stream), UMADV_OK, "stream");
    test_migration(ctx, ctx->config.device, stream);
    test_step_timing(ctx, stream);
    test_thread_begin();
    test_page_calls_apart(stream);
    umadv_get_stats(ctx, &stats);
    ok(stats.managed_bytes == 0 && stats.allocations == 0, "everything freed");
    ops->stream_destroy(stream);
    umadv_context_destroy(ctx);
    return exit_status();
}
