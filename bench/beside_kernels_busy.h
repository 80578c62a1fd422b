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

/* The cycles per block for which busy_launch's @blocks blocks take
 * @busy_ms in all on @stream: one try of 100000 cycles timed from its
 * launch to the stream's end, scaled; *@took_ms_p: the time of a launch
 * at the result. Returns the cudaError_t of the first call that failed
 * (0: calibrated). */
int busy_calibrate(unsigned long long *w, size_t n, unsigned blocks, double busy_ms,
                   void *stream, long long *cycles_p, double *took_ms_p);

#ifdef __cplusplus
}
#endif

#endif
