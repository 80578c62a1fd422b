/*
 * evict_call_host: what a UVM eviction (cudaMemPrefetchAsync to the host)
 * costs the thread that issues it and the threads launching beside it
 * (issue 11). The profile's second pass evicts before each launch whose
 * parameters cannot be scanned, from the application's thread: GPT-2's
 * 108 such calls held it 134.5 ms for 1.44 GiB (H200), about the
 * migration's own time, "Async" though the call is. Whether it could be
 * issued from a thread of its own, ordered by events, turns on three
 * things measured here: does the call return before its migration ends;
 * does it wait for the work queued ahead of it on its stream; and does a
 * migration in one thread hold back launches in another.
 *
 * One managed range of --size (default 64 MiB), resident on the GPU
 * before each call; a busy kernel of --busy-ms (calibrated first).
 * Settings, each best of --repeat:
 *   idle       the call on an idle GPU;
 *   behind     the call on the stream right behind the busy kernel;
 *   beside     the call on another stream while the busy kernel runs;
 *   chained    a helper thread issues it on its own stream behind an event
 *              recorded after the busy kernel: how long the launching
 *              thread waits until the helper has issued it;
 *   gated      the GPU idle, the call on a stream that waits for a word of
 *              mapped host memory (cuStreamWaitValue32), set once the
 *              call returns: does a gate make an idle stream's call
 *              return as a busy one's does;
 * each gives the call's host time and the time to its stream's end. Then
 * --launches tiny kernels from the main thread, timed alone, while a
 * helper thread migrates the range to the host, and right after a gated
 * call from this thread: us a launch.
 *
 *   bench/evict_call_host [--size BYTES] [--busy-ms MS] [--launches N] [--repeat N]
 *
 * Exit status 77 without a GPU (or one without concurrent managed
 * access), 2 for a bad option.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>
#include <cuda_runtime.h>

#include "beside_kernels_busy.h"
#include "bench_gpu.h"
#include "common/util.h"

#define PROG       "evict_call_host"
#define EXIT_USAGE 2
#define BUSY_WORDS (UINT64_C(1) << 21)
#define MAX_REPEAT 100
#define MAX_LAUNCHES 100000

#define CHECK(fn, args) bench_cuda_check(PROG, fn args, #fn)

typedef enum setting { IDLE, BEHIND, BESIDE, CHAINED, GATED, SETTINGS } setting_t;

static const char *const setting_names[SETTINGS] = {"idle", "behind", "beside", "chained",
                                                    "gated"};

typedef CUresult (*wait_value_fn)(CUstream stream, CUdeviceptr addr, cuuint32_t value,
                                  unsigned flags);

typedef struct bench {
    uint64_t            size;
    char               *managed;
    unsigned long long *busy_words;
    unsigned            busy_blocks;
    long long           busy_cycles;
    cudaStream_t        stream, other, helper_stream;
    cudaEvent_t         after_busy, after_call;
    uint32_t           *gate;       /* mapped host memory the gated stream waits for */
    CUdeviceptr         gate_device;
    uint32_t            gate_opened; /* the value that last opened it */
    wait_value_fn       wait_value;
} bench_t;

typedef struct timing {
    double call_ms; /* the issuing thread inside the call (chained: until the helper issued it) */
    double end_ms;  /* from the issue to the end of the call's stream */
} timing_t;

/* The helper thread's one eviction, ordered behind @after_busy. */
typedef struct helper {
    bench_t *b;
    int      chained; /* behind the event; else at once */
    int      issued;  /* set once the call and its event are issued */
} helper_t;

static void usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, PROG ": ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\nusage: " PROG " [--size BYTES] [--busy-ms MS] [--launches N] "
                    "[--repeat N]\n");
    exit(EXIT_USAGE);
}

static double ms_since(uint64_t t0)
{
    return (double)(umadv__now_ns() - t0) / 1e6;
}

static void prefetch(const bench_t *b, int host, cudaStream_t s)
{
    struct cudaMemLocation loc = {0};

    loc.type = host ? cudaMemLocationTypeHost : cudaMemLocationTypeDevice;
    CHECK(cudaMemPrefetchAsync, (b->managed, b->size, loc, 0, s));
}

static void busy_start(const bench_t *b, unsigned blocks, long long cycles, cudaStream_t s)
{
    bench_cuda_check(PROG, busy_launch(b->busy_words, BUSY_WORDS, blocks, cycles, s),
                     "busy_launch");
}

static void *helper_run(void *arg)
{
    helper_t *h = arg;
    bench_t *b = h->b;

    if (h->chained)
        CHECK(cudaStreamWaitEvent, (b->helper_stream, b->after_busy, 0));
    prefetch(b, 1, b->helper_stream);
    CHECK(cudaEventRecord, (b->after_call, b->helper_stream));
    __atomic_store_n(&h->issued, 1, __ATOMIC_RELEASE);
    return NULL;
}

