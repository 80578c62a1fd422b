/*
 * umadv_plan(): the recorded iteration, the context's budget and the plan
 * knobs, handed to the planner (plan/plan.h); the replay (replay.c) starts
 * on the new schedule. umadv_set_budget(): a new budget, checked against
 * the recorded steps, planned at the next iteration boundary.
 *
 * ctx->config.budget is the one budget, and umadv__ctx_budget() the one
 * rule of what it means: the planner (plan_budget below), the executor
 * (replay.c) and the profiling pass (profile.c) read it when they start,
 * so changing it and planning again is all a change needs.
 */
#include "api/context.h"

#include "common/log.h"
#include "common/util.h"
#include "schedule/window.h"

uint64_t umadv__ctx_budget(const umadv_context_t ctx)
{
    return ctx->config.policy == UMADV_POLICY_ORACLE ? 0 : ctx->config.budget;
}

/* The bytes the plan may keep on the GPU: the budget, or the whole device
 * when there is none. */
static uint64_t plan_budget(const umadv_context_t ctx)
{
    uint64_t budget = umadv__ctx_budget(ctx);

    return budget != 0 ? budget : ctx->props.total_memory;
}

umadv_status_t umadv__ctx_plan(umadv_context_t ctx)
{
    umadv_plan_params_t params;
    umadv_schedule_t schedule;
    umadv_status_t status;
    char budget[32];

    status = umadv__ctx_recorded_trace(ctx, "umadv_plan");
    if (status != UMADV_OK)
        return status;
    umadv__plan_params_default(&ctx->trace, plan_budget(ctx), &params);
    params.iteration   = 0;
    params.lookahead   = ctx->config.lookahead;
    params.max_touches = ctx->config.plan_max_touches;
    params.read_mostly = ctx->config.read_mostly;
    params.host_placement = ctx->config.host_placement;
    status = umadv__plan_build(&ctx->trace, &params, &schedule);
    if (status != UMADV_OK)
        return status; /* the planner logged which step did not fit */
    umadv__replay_stop(ctx); /* it plays the schedule replaced here */
    if (ctx->have_schedule)
        umadv__schedule_cleanup(&ctx->schedule);
    ctx->schedule = schedule;
    ctx->have_schedule = 1;
    ctx->replay.replan = 0; /* this plan has the latest budget and policy */
    umadv_info("planned %u steps under %s: %zu operations", schedule.nsteps,
               umadv__size_format(params.budget, budget, sizeof(budget)), schedule.nops);
    /* Without an executor the application runs on plain managed memory:
     * logged, not an error of the plan. */
    umadv__replay_start(ctx);
    return UMADV_OK;
}

UMADV_API umadv_status_t umadv_plan(umadv_context_t ctx)
{
    umadv_status_t status;

    if (ctx == NULL)
        return UMADV_ERR_INVALID_PARAM;
    pthread_mutex_lock(&ctx->lock);
    status = umadv__ctx_plan(ctx);
    pthread_mutex_unlock(&ctx->lock);
    return status;
}

void umadv__ctx_schedule_cleanup(umadv_context_t ctx)
{
    if (ctx->have_schedule)
        umadv__schedule_cleanup(&ctx->schedule);
    ctx->have_schedule = 0;
}

/* UMADV_ERR_BUDGET_TOO_SMALL, logged by the window with the step's index,
 * name and working set, when a step of the recorded iteration alone needs
 * more than @budget; UMADV_OK with nothing recorded (umadv_plan() checks). */
static umadv_status_t budget_check(const umadv_context_t ctx, uint64_t budget)
{
    umadv_window_t w;
    uint32_t first, count;
    umadv_status_t status;

    if (budget == 0 || ctx->record != UMADV_CTX_REC_DONE)
        return UMADV_OK;
    status = umadv__trace_iteration_require(&ctx->trace, 0, &first, &count);
    if (status != UMADV_OK)
        return status;
    status = umadv__window_init(&w, &ctx->trace, first, count);
    if (status != UMADV_OK)
        return status;
    status = umadv__window_check_budget(&w, budget);
    umadv__window_cleanup(&w);
    return status;
}

UMADV_API umadv_status_t umadv_set_budget(umadv_context_t ctx, uint64_t bytes)
{
    umadv_status_t status;
    char want[32], have[32];

    if (ctx == NULL)
        return UMADV_ERR_INVALID_PARAM;
    pthread_mutex_lock(&ctx->lock);
    status = budget_check(ctx, bytes);
    if (status != UMADV_OK) {
        umadv_error("umadv_set_budget(%s): refused; the budget stays %s",
                    umadv__size_format(bytes, want, sizeof(want)),
                    ctx->config.budget != 0
                        ? umadv__size_format(ctx->config.budget, have, sizeof(have))
                        : "none");
        goto out;
    }
    ctx->config.budget = bytes;
    /* The iteration under way keeps its executor; the next one begins on
     * a schedule for the new budget (replay.c plans it there). */
    if (ctx->have_schedule)
        ctx->replay.replan = 1;
    umadv_debug("budget set to %s from the next iteration",
                bytes != 0 ? umadv__size_format(bytes, want, sizeof(want)) : "none");
out:
    pthread_mutex_unlock(&ctx->lock);
    return status;
}
