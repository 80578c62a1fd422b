/*
 * beside_kernels: what each of umadv's data-moving CUDA calls costs while
 * a kernel keeps the GPU busy, against the same call on an idle GPU (issue
 * 11). In a replayed MLP iteration (H200), half of the staged lane calls
 * took about one step's compute time more than their bytes need (64 MiB in
 * 20-25 ms, where the idle link moves it in 1.6): a call that waits for
 * the running kernel's last wave of blocks (a copy the driver runs on the
 * SMs, say) would do that. This finds which call waits, and whether a
 * stream of the greatest priority gets it through.
 *
 * One managed range of --size (default 256 MiB), a device buffer and a
 * pinned buffer as large; a busy kernel of many waves of blocks, each
 * spinning, --busy-ms long in all (calibrated first). Every call is timed
 * from its issue to its stream's synchronisation, best of --repeat, in
 * four settings: the GPU idle; issued right after the busy kernel's
 * launch on another stream; the same from a stream of the greatest
 * priority; the same from a CUDA context of its own (its stream, of the
 * greatest priority there, and its device buffer made in it), as umadv's
 * lanes once ran, every model slower (umadv(7), ONE CONTEXT):
 * whether a call there waits for the busy kernel. --waves 1 makes the busy kernel one wave of blocks that all
 * run for its whole length, as a persistent GEMM's do: no block retires
 * early for a copy of any priority to take its place. Each call starts from the state umadv issues it in (the range
 * resident on the GPU; on the host for the prefetch to the GPU).
 *
 *   bench/beside_kernels [--size BYTES] [--busy-ms MS] [--waves N] [--repeat N]
 *
 * Exit status 77 without a GPU (or one without concurrent managed
 * access), 2 for a bad option.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>

#include "beside_kernels_busy.h"
#include "bench_gpu.h"
#include "common/util.h"

#define EXIT_USAGE 2
#define BUSY_WAVES 16 /* the busy kernel's waves of blocks, by default: a GEMM has many */
#define MAX_WAVES  1024
#define BUSY_WORDS (UINT64_C(1) << 21)
#define MAX_REPEAT 100

typedef enum setting { IDLE, BESIDE, BESIDE_PRIORITY, BESIDE_APART, SETTINGS } setting_t;

static const char *const setting_names[SETTINGS] = {"idle", "beside a kernel",
                                                    "beside, high priority",
                                                    "beside, own context"};

typedef enum call {
    COPY_OUT, COPY_IN, COPY_TO_BOUNCE, COPY_FROM_BOUNCE, STAGE_OUT_BOUNCED, COPY_DEVICE_OUT,
    COPY_OUT_KIND, BATCH_OUT_HINTS, BATCH_OUT_OVERLAP, BATCH_IN_OVERLAP, BATCH_TO_BOUNCE_OVERLAP,
    DISCARD, DISCARD_PREFETCH, PREFETCH_HOST, PREFETCH_GPU, CALLS
} call_t;

static const char *const call_names[CALLS] = {
    "memcpy managed->pinned",
    "memcpy pinned->managed",
    "memcpy managed->device",
    "memcpy device->managed",
    "staged out via bounce (32 MiB)",
    "memcpy device->pinned",
    "memcpy managed->pinned, D2H kind",
    "batch managed->pinned, hints",
    "batch managed->pinned, overlap",
    "batch pinned->managed, overlap",
    "batch managed->device, overlap",
    "cudaMemDiscardBatchAsync",
    "cudaMemDiscardAndPrefetchBatch",
    "cudaMemPrefetchAsync to host",
    "cudaMemPrefetchAsync to GPU",
};

typedef struct bench {
    uint64_t            size;
    char               *managed, *pinned;
    char               *device[2];               /* [1] made in the context apart */
    unsigned long long *busy_words;
    unsigned            busy_blocks;
    long long           busy_cycles;
    cudaStream_t        busy_stream, stream[3]; /* [0] default priority, [1] greatest,
                                                 * [2] greatest, in the context apart */
    CUcontext           apart;
} bench_t;

static void die(const char *what)
{
    fprintf(stderr, "beside_kernels: %s\n", what);
    exit(EXIT_FAILURE);
}

#define CHECK(fn, args) bench_cuda_check("beside_kernels", fn args, #fn)

static void usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "beside_kernels: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\nusage: beside_kernels [--size BYTES] [--busy-ms MS] [--waves N] "
                    "[--repeat N]\n");
    exit(EXIT_USAGE);
}

static double ms_since(uint64_t t0)
{
    return (double)(umadv__now_ns() - t0) / 1e6;
}

static void prefetch(const bench_t *b, int host, cudaStream_t s)
{
    CHECK(cudaMemPrefetchAsync, (b->managed, b->size, bench_location(host), 0, s));
}

/* The state the call is issued in, reached and synchronised. */
static void call_prepare(const bench_t *b, call_t c)
{
    prefetch(b, c == PREFETCH_GPU, 0);
    CHECK(cudaDeviceSynchronize, ());
}

