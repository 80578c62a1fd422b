/*
 * The host backend: a fake GPU for tests and GPU-less machines. Managed
 * memory is anonymous host memory (mmap, aligned as asked, committed on
 * first touch); prefetches and advice are checked as CUDA would check them
 * (the range must be managed memory, the location must exist) and counted,
 * and optionally logged so tests can assert what was issued. Events read
 * the wall clock: host "work" is done when it is recorded.
 *
 * The fake device is process-wide, as a real one is; a mutex keeps the
 * counters consistent when an executor thread prefetches.
 */
#include "cuda_ops/cuda_ops.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/hostmem.h"
#include "common/log.h"
#include "common/util.h"

#define HOST_DEFAULT_MEMORY (UINT64_C(80) << 30)

typedef struct host_range {
    uintptr_t base;
    size_t    size;
} host_range_t;

/* Host buffers standing for CUDA memory that is not managed: pinned host
 * memory (host_alloc) and plain device memory (device_alloc), registered
 * so that copies to and from them pass the range check. */
typedef struct host_buffers {
    host_range_t     *v;
    size_t            n, cap;
    const char       *alloc_name, *free_name;
    umadv_cuda_call_t alloc_call, free_call;
    uint64_t         *allocs, *frees, *bytes; /* its counters */
} host_buffers_t;

/* The streams a host backend follows as busy at once (BUSY STREAMS):
 * more than the executor's lanes, pipes and restore stream. */
#define HOST_BUSY_STREAMS 64

typedef struct host_event {
    uint64_t time_ns;
    int      recorded;
} host_event_t;

static struct {
    pthread_mutex_t            lock;
    uint64_t                   device_memory;
    int                        device_count;
    uint64_t                   host_spare; /* pinned bytes host_alloc grants */
    umadv_cuda_host_counters_t counters;
    host_range_t              *ranges;   /* live allocations, unsorted */
    size_t                     nranges, ranges_cap;
    host_buffers_t             pinned;   /* live pinned host allocations */
    host_buffers_t             device;   /* live plain device allocations */
    host_range_t              *unpopulated; /* discarded, not populated since */
    size_t                     nunpopulated, unpopulated_cap;
    int                        logging;
    umadv_cuda_host_record_t  *log;
    size_t                     nlog, log_cap;
    umadv_stream_t             busy[HOST_BUSY_STREAMS]; /* BUSY STREAMS */
    size_t                     nbusy;
} host = {
    .lock          = PTHREAD_MUTEX_INITIALIZER,
    .device_memory = HOST_DEFAULT_MEMORY,
    .device_count  = 1,
    .host_spare    = UINT64_MAX,
    .pinned = {.alloc_name = "host_alloc", .free_name = "host_free",
               .alloc_call = UMADV_CUDA_CALL_HOST_ALLOC, .free_call = UMADV_CUDA_CALL_HOST_FREE,
               .allocs = &host.counters.pinned_allocs, .frees = &host.counters.pinned_frees,
               .bytes = &host.counters.pinned_bytes},
    .device = {.alloc_name = "device_alloc", .free_name = "device_free",
               .alloc_call = UMADV_CUDA_CALL_DEVICE_ALLOC,
               .free_call = UMADV_CUDA_CALL_DEVICE_FREE,
               .allocs = &host.counters.device_allocs, .frees = &host.counters.device_frees,
               .bytes = &host.counters.device_bytes},
};

void umadv__cuda_host_configure(uint64_t device_memory, int device_count)
{
    pthread_mutex_lock(&host.lock);
    host.device_memory = device_memory;
    host.device_count  = device_count;
    pthread_mutex_unlock(&host.lock);
}

void umadv__cuda_host_configure_host(uint64_t host_spare)
{
    pthread_mutex_lock(&host.lock);
    host.host_spare = host_spare;
    pthread_mutex_unlock(&host.lock);
}

void umadv__cuda_host_counters(umadv_cuda_host_counters_t *counters)
{
    pthread_mutex_lock(&host.lock);
    *counters = host.counters;
    pthread_mutex_unlock(&host.lock);
}

void umadv__cuda_host_log_enable(int enable)
{
    pthread_mutex_lock(&host.lock);
    host.logging = enable;
    host.nlog = 0;
    pthread_mutex_unlock(&host.lock);
}

