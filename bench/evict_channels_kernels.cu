/*
 * The GPU side of bench/evict_channels' integrity check: fill before an
 * eviction, count mismatches after a restore, both where the data should
 * be (on the GPU), so checking costs milliseconds and moves nothing.
 * The spin keeps bench/discard_copy's stream busy without touching the
 * range it measures.
 */
#include <cuda_runtime.h>

#include "evict_channels_kernels.h"

#define GRID  1056 /* a few blocks per SM of an H100/H200: grid-stride loops */
#define BLOCK 256

__global__ static void fill(uint64_t *p, size_t n, uint64_t seed)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        p[i] = channels_pattern(i, seed);
}

/* One atomic per thread that saw a mismatch: none in a passing run. */
__global__ static void count_mismatches(const uint64_t *p, size_t n, uint64_t seed,
                                        unsigned long long *count)
{
    unsigned long long bad = 0;

    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        bad += p[i] != channels_pattern(i, seed);
    if (bad != 0)
        atomicAdd(count, bad);
}

__global__ static void spin(long long cycles)
{
    long long start = clock64();

    while (clock64() - start < cycles)
        ;
}

extern "C" int channels_fill(uint64_t *p, size_t n, uint64_t seed, void *stream)
{
    fill<<<GRID, BLOCK, 0, (cudaStream_t)stream>>>(p, n, seed);
    return (int)cudaGetLastError();
}

extern "C" int channels_count_mismatches(const uint64_t *p, size_t n, uint64_t seed,
                                         unsigned long long *count_dev, void *stream)
{
    count_mismatches<<<GRID, BLOCK, 0, (cudaStream_t)stream>>>(p, n, seed, count_dev);
    return (int)cudaGetLastError();
}

extern "C" int channels_spin(long long cycles, void *stream)
{
    spin<<<1, 1, 0, (cudaStream_t)stream>>>(cycles);
    return (int)cudaGetLastError();
}
