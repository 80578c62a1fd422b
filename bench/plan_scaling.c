/*
 * How planning and simulation time grow with the depth of the network:
 * synthetic resnet-deep traces (batch 256, 2 MiB sections) of growing
 * depth, planned and simulated under half their footprint.
 *
 *   bench/plan_scaling [MAX_DEPTH [BATCH]]
 *
 * Prints one row per depth: steps, sections, accesses (runs) and section
 * touches per iteration, the schedule's ops, the best of three planning
 * and plan-simulation times, and planning time per thousand touches
 * (flat if planning is linear in the trace's size).
 */
#include <stdio.h>
#include <stdlib.h>

#include "common/util.h"
#include "plan/plan.h"
#include "sim/sim.h"
#include "trace/synth.h"

#define REPEAT 3

static uint64_t touches(const umadv_trace_t *t)
{
    uint64_t n = 0;

    for (uint32_t i = 0; i < t->naccesses; i++)
        n += t->accesses[i].count;
    return n;
}

static double best_plan(const umadv_trace_t *t, const umadv_plan_params_t *pp,
                        umadv_schedule_t *s)
{
    double best = 1e30;

    for (int i = 0; i < REPEAT; i++) {
        uint64_t t0 = umadv__now_ns();
        if (i > 0)
            umadv__schedule_cleanup(s);
        if (umadv__plan_build(t, pp, s) != UMADV_OK)
            return -1;
        best = UMADV_MIN(best, (double)(umadv__now_ns() - t0) * 1e-6);
    }
    return best;
}

static double best_sim(const umadv_trace_t *t, const umadv_schedule_t *s, uint64_t budget,
                       umadv_sim_result_t *r)
{
    umadv_sim_params_t sp;
    double best = 1e30;

    umadv__sim_params_default(t, UMADV_POLICY_PLAN, budget, &sp);
    sp.schedule = s;
    for (int i = 0; i < REPEAT; i++) {
        uint64_t t0 = umadv__now_ns();
        if (umadv__sim_run(t, &sp, r) != UMADV_OK)
            return -1;
        best = UMADV_MIN(best, (double)(umadv__now_ns() - t0) * 1e-6);
    }
    return best;
}

static int row(uint32_t depth, uint32_t batch)
{
    umadv_synth_params_t sp;
    umadv_plan_params_t pp;
    umadv_sim_params_t op;
    umadv_sim_result_t o, r;
    umadv_schedule_t s;
    umadv_trace_t t;
    double plan_ms, sim_ms;
    uint64_t budget;

    umadv__synth_params_default("resnet-deep", &sp);
    sp.depth = depth;
    sp.batch = batch;
    if (umadv__synth_build(&sp, &t) != UMADV_OK)
        return -1;
    umadv__sim_params_default(&t, UMADV_POLICY_ORACLE, 0, &op);
    umadv__sim_run(&t, &op, &o);
    umadv__plan_params_default(&t, 0, &pp);
    umadv__plan_build(&t, &pp, &s);
    budget = UMADV_MAX(o.peak_resident / 2, s.max_step_bytes);
    umadv__schedule_cleanup(&s);
    pp.budget = budget;
    plan_ms = best_plan(&t, &pp, &s);
    sim_ms = plan_ms < 0 ? -1 : best_sim(&t, &s, budget, &r);
    if (sim_ms < 0) {
        fprintf(stderr, "plan_scaling: depth %u failed\n", depth);
        umadv__trace_cleanup(&t);
        return -1;
    }
    printf("%6u %6u %8u %8u %9llu %7zu %9.1f %8.1f %9.3f %10.1f\n", depth, t.nsteps,
           t.nsections, t.naccesses, (unsigned long long)touches(&t), s.nops, plan_ms, sim_ms,
           plan_ms * 1e3 / (double)touches(&t), r.iteration_s * 1e3);
    umadv__schedule_cleanup(&s);
    umadv__trace_cleanup(&t);
    return 0;
}

int main(int argc, char **argv)
{
    static const uint32_t depths[] = {101, 201, 501, 1001, 1517, 2001, 3001, 5001, 10001};
    uint32_t max_depth = argc > 1 ? (uint32_t)strtoul(argv[1], NULL, 10) : 3001;
    uint32_t batch = argc > 2 ? (uint32_t)strtoul(argv[2], NULL, 10) : 256;

    printf("%6s %6s %8s %8s %9s %7s %9s %8s %9s %10s\n", "depth", "steps", "sections",
           "accesses", "touches", "ops", "plan_ms", "sim_ms", "us/ktouch", "iter_ms");
    for (size_t i = 0; i < sizeof(depths) / sizeof(depths[0]) && depths[i] <= max_depth; i++) {
        if (row(depths[i], batch) != 0)
            return 1;
    }
    return 0;
}
