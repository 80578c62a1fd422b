/*
 * The replay core's state: sections, their accounting under the budget,
 * binding, fetch admission and the LRU choice (core.h). What each policy
 * decides at the start and at each step is core_policy.c.
 */
#include "schedule/core.h"

#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "schedule/core_int.h"

static umadv_status_t params_check(const umadv_core_params_t *p)
{
    const umadv_trace_t *t = p->trace;

    if (t == NULL || !t->finalized || p->nsteps == 0 || p->first_step > t->nsteps ||
        p->nsteps > t->nsteps - p->first_step || (unsigned)p->policy >= UMADV_POLICY_COUNT)
        return UMADV_ERR_INVALID_PARAM;
    if (p->policy == UMADV_POLICY_PLAN &&
        (p->schedule == NULL || p->schedule->nsteps != p->nsteps))
        return UMADV_ERR_INVALID_PARAM;
    return UMADV_OK;
}

/* The most sections alive at once in steps [first, first + n) of @t: a
 * difference array over its steps (a block born or freed at a step is
 * alive there). 0 when out of memory. */
static uint64_t peak_live_sections(const umadv_trace_t *t, uint32_t first, uint32_t n)
{
    int64_t *delta = calloc((size_t)n + 1, sizeof(*delta)), live = 0, peak = 0;

    if (delta == NULL)
        return 0;
    for (uint32_t a = 0; a < t->nallocs; a++) {
        const umadv_trace_alloc_t *al = &t->allocs[a];
        uint32_t from = al->alloc_step == UMADV_STEP_NONE || al->alloc_step < first
                            ? 0 : al->alloc_step - first;
        uint32_t to = al->free_step == UMADV_STEP_NONE || al->free_step >= first + n
                          ? n - 1 : al->free_step - first;

        if (from >= n || (al->free_step != UMADV_STEP_NONE && al->free_step < first))
            continue;
        delta[from] += al->nsections;
        delta[to + 1] -= al->nsections;
    }
    for (uint32_t j = 0; j < n; j++) {
        live += delta[j];
        peak = live > peak ? live : peak;
    }
    free(delta);
    return (uint64_t)peak;
}

/* The largest allocation of @t, in sections. */
static uint32_t largest_alloc_sections(const umadv_trace_t *t)
{
    uint32_t most = 0;

    for (uint32_t a = 0; a < t->nallocs; a++)
        most = UMADV_MAX(most, t->allocs[a].nsections);
    return most;
}

/* The staging pool (core.h, STAGING): the most sections alive at once in
 * the replayed iteration, less the budget's worth: what can be off the GPU
 * at the peak; and one allocation's worth more, since the GPU may hold
 * less than the budget by up to a run that waits for room. Not the sum
 * over the iteration's blocks (a PyTorch ResNet-50 at batch 64 allocates
 * about 20 GiB in an iteration for a 5.4 GiB peak), whose pinning took
 * seconds at every replay start. A pool that runs short stages what it
 * has room for and migrates the rest, it never fails. */
uint32_t umadv__core_stage_sections(const umadv_trace_t *t, uint32_t first_step,
                                    uint32_t nsteps, uint64_t budget)
{
    uint64_t peak, sections, budget_sections = budget / t->section_size;

    if (nsteps == 0 || first_step > t->nsteps || nsteps > t->nsteps - first_step)
        return 0;
    sections = peak = peak_live_sections(t, first_step, nsteps);
    if (budget_sections > 0 && budget_sections < sections)
        sections = UMADV_MIN(peak, sections - budget_sections + largest_alloc_sections(t));
    return (uint32_t)UMADV_MIN(sections, UINT32_MAX);
}

static uint32_t stage_pool_slots(const umadv_core_t *c)
{
    if (!c->p.stage)
        return 0;
    return umadv__core_stage_sections(c->p.trace, c->p.first_step, c->p.nsteps, c->p.budget);
}

/* The last step of the replayed iteration touching each section (core.h,
 * STAGING). */
static void mark_last_touch(umadv_core_t *c)
{
    const umadv_trace_t *t = c->p.trace;

    for (uint32_t s = 0; s <= t->nsections; s++)
        c->last_touch[s] = UMADV_STEP_NONE;
    for (uint32_t j = 0; j < c->p.nsteps; j++) {
        const umadv_trace_step_t *step = &t->steps[c->p.first_step + j];

        for (uint32_t a = step->first_access; a < step->first_access + step->naccesses; a++) {
            const umadv_trace_access_t *acc = &t->accesses[a];

            for (uint32_t i = 0; i < acc->count; i++)
                c->last_touch[umadv__core_section(c, acc->alloc, acc->first + i)] = j;
        }
    }
}

