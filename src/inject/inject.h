/*
 * The injection library (libumadv_inject.so): what runs an unmodified
 * program under umadv. umadv run loads it with LD_PRELOAD (and names it
 * as the NVTX injection); CUDA_INJECTION64_PATH may name it too.
 *
 *   inject.c   the process's knobs, its context, the iteration driver,
 *              the profile window (UMADV_PROFILE_SECONDS)
 *   route.c    cudaMalloc & co. routed into the pool (UMADV_ROUTE_MALLOC),
 *              cudaMallocManaged always
 *   nvtx.c     NVTX injection: the UMADV_ITERATION_RANGE range's starts
 *   launches.c iterations from the repeating launch sequence (period.c)
 *   launch_hooks.c  the CUDA runtime's kernel launches, interposed, as ids
 *   summary.c  what happens at exit: the window saved, the timeline
 *              (UMADV_TIMELINE) written, the counters appended to
 *              UMADV_RUN_SUMMARY
 *
 * The library links the public libumadv and carries its own copy of the
 * knob table (common/config.c), so a value means here what it means in
 * the library; it exports only the entry points named in umadv-run(1).
 */
#ifndef UMADV_INJECT_INJECT_H
#define UMADV_INJECT_INJECT_H

#include <stddef.h>
#include <stdint.h>

#include <umadv.h>

#include "common/config.h"

#define UMADV_INJECT_API __attribute__((visibility("default")))

/* The UMADV_* knobs, read once; NULL when a value is bad (logged, naming
 * the variable): the library then stays out of the program's way. */
const umadv_config_t *umadv__inject_config(void);

/* The process's context (umadv_torch_context: one per process, shared
 * with the PyTorch allocator entry points), made on first use; NULL when
 * it cannot be made (the first failure is logged). */
umadv_context_t umadv__inject_context(void);

/* An iteration of the program begins: profile, plan and mark it. */
void umadv__inject_iteration(void);

/* @source says an iteration begins: one unless UMADV_ITERATION_SOURCE
 * leaves @source out (under auto: the first of NVTX and the optimizer
 * seen wins for good; the launch sequence counts until one shows). With
 * @restart, the boundaries are numbered from 0 again (the launch
 * sequence found another loop), so that the new loop's iteration
 * UMADV_PROFILE_ITERATION is profiled and planned. */
void umadv__inject_mark(umadv_iteration_source_t source, int restart);

/* ---- profile mode over a window of wall time (UMADV_PROFILE_SECONDS) ---- */

/* Whether this process profiles a window of seconds, not an iteration:
 * UMADV_PROFILE_SECONDS in profile mode. Iteration boundaries then only
 * tell the window the time. */
int umadv__inject_window_mode(void);

/* Something the library sees (a launch, an allocation, an iteration
 * boundary), in window mode: the process's context is made, which
 * begins the window, and a window whose time is up is ended and saved.
 * 1 while the window may still end; 0 once it has (or is not window
 * mode): the caller may stop calling. */
int umadv__inject_window_seen(void);

/* At exit: a window still open ends now and is saved. */
void umadv__inject_window_close(void);

#ifdef UMADV_TEST_HOOKS
/* For tests: the window's clock (monotonic nanoseconds); NULL: the real one. */
void umadv__inject_set_clock(uint64_t (*now_ns)(void));
#endif

/* Whether the launch sequence may still begin iterations. */
int umadv__inject_launches_wanted(void);

/* A kernel launch (or, from PyTorch's hook, a module call) with @id:
 * fed to the period detector, an iteration begun where it says
 * (launches.c). 0 once launches no longer mark iterations (the caller
 * may stop calling). */
int umadv__inject_launch(uint64_t id);

/* The launch sequence's state, for the summary (launches.c). */
void umadv__inject_count_launches(uint64_t launches, uint32_t period);

/* Whether @caller's code lies in libumadv (route.c): its own calls of
 * the interposed functions go straight to CUDA. */
