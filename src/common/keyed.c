#include "common/keyed.h"

#include <stdlib.h>
#include <string.h>

umadv_status_t umadv__keyed_build(umadv_keyed_t *k, uint32_t nkeys, umadv_keyed_items_fn items,
                                  void *arg)
{
    umadv_keyed_pass_t pass = {k, 0};

    *k = (umadv_keyed_t){nkeys, calloc((size_t)nkeys + 1, sizeof(*k->off)), NULL};
    if (k->off == NULL)
        return UMADV_ERR_NO_MEMORY;
    items(arg, &pass);
    for (uint32_t key = 0; key < nkeys; key++)
        k->off[key + 1] += k->off[key];
    k->val = malloc(((size_t)k->off[nkeys] + 1) * sizeof(*k->val));
    if (k->val == NULL) {
        umadv__keyed_cleanup(k);
        return UMADV_ERR_NO_MEMORY;
    }
    pass.filling = 1;
    items(arg, &pass);
    memmove(k->off + 1, k->off, (size_t)nkeys * sizeof(*k->off));
    k->off[0] = 0;
    return UMADV_OK;
}

void umadv__keyed_cleanup(umadv_keyed_t *k)
{
    free(k->off);
    free(k->val);
    *k = (umadv_keyed_t){0, NULL, NULL};
}
