/*
 * What umadv's calls cost the application's thread on the host, without a
 * GPU: a training-shaped loop on a host-only context (the host backend)
 * whose every iteration allocates BLOCKS activations, one declared step
 * each writing its activation and reading a weight, then frees them in
 * reverse behind a step that reads each (umadv_malloc, umadv_set_stageable
 * as PyTorch's allocator entry point does, umadv_free; umadv_step_begin,
 * umadv_step_access and umadv_step_end).
 *
 *   bench/api_cost [BLOCKS [ITERATIONS]]
 *
 * One row per mode: no profile (the calls alone), then profiled once and
 * replayed under oracle, prefetch-all and plan at half the footprint.
 * Per mode: microseconds per iteration and nanoseconds per block, with
 * the steps and without (allocations only, the profiled iteration still
 * stepped: as a PyTorch replay under oracle runs, following no launch),
 * the plans built and the bytes moved (the replay ran); with the steps,
 * also microseconds per iteration outside the steps' waits for their data
 * (umadv_stats_t.wait_ns): the application's thread's own cost, its
 * waits for the executor's lock and its wakes of the lanes included. The
 * host backend copies where a GPU would migrate: the moves of plan and
 * prefetch-all cost memcpy here, so their rows bound the bookkeeping
 * from above.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "umadv.h" /* the public API alone: what an application calls */

#define WEIGHT_BYTES     (64u << 10)
#define ACTIVATION_BYTES (128u << 10)

typedef struct mode {
    const char    *name;
    int            profile;
    umadv_policy_t policy;
    int            half_budget;
} mode_t;

static const mode_t modes[] = {
    {"no profile", 0, UMADV_POLICY_ORACLE, 0},
    {"oracle", 1, UMADV_POLICY_ORACLE, 0},
    {"prefetch-all", 1, UMADV_POLICY_PREFETCH_ALL, 1},
    {"plan", 1, UMADV_POLICY_PLAN, 1},
};

typedef struct loop {
    umadv_context_t ctx;
    void          **weights, **acts;
    int             nblocks;
} loop_t;

