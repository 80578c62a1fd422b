/*
 * Attribution of kernel and fault records to steps and allocations, and
 * the merge of what was found into the recorded trace.
 */
#include "profiler/attrib.h"

#include <stdlib.h>
#include <string.h>

#include "common/util.h"

/* A fault serviced this long before the first kernel on its device still
 * belongs to it: the two timestamps come from different clocks' views. */
#define ATTRIB_EARLY_SLACK_NS UINT64_C(1000000)

static int launch_compare(const void *a, const void *b)
{
    const umadv_prof_launch_t *x = a, *y = b;

    return (x->correlation_id > y->correlation_id) - (x->correlation_id < y->correlation_id);
}

static int interval_compare(const void *a, const void *b)
{
    const umadv_prof_interval_t *x = a, *y = b;

    if (x->start != y->start)
        return (x->start > y->start) - (x->start < y->start);
    return (x->step > y->step) - (x->step < y->step);
}

static const umadv_prof_launch_t *launch_find(const umadv_prof_launch_t *launches, size_t n,
                                              uint32_t correlation_id)
{
    umadv_prof_launch_t key = {correlation_id, 0};

    return bsearch(&key, launches, n, sizeof(*launches), launch_compare);
}

/* @spans[s]: the span of step @s's kernels (one kernel, or a graph's). */
static umadv_status_t interval_spans(const umadv_prof_interval_t *iv, size_t n,
                                     uint32_t nsteps, uint64_t *spans)
{
    uint64_t *lo = calloc(nsteps ? nsteps : 1, sizeof(*lo));

    if (lo == NULL)
        return UMADV_ERR_NO_MEMORY;
    memset(spans, 0, nsteps * sizeof(*spans));
    for (size_t i = 0; i < n; i++) {
        uint32_t s = iv[i].step;
        uint64_t hi = lo[s] + spans[s];
        if (lo[s] == 0 || iv[i].start < lo[s])
            lo[s] = iv[i].start;
        hi = UMADV_MAX(hi, iv[i].end);
        spans[s] = hi - lo[s];
    }
    free(lo);
    return UMADV_OK;
}

/* Kernel steps take the span of their kernels. */
static void kernel_durations(umadv_trace_t *trace, const umadv_prof_interval_t *iv, size_t n)
{
    uint64_t *spans = calloc(trace->nsteps ? trace->nsteps : 1, sizeof(*spans));

    if (spans == NULL || interval_spans(iv, n, trace->nsteps, spans) != UMADV_OK)
        goto out; /* durations stay as measured by the recorder */
    for (uint32_t s = 0; s < trace->nsteps; s++) {
        if (trace->steps[s].kind == UMADV_STEP_KERNEL && spans[s] > 0)
            trace->steps[s].duration_ns = spans[s];
    }
out:
    free(spans);
}

/* Intervals of the kernels whose launches (sorted by correlation id)
 * went to a step below @nsteps; unsorted. */
static size_t kernel_intervals(const umadv_prof_launch_t *launches, size_t nlaunches,
                               const umadv_prof_kernel_t *kernels, size_t nkernels,
                               uint32_t nsteps, umadv_prof_interval_t *iv,
                               umadv_prof_attrib_stats_t *stats)
{
    size_t n = 0;

    for (size_t i = 0; i < nkernels; i++) {
        const umadv_prof_launch_t *l = launch_find(launches, nlaunches,
                                                   kernels[i].correlation_id);
        stats->kernels++;
        if (l == NULL || l->step >= nsteps || kernels[i].end < kernels[i].start) {
            stats->kernels_unknown++;
            continue;
        }
        iv[n].start  = kernels[i].start;
        iv[n].end    = kernels[i].end;
        iv[n].step   = l->step;
        iv[n].device = kernels[i].device;
        n++;
    }
    return n;
}

umadv_status_t umadv__prof_kernel_spans(umadv_prof_launch_t *launches, size_t nlaunches,
                                        const umadv_prof_kernel_t *kernels, size_t nkernels,
                                        uint32_t nsteps, uint64_t *spans)
{
    umadv_prof_attrib_stats_t stats;
    umadv_prof_interval_t *iv;
    umadv_status_t status;
    size_t n;

    iv = malloc((nkernels ? nkernels : 1) * sizeof(*iv));
    if (iv == NULL)
        return UMADV_ERR_NO_MEMORY;
    memset(&stats, 0, sizeof(stats));
    if (nlaunches > 1) /* launches may be NULL when empty: qsort's pointer must not be */
        qsort(launches, nlaunches, sizeof(*launches), launch_compare);
    n = kernel_intervals(launches, nlaunches, kernels, nkernels, nsteps, iv, &stats);
    status = interval_spans(iv, n, nsteps, spans);
    free(iv);
    return status;
}

