/*
 * The context's life cycle (api/lifecycle.h), row by row: every
 * (state, event) pair of its table is driven with mock leaves that log
 * their calls and answer as each case says (a recording empty or
 * profiled, CUPTI lost, a plan refused, drift...), and the state reached,
 * the leaves called and the requests left for the next boundary are
 * checked; a pair without a row must change nothing. Then, with the real
 * leaves on the host backend: a failed re-profile goes back to replaying
 * the kept profile (it used to stop replay for good), a recording CUPTI
 * cannot see, the budget the executor enforces is the schedule's, and the
 * executor's bulk mover coalesces, sorts and evicts to the NUMA node.
 */
#include <umadv.h>

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "api/context.h"
#include "common/log.h"
#include "common/util.h"
#include "exec/bulk.h"
#include "exec/exec_int.h"
#include "numa/numa.h"
#include "tap.h"
#include "testutil.h"

#define SEC (64 * UMADV_KIB)

#define S(_x) UMADV_CYCLE_##_x
#define E(_x) UMADV_CYCLE_EV_##_x

/* ---- mock leaves ------------------------------------------------------ */

/* What the leaves answer in one case. */
typedef struct script {
    umadv_status_t        start_fails;  /* record_start */
    int                   blind;        /* profile_start: CUPTI lost */
    umadv_cycle_outcome_t outcome;      /* record_stop */
    int                   timing_off;   /* timing_start: could not */
    int                   timed;        /* timing_stop: durations applied */
    umadv_status_t        plan_fails;   /* plan_build */
    int                   adopt;        /* plan_adopt: the replay takes the plan */
    int                   drift;        /* replay_iteration */
    umadv_status_t        alloc_fails;  /* record_alloc */
} script_t;

static struct {
    script_t sc;
    char     calls[512];
} mock;

static void called(const char *name)
{
    size_t len = strlen(mock.calls);

    snprintf(mock.calls + len, sizeof(mock.calls) - len, "%s%s", len ? " " : "", name);
}

static umadv_status_t m_record_start(umadv_context_t c)
{
    called("record_start");
    return mock.sc.start_fails;
}

static int m_profile_start(umadv_context_t c)
{
    called("profile_start");
    return mock.sc.blind;
}

static umadv_cycle_outcome_t m_record_stop(umadv_context_t c, umadv_status_t *status_p)
{
    called("record_stop");
    *status_p = UMADV_OK;
    return mock.sc.outcome;
}

static int m_timing_start(umadv_context_t c)
{
    called("timing_start");
    return !mock.sc.timing_off;
}

static int m_timing_stop(umadv_context_t c)
{
    called("timing_stop");
    return mock.sc.timed;
}

static umadv_status_t m_plan_build(umadv_context_t c, umadv_cycle_plan_t *plan_p)
{
    called("plan_build");
    return mock.sc.plan_fails;
}

static void m_plan_install(umadv_context_t c, umadv_cycle_plan_t *plan)
{
    called("plan_install");
}

/* Called always, named only when it adopts (the sequences stay short). */
static int m_plan_adopt(umadv_context_t c, umadv_cycle_plan_t *plan)
{
    if (mock.sc.adopt)
        called("plan_adopt");
    return mock.sc.adopt;
}

static umadv_status_t m_replay_start(umadv_context_t c)
{
    called("replay_start");
    return UMADV_OK;
}

static void m_replay_stop(umadv_context_t c)
{
    called("replay_stop");
}

static int m_replay_iteration(umadv_context_t c)
{
    called("replay_iteration");
    return mock.sc.drift;
}

static void m_replay_alloc(umadv_context_t c, umadv_ctx_alloc_t *a)
{
    called("replay_alloc");
}

static void m_replay_free(umadv_context_t c, umadv_ctx_alloc_t *a)
{
    called("replay_free");
}

static umadv_status_t m_record_alloc(umadv_context_t c, umadv_ctx_alloc_t *a)
{
    called("record_alloc");
    return mock.sc.alloc_fails;
}

static void m_record_free(umadv_context_t c, umadv_ctx_alloc_t *a)
{
    called("record_free");
}

static void m_keep(umadv_context_t c)
{
    called("keep");
}

static void m_restore(umadv_context_t c)
{
    called("restore");
}

static void m_drop_kept(umadv_context_t c)
{
    called("drop_kept");
}

static void m_teardown(umadv_context_t c)
{
    called("teardown");
}

static void m_replay_exit(umadv_context_t c)
{
    called("replay_exit");
}

static const umadv_cycle_leaves_t mock_leaves = {
    m_record_start, m_profile_start, m_record_stop, m_timing_start, m_timing_stop,
    m_plan_build,   m_plan_install,  m_plan_adopt,   m_replay_start, m_replay_stop,
    m_replay_iteration,
    m_replay_alloc, m_replay_free,   m_record_alloc, m_record_free, m_keep,
    m_restore,      m_drop_kept,     m_teardown,     m_replay_exit,
};

/* ---- the expected table ----------------------------------------------- */

/* Requests left for the next boundary, and CUPTI lost, after a case. */
enum { WANT_PROFILE = 1, WANT_PLAN = 2, BLIND = 4, FAILS = 8 };

typedef struct tcase {
    umadv_cycle_state_t state;
    umadv_cycle_event_t event;
    script_t            sc;
    umadv_cycle_state_t next;
    const char         *calls;
    unsigned            after;  /* WANT_*, BLIND, FAILS (the fire returns an error) */
} tcase_t;

#define NOMEM UMADV_ERR_NO_MEMORY
#define PLAN_CALLS "plan_build replay_stop plan_install replay_start"
#define NO_SCRIPT {0}
#define REC(_o) {.outcome = UMADV_CYCLE_RECORD_##_o}

