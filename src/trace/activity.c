/*
 * The measured activity of a trace (activity.h): names, the builder, the
 * checks and order of finalize, and what faults cost each kernel.
 */
#include "trace/activity.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"

static const char *const kind_names[UMADV_EVENT_KIND_COUNT] = {
    [UMADV_EVENT_KERNEL] = "kernel", [UMADV_EVENT_FAULT] = "fault",
    [UMADV_EVENT_HTOD] = "htod",     [UMADV_EVENT_DTOH] = "dtoh",
    [UMADV_EVENT_THRASH] = "thrash",
};

static const char *const cause_names[UMADV_CAUSE_COUNT] = {
    [UMADV_CAUSE_UNKNOWN] = "unknown",         [UMADV_CAUSE_USER] = "user",
    [UMADV_CAUSE_FAULT] = "fault",             [UMADV_CAUSE_SPECULATIVE] = "speculative",
    [UMADV_CAUSE_EVICTION] = "eviction",       [UMADV_CAUSE_ACCESS_COUNTERS] = "access_counters",
};

const char *umadv__event_kind_name(umadv_event_kind_t kind)
{
    return (unsigned)kind < UMADV_EVENT_KIND_COUNT ? kind_names[kind] : "?";
}

int umadv__event_kind_parse(const char *name, umadv_event_kind_t *kind_p)
{
    int i = umadv__name_index(kind_names, UMADV_EVENT_KIND_COUNT, name);

    if (i < 0)
        return -1;
    *kind_p = (umadv_event_kind_t)i;
    return 0;
}

const char *umadv__migration_cause_name(umadv_migration_cause_t cause)
{
    return (unsigned)cause < UMADV_CAUSE_COUNT ? cause_names[cause] : "?";
}

int umadv__migration_cause_parse(const char *name, umadv_migration_cause_t *cause_p)
{
    int i = umadv__name_index(cause_names, UMADV_CAUSE_COUNT, name);

    if (i < 0)
        return -1;
    *cause_p = (umadv_migration_cause_t)i;
    return 0;
}

umadv_status_t umadv__activity_add_event(umadv_trace_activity_t *act,
                                         const umadv_trace_event_t *event)
{
    umadv_status_t status;

    if (act->nevents == UINT32_MAX - 2)
        return UMADV_ERR_INVALID_PARAM;
    status = umadv__array_reserve((void **)&act->events, &act->events_cap, act->nevents + 1,
                                  sizeof(*act->events));
    if (status == UMADV_OK)
        act->events[act->nevents++] = *event;
    return status;
}

umadv_status_t umadv__activity_add_name(umadv_trace_activity_t *act, const char *name,
                                        uint32_t *index_p)
{
    umadv_status_t status;
    char *copy;

    if (act->nnames == UINT32_MAX - 2)
        return UMADV_ERR_INVALID_PARAM;
    status = umadv__array_reserve((void **)&act->names, &act->names_cap, act->nnames + 1,
                                  sizeof(*act->names));
    if (status == UMADV_OK)
        status = umadv__strdup(name, &copy);
    if (status != UMADV_OK)
        return status;
    if (index_p != NULL)
        *index_p = act->nnames;
    act->names[act->nnames++] = copy;
    return UMADV_OK;
}

void umadv__activity_cleanup(umadv_trace_activity_t *act)
{
    for (uint32_t i = 0; i < act->nnames; i++)
        free(act->names[i]);
    free(act->names);
    free(act->events);
    memset(act, 0, sizeof(*act));
}

/* ---- finalize ---- */

static int cmp_u64(uint64_t a, uint64_t b)
{
    return (a > b) - (a < b);
}

static int event_compare(const void *a, const void *b)
{
    const umadv_trace_event_t *x = a, *y = b;
    int c;

    if ((c = cmp_u64(x->start_ns, y->start_ns)) != 0 || (c = cmp_u64(x->kind, y->kind)) != 0 ||
        (c = cmp_u64(x->address, y->address)) != 0 || (c = cmp_u64(x->value, y->value)) != 0 ||
        (c = cmp_u64(x->dur_ns, y->dur_ns)) != 0 || (c = cmp_u64(x->step, y->step)) != 0 ||
        (c = cmp_u64(x->name, y->name)) != 0)
        return c;
    return cmp_u64(x->cause, y->cause);
}

