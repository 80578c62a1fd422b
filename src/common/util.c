#define _GNU_SOURCE /* RUSAGE_THREAD */
#include "common/util.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <time.h>

static const struct {
    const char *suffix;
    uint64_t    scale;
} size_suffixes[] = {
    {"",    1},
    {"b",   1},
    {"k",   UMADV_KIB}, {"kb", UMADV_KIB}, {"kib", UMADV_KIB},
    {"m",   UMADV_MIB}, {"mb", UMADV_MIB}, {"mib", UMADV_MIB},
    {"g",   UMADV_GIB}, {"gb", UMADV_GIB}, {"gib", UMADV_GIB},
    {"t",   UMADV_GIB << 10}, {"tb", UMADV_GIB << 10}, {"tib", UMADV_GIB << 10},
};

static int size_suffix_scale(const char *suffix, uint64_t *scale_p)
{
    for (size_t i = 0; i < UMADV_ARRAY_SIZE(size_suffixes); i++) {
        if (strcasecmp(suffix, size_suffixes[i].suffix) == 0) {
            *scale_p = size_suffixes[i].scale;
            return 0;
        }
    }
    return -1;
}

UMADV_API umadv_status_t umadv_size_parse(const char *text, uint64_t *bytes_p)
{
    uint64_t scale;
    char *end;
    double value;

    if (text == NULL || text[0] == '\0' || text[0] == '-' || text[0] == '+')
        return UMADV_ERR_INVALID_PARAM;
    if (strchr("0123456789.", text[0]) == NULL)
        return UMADV_ERR_INVALID_PARAM; /* strtod would accept "inf", "nan" */
    errno = 0;
    value = strtod(text, &end);
    if (errno != 0 || end == text || !isfinite(value))
        return UMADV_ERR_INVALID_PARAM;
    while (*end == ' ')
        end++;
    if (size_suffix_scale(end, &scale) != 0)
        return UMADV_ERR_INVALID_PARAM;
    value *= (double)scale;
    if (value >= 18446744073709551616.0) /* 2^64 */
        return UMADV_ERR_INVALID_PARAM;
    if (value != floor(value) && scale == 1)
        return UMADV_ERR_INVALID_PARAM; /* "1.5" bytes means nothing */
    *bytes_p = (uint64_t)value;
    return UMADV_OK;
}

char *umadv__size_format(uint64_t bytes, char *buf, size_t len)
{
    static const char *const units[] = {"KiB", "MiB", "GiB", "TiB"};
    double value = (double)bytes;
    int unit = -1;

    if (bytes < UMADV_KIB) {
        snprintf(buf, len, "%llu B", (unsigned long long)bytes);
        return buf;
    }
    while (value >= 1024.0 && unit < 3) {
        value /= 1024.0;
        unit++;
    }
    snprintf(buf, len, "%.2f %s", value, units[unit]);
    return buf;
}

umadv_status_t umadv__array_reserve(void **array, size_t *cap, size_t need,
                                    size_t elem_size)
{
    size_t new_cap;
    void *grown;

    if (need <= *cap)
        return UMADV_OK;
    new_cap = *cap ? *cap : 16;
    while (new_cap < need) {
        if (new_cap > SIZE_MAX / 2)
            return UMADV_ERR_NO_MEMORY;
        new_cap *= 2;
    }
    if (new_cap > SIZE_MAX / elem_size)
        return UMADV_ERR_NO_MEMORY;
    grown = realloc(*array, new_cap * elem_size);
    if (grown == NULL)
        return UMADV_ERR_NO_MEMORY;
    *array = grown;
    *cap = new_cap;
    return UMADV_OK;
}

umadv_status_t umadv__strdup(const char *s, char **copy_p)
{
    char *copy = NULL;

    if (s != NULL) {
        copy = strdup(s);
        if (copy == NULL)
            return UMADV_ERR_NO_MEMORY;
    }
    *copy_p = copy;
    return UMADV_OK;
}

static uint32_t crc32_table[256];
static int crc32_ready;

static void crc32_init(void)
{
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = n;
        for (int k = 0; k < 8; k++)
            c = (c & 1) ? 0xedb88320u ^ (c >> 1) : c >> 1;
        crc32_table[n] = c;
    }
    __atomic_store_n(&crc32_ready, 1, __ATOMIC_RELEASE);
}

uint32_t umadv__crc32(uint32_t crc, const void *data, size_t len)
{
    const unsigned char *p = data;

    /* Racing initialisers write identical tables: harmless. */
    if (!__atomic_load_n(&crc32_ready, __ATOMIC_ACQUIRE))
        crc32_init();
    crc = ~crc;
    while (len--)
        crc = crc32_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
    return ~crc;
}