static uint64_t now_ns(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static int iteration(const loop_t *l, int steps)
{
    int bad = umadv_iteration_begin(l->ctx) != UMADV_OK;

    for (int i = 0; i < l->nblocks; i++) {
        bad |= umadv_malloc(l->ctx, ACTIVATION_BYTES, "act", &l->acts[i]) != UMADV_OK;
        bad |= umadv_set_stageable(l->ctx, l->acts[i], 1) != UMADV_OK;
        if (!steps)
            continue;
        bad |= umadv_step_begin(l->ctx, "forward", NULL) != UMADV_OK;
        umadv_step_access(l->ctx, l->acts[i], ACTIVATION_BYTES, UMADV_ACCESS_WRITE);
        umadv_step_access(l->ctx, l->weights[i], WEIGHT_BYTES, UMADV_ACCESS_READ);
        bad |= umadv_step_end(l->ctx, 0) != UMADV_OK;
    }
    for (int i = l->nblocks - 1; i >= 0; i--) {
        if (steps) {
            bad |= umadv_step_begin(l->ctx, "backward", NULL) != UMADV_OK;
            umadv_step_access(l->ctx, l->acts[i], ACTIVATION_BYTES, UMADV_ACCESS_READ);
            bad |= umadv_step_end(l->ctx, 0) != UMADV_OK;
        }
        bad |= umadv_free(l->ctx, l->acts[i]) != UMADV_OK;
    }
    return bad;
}

static umadv_status_t context_for(const mode_t *m, int nblocks, umadv_context_t *ctx_p)
{
    umadv_context_params_t p = {0};
    uint64_t footprint = (uint64_t)nblocks * (WEIGHT_BYTES + ACTIVATION_BYTES);

    p.field_mask = UMADV_CONTEXT_FIELD_FLAGS | UMADV_CONTEXT_FIELD_POLICY;
    p.flags      = UMADV_CONTEXT_FLAG_HOST_ONLY;
    p.policy     = m->policy;
    if (m->half_budget) {
        p.field_mask |= UMADV_CONTEXT_FIELD_BUDGET;
        p.budget = footprint / 2;
    }
    return umadv_context_create(&p, ctx_p);
}

/* One mode, with steps or without: ns per block, or a negative number on
 * a failed call; *s the context's stats at the end, *waits_ns the steps'
 * waits for their data while timed. */
static double run(const mode_t *m, int nblocks, int iters, int steps, umadv_stats_t *s,
                  uint64_t *waits_ns)
{
    loop_t l = {.nblocks = nblocks};
    uint64_t t0 = 0;
    int bad = 0;

    l.weights = calloc((size_t)nblocks, sizeof(*l.weights));
    l.acts    = calloc((size_t)nblocks, sizeof(*l.acts));
    if (l.weights == NULL || l.acts == NULL || context_for(m, nblocks, &l.ctx) != UMADV_OK) {
        free(l.weights);
        free(l.acts);
        return -1;
    }
    for (int i = 0; i < nblocks; i++)
        bad |= umadv_malloc(l.ctx, WEIGHT_BYTES, "weight", &l.weights[i]) != UMADV_OK;
    if (m->profile)
        bad |= umadv_profile_next_iteration(l.ctx) != UMADV_OK;
    /* the profiled iteration (planned after it, as an application does),
     * the timing pass and the replay's first */
    s->size = sizeof(*s);
    for (int it = 0; it < iters + 3 && !bad; it++) {
        if (it == 3) {
            umadv_get_stats(l.ctx, s);
            *waits_ns = s->wait_ns;
            t0 = now_ns();
        }
        bad |= iteration(&l, steps || it == 0); /* the profile has its steps */
        if (it == 0 && m->profile)
            bad |= umadv_plan(l.ctx) != UMADV_OK;
    }
    umadv_get_stats(l.ctx, s);
    *waits_ns = s->wait_ns - *waits_ns;
    umadv_context_destroy(l.ctx);
    free(l.weights);
    free(l.acts);
    return bad ? -1 : (double)(now_ns() - t0) / iters / nblocks;
}

int main(int argc, char **argv)
{
    int nblocks = argc > 1 ? atoi(argv[1]) : 300;
    int iters   = argc > 2 ? atoi(argv[2]) : 1000;

    if (nblocks <= 0 || iters <= 0) {
        fprintf(stderr, "usage: bench/api_cost [BLOCKS [ITERATIONS]] (both above 0)\n");
        return 2;
    }
    printf("%d blocks an iteration (%u KiB activations, %u KiB weights), %d iterations "
           "timed, host backend\n", nblocks, ACTIVATION_BYTES >> 10, WEIGHT_BYTES >> 10, iters);
    printf("%-13s %12s %14s %12s %14s %14s %6s %12s\n", "mode", "us/it", "ns/block",
           "us/it", "ns/block", "outside waits", "plans", "moved MiB");
    printf("%-13s %27s %42s\n", "", "allocations only", "with 2 steps a block");
    for (size_t k = 0; k < sizeof(modes) / sizeof(modes[0]); k++) {
        umadv_stats_t bare, stepped;
        uint64_t bare_waits, waits;
        double a = run(&modes[k], nblocks, iters, 0, &bare, &bare_waits);
        double b = run(&modes[k], nblocks, iters, 1, &stepped, &waits);

        if (a < 0 || b < 0) {
            fprintf(stderr, "bench/api_cost: %s: a umadv call failed\n", modes[k].name);
            return 1;
        }
        printf("%-13s %12.1f %14.0f %12.1f %14.0f %14.1f %6llu %12.1f\n", modes[k].name,
               a * nblocks * 1e-3, a, b * nblocks * 1e-3, b,
               (b * nblocks - (double)waits / iters) * 1e-3, (unsigned long long)stepped.plans,
               (double)(stepped.fetched_bytes + stepped.evicted_bytes + stepped.staged_bytes +
                        stepped.restored_bytes) / (1 << 20));
    }
    return 0;
}
