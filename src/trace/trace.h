/*
 * The in-memory trace model: what one (or more) training iterations did to
 * managed memory. Plain data, no CUDA: the planner, the simulator, the
 * reader/writer and the synthetic generator all work on it.
 *
 * Memory is described at three levels: allocations (what the application
 * asked for), sections (fixed-size pieces of an allocation, the unit of
 * placement) and accesses (a step touching a run of sections of one
 * allocation). Indices are dense: allocation i has id i, step i is steps[i].
 */
#ifndef UMADV_TRACE_TRACE_H
#define UMADV_TRACE_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include <umadv.h>

#include "trace/activity.h"

/* "No step": an allocation that lives across iterations. */
#define UMADV_STEP_NONE UINT32_MAX

/* Section sizes accepted anywhere: a power of two in this range. */
#define UMADV_SECTION_SIZE_MIN     (UINT64_C(64) << 10)
#define UMADV_SECTION_SIZE_MAX     (UINT64_C(1) << 30)
#define UMADV_SECTION_SIZE_DEFAULT (UINT64_C(2) << 20)

/*
 * Cost model of the host<->GPU link. A transfer of n bytes in one call takes
 * latency + n / bandwidth; small calls are slow because of the latency term
 * (DESIGN.md: 2 MiB pieces reach under half the bandwidth of 64 MiB ones).
 */
typedef struct umadv_link_model {
    double fetch_bw;       /* host->device prefetch, bytes/s */
    double fetch_latency;  /* seconds per prefetch call */
    double evict_bw;       /* device->host prefetch (eviction), bytes/s */
    double evict_latency;  /* seconds per eviction call */
    double fault_bw;       /* demand paging inside a kernel, bytes/s */
    double fault_latency;  /* seconds per faulted section with nothing to copy */
    double remote_bw;      /* GPU reading/writing host-resident memory, bytes/s */
    /* UVM migrations while one runs each way at once (the link probe times
     * a fetch during an eviction): the rates each direction keeps then.
     * Equal to fetch_bw and evict_bw, the two directions overlap fully;
     * measured on an H100 (driver 580), a fetch crawls at about the
     * eviction's pace instead. 0: not measured, taken as full overlap
     * (optional in a trace file, written only when measured). */
    double duplex_fetch_bw;
    double duplex_evict_bw;
    /* The staged channel (schedule/core.h, STAGING), timed the way the
     * executor's lanes use it (exec/stage.c): an eviction copies to pinned
     * host memory (cudaMemcpyAsync, one call per piece) and discards the
     * range; a restore repopulates the range on the GPU
     * (cudaMemDiscardAndPrefetchBatchAsync) and copies back. Each as
     * latency + bytes / bandwidth per call. 0: not measured (optional in a
     * trace file, each written only when measured); the simulator then
     * times staged copies as it always has, and the planner weighs
     * evictions at the UVM figures. */
    double stage_evict_bw;
    double stage_evict_latency;
    double stage_restore_bw;
    double stage_restore_latency;
    /* The staged channel both ways at once (the probe stages out and
     * restores at the same time, each through a bounce buffer of its own,
     * as the executor's two lanes do): the rates each direction keeps
     * then, as the duplex figures above are UVM's. 0: not measured, taken
     * as full overlap (optional, written only when measured). */
    double stage_duplex_evict_bw;
    double stage_duplex_restore_bw;
} umadv_link_model_t;

/* The GPU the trace was recorded on (or modelled for). */
typedef struct umadv_device_desc {
    char     name[96];
    char     pci_bus_id[32];
    uint64_t memory;          /* bytes of device memory */
    int      cc_major, cc_minor;
    int      driver_version;  /* as cudaDriverGetVersion reports, e.g. 13000 */
} umadv_device_desc_t;

typedef enum umadv_step_kind {
    UMADV_STEP_KERNEL = 0,  /* one kernel launch */
    UMADV_STEP_LAYER  = 1,  /* a layer or region marked by the application */
    UMADV_STEP_COPY   = 2,  /* a memcpy/memset the application issued */
    UMADV_STEP_KIND_COUNT
} umadv_step_kind_t;

