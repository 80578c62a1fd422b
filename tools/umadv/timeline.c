/*
 * The Chrome trace document both timelines write (timeline.h), and
 * umadv plan --timeline's simulated tracks. Events are Chrome trace
 * "complete" events (ph X) in microseconds from the start of the
 * measured replay, a counter (ph C) for memory, and metadata (ph M)
 * naming the tracks; written as the simulator observes each step, so
 * nothing is kept. The measured window of umadv profile is
 * timeline_measured.c's.
 */
#include "timeline.h"

#include <string.h>

#include "cli.h"
#include "common/util.h"

#define TID_STEPS 1
#define TID_WAITS 2

int umadv__timeline_open(umadv_timeline_t *tl, const char *path, const umadv_trace_t *trace)
{
    char why[512];

    memset(tl, 0, sizeof(*tl));
    if (umadv__outfile_open(&tl->file, path, "the timeline", why, sizeof(why)) != UMADV_OK)
        return umadv__cli_fail("%s", why);
    tl->trace = trace;
    umadv__json_init(&tl->json, tl->file.stream);
    umadv__json_begin_object(&tl->json, NULL);
    umadv__json_string(&tl->json, "displayTimeUnit", "ms");
    umadv__json_begin_array(&tl->json, "traceEvents");
    return 0;
}

/* {"name": ..., "ph": ..., "pid": ..., "tid": ...: the head of an event,
 * left open for the caller's members. */
static void event_begin(umadv_timeline_t *tl, const char *name, const char *ph, uint32_t tid)
{
    umadv__json_begin_object_inline(&tl->json, NULL);
    umadv__json_string(&tl->json, "name", name);
    umadv__json_string(&tl->json, "ph", ph);
    umadv__json_u64(&tl->json, "pid", tl->pid);
    umadv__json_u64(&tl->json, "tid", tid);
}

/* A metadata event naming the process (@tid 0) or one of its threads. */
void umadv__timeline_name_track(umadv_timeline_t *tl, uint32_t tid, const char *name)
{
    event_begin(tl, tid == 0 ? "process_name" : "thread_name", "M", tid);
    umadv__json_begin_object_inline(&tl->json, "args");
    umadv__json_string(&tl->json, "name", name);
    umadv__json_end_object(&tl->json);
    umadv__json_end_object(&tl->json);
}

void umadv__timeline_label(umadv_timeline_t *tl, const char *label)
{
    event_begin(tl, "process_labels", "M", 0);
    umadv__json_begin_object_inline(&tl->json, "args");
    umadv__json_string(&tl->json, "labels", label);
    umadv__json_end_object(&tl->json);
    umadv__json_end_object(&tl->json);
}

void umadv__timeline_process(umadv_timeline_t *tl, const char *name)
{
    tl->pid++;
    umadv__timeline_name_track(tl, 0, name);
}

void umadv__timeline_complete(umadv_timeline_t *tl, const char *name, uint32_t tid,
                              double start_us, double dur_us)
{
    event_begin(tl, name, "X", tid);
    umadv__json_double(&tl->json, "ts", start_us, 3);
    umadv__json_double(&tl->json, "dur", dur_us, 3);
}

void umadv__timeline_counter(umadv_timeline_t *tl, const char *name, uint32_t tid, double ts_us,
                             double mib)
{
    event_begin(tl, name, "C", tid);
    umadv__json_double(&tl->json, "ts", ts_us, 3);
    umadv__json_begin_object_inline(&tl->json, "args");
    umadv__json_double(&tl->json, "MiB", mib, 3);
    umadv__json_end_object(&tl->json);
    umadv__json_end_object(&tl->json);
}

static double us(const umadv_timeline_t *tl, double s)
{
    return (s - tl->origin_s) * 1e6;
}

static void complete(umadv_timeline_t *tl, const char *name, uint32_t tid, double start_s,
                     double end_s)
{
    umadv__timeline_complete(tl, name, tid, us(tl, start_s), (end_s - start_s) * 1e6);
}

