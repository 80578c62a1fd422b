/*
 * The executor's op queues, the events that order evictions after the
 * steps that used the data, and the test of whether a step still has to
 * wait. Called with the executor's lock held.
 */
#include "exec/exec_int.h"

#include <stdlib.h>
#include <string.h>

#include "common/log.h"

/* Slide the live ops to the front when the array is full of dead ones. */
static void queue_compact(exec_queue_t *q)
{
    if (q->head == 0)
        return;
    memmove(q->ops, q->ops + q->head, (q->n - q->head) * sizeof(*q->ops));
    q->n -= q->head;
    q->head = 0;
}

/* Fetches go in need order (stable: equal needs keep their queueing
 * order), so the lane serves the earliest need first as plan.h asks;
 * evictions stay in FIFO order. */
umadv_status_t umadv__exec_queue_push(umadv_exec_t *e, exec_lane_t *lane, const exec_op_t *op)
{
    exec_queue_t *q = &lane->queue;
    umadv_status_t status;
    size_t i;

    if (q->n == q->cap)
        queue_compact(q);
    status = umadv__array_reserve((void **)&q->ops, &q->cap, q->n + 1, sizeof(*q->ops));
    if (status != UMADV_OK)
        return status;
    i = q->n;
    if (lane == &e->fetch) {
        while (i > q->head && q->ops[i - 1].d.need > op->d.need)
            i--;
        memmove(q->ops + i + 1, q->ops + i, (q->n - i) * sizeof(*q->ops));
    }
    q->ops[i] = *op;
    q->ops[i].seq = e->seq++;
    q->n++;
    if (op->event != NULL)
        umadv__exec_event_ref(op->event);
    pthread_cond_signal(&lane->wake); /* a push makes no one else's wait shorter */
    return UMADV_OK;
}

exec_op_t *umadv__exec_queue_peek(exec_lane_t *lane)
{
    exec_queue_t *q = &lane->queue;

    return q->head < q->n ? &q->ops[q->head] : NULL;
}

/* Remove the op at absolute @index (head..n-1); the caller has taken
 * over its event reference, if any. */
void umadv__exec_queue_remove(exec_lane_t *lane, size_t index)
{
    exec_queue_t *q = &lane->queue;

    if (index == q->head) {
        q->head++;
    } else {
        memmove(q->ops + index, q->ops + index + 1, (q->n - index - 1) * sizeof(*q->ops));
        q->n--;
    }
    if (q->head == q->n)
        q->head = q->n = 0;
}

/* Sections an eviction marked OUT_QUEUED go back to RESIDENT: the data
 * stays where it is. */
static void op_unqueue(umadv_exec_t *e, const exec_op_t *op)
{
    for (uint32_t i = 0; i < op->d.count; i++) {
        uint32_t s = exec_section_id(e, op->d.alloc, op->d.first + i);
        if (e->core.state[s] == UMADV_SEC_OUT_QUEUED)
            umadv__core_set_state(&e->core, s, UMADV_SEC_RESIDENT);
    }
}

void umadv__exec_queue_clear(umadv_exec_t *e, exec_lane_t *lane)
{
    exec_queue_t *q = &lane->queue;

    for (size_t i = q->head; i < q->n; i++) {
        if (q->ops[i].d.kind == UMADV_OP_EVICT)
            op_unqueue(e, &q->ops[i]);
        if (q->ops[i].d.kind == UMADV_OP_ADVISE && q->ops[i].d.advice == UMADV_ADVICE_NONE)
            umadv__exec_unadvise_done(e, &q->ops[i]);
        if (q->ops[i].event != NULL)
            umadv__exec_event_put(e, q->ops[i].event);
    }
    q->head = q->n = 0;
    umadv__exec_changed(e);
}

static int blocks(const umadv_exec_t *e, uint64_t need, int blocking, uint64_t key)
{
    return blocking && need != EXEC_KEY_NONE && need <= key && need >= e->abandoned;
}

/* Whether a queued op of @lane blocks @key. */
static int queued_blocks(const umadv_exec_t *e, const exec_lane_t *lane, uint64_t key)
{
    const exec_queue_t *q = &lane->queue;

    for (size_t i = q->head; i < q->n; i++) {
        if (blocks(e, q->ops[i].d.need, q->ops[i].d.blocking, key))
            return 1;
        if (lane == &e->fetch && q->ops[i].d.need > key)
            break; /* sorted by need */
    }
    return 0;
}

/* Does the step of @key still wait for an op, queued or in flight? */
int umadv__exec_pending(const umadv_exec_t *e, uint64_t key)
{
    const exec_lane_t *lanes[2] = {&e->fetch, &e->evict};

    for (int l = 0; l < 2; l++) {
        if (blocks(e, lanes[l]->busy_need, lanes[l]->busy_blocking, key) ||
            queued_blocks(e, lanes[l], key))
            return 1;
    }
    return 0;
}

/* The fetch lane is idle and an op of the step is queued: what keeps the
 * head of its queue from going. */
static const char *idle_fetch_cause(const umadv_exec_t *e)
{
    const exec_op_t *head = umadv__exec_queue_peek((exec_lane_t *)&e->fetch);
    uint64_t add;

    if (head == NULL)
        return "wait: fetch queued, no room yet";
    if (head->d.kind == UMADV_OP_ADVISE)
        return "wait: advice queued";
    if (umadv__core_fetch_verdict(&e->core, &head->d, &add) == UMADV_FETCH_WAIT)
        return "wait: fetch queued, no room yet";
    /* it may go: the lane has yet to wake and take it */
    return head->d.fresh ? "wait: fresh population queued, lane waking"
                         : "wait: fetch queued, lane waking";
}

