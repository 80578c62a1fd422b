/*
 * stage_pool: what the executor stages and migrates against what the
 * simulator plans for the same trace, on the host backend (no GPU).
 *
 * On an H200, mlp_train at half its footprint (every buffer stageable)
 * migrated 4.3 GiB an iteration that the simulation of its own trace
 * staged (bench/RESULTS.md, 2026-11-28): its staging pool filled up, and
 * a staged eviction that did not fit whole migrated whole. This program
 * replays the same pattern, scaled down, on the host backend: --layers
 * fully connected layers (an activation of 16 sections and a weight,
 * its gradient and its momentum of 2 each per layer), a forward, a loss,
 * a backward that allocates each activation gradient and frees the one
 * before it, an update; every block stageable and every step's
 * declarations complete, as mlp_train's. The iteration is profiled,
 * timed and planned under plan at --budget percent of its footprint,
 * then replayed; each step sleeps --step-us microseconds (a list: one
 * row each) to stand in for its kernels, and declares that duration (0:
 * no sleep, 1 ms declared: a host that runs ahead of the executor's
 * lanes and of the plan). The simulator replays the
 * recorded trace under the same plan.
 *
 *   bench/stage_pool [--layers N] [--budget PCT] [--step-us LIST] [--iters N]
 *
 * Prints, per row, MiB an iteration: the executor's staged and migrated
 * evictions, then the simulator's. Exit status 2 for a bad option, 1 when
 * umadv fails.
 */
#include <umadv.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/util.h"
#include "plan/plan.h"
#include "sim/sim.h"
#include "trace/trace_io.h"

#define SEC        (UINT64_C(64) << 10)
#define ACT        (16 * SEC)
#define PARAM      (2 * SEC)
#define MAX_LAYERS 64
#define MAX_ROWS   8
#define EXIT_USAGE 2

typedef struct net {
    umadv_context_t ctx;
    int             layers;
    unsigned        step_us;
    void           *act[MAX_LAYERS + 1], *w[MAX_LAYERS], *dw[MAX_LAYERS], *vw[MAX_LAYERS];
    void           *labels;
} net_t;

typedef struct moved {
    double staged, migrated; /* MiB an iteration */
} moved_t;

/* ---- the application ------------------------------------------------------ */

static void *block(net_t *n, uint64_t bytes, const char *tag)
{
    void *p = NULL;

    if (umadv_malloc(n->ctx, bytes, tag, &p) != UMADV_OK ||
        umadv_set_stageable(n->ctx, p, 1) != UMADV_OK) {
        fprintf(stderr, "stage_pool: umadv_malloc(%llu) failed\n", (unsigned long long)bytes);
        exit(1);
    }
    return p;
}

static void step_begin(net_t *n, const char *name)
{
    umadv_step_begin(n->ctx, name, NULL);
    umadv_step_access_complete(n->ctx);
}

static void uses(net_t *n, void *p, uint64_t bytes, umadv_access_mode_t mode)
{
    umadv_step_access(n->ctx, p, bytes, mode);
}

/* The step's kernels: --step-us of time, declared to the plan as such
 * (0: none, declared as 1 ms: the host runs ahead of the plan). */
static void step_end(net_t *n)
{
    if (n->step_us > 0)
        usleep(n->step_us);
    umadv_step_end(n->ctx, (uint64_t)(n->step_us > 0 ? n->step_us : 1000) * 1000);
}

static void backward(net_t *n, int l, void **dy)
{
    void *dx;

    step_begin(n, "backward");
    dx = l > 0 ? block(n, ACT, "act.grad") : NULL;
    uses(n, n->w[l], PARAM, UMADV_ACCESS_READ);
    uses(n, n->act[l], ACT, UMADV_ACCESS_READ);
    uses(n, n->act[l + 1], ACT, UMADV_ACCESS_READ);
    uses(n, *dy, ACT, UMADV_ACCESS_RW);
    uses(n, n->dw[l], PARAM, UMADV_ACCESS_WRITE);
    if (dx != NULL)
        uses(n, dx, ACT, UMADV_ACCESS_WRITE);
    umadv_free(n->ctx, *dy);
    *dy = dx;
    step_end(n);
}

