/*
 * The CUPTI tracer: subscription, launch and copy callbacks, activity
 * buffers.
 */
#include "profiler/profiler_int.h"

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"

/* CUPTI asks for buffers of this size; records are small (~200 bytes). */
#define PROF_BUFFER_SIZE  (UINT64_C(8) << 20)
#define PROF_BUFFER_ALIGN 8

struct umadv_profiler {
    const umadv_cupti_ops_t *ops;
    CUpti_SubscriberHandle   subscriber;
    umadv_prof_launch_fn     launch;
    void                    *launch_arg;
    umadv_prof_follow_fn     follow;        /* outside recordings: umadv__prof_follow */
    void                    *follow_arg;
    umadv_prof_copy_fn       watch;         /* umadv__prof_watch_copies; atomic */
    void                    *watch_arg;
    uint32_t                 watch_busy;    /* callbacks inside watch now; atomic */
    uint32_t                 watch_gen;     /* watches begun; atomic */
    int                      um_counters;   /* fault records available */
    int                      um_on;         /* the counters are enabled now */
    int                      count_faults;  /* keep them on between recordings */
    int                      recording;     /* read by callbacks: atomic */
    uint64_t                 started_ns;    /* the recording's start */
    int                      flush_failed;  /* warned once; later failures at debug */
    int                      disable_failed;/* likewise */
    uint64_t                 processed;     /* records read from CUPTI's buffers */
    uint64_t                 process_ns;    /* time spent reading them */
    umadv_prof_mode_t        mode;          /* of the recording; set before it starts */
    umadv_prof_census_t     *census;        /* umadv__prof_census_start; atomic */

    pthread_mutex_t          lock;          /* what follows */
    umadv_prof_result_t      rec;           /* the recording in progress */
    size_t                   launches_cap, kernels_cap, faults_cap;
    umadv_prof_names_t       names;         /* of rec.activity's kernel names */
    uint64_t                 replay_faults; /* fault groups outside recordings */
    /* the first fault records outside recordings since the last take
     * (umadv__prof_take_fault_records: where the replay's faults land) */
    umadv_prof_fault_t       replay_kept[UMADV_PROF_FAULTS_KEPT];
    size_t                   nreplay_kept;
};

/* The one profiler of the process: CUPTI's buffer callbacks take no
 * argument. */
static umadv_profiler_t *the_profiler;
static pthread_mutex_t the_profiler_lock = PTHREAD_MUTEX_INITIALIZER;

/* A runtime launch in progress on this thread: the driver launch it makes
 * is the same launch, under another correlation id. Likewise a runtime
 * copy or memset of watch @copy_gen: its driver call is the same copy. */
static __thread struct {
    int      depth;
    uint32_t step;
    int      copy_depth;
    uint32_t copy_gen;
    uint64_t launch_entered_ns; /* launch_record's start on this thread */
} prof_tls;

/* ---- stream capture ---------------------------------------------------- */

/*
 * STREAM CAPTURE. A launch enqueued on a stream that is capturing runs
 * only when its graph is launched: it is no launch to umadv now, neither
 * a step of a recording nor one of a replay (the graph's launch is, and
 * a replay restores everything staged before it: api/replay.c). And
 * umadv's own calls on the application's thread (the recording's
 * evictions and fetches, the replay's waits, restores and placements)
 * are made in relaxed capture mode: in the thread's own mode, global by
 * default, a capture under way on another stream of this thread, or in
 * global mode on any thread, forbids the unsafe ones among them (a
 * synchronisation, a pinning), and they would invalidate it. umadv's
 * own threads run in relaxed mode throughout (cuda_ops.h, thread_begin).
 */
static int stream_captured(const umadv_profiler_t *prof, void *stream)
{
    return prof->ops->stream_capturing(stream);
}

/* The calling thread in relaxed capture mode: the mode to go back to
 * (capture_mode_back), or -1. */
static int capture_mode_relax(const umadv_profiler_t *prof)
{
    return prof->ops->capture_mode_exchange(UMADV_PROF_CAPTURE_RELAXED);
}

static void capture_mode_back(const umadv_profiler_t *prof, int mode)
{
    if (mode >= 0)
        prof->ops->capture_mode_exchange(mode);
}

/* ---- launch callbacks ------------------------------------------------ */

/* Whether the recording running (or about to) scans launches and keeps
 * kernel records for the trace: all but a timing pass's. */
static int records_accesses(const umadv_profiler_t *prof)
{
    return prof->mode != UMADV_PROF_RECORD_TIMING;
}

/* The launch callbacks: runtime ones first, then driver ones. */
static const CUpti_CallbackId runtime_launch_cbids[] = {
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000,
    CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000,
    CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000,
    CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000,
    CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000,
};

static const CUpti_CallbackId driver_launch_cbids[] = {
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch,
    CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz,
};

/* __cudaLaunchKernel (what <<<>>> becomes in CUDA 13) has no params
 * struct in the generated headers; its arguments are cudaLaunchKernel's. */
typedef struct prof_cuda_launch_kernel_params {
    const void  *func;
    dim3         gridDim;
    dim3         blockDim;
    void       **args;
    size_t       sharedMem;
    cudaStream_t stream;
} prof_cuda_launch_kernel_params_t;

/* What a launch runs and with which arguments. */
typedef struct prof_launch_args {
    const void  *func;
    int          driver;
    int          graph;
    void *const *args;
    void *const *extra;
    void        *stream;
} prof_launch_args_t;

