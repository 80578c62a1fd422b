/*
 * Measure this machine's host<->GPU link once per process, so the planner
 * plans with its numbers rather than DESIGN.md's H200 ones: prefetch in
 * both directions in one large call and in many 2 MiB calls (bandwidth and
 * per-call latency), and demand paging with a kernel that touches every
 * page of a host-resident buffer, and the staged channel as the executor
 * uses it (linkstage.c: copies to pinned memory and discards, restores
 * back), where the driver has it. The buffer is a small fraction of the
 * free GPU memory; host memory is warmed first (the first eviction into
 * fresh host memory is several times slower, DESIGN.md).
 */
#ifndef UMADV_PROFILER_LINKPROBE_H
#define UMADV_PROFILER_LINKPROBE_H

#include <stdint.h>

#include <umadv.h>

#include "cuda_ops/cuda_ops.h"
#include "trace/trace.h"

/* Timings of one probe, in seconds. */
typedef struct umadv_link_sample {
    uint64_t big_bytes;      /* one call */
    uint64_t piece_bytes;    /* each of the small calls */
    uint32_t pieces;
    double   fetch_big, fetch_pieces;
    double   evict_big, evict_pieces;
    uint64_t fault_bytes;
    double   fault;          /* 0: not measured */
    /* an eviction and a fetch of duplex_bytes each, issued at once from
     * two threads: when each completed (0: not measured) */
    uint64_t duplex_bytes;
    uint32_t duplex_calls;   /* each way (0 counts as 1) */
    double   duplex_fetch, duplex_evict;
    /* the staged channel (linkstage.c): evictions out to pinned memory
     * and restores back, in one call and in stage_pieces calls (0: not
     * measured) */
    uint64_t stage_big_bytes, stage_piece_bytes;
    uint32_t stage_pieces;
    double   stage_out_big, stage_out_pieces;
    double   stage_in_big, stage_in_pieces;
    /* a staged eviction and a restore of stage_duplex_bytes each, in
     * stage_duplex_calls calls each, issued at once from two threads: when
     * each completed (0: not measured) */
    uint64_t stage_duplex_bytes;
    uint32_t stage_duplex_calls;
    double   stage_duplex_out, stage_duplex_in;
} umadv_link_sample_t;

/* Fit latency + bytes / bandwidth to @sample into @link: the measured
 * fields change, the others keep their values. The duplex figures:
 * while both ran, each direction kept a share of its own rate; the one
 * that ended first shows its share directly, the other's follows from
 * the work it had left, done at its full rate (a share of 1 or more is
 * full overlap: the fitted rate). Without a duplex sample they keep
 * their values. The staged figures are fitted as the migrations are,
 * the staged duplex ones as UVM's;
 * unmeasured or not believable, they are 0 (not measured: debug log),
 * which costs no status. A measured bandwidth
 * outside [100 MB/s, 10 TB/s] is not believed: the field keeps its value
 * and the result is UMADV_ERR_NOT_ENFORCED (logged). */
umadv_status_t umadv__link_fit(const umadv_link_sample_t *sample, umadv_link_model_t *link);

/* Time the staged channel of the current device @device through @ops, as
 * the executor uses it (linkstage.c), into @sample's stage_* fields.
 * UMADV_ERR_UNSUPPORTED when too little GPU memory is free or the driver
 * has no discard calls, or the failing call's status: the stage_* timings
 * are then 0 and a debug line says why. Its memory is released in every
 * case. */
umadv_status_t umadv__link_probe_stage(const umadv_cuda_ops_t *ops, int device,
                                       umadv_link_sample_t *sample);

/* Probe device @device (the calling thread's current device is restored)
 * and fit the result into @link. Cached: later calls for the same device
 * copy the first result. UMADV_ERR_CUDA (logged) and the like leave @link
 * unchanged. */
umadv_status_t umadv__link_probe(int device, umadv_link_model_t *link);

#endif