/* The helper thread, started, or the program ends saying why. */
static void helper_start(pthread_t *thread, helper_t *h)
{
    if (pthread_create(thread, NULL, helper_run, h) != 0) {
        fprintf(stderr, PROG ": cannot start the helper thread\n");
        exit(EXIT_FAILURE);
    }
}

/* The call chained from a helper: the launching thread's wait is until
 * the helper has issued it, as a launch ordered after it would wait. */
static void chained_call(bench_t *b, timing_t *t)
{
    helper_t h = {b, 1, 0};
    pthread_t thread;
    uint64_t t0;

    busy_start(b, b->busy_blocks, b->busy_cycles, b->stream);
    CHECK(cudaEventRecord, (b->after_busy, b->stream));
    t0 = umadv__now_ns();
    helper_start(&thread, &h);
    while (!__atomic_load_n(&h.issued, __ATOMIC_ACQUIRE))
        ;
    t->call_ms = ms_since(t0);
    CHECK(cudaStreamWaitEvent, (b->stream, b->after_call, 0));
    CHECK(cudaStreamSynchronize, (b->stream));
    t->end_ms = ms_since(t0);
    pthread_join(thread, NULL);
}

/* The stream waits until the gate's word reaches its next value. */
static void gate_close(bench_t *b)
{
    if (b->wait_value(b->stream, b->gate_device, b->gate_opened + 1, CU_STREAM_WAIT_VALUE_GEQ) !=
        CUDA_SUCCESS) {
        fprintf(stderr, PROG ": cuStreamWaitValue32 failed\n");
        exit(EXIT_FAILURE);
    }
}

static void gate_open(bench_t *b)
{
    __atomic_store_n(b->gate, ++b->gate_opened, __ATOMIC_RELEASE);
}

/* The call behind a closed gate, the gate opened once it returns. */
static void gated_call(bench_t *b, timing_t *t)
{
    uint64_t t0;

    gate_close(b);
    t0 = umadv__now_ns();
    prefetch(b, 1, b->stream);
    t->call_ms = ms_since(t0);
    gate_open(b);
    CHECK(cudaStreamSynchronize, (b->stream));
    t->end_ms = ms_since(t0);
}

static timing_t call_time(bench_t *b, setting_t setting)
{
    timing_t t;
    uint64_t t0;
    cudaStream_t s = setting == BESIDE ? b->other : b->stream;

    prefetch(b, 0, b->stream);
    CHECK(cudaDeviceSynchronize, ());
    if (setting == CHAINED) {
        chained_call(b, &t);
    } else if (setting == GATED) {
        gated_call(b, &t);
    } else {
        if (setting != IDLE)
            busy_start(b, b->busy_blocks, b->busy_cycles, b->stream);
        t0 = umadv__now_ns();
        prefetch(b, 1, s);
        t.call_ms = ms_since(t0);
        CHECK(cudaStreamSynchronize, (s));
        t.end_ms = ms_since(t0);
    }
    CHECK(cudaDeviceSynchronize, ());
    return t;
}

typedef enum launch_setting {
    ALONE, HELPER_MIGRATES, AFTER_GATED, LAUNCH_SETTINGS
} launch_setting_t;

/* @n tiny kernels from this thread on another stream, us a launch: alone,
 * while a helper migrates the range to the host, or right after a gated
 * call of this thread's. */
static double launches_us(bench_t *b, int n, launch_setting_t setting)
{
    helper_t h = {b, 0, 0};
    pthread_t thread;
    uint64_t t0;
    double us;

    prefetch(b, 0, b->stream);
    CHECK(cudaDeviceSynchronize, ());
    if (setting == HELPER_MIGRATES)
        helper_start(&thread, &h);
    if (setting == AFTER_GATED) { /* gated_call without its synchronisation */
        gate_close(b);
        prefetch(b, 1, b->stream);
        gate_open(b);
    }
    t0 = umadv__now_ns();
    for (int i = 0; i < n; i++)
        busy_start(b, 1, 100, b->other);
    us = ms_since(t0) * 1e3 / n;
    if (setting == HELPER_MIGRATES)
        pthread_join(thread, NULL);
    CHECK(cudaDeviceSynchronize, ());
    return us;
}

/* The busy kernel's cycles per block for @busy_ms in all. Returns the
 * measured ms of the result. */
static double busy_calibrate_ms(bench_t *b, double busy_ms)
{
    double ms = 0;

    bench_cuda_check(PROG, busy_calibrate(b->busy_words, BUSY_WORDS, b->busy_blocks, busy_ms,
                                          b->stream, &b->busy_cycles, &ms),
                     "busy_calibrate");
    return ms;
}

