/*
 * The executor on a simulated GPU: a mock cuda_ops table whose prefetches
 * block their caller for a time proportional to the bytes (as the real
 * call does), whose "kernels" run on a simulated application stream and
 * fault what is not resident, and which checks, inside every call, that
 * the residency never exceeds the budget and that no eviction starts
 * before the last kernel that touched the data has finished.
 *
 * Workloads are hand-built traces of 64 KiB sections; schedules are the
 * planner's or hand-written where a test needs an exact op list.
 */
#include <umadv.h>

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "cuda_ops/cuda_ops.h"
#include "exec/exec.h"
#include "exec/exec_int.h" /* the lock, held against a step call */
#include "plan/plan.h"
#include "trace/trace.h"
#include "tap.h"
#include "testutil.h"

#define SEC        (64 * UMADV_KIB)
#define MAX_CHUNKS 4096
#define MAX_CALLS  4096
#define STEP_STREAM ((umadv_stream_t)0x5eb)

/* ---- the mock GPU ------------------------------------------------------- */

enum { CH_HOST, CH_ARRIVING, CH_RESIDENT, CH_LEAVING };

typedef struct mock_call {
    char      kind;    /* 'F' fetch, 'E' evict, 'S' advice set, 'U' advice unset */
    uintptr_t ptr;
    uint64_t  len;
    uint64_t  start_ns, end_ns;
    int       advice;  /* umadv_cuda_advice_t ('S', 'U') */
    int       location;
    size_t    batch;   /* 'F' of a batch call: its ranges; 0: a single prefetch */
    int       cont;    /* a range of the same batch call as the record before */
    umadv_stream_t stream; /* 'F', 'E': the call's */
    int       by_app;  /* made by the test's own thread (the application's) */
    int       begun;   /* made by a thread that called thread_begin */
} mock_call_t;

static pthread_t app_thread;
static __thread int mock_begun; /* this thread called thread_begin */

typedef struct mock_event {
    uint64_t done_ns;  /* when the work before it completes */
} mock_event_t;

static struct {
    pthread_mutex_t lock;
    uint64_t        budget;          /* 0: none */
    uint64_t        fetch_ns, evict_ns; /* per chunk moved; calls cost at least 20 us */
    uintptr_t       chunk[MAX_CHUNKS];
    uint8_t         state[MAX_CHUNKS];
    uint64_t        last_kernel_end[MAX_CHUNKS];
    size_t          nchunks;
    uint64_t        resident, peak;
    int             budget_violations, order_violations;
    uint64_t        stream_busy_until;
    mock_call_t     calls[MAX_CALLS];
    size_t          ncalls;
    int             fail_at;         /* fail this prefetch (1-based), 0: never */
    int             prefetches;
    int             in_flight, evicting;
    uint64_t        faults;
    int             streams, events;
    int             records;         /* events recorded */
} mock = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void mock_reset(uint64_t budget, uint64_t fetch_ns, uint64_t evict_ns)
{
    pthread_mutex_lock(&mock.lock);
    for (size_t c = 0; c < mock.nchunks; c++) {
        mock.state[c] = CH_HOST;
        mock.last_kernel_end[c] = 0;
    }
    mock.budget = budget;
    mock.fetch_ns = fetch_ns;
    mock.evict_ns = evict_ns;
    mock.resident = mock.peak = 0;
    mock.budget_violations = mock.order_violations = 0;
    mock.ncalls = 0;
    mock.fail_at = mock.prefetches = 0;
    mock.faults = 0;
    mock.records = 0;
    pthread_mutex_unlock(&mock.lock);
}

static void sleep_ns(uint64_t ns)
{
    struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};

    nanosleep(&ts, NULL);
}

static long chunk_of(uintptr_t addr)
{
    for (size_t c = 0; c < mock.nchunks; c++) {
        if (mock.chunk[c] == addr)
            return (long)c;
    }
    return -1;
}

static void resident_add(int64_t delta)
{
    mock.resident += (uint64_t)delta;
    mock.peak = UMADV_MAX(mock.peak, mock.resident);
    if (delta > 0 && mock.budget != 0 && mock.resident > mock.budget)
        mock.budget_violations++;
}

/* Chunks of [ptr, ptr+len) in state @from go to @to; returns how many. */
static int chunks_move(uintptr_t ptr, uint64_t len, int from, int to, int check_order)
{
    uint64_t now = umadv__now_ns();
    int n = 0;

    for (uintptr_t a = ptr; a < ptr + len; a += SEC) {
        long c = chunk_of(a);
        if (c < 0 || mock.state[c] != from)
            continue;
        if (check_order && now < mock.last_kernel_end[c])
            mock.order_violations++;
        if (from == CH_HOST)
            resident_add(SEC);
        if (to == CH_HOST)
            resident_add(-(int64_t)SEC);
        mock.state[c] = (uint8_t)to;
        n++;
    }
    return n;
}

static size_t call_log(char kind, void *ptr, uint64_t len)
{
    size_t i = mock.ncalls < MAX_CALLS ? mock.ncalls++ : MAX_CALLS - 1;

    mock.calls[i] = (mock_call_t){.kind = kind, .ptr = (uintptr_t)ptr, .len = len,
                                  .start_ns = umadv__now_ns(),
                                  .by_app = pthread_equal(pthread_self(), app_thread),
                                  .begun = mock_begun};
    return i;
}

/* One call over @count ranges (a batch when @batch): logged range by
 * range, one fixed cost of 20 us for the call. */
static umadv_status_t mock_move(void **ptrs, size_t *sizes, size_t count, int location,
                                int batch, umadv_stream_t stream)
{
    int to_gpu = location != UMADV_CUDA_LOCATION_HOST, n = 0;
    size_t first;

    pthread_mutex_lock(&mock.lock);
    if (mock.fail_at != 0 && ++mock.prefetches == mock.fail_at) {
        pthread_mutex_unlock(&mock.lock);
        umadv_error("mock: cudaMemPrefetchAsync failed: injected");
        return UMADV_ERR_CUDA;
    }
    first = mock.ncalls;
    for (size_t r = 0; r < count; r++) {
        size_t i = call_log(to_gpu ? 'F' : 'E', ptrs[r], sizes[r]);
        mock.calls[i].location = location;
        mock.calls[i].batch = batch ? count : 0;
        mock.calls[i].cont = r > 0;
        mock.calls[i].stream = stream;
        n += to_gpu ? chunks_move((uintptr_t)ptrs[r], sizes[r], CH_HOST, CH_ARRIVING, 0)
                    : chunks_move((uintptr_t)ptrs[r], sizes[r], CH_RESIDENT, CH_LEAVING, 1);
    }
    mock.in_flight++;
    mock.evicting += !to_gpu;
    pthread_mutex_unlock(&mock.lock);
    /* The real call blocks its caller for the whole migration. */
    sleep_ns(20000 + (uint64_t)n * (to_gpu ? mock.fetch_ns : mock.evict_ns));
    pthread_mutex_lock(&mock.lock);
    for (size_t r = 0; r < count; r++) {
        if (to_gpu)
            chunks_move((uintptr_t)ptrs[r], sizes[r], CH_ARRIVING, CH_RESIDENT, 0);
        else
            chunks_move((uintptr_t)ptrs[r], sizes[r], CH_LEAVING, CH_HOST, 0);
        if (first + r < MAX_CALLS)
            mock.calls[first + r].end_ns = umadv__now_ns();
    }
    mock.in_flight--;
    mock.evicting -= !to_gpu;
    pthread_mutex_unlock(&mock.lock);
    return UMADV_OK;
}

static umadv_status_t mock_prefetch(void *ptr, size_t size, int location, umadv_stream_t s)
{
    return mock_move(&ptr, &size, 1, location, 0, s);
}

static umadv_status_t mock_prefetch_batch(void **ptrs, size_t *sizes, size_t count,
                                          int location, umadv_stream_t s)
{
    return mock_move(ptrs, sizes, count, location, 1, s);
}

static umadv_status_t mock_advise(void *ptr, size_t size, umadv_cuda_advice_t advice, int loc)
{
    int set = advice == UMADV_CUDA_ADVISE_SET_READ_MOSTLY ||
              advice == UMADV_CUDA_ADVISE_SET_PREFERRED_LOCATION ||
              advice == UMADV_CUDA_ADVISE_SET_ACCESSED_BY;
    size_t i;

    pthread_mutex_lock(&mock.lock);
    i = call_log(set ? 'S' : 'U', ptr, size);
    mock.calls[i].advice = advice;
    mock.calls[i].location = loc;
    mock.calls[i].end_ns = mock.calls[i].start_ns;
    pthread_mutex_unlock(&mock.lock);
    return UMADV_OK;
}

static umadv_status_t mock_mem_get_info(uint64_t *free_p, uint64_t *total_p)
{
    pthread_mutex_lock(&mock.lock);
    *total_p = UMADV_GIB;
    *free_p = UMADV_GIB - mock.resident;
    pthread_mutex_unlock(&mock.lock);
    return UMADV_OK;
}

