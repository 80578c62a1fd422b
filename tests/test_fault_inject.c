/*
 * Fault injection through the CUDA and CUPTI call tables (jemalloc's JET
 * model: the mock points exist in the test build only). A wrapping CUDA
 * table forwards to the host backend and fails the n-th call of one entry;
 * a CUPTI mock feeds launches and activity records the way CUPTI does and
 * fails the n-th call of one of its entries. A realistic run (context,
 * blocks written by the application, a profiled iteration with launches,
 * a plan, replays under a budget for every policy, an activation made and
 * freed every iteration, a block held every iteration, a saved trace,
 * frees, destroy) is made once to count the calls, then once per entry
 * and call index (sampled beyond MAX_CASES_PER_ENTRY) with that call
 * failing, and once with every call of the entry failing from the first
 * (a device lost), each in a child process under alarm(). Two scenarios: steps marked through the API, and
 * steps that are kernel launches only (PyTorch's way). Every case checks:
 *   - the run ends (no crash, no hang) and every failed API call returned
 *     a status that names a CUDA/CUPTI failure (or the run went on);
 *   - the failure is logged with the CUDA/CUPTI call and its error string,
 *     and the log stays short (no message per step or per sample);
 *   - every managed allocation, stream and event made through the table
 *     is released, CUPTI is unsubscribed with no activity or callback left
 *     enabled; the heap is checked too when built with -fsanitize=address;
 *   - the bytes the application wrote read back the same.
 * A failed release call (cudaFree, cudaStreamDestroy, cudaEventDestroy)
 * is modelled as CUDA reports an error of earlier asynchronous work: the
 * handle is released and the error returned.
 *
 * Debugging: INJECT_SHOW=NAME:N runs one case and prints its log
 * (INJECT_STICKY=1: from call N on; INJECT_LAUNCHES=1: launches only).
 */
#include <umadv.h>

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#include "common/log.h"
#include "common/util.h"
#include "cuda_ops/cuda_ops.h"
#include "cuda_ops/cudart_util.h"
#include "profiler/cupti_ops.h"
#include "profiler/profiler_int.h"
#include "tap.h"
#include "testutil.h"

#define SEC        (64 * 1024)
#define NBLOCKS    5
#define CASE_ALARM 20 /* seconds a case may take */

/* ---- the entries that can fail ----------------------------------------- */

typedef enum entry {
    E_DEVICE_COUNT, E_DEVICE_PROPS, E_DRIVER_VERSION, E_THREAD_BEGIN, E_MEM_GET_INFO,
    E_MALLOC, E_FREE, E_PREFETCH, E_PREFETCH_BATCH, E_ADVISE,
    E_STREAM_CREATE, E_STREAM_DESTROY, E_STREAM_SYNC,
    E_EVENT_CREATE, E_EVENT_DESTROY, E_EVENT_RECORD, E_STREAM_WAIT_EVENT, E_EVENT_SYNC,
    E_EVENT_ELAPSED, E_HOST_ALLOC, E_HOST_FREE, E_MEMCPY, E_DISCARD, E_DISCARD_PREFETCH,
    /* CUPTI */
    E_SUBSCRIBE, E_UNSUBSCRIBE, E_ENABLE_CALLBACK, E_REGISTER_BUFFERS, E_CONFIGURE_UM,
    E_ACTIVITY_ENABLE, E_ACTIVITY_DISABLE, E_FLUSH, E_NEXT_RECORD, E_RESULT_STRING,
    E_PARAM_INFO, E_DEVICE_SYNC, E_BUFFER_COMPLETE,
    E_COUNT
} entry_t;

#define E_FIRST_CUPTI E_SUBSCRIBE

static const struct entry_desc {
    const char *name;  /* the CUDA/CUPTI call as the log names it */
    int         error; /* cudaError_t or CUptiResult it fails with */
} entries[E_COUNT] = {
    [E_DEVICE_COUNT]      = {"cudaGetDeviceCount", cudaErrorNoDevice},
    [E_DEVICE_PROPS]      = {"cudaGetDeviceProperties", cudaErrorInvalidDevice},
    [E_DRIVER_VERSION]    = {"cudaDriverGetVersion", cudaErrorInvalidValue},
    [E_THREAD_BEGIN]        = {"cudaSetDevice", cudaErrorInvalidDevice},
    [E_MEM_GET_INFO]      = {"cudaMemGetInfo", cudaErrorInvalidValue},
    [E_MALLOC]            = {"cudaMallocManaged", cudaErrorMemoryAllocation},
    [E_FREE]              = {"cudaFree", cudaErrorLaunchFailure},
    [E_PREFETCH]          = {"cudaMemPrefetchAsync", cudaErrorInvalidValue},
    [E_PREFETCH_BATCH]    = {"cudaMemPrefetchBatchAsync", cudaErrorInvalidValue},
    [E_ADVISE]            = {"cudaMemAdvise", cudaErrorInvalidValue},
    [E_STREAM_CREATE]     = {"cudaStreamCreateWithPriority", cudaErrorMemoryAllocation},
    [E_STREAM_DESTROY]    = {"cudaStreamDestroy", cudaErrorLaunchFailure},
    [E_STREAM_SYNC]       = {"cudaStreamSynchronize", cudaErrorLaunchFailure},
    [E_EVENT_CREATE]      = {"cudaEventCreateWithFlags", cudaErrorMemoryAllocation},
    [E_EVENT_DESTROY]     = {"cudaEventDestroy", cudaErrorLaunchFailure},
    [E_EVENT_RECORD]      = {"cudaEventRecord", cudaErrorInvalidResourceHandle},
    [E_STREAM_WAIT_EVENT] = {"cudaStreamWaitEvent", cudaErrorInvalidResourceHandle},
    [E_EVENT_SYNC]        = {"cudaEventSynchronize", cudaErrorLaunchFailure},
    [E_EVENT_ELAPSED]     = {"cudaEventElapsedTime", cudaErrorInvalidResourceHandle},
    [E_HOST_ALLOC]        = {"cudaHostRegister", cudaErrorMemoryAllocation},
    [E_HOST_FREE]         = {"cudaHostUnregister", cudaErrorLaunchFailure},
    [E_MEMCPY]            = {"cudaMemcpyAsync", cudaErrorLaunchFailure},
    [E_DISCARD]           = {"cudaMemDiscardBatchAsync", cudaErrorInvalidValue},
    [E_DISCARD_PREFETCH]  = {"cudaMemDiscardAndPrefetchBatchAsync", cudaErrorInvalidValue},
    [E_SUBSCRIBE]         = {"cuptiSubscribe", CUPTI_ERROR_NOT_INITIALIZED},
    [E_UNSUBSCRIBE]       = {"unsubscribe", CUPTI_ERROR_INVALID_PARAMETER},
    [E_ENABLE_CALLBACK]   = {"enable_callback", CUPTI_ERROR_INVALID_PARAMETER},
    [E_REGISTER_BUFFERS]  = {"activity_register_callbacks", CUPTI_ERROR_NOT_INITIALIZED},
    [E_CONFIGURE_UM]      = {"activity_configure_um", CUPTI_ERROR_UNKNOWN},
    [E_ACTIVITY_ENABLE]   = {"activity_enable", CUPTI_ERROR_UNKNOWN},
    [E_ACTIVITY_DISABLE]  = {"activity_disable", CUPTI_ERROR_UNKNOWN},
    [E_FLUSH]             = {"activity_flush_all", CUPTI_ERROR_UNKNOWN},
    [E_NEXT_RECORD]       = {"activity_get_next_record", CUPTI_ERROR_INVALID_KIND},
    [E_RESULT_STRING]     = {"get_result_string", CUPTI_ERROR_INVALID_PARAMETER},
    [E_PARAM_INFO]        = {"kernel_param_info", 0},
    [E_DEVICE_SYNC]       = {"cudaDeviceSynchronize", cudaErrorLaunchFailure},
    [E_BUFFER_COMPLETE]   = {"buffer_completed", 0},
};

