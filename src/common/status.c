#include <umadv.h>

#include <stddef.h>

static const char *const status_strings[] = {
    [0]                           = "success",
    [-UMADV_ERR_INVALID_PARAM]    = "invalid parameter",
    [-UMADV_ERR_NO_MEMORY]        = "out of host memory",
    [-UMADV_ERR_IO]               = "input/output error",
    [-UMADV_ERR_CORRUPT]          = "corrupt or malformed trace",
    [-UMADV_ERR_BUDGET_TOO_SMALL] = "budget too small for a step",
    [-UMADV_ERR_LIMIT]            = "managed memory limit exceeded",
    [-UMADV_ERR_NO_DEVICE]        = "no usable cuda device",
    [-UMADV_ERR_CUDA]             = "cuda error",
    [-UMADV_ERR_CUPTI]            = "cupti error",
    [-UMADV_ERR_UNSUPPORTED]      = "unsupported on this system",
    [-UMADV_ERR_NOT_ENFORCED]     = "hint accepted but not enforced",
    [-UMADV_ERR_NOT_FOUND]        = "not found",
    [-UMADV_ERR_STATE]            = "operation out of order",
};

UMADV_API const char *umadv_status_string(umadv_status_t status)
{
    if (status > 0 || status <= UMADV_ERR_LAST ||
        status_strings[-status] == NULL)
        return "unknown status";
    return status_strings[-status];
}

UMADV_API unsigned umadv_get_api_version(void)
{
    return UMADV_API_VERSION;
}

UMADV_API const char *umadv_get_version_string(void)
{
    return UMADV_VERSION_STRING;
}
