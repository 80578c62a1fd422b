/*
 * PLANNING AHEAD. A plan is a function of a trace and the planner's
 * parameters alone (plan/plan.h). Where the trace changes under the plan
 * the replay plays, the recording's tail (record.c, THE TAIL: blocks
 * freed before the next iteration's first step die with the window), the
 * plan is built again at the next iteration's boundary, on the
 * application's thread: 15-72 ms of a profiling phase on an H200
 * (GPT-2, ResNet-50 and densenet121 under a budget, 2026-11-29), where
 * the iteration in between runs 130-300 ms. So when the tail closes
 * having changed the trace, the plan is built on a thread of its own,
 * on a copy of the trace and of the parameters, and the boundary takes
 * it where neither has changed since (umadv__trace_same_figures, the
 * parameters byte for byte): the plan it would have built, failure
 * included (logged once, by the thread). Otherwise it is dropped and
 * the boundary plans as before. The thread touches nothing but its own
 * copy; it is joined when taken, dropped, or the context goes.
 */
#include "api/context.h"

#include <string.h>

#include "common/log.h"
#include "common/util.h"

static void *ahead_run(void *arg)
{
    umadv_ctx_ahead_t *a = arg;
    uint64_t start = umadv__now_ns();

    memset(&a->schedule, 0, sizeof(a->schedule));
    a->status = umadv__plan_build(&a->trace, &a->params, &a->schedule);
    a->plan_ns = umadv__now_ns() - start;
    return NULL;
}

/* Join the thread, if any: its plan and copy are then the context's. */
static void ahead_join(umadv_ctx_ahead_t *a)
{
    if (!a->running)
        return;
    pthread_join(a->thread, NULL);
    a->running = 0;
    a->joined = 1;
}

void umadv__ctx_ahead_drop(umadv_context_t ctx)
{
    umadv_ctx_ahead_t *a = &ctx->ahead;

    ahead_join(a);
    if (!a->joined)
        return;
    if (a->status == UMADV_OK)
        umadv__schedule_cleanup(&a->schedule);
    umadv__trace_cleanup(&a->trace);
    a->joined = 0;
}

void umadv__ctx_ahead_start(umadv_context_t ctx)
{
    umadv_ctx_ahead_t *a = &ctx->ahead;

    umadv__ctx_ahead_drop(ctx);
    umadv__ctx_plan_params(ctx, &a->params);
    if (umadv__trace_copy(&ctx->trace, &a->trace) != UMADV_OK)
        return; /* the boundary plans */
    if (pthread_create(&a->thread, NULL, ahead_run, a) != 0) {
        umadv__trace_cleanup(&a->trace);
        umadv_debug("plan ahead: no thread to plan on: the next boundary plans");
        return;
    }
    a->running = 1;
}

int umadv__ctx_ahead_take(umadv_context_t ctx, const umadv_plan_params_t *params,
                          umadv_schedule_t *schedule, umadv_status_t *status_p)
{
    umadv_ctx_ahead_t *a = &ctx->ahead;
    int same;

    ahead_join(a);
    if (!a->joined)
        return 0;
    same = memcmp(&a->params, params, sizeof(*params)) == 0 &&
           umadv__trace_same_figures(&a->trace, &ctx->trace);
    if (!same) {
        umadv_debug("plan ahead: the trace or the planner's parameters changed since: "
                    "planned again");
        umadv__ctx_ahead_drop(ctx);
        return 0;
    }
    *schedule = a->schedule;
    *status_p = a->status;
    memset(&a->schedule, 0, sizeof(a->schedule)); /* the caller's now */
    umadv_debug("plan ahead: taken, built in %.1f ms on its own thread",
                (double)a->plan_ns / 1e6);
    umadv__ctx_ahead_drop(ctx);
    return 1;
}
