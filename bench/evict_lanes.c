/*
 * evict_lanes: does eviction (cudaMemPrefetchAsync to the host) get
 * faster with more threads issuing it at once? The executor has one
 * eviction lane, and eviction bounds every budgeted PyTorch run
 * (bench/RESULTS.md): if the driver migrates disjoint ranges in parallel,
 * more lanes would pay.
 *
 * One managed buffer (--size, default 4 GiB, never more than a quarter of
 * the free GPU memory) is made resident on the GPU, then moved to the host
 * by N threads at once, each over its own contiguous share in calls of
 * --call bytes on its own stream; the same for fetching it back. Every
 * count of threads runs in the same process on the same buffer, warm host
 * memory first (DESIGN.md: the first eviction into fresh host memory is
 * slow), best of --repeat. Prints GB/s and the ratio to one thread.
 *
 *   bench/evict_lanes [--size BYTES] [--call BYTES] [--repeat N] [--threads 1,2,4,8]
 *
 * Exit status 77 without a GPU.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "cuda_ops/cuda_ops.h"

#define EXIT_SKIP   77
#define MAX_THREADS 64

typedef struct bench_opts {
    uint64_t size, call;
    int      repeat;
    int      threads[16];
    int      nthreads;
} bench_opts_t;

typedef struct lane_job {
    const umadv_cuda_ops_t *ops;
    char                   *base;
    uint64_t                len, call;
    int                     location;
    umadv_stream_t          stream;
    umadv_status_t          status;
} lane_job_t;

static const umadv_cuda_ops_t *ops;

static void die(const char *what)
{
    fprintf(stderr, "evict_lanes: %s\n", what);
    exit(EXIT_FAILURE);
}

static uint64_t parse_size(const char *flag, const char *text)
{
    uint64_t v;

    if (umadv_size_parse(text, &v) != UMADV_OK || v == 0) {
        fprintf(stderr, "evict_lanes: invalid size '%s' for %s\n", text, flag);
        exit(2);
    }
    return v;
}

static void parse_threads(bench_opts_t *o, const char *text)
{
    char *end;

    o->nthreads = 0;
    for (const char *p = text; *p != '\0' && o->nthreads < 16; p = *end ? end + 1 : end) {
        long n = strtol(p, &end, 10);
        if (end == p || n < 1 || n > MAX_THREADS || (*end != ',' && *end != '\0')) {
            fprintf(stderr, "evict_lanes: invalid --threads '%s': counts from 1 to %d\n",
                    text, MAX_THREADS);
            exit(2);
        }
        o->threads[o->nthreads++] = (int)n;
    }
}

static void opts_parse(int argc, char **argv, bench_opts_t *o)
{
    *o = (bench_opts_t){.size = UINT64_C(4) << 30, .call = UINT64_C(256) << 20, .repeat = 3,
                        .threads = {1, 2, 4, 8}, .nthreads = 4};
    for (int i = 1; i < argc; i += 2) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (v == NULL)
            die("every option takes a value: --size, --call, --repeat, --threads");
        if (strcmp(argv[i], "--size") == 0)
            o->size = parse_size("--size", v);
        else if (strcmp(argv[i], "--call") == 0)
            o->call = parse_size("--call", v);
        else if (strcmp(argv[i], "--repeat") == 0)
            o->repeat = atoi(v) > 0 ? atoi(v) : 1;
        else if (strcmp(argv[i], "--threads") == 0)
            parse_threads(o, v);
        else
            die("unknown option (see the comment at the top of bench/evict_lanes.c)");
    }
}

/* One thread's share, call after call, then its stream drained. */
static void *lane_main(void *arg)
{
    lane_job_t *j = arg;

    j->status = j->ops->thread_begin(0);
    for (uint64_t off = 0; off < j->len && j->status == UMADV_OK; off += j->call) {
        uint64_t n = UMADV_MIN(j->call, j->len - off);
        j->status = j->ops->prefetch(j->base + off, n, j->location, j->stream);
    }
    if (j->status == UMADV_OK)
        j->status = j->ops->stream_synchronize(j->stream);
    return NULL;
}

