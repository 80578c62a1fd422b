/*
 * The context's side of the profiling pass: the link probe at start-up,
 * CUPTI launches numbered into steps of the recording, kernel parameters
 * and fault records turned into accesses, and replay fault counts.
 */
#include "api/context.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "profiler/attrib.h"
#include "profiler/linkprobe.h"
#include "profiler/profiler.h"

/* ---- launches -------------------------------------------------------- */

static void scan_found(void *arg, const umadv_pool_loc_t *loc)
{
    umadv_context_t ctx = arg;
    umadv_ctx_alloc_t *alloc = (umadv_ctx_alloc_t *)(uintptr_t)loc->user;

    /* The whole block, read and written: the parameter says the kernel
     * can reach it, not which bytes it touches. */
    if (alloc != NULL && alloc->trace_id != UMADV_CTX_NO_TRACE_ID)
        umadv__trace_add_access(&ctx->trace, alloc->trace_id, 0, alloc->size,
                                UMADV_ACCESS_RW, 0);
}

/* The step of a launch: the marked step open now, or a new kernel step. */
static uint32_t launch_step(umadv_context_t ctx, const char *name, int graph)
{
    uint32_t step;

    if (ctx->step_open)
        return ctx->step;
    if (umadv__ctx_record_kernel_step(ctx, name != NULL ? name : graph ? "graph" : "kernel",
                                      &step) != UMADV_OK)
        return UMADV_STEP_NONE;
    return step;
}

static uint32_t profile_launch(void *arg, const char *name, int graph,
                               const umadv_prof_region_t *regions, size_t nregions)
{
    umadv_context_t ctx = arg;
    uint32_t step = UMADV_STEP_NONE;

    pthread_mutex_lock(&ctx->lock);
    if (ctx->record == UMADV_CTX_REC_RECORDING && ctx->in_iteration) {
        step = launch_step(ctx, name, graph);
        if (step != UMADV_STEP_NONE)
            umadv__prof_scan(ctx->pool, regions, nregions, scan_found, ctx);
    }
    pthread_mutex_unlock(&ctx->lock);
    return step;
}

/* ---- open and close --------------------------------------------------- */

void umadv__ctx_profile_open(umadv_context_t ctx)
{
    int host_only = (ctx->flags & UMADV_CONTEXT_FLAG_HOST_ONLY) != 0;
    const umadv_cupti_ops_t *ops;

    umadv__link_model_default(&ctx->link);
    if (!host_only && ctx->config.link_probe &&
        umadv__link_probe(ctx->config.device, &ctx->link) != UMADV_OK)
        umadv_warn("link probe failed: planning with the built-in link figures");
    if (!ctx->config.profiler)
        return;
    ops = umadv__cupti_ops_select(host_only);
    if (ops != NULL &&
        umadv__prof_open(ops, profile_launch, ctx, &ctx->profiler) != UMADV_OK)
        ctx->profiler = NULL; /* warned: declared accesses only */
}

void umadv__ctx_profile_close(umadv_context_t ctx)
{
    umadv__prof_close(ctx->profiler);
    ctx->profiler = NULL;
}

/* ---- a recording ------------------------------------------------------ */

static void evict_block(void *arg, void *base, uint64_t size, uint64_t user)
{
    umadv_context_t ctx = arg;

    ctx->ops->prefetch(base, size, UMADV_CUDA_LOCATION_HOST, NULL); /* a hint: logged */
}

/* Everything to the host, so the iteration's first touches fault. */
static void evict_all(umadv_context_t ctx)
{
    umadv_pool_stats_t stats;
    char size[32];

    umadv__pool_get_stats(ctx->pool, &stats);
    umadv__pool_foreach(ctx->pool, evict_block, ctx);
    ctx->ops->stream_synchronize(NULL);
    umadv_debug("profiling: evicted %s in %llu blocks to the host",
                umadv__size_format(stats.bytes_in_use, size, sizeof(size)),
                (unsigned long long)stats.blocks);
}

void umadv__ctx_profile_start(umadv_context_t ctx)
{
    char source[160];

    ctx->trace.link = ctx->link;
    if (ctx->profiler == NULL)
        return;
    if (ctx->config.profile_evict)
        evict_all(ctx);
    if (umadv__prof_record_start(ctx->profiler) != UMADV_OK)
        return; /* warned: declared accesses only */
    snprintf(source, sizeof(source), "umadv cupti profile: %s%sdeclared accesses, %s backend",
             "kernel parameters, ",
             umadv__prof_has_um_counters(ctx->profiler) ? "gpu faults, " : "",
             ctx->ops->name);
    umadv__trace_set_source(&ctx->trace, source);
}

