/*
 * Replay through the context API (host backend): which live block plays
 * which allocation of the profiled trace across iterations, drift when the
 * allocation pattern changes, switching policies in one process, the
 * re-profile that too many faults trigger, and the counters.
 */
#include <umadv.h>

#include <stdlib.h>
#include <string.h>

#include "api/context.h"
#include "common/log.h"
#include "common/util.h"
#include "exec/exec_int.h"
#include "tap.h"
#include "testutil.h"

#define SEC (64 * UMADV_KIB)
#define T1_SIZE (2 * SEC)
#define T2_SIZE (3 * SEC)

static umadv_ctx_alloc_t *block_of(umadv_context_t ctx, void *ptr)
{
    umadv_pool_loc_t loc;

    if (umadv__pool_lookup(ctx->pool, ptr, &loc) != UMADV_OK)
        return NULL;
    return (umadv_ctx_alloc_t *)(uintptr_t)loc.user;
}

/* One iteration: W persistent; transients of sizes @s1 then @s2 made
 * between steps, used by the steps, freed at the end. */
static void iteration(umadv_context_t ctx, void *w, size_t s1, size_t s2, void **t1_p,
                      void **t2_p, int keep)
{
    void *t1, *t2;

    umadv_iteration_begin(ctx);
    umadv_malloc(ctx, s1, "t1", &t1);
    umadv_malloc(ctx, s2, "t2", &t2);
    umadv_step_begin(ctx, "fwd", NULL);
    umadv_step_access(ctx, w, 4 * SEC, UMADV_ACCESS_READ);
    umadv_step_access(ctx, t1, s1, UMADV_ACCESS_WRITE);
    umadv_step_end(ctx, 1000);
    umadv_step_begin(ctx, "bwd", NULL);
    umadv_step_access(ctx, t1, s1, UMADV_ACCESS_READ);
    umadv_step_access(ctx, t2, s2, UMADV_ACCESS_WRITE);
    umadv_step_end(ctx, 1000);
    if (t1_p != NULL)
        *t1_p = t1;
    if (t2_p != NULL)
        *t2_p = t2;
    if (!keep) {
        umadv_free(ctx, t1);
        umadv_free(ctx, t2);
    }
}

static uint32_t trace_alloc_of_size(umadv_context_t ctx, uint64_t size)
{
    for (uint32_t a = 0; a < ctx->trace.nallocs; a++) {
        if (ctx->trace.allocs[a].size == size)
            return a;
    }
    return UMADV_CTX_NO_TRACE_ID;
}

static uint64_t drift(umadv_context_t ctx)
{
    umadv_stats_t st = {.size = sizeof(st)};

    umadv_get_stats(ctx, &st);
    return st.drift_ops;
}

static void test_mapping(void)
{
    umadv_context_t ctx = test_host_context(SEC, 0);
    umadv_ctx_alloc_t *b1, *b2;
    uint32_t id1, id2, idw;
    void *w, *t1, *t2, *old1;
    uint64_t d0;

    umadv_malloc(ctx, 4 * SEC, "w", &w);
    umadv_profile_next_iteration(ctx);
    iteration(ctx, w, T1_SIZE, T2_SIZE, &old1, NULL, 0);
    is(umadv_plan(ctx), UMADV_OK, "plan the profiled iteration");
    ok(ctx->replay.exec != NULL, "planning starts the replay");
    id1 = trace_alloc_of_size(ctx, T1_SIZE);
    id2 = trace_alloc_of_size(ctx, T2_SIZE);
    idw = trace_alloc_of_size(ctx, 4 * SEC);
    ok(block_of(ctx, w)->bound == idw && idw != UMADV_CTX_NO_TRACE_ID,
       "the persistent block plays itself");

    iteration(ctx, w, T1_SIZE, T2_SIZE, &t1, &t2, 1);
    b1 = block_of(ctx, t1);
    b2 = block_of(ctx, t2);
    ok(b1->bound == id1 && b2->bound == id2 && ctx->replay.bound[id1] == b1,
       "the k-th allocation of a replayed iteration plays the k-th profiled one");
    is_u64(drift(ctx), 0, "no drift while the pattern holds");
    umadv_free(ctx, t1);
    umadv_free(ctx, t2);
    ok(ctx->replay.bound[id1] == NULL && ctx->replay.bound[id2] == NULL,
       "freeing a block ends its role");

    d0 = drift(ctx);
    iteration(ctx, w, T2_SIZE, T1_SIZE, &t1, &t2, 1);
    ok(block_of(ctx, t1)->bound == UMADV_CTX_NO_TRACE_ID &&
       block_of(ctx, t2)->bound == UMADV_CTX_NO_TRACE_ID,
       "swapped sizes: neither block plays a part");
    ok(drift(ctx) > d0, "and the ops on their allocations count as drift (%llu)",
       (unsigned long long)(drift(ctx) - d0));
    umadv_free(ctx, t1);
    umadv_free(ctx, t2);

    umadv_free(ctx, w);
    iteration(ctx, NULL, T1_SIZE, T2_SIZE, NULL, NULL, 0);
    ok(ctx->replay.bound[idw] == NULL, "a freed persistent block plays nothing more");
    umadv_context_destroy(ctx);
}