static int kernel_start_compare(const void *a, const void *b)
{
    const umadv_prof_kernel_t *x = a, *y = b;

    return (x->start > y->start) - (x->start < y->start);
}

umadv_status_t umadv__prof_kernel_busy(const umadv_prof_kernel_t *kernels, size_t nkernels,
                                       uint64_t *span_ns, uint64_t *busy_ns)
{
    umadv_prof_kernel_t *k;
    uint64_t busy = 0, first = UINT64_MAX, end = 0;

    *span_ns = *busy_ns = 0;
    if (nkernels == 0)
        return UMADV_OK;
    k = malloc(nkernels * sizeof(*k));
    if (k == NULL)
        return UMADV_ERR_NO_MEMORY;
    memcpy(k, kernels, nkernels * sizeof(*k));
    qsort(k, nkernels, sizeof(*k), kernel_start_compare);
    /* the union of the intervals: kernels on several streams overlap;
     * a record that ends before it starts is left out, as in attribution */
    for (size_t i = 0; i < nkernels; i++) {
        uint64_t from = UMADV_MAX(k[i].start, end);

        if (k[i].end < k[i].start)
            continue;
        first = UMADV_MIN(first, k[i].start);
        if (k[i].end > from)
            busy += k[i].end - from;
        end = UMADV_MAX(end, k[i].end);
    }
    *span_ns = end > first ? end - first : 0;
    *busy_ns = busy;
    free(k);
    return UMADV_OK;
}

umadv_status_t umadv__prof_attrib_kernels(umadv_trace_t *trace, umadv_prof_launch_t *launches,
                                          size_t nlaunches, const umadv_prof_kernel_t *kernels,
                                          size_t nkernels, umadv_prof_interval_t **intervals_p,
                                          size_t *nintervals_p,
                                          umadv_prof_attrib_stats_t *stats)
{
    umadv_prof_interval_t *iv;
    size_t n;

    iv = malloc((nkernels ? nkernels : 1) * sizeof(*iv));
    if (iv == NULL)
        return UMADV_ERR_NO_MEMORY;
    if (nlaunches > 1) /* launches may be NULL when empty: qsort's pointer must not be */
        qsort(launches, nlaunches, sizeof(*launches), launch_compare);
    n = kernel_intervals(launches, nlaunches, kernels, nkernels, trace->nsteps, iv, stats);
    qsort(iv, n, sizeof(*iv), interval_compare);
    kernel_durations(trace, iv, n);
    *intervals_p  = iv;
    *nintervals_p = n;
    return UMADV_OK;
}

/* First index whose start is > @time. */
static size_t upper_bound(const umadv_prof_interval_t *iv, size_t n, uint64_t time)
{
    size_t lo = 0, hi = n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (iv[mid].start <= time)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

uint32_t umadv__prof_attrib_step(const umadv_prof_interval_t *iv, size_t n,
                                 uint64_t max_duration, uint64_t time, uint32_t device)
{
    size_t first_after = upper_bound(iv, n, time);
    uint32_t before = UMADV_STEP_NONE;

    /* Kernels started at or before @time, latest first: one still running
     * wins; else the last one to have run on the device. */
    for (size_t i = first_after; i-- > 0;) {
        if (iv[i].device != device)
            continue;
        if (iv[i].end >= time)
            return iv[i].step;
        if (before == UMADV_STEP_NONE)
            before = iv[i].step;
        if (time - iv[i].start > max_duration)
            break; /* no earlier kernel can still be running */
    }
    if (before != UMADV_STEP_NONE)
        return before;
    for (size_t i = first_after; i < n; i++) {
        if (iv[i].start - time > ATTRIB_EARLY_SLACK_NS)
            break;
        if (iv[i].device == device)
            return iv[i].step;
    }
    return UMADV_STEP_NONE;
}

/* ---- addresses to allocations ----------------------------------------- */

static int alloc_ref_compare(const void *a, const void *b)
{
    const umadv_prof_alloc_ref_t *x = a, *y = b;

    if (x->base != y->base)
        return (x->base > y->base) - (x->base < y->base);
    return (x->id > y->id) - (x->id < y->id);
}

umadv_status_t umadv__prof_alloc_order(const umadv_trace_t *trace,
                                       umadv_prof_alloc_ref_t **refs_p, uint64_t *max_size_p)
{
    umadv_prof_alloc_ref_t *refs;
    uint64_t max_size = 0;

    refs = malloc((trace->nallocs ? trace->nallocs : 1) * sizeof(*refs));
    if (refs == NULL)
        return UMADV_ERR_NO_MEMORY;
    for (uint32_t i = 0; i < trace->nallocs; i++) {
        refs[i].base = trace->allocs[i].base;
        refs[i].id   = i;
        max_size = UMADV_MAX(max_size, trace->allocs[i].size);
    }
    qsort(refs, trace->nallocs, sizeof(*refs), alloc_ref_compare);
    *refs_p     = refs;
    *max_size_p = max_size;
    return UMADV_OK;
}

static int alloc_alive(const umadv_trace_alloc_t *a, uint32_t step)
{
    return (a->alloc_step == UMADV_STEP_NONE || a->alloc_step <= step) &&
           (a->free_step == UMADV_STEP_NONE || step <= a->free_step);
}

uint32_t umadv__prof_alloc_at(const umadv_trace_t *trace, const umadv_prof_alloc_ref_t *refs,
                              uint64_t max_size, uint64_t address, uint32_t step)
{
    size_t lo = 0, hi = trace->nallocs;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (refs[mid].base <= address)
            lo = mid + 1;
        else
            hi = mid;
    }
    /* Allocations starting at or below the address, nearest first; none
     * starting more than the largest size below can hold it. */
    for (size_t i = lo; i-- > 0;) {
        const umadv_trace_alloc_t *a = &trace->allocs[refs[i].id];
        if (address - a->base >= max_size)
            break;
        if (address - a->base < a->size && alloc_alive(a, step))
            return refs[i].id;
    }
    return UINT32_MAX;
}

