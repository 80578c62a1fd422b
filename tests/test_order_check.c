/*
 * tests/order_check.h, the host log read as a GPU would run it, on logs
 * made by hand: which pairs of calls it finds unordered, and which
 * orderings it accepts (the stream, an event waited for, the host's
 * synchronisation of a stream or an event).
 */
#include <stdint.h>

#include "order_check.h"
#include "tap.h"

static char a[64], b[64], c[64];
static int ev1, ev2;
#define S1 ((umadv_stream_t)0x10)
#define S2 ((umadv_stream_t)0x20)

static umadv_cuda_host_record_t copy(void *dst, const void *src, umadv_stream_t s, unsigned t)
{
    return (umadv_cuda_host_record_t){.call = UMADV_CUDA_CALL_MEMCPY, .ptr = dst, .src = src,
                                      .size = 32, .stream = s, .thread = t};
}

static umadv_cuda_host_record_t call(umadv_cuda_call_t kind, void *ptr, umadv_stream_t s)
{
    return (umadv_cuda_host_record_t){.call = kind, .ptr = ptr, .size = 32, .stream = s,
                                      .thread = 1};
}

#define HAZARDS(...) hazards((umadv_cuda_host_record_t[]){__VA_ARGS__}, \
    sizeof((umadv_cuda_host_record_t[]){__VA_ARGS__}) / sizeof(umadv_cuda_host_record_t))

static long hazards(const umadv_cuda_host_record_t *log, size_t n)
{
    char why[256];

    return order_hazards(log, n, why, sizeof(why));
}

int main(void)
{
    plan(12);
    is((int)HAZARDS(copy(b, a, S1, 1), copy(c, b, S2, 1)), 1,
       "a copy out of what another stream copies in, nothing between: unordered");
    is((int)HAZARDS(copy(b, a, S1, 1), copy(b, c, S2, 1)), 1,
       "two copies into the same bytes on two streams: unordered");
    is((int)HAZARDS(copy(b, a, S1, 1), copy(c, a, S2, 1)), 0, "two reads of the same bytes");
    is((int)HAZARDS(copy(b, a, S1, 1), copy(c, b, S1, 1)), 0, "one stream: in order");
    is((int)HAZARDS(copy(b, a, S1, 1), call(UMADV_CUDA_CALL_EVENT_RECORD, &ev1, S1),
                    call(UMADV_CUDA_CALL_STREAM_WAIT, &ev1, S2), copy(c, b, S2, 1)), 0,
       "an event recorded after the first and waited for before the second");
    is((int)HAZARDS(call(UMADV_CUDA_CALL_EVENT_RECORD, &ev1, S1), copy(b, a, S1, 1),
                    call(UMADV_CUDA_CALL_STREAM_WAIT, &ev1, S2), copy(c, b, S2, 1)), 1,
       "an event recorded before the first orders nothing after it");
    is((int)HAZARDS(copy(b, a, S1, 1), call(UMADV_CUDA_CALL_EVENT_RECORD, &ev1, S1),
                    call(UMADV_CUDA_CALL_STREAM_WAIT, &ev2, S2), copy(c, b, S2, 1)), 1,
       "a wait for another event: unordered");
    is((int)HAZARDS(copy(b, a, S1, 1), call(UMADV_CUDA_CALL_STREAM_SYNC, NULL, S1),
                    copy(c, b, S2, 1)), 0, "the host waited for the first's stream");
    is((int)HAZARDS(copy(b, a, S1, 1), call(UMADV_CUDA_CALL_EVENT_RECORD, &ev1, S1),
                    call(UMADV_CUDA_CALL_EVENT_SYNC, &ev1, NULL), copy(c, b, S2, 1)), 0,
       "the host waited for an event recorded after the first");
    is((int)HAZARDS(copy(b, a, S1, 1), call(UMADV_CUDA_CALL_STREAM_SYNC, NULL, S2),
                    copy(c, b, S2, 1)), 1, "the host waited for another stream");
    is((int)HAZARDS(copy(b, a, S1, 1), copy(c, b, S2, 2)), 0,
       "calls of two threads: not judged (locks order them, unseen)");
    is((int)HAZARDS(call(UMADV_CUDA_CALL_DISCARD_PREFETCH, b, S1), call(UMADV_CUDA_CALL_EVENT_RECORD, &ev1, S1),
                    copy(b, a, S2, 1), call(UMADV_CUDA_CALL_STREAM_WAIT, &ev1, S2)), 1,
       "a copy into a range before its stream waits for the range's population");
    return exit_status();
}