const umadv_cuda_host_record_t *umadv__cuda_host_log(size_t *count_p)
{
    *count_p = host.nlog;
    return host.log;
}

void umadv__cuda_host_reset(void)
{
    pthread_mutex_lock(&host.lock);
    memset(&host.counters, 0, sizeof(host.counters));
    host.device_memory = HOST_DEFAULT_MEMORY;
    host.device_count  = 1;
    host.host_spare    = UINT64_MAX;
    host.logging = 0;
    host.nlog = 0;
    host.nunpopulated = 0;
    host.nbusy = 0;
    pthread_mutex_unlock(&host.lock);
}

/*
 * BUSY STREAMS. Host work is done when issued, but a GPU's is not: a
 * stream with work enqueued since its last synchronisation (a copy, a
 * memset, a prefetch, a population, a wait on an event) would still be
 * running it. A discard enqueued on such a stream is counted
 * (discards_behind_work): on a GPU it can lose what a later restore
 * writes (exec/stage.c, DISCARDS ON AN IDLE STREAM), so tests check that
 * none is. A discard itself leaves its stream as it was (one behind
 * another was measured harmless).
 */

/* Called with the lock held. */
static size_t busy_index(umadv_stream_t stream)
{
    size_t i = 0;

    while (i < host.nbusy && host.busy[i] != stream)
        i++;
    return i;
}

/* Called with the lock held: work enqueued on @stream (the legacy
 * stream not followed; a full table drops the mark). */
static void stream_busy(umadv_stream_t stream)
{
    if (stream != NULL && busy_index(stream) == host.nbusy && host.nbusy < HOST_BUSY_STREAMS)
        host.busy[host.nbusy++] = stream;
}

/* Called with the lock held: @stream synchronised (or gone). */
static void stream_idle(umadv_stream_t stream)
{
    size_t i = busy_index(stream);

    if (i < host.nbusy)
        host.busy[i] = host.busy[--host.nbusy];
}

/*
 * UNPOPULATED RANGES. A range discarded (discard_batch) and not populated
 * since (discard_and_prefetch_batch, a prefetch, a memset, as a kernel's
 * writes would, or its free) is one whose pages the driver has dropped.
 * A copy into such a range is counted (unpopulated_copies): on a GPU its
 * bytes read right on the GPU but could read an older version on the CPU
 * later (umadv(7), STAGING), so a restore populates first. The copy is
 * made as asked: the count is what tests check.
 */

/* Called with the lock held: [@lo, @hi) is populated (no longer in the
 * list, cutting the ranges it overlaps). */
static void unpopulated_cut(uintptr_t lo, uintptr_t hi)
{
    for (size_t i = 0; i < host.nunpopulated;) {
        host_range_t r = host.unpopulated[i];
        uintptr_t end = r.base + r.size;

        if (end <= lo || r.base >= hi) {
            i++;
            continue;
        }
        host.unpopulated[i] = host.unpopulated[--host.nunpopulated];
        if (r.base < lo)
            host.unpopulated[host.nunpopulated++] = (host_range_t){r.base, lo - r.base};
        if (end > hi &&
            umadv__array_reserve((void **)&host.unpopulated, &host.unpopulated_cap,
                                 host.nunpopulated + 1, sizeof(r)) == UMADV_OK)
            host.unpopulated[host.nunpopulated++] = (host_range_t){hi, end - hi};
    }
}

static void populated(const void *ptr, size_t size)
{
    unpopulated_cut((uintptr_t)ptr, (uintptr_t)ptr + size);
}

static void unpopulated_add(const void *ptr, size_t size)
{
    populated(ptr, size); /* no overlaps in the list */
    if (umadv__array_reserve((void **)&host.unpopulated, &host.unpopulated_cap,
                             host.nunpopulated + 1, sizeof(*host.unpopulated)) == UMADV_OK)
        host.unpopulated[host.nunpopulated++] = (host_range_t){(uintptr_t)ptr, size};
}

