/*
 * THE CALL CENSUS (UMADV_CALL_CENSUS). Every CUDA runtime and driver call
 * the application's threads make, counted and timed by function between
 * two iteration boundaries: where a host-bound iteration's time goes
 * besides the launches that umadv follows. A launch-bound model under a
 * plan spends twice native's CPU time between its launches (umadv(7),
 * Seeing where time goes), and another thread's calls slow some runtime
 * calls several times over (bench/launch_cost --work api): the census
 * says which calls the application makes there, how many, and how long
 * each took.
 *
 * A call is timed from its entry callback to its exit callback on its
 * thread. A runtime call's driver calls are part of it (counted once);
 * a driver call made outside any runtime call (cuBLAS's and cuDNN's
 * launches) counts on its own. umadv's own threads (cuda_ops.h,
 * thread_begin) are left out: their calls are umadv's lanes. umadv's
 * calls on the application's thread count: those its callbacks make
 * inside a call (a followed launch's waits and populations) as part of
 * that call, the others (the allocator's) under their own names.
 */
#include "profiler/profiler_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"

/* The functions a report names, by time (under the debug log, all). */
#define CENSUS_SHOWN 8
#define CENSUS_ROW_TEXT 96 /* a function's name, calls and times */

enum { CENSUS_RUNTIME, CENSUS_DRIVER, CENSUS_DOMAINS };

static const uint32_t census_size[CENSUS_DOMAINS] = {
    CUPTI_RUNTIME_TRACE_CBID_SIZE, CUPTI_DRIVER_TRACE_CBID_SIZE,
};

typedef struct census_count {
    uint64_t calls, ns; /* atomic */
} census_count_t;

typedef struct census_row {
    uint64_t calls, ns;
    uint32_t domain, cbid;
} census_row_t;

struct umadv_prof_census {
    census_count_t runtime[CUPTI_RUNTIME_TRACE_CBID_SIZE];
    census_count_t driver[CUPTI_DRIVER_TRACE_CBID_SIZE];
    census_row_t   rows[CUPTI_RUNTIME_TRACE_CBID_SIZE + CUPTI_DRIVER_TRACE_CBID_SIZE];
};

/* The calls open on this thread, per domain, and the outermost's entry. */
static __thread struct {
    uint32_t depth[CENSUS_DOMAINS];
    uint64_t entered_ns[CENSUS_DOMAINS];
} census_tls;

umadv_prof_census_t *umadv__prof_census_new(void)
{
    return calloc(1, sizeof(umadv_prof_census_t));
}

void umadv__prof_census_free(umadv_prof_census_t *census)
{
    free(census);
}

static census_count_t *census_slot(umadv_prof_census_t *census, int domain, uint32_t cbid)
{
    if (cbid >= census_size[domain])
        return NULL; /* a newer CUPTI's call: not counted */
    return domain == CENSUS_RUNTIME ? &census->runtime[cbid] : &census->driver[cbid];
}

