/*
 * A window of steps replayed over and over (one iteration), as the planner
 * and the simulator both see it: how each allocation lives inside it,
 * which allocations are born and freed at which step, and each step's
 * working set. Shared so that the plan and its simulation agree on what
 * is fresh, what is dead and what must be kept.
 */
#ifndef UMADV_SCHEDULE_WINDOW_H
#define UMADV_SCHEDULE_WINDOW_H

#include <stddef.h>
#include <stdint.h>

#include "common/keyed.h"
#include "trace/trace.h"

/*
 * COST. Planning and simulating an iteration take time and memory linear
 * in its section touches (a step touching a run of n sections is n
 * touches) and its steps: on a 2026 server core about 1 us and 200 bytes
 * a touch, a few us a step, for the plan and its four simulations
 * together. The shipped traces have at most 61000 touches and 2008 steps;
 * a 1 KiB file can declare 50 million touches (a 512 GiB allocation in
 * 64 KiB sections, touched six times). So both are bounded here, in one
 * place, for the planner and the simulator: touches plus steps at most
 * @max_touches (UMADV_PLAN_MAX_TOUCHES, default below: about 2 to 8 s).
 */
#define UMADV_PLAN_MAX_TOUCHES_DEFAULT 2097152

/* Section touches of global steps [first, first + count), each step
 * counted as one touch more. */
uint64_t umadv__window_touches(const umadv_trace_t *trace, uint32_t first, uint32_t count);

/* UMADV_OK when steps [first, first + count) are within @max_touches
 * (0: no limit); else UMADV_ERR_INVALID_PARAM, logged with the count, the
 * limit and the knob that raises it. Checked before anything is built. */
umadv_status_t umadv__window_check_cost(const umadv_trace_t *trace, uint32_t first,
                                        uint32_t count, uint64_t max_touches);

/*
 * How an allocation lives in a periodic replay of the window.
 *
 * TRANSIENT: allocated and freed inside the window (activations,
 * workspace). Each replay gets new memory: its first touch after birth
 * has nothing to copy, and after its free it is dead until reborn.
 *
 * FREED: allocated before the window, freed inside it. Dead after the
 * free; at the next replay its role is taken by data that the previous
 * replay left on the host, so it is fetched (with a copy) again.
 *
 * BORN: allocated inside the window, freed in a later iteration (data one
 * iteration hands to the next). Fresh at birth; its data must reach the
 * host by the end of the window, where the FREED role picks it up. Each
 * replay has a new instance: at its birth the old one is no longer this
 * allocation (the simulator releases it without cost).
 *
 * FREED and BORN are conservative on purpose: the trace does not say which
 * FREED allocation of the next iteration a BORN one becomes, so the data
 * goes through the host.
 *
 * PERSISTENT: everything else. Its data is kept across the wrap. One
 * allocated inside the window and never freed (lazily created optimizer
 * state) exists at all times in steady state.
 *
 * REBORN. But the one allocated inside the window and never freed there
 * is, more often, made anew every iteration and freed in the next before
 * it is touched: PyTorch's gradients, which zero_grad(set_to_none=True),
 * the default, frees as the iteration begins; the trace does not see
 * that free (the block was never touched in the window). A fetch of it
 * hoisted above its birth then lands on the old block, unbound by the
 * free, and the new one faults in (VGG-16 at half its footprint: three
 * gradients, 200-1000 fault groups every replayed iteration, H200,
 * 2026-11-28). So no fetch of an allocation born inside the window is
 * issued before its birth (wrap_ok 0, birth its step); its data is still
 * kept across the wrap, never released as dead, as state made once needs.
 */
typedef enum umadv_life {
    UMADV_LIFE_PERSISTENT = 0,
    UMADV_LIFE_TRANSIENT  = 1,
    UMADV_LIFE_FREED      = 2,
    UMADV_LIFE_BORN       = 3
} umadv_life_t;