/* Called with the lock held: the bytes of [@ptr, +@size) in the list. */
static uint64_t unpopulated_bytes(const void *ptr, size_t size)
{
    uintptr_t lo = (uintptr_t)ptr, hi = lo + size;
    uint64_t bytes = 0;

    for (size_t i = 0; i < host.nunpopulated; i++) {
        const host_range_t *r = &host.unpopulated[i];
        uintptr_t from = UMADV_MAX(lo, r->base), to = UMADV_MIN(hi, r->base + r->size);

        bytes += to > from ? to - from : 0;
    }
    return bytes;
}

/* Whether the calling thread called thread_begin (its capture mode
 * relaxed, were this cudart); its number in the log. */
static __thread int thread_begun;
static __thread unsigned thread_number;
static unsigned threads_numbered;

/* Called with the lock held. A full log drops records rather than fail
 * the call it describes. */
static void log_call(const umadv_cuda_host_record_t *record)
{
    if (!host.logging ||
        umadv__array_reserve((void **)&host.log, &host.log_cap, host.nlog + 1,
                             sizeof(*host.log)) != UMADV_OK)
        return;
    if (thread_number == 0)
        thread_number = ++threads_numbered;
    host.log[host.nlog] = *record;
    host.log[host.nlog].thread = thread_number;
    host.log[host.nlog++].begun = thread_begun;
}

/* Called with the lock held: is [ptr, ptr+size) inside one allocation? */
static int range_is_managed(const void *ptr, size_t size)
{
    uintptr_t start = (uintptr_t)ptr;

    for (size_t i = 0; i < host.nranges; i++) {
        const host_range_t *r = &host.ranges[i];
        if (start >= r->base && start - r->base < r->size && size <= r->size - (start - r->base))
            return 1;
    }
    return 0;
}

static umadv_status_t host_device_count(int *count_p)
{
    int count;

    pthread_mutex_lock(&host.lock);
    count = host.device_count;
    pthread_mutex_unlock(&host.lock);
    if (count <= 0) {
        umadv_error("no usable cuda device: the host backend is configured with none");
        return UMADV_ERR_NO_DEVICE;
    }
    *count_p = count;
    return UMADV_OK;
}

static int device_valid(int device)
{
    int valid;

    pthread_mutex_lock(&host.lock);
    valid = device >= 0 && device < host.device_count;
    pthread_mutex_unlock(&host.lock);
    return valid;
}

static umadv_status_t host_get_device_props(int device, umadv_device_props_t *props)
{
    if (!device_valid(device)) {
        umadv_error("host backend: no device %d", device);
        return UMADV_ERR_CUDA;
    }
    memset(props, 0, sizeof(*props));
    snprintf(props->name, sizeof(props->name), "host memory (no gpu)");
    snprintf(props->pci_bus_id, sizeof(props->pci_bus_id), "0000:00:%02x.0", device);
    pthread_mutex_lock(&host.lock);
    props->total_memory = host.device_memory;
    pthread_mutex_unlock(&host.lock);
    props->managed_memory            = 1;
    props->concurrent_managed_access = 1;
    return UMADV_OK;
}

static umadv_status_t host_driver_version(int *version_p)
{
    *version_p = 0; /* no driver: what cudaDriverGetVersion says without one */
    return UMADV_OK;
}

static umadv_status_t host_thread_begin(int device)
{
    if (!device_valid(device)) {
        umadv_error("host backend: no device %d", device);
        return UMADV_ERR_CUDA;
    }
    thread_begun = 1;
    return UMADV_OK;
}

/* As if every managed byte were resident: deterministic for tests. */
static umadv_status_t host_mem_get_info(uint64_t *free_p, uint64_t *total_p)
{
    pthread_mutex_lock(&host.lock);
    *total_p = host.device_memory;
    *free_p  = host.device_memory - UMADV_MIN(host.device_memory, host.counters.managed_bytes);
    pthread_mutex_unlock(&host.lock);
    return UMADV_OK;
}

