/*
 * populate_cost: what making fresh managed pages on the GPU costs the
 * stream it is issued on, and the kernel after it (issue 11).
 *
 * A block bound over pages that are not on the GPU (released dead, staged
 * out, or never touched) is populated before the step that writes it: on
 * the step's own stream (exec/worker.c, populate_on_stream) or on the
 * fetch lane before a restore's copy. The simulator prices a population
 * by its call's host time. On VGG-16 b64 at save_on_cpu's peak (H200,
 * 2026-11-29) the GPU fell about 15 ms an iteration behind the
 * simulation of the very trace it replayed, while 9.6 GiB an iteration
 * were populated on the steps' streams and 2.7 GiB more on the fetch
 * lane: if the driver clears each new page on the GPU, that work sits
 * in front of the step's kernels. This measures it.
 *
 * One managed range of --size bytes. Each row brings the range to a
 * state, then on one stream: an event, the call (in pieces of --call
 * bytes), an event, a kernel that writes every word of the range (as a
 * step writes its fresh output), an event. States:
 *
 *   resident   on the GPU already (a block bound over pages a freed one left)
 *   discarded  on the GPU, then cudaMemDiscardBatchAsync (released dead, staged out)
 *   host       migrated to the host by cudaMemPrefetchAsync (a UVM eviction)
 *
 * Calls: "prefetch" (cudaMemPrefetchAsync to the GPU, one a piece, as
 * the executor populates), "discard+prefetch" (one
 * cudaMemDiscardAndPrefetchBatchAsync of the pieces, as the fetch lane
 * populates before a restore), "none" (the kernel alone: it faults
 * whatever is not on the GPU).
 *
 *   bench/populate_cost [--size BYTES] [--call BYTES,...] [--repeat N]
 *
 * Per row, the median of --repeat (after one warm-up): the call's host
 * time (issuing it), its GPU time (between its events), the kernel's GPU
 * time, and what the call and the kernel together take over the kernel
 * on a resident range with no call, as GB/s of the range. Exit status 77
 * without a GPU (or one without concurrent managed access), 2 for a bad
 * option.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>

#include "bench_gpu.h"
#include "evict_channels_kernels.h"
#include "common/util.h"

#define EXIT_USAGE 2
#define MAX_REPEAT 100
#define MAX_CALLS  8

typedef enum state { RESIDENT, DISCARDED, ON_HOST, STATES } state_t;
typedef enum call { PREFETCH, DISCARD_PREFETCH, NO_CALL, CALLS } call_t;

static const char *const state_names[STATES] = {"resident", "discarded", "host"};
static const char *const call_names[CALLS] = {"prefetch", "discard+prefetch", "none"};

typedef struct bench {
    uint64_t     size;
    char        *range;
    cudaStream_t stream;
    cudaEvent_t  ev[3]; /* before the call, after it, after the kernel */
    void       **ptrs;  /* the pieces of one call size */
    size_t      *sizes;
} bench_t;

typedef struct sample {
    double host_ms, call_ms, kernel_ms;
} sample_t;

#define CHECK(fn, args) bench_cuda_check("populate_cost", fn args, #fn)

static void usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "populate_cost: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\nusage: populate_cost [--size BYTES] [--call BYTES,...] [--repeat N]\n");
    exit(EXIT_USAGE);
}

static void write_range(const bench_t *b, uint64_t seed)
{
    bench_cuda_check("populate_cost",
                     channels_fill((uint64_t *)b->range, b->size / 8, seed, b->stream),
                     "channels_fill");
}

/* The range brought to @state, everything synchronised. */
static void state_reach(const bench_t *b, state_t state)
{
    void *ptr = b->range;
    size_t size = b->size;

    CHECK(cudaMemPrefetchAsync, (b->range, b->size, bench_location(0), 0, b->stream));
    write_range(b, 1); /* every page made on the GPU */
    if (state == DISCARDED)
        CHECK(cudaMemDiscardBatchAsync, (&ptr, &size, 1, 0, b->stream));
    else if (state == ON_HOST)
        CHECK(cudaMemPrefetchAsync, (b->range, b->size, bench_location(1), 0, b->stream));
    CHECK(cudaStreamSynchronize, (b->stream));
}

