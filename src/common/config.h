/*
 * Every UMADV_* knob, described once in a table: name, type, default,
 * bounds, documentation. A bad value is an error naming the variable and
 * the value, never a silent default.
 */
#ifndef UMADV_COMMON_CONFIG_H
#define UMADV_COMMON_CONFIG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <umadv.h>

#include "common/log.h"

#define UMADV_CONFIG_STRING_MAX 256

typedef struct umadv_config {
    uint64_t          budget;        /* UMADV_BUDGET, bytes, 0 = no budget */
    umadv_policy_t    policy;        /* UMADV_POLICY */
    int               device;        /* UMADV_DEVICE */
    uint64_t          section_size;  /* UMADV_SECTION_SIZE */
    uint64_t          max_managed;   /* UMADV_MAX_MANAGED, 0 = no limit */
    uint64_t          arena_size;    /* UMADV_ARENA_SIZE */
    uint32_t          lookahead;     /* UMADV_LOOKAHEAD, 0 = unlimited */
    int               read_mostly;   /* UMADV_READ_MOSTLY */
    int               host_placement;/* UMADV_HOST_PLACEMENT */
    int               stage;         /* UMADV_STAGE: staged evictions of stageable memory */
    int               stage_poison;  /* UMADV_STAGE_POISON: fill staged ranges before discards */
    uint64_t          lane_piece;    /* UMADV_LANE_PIECE: bytes a lane's discard or population
                                      * call while the application runs; 0 = whole */
    umadv_log_level_t log_level;     /* UMADV_LOG */
    char              log_file[UMADV_CONFIG_STRING_MAX]; /* UMADV_LOG_FILE, "" = stderr */
    int               profiler;      /* UMADV_PROFILER: trace with CUPTI */
    int               profile_evict; /* UMADV_PROFILE_EVICT */
    uint32_t          profile_passes; /* UMADV_PROFILE_PASSES, 1 or 2 */
    int               profile_guided; /* UMADV_PROFILE_GUIDED */
    int               profile_tail;   /* UMADV_PROFILE_TAIL: frees after the profiled
                                       * iteration amend its trace (api/record.c) */
    int               call_census;   /* UMADV_CALL_CENSUS: the application's CUDA calls
                                      * counted and timed (profiler/census.c) */
    int               link_probe;    /* UMADV_LINK_PROBE */
    uint32_t          reprofile_faults; /* UMADV_REPROFILE_FAULTS, 0 = never */
    uint32_t          fault_period;     /* UMADV_FAULT_PERIOD, >= 1 */
    uint32_t          plan_max_touches; /* UMADV_PLAN_MAX_TOUCHES, 0 = no limit */
    int               host_numa;     /* UMADV_HOST_NUMA: a node, or _AUTO, _NONE below */
    int               route_malloc;  /* UMADV_ROUTE_MALLOC: cudaMalloc into the pool (inject) */
    char              iteration_range[UMADV_CONFIG_STRING_MAX]; /* UMADV_ITERATION_RANGE */
    int               iteration_source; /* UMADV_ITERATION_SOURCE: umadv_iteration_source_t */
    uint32_t          profile_iteration; /* UMADV_PROFILE_ITERATION (umadv run) */
    char              inject_library[UMADV_CONFIG_STRING_MAX]; /* UMADV_INJECT_LIBRARY */
    char              run_summary[UMADV_CONFIG_STRING_MAX]; /* UMADV_RUN_SUMMARY, "" = none */
    char              profile_output[UMADV_CONFIG_STRING_MAX]; /* UMADV_PROFILE_OUTPUT, "" = none */
    uint32_t          profile_seconds; /* UMADV_PROFILE_SECONDS, 0 = an iteration */
    char              timeline[UMADV_CONFIG_STRING_MAX]; /* UMADV_TIMELINE, "" = none */
} umadv_config_t;

/* UMADV_ITERATION_SOURCE: what begins an iteration of a program under
 * the injection library (umadv-run(1), ITERATIONS). */
typedef enum umadv_iteration_source {
    UMADV_ITERATION_SOURCE_AUTO,      /* the first of NVTX and the optimizer seen;
                                       * the launch sequence until then */
    UMADV_ITERATION_SOURCE_NVTX,      /* UMADV_ITERATION_RANGE's starts only */
    UMADV_ITERATION_SOURCE_OPTIMIZER, /* PyTorch's optimizer steps only */
    UMADV_ITERATION_SOURCE_LAUNCHES,  /* the repeating launch sequence only */
    UMADV_ITERATION_SOURCE_COUNT
} umadv_iteration_source_t;