static umadv_status_t mock_stream_create(umadv_stream_t *s)
{
    pthread_mutex_lock(&mock.lock);
    mock.streams++;
    pthread_mutex_unlock(&mock.lock);
    *s = (umadv_stream_t)(uintptr_t)0x5757;
    return UMADV_OK;
}

static umadv_status_t mock_stream_destroy(umadv_stream_t s)
{
    pthread_mutex_lock(&mock.lock);
    mock.streams--;
    pthread_mutex_unlock(&mock.lock);
    return UMADV_OK;
}

static umadv_status_t mock_event_create(umadv_event_t *ev)
{
    mock_event_t *e = calloc(1, sizeof(*e));

    pthread_mutex_lock(&mock.lock);
    mock.events++;
    pthread_mutex_unlock(&mock.lock);
    *ev = e;
    return UMADV_OK;
}

static umadv_status_t mock_event_destroy(umadv_event_t ev)
{
    free(ev);
    pthread_mutex_lock(&mock.lock);
    mock.events--;
    pthread_mutex_unlock(&mock.lock);
    return UMADV_OK;
}

/* Completes when the kernels launched so far on the application's
 * (simulated) stream have finished. */
static umadv_status_t mock_event_record(umadv_event_t ev, umadv_stream_t s)
{
    pthread_mutex_lock(&mock.lock);
    ((mock_event_t *)ev)->done_ns = UMADV_MAX(mock.stream_busy_until, umadv__now_ns());
    mock.records++;
    pthread_mutex_unlock(&mock.lock);
    return UMADV_OK;
}

static umadv_status_t mock_event_synchronize(umadv_event_t ev)
{
    uint64_t done = ((mock_event_t *)ev)->done_ns, now = umadv__now_ns();

    if (done > now)
        sleep_ns(done - now);
    return UMADV_OK;
}

static umadv_cuda_ops_t mock_ops;

static umadv_status_t mock_thread_begin(int device)
{
    mock_begun = 1;
    return umadv__cuda_ops_host.thread_begin(device);
}

static void mock_ops_init(void)
{
    mock_ops = umadv__cuda_ops_host;
    mock_ops.thread_begin      = mock_thread_begin;
    mock_ops.name              = "mock";
    mock_ops.prefetch          = mock_prefetch;
    mock_ops.prefetch_batch    = mock_prefetch_batch;
    mock_ops.advise            = mock_advise;
    mock_ops.mem_get_info      = mock_mem_get_info;
    mock_ops.stream_create     = mock_stream_create;
    mock_ops.stream_destroy    = mock_stream_destroy;
    mock_ops.event_create      = mock_event_create;
    mock_ops.event_destroy     = mock_event_destroy;
    mock_ops.event_record      = mock_event_record;
    mock_ops.event_synchronize = mock_event_synchronize;
}

/* A kernel touching [ptr, ptr+len): queued behind the stream's work for
 * @ns; what is not resident now faults in (and counts against the budget,
 * as the driver's own migration does). */
static void mock_kernel(uintptr_t ptr, uint64_t len, uint64_t ns)
{
    uint64_t end;

    pthread_mutex_lock(&mock.lock);
    end = UMADV_MAX(mock.stream_busy_until, umadv__now_ns()) + ns;
    mock.stream_busy_until = end;
    for (uintptr_t a = ptr; a < ptr + len; a += SEC) {
        long c = chunk_of(a);
        if (c < 0)
            continue;
        if (mock.state[c] != CH_RESIDENT)
            mock.faults++;
        if (mock.state[c] == CH_HOST) {
            resident_add(SEC);
            mock.state[c] = CH_RESIDENT;
        }
        mock.last_kernel_end[c] = end;
    }
    pthread_mutex_unlock(&mock.lock);
}

static void mock_stream_drain(void)
{
    uint64_t until, now = umadv__now_ns();

    pthread_mutex_lock(&mock.lock);
    until = mock.stream_busy_until;
    pthread_mutex_unlock(&mock.lock);
    if (until > now)
        sleep_ns(until - now);
}

/* ---- workloads ---------------------------------------------------------- */

#define MAX_ALLOCS 8
#define MAX_STEPS  8

typedef struct workload {
    umadv_trace_t    trace;
    void            *arena[MAX_ALLOCS];   /* one managed allocation each */
    uint32_t         nallocs;
    uint32_t         nsteps;
    uint32_t         uses[MAX_STEPS];     /* bit a: step touches allocation a */
    umadv_schedule_t schedule;
    int              have_schedule;
} workload_t;

/* @nsections per allocation; step j touches the allocations in uses[j]. */
static void workload_init(workload_t *w, uint32_t nallocs, uint32_t nsections,
                          uint32_t nsteps, const uint32_t *uses)
{
    char why[160];

    memset(w, 0, sizeof(*w));
    w->nallocs = nallocs;
    w->nsteps = nsteps;
    umadv__trace_init(&w->trace, SEC);
    for (uint32_t a = 0; a < nallocs; a++) {
        uint32_t id;
        mock_ops.malloc_managed(nsections * SEC, SEC, &w->arena[a]);
        for (uint32_t s = 0; s < nsections; s++)
            mock.chunk[mock.nchunks++] = (uintptr_t)w->arena[a] + s * SEC;
        umadv__trace_add_alloc(&w->trace, (uintptr_t)w->arena[a], nsections * SEC,
                               UMADV_ALLOC_OTHER, NULL, &id);
    }
    for (uint32_t j = 0; j < nsteps; j++) {
        w->uses[j] = uses[j];
        umadv__trace_add_step(&w->trace, NULL, UMADV_STEP_LAYER, 0, 1000000, NULL);
        for (uint32_t a = 0; a < nallocs; a++) {
            if (uses[j] & (1u << a))
                umadv__trace_add_access(&w->trace, a, 0, nsections * SEC, UMADV_ACCESS_RW,
                                        0);
        }
    }
    if (umadv__trace_finalize(&w->trace, why, sizeof(why)) != UMADV_OK)
        diag("workload trace: %s", why);
}

static void workload_cleanup(workload_t *w)
{
    for (uint32_t a = 0; a < w->nallocs; a++)
        mock_ops.free(w->arena[a], w->trace.allocs[a].size);
    if (w->have_schedule)
        umadv__schedule_cleanup(&w->schedule);
    umadv__trace_cleanup(&w->trace);
    mock.nchunks = 0;
}

static umadv_exec_params_t exec_params(workload_t *w, umadv_policy_t policy, uint64_t budget)
{
    umadv_exec_params_t p = {
        .ops = &mock_ops, .device = 0, .policy = policy, .budget = budget,
        .trace = &w->trace, .first_step = 0, .nsteps = w->nsteps,
        .schedule = w->have_schedule ? &w->schedule : NULL,
        .wait_timeout_ns = 2000000000u, .monitor_period_ns = 200000,
    };
    return p;
}

static umadv_exec_t *exec_open(workload_t *w, umadv_policy_t policy, uint64_t budget)
{
    umadv_exec_params_t p = exec_params(w, policy, budget);
    umadv_exec_t *e = NULL;

    if (umadv__exec_create(&p, &e) != UMADV_OK)
        return NULL;
    for (uint32_t a = 0; a < w->nallocs; a++)
        umadv__exec_bind(e, a, w->arena[a], w->trace.allocs[a].size, w->arena[a], 0);
    umadv__exec_start(e, NULL);
    return e;
}

typedef struct run_result {
    uint64_t faults[8];   /* per iteration */
    uint64_t max_begin_ns;/* longest step_begin + wait */
} run_result_t;

/* Replay @iters iterations: each step's kernel runs @kernel_ns. */
static void run(workload_t *w, umadv_exec_t *e, int iters, uint64_t kernel_ns,
                run_result_t *r)
{
    memset(r, 0, sizeof(*r));
    for (int i = 0; i < iters; i++) {
        uint64_t before = mock.faults;

        umadv__exec_iteration_begin(e);
        for (uint32_t j = 0; j < w->nsteps; j++) {
            uint64_t t0 = umadv__now_ns();

            umadv__exec_step_begin(e);
            umadv__exec_step_wait(e);
            r->max_begin_ns = UMADV_MAX(r->max_begin_ns, umadv__now_ns() - t0);
            for (uint32_t a = 0; a < w->nallocs; a++) {
                if (w->uses[j] & (1u << a))
                    mock_kernel((uintptr_t)w->arena[a], w->trace.allocs[a].size, kernel_ns);
            }
            umadv__exec_step_end(e, NULL);
        }
        mock_stream_drain();
        r->faults[i] = mock.faults - before;
    }
}

/* The calls of the mock log as text: "F0 E0 F2" (kind, allocation);
 * "F0+F2": one batch call over both. */
