/*
 * CUPTI mocked for the tests (umadv_cupti_ops_t, profiler/cupti_ops.h):
 * a subscriber whose callbacks the test calls as CUPTI would, counts of
 * the launch and copy callbacks enabled, activity kinds on or off, and a
 * queue of kernel and unified-memory records delivered on a flush.
 * FUNC_RT's launches have two pointer parameters, FUNC_DRV's one; any
 * other function has no layout. Include once per test program.
 */
#ifndef UMADV_TESTS_CUPTI_MOCK_H
#define UMADV_TESTS_CUPTI_MOCK_H

#include <string.h>

#include "profiler/cupti_ops.h"
#include "profiler/profiler_int.h"

typedef union mock_record {
    CUpti_Activity                       any;
    CUpti_ActivityKernel10               kernel;
    CUpti_ActivityUnifiedMemoryCounter3  um;
} mock_record_t;

static struct {
    CUptiResult         subscribe_result, configure_result;
    int                 subscribed, subscribe_calls;
    int                 callbacks;      /* launch callbacks enabled now */
    int                 copy_callbacks; /* copy and memset callbacks enabled now */
    int                 domains;        /* callback domains enabled whole now */
    CUptiResult         domain_result[2]; /* enable_domain's answer: runtime, driver */
    int                 um_on, kernels_on;
    int                 um_switches;    /* the counters turned on or off */
    int                 flushes;        /* activity_flush_all calls */
    size_t              param_queries;
    CUpti_CallbackFunc  callback;
    void               *userdata;
    mock_record_t       queue[64];
    size_t              nqueue;
    void               *capturing;     /* the stream that captures, if any */
    int                 capture_mode;  /* this (the test's) thread's */
    int                 mode_in_call;  /* capture_mode when a launch or copy was last told */
} mock;

static CUptiResult mock_subscribe(CUpti_SubscriberHandle *s, CUpti_CallbackFunc cb, void *ud)
{
    mock.subscribe_calls++;
    if (mock.subscribe_result != CUPTI_SUCCESS)
        return mock.subscribe_result;
    if (mock.subscribed)
        return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
    mock.subscribed = 1;
    mock.callback   = cb;
    mock.userdata   = ud;
    *s = (CUpti_SubscriberHandle)&mock;
    return CUPTI_SUCCESS;
}

static CUptiResult mock_unsubscribe(CUpti_SubscriberHandle s)
{
    mock.subscribed = 0;
    return CUPTI_SUCCESS;
}

static CUptiResult mock_enable_callback(uint32_t e, CUpti_SubscriberHandle s,
                                        CUpti_CallbackDomain d, CUpti_CallbackId id)
{
    umadv_prof_range_t r[2];

    if (umadv__prof_copy_ranges(d, id, NULL, r) < 0)
        mock.callbacks += e ? 1 : -1;
    else
        mock.copy_callbacks += e ? 1 : -1;
    return CUPTI_SUCCESS;
}

static CUptiResult mock_register(CUpti_BuffersCallbackRequestFunc r,
                                 CUpti_BuffersCallbackCompleteFunc c)
{
    return CUPTI_SUCCESS;
}

static CUptiResult mock_configure(CUpti_ActivityUnifiedMemoryCounterConfig *c, uint32_t n)
{
    return mock.configure_result;
}

static int *kind_state(CUpti_ActivityKind kind)
{
    static int other;

    if (kind == CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER)
        return &mock.um_on;
    if (kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)
        return &mock.kernels_on;
    return &other;
}

static void kind_set(CUpti_ActivityKind kind, int on)
{
    int *state = kind_state(kind);

    if (kind == CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER && *state != on)
        mock.um_switches++;
    *state = on;
}

static CUptiResult mock_enable(CUpti_ActivityKind kind)
{
    kind_set(kind, 1);
    return CUPTI_SUCCESS;
}

static CUptiResult mock_disable(CUpti_ActivityKind kind)
{
    kind_set(kind, 0);
    return CUPTI_SUCCESS;
}

/* Deliver the queued records in one buffer, as CUPTI does on a flush. */
static CUptiResult mock_flush(uint32_t flag)
{
    uint8_t *buffer;
    size_t size, max;

    mock.flushes++;
    if (mock.nqueue == 0)
        return CUPTI_SUCCESS;
    umadv__prof_buffer_requested(&buffer, &size, &max);
    memcpy(buffer, mock.queue, mock.nqueue * sizeof(mock_record_t));
    size = mock.nqueue * sizeof(mock_record_t);
    mock.nqueue = 0;
    umadv__prof_buffer_completed(NULL, 0, buffer, size, size);
    return CUPTI_SUCCESS;
}

static CUptiResult mock_next(uint8_t *buffer, size_t valid, CUpti_Activity **record)
{
    mock_record_t *next = *record == NULL ? (mock_record_t *)buffer
                                          : (mock_record_t *)*record + 1;

    if ((uint8_t *)(next + 1) > buffer + valid)
        return CUPTI_ERROR_MAX_LIMIT_REACHED;
    *record = &next->any;
    return CUPTI_SUCCESS;
}

