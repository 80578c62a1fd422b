/*
 * A small streaming JSON writer for the commands' --json output: pretty
 * printed, one member per line (objects opened "inline" keep their members
 * on one line), strings escaped and made valid UTF-8. No parsing.
 */
#ifndef UMADV_TOOLS_JSON_H
#define UMADV_TOOLS_JSON_H

#include <stdint.h>
#include <stdio.h>

#define UMADV_JSON_MAX_DEPTH 16

typedef struct umadv_json {
    FILE *out;
    int   depth;
    int   count[UMADV_JSON_MAX_DEPTH];  /* members written at each level */
    int   inline_[UMADV_JSON_MAX_DEPTH]; /* level keeps its members on one line */
} umadv_json_t;

void umadv__json_init(umadv_json_t *json, FILE *out);

/* @key is the member name inside an object, NULL inside an array or at the
 * top. Nesting deeper than UMADV_JSON_MAX_DEPTH is a programming error. */
void umadv__json_begin_object(umadv_json_t *json, const char *key);
void umadv__json_begin_object_inline(umadv_json_t *json, const char *key);
void umadv__json_end_object(umadv_json_t *json);
void umadv__json_begin_array(umadv_json_t *json, const char *key);
void umadv__json_end_array(umadv_json_t *json);

/* NULL @value writes null. */
void umadv__json_string(umadv_json_t *json, const char *key, const char *value);
void umadv__json_u64(umadv_json_t *json, const char *key, uint64_t value);
/* Fixed @decimals so output is stable; NaN and infinities write null. */
void umadv__json_double(umadv_json_t *json, const char *key, double value, int decimals);
void umadv__json_bool(umadv_json_t *json, const char *key, int value);

/* Write @s as a JSON string literal, quotes included. */
void umadv__json_write_string(FILE *out, const char *s);

#endif
