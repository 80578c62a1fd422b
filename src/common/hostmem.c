#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include "common/hostmem.h"

#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/util.h"

/* A thread touches no less than this: below it, starting one costs more
 * than the pages it would zero. */
#define POPULATE_SLICE_MIN (64 * UMADV_MIB)
#define POPULATE_THREADS_MAX 16

size_t umadv__page_round(size_t size)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);

    return (size + page - 1) & ~(page - 1);
}

/* Map extra, unmap the ends. */
void *umadv__map_aligned(size_t size, size_t align)
{
    size_t span = size + align;
    char *raw, *start;

    raw = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED)
        return NULL;
    start = (char *)(((uintptr_t)raw + align - 1) & ~(uintptr_t)(align - 1));
    if (start > raw)
        munmap(raw, (size_t)(start - raw));
    if (raw + span > start + size)
        munmap(start + size, (size_t)(raw + span - (start + size)));
    return start;
}

typedef struct populate_slice {
    volatile char *base;
    size_t         size;
    size_t         page;
} populate_slice_t;

static void *populate_main(void *arg)
{
    const populate_slice_t *s = arg;

    for (size_t o = 0; o < s->size; o += s->page)
        s->base[o] = 0;
    return NULL;
}

/* The CPUs the calling thread may run on (1 when unknown). */
static unsigned bound_cpus(void)
{
    cpu_set_t set;

    if (sched_getaffinity(0, sizeof(set), &set) != 0 || CPU_COUNT(&set) < 1)
        return 1;
    return (unsigned)CPU_COUNT(&set);
}

unsigned umadv__populate(void *ptr, size_t size, unsigned max_threads)
{
    populate_slice_t slice[POPULATE_THREADS_MAX];
    pthread_t thread[POPULATE_THREADS_MAX];
    size_t page = (size_t)sysconf(_SC_PAGESIZE), each;
    unsigned n = UMADV_MIN(UMADV_MIN(max_threads, bound_cpus()), POPULATE_THREADS_MAX);
    unsigned started = 0;

    n = (unsigned)UMADV_MAX(1, UMADV_MIN((size_t)n, size / POPULATE_SLICE_MIN));
    each = (size / n + page - 1) & ~(page - 1);
    for (unsigned i = 0; i < n; i++) {
        size_t from = UMADV_MIN(size, (size_t)i * each);

        slice[i] = (populate_slice_t){(char *)ptr + from, UMADV_MIN(each, size - from), page};
    }
    /* slice 0 is the caller's; a thread that cannot start leaves its
     * slice to the caller too */
    for (unsigned i = 1; i < n; i++) {
        if (pthread_create(&thread[i], NULL, populate_main, &slice[i]) != 0)
            break;
        started = i;
    }
    populate_main(&slice[0]);
    for (unsigned i = started + 1; i < n; i++)
        populate_main(&slice[i]);
    for (unsigned i = 1; i <= started; i++)
        pthread_join(thread[i], NULL);
    return started + 1;
}

/* Field @name ("MemAvailable:") of @meminfo, in kB, into *kib_p: 1, or 0
 * when the field is absent or unreadable. */
static int meminfo_kib(const char *meminfo, const char *name, uint64_t *kib_p)
{
    const char *at = strstr(meminfo, name);
    unsigned long long kib;

    if (at == NULL || (at != meminfo && at[-1] != '\n') ||
        sscanf(at + strlen(name), " %llu kB", &kib) != 1)
        return 0;
    *kib_p = kib;
    return 1;
}

int umadv__host_spare_parse(const char *meminfo, uint64_t *spare_p)
{
    uint64_t available, total, reserve;

    if (!meminfo_kib(meminfo, "MemAvailable:", &available) ||
        !meminfo_kib(meminfo, "MemTotal:", &total))
        return 0;
    available *= 1024;
    reserve = UMADV_MAX(UMADV_HOST_RESERVE_MIN, total * 1024 / 16);
    *spare_p = available > reserve ? available - reserve : 0;
    return 1;
}

int umadv__host_spare(uint64_t *spare_p)
{
    char text[4096];
    FILE *f = fopen("/proc/meminfo", "r");
    size_t n;

    if (f == NULL)
        return 0;
    n = fread(text, 1, sizeof(text) - 1, f);
    fclose(f);
    text[n] = '\0';
    return umadv__host_spare_parse(text, spare_p);
}