static const char *calls_text(const workload_t *w, size_t from)
{
    static char buf[1024];
    size_t used = 0;

    buf[0] = '\0';
    for (size_t i = from; i < mock.ncalls && used + 8 < sizeof(buf); i++) {
        int a = -1;
        for (uint32_t k = 0; k < w->nallocs; k++) {
            if (mock.calls[i].ptr >= (uintptr_t)w->arena[k] &&
                mock.calls[i].ptr < (uintptr_t)w->arena[k] + w->trace.allocs[k].size)
                a = (int)k;
        }
        used += (size_t)snprintf(buf + used, sizeof(buf) - used, "%s%c%d%s",
                                 used == 0 ? "" : mock.calls[i].cont ? "+" : " ",
                                 mock.calls[i].kind, a, mock.calls[i].by_app ? "*" : "");
    }
    return buf;
}

/* Counters once the monitor has sampled again after the run (its data
 * still resident): on a loaded machine its thread may not have run during
 * so short a run. At most 2 s. */
static void monitor_sampled_after(umadv_exec_t *e, umadv_exec_stats_t *st)
{
    uint64_t deadline = umadv__now_ns() + UINT64_C(2000000000), samples;

    umadv__exec_get_stats(e, st);
    samples = st->gpu_samples;
    while (st->gpu_samples == samples && umadv__now_ns() < deadline) {
        sleep_ns(100000);
        umadv__exec_get_stats(e, st);
    }
}

/* ---- tests --------------------------------------------------------------- */

/* Three allocations of 2 sections, one per step; room for two. */
static const uint32_t rotate_uses[3] = {1u << 0, 1u << 1, 1u << 2};

/* Whether the lanes made the moves, each lane begun as umadv's own
 * threads are, and the application's thread not. */
static int lane_calls_begun(void)
{
    size_t lanes = 0;

    for (size_t i = 0; i < mock.ncalls; i++) {
        if (mock.calls[i].by_app || !mock.calls[i].begun)
            return 0;
        lanes++;
    }
    return lanes > 0 && !mock_begun;
}

static void test_prefetch_all_sequence(void)
{
    workload_t w;
    run_result_t r;
    umadv_exec_t *e;
    umadv_exec_stats_t st;

    workload_init(&w, 3, 2, 3, rotate_uses);
    mock_reset(4 * SEC, 10000, 10000);
    e = exec_open(&w, UMADV_POLICY_PREFETCH_ALL, 4 * SEC);
    run(&w, e, 2, 200000, &r);
    monitor_sampled_after(e, &st);
    umadv__exec_destroy(e); /* the lanes are joined: the mock is quiet */
    is_str(calls_text(&w, 0), "F0 F1 E0 F2 E1 F0 E2 F1 E0 F2",
           "prefetch-all: fetch each step's data, evict the least recently used first");
    ok(r.faults[0] == 0 && r.faults[1] == 0, "prefetch-all: no step faults");
    ok(mock.budget_violations == 0 && mock.peak <= 4 * SEC,
       "prefetch-all: the budget held in the mock (peak %llu)", (unsigned long long)mock.peak);
    ok(mock.order_violations == 0, "prefetch-all: no eviction before its data's last kernel");
    ok(mock.records == 7, "prefetch-all: the start and each of the 6 step ends recorded at "
       "once, for the next step's evictions (%d)", mock.records);
    ok(lane_calls_begun(), "every move made on the lanes' threads, each begun (its capture mode "
       "relaxed, cuda_ops.h), and none on the application's, which is not");
    ok(st.fetch_calls == 6 && st.evict_calls == 4 && st.fetched_bytes == 12 * SEC &&
       st.evicted_bytes == 8 * SEC, "prefetch-all: stats count calls and bytes");
    ok(st.gpu_peak_used > 0 && st.gpu_peak_used <= 4 * SEC && st.gpu_samples > 0,
       "the monitor sampled gpu memory: peak %llu within the budget",
       (unsigned long long)st.gpu_peak_used);
    workload_cleanup(&w);
}

static void test_demand_sequence(void)
{
    workload_t w;
    run_result_t r;
    umadv_exec_t *e;

    workload_init(&w, 3, 2, 3, rotate_uses);
    mock_reset(4 * SEC, 10000, 10000);
    e = exec_open(&w, UMADV_POLICY_DEMAND, 4 * SEC);
    run(&w, e, 2, 200000, &r);
    umadv__exec_destroy(e);
    is_str(calls_text(&w, 0), "E0 E1 E2 E0",
           "demand: no prefetch, LRU evictions before the steps that need room");
    ok(r.faults[0] == 6 && r.faults[1] == 6, "demand: every section faults (%llu, %llu)",
       (unsigned long long)r.faults[0], (unsigned long long)r.faults[1]);
    ok(mock.budget_violations == 0, "demand: faulted data stayed within the budget");
    ok(mock.order_violations == 0, "demand: evictions after the kernels");
    workload_cleanup(&w);
}

static void test_oracle(void)
{
    workload_t w;
    run_result_t r;
    umadv_exec_t *e;

    workload_init(&w, 3, 2, 3, rotate_uses);
    mock_reset(0, 10000, 10000);
    e = exec_open(&w, UMADV_POLICY_ORACLE, 4 * SEC); /* the budget is ignored */
    run(&w, e, 2, 100000, &r);
    umadv__exec_destroy(e);
    is_str(calls_text(&w, 0), "F0+F1+F2",
           "oracle: everything fetched once, in one batch call, never evicted");
    ok(r.faults[0] == 0 && r.faults[1] == 0, "oracle: no faults");
    ok(mock.records == 0, "oracle: no step end recorded (%d)", mock.records);
    workload_cleanup(&w);
}

/* The planner's schedule for A B C A B C ... under room for two. */
static void test_plan_policy(void)
{
    workload_t w;
    run_result_t r;
    umadv_plan_params_t pp;
    umadv_exec_t *e;
    umadv_exec_stats_t st;

    workload_init(&w, 3, 2, 3, rotate_uses);
    umadv__plan_params_default(&w.trace, 4 * SEC, &pp);
    pp.iteration = 0;
    w.have_schedule = umadv__plan_build(&w.trace, &pp, &w.schedule) == UMADV_OK;
    ok(w.have_schedule, "planner: a schedule for the rotating workload");
    if (!w.have_schedule) {
        skip("no schedule", "plan: replay");
        skip("no schedule", "plan: budget");
        skip("no schedule", "plan: order");
        skip("no schedule", "plan: stats");
        workload_cleanup(&w);
        return;
    }
    mock_reset(4 * SEC, 20000, 20000);
    e = exec_open(&w, UMADV_POLICY_PLAN, 4 * SEC);
    run(&w, e, 4, 400000, &r);
    umadv__exec_get_stats(e, &st);
    umadv__exec_destroy(e); /* next-iteration fetches may still be running until here */
    ok(r.faults[1] == 0 && r.faults[2] == 0 && r.faults[3] == 0,
       "plan: no fault in steady state (%llu %llu %llu %llu)",
       (unsigned long long)r.faults[0], (unsigned long long)r.faults[1],
       (unsigned long long)r.faults[2], (unsigned long long)r.faults[3]);
    ok(mock.budget_violations == 0 && mock.peak <= 4 * SEC,
       "plan: the budget held in the mock (peak %llu)", (unsigned long long)mock.peak);
    ok(mock.order_violations == 0, "plan: no eviction before its data's last kernel");
    ok(st.drift_ops == 0 && st.wait_timeouts == 0 && st.cuda_errors == 0,
       "plan: no drift, no timeout, no error; calls: %s", calls_text(&w, 0));
    workload_cleanup(&w);
}

/* A hand-written schedule: at the end of step 0, evict A (slowly); step
 * 1 fetches B, which has room regardless. */
/* @ops, in issue order, as @w's schedule in @s. */
static void schedule_build(const workload_t *w, umadv_schedule_t *s, const umadv_op_t *ops,
                           size_t nops)
{
    memset(s, 0, sizeof(*s));
    s->nsteps = w->nsteps;
    s->ops = malloc(nops * sizeof(*ops));
    memcpy(s->ops, ops, nops * sizeof(*ops));
    s->nops = nops;
    s->step_ops = calloc(w->nsteps + 1, sizeof(*s->step_ops));
    for (size_t i = 0; i < nops; i++)
        s->step_ops[ops[i].issue_step + 1]++;
    for (uint32_t j = 0; j < w->nsteps; j++)
        s->step_ops[j + 1] += s->step_ops[j];
    s->resident_at_start = calloc(w->trace.nsections, 1);
    for (size_t i = 0; i < nops; i++)
        s->advise_ops += ops[i].kind == UMADV_OP_ADVISE;
}

static void hand_schedule(workload_t *w, const umadv_op_t *ops, size_t nops)
{
    schedule_build(w, &w->schedule, ops, nops);
    w->have_schedule = 1;
}

