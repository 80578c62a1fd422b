/*
 * launch_cost: what one kernel launch costs the application's thread under
 * each thing umadv's replay adds to it (issue 11, item 4). A PyTorch GPT-2
 * iteration replayed under plan spends 12 ms in its 879 launch calls and
 * CUPTI's callbacks (14 us a launch), and some 11 ms more than oracle
 * outside them, beside lanes that copy and populate (bench/RESULTS.md):
 * this splits a launch's cost among the candidates.
 *
 * The application's thread launches an empty kernel (cudaLaunchKernel,
 * one pointer argument) on a stream of its own, in batches of 256 timed
 * from the first call to the last (the stream is synchronised between
 * batches, outside the time, so the launch queue never fills). Per
 * setting: microseconds a launch, the median of --repeat runs of
 * --launches launches each:
 *
 *   plain                   the launch alone
 *   + event record          cudaEventRecord after each (umadv's step end)
 *   CUPTI subscribed        a CUPTI subscriber with no callback on
 *   + runtime callbacks     cudaLaunchKernel's callbacks on (entry, exit)
 *   + driver callbacks      cuLaunchKernel's too, as umadv enables both
 *   beside: <call>          plain launches while another thread issues
 *                           <call> on --size bytes in a loop, on its own
 *                           stream, synchronising each: a stage-out
 *                           (managed to pinned), a restore's copy (pinned
 *                           to managed), a release and population (discard,
 *                           then prefetch to the GPU) in one call each way,
 *                           in calls of 8 MiB and of 2 MiB, a discard alone
 *                           (a memset's kernel populates the range again,
 *                           no host call), the batch call that does both
 *                           (cudaMemDiscardAndPrefetchBatchAsync), a UVM
 *                           eviction (prefetch to the host, and back),
 *                           pinning (pages mapped and populated by the
 *                           thread, as umadv's staging pool pins them, then
 *                           cudaHostRegister; unregistered and unmapped
 *                           after, each a span of its own: which part
 *                           holds the launches, if any),
 *                           cudaMemGetInfo in a loop and every 2 ms (the
 *                           executor's memory monitor samples so), no call
 *                           (a thread that has set the device and sleeps,
 *                           as umadv's lanes do between operations)
 *
 * A beside row also gives the other thread's calls a second and the host
 * time of each (a loop of pieces counted as one; synchronisations and the
 * memset left out): how long each holds the thread that made it. Last,
 * per beside setting, its launches by the other thread's call under way
 * while each ran (a discard, a prefetch, none...): how many, and their
 * mean time, so that a setting of two calls says which one holds the
 * launches up.
 * The callbacks read the launch's symbol name and compare it, as umadv's
 * do; a row says how many callbacks each launch made.
 *
 *   bench/launch_cost [--size BYTES] [--launches N] [--repeat N]
 *                     [--settings KEY,...] [--work launch|cpu|mmap|api]
 *
 * --work cpu times, in place of each launch, a unit of the host work a
 * PyTorch program does between its launches (small mallocs and frees,
 * reads scattered over a 4 MiB table), --work mmap one of a mapping's
 * life (64 KiB mapped, its pages touched, unmapped), --work api the
 * runtime calls PyTorch makes around its launches (the current device,
 * whether the stream captures, an event's state, the last error): whether
 * the other thread's calls slow the application's own work between launches,
 * where a launch-bound model under a replay spends twice native's CPU
 * time (replay.c's debug line; bench/RESULTS.md, 2026-11-30). The
 * table's us are then per unit.
 *
 * --settings runs those settings alone, in that order (keys: plain, event,
 * copy-out, copy-in, populate, populate-8m, populate-2m, discard,
 * discard-prefetch, evict, pin, mem-info, mem-info-paced, idle, cupti,
 * cupti-runtime, cupti-driver; the CUPTI ones last, in that order, each
 * with the callbacks of those before it). One setting a process tells
 * what each costs with nothing run before it in the same process.
 *
 * --lane-context own gives the other thread a CUDA context of its own
 * on the same device (its stream and calls there; the managed range and
 * the pinned buffer are the process's, usable from both): whether what
 * holds the launches is the context they share or something below it
 * that every context of the process takes (the driver's unified-memory
 * state). umadv's lanes share the application's primary context.
 *
 * Exit status 77 without a GPU (or one without concurrent managed
 * access), 2 for a bad option.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include <cuda.h>
#include <cuda_runtime.h>
#include <cupti.h>

#include "common/util.h"
#include "bench_gpu.h"
#include "launch_cost_kernel.h"

#define EXIT_USAGE 2
#define BATCH      256
#define MAX_REPEAT 101

typedef enum setting {
    PLAIN, EVENT_AFTER, BESIDE_COPY_OUT, BESIDE_COPY_IN, BESIDE_POPULATE, BESIDE_POPULATE_8M,
    BESIDE_POPULATE_2M, BESIDE_DISCARD, BESIDE_DISCARD_PREFETCH, BESIDE_EVICT, BESIDE_PIN,
    BESIDE_MEM_INFO, BESIDE_MEM_INFO_PACED, BESIDE_IDLE, CUPTI_SUBSCRIBED, CUPTI_RUNTIME, CUPTI_DRIVER, SETTINGS
} setting_t;

static const char *const setting_names[SETTINGS] = {
    "plain",
    "+ event record after each",
    "beside: copy managed->pinned",
    "beside: copy pinned->managed",
    "beside: discard, prefetch to GPU",
    "beside: the same in 8 MiB calls",
    "beside: the same in 2 MiB calls",
    "beside: discard, a kernel writes",
    "beside: discard-and-prefetch batch",
    "beside: prefetch to the host",
    "beside: pinning host memory",
    "beside: cudaMemGetInfo",
    "beside: cudaMemGetInfo every 2 ms",
    "beside: a thread that sleeps",
    "CUPTI subscribed, no callback",
    "+ runtime launch callbacks",
    "+ driver launch callbacks",
};

/* --settings' names for them */
static const char *const setting_keys[SETTINGS] = {
    "plain", "event", "copy-out", "copy-in", "populate", "populate-8m", "populate-2m",
    "discard", "discard-prefetch", "evict", "pin", "mem-info", "mem-info-paced", "idle", "cupti",
    "cupti-runtime", "cupti-driver",
};

