/*
 * The context's life cycle as one state machine (api/lifecycle.c):
 *
 *   EMPTY --profile--> RECORDING --completes--> RECORDED (declared only)
 *                          |                    RECORDED_UNTIMED (CUPTI)
 *                          +--nothing--> EMPTY        | next iteration
 *                                                     v
 *                                         TIMING --ends--> RECORDED
 *   RECORDED*, TIMING --umadv_plan()--> REPLAYING*, REPLAY_TIMING
 *   REPLAYING_UNTIMED --next iteration--> REPLAY_TIMING --ends--> REPLAYING
 *   REPLAYING* --drift, profile--> REPROFILING --completes--> RECORDED*
 *                                      |       (planned at the next boundary)
 *                                      +--nothing--> REPLAYING the kept profile
 *   any state --the process exits--> EXITED (the replay stopped for good)
 *
 * Its table (lifecycle.c, life_table) maps a state and an event to an
 * action and the next state. Actions call the leaves (record.c, profile.c,
 * replay.c, schedule.c) through umadv_cycle_leaves_t and may answer with a
 * follow-up event (a recording's outcome, a plan built or not), which the
 * machine dispatches in turn. The leaves never call each other's life-cycle
 * functions: the machine sequences them. What the leaves keep (ctx->record,
 * ctx->have_schedule, ctx->tpass.state, ctx->replay.exec) says what data
 * they hold, never where the life cycle stands.
 */
#ifndef UMADV_API_LIFECYCLE_H
#define UMADV_API_LIFECYCLE_H

#include <stddef.h>
#include <stdint.h>

#include <umadv.h>

#include "plan/plan.h"
#include "trace/trace.h"

struct umadv_ctx_alloc;

typedef enum umadv_cycle_state {
    UMADV_CYCLE_EMPTY,             /* nothing recorded */
    UMADV_CYCLE_RECORDING,         /* the iteration under way is recorded; nothing kept */
    UMADV_CYCLE_RECORDED_UNTIMED,  /* a profiled trace whose durations hold fault
                                   * stalls: the next iteration times them */
    UMADV_CYCLE_RECORDED,          /* a trace, no schedule: umadv_plan() awaited */
    UMADV_CYCLE_TIMING,            /* the iteration under way is timed; no schedule */
    UMADV_CYCLE_REPLAYING_UNTIMED, /* a schedule replayed; the next iteration is timed */
    UMADV_CYCLE_REPLAYING,         /* a schedule replayed */
    UMADV_CYCLE_REPLAY_TIMING,     /* replayed while the iteration under way is timed */
    UMADV_CYCLE_REPROFILING,       /* recording again; the last good trace and
                                   * schedule are kept until it succeeds */
    UMADV_CYCLE_EXITED,            /* the process exits (context.c, PROCESS EXIT):
                                   * nothing replays or records again; blocks
                                   * are still allocated and freed */
    UMADV_CYCLE_STATE_COUNT,
    UMADV_CYCLE_ANY = UMADV_CYCLE_STATE_COUNT /* in the table: every state without a
                                             * row of its own */
} umadv_cycle_state_t;

