/*
 * What each policy decides when the replay starts, when a step begins and
 * when it ends (core.h describes the policies). Decisions go to
 * core->out; a decision the core has no memory to record is lost, which
 * costs time, not data (a fetch not made faults, an eviction not made
 * leaves data where it is, accounted so).
 */
#include <string.h>

#include "common/util.h"
#include "schedule/core_int.h"

static void out_push(umadv_core_t *c, const umadv_core_op_t *op)
{
    if (umadv__array_reserve((void **)&c->out, &c->out_cap, c->nout + 1, sizeof(*c->out)) !=
        UMADV_OK) {
        c->out_lost = 1;
        return;
    }
    c->out[c->nout++] = *op;
}

static int drifted(umadv_core_t *c, uint32_t alloc)
{
    if (c->bound[alloc])
        return 0;
    c->drift_ops++;
    return 1;
}

static void decide_fetch(umadv_core_t *c, uint32_t alloc, uint32_t first, uint32_t count,
                         uint64_t need, int fresh)
{
    umadv_core_op_t op = {.kind = UMADV_OP_FETCH, .alloc = alloc, .first = first,
                          .count = count, .need = need, .blocking = 1, .fresh = (uint8_t)fresh};

    if (drifted(c, alloc))
        return;
    for (uint32_t i = 0; i < count && !op.staged; i++)
        op.staged = c->staged[umadv__core_section(c, alloc, first + i)];
    out_push(c, &op);
}

/* A set of @plan_op's advice: the step of @need waits for it before its
 * work is launched. */
static void decide_advice(umadv_core_t *c, const umadv_op_t *plan_op, uint64_t need)
{
    umadv_core_op_t op = {.kind = UMADV_OP_ADVISE, .advice = plan_op->advice,
                          .alloc = plan_op->alloc, .first = plan_op->first,
                          .count = plan_op->count, .need = need, .blocking = 1};

    if (op.advice == UMADV_ADVICE_NONE || op.count == 0 || drifted(c, op.alloc))
        return;
    out_push(c, &op);
}

/* NONE on @plan_op's run, once the step that ends now has completed (its
 * kernels still access the run remotely). Until then fetches and sets
 * over the run wait (unadvising). */
static void decide_unadvise(umadv_core_t *c, const umadv_op_t *plan_op)
{
    umadv_core_op_t op = {.kind = UMADV_OP_ADVISE, .advice = UMADV_ADVICE_NONE,
                          .alloc = plan_op->alloc, .first = plan_op->first,
                          .count = plan_op->count, .need = UMADV_CORE_KEY_NONE,
                          .after_step = 1};
    size_t before = c->nout;

    if (drifted(c, op.alloc))
        return;
    out_push(c, &op);
    for (uint32_t i = 0; c->nout > before && i < op.count; i++)
        c->unadvising[umadv__core_section(c, op.alloc, op.first + i)]++;
}

/* Whether a step of the iteration touches section @s (core.h, STAGING). */
static int touched_in_iteration(const umadv_core_t *c, uint32_t s)
{
    return c->last_touch[s] != UMADV_STEP_NONE;
}

/* Whether the profile left section @s's allocation unseen at a step
 * between the eviction decided now and the section's next touch
 * (core.h, STAGING): from the step after the one that ends now, or from
 * the one that begins now (an eviction that makes room for it), or from
 * the first. */
static int unseen_ahead(const umadv_core_t *c, uint32_t s)
{
    uint32_t from = c->p.first_step + (c->begun ? c->step + (uint32_t)c->ending : 0);

    return c->has_unseen && umadv__trace_gaps_unseen_ahead(&c->unseen, s, from,
                                                           c->p.first_step, c->p.nsteps);
}

/* The terms a run may leave the GPU with its range discarded on, staged
 * or dead (core.h, STAGING, DEAD DATA): the allocation stageable now,
 * staging on and not paused, no advice on the run (a kernel may read it
 * where the advice leaves it), no step left it unseen before its next
 * touch. DISCARD_UNSEEN: all but the last. */
typedef enum discard_terms {
    DISCARD_MET,
    DISCARD_NEVER,
    DISCARD_UNSEEN
} discard_terms_t;

static discard_terms_t discard_terms(const umadv_core_t *c, uint32_t alloc, uint32_t first,
                                     uint32_t count)
{
    int unseen = 0;

    if (!c->p.stage || c->stage_paused || !c->stageable[alloc])
        return DISCARD_NEVER;
    for (uint32_t i = 0; i < count; i++) {
        uint32_t s = umadv__core_section(c, alloc, first + i);

        if (c->advised[s])
            return DISCARD_NEVER;
        unseen = unseen || unseen_ahead(c, s);
    }
    return unseen ? DISCARD_UNSEEN : DISCARD_MET;
}

