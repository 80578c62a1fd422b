/*
 * The cudart backend: the real CUDA runtime (CUDA 13 API, where prefetch and
 * advice take a struct cudaMemLocation).
 */
#include "cuda_ops/cuda_ops.h"

#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "common/hostmem.h"
#include "common/util.h"
#include "cuda_ops/cudart_util.h"

static __thread int cudart_quiet;

void umadv__cudart_quiet(int quiet)
{
    cudart_quiet = quiet;
}

umadv_status_t umadv__cudart_status(cudaError_t err, umadv_log_level_t level,
                                    const char *call, const char *file, int line)
{
    umadv_status_t status;

    if (err == cudaSuccess)
        return UMADV_OK;
    switch (err) {
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
        status = UMADV_ERR_NO_DEVICE;
        break;
    case cudaErrorCudartUnloading:
        /* The process is exiting and took the runtime with it (a thread of
         * ours still running from an atexit handler): no device from here
         * on, and nothing the user must hear about. */
        status = UMADV_ERR_NO_DEVICE;
        level  = UMADV_LOG_DEBUG;
        break;
    case cudaErrorNotSupported:
        status = UMADV_ERR_UNSUPPORTED;
        break;
    default:
        status = UMADV_ERR_CUDA;
        break;
    }
    if (cudart_quiet)
        level = UMADV_LOG_DEBUG;
    if (level <= umadv__log_level)
        umadv__log_emit(level, file, line, "%s failed: %s (%s)", call,
                        cudaGetErrorString(err), cudaGetErrorName(err));
    /* The failure is ours: do not leave it for the application's next
     * cudaGetLastError() to find (sticky errors stay regardless). */
    (void)cudaGetLastError();
    return status;
}

void *umadv__cudart_driver_entry(const char *name, int version)
{
    enum cudaDriverEntryPointQueryResult found;
    void *ptr = NULL;

    if (cudaGetDriverEntryPointByVersion(name, &ptr, (unsigned int)version, cudaEnableDefault,
                                         &found) != cudaSuccess ||
        found != cudaDriverEntryPointSuccess)
        return NULL;
    return ptr;
}

static struct cudaMemLocation location_of(int location)
{
    struct cudaMemLocation loc;

    memset(&loc, 0, sizeof(loc));
    if (location == UMADV_CUDA_LOCATION_HOST) {
        loc.type = cudaMemLocationTypeHost;
    } else if (UMADV_CUDA_LOCATION_IS_HOST_NUMA(location)) {
        loc.type = cudaMemLocationTypeHostNuma;
        loc.id   = UMADV_CUDA_LOCATION_NUMA_NODE(location);
    } else {
        loc.type = cudaMemLocationTypeDevice;
        loc.id   = location;
    }
    return loc;
}

/* Set once a driver refused a host NUMA node: from then on host nodes
 * are plain host, so a driver without host NUMA support (or a kernel
 * without NUMA) costs one refused call per process, not one per call. */
static int host_numa_refused;

static int host_numa_usable(int location)
{
    return UMADV_CUDA_LOCATION_IS_HOST_NUMA(location) &&
           !__atomic_load_n(&host_numa_refused, __ATOMIC_RELAXED);
}

/* A host-node call failed with @status, the same call to plain host then
 * worked: the node was what the driver refused. */
static void host_numa_refuse(const char *call, int location, umadv_status_t status)
{
    if (__atomic_exchange_n(&host_numa_refused, 1, __ATOMIC_RELAXED))
        return;
    umadv_warn("%s to host numa node %d refused (%s): plain host memory from now on",
               call, UMADV_CUDA_LOCATION_NUMA_NODE(location), umadv_status_string(status));
}

static umadv_status_t cudart_device_count(int *count_p)
{
    int count = 0;
    umadv_status_t status = UMADV_CUDART_FUNC(cudaGetDeviceCount(&count));

    if (status == UMADV_ERR_NO_DEVICE) {
        umadv_info("no usable cuda device: the cuda runtime could not reach a driver "
                   "(is libcuda.so.1 installed and a gpu visible?)");
        return status;
    }
    if (status != UMADV_OK)
        return status;
    if (count == 0) {
        umadv_error("no usable cuda device: cudaGetDeviceCount() found none "
                    "(check CUDA_VISIBLE_DEVICES)");
        return UMADV_ERR_NO_DEVICE;
    }
    *count_p = count;
    return UMADV_OK;
}

