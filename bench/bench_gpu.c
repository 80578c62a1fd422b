/*
 * What the GPU benchmark programs check before they measure anything
 * (bench_gpu.h).
 */
#include "bench_gpu.h"

#include <stdio.h>
#include <stdlib.h>

#include <cuda_runtime.h>

static void check(const char *prog, cudaError_t err, const char *call)
{
    if (err != cudaSuccess) {
        fprintf(stderr, "%s: %s: %s\n", prog, call, cudaGetErrorString(err));
        exit(EXIT_FAILURE);
    }
}

void bench_require_managed_gpu(const char *prog)
{
    int count = 0, cma = 0;

    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
        printf("%s: no CUDA device\n", prog);
        exit(BENCH_EXIT_SKIP);
    }
    check(prog, cudaSetDevice(0), "cudaSetDevice");
    check(prog, cudaDeviceGetAttribute(&cma, cudaDevAttrConcurrentManagedAccess, 0),
          "cudaDeviceGetAttribute");
    if (cma == 0) {
        printf("%s: device 0 has no concurrent managed access\n", prog);
        exit(BENCH_EXIT_SKIP);
    }
}
