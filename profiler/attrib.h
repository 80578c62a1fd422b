/*
 * Attribution of what CUPTI saw to the steps of a recorded trace. Plain
 * data, no CUDA: tested with synthetic records.
 *
 * Kernels reach steps through the correlation id of their launch (the
 * launch callback numbered the step). GPU page faults carry no stream and
 * no correlation id, only the time the driver began to service them and
 * the page: a fault goes to the step of the kernel running on its device
 * at that time (the latest started, when kernels overlap), else to the
 * kernel that ran last before it on that device. Its address goes to the
 * trace allocation that held the page at that step (addresses are reused
 * after a free, so the lifetime decides).
 */
#ifndef UMADV_PROFILER_ATTRIB_H
#define UMADV_PROFILER_ATTRIB_H

#include <stddef.h>
#include <stdint.h>

#include <umadv.h>

#include "trace/trace.h"

/* A launch the callback saw, and the trace step it went to. */
typedef struct umadv_prof_launch {
    uint32_t correlation_id;
    uint32_t step;
} umadv_prof_launch_t;

/* A kernel's activity record. */
typedef struct umadv_prof_kernel {
    uint32_t correlation_id;
    uint32_t device;
    uint64_t start, end;   /* CUPTI timestamps, ns */
    uint32_t name;         /* in umadv_prof_activity_t's names, or UMADV_EVENT_NO_NAME */
} umadv_prof_kernel_t;

/* What a full recording keeps for the trace's activity (trace/activity.h)
 * besides its kernels: every unified-memory record up to
 * UMADV_PROF_EVENTS_MAX (later ones only counted), with CUPTI
 * timestamps, and the kernel names its kernels point at. */
typedef struct umadv_prof_activity {
    umadv_trace_event_t *events;
    size_t               nevents, events_cap;
    uint64_t             dropped;   /* records past the bound */
    char               **names;     /* each kernel name once */
    size_t               nnames, names_cap;
} umadv_prof_activity_t;

/* The bound: 256 Ki records of 40 bytes, 10 MiB in the profiled process
 * (a PyTorch ResNet-50 iteration under faults makes some tens of
 * thousands). */
#define UMADV_PROF_EVENTS_MAX (UINT32_C(1) << 18)

/* A GPU page fault, or a migration to the GPU that faults caused. */
typedef struct umadv_prof_fault {
    uint64_t address;
    uint64_t bytes;        /* a migration's size; 0 for a fault (its page) */
    uint64_t start;        /* the driver began servicing it / the copy began */
    uint32_t device;
    uint32_t groups;       /* fault groups for the page; 1 for a migration */
    uint32_t mode;         /* umadv_access_mode_t */
} umadv_prof_fault_t;

/* Where a kernel ran, in step terms; sorted by start for the search. */
typedef struct umadv_prof_interval {
    uint64_t start, end;
    uint32_t step;
    uint32_t device;
} umadv_prof_interval_t;

/* An access found by the profiler, to merge into the trace. */
typedef struct umadv_prof_access {
    uint32_t step;
    uint32_t alloc;
    uint64_t offset;       /* bytes into the allocation */
    uint64_t size;
    uint32_t mode;
    uint32_t faults;
} umadv_prof_access_t;

typedef struct umadv_prof_attrib_stats {
    uint64_t kernels;          /* kernel records seen */
    uint64_t kernels_unknown;  /* with no launch of the recording */
    uint64_t faults;           /* fault records seen */
    uint64_t fault_groups;
    uint64_t faults_attributed;
    uint64_t faults_no_kernel; /* no kernel of the recording near it */
    uint64_t faults_no_alloc;  /* the page is no umadv allocation */
} umadv_prof_attrib_stats_t;

/* Kernel intervals of @kernels whose launches are in @launches (any order;
 * @launches is sorted in place), sorted by start, in *@intervals_p (free()
 * it). Kernel steps get the time their kernels ran as duration (the span
 * of them, for a graph). */
umadv_status_t umadv__prof_attrib_kernels(umadv_trace_t *trace, umadv_prof_launch_t *launches,
                                          size_t nlaunches, const umadv_prof_kernel_t *kernels,
                                          size_t nkernels, umadv_prof_interval_t **intervals_p,
                                          size_t *nintervals_p,
                                          umadv_prof_attrib_stats_t *stats);

/* @spans[s] (@nsteps entries): how long the kernels of step s ran, first
 * start to last end, or 0 when none ran (@launches is sorted in place).
 * The timing pass's durations. */
