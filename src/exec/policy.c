/*
 * What each policy queues at the start, when a step begins and when it
 * ends (exec.h describes the policies). Runs on the application's thread
 * with the executor's lock held; it only queues, the lanes move data.
 *
 * Step keys: step j of replayed iteration i has key i * nsteps + j; a
 * fetch serves the step of its key, which waits for it.
 */
#include "exec/exec_int.h"

#include <stdlib.h>

#include "common/log.h"

static int bound(const umadv_exec_t *e, uint32_t alloc)
{
    return e->binds[alloc].base != 0;
}

static void push(umadv_exec_t *e, exec_lane_t *lane, const exec_op_t *op)
{
    /* Out of host memory: the op is lost, which costs time, not data. */
    if (umadv__exec_queue_push(e, lane, op) != UMADV_OK)
        umadv_debug("executor: no memory to queue an op: skipped");
}

static void enqueue_fetch(umadv_exec_t *e, uint32_t alloc, uint32_t first, uint32_t count,
                          uint64_t need, int fresh)
{
    exec_op_t op = {.kind = UMADV_OP_FETCH, .alloc = alloc, .first = first, .count = count,
                    .need = need, .blocking = 1, .fresh = fresh};

    if (!bound(e, alloc)) {
        e->stats.drift_ops++;
        return;
    }
    push(e, &e->fetch, &op);
}

/* A set of @plan_op's advice on its run: on the fetch lane, in need
 * order, so the step of @need waits for it before its work is launched. */
void umadv__exec_enqueue_advice(umadv_exec_t *e, const umadv_op_t *plan_op, uint64_t need)
{
    exec_op_t op = {.kind = UMADV_OP_ADVISE, .advice = plan_op->advice,
                    .alloc = plan_op->alloc, .first = plan_op->first, .count = plan_op->count,
                    .need = need, .blocking = 1};

    if (op.advice == UMADV_ADVICE_NONE || op.count == 0)
        return;
    if (!bound(e, op.alloc)) {
        e->stats.drift_ops++;
        return;
    }
    push(e, &e->fetch, &op);
}

/* NONE on @plan_op's run: unset on the eviction lane once the step that
 * ends now has completed (its kernels still access the run remotely).
 * Until then fetches and sets over the run wait (unadvising). */
static void enqueue_unadvise(umadv_exec_t *e, const umadv_op_t *plan_op)
{
    exec_op_t op = {.kind = UMADV_OP_ADVISE, .advice = UMADV_ADVICE_NONE,
                    .alloc = plan_op->alloc, .first = plan_op->first, .count = plan_op->count,
                    .need = EXEC_KEY_NONE, .event = e->last_event};

    if (!bound(e, op.alloc)) {
        e->stats.drift_ops++;
        return;
    }
    if (umadv__exec_queue_push(e, &e->evict, &op) != UMADV_OK) {
        umadv_debug("executor: no memory to queue an advice unset: skipped");
        return;
    }
    for (uint32_t i = 0; i < op.count; i++)
        e->unadvising[exec_section_id(e, op.alloc, op.first + i)]++;
}

/* Resident sections of the run leave through the eviction lane once @ev
 * (a step end) has completed. Sections not resident are left alone. */
static void enqueue_evict(umadv_exec_t *e, uint32_t alloc, uint32_t first, uint32_t count,
                          uint64_t need, int blocking, exec_event_t *ev)
{
    exec_op_t op = {.kind = UMADV_OP_EVICT, .alloc = alloc, .first = first, .count = count,
                    .need = need, .blocking = blocking, .event = ev};
    int any = 0;

    if (!bound(e, alloc)) {
        e->stats.drift_ops++;
        return;
    }
    for (uint32_t i = 0; i < count; i++) {
        uint32_t s = exec_section_id(e, alloc, first + i);
        if (e->state[s] == EXEC_SEC_RESIDENT) {
            umadv__exec_set_state(e, s, EXEC_SEC_OUT_QUEUED);
            any = 1;
        }
    }
    if (any)
        push(e, &e->evict, &op);
}

