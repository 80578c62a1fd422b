/*
 * What each policy does at a step's beginning and end (sim.c's opening
 * comment describes them). demand does nothing here: its steps fault.
 */
#include "common/util.h"
#include "sim/sim_int.h"

static void plan_begin(sim_engine_t *e, uint32_t j, double now)
{
    const umadv_schedule_t *s = e->params->schedule;
    uint64_t n = e->w->n;

    for (uint32_t i = s->step_ops[j]; i < s->step_ops[j + 1]; i++) {
        const umadv_op_t *op = &s->ops[i];
        uint64_t replay = e->replay + ((op->flags & UMADV_OP_FLAG_NEXT_ITERATION) ? 1 : 0);

        if (op->kind == UMADV_OP_FETCH)
            umadv__sim_enqueue_fetch(e, op->alloc, op->first, op->count,
                                     replay * n + op->need_step, now);
        else if (op->kind == UMADV_OP_ADVISE && op->advice != UMADV_ADVICE_NONE)
            umadv__sim_advise(e, op);
    }
}

static void plan_end(sim_engine_t *e, uint32_t j, double now)
{
    const umadv_schedule_t *s = e->params->schedule;

    for (uint32_t i = s->step_ops[j]; i < s->step_ops[j + 1]; i++) {
        const umadv_op_t *op = &s->ops[i];

        if (op->kind == UMADV_OP_ADVISE && op->advice == UMADV_ADVICE_NONE)
            umadv__sim_advise(e, op);
        else if (op->kind == UMADV_OP_EVICT)
            umadv__sim_enqueue_evict(e, op->alloc, op->first, op->count, now);
        else if (op->kind == UMADV_OP_DROP)
            umadv__sim_drop(e, op->alloc, op->first, op->count, now);
    }
}

typedef struct fetch_arg {
    uint64_t need;
    double   now;
} fetch_arg_t;

static void evict_run(sim_engine_t *e, uint32_t alloc, uint32_t first, uint32_t n, void *arg)
{
    umadv__sim_enqueue_evict(e, alloc, first, n, *(const double *)arg);
}

static void fetch_run(sim_engine_t *e, uint32_t alloc, uint32_t first, uint32_t n, void *arg)
{
    const fetch_arg_t *fa = arg;

    umadv__sim_enqueue_fetch(e, alloc, first, n, fa->need, fa->now);
}

/* The step's sections neither on the GPU nor coming, into e->scratch. */
static umadv_status_t collect_missing(sim_engine_t *e, size_t count, size_t *nmiss_p,
                                      uint64_t *bytes_p)
{
    umadv_status_t status = umadv__array_reserve((void **)&e->scratch, &e->scratch_cap,
                                                 count ? count : 1, sizeof(*e->scratch));
    size_t nmiss = 0;
    uint64_t bytes = 0;

    if (status != UMADV_OK)
        return status;
    for (size_t i = 0; i < count; i++) {
        uint32_t x = e->touch[i];
        if (e->state[x] == UMADV_SIM_RESIDENT || e->state[x] == UMADV_SIM_FETCHING ||
            e->pending[x] != 0)
            continue;
        e->scratch[nmiss++] = x;
        bytes += umadv__sim_section_size(e, x);
    }
    *nmiss_p = nmiss;
    *bytes_p = bytes;
    return UMADV_OK;
}

/* Evict least recently used sections (eviction lane) until the step's
 * missing data fits once the evictions in flight complete, then fetch it
 * all; the step waits for it. On a host allocation failure it does
 * nothing: the step faults instead. */
static void prefetch_all_begin(sim_engine_t *e, uint32_t j, double now, size_t count)
{
    fetch_arg_t fa = {.need = (uint64_t)e->replay * e->w->n + j, .now = now};
    size_t nmiss, nvict = 0;
    uint64_t need, freed = e->evicting_bytes;
    uint32_t v = SIM_NIL;

    if (collect_missing(e, count, &nmiss, &need) != UMADV_OK)
        return;
    while (e->used + need > e->budget + freed) {
        v = umadv__sim_lru_victim(e, v);
        if (v == SIM_NIL ||
            umadv__array_reserve((void **)&e->victims, &e->victims_cap, nvict + 1,
                                 sizeof(*e->victims)) != UMADV_OK)
            break;
        e->victims[nvict++] = v;
        freed += umadv__sim_section_size(e, v);
    }
    umadv__sim_for_runs(e, e->victims, nvict, evict_run, &now);
    umadv__sim_for_runs(e, e->scratch, nmiss, fetch_run, &fa);
}

void umadv__sim_policy_begin(sim_engine_t *e, uint32_t j, double now, size_t count)
{
    e->f_defer = 1;
    switch (e->params->policy) {
    case UMADV_POLICY_PLAN:
        plan_begin(e, j, now);
        break;
    case UMADV_POLICY_PREFETCH_ALL:
        prefetch_all_begin(e, j, now, count);
        break;
    default:
        break;
    }
    e->f_defer = 0;
    umadv__sim_try_start_fetch(e, now);
}

void umadv__sim_policy_end(sim_engine_t *e, uint32_t j, double now)
{
    if (e->params->policy == UMADV_POLICY_PLAN)
        plan_end(e, j, now);
}