/* One case per state for the rows every state answers alike. */
#define EVERY_STATE(_ev, _sc, _calls, _after) \
    {S(EMPTY), E(_ev), _sc, S(EMPTY), _calls, _after}, \
    {S(RECORDING), E(_ev), _sc, S(RECORDING), _calls, _after}, \
    {S(RECORDED_UNTIMED), E(_ev), _sc, S(RECORDED_UNTIMED), _calls, _after}, \
    {S(RECORDED), E(_ev), _sc, S(RECORDED), _calls, _after}, \
    {S(TIMING), E(_ev), _sc, S(TIMING), _calls, _after}, \
    {S(REPLAYING_UNTIMED), E(_ev), _sc, S(REPLAYING_UNTIMED), _calls, _after}, \
    {S(REPLAYING), E(_ev), _sc, S(REPLAYING), _calls, _after}, \
    {S(REPLAY_TIMING), E(_ev), _sc, S(REPLAY_TIMING), _calls, _after}, \
    {S(REPROFILING), E(_ev), _sc, S(REPROFILING), _calls, _after}, \
    {S(EXITED), E(_ev), _sc, S(EXITED), _calls, _after}

/* A plan, or a policy change, in a state with a trace. */
#define PLANS(_ev) \
    {S(RECORDED), E(_ev), NO_SCRIPT, S(REPLAYING), PLAN_CALLS, 0}, \
    {S(RECORDED_UNTIMED), E(_ev), NO_SCRIPT, S(REPLAYING_UNTIMED), PLAN_CALLS, 0}, \
    {S(TIMING), E(_ev), NO_SCRIPT, S(REPLAY_TIMING), PLAN_CALLS, 0}, \
    {S(REPLAYING), E(_ev), NO_SCRIPT, S(REPLAYING), PLAN_CALLS, 0}, \
    {S(REPLAYING_UNTIMED), E(_ev), NO_SCRIPT, S(REPLAYING_UNTIMED), PLAN_CALLS, 0}, \
    {S(REPLAY_TIMING), E(_ev), NO_SCRIPT, S(REPLAY_TIMING), PLAN_CALLS, 0}, \
    {S(RECORDED), E(_ev), {.plan_fails = NOMEM}, S(RECORDED), "plan_build", FAILS}, \
    {S(REPLAYING), E(_ev), {.plan_fails = NOMEM}, S(REPLAYING), "plan_build", FAILS}