/* The longest of @n intervals: how far back a fault's search looks. */
static uint64_t longest_interval(const umadv_prof_interval_t *iv, size_t n)
{
    uint64_t longest = 0;

    for (size_t i = 0; i < n; i++)
        longest = UMADV_MAX(longest, iv[i].end - iv[i].start);
    return longest;
}

static uint32_t fault_step(const umadv_prof_interval_t *iv, size_t n, uint64_t max_duration,
                           const umadv_prof_fault_t *f)
{
    return umadv__prof_attrib_step(iv, n, max_duration, f->start, f->device);
}

umadv_status_t umadv__prof_attrib_faults(const umadv_trace_t *trace,
                                         const umadv_prof_interval_t *intervals, size_t n,
                                         const umadv_prof_fault_t *faults, size_t nfaults,
                                         umadv_prof_access_t **acc_p, size_t *nacc_p,
                                         size_t *cap_p, umadv_prof_attrib_stats_t *stats)
{
    uint64_t max_duration = longest_interval(intervals, n), max_size;
    umadv_prof_alloc_ref_t *refs;
    umadv_status_t status;

    status = umadv__prof_alloc_order(trace, &refs, &max_size);
    if (status != UMADV_OK)
        return status;
    for (size_t i = 0; i < nfaults && status == UMADV_OK; i++) {
        const umadv_prof_fault_t *f = &faults[i];
        uint32_t step = fault_step(intervals, n, max_duration, f), alloc;

        stats->faults++;
        stats->fault_groups += f->groups;
        if (step == UMADV_STEP_NONE) {
            stats->faults_no_kernel++;
            continue;
        }
        alloc = umadv__prof_alloc_at(trace, refs, max_size, f->address, step);
        if (alloc == UINT32_MAX) {
            stats->faults_no_alloc++;
            continue;
        }
        status = umadv__array_reserve((void **)acc_p, cap_p, *nacc_p + 1, sizeof(**acc_p));
        if (status != UMADV_OK)
            break;
        (*acc_p)[(*nacc_p)++] = (umadv_prof_access_t){
            .step = step, .alloc = alloc, .offset = f->address - trace->allocs[alloc].base,
            .size = f->bytes ? f->bytes : 1, .mode = f->mode ? f->mode : UMADV_ACCESS_RW,
            .faults = f->groups ? f->groups : 1};
        stats->faults_attributed++;
    }
    free(refs);
    return status;
}

/* The allocations alive at @step (any, UMADV_STEP_NONE) that [@lo, @hi)
 * meets, to @fn: those starting below @hi, down to the largest size
 * below @lo. */
