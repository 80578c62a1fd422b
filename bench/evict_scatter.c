/*
 * evict_scatter: what a UVM eviction (a prefetch to the host) costs when
 * its bytes lie in many small blocks rather than in one range (issue 11).
 * A PyTorch densenet121's second pass (batch 32, half its footprint)
 * moved 2.16 GiB to the host in 30 calls that held the application's
 * thread 738.5 ms, while the unified-memory records of their migrations
 * sum to 52.6 ms; its 1460 blocks average 2.8 MiB (H200, 2026-11-30). One
 * 64 MiB range moves at about 11 GB/s (bench/evict_call_host). Whether
 * the driver's cost goes with the ranges of a call or with its bytes is
 * what a faster second pass turns on. (Measured here: both, a call per
 * block 1.1-1.9x one range; and the 738.5 ms were a freshly started
 * machine's, whose host pages the first evictions touched first: the
 * first column, 3-4x the best there, H200, bench/RESULTS.md.)
 *
 * --size bytes, as one managed range and as --blocks managed allocations
 * of size/blocks each (rounded up to 4 KiB); before each eviction every
 * byte is written on the GPU, so that it is resident there and its host
 * copy stale. Settings, on an idle stream of their own, each the first
 * (for one and each, the pages' first time on the host, as a second
 * pass's eviction of blocks that never left the GPU is; batch moves the
 * blocks each moved), then the best and the median of --repeat more:
 *   one     the range, one cudaMemPrefetchAsync to the host;
 *   each    the blocks, one cudaMemPrefetchAsync each;
 *   batch   the blocks, one cudaMemPrefetchBatchAsync.
 * Each row: the first's ms to the stream's end; the best's ms in the
 * calls and to the stream's end; the median's two; the best's GB/s.
 *
 * What a profile's second pass has around its evictions that this has
 * not, each as an option (the pass's evictions ran at 3 GB/s, these at
 * 8-15; H200, 2026-11-30):
 *   --um-counters on   CUPTI's unified-memory counter records on, as a
 *                      profiled pass has them, their buffers counted;
 *   --pin-beside SIZE  a thread pinning SIZE of host memory the way the
 *                      staging pool is pinned ahead of a replay (cuda_ops'
 *                      host_alloc beside other work), freeing it, and
 *                      again, for as long as the evictions run.
 *
 *   bench/evict_scatter [--size BYTES] [--blocks N] [--repeat N]
 *                       [--um-counters on|off] [--pin-beside SIZE]
 *
 * Exit status 77 without a GPU (or one without concurrent managed
 * access), 2 for a bad option.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>
#include <cupti.h>

#include "bench_gpu.h"
#include "common/util.h"
#include "cuda_ops/cuda_ops.h"
#include "profiler/cupti_ops.h"

#define PROG       "evict_scatter"
#define EXIT_USAGE 2
#define MAX_BLOCKS 65536
#define MAX_REPEAT 100
#define PAGE       4096
#define UM_BUFFER  (1u << 20)

#define CHECK(fn, args) bench_cuda_check(PROG, fn args, #fn)

typedef enum setting { ONE, EACH, BATCH, SETTINGS } setting_t;

static const char *const setting_names[SETTINGS] = {"one", "each", "batch"};

typedef struct bench {
    uint64_t     size, block;
    int          nblocks;
    char        *range;
    void       **blocks;
    size_t      *sizes;
    cudaStream_t stream;
} bench_t;

typedef struct timing {
    double call_ms, end_ms;
} timing_t;

/* The pinning thread beside the evictions (--pin-beside). */
typedef struct pinner {
    uint64_t     size;
    pthread_t    thread;
    atomic_int   stop;
    unsigned     pins, failed;
    double       pin_ms; /* summed over pins */
} pinner_t;

static atomic_ulong um_records; /* delivered while --um-counters is on */

static void usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, PROG ": ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\nusage: " PROG " [--size BYTES] [--blocks N] [--repeat N] "
                    "[--um-counters on|off] [--pin-beside SIZE]\n");
    exit(EXIT_USAGE);
}

/* Every byte of the setting's memory resident on the GPU and written
 * there (its host copy stale), the stream idle. */
static void make_resident(const bench_t *b, setting_t s)
{
    int n = s == ONE ? 1 : b->nblocks;

    for (int i = 0; i < n; i++) {
        void *p = s == ONE ? (void *)b->range : b->blocks[i];
        size_t size = s == ONE ? b->size : b->sizes[i];

        CHECK(cudaMemPrefetchAsync, (p, size, bench_location(0), 0, b->stream));
        CHECK(cudaMemsetAsync, (p, (int)(i & 0xff), size, b->stream));
    }
    CHECK(cudaStreamSynchronize, (b->stream));
}

