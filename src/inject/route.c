/*
 * cudaMalloc and its kin, interposed (LD_PRELOAD): cudaMallocManaged is
 * always served from umadv's pool (the program asked for managed memory:
 * umadv gives it managed memory it can plan); cudaMalloc, cudaMallocAsync
 * and their frees only with UMADV_ROUTE_MALLOC. A call umadv cannot serve
 * (no context, another device than the context's) goes to CUDA as it
 * would have: routing costs time, never data.
 *
 * Calls that cannot take managed memory (cudaIpcGetMemHandle,
 * cudaMemPoolExportPointer) refuse a routed block with an error naming
 * the call.
 *
 * Frees keep CUDA's ordering: cudaFree waits for the device, as CUDA's
 * does; cudaFreeAsync waits for its stream, since the pool may hand the
 * block out again at once.
 */
#define _GNU_SOURCE /* RTLD_NEXT */
#include "inject/inject.h"
#include "inject/real.h"

#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>

#include "common/log.h"

/* ---- the blocks umadv serves: a set of pointers ---- */

#define ROUTED_BUCKETS 4096

typedef struct routed {
    void          *ptr;
    struct routed *next;
} routed_t;

static routed_t *routed_set[ROUTED_BUCKETS];
static pthread_mutex_t routed_lock = PTHREAD_MUTEX_INITIALIZER;

static size_t routed_bucket(const void *ptr)
{
    uintptr_t v = (uintptr_t)ptr >> 8; /* blocks are 256-byte aligned at least */

    return (size_t)((v ^ (v >> 12)) % ROUTED_BUCKETS);
}

static int routed_add(void *ptr)
{
    routed_t *node = malloc(sizeof(*node));

    if (node == NULL)
        return -1;
    node->ptr = ptr;
    pthread_mutex_lock(&routed_lock);
    node->next = routed_set[routed_bucket(ptr)];
    routed_set[routed_bucket(ptr)] = node;
    pthread_mutex_unlock(&routed_lock);
    return 0;
}

/* Remove @ptr; 1 if it was there. */
static int routed_take(const void *ptr)
{
    routed_t **link, *found = NULL;

    pthread_mutex_lock(&routed_lock);
    for (link = &routed_set[routed_bucket(ptr)]; *link != NULL; link = &(*link)->next) {
        if ((*link)->ptr == ptr) {
            found = *link;
            *link = found->next;
            break;
        }
    }
    pthread_mutex_unlock(&routed_lock);
    free(found);
    return found != NULL;
}

/* ---- CUDA's own functions (inject/real.h) ---- */

void *umadv__inject_real(const char *name)
{
    void *fn = dlsym(RTLD_NEXT, name);

    if (fn == NULL)
        umadv_error("%s: no CUDA runtime after the injection library (%s)", name, dlerror());
    return fn;
}

typedef cudaError_t (*malloc_fn_t)(void **, size_t);
typedef cudaError_t (*malloc_managed_fn_t)(void **, size_t, unsigned);
typedef cudaError_t (*malloc_async_fn_t)(void **, size_t, cudaStream_t);
typedef cudaError_t (*free_fn_t)(void *);
typedef cudaError_t (*free_async_fn_t)(void *, cudaStream_t);
typedef cudaError_t (*ipc_fn_t)(cudaIpcMemHandle_t *, void *);
typedef cudaError_t (*export_fn_t)(struct cudaMemPoolPtrExportData *, void *);

/* ---- routing ---- */

/* Whether @caller's code lies in libumadv: the pool's own arenas and the
 * link probe are cudaMallocManaged calls (and the probe's kernel a
 * launch) that must reach CUDA, from any thread. */
int umadv__inject_from_umadv(const void *caller)
{
    static const void *umadv_base;
    Dl_info info;

    if (umadv_base == NULL && dladdr((void *)umadv_malloc, &info) != 0)
        umadv_base = info.dli_fbase;
    return dladdr(caller, &info) != 0 && info.dli_fbase == umadv_base;
}

/* Whether a call from @caller goes to the pool (managed: cudaMallocManaged's). */
static int wanted(const void *caller, int managed)
{
    const umadv_config_t *config;

    if (umadv__inject_from_umadv(caller))
        return 0;
    config = umadv__inject_config();
    return config != NULL && (managed || config->route_malloc);
}

#define CALLER __builtin_return_address(0)

/* Serve @size from the pool; 1 with *ptr_p set (or *err_p for a failed
 * allocation), 0 when CUDA should serve it. */
