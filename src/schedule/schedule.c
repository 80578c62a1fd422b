/*
 * The schedule's names and its release (schedule.h).
 */
#include "schedule/schedule.h"

#include <stdlib.h>
#include <string.h>

#include "common/util.h"

const char *umadv__op_kind_name(umadv_op_kind_t kind)
{
    static const char *const names[] = {"fetch", "evict", "drop", "advise"};

    return (unsigned)kind < UMADV_ARRAY_SIZE(names) ? names[kind] : "?";
}

const char *umadv__advice_name(umadv_advice_t advice)
{
    static const char *const names[] = {"none", "read-mostly", "preferred-host",
                                        "preferred-device", "accessed-by"};

    return (unsigned)advice < UMADV_ARRAY_SIZE(names) ? names[advice] : "?";
}

void umadv__schedule_cleanup(umadv_schedule_t *schedule)
{
    free(schedule->setup);
    free(schedule->ops);
    free(schedule->step_ops);
    free(schedule->resident_at_start);
    memset(schedule, 0, sizeof(*schedule));
}
