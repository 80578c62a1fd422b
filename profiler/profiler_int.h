/*
 * The profiler's CUPTI side, for profiler/ and its tests only: what CUPTI
 * hands the callbacks, and the launch-argument query. Everything outside
 * profiler/ goes through profiler.h, which holds no CUPTI type.
 */
#ifndef UMADV_PROFILER_PROFILER_INT_H
#define UMADV_PROFILER_PROFILER_INT_H

#include <stddef.h>
#include <stdint.h>

#include "profiler/cupti_ops.h"
#include "profiler/profiler.h"
#include "profiler/scan.h"

/* The argument regions of a launch of @func (a CUfunction if @driver, a
 * runtime function otherwise): @args[i] for each parameter the layout
 * query knows, with its size; or, without @args, the packed buffer of
 * @extra (CU_LAUNCH_PARAM_BUFFER_POINTER). At most @cap regions go to
 * @regions; returns how many. */
size_t umadv__prof_launch_regions(const umadv_cupti_ops_t *ops, const void *func, int driver,
                                  void *const *args, void *const *extra,
                                  umadv_prof_region_t *regions, size_t cap);

/* The bytes a guessed region covers at most: the parameter space CUDA
 * gave a kernel before 12.1, and room for a library's parameter struct
 * (cuDNN's and cuBLASLt's kernels take one). */
#define UMADV_PROF_GUESS_BYTES 4096

/* A launch whose parameter layout CUDA does not give (cuDNN's and
 * cuBLASLt's precompiled kernels): the bytes @args[0] points at, as far
 * as they are mapped and at most @cap (UMADV_PROF_GUESS_BYTES), copied
 * into @buf without ever faulting. Such kernels take their arguments as
 * one struct, so a scan of these bytes finds the blocks it names; bytes
 * past the struct may name blocks it does not reach: a guess that can
 * only add accesses (a fetch too many, never data lost). Returns 1 with
 * *@region set, 0 when nothing could be read. */
size_t umadv__prof_guess_region(void *const *args, unsigned char *buf, size_t cap,
                                umadv_prof_region_t *region);

/* copies.c: the copy and memset callbacks a watch enables, @i from 0 to
 * umadv__prof_copy_ncallbacks() - 1. */
size_t umadv__prof_copy_ncallbacks(void);
void umadv__prof_copy_callback(size_t i, CUpti_CallbackDomain *domain_p,
                               CUpti_CallbackId *cbid_p);

/* copies.c: the ranges (0 to 2, into @ranges) that the copy or memset
 * call @cbid of @domain, with CUPTI's @params for it, may touch (none
 * for NULL @params); -1 when @cbid is not a watched copy or memset. */
int umadv__prof_copy_ranges(CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                            const void *params, umadv_prof_range_t ranges[2]);

/* activity.c: kernel names, each kept once in a recording's activity. */
typedef struct umadv_prof_names {
    uint32_t *slots;   /* open addressing: name index + 1, 0 empty */
    size_t    nslots;  /* a power of two, or 0 */
} umadv_prof_names_t;

/* The index of @name (its first 4096 bytes) in @act's names, added if
 * new; UMADV_EVENT_NO_NAME for NULL, out of memory, or past
 * UMADV_PROF_EVENTS_MAX names. */
uint32_t umadv__prof_name_intern(umadv_prof_names_t *h, umadv_prof_activity_t *act,
                                 const char *name);

/* Forget every name (the next recording's names begin again). */
void umadv__prof_names_reset(umadv_prof_names_t *h);

/* Keep @event in @act, or count it dropped past UMADV_PROF_EVENTS_MAX. */
void umadv__prof_event_push(umadv_prof_activity_t *act, const umadv_trace_event_t *event);

/* census.c: THE CALL CENSUS. The counts of every function (zero at
 * first); freed once no callback can reach them. */
typedef struct umadv_prof_census umadv_prof_census_t;

umadv_prof_census_t *umadv__prof_census_new(void);
void umadv__prof_census_free(umadv_prof_census_t *census);

/* A callback of call @cbid of @domain, at its entry or its @exit. */
void umadv__prof_census_call(umadv_prof_census_t *census, CUpti_CallbackDomain domain,
                             CUpti_CallbackId cbid, int exit);

/* Log (info) the calls counted since the last log, as iteration
 * @iteration's, and count again from zero; nothing where none was made.
 * Names through @ops. */
void umadv__prof_census_log(umadv_prof_census_t *census, const umadv_cupti_ops_t *ops,
                            uint64_t iteration);

/* The subscriber callback (CUpti_CallbackFunc). */
void umadv__prof_callback(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                          const void *cbdata);

/* The buffer callbacks (CUpti_BuffersCallbackRequestFunc / CompleteFunc). */
void umadv__prof_buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records);
void umadv__prof_buffer_completed(CUcontext context, uint32_t stream_id, uint8_t *buffer,
                                  size_t size, size_t valid);

#endif
