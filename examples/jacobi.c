/*
 * jacobi: a classic CUDA program on managed memory, with no umadv code:
 * what `umadv run` takes unmodified (umadv-run(1), EXAMPLES).
 *
 * Two n x n grids in cudaMallocManaged memory (or, with --alloc device,
 * cudaMalloc memory filled and read back with cudaMemcpy, for
 * `umadv run --managed-malloc`), initialised on the host: a hot left
 * edge, zero elsewhere. Every iteration is one Jacobi sweep from one grid
 * into the other inside an NVTX range named "iteration" (--range), which
 * is how umadv finds the iterations. At the end the host reads the last
 * grid and prints a checksum of its bytes: the same with or without
 * umadv, under any budget.
 *
 * Exit status: 0 done, 1 a CUDA error, 2 usage error, 77 no CUDA device.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>
#include <nvtx3/nvToolsExt.h>

#include "jacobi_kernels.h"

#define EXIT_USAGE 2
#define EXIT_SKIP  77

typedef struct options {
    size_t      n;
    unsigned    iters;
    int         device_alloc; /* --alloc device */
    const char *range;
} options_t;

#define CHECK(_call) \
    do { \
        cudaError_t err_ = (_call); \
        if (err_ != cudaSuccess) { \
            fprintf(stderr, "jacobi: %s: %s\n", #_call, cudaGetErrorString(err_)); \
            exit(EXIT_FAILURE); \
        } \
    } while (0)

static void usage(const char *why)
{
    fprintf(stderr, "jacobi: %s\nusage: jacobi [--size N] [--iters N] [--alloc managed|device] "
            "[--range NAME]\n", why);
    exit(EXIT_USAGE);
}

static unsigned long parse_count(const char *flag, const char *text, unsigned long max)
{
    char *end;
    unsigned long v;

    errno = 0;
    v = strtoul(text, &end, 10);
    if (text[0] < '0' || text[0] > '9' || *end != '\0' || errno != 0 || v < 3 || v > max) {
        fprintf(stderr, "jacobi: %s: '%s' is not a number from 3 to %lu\n", flag, text, max);
        exit(EXIT_USAGE);
    }
    return v;
}

static void parse(int argc, char **argv, options_t *o)
{
    o->n = 1024;
    o->iters = 50;
    o->device_alloc = 0;
    o->range = "iteration";
    for (int i = 1; i < argc; i++) {
        const char *value = i + 1 < argc ? argv[i + 1] : NULL;

        if (value == NULL)
            usage(argv[i][0] == '-' ? "an option lacks its value" : "unexpected argument");
        if (strcmp(argv[i], "--size") == 0)
            o->n = parse_count("--size", value, 32768);
        else if (strcmp(argv[i], "--iters") == 0)
            o->iters = (unsigned)parse_count("--iters", value, 1000000);
        else if (strcmp(argv[i], "--alloc") == 0 && strcmp(value, "managed") == 0)
            o->device_alloc = 0;
        else if (strcmp(argv[i], "--alloc") == 0 && strcmp(value, "device") == 0)
            o->device_alloc = 1;
        else if (strcmp(argv[i], "--range") == 0)
            o->range = value;
        else
            usage("unknown option or value");
        i++;
    }
}

/* FNV-1a over the grid's bytes. */
static uint64_t checksum(const float *grid, size_t count)
{
    const unsigned char *p = (const unsigned char *)grid;
    uint64_t h = 0xcbf29ce484222325ull;

    for (size_t i = 0; i < count * sizeof(float); i++)
        h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

static void init(float *grid, size_t n)
{
    memset(grid, 0, n * n * sizeof(float));
    for (size_t y = 0; y < n; y++)
        grid[y * n] = 100.0f;
}

/* The grids: managed, or device memory filled from @host. */
static void allocate(const options_t *o, const float *host, float **a, float **b)
{
    size_t bytes = o->n * o->n * sizeof(float);

    if (o->device_alloc) {
        CHECK(cudaMalloc((void **)a, bytes));
        CHECK(cudaMalloc((void **)b, bytes));
        CHECK(cudaMemcpy(*a, host, bytes, cudaMemcpyHostToDevice));
        CHECK(cudaMemcpy(*b, host, bytes, cudaMemcpyHostToDevice));
        return;
    }
    CHECK(cudaMallocManaged((void **)a, bytes, cudaMemAttachGlobal));
    CHECK(cudaMallocManaged((void **)b, bytes, cudaMemAttachGlobal));
    memcpy(*a, host, bytes);
    memcpy(*b, host, bytes);
}

int main(int argc, char **argv)
{
    options_t o;
    float *host, *a, *b;
    int count = 0;

    parse(argc, argv, &o);
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
        fprintf(stderr, "jacobi: no CUDA device\n");
        return EXIT_SKIP;
    }
    host = malloc(o.n * o.n * sizeof(float));
    if (host == NULL) {
        fprintf(stderr, "jacobi: out of host memory\n");
        return EXIT_FAILURE;
    }
    init(host, o.n);
    allocate(&o, host, &a, &b);
    for (unsigned it = 0; it < o.iters; it++) {
        float *t;

        nvtxRangePushA(o.range);
        if (jacobi_sweep(a, b, o.n) != 0)
            CHECK(cudaGetLastError());
        nvtxRangePop();
        t = a, a = b, b = t;
    }
    CHECK(cudaDeviceSynchronize());
    if (o.device_alloc)
        CHECK(cudaMemcpy(host, a, o.n * o.n * sizeof(float), cudaMemcpyDeviceToHost));
    else
        memcpy(host, a, o.n * o.n * sizeof(float));
    printf("size %zu iterations %u\n", o.n, o.iters);
    printf("checksum 0x%016" PRIx64 "\n", checksum(host, o.n * o.n));
    printf("centre %.9g\n", (double)host[(o.n / 2) * o.n + o.n / 8]);
    CHECK(cudaFree(a));
    CHECK(cudaFree(b));
    free(host);
    return EXIT_SUCCESS;
}
