#include "cuda_ops/cuda_ops.h"

#include <stdio.h>

#include "common/log.h"
#include "common/util.h"
#include "cuda_ops/cudart_util.h"

#ifdef UMADV_TEST_HOOKS
/* Written by tests before they create contexts; read at context creation. */
static const umadv_cuda_ops_t *installed_ops;

void umadv__cuda_ops_install(const umadv_cuda_ops_t *ops)
{
    __atomic_store_n(&installed_ops, ops, __ATOMIC_RELEASE);
}

static const umadv_cuda_ops_t *cuda_ops_installed(void)
{
    return __atomic_load_n(&installed_ops, __ATOMIC_ACQUIRE);
}
#else
static const umadv_cuda_ops_t *cuda_ops_installed(void)
{
    return NULL;
}
#endif

const umadv_cuda_ops_t *umadv__cuda_ops_select(int host_only)
{
    const umadv_cuda_ops_t *ops = cuda_ops_installed();

    if (host_only)
        return &umadv__cuda_ops_host;
    return umadv__cuda_ops_traced(ops != NULL ? ops : &umadv__cuda_ops_cudart);
}

void umadv__cuda_release_note(umadv_cuda_release_t *release, umadv_status_t status)
{
    if (status != UMADV_OK && release->failed++ == 0)
        umadv__cudart_quiet(1);
}

void umadv__cuda_release_end(umadv_cuda_release_t *release)
{
    umadv__cudart_quiet(0);
    if (release->failed > 1)
        umadv_warn("%zu %s calls failed (the first is logged above, the others at debug "
                   "level)", release->failed, release->call);
}

const char *umadv__cuda_location_name(int location, char *buf, size_t len)
{
    if (location == UMADV_CUDA_LOCATION_HOST)
        snprintf(buf, len, "host");
    else if (UMADV_CUDA_LOCATION_IS_HOST_NUMA(location))
        snprintf(buf, len, "host numa %d", UMADV_CUDA_LOCATION_NUMA_NODE(location));
    else
        snprintf(buf, len, "gpu %d", location);
    return buf;
}

const char *umadv__cuda_advice_name(umadv_cuda_advice_t advice)
{
    static const char *const names[] = {
        [UMADV_CUDA_ADVISE_SET_READ_MOSTLY]          = "set-read-mostly",
        [UMADV_CUDA_ADVISE_UNSET_READ_MOSTLY]        = "unset-read-mostly",
        [UMADV_CUDA_ADVISE_SET_PREFERRED_LOCATION]   = "set-preferred-location",
        [UMADV_CUDA_ADVISE_UNSET_PREFERRED_LOCATION] = "unset-preferred-location",
        [UMADV_CUDA_ADVISE_SET_ACCESSED_BY]          = "set-accessed-by",
        [UMADV_CUDA_ADVISE_UNSET_ACCESSED_BY]        = "unset-accessed-by",
    };

    if (advice < UMADV_CUDA_ADVISE_SET_READ_MOSTLY || advice > UMADV_CUDA_ADVISE_UNSET_ACCESSED_BY)
        return "?";
    return names[advice];
}

umadv_status_t umadv__cuda_copy_bounced(const umadv_cuda_ops_t *ops, void *dst, const void *src,
                                        uint64_t len, void *bounce, uint64_t bounce_bytes,
                                        umadv_stream_t stream)
{
    umadv_status_t status = UMADV_OK;

    if (bounce == NULL)
        return ops->memcpy_async(dst, src, len, stream);
    for (uint64_t o = 0; o < len && status == UMADV_OK; o += bounce_bytes) {
        size_t n = (size_t)UMADV_MIN(bounce_bytes, len - o);

        status = ops->memcpy_async(bounce, (const char *)src + o, n, stream);
        if (status == UMADV_OK)
            status = ops->memcpy_async((char *)dst + o, bounce, n, stream);
    }
    return status;
}
