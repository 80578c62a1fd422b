/*
 * Between the replay core's state (core.c) and its policies
 * (core_policy.c).
 */
#ifndef UMADV_SCHEDULE_CORE_INT_H
#define UMADV_SCHEDULE_CORE_INT_H

#include "schedule/core.h"

/* core_policy.c: the schedule's setup advice on @alloc, just bound. */
void umadv__core_setup_advice(umadv_core_t *core, uint32_t alloc);

#endif