typedef enum umadv_cycle_event {
    UMADV_CYCLE_EV_NONE,            /* no follow-up */
    UMADV_CYCLE_EV_PROFILE_REQUEST, /* umadv_profile_next_iteration() */
    UMADV_CYCLE_EV_RECORD_STOP,     /* an iteration boundary, umadv_plan(),
                                    * umadv_trace_save(): complete a recording */
    UMADV_CYCLE_EV_RECORD_DONE,     /* completed, declared accesses only: final */
    UMADV_CYCLE_EV_PROFILE_DONE,    /* completed with CUPTI: durations to time */
    UMADV_CYCLE_EV_RECORD_FAILED,   /* nothing usable recorded, or no start */
    UMADV_CYCLE_EV_PROFILER_LOST,   /* CUPTI cannot record this iteration */
    UMADV_CYCLE_EV_TIMING_STOP,     /* the timing pass is over (boundary), or
                                    * could not start */
    UMADV_CYCLE_EV_ITERATION_BEGIN, /* the boundary's bookkeeping is done */
    UMADV_CYCLE_EV_DRIFT,           /* the executor asks for a re-profile */
    UMADV_CYCLE_EV_PROFILE_START,   /* a profile was asked for: record now */
    UMADV_CYCLE_EV_TIMING_START,    /* no profile asked for: time, if due */
    UMADV_CYCLE_EV_PLAN_REQUEST,    /* umadv_plan(), a replan at the boundary */
    UMADV_CYCLE_EV_PLAN_BUILT,
    UMADV_CYCLE_EV_PLAN_FAILED,
    UMADV_CYCLE_EV_POLICY_CHANGE,   /* umadv_set_policy() */
    UMADV_CYCLE_EV_BUDGET_CHANGE,   /* umadv_set_budget() */
    UMADV_CYCLE_EV_ALLOC,           /* umadv_malloc() */
    UMADV_CYCLE_EV_FREE,            /* umadv_free() */
    UMADV_CYCLE_EV_DESTROY,         /* umadv_context_destroy() */
    UMADV_CYCLE_EV_EXIT,            /* the process exits, before CUDA's own
                                    * exit handlers run */
    UMADV_CYCLE_EVENT_COUNT
} umadv_cycle_event_t;

/* How a recording ended (the record_stop leaf). */
typedef enum umadv_cycle_outcome {
    UMADV_CYCLE_RECORD_EMPTY,    /* nothing usable: discarded */
    UMADV_CYCLE_RECORD_FINAL,    /* a trace; its durations are final */
    UMADV_CYCLE_RECORD_UNTIMED,  /* a trace profiled with CUPTI: time it */
    UMADV_CYCLE_RECORD_SCOUTED   /* the first of a profile's two passes, kept
                                  * to guide the second: record again */
} umadv_cycle_outcome_t;

typedef struct umadv_context *umadv_cycle_ctx_t;

/* A schedule and the budget it was planned under: umadv__ctx_budget() at
 * planning, resolved once (0: none, or oracle). The executor enforces it;
 * the planner planned for it, or for the whole device when none. A plan
 * that cannot be replayed as planned on this trace (its evictions would
 * be staged, and the trace's steps were guessed) asks for a profile. */
typedef struct umadv_cycle_plan {
    umadv_schedule_t schedule;
    uint64_t         budget;
    int              reprofile;
} umadv_cycle_plan_t;

/* What the machine calls. The context's are life_leaves (lifecycle.c);
 * tests put their own in ctx->life.leaves to watch the sequence. */
typedef struct umadv_cycle_leaves {
    umadv_status_t (*record_start)(umadv_cycle_ctx_t ctx);
    int  (*profile_start)(umadv_cycle_ctx_t ctx);   /* 1: CUPTI cannot record it */
    umadv_cycle_outcome_t (*record_stop)(umadv_cycle_ctx_t ctx, umadv_status_t *status_p);
    int  (*timing_start)(umadv_cycle_ctx_t ctx);    /* 1: running */
    int  (*timing_stop)(umadv_cycle_ctx_t ctx);     /* 1: measured durations applied;
                                                       -1: it ran other steps */
    umadv_status_t (*plan_build)(umadv_cycle_ctx_t ctx, umadv_cycle_plan_t *plan_p);
    void (*plan_install)(umadv_cycle_ctx_t ctx, umadv_cycle_plan_t *plan);
    int  (*plan_adopt)(umadv_cycle_ctx_t ctx, umadv_cycle_plan_t *plan); /* 1: the running
                                                       replay installed it in place */
    umadv_status_t (*replay_start)(umadv_cycle_ctx_t ctx);
    void (*replay_stop)(umadv_cycle_ctx_t ctx);
    int  (*replay_iteration)(umadv_cycle_ctx_t ctx);/* 1: drift, profile again */
    void (*replay_alloc)(umadv_cycle_ctx_t ctx, struct umadv_ctx_alloc *alloc);
    void (*replay_free)(umadv_cycle_ctx_t ctx, struct umadv_ctx_alloc *alloc);
    umadv_status_t (*record_alloc)(umadv_cycle_ctx_t ctx, struct umadv_ctx_alloc *alloc);
    void (*record_free)(umadv_cycle_ctx_t ctx, struct umadv_ctx_alloc *alloc);
    void (*keep)(umadv_cycle_ctx_t ctx);            /* the last good profile aside */
    void (*restore)(umadv_cycle_ctx_t ctx);         /* ...back in play */
    void (*drop_kept)(umadv_cycle_ctx_t ctx);
    void (*teardown)(umadv_cycle_ctx_t ctx);
    void (*replay_exit)(umadv_cycle_ctx_t ctx);     /* the process exits: no thread of
                                                       the replay's calls CUDA after */
} umadv_cycle_leaves_t;