static const tcase_t cases[] = {
    EVERY_STATE(PROFILE_REQUEST, NO_SCRIPT, "", WANT_PROFILE),
    /* a profile starts: first, replacing an unplanned trace, or again */
    {S(EMPTY), E(PROFILE_START), NO_SCRIPT, S(RECORDING),
     "replay_stop record_start profile_start", 0},
    {S(RECORDED), E(PROFILE_START), NO_SCRIPT, S(RECORDING),
     "replay_stop record_start profile_start", 0},
    {S(RECORDED_UNTIMED), E(PROFILE_START), NO_SCRIPT, S(RECORDING),
     "replay_stop record_start profile_start", 0},
    {S(REPLAYING), E(PROFILE_START), NO_SCRIPT, S(REPROFILING),
     "replay_stop keep record_start profile_start", 0},
    {S(REPLAYING_UNTIMED), E(PROFILE_START), NO_SCRIPT, S(REPROFILING),
     "replay_stop keep record_start profile_start", 0},
    {S(EMPTY), E(PROFILE_START), {.blind = 1}, S(RECORDING),
     "replay_stop record_start profile_start", BLIND},
    {S(REPLAYING), E(PROFILE_START), {.blind = 1}, S(REPROFILING),
     "replay_stop keep record_start profile_start", BLIND},
    {S(EMPTY), E(PROFILE_START), {.start_fails = NOMEM}, S(EMPTY),
     "replay_stop record_start", FAILS},
    {S(REPLAYING), E(PROFILE_START), {.start_fails = NOMEM}, S(REPLAYING),
     "replay_stop keep record_start restore replay_start", FAILS},
    /* CUPTI cannot record the iteration: it goes on, blind */
    {S(RECORDING), E(PROFILER_LOST), NO_SCRIPT, S(RECORDING), "", BLIND},
    {S(REPROFILING), E(PROFILER_LOST), NO_SCRIPT, S(REPROFILING), "", BLIND},
    /* a recording completes, profiled or not, or fails */
    {S(RECORDING), E(RECORD_STOP), REC(FINAL), S(RECORDED), "record_stop", 0},
    {S(RECORDING), E(RECORD_STOP), REC(UNTIMED), S(RECORDED_UNTIMED), "record_stop", 0},
    {S(RECORDING), E(RECORD_STOP), REC(EMPTY), S(EMPTY), "record_stop", 0},
    /* a profile's first pass: its second starts at PROFILE_START */
    {S(RECORDING), E(RECORD_STOP), REC(SCOUTED), S(RECORDING), "record_stop", WANT_PROFILE},
    {S(REPROFILING), E(RECORD_STOP), REC(SCOUTED), S(REPROFILING), "record_stop",
     WANT_PROFILE},
    {S(RECORDING), E(PROFILE_START), NO_SCRIPT, S(RECORDING), "record_start profile_start", 0},
    {S(REPROFILING), E(PROFILE_START), NO_SCRIPT, S(REPROFILING), "record_start profile_start",
     0},
    {S(REPROFILING), E(RECORD_STOP), REC(FINAL), S(RECORDED), "record_stop drop_kept",
     WANT_PLAN},
    {S(REPROFILING), E(RECORD_STOP), REC(UNTIMED), S(RECORDED_UNTIMED),
     "record_stop drop_kept", WANT_PLAN},
    {S(REPROFILING), E(RECORD_STOP), REC(EMPTY), S(REPLAYING),
     "record_stop restore replay_start", 0},
    {S(RECORDING), E(RECORD_DONE), NO_SCRIPT, S(RECORDED), "", 0},
    {S(RECORDING), E(PROFILE_DONE), NO_SCRIPT, S(RECORDED_UNTIMED), "", 0},
    {S(RECORDING), E(RECORD_FAILED), NO_SCRIPT, S(EMPTY), "", 0},
    {S(REPROFILING), E(RECORD_DONE), NO_SCRIPT, S(RECORDED), "drop_kept", WANT_PLAN},
    {S(REPROFILING), E(PROFILE_DONE), NO_SCRIPT, S(RECORDED_UNTIMED), "drop_kept", WANT_PLAN},
    {S(REPROFILING), E(RECORD_FAILED), NO_SCRIPT, S(REPLAYING), "restore replay_start", 0},
    /* the timing pass */
    {S(RECORDED_UNTIMED), E(TIMING_START), NO_SCRIPT, S(TIMING), "timing_start", 0},
    {S(RECORDED_UNTIMED), E(TIMING_START), {.timing_off = 1}, S(RECORDED),
     "timing_start timing_stop", 0},
    {S(REPLAYING_UNTIMED), E(TIMING_START), NO_SCRIPT, S(REPLAY_TIMING), "timing_start", 0},
    {S(REPLAYING_UNTIMED), E(TIMING_START), {.timing_off = 1}, S(REPLAYING),
     "timing_start timing_stop", 0},
    {S(TIMING), E(TIMING_STOP), {.timed = 1}, S(RECORDED), "timing_stop", 0},
    {S(REPLAY_TIMING), E(TIMING_STOP), {.timed = 1}, S(REPLAYING), "timing_stop " PLAN_CALLS,
     0},
    {S(REPLAY_TIMING), E(TIMING_STOP), NO_SCRIPT, S(REPLAYING), "timing_stop", 0},
    /* ...whose plan the running replay takes in place: nothing stops */
    {S(REPLAY_TIMING), E(TIMING_STOP), {.timed = 1, .adopt = 1}, S(REPLAYING),
     "timing_stop plan_build plan_adopt", 0},
    /* ...after a profile that did not repeat: under a replay, profile the
     * next iteration; with no plan yet (umadv profile), nothing */
    {S(TIMING), E(TIMING_STOP), {.timed = -1}, S(RECORDED), "timing_stop", 0},
    {S(REPLAY_TIMING), E(TIMING_STOP), {.timed = -1}, S(REPLAYING), "timing_stop",
     WANT_PROFILE},
    /* drift: the executor asks for a profile at the boundary */
    {S(REPLAYING), E(ITERATION_BEGIN), NO_SCRIPT, S(REPLAYING), "replay_iteration", 0},
    {S(REPLAYING), E(ITERATION_BEGIN), {.drift = 1}, S(REPLAYING), "replay_iteration",
     WANT_PROFILE},
    {S(REPLAYING_UNTIMED), E(ITERATION_BEGIN), {.drift = 1}, S(REPLAYING_UNTIMED),
     "replay_iteration", WANT_PROFILE},
    {S(REPLAYING), E(DRIFT), NO_SCRIPT, S(REPLAYING), "", WANT_PROFILE},
    {S(REPLAYING_UNTIMED), E(DRIFT), NO_SCRIPT, S(REPLAYING_UNTIMED), "", WANT_PROFILE},
    /* plans */
    PLANS(PLAN_REQUEST),
    {S(RECORDED), E(PLAN_BUILT), NO_SCRIPT, S(REPLAYING), "replay_start", 0},
    {S(RECORDED_UNTIMED), E(PLAN_BUILT), NO_SCRIPT, S(REPLAYING_UNTIMED), "replay_start", 0},
    {S(TIMING), E(PLAN_BUILT), NO_SCRIPT, S(REPLAY_TIMING), "replay_start", 0},
    {S(REPLAYING), E(PLAN_BUILT), NO_SCRIPT, S(REPLAYING), "replay_start", 0},
    {S(REPLAYING_UNTIMED), E(PLAN_BUILT), NO_SCRIPT, S(REPLAYING_UNTIMED), "replay_start", 0},
    {S(REPLAY_TIMING), E(PLAN_BUILT), NO_SCRIPT, S(REPLAY_TIMING), "replay_start", 0},
    EVERY_STATE(PLAN_FAILED, NO_SCRIPT, "", 0),
    /* policy and budget */
    PLANS(POLICY_CHANGE),
    {S(REPROFILING), E(POLICY_CHANGE), NO_SCRIPT, S(REPROFILING), "", WANT_PLAN},
    {S(REPLAYING), E(BUDGET_CHANGE), NO_SCRIPT, S(REPLAYING), "", WANT_PLAN},
    {S(REPLAYING_UNTIMED), E(BUDGET_CHANGE), NO_SCRIPT, S(REPLAYING_UNTIMED), "", WANT_PLAN},
    {S(REPLAY_TIMING), E(BUDGET_CHANGE), NO_SCRIPT, S(REPLAY_TIMING), "", WANT_PLAN},
    {S(REPROFILING), E(BUDGET_CHANGE), NO_SCRIPT, S(REPROFILING), "", WANT_PLAN},
    /* allocations */
    {S(EMPTY), E(ALLOC), NO_SCRIPT, S(EMPTY), "replay_alloc", 0},
    {S(RECORDED_UNTIMED), E(ALLOC), NO_SCRIPT, S(RECORDED_UNTIMED), "replay_alloc", 0},
    {S(RECORDED), E(ALLOC), NO_SCRIPT, S(RECORDED), "replay_alloc", 0},
    {S(TIMING), E(ALLOC), NO_SCRIPT, S(TIMING), "replay_alloc", 0},
    {S(REPLAYING_UNTIMED), E(ALLOC), NO_SCRIPT, S(REPLAYING_UNTIMED), "replay_alloc", 0},
    {S(REPLAYING), E(ALLOC), NO_SCRIPT, S(REPLAYING), "replay_alloc", 0},
    {S(REPLAY_TIMING), E(ALLOC), NO_SCRIPT, S(REPLAY_TIMING), "replay_alloc", 0},
    {S(RECORDING), E(ALLOC), NO_SCRIPT, S(RECORDING), "replay_alloc record_alloc", 0},
    {S(REPROFILING), E(ALLOC), NO_SCRIPT, S(REPROFILING), "replay_alloc record_alloc", 0},
    {S(RECORDING), E(ALLOC), {.alloc_fails = NOMEM}, S(RECORDING),
     "replay_alloc record_alloc replay_free", FAILS},
    {S(EMPTY), E(FREE), NO_SCRIPT, S(EMPTY), "replay_free", 0},
    {S(RECORDED_UNTIMED), E(FREE), NO_SCRIPT, S(RECORDED_UNTIMED), "replay_free record_free", 0},
    {S(RECORDED), E(FREE), NO_SCRIPT, S(RECORDED), "replay_free record_free", 0},
    {S(TIMING), E(FREE), NO_SCRIPT, S(TIMING), "replay_free record_free", 0},
    {S(REPLAYING_UNTIMED), E(FREE), NO_SCRIPT, S(REPLAYING_UNTIMED), "replay_free record_free", 0},
    {S(REPLAYING), E(FREE), NO_SCRIPT, S(REPLAYING), "replay_free record_free", 0},
    {S(REPLAY_TIMING), E(FREE), NO_SCRIPT, S(REPLAY_TIMING), "replay_free record_free", 0},
    {S(RECORDING), E(FREE), NO_SCRIPT, S(RECORDING), "replay_free record_free", 0},
    {S(REPROFILING), E(FREE), NO_SCRIPT, S(REPROFILING), "replay_free record_free", 0},
    /* the end */
    {S(EMPTY), E(DESTROY), NO_SCRIPT, S(EMPTY), "teardown", 0},
    {S(RECORDING), E(DESTROY), NO_SCRIPT, S(EMPTY), "teardown", 0},
    {S(RECORDED_UNTIMED), E(DESTROY), NO_SCRIPT, S(EMPTY), "teardown", 0},
    {S(RECORDED), E(DESTROY), NO_SCRIPT, S(EMPTY), "teardown", 0},
    {S(TIMING), E(DESTROY), NO_SCRIPT, S(EMPTY), "teardown", 0},
    {S(REPLAYING_UNTIMED), E(DESTROY), NO_SCRIPT, S(EMPTY), "teardown", 0},
    {S(REPLAYING), E(DESTROY), NO_SCRIPT, S(EMPTY), "teardown", 0},
    {S(REPLAY_TIMING), E(DESTROY), NO_SCRIPT, S(EMPTY), "teardown", 0},
    {S(REPROFILING), E(DESTROY), NO_SCRIPT, S(EMPTY), "drop_kept teardown", 0},
    {S(EXITED), E(DESTROY), NO_SCRIPT, S(EMPTY), "teardown", 0},
    /* the process exits: the replay stops for good; blocks still come and go */
    {S(EMPTY), E(EXIT), NO_SCRIPT, S(EXITED), "replay_exit", 0},
    {S(RECORDING), E(EXIT), NO_SCRIPT, S(EXITED), "replay_exit", 0},
    {S(RECORDED_UNTIMED), E(EXIT), NO_SCRIPT, S(EXITED), "replay_exit", 0},
    {S(RECORDED), E(EXIT), NO_SCRIPT, S(EXITED), "replay_exit", 0},
    {S(TIMING), E(EXIT), NO_SCRIPT, S(EXITED), "replay_exit", 0},
    {S(REPLAYING_UNTIMED), E(EXIT), NO_SCRIPT, S(EXITED), "replay_exit", 0},
    {S(REPLAYING), E(EXIT), NO_SCRIPT, S(EXITED), "replay_exit", 0},
    {S(REPLAY_TIMING), E(EXIT), NO_SCRIPT, S(EXITED), "replay_exit", 0},
    {S(REPROFILING), E(EXIT), NO_SCRIPT, S(EXITED), "drop_kept replay_exit", 0},
    {S(EXITED), E(EXIT), NO_SCRIPT, S(EXITED), "replay_exit", 0},
    {S(EXITED), E(ALLOC), NO_SCRIPT, S(EXITED), "replay_alloc", 0},
    {S(EXITED), E(FREE), NO_SCRIPT, S(EXITED), "replay_free", 0},
};