static void test_app_never_waits_for_eviction(void)
{
    static const uint32_t uses[2] = {1u << 0, 1u << 1};
    const umadv_op_t ops[] = {
        {.kind = UMADV_OP_FETCH, .alloc = 0, .count = 4, .issue_step = 0, .need_step = 0},
        {.kind = UMADV_OP_EVICT, .alloc = 0, .count = 4, .issue_step = 0, .need_step = 0},
        {.kind = UMADV_OP_FETCH, .alloc = 1, .count = 4, .issue_step = 1, .need_step = 1},
    };
    workload_t w;
    umadv_exec_t *e;
    uint64_t t0, waited;
    int evicting;

    workload_init(&w, 2, 4, 2, uses);
    hand_schedule(&w, ops, UMADV_ARRAY_SIZE(ops));
    mock_reset(0, 5000, 50000000); /* eviction: 200 ms for A */
    e = exec_open(&w, UMADV_POLICY_PLAN, 0);
    umadv__exec_iteration_begin(e);
    umadv__exec_step_begin(e);
    umadv__exec_step_wait(e);
    mock_kernel((uintptr_t)w.arena[0], 4 * SEC, 1000000);
    umadv__exec_step_end(e, NULL);
    t0 = umadv__now_ns();
    umadv__exec_step_begin(e);
    umadv__exec_step_wait(e);
    waited = umadv__now_ns() - t0;
    /* the lane may start late on a loaded machine: up to 150 ms of A's 200 */
    do {
        usleep(5000);
        pthread_mutex_lock(&mock.lock);
        evicting = mock.evicting;
        pthread_mutex_unlock(&mock.lock);
    } while (evicting == 0 && umadv__now_ns() - t0 < 150000000);
    ok(waited < 50000000 && evicting == 1,
       "step 1 waited %.1f ms for its fetch while A's 200 ms eviction ran",
       (double)waited * 1e-6);
    umadv__exec_step_end(e, NULL);
    t0 = umadv__now_ns();
    umadv__exec_destroy(e);
    ok(umadv__now_ns() - t0 > 100000000 && mock.evicting == 0 && mock.in_flight == 0,
       "destroy with an eviction in flight lets it complete");
    ok(mock.order_violations == 0 && mock.ncalls == 3 &&
       mock.calls[2].start_ns >= mock.calls[0].end_ns + 1000000 - 200000,
       "the eviction started after step 0's kernel, not before");
    ok(mock.records == 1, "plan: only the step end an eviction waits for is recorded, not the "
       "start nor step 1's end (%d)", mock.records);
    ok(mock.streams == 0 && mock.events == 0, "no stream or event left behind");
    workload_cleanup(&w);
}

/* A hold (umadv__exec_hold) stands for a reader umadv does not see, an
 * NCCL collective on its own stream: A's eviction, due at step 0's end,
 * waits for the hold's event (done 40 ms later), and the application's
 * next step does not. */
static void test_hold(void)
{
    static const uint32_t uses[2] = {1u << 0, 1u << 1};
    const umadv_op_t ops[] = {
        {.kind = UMADV_OP_FETCH, .alloc = 0, .count = 2, .issue_step = 0, .need_step = 0},
        {.kind = UMADV_OP_EVICT, .alloc = 0, .count = 2, .issue_step = 0, .need_step = 1},
        {.kind = UMADV_OP_FETCH, .alloc = 1, .count = 2, .issue_step = 1, .need_step = 1},
    };
    workload_t w;
    umadv_exec_t *e;
    umadv_exec_stats_t st;
    umadv_event_t hold;
    uint64_t done, t0, waited;
    size_t evict = MAX_CALLS;

    workload_init(&w, 2, 2, 2, uses);
    hand_schedule(&w, ops, UMADV_ARRAY_SIZE(ops));
    mock_reset(0, 5000, 5000);
    mock_ops.event_create(&hold);
    e = exec_open(&w, UMADV_POLICY_PLAN, 0);
    umadv__exec_iteration_begin(e);
    umadv__exec_step_begin(e);
    umadv__exec_step_wait(e);
    mock_kernel((uintptr_t)w.arena[0], 2 * SEC, 200000);
    done = umadv__now_ns() + 40000000;
    ((mock_event_t *)hold)->done_ns = done; /* the collective's end */
    umadv__exec_hold(e, 0, hold);
    umadv__exec_hold(e, 7, hold); /* no such allocation: ignored */
    umadv__exec_step_end(e, NULL);
    t0 = umadv__now_ns();
    umadv__exec_step_begin(e);
    umadv__exec_step_wait(e);
    waited = umadv__now_ns() - t0;
    umadv__exec_step_end(e, NULL);
    mock_stream_drain();
    umadv__exec_drain(e);
    umadv__exec_get_stats(e, &st);
    umadv__exec_destroy(e);
    for (size_t i = 0; i < mock.ncalls; i++)
        if (mock.calls[i].kind == 'E')
            evict = i;
    ok(evict < MAX_CALLS && mock.calls[evict].start_ns >= done,
       "the held block's eviction was issued after its hold completed");
    ok(waited < 20000000, "the next step did not wait for the hold (%.1f ms)",
       (double)waited * 1e-6);
    ok(st.held_evictions == 1 && st.hold_wait_ns > 20000000,
       "stats: %llu held eviction, %.1f ms waited", (unsigned long long)st.held_evictions,
       (double)st.hold_wait_ns * 1e-6);
    mock_ops.event_destroy(hold);
    ok(mock.streams == 0 && mock.events == 0, "hold: no stream or event left behind");
    workload_cleanup(&w);
}

/* Adjacent blocks of one arena fetched for the same step: one call. */
static void test_coalescing(void)
{
    static const uint32_t uses[1] = {0x7};
    const umadv_op_t ops[] = {
        {.kind = UMADV_OP_FETCH, .alloc = 0, .count = 2, .issue_step = 0, .need_step = 0},
        {.kind = UMADV_OP_FETCH, .alloc = 1, .count = 2, .issue_step = 0, .need_step = 0},
        {.kind = UMADV_OP_FETCH, .alloc = 2, .count = 2, .issue_step = 0, .need_step = 0},
    };
    workload_t w;
    umadv_exec_t *e;
    umadv_exec_params_t p;
    char *arena;

    workload_init(&w, 3, 2, 1, uses);
    hand_schedule(&w, ops, UMADV_ARRAY_SIZE(ops));
    mock_reset(0, 5000, 5000);
    p = exec_params(&w, UMADV_POLICY_PLAN, 0);
    umadv__exec_create(&p, &e);
    /* blocks 0 and 1 side by side in one arena, block 2 in another */
    mock_ops.malloc_managed(4 * SEC, SEC, (void **)&arena);
    for (int s = 0; s < 4; s++)
        mock.chunk[mock.nchunks++] = (uintptr_t)arena + (uintptr_t)s * SEC;
    umadv__exec_bind(e, 0, arena, 2 * SEC, arena, 0);
    umadv__exec_bind(e, 1, arena + 2 * SEC, 2 * SEC, arena, 0);
    umadv__exec_bind(e, 2, w.arena[2], 2 * SEC, w.arena[2], 0);
    umadv__exec_start(e, NULL);
    umadv__exec_iteration_begin(e);
    umadv__exec_step_begin(e);
    umadv__exec_step_wait(e);
    ok(mock.ncalls == 2 && mock.calls[0].ptr == (uintptr_t)arena &&
       mock.calls[0].len == 4 * SEC && mock.calls[1].ptr == (uintptr_t)w.arena[2] &&
       mock.calls[1].cont && mock.calls[0].batch == 2,
       "three fetches, one batch call of two ranges: adjacent blocks of one arena "
       "coalesced (%zu ranges)", mock.ncalls);
    umadv__exec_step_end(e, NULL);
    umadv__exec_destroy(e);
    mock_ops.free(arena, 4 * SEC);
    workload_cleanup(&w);
}

/* At trace level the executor says which block plays which profiled
 * allocation, from when to when (umadv(7), UMADV_LOG). */
static void test_trace_lines(void)
{
    static const uint32_t uses[1] = {0x1};
    const umadv_op_t ops[] = {
        {.kind = UMADV_OP_FETCH, .alloc = 0, .count = 2, .issue_step = 0, .need_step = 0},
    };
    umadv_log_level_t level = umadv__log_level;
    workload_t w;
    umadv_exec_t *e;
    umadv_exec_params_t p;
    char want[128];
    const char *log;

    workload_init(&w, 1, 2, 1, uses);
    hand_schedule(&w, ops, UMADV_ARRAY_SIZE(ops));
    mock_reset(0, 5000, 5000);
    p = exec_params(&w, UMADV_POLICY_PLAN, 0);
    umadv__exec_create(&p, &e);
    log_take();
    umadv__log_level = UMADV_LOG_TRACE;
    umadv__exec_bind(e, 0, w.arena[0], 2 * SEC, w.arena[0], 0);
    umadv__exec_unbind(e, 0);
    umadv__log_level = level;
    log = log_take();
    snprintf(want, sizeof(want), "executor: alloc 0 bound to [%p, +%llu) at iteration 0 step 0",
             w.arena[0], (unsigned long long)(2 * SEC));
    ok(strstr(log, want) != NULL, "a binding is logged with its range");
    snprintf(want, sizeof(want), "executor: alloc 0 unbound from [%p, +%llu), dead", w.arena[0],
             (unsigned long long)(2 * SEC));
    ok(strstr(log, want) != NULL, "and its end");
    umadv__exec_destroy(e);
    workload_cleanup(&w);
}