/* The pieces of @call_size the range splits into; their count. */
static size_t pieces_make(bench_t *b, uint64_t call_size)
{
    size_t n = 0;

    for (uint64_t o = 0; o < b->size; o += call_size, n++) {
        b->ptrs[n] = b->range + o;
        b->sizes[n] = (size_t)UMADV_MIN(call_size, b->size - o);
    }
    return n;
}

static void call_issue(const bench_t *b, call_t call, size_t npieces)
{
    struct cudaMemLocation gpu = bench_location(0);
    size_t first = 0;

    if (call == PREFETCH) {
        for (size_t i = 0; i < npieces; i++)
            CHECK(cudaMemPrefetchAsync, (b->ptrs[i], b->sizes[i], gpu, 0, b->stream));
    } else if (call == DISCARD_PREFETCH) {
        CHECK(cudaMemDiscardAndPrefetchBatchAsync,
              (b->ptrs, b->sizes, npieces, &gpu, &first, 1, 0, b->stream));
    }
}

static sample_t sample_take(bench_t *b, state_t state, call_t call, size_t npieces)
{
    sample_t s;
    float ms;
    uint64_t t0;

    state_reach(b, state);
    CHECK(cudaEventRecord, (b->ev[0], b->stream));
    t0 = umadv__now_ns();
    call_issue(b, call, npieces);
    s.host_ms = (double)(umadv__now_ns() - t0) / 1e6;
    CHECK(cudaEventRecord, (b->ev[1], b->stream));
    write_range(b, 2);
    CHECK(cudaEventRecord, (b->ev[2], b->stream));
    CHECK(cudaStreamSynchronize, (b->stream));
    CHECK(cudaEventElapsedTime, (&ms, b->ev[0], b->ev[1]));
    s.call_ms = ms;
    CHECK(cudaEventElapsedTime, (&ms, b->ev[1], b->ev[2]));
    s.kernel_ms = ms;
    return s;
}

static int double_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), double_cmp);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The median sample of @repeat, after a warm-up. */
static sample_t row_measure(bench_t *b, state_t state, call_t call, size_t npieces, int repeat)
{
    double host[MAX_REPEAT], gpu[MAX_REPEAT], kernel[MAX_REPEAT];
    sample_t s = sample_take(b, state, call, npieces);

    for (int r = 0; r < repeat; r++) {
        s = sample_take(b, state, call, npieces);
        host[r] = s.host_ms;
        gpu[r] = s.call_ms;
        kernel[r] = s.kernel_ms;
    }
    s.host_ms = median(host, repeat);
    s.call_ms = median(gpu, repeat);
    s.kernel_ms = median(kernel, repeat);
    return s;
}

static void setup(bench_t *b, uint64_t size, uint64_t smallest_call)
{
    size_t free_b = 0, total_b = 0, npieces = (size_t)((size + smallest_call - 1) / smallest_call);

    bench_require_managed_gpu("populate_cost");
    CHECK(cudaMemGetInfo, (&free_b, &total_b));
    if (size > free_b / 4) {
        fprintf(stderr, "populate_cost: --size is more than a quarter of the free GPU memory\n");
        exit(EXIT_FAILURE);
    }
    b->size = size;
    b->ptrs = calloc(npieces, sizeof(*b->ptrs));
    b->sizes = calloc(npieces, sizeof(*b->sizes));
    if (b->ptrs == NULL || b->sizes == NULL) {
        fprintf(stderr, "populate_cost: out of memory\n");
        exit(EXIT_FAILURE);
    }
    CHECK(cudaMallocManaged, ((void **)&b->range, size, cudaMemAttachGlobal));
    CHECK(cudaStreamCreateWithFlags, (&b->stream, cudaStreamNonBlocking));
    for (int i = 0; i < 3; i++)
        CHECK(cudaEventCreate, (&b->ev[i]));
}

/* --call's list: sizes of 2 MiB or more, multiples of 2 MiB (the
 * executor's sections), at most MAX_CALLS. Returns the count. */
