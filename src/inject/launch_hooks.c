/*
 * The CUDA runtime's kernel launches, interposed (LD_PRELOAD), as ids for
 * the launch sequence (launches.c): each launch is its kernel (the host
 * function or kernel handle; a graph launch its executable graph) and its
 * grid and block shape, hashed. The launch then goes to CUDA unchanged.
 * Covered: cudaLaunchKernel, cudaLaunchKernelExC, cudaLaunchCooperativeKernel,
 * __cudaLaunchKernel (what nvcc 13's <<<...>>> calls), cudaGraphLaunch and
 * their per-thread-stream (_ptsz) forms. libumadv's own launches (its link
 * probe) are left out. Once launches no longer mark iterations (another
 * source won), a launch costs one atomic read.
 */
#define _GNU_SOURCE /* RTLD_NEXT */
#include "inject/inject.h"
#include "inject/period.h"
#include "inject/real.h"

#include <stdatomic.h>

#define CALLER __builtin_return_address(0)

/* ---- the ids ---- */

static uint64_t shape_id(const void *kernel, dim3 grid, dim3 block)
{
    uint64_t h = umadv__period_hash(0, (uint64_t)(uintptr_t)kernel);

    h = umadv__period_hash(h, (uint64_t)grid.x << 32 | grid.y);
    h = umadv__period_hash(h, (uint64_t)grid.z << 32 | block.x);
    return umadv__period_hash(h, (uint64_t)block.y << 32 | block.z);
}

/* Whether the code at @caller is libumadv's, through a small cache: a
 * program launches from a few call sites, and dladdr walks the link maps. */
#define CALLER_SLOTS 64
#define CALLER_UMADV ((uintptr_t)1 << 63) /* user addresses leave bit 63 clear */

static int caller_is_umadv(const void *caller)
{
    static _Atomic uintptr_t cache[CALLER_SLOTS];
    uintptr_t addr = (uintptr_t)caller, slot = (addr >> 4) % CALLER_SLOTS;
    uintptr_t seen = atomic_load_explicit(&cache[slot], memory_order_relaxed);
    int umadv;

    if ((seen & ~CALLER_UMADV) == addr && addr != 0)
        return (seen & CALLER_UMADV) != 0;
    umadv = umadv__inject_from_umadv(caller);
    atomic_store_explicit(&cache[slot], addr | (umadv ? CALLER_UMADV : 0), memory_order_relaxed);
    return umadv;
}

static atomic_int followed_no_more;

/* A launch of @kernel with this shape from @caller, before it is made. */
static void seen(const void *caller, const void *kernel, dim3 grid, dim3 block)
{
    if (atomic_load_explicit(&followed_no_more, memory_order_relaxed) || caller_is_umadv(caller))
        return;
    if (!umadv__inject_launch(shape_id(kernel, grid, block)))
        atomic_store_explicit(&followed_no_more, 1, memory_order_relaxed);
}

static void seen_config(const void *caller, const void *kernel, const cudaLaunchConfig_t *config)
{
    dim3 none = {0, 0, 0};

    seen(caller, kernel, config != NULL ? config->gridDim : none,
         config != NULL ? config->blockDim : none);
}

/* ---- the interposed calls ---- */

typedef cudaError_t (*launch_fn_t)(const void *, dim3, dim3, void **, size_t, cudaStream_t);
typedef cudaError_t (*kernel_launch_fn_t)(cudaKernel_t, dim3, dim3, void **, size_t,
                                          cudaStream_t);
typedef cudaError_t (*launch_ex_fn_t)(const cudaLaunchConfig_t *, const void *, void **);
typedef cudaError_t (*graph_launch_fn_t)(cudaGraphExec_t, cudaStream_t);

/* The forms the runtime's header does not declare in C. */
UMADV_INJECT_API cudaError_t cudaLaunchKernel_ptsz(const void *func, dim3 grid, dim3 block,
                                                   void **args, size_t shared,
                                                   cudaStream_t stream);
UMADV_INJECT_API cudaError_t cudaLaunchKernelExC_ptsz(const cudaLaunchConfig_t *config,
                                                      const void *func, void **args);
UMADV_INJECT_API cudaError_t cudaLaunchCooperativeKernel_ptsz(const void *func, dim3 grid,
                                                              dim3 block, void **args,
                                                              size_t shared,
                                                              cudaStream_t stream);
UMADV_INJECT_API cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 grid, dim3 block,
                                                void **args, size_t shared, cudaStream_t stream);
UMADV_INJECT_API cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 grid, dim3 block,
                                                     void **args, size_t shared,
                                                     cudaStream_t stream);
UMADV_INJECT_API cudaError_t cudaGraphLaunch_ptsz(cudaGraphExec_t exec, cudaStream_t stream);

/* One definition per call: its name, the type of CUDA's, the id. */
#define LAUNCH(_name, _kernel_type, _fn_type) \
    UMADV_INJECT_API cudaError_t _name(_kernel_type kernel, dim3 grid, dim3 block, \
                                       void **args, size_t shared, cudaStream_t stream) \
    { \
        REAL(_name, _fn_type); \
        seen(CALLER, (const void *)kernel, grid, block); \
        return real_fn(kernel, grid, block, args, shared, stream); \
    }

LAUNCH(cudaLaunchKernel, const void *, launch_fn_t)
LAUNCH(cudaLaunchKernel_ptsz, const void *, launch_fn_t)
LAUNCH(cudaLaunchCooperativeKernel, const void *, launch_fn_t)
LAUNCH(cudaLaunchCooperativeKernel_ptsz, const void *, launch_fn_t)
LAUNCH(__cudaLaunchKernel, cudaKernel_t, kernel_launch_fn_t)
LAUNCH(__cudaLaunchKernel_ptsz, cudaKernel_t, kernel_launch_fn_t)

#define LAUNCH_EX(_name) \
    UMADV_INJECT_API cudaError_t _name(const cudaLaunchConfig_t *config, const void *func, \
                                       void **args) \
    { \
        REAL(_name, launch_ex_fn_t); \
        seen_config(CALLER, func, config); \
        return real_fn(config, func, args); \
    }

LAUNCH_EX(cudaLaunchKernelExC)
LAUNCH_EX(cudaLaunchKernelExC_ptsz)

#define GRAPH_LAUNCH(_name) \
    UMADV_INJECT_API cudaError_t _name(cudaGraphExec_t exec, cudaStream_t stream) \
    { \
        dim3 none = {0, 0, 0}; \
        REAL(_name, graph_launch_fn_t); \
        seen(CALLER, (const void *)exec, none, none); \
        return real_fn(exec, stream); \
    }

GRAPH_LAUNCH(cudaGraphLaunch)
GRAPH_LAUNCH(cudaGraphLaunch_ptsz)