int umadv__inject_from_umadv(const void *caller);

/* What the driver saw, for the summary. */
typedef struct umadv_inject_counts {
    uint64_t iterations;      /* boundaries seen */
    uint64_t first_ns;        /* time of the first boundary */
    uint64_t last_ns;         /* time of the last */
    uint64_t replay_ns;       /* time of the first replayed iteration's boundary */
    uint64_t replay_first;    /* index of that iteration; 0: none */
    umadv_status_t plan_status; /* umadv_plan()'s answer at the boundary */
    int      planned;         /* umadv_plan() was called */
    uint64_t routed_mallocs;  /* cudaMalloc and cudaMallocAsync routed */
    uint64_t routed_managed;  /* cudaMallocManaged routed */
    uint64_t unrouted;        /* calls passed to CUDA: no context, another device */
    uint64_t ctx_iterations;  /* the context's count after the last boundary */
    int      program_marks;   /* the program marks iterations itself: left to it */
    int      profile_mode;    /* UMADV_PROFILE_OUTPUT is set */
    int      profile_saved;   /* profile mode: 1 saved, -1 failed, 0 not yet */
    uint64_t base;            /* the boundary numbered 0 now (a restart moves it) */
    int      source;          /* umadv_iteration_source_t of the last boundary;
                               * UMADV_ITERATION_SOURCE_COUNT: none yet */
    int      explicit_source; /* auto: the explicit source that won; AUTO: none */
    uint64_t launches;        /* launch ids given to the detector */
    uint32_t period;          /* the launch sequence's unit; 0: none */
    int      window;          /* UMADV_PROFILE_SECONDS: UMADV_INJECT_WINDOW_* */
    uint64_t window_begin_ns; /* when the window began */
    uint64_t window_end_ns;   /* when it ended */
} umadv_inject_counts_t;

#define UMADV_INJECT_WINDOW_NONE  0 /* not begun (or not window mode) */
#define UMADV_INJECT_WINDOW_OPEN  1 /* iteration 0 is recorded */
#define UMADV_INJECT_WINDOW_ENDED 2 /* ended and saved (or the save failed) */

void umadv__inject_counts(umadv_inject_counts_t *counts);
void umadv__inject_count_route(int managed, int routed);

/* ---- the entry points (umadv-run(1), INJECTION LIBRARY) ---- */

/* Python's start-up hook: the optimizer stepped, an iteration begins. */
UMADV_INJECT_API void umadv_inject_iteration(void);
/* Python's start-up hook: a module call with @id (the launch sequence of
 * a PyTorch program); 0 once the hook may stop calling. */
UMADV_INJECT_API int umadv_inject_launch(uint64_t id);
/* Python's exit: the summary record, written while the interpreter lives. */
UMADV_INJECT_API void umadv_inject_exit(void);
/* PyTorch's allocator in window mode (CUDAPluggableAllocator over this
 * library): umadv_torch_malloc and umadv_torch_free, with each
 * allocation seen by the window (umadv__inject_window_seen). */
UMADV_INJECT_API void *umadv_inject_torch_malloc(size_t size, int device, void *stream);
UMADV_INJECT_API void umadv_inject_torch_free(void *ptr, size_t size, int device, void *stream);
/* The libumadv this library runs on (for CUDAPluggableAllocator); NULL
 * if unknown. */
UMADV_INJECT_API const char *umadv_inject_libumadv_path(void);
/* CUDA_INJECTION64_PATH's entry: nonzero once the knobs are good. */
UMADV_INJECT_API int InitializeInjection(void);

/* Append this process's record to UMADV_RUN_SUMMARY, once (summary.c). */
void umadv__inject_summary_write(void);

/* What the library does when the process exits, once (summary.c): a
 * profile window still open is saved, the measured timeline written
 * (UMADV_TIMELINE: the process's context is never destroyed), the
 * summary record appended. */
void umadv__inject_exit(void);

#endif
