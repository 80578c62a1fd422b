/*
 * What the examples' kernels share (mlp_kernels.cu, vgg/vgg_kernels.cu):
 * the launch shape of a grid-stride loop and the counter-based random
 * numbers, so that a value depends on its index and seed only.
 */
#ifndef UMADV_EXAMPLES_KERNEL_UTIL_CUH
#define UMADV_EXAMPLES_KERNEL_UTIL_CUH

#include <stddef.h>
#include <stdint.h>

#define THREADS 256
#define MAX_BLOCKS 65535

static unsigned blocks_for(size_t n)
{
    size_t b = (n + THREADS - 1) / THREADS;

    return (unsigned)(b < MAX_BLOCKS ? (b > 0 ? b : 1) : MAX_BLOCKS);
}

/* splitmix64's finaliser: a bijection that spreads every input bit. */
__device__ static uint64_t mix64(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Uniform in [-1, 1) on a grid of 2^-23: exact in float, no rounding. */
__device__ static float uniform_pm1(uint64_t seed, uint64_t key)
{
    uint64_t h = mix64(seed ^ mix64(key));

    return (float)(h >> 40) * (1.0f / 8388608.0f) - 1.0f;
}

#endif
