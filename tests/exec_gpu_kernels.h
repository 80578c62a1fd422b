/* Kernels of the GPU tests (test_exec_gpu, test_stage_gpu, test_graph_gpu,
 * run_graph), 0 on success, -1 when the launch failed; and the host's twin
 * of one, which the tests check the GPU's results against. */
#ifndef UMADV_TESTS_EXEC_GPU_KERNELS_H
#define UMADV_TESTS_EXEC_GPU_KERNELS_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* y = a * y + x, element-wise, on @stream (a cudaStream_t). */
int exec_gpu_scale_add(float *y, const float *x, size_t n, float a, void *stream);

/* What exec_gpu_scale_add computes, on the host: the same bits where @a
 * is a power of two (its product exact, whether or not the host's
 * compiler fuses the multiply and the add). */
void exec_host_scale_add(float *y, const float *x, size_t n, float a);

/* y = x */
int exec_gpu_copy(float *y, const float *x, size_t n, void *stream);

#ifdef __cplusplus
}
#endif

#endif