static void test_set_policy(void)
{
    umadv_context_t ctx = test_host_context(SEC, 0);
    umadv_cuda_host_counters_t hc;
    void *w;

    umadv_malloc(ctx, 4 * SEC, "w", &w);
    is(umadv_set_policy(ctx, UMADV_POLICY_DEMAND), UMADV_OK, "policy set before a profile");
    ok(ctx->replay.exec == NULL, "nothing to replay yet");
    umadv_profile_next_iteration(ctx);
    iteration(ctx, w, T1_SIZE, T2_SIZE, NULL, NULL, 0);
    umadv_plan(ctx);
    ok(ctx->replay.exec != NULL && ctx->replay.exec->p.policy == UMADV_POLICY_DEMAND,
       "the replay runs the context's policy");
    for (int p = 0; p < UMADV_POLICY_COUNT; p++) {
        umadv_set_policy(ctx, (umadv_policy_t)p);
        iteration(ctx, w, T1_SIZE, T2_SIZE, NULL, NULL, 0);
        iteration(ctx, w, T1_SIZE, T2_SIZE, NULL, NULL, 0);
    }
    ok(ctx->replay.exec != NULL && ctx->replay.exec->p.policy == UMADV_POLICY_PLAN,
       "every policy ran, one after another, in one context");
    ctx->config.budget = SEC;
    log_take();
    is(umadv_set_policy(ctx, UMADV_POLICY_PREFETCH_ALL), UMADV_ERR_BUDGET_TOO_SMALL,
       "a budget too small for a step is refused");
    ok(ctx->config.policy == UMADV_POLICY_PLAN && ctx->replay.exec != NULL,
       "and the previous policy keeps running");
    umadv_iteration_begin(ctx);
    umadv_step_begin(ctx, "open", NULL);
    is(umadv_set_policy(ctx, UMADV_POLICY_ORACLE), UMADV_ERR_STATE, "not with a step open");
    umadv_step_end(ctx, 1);
    is(umadv_set_policy(ctx, UMADV_POLICY_COUNT), UMADV_ERR_INVALID_PARAM, "unknown policy");
    umadv_free(ctx, w);
    umadv_context_destroy(ctx);
    umadv__cuda_host_counters(&hc);
    ok(hc.streams == 0 && hc.events == 0 && hc.managed_bytes == 0,
       "destroy with a replay running leaves no stream, event or memory");
}

/* A context with UMADV_REPROFILE_FAULTS=5 and block *w_p, one iteration
 * recorded, not yet planned. */
static umadv_context_t context_profiled(void **w_p)
{
    umadv_context_t ctx;

    setenv("UMADV_REPROFILE_FAULTS", "5", 1);
    ctx = test_host_context(SEC, 0);
    unsetenv("UMADV_REPROFILE_FAULTS");
    umadv_malloc(ctx, 4 * SEC, "w", w_p);
    umadv_profile_next_iteration(ctx);
    iteration(ctx, *w_p, T1_SIZE, T2_SIZE, NULL, NULL, 0);
    return ctx;
}