/* The CUPTI mock's error string: what the log must carry. */
#define MOCK_CUPTI_STRING "injected cupti failure"

static struct {
    int      target;              /* entry to fail, or -1 */
    uint64_t nth;                 /* its call to fail, from 1 */
    int      sticky;              /* fail every call from the nth on (a lost device) */
    int      fired;               /* the failing call was made */
    uint64_t calls[E_COUNT];
    int64_t  live_managed, live_streams, live_events, live_pinned;
    pthread_mutex_t lock;
} inj = {.target = -1, .lock = PTHREAD_MUTEX_INITIALIZER};

/* Count a call of @e; whether it is the one to fail. */
static int inject_now(entry_t e)
{
    int fail;

    pthread_mutex_lock(&inj.lock);
    ++inj.calls[e];
    fail = (int)e == inj.target &&
           (inj.calls[e] == inj.nth || (inj.sticky && inj.calls[e] > inj.nth));
    /* CUPTI's strings are asked for only on a failure: the first flush
     * fails too when they are the target. */
    fail |= e == E_FLUSH && inj.target == E_RESULT_STRING && inj.calls[e] == 1;
    if (fail)
        inj.fired = 1;
    pthread_mutex_unlock(&inj.lock);
    return fail;
}

static void live_add(int64_t *counter, int64_t delta)
{
    pthread_mutex_lock(&inj.lock);
    *counter += delta;
    pthread_mutex_unlock(&inj.lock);
}

/* What cudart does with a failed call: log it with its name and CUDA's
 * string, and map it to a status. */
static umadv_status_t cuda_fail(entry_t e)
{
    return umadv__cudart_status((cudaError_t)entries[e].error, UMADV_LOG_ERROR,
                                entries[e].name, __FILE__, __LINE__);
}

/* What the wrapper forwards to: the host backend, or (tests/
 * test_fault_inject_gpu.c) the CUDA runtime on a real device. */
static const umadv_cuda_ops_t *inner = &umadv__cuda_ops_host;
#define HOST (*inner)
#define INJECT(_e) \
    do { \
        if (inject_now(_e)) \
            return cuda_fail(_e); \
    } while (0)

/* ---- the work a failed synchronisation leaves running ------------------ */

/*
 * cudaStreamSynchronize that returns an error has not waited: the
 * stream's copies and discards may still end later, over what the CPU
 * or another stream wrote since. The host backend does its work when it
 * is issued, so the wrapper does a stream's copies and discards since its
 * last synchronisation again, when one later succeeds on that stream, or
 * (the stream destroyed meanwhile) on any: the latest they could end. A
 * restore that did not wait for them then loses its bytes, as on a GPU.
 * (On a GPU, the work is really late: nothing to model.)
 */
typedef enum late_kind { LATE_COPY, LATE_DISCARD, LATE_DISCARD_PREFETCH } late_kind_t;

typedef struct late_op {
    umadv_stream_t stream;
    late_kind_t    kind;
    void          *dst;
    const void    *src;
    size_t         size;
    int            location;
} late_op_t;

#define LATE_ORPHAN ((umadv_stream_t)(uintptr_t)-1) /* a late stream since destroyed */
#define LATE_STREAMS 16

static struct {
    late_op_t      *ops;   /* since each stream's last synchronisation */
    size_t          n, cap;
    umadv_stream_t  late[LATE_STREAMS]; /* streams whose synchronisation failed */
    size_t          nlate;
    pthread_mutex_t lock;
} late = {.lock = PTHREAD_MUTEX_INITIALIZER};

static int late_modelled(void)
{
    return inner == &umadv__cuda_ops_host;
}

static int late_is(umadv_stream_t s)
{
    for (size_t i = 0; i < late.nlate; i++) {
        if (late.late[i] == s)
            return 1;
    }
    return 0;
}

static void late_unmark(umadv_stream_t s)
{
    for (size_t i = 0; i < late.nlate; i++) {
        if (late.late[i] == s) {
            late.late[i] = late.late[--late.nlate];
            return;
        }
    }
}

/* Keep only the work of late streams (a full list). */
static void late_compact(void)
{
    size_t k = 0;

    for (size_t i = 0; i < late.n; i++) {
        if (late.ops[i].stream == LATE_ORPHAN || late_is(late.ops[i].stream))
            late.ops[k++] = late.ops[i];
    }
    late.n = k;
}

static void late_record(umadv_stream_t s, late_kind_t kind, void *dst, const void *src,
                        size_t size, int location)
{
    if (!late_modelled())
        return;
    pthread_mutex_lock(&late.lock);
    if (late.n == late.cap)
        late_compact();
    if (late.n == late.cap) {
        size_t cap = late.cap ? 2 * late.cap : 256;
        late_op_t *ops = realloc(late.ops, cap * sizeof(*ops));

        if (ops == NULL)
            abort();
        late.ops = ops;
        late.cap = cap;
    }
    late.ops[late.n++] = (late_op_t){s, kind, dst, src, size, location};
    pthread_mutex_unlock(&late.lock);
}

static void late_redo(const late_op_t *op)
{
    void *ptr = op->dst;
    size_t size = op->size;

    if (op->kind == LATE_COPY)
        (void)HOST.memcpy_async(op->dst, op->src, op->size, op->stream);
    else if (op->kind == LATE_DISCARD)
        (void)HOST.discard_batch(&ptr, &size, 1, op->stream);
    else
        (void)HOST.discard_and_prefetch_batch(&ptr, &size, 1, op->location, op->stream);
}

typedef enum late_fate { LATE_KEEP, LATE_DROP, LATE_REDO, LATE_ORPHANED } late_fate_t;

/* What becomes of @op when stream @s ends its work (@ended: a
 * synchronisation succeeded) or is destroyed; @was_late: a
 * synchronisation of @s had failed. */
static late_fate_t late_fate(const late_op_t *op, umadv_stream_t s, int ended, int was_late)
{
    if (op->stream == LATE_ORPHAN) /* ends at any synchronisation that succeeds */
        return ended ? LATE_REDO : LATE_KEEP;
    if (op->stream != s)
        return LATE_KEEP;
    if (!was_late)
        return LATE_DROP; /* done when issued, waited for */
    return ended ? LATE_REDO : LATE_ORPHANED;
}

/* Stream @s ended its work (@ended) or was destroyed: its late work ends
 * now, or, the stream destroyed, becomes an orphan's. */
static void late_settle(umadv_stream_t s, int ended)
{
    size_t k = 0;
    int was_late;

    if (!late_modelled())
        return;
    pthread_mutex_lock(&late.lock);
    was_late = late_is(s);
    for (size_t i = 0; i < late.n; i++) {
        late_op_t *op = &late.ops[i];

        switch (late_fate(op, s, ended, was_late)) {
        case LATE_REDO:
            late_redo(op);
            break;
        case LATE_ORPHANED:
            op->stream = LATE_ORPHAN;
            late.ops[k++] = *op;
            break;
        case LATE_KEEP:
            late.ops[k++] = *op;
            break;
        default:
            break;
        }
    }
    late.n = k;
    late_unmark(s);
    pthread_mutex_unlock(&late.lock);
}

