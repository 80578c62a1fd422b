/*
 * umadv_plan(): the recorded iteration, the context's budget and the plan
 * knobs, handed to the planner (plan/plan.h); the replay (replay.c) starts
 * on the new schedule.
 */
#include "api/context.h"

#include "common/log.h"
#include "common/util.h"

/* The bytes the plan may keep on the GPU: the budget, or the whole device
 * when there is none (and always under the oracle policy, which ignores
 * the budget by definition). */
static uint64_t plan_budget(const umadv_context_t ctx)
{
    if (ctx->config.budget == 0 || ctx->config.policy == UMADV_POLICY_ORACLE)
        return ctx->props.total_memory;
    return ctx->config.budget;
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