/* What the application's thread times: a launch, or a unit of host work. */
typedef enum work { WORK_LAUNCH, WORK_CPU, WORK_MMAP, WORK_API, WORKS } work_t;

static const char *const work_names[WORKS] = {"launch", "cpu", "mmap", "api"};

#define TABLE_WORDS (UINT64_C(1) << 19) /* 4 MiB of uint64_t */

typedef struct bench {
    work_t       work;
    uint64_t    *table;                 /* WORK_CPU's scattered reads */
    uint64_t     sink;                  /* what the work read, kept */
    uint64_t     size;
    char        *managed, *pinned;
    int         *operand;
    cudaStream_t stream, lane_stream;
    CUcontext    lane_context;          /* --lane-context own, else NULL */
    cudaEvent_t  event;
    CUpti_SubscriberHandle subscriber;
    int          subscribed;
} bench_t;

/* The callbacks' counts, and the name they compare with. */
static atomic_ulong callbacks, names_matched;
static char first_name[512];

/* What a span of host time was: one of the other thread's calls, or a
 * launch (LAUNCH). */
typedef enum kind {
    K_COPY, K_DISCARD, K_TO_GPU, K_DISCARD_PREFETCH, K_TO_HOST, K_MEM_INFO, K_HOST_PAGES,
    K_REGISTER, K_UNREGISTER, KINDS,
    LAUNCH = KINDS
} kind_t;

static const char *const kind_names[KINDS] = {
    "a copy", "a discard", "a prefetch to the GPU", "a discard-and-prefetch",
    "a prefetch to the host", "a memory info", "host pages mapped and populated",
    "a cudaHostRegister", "a cudaHostUnregister and munmap",
};

typedef struct span {
    uint64_t start, end;
    kind_t   kind;
} span_t;

