/*
 * The context's life cycle: one state machine (api/lifecycle.h), its
 * table, the leaves it calls, and the public calls that move it.
 *
 * AN ITERATION BOUNDARY (umadv_iteration_begin) is a fixed sequence of
 * events, each meaning something only in some states:
 *   RECORD_STOP       a recording of the iteration that ended completes
 *                     (RECORD_DONE, PROFILE_DONE or RECORD_FAILED follow;
 *                     after a profile's first pass, nothing: its second
 *                     waits, and starts at PROFILE_START);
 *   TIMING_STOP       a timing pass of it ends (a replay plans again on
 *                     the measured durations);
 *   PLAN_REQUEST      if a new plan waits (budget, re-profile completed);
 *   ITERATION_BEGIN   a replay gives the executor the ended iteration's
 *                     faults: DRIFT follows when it asks for a profile;
 *   PROFILE_START     if a profile waits (umadv_profile_next_iteration,
 *                     drift), else TIMING_START (due after a profile).
 * So a recording, its timing pass and the replay never call each other:
 * the table orders them.
 *
 * THE LAST GOOD PROFILE. A re-profile (REPLAYING -> REPROFILING) stops the
 * replay and puts its trace, schedule and roles aside; they are dropped
 * only when the new recording completes, and put back in play when it
 * fails (empty, unusable, or could not start), so that a bad iteration
 * never ends the replay for good.
 *
 * Called with ctx->lock held, except the public calls, which take it.
 */
#include "api/context.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"

#define S(_x) UMADV_CYCLE_##_x
#define E(_x) UMADV_CYCLE_EV_##_x

typedef umadv_cycle_event_t life_ev_t;
typedef umadv_ctx_alloc_t alloc_t;

#define L(_ctx) ((_ctx)->life.leaves)

/* Remember the first failure of a fire: the public call returns it. */
static void life_fail(umadv_context_t ctx, umadv_status_t status)
{
    if (status != UMADV_OK && ctx->life.status == UMADV_OK)
        ctx->life.status = status;
}

/* ---- actions ------------------------------------------------------------ */

static life_ev_t act_none(umadv_context_t ctx, alloc_t *a)
{
    return E(NONE);
}

static life_ev_t act_want_profile(umadv_context_t ctx, alloc_t *a)
{
    ctx->life.want_profile = 1; /* at the next boundary */
    return E(NONE);
}

static life_ev_t act_want_plan(umadv_context_t ctx, alloc_t *a)
{
    ctx->life.want_plan = 1; /* the iteration under way keeps its executor */
    return E(NONE);
}

/* A recording begins; the iteration's allocations are numbered afresh. */
static life_ev_t record_begin(umadv_context_t ctx)
{
    umadv_status_t status = L(ctx)->record_start(ctx);

    if (status != UMADV_OK) {
        life_fail(ctx, status);
        return E(RECORD_FAILED);
    }
    return L(ctx)->profile_start(ctx) ? E(PROFILER_LOST) : E(NONE);
}

/* A first recording, or one that replaces a trace never planned. */
static life_ev_t act_record(umadv_context_t ctx, alloc_t *a)
{
    L(ctx)->replay_stop(ctx);
    return record_begin(ctx);
}

/* Recording replaces the trace the executor plays: stop it, keep the
 * profile until the new one is good. */
static life_ev_t act_reprofile(umadv_context_t ctx, alloc_t *a)
{
    L(ctx)->replay_stop(ctx);
    L(ctx)->keep(ctx);
    return record_begin(ctx);
}

static life_ev_t act_blind(umadv_context_t ctx, alloc_t *a)
{
    ctx->record_blind = 1; /* its launches go unseen: an empty result says why */
    return E(NONE);
}

/* The leaves a profiling phase waits on are timed here, where they are
 * called (umadv_stats_t: profile_end_ns, plan_ns, replay_start_ns). */
static void replay_start_timed(umadv_context_t ctx)
{
    uint64_t start = umadv__now_ns();

    L(ctx)->replay_start(ctx);
    ctx->stats.replay_start_ns += umadv__now_ns() - start;
}

static life_ev_t act_record_stop(umadv_context_t ctx, alloc_t *a)
{
    umadv_status_t status = UMADV_OK;
    uint64_t start = umadv__now_ns();
    umadv_cycle_outcome_t outcome = L(ctx)->record_stop(ctx, &status);

    ctx->stats.profile_end_ns += umadv__now_ns() - start;
    ctx->life.record_stopped = 1;

    life_fail(ctx, status);
    if (outcome == UMADV_CYCLE_RECORD_SCOUTED) {
        ctx->life.want_profile = 1; /* its second pass, at this boundary */
        return E(NONE);
    }
    if (outcome != UMADV_CYCLE_RECORD_EMPTY)
        ctx->stats.profiles++;
    if (outcome == UMADV_CYCLE_RECORD_UNTIMED)
        return E(PROFILE_DONE);
    return outcome == UMADV_CYCLE_RECORD_FINAL ? E(RECORD_DONE) : E(RECORD_FAILED);
}

