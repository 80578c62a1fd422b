/*
 * The simulator predicts the executor: both drive the replay core
 * (src/schedule/core.h), so with every transfer instant (the executor on
 * the host backend, drained after each call; the simulator on a link of
 * infinite bandwidth and no latency) they must see the same states and
 * make the same decisions in the same order, call after call, for every
 * policy and budget, and move the same bytes in the measured iteration.
 * A difference in how either driver reports moves back to the core (a
 * state set wrong, a move lost, an eviction not timed as the executor
 * times it) shows here as the first decision that differs.
 */
#include <umadv.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "cuda_ops/cuda_ops.h"
#include "exec/exec.h"
#include "plan/plan.h"
#include "schedule/core.h"
#include "schedule/window.h"
#include "sim/sim_int.h"
#include "plan_util.h"
#include "tap.h"

#define WARMUP 2

/* ---- the decisions, as text ---------------------------------------------- */

typedef struct decision_log {
    char  *text;
    size_t len, cap;
} decision_log_t;

static void log_add(decision_log_t *log, const char *line)
{
    size_t n = strlen(line);

    if (log->len + n + 1 > log->cap) {
        log->cap = (log->len + n + 1) * 2;
        log->text = realloc(log->text, log->cap);
        if (log->text == NULL)
            abort();
    }
    memcpy(log->text + log->len, line, n + 1);
    log->len += n;
}

static void record(void *arg, const umadv_core_t *c)
{
    for (size_t i = 0; i < c->nout; i++) {
        const umadv_core_op_t *d = &c->out[i];
        char line[160];

        snprintf(line, sizeof(line), "key %llu step %u: %s/%s alloc %u [%u+%u] need %lld%s%s%s%s\n",
                 (unsigned long long)c->key, c->step, umadv__op_kind_name(d->kind),
                 umadv__advice_name(d->advice), d->alloc, d->first, d->count,
                 d->need == UMADV_CORE_KEY_NONE ? -1LL : (long long)d->need,
                 d->blocking ? " blocking" : "", d->fresh ? " fresh" : "",
                 d->clean ? " clean" : "", d->staged ? " staged" : "");
        log_add(arg, line);
    }
}

/* The first line where the logs differ, for the diagnostic. */
static void first_difference(const decision_log_t *a, const decision_log_t *b)
{
    const char *x = a->text ? a->text : "", *y = b->text ? b->text : "";
    size_t line = 1;

    while (*x && *x == *y) {
        line += *x == '\n';
        x++, y++;
    }
    while (x > (a->text ? a->text : "") && x[-1] != '\n' && y[-1] != '\n')
        x--, y--;
    diag("decision %zu: executor: %.100s", line, x);
    diag("decision %zu: simulator: %.100s", line, y);
}

/* ---- the two drivers ------------------------------------------------------- */

typedef struct replay_case {
    const umadv_trace_t    *trace;
    const umadv_schedule_t *schedule;
    umadv_policy_t          policy;
    uint64_t                budget;
    uint32_t                first, n;
    const uint8_t          *stageable; /* per allocation; NULL: no staging */
} replay_case_t;

typedef struct replay_bytes {
    uint64_t fetched, evicted, staged, restored;
} replay_bytes_t;

static void exec_steps(umadv_exec_t *e, const replay_case_t *rc, uint32_t iterations)
{
    for (uint32_t it = 0; it < iterations; it++) {
        umadv__exec_iteration_begin(e);
        for (uint32_t j = 0; j < rc->n; j++) {
            umadv__exec_step_begin(e);
            umadv__exec_step_wait(e);
            umadv__exec_drain(e);
            umadv__exec_step_end(e, NULL);
            umadv__exec_drain(e);
        }
    }
}

static umadv_status_t exec_bind_all(umadv_exec_t *e, const replay_case_t *rc, void **blocks)
{
    const umadv_trace_t *t = rc->trace;

    for (uint32_t a = 0; a < t->nallocs; a++) {
        umadv_status_t status = umadv__cuda_ops_host.malloc_managed(t->allocs[a].size, 4096,
                                                                    &blocks[a]);
        if (status == UMADV_OK)
            status = umadv__exec_bind(e, a, blocks[a], t->allocs[a].size, blocks[a], 0);
        if (status != UMADV_OK)
            return status;
        if (rc->stageable != NULL)
            umadv__exec_set_stageable(e, a, rc->stageable[a]);
    }
    return UMADV_OK;
}