/* Spans in time order, the first cap kept. */
typedef struct spans {
    span_t *v;
    size_t  n, cap;
} spans_t;

#define MAX_SPANS (UINT64_C(1) << 21)

static void span_add(spans_t *s, uint64_t start, kind_t kind)
{
    if (s->n < s->cap)
        s->v[s->n++] = (span_t){start, umadv__now_ns(), kind};
}

/* The launches of the setting being measured. */
static spans_t launch_spans;

/* The other thread, beside the launches. */
typedef struct lane {
    pthread_t   thread;
    bench_t    *b;
    setting_t   setting;
    atomic_int  stop;
    atomic_long calls;
    spans_t     spans;   /* its calls: their host time (synchronisations and
                          * the memset left out) */
} lane_t;

#define CHECK(fn, args) bench_cuda_check("launch_cost", fn args, #fn)

static int cupti_ok(CUptiResult res, const char *call)
{
    const char *why = NULL;

    if (res == CUPTI_SUCCESS)
        return 1;
    cuptiGetResultString(res, &why);
    fprintf(stderr, "launch_cost: %s: %s\n", call, why != NULL ? why : "unknown CUPTI error");
    return 0;
}

static void usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "launch_cost: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\nusage: launch_cost [--size BYTES] [--launches N] [--repeat N] "
                    "[--settings KEY,...] [--work launch|cpu|mmap|api] "
                    "[--lane-context shared|own]\n");
    exit(EXIT_USAGE);
}

/* ---- CUPTI ---------------------------------------------------------------- */

static void CUPTIAPI on_callback(void *userdata, CUpti_CallbackDomain domain,
                                 CUpti_CallbackId cbid, const void *data)
{
    const CUpti_CallbackData *cb = data;

    (void)userdata, (void)domain, (void)cbid;
    atomic_fetch_add_explicit(&callbacks, 1, memory_order_relaxed);
    if (cb->symbolName == NULL)
        return;
    if (first_name[0] == '\0')
        snprintf(first_name, sizeof(first_name), "%s", cb->symbolName);
    if (strcmp(cb->symbolName, first_name) == 0)
        atomic_fetch_add_explicit(&names_matched, 1, memory_order_relaxed);
}

static const CUpti_CallbackId driver_cbids[] = {
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
};

/* The callbacks @s has on (and those of the settings before it). */
static int cupti_set(bench_t *b, setting_t s, uint32_t on)
{
    int ok = 1;

    if (s == CUPTI_SUBSCRIBED)
        return 1;
    if (s == CUPTI_RUNTIME)
        return cupti_ok(cuptiEnableCallback(on, b->subscriber, CUPTI_CB_DOMAIN_RUNTIME_API,
                                            CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000),
                        "cuptiEnableCallback");
    for (size_t i = 0; i < sizeof(driver_cbids) / sizeof(driver_cbids[0]) && ok; i++)
        ok = cupti_ok(cuptiEnableCallback(on, b->subscriber, CUPTI_CB_DOMAIN_DRIVER_API,
                                          driver_cbids[i]),
                      "cuptiEnableCallback");
    return ok;
}

/* ---- the other thread --------------------------------------------------- */

/* Discard @l's range, then populate it on the GPU, in calls of @piece bytes. */
static void discard_populate(lane_t *l, uint64_t piece)
{
    const bench_t *b = l->b;
    uint64_t t;

    for (uint64_t o = 0; o < b->size; o += piece) {
        void *ptr = b->managed + o;
        size_t size = (size_t)UMADV_MIN(piece, b->size - o);

        t = umadv__now_ns();
        CHECK(cudaMemDiscardBatchAsync, (&ptr, &size, 1, 0, b->lane_stream));
        span_add(&l->spans, t, K_DISCARD);
    }
    for (uint64_t o = 0; o < b->size; o += piece) {
        t = umadv__now_ns();
        CHECK(cudaMemPrefetchAsync, (b->managed + o, (size_t)UMADV_MIN(piece, b->size - o),
                                     bench_location(0), 0, b->lane_stream));
        span_add(&l->spans, t, K_TO_GPU);
    }
}

