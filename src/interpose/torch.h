/*
 * PyTorch allocator entry points (include/umadv.h: umadv_torch_malloc,
 * umadv_torch_free, umadv_torch_context) over one process-wide context.
 *
 * PyTorch's CUDAPluggableAllocator calls a pair of C functions found by
 * name in a shared library, with no argument of ours: so the context they
 * allocate from is the process's, created from the UMADV_* environment on
 * first use. A creation that fails is remembered (the next calls return
 * NULL and say why) rather than retried: its cause, a bad variable or no
 * device, does not go away while the process runs.
 */
#ifndef UMADV_INTERPOSE_TORCH_H
#define UMADV_INTERPOSE_TORCH_H

#include <umadv.h>

/* For tests: make @ctx the process's context (NULL: none yet, the next
 * call creates one from the environment, failed creations forgotten) and
 * return the one it replaces, which the caller now owns. Not safe while
 * other threads use the entry points. */
umadv_context_t umadv__torch_reset(umadv_context_t ctx);

#endif