static void stage_out_bounced(const bench_t *b, cudaStream_t s, int apart)
{
    const uint64_t chunk = UINT64_C(32) << 20;

    for (uint64_t o = 0; o < b->size; o += chunk) {
        size_t n = (size_t)UMADV_MIN(chunk, b->size - o);

        CHECK(cudaMemcpyAsync, (b->device[apart], b->managed + o, n, cudaMemcpyDefault, s));
        CHECK(cudaMemcpyAsync, (b->pinned + o, b->device[apart], n, cudaMemcpyDefault, s));
    }
}

/* One cudaMemcpyBatchAsync of the whole buffer, the managed side hinted
 * on the GPU, the other where it is; @overlap: the flag that asks for a
 * copy beside compute (the driver may ignore it). */
static void batch_copy(void *dst, const void *src, size_t size, int dst_host, int src_host,
                       int overlap, cudaStream_t s)
{
    struct cudaMemcpyAttributes attr;
    size_t idx = 0;

    memset(&attr, 0, sizeof(attr));
    attr.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
    attr.srcLocHint = bench_location(src_host);
    attr.dstLocHint = bench_location(dst_host);
    attr.flags = overlap ? cudaMemcpyFlagPreferOverlapWithCompute : cudaMemcpyFlagDefault;
    CHECK(cudaMemcpyBatchAsync, (&dst, &src, &size, 1, &attr, &idx, 1, s));
}

/* @apart: issued in the context apart, with its device buffer. */
static void call_issue(const bench_t *b, call_t c, cudaStream_t s, int apart)
{
    void *ptr = b->managed;
    size_t size = b->size, first = 0;
    struct cudaMemLocation gpu = bench_location(0);

    switch (c) {
    case COPY_OUT:
        CHECK(cudaMemcpyAsync, (b->pinned, b->managed, b->size, cudaMemcpyDefault, s));
        break;
    case COPY_IN:
        CHECK(cudaMemcpyAsync, (b->managed, b->pinned, b->size, cudaMemcpyDefault, s));
        break;
    case COPY_TO_BOUNCE:
        CHECK(cudaMemcpyAsync, (b->device[apart], b->managed, b->size, cudaMemcpyDefault, s));
        break;
    case COPY_FROM_BOUNCE:
        CHECK(cudaMemcpyAsync, (b->managed, b->device[apart], b->size, cudaMemcpyDefault, s));
        break;
    case STAGE_OUT_BOUNCED:
        stage_out_bounced(b, s, apart);
        break;
    case COPY_DEVICE_OUT:
        CHECK(cudaMemcpyAsync, (b->pinned, b->device[apart], b->size, cudaMemcpyDefault, s));
        break;
    case COPY_OUT_KIND:
        CHECK(cudaMemcpyAsync, (b->pinned, b->managed, b->size, cudaMemcpyDeviceToHost, s));
        break;
    case BATCH_OUT_HINTS:
    case BATCH_OUT_OVERLAP:
        batch_copy(b->pinned, b->managed, b->size, 1, 0, c == BATCH_OUT_OVERLAP, s);
        break;
    case BATCH_IN_OVERLAP:
        batch_copy(b->managed, b->pinned, b->size, 0, 1, 1, s);
        break;
    case BATCH_TO_BOUNCE_OVERLAP:
        batch_copy(b->device[apart], b->managed, b->size, 0, 0, 1, s);
        break;
    case DISCARD:
        CHECK(cudaMemDiscardBatchAsync, (&ptr, &size, 1, 0, s));
        break;
    case DISCARD_PREFETCH:
        CHECK(cudaMemDiscardAndPrefetchBatchAsync, (&ptr, &size, 1, &gpu, &first, 1, 0, s));
        break;
    case PREFETCH_HOST:
    case PREFETCH_GPU:
        prefetch(b, c == PREFETCH_HOST, s);
        break;
    default:
        break;
    }
}

static void busy_start(const bench_t *b)
{
    int err = busy_launch(b->busy_words, BUSY_WORDS, b->busy_blocks, b->busy_cycles,
                          b->busy_stream);

    bench_cuda_check("beside_kernels", err, "busy_launch");
}

/* One call in @setting: ms from its issue to its stream's end. */
static double call_time(const bench_t *b, call_t c, setting_t setting)
{
    int apart = setting == BESIDE_APART;
    cudaStream_t s = b->stream[apart ? 2 : setting == BESIDE_PRIORITY];
    uint64_t t0;
    double ms;

    call_prepare(b, c);
    if (setting != IDLE)
        busy_start(b);
    if (apart)
        bench_context_push("beside_kernels", b->apart);
    t0 = umadv__now_ns();
    call_issue(b, c, s, apart);
    CHECK(cudaStreamSynchronize, (s));
    ms = ms_since(t0);
    if (apart)
        bench_context_pop("beside_kernels");
    CHECK(cudaDeviceSynchronize, ());
    return ms;
}

/* The busy kernel's cycles per block for @busy_ms in all. Returns the
 * measured ms of the result. */
static double busy_calibrate_ms(bench_t *b, double busy_ms)
{
    double ms = 0;

    bench_cuda_check("beside_kernels",
                     busy_calibrate(b->busy_words, BUSY_WORDS, b->busy_blocks, busy_ms,
                                    b->busy_stream, &b->busy_cycles, &ms),
                     "busy_calibrate");
    return ms;
}

