/*
 * Calling the CUDA runtime: every call goes through UMADV_CUDART_FUNC, which
 * turns its cudaError_t into a umadv_status_t and logs a failure once, with
 * the call as written, the CUDA error string and its name:
 *
 *     status = UMADV_CUDART_FUNC(cudaMemGetInfo(&free, &total));
 *
 * Only code that must talk to CUDA includes this (cuda_ops, executor,
 * profiler); the pure parts of umadv never see cuda_runtime_api.h.
 */
#ifndef UMADV_CUDA_OPS_CUDART_UTIL_H
#define UMADV_CUDA_OPS_CUDART_UTIL_H

#include <cuda_runtime_api.h>

#include <umadv.h>

#include "common/log.h"

/* Log a failed call at @level; as UMADV_CUDART_FUNC otherwise. */
#define UMADV_CUDART_FUNC_LOG(_func, _level) \
    umadv__cudart_status((_func), (_level), #_func, __FILE__, __LINE__)

#define UMADV_CUDART_FUNC(_func) UMADV_CUDART_FUNC_LOG(_func, UMADV_LOG_ERROR)

/* cudaErrorNoDevice and cudaErrorInsufficientDriver (no driver at all)
 * become UMADV_ERR_NO_DEVICE, cudaErrorNotSupported UMADV_ERR_UNSUPPORTED,
 * anything else UMADV_ERR_CUDA. */
umadv_status_t umadv__cudart_status(cudaError_t err, umadv_log_level_t level,
                                    const char *call, const char *file, int line);

/* While @quiet, failures on the calling thread are logged at debug level
 * only (umadv__cuda_release_note: a release loop that fails for every
 * handle says so once). */
void umadv__cudart_quiet(int quiet);

/* Driver entry point @name in its form of CUDA @version (12040 for
 * 12.4), through the runtime, so that libumadv needs no -lcuda (only the
 * driver's stub exists at build time); NULL where the driver lacks it. */
void *umadv__cudart_driver_entry(const char *name, int version);

#endif