static void evict(const bench_t *b, setting_t s)
{
    struct cudaMemLocation host = bench_location(1);
    size_t first = 0;

    switch (s) {
    case ONE:
        CHECK(cudaMemPrefetchAsync, (b->range, b->size, host, 0, b->stream));
        break;
    case EACH:
        for (int i = 0; i < b->nblocks; i++)
            CHECK(cudaMemPrefetchAsync, (b->blocks[i], b->sizes[i], host, 0, b->stream));
        break;
    default:
        CHECK(cudaMemPrefetchBatchAsync,
              (b->blocks, b->sizes, (size_t)b->nblocks, &host, &first, 1, 0, b->stream));
        break;
    }
}

static timing_t evict_time(const bench_t *b, setting_t s)
{
    uint64_t t0, t1;

    make_resident(b, s);
    t0 = umadv__now_ns();
    evict(b, s);
    t1 = umadv__now_ns();
    CHECK(cudaStreamSynchronize, (b->stream));
    return (timing_t){(double)(t1 - t0) / 1e6, (double)(umadv__now_ns() - t0) / 1e6};
}

static void setup(bench_t *b)
{
    bench_require_managed_gpu(PROG);
    b->block  = (b->size / (uint64_t)b->nblocks + PAGE - 1) / PAGE * PAGE;
    b->blocks = calloc((size_t)b->nblocks, sizeof(*b->blocks));
    b->sizes  = calloc((size_t)b->nblocks, sizeof(*b->sizes));
    if (b->blocks == NULL || b->sizes == NULL) {
        fprintf(stderr, PROG ": out of memory\n");
        exit(EXIT_FAILURE);
    }
    CHECK(cudaMallocManaged, ((void **)&b->range, b->size, cudaMemAttachGlobal));
    for (int i = 0; i < b->nblocks; i++) {
        CHECK(cudaMallocManaged, (&b->blocks[i], b->block, cudaMemAttachGlobal));
        b->sizes[i] = b->block;
    }
    CHECK(cudaStreamCreateWithFlags, (&b->stream, cudaStreamNonBlocking));
}

/* ---- what a second pass has around its evictions ---------------------- */

static int cupti_ok(CUptiResult res, const char *call)
{
    const char *why = NULL;

    if (res == CUPTI_SUCCESS)
        return 1;
    cuptiGetResultString(res, &why);
    fprintf(stderr, PROG ": %s: %s\n", call, why != NULL ? why : "unknown CUPTI error");
    return 0;
}

static void CUPTIAPI um_buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
    *buffer = aligned_alloc(8, UM_BUFFER);
    *size = *buffer != NULL ? UM_BUFFER : 0;
    *max_records = 0;
}

static void CUPTIAPI um_buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer,
                                         size_t size, size_t valid)
{
    CUpti_Activity *record = NULL;

    while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS)
        atomic_fetch_add(&um_records, 1);
    free(buffer);
}

/* The counters a profiled pass turns on (umadv__prof_um_config), and the
 * buffers their records come in; 0 if CUPTI refused (said). */
static int um_counters_on(void)
{
    CUpti_ActivityUnifiedMemoryCounterConfig config[UMADV_PROF_UM_COUNTERS];
    uint32_t n = umadv__prof_um_config(config);

    return cupti_ok(cuptiActivityRegisterCallbacks(um_buffer_requested, um_buffer_completed),
                    "cuptiActivityRegisterCallbacks") &&
           cupti_ok(cuptiActivityConfigureUnifiedMemoryCounter(config, n),
                    "cuptiActivityConfigureUnifiedMemoryCounter") &&
           cupti_ok(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER),
                    "cuptiActivityEnable");
}

static void *pinner_main(void *arg)
{
    pinner_t *p = arg;
    const umadv_cuda_ops_t *ops = &umadv__cuda_ops_cudart;

    if (ops->thread_begin(0) != UMADV_OK)
        return NULL;
    while (!atomic_load(&p->stop)) {
        uint64_t t0 = umadv__now_ns();
        void *base = NULL;

        if (ops->host_alloc(p->size, UMADV_PIN_BESIDE, &base) != UMADV_OK) {
            p->failed++;
            break;
        }
        p->pin_ms += (double)(umadv__now_ns() - t0) / 1e6;
        p->pins++;
        ops->host_free(base, p->size);
    }
    return NULL;
}