/* Pin @l's size of host memory as umadv's staging pool does (cuda_ops,
 * cudart_host_alloc: mapped, populated, registered), then let it go. */
static void pin_once(lane_t *l)
{
    size_t size = l->b->size;
    uint64_t t = umadv__now_ns();
    char *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    if (p == MAP_FAILED) {
        fprintf(stderr, "launch_cost: mmap of %zu bytes failed\n", size);
        exit(EXIT_FAILURE);
    }
#ifdef MADV_HUGEPAGE
    (void)madvise(p, size, MADV_HUGEPAGE);
#endif
    memset(p, 0, size);
    span_add(&l->spans, t, K_HOST_PAGES);
    t = umadv__now_ns();
    CHECK(cudaHostRegister, (p, size, cudaHostRegisterDefault));
    span_add(&l->spans, t, K_REGISTER);
    t = umadv__now_ns();
    CHECK(cudaHostUnregister, (p));
    munmap(p, size);
    span_add(&l->spans, t, K_UNREGISTER);
}

/* One call of @s (or its calls, for a setting of pieces), each a span of
 * @l's. */
static void lane_call(lane_t *l, setting_t s)
{
    const bench_t *b = l->b;
    cudaStream_t st = b->lane_stream;
    void *ptr = b->managed;
    size_t size = b->size, first = 0;
    struct cudaMemLocation gpu = bench_location(0);
    uint64_t t = umadv__now_ns();

    switch (s) {
    case BESIDE_COPY_OUT:
        CHECK(cudaMemcpyAsync, (b->pinned, b->managed, b->size, cudaMemcpyDefault, st));
        span_add(&l->spans, t, K_COPY);
        break;
    case BESIDE_COPY_IN:
        CHECK(cudaMemcpyAsync, (b->managed, b->pinned, b->size, cudaMemcpyDefault, st));
        span_add(&l->spans, t, K_COPY);
        break;
    case BESIDE_POPULATE:
        discard_populate(l, b->size);
        break;
    case BESIDE_POPULATE_8M:
        discard_populate(l, UINT64_C(8) << 20);
        break;
    case BESIDE_POPULATE_2M:
        discard_populate(l, UINT64_C(2) << 20);
        break;
    case BESIDE_DISCARD: /* the GPU's faults populate it again, no host call */
        CHECK(cudaMemDiscardBatchAsync, (&ptr, &size, 1, 0, st));
        span_add(&l->spans, t, K_DISCARD);
        CHECK(cudaMemsetAsync, (b->managed, 3, b->size, st));
        break;
    case BESIDE_DISCARD_PREFETCH:
        CHECK(cudaMemDiscardAndPrefetchBatchAsync, (&ptr, &size, 1, &gpu, &first, 1, 0, st));
        span_add(&l->spans, t, K_DISCARD_PREFETCH);
        break;
    case BESIDE_EVICT: /* and back, so that the next call moves data again */
        CHECK(cudaMemPrefetchAsync, (b->managed, b->size, bench_location(1), 0, st));
        span_add(&l->spans, t, K_TO_HOST);
        t = umadv__now_ns();
        CHECK(cudaMemPrefetchAsync, (b->managed, b->size, bench_location(0), 0, st));
        span_add(&l->spans, t, K_TO_GPU);
        break;
    case BESIDE_PIN:
        pin_once(l);
        return; /* no stream work to wait for */
    case BESIDE_MEM_INFO:
    case BESIDE_MEM_INFO_PACED:
        CHECK(cudaMemGetInfo, (&first, &size));
        span_add(&l->spans, t, K_MEM_INFO);
        if (s == BESIDE_MEM_INFO_PACED)
            nanosleep(&(struct timespec){0, 2000000}, NULL);
        break;
    case BESIDE_IDLE: /* no CUDA call since cudaSetDevice */
        nanosleep(&(struct timespec){0, 1000000}, NULL);
        return;
    default:
        break;
    }
    CHECK(cudaStreamSynchronize, (st));
}