static void profile_report(const umadv_prof_result_t *r, const umadv_prof_attrib_stats_t *st)
{
    char in[32], faulted[32], out[32];
    uint64_t htod = 0, dtoh = 0;

    for (int i = 0; i < UMADV_PROF_CAUSES; i++) {
        htod += r->htod_bytes[i];
        dtoh += r->dtoh_bytes[i];
    }
    /* Coherence migrations are the ones page faults caused; speculative
     * ones are the driver's prefetch around them. */
    umadv__size_format(r->htod_bytes[CUPTI_ACTIVITY_UNIFIED_MEMORY_MIGRATION_CAUSE_COHERENCE] +
                       r->htod_bytes[CUPTI_ACTIVITY_UNIFIED_MEMORY_MIGRATION_CAUSE_PREFETCH],
                       faulted, sizeof(faulted));
    umadv_info("profiled iteration: %llu kernels (%llu not launched in it), %llu fault "
               "records (%llu groups): %llu attributed, %llu with no kernel, %llu outside "
               "umadv memory; %s to the gpu (%s on faults), %s to the host, %llu thrashing",
               (unsigned long long)st->kernels, (unsigned long long)st->kernels_unknown,
               (unsigned long long)st->faults, (unsigned long long)st->fault_groups,
               (unsigned long long)st->faults_attributed,
               (unsigned long long)st->faults_no_kernel,
               (unsigned long long)st->faults_no_alloc,
               umadv__size_format(htod, in, sizeof(in)), faulted,
               umadv__size_format(dtoh, out, sizeof(out)), (unsigned long long)r->thrashing);
    umadv_debug("unified memory records by kind: htod %llu, dtoh %llu, gpu faults %llu, "
                "thrashing %llu, other %llu",
                (unsigned long long)r->um_records[CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_HTOD],
                (unsigned long long)r->um_records[CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_DTOH],
                (unsigned long long)r->um_records[CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_GPU_PAGE_FAULT],
                (unsigned long long)r->um_records[CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_THRASHING],
                (unsigned long long)(r->um_records[0] + r->um_records[3] + r->um_records[6] +
                                     r->um_records[7] + r->um_records[8]));
}

/* Kernel durations and fault accesses into the trace. */
static umadv_status_t profile_merge(umadv_context_t ctx, umadv_prof_result_t *r)
{
    umadv_prof_attrib_stats_t st;
    umadv_prof_interval_t *iv = NULL;
    umadv_prof_access_t *acc = NULL;
    size_t niv = 0, nacc = 0, cap = 0;
    umadv_status_t status;

    memset(&st, 0, sizeof(st));
    status = umadv__prof_attrib_kernels(&ctx->trace, r->launches, r->nlaunches, r->kernels,
                                        r->nkernels, &iv, &niv, &st);
    if (status == UMADV_OK)
        status = umadv__prof_attrib_faults(&ctx->trace, iv, niv, r->faults, r->nfaults, &acc,
                                           &nacc, &cap, &st);
    if (status == UMADV_OK && nacc > 0)
        status = umadv__prof_trace_merge(&ctx->trace, acc, nacc);
    if (status == UMADV_OK)
        profile_report(r, &st);
    free(iv);
    free(acc);
    return status;
}

void umadv__ctx_profile_finish(umadv_context_t ctx)
{
    umadv_prof_result_t result;

    if (ctx->profiler == NULL ||
        umadv__prof_record_stop(ctx->profiler, &result) != UMADV_OK)
        return;
    if (ctx->record == UMADV_CTX_REC_RECORDING && profile_merge(ctx, &result) != UMADV_OK)
        umadv_warn("profiled fault records could not be merged (out of memory): the trace "
                   "keeps declared and kernel-parameter accesses");
    umadv__prof_result_cleanup(&result);
}

uint64_t umadv__ctx_profile_faults(umadv_context_t ctx)
{
    uint64_t n;

    if (ctx->profiler == NULL)
        return 0;
    n = umadv__prof_take_faults(ctx->profiler);
    ctx->stats.gpu_faults += n;
    ctx->iteration_faults  = n;
    return n;
}