static umadv_status_t cudart_get_device_props(int device, umadv_device_props_t *props)
{
    struct cudaDeviceProp prop;
    char bus_id[sizeof(props->pci_bus_id)];
    umadv_status_t status;

    status = UMADV_CUDART_FUNC(cudaGetDeviceProperties(&prop, device));
    if (status != UMADV_OK)
        return status;
    status = UMADV_CUDART_FUNC(cudaDeviceGetPCIBusId(bus_id, (int)sizeof(bus_id), device));
    if (status != UMADV_OK)
        return status;
    memset(props, 0, sizeof(*props));
    /* The trace keeps 96 bytes of the name; CUDA allows 256. */
    snprintf(props->name, sizeof(props->name), "%.*s", (int)sizeof(props->name) - 1, prop.name);
    snprintf(props->pci_bus_id, sizeof(props->pci_bus_id), "%s", bus_id);
    props->total_memory              = prop.totalGlobalMem;
    props->cc_major                  = prop.major;
    props->cc_minor                  = prop.minor;
    props->managed_memory            = prop.managedMemory;
    props->concurrent_managed_access = prop.concurrentManagedAccess;
    return UMADV_OK;
}

static umadv_status_t cudart_driver_version(int *version_p)
{
    int version = 0;
    umadv_status_t status = UMADV_CUDART_FUNC(cudaDriverGetVersion(&version));

    if (status == UMADV_OK)
        *version_p = version;
    return status;
}

static umadv_status_t cudart_thread_begin(int device)
{
    enum cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    umadv_status_t status;

    umadv__thread_mark_own(); /* before its first call, which the census would count */
    status = UMADV_CUDART_FUNC(cudaSetDevice(device));
    if (status == UMADV_OK)
        status = UMADV_CUDART_FUNC(cudaThreadExchangeStreamCaptureMode(&mode));
    return status;
}

static umadv_status_t cudart_mem_get_info(uint64_t *free_p, uint64_t *total_p)
{
    size_t free_bytes = 0, total_bytes = 0;
    umadv_status_t status = UMADV_CUDART_FUNC(cudaMemGetInfo(&free_bytes, &total_bytes));

    if (status != UMADV_OK)
        return status;
    *free_p  = free_bytes;
    *total_p = total_bytes;
    return UMADV_OK;
}

static umadv_status_t cudart_malloc_managed(size_t size, size_t align, void **ptr_p)
{
    void *ptr = NULL;
    umadv_status_t status;

    status = UMADV_CUDART_FUNC(cudaMallocManaged(&ptr, size, cudaMemAttachGlobal));
    if (status == UMADV_OK)
        *ptr_p = ptr;
    return status;
}

static umadv_status_t cudart_free(void *ptr, size_t size)
{
    return UMADV_CUDART_FUNC(cudaFree(ptr));
}

static umadv_status_t prefetch_to(void *ptr, size_t size, int location,
                                  umadv_stream_t stream, umadv_log_level_t level)
{
    return UMADV_CUDART_FUNC_LOG(cudaMemPrefetchAsync(ptr, size, location_of(location), 0,
                                                      (cudaStream_t)stream), level);
}

static umadv_status_t advise_to(void *ptr, size_t size, umadv_cuda_advice_t advice,
                                int location, umadv_log_level_t level)
{
    return UMADV_CUDART_FUNC_LOG(cudaMemAdvise(ptr, size, (enum cudaMemoryAdvise)advice,
                                               location_of(location)), level);
}

/* Where a call goes once host nodes are refused. */
static int plain_if_refused(int location)
{
    return UMADV_CUDA_LOCATION_IS_HOST_NUMA(location) ? UMADV_CUDA_LOCATION_HOST : location;
}

/* The host-node call failed with @numa_status and the same call to plain
 * host returned @plain_status: only if that worked was the node, not the
 * range, what the driver refused. */
static umadv_status_t host_numa_retried(const char *call, int location,
                                        umadv_status_t numa_status,
                                        umadv_status_t plain_status)
{
    if (plain_status == UMADV_OK)
        host_numa_refuse(call, location, numa_status);
    return plain_status;
}

/* A host node is tried quietly (debug); a refusal is retried as plain
 * host with the usual error log. */
static umadv_status_t cudart_prefetch(void *ptr, size_t size, int location,
                                      umadv_stream_t stream)
{
    umadv_status_t status;

    if (!host_numa_usable(location))
        return prefetch_to(ptr, size, plain_if_refused(location), stream, UMADV_LOG_ERROR);
    status = prefetch_to(ptr, size, location, stream, UMADV_LOG_DEBUG);
    if (status == UMADV_OK)
        return status;
    return host_numa_retried("cudaMemPrefetchAsync", location, status,
                             prefetch_to(ptr, size, UMADV_CUDA_LOCATION_HOST, stream,
                                         UMADV_LOG_ERROR));
}