static umadv_status_t host_malloc_managed(size_t size, size_t align, void **ptr_p)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t mapped;
    void *ptr;

    if (size == 0 || (align & (align - 1)) != 0 || size > SIZE_MAX / 2) {
        umadv_error("host backend: malloc_managed(%zu, align %zu): invalid", size, align);
        return UMADV_ERR_INVALID_PARAM;
    }
    mapped = umadv__page_round(size);
    ptr = umadv__map_aligned(mapped, UMADV_MAX(align, page));
    if (ptr == NULL) {
        umadv_error("host backend: mmap of %zu bytes failed: %m", mapped);
        return UMADV_ERR_CUDA; /* where cudaMallocManaged would fail */
    }
    pthread_mutex_lock(&host.lock);
    if (umadv__array_reserve((void **)&host.ranges, &host.ranges_cap, host.nranges + 1,
                             sizeof(*host.ranges)) != UMADV_OK) {
        pthread_mutex_unlock(&host.lock);
        munmap(ptr, mapped);
        return UMADV_ERR_NO_MEMORY;
    }
    host.ranges[host.nranges++] = (host_range_t){(uintptr_t)ptr, size};
    host.counters.mallocs++;
    host.counters.managed_bytes += size;
    log_call(&(umadv_cuda_host_record_t){.call = UMADV_CUDA_CALL_MALLOC, .ptr = ptr,
                                         .size = size});
    pthread_mutex_unlock(&host.lock);
    *ptr_p = ptr;
    return UMADV_OK;
}

static umadv_status_t host_free(void *ptr, size_t size)
{
    size_t i;

    pthread_mutex_lock(&host.lock);
    for (i = 0; i < host.nranges && host.ranges[i].base != (uintptr_t)ptr; i++)
        ;
    if (i == host.nranges || host.ranges[i].size != size) {
        pthread_mutex_unlock(&host.lock);
        umadv_error("host backend: free(%p, %zu) of memory it did not allocate", ptr, size);
        return UMADV_ERR_CUDA;
    }
    host.ranges[i] = host.ranges[--host.nranges];
    populated(ptr, size);
    host.counters.frees++;
    host.counters.managed_bytes -= size;
    log_call(&(umadv_cuda_host_record_t){.call = UMADV_CUDA_CALL_FREE, .ptr = ptr,
                                         .size = size});
    pthread_mutex_unlock(&host.lock);
    munmap(ptr, umadv__page_round(size));
    return UMADV_OK;
}

/* Called with the lock held: what CUDA would refuse. */
static int request_valid(const char *what, const void *ptr, size_t size, int location,
                         int location_used)
{
    if (size == 0 || !range_is_managed(ptr, size)) {
        umadv_error("host backend: %s of [%p, +%zu) outside managed memory", what, ptr, size);
        return 0;
    }
    /* Any host node is taken: the fake GPU has no NUMA driver to ask. */
    if (location_used && !UMADV_CUDA_LOCATION_IS_HOST(location) &&
        location >= host.device_count) {
        umadv_error("host backend: %s to a location that does not exist (%d)", what, location);
        return 0;
    }
    return 1;
}

static umadv_status_t host_prefetch(void *ptr, size_t size, int location,
                                    umadv_stream_t stream)
{
    pthread_mutex_lock(&host.lock);
    if (!request_valid("prefetch", ptr, size, location, 1)) {
        pthread_mutex_unlock(&host.lock);
        return UMADV_ERR_CUDA;
    }
    populated(ptr, size);
    if (UMADV_CUDA_LOCATION_IS_HOST(location)) {
        host.counters.prefetches_to_host++;
        host.counters.prefetch_bytes_to_host += size;
    } else {
        host.counters.prefetches_to_device++;
        host.counters.prefetch_bytes_to_device += size;
    }
    log_call(&(umadv_cuda_host_record_t){.call = UMADV_CUDA_CALL_PREFETCH, .ptr = ptr,
                                         .size = size, .location = location,
                                         .stream = stream});
    stream_busy(stream);
    pthread_mutex_unlock(&host.lock);
    return UMADV_OK;
}

/* As CUDA would: every range is checked before any is taken. The legacy
 * default stream, which cudaMemPrefetchBatchAsync refuses, is what
 * cudart turns into single prefetches: so is it here. */