static void *lane_main(void *arg)
{
    lane_t *l = arg;

    if (l->b->lane_context != NULL)
        bench_context_set("launch_cost", l->b->lane_context);
    else
        CHECK(cudaSetDevice, (0));
    while (!atomic_load(&l->stop)) {
        lane_call(l, l->setting);
        atomic_fetch_add(&l->calls, 1);
    }
    return NULL;
}

static int beside(setting_t s)
{
    return s >= BESIDE_COPY_OUT && s <= BESIDE_IDLE;
}

/* ---- the launches ------------------------------------------------------- */

/* A unit of an interpreter's host work: 32 small blocks allocated,
 * written and freed, and 256 reads scattered over a 4 MiB table. */
static void cpu_unit(bench_t *b, unsigned seed)
{
    uint64_t x = seed * UINT64_C(6364136223846793005) + 1, acc = 0;

    for (int i = 0; i < 32; i++) {
        volatile char *p = malloc(48 + (size_t)(i * 37 % 480));

        if (p == NULL)
            exit(EXIT_FAILURE);
        p[0] = (char)i;
        acc += (uint64_t)p[0];
        free((void *)p);
    }
    for (int i = 0; i < 256; i++) {
        x = x * UINT64_C(6364136223846793005) + UINT64_C(1442695040888963407);
        acc += b->table[(x >> 33) & (TABLE_WORDS - 1)];
    }
    b->sink += acc;
}

/* A unit of a mapping's life: 64 KiB mapped, each page touched, unmapped. */
static void mmap_unit(bench_t *b)
{
    size_t len = 64 << 10;
    char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    if (p == MAP_FAILED)
        exit(EXIT_FAILURE);
    for (size_t off = 0; off < len; off += 4096)
        p[off] = 1;
    b->sink += (uint64_t)p[0];
    munmap(p, len);
}

/* A unit of the runtime calls a PyTorch program makes between launches:
 * none enqueues work, but each may take the driver's locks. */
static void api_unit(bench_t *b)
{
    enum cudaStreamCaptureStatus capture;
    int device;

    CHECK(cudaGetDevice, (&device));
    CHECK(cudaStreamIsCapturing, (b->stream, &capture));
    if (cudaEventQuery(b->event) == cudaErrorInvalidResourceHandle)
        exit(EXIT_FAILURE);
    (void)cudaGetLastError();
    b->sink += (uint64_t)device + (uint64_t)capture;
}

/* One unit of the application thread's timed work (--work). */
static void work_unit(bench_t *b, const void *fn, void **args, unsigned i)
{
    dim3 grid = {1, 1, 1}, block = {32, 1, 1};

    switch (b->work) {
    case WORK_CPU:
        cpu_unit(b, i);
        break;
    case WORK_MMAP:
        mmap_unit(b);
        break;
    case WORK_API:
        api_unit(b);
        break;
    default:
        CHECK(cudaLaunchKernel, (fn, grid, block, args, 0, b->stream));
        break;
    }
}

/* Microseconds a launch (or unit of --work) over @n in @s. */
static double launches_us(bench_t *b, setting_t s, long n)
{
    void *args[] = {&b->operand};
    const void *fn = launch_cost_kernel();
    uint64_t spent = 0;

    for (long done = 0; done < n; done += BATCH) {
        uint64_t t0 = umadv__now_ns();

        for (int i = 0; i < BATCH; i++) {
            uint64_t t = umadv__now_ns();

            work_unit(b, fn, args, (unsigned)(done + i));
            span_add(&launch_spans, t, LAUNCH);
            if (s == EVENT_AFTER)
                CHECK(cudaEventRecord, (b->event, b->stream));
        }
        spent += umadv__now_ns() - t0;
        CHECK(cudaStreamSynchronize, (b->stream));
    }
    return (double)spent / 1e3 / (double)n;
}

/* The host time of @s's spans, in nanoseconds. */
static uint64_t spans_ns(const spans_t *s)
{
    uint64_t ns = 0;

    for (size_t i = 0; i < s->n; i++)
        ns += s->v[i].end - s->v[i].start;
    return ns;
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, c = *(const double *)y;

    return (a > c) - (a < c);
}