/* The last good profile, kept while a re-profile records. */
typedef struct umadv_cycle_kept {
    umadv_trace_t    trace;
    umadv_schedule_t schedule;
    uint64_t         budget;        /* ctx->planned_budget */
    uint32_t        *ordinal_alloc; /* ctx->replay's map */
    size_t           nordinals, ordinals_cap;
    uint64_t         fault_groups;  /* ctx->profile_fault_groups */
} umadv_cycle_kept_t;

typedef struct umadv_cycle {
    umadv_cycle_state_t         state;
    const umadv_cycle_leaves_t *leaves;
    /* Requests that wait for the next iteration boundary: a profile
     * (umadv_profile_next_iteration(), drift) and a new plan (budget,
     * policy during a re-profile, a re-profile completed). */
    int                        want_profile;
    int                        want_plan;
    int                        record_stopped; /* a recording stopped at this
                                                * boundary: CUPTI flushed */
    unsigned                   unsteady; /* profiles in a row whose next
                                          * iteration ran other steps */
    umadv_status_t             status;   /* the first failure of the last fire */
    umadv_cycle_kept_t          kept;     /* valid in REPROFILING */
} umadv_cycle_t;

/* An action runs in the state the event found; it may answer with a
 * follow-up event, dispatched once the state is the row's next. */
typedef umadv_cycle_event_t (*umadv_cycle_action_t)(umadv_cycle_ctx_t ctx,
                                                  struct umadv_ctx_alloc *alloc);

typedef struct umadv_cycle_row {
    umadv_cycle_state_t  state;   /* or UMADV_CYCLE_ANY */
    umadv_cycle_event_t  event;
    const char         *name;    /* the action's, for messages and tests */
    umadv_cycle_action_t action;
    umadv_cycle_state_t  next;    /* UMADV_CYCLE_ANY: unchanged */
} umadv_cycle_row_t;

/* The machine starts EMPTY, with the context's own leaves. */
void umadv__cycle_init(umadv_cycle_ctx_t ctx);

/* Dispatch @event (and its follow-ups) with ctx->lock held; @alloc for
 * ALLOC and FREE. Returns the first failure of the actions, else UMADV_OK.
 * An event without a row in the state it finds changes nothing. */
umadv_status_t umadv__cycle_fire(umadv_cycle_ctx_t ctx, umadv_cycle_event_t event,
                                struct umadv_ctx_alloc *alloc);

/* The row that @event finds in @state (its own, else an ANY row), or NULL. */
const umadv_cycle_row_t *umadv__cycle_row(umadv_cycle_state_t state, umadv_cycle_event_t event);

/* The whole table, for tests and umadv(7). */
const umadv_cycle_row_t *umadv__cycle_table(size_t *nrows_p);

const char *umadv__cycle_state_name(umadv_cycle_state_t state);
const char *umadv__cycle_event_name(umadv_cycle_event_t event);

/* Whether @state holds a finalized trace (umadv_plan() and
 * umadv_trace_save() can use it). */
int umadv__cycle_has_trace(umadv_cycle_state_t state);

#endif