static void test_reprofile(void)
{
    umadv_context_t ctx;
    umadv_stats_t st = {.size = sizeof(st)};
    void *w;

    ctx = context_profiled(&w);
    umadv_plan(ctx);
    iteration(ctx, w, T1_SIZE, T2_SIZE, NULL, NULL, 0);
    umadv__replay_note_faults(ctx, 6); /* the first replayed iteration: warm-up */
    iteration(ctx, w, T1_SIZE, T2_SIZE, NULL, NULL, 0);
    ok(ctx->record == UMADV_CTX_REC_DONE && ctx->replay.exec != NULL,
       "faults in the first replayed iteration do not count");
    umadv__replay_note_faults(ctx, 6);
    umadv__log_level = UMADV_LOG_INFO;
    log_take();
    iteration(ctx, w, T1_SIZE, T2_SIZE, NULL, NULL, 0);
    ok(ctx->record == UMADV_CTX_REC_RECORDING && ctx->replay.exec == NULL,
       "6 faults > UMADV_REPROFILE_FAULTS=5 in steady state: the next iteration is profiled");
    ok(strstr(log_take(), "profiling again") != NULL, "logged at info");
    iteration(ctx, w, T1_SIZE, T2_SIZE, NULL, NULL, 0);
    umadv__log_level = UMADV_LOG_WARN;
    ok(ctx->record == UMADV_CTX_REC_DONE && ctx->replay.exec != NULL && ctx->have_schedule,
       "once it completes, it is planned and replayed again");
    umadv_get_stats(ctx, &st);
    ok(st.fetch_ops > 0 && st.fetched_bytes + st.evicted_bytes > 0 && st.drift_ops == 0,
       "stats: %llu fetch calls, %llu bytes fetched, no drift",
       (unsigned long long)st.fetch_ops, (unsigned long long)st.fetched_bytes);
    umadv_free(ctx, w);
    umadv_context_destroy(ctx);
}

/* The threshold grows to 1% of the profile's fault groups: 60 stray
 * faults in an iteration whose profile saw 10,000 groups are no drift;
 * 150 are. */
static void test_reprofile_scaled(void)
{
    umadv_context_t ctx;
    void *w;
    int quiet;

    ctx = context_profiled(&w);
    ctx->profile_fault_groups = 10000; /* what CUPTI would have counted */
    umadv_plan(ctx);
    for (int i = 0; i < 3; i++) {
        umadv__replay_note_faults(ctx, 60);
        iteration(ctx, w, T1_SIZE, T2_SIZE, NULL, NULL, 0);
    }
    quiet = ctx->record == UMADV_CTX_REC_DONE && ctx->replay.exec != NULL;
    umadv__replay_note_faults(ctx, 150);
    iteration(ctx, w, T1_SIZE, T2_SIZE, NULL, NULL, 0);
    ok(quiet && ctx->record == UMADV_CTX_REC_RECORDING,
       "threshold max(UMADV_REPROFILE_FAULTS=5, 1%% of 10000 profiled groups): 60 faults "
       "replay on, 150 profile again");
    umadv_free(ctx, w);
    umadv_context_destroy(ctx);
}

/* Faults that a re-profile does not remove (a library's own first
 * touches) are no drift the next time: one re-profile at a level, another
 * only above twice it. */
static void test_reprofile_floor(void)
{
    umadv_context_t ctx;
    int replaying;
    void *w;

    ctx = context_profiled(&w);
    umadv_plan(ctx);
    iteration(ctx, w, T1_SIZE, T2_SIZE, NULL, NULL, 0);
    umadv__replay_note_faults(ctx, 40);
    iteration(ctx, w, T1_SIZE, T2_SIZE, NULL, NULL, 0);
    umadv__replay_note_faults(ctx, 40);
    iteration(ctx, w, T1_SIZE, T2_SIZE, NULL, NULL, 0);
    ok(ctx->record == UMADV_CTX_REC_RECORDING, "40 stray faults > 5: profiled again");
    iteration(ctx, w, T1_SIZE, T2_SIZE, NULL, NULL, 0); /* recorded; planned next */
    replaying = 1;
    for (int i = 0; i < 4; i++) {
        umadv__replay_note_faults(ctx, 70);
        iteration(ctx, w, T1_SIZE, T2_SIZE, NULL, NULL, 0);
        replaying &= ctx->record == UMADV_CTX_REC_DONE && ctx->replay.exec != NULL;
    }
    ok(replaying, "the same level after it (70 <= twice 40): replayed on, no profile again");
    umadv__replay_note_faults(ctx, 81);
    iteration(ctx, w, T1_SIZE, T2_SIZE, NULL, NULL, 0);
    ok(ctx->record == UMADV_CTX_REC_RECORDING, "81 > twice 40: drift, profiled again");
    umadv_free(ctx, w);
    umadv_context_destroy(ctx);
}

