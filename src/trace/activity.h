/*
 * The measured activity of a profiled window, as CUPTI recorded it: the
 * kernels that ran (with their names and steps), the GPU page-fault
 * groups, the migrations of unified memory by direction and cause, and
 * the ranges the driver saw thrash. Optional in a trace (umadv-trace(5),
 * ev and kname records): traces made before it, or by umadv synth, have
 * none. `umadv profile --timeline` draws it, and the report takes each
 * kernel's fault stalls from it. Plain data, no CUDA.
 */
#ifndef UMADV_TRACE_ACTIVITY_H
#define UMADV_TRACE_ACTIVITY_H

#include <stddef.h>
#include <stdint.h>

#include <umadv.h>

typedef enum umadv_event_kind {
    UMADV_EVENT_KERNEL, /* a kernel ran */
    UMADV_EVENT_FAULT,  /* GPU page-fault groups were serviced: value = groups */
    UMADV_EVENT_HTOD,   /* UVM moved value bytes to the GPU */
    UMADV_EVENT_DTOH,   /* ... to the host */
    UMADV_EVENT_THRASH, /* the driver saw a range thrash */
    UMADV_EVENT_KIND_COUNT
} umadv_event_kind_t;

/* Why a migration ran, in umadv's terms (profiler.c maps CUPTI's
 * CUpti_ActivityUnifiedMemoryMigrationCause onto these). */
typedef enum umadv_migration_cause {
    UMADV_CAUSE_UNKNOWN,
    UMADV_CAUSE_USER,        /* a prefetch the program (or umadv) asked for */
    UMADV_CAUSE_FAULT,       /* a page fault (coherence) */
    UMADV_CAUSE_SPECULATIVE, /* the driver's speculative prefetch around a fault */
    UMADV_CAUSE_EVICTION,    /* the driver made room on the GPU */
    UMADV_CAUSE_ACCESS_COUNTERS, /* access-counter driven migration */
    UMADV_CAUSE_COUNT
} umadv_migration_cause_t;

/* Most of the window a trace may describe: an event's start and its
 * duration are each at most this (one hour, as a step's duration). */
#define UMADV_ACTIVITY_MAX_NS (UINT64_C(3600) * 1000000000)

/* A kernel event with no name (UINT32_MAX, as UMADV_STEP_NONE). */
#define UMADV_EVENT_NO_NAME UINT32_MAX

typedef struct umadv_trace_event {
    uint64_t start_ns;  /* from the window's first record */
    uint64_t dur_ns;
    uint64_t address;   /* faults, migrations, thrashing: where; kernels 0 */
    uint64_t value;     /* migrations: bytes; faults: groups; else 0 */
    uint32_t step;      /* kernels: the trace step of its launch, or UMADV_STEP_NONE */
    uint32_t name;      /* kernels: index into names, or UMADV_EVENT_NO_NAME */
    uint8_t  kind;      /* umadv_event_kind_t */
    uint8_t  cause;     /* migrations: umadv_migration_cause_t */
} umadv_trace_event_t;

typedef struct umadv_trace_activity {
    umadv_trace_event_t *events;   /* sorted by start once the trace is finalized */
    uint32_t             nevents;
    size_t               events_cap;
    char               **names;    /* kernel names, each once */
    uint32_t             nnames;
    size_t               names_cap;
    uint64_t             dropped;  /* records past the profiler's bound, not kept */
} umadv_trace_activity_t;

/* A name of each kind and cause, as the trace file and the tools write
 * them; and back (0, or -1 for no such name). */
const char *umadv__event_kind_name(umadv_event_kind_t kind);
int umadv__event_kind_parse(const char *name, umadv_event_kind_t *kind_p);
const char *umadv__migration_cause_name(umadv_migration_cause_t cause);
int umadv__migration_cause_parse(const char *name, umadv_migration_cause_t *cause_p);

/* Append an event (its name index and step are checked at finalize). */
umadv_status_t umadv__activity_add_event(umadv_trace_activity_t *act,
                                         const umadv_trace_event_t *event);

/* Append a kernel name (copied); its index in *@index_p (may be NULL). */
umadv_status_t umadv__activity_add_name(umadv_trace_activity_t *act, const char *name,
                                        uint32_t *index_p);

void umadv__activity_cleanup(umadv_trace_activity_t *act);

/* Check every event against the trace's @nsteps and the names, and sort
 * them by start (then kind, address, value: a total order, so the file
 * is the same bytes whatever order they came in). UMADV_ERR_CORRUPT with
 * the reason in @why. */
umadv_status_t umadv__activity_finalize(umadv_trace_activity_t *act, uint32_t nsteps,
                                        char *why, size_t why_len);

/* What page faults cost each kernel event (the events sorted by start):
 * @faults[i] the fault groups of fault events whose interval overlaps
 * kernel event i's, @stall_ns[i] the time of that kernel's interval
 * covered by any fault group (overlapping fault groups counted once);
 * both 0 for other events. A fault group overlapping two concurrent
 * kernels counts for both: either may be the one waiting. */
umadv_status_t umadv__activity_fault_costs(const umadv_trace_activity_t *act,
                                           uint64_t *faults, uint64_t *stall_ns);

#endif
