/*
 * Every UMADV_* knob, described once in a table: name, type, default,
 * bounds, documentation. A bad value is an error naming the variable and
 * the value, never a silent default.
 */
#ifndef UMADV_COMMON_CONFIG_H
#define UMADV_COMMON_CONFIG_H

#include <stdint.h>
#include <stdio.h>

#include <umadv.h>

#include "common/log.h"

typedef struct umadv_config {
    uint64_t          budget;        /* UMADV_BUDGET, bytes, 0 = no budget */
    umadv_policy_t    policy;        /* UMADV_POLICY */
    int               device;        /* UMADV_DEVICE */
    uint64_t          section_size;  /* UMADV_SECTION_SIZE */
    uint64_t          max_managed;   /* UMADV_MAX_MANAGED, 0 = no limit */
    uint64_t          arena_size;    /* UMADV_ARENA_SIZE */
    uint32_t          lookahead;     /* UMADV_LOOKAHEAD, 0 = unlimited */
    int               read_mostly;   /* UMADV_READ_MOSTLY */
    umadv_log_level_t log_level;     /* UMADV_LOG */
    char              log_file[256]; /* UMADV_LOG_FILE, "" = stderr */
} umadv_config_t;

/* Fill @config with the built-in defaults. */
void umadv__config_defaults(umadv_config_t *config);

/* Defaults overridden by the environment. UMADV_ERR_INVALID_PARAM, logged as
 * "UMADV_X=value: reason", for the first bad value; @config is then
 * unchanged. */
umadv_status_t umadv__config_load(umadv_config_t *config);

/* Print every knob: name, type, default, current value (from the
 * environment, or "bad value" if invalid), bounds and documentation. */
void umadv__config_print(FILE *stream);

#endif
