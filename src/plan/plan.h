/*
 * The planner: trace + GPU budget + link model -> schedule
 * (schedule/schedule.h says what a schedule is and how it is replayed).
 * It sits above the simulator, which it runs to choose among candidate
 * schedules; the simulator sits above the replay core (schedule/core.h).
 * src/plan/plan.c's opening comment describes the algorithm.
 */
#ifndef UMADV_PLAN_PLAN_H
#define UMADV_PLAN_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "schedule/schedule.h"
#include "trace/trace.h"

typedef struct umadv_plan_params {
    uint64_t           budget;     /* bytes resident on the GPU at most; 0 = no limit */
    uint32_t           iteration;  /* which iteration of the trace to plan */
    umadv_link_model_t link;       /* cost model; default: the trace's */
    uint32_t           lookahead;  /* steps a fetch may be issued early; 0 = no limit */
    int                read_mostly;/* allow read-mostly advice on never-written data */
    uint64_t           max_op_bytes; /* split fetch runs longer than this, so that an
                                      * urgent fetch never waits long behind one
                                      * call; 0 = the default (see plan.c) */
    uint32_t           max_passes; /* cap on the residency passes that look for the
                                    * steady state; 0 = the default, 16 */
    int                host_placement; /* allow host placement (plan.c, HOST
                                        * PLACEMENT): runs read or written
                                        * over the link instead of moved */
    int                refine;     /* plan each victim rule and, with host
                                    * placement, each way of estimating it (and
                                    * none), simulate each, keep the fastest
                                    * (plan.c, REFINE) */
    int                victims;    /* the victim rule (residency.c, WHEN THE
                                    * EVICTION CAN START) when not refined:
                                    * UMADV_PLAN_VICTIMS_* */
    uint64_t           max_touches; /* the iteration's section touches plus steps
                                     * at most (window.h, COST); 0 = no limit;
                                     * default UMADV_PLAN_MAX_TOUCHES_DEFAULT */
    int                stage;      /* the replay stages evictions of the trace's
                                    * stageable allocations (schedule/core.h,
                                    * STAGING): the plan prices them at the
                                    * staged channel (plan.c, CHANNELS) and its
                                    * trials simulate it; default: the trace
                                    * marks any allocation stageable */
} umadv_plan_params_t;

/* How the residency policy weighs when a victim's eviction can start
 * against Belady's farthest next use (residency.c). */
enum {
    UMADV_PLAN_VICTIMS_NEAR_BELADY, /* a late victim gives way to one next used
                                     * at most a tenth of its distance sooner */
    UMADV_PLAN_VICTIMS_IN_TIME,     /* to one at most half its distance sooner,
                                     * the evictions issued with it counted,
                                     * and the lane's queue in room order */
    UMADV_PLAN_VICTIM_RULES
};

/* A victim rule's name ("near Belady", "in time"). */
const char *umadv__plan_victims_name(int victims);

/* What the residency policy alone did (no timing), for tests and what-if
 * tools. */
typedef struct umadv_residency_stats {
    uint64_t fetch_bytes;   /* loads that copy data */
    uint64_t fresh_bytes;   /* first touches of fresh memory (no copy) */
    uint64_t evict_bytes;   /* removals that copy data back */
    uint64_t drop_bytes;    /* removals without a copy */
    uint64_t loads;         /* sections loaded, fresh ones included */
    uint64_t peak;          /* largest residency after a step's loads */
    uint64_t remote_bytes;  /* touches served over the link (host placement) */
} umadv_residency_stats_t;

/* Defaults: the trace's link model, no lookahead limit, read-mostly,
 * host placement and refine on, the trace's last iteration, staging
 * where the trace marks stageable allocations. */
void umadv__plan_params_default(const umadv_trace_t *trace, uint64_t budget,
                                umadv_plan_params_t *params);

/*
 * Build a schedule. @trace must be finalized.
 * Returns UMADV_ERR_BUDGET_TOO_SMALL (logged with the step's name and
 * working set) when one step alone needs more than the budget;
 * UMADV_ERR_NOT_FOUND when the iteration does not exist;
 * UMADV_ERR_INVALID_PARAM (logged, naming the figure) for link figures
 * its arithmetic cannot stay finite with (a bandwidth below 1 byte/s, a
 * latency above 1e6 s, anything not finite).
 */
umadv_status_t umadv__plan_build(const umadv_trace_t *trace, const umadv_plan_params_t *params,
                                 umadv_schedule_t *schedule);

/*
 * The planner's residency policy run once over global steps [first,
 * first + count) as a linear sequence: starting with nothing resident,
 * next uses past the last step are "never". This is the core that
 * umadv__plan_build runs cyclically; exposed so that it can be compared
 * with an exact search on the same problem. @budget 0 = no limit.
 * UMADV_ERR_BUDGET_TOO_SMALL (logged) when one step does not fit.
 */
umadv_status_t umadv__plan_residency_linear(const umadv_trace_t *trace, uint32_t first,
                                            uint32_t count, uint64_t budget, int read_mostly,
                                            umadv_residency_stats_t *stats);

#endif