static void arrivals_in(const umadv_trace_t *trace, const umadv_prof_alloc_ref_t *refs,
                        uint64_t max_size, uint64_t lo, uint64_t hi, uint32_t step,
                        umadv_prof_arrival_fn fn, void *arg)
{
    size_t first = 0, last = trace->nallocs;

    while (first < last) {
        size_t mid = first + (last - first) / 2;

        if (refs[mid].base < hi)
            first = mid + 1;
        else
            last = mid;
    }
    for (size_t i = first; i-- > 0;) {
        const umadv_trace_alloc_t *a = &trace->allocs[refs[i].id];

        if (a->base + max_size <= lo)
            break;
        if (a->base + a->size > lo && (step == UMADV_STEP_NONE || alloc_alive(a, step)))
            fn(arg, refs[i].id, step);
    }
}

umadv_status_t umadv__prof_attrib_arrivals(const umadv_trace_t *trace,
                                           const umadv_prof_interval_t *intervals, size_t n,
                                           const umadv_prof_fault_t *faults, size_t nfaults,
                                           umadv_prof_arrival_fn fn, void *arg)
{
    uint64_t longest = longest_interval(intervals, n), max_size;
    umadv_prof_alloc_ref_t *refs;

    if (umadv__prof_alloc_order(trace, &refs, &max_size) != UMADV_OK)
        return UMADV_ERR_NO_MEMORY;
    for (size_t i = 0; i < nfaults; i++) {
        const umadv_prof_fault_t *f = &faults[i];
        uint32_t step = fault_step(intervals, n, longest, f);
        uint64_t page = f->address & ~(UMADV_PROF_FAULT_PAGE - 1);

        if (f->bytes > 0) /* a migration: its bytes */
            arrivals_in(trace, refs, max_size, f->address, f->address + f->bytes, step, fn, arg);
        else /* a fault: UVM's unit around its page */
            arrivals_in(trace, refs, max_size, page, page + UMADV_PROF_FAULT_PAGE, step, fn, arg);
    }
    free(refs);
    return UMADV_OK;
}

/* ---- the activity ------------------------------------------------------ */

/* The first timestamp of the window: the earliest kernel or record. */
static uint64_t activity_origin(const umadv_prof_kernel_t *kernels, size_t nkernels,
                                const umadv_prof_activity_t *act)
{
    uint64_t origin = UINT64_MAX;

    for (size_t i = 0; i < nkernels; i++) {
        if (kernels[i].end >= kernels[i].start)
            origin = UMADV_MIN(origin, kernels[i].start);
    }
    for (size_t i = 0; i < act->nevents; i++)
        origin = UMADV_MIN(origin, act->events[i].start_ns);
    return origin;
}

/* @e with its start from @origin into @trace, or counted dropped when
 * the format cannot hold it. */
static umadv_status_t activity_add(umadv_trace_t *trace, umadv_trace_event_t e,
                                   uint64_t origin)
{
    e.start_ns -= origin;
    if (e.start_ns > UMADV_ACTIVITY_MAX_NS || e.dur_ns > UMADV_ACTIVITY_MAX_NS) {
        trace->activity.dropped++;
        return UMADV_OK;
    }
    return umadv__activity_add_event(&trace->activity, &e);
}

static umadv_status_t activity_kernels(umadv_trace_t *trace,
                                       const umadv_prof_launch_t *launches, size_t nlaunches,
                                       const umadv_prof_kernel_t *kernels, size_t nkernels,
                                       uint64_t origin)
{
    umadv_status_t status = UMADV_OK;

    for (size_t i = 0; i < nkernels && status == UMADV_OK; i++) {
        const umadv_prof_kernel_t *k = &kernels[i];
        const umadv_prof_launch_t *l = launch_find(launches, nlaunches, k->correlation_id);
        umadv_trace_event_t e = {.start_ns = k->start, .dur_ns = k->end - k->start,
                                 .step = UMADV_STEP_NONE, .name = k->name,
                                 .kind = UMADV_EVENT_KERNEL};

        if (k->end < k->start)
            continue;
        if (l != NULL && l->step < trace->nsteps)
            e.step = l->step;
        status = activity_add(trace, e, origin);
    }
    return status;
}

umadv_status_t umadv__prof_attrib_activity(umadv_trace_t *trace, umadv_prof_launch_t *launches,
                                           size_t nlaunches, const umadv_prof_kernel_t *kernels,
                                           size_t nkernels, const umadv_prof_activity_t *act)
{
    uint64_t origin = activity_origin(kernels, nkernels, act);
    umadv_status_t status = UMADV_OK;

    umadv__activity_cleanup(&trace->activity);
    if (nlaunches > 1) /* launches may be NULL when empty: qsort's pointer must not be */
        qsort(launches, nlaunches, sizeof(*launches), launch_compare);
    for (size_t i = 0; i < act->nnames && status == UMADV_OK; i++)
        status = umadv__activity_add_name(&trace->activity, act->names[i], NULL);
    if (status == UMADV_OK)
        status = activity_kernels(trace, launches, nlaunches, kernels, nkernels, origin);
    for (size_t i = 0; i < act->nevents && status == UMADV_OK; i++)
        status = activity_add(trace, act->events[i], origin);
    trace->activity.dropped += act->dropped;
    if (status != UMADV_OK)
        umadv__activity_cleanup(&trace->activity);
    return status;
}

