/*
 * The schedule's names and its release, the evictions never read back,
 * dead data and advice marked, the moves off the GPU indexed
 * (schedule.h).
 */
#include "schedule/schedule.h"

#include <stdlib.h>
#include <string.h>

#include "common/keyed.h"
#include "common/util.h"
#include "schedule/window.h"

const char *umadv__op_kind_name(umadv_op_kind_t kind)
{
    static const char *const names[] = {"fetch", "evict", "drop", "advise"};

    return (unsigned)kind < UMADV_ARRAY_SIZE(names) ? names[kind] : "?";
}

const char *umadv__advice_name(umadv_advice_t advice)
{
    static const char *const names[] = {"none", "read-mostly", "preferred-host",
                                        "preferred-device", "accessed-by"};

    return (unsigned)advice < UMADV_ARRAY_SIZE(names) ? names[advice] : "?";
}

void umadv__schedule_cleanup(umadv_schedule_t *schedule)
{
    free(schedule->setup);
    free(schedule->ops);
    free(schedule->step_ops);
    free(schedule->resident_at_start);
    memset(schedule, 0, sizeof(*schedule));
}

static int runs_overlap(const umadv_op_t *a, const umadv_op_t *b)
{
    return a->first < b->first + b->count && b->first < a->first + a->count;
}

/* Whether eviction @e of the ops @group of its allocation (their indices,
 * in issue order; @e at position @at) is never read back. */
static int unread(const umadv_schedule_t *sch, const uint32_t *group, size_t n, size_t at)
{
    const umadv_op_t *e = &sch->ops[group[at]];

    for (size_t q = 1; q < n; q++) {
        const umadv_op_t *o = &sch->ops[group[(at + q) % n]];

        if (o->kind == UMADV_OP_ADVISE || !runs_overlap(e, o))
            continue;
        return o->kind == UMADV_OP_DROP ||
               (o->kind == UMADV_OP_FETCH && (o->flags & UMADV_OP_FLAG_FRESH));
    }
    return 1;
}

/* The ops of each allocation, in issue order: allocation a's are
 * umadv__keyed_values(g, a). */
static void ops_by_alloc(void *arg, umadv_keyed_pass_t *pass)
{
    const umadv_schedule_t *sch = arg;

    for (size_t i = 0; i < sch->nops; i++)
        umadv__keyed_emit(pass, sch->ops[i].alloc, (uint32_t)i);
}

static umadv_status_t groups_make(const umadv_schedule_t *sch, umadv_keyed_t *g)
{
    uint32_t nallocs = 0;

    for (size_t i = 0; i < sch->nops; i++)
        nallocs = UMADV_MAX(nallocs, sch->ops[i].alloc + 1);
    return umadv__keyed_build(g, nallocs, ops_by_alloc, (void *)sch);
}

umadv_status_t umadv__schedule_evicted_unread(const umadv_schedule_t *sch, uint64_t *bytes_p)
{
    umadv_keyed_t g;
    uint64_t bytes = 0;

    if (groups_make(sch, &g) != UMADV_OK)
        return UMADV_ERR_NO_MEMORY;
    for (uint32_t a = 0; a < g.nkeys; a++) {
        const uint32_t *group = umadv__keyed_values(&g, a);
        size_t n = umadv__keyed_count(&g, a);

        for (size_t at = 0; at < n; at++)
            if (sch->ops[group[at]].kind == UMADV_OP_EVICT && unread(sch, group, n, at))
                bytes += sch->ops[group[at]].bytes;
    }
    umadv__keyed_cleanup(&g);
    *bytes_p = bytes;
    return UMADV_OK;
}

/* Whether eviction @at of @group is dead: each section of its run is next
 * touched, advice included, by a fresh fetch. Fetches of different sizes
 * split a run across several of them (VGG-16's gradients, refilled in
 * runs one section off the evicted ones), so the rule goes by section.
 * @fresh: scratch of the run's length. */
static int dead(const umadv_schedule_t *sch, const uint32_t *group, size_t n, size_t at,
                uint8_t *fresh)
{
    const umadv_op_t *e = &sch->ops[group[at]];
    uint32_t undecided = e->count;

    memset(fresh, 0, e->count);
    for (size_t q = 1; q < n && undecided > 0; q++) {
        const umadv_op_t *o = &sch->ops[group[(at + q) % n]];
        uint32_t lo = UMADV_MAX(o->first, e->first);
        uint32_t hi = UMADV_MIN(o->first + o->count, e->first + e->count);
        int refill = o->kind == UMADV_OP_FETCH && (o->flags & UMADV_OP_FLAG_FRESH);

        for (uint32_t s = lo; s < hi; s++) {
            if (fresh[s - e->first])
                continue;
            if (!refill)
                return 0;
            fresh[s - e->first] = 1;
            undecided--;
        }
    }
    return undecided == 0;
}

static void mark_advice_ops(const umadv_op_t *ops, size_t n, const umadv_trace_t *trace,
                            uint8_t *advised)
{
    for (size_t i = 0; i < n; i++) {
        for (uint32_t k = 0; ops[i].kind == UMADV_OP_ADVISE && k < ops[i].count; k++)
            advised[trace->allocs[ops[i].alloc].first_section + ops[i].first + k] = 1;
    }
}