/* Seconds for @n threads to move the buffer to @location. */
static double move(const bench_opts_t *o, char *buf, umadv_stream_t *streams, int n,
                   int location)
{
    pthread_t tid[MAX_THREADS];
    lane_job_t job[MAX_THREADS];
    uint64_t share = (o->size / (uint64_t)n + 4095) & ~UINT64_C(4095);
    uint64_t start = umadv__now_ns();

    for (int t = 0; t < n; t++) {
        uint64_t off = UMADV_MIN((uint64_t)t * share, o->size);
        job[t] = (lane_job_t){ops, buf + off, UMADV_MIN(share, o->size - off), o->call,
                              location, streams[t], UMADV_OK};
        if (pthread_create(&tid[t], NULL, lane_main, &job[t]) != 0)
            die("pthread_create failed");
    }
    for (int t = 0; t < n; t++) {
        pthread_join(tid[t], NULL);
        if (job[t].status != UMADV_OK)
            die("a prefetch failed (logged above)");
    }
    return (double)(umadv__now_ns() - start) / 1e9;
}

/* One move with one thread, and what the driver says is free around it:
 * a move that frees or takes no GPU memory did not happen. */
static void report_move(const bench_opts_t *o, char *buf, umadv_stream_t *streams,
                        const char *what, int location)
{
    uint64_t free0 = 0, free1 = 0, total = 0;
    double s;

    ops->mem_get_info(&free0, &total);
    s = move(o, buf, streams, 1, location);
    ops->mem_get_info(&free1, &total);
    printf("%s: %.1f ms (%.2f GB/s), free GPU memory %.2f -> %.2f GiB\n", what, s * 1e3,
           (double)o->size / s / 1e9, (double)free0 / (1 << 30), (double)free1 / (1 << 30));
}

/* Best of @repeat evictions and fetches with @n threads, in GB/s. */
static void measure(const bench_opts_t *o, char *buf, umadv_stream_t *streams, int n,
                    double *evict_p, double *fetch_p)
{
    double best_e = 1e30, best_f = 1e30;

    for (int r = 0; r < o->repeat; r++) {
        /* UMADV_MIN evaluates its arguments twice: one move each. */
        double e = move(o, buf, streams, n, UMADV_CUDA_LOCATION_HOST);
        double f = move(o, buf, streams, n, 0);

        best_e = UMADV_MIN(best_e, e);
        best_f = UMADV_MIN(best_f, f);
    }
    *evict_p = (double)o->size / best_e / 1e9;
    *fetch_p = (double)o->size / best_f / 1e9;
}

static void device_check(bench_opts_t *o)
{
    uint64_t free_b = 0, total_b = 0;
    int count = 0;

    ops = &umadv__cuda_ops_cudart;
    if (ops->device_count(&count) != UMADV_OK || count == 0) {
        fprintf(stderr, "evict_lanes: no CUDA device\n");
        exit(EXIT_SKIP);
    }
    if (ops->thread_begin(0) != UMADV_OK || ops->mem_get_info(&free_b, &total_b) != UMADV_OK)
        die("cannot query device 0");
    /* Never oversubscribe a shared GPU. */
    if (o->size > free_b / 4)
        o->size = (free_b / 4) & ~((UINT64_C(2) << 20) - 1);
}

int main(int argc, char **argv)
{
    bench_opts_t o;
    umadv_stream_t streams[MAX_THREADS];
    double e1 = 0, f1 = 0;
    char *buf = NULL;
    int most = 1;

    opts_parse(argc, argv, &o);
    device_check(&o);
    for (int i = 0; i < o.nthreads; i++)
        most = UMADV_MAX(most, o.threads[i]);
    for (int t = 0; t < most; t++) {
        if (ops->stream_create(&streams[t]) != UMADV_OK)
            die("stream_create failed");
    }
    if (ops->malloc_managed(o.size, UINT64_C(2) << 20, (void **)&buf) != UMADV_OK)
        die("cudaMallocManaged failed");
    memset(buf, 1, o.size); /* host pages exist: warm */
    report_move(&o, buf, streams, "warm-up fetch", 0);
    report_move(&o, buf, streams, "warm-up eviction", UMADV_CUDA_LOCATION_HOST);
    report_move(&o, buf, streams, "warm-up fetch", 0);
    printf("evict_lanes: %.2f GiB, calls of %.0f MiB, best of %d\n",
           (double)o.size / (1 << 30), (double)o.call / (1 << 20), o.repeat);
    printf("%7s %12s %8s %12s %8s\n", "threads", "evict GB/s", "x 1", "fetch GB/s", "x 1");
    for (int i = 0; i < o.nthreads; i++) {
        double e, f;
        measure(&o, buf, streams, o.threads[i], &e, &f);
        if (i == 0)
            e1 = e, f1 = f;
        printf("%7d %12.2f %8.2f %12.2f %8.2f\n", o.threads[i], e, e / e1, f, f / f1);
        fflush(stdout);
    }
    ops->free(buf, o.size);
    for (int t = 0; t < most; t++)
        ops->stream_destroy(streams[t]);
    return EXIT_SUCCESS;
}
