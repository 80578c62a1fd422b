/*
 * The replay core's decisions (schedule/core.h) onto the executor's
 * lanes. Runs with the executor's lock held, on the thread that called
 * in; it only queues, the lanes move data.
 *
 * Fetches and advice sets go to the fetch lane, which serves them
 * earliest need first; evictions and advice unsets go to the eviction
 * lane, in order, each behind the event of the step that ended last (or
 * of the start; recorded once the first op waits for it, queue.c STEP
 * ENDS), so that no data leaves while a kernel may still use it.
 */
#include "exec/exec_int.h"

#include "common/log.h"

static exec_lane_t *lane_of(umadv_exec_t *e, const umadv_core_op_t *d)
{
    if (d->kind == UMADV_OP_FETCH || (d->kind == UMADV_OP_ADVISE && d->advice != UMADV_ADVICE_NONE))
        return &e->fetch;
    return &e->evict;
}

/* No host memory to queue @op: the decision is not carried out, and the
 * core's accounting says so (an eviction's sections stay resident, an
 * unset stops holding fetches back). It costs time, not data. */
static void decision_lost(umadv_exec_t *e, const exec_op_t *op)
{
    umadv_debug("executor: no memory to queue a %s: skipped", umadv__op_kind_name(op->d.kind));
    if (op->d.kind == UMADV_OP_EVICT) {
        for (uint32_t i = 0; i < op->d.count; i++) {
            uint32_t s = exec_section_id(e, op->d.alloc, op->d.first + i);
            if (e->core.state[s] == UMADV_SEC_OUT_QUEUED)
                umadv__core_set_state(&e->core, s, UMADV_SEC_RESIDENT);
        }
    } else if (op->d.kind == UMADV_OP_ADVISE && op->d.advice == UMADV_ADVICE_NONE) {
        umadv__core_unadvise_done(&e->core, &op->d);
    }
}

void umadv__exec_queue_decisions(umadv_exec_t *e)
{
    for (size_t i = 0; i < e->core.nout; i++) {
        exec_op_t op = {.d = e->core.out[i]};

        if (op.d.after_step)
            op.event = umadv__exec_last_end(e);
        if (umadv__exec_queue_push(e, lane_of(e, &op.d), &op) != UMADV_OK)
            decision_lost(e, &op);
    }
    e->core.nout = 0;
    /* the core moved on (a step, a binding): a head that waited may go */
    umadv__exec_changed(e);
}
