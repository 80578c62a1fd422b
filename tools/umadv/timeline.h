/*
 * Timelines as Chrome traces (the JSON that Perfetto and chrome://tracing
 * open), one process per track:
 *   - umadv plan --timeline: the simulated iteration of every policy,
 *     one process per policy and budget, with the steps, what each step
 *     waited for, and the GPU memory in use (umadv-plan(1), TIMELINE);
 *   - umadv profile --timeline and umadv report --timeline: the measured
 *     window of a profile, as CUPTI recorded it (the trace's activity:
 *     umadv-profile(1), TIMELINE).
 * Both name their tracks alike (UMADV_TIMELINE_*).
 */
#ifndef UMADV_TOOLS_TIMELINE_H
#define UMADV_TOOLS_TIMELINE_H

#include "common/outfile.h"
#include "json.h"
#include "sim/sim.h"
#include "trace/trace.h"

typedef struct umadv_timeline {
    umadv_outfile_t      file;
    umadv_json_t         json;
    const umadv_trace_t *trace;
    uint32_t             pid;      /* the track being written */
    uint32_t             measured; /* the replay the simulator measures */
    double               origin_s; /* its start: time 0 of the track; < 0 unset */
} umadv_timeline_t;

/* Track names both timelines use. */
#define UMADV_TIMELINE_STEPS  "steps"
#define UMADV_TIMELINE_MEMORY "gpu memory"

/* Open @path (common/outfile.h: a regular file is replaced only by
 * umadv__timeline_close; "-", devices and FIFOs are streams; the input
 * trace and the log file are refused) and begin the document. Returns 0,
 * or an exit status after an error message that names the file. */
int umadv__timeline_open(umadv_timeline_t *tl, const char *path, const umadv_trace_t *trace);

/* Begin the track of one simulation named @name (a process in the viewer)
 * and point @params' observer at it. */
void umadv__timeline_track(umadv_timeline_t *tl, const char *name, umadv_sim_params_t *params);

/* A track named @name of steps [@first, @first + @count) back to back,
 * each its trace duration: an iteration with nothing to wait for. */
void umadv__timeline_steps(umadv_timeline_t *tl, const char *name, uint32_t first,
                           uint32_t count);

/* The pieces of the document: a new process named @name (the tracks
 * after it are its); a name for its thread @tid (0: the process); a
 * complete event (ph X) at @start_us lasting @dur_us, left open for its
 * "args" (end it with umadv__json_end_object(&tl->json)); a counter
 * sample (ph C) of @mib MiB. Times in microseconds. */
void umadv__timeline_process(umadv_timeline_t *tl, const char *name);
void umadv__timeline_name_track(umadv_timeline_t *tl, uint32_t tid, const char *name);
/* A label the viewer shows on the process. */
void umadv__timeline_label(umadv_timeline_t *tl, const char *label);
void umadv__timeline_complete(umadv_timeline_t *tl, const char *name, uint32_t tid,
                              double start_us, double dur_us);
void umadv__timeline_counter(umadv_timeline_t *tl, const char *name, uint32_t tid, double ts_us,
                             double mib);

/* timeline_measured.c: the measured window of @tl's trace (its activity)
 * as a process named @name. 0, or an exit status after the error (out
 * of memory). */
int umadv__timeline_measured(umadv_timeline_t *tl, const char *name);

/* End the document and commit the file. Returns 0, or an exit status
 * after an error message (a short write, ENOSPC are errors; a regular
 * file then stays as it was). */
int umadv__timeline_close(umadv_timeline_t *tl);

/* Give the timeline up (the run failed): a replaced file stays exactly as
 * it was, no temporary file is left; a stream keeps what it got. */
void umadv__timeline_discard(umadv_timeline_t *tl);

#endif