/* The sections the plan ever advises (core.h, STAGING). */
static void mark_advised(umadv_core_t *c)
{
    const umadv_schedule_t *s = c->p.schedule;

    if (c->p.policy != UMADV_POLICY_PLAN)
        return;
    umadv__schedule_mark_advised(s, c->p.trace, c->advised);
}

void umadv__core_schedule_changed(umadv_core_t *c)
{
    memset(c->advised, 0, (size_t)c->p.trace->nsections + 1);
    mark_advised(c);
}

/* The trace's unseen blocks, indexed if it has any (STAGING). */
static umadv_status_t unseen_index(umadv_core_t *c)
{
    if (c->p.trace->nunseen == 0)
        return UMADV_OK;
    if (umadv__trace_gaps_init(&c->unseen, c->p.trace) != UMADV_OK)
        return UMADV_ERR_NO_MEMORY;
    c->has_unseen = 1;
    return UMADV_OK;
}

umadv_status_t umadv__core_init(umadv_core_t *c, const umadv_core_params_t *params)
{
    umadv_status_t status = params_check(params);
    size_t nallocs, nsections;

    memset(c, 0, sizeof(*c));
    if (status != UMADV_OK)
        return status;
    c->p = *params;
    if (c->p.policy == UMADV_POLICY_ORACLE)
        c->p.budget = 0;
    c->batch_bytes = umadv__schedule_batch_bytes(c->p.link ? c->p.link : &c->p.trace->link);
    /* the LRU policies choose by the order, and so does a modelled fault
     * path under every policy that evicts (the driver's own eviction).
     * Nothing else reads it: kept under plan in a replay, it cost a
     * PyTorch densenet121's 1.2 ms of host time an iteration, a GPT-2
     * shape's 0.6 (perf, H200, 2026-11-30). */
    c->lru_on = c->p.policy == UMADV_POLICY_PREFETCH_ALL ||
                c->p.policy == UMADV_POLICY_DEMAND ||
                (c->p.fault_evictions && c->p.policy != UMADV_POLICY_ORACLE);
    nallocs = c->p.trace->nallocs + 1;
    nsections = c->p.trace->nsections + 1;
    c->bound = calloc(nallocs, sizeof(*c->bound));
    c->state = calloc(nsections, sizeof(*c->state));
    c->last_use = calloc(nsections, sizeof(*c->last_use));
    c->unadvising = calloc(nsections, sizeof(*c->unadvising));
    c->stamp = calloc(nsections, sizeof(*c->stamp));
    c->stageable = calloc(nallocs, sizeof(*c->stageable));
    c->staged = calloc(nsections, sizeof(*c->staged));
    c->alloc_staged = calloc(nallocs, sizeof(*c->alloc_staged));
    c->guard = calloc(nsections, sizeof(*c->guard));
    c->advised = calloc(nsections, sizeof(*c->advised));
    c->last_touch = malloc(nsections * sizeof(*c->last_touch));
    c->touched = malloc(nsections * sizeof(*c->touched)); /* at most every section */
    if (c->bound == NULL || c->state == NULL || c->last_use == NULL || c->unadvising == NULL ||
        c->stamp == NULL || c->stageable == NULL || c->staged == NULL || c->alloc_staged == NULL ||
        c->guard == NULL || c->advised == NULL || c->last_touch == NULL || c->touched == NULL ||
        umadv__array_reserve((void **)&c->out, &c->out_cap, nsections, sizeof(*c->out)) !=
            UMADV_OK || (c->lru_on && umadv__core_lru_init(&c->lru, c->last_use,
                                                                nsections) != UMADV_OK) ||
        unseen_index(c) != UMADV_OK) {
        umadv__core_cleanup(c);
        return UMADV_ERR_NO_MEMORY;
    }
    mark_advised(c);
    mark_last_touch(c);
    c->stage_slots = stage_pool_slots(c);
    return UMADV_OK;
}