/* A profile's second pass (api/profile.c, TWO PASSES): the first is
 * kept aside by the profile, and so is a re-profile's last good one. */
static life_ev_t act_record_again(umadv_context_t ctx, alloc_t *a)
{
    return record_begin(ctx);
}

/* The re-profile succeeded: the old profile goes, the new trace is
 * planned at the next boundary (or by umadv_plan() before it). */
static life_ev_t act_reprofiled(umadv_context_t ctx, alloc_t *a)
{
    L(ctx)->drop_kept(ctx);
    ctx->life.want_plan = 1;
    return E(NONE);
}

/* The re-profile failed: back to replaying what was kept. */
static life_ev_t act_restore(umadv_context_t ctx, alloc_t *a)
{
    L(ctx)->restore(ctx);
    replay_start_timed(ctx); /* a failure is logged: plain managed memory */
    umadv_info("re-profile recorded nothing usable: replaying the previous schedule");
    return E(NONE);
}

static life_ev_t act_timing_start(umadv_context_t ctx, alloc_t *a)
{
    return L(ctx)->timing_start(ctx) ? E(NONE) : E(TIMING_STOP);
}

/* A profiled iteration whose next ran other steps was no steady one (a
 * warm-up: PyTorch's DistributedDataParallel rebuilds its buckets in its
 * second iteration), and the plan being replayed would be replayed
 * against steps that never come (measured: a DDP ResNet-50 at half its
 * footprint faulting 86,000 groups, nothing staged): profile the next
 * iteration, a few times in a row at most (a program whose iterations
 * never repeat keeps its profile). Only under a replay: a trace nobody
 * plans yet (umadv profile's) is not worth a profile's evictions.
 * @measured follows a timing pass that gave durations. */
#define LIFE_UNSTEADY_PROFILES 3

static life_ev_t timing_outcome(umadv_context_t ctx, int outcome, life_ev_t measured)
{
    if (outcome >= 0 || measured != E(PLAN_REQUEST)) {
        ctx->life.unsteady = 0;
        return outcome > 0 ? measured : E(NONE);
    }
    if (ctx->life.unsteady >= LIFE_UNSTEADY_PROFILES) {
        umadv_info("timing pass: %u profiles in a row were followed by other steps: the "
                   "trace keeps the last one and its profiled step durations",
                   ctx->life.unsteady + 1);
        return E(NONE);
    }
    ctx->life.unsteady++;
    umadv_info("timing pass: the profiled iteration did not repeat: profiling the next one "
               "(%u of at most %u)", ctx->life.unsteady, LIFE_UNSTEADY_PROFILES);
    return E(PROFILE_REQUEST);
}

static life_ev_t act_timing_stop(umadv_context_t ctx, alloc_t *a)
{
    return timing_outcome(ctx, L(ctx)->timing_stop(ctx), E(NONE));
}

/* Measured durations make a better plan than the profiled ones, before
 * the replay of the next iteration begins. */
static life_ev_t act_timing_stop_replan(umadv_context_t ctx, alloc_t *a)
{
    return timing_outcome(ctx, L(ctx)->timing_stop(ctx), E(PLAN_REQUEST));
}

static life_ev_t act_plan(umadv_context_t ctx, alloc_t *a)
{
    umadv_cycle_plan_t plan = {.reprofile = 0};
    uint64_t start = umadv__now_ns();
    umadv_status_t status = L(ctx)->plan_build(ctx, &plan);

    ctx->stats.plan_ns += umadv__now_ns() - start;
    if (status != UMADV_OK) {
        life_fail(ctx, status); /* what runs keeps running */
        return E(PLAN_FAILED);
    }
    ctx->life.want_plan = 0; /* this plan has the latest budget and policy */
    if (plan.reprofile)
        ctx->life.want_profile = 1; /* replayed meanwhile, as planned but unstaged */
    ctx->stats.plans++;
    if (L(ctx)->plan_adopt(ctx, &plan))
        return E(NONE); /* the replay goes on, under it */
    L(ctx)->replay_stop(ctx); /* it plays the schedule replaced here */
    L(ctx)->plan_install(ctx, &plan);
    return E(PLAN_BUILT);
}

static life_ev_t act_replay_start(umadv_context_t ctx, alloc_t *a)
{
    /* Without an executor the application runs on plain managed memory:
     * logged, not an error of the plan. */
    replay_start_timed(ctx);
    return E(NONE);
}

static life_ev_t act_replay_iteration(umadv_context_t ctx, alloc_t *a)
{
    return L(ctx)->replay_iteration(ctx) ? E(DRIFT) : E(NONE);
}