/* Dead memory (freed at this step, or already gone) leaves the accounting
 * without a call: there is nothing to copy, and the pool reuses the
 * pages. Live data (a clean read-mostly copy) goes through the lane. */
static void drop(umadv_exec_t *e, const umadv_op_t *op)
{
    if (bound(e, op->alloc) && e->trace->allocs[op->alloc].free_step == UMADV_STEP_NONE) {
        enqueue_evict(e, op->alloc, op->first, op->count, EXEC_KEY_NONE, 0, e->last_event);
        return;
    }
    for (uint32_t i = 0; i < op->count; i++) {
        uint32_t s = exec_section_id(e, op->alloc, op->first + i);
        if (e->state[s] == EXEC_SEC_RESIDENT) {
            e->stats.dropped_bytes += exec_section_size(e, s);
            umadv__exec_set_state(e, s, EXEC_SEC_HOST);
        }
    }
}

/* ---- runs of sections --------------------------------------------------- */

typedef void (*exec_run_fn)(umadv_exec_t *e, uint32_t alloc, uint32_t first, uint32_t count);

typedef struct exec_run_call {
    umadv_exec_t *e;
    exec_run_fn   fn;
} exec_run_call_t;

static void exec_run(void *arg, uint32_t alloc, uint32_t first, uint32_t count)
{
    exec_run_call_t *c = arg;

    c->fn(c->e, alloc, first, count);
}

/* Call @fn for each run of consecutive sections of one allocation in
 * list[0..n), which is sorted here (the simulator groups the same way). */
static void for_runs(umadv_exec_t *e, uint32_t *list, size_t n, exec_run_fn fn)
{
    exec_run_call_t call = {e, fn};

    umadv__trace_for_runs(e->trace, list, n, exec_run, &call);
}

static umadv_status_t scratch_reserve(umadv_exec_t *e, size_t n)
{
    return umadv__array_reserve((void **)&e->scratch, &e->scratch_cap, n ? n : 1,
                                sizeof(*e->scratch));
}

/* ---- the start ---------------------------------------------------------- */

static void start_fetch_run(umadv_exec_t *e, uint32_t alloc, uint32_t first, uint32_t count)
{
    enqueue_fetch(e, alloc, first, count, 0, 0);
}

static void start_evict_run(umadv_exec_t *e, uint32_t alloc, uint32_t first, uint32_t count)
{
    enqueue_evict(e, alloc, first, count, 0, 1, e->last_event);
}

static int start_keeps(const umadv_exec_t *e, uint32_t s)
{
    if (e->p.policy == UMADV_POLICY_ORACLE)
        return 1;
    return e->p.policy == UMADV_POLICY_PLAN && e->p.schedule->resident_at_start[s];
}

/* Sections of bound blocks that the policy starts with on the GPU are
 * fetched (accounted from nothing: where they are is not known); the
 * rest of what may be there leaves. The first step waits for both. */
void umadv__exec_policy_start(umadv_exec_t *e)
{
    size_t nkeep = 0, nout = 0, n = e->trace->nsections;

    if (scratch_reserve(e, n) != UMADV_OK)
        return;
    for (uint32_t s = 0; s < n; s++) {
        if (!bound(e, e->trace->sections[s].alloc))
            continue;
        if (start_keeps(e, s)) {
            umadv__exec_set_state(e, s, EXEC_SEC_HOST);
            e->scratch[nkeep++] = s;
        } else if (e->state[s] == EXEC_SEC_RESIDENT) {
            e->scratch[n - 1 - nout++] = s;
        }
    }
    for_runs(e, e->scratch, nkeep, start_fetch_run);
    for_runs(e, e->scratch + n - nout, nout, start_evict_run);
}

/* ---- plan ----------------------------------------------------------------- */

