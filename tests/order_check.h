/*
 * Test helper: the host backend's call log read as a GPU would run it.
 *
 * The host backend does each call's work when it is issued, so a copy
 * that a GPU would run before its source is written, or beside another
 * copy into the same bytes, reads right there. order_hazards finds such
 * pairs in the log: within one thread's calls (the executor's lanes order
 * their own calls by streams, events and synchronisations; threads order
 * each other through locks the log does not see), two calls that touch
 * the same bytes, at least one writing, where the later is not ordered
 * after the earlier one's completion by
 *   - the stream both are on,
 *   - an event recorded on the earlier's stream after it and waited for
 *     by the later's stream before it (STREAM_WAIT), or
 *   - a synchronisation of the earlier's stream or of such an event by
 *     the host before the later was issued.
 * Vector clocks over the streams (at most ORDER_STREAMS); an event waited
 * for that the thread did not record orders nothing.
 */
#ifndef UMADV_TESTS_ORDER_CHECK_H
#define UMADV_TESTS_ORDER_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_ops/cuda_ops.h"

#define ORDER_STREAMS 16
#define ORDER_EVENTS  64

typedef struct order_clock {
    unsigned at[ORDER_STREAMS];
} order_clock_t;

typedef struct order_op {
    const umadv_cuda_host_record_t *rec;
    int                             stream;
    unsigned                        position; /* on its stream, from 1 */
    order_clock_t                   after;    /* what it runs after */
} order_op_t;

typedef struct order_state {
    umadv_stream_t streams[ORDER_STREAMS];
    int            nstreams;
    order_clock_t  stream_after[ORDER_STREAMS];
    unsigned       issued[ORDER_STREAMS];
    const void    *events[ORDER_EVENTS];
    order_clock_t  event_clock[ORDER_EVENTS];
    int            nevents;
    order_clock_t  host;
    int            overflow;
} order_state_t;

static inline void order_join(order_clock_t *into, const order_clock_t *from)
{
    for (int i = 0; i < ORDER_STREAMS; i++)
        if (from->at[i] > into->at[i])
            into->at[i] = from->at[i];
}

static inline int order_stream(order_state_t *st, umadv_stream_t stream)
{
    for (int i = 0; i < st->nstreams; i++)
        if (st->streams[i] == stream)
            return i;
    if (st->nstreams == ORDER_STREAMS) {
        st->overflow = 1;
        return 0;
    }
    st->streams[st->nstreams] = stream;
    return st->nstreams++;
}

static inline int order_event(order_state_t *st, const void *event, int make)
{
    for (int i = 0; i < st->nevents; i++)
        if (st->events[i] == event)
            return i;
    if (!make)
        return -1;
    if (st->nevents == ORDER_EVENTS) {
        st->overflow = 1;
        return -1;
    }
    st->events[st->nevents] = event;
    memset(&st->event_clock[st->nevents], 0, sizeof(order_clock_t));
    return st->nevents++;
}

/* The bytes a call writes (and, for a copy, reads): 0 if it touches none
 * the check follows. */
static inline int order_touches(const umadv_cuda_host_record_t *r)
{
    switch (r->call) {
    case UMADV_CUDA_CALL_MEMCPY:
    case UMADV_CUDA_CALL_MEMSET:
    case UMADV_CUDA_CALL_DISCARD:
    case UMADV_CUDA_CALL_DISCARD_PREFETCH:
    case UMADV_CUDA_CALL_PREFETCH:
    case UMADV_CUDA_CALL_PREFETCH_BATCH:
        return 1;
    default:
        return 0;
    }
}

static inline int order_overlap(const void *a, size_t asize, const void *b, size_t bsize)
{
    const char *x = a, *y = b;

    return a != NULL && b != NULL && x < y + bsize && y < x + asize;
}

/* Whether @a and @b touch the same bytes, one of them writing. */
static inline int order_conflict(const umadv_cuda_host_record_t *a,
                                 const umadv_cuda_host_record_t *b)
{
    if (order_overlap(a->ptr, a->size, b->ptr, b->size))
        return 1; /* both write their ptr */
    if (a->call == UMADV_CUDA_CALL_MEMCPY && order_overlap(a->src, a->size, b->ptr, b->size))
        return 1;
    return b->call == UMADV_CUDA_CALL_MEMCPY && order_overlap(a->ptr, a->size, b->src, b->size);
}

/* Thread @thread's calls in @log (@n records), as a GPU would order them:
 * how many pairs are unordered (order_check.h); the first described in
 * @why. -1 when the log has more streams or events than followed. */
static inline long order_hazards_thread(const umadv_cuda_host_record_t *log, size_t n,
                                        unsigned thread, char *why, size_t cap)
{
    order_state_t *st = calloc(1, sizeof(*st));
    order_op_t *ops = calloc(n ? n : 1, sizeof(*ops));
    size_t nops = 0;
    long hazards = 0;

    if (st == NULL || ops == NULL) {
        free(st);
        free(ops);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        const umadv_cuda_host_record_t *r = &log[i];
        int s, ev;

        if (r->thread != thread)
            continue;
        s = order_stream(st, r->stream);
        switch (r->call) {
        case UMADV_CUDA_CALL_EVENT_RECORD:
            if ((ev = order_event(st, r->ptr, 1)) >= 0)
                st->event_clock[ev] = st->stream_after[s];
            break;
        case UMADV_CUDA_CALL_STREAM_WAIT:
            if ((ev = order_event(st, r->ptr, 0)) >= 0)
                order_join(&st->stream_after[s], &st->event_clock[ev]);
            break;
        case UMADV_CUDA_CALL_STREAM_SYNC:
            order_join(&st->host, &st->stream_after[s]);
            break;
        case UMADV_CUDA_CALL_EVENT_SYNC:
            if ((ev = order_event(st, r->ptr, 0)) >= 0)
                order_join(&st->host, &st->event_clock[ev]);
            break;
        default:
            if (!order_touches(r))
                break;
            order_join(&st->stream_after[s], &st->host);
            ops[nops] = (order_op_t){r, s, ++st->issued[s], st->stream_after[s]};
            for (size_t k = 0; k < nops; k++) {
                const order_op_t *a = &ops[k];

                if (ops[nops].after.at[a->stream] >= a->position ||
                    !order_conflict(a->rec, r))
                    continue;
                if (hazards++ == 0 && why != NULL)
                    snprintf(why, cap, "thread %u: call %d at %p (%zu bytes, stream %d) "
                             "not ordered after call %d at %p (%zu bytes, stream %d)",
                             thread, (int)r->call, r->ptr, r->size, s, (int)a->rec->call,
                             a->rec->ptr, a->rec->size, a->stream);
            }
            st->stream_after[s].at[s] = ops[nops++].position;
            break;
        }
    }
    if (st->overflow)
        hazards = -1;
    free(st);
    free(ops);
    return hazards;
}

/* Every thread's (order_hazards_thread), summed; -1 if any overflowed. */
static inline long order_hazards(const umadv_cuda_host_record_t *log, size_t n, char *why,
                                 size_t cap)
{
    unsigned threads = 0;
    long all = 0;

    if (why != NULL && cap > 0)
        why[0] = '\0';
    for (size_t i = 0; i < n; i++)
        threads = log[i].thread > threads ? log[i].thread : threads;
    for (unsigned t = 1; t <= threads; t++) {
        long h = order_hazards_thread(log, n, t, all == 0 ? why : NULL, cap);

        if (h < 0)
            return -1;
        all += h;
    }
    return all;
}

#endif