static void late_mark(umadv_stream_t s)
{
    if (!late_modelled())
        return;
    pthread_mutex_lock(&late.lock);
    if (!late_is(s) && late.nlate < LATE_STREAMS)
        late.late[late.nlate++] = s;
    pthread_mutex_unlock(&late.lock);
}

/* ---- the wrapping CUDA table ------------------------------------------- */

static umadv_status_t w_device_count(int *c)
{
    INJECT(E_DEVICE_COUNT);
    return HOST.device_count(c);
}

static umadv_status_t w_device_props(int d, umadv_device_props_t *p)
{
    INJECT(E_DEVICE_PROPS);
    return HOST.get_device_props(d, p);
}

static umadv_status_t w_driver_version(int *v)
{
    INJECT(E_DRIVER_VERSION);
    return HOST.driver_version(v);
}

static umadv_status_t w_thread_begin(int d)
{
    INJECT(E_THREAD_BEGIN);
    return HOST.thread_begin(d);
}

static umadv_status_t w_mem_get_info(uint64_t *f, uint64_t *t)
{
    INJECT(E_MEM_GET_INFO);
    return HOST.mem_get_info(f, t);
}

static umadv_status_t w_malloc(size_t size, size_t align, void **p)
{
    umadv_status_t status;

    INJECT(E_MALLOC);
    status = HOST.malloc_managed(size, align, p);
    if (status == UMADV_OK)
        live_add(&inj.live_managed, 1);
    return status;
}

static umadv_status_t w_free(void *ptr, size_t size)
{
    int fail = inject_now(E_FREE);
    umadv_status_t status = HOST.free(ptr, size);

    if (status == UMADV_OK)
        live_add(&inj.live_managed, -1);
    return fail ? cuda_fail(E_FREE) : status;
}

static umadv_status_t w_prefetch(void *p, size_t s, int loc, umadv_stream_t st)
{
    INJECT(E_PREFETCH);
    return HOST.prefetch(p, s, loc, st);
}

static umadv_status_t w_prefetch_batch(void **p, size_t *s, size_t n, int loc,
                                       umadv_stream_t st)
{
    INJECT(E_PREFETCH_BATCH);
    return HOST.prefetch_batch(p, s, n, loc, st);
}

static umadv_status_t w_advise(void *p, size_t s, umadv_cuda_advice_t a, int loc)
{
    INJECT(E_ADVISE);
    return HOST.advise(p, s, a, loc);
}

static umadv_status_t w_stream_create(umadv_stream_t *s)
{
    umadv_status_t status;

    INJECT(E_STREAM_CREATE);
    status = HOST.stream_create(s);
    if (status == UMADV_OK)
        live_add(&inj.live_streams, 1);
    return status;
}

static umadv_status_t w_stream_destroy(umadv_stream_t s)
{
    int fail = inject_now(E_STREAM_DESTROY);
    umadv_status_t status = HOST.stream_destroy(s);

    late_settle(s, 0);
    if (status == UMADV_OK)
        live_add(&inj.live_streams, -1);
    return fail ? cuda_fail(E_STREAM_DESTROY) : status;
}

static umadv_status_t w_stream_sync(umadv_stream_t s)
{
    umadv_status_t status;

    if (inject_now(E_STREAM_SYNC)) {
        late_mark(s);
        return cuda_fail(E_STREAM_SYNC);
    }
    status = HOST.stream_synchronize(s);
    if (status == UMADV_OK)
        late_settle(s, 1);
    return status;
}

static umadv_status_t w_event_create(umadv_event_t *e)
{
    umadv_status_t status;

    INJECT(E_EVENT_CREATE);
    status = HOST.event_create(e);
    if (status == UMADV_OK)
        live_add(&inj.live_events, 1);
    return status;
}

static umadv_status_t w_event_destroy(umadv_event_t e)
{
    int fail = inject_now(E_EVENT_DESTROY);
    umadv_status_t status = HOST.event_destroy(e);

    if (status == UMADV_OK)
        live_add(&inj.live_events, -1);
    return fail ? cuda_fail(E_EVENT_DESTROY) : status;
}

static umadv_status_t w_event_record(umadv_event_t e, umadv_stream_t s)
{
    INJECT(E_EVENT_RECORD);
    return HOST.event_record(e, s);
}

static umadv_status_t w_stream_wait_event(umadv_stream_t s, umadv_event_t e)
{
    INJECT(E_STREAM_WAIT_EVENT);
    return HOST.stream_wait_event(s, e);
}

static umadv_status_t w_event_sync(umadv_event_t e)
{
    INJECT(E_EVENT_SYNC);
    return HOST.event_synchronize(e);
}

/* Every step's work takes the same GPU time, as the same kernels do:
 * the host backend's clock would make the plan (and the calls it makes)
 * differ from run to run. */
#define STEP_GPU_NS 1000000

static umadv_status_t w_event_elapsed(umadv_event_t a, umadv_event_t b, uint64_t *ns)
{
    umadv_status_t status;

    INJECT(E_EVENT_ELAPSED);
    status = HOST.event_elapsed_ns(a, b, ns);
    if (status == UMADV_OK)
        *ns = STEP_GPU_NS;
    return status;
}

static umadv_status_t w_host_alloc(size_t size, umadv_pin_pace_t pace, void **p)
{
    umadv_status_t status;

    INJECT(E_HOST_ALLOC);
    status = HOST.host_alloc(size, pace, p);
    if (status == UMADV_OK)
        live_add(&inj.live_pinned, 1);
    return status;
}

static umadv_status_t w_host_free(void *p, size_t size)
{
    int fail = inject_now(E_HOST_FREE);
    umadv_status_t status = HOST.host_free(p, size);

    if (status == UMADV_OK)
        live_add(&inj.live_pinned, -1);
    return fail ? cuda_fail(E_HOST_FREE) : status;
}

static umadv_status_t w_memcpy(void *d, const void *s, size_t n, umadv_stream_t st)
{
    umadv_status_t status;

    INJECT(E_MEMCPY);
    status = HOST.memcpy_async(d, s, n, st);
    if (status == UMADV_OK)
        late_record(st, LATE_COPY, d, s, n, 0);
    return status;
}

static umadv_status_t w_discard(void **p, size_t *s, size_t n, umadv_stream_t st)
{
    umadv_status_t status;

    INJECT(E_DISCARD);
    status = HOST.discard_batch(p, s, n, st);
    for (size_t i = 0; i < n && status == UMADV_OK; i++)
        late_record(st, LATE_DISCARD, p[i], NULL, s[i], 0);
    return status;
}

static umadv_status_t w_discard_prefetch(void **p, size_t *s, size_t n, int loc,
                                         umadv_stream_t st)
{
    umadv_status_t status;

    INJECT(E_DISCARD_PREFETCH);
    status = HOST.discard_and_prefetch_batch(p, s, n, loc, st);
    for (size_t i = 0; i < n && status == UMADV_OK; i++)
        late_record(st, LATE_DISCARD_PREFETCH, p[i], NULL, s[i], loc);
    return status;
}

