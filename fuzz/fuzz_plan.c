/*
 * libFuzzer target: reader -> planner -> simulator, the path of `umadv
 * plan`. The first two bytes of an input choose the run, the rest is a
 * trace (re-sealed with a fresh checksum, so that mutations reach the
 * planner rather than stop at the CRC):
 *   byte 0: the budget, (byte0 + 1) / 128 of the oracle's peak residency
 *           (so from under 1% to twice the footprint);
 *   byte 1: bit 0 read-mostly advice, bit 1 host placement, bits 2-4 a
 *           lookahead (0: none), bits 5-6 the iteration counted back from
 *           the last.
 * Planning costs grow with section touches (umadv-plan(1)); the target
 * skips traces above small caps so that one input cannot run for minutes
 * and the fuzzer keeps its pace. A run may fail with a status (budget too
 * small, ...) but must not crash, and a plan that succeeds must simulate.
 */
#include <string.h>

#include "common/util.h"
#include "fuzz.h"
#include "plan/plan.h"
#include "sim/sim.h"
#include "trace/trace_io.h"

/* Caps on the trace one input may plan: keep each run in milliseconds. */
#define FUZZ_MAX_STEPS    512u
#define FUZZ_MAX_TOUCHES  8192u  /* section touches in the planned iteration */
#define FUZZ_MAX_SECTIONS 65536u

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    umadv_fuzz_quiet();
    return 0;
}

static uint64_t touches(const umadv_trace_t *trace, uint32_t first, uint32_t n)
{
    uint64_t sum = 0;

    for (uint32_t s = first; s < first + n; s++) {
        const umadv_trace_step_t *step = &trace->steps[s];
        for (uint32_t a = step->first_access; a < step->first_access + step->naccesses; a++)
            sum += trace->accesses[a].count;
    }
    return sum;
}

static int small_enough(const umadv_trace_t *trace, uint32_t iteration)
{
    uint32_t first, n;

    if (trace->nsteps > FUZZ_MAX_STEPS || trace->nsections > FUZZ_MAX_SECTIONS)
        return 0;
    if (umadv__trace_iteration_steps(trace, iteration, &first, &n) != UMADV_OK)
        return 0;
    return touches(trace, first, n) <= FUZZ_MAX_TOUCHES;
}

static void simulate(const umadv_trace_t *trace, umadv_policy_t policy, uint64_t budget,
                     uint32_t iteration, const umadv_schedule_t *schedule)
{
    umadv_sim_params_t params;
    umadv_sim_result_t result;
    umadv_status_t status;

    umadv__sim_params_default(trace, policy, budget, &params);
    params.iteration = iteration;
    params.schedule = schedule;
    params.quiet = 1;
    status = umadv__sim_run(trace, &params, &result);
    /* The planner accepted this budget: the plan policy must run under it. */
    if (policy == UMADV_POLICY_PLAN)
        UMADV_FUZZ_CHECK(status == UMADV_OK);
}

static void plan_and_simulate(const umadv_trace_t *trace, uint8_t budget_byte, uint8_t flags)
{
    umadv_plan_params_t params;
    umadv_sim_params_t oracle_params;
    umadv_sim_result_t oracle;
    umadv_schedule_t schedule;
    uint32_t back = (flags >> 5) & 3u;
    uint32_t iteration;

    if (trace->niterations == 0)
        return;
    iteration = trace->niterations - 1 - UMADV_MIN(back, trace->niterations - 1);
    if (!small_enough(trace, iteration))
        return;
    umadv__sim_params_default(trace, UMADV_POLICY_ORACLE, 0, &oracle_params);
    oracle_params.iteration = iteration;
    oracle_params.quiet = 1;
    if (umadv__sim_run(trace, &oracle_params, &oracle) != UMADV_OK)
        return;
    umadv__plan_params_default(trace, oracle.peak_resident / 128 * ((uint64_t)budget_byte + 1),
                               &params);
    if (params.budget == 0)
        return;
    params.iteration = iteration;
    params.read_mostly = flags & 1;
    params.host_placement = (flags >> 1) & 1;
    params.lookahead = (flags >> 2) & 7u;
    if (umadv__plan_build(trace, &params, &schedule) != UMADV_OK)
        return;
    simulate(trace, UMADV_POLICY_PLAN, params.budget, iteration, &schedule);
    simulate(trace, UMADV_POLICY_DEMAND, params.budget, iteration, NULL);
    simulate(trace, UMADV_POLICY_PREFETCH_ALL, params.budget, iteration, NULL);
    umadv__schedule_cleanup(&schedule);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    umadv_trace_t trace;
    char *sealed, why[512];
    size_t sealed_len;

    if (size < 2)
        return 0;
    if (umadv__trace_reseal_buffer((const char *)data + 2, size - 2, &sealed, &sealed_len) !=
        UMADV_OK)
        return 0;
    if (umadv__trace_read_buffer("fuzz", sealed, sealed_len, &trace, why, sizeof(why)) ==
        UMADV_OK) {
        plan_and_simulate(&trace, data[0], data[1]);
        umadv__trace_cleanup(&trace);
    }
    free(sealed);
    return 0;
}
