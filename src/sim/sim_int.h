/*
 * The simulator's engine (engine.c): the compute lane and the two
 * transfer lanes (lanes.c) driving the replay core (schedule/core.h),
 * which holds the sections' states and decides what each policy does;
 * policy.c hands its decisions to the lanes. sim.c's opening comment has
 * the model.
 */
#ifndef UMADV_SIM_SIM_INT_H
#define UMADV_SIM_SIM_INT_H

#include <stddef.h>
#include <stdint.h>

#include "schedule/core.h"
#include "schedule/pages.h"
#include "schedule/window.h"
#include "sim/sim.h"

#define SIM_NIL UINT32_MAX

/* Pinned cudaMemcpyAsync from a GPU-resident managed range, H200
 * (DESIGN.md, measured envelope): a staged copy, either way. */
#define SIM_STAGE_BW_DEFAULT 52.6e9

/* A decision of the replay core on a lane. */
typedef struct sim_lane_op {
    umadv_core_op_t d;
    uint32_t id;        /* > 0; sections it moves carry it as owner */
    uint32_t step;      /* window step that issued it (stall attribution) */
    double   queued;    /* when it was issued */
    double   start;     /* when its transfer started */
    double   end;       /* evictions: completion time, once started */
    int      measured;  /* evictions: issued in the measured replay, which
                         * counts their bytes */
} sim_lane_op_t;

typedef struct sim_engine {
    const umadv_trace_t      *trace;
    const umadv_window_t     *w;
    const umadv_sim_params_t *params;
    umadv_link_model_t        link;
    umadv_core_t              core;   /* states, accounting, decisions */

    /* per section, the model's own */
    uint8_t  *fresh;      /* allocated, not populated yet: nothing to copy */
    uint8_t  *dead;       /* freed while being fetched: release on arrival */
    uint8_t  *placed;     /* advised to the host: accessed there when not on
                           * the GPU (plan policy only) */
    uint32_t *owner;      /* lane op moving it (FETCHING / EVICTING) */
    uint32_t *pending;    /* queued fetch op that will look at it, 0 = none */
    umadv_pages_t pages;  /* the trace's addresses whose pages are on the GPU,
                           * as the executor keeps its blocks' (schedule/pages.h) */

    /* fetch lane: queued ops in a heap by (need, id), one call running */
    sim_lane_op_t *fq;
    size_t         fq_len, fq_cap;
    sim_lane_op_t  f_cur;     /* the op the running call serves */
    sim_lane_op_t *fb;        /* every op of that call (schedule.h, BATCHES) */
    size_t         fb_len, fb_cap;
    sim_lane_op_t *fset;      /* scratch: same-need ops left in the queue */
    size_t         fset_cap;
    int            f_running;
    double         f_end;
    int            f_hold;    /* a step is making room for its faults */
    int            f_defer;   /* the core's decisions are being queued: the
                               * lane starts once they all are (the executor
                               * queues them under its lock) */

    /* eviction lane: FIFO; the head runs, the rest wait for it */
    sim_lane_op_t *eq;
    size_t         eq_head, eq_len, eq_cap;

    /* the share of its own rate at which each running transfer's end was
     * computed: 1 alone, the duplex share (trace.h) while both lanes run */
    double         f_rate, e_rate;

    /* the step being run: its need key and its waits (sim.h) */
    uint64_t  cur_need;
    uint32_t  cur_step;
    double    wait[UMADV_SIM_WAIT_COUNT];

    uint32_t  next_id;
    double    t;          /* compute lane: end of the last step */
    double    launched;   /* when the application launched the last step
                           * (umadv__window_host_arrival) */
    uint32_t  replay;
    uint32_t *touch;      /* scratch: the current step's sections */
    size_t    touch_cap;

    /* the measured replay */
    int       measuring;
    double    t0;
    uint64_t  dropped0;   /* the core's dropped bytes when it began */
    umadv_sim_result_t r;
} sim_engine_t;

/* engine.c: section @x's pages went to the GPU (@on_gpu) or left it (an
 * eviction, a discard: not a drop, whose pages the pool hands on); whether
 * they are there by those notes. */
void umadv__sim_pages_note(sim_engine_t *e, uint32_t x, int on_gpu);
int umadv__sim_pages_on_gpu(const sim_engine_t *e, uint32_t x);

umadv_status_t umadv__sim_engine_init(sim_engine_t *e, const umadv_window_t *w,
                                      const umadv_sim_params_t *params);
void umadv__sim_engine_cleanup(sim_engine_t *e);

/* Replay the window warmup + 1 times; fills e->r's counters and times. */
umadv_status_t umadv__sim_engine_run(sim_engine_t *e);

uint64_t umadv__sim_section_size(const sim_engine_t *e, uint32_t x);

/* Lanes (lanes.c): start the fetch lane's head if it can; the time of the
 * next lane event (INFINITY if none); process lane events up to @until. */
void umadv__sim_try_start_fetch(sim_engine_t *e, double now);
double umadv__sim_next_event(const sim_engine_t *e);
/* Whether a lane event is pending. Ask this, not whether the next event's
 * time is INFINITY: with absurd link figures an event can lie there. */
int umadv__sim_lanes_busy(const sim_engine_t *e);
void umadv__sim_advance(sim_engine_t *e, double until);
/* Whether an eviction the step of @need waits for is still on its lane
 * (demand: its faults need the room). */
int umadv__sim_evictions_block(const sim_engine_t *e, uint64_t need);

/* The open step's own fetches (umadv__core_step_serves), before it
 * waits: those with nothing to move leave the queue, fresh populations
 * land now. Returns the time their calls take on the compute lane: the
 * link model's call latency each (fetch_latency), nothing copied. */
double umadv__sim_step_serves(sim_engine_t *e);

/* The core's decisions onto the lanes (lanes.c). */
void umadv__sim_enqueue_fetch(sim_engine_t *e, const umadv_core_op_t *d, double now);
void umadv__sim_enqueue_evict(sim_engine_t *e, const umadv_core_op_t *d, double now);
void umadv__sim_advise(sim_engine_t *e, umadv_advice_t advice, uint32_t alloc, uint32_t first,
                       uint32_t count);

/* Queue the decisions in e->core.out (policy.c). */
void umadv__sim_take_decisions(sim_engine_t *e, double now);

/* Sort section ids and call @fn on each run of adjacent sections of one
 * allocation; returns the number of runs. */
size_t umadv__sim_for_runs(sim_engine_t *e, uint32_t *sections, size_t count,
                           void (*fn)(sim_engine_t *e, uint32_t alloc, uint32_t first,
                                      uint32_t n, void *arg),
                           void *arg);

#endif