typedef struct umadv_trace_alloc {
    uint64_t           base;          /* device address (0 for synthetic) */
    uint64_t           size;          /* bytes */
    umadv_alloc_kind_t kind;
    /* Lifetime inside the trace, as global step indices: allocated just
     * before step alloc_step, freed just after step free_step. NONE means
     * it existed before the first step, or outlives the last. */
    uint32_t           alloc_step;
    uint32_t           free_step;
    uint32_t           first_section; /* index into trace->sections */
    uint32_t           nsections;
    char              *tag;           /* may be NULL */
    char              *site;          /* where it was allocated (profiler/callsite.h);
                                       * may be NULL */
    /* Evictions may stage its data (schedule/core.h, STAGING): what the
     * recording application declared (the PyTorch allocator's blocks,
     * umadv_set_stageable). 0 in traces that do not say. */
    uint8_t            stageable;
} umadv_trace_alloc_t;

typedef struct umadv_trace_section {
    uint32_t alloc;     /* owning allocation */
    uint32_t index;     /* position inside the allocation */
    uint64_t offset;    /* bytes from the allocation's base */
    uint64_t size;      /* section_size, less for an allocation's last one */
} umadv_trace_section_t;

typedef struct umadv_trace_access {
    uint32_t alloc;     /* allocation touched */
    uint32_t first;     /* first section, counted inside the allocation */
    uint32_t count;     /* sections in the run, >= 1 */
    uint32_t mode;      /* umadv_access_mode_t bits */
    uint32_t faults;    /* GPU fault groups the profiling pass saw here */
} umadv_trace_access_t;

/* A block the profile may have left on the GPU, unseen, while step @step
 * ran (api/profile.c: EVICTING WHAT MAY BE ON THE GPU, faults that
 * brought it back; TWO PASSES, left there on the first pass's plan's
 * word): that step may touch it without a trace of it, so no eviction
 * stages it across that step (schedule/core.h, STAGING). */
typedef struct umadv_trace_unseen {
    uint32_t alloc;
    uint32_t step;
} umadv_trace_unseen_t;

typedef struct umadv_trace_step {
    char             *name;         /* kernel or layer name; may be NULL */
    umadv_step_kind_t kind;
    uint32_t          iteration;    /* iterations are numbered from 0 */
    uint64_t          duration_ns;  /* compute time with all data resident */
    uint64_t          host_ns;      /* the application's host time from the previous
                                     * step's launch to this one's, its own launch call
                                     * included; 0: not known (umadv-trace(5)) */
    uint32_t          first_access; /* index into trace->accesses */
    uint32_t          naccesses;
} umadv_trace_step_t;

typedef struct umadv_trace {
    umadv_device_desc_t    device;
    umadv_link_model_t     link;
    uint64_t               section_size;
    char                  *source;     /* how it was made: "synthetic vgg16 ...", "cupti" */

    umadv_trace_alloc_t   *allocs;
    uint32_t               nallocs;
    umadv_trace_section_t *sections;   /* built by umadv__trace_finalize() */
    uint32_t               nsections;
    umadv_trace_step_t    *steps;
    uint32_t               nsteps;
    umadv_trace_access_t  *accesses;   /* grouped by step, in step order */
    uint32_t               naccesses;
    uint32_t               niterations;
    /* Steps whose access sets include a guessed parameter struct, or
     * rest on the application's declarations alone (the profiling pass,
     * api/profile.c): they may miss blocks the kernel reaches, so
     * nothing may be staged on their word. Not in the file. */
    uint32_t               guessed_steps;
    /* Blocks left unseen at a step, in no order; not in the file
     * either (a trace read back is simulated, never replayed). */
    umadv_trace_unseen_t  *unseen;
    uint32_t               nunseen;
    size_t                 unseen_cap;
    /* What CUPTI recorded in the profiled window (activity.h); empty in
     * traces that have none. */
    umadv_trace_activity_t activity;

    /* builder state */
    size_t                 allocs_cap, steps_cap, accesses_cap;
    int                    finalized;
} umadv_trace_t;

/* The link as DESIGN.md measured it on an H200 over PCIe (2026-11). */
void umadv__link_model_default(umadv_link_model_t *link);

/*
 * Physically plausible link figures: one rule for the trace reader, the
 * trace writer and the link probe. Generous both ways (a USB-attached
 * toy to ten times NVLink-C2C; a call may stall for seconds under a
 * loaded driver), tight enough that every time the model computes stays
 * finite and every byte count it derives fits an integer.
 */