void umadv__prof_census_call(umadv_prof_census_t *census, CUpti_CallbackDomain cupti_domain,
                             CUpti_CallbackId cbid, int exit)
{
    int domain = cupti_domain == CUPTI_CB_DOMAIN_RUNTIME_API  ? CENSUS_RUNTIME
                 : cupti_domain == CUPTI_CB_DOMAIN_DRIVER_API ? CENSUS_DRIVER
                                                              : -1;
    census_count_t *slot;

    if (domain < 0 || umadv__thread_is_own())
        return;
    if (domain == CENSUS_DRIVER && census_tls.depth[CENSUS_RUNTIME] > 0)
        return; /* inside a runtime call: counted there */
    if (!exit) {
        if (census_tls.depth[domain]++ == 0)
            census_tls.entered_ns[domain] = umadv__now_ns();
        return;
    }
    if (census_tls.depth[domain] == 0 || --census_tls.depth[domain] > 0)
        return; /* entered before the census began, or an inner call */
    slot = census_slot(census, domain, cbid);
    if (slot == NULL)
        return;
    __atomic_add_fetch(&slot->calls, 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(&slot->ns, umadv__now_ns() - census_tls.entered_ns[domain],
                       __ATOMIC_RELAXED);
}

/* The counts since the last take, into census->rows (reset to 0 as they
 * are read: a call that ends meanwhile may land in either report).
 * Returns how many functions were called; @total_p: calls and time per
 * domain. */
static size_t census_take(umadv_prof_census_t *census, census_row_t total_p[CENSUS_DOMAINS])
{
    size_t n = 0;

    memset(total_p, 0, CENSUS_DOMAINS * sizeof(*total_p));
    for (int d = 0; d < CENSUS_DOMAINS; d++) {
        for (uint32_t cbid = 0; cbid < census_size[d]; cbid++) {
            census_count_t *slot = census_slot(census, d, cbid);
            census_row_t row = {__atomic_exchange_n(&slot->calls, 0, __ATOMIC_RELAXED),
                                __atomic_exchange_n(&slot->ns, 0, __ATOMIC_RELAXED),
                                (uint32_t)d, cbid};

            if (row.calls == 0)
                continue;
            census->rows[n++] = row;
            total_p[d].calls += row.calls;
            total_p[d].ns += row.ns;
        }
    }
    return n;
}

static int row_by_time(const void *a, const void *b)
{
    const census_row_t *x = a, *y = b;

    return x->ns < y->ns ? 1 : x->ns > y->ns ? -1 : 0;
}

/* @row's function as CUPTI names it, less its version suffix
 * (cudaLaunchKernel_v7000: cudaLaunchKernel), into @buf. */
static const char *row_name(const umadv_cupti_ops_t *ops, const census_row_t *row, char *buf,
                            size_t size)
{
    CUpti_CallbackDomain domain =
        row->domain == CENSUS_RUNTIME ? CUPTI_CB_DOMAIN_RUNTIME_API : CUPTI_CB_DOMAIN_DRIVER_API;
    const char *name = NULL, *suffix = NULL;

    if (ops->callback_name == NULL || ops->callback_name(domain, row->cbid, &name) !=
                                          CUPTI_SUCCESS || name == NULL) {
        snprintf(buf, size, "%s call %u", row->domain == CENSUS_RUNTIME ? "runtime" : "driver",
                 row->cbid);
        return buf;
    }
    snprintf(buf, size, "%s", name);
    for (const char *at = strstr(buf, "_v"); at != NULL; at = strstr(at + 1, "_v"))
        suffix = at; /* the last one */
    if (suffix != NULL && suffix[2] != '\0' && strspn(suffix + 2, "0123456789") ==
                                                   strlen(suffix + 2))
        buf[suffix - buf] = '\0';
    return buf;
}

/* The first @shown @rows, "name calls, ms (us each)" with "; " between,
 * into @text of @size bytes. */
static void rows_text(const umadv_cupti_ops_t *ops, const census_row_t *rows, size_t shown,
                      char *text, size_t size)
{
    size_t len = 0;
    char name[64];

    text[0] = '\0';
    for (size_t i = 0; i < shown && len < size; i++)
        len += (size_t)snprintf(text + len, size - len, "%s%s %llu, %.3f ms (%.2f us each)",
                                i > 0 ? "; " : "", row_name(ops, &rows[i], name, sizeof(name)),
                                (unsigned long long)rows[i].calls, (double)rows[i].ns / 1e6,
                                (double)rows[i].ns / 1e3 / (double)rows[i].calls);
}

void umadv__prof_census_log(umadv_prof_census_t *census, const umadv_cupti_ops_t *ops,
                            uint64_t iteration)
{
    census_row_t total[CENSUS_DOMAINS];
    size_t n = census_take(census, total), shown;
    char few[CENSUS_SHOWN * CENSUS_ROW_TEXT], when[48], *top = few;

    if (n == 0)
        return;
    qsort(census->rows, n, sizeof(*census->rows), row_by_time);
    shown = UMADV_MIN(n, CENSUS_SHOWN);
    if (umadv__log_level >= UMADV_LOG_DEBUG && n > shown &&
        (top = malloc(n * CENSUS_ROW_TEXT)) != NULL)
        shown = n; /* bench/census_diff.py compares every function */
    else
        top = few;
    rows_text(ops, census->rows, shown, top, shown * CENSUS_ROW_TEXT);
    if (iteration == UMADV_PROF_CENSUS_SETUP)
        snprintf(when, sizeof(when), "before the first iteration");
    else
        snprintf(when, sizeof(when), "iteration %llu", (unsigned long long)iteration);
    umadv_info("call census, %s: the application's threads made %llu CUDA calls, "
               "%.3f ms in all (runtime %llu, %.3f ms; driver calls outside them %llu, %.3f ms) "
               "to %zu functions; by time: %s", when,
               (unsigned long long)(total[CENSUS_RUNTIME].calls + total[CENSUS_DRIVER].calls),
               (double)(total[CENSUS_RUNTIME].ns + total[CENSUS_DRIVER].ns) / 1e6,
               (unsigned long long)total[CENSUS_RUNTIME].calls,
               (double)total[CENSUS_RUNTIME].ns / 1e6,
               (unsigned long long)total[CENSUS_DRIVER].calls,
               (double)total[CENSUS_DRIVER].ns / 1e6, n, top);
    if (top != few)
        free(top);
}
