/*
 * The planner's two victim rules (src/plan/residency.c, WHEN THE EVICTION
 * CAN START) and its choice between them (src/plan/plan.c, REFINE), on
 * the traces recorded on a GPU that ship in data/traces: at each budget
 * the refined plan is no slower in the simulator than either rule alone;
 * each rule's plan keeps the budget and replays without a fault; and on
 * VGG-16 with its gradients freed at the end of the iteration (the trace
 * that made the second rule), at save_on_cpu's peak (90%), the in-time
 * rule is faster than the near-Belady one.
 */
#include <stdio.h>
#include <stdlib.h>

#include "common/util.h"
#include "plan/plan.h"
#include "sim/sim.h"
#include "tap.h"
#include "trace/trace_io.h"

static const char *const traces[] = {
    "h200-vgg16-bs64-tail.umt", "h200-vgg16-bs64.umt", "h200-resnet50-bs64.umt",
};
static const unsigned percents[] = {90, 75, 50};

#define CHECKS_PER_BUDGET 2

static int load(const char *name, umadv_trace_t *t)
{
    const char *srcdir = getenv("top_srcdir");
    char path[4096], why[512];

    snprintf(path, sizeof(path), "%s/data/traces/%s", srcdir != NULL ? srcdir : ".", name);
    if (umadv__trace_read_file(path, t, why, sizeof(why)) == UMADV_OK)
        return 1;
    diag("%s", why);
    return 0;
}

/* Oracle's peak residency, as umadv plan's percentages take it. */
static uint64_t footprint(const umadv_trace_t *t)
{
    umadv_sim_params_t sp;
    umadv_sim_result_t r;

    umadv__sim_params_default(t, UMADV_POLICY_ORACLE, 0, &sp);
    sp.quiet = 1;
    return umadv__sim_run(t, &sp, &r) == UMADV_OK ? r.peak_resident : 0;
}

/* The simulated iteration of the plan: refined (@rule < 0) or with
 * @rule alone; -1 if it cannot be planned, simulated, or breaks the
 * budget or faults. */
static double plan_ms(const umadv_trace_t *t, uint64_t budget, int rule)
{
    umadv_plan_params_t pp;
    umadv_sim_params_t sp;
    umadv_sim_result_t r;
    umadv_schedule_t s;
    double ms = -1;

    umadv__plan_params_default(t, budget, &pp);
    pp.host_placement = 0; /* UMADV_HOST_PLACEMENT's default */
    pp.refine = rule < 0;
    pp.victims = rule < 0 ? UMADV_PLAN_VICTIMS_NEAR_BELADY : rule;
    if (umadv__plan_build(t, &pp, &s) != UMADV_OK)
        return -1;
    umadv__sim_params_default(t, UMADV_POLICY_PLAN, budget, &sp);
    sp.schedule = &s;
    sp.quiet = 1;
    if (umadv__sim_run(t, &sp, &r) == UMADV_OK && r.faults == 0 && r.peak_resident <= budget)
        ms = r.iteration_s * 1e3;
    umadv__schedule_cleanup(&s);
    return ms;
}

static void check_budget(const char *name, const umadv_trace_t *t, uint64_t fp, unsigned pct,
                         double *rule_ms)
{
    uint64_t budget = fp / 100 * pct;
    double refined = plan_ms(t, budget, -1);

    for (int rule = 0; rule < UMADV_PLAN_VICTIM_RULES; rule++)
        rule_ms[rule] = plan_ms(t, budget, rule);
    ok(refined > 0 && rule_ms[0] > 0 && rule_ms[1] > 0,
       "%s at %u%%: every plan keeps the budget without a fault (refined %.2f ms, near "
       "Belady %.2f, in time %.2f)", name, pct, refined, rule_ms[0], rule_ms[1]);
    ok(refined > 0 && refined <= rule_ms[0] && refined <= rule_ms[1],
       "%s at %u%%: the refined plan is no slower than either rule's", name, pct);
}

int main(void)
{
    plan((int)(UMADV_ARRAY_SIZE(traces) * UMADV_ARRAY_SIZE(percents)) * CHECKS_PER_BUDGET + 1);
    for (size_t i = 0; i < UMADV_ARRAY_SIZE(traces); i++) {
        umadv_trace_t t;
        int loaded = load(traces[i], &t);
        uint64_t fp = loaded ? footprint(&t) : 0;

        for (size_t k = 0; k < UMADV_ARRAY_SIZE(percents); k++) {
            double rule_ms[UMADV_PLAN_VICTIM_RULES] = {-1, -1};

            if (fp == 0) {
                for (int c = 0; c < CHECKS_PER_BUDGET; c++)
                    ok(0, "%s: read and planned without a budget", traces[i]);
            } else {
                check_budget(traces[i], &t, fp, percents[k], rule_ms);
            }
            if (i == 0 && k == 0)
                ok(rule_ms[1] > 0 && rule_ms[1] < rule_ms[0],
                   "%s at 90%%: the in-time rule (%.2f ms) beats near Belady (%.2f)", traces[i],
                   rule_ms[1], rule_ms[0]);
        }
        if (loaded)
            umadv__trace_cleanup(&t);
    }
    return exit_status();
}
