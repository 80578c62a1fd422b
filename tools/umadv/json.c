#include "json.h"

#include <assert.h>
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "common/util.h"

void umadv__json_init(umadv_json_t *json, FILE *out)
{
    json->out      = out;
    json->depth    = 0;
    json->count[0] = 0;
    json->inline_[0] = 0;
}

static void write_escape(FILE *out, unsigned char c)
{
    switch (c) {
    case '"':  fputs("\\\"", out); break;
    case '\\': fputs("\\\\", out); break;
    case '\n': fputs("\\n", out); break;
    case '\r': fputs("\\r", out); break;
    case '\t': fputs("\\t", out); break;
    case '\b': fputs("\\b", out); break;
    case '\f': fputs("\\f", out); break;
    default:   fprintf(out, "\\u%04x", c); break;
    }
}

void umadv__json_write_string(FILE *out, const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    const unsigned char *end = p + strlen(s);

    fputc('"', out);
    while (p < end) {
        size_t n = umadv__utf8_valid_len(p, (size_t)(end - p));
        if (n == 0) {
            fputs("\\ufffd", out); /* not UTF-8: a kernel name from raw bytes */
            p++;
        } else if (n == 1 && (*p < 0x20 || *p == '"' || *p == '\\' || *p == 0x7f)) {
            write_escape(out, *p++);
        } else {
            fwrite(p, 1, n, out);
            p += n;
        }
    }
    fputc('"', out);
}

/* Separator, indentation and key before a value at the current level. */
static void member(umadv_json_t *json, const char *key)
{
    int level = json->depth;

    if (json->count[level]++ > 0)
        fputc(',', json->out);
    if (level > 0 && json->inline_[level]) {
        if (json->count[level] > 1)
            fputc(' ', json->out);
    } else if (level > 0) {
        fprintf(json->out, "\n%*s", 2 * level, "");
    }
    if (key != NULL) {
        umadv__json_write_string(json->out, key);
        fputs(": ", json->out);
    }
}

static void open_level(umadv_json_t *json, const char *key, char bracket, int inline_)
{
    member(json, key);
    fputc(bracket, json->out);
    assert(json->depth + 1 < UMADV_JSON_MAX_DEPTH);
    json->depth++;
    json->count[json->depth] = 0;
    json->inline_[json->depth] = inline_ || json->inline_[json->depth - 1];
}

static void close_level(umadv_json_t *json, char bracket)
{
    int had_members = json->count[json->depth] > 0;
    int was_inline = json->inline_[json->depth];

    assert(json->depth > 0);
    json->depth--;
    if (had_members && !was_inline)
        fprintf(json->out, "\n%*s", 2 * json->depth, "");
    fputc(bracket, json->out);
    if (json->depth == 0)
        fputc('\n', json->out);
}

void umadv__json_begin_object(umadv_json_t *json, const char *key)
{
    open_level(json, key, '{', 0);
}

void umadv__json_begin_object_inline(umadv_json_t *json, const char *key)
{
    open_level(json, key, '{', 1);
}

void umadv__json_end_object(umadv_json_t *json)
{
    close_level(json, '}');
}

void umadv__json_begin_array(umadv_json_t *json, const char *key)
{
    open_level(json, key, '[', 0);
}

void umadv__json_end_array(umadv_json_t *json)
{
    close_level(json, ']');
}

void umadv__json_string(umadv_json_t *json, const char *key, const char *value)
{
    member(json, key);
    if (value == NULL)
        fputs("null", json->out);
    else
        umadv__json_write_string(json->out, value);
}

void umadv__json_u64(umadv_json_t *json, const char *key, uint64_t value)
{
    member(json, key);
    fprintf(json->out, "%" PRIu64, value);
}

void umadv__json_double(umadv_json_t *json, const char *key, double value, int decimals)
{
    member(json, key);
    if (!isfinite(value))
        fputs("null", json->out);
    else
        fprintf(json->out, "%.*f", decimals, value);
}

void umadv__json_bool(umadv_json_t *json, const char *key, int value)
{
    member(json, key);
    fputs(value ? "true" : "false", json->out);
}