/* The executor: warmup iterations, then one measured (its bytes). */
static umadv_status_t run_exec(const replay_case_t *rc, decision_log_t *log, replay_bytes_t *b)
{
    umadv_exec_params_t p = {.ops = &umadv__cuda_ops_host, .policy = rc->policy,
                             .budget = rc->budget, .trace = rc->trace, .first_step = rc->first,
                             .nsteps = rc->n, .schedule = rc->schedule,
                             .stage = rc->stageable != NULL,
                             .decisions = record, .decisions_arg = log};
    void **blocks = calloc(rc->trace->nallocs + 1, sizeof(*blocks));
    umadv_exec_stats_t before, after;
    umadv_exec_t *e;
    umadv_status_t status = umadv__exec_create(&p, &e);

    if (status != UMADV_OK || blocks == NULL)
        goto out;
    status = exec_bind_all(e, rc, blocks);
    if (status == UMADV_OK) {
        umadv__exec_start(e, NULL);
        umadv__exec_drain(e);
        exec_steps(e, rc, WARMUP);
        umadv__exec_get_stats(e, &before);
        exec_steps(e, rc, 1);
        umadv__exec_get_stats(e, &after);
        b->fetched = after.fetched_bytes - before.fetched_bytes;
        b->evicted = after.evicted_bytes - before.evicted_bytes;
        b->staged = after.staged_bytes - before.staged_bytes;
        b->restored = after.restored_bytes - before.restored_bytes;
        status = umadv__exec_broken(e) ? UMADV_ERR_CUDA : UMADV_OK;
    }
    umadv__exec_destroy(e);
out:
    for (uint32_t a = 0; blocks != NULL && a < rc->trace->nallocs; a++) {
        if (blocks[a] != NULL)
            umadv__cuda_ops_host.free(blocks[a], rc->trace->allocs[a].size);
    }
    free(blocks);
    return status;
}

/* The simulator's engine on an instant link. */
static umadv_status_t run_sim(const replay_case_t *rc, decision_log_t *log, replay_bytes_t *b)
{
    umadv_sim_params_t p;
    umadv_window_t w;
    sim_engine_t e;
    umadv_status_t status;

    umadv__sim_params_default(rc->trace, rc->policy, rc->budget, &p);
    p.warmup = WARMUP;
    p.schedule = rc->schedule;
    p.quiet = 1;
    p.link.fetch_bw = p.link.evict_bw = p.link.fault_bw = p.link.remote_bw = INFINITY;
    p.link.fetch_latency = p.link.evict_latency = p.link.fault_latency = 0;
    p.decisions = record;
    p.decisions_arg = log;
    p.stage = rc->stageable != NULL;
    p.stageable = rc->stageable;
    p.stage_bw = INFINITY;
    status = umadv__window_init(&w, rc->trace, rc->first, rc->n);
    if (status != UMADV_OK)
        return status;
    status = umadv__sim_engine_init(&e, &w, &p);
    if (status == UMADV_OK) {
        status = umadv__sim_engine_run(&e);
        b->fetched = e.r.fetched_bytes;
        b->evicted = e.r.evicted_bytes;
        b->staged = e.r.staged_bytes;
        b->restored = e.r.restored_bytes;
        umadv__sim_engine_cleanup(&e);
    }
    umadv__window_cleanup(&w);
    return status;
}

/* ---- cases ---------------------------------------------------------------- */

typedef struct tally {
    int runs, errors, differ, bytes_differ, decisions;
    uint64_t staged;  /* bytes staged in measured iterations, staging cases */
} tally_t;

