/*
 * Kernels of the profiler's GPU test, launched with <<<>>> (what CUDA 13
 * turns into __cudaLaunchKernel) behind C entry points.
 */
#include <cuda_runtime.h>

#include "profiler_gpu_kernels.h"

struct pg_pair {
    const float *in;
    float       *out;
};

extern "C" __global__ void pg_fill(float *a, size_t n, float v)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        a[i] = v + (float)(i & 7);
}

extern "C" __global__ void pg_axpy(float *y, const float *x, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        y[i] += 2.0f * x[i];
}

/* Pointers inside a struct parameter. */
extern "C" __global__ void pg_sum(struct pg_pair p, size_t n)
{
    float s = 0;

    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        s += p.in[i];
    atomicAdd(p.out, s);
}

extern "C" int pg_launch_fill(float *a, size_t n, float v)
{
    pg_fill<<<512, 256>>>(a, n, v);
    return (int)cudaGetLastError();
}

extern "C" int pg_launch_axpy(float *y, const float *x, size_t n)
{
    pg_axpy<<<512, 256>>>(y, x, n);
    return (int)cudaGetLastError();
}

extern "C" int pg_launch_sum(const float *in, float *out, size_t n)
{
    struct pg_pair p = {in, out};

    pg_sum<<<512, 256>>>(p, n);
    return (int)cudaGetLastError();
}
