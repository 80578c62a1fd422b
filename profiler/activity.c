/*
 * What a full recording keeps for the trace's activity (attrib.h,
 * umadv_prof_activity_t): kernel names each kept once, and the
 * unified-memory records up to the bound. Called by the buffer callback
 * under the profiler's lock.
 */
#include "profiler/profiler_int.h"

#include <stdlib.h>
#include <string.h>

#include "common/util.h"

static uint64_t name_hash(const char *s)
{
    uint64_t h = UINT64_C(1469598103934665603); /* FNV-1a */

    for (; *s != '\0'; s++)
        h = (h ^ (unsigned char)*s) * UINT64_C(1099511628211);
    return h;
}

/* The slot of @name, or the empty one where it goes. */
static size_t name_slot(const umadv_prof_names_t *h, const umadv_prof_activity_t *act,
                        const char *name)
{
    size_t mask = h->nslots - 1, i = (size_t)name_hash(name) & mask;

    while (h->slots[i] != 0 && strcmp(act->names[h->slots[i] - 1], name) != 0)
        i = (i + 1) & mask;
    return i;
}

/* Twice the slots, every name placed again; kept under half full. */
static int names_grow(umadv_prof_names_t *h, const umadv_prof_activity_t *act)
{
    umadv_prof_names_t bigger = {NULL, h->nslots ? h->nslots * 2 : 256};

    bigger.slots = calloc(bigger.nslots, sizeof(*bigger.slots));
    if (bigger.slots == NULL)
        return -1;
    for (size_t n = 0; n < act->nnames; n++)
        bigger.slots[name_slot(&bigger, act, act->names[n])] = (uint32_t)n + 1;
    free(h->slots);
    *h = bigger;
    return 0;
}

/* Names kept at most this long (a C++ template's can run to kilobytes;
 * a trace line must stay under 64 KiB, umadv-trace(5)). */
#define NAME_MAX_BYTES 4096

uint32_t umadv__prof_name_intern(umadv_prof_names_t *h, umadv_prof_activity_t *act,
                                 const char *name)
{
    char cut[NAME_MAX_BYTES + 1];
    size_t slot;
    char *copy;

    if (name == NULL)
        return UMADV_EVENT_NO_NAME;
    if (strlen(name) > NAME_MAX_BYTES) {
        memcpy(cut, name, NAME_MAX_BYTES);
        cut[NAME_MAX_BYTES] = '\0';
        name = cut;
    }
    if ((act->nnames + 1) * 2 > h->nslots && names_grow(h, act) != 0)
        return UMADV_EVENT_NO_NAME;
    slot = name_slot(h, act, name);
    if (h->slots[slot] != 0)
        return h->slots[slot] - 1;
    if (act->nnames >= UMADV_PROF_EVENTS_MAX ||
        umadv__array_reserve((void **)&act->names, &act->names_cap, act->nnames + 1,
                             sizeof(*act->names)) != UMADV_OK ||
        umadv__strdup(name, &copy) != UMADV_OK)
        return UMADV_EVENT_NO_NAME; /* the kernel goes unnamed */
    act->names[act->nnames] = copy;
    h->slots[slot] = (uint32_t)++act->nnames;
    return h->slots[slot] - 1;
}

void umadv__prof_names_reset(umadv_prof_names_t *h)
{
    free(h->slots);
    h->slots  = NULL;
    h->nslots = 0;
}

void umadv__prof_event_push(umadv_prof_activity_t *act, const umadv_trace_event_t *event)
{
    if (act->nevents >= UMADV_PROF_EVENTS_MAX ||
        umadv__array_reserve((void **)&act->events, &act->events_cap, act->nevents + 1,
                             sizeof(*act->events)) != UMADV_OK) {
        act->dropped++;
        return;
    }
    act->events[act->nevents++] = *event;
}

void umadv__prof_activity_cleanup(umadv_prof_activity_t *act)
{
    for (size_t i = 0; i < act->nnames; i++)
        free(act->names[i]);
    free(act->names);
    free(act->events);
    memset(act, 0, sizeof(*act));
}
