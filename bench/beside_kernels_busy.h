/*
 * Kernels of bench/beside_kernels: a busy kernel standing for a step's
 * compute.
 */
#ifndef UMADV_BENCH_BESIDE_KERNELS_BUSY_H
#define UMADV_BENCH_BESIDE_KERNELS_BUSY_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* @blocks blocks of 256 threads, each spinning @cycles clocks over words
 * of @w (n of them), on @stream (a cudaStream_t). Returns the launch's
 * cudaError_t (0: launched). */
int busy_launch(unsigned long long *w, size_t n, unsigned blocks, long long cycles, void *stream);

#ifdef __cplusplus
}
#endif

#endif
