/*
 * What the two-pass profile's second pass costs the host in bookkeeping
 * (api/profile.c, TWO PASSES), without a GPU: CUPTI mocked
 * (tests/cupti_mock.h), the host backend (its prefetches are counted, not
 * copied), a network-shaped iteration under half its footprint: LAYERS
 * layers of a weight block (one section) and an activation block (two),
 * a forward launch per layer naming both, then a backward one per layer
 * in reverse; every K-th launch has no parameter layout (so the second
 * pass evicts before it what its first pass's plan takes off). Each
 * kernel takes 100 us. With T (0 or 1): every backward launch also
 * writes a temporary block of two sections made just before it and freed
 * just after (PyTorch's per-tensor gradients), the next one in its room.
 *
 *   bench/profile_cost [K [T]]
 *
 * One row per depth: the second pass's evictions before launches without
 * a layout, the host time in them (choosing what to keep, collecting,
 * the calls), the time in the calls alone, the calls, those to the GPU
 * (fetches back ahead of launches), the MiB of blocks not fetched since
 * known on the GPU (api/profile.c, FETCHING SCANNED BLOCKS BACK), the
 * blocks left where they lie, and the pass's end (the faults applied to
 * the trace, the plan made on it). On a GPU the calls also move data; here they cost only
 * the backend's counting, so the rest is umadv's own bookkeeping.
 */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <umadv.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/context.h"
#include "common/util.h"
#include "profiler/cupti_ops.h"
#include "profiler/profiler_int.h"
#include "../tests/testutil.h"
#include "../tests/cupti_mock.h"

#define SECTION     (64 * UMADV_KIB)
#define KERNEL_NS   100000u
#define MAX_LAYERS  2000

