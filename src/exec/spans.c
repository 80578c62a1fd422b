/*
 * The measured timeline of a replay (spans.h). The document is the Chrome
 * trace event format's JSON object form: "traceEvents" holds one complete
 * event ("ph":"X") per span and a thread-name event per track, all in one
 * process; "otherData" says how many spans were dropped.
 */
#include "exec/spans.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/outfile.h"
#include "common/util.h"

static const char *const track_names[UMADV_SPAN_NTRACKS] = {
    [UMADV_SPAN_STEPS] = "application: steps",
    [UMADV_SPAN_WAITS] = "application: waits for data",
    [UMADV_SPAN_FETCH] = "fetch lane (to the GPU)",
    [UMADV_SPAN_EVICT] = "eviction lane (to the host)",
};

void umadv__spans_init(umadv_spans_t *s, size_t max)
{
    memset(s, 0, sizeof(*s));
    pthread_mutex_init(&s->lock, NULL);
    s->max = max;
}

void umadv__spans_cleanup(umadv_spans_t *s)
{
    free(s->v);
    pthread_mutex_destroy(&s->lock);
    memset(s, 0, sizeof(*s));
}

void umadv__spans_add(umadv_spans_t *s, umadv_span_track_t track, const char *what,
                      uint64_t start_ns, uint64_t end_ns, uint64_t bytes, uint64_t iteration,
                      uint32_t step)
{
    if (s == NULL)
        return;
    pthread_mutex_lock(&s->lock);
    if (s->n >= s->max ||
        umadv__array_reserve((void **)&s->v, &s->cap, s->n + 1, sizeof(*s->v)) != UMADV_OK)
        s->dropped++;
    else
        s->v[s->n++] = (umadv_span_t){.start_ns = start_ns, .end_ns = end_ns, .bytes = bytes,
                                      .iteration = iteration, .step = step,
                                      .track = (uint8_t)track, .what = what};
    pthread_mutex_unlock(&s->lock);
}

static uint64_t origin(const umadv_spans_t *s)
{
    uint64_t t = UINT64_MAX;

    for (size_t i = 0; i < s->n; i++)
        t = s->v[i].start_ns < t ? s->v[i].start_ns : t;
    return s->n > 0 ? t : 0;
}

static void write_span(FILE *f, const umadv_span_t *sp, uint64_t t0)
{
    fprintf(f, ",\n{\"name\":\"%s\",\"ph\":\"X\",\"pid\":1,\"tid\":%u,\"ts\":%.3f,\"dur\":%.3f,"
               "\"args\":{\"iteration\":%llu,\"step\":%u",
            sp->what, (unsigned)sp->track + 1, (double)(sp->start_ns - t0) / 1e3,
            (double)(sp->end_ns - sp->start_ns) / 1e3, (unsigned long long)sp->iteration,
            sp->step);
    if (sp->bytes > 0)
        fprintf(f, ",\"bytes\":%llu,\"GB/s\":%.2f", (unsigned long long)sp->bytes,
                sp->end_ns > sp->start_ns ? (double)sp->bytes / (double)(sp->end_ns - sp->start_ns)
                                          : 0.0);
    fputs("}}", f);
}

int umadv__spans_write(umadv_spans_t *s, FILE *f)
{
    uint64_t t0;

    pthread_mutex_lock(&s->lock);
    t0 = origin(s);
    fputs("{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n"
          "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"args\":{\"name\":\"umadv replay "
          "(measured)\"}}",
          f);
    for (int t = 0; t < UMADV_SPAN_NTRACKS; t++)
        fprintf(f, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":%d,"
                   "\"args\":{\"name\":\"%s\"}}",
                t + 1, track_names[t]);
    for (size_t i = 0; i < s->n; i++)
        write_span(f, &s->v[i], t0);
    fprintf(f, "\n],\"otherData\":{\"spans\":%zu,\"dropped_spans\":%llu}}\n", s->n,
            (unsigned long long)s->dropped);
    pthread_mutex_unlock(&s->lock);
    return ferror(f) ? -1 : 0;
}

umadv_status_t umadv__spans_save(umadv_spans_t *s, const char *path)
{
    umadv_outfile_t of;
    umadv_status_t status;
    char why[512];

    status = umadv__outfile_open(&of, path, "the timeline", why, sizeof(why));
    if (status == UMADV_OK && umadv__spans_write(s, of.stream) != 0) {
        umadv__outfile_discard(&of);
        snprintf(why, sizeof(why), "%s: a write failed", path);
        status = UMADV_ERR_IO;
    } else if (status == UMADV_OK) {
        status = umadv__outfile_commit(&of, why, sizeof(why));
    }
    s->saved |= status == UMADV_OK;
    if (status != UMADV_OK)
        umadv_error("UMADV_TIMELINE: %s: nothing written", why);
    else if (s->dropped > 0)
        umadv_warn("UMADV_TIMELINE: %s holds the first %zu spans; %llu more were dropped",
                   path, s->n, (unsigned long long)s->dropped);
    return status;
}
