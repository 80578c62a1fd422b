/*
 * The timing pass (context.h): the iteration after a profiled one, timed
 * with nothing evicted and no parameter scan, gives the trace its step
 * durations, since the profiled ones include fault stalls. When it runs
 * is the life cycle's (lifecycle.c); the kernel records come from the
 * profiler, in TIMING mode.
 */
#include "api/context.h"

#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "profiler/profiler.h"

void umadv__ctx_tpass_reset(umadv_context_t ctx)
{
    umadv_prof_result_t result;

    if (ctx->tpass.state == UMADV_CTX_TPASS_RUNNING && ctx->profiler != NULL &&
        umadv__prof_record_stop(ctx->profiler, &result) == UMADV_OK)
        umadv__prof_result_cleanup(&result);
    free(ctx->tpass.durations);
    memset(&ctx->tpass, 0, sizeof(ctx->tpass));
}

int umadv__ctx_tpass_start(umadv_context_t ctx)
{
    uint64_t *durations;

    if (ctx->profiler == NULL || ctx->record != UMADV_CTX_REC_DONE ||
        ctx->tpass.state == UMADV_CTX_TPASS_RUNNING)
        return 0;
    durations = calloc(ctx->trace.nsteps, sizeof(*durations));
    if (durations == NULL ||
        umadv__prof_record_start(ctx->profiler, UMADV_PROF_RECORD_TIMING, 0) != UMADV_OK) {
        umadv_info("timing pass not run: the trace keeps the profiled step durations");
        free(durations);
        return 0;
    }
    ctx->tpass = (umadv_ctx_tpass_t){UMADV_CTX_TPASS_RUNNING, 0, UMADV_STEP_NONE, durations};
    return 1;
}

uint32_t umadv__ctx_tpass_step(umadv_context_t ctx, const char *name, umadv_step_kind_t kind)
{
    umadv_ctx_tpass_t *tp = &ctx->tpass;
    uint32_t i = tp->next++;

    umadv__ctx_record_tail_close(ctx);
    if (tp->diverged != UMADV_STEP_NONE)
        return UMADV_STEP_NONE;
    if (i >= ctx->trace.nsteps || ctx->trace.steps[i].kind != kind ||
        !umadv__str_same(ctx->trace.steps[i].name, name)) {
        tp->diverged = i;
        umadv_debug("timing pass: step %u is %s, the profiled one was %s", i,
                    name != NULL ? name : "unnamed",
                    i < ctx->trace.nsteps && ctx->trace.steps[i].name != NULL
                        ? ctx->trace.steps[i].name : "none");
        return UMADV_STEP_NONE;
    }
    return i;
}

/* Kernel steps take the span of their kernels' records. */
static umadv_status_t tpass_kernel_durations(umadv_context_t ctx, umadv_prof_result_t *r)
{
    uint32_t n = ctx->trace.nsteps;
    uint64_t *spans = calloc(n ? n : 1, sizeof(*spans));
    umadv_status_t status = UMADV_ERR_NO_MEMORY;

    if (spans != NULL)
        status = umadv__prof_kernel_spans(r->launches, r->nlaunches, r->kernels, r->nkernels,
                                          n, spans);
    for (uint32_t s = 0; s < n && status == UMADV_OK; s++) {
        if (ctx->trace.steps[s].kind == UMADV_STEP_KERNEL)
            ctx->tpass.durations[s] = spans[s];
    }
    free(spans);
    return status;
}

/* Whether the timed iteration ran the profiled one's steps (-1 if it ran
 * others; an empty one says nothing of the profile: 0), each timed (1; 0
 * if not). Logged at info: the trace keeps what it has. */
static int tpass_usable(umadv_context_t ctx)
{
    const umadv_ctx_tpass_t *tp = &ctx->tpass;
    uint32_t untimed = 0;

    if (tp->diverged != UMADV_STEP_NONE || tp->next != ctx->trace.nsteps) {
        umadv_info("timing pass: the iteration after the profiled one ran other steps (%u "
                   "steps, %u profiled; first difference at step %u)", tp->next,
                   ctx->trace.nsteps,
                   tp->diverged != UMADV_STEP_NONE ? tp->diverged : UMADV_MIN(tp->next,
                                                                              ctx->trace.nsteps));
        return tp->next > 0 ? -1 : 0;
    }
    for (uint32_t s = 0; s < ctx->trace.nsteps; s++)
        untimed += tp->durations[s] == 0;
    if (untimed > 0)
        umadv_info("timing pass: %u of %u steps got no time (kernel records lost?): the "
                   "trace keeps the profiled step durations", untimed, ctx->trace.nsteps);
    return untimed == 0;
}

static uint64_t total_ns(const umadv_trace_t *t)
{
    uint64_t sum = 0;

    for (uint32_t s = 0; s < t->nsteps; s++)
        sum += t->steps[s].duration_ns;
    return sum;
}

/* The measured durations into the trace; its source says so. */
static void tpass_apply(umadv_context_t ctx)
{
    uint64_t before = total_ns(&ctx->trace);

    for (uint32_t s = 0; s < ctx->trace.nsteps; s++)
        ctx->trace.steps[s].duration_ns = ctx->tpass.durations[s];
    umadv__trace_source_note(&ctx->trace, "step durations from a timing pass");
    umadv_info("timing pass: %u step durations measured in the iteration after the profiled "
               "one: %.3f ms of compute (%.3f ms as profiled, with fault stalls)",
               ctx->trace.nsteps, (double)total_ns(&ctx->trace) / 1e6, (double)before / 1e6);
}

int umadv__ctx_tpass_finish(umadv_context_t ctx)
{
    umadv_prof_result_t result;
    int usable;

    if (ctx->tpass.state != UMADV_CTX_TPASS_RUNNING)
        return 0;
    if (umadv__prof_record_stop(ctx->profiler, &result) != UMADV_OK) {
        umadv__ctx_tpass_reset(ctx);
        return 0;
    }
    ctx->tpass.state = UMADV_CTX_TPASS_IDLE;
    usable = tpass_kernel_durations(ctx, &result) == UMADV_OK ? tpass_usable(ctx) : 0;
    umadv__prof_result_cleanup(&result);
    if (usable > 0)
        tpass_apply(ctx);
    umadv__ctx_tpass_reset(ctx);
    return usable;
}