/* Every allocation is numbered (replay.c plays the k-th by the k-th). */
static life_ev_t act_alloc(umadv_context_t ctx, alloc_t *a)
{
    L(ctx)->replay_alloc(ctx, a);
    return E(NONE);
}

static life_ev_t act_alloc_record(umadv_context_t ctx, alloc_t *a)
{
    umadv_status_t status;

    L(ctx)->replay_alloc(ctx, a);
    status = L(ctx)->record_alloc(ctx, a);
    if (status != UMADV_OK) {
        L(ctx)->replay_free(ctx, a); /* the caller frees the block */
        life_fail(ctx, status);
    }
    return E(NONE);
}

static life_ev_t act_free(umadv_context_t ctx, alloc_t *a)
{
    L(ctx)->replay_free(ctx, a); /* no migration touches it after this */
    return E(NONE);
}

static life_ev_t act_free_record(umadv_context_t ctx, alloc_t *a)
{
    L(ctx)->replay_free(ctx, a);
    L(ctx)->record_free(ctx, a); /* its life ends in the trace */
    return E(NONE);
}

static life_ev_t act_teardown(umadv_context_t ctx, alloc_t *a)
{
    L(ctx)->teardown(ctx);
    return E(NONE);
}

static life_ev_t act_teardown_kept(umadv_context_t ctx, alloc_t *a)
{
    L(ctx)->drop_kept(ctx);
    L(ctx)->teardown(ctx);
    return E(NONE);
}

/* The process exits: the replay's threads end (staged data restored)
 * while CUDA still runs, and nothing starts them again. */
static life_ev_t act_exit(umadv_context_t ctx, alloc_t *a)
{
    L(ctx)->replay_exit(ctx);
    return E(NONE);
}

/* ...and no re-profile will want the last good profile back. */
static life_ev_t act_exit_kept(umadv_context_t ctx, alloc_t *a)
{
    L(ctx)->drop_kept(ctx);
    L(ctx)->replay_exit(ctx);
    return E(NONE);
}

/* ---- the table ------------------------------------------------------------ */