#define NCASES (sizeof(cases) / sizeof(cases[0]))

/* ---- driving the machine ------------------------------------------------ */

static unsigned after_of(umadv_context_t ctx, umadv_status_t status)
{
    return (ctx->life.want_profile ? WANT_PROFILE : 0) | (ctx->life.want_plan ? WANT_PLAN : 0) |
           (ctx->record_blind ? BLIND : 0) | (status != UMADV_OK ? FAILS : 0);
}

/* Put the (mocked) machine in @state, fire @event under @sc. */
static unsigned drive(umadv_context_t ctx, umadv_cycle_state_t state, umadv_cycle_event_t event,
                      const script_t *sc)
{
    umadv_ctx_alloc_t alloc = {0};
    umadv_status_t status;

    ctx->life.state = state;
    ctx->life.want_profile = ctx->life.want_plan = 0;
    ctx->record_blind = 0;
    mock.sc = *sc;
    mock.calls[0] = '\0';
    status = umadv__cycle_fire(ctx, event, &alloc);
    return after_of(ctx, status);
}

static int case_exists(umadv_cycle_state_t s, umadv_cycle_event_t e)
{
    for (size_t i = 0; i < NCASES; i++) {
        if (cases[i].state == s && cases[i].event == e)
            return 1;
    }
    return 0;
}

static void test_rows(void)
{
    umadv_context_t ctx = test_host_context(SEC, 0);

    ctx->life.leaves = &mock_leaves;
    for (size_t i = 0; i < NCASES; i++) {
        const tcase_t *c = &cases[i];
        unsigned after = drive(ctx, c->state, c->event, &c->sc);

        ok(umadv__cycle_row(c->state, c->event) != NULL && ctx->life.state == c->next &&
               strcmp(mock.calls, c->calls) == 0 && after == c->after,
           "%s, %s: %s after [%s], requests %#x (got %s after [%s], %#x)",
           umadv__cycle_state_name(c->state), umadv__cycle_event_name(c->event),
           umadv__cycle_state_name(c->next), c->calls, c->after,
           umadv__cycle_state_name(ctx->life.state), mock.calls, after);
    }
    umadv__cycle_init(ctx); /* the real leaves, for the real teardown */
    umadv_context_destroy(ctx);
}

