/*
 * COPIES. The application's memcpy and memset calls in a recording.
 *
 * A copy or memset is no kernel launch, so no step of its own: the
 * profile saw what one touches only through its faults, given to the
 * step open when they came. But the call runs after that step's launch,
 * and a replay evicts what the step used last once the step has ended:
 * an eviction decided there waits for the step's end, not for the copy,
 * and the copy then finds its data leaving or gone. DDP, for one, copies
 * each reduced gradient bucket back into the gradients after backward's
 * last kernel, which the plan took for the buckets' last use.
 *
 * So, while a recording runs, every range a copy or memset may touch
 * (the copy watch of profiler/copies.c, told on the copying thread) is
 * noted, and the next launch's step takes the ranges inside umadv blocks
 * as its accesses, read and written: the plan keeps them on the GPU until
 * that step has ended, which on the copy's stream comes after the copy.
 * They are added after the launch's own scan, which takes a whole block
 * for a pointer into it unless the step already covers that section.
 *
 * The notes have a lock of their own: a copy may come from any thread,
 * and taking ctx->lock there would deadlock on a thread that holds it.
 */
#include "api/context.h"

#include <stdlib.h>

#include "common/log.h"
#include "common/util.h"

/* Notes kept between two launches at most; more are left to their
 * faults (a recording that no launch ends keeps no more). */
#define COPIES_MAX 65536

void umadv__ctx_copies_note(umadv_context_t ctx, const void *ptr, uint64_t bytes)
{
    pthread_mutex_lock(&ctx->copies_lock);
    if (bytes > 0 && ctx->ncopies < COPIES_MAX &&
        umadv__array_reserve((void **)&ctx->copies, &ctx->copies_cap, ctx->ncopies + 1,
                             sizeof(*ctx->copies)) == UMADV_OK)
        ctx->copies[ctx->ncopies++] = (umadv_ctx_copy_t){(uintptr_t)ptr, bytes};
    pthread_mutex_unlock(&ctx->copies_lock);
}

/* The part of @copy inside the live block it begins in, as an access of
 * the trace's last step (a tensor's copy lies in one block). */
static void copy_take(umadv_context_t ctx, const umadv_ctx_copy_t *copy)
{
    umadv_pool_loc_t loc;
    umadv_ctx_alloc_t *alloc;

    if (umadv__pool_lookup(ctx->pool, (const void *)copy->ptr, &loc) != UMADV_OK ||
        loc.offset >= loc.size)
        return; /* not umadv memory, or freed since */
    alloc = (umadv_ctx_alloc_t *)(uintptr_t)loc.user;
    if (alloc == NULL)
        return;
    umadv__ctx_profile_arrived(ctx, alloc); /* the copy may have moved it: the next
                                             * eviction moves it (profile.c) */
    if (alloc->trace_id == UMADV_CTX_NO_TRACE_ID)
        return;
    if (umadv__trace_add_access(&ctx->trace, alloc->trace_id, loc.offset,
                                UMADV_MIN(copy->bytes, loc.size - loc.offset),
                                UMADV_ACCESS_RW, 0) != UMADV_OK)
        umadv_debug("profiling: no memory to record a copy's range: left to its faults");
}

void umadv__ctx_copies_take(umadv_context_t ctx)
{
    pthread_mutex_lock(&ctx->copies_lock);
    for (size_t i = 0; i < ctx->ncopies; i++)
        copy_take(ctx, &ctx->copies[i]);
    ctx->ncopies = 0;
    pthread_mutex_unlock(&ctx->copies_lock);
}

void umadv__ctx_copies_forget(umadv_context_t ctx)
{
    pthread_mutex_lock(&ctx->copies_lock);
    ctx->ncopies = 0;
    pthread_mutex_unlock(&ctx->copies_lock);
}