size_t umadv__utf8_valid_len(const unsigned char *p, size_t avail)
{
    unsigned char c = p[0], lo = 0x80, hi = 0xbf;
    size_t n;

    if (c < 0x80)
        return 1;
    if (c < 0xc2 || c > 0xf4)
        return 0; /* a continuation byte, or a lead byte of an overlong form */
    n = c < 0xe0 ? 2 : c < 0xf0 ? 3 : 4;
    /* These lead bytes narrow the second byte's range: overlong 3- and
     * 4-byte forms, surrogates, past U+10FFFF. */
    if (c == 0xe0)
        lo = 0xa0;
    else if (c == 0xed)
        hi = 0x9f;
    else if (c == 0xf0)
        lo = 0x90;
    else if (c == 0xf4)
        hi = 0x8f;
    if (avail < n || p[1] < lo || p[1] > hi)
        return 0;
    for (size_t i = 2; i < n; i++) {
        if (p[i] < 0x80 || p[i] > 0xbf)
            return 0;
    }
    return n;
}

uint64_t umadv__now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t umadv__thread_cpu_ns(void)
{
    struct timespec ts;

    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
        return 0;
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static __thread int thread_own;

void umadv__thread_mark_own(void)
{
    thread_own = 1;
}

int umadv__thread_is_own(void)
{
    return thread_own;
}

void umadv__thread_events(umadv_thread_events_t *ev)
{
    struct rusage ru;

    memset(ev, 0, sizeof(*ev));
    if (getrusage(RUSAGE_THREAD, &ru) != 0)
        return;
    ev->minor_faults         = (uint64_t)ru.ru_minflt;
    ev->major_faults         = (uint64_t)ru.ru_majflt;
    ev->voluntary_switches   = (uint64_t)ru.ru_nvcsw;
    ev->involuntary_switches = (uint64_t)ru.ru_nivcsw;
}

static uint64_t count_since(uint64_t now, uint64_t then)
{
    return now > then ? now - then : 0;
}

void umadv__thread_events_add(umadv_thread_events_t *sum, const umadv_thread_events_t *now,
                              const umadv_thread_events_t *then)
{
    sum->minor_faults += count_since(now->minor_faults, then->minor_faults);
    sum->major_faults += count_since(now->major_faults, then->major_faults);
    sum->voluntary_switches += count_since(now->voluntary_switches, then->voluntary_switches);
    sum->involuntary_switches +=
        count_since(now->involuntary_switches, then->involuntary_switches);
}

unsigned umadv__edit_distance(const char *a, const char *b)
{
    enum { MAXLEN = 64 };
    unsigned d[MAXLEN + 1][MAXLEN + 1];
    size_t n = UMADV_MIN(strlen(a), (size_t)MAXLEN), m = UMADV_MIN(strlen(b), (size_t)MAXLEN);

    for (size_t i = 0; i <= n; i++)
        d[i][0] = (unsigned)i;
    for (size_t j = 0; j <= m; j++)
        d[0][j] = (unsigned)j;
    for (size_t i = 1; i <= n; i++) {
        for (size_t j = 1; j <= m; j++) {
            unsigned cost = a[i - 1] != b[j - 1];
            unsigned best = UMADV_MIN(d[i - 1][j] + 1, d[i][j - 1] + 1);
            best = UMADV_MIN(best, d[i - 1][j - 1] + cost);
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
                best = UMADV_MIN(best, d[i - 2][j - 2] + 1);
            d[i][j] = best;
        }
    }
    return d[n][m];
}

const char *umadv__suggest(const char *word, const void *candidates, size_t stride)
{
    const char *best = NULL;
    unsigned best_distance = UINT32_MAX;

    for (const char *p = candidates;; p += stride) {
        const char *name = *(const char *const *)(const void *)p;
        if (name == NULL)
            break;
        unsigned distance = umadv__edit_distance(word, name);
        if (distance < best_distance) {
            best = name;
            best_distance = distance;
        }
    }
    /* Close enough that the user plausibly meant it: a typo or two, fewer
     * for short words so "-x" does not suggest every one-letter name. */
    if (best == NULL || best_distance > 3 || 3 * best_distance > strlen(word) + 2)
        return NULL;
    return best;
}

int umadv__str_same(const char *a, const char *b)
{
    return a == b || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

int umadv__name_index(const char *const *names, unsigned count, const char *name)
{
    for (unsigned i = 0; i < count; i++) {
        if (strcmp(name, names[i]) == 0)
            return (int)i;
    }
    return -1;
}