static umadv_status_t host_prefetch_batch(void **ptrs, size_t *sizes, size_t count,
                                          int location, umadv_stream_t stream)
{
    umadv_cuda_call_t call = stream != NULL ? UMADV_CUDA_CALL_PREFETCH_BATCH
                                            : UMADV_CUDA_CALL_PREFETCH;
    int to_host = UMADV_CUDA_LOCATION_IS_HOST(location);

    pthread_mutex_lock(&host.lock);
    for (size_t i = 0; i < count; i++) {
        if (!request_valid("prefetch_batch", ptrs[i], sizes[i], location, 1)) {
            pthread_mutex_unlock(&host.lock);
            return UMADV_ERR_CUDA;
        }
    }
    for (size_t i = 0; i < count; i++) {
        populated(ptrs[i], sizes[i]);
        *(to_host ? &host.counters.prefetches_to_host : &host.counters.prefetches_to_device) += 1;
        *(to_host ? &host.counters.prefetch_bytes_to_host
                  : &host.counters.prefetch_bytes_to_device) += sizes[i];
        log_call(&(umadv_cuda_host_record_t){.call = call, .ptr = ptrs[i], .size = sizes[i],
                                             .location = location, .stream = stream,
                                             .batch = stream != NULL ? count : 0});
    }
    if (stream != NULL && count > 0)
        host.counters.prefetch_batches++;
    stream_busy(stream);
    pthread_mutex_unlock(&host.lock);
    return UMADV_OK;
}

static umadv_status_t host_advise(void *ptr, size_t size, umadv_cuda_advice_t advice,
                                  int location)
{
    /* Read-mostly ignores the location, as cudaMemAdvise does. */
    int location_used = advice != UMADV_CUDA_ADVISE_SET_READ_MOSTLY &&
                        advice != UMADV_CUDA_ADVISE_UNSET_READ_MOSTLY;

    if (advice < UMADV_CUDA_ADVISE_SET_READ_MOSTLY ||
        advice > UMADV_CUDA_ADVISE_UNSET_ACCESSED_BY) {
        umadv_error("host backend: unknown advice %d", (int)advice);
        return UMADV_ERR_CUDA;
    }
    pthread_mutex_lock(&host.lock);
    if (!request_valid("advise", ptr, size, location, location_used)) {
        pthread_mutex_unlock(&host.lock);
        return UMADV_ERR_CUDA;
    }
    host.counters.advises[advice]++;
    log_call(&(umadv_cuda_host_record_t){.call = UMADV_CUDA_CALL_ADVISE, .ptr = ptr,
                                         .size = size, .location = location,
                                         .advice = advice});
    pthread_mutex_unlock(&host.lock);
    return UMADV_OK;
}

/* ---- staging: pinned memory, copies, discards ---------------------------- */

/* A buffer of @b's kind, counted in its counters. */
static umadv_status_t buffer_alloc(host_buffers_t *b, size_t size, void **ptr_p)
{
    void *ptr;

    if (size == 0 || size > SIZE_MAX / 2) {
        umadv_error("host backend: %s(%zu): invalid", b->alloc_name, size);
        return UMADV_ERR_INVALID_PARAM;
    }
    ptr = malloc(size);
    if (ptr == NULL) {
        umadv_error("host backend: %s of %zu bytes failed", b->alloc_name, size);
        return UMADV_ERR_CUDA; /* where cudaHostAlloc or cudaMalloc would fail */
    }
    pthread_mutex_lock(&host.lock);
    if (umadv__array_reserve((void **)&b->v, &b->cap, b->n + 1, sizeof(*b->v)) != UMADV_OK) {
        pthread_mutex_unlock(&host.lock);
        free(ptr);
        return UMADV_ERR_NO_MEMORY;
    }
    b->v[b->n++] = (host_range_t){(uintptr_t)ptr, size};
    (*b->allocs)++;
    *b->bytes += size;
    log_call(&(umadv_cuda_host_record_t){.call = b->alloc_call, .ptr = ptr, .size = size});
    pthread_mutex_unlock(&host.lock);
    *ptr_p = ptr;
    return UMADV_OK;
}

/* @size: what the caller says it allocated (BUFFER_ANY_SIZE: unsaid), or
 * the free is refused. */
#define BUFFER_ANY_SIZE SIZE_MAX