typedef struct umadv_window {
    const umadv_trace_t *trace;
    uint32_t  first;          /* global index of the window's first step */
    uint32_t  n;              /* steps in the window */
    uint8_t  *life;           /* per allocation, umadv_life_t */
    uint8_t  *wrap_ok;        /* per allocation: PERSISTENT and born before the
                               * window, exists across the wrap, so it may be
                               * fetched in the previous replay (REBORN) */
    uint32_t *birth;          /* per allocation: first window step at which
                               * it exists (0 unless born inside the window) */
    uint32_t *death;          /* per allocation: last window step of its data
                               * (the free step; n - 1 for BORN; NONE) */
    uint8_t  *written;        /* per allocation: some step of the trace
                               * (any iteration) writes it */
    umadv_keyed_t born;       /* by step j: TRANSIENT and BORN allocations
                               * born just before it */
    umadv_keyed_t freed;      /* by step j: TRANSIENT and FREED allocations
                               * freed after it */
    uint32_t *carried;        /* the BORN allocations */
    uint32_t  ncarried;
    uint64_t *step_bytes;     /* per step: bytes of its working set */
    uint64_t  max_step_bytes; /* the largest of them */
    uint32_t  max_step;       /* window step that has it */
    uint64_t  total_bytes;    /* bytes of every section of the trace */
} umadv_window_t;

/* How @alloc lives in a periodic replay of global steps [first, first + n). */
umadv_life_t umadv__window_life(const umadv_trace_alloc_t *alloc, uint32_t first, uint32_t n);

/* Describe global steps [first, first + n) of a finalized trace. */
umadv_status_t umadv__window_init(umadv_window_t *window, const umadv_trace_t *trace,
                                  uint32_t first, uint32_t n);

void umadv__window_cleanup(umadv_window_t *window);

/* Seconds of compute of window step @j (0-based): its duration. */
static inline double umadv__window_step_seconds(const umadv_window_t *window, uint32_t j)
{
    return (double)window->trace->steps[window->first + j].duration_ns * 1e-9;
}

/* Seconds of compute in the window: the sum of its steps' durations. */
double umadv__window_compute_seconds(const umadv_window_t *window);

/*
 * THE APPLICATION'S HOST TIME (umadv-trace(5), host_ns). The application
 * launches window step @j host_ns after it launched the step before
 * (@launched_s), or, the iteration's first, host_ns after the GPU
 * finished the iteration before (@gpu_s: a training loop waits for its
 * loss there); a step starts no earlier than its launch. Between those
 * points the host runs ahead of the GPU as far as it likes: what it
 * waits for is its steps' data (the simulator says when) and the
 * iteration's end. Returns when step @j is launched, if nothing holds
 * the host up. A trace without host times (host_ns 0) launches each
 * step when the one before was: the GPU's time alone counts.
 */
static inline double umadv__window_host_arrival(const umadv_window_t *window, uint32_t j,
                                                double launched_s, double gpu_s)
{
    double from = j == 0 && gpu_s > launched_s ? gpu_s : launched_s;

    return from + (double)window->trace->steps[window->first + j].host_ns * 1e-9;
}

/* One iteration of the window with every section resident: the GPU's
 * time when its last step ends, each step starting at the later of the
 * step before's end and its launch (umadv__window_host_arrival). The
 * compute seconds where the trace has no host times. */
double umadv__window_resident_seconds(const umadv_window_t *window);

/* UMADV_ERR_BUDGET_TOO_SMALL, logged with the step's index (global),
 * name, working set and the budget, when a step alone exceeds @budget. */
umadv_status_t umadv__window_check_budget(const umadv_window_t *window, uint64_t budget);

/*
 * Every section touch of the window in one canonical order: step by step,
 * accesses in trace order, sections in run order. Touches of window step j
 * are sec[off[j] .. off[j + 1]); a step touches a section at most once
 * (finalize merges overlapping accesses). Per-touch flags (host placement)
 * are indexed in this order.
 */
typedef struct umadv_touches {
    size_t   *off;      /* n + 1 offsets */
    uint32_t *sec;      /* global section ids */
    uint32_t *step;     /* window step of each touch */
    size_t    count;
} umadv_touches_t;

umadv_status_t umadv__touches_init(umadv_touches_t *touches, const umadv_window_t *window);
void umadv__touches_cleanup(umadv_touches_t *touches);

/* The access list of window step @j. */
static inline const umadv_trace_access_t *umadv__window_accesses(const umadv_window_t *window,
                                                                 uint32_t j, uint32_t *count_p)
{
    const umadv_trace_step_t *step = &window->trace->steps[window->first + j];

    *count_p = step->naccesses;
    /* a trace with no access at all has no array to offset into */
    return step->naccesses ? &window->trace->accesses[step->first_access] : NULL;
}

#endif
