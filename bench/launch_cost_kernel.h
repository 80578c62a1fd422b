/*
 * The kernel of bench/launch_cost: one that does nothing, so that a
 * launch's cost is the host's alone.
 */
#ifndef UMADV_BENCH_LAUNCH_COST_KERNEL_H
#define UMADV_BENCH_LAUNCH_COST_KERNEL_H

#ifdef __cplusplus
extern "C" {
#endif

/* The empty kernel's host function, for cudaLaunchKernel; it takes one
 * pointer, as a real kernel takes its operands. */
const void *launch_cost_kernel(void);

#ifdef __cplusplus
}
#endif

#endif