static uint64_t op_need(const umadv_exec_t *e, const umadv_op_t *op)
{
    uint64_t base = e->iteration * e->p.nsteps;

    if (op->need_step >= e->p.nsteps)
        return e->key;
    if (op->flags & UMADV_OP_FLAG_NEXT_ITERATION)
        base += e->p.nsteps;
    return base + op->need_step;
}

static void plan_step_begin(umadv_exec_t *e, uint32_t j)
{
    const umadv_schedule_t *s = e->p.schedule;

    for (uint32_t i = s->step_ops[j]; i < s->step_ops[j + 1]; i++) {
        const umadv_op_t *op = &s->ops[i];

        if (op->kind == UMADV_OP_FETCH)
            enqueue_fetch(e, op->alloc, op->first, op->count, op_need(e, op),
                          (op->flags & UMADV_OP_FLAG_FRESH) != 0);
        else if (op->kind == UMADV_OP_ADVISE)
            umadv__exec_enqueue_advice(e, op, op_need(e, op));
    }
}

static void plan_step_end(umadv_exec_t *e, uint32_t j)
{
    const umadv_schedule_t *s = e->p.schedule;

    for (uint32_t i = s->step_ops[j]; i < s->step_ops[j + 1]; i++) {
        const umadv_op_t *op = &s->ops[i];

        if (op->kind == UMADV_OP_EVICT)
            enqueue_evict(e, op->alloc, op->first, op->count, EXEC_KEY_NONE, 0,
                          e->last_event);
        else if (op->kind == UMADV_OP_DROP)
            drop(e, op);
        else if (op->kind == UMADV_OP_ADVISE && op->advice == UMADV_ADVICE_NONE)
            enqueue_unadvise(e, op);
    }
}

/* ---- working sets and LRU (oracle, demand, prefetch-all) ------------------ */

/* Stamp the step's sections as used now; queued evictions of them are
 * called off. The sections not on the GPU go to scratch[0..*nmiss_p);
 * *miss_bytes_p also counts the blocks the step allocates, which are
 * not bound yet but will be on the GPU when it ends. */
static umadv_status_t working_set(umadv_exec_t *e, uint32_t j, size_t *nmiss_p,
                                  uint64_t *miss_bytes_p)
{
    const umadv_trace_step_t *step = &e->trace->steps[e->p.first_step + j];
    size_t nmiss = 0;
    uint64_t bytes = 0;

    if (scratch_reserve(e, e->trace->nsections) != UMADV_OK)
        return UMADV_ERR_NO_MEMORY;
    e->stamp_now++;
    for (uint32_t a = step->first_access; a < step->first_access + step->naccesses; a++) {
        const umadv_trace_access_t *acc = &e->trace->accesses[a];

        for (uint32_t i = 0; i < acc->count; i++) {
            uint32_t s = exec_section_id(e, acc->alloc, acc->first + i);
            if (e->stamp[s] == e->stamp_now)
                continue;
            e->stamp[s] = e->stamp_now;
            if (!bound(e, acc->alloc)) {
                /* Allocated inside the step: its kernels will fault it in. */
                bytes += exec_section_size(e, s);
                continue;
            }
            e->last_use[s] = e->key;
            if (e->lru_on)
                umadv__exec_lru_update(&e->lru, s);
            if (e->state[s] == EXEC_SEC_OUT_QUEUED)
                umadv__exec_set_state(e, s, EXEC_SEC_RESIDENT);
            if (e->state[s] == EXEC_SEC_HOST || e->state[s] == EXEC_SEC_EVICTING) {
                e->scratch[nmiss++] = s;
                bytes += exec_section_size(e, s);
            }
        }
    }
    *nmiss_p = nmiss;
    *miss_bytes_p = bytes;
    return UMADV_OK;
}

typedef struct lru_pick {
    umadv_exec_t *e;
    uint32_t     *victims;
    size_t        n;
    uint64_t      need, freed;
} lru_pick_t;

/* Members of the LRU set are the RESIDENT sections of bound blocks; the
 * step's own are skipped. Stops once enough is freed. */