/* The bytes of the run's resident sections, which an eviction moves. */
static uint64_t resident_bytes(const umadv_core_t *c, uint32_t alloc, uint32_t first,
                               uint32_t count)
{
    uint64_t bytes = 0;

    for (uint32_t i = 0; i < count; i++) {
        uint32_t s = umadv__core_section(c, alloc, first + i);

        if (c->state[s] == UMADV_SEC_RESIDENT)
            bytes += c->p.trace->sections[s].size;
    }
    return bytes;
}

/* How many sections from the start of the run go staged (core.h,
 * STAGING): live data (dead data is dropped, never evicted) that the
 * host's copy does not already hold (clean), discardable, that the
 * iteration's kernels touch, as far as the pool has room for its resident
 * sections. The rest of the run migrates: a pool a few sections short
 * would otherwise send a whole activation over UVM (mlp_train at half its
 * footprint, H200: 4.3 GiB an iteration, whole 512 MiB runs, with 12 or
 * 13 slots of 201 free in a host replay of its pattern). */
static uint32_t staged_prefix(const umadv_core_t *c, uint32_t alloc, uint32_t first,
                              uint32_t count, int clean, discard_terms_t terms)
{
    uint32_t need = 0, room = c->stage_slots - c->stage_used, i;

    if (clean || terms != DISCARD_MET)
        return 0;
    for (i = 0; i < count; i++) {
        uint32_t s = umadv__core_section(c, alloc, first + i);
        if (!touched_in_iteration(c, s))
            break;
        need += c->state[s] == UMADV_SEC_RESIDENT;
        if (need > room)
            break;
    }
    return i;
}

/* The run's resident sections marked leaving (staged ones marked so), and
 * its decision pushed if any is. */
static void evict_push(umadv_core_t *c, const umadv_core_op_t *op)
{
    int any = 0;

    for (uint32_t i = 0; i < op->count; i++) {
        uint32_t s = umadv__core_section(c, op->alloc, op->first + i);
        if (c->state[s] == UMADV_SEC_RESIDENT) {
            umadv__core_set_state(c, s, UMADV_SEC_OUT_QUEUED);
            if (op->staged)
                umadv__core_stage_mark(c, s);
            any = 1;
        }
    }
    if (any)
        out_push(c, op);
}

/* Resident sections of the run leave once the step that ends now (or the
 * work before the start) has completed; the rest is left alone. @dead: the
 * plan says nothing reads them again (UMADV_OP_FLAG_DEAD). */
static void decide_evict(umadv_core_t *c, uint32_t alloc, uint32_t first, uint32_t count,
                         uint64_t need, int blocking, int clean, int dead)
{
    umadv_core_op_t op = {.kind = UMADV_OP_EVICT, .alloc = alloc, .first = first,
                          .count = count, .need = need, .blocking = (uint8_t)blocking,
                          .after_step = 1, .clean = (uint8_t)clean};
    discard_terms_t terms;
    uint32_t staged;

    if (drifted(c, alloc))
        return;
    terms = discard_terms(c, alloc, first, count);
    if (terms == DISCARD_UNSEEN && !clean)
        c->unseen_held_bytes += resident_bytes(c, alloc, first, count);
    op.dead = (uint8_t)(dead && !clean && terms == DISCARD_MET);
    staged = op.dead ? 0 : staged_prefix(c, alloc, first, count, clean, terms);
    if (staged > 0) {
        op.count = staged;
        op.staged = 1;
        evict_push(c, &op);
    }
    if (staged < count) {
        op.first = first + staged;
        op.count = count - staged;
        op.staged = 0;
        evict_push(c, &op);
    }
}

/* Dead memory (freed at this step, or already gone) leaves the accounting
 * without a move: there is nothing to copy, and the pool reuses the
 * pages. Live data (a clean read-mostly copy) is evicted. */
static void decide_drop(umadv_core_t *c, const umadv_op_t *op)
{
    if (c->bound[op->alloc] && c->p.trace->allocs[op->alloc].free_step == UMADV_STEP_NONE) {
        decide_evict(c, op->alloc, op->first, op->count, UMADV_CORE_KEY_NONE, 0, 1, 0);
        return;
    }
    for (uint32_t i = 0; i < op->count; i++) {
        uint32_t s = umadv__core_section(c, op->alloc, op->first + i);
        if (c->state[s] == UMADV_SEC_RESIDENT) {
            c->dropped_bytes += c->p.trace->sections[s].size;
            umadv__core_set_state(c, s, UMADV_SEC_HOST);
        }
    }
}