/* The application's copy into a block whose sections are not resident
 * (a batch copied into a block just bound): that part is prefetched to
 * the GPU on the caller's thread before the copy; resident sections and
 * memory outside bound blocks are left alone. */
static void test_app_write(void)
{
    static const uint32_t uses[1] = {0x3};
    workload_t w;
    umadv_exec_t *e;
    umadv_exec_params_t p;
    umadv_exec_stats_t st;
    char *a, *b;
    int host;

    workload_init(&w, 2, 4, 1, uses);
    mock_reset(0, 5000, 5000);
    p = exec_params(&w, UMADV_POLICY_PREFETCH_ALL, 0);
    umadv__exec_create(&p, &e);
    mock_ops.malloc_managed(8 * SEC, SEC, (void **)&a); /* two blocks side by side */
    b = a + 4 * SEC;
    umadv__exec_bind(e, 0, a, 4 * SEC, a, 0);
    umadv__exec_bind(e, 1, b, 4 * SEC, a, 1); /* resident */
    umadv__exec_app_write(e, a + SEC / 2, 2 * SEC);
    ok(mock.ncalls == 1 && mock.calls[0].kind == 'F' &&
       mock.calls[0].ptr == (uintptr_t)(a + SEC / 2) && mock.calls[0].len == 2 * SEC &&
       mock.calls[0].by_app && mock.calls[0].location == 0,
       "a copy into a block on the host: the copy's range prefetched to the GPU first, "
       "on the copying thread");
    umadv__exec_app_write(e, b, 4 * SEC);
    umadv__exec_app_write(e, &host, sizeof(host));
    ok(mock.ncalls == 1, "into resident sections or memory outside bound blocks: no call");
    mock.ncalls = 0;
    umadv__exec_app_write(e, a + 3 * SEC, 2 * SEC);
    ok(mock.ncalls == 1 && mock.calls[0].ptr == (uintptr_t)(a + 3 * SEC) &&
       mock.calls[0].len == SEC, "a copy over two blocks: only the part not resident");
    umadv__exec_get_stats(e, &st);
    is(st.app_placed_bytes, 3 * SEC, "counted as placed before the application's copies");
    mock.ncalls = 0;
    e->binds[0].advised = 1u << UMADV_ADVICE_PREFERRED_HOST; /* as the plan's setup advice */
    umadv__exec_app_write(e, a, SEC);
    e->binds[0].advised = 0;
    ok(mock.ncalls == 0, "a block under advice is left where its advice puts it");
    mock.fail_at = 1;
    mock.prefetches = 0;
    umadv__exec_app_write(e, a, SEC);
    umadv__exec_app_write(e, a + SEC, SEC);
    ok(e->broken && mock.ncalls == 0, "a failed prefetch breaks the executor: nothing after");
    umadv__exec_destroy(e);
    mock_ops.free(a, 8 * SEC);
    workload_cleanup(&w);
}

/* A block unbound (freed) or never bound: its ops are drift. */
static void test_drift_and_timeout(void)
{
    static const uint32_t uses[1] = {0x3};
    const umadv_op_t ops[] = {
        {.kind = UMADV_OP_FETCH, .alloc = 0, .count = 2, .issue_step = 0, .need_step = 0},
        {.kind = UMADV_OP_FETCH, .alloc = 1, .count = 2, .issue_step = 0, .need_step = 0},
    };
    workload_t w;
    umadv_exec_t *e;
    umadv_exec_params_t p;
    umadv_exec_stats_t st;
    uint64_t t0;

    workload_init(&w, 2, 2, 1, uses);
    hand_schedule(&w, ops, UMADV_ARRAY_SIZE(ops));
    mock_reset(0, 100000000, 5000); /* 200 ms per fetch */
    p = exec_params(&w, UMADV_POLICY_PLAN, 0);
    p.wait_timeout_ns = 30000000;
    umadv__exec_create(&p, &e);
    umadv__exec_bind(e, 0, w.arena[0], 2 * SEC, w.arena[0], 0);
    is(umadv__exec_bind(e, 1, w.arena[1], SEC, w.arena[1], 0), UMADV_ERR_INVALID_PARAM,
       "binding a block of another size is refused");
    umadv__exec_iteration_begin(e);
    log_take();
    t0 = umadv__now_ns();
    umadv__exec_step_begin(e);
    umadv__exec_step_wait(e);
    t0 = umadv__now_ns() - t0;
    umadv__exec_get_stats(e, &st);
    ok(st.drift_ops == 1, "the op on the unbound allocation is skipped as drift");
    ok(t0 >= 30000000 && t0 < 150000000 && st.wait_timeouts == 1,
       "a fetch slower than the timeout: the step went on after %.0f ms",
       (double)t0 * 1e-6);
    ok(strstr(log_take(), "still waits for its data") != NULL, "and said so");
    umadv__exec_step_end(e, NULL);
    umadv__exec_destroy(e);
    workload_cleanup(&w);
}

/* A failing prefetch: logged, the executor stops issuing, steps go on. */
static void test_cuda_error(void)
{
    workload_t w;
    run_result_t r;
    umadv_exec_t *e;
    umadv_exec_stats_t st;
    size_t calls;

    workload_init(&w, 3, 2, 3, rotate_uses);
    mock_reset(4 * SEC, 10000, 10000);
    mock.fail_at = 2;
    log_take();
    e = exec_open(&w, UMADV_POLICY_PREFETCH_ALL, 4 * SEC);
    run(&w, e, 2, 100000, &r);
    umadv__exec_get_stats(e, &st);
    pthread_mutex_lock(&mock.lock);
    calls = mock.ncalls;
    pthread_mutex_unlock(&mock.lock);
    ok(umadv__exec_broken(e) && st.cuda_errors == 1, "a failed prefetch breaks the executor");
    ok(calls == 1, "nothing is issued after the failure (%zu calls)", calls);
    ok(r.faults[0] == 4 && r.faults[1] == 0 && st.wait_timeouts == 0,
       "the application runs on, faulting its data in, without waiting (%llu, %llu)",
       (unsigned long long)r.faults[0], (unsigned long long)r.faults[1]);
    ok(strstr(log_take(), "plain managed memory") != NULL, "the degradation is logged");
    umadv__exec_destroy(e);
    workload_cleanup(&w);
}

/* Faults above the threshold in steady state ask for a re-profile. */
static void test_reprofile_request(void)
{
    workload_t w;
    umadv_exec_t *e;
    umadv_exec_params_t p;
    int first, quiet, due;

    workload_init(&w, 3, 2, 3, rotate_uses);
    mock_reset(0, 1000, 1000);
    p = exec_params(&w, UMADV_POLICY_ORACLE, 0);
    p.reprofile_faults = 10;
    umadv__exec_create(&p, &e);
    umadv__exec_iteration_begin(e);
    umadv__exec_note_faults(e, 100);
    first = umadv__exec_iteration_begin(e);
    umadv__exec_note_faults(e, 10);
    quiet = umadv__exec_iteration_begin(e);
    umadv__exec_note_faults(e, 11);
    log_take();
    umadv__log_level = UMADV_LOG_INFO;
    due = umadv__exec_iteration_begin(e);
    umadv__log_level = UMADV_LOG_WARN;
    ok(!first && !quiet && due,
       "re-profile only in steady state and above the threshold (%d %d %d)", first, quiet,
       due);
    ok(strstr(log_take(), "11 unexpected gpu faults") != NULL, "logged at info with the count");
    umadv__exec_destroy(e);
    workload_cleanup(&w);
}

/* Whether @alloc starts resident, all of it, once bound at @base. */
static int bound_resident(umadv_exec_t *e, workload_t *w, uint32_t alloc, void *base)
{
    uint64_t size = w->trace.allocs[alloc].size;
    umadv_exec_stats_t before, after;

    umadv__exec_get_stats(e, &before);
    umadv__exec_bind(e, alloc, base, size, base, 0);
    umadv__exec_get_stats(e, &after);
    return after.resident == before.resident + size;
}

/* A block bound where a fetch left pages on the GPU starts resident (the
 * pool reuses freed blocks); where an eviction took them, or with the
 * budget full, it starts on the host. */
