/*
 * The simulator's engine (engine.c): sections, memory, the two transfer
 * lanes and the compute lane; the policies (policy.c) plug into it at
 * each step's beginning and end. sim.c's opening comment has the model.
 */
#ifndef UMADV_SIM_SIM_INT_H
#define UMADV_SIM_SIM_INT_H

#include <stddef.h>
#include <stdint.h>

#include "schedule/window.h"
#include "sim/sim.h"

#define SIM_NIL UINT32_MAX

/* A run of sections on a lane. */
typedef struct sim_lane_op {
    uint32_t alloc, first, count;
    uint32_t id;        /* > 0; sections it moves carry it as owner */
    uint64_t need;      /* fetches: replay * n + need step (served in this order) */
    uint32_t step;      /* window step that issued it (stall attribution) */
    double   queued;    /* when it was issued */
    double   start;     /* when its transfer starts (evictions: known at issue) */
    double   end;       /* evictions: completion time */
} sim_lane_op_t;

typedef struct sim_engine {
    const umadv_trace_t      *trace;
    const umadv_window_t     *w;
    const umadv_sim_params_t *params;
    umadv_link_model_t        link;
    uint64_t                  budget;

    /* per section */
    uint8_t  *state;      /* umadv_sim_state_t */
    uint8_t  *fresh;      /* allocated, not populated yet: nothing to copy */
    uint8_t  *dead;       /* freed while being fetched: release on arrival */
    uint8_t  *placed;     /* advised to the host: accessed there when not on
                           * the GPU (plan policy only) */
    uint32_t *owner;      /* lane op moving it (FETCHING / EVICTING) */
    uint32_t *pending;    /* queued fetch op that will move it, 0 = none */
    uint32_t *stamp;      /* step execution that touches it now */
    uint32_t *lru_prev;   /* RESIDENT sections, most recently used at head */
    uint32_t *lru_next;
    uint32_t  lru_head, lru_tail;
    uint64_t  used, peak, evicting_bytes;

    /* fetch lane: queued ops in a heap by (need, id), one running */
    sim_lane_op_t *fq;
    size_t         fq_len, fq_cap;
    sim_lane_op_t  f_cur;     /* the op the running call serves */
    sim_lane_op_t *fb;        /* every op of that call (plan.h, BATCHES) */
    size_t         fb_len, fb_cap;
    sim_lane_op_t *fset;      /* scratch: same-need ops left in the queue */
    size_t         fset_cap;
    uint64_t       batch_bytes; /* umadv__schedule_batch_bytes of the link */
    int            f_running;
    double         f_end;
    int            f_hold;    /* a step is making room for its faults */
    int            f_defer;   /* a policy is queueing a step's fetches: the
                               * lane starts once they all are (the executor
                               * queues them under its lock) */

    /* eviction lane: FIFO, completion times known at enqueue */
    sim_lane_op_t *eq;
    size_t         eq_head, eq_len, eq_cap;
    double         e_free;

    /* the step being run: its need key and its waits (sim.h) */
    uint64_t  cur_need;
    uint32_t  cur_step;
    double    wait[UMADV_SIM_WAIT_COUNT];

    uint32_t  next_id;
    uint32_t  cur_stamp;
    double    t;          /* compute lane: end of the last step */
    uint32_t  replay;
    uint32_t *touch;      /* scratch: the current step's sections */
    size_t    touch_cap;
    uint32_t *victims;    /* scratch */
    size_t    victims_cap;
    uint32_t *scratch;
    size_t    scratch_cap;

    /* the measured replay */
    int       measuring;
    double    t0;
    umadv_sim_result_t r;
} sim_engine_t;

umadv_status_t umadv__sim_engine_init(sim_engine_t *e, const umadv_window_t *w,
                                      const umadv_sim_params_t *params, uint64_t budget);
void umadv__sim_engine_cleanup(sim_engine_t *e);

/* Replay the window warmup + 1 times; fills e->r's counters and times. */
umadv_status_t umadv__sim_engine_run(sim_engine_t *e);

/* Memory and recency (lanes.c). take: one more section's bytes in use;
 * release: a RESIDENT section back to HOST without a copy; touch: most
 * recently used. */
void umadv__sim_take(sim_engine_t *e, uint32_t x);
uint64_t umadv__sim_release(sim_engine_t *e, uint32_t x);
void umadv__sim_become_resident(sim_engine_t *e, uint32_t x);
void umadv__sim_lru_touch(sim_engine_t *e, uint32_t x);

/* Lanes (lanes.c): start the fetch lane's head if it can; the time of the
 * next lane event (INFINITY if none); process lane events up to @until. */
void umadv__sim_try_start_fetch(sim_engine_t *e, double now);
double umadv__sim_next_event(const sim_engine_t *e);
/* Whether a lane event is pending. Ask this, not whether the next event's
 * time is INFINITY: with absurd link figures an event can lie there. */
int umadv__sim_lanes_busy(const sim_engine_t *e);
void umadv__sim_advance(sim_engine_t *e, double until);

/* Lane and memory operations, for the policies. */
void umadv__sim_enqueue_fetch(sim_engine_t *e, uint32_t alloc, uint32_t first, uint32_t count,
                              uint64_t need, double now);
void umadv__sim_enqueue_evict(sim_engine_t *e, uint32_t alloc, uint32_t first, uint32_t count,
                              double now);
void umadv__sim_drop(sim_engine_t *e, uint32_t alloc, uint32_t first, uint32_t count, double now);
void umadv__sim_advise(sim_engine_t *e, const umadv_op_t *op);
uint64_t umadv__sim_section_size(const sim_engine_t *e, uint32_t x);

/* The least recently used resident section older than @after (SIM_NIL:
 * the oldest) that the current step does not use, or SIM_NIL. */
uint32_t umadv__sim_lru_victim(const sim_engine_t *e, uint32_t after);

/* Policy hooks, called with the lanes advanced to @now; at the beginning
 * e->touch[0 .. count) holds the step's sections. */
void umadv__sim_policy_begin(sim_engine_t *e, uint32_t j, double now, size_t count);
void umadv__sim_policy_end(sim_engine_t *e, uint32_t j, double now);

/* Sort section ids and call @fn on each run of adjacent sections of one
 * allocation; returns the number of runs. */
size_t umadv__sim_for_runs(sim_engine_t *e, uint32_t *sections, size_t count,
                           void (*fn)(sim_engine_t *e, uint32_t alloc, uint32_t first,
                                      uint32_t n, void *arg),
                           void *arg);

#endif