/* The reason event @i is malformed, or NULL. */
static const char *event_problem(const umadv_trace_activity_t *act, uint32_t nsteps,
                                 const umadv_trace_event_t *e)
{
    int kernel = e->kind == UMADV_EVENT_KERNEL;

    if (e->kind >= UMADV_EVENT_KIND_COUNT)
        return "has no known kind";
    if (e->cause >= UMADV_CAUSE_COUNT)
        return "has no known cause";
    if (e->start_ns > UMADV_ACTIVITY_MAX_NS || e->dur_ns > UMADV_ACTIVITY_MAX_NS)
        return "starts or lasts past the format's hour";
    if (kernel && e->step != UINT32_MAX && e->step >= nsteps)
        return "names a step the trace does not have";
    if (kernel && e->name != UMADV_EVENT_NO_NAME && e->name >= act->nnames)
        return "names a kernel name the trace does not have";
    if (!kernel && (e->step != UINT32_MAX || e->name != UMADV_EVENT_NO_NAME))
        return "has a step or a name but is no kernel";
    return NULL;
}

umadv_status_t umadv__activity_finalize(umadv_trace_activity_t *act, uint32_t nsteps,
                                        char *why, size_t why_len)
{
    for (uint32_t i = 0; i < act->nevents; i++) {
        const char *problem = event_problem(act, nsteps, &act->events[i]);
        if (problem != NULL) {
            snprintf(why, why_len, "event %u (%s) %s", i,
                     umadv__event_kind_name((umadv_event_kind_t)act->events[i].kind), problem);
            return UMADV_ERR_CORRUPT;
        }
    }
    if (act->nevents > 1)
        qsort(act->events, act->nevents, sizeof(*act->events), event_compare);
    return UMADV_OK;
}

/* ---- fault costs ---- */

typedef struct span {
    uint64_t start, end;
} span_t;

/* The union of the fault events' intervals as disjoint spans in start
 * order (the events are), into @spans; how many. */
static size_t fault_union(const umadv_trace_activity_t *act, span_t *spans)
{
    size_t n = 0;

    for (uint32_t i = 0; i < act->nevents; i++) {
        const umadv_trace_event_t *e = &act->events[i];
        if (e->kind != UMADV_EVENT_FAULT)
            continue;
        if (n > 0 && e->start_ns <= spans[n - 1].end)
            spans[n - 1].end = UMADV_MAX(spans[n - 1].end, e->start_ns + e->dur_ns);
        else
            spans[n++] = (span_t){e->start_ns, e->start_ns + e->dur_ns};
    }
    return n;
}

/* First span whose end is past @t. */
static size_t span_after(const span_t *spans, size_t n, uint64_t t)
{
    size_t lo = 0, hi = n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (spans[mid].end <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static uint64_t covered(const span_t *spans, size_t n, uint64_t start, uint64_t end)
{
    uint64_t sum = 0;

    for (size_t i = span_after(spans, n, start); i < n && spans[i].start < end; i++)
        sum += UMADV_MIN(end, spans[i].end) - UMADV_MAX(start, spans[i].start);
    return sum;
}

/* Fault groups of fault events overlapping (@start, @end): those that
 * start before its end, back to where none can still run (@max_dur). */
static uint64_t groups_in(const umadv_trace_activity_t *act, const uint32_t *faults,
                          size_t nfaults, uint64_t max_dur, uint64_t start, uint64_t end)
{
    size_t lo = 0, hi = nfaults;
    uint64_t sum = 0;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (act->events[faults[mid]].start_ns < end)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (size_t i = lo; i-- > 0;) {
        const umadv_trace_event_t *f = &act->events[faults[i]];
        if (f->start_ns + max_dur <= start)
            break;
        if (f->start_ns + f->dur_ns > start)
            sum += f->value;
    }
    return sum;
}

umadv_status_t umadv__activity_fault_costs(const umadv_trace_activity_t *act,
                                           uint64_t *faults, uint64_t *stall_ns)
{
    size_t n = act->nevents ? act->nevents : 1, nspans, nfaults = 0;
    span_t *spans = malloc(n * sizeof(*spans));
    uint32_t *fidx = malloc(n * sizeof(*fidx));
    uint64_t max_dur = 0;

    if (spans == NULL || fidx == NULL) {
        free(spans);
        free(fidx);
        return UMADV_ERR_NO_MEMORY;
    }
    nspans = fault_union(act, spans);
    for (uint32_t i = 0; i < act->nevents; i++) {
        if (act->events[i].kind == UMADV_EVENT_FAULT) {
            fidx[nfaults++] = i;
            max_dur = UMADV_MAX(max_dur, act->events[i].dur_ns);
        }
    }
    for (uint32_t i = 0; i < act->nevents; i++) {
        const umadv_trace_event_t *k = &act->events[i];
        int kernel = k->kind == UMADV_EVENT_KERNEL;
        uint64_t end = k->start_ns + k->dur_ns;
        faults[i] = kernel ? groups_in(act, fidx, nfaults, max_dur, k->start_ns, end) : 0;
        stall_ns[i] = kernel ? covered(spans, nspans, k->start_ns, end) : 0;
    }
    free(spans);
    free(fidx);
    return UMADV_OK;
}
