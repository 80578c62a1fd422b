/*
 * The schedule's names and its release (schedule.h).
 */
#include "schedule/schedule.h"

#include <stdlib.h>
#include <string.h>

#include "common/util.h"

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

umadv_status_t umadv__schedule_evicted_unread(const umadv_schedule_t *sch, uint64_t *bytes_p)
{
    uint32_t nallocs = 0, *start, *index;
    uint64_t bytes = 0;

    for (size_t i = 0; i < sch->nops; i++)
        nallocs = UMADV_MAX(nallocs, sch->ops[i].alloc + 1);
    start = calloc((size_t)nallocs + 2, sizeof(*start));
    index = malloc((sch->nops ? sch->nops : 1) * sizeof(*index));
    if (start == NULL || index == NULL) {
        free(start);
        free(index);
        return UMADV_ERR_NO_MEMORY;
    }
    /* the ops of each allocation, in issue order: a counting sort */
    for (size_t i = 0; i < sch->nops; i++)
        start[sch->ops[i].alloc + 2]++;
    for (uint32_t a = 0; a < nallocs; a++)
        start[a + 2] += start[a + 1];
    for (size_t i = 0; i < sch->nops; i++)
        index[start[sch->ops[i].alloc + 1]++] = (uint32_t)i;
    for (uint32_t a = 0; a < nallocs; a++) {
        const uint32_t *group = index + start[a];
        size_t n = start[a + 1] - start[a];

        for (size_t at = 0; at < n; at++)
            if (sch->ops[group[at]].kind == UMADV_OP_EVICT && unread(sch, group, n, at))
                bytes += sch->ops[group[at]].bytes;
    }
    free(start);
    free(index);
    *bytes_p = bytes;
    return UMADV_OK;
}
