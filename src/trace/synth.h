/*
 * Synthetic traces of DNN training iterations, built from a layer list:
 * forward then backward, activations kept for backward, weights, gradients,
 * optimizer state and workspace, sizes from batch size and shapes, step
 * durations from a FLOP model. For tests, scaling studies and planning on
 * machines without a GPU. synth.c's opening comment documents the models,
 * step and tag names, accesses, and the time model and its calibration.
 */
#ifndef UMADV_TRACE_SYNTH_H
#define UMADV_TRACE_SYNTH_H

#include <stdint.h>

#include "trace/trace.h"

/* The limits of the fields below, stated once: the command's option
 * parser and umadv(1) use them too. A synthetic trace must also fit the
 * trace format (UMADV_TRACE_IO_MAX_SECTIONS): that bounds iterations
 * times sections per iteration, checked after the first iteration. */
#define UMADV_SYNTH_BATCH_MAX (UINT32_C(1) << 20)
#define UMADV_SYNTH_ITER_MAX  10000u

typedef struct umadv_synth_params {
    const char *model;        /* "vgg16", "resnet50", "gpt2", "resnet-deep" */
    uint32_t    batch;        /* samples per iteration, >= 1 */
    uint32_t    depth;        /* 0 = model default. resnet-deep: convolutions, odd, 9..100001
                               * (default 1517, Layrub's); gpt2: blocks, 1..1024 (12);
                               * vgg16 and resnet50: fixed, 16 and 50 */
    uint32_t    iterations;   /* iterations to emit, >= 1 */
    uint64_t    section_size; /* bytes, see trace.h */
    double      flops;        /* FLOP/s of a large 3x3 convolution; other layer types run
                               * at a fixed fraction of it; 0 = H200 default (167e12) */
} umadv_synth_params_t;

/* Defaults: batch 256 (gpt2: 8), 1 iteration, 2 MiB sections, model depth.
 * @model is stored, not copied. */
void umadv__synth_params_default(const char *model, umadv_synth_params_t *params);

/* NULL-terminated list of model names. */
const char *const *umadv__synth_models(void);

/* Build a finalized trace; the same params always give the same trace.
 * UMADV_ERR_INVALID_PARAM, logged with the field's name, for an unknown
 * model or an out-of-range field (batch 1..UMADV_SYNTH_BATCH_MAX,
 * iterations 1..UMADV_SYNTH_ITER_MAX), and when the trace would have
 * more sections than a trace file holds (found after one iteration,
 * before the others are built); UMADV_ERR_NO_MEMORY. @trace
 * is written only on success. */
umadv_status_t umadv__synth_build(const umadv_synth_params_t *params, umadv_trace_t *trace);

#endif