static umadv_status_t buffer_free(host_buffers_t *b, void *ptr, size_t said)
{
    size_t i, size;

    pthread_mutex_lock(&host.lock);
    for (i = 0; i < b->n && b->v[i].base != (uintptr_t)ptr; i++)
        ;
    if (i == b->n || (said != BUFFER_ANY_SIZE && said != b->v[i].size)) {
        pthread_mutex_unlock(&host.lock);
        umadv_error("host backend: %s(%p) of memory it did not allocate%s", b->free_name, ptr,
                    i == b->n ? "" : ", or of another size");
        return UMADV_ERR_CUDA;
    }
    size = b->v[i].size;
    b->v[i] = b->v[--b->n];
    (*b->frees)++;
    *b->bytes -= size;
    log_call(&(umadv_cuda_host_record_t){.call = b->free_call, .ptr = ptr, .size = size});
    pthread_mutex_unlock(&host.lock);
    free(ptr);
    return UMADV_OK;
}

/* Refused past the host's spare memory, as cudart refuses (cudart.c);
 * the pinnings beside work counted (pinned_beside). */
static umadv_status_t host_host_alloc(size_t size, umadv_pin_pace_t pace, void **ptr_p)
{
    umadv_status_t status;
    int refused;

    pthread_mutex_lock(&host.lock);
    refused = size > host.host_spare || host.counters.pinned_bytes > host.host_spare - size;
    pthread_mutex_unlock(&host.lock);
    if (refused)
        return UMADV_ERR_NO_MEMORY;
    status = buffer_alloc(&host.pinned, size, ptr_p);
    if (status == UMADV_OK && pace == UMADV_PIN_BESIDE) {
        pthread_mutex_lock(&host.lock);
        host.counters.pinned_beside++;
        pthread_mutex_unlock(&host.lock);
    }
    return status;
}

static umadv_status_t host_host_free(void *ptr, size_t size)
{
    return buffer_free(&host.pinned, ptr, size);
}

static umadv_status_t host_device_alloc(size_t size, void **ptr_p)
{
    return buffer_alloc(&host.device, size, ptr_p);
}

static umadv_status_t host_device_free(void *ptr)
{
    return buffer_free(&host.device, ptr, BUFFER_ANY_SIZE);
}

/* Called with the lock held: inside one of @b's buffers? */
static int range_within(const host_buffers_t *b, const void *ptr, size_t size)
{
    uintptr_t start = (uintptr_t)ptr;

    for (size_t i = 0; i < b->n; i++) {
        if (start >= b->v[i].base && start - b->v[i].base < b->v[i].size &&
            size <= b->v[i].size - (start - b->v[i].base))
            return 1;
    }
    return 0;
}

/* Called with the lock held: memory the backend made (managed, pinned or
 * device)? */
static int range_is_ours(const void *ptr, size_t size)
{
    return range_is_managed(ptr, size) || range_within(&host.pinned, ptr, size) ||
           range_within(&host.device, ptr, size);
}

/* Host work completes when issued: the bytes move now. Both ends must be
 * memory the backend made (managed, pinned or device): a staging slot outside
 * its pool is a bug the tests should see. */
static umadv_status_t host_memcpy_async(void *dst, const void *src, size_t size,
                                        umadv_stream_t stream)
{
    uint64_t unpopulated;

    pthread_mutex_lock(&host.lock);
    if (size == 0 || !range_is_ours(dst, size) || !range_is_ours(src, size)) {
        pthread_mutex_unlock(&host.lock);
        umadv_error("host backend: memcpy_async(%p <- %p, %zu) outside its memory", dst, src,
                    size);
        return UMADV_ERR_CUDA;
    }
    memmove(dst, src, size);
    unpopulated = unpopulated_bytes(dst, size);
    host.counters.unpopulated_copies += unpopulated > 0;
    host.counters.unpopulated_copy_bytes += unpopulated;
    host.counters.memcpys++;
    host.counters.memcpy_bytes += size;
    log_call(&(umadv_cuda_host_record_t){.call = UMADV_CUDA_CALL_MEMCPY, .ptr = dst,
                                         .src = src, .size = size, .stream = stream});
    stream_busy(stream);
    pthread_mutex_unlock(&host.lock);
    return UMADV_OK;
}