void umadv__schedule_mark_advised(const umadv_schedule_t *sch, const umadv_trace_t *trace,
                                  uint8_t *advised)
{
    mark_advice_ops(sch->setup, sch->nsetup, trace, advised);
    mark_advice_ops(sch->ops, sch->nops, trace, advised);
}

umadv_status_t umadv__schedule_mark_dead(umadv_schedule_t *sch, const umadv_trace_t *trace)
{
    umadv_keyed_t g;
    uint32_t longest = 1;
    uint8_t *fresh;

    for (size_t i = 0; i < sch->nops; i++)
        if (sch->ops[i].kind == UMADV_OP_EVICT)
            longest = UMADV_MAX(longest, sch->ops[i].count);
    fresh = malloc(longest);
    if (fresh == NULL || groups_make(sch, &g) != UMADV_OK) {
        free(fresh);
        return UMADV_ERR_NO_MEMORY;
    }
    for (uint32_t a = 0; a < g.nkeys && a < trace->nallocs; a++) {
        const uint32_t *group = umadv__keyed_values(&g, a);
        size_t n = umadv__keyed_count(&g, a);

        /* a BORN allocation's last eviction carries its data to the next
         * replay, where another allocation reads it (window.h): never dead */
        if (!umadv__trace_alloc_stageable(trace, a) ||
            umadv__window_life(&trace->allocs[a], sch->first_step, sch->nsteps) ==
                UMADV_LIFE_BORN)
            continue;
        for (size_t at = 0; at < n; at++) {
            umadv_op_t *e = &sch->ops[group[at]];

            if (e->kind == UMADV_OP_EVICT && dead(sch, group, n, at, fresh))
                e->flags |= UMADV_OP_FLAG_DEAD;
        }
    }
    umadv__keyed_cleanup(&g);
    free(fresh);
    return UMADV_OK;
}

/* ---- the moves off the GPU, by section ------------------------------------ */

static int takes_off(const umadv_op_t *o)
{
    return o->kind == UMADV_OP_EVICT || o->kind == UMADV_OP_DROP;
}

typedef struct off_items {
    const umadv_schedule_t *sch;
    const umadv_trace_t    *trace;
} off_items_t;

/* Each section a move off of the schedule covers, with the op's issue
 * step, global (the trace's). */
static void off_moves(void *arg, umadv_keyed_pass_t *pass)
{
    const off_items_t *it = arg;

    for (size_t i = 0; i < it->sch->nops; i++) {
        const umadv_op_t *o = &it->sch->ops[i];
        const umadv_trace_alloc_t *al;

        if (!takes_off(o) || o->alloc >= it->trace->nallocs)
            continue;
        al = &it->trace->allocs[o->alloc];
        for (uint32_t k = o->first; k < o->first + o->count && k < al->nsections; k++)
            umadv__keyed_emit(pass, al->first_section + k, o->issue_step + it->sch->first_step);
    }
}

static void off_placed(umadv_schedule_off_t *off, const umadv_op_t *ops, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (ops[i].kind == UMADV_OP_ADVISE && ops[i].advice == UMADV_ADVICE_PREFERRED_HOST &&
            ops[i].alloc < off->nallocs)
            off->placed[ops[i].alloc] = 1;
    }
}

umadv_status_t umadv__schedule_off_init(umadv_schedule_off_t *off,
                                        const umadv_schedule_t *sch,
                                        const umadv_trace_t *trace)
{
    off_items_t items = {sch, trace};

    memset(off, 0, sizeof(*off));
    off->nallocs = trace->nallocs;
    off->placed = calloc((size_t)trace->nallocs + 1, 1);
    if (off->placed == NULL ||
        umadv__keyed_build(&off->from, trace->nsections, off_moves, &items) != UMADV_OK) {
        umadv__schedule_off_cleanup(off);
        return UMADV_ERR_NO_MEMORY;
    }
    off_placed(off, sch->setup, sch->nsetup);
    off_placed(off, sch->ops, sch->nops);
    return UMADV_OK;
}

void umadv__schedule_off_cleanup(umadv_schedule_off_t *off)
{
    umadv__keyed_cleanup(&off->from);
    free(off->placed);
    memset(off, 0, sizeof(*off));
}

/* Whether @x lies in [@lo, @hi) of a replay that wraps: from @lo to the
 * iteration's end and on from its start where @hi comes before @lo. */
static int cyclic_within(uint32_t x, uint32_t lo, uint32_t hi)
{
    return lo <= hi ? x >= lo && x < hi : x >= lo || x < hi;
}

int umadv__schedule_off_across(const umadv_schedule_off_t *off, uint32_t section,
                               uint32_t alloc, uint32_t last, uint32_t step)
{
    const uint32_t *from;

    if (section >= off->from.nkeys || alloc >= off->nallocs || off->placed[alloc])
        return 1;
    from = umadv__keyed_values(&off->from, section);
    for (uint32_t i = 0; i < umadv__keyed_count(&off->from, section); i++) {
        if (cyclic_within(from[i], last, step))
            return 1;
    }
    return 0;
}