static void setup(bench_t *b, uint64_t size, int waves)
{
    int sms = 0, lo = 0, hi = 0;
    size_t free_b = 0, total_b = 0;

    bench_require_managed_gpu("beside_kernels");
    CHECK(cudaDeviceGetAttribute, (&sms, cudaDevAttrMultiProcessorCount, 0));
    CHECK(cudaMemGetInfo, (&free_b, &total_b));
    if (3 * size + BUSY_WORDS * 8 > free_b / 4)
        die("--size is more than a twelfth of the free GPU memory");
    b->size = size;
    b->busy_blocks = (unsigned)sms * 8 * (unsigned)waves; /* 8 blocks of 256 fill an SM */
    CHECK(cudaMallocManaged, ((void **)&b->managed, size, cudaMemAttachGlobal));
    CHECK(cudaMallocManaged, ((void **)&b->busy_words, BUSY_WORDS * 8, cudaMemAttachGlobal));
    CHECK(cudaMalloc, ((void **)&b->device[0], size));
    /* portable: pinned for the context apart too */
    CHECK(cudaHostAlloc, ((void **)&b->pinned, size, cudaHostAllocPortable));
    memset(b->pinned, 1, size);
    CHECK(cudaMemset, (b->managed, 2, size));
    CHECK(cudaMemset, (b->busy_words, 0, BUSY_WORDS * 8));
    CHECK(cudaDeviceGetStreamPriorityRange, (&lo, &hi));
    CHECK(cudaStreamCreateWithFlags, (&b->busy_stream, cudaStreamNonBlocking));
    CHECK(cudaStreamCreateWithFlags, (&b->stream[0], cudaStreamNonBlocking));
    CHECK(cudaStreamCreateWithPriority, (&b->stream[1], cudaStreamNonBlocking, hi));
    b->apart = bench_context_apart("beside_kernels");
    bench_context_push("beside_kernels", b->apart);
    CHECK(cudaMalloc, ((void **)&b->device[1], size));
    CHECK(cudaStreamCreateWithPriority, (&b->stream[2], cudaStreamNonBlocking, hi));
    bench_context_pop("beside_kernels");
    CHECK(cudaDeviceSynchronize, ());
}

int main(int argc, char **argv)
{
    uint64_t size = UINT64_C(256) << 20;
    double busy_ms = 20, best[CALLS][SETTINGS];
    int repeat = 3, waves = BUSY_WAVES;
    bench_t b = {0};
    struct cudaDeviceProp prop;
    int driver = 0;

    for (int i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;

        if (strcmp(argv[i], "--size") == 0 && v != NULL) {
            if (umadv_size_parse(v, &size) != UMADV_OK || size == 0)
                usage_error("invalid size '%s'", v);
        } else if (strcmp(argv[i], "--busy-ms") == 0 && v != NULL) {
            busy_ms = atof(v);
            if (!(busy_ms >= 1 && busy_ms <= 1000))
                usage_error("invalid --busy-ms '%s' (1 to 1000)", v);
        } else if (strcmp(argv[i], "--waves") == 0 && v != NULL) {
            waves = atoi(v);
            if (waves < 1 || waves > MAX_WAVES)
                usage_error("invalid --waves '%s' (1 to 1024)", v);
        } else if (strcmp(argv[i], "--repeat") == 0 && v != NULL) {
            repeat = atoi(v);
            if (repeat < 1 || repeat > MAX_REPEAT)
                usage_error("invalid --repeat '%s' (1 to 100)", v);
        } else {
            usage_error("unknown option '%s'", argv[i]);
        }
        i++;
    }
    setup(&b, size, waves);
    CHECK(cudaGetDeviceProperties, (&prop, 0));
    CHECK(cudaDriverGetVersion, (&driver));
    printf("beside_kernels: %s, driver %d; %.0f MiB per call; busy kernel %.1f ms "
           "(%u blocks in %d waves)\n", prop.name, driver, (double)size / 1048576.0,
           busy_calibrate_ms(&b, busy_ms), b.busy_blocks, waves);
    for (int c = 0; c < CALLS; c++) {
        for (int s = 0; s < SETTINGS; s++) {
            best[c][s] = 1e30;
            for (int r = 0; r < repeat + 1; r++) { /* the first is a warm-up */
                double ms = call_time(&b, (call_t)c, (setting_t)s);
                if (r > 0 && ms < best[c][s])
                    best[c][s] = ms;
            }
        }
    }
    printf("%-32s", "call (ms, best of --repeat)");
    for (int s = 0; s < SETTINGS; s++)
        printf(" %22s", setting_names[s]);
    printf("\n");
    for (int c = 0; c < CALLS; c++) {
        printf("%-32s", call_names[c]);
        for (int s = 0; s < SETTINGS; s++)
            printf(" %9.2f (%5.1f GB/s)", best[c][s], (double)size / best[c][s] / 1e6);
        printf("\n");
    }
    return 0;
}