static void compare(const replay_case_t *rc, uint64_t seed, tally_t *y)
{
    decision_log_t le = {0}, ls = {0};
    replay_bytes_t be = {0}, bs = {0};

    if (run_exec(rc, &le, &be) != UMADV_OK || run_sim(rc, &ls, &bs) != UMADV_OK) {
        y->errors++;
        goto out;
    }
    y->runs++;
    y->decisions += le.text != NULL;
    if ((le.text == NULL) != (ls.text == NULL) ||
        (le.text != NULL && strcmp(le.text, ls.text) != 0)) {
        if (y->differ++ == 0) {
            diag("seed %llu, %s, budget %llu%s:", (unsigned long long)seed,
                 umadv_policy_name(rc->policy), (unsigned long long)rc->budget,
                 rc->stageable ? " (staging)" : "");
            first_difference(&le, &ls);
        }
    }
    y->staged += be.staged;
    if (be.fetched != bs.fetched || be.evicted != bs.evicted || be.staged != bs.staged ||
        be.restored != bs.restored) {
        if (y->bytes_differ++ == 0)
            diag("seed %llu, %s, budget %llu%s: executor fetched %llu evicted %llu staged "
                 "%llu restored %llu, simulator %llu %llu %llu %llu", (unsigned long long)seed,
                 umadv_policy_name(rc->policy), (unsigned long long)rc->budget,
                 rc->stageable ? " (staging)" : "", (unsigned long long)be.fetched,
                 (unsigned long long)be.evicted, (unsigned long long)be.staged,
                 (unsigned long long)be.restored, (unsigned long long)bs.fetched,
                 (unsigned long long)bs.evicted, (unsigned long long)bs.staged,
                 (unsigned long long)bs.restored);
    }
out:
    free(le.text);
    free(ls.text);
}

/* One random trace of persistent data (lifetimes are the simulator's
 * model of new blocks, which the executor sees as bindings instead), at
 * budgets from the largest step up to the footprint. */
static void run_seed(uint64_t seed, tally_t *y)
{
    static const umadv_policy_t policies[] = {UMADV_POLICY_ORACLE, UMADV_POLICY_DEMAND,
                                              UMADV_POLICY_PREFETCH_ALL, UMADV_POLICY_PLAN};
    static const double fractions[] = {1.0, 1.3, 2.0};
    tp_params_t tp = {.nallocs = 10, .nsteps = 12, .niters = 2, .max_sections = 4,
                      .uniform = (int)(seed & 1)};
    umadv_trace_t t;
    umadv_window_t w;
    replay_case_t rc = {.trace = &t};
    uint8_t stageable[64];
    uint64_t rng = seed * 77 + 5;

    for (size_t a = 0; a < sizeof(stageable); a++)
        stageable[a] = tp_below(&rng, 3) != 0;

    if (tp_random_trace(seed, &tp, &t) != UMADV_OK ||
        umadv__trace_iteration_require(&t, t.niterations - 1, &rc.first, &rc.n) != UMADV_OK ||
        umadv__window_init(&w, &t, rc.first, rc.n) != UMADV_OK) {
        y->errors++;
        return;
    }
    for (size_t f = 0; f < UMADV_ARRAY_SIZE(fractions); f++) {
        umadv_plan_params_t pp;
        umadv_schedule_t s;

        rc.budget = (uint64_t)((double)w.max_step_bytes * fractions[f]);
        umadv__plan_params_default(&t, rc.budget, &pp);
        if (umadv__plan_build(&t, &pp, &s) != UMADV_OK) {
            y->errors++;
            continue;
        }
        rc.schedule = &s;
        for (size_t i = 0; i < UMADV_ARRAY_SIZE(policies); i++) {
            rc.policy = policies[i];
            rc.stageable = NULL;
            compare(&rc, seed, y);
            /* and with staging, some allocations stageable */
            rc.stageable = stageable;
            compare(&rc, seed, y);
        }
        umadv__schedule_cleanup(&s);
    }
    umadv__window_cleanup(&w);
    umadv__trace_cleanup(&t);
}

int main(void)
{
    tally_t y = {0};

    plan(6);
    umadv__cuda_host_configure(UINT64_C(1) << 40, 1);
    for (uint64_t seed = 1; seed <= 40; seed++)
        run_seed(seed, &y);
    is(y.errors, 0, "every case ran on both");
    ok(y.runs == 40 * 3 * 4 * 2, "%d cases: 40 traces, 3 budgets, 4 policies, staging off "
       "and on", y.runs);
    ok(y.staged > 0, "staging cases stage (%llu bytes)", (unsigned long long)y.staged);
    ok(y.decisions > y.runs / 2, "%d cases make decisions", y.decisions);
    is(y.differ, 0, "the simulator makes the executor's decisions, in its order");
    is(y.bytes_differ, 0, "and moves the executor's bytes in the measured iteration");
    return exit_status();
}