/* Every pair the table answers is a case above, and every pair it does
 * not answer changes nothing and calls no leaf. */
static void test_coverage(void)
{
    umadv_context_t ctx = test_host_context(SEC, 0);
    size_t rows, untested = 0, inert = 0, moved = 0, nrows;
    const umadv_cycle_row_t *table = umadv__cycle_table(&nrows);
    char first[160] = "";
    script_t none = NO_SCRIPT;

    ctx->life.leaves = &mock_leaves;
    rows = 0;
    for (int s = 0; s < UMADV_CYCLE_STATE_COUNT; s++) {
        for (int e = E(NONE) + 1; e < UMADV_CYCLE_EVENT_COUNT; e++) {
            if (umadv__cycle_row(s, e) != NULL) {
                rows++;
                if (!case_exists(s, e) && untested++ == 0)
                    snprintf(first, sizeof(first), "%s, %s", umadv__cycle_state_name(s),
                             umadv__cycle_event_name(e));
                continue;
            }
            inert++;
            if (drive(ctx, s, e, &none) != 0 || ctx->life.state != (umadv_cycle_state_t)s ||
                mock.calls[0] != '\0')
                moved++;
        }
    }
    ok(untested == 0, "every (state, event) pair with a row is driven (%zu pairs answered by "
       "%zu rows; untested: %zu, first %s)", rows, nrows, untested, first);
    ok(inert > 0 && moved == 0, "the %zu pairs without a row change nothing (%zu did)", inert,
       moved);
    for (size_t i = 0; i < nrows; i++)
        moved += table[i].action == NULL || table[i].name == NULL;
    ok(moved == 0, "every row has a named action");
    umadv__cycle_init(ctx);
    umadv_context_destroy(ctx);
}

/* Profiles whose next iteration ran other steps are taken again three
 * times in a row, no more (iterations that never repeat keep the last);
 * a timing pass that matched starts the count again. */
static void test_unsteady(void)
{
    umadv_context_t ctx = test_host_context(SEC, 0);
    script_t unsteady = {.timed = -1}, steady = {.timed = 1};
    unsigned want[4];
    char calls[sizeof(mock.calls)];

    ctx->life.leaves = &mock_leaves;
    for (int i = 0; i < 4; i++)
        want[i] = drive(ctx, S(REPLAY_TIMING), E(TIMING_STOP), &unsteady);
    ok(want[0] == WANT_PROFILE && want[1] == WANT_PROFILE && want[2] == WANT_PROFILE &&
           want[3] == 0 && ctx->life.state == S(REPLAYING),
       "three unsteady profiles in a row are profiled again, the fourth kept (%#x %#x %#x %#x)",
       want[0], want[1], want[2], want[3]);
    drive(ctx, S(REPLAY_TIMING), E(TIMING_STOP), &steady);
    snprintf(calls, sizeof(calls), "%s", mock.calls);
    ok(strcmp(calls, "timing_stop " PLAN_CALLS) == 0 && ctx->life.unsteady == 0 &&
           drive(ctx, S(REPLAY_TIMING), E(TIMING_STOP), &unsteady) == WANT_PROFILE,
       "a timing pass that matched plans on its durations and starts the count again (%s)",
       calls);
    umadv__cycle_init(ctx);
    umadv_context_destroy(ctx);
}

/* ---- the real leaves ---------------------------------------------------- */

static umadv_ctx_alloc_t *block_of(umadv_context_t ctx, void *ptr)
{
    umadv_pool_loc_t loc;

    if (umadv__pool_lookup(ctx->pool, ptr, &loc) != UMADV_OK)
        return NULL;
    return (umadv_ctx_alloc_t *)(uintptr_t)loc.user;
}

/* The trace allocation the last iteration's transient played. */
static uint32_t t_bound;

/* One iteration of two steps on persistent @w and a transient. */
static void iteration(umadv_context_t ctx, void *w)
{
    void *t = NULL;

    umadv_iteration_begin(ctx);
    umadv_malloc(ctx, 2 * SEC, "t", &t);
    t_bound = block_of(ctx, t)->bound;
    umadv_step_begin(ctx, "fwd", NULL);
    umadv_step_access(ctx, w, 4 * SEC, UMADV_ACCESS_READ);
    umadv_step_access(ctx, t, 2 * SEC, UMADV_ACCESS_WRITE);
    umadv_step_end(ctx, 1000);
    umadv_step_begin(ctx, "bwd", NULL);
    umadv_step_access(ctx, t, 2 * SEC, UMADV_ACCESS_READ);
    umadv_step_end(ctx, 1000);
    umadv_free(ctx, t);
}

/* Profiled, planned and replaying, with UMADV_REPROFILE_FAULTS=5. */
static umadv_context_t context_replaying(void **w_p)
{
    umadv_context_t ctx;

    setenv("UMADV_REPROFILE_FAULTS", "5", 1);
    ctx = test_host_context(SEC, 0);
    unsetenv("UMADV_REPROFILE_FAULTS");
    umadv_malloc(ctx, 4 * SEC, "w", w_p);
    umadv_profile_next_iteration(ctx);
    iteration(ctx, *w_p);
    umadv_plan(ctx);
    iteration(ctx, *w_p); /* the replay's first: its faults are warm-up */
    iteration(ctx, *w_p);
    return ctx;
}

/* The bug this machine fixed: a re-profile dropped the replayed profile
 * when it began, so an iteration that recorded nothing ended replay. */