/* The knob's word for @source ("auto", "nvtx", "optimizer", "launches"). */
const char *umadv__config_iteration_source_name(unsigned source);

/* UMADV_HOST_NUMA's words; node numbers are >= 0. */
#define UMADV_CONFIG_NODE_AUTO (-1)
#define UMADV_CONFIG_NODE_NONE (-2)

typedef enum umadv_config_type {
    UMADV_CONFIG_SIZE,    /* byte size through umadv_size_parse(), uint64_t */
    UMADV_CONFIG_UINT,    /* decimal integer; stored as int or uint32_t (width) */
    UMADV_CONFIG_ENUM,    /* one of a list of names; stored as an int-sized enum */
    UMADV_CONFIG_BOOL,    /* 1/0, yes/no, true/false, on/off; stored as int */
    UMADV_CONFIG_STRING,  /* stored in a char array of width bytes */
    UMADV_CONFIG_NODE     /* "auto", "none" or a NUMA node number (bounds);
                           * stored as int: _AUTO, _NONE or the number */
} umadv_config_type_t;

/* One knob. Bounds apply to SIZE, UINT and NODE numbers; ENUM values are the indices
 * 0..enum_count-1 named by enum_name(). */
typedef struct umadv_config_field {
    const char          *name;
    umadv_config_type_t  type;
    const char          *dflt;        /* default, in the syntax of the type */
    const char          *doc;
    uint64_t             min, max;
    int                  power_of_two;
    const char        *(*enum_name)(unsigned value);
    unsigned             enum_count;
    size_t               offset;      /* in umadv_config_t */
    size_t               width;       /* bytes of the field */
    int                  per_rank;    /* SIZE: may be a comma-separated list, one
                                       * entry per LOCAL_RANK (a job's ranks) */
} umadv_config_field_t;

/* This process's local rank (LOCAL_RANK, as torchrun and other launchers
 * set it) in *@rank_p, -1 when LOCAL_RANK is unset. UMADV_ERR_INVALID_PARAM,
 * with the reason in @why, when it is set but not a number from 0 to
 * 65535. */
umadv_status_t umadv__config_local_rank(int *rank_p, char *why, size_t why_len);

/* The knob table, in the order `umadv info -c` prints it. */
const umadv_config_field_t *umadv__config_fields(size_t *count_p);

/* Fill @config with the built-in defaults. */
void umadv__config_defaults(umadv_config_t *config);

/* Defaults overridden by the environment. UMADV_ERR_INVALID_PARAM, logged as
 * "UMADV_X=value: reason", for the first bad value; @config is then
 * unchanged. A per-rank knob takes LOCAL_RANK's entry; UMADV_DEVICE,
 * when unset and LOCAL_RANK is set, is LOCAL_RANK (each rank of a job
 * on its own GPU). */
umadv_status_t umadv__config_load(umadv_config_t *config);

/* Parse @value for the knob @name into @config (as if it came from the
 * environment). UMADV_ERR_NOT_FOUND for an unknown name,
 * UMADV_ERR_INVALID_PARAM (logged) for a bad value; on error @config is
 * unchanged. For command-line options that mirror a knob. */
umadv_status_t umadv__config_set(umadv_config_t *config, const char *name,
                                 const char *value);

/* Check a value against a field's rules without storing it; on error
 * writes "reason" (no variable name) to @why. A per-rank list is checked
 * entry by entry, whatever LOCAL_RANK says (umadv run checks a value
 * before the launcher that sets it runs). */
umadv_status_t umadv__config_check(const umadv_config_field_t *field, const char *value,
                                   char *why, size_t why_len);

/* Make the log level and log file of @config the process's.
 * UMADV_ERR_INVALID_PARAM (logged) when the log file cannot be opened. */
umadv_status_t umadv__config_apply_log(const umadv_config_t *config);

/* Print every knob: name, type, default, current value (from the
 * environment, or "bad value" if invalid), bounds and documentation. */
void umadv__config_print(FILE *stream);

#endif