static void test_pages_reused(void)
{
    static const uint32_t uses[2] = {1u << 0, 1u << 1};
    workload_t w;
    run_result_t r;
    umadv_exec_t *e;
    int on_gpu, on_host, no_room;

    workload_init(&w, 2, 2, 2, uses);
    mock_reset(2 * SEC, 10000, 10000);
    e = exec_open(&w, UMADV_POLICY_PREFETCH_ALL, 2 * SEC);
    run(&w, e, 1, 100000, &r); /* A fetched, evicted for B; B fetched */
    is_str(calls_text(&w, 0), "F0 E0 F1", "A fetched, evicted for B, B fetched");
    umadv__exec_unbind(e, 0);
    umadv__exec_unbind(e, 1);
    on_host = bound_resident(e, &w, 1, w.arena[0]);
    umadv__exec_unbind(e, 1);
    on_gpu = bound_resident(e, &w, 0, w.arena[1]);
    no_room = bound_resident(e, &w, 1, w.arena[1]);
    ok(on_gpu && !on_host, "bound where B's fetch left pages: resident; where A was "
       "evicted from: not");
    ok(!no_room, "the budget full: a block over pages on the GPU starts on the host");
    umadv__exec_destroy(e);
    workload_cleanup(&w);
}

/* Demand faults by design: however many, they never ask for a profile. */
static void test_reprofile_not_demand(void)
{
    workload_t w;
    umadv_exec_t *e;
    umadv_exec_params_t p;
    int due = 0;

    workload_init(&w, 3, 2, 3, rotate_uses);
    mock_reset(0, 1000, 1000);
    p = exec_params(&w, UMADV_POLICY_DEMAND, 4 * SEC);
    p.reprofile_faults = 10;
    umadv__exec_create(&p, &e);
    for (int it = 0; it < 4; it++) {
        due |= umadv__exec_iteration_begin(e);
        umadv__exec_note_faults(e, 1000);
    }
    ok(!due, "demand: 1000 faults per iteration never ask for a re-profile");
    umadv__exec_destroy(e);
    workload_cleanup(&w);
}


/* ---- host placement advice (plan.h, ADVISE) ----------------------------- */

/* The first mock call of @kind with @advice on [ptr, ptr+len); its
 * index, or -1. */
static long find_advice(char kind, int advice, uintptr_t ptr, uint64_t len)
{
    for (size_t i = 0; i < mock.ncalls; i++) {
        const mock_call_t *c = &mock.calls[i];
        if (c->kind == kind && c->advice == advice && c->ptr == ptr && c->len == len)
            return (long)i;
    }
    return -1;
}

static int advice_on_whole(const workload_t *w, uint32_t alloc, size_t ncalls)
{
    for (size_t i = 0; i < ncalls; i++) {
        if ((mock.calls[i].kind == 'S' || mock.calls[i].kind == 'U') &&
            mock.calls[i].len == w->trace.allocs[alloc].size)
            return 1;
    }
    return 0;
}

static long find_fetch(uintptr_t ptr, size_t ncalls)
{
    for (size_t i = 0; i < ncalls; i++) {
        if (mock.calls[i].kind == 'F' && mock.calls[i].ptr == ptr)
            return (long)i;
    }
    return -1;
}

/* Replay the advice workload's three steps; step 1's kernel runs 40 ms
 * after its step_end returned. */
static void advice_replay(umadv_exec_t *e, uintptr_t base, uint64_t *launch1_p,
                          uint64_t *kernel1_end_p)
{
    umadv__exec_iteration_begin(e);
    for (uint32_t j = 0; j < 3; j++) {
        umadv__exec_step_begin(e);
        umadv__exec_step_wait(e);
        if (j == 1)
            *launch1_p = umadv__now_ns();
        mock_kernel(base, 4 * SEC, j == 1 ? 40000000 : 1000000);
        if (j == 1)
            *kernel1_end_p = mock.stream_busy_until;
        umadv__exec_step_end(e, NULL);
    }
    mock_stream_drain();
}

/* One allocation of 4 sections. Setup: section 3 placed on the host for
 * good. Step 1 accesses sections 1-2 remotely: the pair at its start,
 * NONE at its end; step 2 fetches them. The unsets, and the fetch behind
 * them, must wait for step 1's work. */
static void test_advice_ranges(void)
{
    static const uint32_t uses[3] = {1u, 1u, 1u};
    const umadv_op_t ops[] = {
        {.kind = UMADV_OP_ADVISE, .advice = UMADV_ADVICE_PREFERRED_HOST, .alloc = 0,
         .first = 1, .count = 2, .issue_step = 1, .need_step = 1},
        {.kind = UMADV_OP_ADVISE, .advice = UMADV_ADVICE_ACCESSED_BY, .alloc = 0,
         .first = 1, .count = 2, .issue_step = 1, .need_step = 1},
        {.kind = UMADV_OP_ADVISE, .advice = UMADV_ADVICE_NONE, .alloc = 0,
         .first = 1, .count = 2, .issue_step = 1, .need_step = 1},
        {.kind = UMADV_OP_FETCH, .alloc = 0, .first = 1, .count = 2, .issue_step = 2,
         .need_step = 2},
    };
    umadv_op_t setup[2] = {
        {.kind = UMADV_OP_ADVISE, .advice = UMADV_ADVICE_PREFERRED_HOST, .first = 3, .count = 1},
        {.kind = UMADV_OP_ADVISE, .advice = UMADV_ADVICE_ACCESSED_BY, .first = 3, .count = 1},
    };
    workload_t w;
    umadv_exec_t *e;
    uintptr_t base, run;
    uint64_t launch1 = 0, kernel1_end = 0;
    long set_pref, set_acc, unset_pref, unset_acc, fetch, setup_pref, setup_acc, late;
    size_t ncalls;

    workload_init(&w, 1, 4, 3, uses);
    hand_schedule(&w, ops, UMADV_ARRAY_SIZE(ops));
    w.schedule.setup = setup;
    w.schedule.nsetup = 2;
    mock_reset(0, 1000, 1000);
    e = exec_open(&w, UMADV_POLICY_PLAN, 0);
    base = (uintptr_t)w.arena[0];
    run = base + SEC;
    advice_replay(e, base, &launch1, &kernel1_end);
    pthread_mutex_lock(&mock.lock);
    ncalls = mock.ncalls;
    pthread_mutex_unlock(&mock.lock);
    setup_pref = find_advice('S', UMADV_CUDA_ADVISE_SET_PREFERRED_LOCATION, base + 3 * SEC, SEC);
    setup_acc = find_advice('S', UMADV_CUDA_ADVISE_SET_ACCESSED_BY, base + 3 * SEC, SEC);
    set_pref = find_advice('S', UMADV_CUDA_ADVISE_SET_PREFERRED_LOCATION, run, 2 * SEC);
    set_acc = find_advice('S', UMADV_CUDA_ADVISE_SET_ACCESSED_BY, run, 2 * SEC);
    unset_pref = find_advice('U', UMADV_CUDA_ADVISE_UNSET_PREFERRED_LOCATION, run, 2 * SEC);
    unset_acc = find_advice('U', UMADV_CUDA_ADVISE_UNSET_ACCESSED_BY, run, 2 * SEC);
    late = find_advice('U', UMADV_CUDA_ADVISE_UNSET_PREFERRED_LOCATION, base + 3 * SEC, SEC);
    fetch = find_fetch(run, ncalls);
    ok(setup_pref >= 0 && setup_acc >= 0 &&
       mock.calls[setup_pref].location == UMADV_CUDA_LOCATION_HOST &&
       mock.calls[setup_acc].location == 0 && late < 0,
       "setup: host placement of section 3 alone, never reverted in replay");
    ok(set_pref >= 0 && set_acc >= 0 &&
       mock.calls[set_pref].location == UMADV_CUDA_LOCATION_HOST &&
       mock.calls[set_acc].location == 0 && !advice_on_whole(&w, 0, ncalls),
       "the pair is set on the op's run (sections 1-2), not on the allocation: %s",
       calls_text(&w, 0));
    ok(set_pref >= 0 && set_acc >= 0 && mock.calls[set_pref].end_ns <= launch1 &&
       mock.calls[set_acc].end_ns <= launch1, "the sets precede step 1's work");
    ok(unset_pref >= 0 && unset_acc >= 0 && mock.calls[unset_acc].location == 0,
       "NONE unsets preferred location and accessed-by on the run");
    ok(unset_pref >= 0 && unset_acc >= 0 && mock.calls[unset_pref].start_ns >= kernel1_end &&
       mock.calls[unset_acc].start_ns >= kernel1_end,
       "the unsets wait for step 1's work to complete");
    ok(fetch >= 0 && unset_acc >= 0 &&
       mock.calls[fetch].start_ns >= mock.calls[unset_acc].end_ns,
       "step 2's fetch of the run waits for the unsets");
    umadv__exec_destroy(e);
    w.schedule.setup = NULL; /* on the stack */
    w.schedule.nsetup = 0;
    workload_cleanup(&w);
}

/* ---- batches (plan.h, BATCHES) ------------------------------------------ */

/* Four allocations in arenas of their own, all fetched for step 0: runs
 * of 0 and 2 copy one section (small: the limit is 100 kB), 1 is FRESH
 * (populated per range whatever the call), 3 copies two sections. */
