/*
 * The real CUPTI table, the test mock point, and CUPTI error reporting.
 */
#include "profiler/cupti_ops.h"

#include <cuda.h>
#include <cuda_runtime_api.h>

#include "cuda_ops/cudart_util.h"

#ifdef UMADV_TEST_HOOKS
/* Written by tests before they create contexts. */
static const umadv_cupti_ops_t *installed_ops;

void umadv__cupti_ops_install(const umadv_cupti_ops_t *ops)
{
    __atomic_store_n(&installed_ops, ops, __ATOMIC_RELEASE);
}

static const umadv_cupti_ops_t *cupti_ops_installed(void)
{
    return __atomic_load_n(&installed_ops, __ATOMIC_ACQUIRE);
}
#else
static const umadv_cupti_ops_t *cupti_ops_installed(void)
{
    return NULL;
}
#endif

const umadv_cupti_ops_t *umadv__cupti_ops_select(int host_only)
{
    const umadv_cupti_ops_t *ops = cupti_ops_installed();

    if (ops != NULL)
        return ops;
    return host_only ? NULL : &umadv__cupti_ops_real;
}

int umadv__cupti_is_taken(CUptiResult result)
{
    return result == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED ||
           result == CUPTI_ERROR_OLD_PROFILER_API_INITIALIZED;
}

static int cupti_unsupported(CUptiResult result)
{
    switch (result) {
    case CUPTI_ERROR_NOT_SUPPORTED:
    case CUPTI_ERROR_NOT_COMPATIBLE:
    case CUPTI_ERROR_UM_PROFILING_NOT_SUPPORTED:
    case CUPTI_ERROR_UM_PROFILING_NOT_SUPPORTED_ON_DEVICE:
    case CUPTI_ERROR_UM_PROFILING_NOT_SUPPORTED_ON_NON_P2P_DEVICES:
    case CUPTI_ERROR_UM_PROFILING_NOT_SUPPORTED_WITH_MPS:
    case CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_CMP_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_MIG_DEVICE_NOT_SUPPORTED:
        return 1;
    default:
        return 0;
    }
}

umadv_status_t umadv__cupti_status(const umadv_cupti_ops_t *ops, CUptiResult result,
                                   umadv_log_level_t level, const char *call,
                                   const char *file, int line)
{
    const char *str = NULL;

    if (result == CUPTI_SUCCESS)
        return UMADV_OK;
    if (level <= umadv__log_level) {
        if (ops->get_result_string(result, &str) != CUPTI_SUCCESS || str == NULL)
            str = "unknown cupti error";
        umadv__log_emit(level, file, line, "%s failed: %s (%d)", call, str, (int)result);
    }
    return cupti_unsupported(result) ? UMADV_ERR_UNSUPPORTED : UMADV_ERR_CUPTI;
}

/* ---- kernel parameter layouts ---------------------------------------- */

typedef CUresult (*func_param_info_fn)(CUfunction func, size_t index, size_t *offset,
                                       size_t *size);

/* The parameter-layout calls as CUDA 12.4 gave them. */
static void *driver_entry(const char *name)
{
    return umadv__cudart_driver_entry(name, 12040);
}

/* cuFuncGetParamInfo, then cuKernelGetParamInfo: a library's kernel
 * (CUkernel, cuLibraryGetKernel) may be launched cast to a CUfunction,
 * which the first one does not know. */
static func_param_info_fn driver_param_info(int kernel)
{
    static func_param_info_fn fn[2];
    static int looked;

    if (!__atomic_load_n(&looked, __ATOMIC_ACQUIRE)) {
        fn[0] = (func_param_info_fn)driver_entry("cuFuncGetParamInfo");
        fn[1] = (func_param_info_fn)driver_entry("cuKernelGetParamInfo");
        __atomic_store_n(&looked, 1, __ATOMIC_RELEASE);
    }
    return fn[kernel];
}

static umadv_status_t runtime_param_info(const void *func, size_t index, size_t *offset_p,
                                         size_t *size_p)
{
    cudaError_t err;

    /* The query past the last parameter fails and would become the
     * application's "last error": never overwrite one it has not read,
     * and clear ours. */
    if (cudaPeekAtLastError() != cudaSuccess)
        return UMADV_ERR_NOT_FOUND;
    err = cudaFuncGetParamInfo(func, index, offset_p, size_p);
    if (err != cudaSuccess) {
        (void)cudaGetLastError();
        return UMADV_ERR_NOT_FOUND;
    }
    return UMADV_OK;
}

