/* Kernels of the profiler's GPU test; 0 or a cudaError_t. */
#ifndef UMADV_TESTS_PROFILER_GPU_KERNELS_H
#define UMADV_TESTS_PROFILER_GPU_KERNELS_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

int pg_launch_fill(float *a, size_t n, float v);
int pg_launch_axpy(float *y, const float *x, size_t n);
int pg_launch_sum(const float *in, float *out, size_t n);

#ifdef __cplusplus
}
#endif

#endif
