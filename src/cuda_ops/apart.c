/*
 * A CUDA context of umadv's own, one per device, for the executor's lanes
 * (cudart's thread_begin_apart).
 *
 * WHY APART. A lane's population, discard or UVM migration holds the
 * context it is made in while the driver works on it, and every other
 * call in that context waits: an application's kernel launch took
 * 122-151 us beside a lane's discard and population of 64 MiB in the
 * primary context, 3.6-3.7 us with the lane's calls in a context of their
 * own, its calls no slower there (bench/launch_cost --lane-context; H200,
 * 2026-11-30). Apart (UMADV_LANE_CONTEXT), the lanes' streams, events and
 * bounce buffers are made in it, the application's step ends are waited
 * for across contexts (an event synchronisation works on another
 * context's event), and the staging pool is registered for every context
 * (cudart_host_alloc). Managed memory is the process's, the same in both.
 *
 * WHY NOT BY DEFAULT. Every model measured ran slower apart, its waits
 * for data about twice as long: ResNet-50 at half its footprint 156 ms an
 * iteration against 130, VGG-16 70 against 54, densenet121 and a GPT-2
 * shape likewise (H200, 2026-11-30, bench/RESULTS.md). The copies lose
 * there: a copy of managed memory runs on the SMs, and from a stream of
 * the greatest priority in the application's context its blocks go
 * before a busy kernel's waves (256 MiB in 6.0 ms beside one of 15 ms);
 * from another context it waits for the kernel, as from a stream of
 * default priority (19.8 ms); the page calls take as long apart as in
 * the context they share (bench/beside_kernels). A lane whose page calls
 * go apart and whose copies stay in the application's context, at the
 * greatest priority, would keep both; not built yet.
 *
 * The context costs device memory outside any budget (its own reserve,
 * some hundreds of MiB) and lives until the process exits: the lanes of
 * the next executor begin in it again. The driver's calls come through
 * the runtime's entry points: libumadv links no -lcuda.
 */
#include "cuda_ops/cuda_ops.h"

#include <cuda.h>
#include <pthread.h>

#include "common/log.h"
#include "common/util.h"
#include "cuda_ops/cudart_util.h"

#define APART_DEVICES 64

typedef struct apart_driver {
    CUresult (*device_get)(CUdevice *dev, int ordinal);
    CUresult (*ctx_create)(CUcontext *ctx, CUctxCreateParams *params, unsigned int flags,
                           CUdevice dev);
    CUresult (*ctx_pop_current)(CUcontext *ctx);
    CUresult (*ctx_set_current)(CUcontext ctx);
} apart_driver_t;

static pthread_mutex_t apart_lock = PTHREAD_MUTEX_INITIALIZER;
static CUcontext       apart_contexts[APART_DEVICES];
static int             apart_failed[APART_DEVICES]; /* said once: the lanes share */

static void *apart_entry(const char *name)
{
    enum cudaDriverEntryPointQueryResult found;
    void *ptr = NULL;

    if (cudaGetDriverEntryPointByVersion(name, &ptr, CUDART_VERSION, cudaEnableDefault,
                                         &found) != cudaSuccess ||
        found != cudaDriverEntryPointSuccess)
        return NULL;
    return ptr;
}

static const apart_driver_t *apart_driver(void)
{
    static apart_driver_t driver;
    static int looked;

    if (!looked) { /* under apart_lock */
        driver.device_get      = apart_entry("cuDeviceGet");
        driver.ctx_create      = apart_entry("cuCtxCreate");
        driver.ctx_pop_current = apart_entry("cuCtxPopCurrent");
        driver.ctx_set_current = apart_entry("cuCtxSetCurrent");
        looked = 1;
    }
    return driver.device_get != NULL && driver.ctx_create != NULL &&
                   driver.ctx_pop_current != NULL && driver.ctx_set_current != NULL
               ? &driver
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
        umadv_warn("gpu %d: no cuda context of umadv's own for the executor's lanes (driver "
                   "error %d): they share the application's, whose calls wait behind theirs",
                   device, (int)res);
        return NULL;
    }
    umadv_debug("gpu %d: a cuda context of umadv's own for the executor's lanes", device);
    return ctx;
}

/* The device's context of umadv's own, made at the first call; NULL where
 * it cannot be (said once). */
static CUcontext apart_context(int device, const apart_driver_t **driver_p)
{
    CUcontext ctx = NULL;

    if (device < 0 || device >= APART_DEVICES)
        return NULL;
    pthread_mutex_lock(&apart_lock);
    *driver_p = apart_driver();
    if (apart_contexts[device] == NULL && !apart_failed[device]) {
        apart_contexts[device] = apart_make(*driver_p, device);
        apart_failed[device] = apart_contexts[device] == NULL;
    }
    ctx = apart_contexts[device];
    pthread_mutex_unlock(&apart_lock);
    return ctx;
}

umadv_status_t umadv__cudart_thread_begin_apart(int device)
{
    enum cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    const apart_driver_t *driver = NULL;
    CUcontext ctx;

    umadv__thread_mark_own(); /* before its first call, which the census would count */
    ctx = apart_context(device, &driver);
    if (ctx == NULL || driver->ctx_set_current(ctx) != CUDA_SUCCESS)
        return umadv__cuda_ops_cudart.thread_begin(device); /* the primary context */
    return UMADV_CUDART_FUNC(cudaThreadExchangeStreamCaptureMode(&mode));
}