static umadv_status_t prefetch_each(void **ptrs, size_t *sizes, size_t count, int location,
                                    umadv_stream_t stream)
{
    umadv_status_t status = UMADV_OK;

    for (size_t i = 0; i < count && status == UMADV_OK; i++)
        status = cudart_prefetch(ptrs[i], sizes[i], location, stream);
    return status;
}

/* Set once the driver refused a batch: single prefetches from then on. */
static int batch_refused;

static int batch_unsupported(cudaError_t err)
{
    return err == cudaErrorNotSupported || err == cudaErrorCallRequiresNewerDriver;
}

/* The legacy default stream is refused by the batch call, and a host node
 * may need the plain-host retry of cudart_prefetch: both go one by one. */
static umadv_status_t cudart_prefetch_batch(void **ptrs, size_t *sizes, size_t count,
                                            int location, umadv_stream_t stream)
{
    struct cudaMemLocation loc = location_of(location);
    size_t first = 0;
    cudaError_t err;

    if (count < 2 || stream == NULL || UMADV_CUDA_LOCATION_IS_HOST_NUMA(location) ||
        __atomic_load_n(&batch_refused, __ATOMIC_RELAXED))
        return prefetch_each(ptrs, sizes, count, location, stream);
    err = cudaMemPrefetchBatchAsync(ptrs, sizes, count, &loc, &first, 1, 0,
                                    (cudaStream_t)stream);
    if (!batch_unsupported(err))
        return umadv__cudart_status(err, UMADV_LOG_ERROR, "cudaMemPrefetchBatchAsync",
                                    __FILE__, __LINE__);
    (void)cudaGetLastError();
    if (!__atomic_exchange_n(&batch_refused, 1, __ATOMIC_RELAXED))
        umadv_warn("cudaMemPrefetchBatchAsync is not supported here (%s): one prefetch "
                   "call per range from now on", cudaGetErrorName(err));
    return prefetch_each(ptrs, sizes, count, location, stream);
}

static umadv_status_t cudart_advise(void *ptr, size_t size, umadv_cuda_advice_t advice,
                                    int location)
{
    umadv_status_t status;

    if (!host_numa_usable(location))
        return advise_to(ptr, size, advice, plain_if_refused(location), UMADV_LOG_ERROR);
    status = advise_to(ptr, size, advice, location, UMADV_LOG_DEBUG);
    if (status == UMADV_OK)
        return status;
    return host_numa_retried("cudaMemAdvise", location, status,
                             advise_to(ptr, size, advice, UMADV_CUDA_LOCATION_HOST,
                                       UMADV_LOG_ERROR));
}

/* ---- staging ------------------------------------------------------------- */

/* The staging pool's pages, mapped and populated on threads of ours, then
 * registered in one call. cudaHostAlloc does the three under a driver lock
 * that CUDA's launches on every thread wait for: 2 GiB held them 0.9-1.2 s
 * on an H100's host, where registering populated pages held them 70-90 ms
 * (bench/RESULTS.md, pinning). One registration per chunk, so that one
 * copy may span any part of it. Huge pages where the kernel gives them:
 * fewer faults to populate, fewer pages to pin. */
#define PINNED_ALIGN (2 * UMADV_MIB)

/* Populating threads by umadv_pin_pace_t. One thread populates 3.4 GB/s
 * (H200's host); eight pinned ResNet-50's 4.2 GiB pool in 236 ms alone.
 * Beside a profile's second pass, eight took as long as two (698-768 ms:
 * the pass's migrations hold the same memory and page tables) and cost
 * the pass more: the profiling phase 1952-1987 ms against 1656-1705 with
 * two (ResNet-50 b64 at half its footprint, H200, bench/RESULTS.md). */
#define PINNED_POPULATE_WAITED 8
#define PINNED_POPULATE_BESIDE 2

static size_t pinned_span(size_t size)
{
    return (size + PINNED_ALIGN - 1) & ~(size_t)(PINNED_ALIGN - 1);
}

/* Pinning more than the host can spare would not fail: populating the
 * pages would wake the kernel's OOM killer (a ResNet-50 of 83 GiB managed
 * under a 16 GiB budget, on a host of 125 GiB, died with no word, most
 * likely so: a pool of 67 GiB pinned beside the data still on the host,
 * 150 GiB). So a request past umadv__host_spare is refused,
 * UMADV_ERR_NO_MEMORY, and the pool takes less (exec/stage.c). */