#define UMADV_LINK_BW_MIN      1e6   /* bytes/s: 1 MB/s */
#define UMADV_LINK_BW_MAX      1e14  /* bytes/s: 100 TB/s */
#define UMADV_LINK_LATENCY_MAX 10.0  /* seconds per call; 0 is allowed */

/* One figure of umadv_link_model_t: its on-disk key and whether it is a
 * bandwidth (else a latency). */
typedef struct umadv_link_figure {
    const char *key;
    size_t      offset;  /* of the double in umadv_link_model_t */
    int         is_bw;
    int         optional;/* may be absent from a file, and 0: not measured */
} umadv_link_figure_t;

/* Whether @value is @figure's "not measured" (0 of an optional figure). */
static inline int umadv__link_figure_unset(const umadv_link_figure_t *figure, double value)
{
    return figure->optional && value == 0;
}

/* The figures, in the order the trace format writes them. */
const umadv_link_figure_t *umadv__link_figures(size_t *count_p);

/* Their keys, in that order, NULL-terminated (the reader's link record). */
extern const char *const umadv__link_keys[];

/* Whether @value is plausible for a figure of that kind (finite, in
 * [UMADV_LINK_BW_MIN, UMADV_LINK_BW_MAX] or [0, UMADV_LINK_LATENCY_MAX]). */
int umadv__link_figure_plausible(int is_bw, double value);

/* The key of the first implausible figure of @link, or NULL if all are
 * plausible. */
const char *umadv__link_model_implausible(const umadv_link_model_t *link);

/* Whether @link has the staged channel's figures for evictions (and for
 * restores): measured, the simulator and the planner time it with them. */
static inline int umadv__link_stage_evict_known(const umadv_link_model_t *link)
{
    return link->stage_evict_bw > 0;
}

static inline int umadv__link_stage_restore_known(const umadv_link_model_t *link)
{
    return link->stage_restore_bw > 0;
}

/* Seconds for one call moving @bytes at @bw with @latency. */
static inline double umadv__link_time(double latency, double bw, uint64_t bytes)
{
    return latency + (double)bytes / bw;
}

/* Start an empty trace. @section_size must be a power of two in
 * [UMADV_SECTION_SIZE_MIN, UMADV_SECTION_SIZE_MAX]. */
umadv_status_t umadv__trace_init(umadv_trace_t *trace, uint64_t section_size);

/* Free everything the trace owns; the struct may be reused with _init. */
void umadv__trace_cleanup(umadv_trace_t *trace);

/* A copy of @from into @to that owns its memory: everything but the
 * allocations' sites and the CUPTI activity (what a plan reads, with the
 * names and tags its messages give). On failure @to holds nothing. */
umadv_status_t umadv__trace_copy(const umadv_trace_t *from, umadv_trace_t *to);

/* Whether @a and @b hold the same figures: all a plan reads (names, tags,
 * sites, source and activity aside). */
int umadv__trace_same_figures(const umadv_trace_t *a, const umadv_trace_t *b);

umadv_status_t umadv__trace_set_source(umadv_trace_t *trace, const char *source);
/* Append "; @note" to the source (out of memory: the old text stays). */
umadv_status_t umadv__trace_source_note(umadv_trace_t *trace, const char *note);

/* Append an allocation; its id is the next index. */
umadv_status_t umadv__trace_add_alloc(umadv_trace_t *trace, uint64_t base, uint64_t size,
                                      umadv_alloc_kind_t kind, const char *tag,
                                      uint32_t *id_p);

/* Lifetime in global step indices (UMADV_STEP_NONE for open ends). */
umadv_status_t umadv__trace_set_lifetime(umadv_trace_t *trace, uint32_t alloc,
                                         uint32_t alloc_step, uint32_t free_step);

/* Allocation @alloc, born inside the trace's window and alive at its end,
 * was freed after its last step, before the next iteration's first: it
 * dies with the window (free_step = the last step). Allowed on a
 * finalized trace (api/record.c, THE TAIL). UMADV_ERR_INVALID_PARAM when
 * it was not born inside, or was freed there already. */
umadv_status_t umadv__trace_end_with_window(umadv_trace_t *trace, uint32_t alloc);

