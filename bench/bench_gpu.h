/*
 * What the GPU benchmark programs check before they measure anything.
 */
#ifndef UMADV_BENCH_BENCH_GPU_H
#define UMADV_BENCH_BENCH_GPU_H

#define BENCH_EXIT_SKIP 77 /* automake's skip: no GPU to measure on */

/* Device 0 made current, or @prog says on standard output why it cannot
 * run and exits BENCH_EXIT_SKIP: no CUDA device, or one without
 * concurrent managed access (prefetches and discards need it). A CUDA
 * error after the device is found exits with failure. */
void bench_require_managed_gpu(const char *prog);

/* A CUDA runtime call's result (@err, a cudaError_t): on failure @prog
 * says which @call failed and why, and exits with failure. */
void bench_cuda_check(const char *prog, int err, const char *call);

#endif