static umadv_status_t cudart_host_alloc(size_t size, umadv_pin_pace_t pace, void **ptr_p)
{
    size_t span = pinned_span(size);
    umadv_status_t status;
    uint64_t spare;
    void *ptr;

    if (umadv__host_spare(&spare) && span > spare) {
        umadv_debug("staging pool: %zu bytes to pin, the host can spare %llu", span,
                    (unsigned long long)spare);
        return UMADV_ERR_NO_MEMORY;
    }
    ptr = umadv__map_aligned(span, PINNED_ALIGN);
    if (ptr == NULL) {
        umadv_error("staging pool: mmap of %zu bytes failed: %m", span);
        return UMADV_ERR_NO_MEMORY;
    }
#ifdef MADV_HUGEPAGE
    (void)madvise(ptr, span, MADV_HUGEPAGE);
#endif
    umadv__populate(ptr, span,
                    pace == UMADV_PIN_BESIDE ? PINNED_POPULATE_BESIDE : PINNED_POPULATE_WAITED);
    status = UMADV_CUDART_FUNC(cudaHostRegister(ptr, span, cudaHostRegisterDefault));
    if (status != UMADV_OK) {
        munmap(ptr, span);
        return status;
    }
    *ptr_p = ptr;
    return UMADV_OK;
}

/* Pages the driver may still hold pinned (the unregistration failed) are
 * left mapped: a copy in flight could still write them. */
static umadv_status_t cudart_host_free(void *ptr, size_t size)
{
    umadv_status_t status = UMADV_CUDART_FUNC(cudaHostUnregister(ptr));

    if (status == UMADV_OK)
        munmap(ptr, pinned_span(size));
    return status;
}

static umadv_status_t cudart_device_alloc(size_t size, void **ptr_p)
{
    return UMADV_CUDART_FUNC(cudaMalloc(ptr_p, size));
}

static umadv_status_t cudart_device_free(void *ptr)
{
    return UMADV_CUDART_FUNC(cudaFree(ptr));
}

static umadv_status_t cudart_memcpy_async(void *dst, const void *src, size_t size,
                                          umadv_stream_t stream)
{
    return UMADV_CUDART_FUNC(cudaMemcpyAsync(dst, src, size, cudaMemcpyDefault,
                                             (cudaStream_t)stream));
}

static umadv_status_t cudart_memset_async(void *ptr, int value, size_t size,
                                          umadv_stream_t stream)
{
    return UMADV_CUDART_FUNC(cudaMemsetAsync(ptr, value, size, (cudaStream_t)stream));
}

/* A driver without discards (before CUDA 13) refuses them: UNSUPPORTED,
 * unlogged (the executor says once that evictions migrate then). */
static umadv_status_t discard_status(cudaError_t err, const char *call, int line)
{
    if (batch_unsupported(err)) {
        (void)cudaGetLastError();
        return UMADV_ERR_UNSUPPORTED;
    }
    return umadv__cudart_status(err, UMADV_LOG_ERROR, call, __FILE__, line);
}

static umadv_status_t cudart_discard_batch(void **ptrs, size_t *sizes, size_t count,
                                           umadv_stream_t stream)
{
    return discard_status(cudaMemDiscardBatchAsync(ptrs, sizes, count, 0, (cudaStream_t)stream),
                          "cudaMemDiscardBatchAsync", __LINE__);
}

/* One location for every range: the GPU the ranges are restored on. */
static umadv_status_t cudart_discard_and_prefetch_batch(void **ptrs, size_t *sizes, size_t count,
                                                        int location, umadv_stream_t stream)
{
    struct cudaMemLocation loc = location_of(location);
    size_t first = 0;

    return discard_status(cudaMemDiscardAndPrefetchBatchAsync(ptrs, sizes, count, &loc, &first,
                                                              1, 0, (cudaStream_t)stream),
                          "cudaMemDiscardAndPrefetchBatchAsync", __LINE__);
}

/*
 * Non-blocking: migrations must not serialise with the application's
 * legacy default stream. Of the greatest priority: a copy with a managed
 * operand runs on the SMs (a device-to-pinned copy of plain device memory
 * does not), so it waits behind the blocks of the application's kernels
 * queued before it. bench/beside_kernels, H200, 256 MiB beside a 16 ms
 * kernel of 16 waves: managed to pinned 21.0 ms at default priority, 6.1
 * at the greatest, 5.1 idle; prefetches and discards are not held up. The
 * 16-layer MLP at half its footprint: 1383 -> 1013 ms an iteration.
 */