static uint64_t now_ns(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static uint64_t opaque_struct[2 * UMADV_PROF_GUESS_BYTES / sizeof(uint64_t)];

typedef struct net {
    void          *weight[MAX_LAYERS], *act[MAX_LAYERS];
    uint32_t       layers, every;
    int            temps;  /* backward launches write a temporary block */
    umadv_context_t ctx;
} net_t;

/* Launch @index of an iteration: of the runtime API naming @a and @b
 * (FUNC_RT: two pointer parameters), or, every K-th, one whose
 * parameters have no layout;
 * its kernel record queued (the mock's queue flushed when full, as
 * CUPTI hands out full buffers). */
static void launch(const net_t *n, void *a, void *b, uint32_t index, uint32_t corr,
                   uint64_t at)
{
    void *args[2] = {&a, &b}, *opaque[1] = {opaque_struct};

    if ((index + 1) % n->every == 0) {
        cuLaunchKernel_params d = {.f = (CUfunction)(uintptr_t)0xdead, .kernelParams = opaque};

        mock_call(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
                  CUPTI_API_ENTER, &d, "opaque", corr);
        mock_call(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
                  CUPTI_API_EXIT, &d, "opaque", corr);
    } else {
        cudaLaunchKernel_v7000_params p = {.func = FUNC_RT, .args = args};

        mock_call(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
                  CUPTI_API_ENTER, &p, "layer", corr);
        mock_call(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
                  CUPTI_API_EXIT, &p, "layer", corr);
    }
    if (mock.nqueue == UMADV_ARRAY_SIZE(mock.queue))
        mock_flush(0);
    queue_kernel(corr, at, at + KERNEL_NS);
}

/* One iteration, its correlation ids from @corr. */
static void iteration(const net_t *n, uint32_t corr)
{
    uint64_t at = (uint64_t)corr * KERNEL_NS;
    uint32_t i = 0;

    for (uint32_t l = 0; l < n->layers; l++, i++)
        launch(n, n->act[l], n->weight[l], i, corr + i, at + i * KERNEL_NS);
    for (uint32_t l = n->layers; l-- > 0; i++) {
        void *temp = NULL;

        if (n->temps && umadv_malloc(n->ctx, 2 * SECTION, "temp", &temp) != UMADV_OK)
            temp = NULL;
        launch(n, n->act[l], temp != NULL ? temp : n->weight[l], i, corr + i,
               at + i * KERNEL_NS);
        if (temp != NULL)
            umadv_free(n->ctx, temp);
    }
}

/* Profile @layers layers in two passes; print the second's row. */
static int measure(uint32_t layers, uint32_t every, int temps)
{
    static net_t n;
    uint64_t footprint = (uint64_t)layers * 3 * SECTION;
    umadv_context_t ctx;
    uint64_t end;
    int good = 1;

    n.layers = layers;
    n.every = every;
    mock_reset();
    ctx = test_host_context(SECTION, footprint / 2);
    if (ctx == NULL)
        return 0;
    n.ctx = ctx;
    n.temps = temps;
    for (uint32_t l = 0; l < layers; l++) {
        good &= umadv_malloc(ctx, SECTION, "weight", &n.weight[l]) == UMADV_OK;
        good &= umadv_malloc(ctx, 2 * SECTION, "act", &n.act[l]) == UMADV_OK;
    }
    good &= umadv_profile_next_iteration(ctx) == UMADV_OK;
    umadv_iteration_begin(ctx);
    iteration(&n, 1);                    /* the first pass */
    umadv_iteration_begin(ctx);
    good &= ctx->profile_pass == 2;
    iteration(&n, 1 + 4 * layers);       /* the second */
    end = now_ns();
    umadv_iteration_begin(ctx);          /* its end: planned */
    end = now_ns() - end;
    if (good)
        printf("%6u %8u %10llu %10.1f %10.1f %9llu %9llu %10.1f %10llu %10.1f\n", layers,
               2 * layers, (unsigned long long)ctx->profile_evictions,
               ctx->profile_evict_ns / 1e6,
               (ctx->profile_move_ns[0] + ctx->profile_move_ns[1]) / 1e6,
               (unsigned long long)(ctx->profile_move_calls[0] + ctx->profile_move_calls[1]),
               (unsigned long long)ctx->profile_move_calls[0],
               ctx->profile_fetch_spared / 1048576.0, (unsigned long long)ctx->profile_stayed,
               end / 1e6);
    else
        fprintf(stderr, "profile_cost: %u layers: not profiled in two passes\n", layers);
    for (uint32_t l = 0; l < layers; l++) {
        umadv_free(ctx, n.weight[l]);
        umadv_free(ctx, n.act[l]);
    }
    umadv_context_destroy(ctx);
    return good;
}

int main(int argc, char **argv)
{
    static const uint32_t depths[] = {100, 250, 500, 1000, 2000};
    uint32_t every = argc > 1 ? (uint32_t)strtoul(argv[1], NULL, 10) : 4;
    int temps = argc > 2 ? atoi(argv[2]) : 0;
    int good = 1;

    if (argc > 3 || every < 2 || (temps != 0 && temps != 1)) {
        fprintf(stderr, "usage: bench/profile_cost [K [T]] (K from 2: every K-th launch has "
                        "no parameter layout; T 1: backward launches write temporary "
                        "blocks)\n");
        return 2;
    }
    setenv("UMADV_PROFILE_PASSES", "2", 1);
    setenv("UMADV_POLICY", "plan", 1);
    umadv__cupti_ops_install(&mock_ops);
    printf("two-pass profile, second pass, every %u-th launch without a layout, half the "
           "footprint, host backend%s\n", every,
           temps ? ", a temporary block a backward launch" : "");
    printf("%6s %8s %10s %10s %10s %9s %9s %10s %10s %10s\n", "layers", "launches",
           "evictions", "evict ms", "calls ms", "calls", "to gpu", "spared MiB", "stayed",
           "end ms");
    for (size_t i = 0; i < UMADV_ARRAY_SIZE(depths); i++)
        good &= measure(depths[i], every, temps);
    umadv__cupti_ops_install(NULL);
    return good ? 0 : 1;
}