/* One iteration of the pattern, and a block of @extra bytes beyond the
 * profiled allocations (none for 0). */
static void drift_iteration(umadv_context_t ctx, void *w, size_t extra)
{
    void *t1, *t2, *x = NULL;

    iteration(ctx, w, T1_SIZE, T2_SIZE, &t1, &t2, 1);
    if (extra > 0)
        umadv_malloc(ctx, extra, "extra", &x);
    umadv_free(ctx, t1);
    umadv_free(ctx, t2);
    if (x != NULL)
        umadv_free(ctx, x);
}

/* Profiled and planned under @policy at a budget of 8 sections, then the
 * timing pass and one replayed iteration. */
static umadv_context_t budget_profiled(const char *policy, void **w_p)
{
    umadv_context_t ctx;

    setenv("UMADV_POLICY", policy, 1);
    ctx = test_host_context(SEC, 8 * SEC);
    unsetenv("UMADV_POLICY");
    umadv_malloc(ctx, 4 * SEC, "w", w_p);
    umadv_profile_next_iteration(ctx);
    iteration(ctx, *w_p, T1_SIZE, T2_SIZE, NULL, NULL, 0);
    umadv_plan(ctx);
    drift_iteration(ctx, *w_p, 0);
    drift_iteration(ctx, *w_p, 0);
    return ctx;
}

static int replaying(umadv_context_t ctx)
{
    return ctx->record == UMADV_CTX_REC_DONE && ctx->replay.exec != NULL;
}

/* Blocks that play no allocation of the profile (replay.c, ALLOCATION
 * DRIFT): above a sixteenth of the budget in an iteration, the next one
 * is profiled; at most that, the replay goes on; under oracle, which
 * moves nothing on the plan's word, nothing. */
static void test_allocation_drift(void)
{
    umadv_context_t ctx;
    char *log;
    void *w;
    int before;

    ctx = budget_profiled("plan", &w);
    before = replaying(ctx);
    drift_iteration(ctx, w, 8 * UMADV_KIB);
    drift_iteration(ctx, w, 0);
    ok(before && replaying(ctx),
       "8 KiB that played no part, within a sixteenth of the 512 KiB budget: replayed on");
    umadv__log_level = UMADV_LOG_INFO;
    log_take();
    drift_iteration(ctx, w, 2 * SEC);
    drift_iteration(ctx, w, 0);
    log = log_take();
    umadv__log_level = UMADV_LOG_WARN;
    ok(ctx->record == UMADV_CTX_REC_RECORDING && ctx->replay.unbound_floor == 2 * SEC,
       "a 128 KiB block beyond the profiled allocations: the next iteration is profiled");
    ok(strstr(log, "replay: 128.00 KiB of the iteration's allocations played no allocation "
                   "of the profiled one") != NULL &&
           strstr(log, "profiling again") != NULL,
       "logged at info, with the bytes and the budget");
    umadv_free(ctx, w);
    umadv_context_destroy(ctx);

    ctx = budget_profiled("oracle", &w);
    drift_iteration(ctx, w, 2 * SEC);
    drift_iteration(ctx, w, 0);
    ok(ctx->record == UMADV_CTX_REC_DONE, "under oracle the same block changes nothing");
    umadv_free(ctx, w);
    umadv_context_destroy(ctx);
}

int main(void)
{
    log_capture_start();
    env_clear();
    plan(31);
    test_mapping();
    test_set_policy();
    test_reprofile();
    test_reprofile_scaled();
    test_reprofile_floor();
    test_allocation_drift();
    log_capture_stop();
    return exit_status();
}