/* ---- runs of sections --------------------------------------------------- */

typedef struct run_decision {
    umadv_core_t *c;
    umadv_op_kind_t kind;
    uint64_t      need;
    int           blocking;
} run_decision_t;

static void decide_run(void *arg, uint32_t alloc, uint32_t first, uint32_t count)
{
    const run_decision_t *d = arg;

    if (d->kind == UMADV_OP_FETCH)
        decide_fetch(d->c, alloc, first, count, d->need, 0);
    else
        decide_evict(d->c, alloc, first, count, d->need, d->blocking, 0, 0);
}

/* One decision per run of consecutive sections of one allocation in
 * list[0 .. n), which is sorted here. */
static void decide_runs(umadv_core_t *c, uint32_t *list, size_t n, umadv_op_kind_t kind,
                        uint64_t need, int blocking)
{
    run_decision_t d = {c, kind, need, blocking};

    umadv__trace_for_runs(c->p.trace, list, n, decide_run, &d);
}

static umadv_status_t scratch_reserve(umadv_core_t *c, size_t n)
{
    return umadv__array_reserve((void **)&c->scratch, &c->scratch_cap, n ? n : 1,
                                sizeof(*c->scratch));
}

static void out_clear(umadv_core_t *c)
{
    c->nout = 0;
    c->out_lost = 0;
}

static void out_show(const umadv_core_t *c)
{
    if (c->p.observe != NULL)
        c->p.observe(c->p.observe_arg, c);
}

/* ---- the start and binding ---------------------------------------------- */

static int start_keeps(const umadv_core_t *c, uint32_t s)
{
    if (c->p.policy == UMADV_POLICY_ORACLE)
        return 1;
    return c->p.policy == UMADV_POLICY_PLAN && c->p.schedule->resident_at_start[s];
}

/* Sections of bound allocations that the policy starts with on the GPU
 * are fetched (accounted from nothing: where they are is not known); the
 * rest of what may be there leaves. The first step waits for both. */
void umadv__core_start(umadv_core_t *c)
{
    size_t nkeep = 0, nout = 0, n = c->p.trace->nsections;

    out_clear(c);
    if (scratch_reserve(c, n) != UMADV_OK) {
        c->out_lost = 1;
        return;
    }
    for (uint32_t s = 0; s < n; s++) {
        if (!c->bound[c->p.trace->sections[s].alloc])
            continue;
        if (start_keeps(c, s)) {
            umadv__core_set_state(c, s, UMADV_SEC_HOST);
            c->scratch[nkeep++] = s;
        } else if (c->state[s] == UMADV_SEC_RESIDENT) {
            c->scratch[n - 1 - nout++] = s;
        }
    }
    decide_runs(c, c->scratch, nkeep, UMADV_OP_FETCH, 0, 1);
    decide_runs(c, c->scratch + n - nout, nout, UMADV_OP_EVICT, 0, 1);
    out_show(c);
}

void umadv__core_setup_advice(umadv_core_t *c, uint32_t alloc)
{
    const umadv_schedule_t *s = c->p.schedule;
    uint64_t need = c->begun ? c->key + 1 : 0;

    out_clear(c);
    if (c->p.policy != UMADV_POLICY_PLAN)
        return;
    for (size_t i = 0; i < s->nsetup; i++) {
        if (s->setup[i].kind == UMADV_OP_ADVISE && s->setup[i].alloc == alloc)
            decide_advice(c, &s->setup[i], need);
    }
    out_show(c);
}

/* ---- plan ----------------------------------------------------------------- */

static uint64_t op_need(const umadv_core_t *c, const umadv_op_t *op)
{
    uint64_t base = c->iteration * c->p.nsteps;

    if (op->need_step >= c->p.nsteps)
        return c->key;
    if (op->flags & UMADV_OP_FLAG_NEXT_ITERATION)
        base += c->p.nsteps;
    return base + op->need_step;
}

static void plan_step_begin(umadv_core_t *c)
{
    const umadv_schedule_t *s = c->p.schedule;

    for (uint32_t i = s->step_ops[c->step]; i < s->step_ops[c->step + 1]; i++) {
        const umadv_op_t *op = &s->ops[i];

        if (op->kind == UMADV_OP_FETCH)
            decide_fetch(c, op->alloc, op->first, op->count, op_need(c, op),
                         (op->flags & UMADV_OP_FLAG_FRESH) != 0);
        else if (op->kind == UMADV_OP_ADVISE)
            decide_advice(c, op, op_need(c, op));
    }
}

