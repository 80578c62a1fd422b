/*
 * The work of the GPU tests' steps: two element-wise kernels whose
 * results do not depend on where the data was when they ran, and
 * scale_add's twin on the host. Multiplying by 0.5 is exact, so the host
 * computes the same bits.
 */
#include <cuda_runtime.h>

#include "exec_gpu_kernels.h"

__global__ static void scale_add(float *y, const float *x, size_t n, float a)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        y[i] = __fadd_rn(__fmul_rn(a, y[i]), x[i]);
}

__global__ static void copy(float *y, const float *x, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        y[i] = x[i];
}

extern "C" int exec_gpu_scale_add(float *y, const float *x, size_t n, float a, void *stream)
{
    scale_add<<<264, 256, 0, (cudaStream_t)stream>>>(y, x, n, a);
    return cudaGetLastError() == cudaSuccess ? 0 : -1;
}

extern "C" void exec_host_scale_add(float *y, const float *x, size_t n, float a)
{
    for (size_t i = 0; i < n; i++)
        y[i] = a * y[i] + x[i];
}

extern "C" int exec_gpu_copy(float *y, const float *x, size_t n, void *stream)
{
    copy<<<264, 256, 0, (cudaStream_t)stream>>>(y, x, n);
    return cudaGetLastError() == cudaSuccess ? 0 : -1;
}
