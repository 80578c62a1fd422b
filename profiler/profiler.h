/*
 * The CUPTI tracer behind the profiling pass.
 *
 * One per process (CUPTI has one subscriber, and its activity buffers no
 * user argument): the first context that opens it owns it; others run
 * without. It holds:
 *   - launch callbacks (runtime cudaLaunchKernel*, __cudaLaunchKernel,
 *     cudaGraphLaunch; driver cuLaunchKernel*, cuGraphLaunch; a driver
 *     launch made by a runtime launch is the same launch) that, while
 *     recording, ask the owner which step a launch belongs to, passing the
 *     launch's argument regions for the parameter scan;
 *   - kernel activity records and unified-memory counter records (GPU
 *     page faults, bytes each way by migration cause, thrashing).
 *   - while the owner watches copies (umadv__prof_watch_copies), the
 *     callbacks of the runtime's and the driver's memcpy and memset calls,
 *     which tell it the device-address ranges each call may touch before
 *     the call enqueues anything.
 * Nothing of this runs outside a recording, except the launch callbacks
 * while followed, the copy callbacks while watched, and the
 * unified-memory counters while the owner asks for faults to be counted
 * (replay validation): CUPTI's activity tracing costs every launch time on the
 * host (measured on an H200: the unified-memory counters add 20-40 us to
 * each kernel of a PyTorch VGG-16), so it is on only when needed.
 *
 * A recording is FULL (the profiling pass: launches numbered into steps,
 * their parameters scanned, faults collected) or TIMING (the timing pass:
 * launches numbered, no scan, faults only counted, as in replay).
 * A CUPTI that is taken or unsupported is a warning naming the reason;
 * the owner goes on without a profiler.
 */
#ifndef UMADV_PROFILER_PROFILER_H
#define UMADV_PROFILER_PROFILER_H

#include <stddef.h>
#include <stdint.h>

#include <umadv.h>

#include "profiler/attrib.h"
#include "profiler/scan.h"

typedef struct umadv_profiler umadv_profiler_t;

/* What the launch callback says of a launch. */
#define UMADV_PROF_LAUNCH_GRAPH     1u /* a graph launch: its kernels share its
                                        * correlation id, no regions */
#define UMADV_PROF_LAUNCH_NO_LAYOUT 2u /* arguments whose layout CUDA does not
                                        * give (full recordings) */
#define UMADV_PROF_LAUNCH_GUESSED   4u /* with NO_LAYOUT: @regions are the bytes its
                                        * first argument points at, guessed to be its
                                        * parameter struct (profiler_int.h) */

/* Called on the launching thread for each launch while recording, before
 * the launch is made: the trace step the launch belongs to, or
 * UMADV_STEP_NONE to leave it out. @name may be NULL; @flags are
 * UMADV_PROF_LAUNCH_*. */
typedef uint32_t (*umadv_prof_launch_fn)(void *arg, const char *name, unsigned flags,
                                         const umadv_prof_region_t *regions, size_t nregions);

/* Inside a umadv_prof_launch_fn: when the profiler's callback for this
 * launch began (umadv__now_ns), before its scan of the parameters: where
 * the application's own time before the launch ends (umadv-trace(5),
 * host_ns). */
uint64_t umadv__prof_launch_entered_ns(void);

/* Called on the launching thread for each launch outside recordings while
 * followed (umadv__prof_follow): at the launch call's entry, before the
 * kernel is enqueued (@exit 0), and at its exit (@exit 1). @stream is the
 * launch's stream (cudaStream_t; NULL for the default one). */
typedef void (*umadv_prof_follow_fn)(void *arg, const char *name, unsigned flags, int exit,
                                     void *stream);

/* A range of the address space that a copy or memset may read or write. */
typedef struct umadv_prof_range {
    const void *ptr;
    uint64_t    bytes;
} umadv_prof_range_t;

/* Called on the calling thread at the entry of each copy or memset call
 * while watched (umadv__prof_watch_copies), before the call enqueues or
 * does anything: the @n ranges (1 or 2: destination, then source) it may
 * touch. A pitched (2D, 3D) side is the span from its first byte to its
 * last; CUDA arrays and symbols are left out. A runtime call is told
 * once, not again for the driver call it makes. */
typedef void (*umadv_prof_copy_fn)(void *arg, const umadv_prof_range_t *ranges, size_t n);

/* What a recording collects. */
typedef enum umadv_prof_mode {
    UMADV_PROF_RECORD_FULL,   /* steps, scanned parameters, kernels, faults */
    UMADV_PROF_RECORD_SCAN,   /* the same without faults: the counters stay off */
    UMADV_PROF_RECORD_TIMING  /* steps and kernels; faults counted, not kept */
} umadv_prof_mode_t;

/* Unified-memory records by what they are, in umadv's own terms: callers
 * never see CUPTI's numbering (profiler.c maps it). */
typedef enum umadv_prof_um_kind {
    UMADV_PROF_UM_HTOD,       /* bytes moved to the GPU */
    UMADV_PROF_UM_DTOH,       /* bytes moved to the host */
    UMADV_PROF_UM_GPU_FAULT,  /* GPU page-fault groups */
    UMADV_PROF_UM_THRASHING,  /* the driver saw a range thrash */
    UMADV_PROF_UM_OTHER,      /* every other kind CUPTI reports */
    UMADV_PROF_UM_KINDS
} umadv_prof_um_kind_t;

/* What a recording collected; the arrays belong to the caller after
 * umadv__prof_record_stop (umadv__prof_result_cleanup frees them). */
