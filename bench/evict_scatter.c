/*
 * evict_scatter: what a UVM eviction (a prefetch to the host) costs when
 * its bytes lie in many small blocks rather than in one range (issue 11).
 * A PyTorch densenet121's second pass (batch 32, half its footprint)
 * moved 2.16 GiB to the host in 30 calls that held the application's
 * thread 738.5 ms, while the unified-memory records of their migrations
 * sum to 52.6 ms; its 1460 blocks average 2.8 MiB (H200, 2026-11-30). One
 * 64 MiB range moves at about 11 GB/s (bench/evict_call_host). Whether
 * the driver's cost goes with the ranges of a call or with its bytes is
 * what a faster second pass turns on.
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
 *   bench/evict_scatter [--size BYTES] [--blocks N] [--repeat N]
 *
 * Exit status 77 without a GPU (or one without concurrent managed
 * access), 2 for a bad option.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>

#include "bench_gpu.h"
#include "common/util.h"

#define PROG       "evict_scatter"
#define EXIT_USAGE 2
#define MAX_BLOCKS 65536
#define MAX_REPEAT 100
#define PAGE       4096

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

static void usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, PROG ": ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\nusage: " PROG " [--size BYTES] [--blocks N] [--repeat N]\n");
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

static int by_end(const void *x, const void *y)
{
    const timing_t *a = x, *b = y;

    return a->end_ms < b->end_ms ? -1 : a->end_ms > b->end_ms;
}

int main(int argc, char **argv)
{
    bench_t b = {.size = UINT64_C(256) << 20, .nblocks = 96};
    timing_t runs[MAX_REPEAT];
    int repeat = 5;

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
        } else {
            usage_error("unknown option '%s'", argv[i]);
        }
    }
    setup(&b);
    printf(PROG ": %.1f MiB to the host, one range or %d blocks of %.2f MiB; the first, then "
           "the best and the median of %d\n", (double)b.size / 1048576.0, b.nblocks,
           (double)b.block / 1048576.0, repeat);
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
    return 0;
}