static void step_event(umadv_timeline_t *tl, const umadv_sim_step_view_t *v)
{
    const char *name = tl->trace->steps[v->step].name;
    char fallback[32];

    if (name == NULL) {
        snprintf(fallback, sizeof(fallback), "step %u", v->step);
        name = fallback;
    }
    complete(tl, name, TID_STEPS, v->start_s, v->end_s);
    umadv__json_begin_object_inline(&tl->json, "args");
    umadv__json_u64(&tl->json, "step", v->step);
    umadv__json_u64(&tl->json, "faulted sections", v->faults);
    umadv__json_u64(&tl->json, "remote sections", v->remote);
    umadv__json_end_object(&tl->json);
    umadv__json_end_object(&tl->json);
}

static double wait_total(const umadv_sim_step_view_t *v, umadv_sim_wait_t *main_p)
{
    double total = 0;

    *main_p = UMADV_SIM_WAIT_TRANSFER;
    for (int c = 0; c < UMADV_SIM_WAIT_COUNT; c++) {
        total += v->wait_s[c];
        if (v->wait_s[c] > v->wait_s[*main_p])
            *main_p = (umadv_sim_wait_t)c;
    }
    return total;
}

/* The wait before the step, named by its main cause, every cause's share
 * in milliseconds. */
static void wait_event(umadv_timeline_t *tl, const umadv_sim_step_view_t *v, double wait_s,
                       umadv_sim_wait_t main)
{
    char name[48];

    snprintf(name, sizeof(name), "waits: %s", umadv__sim_wait_name(main));
    complete(tl, name, TID_WAITS, v->start_s - wait_s, v->start_s);
    umadv__json_begin_object_inline(&tl->json, "args");
    for (int c = 0; c < UMADV_SIM_WAIT_COUNT; c++)
        umadv__json_double(&tl->json, umadv__sim_wait_name((umadv_sim_wait_t)c),
                           v->wait_s[c] * 1e3, 3);
    umadv__json_end_object(&tl->json);
    umadv__json_end_object(&tl->json);
}

static void memory_event(umadv_timeline_t *tl, const umadv_sim_step_view_t *v)
{
    umadv__timeline_counter(tl, UMADV_TIMELINE_MEMORY, TID_STEPS, us(tl, v->start_s),
                            (double)v->used / (1024.0 * 1024.0));
}

/* The simulator's observer: the measured replay's steps only. Its time 0
 * is where the first of them began to wait. */
static void observe(void *arg, const umadv_sim_step_view_t *v)
{
    umadv_timeline_t *tl = arg;
    umadv_sim_wait_t main;
    double wait_s;

    if (v->replay != tl->measured)
        return;
    wait_s = wait_total(v, &main);
    if (tl->origin_s < 0)
        tl->origin_s = v->start_s - wait_s;
    if (wait_s > 0)
        wait_event(tl, v, wait_s, main);
    memory_event(tl, v);
    step_event(tl, v);
}

static void track_begin(umadv_timeline_t *tl, const char *name)
{
    umadv__timeline_process(tl, name);
    tl->origin_s = -1;
    umadv__timeline_name_track(tl, TID_STEPS, UMADV_TIMELINE_STEPS);
    umadv__timeline_name_track(tl, TID_WAITS, "waiting for data");
}

void umadv__timeline_track(umadv_timeline_t *tl, const char *name, umadv_sim_params_t *params)
{
    track_begin(tl, name);
    tl->measured         = params->warmup;
    params->observer     = observe;
    params->observer_arg = tl;
}

void umadv__timeline_steps(umadv_timeline_t *tl, const char *name, uint32_t first,
                           uint32_t count)
{
    umadv_sim_step_view_t v;
    double t = 0;

    track_begin(tl, name);
    tl->origin_s = 0;
    memset(&v, 0, sizeof(v));
    for (uint32_t j = first; j < first + count; j++) {
        v.step    = j;
        v.start_s = t;
        v.end_s   = t += (double)tl->trace->steps[j].duration_ns * 1e-9;
        step_event(tl, &v);
    }
}

int umadv__timeline_close(umadv_timeline_t *tl)
{
    char why[512];

    umadv__json_end_array(&tl->json);
    umadv__json_end_object(&tl->json);
    if (umadv__outfile_commit(&tl->file, why, sizeof(why)) != UMADV_OK)
        return umadv__cli_fail("%s", why);
    return 0;
}

void umadv__timeline_discard(umadv_timeline_t *tl)
{
    umadv__outfile_discard(&tl->file);
}