static void test_reprofile_failed(void)
{
    void *w;
    umadv_context_t ctx = context_replaying(&w);
    const umadv_trace_t *t = &ctx->trace;
    uint32_t w_id = block_of(ctx, w)->bound, t_id = t_bound;

    ok(ctx->life.state == S(REPLAYING) && ctx->replay.exec != NULL &&
       w_id != UMADV_CTX_NO_TRACE_ID && t_id != UMADV_CTX_NO_TRACE_ID,
       "real leaves: profiled, planned, replaying (%s)",
       umadv__cycle_state_name(ctx->life.state));
    umadv__replay_note_faults(ctx, 6);
    umadv_iteration_begin(ctx);
    ok(ctx->life.state == S(REPROFILING) && ctx->replay.exec == NULL &&
       ctx->record == UMADV_CTX_REC_RECORDING && ctx->life.kept.trace.nsteps == 2,
       "drift: re-profiling, the replayed profile kept aside");
    umadv__log_level = UMADV_LOG_INFO;
    log_take();
    umadv_iteration_begin(ctx); /* the re-profiled iteration marked no step */
    umadv__log_level = UMADV_LOG_WARN;
    ok(ctx->life.state == S(REPLAYING) && ctx->replay.exec != NULL && t->nsteps == 2 &&
       ctx->have_schedule && ctx->schedule.nsteps == 2 && block_of(ctx, w)->bound == w_id,
       "an empty re-profile: the kept trace and schedule replay again, w plays its part");
    ok(strstr(log_take(), "replaying the previous schedule") != NULL, "logged at info");
    is(umadv_trace_save(ctx, "/nonexistent/t"), UMADV_ERR_STATE,
       "save says the asked-for profile recorded nothing");
    t_bound = UMADV_CTX_NO_TRACE_ID;
    iteration(ctx, w);
    iteration(ctx, w);
    ok(t_bound == t_id && ctx->replay.exec != NULL && ctx->life.state == S(REPLAYING) &&
       ctx->replay.exec->p.schedule == &ctx->schedule,
       "later iterations replay it: the transient plays its kept role again");

    umadv_profile_next_iteration(ctx);
    iteration(ctx, w);
    iteration(ctx, w);
    ok(ctx->life.state == S(REPLAYING) && ctx->life.kept.trace.nsteps == 0 &&
       ctx->replay.exec != NULL && !ctx->record_empty,
       "a good re-profile replaces it, planned at the boundary");
    is(umadv_trace_save(ctx, "/nonexistent/t"), UMADV_ERR_IO, "and save has it again");
    umadv_profile_next_iteration(ctx);
    iteration(ctx, w);
    umadv_context_destroy(ctx); /* re-profiling: the kept profile goes too */
}

/* The process exits (context.c, PROCESS EXIT): the replay stops, the
 * executor's threads with it, and iterations after start none; blocks
 * still come and go. */
static void test_process_exit(void)
{
    void *w, *t = NULL;
    umadv_context_t ctx = context_replaying(&w);
    umadv_status_t ahead = umadv__exec_stage_pin_ahead(ctx->ops, ctx->config.device, NULL,
                                                       &ctx->replay.stage_cache, SEC, 4 * SEC);

    umadv__contexts_exit();
    ok(ahead == UMADV_OK && ctx->life.state == S(EXITED) && ctx->replay.exec == NULL &&
           ctx->replay.stage_cache.ahead == NULL && ctx->replay.stage_cache.n == 1,
       "the process exits: the replay stopped, the pool pinned ahead waited for (%s)",
       umadv__cycle_state_name(ctx->life.state));
    umadv_profile_next_iteration(ctx);
    iteration(ctx, w);
    iteration(ctx, w);
    ok(ctx->life.state == S(EXITED) && ctx->replay.exec == NULL && ctx->record_empty == 0 &&
           umadv_malloc(ctx, SEC, "late", &t) == UMADV_OK && umadv_free(ctx, t) == UMADV_OK,
       "iterations after it profile and replay nothing; a block is still allocated and freed");
    umadv_context_destroy(ctx);
}

/* The exit handler itself, in a child: one registered before the
 * context's runs after it, and finds the replay stopped. */
static umadv_context_t exiting;

static void exit_check(void)
{
    _exit(exiting->life.state == S(EXITED) && exiting->replay.exec == NULL ? 0 : 3);
}

static void test_exit_handler(void)
{
    pid_t child = fork();
    int status = -1;
    void *w;

    if (child == 0) {
        atexit(exit_check);
        exiting = context_replaying(&w);
        exit(exiting->replay.exec != NULL ? 0 : 4);
    }
    if (child > 0)
        waitpid(child, &status, 0);
    ok(child > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0,
       "a process that exits replaying: its exit handler stopped the replay (status %#x)",
       (unsigned)status);
}

/* UMADV_TIMELINE of a context the process never destroys: written by the
 * exit handler, its steps in it. */
static void test_exit_timeline(void)
{
    char path[] = "/tmp/umadv-lifecycle-timeline-XXXXXX";
    int fd = mkstemp(path), status = -1;
    pid_t child = fd >= 0 ? fork() : -1;
    char text[4096] = "";
    FILE *f;
    void *w;

    if (child == 0) {
        setenv("UMADV_TIMELINE", path, 1);
        (void)context_replaying(&w);
        exit(0);
    }
    if (child > 0)
        waitpid(child, &status, 0);
    f = fd >= 0 ? fopen(path, "r") : NULL;
    if (f != NULL) {
        text[fread(text, 1, sizeof(text) - 1, f)] = '\0';
        fclose(f);
    }
    ok(WIFEXITED(status) && WEXITSTATUS(status) == 0 && strstr(text, "\"traceEvents\"") &&
           strstr(text, "\"name\":\"step\"") != NULL,
       "a context alive at exit writes its timeline, its steps in it");
    /* saved before (the injection library saves at its own exit, which
     * runs first): not written again, so a stream gets one timeline */
    unlink(path);
    child = fd >= 0 ? fork() : -1;
    if (child == 0) {
        umadv_context_t ctx;

        setenv("UMADV_TIMELINE", path, 1);
        ctx = context_replaying(&w);
        if (umadv_timeline_save(ctx, NULL) != UMADV_OK || unlink(path) != 0)
            exit(5);
        exit(0);
    }
    if (child > 0)
        waitpid(child, &status, 0);
    ok(WIFEXITED(status) && WEXITSTATUS(status) == 0 && access(path, F_OK) != 0,
       "one saved already is not written again at exit (status %#x)", (unsigned)status);
    if (fd >= 0) {
        close(fd);
        unlink(path);
    }
}

