/* Kernels of tests/test_exec_gpu.c; 0 on success, -1 when the launch failed. */
#ifndef UMADV_TESTS_EXEC_GPU_KERNELS_H
#define UMADV_TESTS_EXEC_GPU_KERNELS_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* y = a * y + x, element-wise, on @stream (a cudaStream_t). */
int exec_gpu_scale_add(float *y, const float *x, size_t n, float a, void *stream);

/* y = x */
int exec_gpu_copy(float *y, const float *x, size_t n, void *stream);

#ifdef __cplusplus
}
#endif

#endif