/* Managed or device memory only, as cudaMemsetAsync on a stream. */
static umadv_status_t host_memset_async(void *ptr, int value, size_t size, umadv_stream_t stream)
{
    pthread_mutex_lock(&host.lock);
    if (size == 0 || !(range_is_managed(ptr, size) || range_within(&host.device, ptr, size))) {
        pthread_mutex_unlock(&host.lock);
        umadv_error("host backend: memset_async(%p, %zu) outside managed or device memory", ptr,
                    size);
        return UMADV_ERR_CUDA;
    }
    memset(ptr, value, size);
    populated(ptr, size);
    host.counters.memsets++;
    host.counters.memset_bytes += size;
    log_call(&(umadv_cuda_host_record_t){.call = UMADV_CUDA_CALL_MEMSET, .ptr = ptr,
                                         .size = size, .location = value, .stream = stream});
    stream_busy(stream);
    pthread_mutex_unlock(&host.lock);
    return UMADV_OK;
}

/* Called with the lock held: the checks CUDA makes on a discard batch. */
static int discard_valid(const char *what, void **ptrs, size_t *sizes, size_t count,
                         int location, int location_used, umadv_stream_t stream)
{
    if (stream == NULL || count == 0) {
        umadv_error("host backend: %s on the legacy default stream or of no range", what);
        return 0;
    }
    for (size_t i = 0; i < count; i++) {
        if (!request_valid(what, ptrs[i], sizes[i], location, location_used))
            return 0;
    }
    return 1;
}

/* A discard loses the bytes: they read as the poison from now on. */
static void discard_ranges(umadv_cuda_call_t call, void **ptrs, size_t *sizes, size_t count,
                           int location, umadv_stream_t stream)
{
    int prefetch = call == UMADV_CUDA_CALL_DISCARD_PREFETCH;

    for (size_t i = 0; i < count; i++) {
        memset(ptrs[i], UMADV_CUDA_HOST_POISON, sizes[i]);
        if (prefetch)
            populated(ptrs[i], sizes[i]);
        else
            unpopulated_add(ptrs[i], sizes[i]);
        *(prefetch ? &host.counters.discard_prefetches : &host.counters.discards) += 1;
        *(prefetch ? &host.counters.discard_prefetch_bytes : &host.counters.discard_bytes) +=
            sizes[i];
        log_call(&(umadv_cuda_host_record_t){.call = call, .ptr = ptrs[i], .size = sizes[i],
                                             .location = location, .stream = stream,
                                             .batch = count});
    }
}

static umadv_status_t host_discard_batch(void **ptrs, size_t *sizes, size_t count,
                                         umadv_stream_t stream)
{
    pthread_mutex_lock(&host.lock);
    if (!discard_valid("discard_batch", ptrs, sizes, count, 0, 0, stream)) {
        pthread_mutex_unlock(&host.lock);
        return UMADV_ERR_CUDA;
    }
    host.counters.discards_behind_work += busy_index(stream) < host.nbusy;
    discard_ranges(UMADV_CUDA_CALL_DISCARD, ptrs, sizes, count, 0, stream);
    pthread_mutex_unlock(&host.lock);
    return UMADV_OK;
}

static umadv_status_t host_discard_and_prefetch_batch(void **ptrs, size_t *sizes, size_t count,
                                                      int location, umadv_stream_t stream)
{
    pthread_mutex_lock(&host.lock);
    if (!discard_valid("discard_and_prefetch_batch", ptrs, sizes, count, location, 1, stream)) {
        pthread_mutex_unlock(&host.lock);
        return UMADV_ERR_CUDA;
    }
    discard_ranges(UMADV_CUDA_CALL_DISCARD_PREFETCH, ptrs, sizes, count, location, stream);
    stream_busy(stream);
    pthread_mutex_unlock(&host.lock);
    return UMADV_OK;
}

static void count_handles(uint64_t *counter, int delta)
{
    pthread_mutex_lock(&host.lock);
    *counter += (uint64_t)(int64_t)delta;
    pthread_mutex_unlock(&host.lock);
}

static umadv_status_t host_stream_create(umadv_stream_t *stream_p)
{
    void *stream = malloc(1); /* a unique, non-NULL handle */

    if (stream == NULL)
        return UMADV_ERR_NO_MEMORY;
    count_handles(&host.counters.streams, 1);
    *stream_p = stream;
    return UMADV_OK;
}

static umadv_status_t host_stream_destroy(umadv_stream_t stream)
{
    if (stream == NULL)
        return UMADV_ERR_INVALID_PARAM;
    pthread_mutex_lock(&host.lock);
    stream_idle(stream); /* a later stream may get its address */
    pthread_mutex_unlock(&host.lock);
    free(stream);
    count_handles(&host.counters.streams, -1);
    return UMADV_OK;
}