static void setup(bench_t *b, uint64_t size)
{
    int sms = 0;
    size_t free_b = 0, total_b = 0;
    enum cudaDriverEntryPointQueryResult found;

    bench_require_managed_gpu(PROG);
    CHECK(cudaDeviceGetAttribute, (&sms, cudaDevAttrMultiProcessorCount, 0));
    CHECK(cudaMemGetInfo, (&free_b, &total_b));
    if (size + BUSY_WORDS * 8 > free_b / 4) {
        fprintf(stderr, PROG ": --size is more than a quarter of the free GPU memory\n");
        exit(EXIT_FAILURE);
    }
    b->size = size;
    b->busy_blocks = (unsigned)sms * 8 * 16; /* 16 waves of 8 blocks an SM */
    CHECK(cudaMallocManaged, ((void **)&b->managed, size, cudaMemAttachGlobal));
    CHECK(cudaMallocManaged, ((void **)&b->busy_words, BUSY_WORDS * 8, cudaMemAttachGlobal));
    CHECK(cudaMemset, (b->managed, 2, size));
    CHECK(cudaMemset, (b->busy_words, 0, BUSY_WORDS * 8));
    CHECK(cudaStreamCreateWithFlags, (&b->stream, cudaStreamNonBlocking));
    CHECK(cudaStreamCreateWithFlags, (&b->other, cudaStreamNonBlocking));
    CHECK(cudaStreamCreateWithFlags, (&b->helper_stream, cudaStreamNonBlocking));
    CHECK(cudaEventCreateWithFlags, (&b->after_busy, cudaEventDisableTiming));
    CHECK(cudaEventCreateWithFlags, (&b->after_call, cudaEventDisableTiming));
    CHECK(cudaHostAlloc, ((void **)&b->gate, sizeof(*b->gate), cudaHostAllocMapped));
    *b->gate = 0;
    CHECK(cudaHostGetDevicePointer, ((void **)&b->gate_device, b->gate, 0));
    CHECK(cudaGetDriverEntryPointByVersion, ("cuStreamWaitValue32", (void **)&b->wait_value,
                                             12000, cudaEnableDefault, &found));
    if (found != cudaDriverEntryPointSuccess) {
        fprintf(stderr, PROG ": the driver has no cuStreamWaitValue32\n");
        exit(EXIT_FAILURE);
    }
    CHECK(cudaDeviceSynchronize, ());
}

int main(int argc, char **argv)
{
    uint64_t size = UINT64_C(64) << 20;
    double busy_ms = 20, launch_best[LAUNCH_SETTINGS];
    int repeat = 3, launches = 2000;
    bench_t b = {0};
    timing_t best[SETTINGS];

    for (int i = 1; i < argc; i += 2) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;

        if (v == NULL)
            usage_error("option '%s' needs a value", argv[i]);
        else if (strcmp(argv[i], "--size") == 0) {
            if (umadv_size_parse(v, &size) != UMADV_OK || size == 0)
                usage_error("invalid size '%s'", v);
        } else if (strcmp(argv[i], "--busy-ms") == 0) {
            busy_ms = atof(v);
            if (!(busy_ms >= 1 && busy_ms <= 1000))
                usage_error("invalid --busy-ms '%s' (1 to 1000)", v);
        } else if (strcmp(argv[i], "--launches") == 0) {
            launches = bench_int_option(v, 1, MAX_LAUNCHES, usage_error,
                                        "invalid --launches '%s' (1 to 100000)");
        } else if (strcmp(argv[i], "--repeat") == 0) {
            repeat = bench_int_option(v, 1, MAX_REPEAT, usage_error,
                                      "invalid --repeat '%s' (1 to 100)");
        } else {
            usage_error("unknown option '%s'", argv[i]);
        }
    }
    setup(&b, size);
    printf(PROG ": %.0f MiB a call; busy kernel %.1f ms\n", (double)size / 1048576.0,
           busy_calibrate_ms(&b, busy_ms));
    printf("%-8s %12s %12s   (ms, best of %d)\n", "setting", "in the call", "to its end",
           repeat);
    for (int s = 0; s < SETTINGS; s++) {
        best[s].call_ms = best[s].end_ms = 1e30;
        for (int r = 0; r < repeat + 1; r++) { /* the first is a warm-up */
            timing_t t = call_time(&b, (setting_t)s);

            if (r > 0 && t.end_ms < best[s].end_ms)
                best[s] = t;
        }
        printf("%-8s %12.3f %12.3f\n", setting_names[s], best[s].call_ms, best[s].end_ms);
    }
    for (int l = 0; l < LAUNCH_SETTINGS; l++) {
        launch_best[l] = 1e30;
        for (int r = 0; r < repeat + 1; r++) {
            double us = launches_us(&b, launches, (launch_setting_t)l);

            if (r > 0)
                launch_best[l] = UMADV_MIN(launch_best[l], us);
        }
    }
    printf("launches: %.2f us each alone, %.2f beside a migration to the host in another "
           "thread, %.2f right after a gated one in this thread\n",
           launch_best[ALONE], launch_best[HELPER_MIGRATES], launch_best[AFTER_GATED]);
    return 0;
}