/* Parameter @index of a driver launch's @func. Parameters are read in
 * order from 0, so the query that answers index 0 (the function or the
 * kernel one) is the one asked for the rest of that launch. */
static umadv_status_t driver_param_query(const void *func, size_t index, size_t *offset_p,
                                         size_t *size_p)
{
    static __thread int kernel;
    func_param_info_fn fn;

    if (index == 0) {
        for (kernel = 0; kernel < 2; kernel++) {
            fn = driver_param_info(kernel);
            if (fn != NULL &&
                fn((CUfunction)(uintptr_t)func, 0, offset_p, size_p) == CUDA_SUCCESS)
                return UMADV_OK;
        }
        return UMADV_ERR_NOT_FOUND;
    }
    fn = kernel < 2 ? driver_param_info(kernel) : NULL;
    if (fn == NULL || fn((CUfunction)(uintptr_t)func, index, offset_p, size_p) != CUDA_SUCCESS)
        return UMADV_ERR_NOT_FOUND;
    return UMADV_OK;
}

static umadv_status_t real_kernel_param_info(const void *func, int driver, size_t index,
                                             size_t *offset_p, size_t *size_p)
{
    size_t offset, size;

    if (!driver) {
        if (runtime_param_info(func, index, &offset, &size) != UMADV_OK)
            return UMADV_ERR_NOT_FOUND;
    } else if (driver_param_query(func, index, &offset, &size) != UMADV_OK) {
        return UMADV_ERR_NOT_FOUND;
    }
    *offset_p = offset;
    *size_p   = size;
    return UMADV_OK;
}

static umadv_status_t real_device_synchronize(void)
{
    return UMADV_CUDART_FUNC(cudaDeviceSynchronize());
}

static int real_stream_capturing(void *stream)
{
    enum cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;

    /* unlogged: asked on every followed launch, and its errors are the
     * application's own call's (cupti_ops.h) */
    return cudaStreamIsCapturing((cudaStream_t)stream, &status) == cudaSuccess &&
           status != cudaStreamCaptureStatusNone;
}

_Static_assert(UMADV_PROF_CAPTURE_RELAXED == (int)cudaStreamCaptureModeRelaxed,
               "the relaxed capture mode's value");

static int real_capture_mode_exchange(int mode)
{
    enum cudaStreamCaptureMode m = (enum cudaStreamCaptureMode)mode;

    return cudaThreadExchangeStreamCaptureMode(&m) == cudaSuccess ? (int)m : -1;
}

uint32_t umadv__prof_um_config(CUpti_ActivityUnifiedMemoryCounterConfig config[])
{
    static const CUpti_ActivityUnifiedMemoryCounterKind kinds[UMADV_PROF_UM_COUNTERS] = {
        CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_GPU_PAGE_FAULT,
        CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_HTOD,
        CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_DTOH,
        CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_THRASHING,
    };

    for (uint32_t i = 0; i < UMADV_PROF_UM_COUNTERS; i++)
        config[i] = (CUpti_ActivityUnifiedMemoryCounterConfig){
            .scope  = CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_SCOPE_PROCESS_SINGLE_DEVICE,
            .kind   = kinds[i],
            .enable = 1,
        };
    return UMADV_PROF_UM_COUNTERS;
}

const umadv_cupti_ops_t umadv__cupti_ops_real = {
    .name                        = "cupti",
    .subscribe                   = cuptiSubscribe,
    .unsubscribe                 = cuptiUnsubscribe,
    .enable_callback             = cuptiEnableCallback,
    .activity_register_callbacks = cuptiActivityRegisterCallbacks,
    .activity_configure_um       = cuptiActivityConfigureUnifiedMemoryCounter,
    .activity_enable             = cuptiActivityEnable,
    .activity_disable            = cuptiActivityDisable,
    .activity_flush_all          = cuptiActivityFlushAll,
    .activity_get_next_record    = cuptiActivityGetNextRecord,
    .get_result_string           = cuptiGetResultString,
    .kernel_param_info           = real_kernel_param_info,
    .device_synchronize          = real_device_synchronize,
    .stream_capturing            = real_stream_capturing,
    .capture_mode_exchange       = real_capture_mode_exchange,
    .enable_domain               = cuptiEnableDomain,
    .callback_name               = cuptiGetCallbackName,
};