static umadv_status_t host_stream_synchronize(umadv_stream_t stream)
{
    pthread_mutex_lock(&host.lock);
    stream_idle(stream); /* host work is complete when issued (BUSY STREAMS) */
    log_call(&(umadv_cuda_host_record_t){.call = UMADV_CUDA_CALL_STREAM_SYNC, .stream = stream});
    pthread_mutex_unlock(&host.lock);
    return UMADV_OK;
}

static umadv_status_t host_event_create(umadv_event_t *event_p)
{
    host_event_t *event = calloc(1, sizeof(*event));

    if (event == NULL)
        return UMADV_ERR_NO_MEMORY;
    count_handles(&host.counters.events, 1);
    *event_p = event;
    return UMADV_OK;
}

static umadv_status_t host_event_destroy(umadv_event_t event)
{
    if (event == NULL)
        return UMADV_ERR_INVALID_PARAM;
    free(event);
    count_handles(&host.counters.events, -1);
    return UMADV_OK;
}

static umadv_status_t host_event_record(umadv_event_t event, umadv_stream_t stream)
{
    host_event_t *e = event;

    pthread_mutex_lock(&host.lock);
    e->time_ns  = umadv__now_ns();
    e->recorded = 1;
    log_call(&(umadv_cuda_host_record_t){.call = UMADV_CUDA_CALL_EVENT_RECORD, .ptr = event,
                                         .stream = stream});
    pthread_mutex_unlock(&host.lock);
    return UMADV_OK;
}

static umadv_status_t host_stream_wait_event(umadv_stream_t stream, umadv_event_t event)
{
    pthread_mutex_lock(&host.lock);
    stream_busy(stream); /* it waits for another stream's work */
    log_call(&(umadv_cuda_host_record_t){.call = UMADV_CUDA_CALL_STREAM_WAIT, .ptr = event,
                                         .stream = stream});
    pthread_mutex_unlock(&host.lock);
    return UMADV_OK;
}

static umadv_status_t host_event_synchronize(umadv_event_t event)
{
    pthread_mutex_lock(&host.lock);
    log_call(&(umadv_cuda_host_record_t){.call = UMADV_CUDA_CALL_EVENT_SYNC, .ptr = event});
    pthread_mutex_unlock(&host.lock);
    return UMADV_OK;
}

static umadv_status_t host_event_elapsed_ns(umadv_event_t start, umadv_event_t end,
                                            uint64_t *ns_p)
{
    const host_event_t *s = start, *e = end;

    /* cudaEventElapsedTime refuses events that were never recorded. */
    if (!s->recorded || !e->recorded) {
        umadv_error("host backend: elapsed time of an event never recorded");
        return UMADV_ERR_CUDA;
    }
    *ns_p = e->time_ns > s->time_ns ? e->time_ns - s->time_ns : 0;
    return UMADV_OK;
}

const umadv_cuda_ops_t umadv__cuda_ops_host = {
    .name               = "host",
    .device_count       = host_device_count,
    .get_device_props   = host_get_device_props,
    .driver_version     = host_driver_version,
    .thread_begin       = host_thread_begin,
    .mem_get_info       = host_mem_get_info,
    .malloc_managed     = host_malloc_managed,
    .free               = host_free,
    .prefetch           = host_prefetch,
    .prefetch_batch     = host_prefetch_batch,
    .advise             = host_advise,
    .host_alloc         = host_host_alloc,
    .host_free          = host_host_free,
    .device_alloc       = host_device_alloc,
    .device_free        = host_device_free,
    .memcpy_async       = host_memcpy_async,
    .memset_async       = host_memset_async,
    .discard_batch      = host_discard_batch,
    .discard_and_prefetch_batch = host_discard_and_prefetch_batch,
    .stream_create      = host_stream_create,
    .stream_destroy     = host_stream_destroy,
    .stream_synchronize = host_stream_synchronize,
    .event_create       = host_event_create,
    .event_destroy      = host_event_destroy,
    .event_record       = host_event_record,
    .stream_wait_event  = host_stream_wait_event,
    .event_synchronize  = host_event_synchronize,
    .event_elapsed_ns   = host_event_elapsed_ns,
};
