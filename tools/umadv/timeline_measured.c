/*
 * The measured window of a profile as a Chrome trace process
 * (timeline.h, umadv-profile(1) TIMELINE): the trace's activity records
 * as CUPTI timed them, not a simulation. Tracks, in this order: the
 * steps (the span of each step's kernels), the kernels, the GPU
 * page-fault groups, the migrations of each direction and cause, the
 * thrashing ranges, and a counter of the bytes migrated to the GPU less
 * those migrated off it since the window began.
 *
 * A viewer draws the events of one thread as a stack, so events that
 * overlap without nesting (concurrent kernels, fault groups serviced in
 * parallel) go to further lanes of their track: "kernels", "kernels 2"...
 */
#include "timeline.h"

#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "common/util.h"

#define LANES 32 /* per track; past them, the last lane takes the rest */

/* The tracks, each with its lanes: tid = 1 + track * LANES + lane. */
enum {
    TRACK_STEPS,
    TRACK_KERNELS,
    TRACK_FAULTS,
    TRACK_THRASH,
    TRACK_MIGRATIONS, /* then one per direction and cause */
    TRACK_COUNT = TRACK_MIGRATIONS + 2 * UMADV_CAUSE_COUNT
};

typedef struct measured {
    umadv_timeline_t          *tl;
    const umadv_trace_activity_t *act;
    uint64_t                  *faults;   /* per event: fault groups in a kernel */
    uint64_t                  *stall_ns; /* per event: its time covered by faults */
    uint64_t                   lane_end[TRACK_COUNT][LANES];
    uint32_t                   lanes[TRACK_COUNT]; /* lanes named so far */
} measured_t;

static const char *const cause_titles[UMADV_CAUSE_COUNT] = {
    [UMADV_CAUSE_UNKNOWN] = "unknown cause",
    [UMADV_CAUSE_USER] = "user prefetch",
    [UMADV_CAUSE_FAULT] = "page fault",
    [UMADV_CAUSE_SPECULATIVE] = "speculative prefetch",
    [UMADV_CAUSE_EVICTION] = "eviction",
    [UMADV_CAUSE_ACCESS_COUNTERS] = "access counters",
};

static double us(uint64_t ns)
{
    return (double)ns / 1e3;
}

static int track_of(const umadv_trace_event_t *e)
{
    switch (e->kind) {
    case UMADV_EVENT_KERNEL: return TRACK_KERNELS;
    case UMADV_EVENT_FAULT:  return TRACK_FAULTS;
    case UMADV_EVENT_THRASH: return TRACK_THRASH;
    default:
        return TRACK_MIGRATIONS + (e->kind == UMADV_EVENT_DTOH) * UMADV_CAUSE_COUNT + e->cause;
    }
}

static void track_title(int track, char *buf, size_t len)
{
    static const char *const fixed[] = {UMADV_TIMELINE_STEPS, "kernels", "gpu page faults",
                                        "thrashing"};

    if (track < TRACK_MIGRATIONS)
        snprintf(buf, len, "%s", fixed[track]);
    else
        snprintf(buf, len, "migrations %s: %s",
                 track - TRACK_MIGRATIONS < UMADV_CAUSE_COUNT ? "HtoD" : "DtoH",
                 cause_titles[(track - TRACK_MIGRATIONS) % UMADV_CAUSE_COUNT]);
}

/* The tid of the first lane of @track free at @start (events come in
 * start order), named when first used. */
static uint32_t lane_take(measured_t *m, int track, uint64_t start, uint64_t end)
{
    uint32_t lane = 0;
    char title[80], named[96];

    while (lane < m->lanes[track] && m->lane_end[track][lane] > start)
        lane++;
    if (lane == LANES)
        lane = LANES - 1;
    if (lane == m->lanes[track]) {
        track_title(track, title, sizeof(title));
        if (lane > 0)
            snprintf(named, sizeof(named), "%s %u", title, lane + 1);
        else
            snprintf(named, sizeof(named), "%s", title);
        umadv__timeline_name_track(m->tl, 1 + (uint32_t)track * LANES + lane, named);
        m->lanes[track]++;
    }
    m->lane_end[track][lane] = UMADV_MAX(m->lane_end[track][lane], end);
    return 1 + (uint32_t)track * LANES + lane;
}

