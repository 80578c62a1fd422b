/*
 * What the trace writer (trace_io.c) and reader (trace_read.c) share, so
 * that both sides of umadv-trace(5) agree on every detail by construction.
 */
#ifndef UMADV_TRACE_TRACE_IO_INT_H
#define UMADV_TRACE_TRACE_IO_INT_H

#include <locale.h>
#include <stddef.h>
#include <stdint.h>

#define UMADV_TRACE_MAGIC "umadv-trace"

/* Doubles are written and parsed with '.' whatever LC_NUMERIC the host
 * application chose (Python programs set locales); uselocale() is per
 * thread, so this is safe inside a multithreaded process. */
typedef struct umadv_numeric_locale {
    locale_t c, saved;
} umadv_numeric_locale_t;

void umadv__numeric_locale_enter(umadv_numeric_locale_t *nl);
void umadv__numeric_locale_leave(umadv_numeric_locale_t *nl);

/* "r", "w" or "rw": the on-disk name of a umadv_access_mode_t. */
const char *umadv__access_mode_name(uint32_t mode);

/* Whether the @n bytes at @p (one line) are an 'end' record. */
int umadv__trace_is_end_line(const char *p, size_t n);

#endif