static void iteration(net_t *n)
{
    void *dy;

    umadv_iteration_begin(n->ctx);
    step_begin(n, "data");
    uses(n, n->act[0], ACT, UMADV_ACCESS_WRITE);
    uses(n, n->labels, SEC, UMADV_ACCESS_WRITE);
    step_end(n);
    for (int l = 0; l < n->layers; l++) {
        step_begin(n, "forward");
        uses(n, n->w[l], PARAM, UMADV_ACCESS_READ);
        uses(n, n->act[l], ACT, UMADV_ACCESS_READ);
        uses(n, n->act[l + 1], ACT, UMADV_ACCESS_WRITE);
        step_end(n);
    }
    step_begin(n, "loss");
    dy = block(n, ACT, "act.grad");
    uses(n, n->act[n->layers], ACT, UMADV_ACCESS_READ);
    uses(n, n->labels, SEC, UMADV_ACCESS_READ);
    uses(n, dy, ACT, UMADV_ACCESS_WRITE);
    step_end(n);
    for (int l = n->layers - 1; l >= 0; l--)
        backward(n, l, &dy);
    for (int l = 0; l < n->layers; l++) {
        step_begin(n, "update");
        uses(n, n->w[l], PARAM, UMADV_ACCESS_RW);
        uses(n, n->vw[l], PARAM, UMADV_ACCESS_RW);
        uses(n, n->dw[l], PARAM, UMADV_ACCESS_READ);
        step_end(n);
    }
}

static uint64_t footprint(int layers)
{
    return (uint64_t)(layers + 1) * ACT + 3 * (uint64_t)layers * PARAM + SEC + 2 * ACT;
}

static void net_open(net_t *n, int layers, uint64_t budget)
{
    umadv_context_params_t p = {
        .field_mask = UMADV_CONTEXT_FIELD_FLAGS | UMADV_CONTEXT_FIELD_SECTION_SIZE |
                      UMADV_CONTEXT_FIELD_BUDGET | UMADV_CONTEXT_FIELD_POLICY,
        .flags = UMADV_CONTEXT_FLAG_HOST_ONLY, .section_size = SEC, .budget = budget,
        .policy = UMADV_POLICY_PLAN};

    memset(n, 0, sizeof(*n));
    n->layers = layers;
    if (umadv_context_create(&p, &n->ctx) != UMADV_OK) {
        fprintf(stderr, "stage_pool: no host context\n");
        exit(1);
    }
    for (int l = 0; l <= layers; l++)
        n->act[l] = block(n, ACT, "act");
    for (int l = 0; l < layers; l++) {
        n->w[l] = block(n, PARAM, "weight");
        n->dw[l] = block(n, PARAM, "weight.grad");
        n->vw[l] = block(n, PARAM, "weight.momentum");
    }
    n->labels = block(n, SEC, "labels");
}

/* ---- one row --------------------------------------------------------------- */

static double mib(uint64_t bytes, int iters)
{
    return (double)bytes / (1 << 20) / iters;
}

/* Profiled, timed, planned; @iters replayed iterations measured after
 * two more. The trace goes to @path. */
static moved_t replay(net_t *n, int iters, const char *path)
{
    umadv_stats_t a = {.size = sizeof(a)}, b = {.size = sizeof(b)};

    iteration(n);
    umadv_profile_next_iteration(n->ctx);
    iteration(n);
    iteration(n); /* the timing pass */
    if (umadv_trace_save(n->ctx, path) != UMADV_OK || umadv_plan(n->ctx) != UMADV_OK) {
        fprintf(stderr, "stage_pool: no trace or no plan\n");
        exit(1);
    }
    for (int i = 0; i < 2; i++)
        iteration(n);
    umadv_get_stats(n->ctx, &a);
    for (int i = 0; i < iters; i++)
        iteration(n);
    umadv_get_stats(n->ctx, &b);
    return (moved_t){mib(b.staged_bytes - a.staged_bytes, iters),
                     mib(b.evicted_bytes - a.evicted_bytes, iters)};
}