static CUptiResult mock_result_string(CUptiResult r, const char **s)
{
    *s = "mock failure";
    return CUPTI_SUCCESS;
}

#define FUNC_RT  ((const void *)0x1234) /* two pointer parameters */
#define FUNC_DRV ((const void *)0x5678) /* one */

static umadv_status_t mock_param_info(const void *func, int driver, size_t index,
                                      size_t *offset_p, size_t *size_p)
{
    size_t nparams = func == FUNC_RT ? 2 : func == FUNC_DRV ? 1 : 0;

    mock.param_queries++;
    if (index >= nparams)
        return UMADV_ERR_NOT_FOUND;
    *offset_p = index * 8;
    *size_p   = 8;
    return UMADV_OK;
}

static umadv_status_t mock_sync(void)
{
    return UMADV_OK;
}

static int mock_stream_capturing(void *stream)
{
    return mock.capturing != NULL && stream == mock.capturing;
}

static int mock_capture_mode_exchange(int mode)
{
    int had = mock.capture_mode;

    mock.capture_mode = mode;
    return had;
}

static CUptiResult mock_enable_domain(uint32_t e, CUpti_SubscriberHandle s,
                                      CUpti_CallbackDomain d)
{
    CUptiResult r = mock.domain_result[d == CUPTI_CB_DOMAIN_DRIVER_API];

    if (r == CUPTI_SUCCESS)
        mock.domains += e ? 1 : -1;
    return r;
}

/* CUPTI's names for the calls the tests make; others have none. */
static CUptiResult mock_callback_name(CUpti_CallbackDomain d, uint32_t cbid, const char **name)
{
    *name = NULL;
    if (d == CUPTI_CB_DOMAIN_RUNTIME_API && cbid == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000)
        *name = "cudaLaunchKernel_v7000";
    else if (d == CUPTI_CB_DOMAIN_RUNTIME_API &&
             cbid == CUPTI_RUNTIME_TRACE_CBID_cudaStreamIsCapturing_v10000)
        *name = "cudaStreamIsCapturing_v10000";
    else if (d == CUPTI_CB_DOMAIN_DRIVER_API && cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel)
        *name = "cuLaunchKernel";
    return *name != NULL ? CUPTI_SUCCESS : CUPTI_ERROR_INVALID_PARAMETER;
}

static const umadv_cupti_ops_t mock_ops = {
    "mock", mock_subscribe, mock_unsubscribe, mock_enable_callback, mock_register,
    mock_configure, mock_enable, mock_disable, mock_flush, mock_next, mock_result_string,
    mock_param_info, mock_sync, mock_stream_capturing, mock_capture_mode_exchange,
    mock_enable_domain, mock_callback_name,
};

static inline void mock_reset(void)
{
    memset(&mock, 0, sizeof(mock));
}

static inline void queue_kernel(uint32_t corr, uint64_t start, uint64_t end)
{
    mock_record_t *r = &mock.queue[mock.nqueue++];

    memset(r, 0, sizeof(*r));
    r->kernel.kind          = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    r->kernel.correlationId = corr;
    r->kernel.start         = start;
    r->kernel.end           = end;
}

/* A unified-memory counter record of @counter_kind queued for the next
 * buffer CUPTI hands out. */
static inline void queue_um(uint32_t counter_kind, const void *addr, uint64_t start,
                            uint64_t dur, uint64_t value, uint32_t flags)
{
    mock_record_t *r = &mock.queue[mock.nqueue++];

    memset(r, 0, sizeof(*r));
    r->um.kind        = CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER;
    r->um.counterKind = counter_kind;
    r->um.address     = (uintptr_t)addr;
    r->um.start       = start;
    r->um.end         = start + dur;
    r->um.value       = value;
    r->um.flags       = flags;
}

static inline void queue_fault(const void *addr, uint64_t start, uint64_t groups)
{
    queue_um(CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_GPU_PAGE_FAULT, addr, start, 10, groups,
             CUPTI_ACTIVITY_UNIFIED_MEMORY_ACCESS_TYPE_WRITE);
}

static inline void queue_migration(const void *addr, uint64_t start, uint64_t bytes, uint32_t cause)
{
    queue_um(CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_HTOD, addr, start, 100,
             bytes, cause);
}

/* A call as CUPTI reports it to the subscriber: entry or exit. */
static inline void mock_call(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, CUpti_ApiCallbackSite site,
                 const void *params, const char *symbol, uint32_t corr)
{
    CUpti_CallbackData cb;

    memset(&cb, 0, sizeof(cb));
    cb.callbackSite   = site;
    cb.functionParams = params;
    cb.symbolName     = symbol;
    cb.correlationId  = corr;
    mock.callback(mock.userdata, domain, cbid, &cb);
}

#endif
