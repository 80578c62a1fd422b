/*
 * Synthetic traces of DNN training iterations, built from a layer list:
 * forward then backward, activations kept for backward, weights, gradients,
 * optimizer state and workspace, sizes from batch size and shapes, step
 * durations from a FLOP model. For tests, scaling studies and planning on
 * machines without a GPU.
 */
#ifndef UMADV_TRACE_SYNTH_H
#define UMADV_TRACE_SYNTH_H

#include <stdint.h>

#include "trace/trace.h"

typedef struct umadv_synth_params {
    const char *model;        /* "vgg16", "resnet50", "gpt2", "resnet-deep" */
    uint32_t    batch;        /* samples per iteration, >= 1 */
    uint32_t    depth;        /* resnet-deep: layers (Layrub's 1517); gpt2: blocks; 0 = model default */
    uint32_t    iterations;   /* iterations to emit, >= 1 */
    uint64_t    section_size; /* bytes, see trace.h */
    double      flops;        /* sustained FLOP/s of the modelled GPU; 0 = H200 default */
} umadv_synth_params_t;

/* Defaults: batch 256 (gpt2: 8), 1 iteration, 2 MiB sections, model depth. */
void umadv__synth_params_default(const char *model, umadv_synth_params_t *params);

/* NULL-terminated list of model names. */
const char *const *umadv__synth_models(void);

/* Build a finalized trace. UMADV_ERR_INVALID_PARAM (logged) for an unknown
 * model or out-of-range parameter. */
umadv_status_t umadv__synth_build(const umadv_synth_params_t *params, umadv_trace_t *trace);

#endif