static const umadv_cuda_ops_t inject_cuda_ops = {
    .name               = "inject",
    .device_count       = w_device_count,
    .get_device_props   = w_device_props,
    .driver_version     = w_driver_version,
    .thread_begin       = w_thread_begin,
    .mem_get_info       = w_mem_get_info,
    .malloc_managed     = w_malloc,
    .free               = w_free,
    .prefetch           = w_prefetch,
    .prefetch_batch     = w_prefetch_batch,
    .advise             = w_advise,
    .host_alloc         = w_host_alloc,
    .host_free          = w_host_free,
    .memcpy_async       = w_memcpy,
    .discard_batch      = w_discard,
    .discard_and_prefetch_batch = w_discard_prefetch,
    .stream_create      = w_stream_create,
    .stream_destroy     = w_stream_destroy,
    .stream_synchronize = w_stream_sync,
    .event_create       = w_event_create,
    .event_destroy      = w_event_destroy,
    .event_record       = w_event_record,
    .stream_wait_event  = w_stream_wait_event,
    .event_synchronize  = w_event_sync,
    .event_elapsed_ns   = w_event_elapsed,
};

/* ---- the CUPTI mock ------------------------------------------------------ */

typedef union mock_record {
    CUpti_Activity                      any;
    CUpti_ActivityKernel10              kernel;
    CUpti_ActivityUnifiedMemoryCounter3 um;
} mock_record_t;

static struct {
    int                subscribed;
    int                callbacks;       /* enabled now */
    int                callbacks_idle;  /* still enabled while nothing recorded (a launch
                                         * then costs a callback for nothing) */
    int                off_failed;      /* turning one off failed */
    int                kinds_on;        /* activity kinds enabled now */
    int                um_on, kernels_on;
    int                um_off_failed, kernels_off_failed; /* the last try failed */
    unsigned           disables, um_last_off, kernels_last_off; /* disable calls, numbered */
    int                um_close_tried;  /* the counters were turned off at the close */
    CUpti_CallbackFunc callback;
    void              *userdata;
    mock_record_t      queue[256];
    size_t             nqueue;
} cupti;

#define CUPTI_INJECT(_e) \
    do { \
        if (inject_now(_e)) \
            return (CUptiResult)entries[_e].error; \
    } while (0)

static CUptiResult m_subscribe(CUpti_SubscriberHandle *s, CUpti_CallbackFunc cb, void *ud)
{
    CUPTI_INJECT(E_SUBSCRIBE);
    if (cupti.subscribed)
        return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
    cupti.subscribed = 1;
    cupti.callback   = cb;
    cupti.userdata   = ud;
    *s = (CUpti_SubscriberHandle)&cupti;
    return CUPTI_SUCCESS;
}

/* As CUPTI: unsubscribing drops the subscriber's callbacks, even when it
 * then reports an error. */
/* The close turns the counters off (if on), then kernel records, then
 * flushes and unsubscribes. */
static CUptiResult m_unsubscribe(CUpti_SubscriberHandle s)
{
    cupti.um_close_tried = cupti.um_last_off + 1 == cupti.kernels_last_off;
    if (cupti.callbacks != 0)
        cupti.callbacks_idle = 1;
    cupti.subscribed = 0;
    cupti.callbacks  = 0;
    CUPTI_INJECT(E_UNSUBSCRIBE);
    return CUPTI_SUCCESS;
}

static CUptiResult m_enable_callback(uint32_t on, CUpti_SubscriberHandle s,
                                     CUpti_CallbackDomain d, CUpti_CallbackId id)
{
    static unsigned char state[2][4096]; /* runtime, driver: on or off */
    unsigned char *cb;

    if (inject_now(E_ENABLE_CALLBACK)) {
        cupti.off_failed |= !on; /* that callback stays on: nothing more to do */
        return (CUptiResult)entries[E_ENABLE_CALLBACK].error;
    }
    if (id >= 4096)
        return CUPTI_ERROR_INVALID_PARAMETER;
    if (!cupti.subscribed || cupti.callbacks == 0) /* unsubscribing cleared them */
        memset(state, 0, sizeof(state));
    cb = &state[d == CUPTI_CB_DOMAIN_DRIVER_API][id];
    cupti.callbacks += (on != 0) - *cb;
    *cb = on != 0;
    return CUPTI_SUCCESS;
}

static CUptiResult m_register(CUpti_BuffersCallbackRequestFunc r,
                              CUpti_BuffersCallbackCompleteFunc c)
{
    CUPTI_INJECT(E_REGISTER_BUFFERS);
    return CUPTI_SUCCESS;
}

static CUptiResult m_configure(CUpti_ActivityUnifiedMemoryCounterConfig *c, uint32_t n)
{
    CUPTI_INJECT(E_CONFIGURE_UM);
    return CUPTI_SUCCESS;
}

static int *kind_state(CUpti_ActivityKind kind)
{
    static int other;

    if (kind == CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER)
        return &cupti.um_on;
    if (kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)
        return &cupti.kernels_on;
    return &other;
}

static CUptiResult m_enable(CUpti_ActivityKind kind)
{
    CUPTI_INJECT(E_ACTIVITY_ENABLE);
    *kind_state(kind) = 1;
    return CUPTI_SUCCESS;
}

/* Whether the last try to turn @kind off failed: then nothing more could
 * be done (the context may be gone). */
static int *kind_off_failed(CUpti_ActivityKind kind)
{
    static int other;

    if (kind == CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER)
        return &cupti.um_off_failed;
    if (kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)
        return &cupti.kernels_off_failed;
    return &other;
}

static CUptiResult m_disable(CUpti_ActivityKind kind)
{
    if (kind == CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER)
        cupti.um_last_off = ++cupti.disables;
    else if (kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)
        cupti.kernels_last_off = ++cupti.disables;
    *kind_off_failed(kind) = 1;
    CUPTI_INJECT(E_ACTIVITY_DISABLE);
    *kind_off_failed(kind) = 0;
    *kind_state(kind) = 0;
    return CUPTI_SUCCESS;
}

/* Deliver the queued records in one buffer, as CUPTI does on a flush. A
 * failed completion is a buffer CUPTI hands back with nothing valid in
 * it (records it dropped). */
static CUptiResult m_flush(uint32_t flag)
{
    uint8_t *buffer;
    size_t size, max, valid;

    CUPTI_INJECT(E_FLUSH);
    if (cupti.nqueue == 0)
        return CUPTI_SUCCESS;
    umadv__prof_buffer_requested(&buffer, &size, &max);
    if (buffer == NULL) {
        cupti.nqueue = 0; /* CUPTI drops the records */
        return CUPTI_SUCCESS;
    }
    valid = cupti.nqueue * sizeof(mock_record_t);
    if (valid > size)
        valid = size / sizeof(mock_record_t) * sizeof(mock_record_t);
    memcpy(buffer, cupti.queue, valid);
    cupti.nqueue = 0;
    if (inject_now(E_BUFFER_COMPLETE))
        valid = 0;
    umadv__prof_buffer_completed(NULL, 0, buffer, size, valid);
    return CUPTI_SUCCESS;
}

static CUptiResult m_next(uint8_t *buffer, size_t valid, CUpti_Activity **record)
{
    mock_record_t *next = *record == NULL ? (mock_record_t *)buffer
                                          : (mock_record_t *)*record + 1;

    if ((uint8_t *)(next + 1) > buffer + valid)
        return CUPTI_ERROR_MAX_LIMIT_REACHED;
    CUPTI_INJECT(E_NEXT_RECORD);
    *record = &next->any;
    return CUPTI_SUCCESS;
}

static CUptiResult m_result_string(CUptiResult r, const char **s)
{
    CUPTI_INJECT(E_RESULT_STRING);
    *s = MOCK_CUPTI_STRING;
    return CUPTI_SUCCESS;
}

#define KERNEL_FUNC ((const void *)0x1234) /* two pointer parameters */