static void address_arg(umadv_json_t *json, uint64_t address)
{
    char hex[24];

    snprintf(hex, sizeof(hex), "0x%llx", (unsigned long long)address);
    umadv__json_string(json, "address", hex);
}

static const char *step_name(const umadv_trace_t *trace, uint32_t step, char *buf, size_t len)
{
    if (step < trace->nsteps && trace->steps[step].name != NULL)
        return trace->steps[step].name;
    snprintf(buf, len, "step %u", step);
    return buf;
}

static void kernel_event(measured_t *m, uint32_t i, uint32_t tid)
{
    const umadv_trace_event_t *e = &m->act->events[i];
    umadv_json_t *json = &m->tl->json;
    const char *name = e->name != UMADV_EVENT_NO_NAME ? m->act->names[e->name] : "kernel";
    char buf[32];

    umadv__timeline_complete(m->tl, name, tid, us(e->start_ns), us(e->dur_ns));
    umadv__json_begin_object_inline(json, "args");
    if (e->step != UMADV_STEP_NONE) {
        umadv__json_u64(json, "step", e->step);
        umadv__json_string(json, "step name", step_name(m->tl->trace, e->step, buf, 32));
    }
    umadv__json_u64(json, "fault groups", m->faults[i]);
    umadv__json_double(json, "fault stall ms", (double)m->stall_ns[i] / 1e6, 6);
    umadv__json_end_object(json);
    umadv__json_end_object(json);
}

static void um_event(measured_t *m, const umadv_trace_event_t *e, uint32_t tid)
{
    umadv_json_t *json = &m->tl->json;
    const char *name = e->kind == UMADV_EVENT_FAULT    ? "fault groups"
                       : e->kind == UMADV_EVENT_THRASH ? "thrashing"
                       : e->kind == UMADV_EVENT_HTOD   ? "HtoD" : "DtoH";

    umadv__timeline_complete(m->tl, name, tid, us(e->start_ns), us(e->dur_ns));
    umadv__json_begin_object_inline(json, "args");
    address_arg(json, e->address);
    if (e->kind == UMADV_EVENT_FAULT)
        umadv__json_u64(json, "groups", e->value);
    if (e->kind == UMADV_EVENT_HTOD || e->kind == UMADV_EVENT_DTOH) {
        umadv__json_u64(json, "bytes", e->value);
        umadv__json_string(json, "cause",
                           umadv__migration_cause_name((umadv_migration_cause_t)e->cause));
    }
    umadv__json_end_object(json);
    umadv__json_end_object(json);
}

/* Migrated in less migrated out, sampled at each migration's end. */
static void resident_sample(measured_t *m, const umadv_trace_event_t *e, int64_t *net)
{
    *net += e->kind == UMADV_EVENT_HTOD ? (int64_t)e->value : -(int64_t)e->value;
    umadv__timeline_counter(m->tl, UMADV_TIMELINE_MEMORY ": migrated in - out",
                            1 + TRACK_MIGRATIONS * LANES, us(e->start_ns + e->dur_ns),
                            (double)*net / (1024.0 * 1024.0));
}

static void events_write(measured_t *m)
{
    int64_t net = 0;

    for (uint32_t i = 0; i < m->act->nevents; i++) {
        if (m->act->events[i].kind == UMADV_EVENT_HTOD ||
            m->act->events[i].kind == UMADV_EVENT_DTOH) {
            /* the counter begins at 0 with the window */
            umadv__timeline_counter(m->tl, UMADV_TIMELINE_MEMORY ": migrated in - out",
                                    1 + TRACK_MIGRATIONS * LANES, 0, 0);
            break;
        }
    }
    for (uint32_t i = 0; i < m->act->nevents; i++) {
        const umadv_trace_event_t *e = &m->act->events[i];
        uint32_t tid = lane_take(m, track_of(e), e->start_ns, e->start_ns + e->dur_ns);

        if (e->kind == UMADV_EVENT_KERNEL) {
            kernel_event(m, i, tid);
            continue;
        }
        um_event(m, e, tid);
        if (e->kind == UMADV_EVENT_HTOD || e->kind == UMADV_EVENT_DTOH)
            resident_sample(m, e, &net);
    }
}