void umadv__core_cleanup(umadv_core_t *c)
{
    umadv__core_lru_cleanup(&c->lru);
    if (c->has_unseen)
        umadv__trace_gaps_cleanup(&c->unseen);
    c->has_unseen = 0;
    free(c->bound);
    free(c->state);
    free(c->last_use);
    free(c->unadvising);
    free(c->stamp);
    free(c->touched);
    free(c->stageable);
    free(c->staged);
    free(c->alloc_staged);
    free(c->guard);
    free(c->advised);
    free(c->last_touch);
    free(c->unrestored);
    free(c->out);
    free(c->scratch);
    free(c->victims);
    memset(c, 0, sizeof(*c));
}

/* ---- accounting ----------------------------------------------------------- */

static int is_out(umadv_sec_state_t s)
{
    return s == UMADV_SEC_OUT_QUEUED || s == UMADV_SEC_EVICTING;
}

void umadv__core_set_state(umadv_core_t *c, uint32_t section, umadv_sec_state_t to)
{
    umadv_sec_state_t from = (umadv_sec_state_t)c->state[section];
    uint64_t size = c->p.trace->sections[section].size;

    if (from == UMADV_SEC_HOST && to != UMADV_SEC_HOST)
        c->resident += size;
    else if (from != UMADV_SEC_HOST && to == UMADV_SEC_HOST)
        c->resident -= size;
    if (is_out(from) != is_out(to))
        c->outgoing = is_out(to) ? c->outgoing + size : c->outgoing - size;
    c->state[section] = (uint8_t)to;
    if (to == UMADV_SEC_RESIDENT)
        umadv__core_unstage(c, section); /* restored, or its eviction called off or undone */
    if (c->lru_on && from == UMADV_SEC_RESIDENT && to != UMADV_SEC_RESIDENT)
        umadv__core_lru_remove(&c->lru, section);
    else if (c->lru_on && from != UMADV_SEC_RESIDENT && to == UMADV_SEC_RESIDENT)
        umadv__core_lru_insert(&c->lru, section);
    c->peak = UMADV_MAX(c->peak, c->resident);
}

int umadv__core_fits(const umadv_core_t *c, uint64_t bytes)
{
    return c->p.budget == 0 || c->resident + bytes <= c->p.budget;
}

void umadv__core_bind(umadv_core_t *c, uint32_t alloc)
{
    const umadv_trace_alloc_t *a = &c->p.trace->allocs[alloc];

    umadv__core_unbind(c, alloc);
    c->bound[alloc] = 1;
    c->stageable[alloc] = 0;
    for (uint32_t i = 0; i < a->nsections; i++)
        c->last_use[a->first_section + i] = 0;
    umadv__core_setup_advice(c, alloc);
}

void umadv__core_unbind(umadv_core_t *c, uint32_t alloc)
{
    const umadv_trace_alloc_t *a = &c->p.trace->allocs[alloc];

    c->bound[alloc] = 0;
    for (uint32_t i = 0; i < a->nsections; i++) {
        umadv__core_set_state(c, a->first_section + i, UMADV_SEC_HOST);
        umadv__core_unstage(c, a->first_section + i);
    }
}

/* A block that shares its pages (trace.h) is never staged: a discard of
 * its range could take its neighbours' bytes; its evictions migrate,
 * data and pages together. */
void umadv__core_set_stageable(umadv_core_t *c, uint32_t alloc, int on)
{
    c->stageable[alloc] = on != 0 && umadv__trace_alloc_owns_pages(c->p.trace, alloc);
}

void umadv__core_stage_pause(umadv_core_t *c, int paused)
{
    c->stage_paused = paused;
}

void umadv__core_unstage(umadv_core_t *c, uint32_t section)
{
    if (c->staged[section]) {
        c->staged[section] = 0;
        c->stage_used--;
        c->alloc_staged[c->p.trace->sections[section].alloc]--;
    }
}

void umadv__core_stage_mark(umadv_core_t *c, uint32_t section)
{
    if (!c->staged[section]) {
        c->staged[section] = 1;
        c->stage_used++;
        c->alloc_staged[c->p.trace->sections[section].alloc]++;
    }
}

size_t umadv__core_step_unrestored(umadv_core_t *c)
{
    size_t n = 0;

    if (!c->begun || c->past_end)
        return 0;
    for (size_t k = 0; k < c->ntouched; k++) {
        uint32_t s = c->touched[k];
        if (!c->staged[s] || !c->bound[c->p.trace->sections[s].alloc])
            continue;
        if (umadv__array_reserve((void **)&c->unrestored, &c->unrestored_cap, n + 1,
                                 sizeof(*c->unrestored)) != UMADV_OK)
            return n;
        c->unrestored[n++] = s;
    }
    return n;
}

