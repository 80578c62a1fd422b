/*
 * A CUDA context of umadv's own, one per device, for the executor's page
 * calls (cudart's apart_enter and apart_leave).
 *
 * WHY APART. A lane's population, discard or UVM migration holds the
 * context it is made in while the driver works on it, and every other
 * call in that context waits: an application's kernel launch took
 * 122-151 us beside a lane's discard and population of 64 MiB in the
 * primary context, 3.6-3.7 us with the lane's calls in a context of their
 * own, its calls no slower there (bench/launch_cost --lane-context; H200,
 * 2026-11-30).
 *
 * WHY ONLY THE PAGE CALLS. The lanes' copies of managed memory run on the
 * SMs: from a stream of the greatest priority in the application's
 * context their blocks go before a busy kernel's waves (256 MiB in 6.0 ms
 * beside a kernel of 15), from another context they wait for the kernel,
 * as a stream of default priority does (19.8 ms); the page calls take as
 * long from either (bench/beside_kernels, H200, 2026-11-30). With every
 * call of the lanes apart, every model ran slower, its waits for data
 * twice as long (ResNet-50 at half its footprint 156 ms an iteration
 * against 130, VGG-16 70 against 54; bench/RESULTS.md). So a lane keeps
 * its copies in the application's context and enters this one for its
 * page calls only, on streams made there (exec/worker.c, PAGE CALLS
 * APART); the two are ordered by synchronisations and by an event of this
 * context that a stream of the other waits for.
 *
 * The context costs device memory outside any budget (its own reserve,
 * some hundreds of MiB) and lives until the process exits: the next
 * executor's lanes enter it again. The driver's calls come through the
 * runtime's entry points: libumadv links no -lcuda.
 */
#include "cuda_ops/cuda_ops.h"

#include <cuda.h>
#include <pthread.h>

#include "common/log.h"
#include "cuda_ops/cudart_util.h"

#define APART_DEVICES 64

typedef struct apart_driver {
    CUresult (*device_get)(CUdevice *dev, int ordinal);
    CUresult (*ctx_create)(CUcontext *ctx, CUctxCreateParams *params, unsigned int flags,
                           CUdevice dev);
    CUresult (*ctx_push_current)(CUcontext ctx);
    CUresult (*ctx_pop_current)(CUcontext *ctx);
} apart_driver_t;

static pthread_mutex_t apart_lock = PTHREAD_MUTEX_INITIALIZER;
static CUcontext       apart_contexts[APART_DEVICES];
static int             apart_failed[APART_DEVICES]; /* said once: the lanes share */
static apart_driver_t  apart_calls;                 /* apart_driver's, once looked up */

/* As this build's cuda.h declares them (cuCtxCreate's CUDA 13 form). */
static void *apart_entry(const char *name)
{
    return umadv__cudart_driver_entry(name, CUDART_VERSION);
}

/* Under apart_lock: the driver's calls, or NULL where it lacks one. */
static const apart_driver_t *apart_driver(void)
{
    static int looked;

    if (!looked) {
        apart_calls.device_get       = apart_entry("cuDeviceGet");
        apart_calls.ctx_create       = apart_entry("cuCtxCreate");
        apart_calls.ctx_push_current = apart_entry("cuCtxPushCurrent");
        apart_calls.ctx_pop_current  = apart_entry("cuCtxPopCurrent");
        looked = 1;
    }
    return apart_calls.device_get != NULL && apart_calls.ctx_create != NULL &&
                   apart_calls.ctx_push_current != NULL && apart_calls.ctx_pop_current != NULL
               ? &apart_calls
               : NULL;
}

/* Made and popped again: the calling thread keeps the context it had.
 * @driver NULL: a driver without the calls. */
static CUcontext apart_make(const apart_driver_t *driver, int device)
{
    CUcontext ctx = NULL;
    CUdevice dev;
    CUresult res = driver != NULL ? driver->device_get(&dev, device) : CUDA_ERROR_NOT_FOUND;

    if (res == CUDA_SUCCESS)
        res = driver->ctx_create(&ctx, NULL, 0, dev);
    if (res == CUDA_SUCCESS && driver->ctx_pop_current(NULL) != CUDA_SUCCESS)
        res = CUDA_ERROR_INVALID_CONTEXT; /* still current: left as it is */
    if (res != CUDA_SUCCESS) {
        umadv_warn("gpu %d: no cuda context of umadv's own for the executor's page calls "
                   "(driver error %d): they share the application's, whose calls wait behind "
                   "theirs", device, (int)res);
        return NULL;
    }
    umadv_debug("gpu %d: a cuda context of umadv's own for the executor's page calls", device);
    return ctx;
}

/* The device's context of umadv's own, made at the first call; NULL where
 * it cannot be (said once). */
static CUcontext apart_context(int device)
{
    CUcontext ctx = NULL;

    if (device < 0 || device >= APART_DEVICES)
        return NULL;
    pthread_mutex_lock(&apart_lock);
    if (apart_contexts[device] == NULL && !apart_failed[device]) {
        apart_contexts[device] = apart_make(apart_driver(), device);
        apart_failed[device] = apart_contexts[device] == NULL;
    }
    ctx = apart_contexts[device];
    pthread_mutex_unlock(&apart_lock);
    return ctx;
}

umadv_status_t umadv__cudart_apart_enter(int device)
{
    CUcontext ctx = apart_context(device);
    CUresult res;

    if (ctx == NULL)
        return UMADV_ERR_UNSUPPORTED;
    res = apart_calls.ctx_push_current(ctx); /* looked up before the context was made */
    if (res == CUDA_SUCCESS)
        return UMADV_OK;
    umadv_error("cuCtxPushCurrent of umadv's own context failed (driver error %d)", (int)res);
    return UMADV_ERR_CUDA;
}

umadv_status_t umadv__cudart_apart_leave(void)
{
    CUresult res;

    if (apart_calls.ctx_pop_current == NULL)
        return UMADV_ERR_STATE; /* never entered */
    res = apart_calls.ctx_pop_current(NULL);

    if (res == CUDA_SUCCESS)
        return UMADV_OK;
    umadv_error("cuCtxPopCurrent of umadv's own context failed (driver error %d)", (int)res);
    return UMADV_ERR_CUDA;
}
