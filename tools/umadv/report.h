/*
 * The report of a trace (umadv report, and umadv profile after its run):
 * the summary tables of cmd_report.c and the advice of advice.c, as text
 * or as JSON with the same data.
 */
#ifndef UMADV_TOOLS_REPORT_H
#define UMADV_TOOLS_REPORT_H

#include <stdint.h>
#include <stdio.h>

#include "json.h"
#include "trace/trace.h"

#define UMADV_REPORT_TOP_DEFAULT 10
#define UMADV_REPORT_BUDGET_RULE \
    "a size above 0 (8G, 512M, 1.5GiB) or a percentage of the footprint above 0 and at most 100"

typedef struct umadv_report_opts {
    uint32_t    top;     /* rows of each top list, >= 1 */
    uint64_t    budget;  /* the advice's budget; 0: the one the advice finds */
    double      budget_percent; /* or this share of the footprint; 0: none */
    const char *program; /* the command the advice names; NULL: "PROGRAM" */
    const char *timeline; /* also write the measured window there; NULL: no */
} umadv_report_opts_t;

/* Why a timeline cannot go to "-": the report is on standard output. */
#define UMADV_REPORT_TIMELINE_DASH "--timeline needs a file: the report is on standard output"

/* --budget's value: a size ("8G") or a share of the footprint ("50%")
 * into @opts; 0, or -1 when it is neither. */
int umadv__report_parse_budget(const char *text, umadv_report_opts_t *opts);

/* Read @path and print its report on standard output (@json: as JSON),
 * and with @opts->timeline its measured window as a Chrome trace there
 * (a trace with no activity is an error). 0, or an exit status after
 * the error. */
int umadv__report_print(const char *path, const umadv_report_opts_t *opts, int json);

/* The same JSON report into the file @json_path (umadv(1), OUTPUT FILES),
 * the text on standard output. 0, or an exit status after the error. */
int umadv__report_print_both(const char *path, const umadv_report_opts_t *opts,
                             const char *json_path);

/* ---- kernels by fault stall (report_kernels.c) ---- */

/* One kernel name, every launch of it summed. */
typedef struct umadv_report_kernel {
    uint32_t name;      /* in the trace's activity names, or UMADV_EVENT_NO_NAME */
    uint64_t launches;
    uint64_t run_ns;    /* its runs' time */
    uint64_t faults;    /* fault groups serviced while it ran */
    uint64_t stall_ns;  /* of its runs' time, what fault groups covered */
} umadv_report_kernel_t;

typedef struct umadv_report_kernels {
    umadv_report_kernel_t *rows;    /* by stall, then faults, then run time */
    uint32_t               nrows;   /* those that faulted or stalled, first */
    uint32_t               faulted;
    uint64_t               launches; /* kernel runs measured */
    uint64_t               stall_ns; /* summed over them */
} umadv_report_kernels_t;

/* The rows of @trace's activity (none without). 0, or an exit status
 * after the error; free kernels->rows. */
int umadv__report_kernels(const umadv_trace_t *trace, umadv_report_kernels_t *kernels);

/* The top @top rows; nothing for a trace without activity. */
void umadv__report_kernels_print_text(const umadv_trace_t *trace,
                                      const umadv_report_kernels_t *kernels, uint32_t top);
void umadv__report_kernels_print_json(const umadv_trace_t *trace,
                                      const umadv_report_kernels_t *kernels, uint32_t top,
                                      umadv_json_t *json);

/* ---- the advice (advice.c) ---- */

/* One budget tried: the plan and demand simulated under it. */
typedef struct umadv_advice_budget {
    unsigned percent;       /* of the footprint; 0: the --budget given */
    uint64_t bytes;
    int      fits;          /* no step needs more than the budget */
    double   plan_s, demand_s; /* simulated iteration times */
    uint64_t plan_faults, demand_faults; /* sections faulted in */
    uint64_t demand_fault_bytes; /* what demand's faults copied (first touches
                                  * of fresh memory copy nothing) */
} umadv_advice_budget_t;

/* An allocation worth prefetching: faults under demand at the budget. */
typedef struct umadv_advice_alloc {
    uint32_t alloc;
    uint64_t faults;        /* sections demand faults in, at the budget */
    uint64_t trace_faults;  /* fault groups the profiling pass saw on it */
    uint32_t first_step;    /* the first step that faults on it */
} umadv_advice_alloc_t;

/* A step by what demand's faults cost it at the budget. */
typedef struct umadv_advice_step {
    uint32_t step;
    uint64_t faults;        /* sections faulted in under demand */
    double   stall_s;       /* its start delayed by them, and its fault time */
} umadv_advice_step_t;

#define UMADV_ADVICE_FRACTIONS 4

/* Plan at most this much slower than oracle: "keeps up". */
#define UMADV_ADVICE_SLOWDOWN      1.1
#define UMADV_ADVICE_SLOWDOWN_TEXT "1.1x"

typedef struct umadv_report_advice {
    uint32_t              iteration;  /* of the trace, the one simulated */
    uint64_t              footprint;  /* oracle's peak residency */
    double                oracle_s;
    uint64_t              largest_step; /* the most a step needs at once */
    umadv_advice_budget_t tried[UMADV_ADVICE_FRACTIONS + 1];
    unsigned              ntried;
    int                   chosen;     /* index in tried: the advice's budget; -1: none */
    int                   unavailable; /* the simulator failed on the trace (logged) */
    int                   given;      /* the budget came from --budget */
    int                   keeps_up;   /* some fraction kept plan within 1.1x oracle */
    uint64_t              no_fault_budget; /* the least tried where demand faults
                                            * nothing; 0: none did */
    uint64_t              no_copy_budget;  /* ... where its faults copy nothing */
    double                read_mostly_saving_s; /* plan with read-mostly advice vs
                                                 * without, at the budget */
    umadv_advice_alloc_t *allocs;     /* by faults, the top ones */
    uint32_t              nallocs;
    umadv_advice_step_t  *steps;      /* by stall, the top ones */
    uint32_t              nsteps;
    uint32_t             *read_only;  /* allocations never written, by size */
    uint32_t              nread_only;
    uint32_t              nread_only_all;
    uint64_t              read_only_bytes;
} umadv_report_advice_t;

/* advice.c: compute the advice for the iteration of @trace the planner takes; 0,
 * or an exit status after the error. */
int umadv__advice_compute(const umadv_trace_t *trace, const umadv_report_opts_t *opts,
                          umadv_report_advice_t *advice);
void umadv__advice_cleanup(umadv_report_advice_t *advice);
/* advice_print.c: print it. */
void umadv__advice_print_text(const umadv_trace_t *trace, const umadv_report_advice_t *advice,
                              const umadv_report_opts_t *opts);
void umadv__advice_print_json(const umadv_trace_t *trace, const umadv_report_advice_t *advice,
                              const umadv_report_opts_t *opts, umadv_json_t *json);

#endif
