/*
 * The cudart table with every call that places or writes managed memory
 * logged at trace level (UMADV_LOG=trace): what umadv did to which bytes,
 * and in what order, is what a fault or a wrong byte in a replay is
 * traced back to (a block's pages left on the host, a range written after
 * a discard). The other calls go to cudart unlogged. One table, made once:
 * only the cudart backend is traced (the host backend keeps its own call
 * log for the tests).
 */
#include "cuda_ops/cuda_ops.h"

#include <pthread.h>

#include "common/log.h"

static umadv_cuda_ops_t traced_ops;
static pthread_once_t traced_once = PTHREAD_ONCE_INIT;

/* "gpu 0", "host", "host numa 1" */
#define LOCATION(location, buf) umadv__cuda_location_name((location), (buf), sizeof(buf))

static umadv_status_t traced_malloc_managed(size_t size, size_t align, void **ptr_p)
{
    umadv_status_t status = umadv__cuda_ops_cudart.malloc_managed(size, align, ptr_p);

    umadv_trace("cuda: malloc_managed %zu bytes: %p (%s)", size,
                status == UMADV_OK ? *ptr_p : NULL, umadv_status_string(status));
    return status;
}

static umadv_status_t traced_free(void *ptr, size_t size)
{
    umadv_trace("cuda: free [%p, +%zu)", ptr, size);
    return umadv__cuda_ops_cudart.free(ptr, size);
}

static umadv_status_t traced_prefetch(void *ptr, size_t size, int location,
                                      umadv_stream_t stream)
{
    char where[32];

    umadv_trace("cuda: prefetch [%p, +%zu) to %s on stream %p", ptr, size,
                LOCATION(location, where), (void *)stream);
    return umadv__cuda_ops_cudart.prefetch(ptr, size, location, stream);
}

/* One line per range of a batch call @what. */
static void ranges_trace(const char *what, void **ptrs, size_t *sizes, size_t count,
                         const char *where, umadv_stream_t stream)
{
    for (size_t i = 0; i < count; i++)
        umadv_trace("cuda: %s [%p, +%zu)%s%s on stream %p (%zu of %zu)", what, ptrs[i],
                    sizes[i], where[0] != '\0' ? " to " : "", where, (void *)stream, i + 1,
                    count);
}

static umadv_status_t traced_prefetch_batch(void **ptrs, size_t *sizes, size_t count,
                                            int location, umadv_stream_t stream)
{
    char where[32];

    ranges_trace("prefetch batch", ptrs, sizes, count, LOCATION(location, where), stream);
    return umadv__cuda_ops_cudart.prefetch_batch(ptrs, sizes, count, location, stream);
}

static umadv_status_t traced_advise(void *ptr, size_t size, umadv_cuda_advice_t advice,
                                    int location)
{
    char where[32];

    umadv_trace("cuda: advise [%p, +%zu) %s %s", ptr, size, umadv__cuda_advice_name(advice),
                LOCATION(location, where));
    return umadv__cuda_ops_cudart.advise(ptr, size, advice, location);
}

static umadv_status_t traced_memcpy_async(void *dst, const void *src, size_t size,
                                          umadv_stream_t stream)
{
    umadv_trace("cuda: memcpy [%p, +%zu) from %p on stream %p", dst, size, src,
                (void *)stream);
    return umadv__cuda_ops_cudart.memcpy_async(dst, src, size, stream);
}

static umadv_status_t traced_memset_async(void *ptr, int value, size_t size,
                                          umadv_stream_t stream)
{
    umadv_trace("cuda: memset [%p, +%zu) to 0x%02x on stream %p", ptr, size, value & 0xff,
                (void *)stream);
    return umadv__cuda_ops_cudart.memset_async(ptr, value, size, stream);
}

static umadv_status_t traced_discard_batch(void **ptrs, size_t *sizes, size_t count,
                                           umadv_stream_t stream)
{
    ranges_trace("discard", ptrs, sizes, count, "", stream);
    return umadv__cuda_ops_cudart.discard_batch(ptrs, sizes, count, stream);
}

static umadv_status_t traced_discard_and_prefetch_batch(void **ptrs, size_t *sizes, size_t count,
                                                        int location, umadv_stream_t stream)
{
    char where[32];

    ranges_trace("discard and prefetch", ptrs, sizes, count, LOCATION(location, where), stream);
    return umadv__cuda_ops_cudart.discard_and_prefetch_batch(ptrs, sizes, count, location,
                                                             stream);
}

static void traced_make(void)
{
    traced_ops = umadv__cuda_ops_cudart;
    traced_ops.name = "cudart (traced)";
    traced_ops.malloc_managed = traced_malloc_managed;
    traced_ops.free = traced_free;
    traced_ops.prefetch = traced_prefetch;
    if (traced_ops.prefetch_batch != NULL)
        traced_ops.prefetch_batch = traced_prefetch_batch;
    traced_ops.advise = traced_advise;
    traced_ops.memcpy_async = traced_memcpy_async;
    if (traced_ops.memset_async != NULL)
        traced_ops.memset_async = traced_memset_async;
    traced_ops.discard_batch = traced_discard_batch;
    traced_ops.discard_and_prefetch_batch = traced_discard_and_prefetch_batch;
}

const umadv_cuda_ops_t *umadv__cuda_ops_traced(const umadv_cuda_ops_t *ops)
{
    if (ops != &umadv__cuda_ops_cudart || umadv__log_level < UMADV_LOG_TRACE)
        return ops;
    pthread_once(&traced_once, traced_make);
    return &traced_ops;
}
