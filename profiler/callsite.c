/*
 * Allocation call sites (callsite.h): backtrace() and dladdr(), and a
 * table that keeps each site's text once.
 */
#define _GNU_SOURCE /* dladdr */
#include "profiler/callsite.h"

#include <dlfcn.h>
#include <execinfo.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CALLSITE_FRAMES 48
#define CALLSITE_TEXT   UMADV_CALLSITE_TEXT

static __thread char python_site[CALLSITE_TEXT];

static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static char *table[UMADV_CALLSITE_MAX]; /* table_lock: the texts, each once */
static size_t ntable;

void umadv__callsite_set_python(const char *site)
{
    snprintf(python_site, sizeof(python_site), "%s", site != NULL ? site : "");
}

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');

    return slash != NULL ? slash + 1 : path;
}

int umadv__callsite_skipped_object(const char *path)
{
    static const char *const prefixes[] = {"libumadv", "libcudart", "libcuda.", "libcupti",
                                           "libpython", "python"};
    const char *base = base_name(path);

    for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
        if (strncmp(base, prefixes[i], strlen(prefixes[i])) == 0)
            return 1;
    }
    return 0;
}

/* @text kept once: the table's copy, or NULL when it is full. */
static const char *intern(const char *text)
{
    const char *kept = NULL;

    pthread_mutex_lock(&table_lock);
    for (size_t i = 0; i < ntable && kept == NULL; i++) {
        if (strcmp(table[i], text) == 0)
            kept = table[i];
    }
    if (kept == NULL && ntable < UMADV_CALLSITE_MAX && (table[ntable] = strdup(text)) != NULL)
        kept = table[ntable++];
    pthread_mutex_unlock(&table_lock);
    return kept;
}

/* A frame's text, or 0 when its object is one to skip or unknown, or
 * its symbol is umadv's own (a program linked with umadv statically). */
static int frame_text(void *pc, char *text, size_t len)
{
    Dl_info info;
    /* a return address points past its call: look the call up */
    uintptr_t at = (uintptr_t)pc - 1;

    if (dladdr((void *)at, &info) == 0 || info.dli_fname == NULL ||
        umadv__callsite_skipped_object(info.dli_fname) ||
        (info.dli_sname != NULL && strncmp(info.dli_sname, "umadv_", 6) == 0))
        return 0;
    if (info.dli_sname != NULL && info.dli_saddr != NULL)
        snprintf(text, len, "%s+0x%lx (%s)", info.dli_sname,
                 (unsigned long)(at - (uintptr_t)info.dli_saddr), base_name(info.dli_fname));
    else
        snprintf(text, len, "%s+0x%lx", base_name(info.dli_fname),
                 (unsigned long)(at - (uintptr_t)info.dli_fbase));
    return 1;
}

/* The index of this function's caller's frame: the one that returns
 * to @caller (frames[1] usually, later where backtrace() is itself
 * wrapped, as a sanitizer's runtime does). */
static int caller_frame(void *const *frames, int n, const void *caller)
{
    for (int i = 0; i < n; i++) {
        if (frames[i] == caller)
            return i;
    }
    return 1;
}

const char *umadv__callsite_capture(unsigned skip)
{
    void *caller = __builtin_return_address(0);
    void *frames[CALLSITE_FRAMES];
    char text[CALLSITE_TEXT];
    int n;

    if (python_site[0] != '\0')
        return intern(python_site);
    n = backtrace(frames, CALLSITE_FRAMES);
    for (int i = caller_frame(frames, n, caller) + (int)skip; i < n; i++) {
        if (frame_text(frames[i], text, sizeof(text)))
            return intern(text);
    }
    return NULL;
}