static void plan_step_end(umadv_core_t *c)
{
    const umadv_schedule_t *s = c->p.schedule;

    for (uint32_t i = s->step_ops[c->step]; i < s->step_ops[c->step + 1]; i++) {
        const umadv_op_t *op = &s->ops[i];

        if (op->kind == UMADV_OP_EVICT)
            decide_evict(c, op->alloc, op->first, op->count, UMADV_CORE_KEY_NONE, 0, 0,
                         (op->flags & UMADV_OP_FLAG_DEAD) != 0);
        else if (op->kind == UMADV_OP_DROP)
            decide_drop(c, op);
        else if (op->kind == UMADV_OP_ADVISE && op->advice == UMADV_ADVICE_NONE)
            decide_unadvise(c, op);
    }
}

/* ---- working sets and LRU (oracle, demand, prefetch-all) ------------------ */

static int bound_section(const umadv_core_t *c, uint32_t s)
{
    return c->bound[c->p.trace->sections[s].alloc];
}

/* The open step's sections, each once, into touched[]; they are used
 * now: stamped (the LRU choice skips them), and the bound ones' last use
 * is this step's key. Every rule of the step reads this one list. */
static void touch_step(umadv_core_t *c)
{
    const umadv_trace_t *t = c->p.trace;
    const umadv_trace_step_t *step = &t->steps[c->p.first_step + c->step];

    c->stamp_now++;
    c->ntouched = 0;
    for (uint32_t a = step->first_access; a < step->first_access + step->naccesses; a++) {
        const umadv_trace_access_t *acc = &t->accesses[a];

        for (uint32_t i = 0; i < acc->count; i++) {
            uint32_t s = umadv__core_section(c, acc->alloc, acc->first + i);
            if (c->stamp[s] == c->stamp_now)
                continue;
            c->stamp[s] = c->stamp_now;
            c->touched[c->ntouched++] = s;
            if (!c->bound[acc->alloc])
                continue;
            c->last_use[s] = c->key;
            if (c->lru_on)
                umadv__core_lru_update(&c->lru, s);
        }
    }
}

/* The open step's sections not on the GPU go to scratch[0 .. *nmiss_p);
 * a decided eviction of one still queued is called off. *miss_bytes_p
 * also counts the sections of allocations nothing plays yet (the step
 * allocates them: they will be on the GPU when it ends). */
static umadv_status_t working_set(umadv_core_t *c, size_t *nmiss_p, uint64_t *miss_bytes_p)
{
    const umadv_trace_t *t = c->p.trace;
    uint64_t bytes = 0;
    size_t nmiss = 0;

    if (scratch_reserve(c, t->nsections) != UMADV_OK)
        return UMADV_ERR_NO_MEMORY;
    for (size_t k = 0; k < c->ntouched; k++) {
        uint32_t s = c->touched[k];
        int bound = bound_section(c, s);

        if (bound && c->state[s] == UMADV_SEC_OUT_QUEUED)
            umadv__core_set_state(c, s, UMADV_SEC_RESIDENT);
        if (bound && c->state[s] != UMADV_SEC_HOST && c->state[s] != UMADV_SEC_EVICTING)
            continue;
        bytes += t->sections[s].size;
        if (bound)
            c->scratch[nmiss++] = s;
    }
    *nmiss_p = nmiss;
    *miss_bytes_p = bytes;
    return UMADV_OK;
}

/* Make room for the step's missing bytes: evict LRU sections so that,
 * once what is leaving has left, they fit the budget. demand's steps wait
 * for these evictions: their kernels fault into the room. */
static void make_room(umadv_core_t *c, uint64_t miss_bytes)
{
    uint64_t after = c->resident - c->outgoing + miss_bytes;
    size_t nvict;

    if (c->p.budget == 0 || after <= c->p.budget)
        return;
    if (umadv__core_lru_victims(c, after - c->p.budget, &nvict) == UMADV_OK)
        decide_runs(c, c->victims, nvict, UMADV_OP_EVICT, c->key,
                    c->p.policy == UMADV_POLICY_DEMAND);
    else
        c->out_lost = 1;
}

static void lru_step_begin(umadv_core_t *c)
{
    uint64_t miss_bytes;
    size_t nmiss;

    if (working_set(c, &nmiss, &miss_bytes) != UMADV_OK) {
        c->out_lost = 1;
        return;
    }
    make_room(c, miss_bytes);
    if (c->p.policy != UMADV_POLICY_DEMAND)
        decide_runs(c, c->scratch, nmiss, UMADV_OP_FETCH, c->key, 1);
}