/* The layout is not an error CUPTI reports: a failure is "not known". */
static umadv_status_t m_param_info(const void *func, int driver, size_t index,
                                   size_t *offset_p, size_t *size_p)
{
    if (inject_now(E_PARAM_INFO) || func != KERNEL_FUNC || index >= 2)
        return UMADV_ERR_NOT_FOUND;
    *offset_p = index * sizeof(void *);
    *size_p   = sizeof(void *);
    return UMADV_OK;
}

static umadv_status_t m_device_sync(void)
{
    INJECT(E_DEVICE_SYNC);
    return UMADV_OK;
}

static int m_stream_capturing(void *stream)
{
    (void)stream;
    return 0;
}

static int m_capture_mode_exchange(int mode)
{
    (void)mode;
    return -1;
}

static const umadv_cupti_ops_t inject_cupti_ops = {
    "inject", m_subscribe, m_unsubscribe, m_enable_callback, m_register, m_configure,
    m_enable, m_disable, m_flush, m_next, m_result_string, m_param_info, m_device_sync,
    m_stream_capturing, m_capture_mode_exchange,
    NULL, NULL, /* no census (cupti_ops.h) */
};

static mock_record_t *queue_slot(void)
{
    mock_record_t *r;

    if (cupti.nqueue == UMADV_ARRAY_SIZE(cupti.queue))
        return NULL;
    r = &cupti.queue[cupti.nqueue++];
    memset(r, 0, sizeof(*r));
    return r;
}

static void queue_kernel(uint32_t corr, uint64_t start)
{
    mock_record_t *r = queue_slot();

    if (r == NULL)
        return;
    r->kernel.kind          = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    r->kernel.correlationId = corr;
    r->kernel.start         = start;
    r->kernel.end           = start + 1000;
}

/* A fault on @addr and the migration it caused, as the driver reports. */
static void queue_fault(const void *addr, uint64_t start)
{
    mock_record_t *f = queue_slot(), *m;

    if (f == NULL)
        return;
    f->um.kind        = CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER;
    f->um.counterKind = CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_GPU_PAGE_FAULT;
    f->um.address     = (uintptr_t)addr;
    f->um.start       = start;
    f->um.end         = start + 10;
    f->um.value       = 2;
    f->um.flags       = CUPTI_ACTIVITY_UNIFIED_MEMORY_ACCESS_TYPE_WRITE;
    m = queue_slot();
    if (m == NULL)
        return;
    *m = *f;
    m->um.counterKind = CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_HTOD;
    m->um.value       = SEC;
    m->um.flags       = CUPTI_ACTIVITY_UNIFIED_MEMORY_MIGRATION_CAUSE_COHERENCE;
}

/* A runtime launch of KERNEL_FUNC(a, b), its kernel record and a fault,
 * while CUPTI's callbacks are on (else the launch goes unseen, as on a
 * GPU). */
static void launch(void *a, void *b, uint32_t corr)
{
    void *args[2] = {&a, &b};
    cudaLaunchKernel_v7000_params p = {.func = KERNEL_FUNC, .args = args};
    CUpti_CallbackData cb;

    memset(&cb, 0, sizeof(cb));
    cb.functionParams = &p;
    cb.symbolName     = "kernel";
    cb.correlationId  = corr;
    if (cupti.subscribed && cupti.callbacks > 0) {
        cb.callbackSite = CUPTI_API_ENTER;
        cupti.callback(cupti.userdata, CUPTI_CB_DOMAIN_RUNTIME_API,
                       CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, &cb);
        cb.callbackSite = CUPTI_API_EXIT;
        cupti.callback(cupti.userdata, CUPTI_CB_DOMAIN_RUNTIME_API,
                       CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, &cb);
    }
    if (cupti.kernels_on)
        queue_kernel(corr, (uint64_t)corr * 10000);
    if (cupti.um_on)
        queue_fault(b, (uint64_t)corr * 10000 + 100);
}

/* ---- the application ----------------------------------------------------- */

/* What one run saw; the child sends it to the parent. */
typedef struct outcome {
    uint64_t calls[E_COUNT];
    int      fired;
    int      data_ok;          /* every byte written read back */
    int      act_wrong;        /* an activation lost its bytes within an iteration */
    int      bad_status;       /* an API call returned an unclear status */
    char     bad_call[64];     /* the first such call, and its status */
    int      bad_code;
    int      api_failures;     /* API calls that returned an error */
    char     first_failure[64];/* the first of them, and its status */
    int      first_code;
    int64_t  live_managed, live_streams, live_events, live_pinned;
    int      cupti_left;       /* subscribed, callbacks or activity kinds left on */
    int      logged;           /* the failed call and its error string are in the log */
    int      log_lines;        /* lines the run logged */
    int      call_lines;       /* of them, lines naming the failed call */
} outcome_t;

static const size_t block_sizes[NBLOCKS] = {
    4 * SEC + 100, 11 * SEC, 5 * SEC + 123, 2 * SEC, 700 * 1024,
};

/* An activation: made at each iteration's start, written by its first
 * step, read back by its last, freed at its end. */
#define ACT_SIZE (3 * SEC)

typedef struct app {
    umadv_context_t ctx;
    void           *blocks[NBLOCKS];
    unsigned char  *shadow[NBLOCKS]; /* what each block must hold */
    outcome_t      *out;
    uint32_t        corr;
    void           *act;             /* this iteration's activation, or NULL */
    unsigned char   act_shadow[ACT_SIZE];
} app_t;

/* The statuses a failing CUDA/CUPTI call may surface as. */
static int status_clear(umadv_status_t s)
{
    return s == UMADV_OK || s == UMADV_ERR_CUDA || s == UMADV_ERR_CUPTI ||
           s == UMADV_ERR_NO_DEVICE || s == UMADV_ERR_UNSUPPORTED;
}

/* Note an API call's status: failures are allowed, unclear ones are not. */
static umadv_status_t noted(app_t *app, const char *call, umadv_status_t s)
{
    if (s != UMADV_OK && app->out->api_failures++ == 0) {
        snprintf(app->out->first_failure, sizeof(app->out->first_failure), "%s", call);
        app->out->first_code = s;
    }
    if (!status_clear(s) && !app->out->bad_status) {
        app->out->bad_status = 1;
        app->out->bad_code   = s;
        snprintf(app->out->bad_call, sizeof(app->out->bad_call), "%s", call);
    }
    return s;
}

#define API(_app, _call) noted((_app), #_call, (_call))

/* The application's own work in a step: change every byte of block @b,
 * in umadv memory and in its shadow. */
static void app_write(app_t *app, int b, unsigned seed)
{
    unsigned char *p = app->blocks[b];

    for (size_t i = 0; i < block_sizes[b]; i += 97) {
        p[i] = (unsigned char)(p[i] * 31 + seed + i);
        app->shadow[b][i] = p[i];
    }
}

static int data_intact(const app_t *app)
{
    for (int b = 0; b < NBLOCKS; b++) {
        if (app->blocks[b] != NULL &&
            memcmp(app->blocks[b], app->shadow[b], block_sizes[b]) != 0)
            return 0;
    }
    return 1;
}

/* Three passes over the blocks, as forward, backward and update: every
 * fourth step reads block 0 (weights: never written, read-mostly advice),
 * every step reads one other block and writes the next. Under a lost
 * device (sticky) each step also computes for a while, so that what fails
 * on a timer (the monitor) fails many times. */
#define PASSES 3
#define NSTEPS (PASSES * (NBLOCKS - 1))

static void act_use(app_t *app, int s, unsigned seed);

/* The second scenario: an application that marks no steps (PyTorch's
 * way): its kernel launches are the steps, seen through CUPTI. */