static int lru_pick(void *arg, uint32_t s)
{
    lru_pick_t *p = arg;

    if (p->freed >= p->need)
        return 1;
    if (p->e->stamp[s] == p->e->stamp_now)
        return 0;
    p->victims[p->n++] = s;
    p->freed += exec_section_size(p->e, s);
    return p->freed >= p->need;
}

/* Resident sections not used by the step, least recently used first
 * (ties: lower section first), enough of them to free @need bytes: into
 * victims[0..*n_p). */
static umadv_status_t lru_victims(umadv_exec_t *e, uint32_t *victims, uint64_t need,
                                  size_t *n_p)
{
    lru_pick_t pick = {.e = e, .victims = victims, .need = need};
    umadv_status_t status = umadv__exec_lru_walk(&e->lru, lru_pick, &pick);

    if (status != UMADV_OK)
        return status;
    *n_p = pick.n;
    return UMADV_OK;
}

static void lru_evict_run(umadv_exec_t *e, uint32_t alloc, uint32_t first, uint32_t count)
{
    int blocking = e->p.policy == UMADV_POLICY_DEMAND;

    enqueue_evict(e, alloc, first, count, e->key, blocking, e->last_event);
}

static void step_fetch_run(umadv_exec_t *e, uint32_t alloc, uint32_t first, uint32_t count)
{
    enqueue_fetch(e, alloc, first, count, e->key, 0);
}

/* Make room for the step's missing bytes: evict LRU sections so that,
 * once what is leaving has left, they fit the budget. */
static void make_room(umadv_exec_t *e, uint64_t miss_bytes)
{
    uint64_t after = e->resident - e->outgoing + miss_bytes;
    size_t nvict;

    if (e->p.budget == 0 || after <= e->p.budget)
        return;
    /* at most every resident section: the LRU set's size */
    if (umadv__array_reserve((void **)&e->victims, &e->victims_cap, e->lru.n + 1,
                             sizeof(*e->victims)) != UMADV_OK)
        return;
    if (lru_victims(e, e->victims, after - e->p.budget, &nvict) == UMADV_OK)
        for_runs(e, e->victims, nvict, lru_evict_run);
}

static void lru_step_begin(umadv_exec_t *e, uint32_t j)
{
    uint64_t miss_bytes;
    size_t nmiss;

    if (working_set(e, j, &nmiss, &miss_bytes) != UMADV_OK)
        return;
    make_room(e, miss_bytes);
    if (e->p.policy != UMADV_POLICY_DEMAND)
        for_runs(e, e->scratch, nmiss, step_fetch_run);
}

/* demand: the step's kernels have faulted its data in. */
static void demand_step_end(umadv_exec_t *e, uint32_t j)
{
    const umadv_trace_step_t *step = &e->trace->steps[e->p.first_step + j];

    for (uint32_t a = step->first_access; a < step->first_access + step->naccesses; a++) {
        const umadv_trace_access_t *acc = &e->trace->accesses[a];

        for (uint32_t i = 0; bound(e, acc->alloc) && i < acc->count; i++) {
            uint32_t s = exec_section_id(e, acc->alloc, acc->first + i);
            if (e->state[s] == EXEC_SEC_HOST)
                umadv__exec_set_state(e, s, EXEC_SEC_RESIDENT);
        }
    }
}

/* ---- dispatch ----------------------------------------------------------- */

static uint32_t open_step(const umadv_exec_t *e)
{
    return (uint32_t)(e->key - e->iteration * e->p.nsteps);
}

void umadv__exec_policy_step_begin(umadv_exec_t *e)
{
    if (e->p.policy == UMADV_POLICY_PLAN)
        plan_step_begin(e, open_step(e));
    else
        lru_step_begin(e, open_step(e));
}

void umadv__exec_policy_step_end(umadv_exec_t *e)
{
    if (e->p.policy == UMADV_POLICY_PLAN)
        plan_step_end(e, open_step(e));
    else if (e->p.policy == UMADV_POLICY_DEMAND)
        demand_step_end(e, open_step(e));
}