/* Per kind of the other thread's call (KINDS: none), the launches that
 * met one (the first call under way during the launch) and their time. */
typedef struct met {
    long   n[KINDS + 1];
    double us[KINDS + 1];
} met_t;

static void attribute(const spans_t *launches, const spans_t *calls, met_t *m)
{
    size_t j = 0;

    memset(m, 0, sizeof(*m));
    for (size_t i = 0; i < launches->n; i++) {
        const span_t *l = &launches->v[i];
        kind_t k = KINDS;

        while (j < calls->n && calls->v[j].end < l->start)
            j++;
        if (j < calls->n && calls->v[j].start <= l->end)
            k = calls->v[j].kind;
        m->n[k]++;
        m->us[k] += (double)(l->end - l->start) / 1e3;
    }
}

static void met_print(setting_t s, const met_t *m)
{
    printf("  %s:", setting_names[s]);
    for (int k = 0; k <= KINDS; k++) {
        if (m->n[k] > 0)
            printf(" %s %ld, %.1f us;", k < KINDS ? kind_names[k] : "none", m->n[k],
                   m->us[k] / (double)m->n[k]);
    }
    printf("\n");
}

/* The median over @repeat runs of @s; *lane_calls_p: the other thread's
 * calls (loops of a setting in pieces), *lane_us_p: their host time each. */
static double setting_us(bench_t *b, setting_t s, long n, int repeat, long *lane_calls_p,
                         double *lane_us_p, met_t *met)
{
    double runs[MAX_REPEAT];
    lane_t lane = {.b = b, .setting = s, .spans = {.cap = beside(s) ? MAX_SPANS : 0}};

    if (beside(s)) {
        if ((lane.spans.v = malloc(MAX_SPANS * sizeof(span_t))) == NULL) {
            fprintf(stderr, "launch_cost: out of memory\n");
            exit(EXIT_FAILURE);
        }
        CHECK(cudaMemPrefetchAsync, (b->managed, b->size, bench_location(0), 0, b->stream));
        CHECK(cudaStreamSynchronize, (b->stream));
        if (pthread_create(&lane.thread, NULL, lane_main, &lane) != 0) {
            fprintf(stderr, "launch_cost: cannot start the other thread\n");
            exit(EXIT_FAILURE);
        }
        while (atomic_load(&lane.calls) == 0) /* under way */
            ;
    }
    launches_us(b, s, BATCH * 4); /* warm-up */
    launch_spans.n = 0;
    for (int r = 0; r < repeat; r++)
        runs[r] = launches_us(b, s, n);
    if (beside(s)) {
        atomic_store(&lane.stop, 1);
        pthread_join(lane.thread, NULL);
    }
    *lane_calls_p = atomic_load(&lane.calls);
    *lane_us_p = *lane_calls_p > 0 ? (double)spans_ns(&lane.spans) / 1e3 / (double)*lane_calls_p
                                   : 0;
    attribute(&launch_spans, &lane.spans, met);
    free(lane.spans.v);
    qsort(runs, (size_t)repeat, sizeof(runs[0]), cmp_double);
    return runs[repeat / 2];
}

/* The other thread's stream, in a context of its own when @own: pushed
 * here to make the stream, then popped (the launches stay in the primary
 * context). */
static void lane_stream_create(bench_t *b, int own)
{
    if (own) {
        b->lane_context = bench_context_apart("launch_cost");
        bench_context_push("launch_cost", b->lane_context);
    }
    CHECK(cudaStreamCreateWithFlags, (&b->lane_stream, cudaStreamNonBlocking));
    if (own)
        bench_context_pop("launch_cost");
}

