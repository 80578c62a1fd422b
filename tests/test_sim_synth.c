/*
 * The plan against the baselines on the synthetic DNN traces, under the
 * same budget: half the footprint, or the largest step's working set
 * where that is more (VGG-16 at batch 256 has a backward step that
 * touches 90% of its footprint: no schedule fits it in half).
 */
#include <stdio.h>
#include <string.h>

#include "plan/plan.h"
#include "sim/sim.h"
#include "tap.h"
#include "trace/synth.h"

typedef struct model_case {
    const char *model;
    uint32_t    depth;
    uint32_t    batch;
} model_case_t;

static int run(const umadv_trace_t *t, umadv_policy_t policy, uint64_t budget,
               const umadv_schedule_t *s, umadv_sim_result_t *r)
{
    umadv_sim_params_t p;

    umadv__sim_params_default(t, policy, budget, &p);
    p.schedule = s;
    return umadv__sim_run(t, &p, r);
}

static void test_model(const model_case_t *mc)
{
    umadv_synth_params_t sp;
    umadv_plan_params_t pp;
    umadv_trace_t t;
    umadv_schedule_t s;
    umadv_sim_result_t o, d, a, p;
    uint64_t budget;
    int built;

    umadv__synth_params_default(mc->model, &sp);
    sp.depth = mc->depth;
    if (mc->batch)
        sp.batch = mc->batch;
    built = umadv__synth_build(&sp, &t) == UMADV_OK;
    ok(built, "%s: synthetic trace", mc->model);
    if (!built) {
        for (int i = 0; i < 6; i++)
            skip("no trace", mc->model);
        return;
    }
    run(&t, UMADV_POLICY_ORACLE, 0, NULL, &o);
    umadv__plan_params_default(&t, 0, &pp);
    umadv__plan_build(&t, &pp, &s);
    budget = o.peak_resident / 2 > s.max_step_bytes ? o.peak_resident / 2 : s.max_step_bytes;
    umadv__schedule_cleanup(&s);
    pp.budget = budget;
    is(umadv__plan_build(&t, &pp, &s), UMADV_OK, "%s: planned under %.1f%% of the footprint",
       mc->model, 100.0 * budget / o.peak_resident);
    run(&t, UMADV_POLICY_DEMAND, budget, &s, &d);
    run(&t, UMADV_POLICY_PREFETCH_ALL, budget, &s, &a);
    run(&t, UMADV_POLICY_PLAN, budget, &s, &p);
    diag("%s: oracle %.1f ms, demand %.1f, prefetch-all %.1f, plan %.1f, bound %.1f "
         "(plan %.1f ms to make, %u passes)", mc->model, o.iteration_s * 1e3, d.iteration_s * 1e3,
         a.iteration_s * 1e3, p.iteration_s * 1e3, p.lower_bound_s * 1e3, s.plan_seconds * 1e3,
         s.passes);
    ok(p.iteration_s <= d.iteration_s, "%s: plan no slower than demand", mc->model);
    ok(p.iteration_s <= a.iteration_s, "%s: plan no slower than prefetch-all", mc->model);
    ok(p.faults == 0 && p.peak_resident <= budget && d.peak_resident <= budget &&
       a.peak_resident <= budget, "%s: no plan faults; every policy within the budget", mc->model);
    ok(p.lower_bound_s <= p.iteration_s && p.lower_bound_s <= d.iteration_s &&
       p.lower_bound_s <= a.iteration_s && o.iteration_s <= p.lower_bound_s,
       "%s: oracle <= lower bound <= every policy", mc->model);
    ok(s.converged, "%s: steady state found", mc->model);
    umadv__schedule_cleanup(&s);
    umadv__trace_cleanup(&t);
}

int main(void)
{
    static const model_case_t cases[] = {
        {"vgg16", 0, 0},
        {"resnet50", 0, 0},
        {"gpt2", 0, 0},
        {"resnet-deep", 101, 0},
    };

    plan(7 * (int)(sizeof(cases) / sizeof(cases[0])));
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        test_model(&cases[i]);
    return exit_status();
}
