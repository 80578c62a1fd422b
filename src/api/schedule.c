/*
 * Plans and budgets, a leaf of the life cycle (lifecycle.c decides when):
 * the recorded iteration, the context's budget and the plan knobs, handed
 * to the planner (plan/plan.h); the check of a new budget against the
 * recorded steps.
 *
 * ctx->config.budget is the one budget, and umadv__ctx_budget() the one
 * rule of what it means. A plan resolves it once (umadv_cycle_plan_t): the
 * planner plans for it and the executor (replay.c) enforces the same value,
 * kept with the schedule (ctx->planned_budget), so a schedule put back in
 * play (a failed re-profile) keeps the budget it was planned under. The
 * profiling pass (profile.c) reads the rule when it restores blocks.
 */
#include "api/context.h"

#include "common/log.h"
#include "common/util.h"
#include "schedule/window.h"

uint64_t umadv__ctx_budget(const umadv_context_t ctx)
{
    return ctx->config.policy == UMADV_POLICY_ORACLE ? 0 : ctx->config.budget;
}

int umadv__ctx_stage_possible(const umadv_context_t ctx)
{
    return ctx->config.stage && ctx->props.concurrent_managed_access;
}

/* A profile under oracle takes guesses (profile.c, profile_may_guess),
 * and a replay stages nothing on a trace with guessed steps (replay.c):
 * a plan for a policy that evicts would migrate its evictions, which
 * hold the application's kernel launches up (a PyTorch ResNet-50 at half
 * its footprint, evicting by migration: 433 ms an iteration, 150 staged;
 * H100, 2026-11-28). So such a plan asks for a profile under its own
 * policy, which guesses nothing, and is replayed until that profile is
 * planned; not where
 * other steps rest on the application's word (profile.c), on which that
 * profile would stage nothing either; nor where UMADV_REPROFILE_FAULTS=0
 * says never to profile again (bench/sim_vs_exec.py replays one trace). */
static int guesses_bar_staging(const umadv_context_t ctx, const umadv_schedule_t *s)
{
    return ctx->profile_guess_steps > 0 && ctx->config.reprofile_faults != 0 &&
           ctx->profile_guess_steps == ctx->trace.guessed_steps &&
           ctx->config.policy != UMADV_POLICY_ORACLE && umadv__ctx_stage_possible(ctx) &&
           ctx->profiler != NULL && s->evict_ops > 0;
}

void umadv__ctx_plan_params(const umadv_context_t ctx, umadv_plan_params_t *params)
{
    uint64_t budget = umadv__ctx_budget(ctx);

    /* No budget: the plan may keep the whole device. */
    umadv__plan_params_default(&ctx->trace, budget != 0 ? budget : ctx->props.total_memory,
                               params);
    params->iteration   = 0;
    params->lookahead   = ctx->config.lookahead;
    params->max_touches = ctx->config.plan_max_touches;
    params->read_mostly = ctx->config.read_mostly;
    params->host_placement = ctx->config.host_placement;
    /* as the replay will (api/replay.c): staging where the device can */
    params->stage = umadv__ctx_stage_possible(ctx);
}

/* The plan made ahead where it is this one (ahead.c, PLANNING AHEAD). */
umadv_status_t umadv__ctx_plan_schedule(const umadv_context_t ctx, umadv_schedule_t *schedule)
{
    umadv_plan_params_t params;
    umadv_status_t status;

    umadv__ctx_plan_params(ctx, &params);
    if (umadv__ctx_ahead_take(ctx, &params, schedule, &status))
        return status;
    return umadv__plan_build(&ctx->trace, &params, schedule);
}

umadv_status_t umadv__ctx_plan_build(umadv_context_t ctx, umadv_cycle_plan_t *plan_p)
{
    uint64_t budget = umadv__ctx_budget(ctx);
    umadv_status_t status;

    status = umadv__ctx_plan_schedule(ctx, &plan_p->schedule);
    if (status != UMADV_OK)
        return status; /* the planner logged which step did not fit */
    plan_p->budget = budget;
    plan_p->reprofile = guesses_bar_staging(ctx, &plan_p->schedule);
    if (plan_p->reprofile)
        umadv_info("the trace's steps were guessed under oracle, and a replay stages nothing "
                   "on guesses: profiling the next iteration again under %s, so that its "
                   "evictions can be staged", umadv_policy_name(ctx->config.policy));
    return UMADV_OK;
}

void umadv__ctx_plan_install(umadv_context_t ctx, umadv_cycle_plan_t *plan)
{
    char budget[32];

    umadv__ctx_schedule_cleanup(ctx);
    ctx->schedule       = plan->schedule;
    ctx->have_schedule  = 1;
    ctx->planned_budget = plan->budget;
    umadv_info("planned %u steps under %s: %zu operations, victim rule %s", ctx->schedule.nsteps,
               umadv__size_format(ctx->schedule.budget, budget, sizeof(budget)),
               ctx->schedule.nops, umadv__plan_victims_name(ctx->schedule.victims));
}

void umadv__ctx_schedule_cleanup(umadv_context_t ctx)
{
    if (ctx->have_schedule)
        umadv__schedule_cleanup(&ctx->schedule);
    ctx->have_schedule = 0;
}

/* The window of the recorded iteration, the one the library plans. */
static umadv_status_t recorded_window(const umadv_context_t ctx, umadv_window_t *w)
{
    uint32_t first, count;
    umadv_status_t status;

    status = umadv__trace_iteration_require(&ctx->trace, 0, &first, &count);
    if (status != UMADV_OK)
        return status;
    return umadv__window_init(w, &ctx->trace, first, count);
}

umadv_status_t umadv__ctx_budget_check(const umadv_context_t ctx, uint64_t budget)
{
    umadv_window_t w;
    umadv_status_t status;

    /* Nothing recorded: umadv_plan() checks. */
    if (budget == 0 || ctx->record != UMADV_CTX_REC_DONE)
        return UMADV_OK;
    status = recorded_window(ctx, &w);
    if (status != UMADV_OK)
        return status;
    status = umadv__window_check_budget(&w, budget);
    umadv__window_cleanup(&w);
    return status;
}

int umadv__ctx_step_fits(const umadv_context_t ctx, uint64_t budget)
{
    umadv_window_t w;
    int fits;

    if (budget == 0 || recorded_window(ctx, &w) != UMADV_OK)
        return 1; /* no budget; or the plan will say what is wrong */
    fits = w.max_step_bytes <= budget;
    umadv__window_cleanup(&w);
    return fits;
}