umadv_status_t umadv__prof_kernel_spans(umadv_prof_launch_t *launches, size_t nlaunches,
                                        const umadv_prof_kernel_t *kernels, size_t nkernels,
                                        uint32_t nsteps, uint64_t *spans);

/* Of @kernels' records: *@span_ns from the first start to the last end,
 * and *@busy_ns the time some kernel ran (the union of their intervals);
 * both 0 when there are none. Where the profiled iteration's time goes
 * on the GPU (api/profile.c's report). */
umadv_status_t umadv__prof_kernel_busy(const umadv_prof_kernel_t *kernels, size_t nkernels,
                                       uint64_t *span_ns, uint64_t *busy_ns);

/* The step index for a fault at @time on @device, or UMADV_STEP_NONE. */
uint32_t umadv__prof_attrib_step(const umadv_prof_interval_t *intervals, size_t n,
                                 uint64_t max_duration, uint64_t time, uint32_t device);

/* What of the GPU a fault's page stands for: UVM migrates up to a 2 MiB
 * block around a faulted page, and a fault can show in a block before
 * the one the kernel touched (api/profile.c, step_covers). */
#define UMADV_PROF_FAULT_PAGE (UINT64_C(2) * 1024 * 1024)

/* Where @faults put data on the GPU: @fn(@arg, allocation, step) for
 * each allocation of @trace that a fault's range meets (a migration's
 * bytes; a fault's UMADV_PROF_FAULT_PAGE around its page) and that is
 * alive at the fault's step; a fault at no kernel's time goes to every
 * allocation its range meets, with UMADV_STEP_NONE (the caller cannot
 * tell when). An allocation may come more than once. */
typedef void (*umadv_prof_arrival_fn)(void *arg, uint32_t alloc, uint32_t step);
umadv_status_t umadv__prof_attrib_arrivals(const umadv_trace_t *trace,
                                           const umadv_prof_interval_t *intervals, size_t n,
                                           const umadv_prof_fault_t *faults, size_t nfaults,
                                           umadv_prof_arrival_fn fn, void *arg);

/* Accesses of @faults, one per fault, appended to *@acc_p (*@nacc_p
 * entries, *@cap_p capacity, umadv__array_reserve growth). */
umadv_status_t umadv__prof_attrib_faults(const umadv_trace_t *trace,
                                         const umadv_prof_interval_t *intervals, size_t n,
                                         const umadv_prof_fault_t *faults, size_t nfaults,
                                         umadv_prof_access_t **acc_p, size_t *nacc_p,
                                         size_t *cap_p, umadv_prof_attrib_stats_t *stats);

/* The allocations of a trace by base address, for umadv__prof_alloc_at. */
typedef struct umadv_prof_alloc_ref {
    uint64_t base;
    uint32_t id;
} umadv_prof_alloc_ref_t;

/* Sort @trace's allocations by base into *@refs_p (free() it); the
 * largest size goes to *@max_size_p. */
umadv_status_t umadv__prof_alloc_order(const umadv_trace_t *trace,
                                       umadv_prof_alloc_ref_t **refs_p, uint64_t *max_size_p);

/* The allocation of @trace that holds @address at @step, or UINT32_MAX.
 * Addresses are reused after a free: the lifetime decides. */
uint32_t umadv__prof_alloc_at(const umadv_trace_t *trace, const umadv_prof_alloc_ref_t *refs,
                              uint64_t max_size, uint64_t address, uint32_t step);

/* The recording's kernels (their launches in @launches, any order;
 * sorted in place) and unified-memory records as @trace's activity,
 * timed from the first of them; a kernel's step is its launch's. Records
 * starting past UMADV_ACTIVITY_MAX_NS, or lasting longer, are counted
 * as dropped. On failure (out of memory) @trace has no activity. */
umadv_status_t umadv__prof_attrib_activity(umadv_trace_t *trace, umadv_prof_launch_t *launches,
                                           size_t nlaunches, const umadv_prof_kernel_t *kernels,
                                           size_t nkernels, const umadv_prof_activity_t *act);

/* Free what @act holds. */
void umadv__prof_activity_cleanup(umadv_prof_activity_t *act);

/* Rebuild the unfinalized @trace with @extra accesses added to their steps
 * after the ones it had; its activity and its unseen blocks move over.
 * On failure @trace is unchanged. */
umadv_status_t umadv__prof_trace_merge(umadv_trace_t *trace, umadv_prof_access_t *extra,
                                       size_t nextra);

#endif