static int launches_only;

static void step_launched(app_t *app, int s, unsigned seed)
{
    int r = 1 + s % (NBLOCKS - 1), w = 1 + (s + 1) % (NBLOCKS - 1);

    launch(app->blocks[r], app->blocks[w], ++app->corr);
    app_write(app, w, seed + (unsigned)s);
    if (inj.sticky)
        usleep(1000);
}

static void step(app_t *app, int s, unsigned seed)
{
    int r = 1 + s % (NBLOCKS - 1), w = 1 + (s + 1) % (NBLOCKS - 1);
    char name[16];

    if (launches_only) {
        step_launched(app, s, seed);
        return;
    }
    snprintf(name, sizeof(name), "layer%d", s);
    API(app, umadv_step_begin(app->ctx, name, NULL));
    if (s % 4 == 0)
        API(app, umadv_step_access(app->ctx, app->blocks[0], block_sizes[0],
                                   UMADV_ACCESS_READ));
    API(app, umadv_step_access(app->ctx, app->blocks[r], block_sizes[r], UMADV_ACCESS_READ));
    API(app, umadv_step_access(app->ctx, app->blocks[w], block_sizes[w], UMADV_ACCESS_RW));
    act_use(app, s, seed);
    launch(app->blocks[r], app->blocks[w], ++app->corr);
    app_write(app, w, seed + (unsigned)s);
    if (inj.sticky)
        usleep(1000);
    API(app, umadv_step_end(app->ctx, 0));
}

/* The activation's bytes, written in the first step: still there in the
 * last? */
static void act_use(app_t *app, int s, unsigned seed)
{
    unsigned char *p = app->act;

    if (p == NULL || (s != 0 && s != NSTEPS - 1))
        return;
    API(app, umadv_step_access(app->ctx, p, ACT_SIZE, s == 0 ? UMADV_ACCESS_WRITE
                                                             : UMADV_ACCESS_READ));
    if (s == 0) {
        for (size_t i = 0; i < ACT_SIZE; i++)
            p[i] = app->act_shadow[i] = (unsigned char)(i * 13 + seed);
    } else if (memcmp(p, app->act_shadow, ACT_SIZE) != 0) {
        app->out->act_wrong = 1;
    }
}

static void iteration(app_t *app, unsigned seed)
{
    API(app, umadv_iteration_begin(app->ctx));
    if (app->act != NULL)
        API(app, umadv_free(app->ctx, app->act));
    app->act = NULL;
    if (API(app, umadv_malloc(app->ctx, ACT_SIZE, "act", &app->act)) != UMADV_OK)
        app->act = NULL; /* an application would stop; this one goes on without */
    /* block 0, never stageable, held as DDP's guard holds a bucket while
     * a reader umadv cannot see (NCCL) may read it: its evictions wait */
    if (app->blocks[0] != NULL)
        API(app, umadv_hold_resident(app->ctx, app->blocks[0], NULL));
    for (int s = 0; s < NSTEPS; s++)
        step(app, s, seed);
}

static umadv_status_t app_alloc(app_t *app)
{
    for (int b = 0; b < NBLOCKS; b++) {
        char tag[16];
        umadv_status_t s;

        snprintf(tag, sizeof(tag), "block%d", b);
        s = API(app, umadv_malloc(app->ctx, block_sizes[b], tag, &app->blocks[b]));
        if (s == UMADV_ERR_CUDA) /* as PyTorch does: free its cache, try again */
            s = API(app, umadv_malloc(app->ctx, block_sizes[b], tag, &app->blocks[b]));
        if (s != UMADV_OK)
            return s;
        app->shadow[b] = malloc(block_sizes[b]);
        for (size_t i = 0; i < block_sizes[b]; i++)
            ((unsigned char *)app->blocks[b])[i] = app->shadow[b][i] =
                (unsigned char)(i * 7 + (size_t)b);
        /* Staged evictions: the blocks the CPU writes inside the steps
         * that declare them only (marked steps; a launch's write comes
         * after its step ends) */
        if (!launches_only && b > 0)
            API(app, umadv_set_stageable(app->ctx, app->blocks[b], 1));
    }
    return UMADV_OK;
}

/* The CPU reads every block: staging off first (restores them). */
static void app_unstage(app_t *app)
{
    for (int b = 1; b < NBLOCKS && !launches_only; b++) {
        if (app->blocks[b] != NULL)
            API(app, umadv_set_stageable(app->ctx, app->blocks[b], 0));
    }
}

static void app_free(app_t *app)
{
    for (int b = 0; b < NBLOCKS; b++) {
        if (app->blocks[b] != NULL)
            API(app, umadv_free(app->ctx, app->blocks[b]));
        free(app->shadow[b]);
    }
}

/* Profile, plan, then two iterations under each policy. */
static void app_train(app_t *app, const char *trace_path)
{
    static const umadv_policy_t policies[] = {
        UMADV_POLICY_ORACLE, UMADV_POLICY_DEMAND, UMADV_POLICY_PREFETCH_ALL, UMADV_POLICY_PLAN,
    };
    unsigned seed = 1;

    API(app, umadv_profile_next_iteration(app->ctx));
    iteration(app, seed++);
    iteration(app, seed++); /* ends the recording; the timing pass */
    API(app, umadv_plan(app->ctx));
    for (size_t p = 0; p < UMADV_ARRAY_SIZE(policies); p++) {
        API(app, umadv_set_policy(app->ctx, policies[p]));
        iteration(app, seed++);
        iteration(app, seed++);
    }
    /* Saving completes a recording in progress. (An iteration begun here
     * with no steps would leave nothing to save when a re-profile, which
     * replay validation starts on faults that late CUPTI records make,
     * began with it: a re-profile drops the last profile as it starts.) */
    API(app, umadv_trace_save(app->ctx, trace_path));
}

static umadv_status_t app_context(app_t *app)
{
    umadv_context_params_t params = {
        .field_mask   = UMADV_CONTEXT_FIELD_SECTION_SIZE | UMADV_CONTEXT_FIELD_BUDGET,
        .section_size = SEC,
        .budget       = 28 * SEC, /* less than the blocks' 33 sections */
    };

    return API(app, umadv_context_create(&params, &app->ctx));
}

static void app_run(outcome_t *out, const char *trace_path)
{
    app_t app = {.out = out};

    out->data_ok = 1;
    if (app_context(&app) != UMADV_OK)
        return;
    if (app_alloc(&app) == UMADV_OK)
        app_train(&app, trace_path);
    app_unstage(&app);
    out->data_ok = data_intact(&app) && !out->act_wrong;
    if (app.act != NULL)
        API(&app, umadv_free(app.ctx, app.act));
    app_free(&app);
    umadv_context_destroy(app.ctx);
}

/* ---- one case, in a child ------------------------------------------------ */