/* ---- a replay stopped under a wait (replay.c, WAITS WITHOUT THE LOCK) ---- */

/* The host backend whose fetches to the GPU wait at a gate while it is
 * closed. */
static struct {
    umadv_cuda_ops_t ops;
    pthread_mutex_t  lock;
    pthread_cond_t   cond;
    int              closed;
} gate = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};

static void gate_pass(int location)
{
    if (location == UMADV_CUDA_LOCATION_HOST)
        return;
    pthread_mutex_lock(&gate.lock);
    while (gate.closed)
        pthread_cond_wait(&gate.cond, &gate.lock);
    pthread_mutex_unlock(&gate.lock);
}

static void gate_set(int closed)
{
    pthread_mutex_lock(&gate.lock);
    gate.closed = closed;
    pthread_cond_broadcast(&gate.cond);
    pthread_mutex_unlock(&gate.lock);
}

static umadv_status_t gate_prefetch(void *ptr, size_t size, int location, umadv_stream_t stream)
{
    gate_pass(location);
    return umadv__cuda_ops_host.prefetch(ptr, size, location, stream);
}

static umadv_status_t gate_prefetch_batch(void **ptrs, size_t *sizes, size_t count, int location,
                                          umadv_stream_t stream)
{
    gate_pass(location);
    return umadv__cuda_ops_host.prefetch_batch(ptrs, sizes, count, location, stream);
}

/* Two weights a step each and an activation between: under a budget of
 * one step's data, each iteration fetches both weights back. */
typedef struct two_steps {
    umadv_context_t ctx;
    void           *w1, *w2;
    umadv_status_t  status; /* the iteration's first failure */
} two_steps_t;

static void keep_first(umadv_status_t *first, umadv_status_t status)
{
    if (*first == UMADV_OK)
        *first = status;
}

static void *two_steps_iteration(void *arg)
{
    two_steps_t *it = arg;
    umadv_context_t ctx = it->ctx;
    umadv_status_t *st = &it->status;
    void *a = NULL;

    *st = UMADV_OK;
    keep_first(st, umadv_iteration_begin(ctx));
    keep_first(st, umadv_malloc(ctx, 2 * SEC, "a", &a));
    keep_first(st, umadv_step_begin(ctx, "fwd", NULL));
    keep_first(st, umadv_step_access(ctx, it->w1, 4 * SEC, UMADV_ACCESS_READ));
    keep_first(st, umadv_step_access(ctx, a, 2 * SEC, UMADV_ACCESS_WRITE));
    keep_first(st, umadv_step_end(ctx, 1000));
    keep_first(st, umadv_step_begin(ctx, "bwd", NULL));
    keep_first(st, umadv_step_access(ctx, it->w2, 4 * SEC, UMADV_ACCESS_READ));
    keep_first(st, umadv_step_access(ctx, a, 2 * SEC, UMADV_ACCESS_READ));
    keep_first(st, umadv_step_end(ctx, 1000));
    keep_first(st, umadv_free(ctx, a));
    return NULL;
}

static void *exit_thread(void *arg)
{
    (void)arg;
    umadv__contexts_exit();
    return NULL;
}

/* Whether @exec has a step waiting for its data, within two seconds. */
static int step_waiting(umadv_exec_t *exec)
{
    for (int i = 0; i < 2000; i++) {
        if (__atomic_load_n(&exec->waiting, __ATOMIC_ACQUIRE) > 0)
            return 1;
        usleep(1000);
    }
    return 0;
}

/* Thread B waits in a step for a fetch held at the gate while the
 * process exits on thread C: C must leave the executor alone until B's
 * wait has ended (it used to stop the lanes and free the executor under
 * it). */
static void test_stop_under_wait(void)
{
    two_steps_t it = {.ctx = test_host_context(SEC, 6 * SEC)};
    pthread_t b, c;
    umadv_exec_t *exec;
    int waiting, stopped;

    gate.ops = umadv__cuda_ops_host;
    gate.ops.prefetch = gate_prefetch;
    gate.ops.prefetch_batch = gate_prefetch_batch;
    it.ctx->ops = &gate.ops;
    umadv_malloc(it.ctx, 4 * SEC, "w1", &it.w1);
    umadv_malloc(it.ctx, 4 * SEC, "w2", &it.w2);
    umadv_profile_next_iteration(it.ctx);
    two_steps_iteration(&it);
    umadv_plan(it.ctx);
    for (int i = 0; i < 3; i++)
        two_steps_iteration(&it);
    exec = it.ctx->replay.exec;
    gate_set(1);
    pthread_create(&b, NULL, two_steps_iteration, &it);
    waiting = exec != NULL && step_waiting(exec);
    pthread_create(&c, NULL, exit_thread, NULL);
    usleep(100000);
    stopped = exec != NULL && __atomic_load_n(&exec->stop, __ATOMIC_ACQUIRE);
    gate_set(0);
    pthread_join(b, NULL);
    pthread_join(c, NULL);
    ok(waiting && !stopped && it.status == UMADV_OK && it.ctx->life.state == S(EXITED) &&
           it.ctx->replay.exec == NULL,
       "a step waits for a held fetch while the process exits on another thread: the stop "
       "waits for it (step waiting %d, lanes stopped under it %d, its calls %s, %s)",
       waiting, stopped, umadv_status_string(it.status),
       umadv__cycle_state_name(it.ctx->life.state));
    umadv_context_destroy(it.ctx);
}

