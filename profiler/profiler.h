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
 * Nothing of this runs outside a recording, except the unified-memory
 * counters while the owner asks for faults to be counted (replay
 * validation): CUPTI's activity tracing costs every launch time on the
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
#include "profiler/cupti_ops.h"
#include "profiler/scan.h"

typedef struct umadv_profiler umadv_profiler_t;

/* What the launch callback says of a launch. */
#define UMADV_PROF_LAUNCH_GRAPH     1u /* a graph launch: its kernels share its
                                        * correlation id, no regions */
#define UMADV_PROF_LAUNCH_NO_LAYOUT 2u /* arguments whose layout CUDA does not
                                        * give (full recordings): not scanned */

/* Called on the launching thread for each launch while recording, before
 * the launch is made: the trace step the launch belongs to, or
 * UMADV_STEP_NONE to leave it out. @name may be NULL; @flags are
 * UMADV_PROF_LAUNCH_*. */
typedef uint32_t (*umadv_prof_launch_fn)(void *arg, const char *name, unsigned flags,
                                         const umadv_prof_region_t *regions, size_t nregions);

/* Called on the launching thread for each launch outside recordings while
 * followed (umadv__prof_follow): at the launch call's entry, before the
 * kernel is enqueued (@exit 0), and at its exit (@exit 1). @stream is the
 * launch's stream (cudaStream_t; NULL for the default one). */
typedef void (*umadv_prof_follow_fn)(void *arg, const char *name, unsigned flags, int exit,
                                     void *stream);

/* What a recording collects. */
typedef enum umadv_prof_mode {
    UMADV_PROF_RECORD_FULL,   /* steps, scanned parameters, kernels, faults */
    UMADV_PROF_RECORD_TIMING  /* steps and kernels; faults counted, not kept */
} umadv_prof_mode_t;

/* Migration causes, as CUPTI numbers them (CUpti_ActivityUnifiedMemoryMigrationCause). */
#define UMADV_PROF_CAUSES 6

/* What a recording collected; the arrays belong to the caller after
 * umadv__prof_record_stop (umadv__prof_result_cleanup frees them). */
typedef struct umadv_prof_result {
    umadv_prof_launch_t *launches;
    size_t               nlaunches;
    umadv_prof_kernel_t *kernels;
    size_t               nkernels;
    umadv_prof_fault_t  *faults;
    size_t               nfaults;
    uint64_t             htod_bytes[UMADV_PROF_CAUSES]; /* by migration cause */
    uint64_t             dtoh_bytes[UMADV_PROF_CAUSES];
    uint64_t             thrashing;    /* thrashing records */
    uint64_t             um_records[CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_COUNT]; /* by kind */
    int                  um_counters;  /* fault records were available */
    uint64_t             scanned;      /* launches whose parameters were scanned */
    uint64_t             no_layout;    /* launches with arguments but no known layout */
    char                 no_layout_name[96]; /* the first of them */
} umadv_prof_result_t;

/* Subscribe to CUPTI through @ops. UMADV_ERR_STATE when another context
 * owns the profiler, UMADV_ERR_CUPTI or UMADV_ERR_UNSUPPORTED when CUPTI
 * cannot be used: each logged as a warning that names the reason. Unified
 * memory counters that are unsupported only lose the fault records (a
 * warning); the launch callbacks still work. */
umadv_status_t umadv__prof_open(const umadv_cupti_ops_t *ops, umadv_prof_launch_fn launch,
                                void *arg, umadv_profiler_t **prof_p);

/* Unsubscribe; NULL is a no-op. */
void umadv__prof_close(umadv_profiler_t *prof);

/* Start collecting what @mode says (dropping earlier records). */
umadv_status_t umadv__prof_record_start(umadv_profiler_t *prof, umadv_prof_mode_t mode);

/* Wait for the device, flush CUPTI and hand over what was collected. */
umadv_status_t umadv__prof_record_stop(umadv_profiler_t *prof, umadv_prof_result_t *result);

void umadv__prof_result_cleanup(umadv_prof_result_t *result);

/* Follow launches outside recordings with @follow (NULL: stop). Only the
 * launch callbacks: no parameter scan, no kernel records, so a followed
 * launch costs the host little. A failure to enable them is warned. */
umadv_status_t umadv__prof_follow(umadv_profiler_t *prof, umadv_prof_follow_fn follow,
                                  void *arg);

/* Count GPU faults outside recordings (@on) or not: the unified-memory
 * counters stay on between recordings only while asked. A no-op without
 * counters. */
void umadv__prof_count_faults(umadv_profiler_t *prof, int on);

/* GPU faults seen outside recordings since the last call: fault groups
 * of page-fault records plus one per migration to the GPU that faults
 * caused (records of work still running may arrive with a later call). */
uint64_t umadv__prof_take_faults(umadv_profiler_t *prof);

/* Whether fault records are available. */
int umadv__prof_has_um_counters(const umadv_profiler_t *prof);

/* ---- for tests: what CUPTI hands the callbacks ------------------------ */

/* The subscriber callback (CUpti_CallbackFunc). */
void umadv__prof_callback(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                          const void *cbdata);

/* The buffer callbacks (CUpti_BuffersCallbackRequestFunc / CompleteFunc). */
void umadv__prof_buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records);
void umadv__prof_buffer_completed(CUcontext context, uint32_t stream_id, uint8_t *buffer,
                                  size_t size, size_t valid);

#endif