static void pinner_start(pinner_t *p)
{
    if (p->size == 0)
        return;
    if (pthread_create(&p->thread, NULL, pinner_main, p) != 0) {
        fprintf(stderr, PROG ": cannot start the pinning thread\n");
        exit(EXIT_FAILURE);
    }
}

static void pinner_stop(pinner_t *p)
{
    if (p->size == 0)
        return;
    atomic_store(&p->stop, 1);
    pthread_join(p->thread, NULL);
    printf("beside: %u pins of %.1f MiB, %.1f ms each%s\n", p->pins,
           (double)p->size / 1048576.0, p->pins > 0 ? p->pin_ms / p->pins : 0.0,
           p->failed > 0 ? "; a pin failed" : "");
}

static int by_end(const void *x, const void *y)
{
    const timing_t *a = x, *b = y;

    return a->end_ms < b->end_ms ? -1 : a->end_ms > b->end_ms;
}

int main(int argc, char **argv)
{
    bench_t b = {.size = UINT64_C(256) << 20, .nblocks = 96};
    timing_t runs[MAX_REPEAT];
    pinner_t pinner = {0};
    int repeat = 5, um = 0, devices = 0;

    for (int i = 1; i < argc; i += 2) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;

        if (v == NULL)
            usage_error("option '%s' needs a value", argv[i]);
        else if (strcmp(argv[i], "--size") == 0) {
            if (umadv_size_parse(v, &b.size) != UMADV_OK || b.size < PAGE)
                usage_error("invalid --size '%s' (at least 4K)", v);
        } else if (strcmp(argv[i], "--blocks") == 0) {
            b.nblocks = bench_int_option(v, 2, MAX_BLOCKS, usage_error,
                                         "invalid --blocks '%s' (2 to 65536)");
        } else if (strcmp(argv[i], "--repeat") == 0) {
            repeat = bench_int_option(v, 1, MAX_REPEAT, usage_error,
                                      "invalid --repeat '%s' (1 to 100)");
        } else if (strcmp(argv[i], "--um-counters") == 0) {
            if (strcmp(v, "on") != 0 && strcmp(v, "off") != 0)
                usage_error("invalid --um-counters '%s' (on or off)", v);
            um = strcmp(v, "on") == 0;
        } else if (strcmp(argv[i], "--pin-beside") == 0) {
            if (umadv_size_parse(v, &pinner.size) != UMADV_OK || pinner.size < PAGE)
                usage_error("invalid --pin-beside '%s' (at least 4K)", v);
        } else {
            usage_error("unknown option '%s'", argv[i]);
        }
    }
    /* once the driver is up (before, CUPTI answers NOT_READY) and before
     * the context, as a profiler subscribes; without a GPU setup skips */
    if (um && cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0 && !um_counters_on())
        return EXIT_FAILURE;
    setup(&b);
    printf(PROG ": %.1f MiB to the host, one range or %d blocks of %.2f MiB; the first, then "
           "the best and the median of %d\n", (double)b.size / 1048576.0, b.nblocks,
           (double)b.block / 1048576.0, repeat);
    if (um || pinner.size > 0)
        printf("around them: unified-memory counters %s, %.1f MiB pinned beside\n",
               um ? "on" : "off", (double)pinner.size / 1048576.0);
    pinner_start(&pinner);
    printf("%-6s %10s %10s %10s %10s %10s %8s\n", "way", "first ms", "call ms", "end ms",
           "median", "its call", "GB/s");
    for (int s = 0; s < SETTINGS; s++) {
        uint64_t bytes = s == ONE ? b.size : b.block * (uint64_t)b.nblocks;
        timing_t first = evict_time(&b, (setting_t)s), best, median;

        for (int r = 0; r < repeat; r++)
            runs[r] = evict_time(&b, (setting_t)s);
        qsort(runs, (size_t)repeat, sizeof(*runs), by_end);
        best = runs[0];
        median = runs[repeat / 2];
        printf("%-6s %10.3f %10.3f %10.3f %10.3f %10.3f %8.2f\n", setting_names[s],
               first.end_ms, best.call_ms, best.end_ms, median.end_ms, median.call_ms,
               (double)bytes / best.end_ms / 1e6);
    }
    pinner_stop(&pinner);
    if (um) {
        if (!cupti_ok(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), "cuptiActivityFlushAll"))
            return EXIT_FAILURE;
        printf("unified-memory records: %lu\n", (unsigned long)atomic_load(&um_records));
    }
    return 0;
}