/* Where allocation @alloc was made (copied; NULL: not known). */
umadv_status_t umadv__trace_set_site(umadv_trace_t *trace, uint32_t alloc, const char *site);

/* Append a step; iterations must not decrease. */
umadv_status_t umadv__trace_add_step(umadv_trace_t *trace, const char *name,
                                     umadv_step_kind_t kind, uint32_t iteration,
                                     uint64_t duration_ns, uint32_t *step_p);

/* Add an access by byte range to the last step added. Ranges that touch
 * or overlap an earlier access of the same step to the same allocation are
 * merged at finalize. */
umadv_status_t umadv__trace_add_access(umadv_trace_t *trace, uint32_t alloc,
                                       uint64_t offset, uint64_t size, uint32_t mode,
                                       uint32_t faults);

/* Whether an access of the last step added (not yet finalized) covers
 * the section at @offset of @alloc. */
int umadv__trace_last_step_covers(const umadv_trace_t *trace, uint32_t alloc, uint64_t offset);

/* Add an access by section run (the on-disk form). */
umadv_status_t umadv__trace_add_access_sections(umadv_trace_t *trace, uint32_t alloc,
                                                uint32_t first, uint32_t count,
                                                uint32_t mode, uint32_t faults);

/* @alloc was left on the GPU, unseen, at @step (umadv_trace_unseen_t). */
umadv_status_t umadv__trace_add_unseen(umadv_trace_t *trace, uint32_t alloc, uint32_t step);

/* Build sections, merge accesses, and check every invariant. On failure
 * writes the reason to @why (may be NULL) and leaves the trace unfinalized. */
umadv_status_t umadv__trace_finalize(umadv_trace_t *trace, char *why, size_t why_len);

/* Steps [*first_p, *first_p + *count_p) of iteration @iteration.
 * UMADV_ERR_NOT_FOUND if the trace has no such iteration. */
umadv_status_t umadv__trace_iteration_steps(const umadv_trace_t *trace, uint32_t iteration,
                                            uint32_t *first_p, uint32_t *count_p);

/* The same, for a caller that needs the iteration: the miss is logged as
 * an error naming the iteration and how many the trace has. */
umadv_status_t umadv__trace_iteration_require(const umadv_trace_t *trace, uint32_t iteration,
                                              uint32_t *first_p, uint32_t *count_p);

/* Bytes of section run [first, first+count) of @alloc. */
uint64_t umadv__trace_run_bytes(const umadv_trace_t *trace, uint32_t alloc,
                                uint32_t first, uint32_t count);

/* Sort the section ids @sections[0..@count) and call @fn once for each
 * run of adjacent sections of one allocation (one prefetch or eviction
 * call each, for the executor and the simulator alike); returns the
 * number of runs. */
typedef void (*umadv_trace_run_fn)(void *arg, uint32_t alloc, uint32_t first, uint32_t count);
size_t umadv__trace_for_runs(const umadv_trace_t *trace, uint32_t *sections, size_t count,
                             umadv_trace_run_fn fn, void *arg);

/* Whether allocation @a has its pages to itself: a block of a section or
 * more (the pool packs smaller ones 256 bytes apart, sharing pages), so
 * that a discard of its range takes no one else's bytes. */
int umadv__trace_alloc_owns_pages(const umadv_trace_t *trace, uint32_t a);

/* Whether allocation @a may be staged or released (schedule/core.h,
 * STAGING): marked stageable and owning its pages. */
int umadv__trace_alloc_stageable(const umadv_trace_t *trace, uint32_t a);

/* Bytes of the allocations that may be staged; 0: none (every trace made
 * before the flag). */
uint64_t umadv__trace_stageable_bytes(const umadv_trace_t *trace);

/* Global section index of section @index of @alloc. */
static inline uint32_t umadv__trace_section_id(const umadv_trace_t *trace, uint32_t alloc,
                                               uint32_t index)
{
    return trace->allocs[alloc].first_section + index;
}

const char *umadv__alloc_kind_name(umadv_alloc_kind_t kind);
int umadv__alloc_kind_parse(const char *name, umadv_alloc_kind_t *kind_p);
const char *umadv__step_kind_name(umadv_step_kind_t kind);
int umadv__step_kind_parse(const char *name, umadv_step_kind_t *kind_p);

#endif
