/*
 * What the GPU benchmark programs check before they measure anything.
 */
#ifndef UMADV_BENCH_BENCH_GPU_H
#define UMADV_BENCH_BENCH_GPU_H

#include <cuda.h>
#include <cuda_runtime.h>

#define BENCH_EXIT_SKIP 77 /* automake's skip: no GPU to measure on */

/* Device 0 made current, or @prog says on standard output why it cannot
 * run and exits BENCH_EXIT_SKIP: no CUDA device, or one without
 * concurrent managed access (prefetches and discards need it). A CUDA
 * error after the device is found exits with failure. */
void bench_require_managed_gpu(const char *prog);

/* A CUDA runtime call's result (@err, a cudaError_t): on failure @prog
 * says which @call failed and why, and exits with failure. */
void bench_cuda_check(const char *prog, int err, const char *call);

/* The host (@host) or device 0, as prefetches and advice name them. */
struct cudaMemLocation bench_location(int host);

/* @v as a decimal integer from @lo to @hi; else @usage_error(@what, @v),
 * which says so and does not return (each program has its own usage). */
int bench_int_option(const char *v, int lo, int hi,
                     void (*usage_error)(const char *what, const char *v), const char *what);

/* A CUDA context of its own on device 0, made and popped again (the
 * calling thread keeps the context it had): where a benchmark issues
 * calls apart from the application's context, as umadv's lanes once did
 * (umadv(7), ONE CONTEXT). The driver's calls come through the runtime's
 * entry points (nothing links -lcuda). A failure says so and exits. */
CUcontext bench_context_apart(const char *prog);

/* @ctx current on the calling thread (cuCtxSetCurrent); pushed above the
 * one it has, and popped back (cuCtxPushCurrent, cuCtxPopCurrent). */
void bench_context_set(const char *prog, CUcontext ctx);
void bench_context_push(const char *prog, CUcontext ctx);
void bench_context_pop(const char *prog);

#endif
