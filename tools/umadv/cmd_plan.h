/*
 * umadv plan, shared between the command (cmd_plan.c: arguments, planning,
 * simulation) and its output (cmd_plan_print.c: text and JSON).
 */
#ifndef UMADV_TOOLS_CMD_PLAN_H
#define UMADV_TOOLS_CMD_PLAN_H

#include <stdint.h>

#include "plan/plan.h"
#include "sim/sim.h"
#include "timeline.h"
#include "trace/trace.h"

#define PLAN_MAX_BUDGETS 16

typedef struct umadv_plan_budget {
    const char *text;    /* as the user wrote it */
    double      percent; /* > 0 for "50%" */
    uint64_t    bytes;   /* otherwise */
} umadv_plan_budget_t;

typedef struct umadv_plan_args {
    const char         *trace_path;
    char               *budget_list; /* owned copy, split in place */
    umadv_plan_budget_t budgets[PLAN_MAX_BUDGETS];
    unsigned            nbudgets;
    umadv_policy_t      policies[UMADV_POLICY_COUNT];
    unsigned            npolicies;
    uint32_t            iteration;
    int                 iteration_set;
    uint32_t            lookahead;
    int                 lookahead_set;
    int                 json, ops, read_mostly, host_placement;
    int                 stage;       /* 0: --no-stage */
    const char         *timeline;    /* --timeline FILE, or NULL */
} umadv_plan_args_t;

typedef struct umadv_plan_block {
    const umadv_plan_budget_t *spec;
    uint64_t                   budget;
    umadv_schedule_t           schedule;
    double                     bound_s; /* lower bound for the plan's volumes */
    umadv_sim_result_t         results[UMADV_POLICY_COUNT]; /* in args->policies order */
} umadv_plan_block_t;

typedef struct umadv_plan_run {
    const umadv_plan_args_t *args;
    umadv_trace_t            trace;
    uint32_t                 iteration, first_step, nsteps;
    umadv_link_model_t       link;
    umadv_sim_result_t       oracle; /* unconstrained: footprint and compute */
    umadv_plan_block_t       blocks[PLAN_MAX_BUDGETS];
    unsigned                 nblocks;
    umadv_timeline_t        *timeline;  /* every simulation's track, or NULL */
    uint64_t                 max_touches; /* UMADV_PLAN_MAX_TOUCHES */
} umadv_plan_run_t;

/* Print the results of a run that succeeded, on standard output. */
void umadv__plan_print_text(const umadv_plan_run_t *run);
void umadv__plan_print_json(const umadv_plan_run_t *run);

#endif