static const char *batch_run(int with_batch, int on_stream, umadv_exec_stats_t *st)
{
    static const uint32_t uses[1] = {0xf};
    const umadv_op_t ops[] = {
        {.kind = UMADV_OP_FETCH, .alloc = 0, .count = 1},
        {.kind = UMADV_OP_FETCH, .alloc = 1, .count = 2, .flags = UMADV_OP_FLAG_FRESH},
        {.kind = UMADV_OP_FETCH, .alloc = 2, .count = 1},
        {.kind = UMADV_OP_FETCH, .alloc = 3, .count = 2},
    };
    workload_t w;
    umadv_exec_t *e;
    const char *text;

    workload_init(&w, 4, 2, 1, uses);
    w.trace.link.fetch_latency = 1e-4; /* small: up to 100000 bytes */
    w.trace.link.fetch_bw = 1e9;
    hand_schedule(&w, ops, UMADV_ARRAY_SIZE(ops));
    /* on the step's stream: the lane's batch is slow, so that the step's
     * thread finds the fresh run still queued */
    mock_reset(0, on_stream ? 20000000 : 1000, 1000);
    mock_ops.prefetch_batch = with_batch ? mock_prefetch_batch : NULL;
    e = exec_open(&w, UMADV_POLICY_PLAN, 0);
    umadv__exec_iteration_begin(e);
    umadv__exec_step_begin(e);
    if (on_stream)
        umadv__exec_step_wait_on(e, STEP_STREAM);
    else
        umadv__exec_step_wait(e);
    umadv__exec_step_end(e, NULL);
    umadv__exec_get_stats(e, st);
    umadv__exec_destroy(e);
    mock_ops.prefetch_batch = mock_prefetch_batch;
    text = calls_text(&w, 0);
    workload_cleanup(&w);
    return text;
}

static void test_fresh_batch(void)
{
    umadv_exec_stats_t st;

    is_str(batch_run(1, 0, &st), "F0+F2 F1 F3",
           "the step's small copies go in one batch call; fresh and large runs alone");
    ok(st.fetch_calls == 3 && st.batch_calls == 1 && st.fresh_bytes == 2 * SEC &&
       st.fetched_bytes == 4 * SEC,
       "stats: 3 calls, 1 batch, fresh and copied bytes apart (%llu %llu %llu %llu)",
       (unsigned long long)st.fetch_calls, (unsigned long long)st.batch_calls,
       (unsigned long long)st.fresh_bytes, (unsigned long long)st.fetched_bytes);
    is_str(batch_run(0, 0, &st), "F0 F1 F2 F3", "no batch entry: one call per run");
    ok(st.fetch_calls == 4 && st.batch_calls == 0, "and no batch counted");
}

/* Waiting with the step's stream known: the fresh run is populated by
 * the waiting thread, on that stream; the copies stay the lane's. */
static void test_fresh_on_step_stream(void)
{
    umadv_exec_stats_t st;
    const char *text = batch_run(1, 1, &st);
    int on_stream = 0, by_app = 0;

    for (size_t i = 0; i < mock.ncalls; i++) {
        by_app += mock.calls[i].by_app;
        on_stream += mock.calls[i].by_app && mock.calls[i].stream == STEP_STREAM;
    }
    ok((strncmp(text, "F1* ", 4) == 0 || strstr(text, " F1* ") != NULL) && by_app == 1 &&
       on_stream == 1, "the fresh run is populated by the step's thread, on the step's stream: %s",
       text);
    ok(strstr(text, "F0+F2") != NULL && strstr(text, "F3") != NULL && st.fetch_calls == 3 &&
       st.batch_calls == 1 && st.fresh_bytes == 2 * SEC && st.fetched_bytes == 4 * SEC,
       "the copies are the lane's, in one batch; bytes and calls counted as before");
}

/* Under a budgeted plan a block bound over pages a freed one left on the
 * GPU starts on the host, as the schedule counts it, and its fresh fetch
 * counts it in without a call; unbudgeted, it starts resident. */
static void fresh_over_left_pages(uint64_t budget, uint64_t *bound_p, size_t *calls_p,
                                  umadv_exec_stats_t *st)
{
    static const uint32_t uses[1] = {0x3};
    const umadv_op_t ops[] = {
        {.kind = UMADV_OP_FETCH, .alloc = 0, .count = 2},
        {.kind = UMADV_OP_FETCH, .alloc = 1, .count = 2, .flags = UMADV_OP_FLAG_FRESH},
    };
    workload_t w;
    umadv_exec_t *e;
    size_t before;

    workload_init(&w, 2, 2, 1, uses);
    hand_schedule(&w, ops, UMADV_ARRAY_SIZE(ops));
    mock_reset(0, 1000, 1000);
    e = exec_open(&w, UMADV_POLICY_PLAN, budget);
    umadv__exec_iteration_begin(e);
    umadv__exec_step_begin(e);
    umadv__exec_step_wait_on(e, STEP_STREAM);
    umadv__exec_step_end(e, NULL);
    /* the pool hands each block the other's memory */
    umadv__exec_unbind(e, 0);
    umadv__exec_unbind(e, 1);
    umadv__exec_bind(e, 1, w.arena[0], w.trace.allocs[1].size, w.arena[0], 0);
    umadv__exec_bind(e, 0, w.arena[1], w.trace.allocs[0].size, w.arena[1], 0);
    umadv__exec_get_stats(e, st);
    *bound_p = st->resident;
    before = mock.ncalls;
    umadv__exec_iteration_begin(e);
    umadv__exec_step_begin(e);
    umadv__exec_step_wait_on(e, STEP_STREAM);
    umadv__exec_step_end(e, NULL);
    *calls_p = mock.ncalls - before;
    umadv__exec_get_stats(e, st);
    umadv__exec_destroy(e);
    workload_cleanup(&w);
}

/* The same, the fresh fetch issued a step ahead and made by the fetch
 * lane (drained before its step begins): over pages the record holds on
 * the GPU it is counted in without a call; a prefetch over resident
 * pages holds the lane's stream (schedule/pages.c). Returns the calls of the
 * second iteration. */
static size_t lane_fresh_over_left_pages(umadv_exec_stats_t *st)
{
    static const uint32_t uses[2] = {0x1, 0x2};
    const umadv_op_t ops[] = {
        {.kind = UMADV_OP_FETCH, .alloc = 0, .count = 2},
        {.kind = UMADV_OP_FETCH, .alloc = 1, .count = 2, .need_step = 1,
         .flags = UMADV_OP_FLAG_FRESH},
    };
    workload_t w;
    umadv_exec_t *e;
    size_t before = 0;

    workload_init(&w, 2, 2, 2, uses);
    hand_schedule(&w, ops, UMADV_ARRAY_SIZE(ops));
    mock_reset(0, 1000, 1000);
    e = exec_open(&w, UMADV_POLICY_PLAN, 4 * SEC);
    for (int it = 0; it < 2; it++) {
        if (it == 1) { /* the pool hands each block the other's memory */
            umadv__exec_unbind(e, 0);
            umadv__exec_unbind(e, 1);
            umadv__exec_bind(e, 1, w.arena[0], w.trace.allocs[1].size, w.arena[0], 0);
            umadv__exec_bind(e, 0, w.arena[1], w.trace.allocs[0].size, w.arena[1], 0);
            before = mock.ncalls;
        }
        umadv__exec_iteration_begin(e);
        for (int step = 0; step < 2; step++) {
            umadv__exec_step_begin(e);
            umadv__exec_step_wait_on(e, STEP_STREAM);
            umadv__exec_step_end(e, NULL);
            mock_stream_drain();
            umadv__exec_drain(e);
        }
    }
    before = mock.ncalls - before;
    umadv__exec_get_stats(e, st);
    umadv__exec_destroy(e);
    workload_cleanup(&w);
    return before;
}

static void test_fresh_over_left_pages(void)
{
    umadv_exec_stats_t st;
    uint64_t bound;
    size_t calls;

    fresh_over_left_pages(4 * SEC, &bound, &calls, &st);
    ok(bound == 0, "budgeted plan: blocks bound over pages left on the gpu start on the host "
       "(%llu bytes resident)", (unsigned long long)bound);
    ok(calls == 1 && st.resident == 4 * SEC && st.fresh_bytes == 4 * SEC,
       "the fresh one is counted in without a call, the other copied (%zu calls, %llu "
       "resident, %llu fresh)", calls, (unsigned long long)st.resident,
       (unsigned long long)st.fresh_bytes);
    fresh_over_left_pages(0, &bound, &calls, &st);
    ok(bound == 4 * SEC && calls == 0,
       "no budget: both start resident, nothing to call (%llu, %zu)",
       (unsigned long long)bound, calls);
    calls = lane_fresh_over_left_pages(&st);
    ok(calls == 1 && st.fresh_bytes == 4 * SEC,
       "made by the fetch lane ahead of its step, the fresh one is counted in without a "
       "call too (%zu calls, %llu fresh)", calls, (unsigned long long)st.fresh_bytes);
}

/* ---- a schedule replaced in place ------------------------------------- */

typedef struct swap {
    workload_t       *w;
    umadv_schedule_t *next;
    int               installs;
} swap_t;