static int runtime_launch_args(CUpti_CallbackId cbid, const void *params,
                               prof_launch_args_t *la)
{
    switch (cbid) {
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000:
    case CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000:
    case CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000: {
        /* The cooperative and __cudaLaunchKernel params share this layout. */
        const prof_cuda_launch_kernel_params_t *p = params;
        la->func   = p->func;
        la->args   = p->args;
        la->stream = p->stream;
        return 1;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060: {
        const cudaLaunchKernelExC_v11060_params *p = params;
        la->func   = p->func;
        la->args   = p->args;
        la->stream = p->config != NULL ? p->config->stream : NULL;
        return 1;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000:
        la->graph  = 1;
        la->stream = ((const cudaGraphLaunch_v10000_params *)params)->stream;
        return 1;
    default:
        return 0;
    }
}

static int driver_launch_args(CUpti_CallbackId cbid, const void *params,
                              prof_launch_args_t *la)
{
    la->driver = 1;
    switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz: {
        const cuLaunchKernel_params *p = params;
        la->func   = p->f;
        la->args   = p->kernelParams;
        la->extra  = p->extra;
        la->stream = p->hStream;
        return 1;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz: {
        const cuLaunchKernelEx_params *p = params;
        la->func   = p->f;
        la->args   = p->kernelParams;
        la->extra  = p->extra;
        la->stream = p->config != NULL ? p->config->hStream : NULL;
        return 1;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz: {
        const cuLaunchCooperativeKernel_params *p = params;
        la->func   = p->f;
        la->args   = p->kernelParams;
        la->stream = p->hStream;
        return 1;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz:
        la->graph  = 1;
        la->stream = ((const cuGraphLaunch_params *)params)->hStream;
        return 1;
    default:
        return 0;
    }
}

static void launch_push(umadv_profiler_t *prof, uint32_t correlation_id, uint32_t step)
{
    pthread_mutex_lock(&prof->lock);
    if (umadv__array_reserve((void **)&prof->rec.launches, &prof->launches_cap,
                             prof->rec.nlaunches + 1, sizeof(*prof->rec.launches)) == UMADV_OK)
        prof->rec.launches[prof->rec.nlaunches++] = (umadv_prof_launch_t){correlation_id, step};
    /* else: its kernel goes unattributed, counted at the end */
    pthread_mutex_unlock(&prof->lock);
}

/* Count a launch's scan; remember the first kernel whose parameters
 * could not be read (the report names it). */
static void scan_count(umadv_profiler_t *prof, const CUpti_CallbackData *cb, int no_layout)
{
    pthread_mutex_lock(&prof->lock);
    prof->rec.scanned++;
    if (no_layout && prof->rec.no_layout++ == 0)
        snprintf(prof->rec.no_layout_name, sizeof(prof->rec.no_layout_name), "%s",
                 cb->symbolName != NULL ? cb->symbolName : "?");
    pthread_mutex_unlock(&prof->lock);
}

/* A launch the application made: number its step and, in a recording of
 * accesses, scan it. */
static uint32_t launch_record(umadv_profiler_t *prof, const CUpti_CallbackData *cb,
                              const prof_launch_args_t *la)
{
    static __thread unsigned char guess[UMADV_PROF_GUESS_BYTES];
    umadv_prof_region_t regions[UMADV_PROF_MAX_PARAMS];
    unsigned flags = la->graph ? UMADV_PROF_LAUNCH_GRAPH : 0;
    size_t nregions = 0;
    uint32_t step;
    int mode;

    prof_tls.launch_entered_ns = umadv__now_ns();
    if (!la->graph && records_accesses(prof)) {
        nregions = umadv__prof_launch_regions(prof->ops, la->func, la->driver, la->args,
                                              la->extra, regions, UMADV_ARRAY_SIZE(regions));
        if (nregions == 0 && (la->args != NULL || la->extra != NULL)) {
            flags |= UMADV_PROF_LAUNCH_NO_LAYOUT;
            nregions = umadv__prof_guess_region(la->args, guess, sizeof(guess), regions);
            if (nregions > 0)
                flags |= UMADV_PROF_LAUNCH_GUESSED;
        }
        scan_count(prof, cb, (flags & UMADV_PROF_LAUNCH_NO_LAYOUT) != 0);
    }
    mode = capture_mode_relax(prof);
    step = prof->launch(prof->launch_arg, cb->symbolName, flags, regions, nregions);
    capture_mode_back(prof, mode);
    if (step != UMADV_STEP_NONE)
        launch_push(prof, cb->correlationId, step);
    return step;
}

uint64_t umadv__prof_launch_entered_ns(void)
{
    return prof_tls.launch_entered_ns;
}

/* Launches are followed outside the recordings of accesses. A timing recording
 * times the iteration that the replay runs: its steps must wait for
 * their data as in any replayed iteration, or its kernels fault and the
 * faults are timed as compute (a PyTorch ResNet-50 at half its
 * footprint: 877 ms of "compute" for 40, 105,000 fault groups). */
static int launches_followed(umadv_profiler_t *prof)
{
    /* mode is set before recording is, and read after it */
    return !__atomic_load_n(&prof->recording, __ATOMIC_ACQUIRE) || !records_accesses(prof);
}

/* A launch, while followed: told at entry and exit. */
static void launch_follow(umadv_profiler_t *prof, const CUpti_CallbackData *cb,
                          const prof_launch_args_t *la)
{
    umadv_prof_follow_fn follow = __atomic_load_n(&prof->follow, __ATOMIC_ACQUIRE);
    int mode;

    if (follow == NULL || !launches_followed(prof))
        return;
    mode = capture_mode_relax(prof);
    follow(prof->follow_arg, cb->symbolName, la->graph ? UMADV_PROF_LAUNCH_GRAPH : 0,
           cb->callbackSite == CUPTI_API_EXIT, la->stream);
    capture_mode_back(prof, mode);
}

/* Returns 0 when @cbid is no launch. */
static int runtime_callback(umadv_profiler_t *prof, CUpti_CallbackId cbid,
                            const CUpti_CallbackData *cb)
{
    prof_launch_args_t la = {0};

    if (!runtime_launch_args(cbid, cb->functionParams, &la))
        return 0;
    if (stream_captured(prof, la.stream))
        return 1; /* at its entry and exit alike: its driver launch sees it so too */
    if (cb->callbackSite == CUPTI_API_EXIT) {
        /* An exit whose entry came before the callbacks were enabled. */
        if (prof_tls.depth > 0)
            prof_tls.depth--;
        launch_follow(prof, cb, &la);
        return 1;
    }
    prof_tls.depth++;
    prof_tls.step = UMADV_STEP_NONE;
    if (__atomic_load_n(&prof->recording, __ATOMIC_ACQUIRE))
        prof_tls.step = launch_record(prof, cb, &la);
    launch_follow(prof, cb, &la);
    return 1;
}

/* Returns 0 when @cbid is no launch. */
static int driver_callback(umadv_profiler_t *prof, CUpti_CallbackId cbid,
                           const CUpti_CallbackData *cb)
{
    prof_launch_args_t la = {0};

    if (!driver_launch_args(cbid, cb->functionParams, &la))
        return 0;
    if (prof_tls.depth == 0 && stream_captured(prof, la.stream))
        return 1;
    if (__atomic_load_n(&prof->recording, __ATOMIC_ACQUIRE) &&
        cb->callbackSite == CUPTI_API_ENTER) {
        if (prof_tls.depth == 0)
            launch_record(prof, cb, &la);
        else if (prof_tls.step != UMADV_STEP_NONE)
            /* inside a runtime launch: its kernel may carry either id */
            launch_push(prof, cb->correlationId, prof_tls.step);
    }
    if (prof_tls.depth == 0) /* inside a runtime launch: followed there */
        launch_follow(prof, cb, &la);
    return 1;
}

/* ---- copy callbacks ---------------------------------------------------- */

/* The watcher, if any, told of @n ranges. Counted in watch_busy around
 * the call, so that stopping can wait until no call is inside it (the
 * count is raised before the watcher is read: a stop that clears it
 * first sees the count, or this sees NULL). */
static void copy_tell(umadv_profiler_t *prof, const umadv_prof_range_t *ranges, size_t n)
{
    umadv_prof_copy_fn fn;

    __atomic_add_fetch(&prof->watch_busy, 1, __ATOMIC_SEQ_CST);
    fn = __atomic_load_n(&prof->watch, __ATOMIC_SEQ_CST);
    if (fn != NULL) {
        int mode = capture_mode_relax(prof);

        fn(prof->watch_arg, ranges, n);
        capture_mode_back(prof, mode);
    }
    __atomic_sub_fetch(&prof->watch_busy, 1, __ATOMIC_RELEASE);
}

/* A copy or memset: told at its entry, a runtime call's own driver call
 * not again. A runtime call whose exit was not seen (the watch stopped
 * inside it) leaves a depth that a later watch does not count. Returns 0
 * when @cbid is none. */
static int copy_callback(umadv_profiler_t *prof, CUpti_CallbackDomain domain,
                         CUpti_CallbackId cbid, const CUpti_CallbackData *cb)
{
    uint32_t gen = __atomic_load_n(&prof->watch_gen, __ATOMIC_ACQUIRE);
    int runtime = domain == CUPTI_CB_DOMAIN_RUNTIME_API;
    umadv_prof_range_t ranges[2];
    int n = umadv__prof_copy_ranges(domain, cbid, cb->functionParams, ranges);

    if (n < 0)
        return 0;
    if (prof_tls.copy_gen != gen) {
        prof_tls.copy_gen   = gen;
        prof_tls.copy_depth = 0;
    }
    if (cb->callbackSite == CUPTI_API_EXIT) {
        if (runtime && prof_tls.copy_depth > 0)
            prof_tls.copy_depth--;
        return 1;
    }
    if (runtime)
        prof_tls.copy_depth++;
    else if (prof_tls.copy_depth > 0)
        return 1; /* inside a runtime copy: told there */
    if (n > 0)
        copy_tell(prof, ranges, (size_t)n);
    return 1;
}

void umadv__prof_callback(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                          const void *cbdata)
{
    umadv_profiler_t *prof = userdata;
    umadv_prof_census_t *census = __atomic_load_n(&prof->census, __ATOMIC_ACQUIRE);
    int exit = ((const CUpti_CallbackData *)cbdata)->callbackSite == CUPTI_API_EXIT;

    /* The census opens a call before umadv's work at its entry and closes
     * it after umadv's work at its exit: that work, and the calls it
     * makes, are the call's. */
    if (census != NULL && !exit)
        umadv__prof_census_call(census, domain, cbid, 0);
    if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
        if (!runtime_callback(prof, cbid, cbdata))
            copy_callback(prof, domain, cbid, cbdata);
    } else if (domain == CUPTI_CB_DOMAIN_DRIVER_API) {
        if (!driver_callback(prof, cbid, cbdata))
            copy_callback(prof, domain, cbid, cbdata);
    }
    if (census != NULL && exit)
        umadv__prof_census_call(census, domain, cbid, 1);
}

static umadv_status_t callback_set(umadv_profiler_t *prof, uint32_t enable,
                                   CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                   umadv_log_level_t level)
{
    return UMADV_CUPTI_CALL(prof->ops, level, enable_callback,
                            (enable, prof->subscriber, domain, cbid));
}

/* The callbacks turned on and off together. */
typedef enum prof_callbacks {
    PROF_LAUNCHES,
    PROF_COPIES
} prof_callbacks_t;

/* The @i-th callback of @set; 0 past its last. */
static int callback_at(prof_callbacks_t set, size_t i, CUpti_CallbackDomain *domain_p,
                       CUpti_CallbackId *cbid_p)
{
    size_t nrt = UMADV_ARRAY_SIZE(runtime_launch_cbids);

    if (set == PROF_COPIES) {
        if (i >= umadv__prof_copy_ncallbacks())
            return 0;
        umadv__prof_copy_callback(i, domain_p, cbid_p);
        return 1;
    }
    if (i >= nrt + UMADV_ARRAY_SIZE(driver_launch_cbids))
        return 0;
    *domain_p = i < nrt ? CUPTI_CB_DOMAIN_RUNTIME_API : CUPTI_CB_DOMAIN_DRIVER_API;
    *cbid_p   = i < nrt ? runtime_launch_cbids[i] : driver_launch_cbids[i - nrt];
    return 1;
}

/* Every callback of @set on (stopping at the first failure) or off (each
 * one tried: a callback left on costs every call), the first failure
 * logged at warning level and the others at debug. */
static umadv_status_t callbacks_set(umadv_profiler_t *prof, prof_callbacks_t set,
                                    uint32_t enable)
{
    umadv_status_t status = UMADV_OK, one;
    CUpti_CallbackDomain domain;
    CUpti_CallbackId cbid;

    if (!enable && __atomic_load_n(&prof->census, __ATOMIC_ACQUIRE) != NULL)
        return UMADV_OK; /* the census keeps every callback on */
    for (size_t i = 0; callback_at(set, i, &domain, &cbid); i++) {
        one = callback_set(prof, enable, domain, cbid,
                           status == UMADV_OK ? UMADV_LOG_WARN : UMADV_LOG_DEBUG);
        if (status == UMADV_OK)
            status = one;
        if (status != UMADV_OK && enable)
            break;
    }
    return status;
}

/* All callbacks of @set on or off; enabling that fails part way turns
 * off again those it turned on. */
static umadv_status_t callbacks_enable(umadv_profiler_t *prof, prof_callbacks_t set,
                                       uint32_t enable)
{
    umadv_status_t status = callbacks_set(prof, set, enable);

    if (status != UMADV_OK && enable)
        callbacks_set(prof, set, 0);
    return status;
}

/* ---- activity buffers ------------------------------------------------ */

void umadv__prof_buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
    void *p = NULL;

    if (posix_memalign(&p, PROF_BUFFER_ALIGN, PROF_BUFFER_SIZE) != 0)
        p = NULL; /* CUPTI drops records rather than fail */
    *buffer      = p;
    *size        = p != NULL ? PROF_BUFFER_SIZE : 0;
    *max_records = 0;
}

static uint32_t fault_mode(uint32_t flags)
{
    switch (flags) {
    case CUPTI_ACTIVITY_UNIFIED_MEMORY_ACCESS_TYPE_READ:
        return UMADV_ACCESS_READ;
    default:
        return UMADV_ACCESS_RW; /* a write, an atomic, or not known */
    }
}

/* Whether records go to the trace's activity: recordings of accesses only. */
static int keeps_activity(const umadv_profiler_t *prof)
{
    return prof->recording && records_accesses(prof);
}

static void kernel_record(umadv_profiler_t *prof, const CUpti_ActivityKernel10 *k)
{
    umadv_prof_result_t *rec = &prof->rec;
    uint32_t name = UMADV_EVENT_NO_NAME;

    if (!prof->recording ||
        umadv__array_reserve((void **)&rec->kernels, &prof->kernels_cap, rec->nkernels + 1,
                             sizeof(*rec->kernels)) != UMADV_OK)
        return;
    if (keeps_activity(prof))
        name = umadv__prof_name_intern(&prof->names, &rec->activity, k->name);
    rec->kernels[rec->nkernels++] = (umadv_prof_kernel_t){
        .correlation_id = k->correlationId, .device = k->deviceId,
        .start = k->start, .end = k->end, .name = name};
}

/* CUPTI's migration causes in umadv's terms (trace/activity.h). */
static uint8_t migration_cause(uint32_t flags)
{
    switch (flags) {
    case CUPTI_ACTIVITY_UNIFIED_MEMORY_MIGRATION_CAUSE_USER:
        return UMADV_CAUSE_USER;
    case CUPTI_ACTIVITY_UNIFIED_MEMORY_MIGRATION_CAUSE_COHERENCE:
        return UMADV_CAUSE_FAULT;
    case CUPTI_ACTIVITY_UNIFIED_MEMORY_MIGRATION_CAUSE_PREFETCH:
        return UMADV_CAUSE_SPECULATIVE;
    case CUPTI_ACTIVITY_UNIFIED_MEMORY_MIGRATION_CAUSE_EVICTION:
        return UMADV_CAUSE_EVICTION;
    case CUPTI_ACTIVITY_UNIFIED_MEMORY_MIGRATION_CAUSE_ACCESS_COUNTERS:
        return UMADV_CAUSE_ACCESS_COUNTERS;
    default:
        return UMADV_CAUSE_UNKNOWN;
    }
}

/* A unified-memory record of kind @kind for the trace's activity. */
static void activity_record(umadv_profiler_t *prof, umadv_event_kind_t kind,
                            const CUpti_ActivityUnifiedMemoryCounter3 *u)
{
    int migration = kind == UMADV_EVENT_HTOD || kind == UMADV_EVENT_DTOH;
    umadv_trace_event_t e = {
        .start_ns = u->start, .dur_ns = u->end > u->start ? u->end - u->start : 0,
        .address = u->address, .step = UMADV_STEP_NONE, .name = UMADV_EVENT_NO_NAME,
        .kind = (uint8_t)kind, .cause = migration ? migration_cause(u->flags) : 0};

    if (kind == UMADV_EVENT_FAULT || migration)
        e.value = u->value;
    if (keeps_activity(prof))
        umadv__prof_event_push(&prof->rec.activity, &e);
}

static void fault_push(umadv_profiler_t *prof, const umadv_prof_fault_t *fault)
{
    umadv_prof_result_t *rec = &prof->rec;

    if (!prof->recording || prof->mode != UMADV_PROF_RECORD_FULL) { /* counted, not kept */
        prof->replay_faults += fault->groups;
        if (prof->nreplay_kept < UMADV_PROF_FAULTS_KEPT)
            prof->replay_kept[prof->nreplay_kept++] = *fault;
        return;
    }
    if (umadv__array_reserve((void **)&rec->faults, &prof->faults_cap, rec->nfaults + 1,
                             sizeof(*rec->faults)) == UMADV_OK)
        rec->faults[rec->nfaults++] = *fault;
}

static void fault_record(umadv_profiler_t *prof, const CUpti_ActivityUnifiedMemoryCounter3 *u)
{
    umadv_prof_fault_t f = {
        .address = u->address, .start = u->start, .device = u->srcId,
        .groups = u->value > UINT32_MAX ? UINT32_MAX : (uint32_t)u->value,
        .mode = fault_mode(u->flags)};

    fault_push(prof, &f);
}

/* Migrations that page faults caused: coherence ones, and the driver's
 * speculative prefetch around them. */
static int um_on_fault(const CUpti_ActivityUnifiedMemoryCounter3 *u)
{
    return u->flags == CUPTI_ACTIVITY_UNIFIED_MEMORY_MIGRATION_CAUSE_COHERENCE ||
           u->flags == CUPTI_ACTIVITY_UNIFIED_MEMORY_MIGRATION_CAUSE_PREFETCH;
}

/* A migration to the GPU that a fault caused (coherence) or that the
 * driver added around one (speculative prefetch). Fault records proper
 * come only for a page's first faults (measured on an H200, driver 580:
 * a range faulted in again after an eviction migrates with no fault
 * record), so these are what shows every demand-paged range. */
static void demand_migration_record(umadv_profiler_t *prof,
                                    const CUpti_ActivityUnifiedMemoryCounter3 *u)
{
    umadv_prof_fault_t f = {
        .address = u->address, .bytes = u->value, .start = u->start, .device = u->dstId,
        .groups = 1, .mode = UMADV_ACCESS_RW};

    if (um_on_fault(u))
        fault_push(prof, &f);
}

/* A record's kind in umadv's terms. */
static umadv_prof_um_kind_t um_kind(const CUpti_ActivityUnifiedMemoryCounter3 *u)
{
    switch (u->counterKind) {
    case CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_GPU_PAGE_FAULT:
        return UMADV_PROF_UM_GPU_FAULT;
    case CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_HTOD:
        return UMADV_PROF_UM_HTOD;
    case CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_DTOH:
        return UMADV_PROF_UM_DTOH;
    case CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_THRASHING:
        return UMADV_PROF_UM_THRASHING;
    default:
        return UMADV_PROF_UM_OTHER;
    }
}

static void um_record(umadv_profiler_t *prof, const CUpti_ActivityUnifiedMemoryCounter3 *u)
{
    umadv_prof_um_kind_t kind = um_kind(u);

    prof->rec.um_records[kind]++;
    if (u->end > u->start)
        prof->rec.um_ns[kind] += u->end - u->start;
    switch (kind) {
    case UMADV_PROF_UM_GPU_FAULT:
        fault_record(prof, u);
        activity_record(prof, UMADV_EVENT_FAULT, u);
        break;
    case UMADV_PROF_UM_HTOD:
        prof->rec.htod_bytes += u->value;
        if (um_on_fault(u))
            prof->rec.htod_fault_bytes += u->value;
        demand_migration_record(prof, u);
        activity_record(prof, UMADV_EVENT_HTOD, u);
        break;
    case UMADV_PROF_UM_DTOH:
        prof->rec.dtoh_bytes += u->value;
        activity_record(prof, UMADV_EVENT_DTOH, u);
        break;
    case UMADV_PROF_UM_THRASHING:
        activity_record(prof, UMADV_EVENT_THRASH, u);
        break;
    default:
        break;
    }
}

static void record_process(umadv_profiler_t *prof, const CUpti_Activity *record)
{
    switch (record->kind) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
    case CUPTI_ACTIVITY_KIND_KERNEL:
        kernel_record(prof, (const CUpti_ActivityKernel10 *)record);
        break;
    case CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER:
        um_record(prof, (const CUpti_ActivityUnifiedMemoryCounter3 *)record);
        break;
    default:
        break;
    }
}

/* Every record of a completed buffer. CUPTI ends a buffer with
 * MAX_LIMIT_REACHED; any other result loses the rest of it: said, since
 * counts and attribution then fall short. */
static void buffer_process(umadv_profiler_t *prof, uint8_t *buffer, size_t valid)
{
    CUpti_Activity *record = NULL;
    CUptiResult result;
    uint64_t start = umadv__now_ns();

    pthread_mutex_lock(&prof->lock);
    while ((result = prof->ops->activity_get_next_record(buffer, valid, &record)) ==
           CUPTI_SUCCESS) {
        record_process(prof, record);
        prof->processed++;
    }
    prof->process_ns += umadv__now_ns() - start;
    pthread_mutex_unlock(&prof->lock);
    if (result != CUPTI_ERROR_MAX_LIMIT_REACHED) {
        umadv__cupti_status(prof->ops, result, UMADV_LOG_WARN, "activity_get_next_record",
                            __FILE__, __LINE__);
        umadv_warn("the rest of a cupti activity buffer is lost: fault counts and "
                   "attribution can fall short");
    }
}

void umadv__prof_buffer_completed(CUcontext context, uint32_t stream_id, uint8_t *buffer,
                                  size_t size, size_t valid)
{
    umadv_profiler_t *prof;

    pthread_mutex_lock(&the_profiler_lock);
    prof = the_profiler;
    if (prof != NULL && buffer != NULL && valid > 0)
        buffer_process(prof, buffer, valid);
    pthread_mutex_unlock(&the_profiler_lock);
    free(buffer);
}

/* ---- activity control ------------------------------------------------ */

/* Deliver the records CUPTI holds. A failure is warned once (records may
 * then come late, or be lost: counts and attribution are short), later
 * ones only at debug level, so a CUPTI that fails every flush does not
 * fill the log. */
static void activity_flush(umadv_profiler_t *prof)
{
    umadv_log_level_t level = prof->flush_failed ? UMADV_LOG_DEBUG : UMADV_LOG_WARN;

    if (UMADV_CUPTI_CALL(prof->ops, level, activity_flush_all,
                         (CUPTI_ACTIVITY_FLAG_FLUSH_FORCED)) == UMADV_OK ||
        prof->flush_failed)
        return;
    prof->flush_failed = 1;
    umadv_warn("cupti records may come late or be lost: fault counts and attribution can "
               "fall short");
}

/* Stop collecting @kind. A failure is warned once, later ones at debug
 * level: the records keep coming, and cost launches time, until a later
 * call succeeds. */
static umadv_status_t activity_off(umadv_profiler_t *prof, CUpti_ActivityKind kind)
{
    umadv_log_level_t level = prof->disable_failed ? UMADV_LOG_DEBUG : UMADV_LOG_WARN;
    const char *call = kind == CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER
                           ? "activity_disable(CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER)"
                           : "activity_disable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)";
    umadv_status_t status = umadv__cupti_status(prof->ops, prof->ops->activity_disable(kind),
                                                level, call, __FILE__, __LINE__);

    if (status != UMADV_OK)
        prof->disable_failed = 1;
    return status;
}

/* ---- unified memory counters ----------------------------------------- */

static umadv_status_t um_counters_enable(umadv_profiler_t *prof)
{
    CUpti_ActivityUnifiedMemoryCounterConfig config[UMADV_PROF_UM_COUNTERS];
    uint32_t n = umadv__prof_um_config(config);
    umadv_status_t status;

    status = UMADV_CUPTI_CALL(prof->ops, UMADV_LOG_WARN, activity_configure_um, (config, n));
    if (status != UMADV_OK)
        return status;
    /* Enabled once to learn whether they work, then off until needed. */
    status = UMADV_CUPTI_CALL(prof->ops, UMADV_LOG_WARN, activity_enable,
                              (CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER));
    /* Still on if they would not go off: um_update tries again. */
    if (status == UMADV_OK &&
        activity_off(prof, CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER) != UMADV_OK)
        prof->um_on = 1;
    return status;
}

/* Milliseconds since *@t_ns, which becomes now: the debug line's parts. */
static double lap_ms(uint64_t *t_ns)
{
    uint64_t now = umadv__now_ns(), start = *t_ns;

    *t_ns = now;
    return (double)(now - start) / 1e6;
}

/* The counters on while a full recording runs or faults are counted,
 * off otherwise (a recording's stop leaves them to the next call:
 * umadv__prof_record_stop). A timing pass measures kernels, and a scan records a
 * profile that moves nothing: their faults are counted only when the
 * replay asks (count_faults), since turning the counters
 * on costs some 20 ms and off as much again (CUPTI, H200, 2026-11-28),
 * and each launch 20-40 us while they are on. @flushed: the caller
 * has just flushed the records of completed work. */
static void um_update(umadv_profiler_t *prof, int flushed)
{
    int full = prof->recording && prof->mode == UMADV_PROF_RECORD_FULL;
    int on = prof->um_counters && (full || prof->count_faults);
    uint64_t t;
    double flush_ms = 0;

    if (on == prof->um_on)
        return; /* no switch: most calls, one a boundary */
    t = umadv__now_ns();
    if (on && UMADV_CUPTI_CALL(prof->ops, UMADV_LOG_WARN, activity_enable,
                               (CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER)) != UMADV_OK)
        return; /* logged; faults go unseen until the next try */
    if (!on) {
        /* Records of work already done still count. */
        if (!flushed) {
            activity_flush(prof);
            flush_ms = lap_ms(&t);
        }
        if (activity_off(prof, CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER) != UMADV_OK)
            return; /* logged; still on: tried again next time */
    }
    prof->um_on = on;
    umadv_debug("profiler: fault counters %s: records flushed %.3f ms, switched %.3f",
                on ? "on" : "off", flush_ms, lap_ms(&t));
}

/* ---- life cycle ------------------------------------------------------ */

static umadv_status_t subscribe(umadv_profiler_t *prof)
{
    CUptiResult result;

    result = prof->ops->subscribe(&prof->subscriber, umadv__prof_callback, prof);
    if (umadv__cupti_is_taken(result)) {
        umadv_warn("cupti is held by another tool (a profiler such as nsys or ncu, or another "
                   "cupti client): no profiling pass, umadv runs with declared accesses only");
        return UMADV_ERR_CUPTI;
    }
    if (result != CUPTI_SUCCESS) {
        umadv__cupti_status(prof->ops, result, UMADV_LOG_WARN, "cuptiSubscribe", __FILE__,
                            __LINE__);
        umadv_warn("cupti unavailable: no profiling pass, umadv runs with declared "
                   "accesses only");
        return UMADV_ERR_CUPTI;
    }
    return UMADV_OK;
}

static umadv_status_t prof_start(umadv_profiler_t *prof)
{
    umadv_status_t status;

    status = subscribe(prof);
    if (status != UMADV_OK)
        return status;
    status = UMADV_CUPTI_CALL(prof->ops, UMADV_LOG_WARN, activity_register_callbacks,
                              (umadv__prof_buffer_requested, umadv__prof_buffer_completed));
    if (status != UMADV_OK) {
        umadv_warn("cupti activity buffers unavailable: no profiling pass");
        goto err_unsubscribe;
    }
    if (um_counters_enable(prof) == UMADV_OK)
        prof->um_counters = 1;
    else
        umadv_warn("unified memory counters unavailable: no fault records, access sets come "
                   "from kernel parameters and declarations only, replay faults uncounted");
    return UMADV_OK;

err_unsubscribe:
    UMADV_CUPTI_CALL(prof->ops, UMADV_LOG_WARN, unsubscribe, (prof->subscriber));
    return status;
}

umadv_status_t umadv__prof_open(int host_only, umadv_prof_launch_fn launch, void *arg,
                                umadv_profiler_t **prof_p)
{
    const umadv_cupti_ops_t *ops = umadv__cupti_ops_select(host_only);
    umadv_profiler_t *prof;
    umadv_status_t status;

    if (ops == NULL) {
        *prof_p = NULL; /* host memory: no GPU to trace, and nothing lost */
        return UMADV_OK;
    }
    prof = calloc(1, sizeof(*prof));
    if (prof == NULL)
        return UMADV_ERR_NO_MEMORY;
    prof->ops        = ops;
    prof->launch     = launch;
    prof->launch_arg = arg;
    pthread_mutex_init(&prof->lock, NULL);
    pthread_mutex_lock(&the_profiler_lock);
    if (the_profiler != NULL) {
        pthread_mutex_unlock(&the_profiler_lock);
        umadv_warn("another umadv context holds the profiler: this one runs without "
                   "profiling");
        status = UMADV_ERR_STATE;
        goto err_free;
    }
    status = prof_start(prof);
    if (status == UMADV_OK)
        the_profiler = prof;
    pthread_mutex_unlock(&the_profiler_lock);
    if (status != UMADV_OK)
        goto err_free;
    *prof_p = prof;
    return UMADV_OK;

err_free:
    pthread_mutex_destroy(&prof->lock);
    free(prof);
    return status;
}

void umadv__prof_close(umadv_profiler_t *prof)
{
    if (prof == NULL)
        return;
    if (prof->recording)
        callbacks_enable(prof, PROF_LAUNCHES, 0);
    if (prof->watch != NULL)
        umadv__prof_watch_copies(prof, NULL, NULL);
    if (prof->um_on)
        activity_off(prof, CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER);
    activity_off(prof, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    activity_flush(prof);
    UMADV_CUPTI_CALL(prof->ops, UMADV_LOG_WARN, unsubscribe, (prof->subscriber));
    pthread_mutex_lock(&the_profiler_lock);
    the_profiler = NULL;
    pthread_mutex_unlock(&the_profiler_lock);
    umadv__prof_result_cleanup(&prof->rec);
    umadv__prof_names_reset(&prof->names);
    umadv__prof_census_free(prof->census); /* unsubscribed: no callback reaches it */
    pthread_mutex_destroy(&prof->lock);
    free(prof);
}

/* THE CALL CENSUS (census.c). Every callback of both domains on, then the
 * counts published: a callback before them counts nothing. Where the
 * driver's domain cannot be enabled, the runtime's calls are counted
 * alone (said); where the runtime's cannot, nothing is. */
umadv_status_t umadv__prof_census_start(umadv_profiler_t *prof)
{
    umadv_prof_census_t *census;
    umadv_status_t status;

    if (prof->ops->enable_domain == NULL) {
        umadv_warn("call census: this CUPTI table cannot enable a callback domain: no census");
        return UMADV_ERR_UNSUPPORTED;
    }
    census = umadv__prof_census_new();
    if (census == NULL) {
        umadv_warn("call census: out of memory: no census");
        return UMADV_ERR_NO_MEMORY;
    }
    status = UMADV_CUPTI_CALL(prof->ops, UMADV_LOG_WARN, enable_domain,
                              (1, prof->subscriber, CUPTI_CB_DOMAIN_RUNTIME_API));
    if (status != UMADV_OK) {
        umadv__prof_census_free(census);
        return status;
    }
    if (UMADV_CUPTI_CALL(prof->ops, UMADV_LOG_WARN, enable_domain,
                         (1, prof->subscriber, CUPTI_CB_DOMAIN_DRIVER_API)) != UMADV_OK)
        umadv_warn("call census: the runtime's calls only (cuBLAS's and cuDNN's driver calls "
                   "are not counted)");
    __atomic_store_n(&prof->census, census, __ATOMIC_RELEASE);
    umadv_info("call census: counting the application's CUDA calls; a line at each "
               "iteration's end");
    return UMADV_OK;
}

void umadv__prof_census_report(umadv_profiler_t *prof, uint64_t iteration)
{
    umadv_prof_census_t *census =
        prof != NULL ? __atomic_load_n(&prof->census, __ATOMIC_ACQUIRE) : NULL;

    if (census != NULL)
        umadv__prof_census_log(census, prof->ops, iteration);
}

void umadv__prof_result_cleanup(umadv_prof_result_t *result)
{
    umadv__prof_activity_cleanup(&result->activity);
    free(result->launches);
    free(result->kernels);
    free(result->faults);
    memset(result, 0, sizeof(*result));
}

/* The records read since the last call, and the time spent reading them
 * (into *@ns): CUPTI's flush is its own time plus this. */
static uint64_t processed_take(umadv_profiler_t *prof, uint64_t *ns)
{
    uint64_t n;

    pthread_mutex_lock(&prof->lock);
    n = prof->processed;
    *ns = prof->process_ns;
    prof->processed = prof->process_ns = 0;
    pthread_mutex_unlock(&prof->lock);
    return n;
}

umadv_status_t umadv__prof_record_start(umadv_profiler_t *prof, umadv_prof_mode_t mode,
                                        int flushed)
{
    umadv_status_t status;
    uint64_t t, read_ns;
    double flush_ms, on_ms, callbacks_ms;

    if (prof->recording)
        return UMADV_ERR_STATE;

    /* Records of earlier work go to the replay count, not this recording. */
    t = umadv__now_ns();
    if (!flushed)
        activity_flush(prof);
    flush_ms = lap_ms(&t);
    (void)processed_take(prof, &read_ns); /* the recording's own from here */
    pthread_mutex_lock(&prof->lock);
    umadv__prof_result_cleanup(&prof->rec);
    umadv__prof_names_reset(&prof->names);
    prof->launches_cap = prof->kernels_cap = prof->faults_cap = 0;
    prof->rec.um_counters = prof->um_counters && mode == UMADV_PROF_RECORD_FULL;
    prof->mode = mode;
    pthread_mutex_unlock(&prof->lock);
    status = UMADV_CUPTI_CALL(prof->ops, UMADV_LOG_WARN, activity_enable,
                              (CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
    on_ms = lap_ms(&t);
    if (status == UMADV_OK && prof->follow == NULL) /* else on already */
        status = callbacks_enable(prof, PROF_LAUNCHES, 1);
    callbacks_ms = lap_ms(&t);
    if (status != UMADV_OK) {
        umadv_warn("cannot trace kernel launches: this iteration is recorded with declared "
                   "accesses only");
        activity_off(prof, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
        return status;
    }
    prof->started_ns = umadv__now_ns();
    __atomic_store_n(&prof->recording, 1, __ATOMIC_RELEASE);
    um_update(prof, 0);
    umadv_debug("profiler: recording started: records flushed %.3f ms, kernel records on %.3f, "
                "launch callbacks on %.3f, fault counters %.3f", flush_ms, on_ms, callbacks_ms,
                lap_ms(&t));
    return UMADV_OK;
}

umadv_status_t umadv__prof_record_stop(umadv_profiler_t *prof, umadv_prof_result_t *result)
{
    umadv_status_t status;
    uint64_t t = umadv__now_ns(), stopped = t, records, read_ns;
    double sync_ms, callbacks_ms, flush_ms, off_ms;

    if (!prof->recording)
        return UMADV_ERR_STATE;
    status = prof->ops->device_synchronize();
    sync_ms = lap_ms(&t);
    if (prof->follow == NULL)
        callbacks_enable(prof, PROF_LAUNCHES, 0);
    callbacks_ms = lap_ms(&t);
    activity_flush(prof);
    flush_ms = lap_ms(&t);
    activity_off(prof, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    off_ms = lap_ms(&t);
    pthread_mutex_lock(&prof->lock);
    __atomic_store_n(&prof->recording, 0, __ATOMIC_RELEASE);
    *result = prof->rec;
    result->wall_ns = stopped - prof->started_ns;
    memset(&prof->rec, 0, sizeof(prof->rec));
    umadv__prof_names_reset(&prof->names);
    prof->launches_cap = prof->kernels_cap = prof->faults_cap = 0;
    pthread_mutex_unlock(&prof->lock);
    /* The counters stay as they are until the next decision
     * (umadv__prof_count_faults at the next iteration's start, or the next
     * recording's start): after a first pass the second records, after a
     * profile the replay counts its first iterations, and turning them off
     * here cost 12-13 ms and on again there 21 (a PyTorch ResNet-50 at
     * half its footprint, H200, 2026-11-29). At an iteration's boundary
     * the device is idle until then; a recording that umadv_plan stops
     * mid-iteration leaves them on for the iteration's other launches,
     * whose faults count as its own. */
    records = processed_take(prof, &read_ns);
    umadv_debug("profiler: recording stopped: device synchronize %.3f ms, launch callbacks off "
                "%.3f, records flushed %.3f, kernel records off %.3f; %llu records read in the "
                "recording, %.3f ms", sync_ms, callbacks_ms, flush_ms, off_ms,
                (unsigned long long)records, read_ns / 1e6);
    if (status != UMADV_OK)
        umadv_warn("the profiled iteration's work failed to complete: its kernel and fault "
                   "records may be incomplete");
    return UMADV_OK;
}

umadv_status_t umadv__prof_follow(umadv_profiler_t *prof, umadv_prof_follow_fn follow,
                                  void *arg)
{
    umadv_status_t status = UMADV_OK;

    if (follow == prof->follow && arg == prof->follow_arg)
        return UMADV_OK;
    prof->follow_arg = arg;
    __atomic_store_n(&prof->follow, follow, __ATOMIC_RELEASE);
    /* A recording holds the callbacks on and turns them off at its end
     * only when nobody follows. */
    if (!prof->recording)
        status = callbacks_enable(prof, PROF_LAUNCHES, follow != NULL);
    if (status != UMADV_OK) {
        __atomic_store_n(&prof->follow, NULL, __ATOMIC_RELEASE);
        callbacks_enable(prof, PROF_LAUNCHES, 0);
    }
    return status;
}

/* No call inside the watcher once this returns: it was cleared first
 * (copy_tell). */
static void watch_quiesce(umadv_profiler_t *prof)
{
    while (__atomic_load_n(&prof->watch_busy, __ATOMIC_SEQ_CST) != 0)
        sched_yield();
}

umadv_status_t umadv__prof_watch_copies(umadv_profiler_t *prof, umadv_prof_copy_fn fn,
                                        void *arg)
{
    int was_on = __atomic_load_n(&prof->watch, __ATOMIC_SEQ_CST) != NULL;
    umadv_status_t status = UMADV_OK;

    __atomic_store_n(&prof->watch, NULL, __ATOMIC_SEQ_CST);
    watch_quiesce(prof);
    if (fn == NULL) {
        if (was_on)
            callbacks_enable(prof, PROF_COPIES, 0);
        return UMADV_OK;
    }
    if (!was_on && (status = callbacks_enable(prof, PROF_COPIES, 1)) != UMADV_OK) {
        umadv_warn("cannot watch memcpy and memset calls");
        return status;
    }
    prof->watch_arg = arg;
    __atomic_add_fetch(&prof->watch_gen, 1, __ATOMIC_RELEASE);
    __atomic_store_n(&prof->watch, fn, __ATOMIC_SEQ_CST);
    return UMADV_OK;
}

void umadv__prof_count_faults(umadv_profiler_t *prof, int on)
{
    prof->count_faults = on != 0;
    /* a full recording keeps them on; turned off, no second flush:
     * umadv__prof_take_faults has just delivered the records of the work
     * done (a second cost a PyTorch ResNet-50's third replayed iteration
     * 13.5 ms of the 47 its boundary spent on fault counts; H200,
     * 2026-11-29) */
    um_update(prof, 1);
}

uint64_t umadv__prof_take_faults(umadv_profiler_t *prof, int flushed)
{
    uint64_t faults;

    if (!prof->um_counters)
        return 0;
    /* counters off: nothing came since they went off, after a flush */
    if (prof->um_on && !flushed)
        activity_flush(prof);
    pthread_mutex_lock(&prof->lock);
    faults = prof->replay_faults;
    prof->replay_faults = 0;
    pthread_mutex_unlock(&prof->lock);
    return faults;
}

size_t umadv__prof_take_fault_records(umadv_profiler_t *prof, umadv_prof_fault_t *out,
                                      size_t max)
{
    size_t n;

    pthread_mutex_lock(&prof->lock);
    n = UMADV_MIN(max, prof->nreplay_kept);
    memcpy(out, prof->replay_kept, n * sizeof(*out));
    prof->nreplay_kept = 0;
    pthread_mutex_unlock(&prof->lock);
    return n;
}

int umadv__prof_has_um_counters(const umadv_profiler_t *prof)
{
    return prof->um_counters;
}
