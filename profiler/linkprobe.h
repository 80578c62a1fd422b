/*
 * Measure this machine's host<->GPU link once per process, so the planner
 * plans with its numbers rather than DESIGN.md's H200 ones: prefetch in
 * both directions in one large call and in many 2 MiB calls (bandwidth and
 * per-call latency), and demand paging with a kernel that touches every
 * page of a host-resident buffer. The buffer is a small fraction of the
 * free GPU memory; host memory is warmed first (the first eviction into
 * fresh host memory is several times slower, DESIGN.md).
 */
#ifndef UMADV_PROFILER_LINKPROBE_H
#define UMADV_PROFILER_LINKPROBE_H

#include <stdint.h>

#include <umadv.h>

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
} umadv_link_sample_t;

/* Fit latency + bytes / bandwidth to @sample into @link: the measured
 * fields change, the others keep their values. The duplex figures:
 * while both ran, each direction kept a share of its own rate; the one
 * that ended first shows its share directly, the other's follows from
 * the work it had left, done at its full rate (a share of 1 or more is
 * full overlap: the fitted rate). Without a duplex sample they keep
 * their values. A measured bandwidth
 * outside [100 MB/s, 10 TB/s] is not believed: the field keeps its value
 * and the result is UMADV_ERR_NOT_ENFORCED (logged). */
umadv_status_t umadv__link_fit(const umadv_link_sample_t *sample, umadv_link_model_t *link);

/* Probe device @device (the calling thread's current device is restored)
 * and fit the result into @link. Cached: later calls for the same device
 * copy the first result. UMADV_ERR_CUDA (logged) and the like leave @link
 * unchanged. */
umadv_status_t umadv__link_probe(int device, umadv_link_model_t *link);

#endif