static void setup(bench_t *b, uint64_t size, int own_context)
{
    size_t free_b = 0, total_b = 0;

    bench_require_managed_gpu("launch_cost");
    CHECK(cudaMemGetInfo, (&free_b, &total_b));
    if (size > free_b / 8) {
        fprintf(stderr, "launch_cost: --size is more than an eighth of the free GPU memory\n");
        exit(EXIT_FAILURE);
    }
    b->size = size;
    CHECK(cudaMallocManaged, ((void **)&b->managed, size, cudaMemAttachGlobal));
    /* portable: pinned for the other thread's context too */
    CHECK(cudaHostAlloc, ((void **)&b->pinned, size, cudaHostAllocPortable));
    CHECK(cudaMalloc, ((void **)&b->operand, sizeof(int)));
    memset(b->pinned, 1, size);
    CHECK(cudaMemset, (b->managed, 2, size));
    CHECK(cudaStreamCreateWithFlags, (&b->stream, cudaStreamNonBlocking));
    lane_stream_create(b, own_context);
    CHECK(cudaEventCreateWithFlags, (&b->event, cudaEventDisableTiming));
    CHECK(cudaDeviceSynchronize, ());
}

static long parse_count(const char *v, const char *what, long lo, long hi)
{
    char *end = NULL;
    long n = strtol(v, &end, 10);

    if (end == v || *end != '\0' || n < lo || n > hi)
        usage_error(what, v);
    return n;
}

/* The work --work @v names, or a usage error. */
static work_t parse_work(const char *v)
{
    for (int w = 0; w < WORKS; w++)
        if (strcmp(v, work_names[w]) == 0)
            return (work_t)w;
    usage_error("invalid --work '%s' (launch, cpu, mmap or api)", v);
    return WORK_LAUNCH;
}

/* The settings @list names, in its order, into @order; their count. */
static int parse_settings(const char *list, setting_t order[SETTINGS])
{
    char buf[512], *save = NULL;
    int n = 0, taken[SETTINGS] = {0};

    if (snprintf(buf, sizeof(buf), "%s", list) >= (int)sizeof(buf))
        usage_error("--settings '%s' is too long", list);
    for (char *key = strtok_r(buf, ",", &save); key != NULL; key = strtok_r(NULL, ",", &save)) {
        int s = 0;

        while (s < SETTINGS && strcmp(setting_keys[s], key) != 0)
            s++;
        if (s == SETTINGS)
            usage_error("unknown setting '%s'", key);
        if (taken[s]++)
            usage_error("setting '%s' given twice", key);
        /* a CUPTI setting keeps its callbacks on for those after it */
        if (n > 0 && order[n - 1] >= CUPTI_SUBSCRIBED && (setting_t)s < order[n - 1])
            usage_error("setting '%s' comes after a CUPTI one it may not follow", key);
        order[n++] = (setting_t)s;
    }
    if (n == 0)
        usage_error("--settings '%s' names none", list);
    return n;
}

/* Subscribed and the callbacks of every CUPTI setting up to @s on; 0 if
 * CUPTI refused. */
static int cupti_up_to(bench_t *b, setting_t s, setting_t *on)
{
    if (!b->subscribed && *on < CUPTI_SUBSCRIBED) {
        b->subscribed = cupti_ok(cuptiSubscribe(&b->subscriber, on_callback, NULL),
                                 "cuptiSubscribe");
        *on = CUPTI_SUBSCRIBED;
    }
    if (!b->subscribed)
        return 0;
    for (; *on < s; (*on)++)
        if (!cupti_set(b, *on + 1, 1))
            return 0;
    return 1;
}