/* demand: the step's kernels have faulted its data in. */
static void demand_step_end(umadv_core_t *c)
{
    for (size_t k = 0; k < c->ntouched; k++) {
        uint32_t s = c->touched[k];

        /* staged data is never faulted in: it is not in the range */
        if (bound_section(c, s) && c->state[s] == UMADV_SEC_HOST && !c->staged[s])
            umadv__core_set_state(c, s, UMADV_SEC_RESIDENT);
    }
}

/* ---- the staging guard (core.h, STAGING) ------------------------------- */

/* Sections a FETCH decided in this call covers: marked in guard[]. */
static void guard_mark_fetches(umadv_core_t *c)
{
    c->guard_now++;
    for (size_t i = 0; i < c->nout; i++) {
        const umadv_core_op_t *op = &c->out[i];

        for (uint32_t k = 0; op->kind == UMADV_OP_FETCH && k < op->count; k++)
            c->guard[umadv__core_section(c, op->alloc, op->first + k)] = c->guard_now;
    }
}

/* Section @s, which the open step may touch, back if staged: its
 * eviction called off if not started, else a restore (into scratch). */
static void guard_section(umadv_core_t *c, uint32_t s, size_t *n)
{
    if (!bound_section(c, s) || !c->staged[s] || c->guard[s] == c->guard_now)
        return;
    c->guard[s] = c->guard_now; /* once, if the step also names it */
    if (c->state[s] == UMADV_SEC_OUT_QUEUED)
        umadv__core_set_state(c, s, UMADV_SEC_RESIDENT);
    else
        c->scratch[(*n)++] = s;
}

/* The blocks the profile left unseen at the open step, which it may
 * touch: guarded as its own sections are. Eviction decisions keep them
 * from being staged across such a step (unseen_ahead); this catches an
 * iteration that began early, or drift, where steps came out of order.
 * A block with no section staged is passed over whole: a second pass
 * leaves a hundred blocks unseen at each step, and visiting their
 * sections one by one cost a PyTorch densenet121's replay 2.9 ms of
 * host time an iteration, a GPT-2 shape's 0.9 (perf, H200, 2026-11-30). */
static void guard_unseen(umadv_core_t *c, size_t *n)
{
    const umadv_trace_gaps_t *g = &c->unseen;
    uint32_t j = c->p.first_step + c->step;
    const uint32_t *unseen = umadv__keyed_values(&g->unseen_at, j);

    if (c->stage_used == 0)
        return;
    for (uint32_t k = 0; k < umadv__keyed_count(&g->unseen_at, j); k++) {
        const umadv_trace_alloc_t *al = &c->p.trace->allocs[unseen[k]];

        if (c->alloc_staged[unseen[k]] == 0)
            continue;
        for (uint32_t i = 0; i < al->nsections; i++)
            guard_section(c, al->first_section + i, n);
    }
}

/* Staged sections the open step touches, or may (guard_unseen): an
 * eviction not started is called off; the rest is restored before the
 * step runs. Runs after the policy's decisions, so that a fetch it
 * decided is not doubled. */
static void stage_guard(umadv_core_t *c)
{
    size_t n = 0;

    if (scratch_reserve(c, c->p.trace->nsections) != UMADV_OK) {
        c->out_lost = 1;
        return;
    }
    guard_mark_fetches(c);
    for (size_t k = 0; k < c->ntouched; k++)
        guard_section(c, c->touched[k], &n);
    if (c->has_unseen)
        guard_unseen(c, &n);
    decide_runs(c, c->scratch, n, UMADV_OP_FETCH, c->key, 1);
}

/* ---- dispatch ----------------------------------------------------------- */

void umadv__core_step_begin(umadv_core_t *c, uint64_t iteration, uint32_t j)
{
    out_clear(c);
    c->begun = 1;
    c->iteration = iteration;
    c->step = UMADV_MIN(j, c->p.nsteps - 1);
    c->key = iteration * c->p.nsteps + c->step;
    c->past_end = j >= c->p.nsteps;
    if (c->past_end)
        return;
    touch_step(c);
    if (c->p.policy == UMADV_POLICY_PLAN)
        plan_step_begin(c);
    else
        lru_step_begin(c);
    stage_guard(c);
    out_show(c);
}

void umadv__core_step_end(umadv_core_t *c)
{
    out_clear(c);
    if (!c->begun || c->past_end)
        return;
    c->ending = 1;
    if (c->p.policy == UMADV_POLICY_PLAN)
        plan_step_end(c);
    else if (c->p.policy == UMADV_POLICY_DEMAND)
        demand_step_end(c);
    c->ending = 0;
    out_show(c);
}