/* A step as its kernels ran: from the first start to the last end. */
typedef struct step_span {
    uint64_t start, end, faults, stall_ns;
    uint32_t step, kernels;
} step_span_t;

static int span_compare(const void *a, const void *b)
{
    const step_span_t *x = a, *y = b;

    if (x->start != y->start)
        return (x->start > y->start) - (x->start < y->start);
    return (x->step > y->step) - (x->step < y->step);
}

/* The steps with kernels, in start order; how many (into @spans, one
 * slot per step). */
static uint32_t step_spans(const measured_t *m, step_span_t *spans)
{
    uint32_t nsteps = m->tl->trace->nsteps, n = 0;

    for (uint32_t s = 0; s < nsteps; s++)
        spans[s] = (step_span_t){UINT64_MAX, 0, 0, 0, s, 0};
    for (uint32_t i = 0; i < m->act->nevents; i++) {
        const umadv_trace_event_t *e = &m->act->events[i];
        step_span_t *sp;
        if (e->kind != UMADV_EVENT_KERNEL || e->step == UMADV_STEP_NONE)
            continue;
        sp = &spans[e->step];
        sp->start = UMADV_MIN(sp->start, e->start_ns);
        sp->end = UMADV_MAX(sp->end, e->start_ns + e->dur_ns);
        sp->faults += m->faults[i];
        sp->stall_ns += m->stall_ns[i];
        sp->kernels++;
    }
    for (uint32_t s = 0; s < nsteps; s++) {
        if (spans[s].kernels > 0)
            spans[n++] = spans[s];
    }
    qsort(spans, n, sizeof(*spans), span_compare);
    return n;
}

static void step_event(measured_t *m, const step_span_t *sp)
{
    umadv_json_t *json = &m->tl->json;
    uint32_t tid = lane_take(m, TRACK_STEPS, sp->start, sp->end);
    char buf[32];

    umadv__timeline_complete(m->tl, step_name(m->tl->trace, sp->step, buf, sizeof(buf)), tid,
                             us(sp->start), us(sp->end - sp->start));
    umadv__json_begin_object_inline(json, "args");
    umadv__json_u64(json, "step", sp->step);
    umadv__json_u64(json, "kernels", sp->kernels);
    umadv__json_u64(json, "fault groups", sp->faults);
    umadv__json_double(json, "fault stall ms", (double)sp->stall_ns / 1e6, 6);
    umadv__json_end_object(json);
    umadv__json_end_object(json);
}

static int steps_write(measured_t *m)
{
    uint32_t nsteps = m->tl->trace->nsteps, n;
    step_span_t *spans = malloc((nsteps ? nsteps : 1) * sizeof(*spans));

    if (spans == NULL)
        return umadv__cli_fail("out of memory");
    n = step_spans(m, spans);
    for (uint32_t i = 0; i < n; i++)
        step_event(m, &spans[i]);
    free(spans);
    return 0;
}

/* What the profiler left out past its bound, said on the process. */
static void dropped_label(measured_t *m)
{
    char label[96];

    if (m->act->dropped == 0)
        return;
    snprintf(label, sizeof(label), "%llu records dropped past the profiler's bound",
             (unsigned long long)m->act->dropped);
    umadv__timeline_label(m->tl, label);
}

int umadv__timeline_measured(umadv_timeline_t *tl, const char *name)
{
    const umadv_trace_activity_t *act = &tl->trace->activity;
    size_t n = act->nevents ? act->nevents : 1;
    measured_t *m = calloc(1, sizeof(*m));
    int rc = 0;

    if (m != NULL) {
        m->faults   = malloc(n * sizeof(*m->faults));
        m->stall_ns = malloc(n * sizeof(*m->stall_ns));
    }
    if (m == NULL || m->faults == NULL || m->stall_ns == NULL ||
        umadv__activity_fault_costs(act, m->faults, m->stall_ns) != UMADV_OK) {
        rc = umadv__cli_fail("out of memory");
        goto out;
    }
    m->tl  = tl;
    m->act = act;
    umadv__timeline_process(tl, name);
    dropped_label(m);
    rc = steps_write(m);
    if (rc == 0)
        events_write(m);
out:
    if (m != NULL) {
        free(m->faults);
        free(m->stall_ns);
    }
    free(m);
    return rc;
}