/* Asked for but not given, CUPTI leaves a recording of unmarked steps
 * empty: the plan says why, and the next profile starts afresh. */
static void test_cupti_lost(void)
{
    umadv_context_t ctx = test_host_context(SEC, 0);

    ctx->profiler_lost = 1; /* as umadv__ctx_profile_open leaves it */
    umadv_profile_next_iteration(ctx);
    umadv_iteration_begin(ctx);
    ok(ctx->life.state == S(RECORDING) && ctx->record_blind, "recording, blind");
    log_take();
    is(umadv_plan(ctx), UMADV_ERR_CUPTI, "no step marked and CUPTI lost: the plan says so");
    ok(ctx->life.state == S(EMPTY) && strstr(log_take(), "cupti could not trace") != NULL,
       "nothing recorded; the warning names CUPTI");
    umadv_context_destroy(ctx);
}

/* The budget is resolved once, by the plan: the executor enforces the
 * value the schedule was planned under. */
static void test_budget_resolved(void)
{
    void *w;
    umadv_context_t ctx = context_replaying(&w);

    ok(ctx->planned_budget == 0 && ctx->replay.exec->p.budget == 0 &&
       ctx->schedule.budget == ctx->props.total_memory,
       "no budget: the executor has none, the planner planned for the device");
    is(umadv_set_budget(ctx, 6 * SEC), UMADV_OK, "a budget");
    ok(ctx->life.want_plan && ctx->replay.exec->p.budget == 0,
       "waits for the boundary; the iteration under way keeps its executor");
    iteration(ctx, w);
    ok(ctx->schedule.budget == 6 * SEC && ctx->planned_budget == 6 * SEC &&
       ctx->replay.exec->p.budget == 6 * SEC, "then planner and executor take the same value");
    ctx->config.budget = 5 * SEC; /* behind the machine's back */
    umadv__replay_start(ctx);
    ok(ctx->replay.exec->p.budget == 6 * SEC,
       "a replay (re)started on that schedule keeps its budget, not the configuration's");
    umadv_set_policy(ctx, UMADV_POLICY_ORACLE);
    ok(ctx->planned_budget == 0 && ctx->replay.exec->p.budget == 0 &&
       ctx->schedule.budget == ctx->props.total_memory, "oracle: none, for both");
    umadv_free(ctx, w);
    umadv_context_destroy(ctx);
}

/* ---- the bulk mover ----------------------------------------------------- */

static struct {
    uintptr_t start[8];
    size_t    size[8];
    int       location[8];
    size_t    n, syncs, fail_at;
} moves;

static umadv_status_t spy_prefetch(void *ptr, size_t size, int location, umadv_stream_t s)
{
    size_t i = moves.n++;

    if (i < 8) {
        moves.start[i]    = (uintptr_t)ptr;
        moves.size[i]     = size;
        moves.location[i] = location;
    }
    return i + 1 == moves.fail_at ? UMADV_ERR_CUDA : UMADV_OK;
}

static umadv_status_t spy_sync(umadv_stream_t s)
{
    moves.syncs++;
    return UMADV_OK;
}

static void test_bulk(void)
{
    static umadv_cuda_ops_t spy;
    umadv_numa_place_t node1 = {NULL, 1, NULL, "test"};
    umadv_bulk_range_t r[] = {
        {0x30000, 0x31000, 0x30000}, /* arena B, alone */
        {0x12000, 0x13000, 0x10000}, /* arena A, out of order */
        {0x10000, 0x11000, 0x10000},
        {0x11000, 0x11800, 0x10000},
    };
    size_t calls;

    spy = umadv__cuda_ops_host;
    spy.prefetch = spy_prefetch;
    spy.stream_synchronize = spy_sync;
    memset(&moves, 0, sizeof(moves));
    calls = umadv__exec_bulk_move(&spy, r, 4, UMADV_CUDA_LOCATION_HOST, &node1, UMADV_BULK_SYNC,
                                  NULL);
    ok(calls == 2 && moves.n == 2 && moves.start[0] == 0x10000 && moves.size[0] == 0x3000 &&
       moves.start[1] == 0x30000 && moves.size[1] == 0x1000,
       "bulk: sorted, one call per group's run of ranges over its span");
    ok(r[0].start == 0x10000 && r[0].end == 0x13000 && r[1].start == 0x30000 &&
           r[1].end == 0x31000,
       "the calls' spans left first in the ranges, as they moved");
    ok(moves.location[0] == UMADV_CUDA_LOCATION_HOST_NUMA(1) &&
       moves.location[1] == UMADV_CUDA_LOCATION_HOST_NUMA(1) && moves.syncs == 1,
       "to the executor's host node, then one synchronize");
    memset(&moves, 0, sizeof(moves));
    moves.fail_at = 1;
    umadv__log_level = UMADV_LOG_DEBUG;
    log_take();
    calls = umadv__exec_bulk_move(&spy, r, 4, 0, NULL, 0, NULL);
    umadv__log_level = UMADV_LOG_WARN;
    ok(calls == 2 && moves.location[0] == 0 && moves.syncs == 0 &&
       strstr(log_take(), "bulk move: 1 of 2 calls failed") != NULL,
       "to a device, unsynchronized; a failed call is a hint not taken, counted");
    ok(umadv__exec_bulk_move(&spy, r, 0, 0, NULL, UMADV_BULK_SYNC, NULL) == 0 && moves.syncs == 0,
       "nothing to move: no call at all");
}

int main(void)
{
    log_capture_start();
    env_clear();
    plan((int)NCASES + 3 + 2 + 8 + 2 + 1 + 1 + 2 + 3 + 6 + 5);
    test_rows();
    test_coverage();
    test_unsteady();
    test_reprofile_failed();
    test_process_exit();
    test_exit_handler();
    test_exit_timeline();
    test_stop_under_wait();
    test_cupti_lost();
    test_budget_resolved();
    test_bulk();
    log_capture_stop();
    return exit_status();
}