static int calls_parse(const char *text, uint64_t *calls)
{
    char buf[256], *save = NULL;
    int n = 0;

    if (strlen(text) >= sizeof(buf))
        usage_error("invalid --call '%s' (too long)", text);
    strcpy(buf, text);
    for (char *tok = strtok_r(buf, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
        if (n == MAX_CALLS || umadv_size_parse(tok, &calls[n]) != UMADV_OK ||
            calls[n] < (UINT64_C(2) << 20) || calls[n] % (UINT64_C(2) << 20) != 0)
            usage_error("invalid --call '%s' (up to 8 sizes, each a multiple of 2 MiB)", text);
        n++;
    }
    if (n == 0)
        usage_error("invalid --call '%s' (no size)", text);
    return n;
}

static void row_print(const char *state, const char *call, uint64_t call_size, sample_t s,
                      double baseline_ms, uint64_t size)
{
    double extra = s.call_ms + s.kernel_ms - baseline_ms;

    printf("%-10s %-17s %8.0f %10.3f %10.3f %10.3f %10.3f", state, call,
           (double)call_size / 1048576.0, s.host_ms, s.call_ms, s.kernel_ms, extra);
    if (extra > 0.001)
        printf(" %9.1f\n", (double)size / extra / 1e6);
    else
        printf(" %9s\n", "-");
}

int main(int argc, char **argv)
{
    uint64_t size = UINT64_C(1) << 30, calls[MAX_CALLS] = {UINT64_C(2) << 20, UINT64_C(64) << 20};
    uint64_t smallest = UINT64_MAX;
    int ncalls = 2, repeat = 5, driver = 0;
    bench_t b = {0};
    struct cudaDeviceProp prop;
    sample_t base;

    for (int i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;

        if (strcmp(argv[i], "--size") == 0 && v != NULL) {
            if (umadv_size_parse(v, &size) != UMADV_OK || size == 0 || size % 8 != 0)
                usage_error("invalid --size '%s' (bytes, a multiple of 8)", v);
        } else if (strcmp(argv[i], "--call") == 0 && v != NULL) {
            ncalls = calls_parse(v, calls);
        } else if (strcmp(argv[i], "--repeat") == 0 && v != NULL) {
            repeat = atoi(v);
            if (repeat < 1 || repeat > MAX_REPEAT)
                usage_error("invalid --repeat '%s' (1 to 100)", v);
        } else {
            usage_error("unknown option '%s'", argv[i]);
        }
        i++;
    }
    for (int c = 0; c < ncalls; c++)
        smallest = UMADV_MIN(smallest, calls[c]);
    setup(&b, size, smallest); /* the piece arrays fit the smallest call's pieces */
    CHECK(cudaGetDeviceProperties, (&prop, 0));
    CHECK(cudaDriverGetVersion, (&driver));
    base = row_measure(&b, RESIDENT, NO_CALL, 0, repeat);
    printf("populate_cost: %s, driver %d; a range of %.0f MiB; median of %d\n", prop.name,
           driver, (double)size / 1048576.0, repeat);
    printf("%-10s %-17s %8s %10s %10s %10s %10s %9s\n", "state", "call", "piece MiB",
           "host ms", "call ms", "kernel ms", "extra ms", "GB/s");
    row_print(state_names[RESIDENT], call_names[NO_CALL], size, base, base.call_ms + base.kernel_ms,
              size);
    for (int st = 0; st < STATES; st++) {
        for (int c = 0; c < ncalls; c++) {
            size_t npieces = pieces_make(&b, calls[c]);

            for (int call = 0; call < NO_CALL; call++)
                row_print(state_names[st], call_names[call], calls[c],
                          row_measure(&b, (state_t)st, (call_t)call, npieces, repeat),
                          base.call_ms + base.kernel_ms, size);
        }
        if (st != RESIDENT)
            row_print(state_names[st], call_names[NO_CALL], size,
                      row_measure(&b, (state_t)st, NO_CALL, 0, repeat),
                      base.call_ms + base.kernel_ms, size);
    }
    return 0;
}