static void swap_install(void *arg)
{
    swap_t *sw = arg;

    umadv__schedule_cleanup(&sw->w->schedule);
    sw->w->schedule = *sw->next;
    memset(sw->next, 0, sizeof(*sw->next));
    sw->installs++;
}

/* One iteration of two steps, then @next replaces the schedule: the
 * status, and the calls of the iteration after. */
static umadv_status_t replace_run(const umadv_op_t *next_ops, size_t n, uint64_t budget,
                                  const char **calls_p, int *installs_p)
{
    static const uint32_t uses[2] = {1u << 0, 1u << 1};
    const umadv_op_t ops[] = {
        {.kind = UMADV_OP_FETCH, .alloc = 0, .count = 2, .issue_step = 0, .need_step = 0},
        {.kind = UMADV_OP_FETCH, .alloc = 1, .count = 2, .issue_step = 1, .need_step = 1},
    };
    workload_t w;
    umadv_schedule_t next;
    swap_t sw = {&w, &next, 0};
    umadv_exec_t *e;
    umadv_status_t status;
    run_result_t r;
    size_t before;

    workload_init(&w, 2, 2, 2, uses);
    hand_schedule(&w, ops, UMADV_ARRAY_SIZE(ops));
    schedule_build(&w, &next, next_ops, n);
    mock_reset(4 * SEC, 1000, 1000);
    e = exec_open(&w, UMADV_POLICY_PLAN, 4 * SEC);
    run(&w, e, 1, 1000, &r);
    status = umadv__exec_schedule_replace(e, &next, budget, swap_install, &sw);
    before = mock.ncalls;
    run(&w, e, 1, 1000, &r);
    umadv__exec_drain(e); /* the eviction lane's call, made after the step */
    *calls_p = calls_text(&w, before);
    *installs_p = sw.installs;
    umadv__exec_destroy(e);
    umadv__schedule_cleanup(&next);
    workload_cleanup(&w);
    return status;
}

static void test_schedule_replace(void)
{
    const umadv_op_t evicts[] = {
        {.kind = UMADV_OP_FETCH, .alloc = 0, .count = 2, .issue_step = 0, .need_step = 0},
        {.kind = UMADV_OP_EVICT, .alloc = 0, .count = 2, .issue_step = 0, .need_step = 0},
        {.kind = UMADV_OP_FETCH, .alloc = 1, .count = 2, .issue_step = 1, .need_step = 1},
    };
    const umadv_op_t advises[] = {
        {.kind = UMADV_OP_FETCH, .alloc = 0, .count = 2, .issue_step = 0, .need_step = 0},
        {.kind = UMADV_OP_ADVISE, .advice = UMADV_ADVICE_READ_MOSTLY, .alloc = 1, .count = 2,
         .issue_step = 1, .need_step = 1},
    };
    const char *calls;
    int installs;
    umadv_status_t status;

    status = replace_run(evicts, UMADV_ARRAY_SIZE(evicts), 4 * SEC, &calls, &installs);
    ok(status == UMADV_OK && installs == 1 && strcmp(calls, "E0") == 0,
       "replaced in place: the next iteration plays the new schedule from what is resident "
       "(calls '%s')", calls);
    status = replace_run(advises, UMADV_ARRAY_SIZE(advises), 4 * SEC, &calls, &installs);
    ok(status == UMADV_ERR_STATE && installs == 0 && strcmp(calls, "") == 0,
       "a schedule with advice is refused, nothing installed (calls '%s')", calls);
    status = replace_run(evicts, UMADV_ARRAY_SIZE(evicts), 2 * SEC, &calls, &installs);
    ok(status == UMADV_ERR_STATE && installs == 0, "another budget is refused");
}

/* Holds the executor's lock for 200 ms, saying so once it has it: the
 * step call made after that finds it held however late the scheduler
 * runs the caller (a 5 ms head start lost the race under CI's load). */
typedef struct lock_holder {
    umadv_exec_t *e;
    int           held;
} lock_holder_t;

static void *hold_lock(void *arg)
{
    lock_holder_t *h = arg;
    struct timespec hold = {0, 200 * 1000000L};

    pthread_mutex_lock(&h->e->lock);
    __atomic_store_n(&h->held, 1, __ATOMIC_RELEASE);
    nanosleep(&hold, NULL);
    pthread_mutex_unlock(&h->e->lock);
    return NULL;
}

/* A step call that finds the lock held (by a lane, in a replay) counts
 * the wait: the iteration's debug line says how much of the launch path
 * it was. Under demand, with the lanes drained, no lane takes the lock
 * behind the test's back (oracle's fetches did, on a loaded GPU host). */
static void test_lock_waits(void)
{
    umadv_exec_stats_t before, after;
    lock_holder_t h = {NULL, 0};
    workload_t w;
    umadv_exec_t *e;
    pthread_t holder;

    workload_init(&w, 2, 1, 2, rotate_uses);
    mock_reset(0, 10000, 10000);
    e = exec_open(&w, UMADV_POLICY_DEMAND, 4 * SEC);
    umadv__exec_iteration_begin(e);
    umadv__exec_drain(e);
    umadv__exec_get_stats(e, &before);
    umadv__exec_step_begin(e);
    umadv__exec_get_stats(e, &after);
    ok(after.lock_waits == before.lock_waits,
       "a step call that finds the lock free counts no wait");
    before = after;
    h.e = e;
    pthread_create(&holder, NULL, hold_lock, &h);
    while (!__atomic_load_n(&h.held, __ATOMIC_ACQUIRE))
        sched_yield();
    umadv__exec_step_end(e, NULL);
    pthread_join(holder, NULL);
    umadv__exec_get_stats(e, &after);
    ok(after.lock_waits == before.lock_waits + 1 && after.lock_wait_ns > before.lock_wait_ns,
       "one that finds it held counts the wait (%llu us)",
       (unsigned long long)(after.lock_wait_ns - before.lock_wait_ns) / 1000);
    umadv__exec_destroy(e);
    workload_cleanup(&w);
}

/* The host backend records a batch range by range. */
static void test_host_batch(void)
{
    const umadv_cuda_ops_t *ops = &umadv__cuda_ops_host;
    umadv_cuda_host_counters_t c0, c1;
    const umadv_cuda_host_record_t *log;
    char *p = NULL;
    void *ptrs[3];
    size_t sizes[3] = {SEC, 2 * SEC, SEC}, n;
    int stack;

    ops->malloc_managed(8 * SEC, SEC, (void **)&p);
    ptrs[0] = p;
    ptrs[1] = p + 2 * SEC;
    ptrs[2] = p + 6 * SEC;
    umadv__cuda_host_counters(&c0);
    umadv__cuda_host_log_enable(1);
    is(ops->prefetch_batch(ptrs, sizes, 3, 0, (umadv_stream_t)0x10), UMADV_OK,
       "host: a batch of three ranges");
    log = umadv__cuda_host_log(&n);
    ok(n == 3 && log[0].call == UMADV_CUDA_CALL_PREFETCH_BATCH && log[2].batch == 3 &&
       log[1].ptr == ptrs[1] && log[1].size == 2 * SEC && log[2].location == 0,
       "host: recorded range by range, each with the call's size");
    umadv__cuda_host_log_enable(1);
    ptrs[2] = &stack;
    sizes[2] = sizeof(stack);
    is(ops->prefetch_batch(ptrs, sizes, 3, 0, (umadv_stream_t)0x10), UMADV_ERR_CUDA,
       "host: a range outside managed memory fails the batch");
    log = umadv__cuda_host_log(&n);
    umadv__cuda_host_counters(&c1);
    ok(n == 0 && c1.prefetch_batches == c0.prefetch_batches + 1 &&
       c1.prefetches_to_device == c0.prefetches_to_device + 3 &&
       c1.prefetch_bytes_to_device == c0.prefetch_bytes_to_device + 4 * SEC,
       "host: nothing of the refused batch taken; counters count the good one's ranges");
    umadv__cuda_host_log_enable(0);
    ops->free(p, 8 * SEC);
}

int main(void)
{
    log_capture_start();
    env_clear();
    mock_ops_init();
    app_thread = pthread_self();
    plan(32 + 6 + 4 + 4 + 1 + 3 + 3 + 3 + 2 + 4 + 4 + 2 + 2 + 6 + 1);
    test_prefetch_all_sequence();
    test_demand_sequence();
    test_oracle();
    test_plan_policy();
    test_app_never_waits_for_eviction();
    test_hold();
    test_coalescing();
    test_drift_and_timeout();
    test_trace_lines();
    test_app_write();
    test_cuda_error();
    test_reprofile_request();
    test_reprofile_not_demand();
    test_pages_reused();
    test_advice_ranges();
    test_fresh_batch();
    test_fresh_on_step_stream();
    test_fresh_over_left_pages();
    test_schedule_replace();
    test_host_batch();
    test_lock_waits();
    log_capture_stop();
    return exit_status();
}
