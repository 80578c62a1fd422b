/*
 * The schedule's names and its release, the evictions never read back,
 * dead data and advice marked, the moves off the GPU indexed
 * (schedule.h).
 */
#include "schedule/schedule.h"

#include <stdlib.h>
#include <string.h>

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

/* The ops of each allocation, in issue order (a counting sort): group a
 * is index[start[a] .. start[a + 1]). NULL pair on no memory. */
typedef struct op_groups {
    uint32_t  nallocs;
    uint32_t *start, *index;
} op_groups_t;

static umadv_status_t groups_make(const umadv_schedule_t *sch, op_groups_t *g)
{
    g->nallocs = 0;
    for (size_t i = 0; i < sch->nops; i++)
        g->nallocs = UMADV_MAX(g->nallocs, sch->ops[i].alloc + 1);
    g->start = calloc((size_t)g->nallocs + 2, sizeof(*g->start));
    g->index = malloc((sch->nops ? sch->nops : 1) * sizeof(*g->index));
    if (g->start == NULL || g->index == NULL) {
        free(g->start);
        free(g->index);
        return UMADV_ERR_NO_MEMORY;
    }
    for (size_t i = 0; i < sch->nops; i++)
        g->start[sch->ops[i].alloc + 2]++;
    for (uint32_t a = 0; a < g->nallocs; a++)
        g->start[a + 2] += g->start[a + 1];
    for (size_t i = 0; i < sch->nops; i++)
        g->index[g->start[sch->ops[i].alloc + 1]++] = (uint32_t)i;
    return UMADV_OK;
}

static void groups_free(op_groups_t *g)
{
    free(g->start);
    free(g->index);
}

umadv_status_t umadv__schedule_evicted_unread(const umadv_schedule_t *sch, uint64_t *bytes_p)
{
    op_groups_t g;
    uint64_t bytes = 0;

    if (groups_make(sch, &g) != UMADV_OK)
        return UMADV_ERR_NO_MEMORY;
    for (uint32_t a = 0; a < g.nallocs; a++) {
        const uint32_t *group = g.index + g.start[a];
        size_t n = g.start[a + 1] - g.start[a];

        for (size_t at = 0; at < n; at++)
            if (sch->ops[group[at]].kind == UMADV_OP_EVICT && unread(sch, group, n, at))
                bytes += sch->ops[group[at]].bytes;
    }
    groups_free(&g);
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
    op_groups_t g;
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
    for (uint32_t a = 0; a < g.nallocs && a < trace->nallocs; a++) {
        const uint32_t *group = g.index + g.start[a];
        size_t n = g.start[a + 1] - g.start[a];

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
    groups_free(&g);
    free(fresh);
    return UMADV_OK;
}

/* ---- the moves off the GPU, by section ------------------------------------ */

static int takes_off(const umadv_op_t *o)
{
    return o->kind == UMADV_OP_EVICT || o->kind == UMADV_OP_DROP;
}

/* Calls @fn on each section a move off of @sch covers, with the op. */
static void off_foreach(const umadv_schedule_t *sch, const umadv_trace_t *trace,
                        void (*fn)(umadv_schedule_off_t *, uint32_t, const umadv_op_t *),
                        umadv_schedule_off_t *off)
{
    for (size_t i = 0; i < sch->nops; i++) {
        const umadv_op_t *o = &sch->ops[i];
        const umadv_trace_alloc_t *al;

        if (!takes_off(o) || o->alloc >= trace->nallocs)
            continue;
        al = &trace->allocs[o->alloc];
        for (uint32_t k = o->first; k < o->first + o->count && k < al->nsections; k++)
            fn(off, al->first_section + k, o);
    }
}

static void off_count(umadv_schedule_off_t *off, uint32_t section, const umadv_op_t *o)
{
    (void)o;
    off->off[section + 1]++;
}

static void off_fill(umadv_schedule_off_t *off, uint32_t section, const umadv_op_t *o)
{
    off->from[off->off[section]++] = o->issue_step; /* off[]: each section's next slot */
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
    size_t total;

    memset(off, 0, sizeof(*off));
    off->nsections = trace->nsections;
    off->nallocs = trace->nallocs;
    off->off = calloc((size_t)trace->nsections + 2, sizeof(*off->off));
    off->placed = calloc((size_t)trace->nallocs + 1, 1);
    if (off->off == NULL || off->placed == NULL)
        goto no_memory;
    off_foreach(sch, trace, off_count, off);
    for (uint32_t s = 0; s < trace->nsections; s++)
        off->off[s + 1] += off->off[s];
    total = off->off[trace->nsections];
    off->from = malloc((total ? total : 1) * sizeof(*off->from));
    if (off->from == NULL)
        goto no_memory;
    off_foreach(sch, trace, off_fill, off);
    /* off_fill advanced each offset to the next section's: shift back */
    memmove(off->off + 1, off->off, (size_t)trace->nsections * sizeof(*off->off));
    off->off[0] = 0;
    /* to global steps, the trace's */
    for (size_t i = 0; i < total; i++)
        off->from[i] += sch->first_step;
    off_placed(off, sch->setup, sch->nsetup);
    off_placed(off, sch->ops, sch->nops);
    return UMADV_OK;

no_memory:
    umadv__schedule_off_cleanup(off);
    return UMADV_ERR_NO_MEMORY;
}

void umadv__schedule_off_cleanup(umadv_schedule_off_t *off)
{
    free(off->off);
    free(off->from);
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
    if (section >= off->nsections || alloc >= off->nallocs || off->placed[alloc])
        return 1;
    for (uint32_t i = off->off[section]; i < off->off[section + 1]; i++) {
        if (cyclic_within(off->from[i], last, step))
            return 1;
    }
    return 0;
}
