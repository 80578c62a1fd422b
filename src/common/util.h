/*
 * Small helpers shared by every part: byte sizes, growing arrays, CRC-32,
 * UTF-8 validation, monotonic time.
 */
#ifndef UMADV_COMMON_UTIL_H
#define UMADV_COMMON_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include <umadv.h>

#define UMADV_KIB (UINT64_C(1) << 10)
#define UMADV_MIB (UINT64_C(1) << 20)
#define UMADV_GIB (UINT64_C(1) << 30)

#define UMADV_ARRAY_SIZE(_a) (sizeof(_a) / sizeof((_a)[0]))
#define UMADV_MIN(_a, _b) ((_a) < (_b) ? (_a) : (_b))
#define UMADV_MAX(_a, _b) ((_a) > (_b) ? (_a) : (_b))
#define UMADV_DIV_ROUND_UP(_n, _d) (((_n) + (_d) - 1) / (_d))

/* Format @bytes for people: "512 B", "1.50 GiB". Returns @buf. */
char *umadv__size_format(uint64_t bytes, char *buf, size_t len);

/* Make room for @need elements of @elem_size in *@array of capacity
 * *@cap, growing geometrically. On failure nothing changed. */
umadv_status_t umadv__array_reserve(void **array, size_t *cap, size_t need,
                                    size_t elem_size);

/* strdup that maps NULL to NULL; sets *@copy_p only on success. */
umadv_status_t umadv__strdup(const char *s, char **copy_p);

/* Whether @a and @b are the same text, or both NULL (optional names). */
int umadv__str_same(const char *a, const char *b);

/* The index of @name in @names[0 .. @count) (a table of enum names), or
 * -1. */
int umadv__name_index(const char *const *names, unsigned count, const char *name);

/* CRC-32 (IEEE 802.3, the zlib polynomial), continuable: pass the previous
 * result as @crc, 0 to start. */
uint32_t umadv__crc32(uint32_t crc, const void *data, size_t len);

/* Length of the well-formed UTF-8 sequence at @p (1 to 4), or 0 when the
 * @avail bytes there (at least one) do not start one. Overlong forms,
 * surrogates and code points past U+10FFFF are refused (RFC 3629); no
 * byte past the @avail is read. */
size_t umadv__utf8_valid_len(const unsigned char *p, size_t avail);

/* Optimal string alignment distance: edits, with transpositions as one. */
unsigned umadv__edit_distance(const char *a, const char *b);

/* Closest of @candidates (NULL-terminated, stride @stride bytes between
 * name pointers) to @word, or NULL when none is close enough to suggest. */
const char *umadv__suggest(const char *word, const void *candidates, size_t stride);

/* Monotonic clock in nanoseconds. */
uint64_t umadv__now_ns(void);

/* The calling thread's CPU time in nanoseconds (a system call where the
 * vDSO has no thread clock: for diagnostics, not every call's path). */
uint64_t umadv__thread_cpu_ns(void);

/* Mark the calling thread as umadv's own (cuda_ops.h, thread_begin: a
 * lane, a pinner), or ask whether it is: the call census leaves such
 * threads' calls out (profiler/census.c). */
void umadv__thread_mark_own(void);
int umadv__thread_is_own(void);

/* What the kernel counts of the calling thread (getrusage, RUSAGE_THREAD;
 * zeros where it cannot): its page faults, and the times it gave the CPU
 * up (waiting) or was preempted. */
typedef struct umadv_thread_events {
    uint64_t minor_faults, major_faults;
    uint64_t voluntary_switches, involuntary_switches;
} umadv_thread_events_t;

void umadv__thread_events(umadv_thread_events_t *ev);

/* *@sum += @now - @then, each count (a count that went back adds 0). */
void umadv__thread_events_add(umadv_thread_events_t *sum, const umadv_thread_events_t *now,
                              const umadv_thread_events_t *then);

#endif