static int route(size_t size, int managed, void **ptr_p, cudaError_t *err_p)
{
    umadv_context_t ctx = umadv__inject_context();
    umadv_status_t status;
    void *ptr;

    if (ctx == NULL || size == 0) {
        umadv__inject_count_route(managed, 0);
        return 0;
    }
    (void)umadv__inject_window_seen(); /* an allocation after its time ends the window */
    status = umadv_malloc(ctx, size, managed ? "cudaMallocManaged" : "cudaMalloc", &ptr);
    if (status == UMADV_OK && routed_add(ptr) != 0) {
        umadv_free(ctx, ptr);
        status = UMADV_ERR_NO_MEMORY;
    }
    if (status != UMADV_OK) {
        umadv_error("%s(%zu bytes): %s", managed ? "cudaMallocManaged" : "cudaMalloc", size,
                    umadv_status_string(status));
        *err_p = cudaErrorMemoryAllocation;
        return 1;
    }
    umadv__inject_count_route(managed, 1);
    *ptr_p = ptr;
    *err_p = cudaSuccess;
    return 1;
}

/* Give back a routed block (taken from the set) once CUDA's wait, whose
 * answer is @waited, is over. */
static cudaError_t unroute(void *ptr, cudaError_t waited)
{
    umadv_context_t ctx = umadv__inject_context();

    if (ctx != NULL)
        (void)umadv_free(ctx, ptr); /* an unknown block is logged there */
    return waited;
}

UMADV_INJECT_API cudaError_t cudaMallocManaged(void **ptr, size_t size, unsigned flags)
{
    cudaError_t err;
    REAL(cudaMallocManaged, malloc_managed_fn_t);

    /* cudaMemAttachHost memory is the host's until attached: CUDA's own */
    if (ptr != NULL && flags == cudaMemAttachGlobal && wanted(CALLER, 1) && route(size, 1, ptr, &err))
        return err;
    return real_fn(ptr, size, flags);
}

UMADV_INJECT_API cudaError_t cudaMalloc(void **ptr, size_t size)
{
    cudaError_t err;
    REAL(cudaMalloc, malloc_fn_t);

    if (ptr != NULL && wanted(CALLER, 0) && route(size, 0, ptr, &err))
        return err;
    return real_fn(ptr, size);
}

UMADV_INJECT_API cudaError_t cudaMallocAsync(void **ptr, size_t size, cudaStream_t stream)
{
    cudaError_t err;
    REAL(cudaMallocAsync, malloc_async_fn_t);

    if (ptr != NULL && wanted(CALLER, 0) && route(size, 0, ptr, &err))
        return err;
    return real_fn(ptr, size, stream);
}

UMADV_INJECT_API cudaError_t cudaFree(void *ptr)
{
    REAL(cudaFree, free_fn_t);

    /* only blocks of the set are the pool's, whoever frees them */
    if (ptr != NULL && routed_take(ptr))
        return unroute(ptr, cudaDeviceSynchronize()); /* cudaFree's own wait */
    return real_fn(ptr);
}

UMADV_INJECT_API cudaError_t cudaFreeAsync(void *ptr, cudaStream_t stream)
{
    REAL(cudaFreeAsync, free_async_fn_t);

    if (ptr != NULL && routed_take(ptr))
        return unroute(ptr, cudaStreamSynchronize(stream));
    return real_fn(ptr, stream);
}

/* Whether @call on @ptr from @caller must be refused: under
 * UMADV_ROUTE_MALLOC, @ptr is managed memory (a routed cudaMalloc's),
 * which @call cannot take: said, naming the call and what to do. */
static int refused(const char *call, const char *what, const void *ptr, const void *caller)
{
    struct cudaPointerAttributes attr;

    if (!wanted(caller, 0) || cudaPointerGetAttributes(&attr, ptr) != cudaSuccess ||
        attr.type != cudaMemoryTypeManaged)
        return 0;
    umadv_error("%s(%p): this is managed memory (UMADV_ROUTE_MALLOC routed its cudaMalloc into "
                "umadv's pool), which %s; run without --managed-malloc to share it", call, ptr,
                what);
    return 1;
}

UMADV_INJECT_API cudaError_t cudaIpcGetMemHandle(cudaIpcMemHandle_t *handle, void *ptr)
{
    REAL(cudaIpcGetMemHandle, ipc_fn_t);

    if (refused("cudaIpcGetMemHandle", "CUDA IPC cannot share", ptr, CALLER))
        return cudaErrorNotSupported;
    return real_fn(handle, ptr);
}

UMADV_INJECT_API cudaError_t cudaMemPoolExportPointer(struct cudaMemPoolPtrExportData *data,
                                                      void *ptr)
{
    REAL(cudaMemPoolExportPointer, export_fn_t);

    if (refused("cudaMemPoolExportPointer", "no memory pool holds, so it cannot be exported",
                ptr, CALLER))
        return cudaErrorNotSupported;
    return real_fn(data, ptr);
}
