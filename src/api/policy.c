#include <umadv.h>

#include <stddef.h>
#include <strings.h>

static const char *const policy_names[UMADV_POLICY_COUNT] = {
    [UMADV_POLICY_ORACLE]       = "oracle",
    [UMADV_POLICY_DEMAND]       = "demand",
    [UMADV_POLICY_PREFETCH_ALL] = "prefetch-all",
    [UMADV_POLICY_PLAN]         = "plan",
};

UMADV_API const char *umadv_policy_name(umadv_policy_t policy)
{
    return (unsigned)policy < UMADV_POLICY_COUNT ? policy_names[policy] : "?";
}

UMADV_API umadv_status_t umadv_policy_parse(const char *name, umadv_policy_t *policy_p)
{
    if (name == NULL || policy_p == NULL)
        return UMADV_ERR_INVALID_PARAM;
    for (unsigned i = 0; i < UMADV_POLICY_COUNT; i++) {
        if (strcasecmp(name, policy_names[i]) == 0) {
            *policy_p = (umadv_policy_t)i;
            return UMADV_OK;
        }
    }
    return UMADV_ERR_INVALID_PARAM;
}
