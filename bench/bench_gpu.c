/*
 * What the GPU benchmark programs check before they measure anything
 * (bench_gpu.h).
 */
#include "bench_gpu.h"

#include <stdio.h>
#include <stdlib.h>

#include <cuda_runtime.h>

void bench_cuda_check(const char *prog, int err, const char *call)
{
    if (err != cudaSuccess) {
        fprintf(stderr, "%s: %s: %s\n", prog, call, cudaGetErrorString((cudaError_t)err));
        exit(EXIT_FAILURE);
    }
}

struct cudaMemLocation bench_location(int host)
{
    struct cudaMemLocation loc = {0};

    loc.type = host ? cudaMemLocationTypeHost : cudaMemLocationTypeDevice;
    return loc; /* id 0: device 0, and ignored for the host */
}

int bench_int_option(const char *v, int lo, int hi,
                     void (*usage_error)(const char *what, const char *v), const char *what)
{
    char *end;
    long n = strtol(v, &end, 10);

    if (*end != '\0' || end == v || n < lo || n > hi)
        usage_error(what, v);
    return (int)n;
}

void bench_require_managed_gpu(const char *prog)
{
    int count = 0, cma = 0;

    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
        printf("%s: no CUDA device\n", prog);
        exit(BENCH_EXIT_SKIP);
    }
    bench_cuda_check(prog, cudaSetDevice(0), "cudaSetDevice");
    bench_cuda_check(prog, cudaDeviceGetAttribute(&cma, cudaDevAttrConcurrentManagedAccess, 0),
                     "cudaDeviceGetAttribute");
    if (cma == 0) {
        printf("%s: device 0 has no concurrent managed access\n", prog);
        exit(BENCH_EXIT_SKIP);
    }
}
