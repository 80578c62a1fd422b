/*
 * Iterations from the repeating launch sequence: the ids of the
 * program's kernel launches (launch_hooks.c) or, under PyTorch, of its
 * module calls (the Python hook) go to one period detector (period.c);
 * where it says a unit of the sequence starts, an iteration begins.
 * Followed while UMADV_ITERATION_SOURCE admits it: under auto, until the
 * program shows an NVTX range or an optimizer step. In a profile window
 * (UMADV_PROFILE_SECONDS) a launch only tells the window the time. A program whose
 * launches never repeat is told, once, how to mark its iterations.
 */
#include "inject/inject.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "common/log.h"
#include "inject/period.h"

/* Launches after which a sequence that never repeated is reported; at
 * exit, a program of fewer than HINT_LEAST is too short to tell. */
#define HINT_AFTER 100000u
#define HINT_LEAST 64u

static pthread_mutex_t detector_lock = PTHREAD_MUTEX_INITIALIZER;
static umadv_period_t *detector; /* detector_lock */
static int detector_failed;      /* detector_lock */
static atomic_int stopped;       /* launches mark no more: not asked to again */
static atomic_int hinted;

static void hint(uint64_t launches)
{
    const umadv_config_t *config = umadv__inject_config();

    if (config == NULL || atomic_exchange(&hinted, 1))
        return;
    umadv_warn("no iteration found: %llu launches repeat no sequence "
               "(UMADV_ITERATION_SOURCE=%s); mark each iteration with an NVTX range "
               "named \"%s\" (nvtxRangePushA) so that umadv can plan it (umadv-run(1), "
               "ITERATIONS)", (unsigned long long)launches,
               umadv__config_iteration_source_name((unsigned)config->iteration_source),
               config->iteration_range);
}

/* At exit: a program whose launches were followed to the end without an
 * iteration found. */
static void at_exit(void)
{
    umadv_period_info_t info;

    if (atomic_load(&stopped) || !umadv__inject_launches_wanted())
        return;
    pthread_mutex_lock(&detector_lock);
    umadv__period_info(detector, &info);
    pthread_mutex_unlock(&detector_lock);
    if (info.units == 0 && info.launches >= HINT_LEAST)
        hint(info.launches);
}

/* The detector, made on the first launch (detector_lock held); NULL
 * when it cannot be made (said once). */
static umadv_period_t *detector_get(void)
{
    umadv_period_params_t params;

    if (detector != NULL || detector_failed)
        return detector;
    umadv__period_params_default(&params);
    if (umadv__period_create(&params, &detector) != UMADV_OK) {
        umadv_warn("no memory for the launch-sequence detector: iterations come from NVTX "
                   "ranges and optimizer steps only");
        detector_failed = 1;
        return NULL;
    }
    atexit(at_exit);
    return detector;
}

/* Step the detector with @id: its flags; the state for the summary in
 * *@info_p. */
static unsigned detector_step(uint64_t id, umadv_period_info_t *info_p)
{
    umadv_period_t *p;
    unsigned flags = 0;

    pthread_mutex_lock(&detector_lock);
    p = detector_get();
    if (p != NULL) {
        flags = umadv__period_next(p, id);
        umadv__period_info(p, info_p);
    }
    pthread_mutex_unlock(&detector_lock);
    return p != NULL ? flags : UINT32_MAX;
}

int umadv__inject_launch(uint64_t id)
{
    umadv_period_info_t info;
    unsigned flags;

    if (atomic_load_explicit(&stopped, memory_order_relaxed))
        return 0;
    if (umadv__inject_window_mode()) /* a launch tells the window the time */
        return umadv__inject_window_seen();
    if (!umadv__inject_launches_wanted()) {
        atomic_store(&stopped, 1);
        return 0;
    }
    flags = detector_step(id, &info);
    if (flags == UINT32_MAX) {
        atomic_store(&stopped, 1);
        return 0;
    }
    umadv__inject_count_launches(info.launches, info.period);
    if (flags & UMADV_PERIOD_BEGIN)
        umadv__inject_mark(UMADV_ITERATION_SOURCE_LAUNCHES, (flags & UMADV_PERIOD_NEW_UNIT) != 0);
    if (info.units == 0 && info.launches == HINT_AFTER)
        hint(info.launches);
    return 1;
}

/* ---- entry point (umadv-run(1), INJECTION LIBRARY) ---- */

/* Python's start-up hook: a module call, as a launch of the sequence. */
UMADV_INJECT_API int umadv_inject_launch(uint64_t id)
{
    return umadv__inject_launch(id);
}