/* ---- merging into the trace ------------------------------------------ */

static int access_step_compare(const void *a, const void *b)
{
    const umadv_prof_access_t *x = a, *y = b;

    return (x->step > y->step) - (x->step < y->step);
}

static umadv_status_t copy_allocs(umadv_trace_t *to, const umadv_trace_t *from)
{
    umadv_status_t status = UMADV_OK;

    for (uint32_t i = 0; i < from->nallocs && status == UMADV_OK; i++) {
        const umadv_trace_alloc_t *a = &from->allocs[i];
        uint32_t id;
        status = umadv__trace_add_alloc(to, a->base, a->size, a->kind, a->tag, &id);
        if (status == UMADV_OK)
            status = umadv__trace_set_lifetime(to, id, a->alloc_step, a->free_step);
        if (status == UMADV_OK)
            status = umadv__trace_set_site(to, id, a->site);
        if (status == UMADV_OK)
            to->allocs[id].stageable = a->stageable;
    }
    return status;
}

/* Step @s of @from with its own accesses, then the extras of that step
 * from *@extra on (sorted by step); advances *@extra past them. */
static umadv_status_t copy_step(umadv_trace_t *to, const umadv_trace_t *from, uint32_t s,
                                const umadv_prof_access_t **extra,
                                const umadv_prof_access_t *end)
{
    const umadv_trace_step_t *st = &from->steps[s];
    umadv_status_t status;

    status = umadv__trace_add_step(to, st->name, st->kind, st->iteration, st->duration_ns,
                                   NULL);
    if (status == UMADV_OK)
        to->steps[to->nsteps - 1].host_ns = st->host_ns;
    for (uint32_t i = 0; i < st->naccesses && status == UMADV_OK; i++) {
        const umadv_trace_access_t *a = &from->accesses[st->first_access + i];
        status = umadv__trace_add_access_sections(to, a->alloc, a->first, a->count, a->mode,
                                                  a->faults);
    }
    for (; *extra < end && (*extra)->step == s && status == UMADV_OK; (*extra)++) {
        const umadv_prof_access_t *e = *extra;
        uint64_t size = from->allocs[e->alloc].size;
        uint64_t offset = UMADV_MIN(e->offset, size - 1);
        status = umadv__trace_add_access(to, e->alloc, offset,
                                         UMADV_MIN(e->size, size - offset), e->mode,
                                         e->faults);
    }
    return status;
}

umadv_status_t umadv__prof_trace_merge(umadv_trace_t *trace, umadv_prof_access_t *extra,
                                       size_t nextra)
{
    /* no offset on a NULL extra (nothing to merge): that is UB too */
    const umadv_prof_access_t *next = extra, *end = nextra ? extra + nextra : extra;
    umadv_trace_t merged;
    umadv_status_t status;

    if (trace->finalized)
        return UMADV_ERR_STATE;
    if (nextra > 1) /* extra may be NULL when empty: qsort's pointer must not be */
        qsort(extra, nextra, sizeof(*extra), access_step_compare);
    status = umadv__trace_init(&merged, trace->section_size);
    if (status != UMADV_OK)
        return status;
    merged.device = trace->device;
    merged.link   = trace->link;
    status = umadv__trace_set_source(&merged, trace->source);
    if (status == UMADV_OK)
        status = copy_allocs(&merged, trace);
    for (uint32_t s = 0; s < trace->nsteps && status == UMADV_OK; s++)
        status = copy_step(&merged, trace, s, &next, end);
    if (status != UMADV_OK) {
        umadv__trace_cleanup(&merged);
        return status;
    }
    merged.niterations   = trace->niterations;
    merged.guessed_steps = trace->guessed_steps; /* they still may miss blocks */
    merged.activity      = trace->activity; /* moved, not copied */
    memset(&trace->activity, 0, sizeof(trace->activity));
    merged.unseen     = trace->unseen; /* moved too: allocations and steps keep their ids */
    merged.nunseen    = trace->nunseen;
    merged.unseen_cap = trace->unseen_cap;
    trace->unseen     = NULL;
    trace->nunseen    = 0;
    trace->unseen_cap = 0;
    umadv__trace_cleanup(trace);
    *trace = merged;
    return UMADV_OK;
}