#define ROW(_state, _event, _action, _next) \
    {S(_state), E(_event), #_action, _action, S(_next)}

/* Rows of one state come before the ANY row of their event. */
static const umadv_cycle_row_t life_table[] = {
    /* profiles: asked for, started at the boundary, completed or failed */
    ROW(ANY,               PROFILE_REQUEST, act_want_profile,       ANY),
    ROW(EMPTY,             PROFILE_START,   act_record,             RECORDING),
    ROW(RECORDED,          PROFILE_START,   act_record,             RECORDING),
    ROW(RECORDED_UNTIMED,  PROFILE_START,   act_record,             RECORDING),
    ROW(REPLAYING,         PROFILE_START,   act_reprofile,          REPROFILING),
    ROW(REPLAYING_UNTIMED, PROFILE_START,   act_reprofile,          REPROFILING),
    ROW(RECORDING,         PROFILE_START,   act_record_again,       RECORDING),
    ROW(REPROFILING,       PROFILE_START,   act_record_again,       REPROFILING),
    ROW(RECORDING,         PROFILER_LOST,   act_blind,              RECORDING),
    ROW(REPROFILING,       PROFILER_LOST,   act_blind,              REPROFILING),
    ROW(RECORDING,         RECORD_STOP,     act_record_stop,        RECORDING),
    ROW(REPROFILING,       RECORD_STOP,     act_record_stop,        REPROFILING),
    ROW(RECORDING,         RECORD_DONE,     act_none,               RECORDED),
    ROW(RECORDING,         PROFILE_DONE,    act_none,               RECORDED_UNTIMED),
    ROW(RECORDING,         RECORD_FAILED,   act_none,               EMPTY),
    ROW(REPROFILING,       RECORD_DONE,     act_reprofiled,         RECORDED),
    ROW(REPROFILING,       PROFILE_DONE,    act_reprofiled,         RECORDED_UNTIMED),
    ROW(REPROFILING,       RECORD_FAILED,   act_restore,            REPLAYING),
    /* the timing pass: the iteration after a profile */
    ROW(RECORDED_UNTIMED,  TIMING_START,    act_timing_start,       TIMING),
    ROW(REPLAYING_UNTIMED, TIMING_START,    act_timing_start,       REPLAY_TIMING),
    ROW(TIMING,            TIMING_STOP,     act_timing_stop,        RECORDED),
    ROW(REPLAY_TIMING,     TIMING_STOP,     act_timing_stop_replan, REPLAYING),
    /* replay validation */
    ROW(REPLAYING,         ITERATION_BEGIN, act_replay_iteration,   REPLAYING),
    ROW(REPLAYING_UNTIMED, ITERATION_BEGIN, act_replay_iteration,   REPLAYING_UNTIMED),
    ROW(REPLAYING,         DRIFT,           act_want_profile,       REPLAYING),
    ROW(REPLAYING_UNTIMED, DRIFT,           act_want_profile,       REPLAYING_UNTIMED),
    /* plans: wherever there is a trace */
    ROW(RECORDED,          PLAN_REQUEST,    act_plan,               RECORDED),
    ROW(RECORDED_UNTIMED,  PLAN_REQUEST,    act_plan,               RECORDED_UNTIMED),
    ROW(TIMING,            PLAN_REQUEST,    act_plan,               TIMING),
    ROW(REPLAYING,         PLAN_REQUEST,    act_plan,               REPLAYING),
    ROW(REPLAYING_UNTIMED, PLAN_REQUEST,    act_plan,               REPLAYING_UNTIMED),
    ROW(REPLAY_TIMING,     PLAN_REQUEST,    act_plan,               REPLAY_TIMING),
    ROW(RECORDED,          PLAN_BUILT,      act_replay_start,       REPLAYING),
    ROW(RECORDED_UNTIMED,  PLAN_BUILT,      act_replay_start,       REPLAYING_UNTIMED),
    ROW(TIMING,            PLAN_BUILT,      act_replay_start,       REPLAY_TIMING),
    ROW(REPLAYING,         PLAN_BUILT,      act_replay_start,       REPLAYING),
    ROW(REPLAYING_UNTIMED, PLAN_BUILT,      act_replay_start,       REPLAYING_UNTIMED),
    ROW(REPLAY_TIMING,     PLAN_BUILT,      act_replay_start,       REPLAY_TIMING),
    ROW(ANY,               PLAN_FAILED,     act_none,               ANY),
    /* a new policy plans now; a new budget at the next boundary; both wait
     * for a re-profile's outcome (either way the trace is planned again) */
    ROW(RECORDED,          POLICY_CHANGE,   act_plan,               RECORDED),
    ROW(RECORDED_UNTIMED,  POLICY_CHANGE,   act_plan,               RECORDED_UNTIMED),
    ROW(TIMING,            POLICY_CHANGE,   act_plan,               TIMING),
    ROW(REPLAYING,         POLICY_CHANGE,   act_plan,               REPLAYING),
    ROW(REPLAYING_UNTIMED, POLICY_CHANGE,   act_plan,               REPLAYING_UNTIMED),
    ROW(REPLAY_TIMING,     POLICY_CHANGE,   act_plan,               REPLAY_TIMING),
    ROW(REPROFILING,       POLICY_CHANGE,   act_want_plan,          REPROFILING),
    ROW(REPLAYING,         BUDGET_CHANGE,   act_want_plan,          REPLAYING),
    ROW(REPLAYING_UNTIMED, BUDGET_CHANGE,   act_want_plan,          REPLAYING_UNTIMED),
    ROW(REPLAY_TIMING,     BUDGET_CHANGE,   act_want_plan,          REPLAY_TIMING),
    ROW(REPROFILING,       BUDGET_CHANGE,   act_want_plan,          REPROFILING),
    /* allocations: recorded while recording, played while replaying */
    ROW(RECORDING,         ALLOC,           act_alloc_record,       RECORDING),
    ROW(REPROFILING,       ALLOC,           act_alloc_record,       REPROFILING),
    ROW(ANY,               ALLOC,           act_alloc,              ANY),
    ROW(RECORDING,         FREE,            act_free_record,        RECORDING),
    ROW(REPROFILING,       FREE,            act_free_record,        REPROFILING),
    /* ...and the recording's tail (record.c, THE TAIL) */
    ROW(RECORDED,          FREE,            act_free_record,        RECORDED),
    ROW(RECORDED_UNTIMED,  FREE,            act_free_record,        RECORDED_UNTIMED),
    ROW(TIMING,            FREE,            act_free_record,        TIMING),
    ROW(REPLAYING,         FREE,            act_free_record,        REPLAYING),
    ROW(REPLAYING_UNTIMED, FREE,            act_free_record,        REPLAYING_UNTIMED),
    ROW(REPLAY_TIMING,     FREE,            act_free_record,        REPLAY_TIMING),
    ROW(ANY,               FREE,            act_free,               ANY),
    ROW(REPROFILING,       DESTROY,         act_teardown_kept,      EMPTY),
    ROW(ANY,               DESTROY,         act_teardown,           EMPTY),
    ROW(REPROFILING,       EXIT,            act_exit_kept,          EXITED),
    ROW(ANY,               EXIT,            act_exit,               EXITED),
};

#define LIFE_NROWS (sizeof(life_table) / sizeof(life_table[0]))

const umadv_cycle_row_t *umadv__cycle_table(size_t *nrows_p)
{
    *nrows_p = LIFE_NROWS;
    return life_table;
}

/* The row for @state and @event: the state's own, else the event's ANY
 * row, else NULL. */
static const umadv_cycle_row_t *row_search(umadv_cycle_state_t state, umadv_cycle_event_t event)
{
    const umadv_cycle_row_t *any = NULL;

    for (size_t i = 0; i < LIFE_NROWS; i++) {
        const umadv_cycle_row_t *row = &life_table[i];

        if (row->event != event)
            continue;
        if (row->state == state)
            return row;
        if (row->state == UMADV_CYCLE_ANY && any == NULL)
            any = row;
    }
    return any;
}

/* Every allocation and free goes through the table (PyTorch makes
 * thousands an iteration): the search's answers, indexed once, cost one
 * cache line where the search read the table's 2 KiB. */
#define LIFE_NO_ROW UINT8_MAX

static uint8_t life_index[UMADV_CYCLE_STATE_COUNT + 1][UMADV_CYCLE_EVENT_COUNT];
static pthread_once_t life_index_once = PTHREAD_ONCE_INIT;

_Static_assert(LIFE_NROWS < LIFE_NO_ROW, "the table's row numbers fit the index");

static void life_index_build(void)
{
    for (int state = 0; state <= UMADV_CYCLE_STATE_COUNT; state++) {
        for (int event = 0; event < UMADV_CYCLE_EVENT_COUNT; event++) {
            const umadv_cycle_row_t *row = row_search(state, event);

            life_index[state][event] = row != NULL ? (uint8_t)(row - life_table) : LIFE_NO_ROW;
        }
    }
}

const umadv_cycle_row_t *umadv__cycle_row(umadv_cycle_state_t state, umadv_cycle_event_t event)
{
    uint8_t i;

    if ((unsigned)state > UMADV_CYCLE_STATE_COUNT || (unsigned)event >= UMADV_CYCLE_EVENT_COUNT)
        return NULL;
    pthread_once(&life_index_once, life_index_build);
    i = life_index[state][event];
    return i != LIFE_NO_ROW ? &life_table[i] : NULL;
}

static const char *const state_names[UMADV_CYCLE_STATE_COUNT + 1] = {
    "empty", "recording", "recorded-untimed", "recorded", "timing", "replaying-untimed",
    "replaying", "replay-timing", "reprofiling", "exited", "any",
};

static const char *const event_names[UMADV_CYCLE_EVENT_COUNT] = {
    "none", "profile-request", "record-stop", "record-done", "profile-done",
    "record-failed", "profiler-lost", "timing-stop", "iteration-begin", "drift",
    "profile-start", "timing-start", "plan-request", "plan-built", "plan-failed",
    "policy-change", "budget-change", "alloc", "free", "destroy", "exit",
};

const char *umadv__cycle_state_name(umadv_cycle_state_t state)
{
    return (unsigned)state <= UMADV_CYCLE_STATE_COUNT ? state_names[state] : "?";
}

const char *umadv__cycle_event_name(umadv_cycle_event_t event)
{
    return (unsigned)event < UMADV_CYCLE_EVENT_COUNT ? event_names[event] : "?";
}

int umadv__cycle_has_trace(umadv_cycle_state_t state)
{
    return state != S(EMPTY) && state != S(RECORDING) && state != S(REPROFILING) &&
           state != S(EXITED);
}

/* ---- dispatch ------------------------------------------------------------- */

static void life_dispatch(umadv_context_t ctx, life_ev_t event, alloc_t *alloc)
{
    while (event != E(NONE)) {
        umadv_cycle_state_t from = ctx->life.state;
        const umadv_cycle_row_t *row = umadv__cycle_row(from, event);
        life_ev_t next_event;

        if (row == NULL)
            return; /* the event means nothing here */
        next_event = row->action(ctx, alloc);
        if (row->next != S(ANY) && row->next != from) {
            ctx->life.state = row->next;
            umadv_debug("life cycle: %s, %s: %s (%s)", umadv__cycle_state_name(from),
                        umadv__cycle_event_name(event), umadv__cycle_state_name(row->next),
                        row->name);
        }
        event = next_event;
    }
}

umadv_status_t umadv__cycle_fire(umadv_context_t ctx, umadv_cycle_event_t event, alloc_t *alloc)
{
    ctx->life.status = UMADV_OK;
    life_dispatch(ctx, event, alloc);
    return ctx->life.status;
}

/* ---- the context's leaves ------------------------------------------------- */

static umadv_status_t leaf_record_start(umadv_context_t ctx)
{
    umadv__replay_forget_ordinals(ctx);
    return umadv__ctx_record_start(ctx);
}

/* The steps' events, then the profiler's records, then the trace. */
static umadv_cycle_outcome_t leaf_record_stop(umadv_context_t ctx, umadv_status_t *status_p)
{
    *status_p = UMADV_OK;
    if (umadv__ctx_profile_second_waits(ctx))
        return UMADV_CYCLE_RECORD_SCOUTED; /* stopped already (umadv_plan, then a boundary) */
    umadv__ctx_timings_resolve(ctx);
    umadv__ctx_profile_finish(ctx);
    return umadv__ctx_record_finish(ctx, status_p);
}

/* Declared steps are timed by events: their times first. */
static int leaf_timing_stop(umadv_context_t ctx)
{
    if (ctx->tpass.state == UMADV_CTX_TPASS_RUNNING)
        umadv__ctx_timings_resolve(ctx);
    return umadv__ctx_tpass_finish(ctx);
}

static void kept_ids_save(void *arg, void *base, uint64_t size, uint64_t user)
{
    umadv_ctx_alloc_t *alloc = (umadv_ctx_alloc_t *)(uintptr_t)user;

    alloc->kept_id = alloc->trace_id;
}

static void kept_ids_restore(void *arg, void *base, uint64_t size, uint64_t user)
{
    umadv_ctx_alloc_t *alloc = (umadv_ctx_alloc_t *)(uintptr_t)user;

    alloc->trace_id = alloc->kept_id; /* blocks made since: NO_TRACE_ID */
}

/* The profile in play (its replay stopped) aside: trace, schedule, the
 * budget it was planned under, which malloc played which allocation,
 * which live block was which allocation. */
static void leaf_keep(umadv_context_t ctx)
{
    umadv_cycle_kept_t *k = &ctx->life.kept;
    umadv_ctx_replay_t *r = &ctx->replay;

    k->trace = ctx->trace;
    memset(&ctx->trace, 0, sizeof(ctx->trace));
    ctx->record = UMADV_CTX_REC_IDLE;
    k->schedule = ctx->schedule;
    memset(&ctx->schedule, 0, sizeof(ctx->schedule));
    ctx->have_schedule = 0;
    k->budget        = ctx->planned_budget;
    k->ordinal_alloc = r->ordinal_alloc;
    k->nordinals     = r->nordinals;
    k->ordinals_cap  = r->ordinals_cap;
    r->ordinal_alloc = NULL;
    r->nordinals = r->ordinals_cap = 0;
    k->fault_groups = ctx->profile_fault_groups;
    umadv__pool_foreach(ctx->pool, kept_ids_save, NULL);
}

/* The kept profile back in play; the failed recording left nothing (its
 * trace discarded, record IDLE). */
static void leaf_restore(umadv_context_t ctx)
{
    umadv_cycle_kept_t *k = &ctx->life.kept;
    umadv_ctx_replay_t *r = &ctx->replay;

    if (ctx->record != UMADV_CTX_REC_IDLE)
        umadv__trace_cleanup(&ctx->trace);
    ctx->trace  = k->trace;
    ctx->record = UMADV_CTX_REC_DONE;
    umadv__ctx_schedule_cleanup(ctx);
    ctx->schedule       = k->schedule;
    ctx->have_schedule  = 1;
    ctx->planned_budget = k->budget;
    free(r->ordinal_alloc);
    r->ordinal_alloc = k->ordinal_alloc;
    r->nordinals     = k->nordinals;
    r->ordinals_cap  = k->ordinals_cap;
    ctx->profile_fault_groups = k->fault_groups;
    umadv__pool_foreach(ctx->pool, kept_ids_restore, NULL);
    memset(k, 0, sizeof(*k));
}

static void leaf_drop_kept(umadv_context_t ctx)
{
    umadv_cycle_kept_t *k = &ctx->life.kept;

    umadv__trace_cleanup(&k->trace);
    umadv__schedule_cleanup(&k->schedule);
    free(k->ordinal_alloc);
    memset(k, 0, sizeof(*k));
}

static void leaf_teardown(umadv_context_t ctx)
{
    umadv__replay_cleanup(ctx);    /* the executor's threads end first */
    umadv__ctx_profile_close(ctx); /* no launch callback after this */
    umadv__ctx_tpass_reset(ctx);
    umadv__ctx_record_cleanup(ctx);
    umadv__ctx_schedule_cleanup(ctx);
}

static const umadv_cycle_leaves_t life_leaves = {
    .record_start     = leaf_record_start,
    .profile_start    = umadv__ctx_profile_start,
    .record_stop      = leaf_record_stop,
    .timing_start     = umadv__ctx_tpass_start,
    .timing_stop      = leaf_timing_stop,
    .plan_build       = umadv__ctx_plan_build,
    .plan_install     = umadv__ctx_plan_install,
    .plan_adopt       = umadv__replay_adopt,
    .replay_start     = umadv__replay_start,
    .replay_stop      = umadv__replay_stop,
    .replay_iteration = umadv__replay_iteration,
    .replay_alloc     = umadv__replay_malloc,
    .replay_free      = umadv__replay_free,
    .record_alloc     = umadv__ctx_record_alloc,
    .record_free      = umadv__ctx_record_free,
    .keep             = leaf_keep,
    .restore          = leaf_restore,
    .drop_kept        = leaf_drop_kept,
    .teardown         = leaf_teardown,
    .replay_exit      = umadv__replay_exit,
};

void umadv__cycle_init(umadv_context_t ctx)
{
    memset(&ctx->life, 0, sizeof(ctx->life));
    ctx->life.state  = S(EMPTY);
    ctx->life.leaves = &life_leaves;
}

/* ---- the public calls ------------------------------------------------------- */

static int take(int *request)
{
    int was = *request;

    *request = 0;
    return was;
}

/* The ended iteration's GPU faults (replay validation), timed: taking
 * them flushes CUPTI's records (umadv_stats_t: fault_count_ns) unless a
 * recording's stop at this boundary has (each flush costs 10-20 ms
 * while the counters are on; H200, 2026-11-29). */
static uint64_t faults_taken(umadv_context_t ctx)
{
    uint64_t start = umadv__now_ns();
    uint64_t faults = umadv__ctx_profile_faults(ctx, ctx->life.record_stopped);

    ctx->stats.fault_count_ns += umadv__now_ns() - start;
    return faults;
}

static umadv_status_t iteration_begin(umadv_context_t ctx)
{
    umadv_status_t status;
    uint64_t start;

    if (ctx->step_open) {
        umadv_error("umadv_iteration_begin: step %llu is still open",
                    (unsigned long long)ctx->stats.steps);
        return UMADV_ERR_STATE;
    }
    ctx->life.record_stopped = 0; /* umadv_plan's stop mid-iteration */
    status = umadv__cycle_fire(ctx, E(RECORD_STOP), NULL);
    if (status != UMADV_OK)
        return status;
    life_dispatch(ctx, E(TIMING_STOP), NULL); /* a plan's failure is logged */
    ctx->in_iteration = 1;
    umadv__ctx_census_report(ctx);
    ctx->stats.iterations++;
    umadv__replay_iteration_reset(ctx, faults_taken(ctx));
    /* a plan asked for while a profile records waits for its trace */
    if (umadv__cycle_has_trace(ctx->life.state) && take(&ctx->life.want_plan))
        life_dispatch(ctx, E(PLAN_REQUEST), NULL); /* logged either way */
    life_dispatch(ctx, E(ITERATION_BEGIN), NULL);
    status = umadv__cycle_fire(ctx, take(&ctx->life.want_profile) ? E(PROFILE_START)
                                                                 : E(TIMING_START), NULL);
    /* Counted or not, by whether a replay runs now (replay validation). */
    start = umadv__now_ns();
    umadv__ctx_profile_iteration(ctx);
    ctx->stats.fault_count_ns += umadv__now_ns() - start;
    ctx->life.record_stopped = 0;
    umadv__ctx_host_back(ctx); /* the first step's host time starts here */
    return status;
}

UMADV_API umadv_status_t umadv_iteration_begin(umadv_context_t ctx)
{
    umadv_status_t status;

    if (ctx == NULL)
        return UMADV_ERR_INVALID_PARAM;
    pthread_mutex_lock(&ctx->lock);
    status = iteration_begin(ctx);
    pthread_mutex_unlock(&ctx->lock);
    return status;
}

UMADV_API umadv_status_t umadv_profile_next_iteration(umadv_context_t ctx)
{
    if (ctx == NULL)
        return UMADV_ERR_INVALID_PARAM;
    pthread_mutex_lock(&ctx->lock);
    umadv__cycle_fire(ctx, E(PROFILE_REQUEST), NULL);
    pthread_mutex_unlock(&ctx->lock);
    return UMADV_OK;
}

UMADV_API umadv_status_t umadv_step_begin(umadv_context_t ctx, const char *name, void *stream)
{
    umadv_status_t status;
    umadv_exec_t *exec;

    if (ctx == NULL)
        return UMADV_ERR_INVALID_PARAM;
    pthread_mutex_lock(&ctx->lock);
    status = umadv__ctx_step_begin(ctx, name, stream);
    if (status == UMADV_OK)
        umadv__replay_step_begin(ctx);
    exec = status == UMADV_OK ? umadv__replay_wait_take(ctx) : NULL;
    pthread_mutex_unlock(&ctx->lock);
    /* Wait for the step's data without the lock: other threads may
     * allocate meanwhile (replay.c, WAITS WITHOUT THE LOCK). Its time
     * starts after. */
    if (exec != NULL) {
        umadv__exec_step_wait_on(exec, stream);
        umadv__replay_wait_done(ctx);
    }
    if (status == UMADV_OK) {
        pthread_mutex_lock(&ctx->lock);
        umadv__ctx_step_timing_start(ctx);
        pthread_mutex_unlock(&ctx->lock);
    }
    return status;
}

static umadv_status_t step_end(umadv_context_t ctx, uint64_t duration_ns)
{
    if (!ctx->step_open) {
        umadv_error("umadv_step_end: no step is open");
        return UMADV_ERR_STATE;
    }
    ctx->step_open = 0;
    umadv__replay_step_end(ctx); /* its evictions queue behind the step's work */
    umadv__ctx_step_ended(ctx, duration_ns);
    return UMADV_OK;
}

UMADV_API umadv_status_t umadv_step_end(umadv_context_t ctx, uint64_t duration_ns)
{
    umadv_status_t status;

    if (ctx == NULL)
        return UMADV_ERR_INVALID_PARAM;
    pthread_mutex_lock(&ctx->lock);
    status = step_end(ctx, duration_ns);
    pthread_mutex_unlock(&ctx->lock);
    return status;
}

/* Complete a recording for umadv_plan() or umadv_trace_save() (named in
 * messages as @caller); an error, logged, when no trace results. After a
 * profile's first pass, where the caller can @wait for the second
 * (umadv_plan), UMADV_OK with no trace yet. */
static umadv_status_t recorded_trace(umadv_context_t ctx, const char *caller, int wait)
{
    umadv_status_t status;

    if ((ctx->life.state == S(RECORDING) || ctx->life.state == S(REPROFILING)) &&
        ctx->step_open) {
        umadv_error("%s: the profiled iteration has a step open", caller);
        return UMADV_ERR_STATE;
    }
    status = umadv__cycle_fire(ctx, E(RECORD_STOP), NULL);
    if (status != UMADV_OK || (wait && umadv__ctx_profile_second_waits(ctx)))
        return status;
    /* A failed re-profile leaves the kept trace in play, but it is not
     * the one asked for. */
    if (!umadv__cycle_has_trace(ctx->life.state) || ctx->record_empty)
        return umadv__ctx_no_trace(ctx, caller);
    return UMADV_OK;
}

UMADV_API umadv_status_t umadv_plan(umadv_context_t ctx)
{
    umadv_status_t status;

    if (ctx == NULL)
        return UMADV_ERR_INVALID_PARAM;
    pthread_mutex_lock(&ctx->lock);
    status = recorded_trace(ctx, "umadv_plan", 1);
    if (status == UMADV_OK && umadv__ctx_profile_second_waits(ctx)) {
        umadv_info("umadv_plan: the profile takes two passes (UMADV_PROFILE_PASSES): planned "
                   "when the second, the next iteration, is recorded");
        ctx->life.want_plan = 1;
    } else if (status == UMADV_OK) {
        status = umadv__cycle_fire(ctx, E(PLAN_REQUEST), NULL);
    }
    pthread_mutex_unlock(&ctx->lock);
    return status;
}

UMADV_API umadv_status_t umadv_trace_save(umadv_context_t ctx, const char *path)
{
    umadv_status_t status;

    if (ctx == NULL || path == NULL)
        return UMADV_ERR_INVALID_PARAM;
    pthread_mutex_lock(&ctx->lock);
    status = recorded_trace(ctx, "umadv_trace_save", 0);
    if (status == UMADV_OK)
        status = umadv__ctx_trace_write(ctx, path);
    pthread_mutex_unlock(&ctx->lock);
    return status;
}

UMADV_API umadv_status_t umadv_set_policy(umadv_context_t ctx, umadv_policy_t policy)
{
    umadv_policy_t old;
    umadv_status_t status = UMADV_OK;

    if (ctx == NULL || (unsigned)policy >= UMADV_POLICY_COUNT)
        return UMADV_ERR_INVALID_PARAM;
    pthread_mutex_lock(&ctx->lock);
    if (ctx->step_open) {
        umadv_error("umadv_set_policy(%s): a step is open", umadv_policy_name(policy));
        status = UMADV_ERR_STATE;
        goto out;
    }
    old = ctx->config.policy;
    ctx->config.policy = policy;
    status = umadv__cycle_fire(ctx, E(POLICY_CHANGE), NULL);
    if (status != UMADV_OK)
        ctx->config.policy = old; /* the replay under it goes on */
out:
    pthread_mutex_unlock(&ctx->lock);
    return status;
}

UMADV_API umadv_status_t umadv_set_budget(umadv_context_t ctx, uint64_t bytes)
{
    umadv_status_t status;
    char want[32], have[32];

    if (ctx == NULL)
        return UMADV_ERR_INVALID_PARAM;
    pthread_mutex_lock(&ctx->lock);
    status = umadv__ctx_budget_check(ctx, bytes);
    if (status != UMADV_OK) {
        umadv_error("umadv_set_budget(%s): refused; the budget stays %s",
                    umadv__size_format(bytes, want, sizeof(want)),
                    ctx->config.budget != 0
                        ? umadv__size_format(ctx->config.budget, have, sizeof(have))
                        : "none");
        goto out;
    }
    ctx->config.budget = bytes;
    umadv__cycle_fire(ctx, E(BUDGET_CHANGE), NULL);
    umadv_debug("budget set to %s from the next iteration",
                bytes != 0 ? umadv__size_format(bytes, want, sizeof(want)) : "none");
out:
    pthread_mutex_unlock(&ctx->lock);
    return status;
}