int main(int argc, char **argv)
{
    uint64_t size = UINT64_C(64) << 20;
    long launches = 20 * BATCH;
    int repeat = 5;
    bench_t b = {0};
    struct cudaDeviceProp prop;
    int driver = 0;
    double plain = 0;
    met_t met[SETTINGS];
    setting_t order[SETTINGS], cupti_on = PLAIN;
    int norder = SETTINGS, ran[SETTINGS] = {0}, own_context = 0;

    for (int s = 0; s < SETTINGS; s++)
        order[s] = (setting_t)s;

    for (int i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;

        if (strcmp(argv[i], "--size") == 0 && v != NULL) {
            if (umadv_size_parse(v, &size) != UMADV_OK || size == 0)
                usage_error("invalid size '%s'", v);
        } else if (strcmp(argv[i], "--launches") == 0 && v != NULL) {
            launches = parse_count(v, "invalid --launches '%s' (256 to 10000000)", BATCH,
                                   10000000);
            launches = (launches + BATCH - 1) / BATCH * BATCH;
        } else if (strcmp(argv[i], "--repeat") == 0 && v != NULL) {
            repeat = (int)parse_count(v, "invalid --repeat '%s' (1 to 101)", 1, MAX_REPEAT);
        } else if (strcmp(argv[i], "--settings") == 0 && v != NULL) {
            norder = parse_settings(v, order);
        } else if (strcmp(argv[i], "--work") == 0 && v != NULL) {
            b.work = parse_work(v);
        } else if (strcmp(argv[i], "--lane-context") == 0 && v != NULL) {
            if (strcmp(v, "shared") != 0 && strcmp(v, "own") != 0)
                usage_error("invalid --lane-context '%s' (shared or own)", v);
            own_context = strcmp(v, "own") == 0;
        } else {
            usage_error("unknown option '%s'", argv[i]);
        }
        i++;
    }
    setup(&b, size, own_context);
    if (b.work == WORK_CPU && (b.table = calloc(TABLE_WORDS, sizeof(*b.table))) == NULL) {
        fprintf(stderr, "launch_cost: out of memory\n");
        return EXIT_FAILURE;
    }
    for (uint64_t w = 0; b.table != NULL && w < TABLE_WORDS; w++)
        b.table[w] = w * 2654435761u;
    launch_spans.cap = MAX_SPANS;
    if ((launch_spans.v = malloc(MAX_SPANS * sizeof(span_t))) == NULL) {
        fprintf(stderr, "launch_cost: out of memory\n");
        return EXIT_FAILURE;
    }
    CHECK(cudaGetDeviceProperties, (&prop, 0));
    CHECK(cudaDriverGetVersion, (&driver));
    printf("launch_cost: %s, driver %d; %ld launches a run, median of %d; the other "
           "thread's calls on %.0f MiB\n", prop.name, driver, launches, repeat,
           (double)size / 1048576.0);
    if (b.lane_context != NULL)
        printf("the other thread's calls in a CUDA context of their own (--lane-context)\n");
    if (b.work != WORK_LAUNCH)
        printf("timed in place of each launch: a unit of %s work (--work)\n",
               work_names[b.work]);
    printf("%-34s %12s %10s %16s %15s %13s\n", "setting", "us/launch", "x plain",
           "callbacks/launch", "other's calls/s", "its host us");
    for (int i = 0; i < norder; i++) {
        setting_t s = order[i];
        long lane_calls = 0;
        double lane_us = 0;
        unsigned long before;
        uint64_t t0;
        double us, secs;

        if (s >= CUPTI_SUBSCRIBED && !cupti_up_to(&b, s, &cupti_on)) {
            printf("%-34s %12s\n", setting_names[s], "(CUPTI refused)");
            continue;
        }
        before = atomic_load(&callbacks);
        t0 = umadv__now_ns();
        us = setting_us(&b, s, launches, repeat, &lane_calls, &lane_us, &met[s]);
        ran[s] = 1;
        secs = (double)(umadv__now_ns() - t0) / 1e9;
        if (s == PLAIN)
            plain = us;
        printf("%-34s %12.2f %10.2f %16.2f %15.1f %13.1f\n", setting_names[s], us,
               plain > 0 ? us / plain : 0.0,
               (double)(atomic_load(&callbacks) - before) / (double)(launches * repeat + 4 * BATCH),
               (double)lane_calls / secs, lane_us);
    }
    if (b.subscribed) {
        printf("callbacks that named the kernel: %lu of %lu (%s)\n", atomic_load(&names_matched),
               atomic_load(&callbacks), first_name[0] != '\0' ? first_name : "no name seen");
        cuptiUnsubscribe(b.subscriber);
    }
    printf("launches beside the other thread, by the call they met (us each):\n");
    for (int s = 0; s < SETTINGS; s++)
        if (ran[s] && beside((setting_t)s))
            met_print((setting_t)s, &met[s]);
    free(launch_spans.v);
    free(b.table);
    return 0;
}