const char *umadv__exec_pending_cause(const umadv_exec_t *e, uint64_t key)
{
    if (blocks(e, e->evict.busy_need, e->evict.busy_blocking, key))
        return "wait: eviction in flight";
    if (queued_blocks(e, &e->evict, key))
        return "wait: eviction queued";
    if (blocks(e, e->fetch.busy_need, e->fetch.busy_blocking, key))
        return "wait: fetch in flight";
    if (e->fetch.busy_need != EXEC_KEY_NONE)
        return "wait: fetch queued behind another";
    return idle_fetch_cause(e);
}

/* A step gave up waiting: nothing needed up to @key blocks any more, and
 * fetches for it that have not started are dropped (they would only take
 * room and lane time from later steps). */
void umadv__exec_abandon(umadv_exec_t *e, uint64_t key)
{
    exec_queue_t *q = &e->fetch.queue;

    e->abandoned = key + 1;
    while (q->head < q->n && q->ops[q->head].d.need <= key)
        umadv__exec_queue_remove(&e->fetch, q->head);
}

/* ---- events ----------------------------------------------------------- */

/*
 * STEP ENDS. An eviction waits for the event of the step end before it
 * was decided, so that no data leaves while a kernel may still use it.
 * Under plan few step ends have one waiting (a PyTorch GPT-2 iteration:
 * about 30 of its 879), and recording an event at every one cost the
 * application's thread a driver call a launch. So a step end is numbered
 * (ends_seq) and its event recorded, on the step's stream, only when an op
 * decided at that step end waits for it: plan decides such ops (evictions,
 * drops of live data, advice unsets) at step ends only. demand and
 * prefetch-all make room when the next step begins, by when the
 * application may have destroyed the stream and made another with the
 * same handle: their step ends are recorded at once (umadv__exec_end_settle).
 * oracle never evicts and records none. The copies an application makes
 * after a step end are numbered past it (stage.c, copied).
 */

static exec_event_t *event_new(umadv_exec_t *e)
{
    exec_event_t *ev;

    if (umadv__array_reserve((void **)&e->events, &e->events_cap, e->nevents + 1,
                             sizeof(*e->events)) != UMADV_OK ||
        umadv__array_reserve((void **)&e->spare, &e->spare_cap, e->nevents + 1,
                             sizeof(*e->spare)) != UMADV_OK)
        return NULL;
    ev = calloc(1, sizeof(*ev));
    if (ev == NULL)
        return NULL;
    if (e->p.ops->event_create(&ev->event) != UMADV_OK) {
        free(ev);
        umadv__exec_fail(e, "event_create");
        return NULL;
    }
    e->events[e->nevents++] = ev;
    return ev;
}

/* An event recorded on @stream now for the latest step end, with one
 * reference for the caller; NULL when events fail (the executor is then
 * broken). */
static exec_event_t *event_record(umadv_exec_t *e, umadv_stream_t stream)
{
    exec_event_t *ev = e->nspare > 0 ? e->spare[--e->nspare] : event_new(e);

    if (ev == NULL)
        return NULL;
    ev->refs = 1;
    ev->seq = e->ends_seq;
    if (e->p.ops->event_record(ev->event, stream) != UMADV_OK) {
        umadv__exec_event_put(e, ev);
        umadv__exec_fail(e, "event_record");
        return NULL;
    }
    return ev;
}

void umadv__exec_step_ended(umadv_exec_t *e, umadv_stream_t stream)
{
    e->ends_seq++;
    e->end_stream = stream;
    e->end_unrecorded = 1;
}

void umadv__exec_end_settle(umadv_exec_t *e)
{
    if (e->end_unrecorded && !e->broken && e->p.policy != UMADV_POLICY_PLAN &&
        e->p.policy != UMADV_POLICY_ORACLE)
        (void)umadv__exec_last_end(e);
}

exec_event_t *umadv__exec_last_end(umadv_exec_t *e)
{
    if (e->end_unrecorded) {
        exec_event_t *ev = event_record(e, e->end_stream);

        e->end_unrecorded = 0;
        umadv__exec_event_put(e, e->last_event);
        e->last_event = ev;
    }
    return e->last_event;
}

void umadv__exec_event_ref(exec_event_t *ev)
{
    ev->refs++;
}

void umadv__exec_event_put(umadv_exec_t *e, exec_event_t *ev)
{
    if (ev == NULL || --ev->refs > 0)
        return;
    /* spare has room for every event: reserved when the event was made */
    e->spare[e->nspare++] = ev;
}

void umadv__exec_events_destroy(umadv_exec_t *e)
{
    umadv_cuda_release_t release = {"event_destroy", 0};

    for (size_t i = 0; i < e->nevents; i++) {
        umadv__cuda_release_note(&release, e->p.ops->event_destroy(e->events[i]->event));
        free(e->events[i]);
    }
    umadv__cuda_release_end(&release);
    free(e->events);
    free(e->spare);
    e->events = e->spare = NULL;
    e->nevents = e->nspare = 0;
}

void umadv__exec_wake(umadv_exec_t *e)
{
    if (e->waiting > 0 || e->draining > 0 || umadv__exec_queue_peek(&e->fetch) != NULL ||
        umadv__exec_queue_peek(&e->evict) != NULL)
        umadv__exec_changed(e);
}
