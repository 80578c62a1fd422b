/*
 * The replay core's decisions onto the simulator's lanes, as the
 * executor puts them on its own (exec/policy.c): fetches on the fetch
 * lane, evictions on the eviction lane; advice takes effect at once (a
 * set is applied before the step's work; an unset once the step that
 * decided it has ended, which in the model is now).
 */
#include "sim/sim_int.h"

static void take_one(sim_engine_t *e, const umadv_core_op_t *d, double now)
{
    switch (d->kind) {
    case UMADV_OP_FETCH:
        umadv__sim_enqueue_fetch(e, d, now);
        break;
    case UMADV_OP_EVICT:
        umadv__sim_enqueue_evict(e, d, now);
        break;
    case UMADV_OP_ADVISE:
        umadv__sim_advise(e, d->advice, d->alloc, d->first, d->count);
        if (d->advice == UMADV_ADVICE_NONE)
            umadv__core_unadvise_done(&e->core, d);
        break;
    default:
        break;
    }
}

void umadv__sim_take_decisions(sim_engine_t *e, double now)
{
    e->f_defer = 1;
    for (size_t i = 0; i < e->core.nout; i++)
        take_one(e, &e->core.out[i], now);
    e->core.nout = 0;
    e->f_defer = 0;
    umadv__sim_try_start_fetch(e, now);
}