typedef struct umadv_prof_result {
    umadv_prof_launch_t *launches;
    size_t               nlaunches;
    umadv_prof_kernel_t *kernels;
    size_t               nkernels;
    umadv_prof_fault_t  *faults;
    size_t               nfaults;
    uint64_t             htod_bytes;        /* moved to the GPU, every cause */
    uint64_t             htod_fault_bytes;  /* of which page faults caused */
    uint64_t             dtoh_bytes;        /* moved to the host */
    uint64_t             um_records[UMADV_PROF_UM_KINDS]; /* records by kind */
    uint64_t             um_ns[UMADV_PROF_UM_KINDS];      /* their durations, summed */
    uint64_t             wall_ns;      /* the recording, start to stop, on the host */
    int                  um_counters;  /* fault records were available */
    umadv_prof_activity_t activity;    /* full recordings: for the trace's timeline */
    uint64_t             scanned;      /* launches whose parameters were scanned */
    uint64_t             no_layout;    /* launches with arguments but no known layout */
    char                 no_layout_name[96]; /* the first of them */
} umadv_prof_result_t;

/* Subscribe to CUPTI through the table umadv__cupti_ops_select(@host_only)
 * gives; where there is none (host memory, no test table), *@prof_p is
 * NULL and UMADV_OK: nothing to trace. UMADV_ERR_STATE when another context
 * owns the profiler, UMADV_ERR_CUPTI or UMADV_ERR_UNSUPPORTED when CUPTI
 * cannot be used: each logged as a warning that names the reason. Unified
 * memory counters that are unsupported only lose the fault records (a
 * warning); the launch callbacks still work. */
umadv_status_t umadv__prof_open(int host_only, umadv_prof_launch_fn launch, void *arg,
                                umadv_profiler_t **prof_p);

/* Unsubscribe; NULL is a no-op. */
void umadv__prof_close(umadv_profiler_t *prof);

/* Start collecting what @mode says (dropping earlier records, flushed
 * first unless @flushed: the caller's recording stop has just flushed
 * them and no work ran since). */
umadv_status_t umadv__prof_record_start(umadv_profiler_t *prof, umadv_prof_mode_t mode,
                                        int flushed);

/* Wait for the device, flush CUPTI and hand over what was collected.
 * The unified-memory counters stay as they are until the next
 * umadv__prof_count_faults or recording start decides. */
umadv_status_t umadv__prof_record_stop(umadv_profiler_t *prof, umadv_prof_result_t *result);

void umadv__prof_result_cleanup(umadv_prof_result_t *result);

/* Follow launches outside recordings with @follow (NULL: stop). Only the
 * launch callbacks: no parameter scan, no kernel records, so a followed
 * launch costs the host little. A failure to enable them is warned. */
umadv_status_t umadv__prof_follow(umadv_profiler_t *prof, umadv_prof_follow_fn follow,
                                  void *arg);

/* Watch copies and memsets with @fn (NULL: stop), recording or not: the
 * runtime's (cudaMemcpy, cudaMemcpyAsync, their 2D, 3D and peer forms,
 * cudaMemset and its 2D, 3D and async forms, per-thread-stream variants
 * included) and the driver's (cuMemcpy, cuMemcpyAsync, cuMemcpyHtoD,
 * DtoH, DtoD, Peer, 2D, 3D, 3DPeer, cuMemsetD8/16/32, cuMemsetD2D8/16/32,
 * their async and per-thread forms). Their callbacks are on only while
 * watched: nothing is spent on copies otherwise. Stopping waits until no
 * call of the old @fn is running, so that its @arg may go away after
 * this returns (so never stop from inside @fn). A failure to enable the
 * callbacks is warned and returned; nothing is watched then. */
umadv_status_t umadv__prof_watch_copies(umadv_profiler_t *prof, umadv_prof_copy_fn fn,
                                        void *arg);

/* Count GPU faults outside recordings (@on) or not: the unified-memory
 * counters stay on between recordings only while asked (from a
 * recording's stop to this call, as they were). Called at an
 * iteration's boundary after umadv__prof_take_faults, whose flush
 * delivered the records of the work done: counters turned off here are
 * not flushed again. A no-op without counters. */
void umadv__prof_count_faults(umadv_profiler_t *prof, int on);

/* GPU faults seen outside recordings since the last call: fault groups
 * of page-fault records plus one per migration to the GPU that faults
 * caused (records of work still running may arrive with a later call).
 * Flushes CUPTI's records while the counters are on, unless @flushed
 * (the caller's recording stop has just flushed them). */
uint64_t umadv__prof_take_faults(umadv_profiler_t *prof, int flushed);

/* The first UMADV_PROF_FAULTS_KEPT fault records behind those groups
 * (after umadv__prof_take_faults, which flushes CUPTI's buffers), at most
 * @max into @out; the kept records are forgotten. */
#define UMADV_PROF_FAULTS_KEPT 256
size_t umadv__prof_take_fault_records(umadv_profiler_t *prof, umadv_prof_fault_t *out,
                                      size_t max);

/* THE CALL CENSUS (UMADV_CALL_CENSUS; census.c): count and time every
 * CUDA runtime and driver call of the application's threads from now on,
 * by function, every callback on for the profiler's life. A failure is
 * warned and returned; nothing is counted then. */
umadv_status_t umadv__prof_census_start(umadv_profiler_t *prof);

/* Log (info) the calls counted since the last report as iteration
 * @iteration's (UMADV_PROF_CENSUS_SETUP: those before the first), and
 * count again; a no-op without a census (or @prof). */
#define UMADV_PROF_CENSUS_SETUP UINT64_MAX
void umadv__prof_census_report(umadv_profiler_t *prof, uint64_t iteration);

/* Whether fault records are available. */
int umadv__prof_has_um_counters(const umadv_profiler_t *prof);

#endif
