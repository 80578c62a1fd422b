/*
 * A CPU stand-in for the CUDA runtime calls and kernels of
 * bench/evict_channels, linked in their place (tests/test_evict_channels.sh),
 * so the whole program runs without a GPU: every round, the checks, the
 * table and the JSON. Work happens at once on the host; a discard fills
 * its range with garbage, as a driver that reclaimed the pages may. What
 * goes wrong is chosen through the environment:
 *
 *   MOCK_LOSE_COPY_IN=1   every copy into the managed buffer on the second
 *                         stream (the duplex restore lane) flips a bit
 *   MOCK_NO_DP=1          cudaMemDiscardAndPrefetchBatchAsync is not supported
 *   MOCK_NO_BATCH=1       cudaMemPrefetchBatchAsync is not supported
 *
 * Streams are numbered in creation order (1, 2); test builds only.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cuda_runtime.h>

#include "../bench/evict_channels_kernels.h"

#define MOCK_TOTAL (UINT64_C(1) << 30)

static int mock_env(const char *name)
{
    const char *v = getenv(name);

    return v != NULL && strcmp(v, "1") == 0;
}

static double mock_now(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* The checks must notice what a discard lost: garbage, not the old bytes. */
static void mock_spoil(void **ptrs, size_t *sizes, size_t count)
{
    for (size_t i = 0; i < count; i++)
        memset(ptrs[i], 0xdb, sizes[i]);
}

cudaError_t cudaGetDeviceCount(int *count)
{
    *count = 1;
    return cudaSuccess;
}

cudaError_t cudaSetDevice(int device) { return cudaSuccess; }

cudaError_t cudaDeviceGetAttribute(int *value, enum cudaDeviceAttr attr, int device)
{
    *value = 1;
    return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *prop, int device)
{
    memset(prop, 0, sizeof *prop);
    strcpy(prop->name, "Mock \"GPU\"\\1"); /* JSON escaping sees a quote and a backslash */
    return cudaSuccess;
}

cudaError_t cudaMemGetInfo(size_t *free_b, size_t *total_b)
{
    *free_b = *total_b = MOCK_TOTAL;
    return cudaSuccess;
}

cudaError_t cudaDriverGetVersion(int *v)
{
    *v = 13000;
    return cudaSuccess;
}

cudaError_t cudaRuntimeGetVersion(int *v)
{
    *v = 13000;
    return cudaSuccess;
}

cudaError_t cudaMallocManaged(void **p, size_t n, unsigned int flags)
{
    *p = malloc(n);
    return *p != NULL ? cudaSuccess : cudaErrorMemoryAllocation;
}

cudaError_t cudaHostAlloc(void **p, size_t n, unsigned int flags)
{
    return cudaMallocManaged(p, n, flags);
}

cudaError_t cudaMalloc(void **p, size_t n)
{
    *p = calloc(1, n);
    return *p != NULL ? cudaSuccess : cudaErrorMemoryAllocation;
}

cudaError_t cudaFree(void *p)
{
    free(p);
    return cudaSuccess;
}

cudaError_t cudaFreeHost(void *p) { return cudaFree(p); }

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned int flags)
{
    static intptr_t next = 1;

    *s = (cudaStream_t)next++;
    return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t s) { return cudaSuccess; }
cudaError_t cudaStreamSynchronize(cudaStream_t s) { return cudaSuccess; }
cudaError_t cudaDeviceSynchronize(void) { return cudaSuccess; }

cudaError_t cudaEventCreate(cudaEvent_t *e)
{
    *e = calloc(1, sizeof(double));
    return *e != NULL ? cudaSuccess : cudaErrorMemoryAllocation;
}

cudaError_t cudaEventDestroy(cudaEvent_t e) { return cudaFree(e); }

cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s)
{
    *(double *)e = mock_now();
    return cudaSuccess;
}

cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end)
{
    *ms = (float)((*(double *)end - *(double *)start) * 1e3);
    return cudaSuccess;
}

cudaError_t cudaMemPrefetchAsync(const void *p, size_t n, struct cudaMemLocation loc,
                                 unsigned int flags, cudaStream_t s)
{
    return flags == 0 ? cudaSuccess : cudaErrorInvalidValue;
}

/* The argument rules the header states: one location, from the first piece. */
static cudaError_t mock_batch_args(size_t count, const size_t *loc_idx, size_t nlocs,
                                   unsigned long long flags)
{
    return count > 0 && nlocs == 1 && loc_idx[0] == 0 && flags == 0 ? cudaSuccess
                                                                    : cudaErrorInvalidValue;
}

cudaError_t cudaMemPrefetchBatchAsync(void **ptrs, size_t *sizes, size_t count,
                                      struct cudaMemLocation *locs, size_t *loc_idx,
                                      size_t nlocs, unsigned long long flags, cudaStream_t s)
{
    if (mock_env("MOCK_NO_BATCH"))
        return cudaErrorNotSupported;
    return mock_batch_args(count, loc_idx, nlocs, flags);
}

cudaError_t cudaMemDiscardBatchAsync(void **ptrs, size_t *sizes, size_t count,
                                     unsigned long long flags, cudaStream_t s)
{
    if (count == 0 || flags != 0)
        return cudaErrorInvalidValue;
    mock_spoil(ptrs, sizes, count);
    return cudaSuccess;
}

cudaError_t cudaMemDiscardAndPrefetchBatchAsync(void **ptrs, size_t *sizes, size_t count,
                                                struct cudaMemLocation *locs, size_t *loc_idx,
                                                size_t nlocs, unsigned long long flags,
                                                cudaStream_t s)
{
    if (mock_env("MOCK_NO_DP"))
        return cudaErrorNotSupported;
    if (mock_batch_args(count, loc_idx, nlocs, flags) != cudaSuccess ||
        locs[0].type != cudaMemLocationTypeDevice)
        return cudaErrorInvalidValue;
    mock_spoil(ptrs, sizes, count);
    return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind,
                            cudaStream_t s)
{
    memcpy(dst, src, n);
    /* The second stream copies into the managed buffer only in a duplex
     * restore (8-byte copies are the check's count). */
    if (mock_env("MOCK_LOSE_COPY_IN") && (intptr_t)s == 2 && n > 8)
        ((unsigned char *)dst)[n - 1] ^= 1;
    return cudaSuccess;
}

cudaError_t cudaMemsetAsync(void *p, int value, size_t n, cudaStream_t s)
{
    memset(p, value, n);
    return cudaSuccess;
}

const char *cudaGetErrorString(cudaError_t err)
{
    return err == cudaErrorNotSupported ? "operation not supported" : "mock error";
}

int channels_fill(uint64_t *p, size_t n, uint64_t seed, void *stream)
{
    for (size_t i = 0; i < n; i++)
        p[i] = channels_pattern(i, seed);
    return 0;
}

int channels_count_mismatches(const uint64_t *p, size_t n, uint64_t seed,
                              unsigned long long *count_dev, void *stream)
{
    for (size_t i = 0; i < n; i++)
        *count_dev += p[i] != channels_pattern(i, seed);
    return 0;
}