/* ---- admission ------------------------------------------------------------ */

umadv_fetch_verdict_t umadv__core_fetch_verdict(const umadv_core_t *c, const umadv_core_op_t *op,
                                                uint64_t *add_p)
{
    uint64_t add = 0;
    int restore = 0;

    *add_p = 0;
    for (uint32_t i = 0; i < op->count; i++) {
        uint32_t s = umadv__core_section(c, op->alloc, op->first + i);
        if (is_out((umadv_sec_state_t)c->state[s]) || c->unadvising[s] > 0)
            return UMADV_FETCH_WAIT;
        /* a restore in flight: the step that needs it waits for it */
        if (c->state[s] == UMADV_SEC_FETCHING && c->staged[s])
            return UMADV_FETCH_WAIT;
        if (c->state[s] == UMADV_SEC_HOST) {
            add += c->p.trace->sections[s].size;
            restore |= c->staged[s];
        }
    }
    *add_p = add;
    if (add == 0)
        return UMADV_FETCH_SKIP;
    if (umadv__core_fits(c, add))
        return UMADV_FETCH_GO;
    if (c->outgoing > 0)
        return UMADV_FETCH_WAIT;
    /* staged data a step needs now is restored over the budget: a fetch
     * given up costs time, a restore given up would cost the data */
    if (restore && op->blocking && c->begun && op->need <= c->key)
        return UMADV_FETCH_GO;
    return UMADV_FETCH_SKIP;
}

int umadv__core_batch_joins(const umadv_core_t *c, const umadv_core_op_t *op, uint64_t need,
                            uint64_t add)
{
    return op->kind == UMADV_OP_FETCH && op->need == need && !op->fresh && add > 0 &&
           add <= c->batch_bytes && umadv__core_fits(c, add);
}

umadv_step_serve_t umadv__core_step_serves(const umadv_core_t *c, const umadv_core_op_t *op)
{
    uint64_t add;
    umadv_fetch_verdict_t verdict;

    if (op->kind != UMADV_OP_FETCH || !op->blocking || !c->bound[op->alloc])
        return UMADV_STEP_SERVE_NO;
    verdict = umadv__core_fetch_verdict(c, op, &add);
    if (verdict == UMADV_FETCH_SKIP && add == 0)
        return UMADV_STEP_SERVE_DROP;
    if (verdict == UMADV_FETCH_GO && op->fresh && !op->staged)
        return UMADV_STEP_SERVE_POPULATE;
    return UMADV_STEP_SERVE_NO;
}

void umadv__core_unadvise_done(umadv_core_t *c, const umadv_core_op_t *op)
{
    for (uint32_t i = 0; i < op->count; i++) {
        uint32_t s = umadv__core_section(c, op->alloc, op->first + i);
        if (c->unadvising[s] > 0)
            c->unadvising[s]--;
    }
}

/* ---- the LRU choice ----------------------------------------------------- */

typedef struct lru_pick {
    umadv_core_t *c;
    size_t        n;
    uint64_t      need, freed;
} lru_pick_t;

/* Members are the RESIDENT sections of bound allocations; the open
 * step's own (stamped) are skipped. Stops once enough is freed. */
static int lru_pick(void *arg, uint32_t s)
{
    lru_pick_t *p = arg;

    if (p->freed >= p->need)
        return 1;
    if (p->c->stamp[s] == p->c->stamp_now)
        return 0;
    p->c->victims[p->n++] = s;
    p->freed += p->c->p.trace->sections[s].size;
    return p->freed >= p->need;
}

umadv_status_t umadv__core_lru_victims(umadv_core_t *c, uint64_t need, size_t *n_p)
{
    lru_pick_t pick = {.c = c, .need = need};
    umadv_status_t status;

    *n_p = 0;
    if (!c->lru_on)
        return UMADV_ERR_STATE;
    /* at most every resident section: the LRU set's size */
    status = umadv__array_reserve((void **)&c->victims, &c->victims_cap, c->lru.n + 1,
                                  sizeof(*c->victims));
    if (status == UMADV_OK)
        status = umadv__core_lru_walk(&c->lru, lru_pick, &pick);
    *n_p = pick.n;
    return status;
}
