/*
 * Kernels of bench/evict_channels: fill a managed range with a pattern and
 * count the words that differ from it. The pattern is defined here once,
 * for the GPU and for the host check of the staging buffer alike. Also
 * bench/discard_copy's spin, work a stream is still busy with.
 */
#ifndef UMADV_BENCH_EVICT_CHANNELS_KERNELS_H
#define UMADV_BENCH_EVICT_CHANNELS_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __CUDACC__
#define CHANNELS_HD __host__ __device__
#else
#define CHANNELS_HD
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Word @i of the pattern of round @seed: every word depends on its index
 * (a piece copied to the wrong offset shows) and on the round (a stale
 * copy from an earlier round shows). splitmix64's finaliser. */
static inline CHANNELS_HD uint64_t channels_pattern(uint64_t i, uint64_t seed)
{
    uint64_t z = i * UINT64_C(0x9E3779B97F4A7C15) + seed * UINT64_C(0xD1B54A32D192ED03) + 1;

    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

/* p[i] = channels_pattern(i, seed) for i < n, on @stream (a cudaStream_t).
 * Returns the launch's cudaError_t (0: launched), so the caller can name it. */
int channels_fill(uint64_t *p, size_t n, uint64_t seed, void *stream);

/* Adds to *@count_dev (device memory) the number of words of p[0..n) that
 * differ from the pattern, on @stream. Returns the launch's cudaError_t. */
int channels_count_mismatches(const uint64_t *p, size_t n, uint64_t seed,
                              unsigned long long *count_dev, void *stream);

/* One thread spinning @cycles clocks (clock64) on @stream, touching no
 * memory: what a call enqueued after it is queued behind. Returns the
 * launch's cudaError_t. */
int channels_spin(long long cycles, void *stream);

#ifdef __cplusplus
}
#endif

#endif
