/*
 * Every CUPTI call the profiler makes, and the few CUDA calls it makes from
 * inside CUPTI callbacks, behind one table of function pointers. The real
 * table calls libcupti (linked, not dlopen'ed); tests install a table of
 * their own to simulate CUPTI being taken, unsupported or failing, and to
 * feed synthetic activity buffers, on machines without a GPU.
 *
 * CUPTI results become umadv_status_t through UMADV_CUPTI_FUNC, which logs
 * a failure with the call as written and CUPTI's error string.
 */
#ifndef UMADV_PROFILER_CUPTI_OPS_H
#define UMADV_PROFILER_CUPTI_OPS_H

#include <stddef.h>
#include <stdint.h>

#include <cupti.h>

#include <umadv.h>

#include "common/log.h"

/* cudaStreamCaptureModeRelaxed, for capture_mode_exchange. */
#define UMADV_PROF_CAPTURE_RELAXED 2

typedef struct umadv_cupti_ops {
    const char *name;
    CUptiResult (*subscribe)(CUpti_SubscriberHandle *subscriber, CUpti_CallbackFunc callback,
                             void *userdata);
    CUptiResult (*unsubscribe)(CUpti_SubscriberHandle subscriber);
    CUptiResult (*enable_callback)(uint32_t enable, CUpti_SubscriberHandle subscriber,
                                   CUpti_CallbackDomain domain, CUpti_CallbackId cbid);
    CUptiResult (*activity_register_callbacks)(CUpti_BuffersCallbackRequestFunc requested,
                                               CUpti_BuffersCallbackCompleteFunc completed);
    CUptiResult (*activity_configure_um)(CUpti_ActivityUnifiedMemoryCounterConfig *config,
                                         uint32_t count);
    CUptiResult (*activity_enable)(CUpti_ActivityKind kind);
    CUptiResult (*activity_disable)(CUpti_ActivityKind kind);
    CUptiResult (*activity_flush_all)(uint32_t flag);
    CUptiResult (*activity_get_next_record)(uint8_t *buffer, size_t valid,
                                            CUpti_Activity **record);
    CUptiResult (*get_result_string)(CUptiResult result, const char **str);
    /* Offset and size of parameter @index of a kernel: @func is a runtime
     * function (host stub or cudaKernel_t) unless @driver, then a
     * CUfunction. UMADV_ERR_NOT_FOUND past the last parameter, or when the
     * layout cannot be known; nothing is logged (called per parameter). */
    umadv_status_t (*kernel_param_info)(const void *func, int driver, size_t index,
                                        size_t *offset_p, size_t *size_p);
    /* Wait for all work on the current device (activity records of
     * running kernels arrive only after they end). */
    umadv_status_t (*device_synchronize)(void);
    /* STREAM CAPTURE (profiler.c). Whether work enqueued on @stream now
     * is captured into a graph, not run (cudaStreamIsCapturing; an error,
     * the legacy stream's under another's capture among them, reads 0:
     * the call it asks about fails as it would without umadv). */
    int (*stream_capturing)(void *stream);
    /* The calling thread's capture mode set to @mode (a
     * cudaStreamCaptureMode): the mode it had, or -1 where it was not
     * changed (cudaThreadExchangeStreamCaptureMode). */
    int (*capture_mode_exchange)(int mode);
    /* THE CALL CENSUS (census.c). Every callback of @domain on or off
     * (cuptiEnableDomain), and callback @cbid's name (cuptiGetCallbackName,
     * "cudaLaunchKernel_v7000"). Either may be NULL: no census, and calls
     * named by number. */
    CUptiResult (*enable_domain)(uint32_t enable, CUpti_SubscriberHandle subscriber,
                                 CUpti_CallbackDomain domain);
    CUptiResult (*callback_name)(CUpti_CallbackDomain domain, uint32_t cbid, const char **name);
} umadv_cupti_ops_t;

/* libcupti and the CUDA runtime. */
extern const umadv_cupti_ops_t umadv__cupti_ops_real;

/* The table a profiler uses: an installed one (tests) if any; otherwise
 * the real one, or NULL for host-only contexts, which have no GPU. */
const umadv_cupti_ops_t *umadv__cupti_ops_select(int host_only);

/* Test mock point: make @ops what umadv__cupti_ops_select() returns; NULL
 * restores the real table. Defined only in the test build
 * (UMADV_TEST_HOOKS, libumadv_core_test). */
void umadv__cupti_ops_install(const umadv_cupti_ops_t *ops);

/* The unified-memory counters a profiled pass records, each on for the
 * process and its device: GPU page faults, bytes to the GPU and to the
 * host, thrashing. Filled into @config; returns how many (at most
 * UMADV_PROF_UM_COUNTERS). bench/evict_scatter turns the same ones on. */
#define UMADV_PROF_UM_COUNTERS 4
uint32_t umadv__prof_um_config(CUpti_ActivityUnifiedMemoryCounterConfig config[]);

/* CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED and kin: another tool
 * (Nsight, another profiler) holds CUPTI. */
int umadv__cupti_is_taken(CUptiResult result);

/* Call table entry @_fn of @_ops with the parenthesised @_args and turn
 * the result into a status, a failure logged at @_level:
 *     status = UMADV_CUPTI_CALL(ops, UMADV_LOG_WARN, activity_enable, (kind)); */
#define UMADV_CUPTI_CALL(_ops, _level, _fn, _args) \
    umadv__cupti_status((_ops), (_ops)->_fn _args, (_level), #_fn #_args, __FILE__, __LINE__)

/* @result of the call named @call: UMADV_OK, or UMADV_ERR_CUPTI (or
 * UMADV_ERR_UNSUPPORTED for "not supported here") logged at @level with
 * CUPTI's string for it. */
umadv_status_t umadv__cupti_status(const umadv_cupti_ops_t *ops, CUptiResult result,
                                   umadv_log_level_t level, const char *call,
                                   const char *file, int line);

#endif
