/*
 * The planner: trace + GPU budget + link model -> schedule.
 *
 * A schedule covers one iteration of the trace and is replayed every
 * iteration (the access pattern of training is periodic). It is a list of
 * operations on runs of sections, each tied to a step: fetches are issued
 * when their issue step begins and must complete before their need step
 * starts; evictions and drops are issued when their issue step ends.
 * Operations on adjacent sections issued together are coalesced into one
 * run, since a call's fixed cost dominates small transfers.
 */
#ifndef UMADV_PLAN_PLAN_H
#define UMADV_PLAN_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "trace/trace.h"

typedef enum umadv_op_kind {
    UMADV_OP_FETCH  = 0, /* prefetch the run to the GPU */
    UMADV_OP_EVICT  = 1, /* prefetch the run to the host (copies data) */
    UMADV_OP_DROP   = 2, /* release without copying: freed, or a clean read-mostly copy */
    UMADV_OP_ADVISE = 3  /* set advice on the run */
} umadv_op_kind_t;

typedef enum umadv_advice {
    UMADV_ADVICE_NONE              = 0,
    UMADV_ADVICE_READ_MOSTLY       = 1, /* data never written in the trace */
    UMADV_ADVICE_PREFERRED_HOST    = 2,
    UMADV_ADVICE_PREFERRED_DEVICE  = 3,
    UMADV_ADVICE_ACCESSED_BY       = 4  /* GPU maps host-resident pages */
} umadv_advice_t;

typedef struct umadv_op {
    umadv_op_kind_t kind;
    umadv_advice_t  advice;      /* UMADV_OP_ADVISE only */
    uint32_t        alloc;       /* allocation */
    uint32_t        first;       /* first section inside the allocation */
    uint32_t        count;       /* sections in the run */
    uint64_t        bytes;
    uint32_t        issue_step;  /* step index relative to the iteration's first */
    uint32_t        need_step;   /* FETCH: step that needs it; EVICT/DROP: last use */
} umadv_op_t;

typedef struct umadv_plan_params {
    uint64_t           budget;     /* bytes resident on the GPU at most */
    uint32_t           iteration;  /* which iteration of the trace to plan */
    umadv_link_model_t link;       /* cost model; default: the trace's */
    uint32_t           lookahead;  /* steps a fetch may be issued early; 0 = no limit */
    int                read_mostly;/* allow read-mostly advice on never-written data */
} umadv_plan_params_t;

typedef struct umadv_schedule {
    uint64_t    budget;
    uint32_t    first_step;     /* global index of the planned iteration's first step */
    uint32_t    nsteps;
    umadv_op_t *setup;          /* advice applied once before the first replay */
    size_t      nsetup;
    umadv_op_t *ops;            /* ordered by issue step; fetches in need order */
    size_t      nops;
    uint32_t   *step_ops;       /* nsteps+1 offsets: ops of issue step s are
                                 * ops[step_ops[s] .. step_ops[s+1]) */
    uint8_t    *resident_at_start; /* per global section: on the GPU when the
                                    * iteration begins, in steady state */
    /* totals per iteration */
    uint64_t    fetch_bytes, evict_bytes, drop_bytes;
    uint32_t    fetch_ops, evict_ops;
    uint64_t    peak_planned;   /* largest planned residency at any step */
    uint64_t    max_step_bytes; /* largest single-step working set */
    double      plan_seconds;   /* time the planner took */
} umadv_schedule_t;

/* Defaults: the trace's link model, no lookahead limit, read-mostly on, the
 * trace's last iteration. */
void umadv__plan_params_default(const umadv_trace_t *trace, uint64_t budget,
                                umadv_plan_params_t *params);

/*
 * Build a schedule. @trace must be finalized.
 * Returns UMADV_ERR_BUDGET_TOO_SMALL (logged with the step's name and
 * working set) when one step alone needs more than the budget;
 * UMADV_ERR_NOT_FOUND when the iteration does not exist.
 */
umadv_status_t umadv__plan_build(const umadv_trace_t *trace, const umadv_plan_params_t *params,
                                 umadv_schedule_t *schedule);

void umadv__schedule_cleanup(umadv_schedule_t *schedule);

const char *umadv__op_kind_name(umadv_op_kind_t kind);
const char *umadv__advice_name(umadv_advice_t advice);

#endif
