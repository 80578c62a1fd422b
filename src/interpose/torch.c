/*
 * PyTorch allocator entry points over the process's context (see
 * interpose/torch.h).
 *
 * The context pointer is published with release/acquire, so an allocation
 * after the first costs one atomic load before the context's allocation
 * call (umadv__malloc_stageable); creation
 * is serialised by a mutex, so that threads racing to the first
 * allocation make one context (and one link probe, one CUPTI subscriber).
 */
#include "interpose/torch.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "api/context.h"
#include "common/log.h"

static pthread_mutex_t torch_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic(umadv_context_t) torch_ctx;
static umadv_status_t torch_failed = UMADV_OK; /* a creation that failed; torch_lock */

/* Create the context; @device < 0: the one UMADV_DEVICE names. PyTorch
 * asks for memory on the device it works on, so that device is the
 * context's unless the user named one. */
static umadv_status_t torch_create(int device, umadv_context_t *ctx_p)
{
    umadv_context_params_t params = {0};

    if (device >= 0 && getenv("UMADV_DEVICE") == NULL) {
        params.field_mask = UMADV_CONTEXT_FIELD_DEVICE;
        params.device     = device;
    }
    return umadv_context_create(&params, ctx_p);
}

/* The reason was logged where it was found; this says what it costs, once.
 * In a distributed job the log names the rank (RANK), so that the rank
 * that fails says which it is and why, and its first allocation raises in
 * Python, which ends the process rather than leaving the other ranks
 * waiting in a collective. */
static umadv_status_t torch_failure(umadv_status_t status)
{
    umadv_error("the process's umadv context cannot be made (%s): every PyTorch "
                "allocation through umadv fails", umadv_status_string(status));
    return status;
}

static umadv_status_t torch_get(int device, umadv_context_t *ctx_p)
{
    umadv_context_t ctx = atomic_load_explicit(&torch_ctx, memory_order_acquire);
    umadv_status_t status = UMADV_OK;

    if (ctx != NULL) {
        *ctx_p = ctx;
        return UMADV_OK;
    }
    pthread_mutex_lock(&torch_lock);
    ctx = atomic_load_explicit(&torch_ctx, memory_order_relaxed);
    if (ctx == NULL && torch_failed == UMADV_OK) {
        status = torch_create(device, &ctx);
        if (status == UMADV_OK)
            atomic_store_explicit(&torch_ctx, ctx, memory_order_release);
        else
            torch_failed = torch_failure(status);
    } else if (ctx == NULL) {
        status = torch_failed;
    }
    pthread_mutex_unlock(&torch_lock);
    if (status == UMADV_OK)
        *ctx_p = ctx;
    return status;
}

UMADV_API umadv_status_t umadv_torch_context(umadv_context_t *ctx_p)
{
    if (ctx_p == NULL)
        return UMADV_ERR_INVALID_PARAM;
    return torch_get(-1, ctx_p);
}

UMADV_API void *umadv_torch_malloc(size_t size, int device, void *stream)
{
    umadv_context_t ctx;
    umadv_status_t status;
    void *ptr;

    (void)stream; /* managed memory is not stream-ordered */
    /* An empty tensor: PyTorch's own allocator answers NULL too (its
     * pluggable allocator passes every request on, size 0 included). */
    if (size == 0)
        return NULL;
    status = torch_get(device, &ctx);
    if (status != UMADV_OK) {
        umadv_error("umadv_torch_malloc(%zu bytes, device %d): no umadv context (%s; the "
                    "first error says why)", size, device, umadv_status_string(status));
        return NULL;
    }
    if (device != ctx->config.device) {
        umadv_error("umadv_torch_malloc(%zu bytes, device %d): the process's umadv context "
                    "serves device %d only (UMADV_DEVICE)", size, device, ctx->config.device);
        return NULL;
    }
    /* device memory to PyTorch: the CPU never reads it, so it is staged
     * by default (UMADV_STAGE); marked in the same call, one of thousands
     * an iteration */
    status = umadv__malloc_stageable(ctx, size, "torch", &ptr);
    if (status != UMADV_OK) {
        umadv_error("umadv_torch_malloc(%zu bytes, device %d): %s", size, device,
                    umadv_status_string(status));
        return NULL;
    }
    return ptr;
}

UMADV_API void umadv_torch_free(void *ptr, size_t size, int device, void *stream)
{
    umadv_context_t ctx = atomic_load_explicit(&torch_ctx, memory_order_acquire);

    (void)stream;
    if (ptr == NULL)
        return;
    if (ctx == NULL) {
        umadv_error("umadv_torch_free(%p, %zu bytes, device %d): no umadv context made "
                    "this block", ptr, size, device);
        return;
    }
    /* Unknown blocks are logged by umadv_free(); PyTorch gets no status. */
    (void)umadv_free(ctx, ptr);
}

umadv_context_t umadv__torch_reset(umadv_context_t ctx)
{
    umadv_context_t old;

    pthread_mutex_lock(&torch_lock);
    old = atomic_exchange_explicit(&torch_ctx, ctx, memory_order_acq_rel);
    torch_failed = UMADV_OK;
    pthread_mutex_unlock(&torch_lock);
    return old;
}
