/*
 * The measured timeline of a replay (UMADV_TIMELINE, umadv(7)): what the
 * application's thread and each executor lane did, and when, written as a
 * Chrome trace that Perfetto and chrome://tracing open. Where `umadv plan
 * --timeline` shows what the simulator predicts, this shows what ran: the
 * steps as the application's thread issued them, its waits with their
 * cause, every migration, staging and restore call with its bytes, the
 * eviction lane's waits for step ends and the fetch lane's waits for room.
 * Times are host times (CLOCK_MONOTONIC) taken around the calls, so a
 * lane's span is the call and its stream synchronisation.
 *
 * Recording is on only when a path is given; every span is one append
 * under a lock, at most @max of them (the rest are counted, and the file
 * says how many were dropped).
 */
#ifndef UMADV_EXEC_SPANS_H
#define UMADV_EXEC_SPANS_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <umadv.h>

/* The timeline's tracks, one per thread of the replay. */
typedef enum umadv_span_track {
    UMADV_SPAN_STEPS,  /* the application's thread: steps, from begin to end */
    UMADV_SPAN_WAITS,  /* the application's thread: waits for data, by cause */
    UMADV_SPAN_FETCH,  /* the fetch lane: to the GPU */
    UMADV_SPAN_EVICT,  /* the eviction lane: to the host */
    UMADV_SPAN_NTRACKS
} umadv_span_track_t;

typedef struct umadv_span {
    uint64_t    start_ns, end_ns;
    uint64_t    bytes;     /* moved by the call; 0: none */
    uint64_t    iteration; /* of the replay when the span ended */
    uint32_t    step;      /* in that iteration */
    uint8_t     track;     /* umadv_span_track_t */
    const char *what;      /* a string literal */
} umadv_span_t;

typedef struct umadv_spans {
    pthread_mutex_t lock;
    umadv_span_t   *v;
    size_t          n, cap, max;
    uint64_t        dropped; /* spans past max */
    int             saved;   /* written to a file once at least */
} umadv_spans_t;

/* Default bound on recorded spans: 48 bytes each, 96 MiB at most. */
#define UMADV_SPANS_MAX_DEFAULT ((size_t)2 << 20)

void umadv__spans_init(umadv_spans_t *s, size_t max);
void umadv__spans_cleanup(umadv_spans_t *s);

/* Record one span; @s may be NULL (recording off). Thread-safe. */
void umadv__spans_add(umadv_spans_t *s, umadv_span_track_t track, const char *what,
                      uint64_t start_ns, uint64_t end_ns, uint64_t bytes, uint64_t iteration,
                      uint32_t step);

/* Write the spans to @stream as a Chrome trace (umadv(7), TIMELINE), time
 * 0 at the earliest span. Returns 0, or -1 when the stream failed. */
int umadv__spans_write(umadv_spans_t *s, FILE *stream);

/* Write the spans to @path through common/outfile.h (a regular file is
 * replaced only once the whole timeline is written), and mark them saved.
 * Logs an error naming the file on failure. */
umadv_status_t umadv__spans_save(umadv_spans_t *s, const char *path);

#endif