static char *file_read(const char *path)
{
    FILE *f = fopen(path, "r");
    char *buf;
    long n;

    if (f == NULL)
        return NULL;
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    rewind(f);
    buf = malloc((size_t)n + 1);
    n = (long)fread(buf, 1, (size_t)n, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

/* The log names the failed call and its error string. */
/* Lines of the log, or of them those that hold @what (not NULL). */
static int log_lines(const char *log_path, const char *what)
{
    char *log = file_read(log_path), *line, *save = NULL;
    int n = 0;

    for (line = log != NULL ? strtok_r(log, "\n", &save) : NULL; line != NULL;
         line = strtok_r(NULL, "\n", &save))
        n += what == NULL || strstr(line, what) != NULL;
    free(log);
    return n;
}

static int log_names_failure(const char *log_path)
{
    char *log = file_read(log_path);
    const char *want, *name;
    int found;

    if (log == NULL)
        return 0;
    if (inj.target >= E_FIRST_CUPTI && inj.target != E_DEVICE_SYNC)
        want = inj.target == E_RESULT_STRING ? "unknown cupti error" : MOCK_CUPTI_STRING;
    else
        want = cudaGetErrorString((cudaError_t)entries[inj.target].error);
    name = inj.target == E_RESULT_STRING ? entries[E_FLUSH].name : entries[inj.target].name;
    found = strstr(log, name) != NULL && strstr(log, want) != NULL;
    /* What the failure stops names the call that failed, not another. */
    if (inj.target != E_STREAM_CREATE && strstr(log, "stream_create failed") != NULL)
        found = 0;
    free(log);
    return found;
}

/* Calls whose failure is silent by design: the layout query is "not
 * known" (the launch is then treated as unscanned), the result string
 * is only for messages, a buffer with no valid records is what CUPTI
 * hands back after dropping records, and a failed release is released. */
static int failure_needs_log(entry_t e)
{
    return e != E_PARAM_INFO && e != E_BUFFER_COMPLETE;
}

static void case_child(int fd, const char *dir)
{
    char log_path[512], trace_path[512];
    outcome_t out;

    memset(&out, 0, sizeof(out));
    snprintf(log_path, sizeof(log_path), "%s/log", dir);
    snprintf(trace_path, sizeof(trace_path), "%s/trace.umt", dir);
    setenv("UMADV_LOG_FILE", log_path, 1);
    alarm(CASE_ALARM);
    app_run(&out, trace_path);
    memcpy(out.calls, inj.calls, sizeof(out.calls));
    out.fired        = inj.fired;
    out.live_managed = inj.live_managed;
    out.live_streams = inj.live_streams;
    out.live_events  = inj.live_events;
    out.live_pinned  = inj.live_pinned;
    out.cupti_left   = cupti.subscribed || cupti.callbacks != 0 ||
                       (cupti.um_on && !(cupti.um_off_failed && cupti.um_close_tried)) ||
                       (cupti.kernels_on && !cupti.kernels_off_failed) ||
                       (cupti.callbacks_idle && !cupti.off_failed);
    out.logged = inj.fired && failure_needs_log((entry_t)inj.target)
                     ? log_names_failure(log_path) : 1;
    out.log_lines  = log_lines(log_path, NULL);
    out.call_lines = inj.target >= 0 ? log_lines(log_path, entries[inj.target].name) : 0;
    umadv__log_set_file(NULL);
    if (getenv("INJECT_SHOW") != NULL) { /* debugging: the case's log */
        char *log = file_read(log_path);
        fprintf(stderr, "%s", log != NULL ? log : "");
        free(log);
    }
    unlink(log_path);
    unlink(trace_path);
    if (write(fd, &out, sizeof(out)) != (ssize_t)sizeof(out))
        _exit(3);
    close(fd);
    exit(0); /* not _exit: LeakSanitizer checks the heap at exit */
}

/* A case: which call fails, in which scenario. */
typedef struct case_spec {
    int      target;   /* entry_t, or -1 for none */
    uint64_t nth;
    int      sticky;
    int      launches; /* the launches-only scenario */
} case_spec_t;

/* A case running in a child process. */
typedef struct case_proc {
    case_spec_t spec;
    pid_t       pid;
    int         fd;
    char        dir[32];
} case_proc_t;

static int case_start(const case_spec_t *spec, case_proc_t *proc, char *why, size_t len)
{
    int fds[2];

    proc->spec = *spec;
    snprintf(proc->dir, sizeof(proc->dir), "/tmp/umadv-inject-XXXXXX");
    if (mkdtemp(proc->dir) == NULL || pipe(fds) != 0) {
        snprintf(why, len, "cannot set up the case: %s", strerror(errno));
        return -1;
    }
    fflush(stdout);
    proc->pid = fork();
    if (proc->pid == 0) {
        close(fds[0]);
        inj.target    = spec->target;
        inj.nth       = spec->nth;
        inj.sticky    = spec->sticky;
        launches_only = spec->launches;
        case_child(fds[1], proc->dir);
    }
    close(fds[1]);
    proc->fd = fds[0];
    return 0;
}

/* The case's directory and what is in it (its log, the trace, any
 * temporary file a writer that died left). */
static void dir_remove(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *ent;
    char path[512];

    while (d != NULL && (ent = readdir(d)) != NULL) {
        if (strcmp(ent->d_name, ".") == 0 || strcmp(ent->d_name, "..") == 0)
            continue;
        snprintf(path, sizeof(path), "%s/%s", dir, ent->d_name);
        unlink(path);
    }
    if (d != NULL)
        closedir(d);
    rmdir(dir);
}

/* 0 and *out filled when the child ended well, else a description of
 * how it ended in @why. */
static int case_finish(case_proc_t *proc, outcome_t *out, char *why, size_t len)
{
    ssize_t got = read(proc->fd, out, sizeof(*out));
    int wstatus;

    close(proc->fd);
    waitpid(proc->pid, &wstatus, 0);
    dir_remove(proc->dir); /* what a child that died left */
    if (WIFSIGNALED(wstatus)) {
        snprintf(why, len, "killed by signal %d%s", WTERMSIG(wstatus),
                 WTERMSIG(wstatus) == SIGALRM ? " (hung)" : "");
        return -1;
    }
    if (got != (ssize_t)sizeof(*out) || WEXITSTATUS(wstatus) != 0) {
        snprintf(why, len, "exit status %d (a leak under the sanitizer?)",
                 WEXITSTATUS(wstatus));
        return -1;
    }
    return 0;
}

static int case_run(const case_spec_t *spec, outcome_t *out, char *why, size_t len)
{
    case_proc_t proc;

    if (case_start(spec, &proc, why, len) != 0)
        return -1;
    return case_finish(&proc, out, why, len);
}

/* ---- the cases ------------------------------------------------------------ */

/* Calls of one entry beyond this are sampled (every k-th, the first
 * always), in the marked-steps scenario and in the launches-only one,
 * whose calls are mostly the same: the test stays within seconds. */
#define MAX_CASES_PER_ENTRY    10
#define MAX_CASES_PER_ENTRY_LO 4

/* Cases run at once: a case mostly waits (threads starting and
 * stopping, the monitor's period), so they overlap well. */
#define CASES_AT_ONCE 6

/* A failing call is logged where it fails, and what it stops is said
 * once: a device that fails every call must not flood the log. */
#define MAX_LOG_LINES 40

/* The failed call itself may be logged once per thread of each policy
 * run (each starts an executor, of three threads, that tries again; six
 * here), not once per step, sample or handle: a device with a sticky
 * error fails every call, and a context holds two events per step. */
#define MAX_CALL_LINES 18

static int log_bounded(const outcome_t *out)
{
    return out->log_lines <= MAX_LOG_LINES && out->call_lines <= MAX_CALL_LINES;
}

static void case_diag(const outcome_t *out)
{
    if (out->bad_status)
        diag("  %s returned %s", out->bad_call,
             umadv_status_string((umadv_status_t)out->bad_code));
    diag("  %d log lines (%d naming the call), logged %d, data %s, live managed %lld streams %lld events %lld "
         "pinned %lld, cupti %s", out->log_lines, out->call_lines, out->logged,
         out->data_ok ? "intact" : "WRONG", (long long)out->live_managed,
         (long long)out->live_streams, (long long)out->live_events,
         (long long)out->live_pinned, out->cupti_left ? "left on" : "off");
}

/* Report a case that ended (@ended: case_finish's result). */
static void case_report(const case_spec_t *c, int ended, const outcome_t *out,
                        const char *why)
{
    const char *scenario = c->launches ? "launches only: " : "";
    const char *name = entries[c->target].name, *when = c->sticky ? " and every later call" : "";
    int pass;

    if (ended != 0) {
        ok(0, "%s%s #%llu%s: the run ends: %s", scenario, name, (unsigned long long)c->nth,
           when, why);
        return;
    }
    pass = !out->bad_status && out->logged && out->data_ok && out->live_managed == 0 &&
           out->live_streams == 0 && out->live_events == 0 && out->live_pinned == 0 &&
           !out->cupti_left &&
           log_bounded(out);
    ok(pass, "%s%s #%llu%s fails%s: clear status, logged, all released, data intact",
       scenario, name, (unsigned long long)c->nth, when, out->fired ? "" : " (not reached)");
    if (out->api_failures > 0 && getenv("INJECT_SURVEY") != NULL)
        diag("  %d api calls failed, the first %s: %s", out->api_failures, out->first_failure,
             umadv_status_string((umadv_status_t)out->first_code));
    if (!pass)
        case_diag(out);
}

/* Run @n cases, CASES_AT_ONCE at a time, reporting them in order. */
static void cases_run(const case_spec_t *cases, size_t n)
{
    for (size_t first = 0; first < n; first += CASES_AT_ONCE) {
        size_t count = UMADV_MIN(n - first, (size_t)CASES_AT_ONCE);
        case_proc_t procs[CASES_AT_ONCE];
        int started[CASES_AT_ONCE];
        char why[CASES_AT_ONCE][128];

        for (size_t i = 0; i < count; i++)
            started[i] = case_start(&cases[first + i], &procs[i], why[i], sizeof(why[i]));
        for (size_t i = 0; i < count; i++) {
            outcome_t out;
            int ended = started[i] != 0 ? -1
                                        : case_finish(&procs[i], &out, why[i], sizeof(why[i]));
            case_report(&cases[first + i], ended, &out, why[i]);
        }
    }
}

/* INJECT_SHOW=NAME:N runs that case alone and shows its log (debugging);
 * INJECT_STICKY and INJECT_LAUNCHES choose the mode and the scenario. */
static int show_case(const char *spec)
{
    for (int e = 0; e < E_COUNT; e++) {
        size_t len = strlen(entries[e].name);
        if (strncmp(spec, entries[e].name, len) == 0 && spec[len] == ':') {
            case_spec_t c = {e, strtoull(spec + len + 1, NULL, 10),
                             getenv("INJECT_STICKY") != NULL, getenv("INJECT_LAUNCHES") != NULL};
            plan(1);
            cases_run(&c, 1);
            return exit_status();
        }
    }
    return 2;
}

static uint64_t case_step(uint64_t calls, int launches)
{
    uint64_t max = launches ? MAX_CASES_PER_ENTRY_LO : MAX_CASES_PER_ENTRY;

    return calls <= max ? 1 : (calls + max - 1) / max;
}

/* The cases of a scenario whose run without failures made @base's calls:
 * each entry's calls one at a time (sampled), then each entry failing
 * from its first call on (a device lost). Appended to *cases_p. */
static size_t cases_plan(const outcome_t *base, int launches, case_spec_t **cases_p, size_t n)
{
    case_spec_t *cases = *cases_p;

    for (int e = 0; e < E_COUNT; e++) {
        uint64_t step = case_step(base->calls[e], launches);
        for (uint64_t k = 1; k <= base->calls[e]; k += step)
            cases[n++] = (case_spec_t){e, k, 0, launches};
    }
    for (int e = 0; e < E_COUNT; e++) {
        if (base->calls[e] > 1)
            cases[n++] = (case_spec_t){e, 1, 1, launches};
    }
    /* CUPTI's error strings failing, with a flush that fails. */
    cases[n++] = (case_spec_t){E_RESULT_STRING, 1, 1, launches};
    return n;
}

/* The run without failures of a scenario: 0, or -1 when it failed. */
static int baseline(int launches, outcome_t *base, char *why, size_t len)
{
    case_spec_t none = {-1, 0, 0, launches};

    return case_run(&none, base, why, len);
}

static void baseline_check(const outcome_t *base, int launches)
{
    ok(base->api_failures == 0 && base->data_ok && base->live_managed == 0 &&
           base->live_streams == 0 && base->live_events == 0 && base->live_pinned == 0 &&
           !base->cupti_left,
       "%s: the run without failures: no error, data intact, all released",
       launches ? "launches only" : "marked steps");
    for (int e = 0; e < E_COUNT; e++) {
        diag("%s: %llu calls", entries[e].name, (unsigned long long)base->calls[e]);
        if (e == E_RESULT_STRING) /* for messages of failures only */
            continue;
        /* Launches alone are timed by their kernel records, not events. */
        /* Staging: the CPU writes blocks after a launch's step, so
         * nothing is stageable there. */
        ok(base->calls[e] > 0 || e == E_STREAM_WAIT_EVENT ||
               (launches && (e == E_ADVISE || e == E_EVENT_ELAPSED ||
                             (e >= E_HOST_ALLOC && e <= E_DISCARD_PREFETCH))),
           "%s is reached%s", entries[e].name,
           base->calls[e] > 0 ? "" : " # SKIP not called in this scenario");
    }
}

#ifdef INJECT_GPU
/* Whether a device can be used, asked in a child: CUDA does not survive
 * a fork, and every case forks from this process. */
static int device_usable(void)
{
    pid_t pid = fork();
    int n = 0, wstatus;

    if (pid == 0)
        _exit(umadv__cuda_ops_cudart.device_count(&n) == UMADV_OK && n > 0 ? 0 : 1);
    waitpid(pid, &wstatus, 0);
    return WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0;
}
#endif

/* Every case to run (a global: reachable in the children, for the leak
 * checker). */
static case_spec_t cases[2 * (E_COUNT * (MAX_CASES_PER_ENTRY + 1) + 1)];

int main(void)
{
    case_spec_t *all = cases;
    size_t ncases = 0;
    outcome_t base[2];
    char why[128];

    env_clear();
    setenv("UMADV_LINK_PROBE", "0", 1); /* cudart directly: not through the table */
    setenv("UMADV_ARENA_SIZE", "2M", 1); /* several arenas */
    setenv("UMADV_HOST_PLACEMENT", "1", 1); /* advice too */
    setenv("UMADV_HOST_NUMA", "none", 1); /* no topology to read per case */
    umadv__cuda_ops_install(&inject_cuda_ops);
    umadv__cupti_ops_install(&inject_cupti_ops);
#ifdef INJECT_GPU
    if (!device_usable())
        skip_all("no CUDA device");
    inner = &umadv__cuda_ops_cudart;
#endif

    if (getenv("INJECT_SHOW") != NULL)
        return show_case(getenv("INJECT_SHOW"));
    for (int launches = 0; launches < 2; launches++) {
        if (baseline(launches, &base[launches], why, sizeof(why)) != 0) {
            plan(1);
            ok(0, "the run without failures ends: %s", why);
            return exit_status();
        }
        ncases = cases_plan(&base[launches], launches, &all, ncases);
    }
    plan((int)(2 * (E_COUNT - 1) + 2 + ncases));
    for (int launches = 0; launches < 2; launches++)
        baseline_check(&base[launches], launches);
    cases_run(cases, ncases);
    return exit_status();
}