static umadv_status_t cudart_stream_create(umadv_stream_t *stream_p)
{
    cudaStream_t stream;
    umadv_status_t status;
    int least = 0, greatest = 0;

    if (cudaDeviceGetStreamPriorityRange(&least, &greatest) != cudaSuccess)
        greatest = 0; /* the default priority: the stream still works */
    status = UMADV_CUDART_FUNC(
        cudaStreamCreateWithPriority(&stream, cudaStreamNonBlocking, greatest));
    if (status == UMADV_OK)
        *stream_p = stream;
    return status;
}

static umadv_status_t cudart_stream_destroy(umadv_stream_t stream)
{
    return UMADV_CUDART_FUNC(cudaStreamDestroy((cudaStream_t)stream));
}

/* The wait spins (CUDA's choice for one context on more cores), the
 * lanes' waits too: lanes that slept in them instead (an event of
 * blocking synchronisation) freed half of ResNet-50's process CPU and
 * made no model faster; ResNet-50 ran 5% slower, each wake late by the
 * interrupt's latency (H200, 2026-11-30, bench/RESULTS.md). */
static umadv_status_t cudart_stream_synchronize(umadv_stream_t stream)
{
    return UMADV_CUDART_FUNC(cudaStreamSynchronize((cudaStream_t)stream));
}

static umadv_status_t cudart_event_create(umadv_event_t *event_p)
{
    cudaEvent_t event;
    umadv_status_t status;

    status = UMADV_CUDART_FUNC(cudaEventCreateWithFlags(&event, cudaEventDefault));
    if (status == UMADV_OK)
        *event_p = event;
    return status;
}

static umadv_status_t cudart_event_destroy(umadv_event_t event)
{
    return UMADV_CUDART_FUNC(cudaEventDestroy((cudaEvent_t)event));
}

static umadv_status_t cudart_event_record(umadv_event_t event, umadv_stream_t stream)
{
    return UMADV_CUDART_FUNC(cudaEventRecord((cudaEvent_t)event, (cudaStream_t)stream));
}

static umadv_status_t cudart_stream_wait_event(umadv_stream_t stream, umadv_event_t event)
{
    return UMADV_CUDART_FUNC(cudaStreamWaitEvent((cudaStream_t)stream, (cudaEvent_t)event, 0));
}

static umadv_status_t cudart_event_synchronize(umadv_event_t event)
{
    return UMADV_CUDART_FUNC(cudaEventSynchronize((cudaEvent_t)event));
}

static umadv_status_t cudart_event_elapsed_ns(umadv_event_t start, umadv_event_t end,
                                              uint64_t *ns_p)
{
    float ms = 0;
    umadv_status_t status;

    status = UMADV_CUDART_FUNC(cudaEventElapsedTime(&ms, (cudaEvent_t)start,
                                                    (cudaEvent_t)end));
    if (status != UMADV_OK)
        return status;
    *ns_p = ms > 0 ? (uint64_t)((double)ms * 1e6) : 0;
    return UMADV_OK;
}

const umadv_cuda_ops_t umadv__cuda_ops_cudart = {
    .name               = "cudart",
    .device_count       = cudart_device_count,
    .get_device_props   = cudart_get_device_props,
    .driver_version     = cudart_driver_version,
    .thread_begin       = cudart_thread_begin,
    .mem_get_info       = cudart_mem_get_info,
    .malloc_managed     = cudart_malloc_managed,
    .free               = cudart_free,
    .prefetch           = cudart_prefetch,
    .prefetch_batch     = cudart_prefetch_batch,
    .advise             = cudart_advise,
    .host_alloc         = cudart_host_alloc,
    .host_free          = cudart_host_free,
    .device_alloc       = cudart_device_alloc,
    .device_free        = cudart_device_free,
    .memcpy_async       = cudart_memcpy_async,
    .memset_async       = cudart_memset_async,
    .discard_batch      = cudart_discard_batch,
    .discard_and_prefetch_batch = cudart_discard_and_prefetch_batch,
    .stream_create      = cudart_stream_create,
    .stream_destroy     = cudart_stream_destroy,
    .stream_synchronize = cudart_stream_synchronize,
    .event_create       = cudart_event_create,
    .event_destroy      = cudart_event_destroy,
    .event_record       = cudart_event_record,
    .stream_wait_event  = cudart_stream_wait_event,
    .event_synchronize  = cudart_event_synchronize,
    .event_elapsed_ns   = cudart_event_elapsed_ns,
};