static moved_t simulate(const char *path, uint64_t budget)
{
    umadv_trace_t t;
    umadv_plan_params_t pp;
    umadv_sim_params_t sp;
    umadv_schedule_t s;
    umadv_sim_result_t r;
    char why[256];

    if (umadv__trace_read_file(path, &t, why, sizeof(why)) != UMADV_OK) {
        fprintf(stderr, "stage_pool: %s: %s\n", path, why);
        exit(1);
    }
    umadv__plan_params_default(&t, budget, &pp);
    if (umadv__plan_build(&t, &pp, &s) != UMADV_OK) {
        fprintf(stderr, "stage_pool: no plan of the trace\n");
        exit(1);
    }
    umadv__sim_params_default(&t, UMADV_POLICY_PLAN, budget, &sp);
    sp.schedule = &s;
    if (umadv__sim_run(&t, &sp, &r) != UMADV_OK) {
        fprintf(stderr, "stage_pool: the simulation failed\n");
        exit(1);
    }
    umadv__schedule_cleanup(&s);
    umadv__trace_cleanup(&t);
    return (moved_t){mib(r.staged_bytes, 1), mib(r.evicted_bytes, 1)};
}

static int row(int layers, int pct, unsigned step_us, int iters)
{
    char dir[] = "/tmp/stage_pool.XXXXXX", path[sizeof(dir) + 16];
    uint64_t budget = footprint(layers) * (uint64_t)pct / 100 / SEC * SEC;
    moved_t e, s;
    net_t n;

    if (mkdtemp(dir) == NULL) {
        perror("stage_pool: mkdtemp");
        return -1;
    }
    snprintf(path, sizeof(path), "%s/trace.umt", dir);
    net_open(&n, layers, budget);
    n.step_us = step_us;
    e = replay(&n, iters, path);
    umadv_context_destroy(n.ctx);
    s = simulate(path, budget);
    unlink(path);
    rmdir(dir);
    printf("%8u %12.2f %12.2f %12.2f %12.2f\n", step_us, e.staged, e.migrated, s.staged,
           s.migrated);
    return 0;
}

/* ---- options ---------------------------------------------------------------- */

static void usage(void)
{
    fprintf(stderr, "usage: stage_pool [--layers N] [--budget PCT] [--step-us LIST] "
                    "[--iters N]\n");
    exit(EXIT_USAGE);
}

static long number(const char *s, long lo, long hi)
{
    char *end;
    long v = strtol(s, &end, 10);

    if (*s == '\0' || *end != '\0' || v < lo || v > hi)
        usage();
    return v;
}

int main(int argc, char **argv)
{
    int layers = 16, pct = 50, iters = 4, nrows = 0;
    unsigned step_us[MAX_ROWS];
    char *list = NULL, *tok, *save = NULL;

    for (int i = 1; i < argc; i++) {
        if (i + 1 >= argc)
            usage();
        if (strcmp(argv[i], "--layers") == 0)
            layers = (int)number(argv[++i], 1, MAX_LAYERS);
        else if (strcmp(argv[i], "--budget") == 0)
            pct = (int)number(argv[++i], 1, 100);
        else if (strcmp(argv[i], "--iters") == 0)
            iters = (int)number(argv[++i], 1, 1000);
        else if (strcmp(argv[i], "--step-us") == 0)
            list = argv[++i];
        else
            usage();
    }
    for (tok = strtok_r(list != NULL ? list : (char[]){"0,500,2000"}, ",", &save);
         tok != NULL && nrows < MAX_ROWS; tok = strtok_r(NULL, ",", &save))
        step_us[nrows++] = (unsigned)number(tok, 0, 1000000);
    printf("stage_pool: %d layers, budget %d%% of %.1f MiB, host backend; MiB an iteration\n",
           layers, pct, (double)footprint(layers) / (1 << 20));
    printf("%8s %12s %12s %12s %12s\n", "step us", "exec staged", "exec migr.", "sim staged",
           "sim migr.");
    for (int r = 0; r < nrows; r++) {
        if (row(layers, pct, step_us[r], iters) != 0)
            return 1;
    }
    return 0;
}
