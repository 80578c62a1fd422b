/*
 * The measured activity of a profile (trace/activity.h) without a GPU:
 * what faults cost each kernel, the profiler keeping CUPTI's kernel and
 * unified-memory records (names once, causes mapped, bounded), their
 * attribution to steps with times from the window's start, and the
 * trace file's kname and ev records: round trips, order, refusals.
 */
#include <umadv.h>

#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "profiler/attrib.h"
#include "profiler/cupti_ops.h"
#include "profiler/profiler_int.h"
#include "tap.h"
#include "trace/trace_io.h"

#include "cupti_mock.h"

#define NONE UMADV_STEP_NONE

static umadv_trace_event_t kernel(uint64_t start, uint64_t dur)
{
    return (umadv_trace_event_t){start, dur, 0, 0, NONE, UMADV_EVENT_NO_NAME,
                                 UMADV_EVENT_KERNEL, 0};
}

static umadv_trace_event_t fault(uint64_t start, uint64_t dur, uint64_t groups)
{
    return (umadv_trace_event_t){start, dur, 0x1000, groups, NONE, UMADV_EVENT_NO_NAME,
                                 UMADV_EVENT_FAULT, 0};
}

/* ---- fault costs ---- */

static void costs_of(umadv_trace_event_t *events, uint32_t n, uint64_t *faults,
                     uint64_t *stall)
{
    umadv_trace_activity_t act = {0};

    for (uint32_t i = 0; i < n; i++)
        umadv__activity_add_event(&act, &events[i]);
    umadv__activity_finalize(&act, 1, NULL, 0);
    memcpy(events, act.events, n * sizeof(*events)); /* in start order now */
    umadv__activity_fault_costs(&act, faults, stall);
    umadv__activity_cleanup(&act);
}

static void test_fault_costs(void)
{
    umadv_trace_event_t ev[] = {
        kernel(0, 1000), fault(100, 300, 4), fault(300, 400, 2), /* overlap: 100..700 */
        kernel(500, 1000),                                        /* concurrent */
        kernel(2000, 3000), fault(1900, 200, 8),                  /* across its start */
        fault(4900, 1000, 16), kernel(5000, 100),                 /* across k2's end */
        kernel(7000, 100),
    };
    uint64_t faults[9], stall[9];

    costs_of(ev, 9, faults, stall);
    /* start order: k0 f100 f300 k500 f1900 k2000 f4900 k5000 k7000 */
    ok(faults[0] == 6 && stall[0] == 600,
       "two overlapping fault groups in a kernel: both counted, their union's time once "
       "(%llu groups, %llu ns)", (unsigned long long)faults[0], (unsigned long long)stall[0]);
    ok(faults[3] == 2 && stall[3] == 200,
       "a concurrent kernel gets the part of the fault time inside its own run");
    ok(faults[5] == 24 && stall[5] == 100 + 100,
       "fault groups across a kernel's start and end count only their time inside it");
    ok(faults[7] == 16 && stall[7] == 100 && faults[8] == 0 && stall[8] == 0,
       "a kernel inside a long fault group is stalled throughout; one after none is not");
    ok(faults[1] == 0 && stall[1] == 0, "fault events themselves carry no cost");
}

/* ---- the profiler keeps CUPTI's records ---- */

static uint32_t launch_step(void *arg, const char *name, unsigned flags,
                            const umadv_prof_region_t *regions, size_t nregions)
{
    return 0;
}

/* A record at one address, 10 ns long. */
static void queue_record(uint32_t counter_kind, uint64_t start, uint64_t value, uint32_t flags)
{
    queue_um(counter_kind, (void *)0x2000, start, 10, value, flags);
}

static void queue_named(uint32_t corr, uint64_t start, const char *name)
{
    queue_kernel(corr, start, start + 500);
    mock.queue[mock.nqueue - 1].kernel.name = name;
}

static umadv_profiler_t *recording(umadv_prof_mode_t mode)
{
    umadv_profiler_t *prof = NULL;

    mock_reset();
    if (umadv__prof_open(0, launch_step, NULL, &prof) != UMADV_OK || prof == NULL)
        return NULL;
    umadv__prof_record_start(prof, mode, 0);
    return prof;
}

static int has_event(const umadv_prof_activity_t *act, umadv_event_kind_t kind, uint8_t cause)
{
    for (size_t i = 0; i < act->nevents; i++)
        if (act->events[i].kind == kind && act->events[i].cause == cause)
            return 1;
    return 0;
}

static void test_profiler_keeps(void)
{
    char same[] = "gemm_kernel"; /* the same name at another address */
    static char long_name[5001];
    umadv_profiler_t *prof = recording(UMADV_PROF_RECORD_FULL);
    umadv_prof_result_t r;
    const umadv_prof_activity_t *act = &r.activity;

    ok(prof != NULL, "a profiler over the mocked CUPTI");
    if (prof == NULL)
        return;
    queue_named(1, 1000, "gemm_kernel");
    queue_named(2, 2000, same);
    queue_named(3, 3000, "relu_kernel");
    queue_record(CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_GPU_PAGE_FAULT, 1100, 3, 0);
    queue_record(CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_HTOD, 1200, 65536,
             CUPTI_ACTIVITY_UNIFIED_MEMORY_MIGRATION_CAUSE_COHERENCE);
    queue_record(CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_HTOD, 1300, 65536,
             CUPTI_ACTIVITY_UNIFIED_MEMORY_MIGRATION_CAUSE_PREFETCH);
    queue_record(CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_HTOD, 1400, 65536,
             CUPTI_ACTIVITY_UNIFIED_MEMORY_MIGRATION_CAUSE_USER);
    queue_record(CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_DTOH, 1500, 65536,
             CUPTI_ACTIVITY_UNIFIED_MEMORY_MIGRATION_CAUSE_EVICTION);
    queue_record(CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_DTOH, 1600, 65536,
             CUPTI_ACTIVITY_UNIFIED_MEMORY_MIGRATION_CAUSE_ACCESS_COUNTERS);
    queue_record(CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_THRASHING, 1700, 0, 0);
    umadv__prof_record_stop(prof, &r);
    ok(r.nkernels == 3 && act->nnames == 2 && r.kernels[0].name == r.kernels[1].name &&
       r.kernels[2].name != r.kernels[0].name &&
       strcmp(act->names[r.kernels[2].name], "relu_kernel") == 0,
       "kernel names are kept once each, by content, not by address (%zu names)",
       act->nnames);
    ok(act->nevents == 7 && has_event(act, UMADV_EVENT_FAULT, 0) &&
       has_event(act, UMADV_EVENT_HTOD, UMADV_CAUSE_FAULT) &&
       has_event(act, UMADV_EVENT_HTOD, UMADV_CAUSE_SPECULATIVE) &&
       has_event(act, UMADV_EVENT_HTOD, UMADV_CAUSE_USER) &&
       has_event(act, UMADV_EVENT_DTOH, UMADV_CAUSE_EVICTION) &&
       has_event(act, UMADV_EVENT_DTOH, UMADV_CAUSE_ACCESS_COUNTERS) &&
       has_event(act, UMADV_EVENT_THRASH, 0),
       "every unified-memory record is kept, migrations with their direction and cause");
    ok(act->nevents > 0 && act->events[0].value == 3 && act->events[0].dur_ns == 10,
       "a fault record keeps its groups and its time");
    umadv__prof_result_cleanup(&r);

    umadv__prof_record_start(prof, UMADV_PROF_RECORD_FULL, 0);
    memset(long_name, 'k', sizeof(long_name) - 1);
    long_name[sizeof(long_name) - 1] = '\0';
    queue_named(5, 4000, long_name);
    umadv__prof_record_stop(prof, &r);
    ok(r.activity.nnames == 1 && strlen(r.activity.names[0]) == 4096,
       "a name of 5000 bytes is kept as its first 4096 (a trace line stays readable)");
    umadv__prof_result_cleanup(&r);

    umadv__prof_record_start(prof, UMADV_PROF_RECORD_TIMING, 0);
    queue_named(4, 5000, "gemm_kernel");
    queue_record(CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_GPU_PAGE_FAULT, 5100, 1, 0);
    umadv__prof_record_stop(prof, &r);
    ok(r.nkernels == 1 && r.activity.nevents == 0 && r.activity.nnames == 0,
       "a timing recording keeps no activity");
    umadv__prof_result_cleanup(&r);
    umadv__prof_close(prof);
}

static void test_profiler_bound(void)
{
    umadv_profiler_t *prof = recording(UMADV_PROF_RECORD_FULL);
    umadv_prof_result_t r;
    uint64_t sent = 0;

    if (prof == NULL) {
        ok(0, "a profiler over the mocked CUPTI");
        return;
    }
    while (sent < UMADV_PROF_EVENTS_MAX + 100) {
        for (int i = 0; i < 50; i++, sent++)
            queue_record(CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_GPU_PAGE_FAULT, sent, 1, 0);
        mock_flush(0);
    }
    umadv__prof_record_stop(prof, &r);
    ok(r.activity.nevents == UMADV_PROF_EVENTS_MAX &&
       r.activity.dropped == sent - UMADV_PROF_EVENTS_MAX && r.nfaults == sent,
       "past the bound records are counted, not kept (%zu kept, %llu dropped); attribution "
       "still sees every fault", r.activity.nevents, (unsigned long long)r.activity.dropped);
    umadv__prof_result_cleanup(&r);
    umadv__prof_close(prof);
}

/* Outside recordings the fault groups are counted and the first records
 * kept, with their addresses, for the replay's report; each take forgets. */
static void test_replay_fault_records(void)
{
    umadv_prof_fault_t rec[UMADV_PROF_FAULTS_KEPT + 8];
    umadv_profiler_t *prof = NULL;
    uint64_t groups = 0, sent;
    size_t n;

    mock_reset();
    if (!ok(umadv__prof_open(0, launch_step, NULL, &prof) == UMADV_OK && prof != NULL,
            "replay faults: a profiler over the mocked CUPTI")) {
        skip("no profiler", "replay faults: records");
        skip("no profiler", "replay faults: bound");
        skip("no profiler", "replay faults: one flush a boundary");
        return;
    }
    umadv__prof_count_faults(prof, 1);
    queue_um(CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_GPU_PAGE_FAULT, (void *)0x40000, 100, 10,
             2, 0);
    queue_um(CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_GPU_PAGE_FAULT, (void *)0x80000, 200, 10,
             5, 0);
    groups = umadv__prof_take_faults(prof, 0);
    n = umadv__prof_take_fault_records(prof, rec, UMADV_ARRAY_SIZE(rec));
    ok(groups == 7 && n == 2 && rec[0].address == 0x40000 && rec[0].groups == 2 &&
           rec[1].address == 0x80000 && rec[1].groups == 5 &&
           umadv__prof_take_fault_records(prof, rec, UMADV_ARRAY_SIZE(rec)) == 0,
       "replay faults: 7 groups, the 2 records with their addresses, forgotten once taken");
    groups = 0;
    for (sent = 0; sent < UMADV_PROF_FAULTS_KEPT + 8;) {
        for (int i = 0; i < 8; i++, sent++)
            queue_um(CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_GPU_PAGE_FAULT,
                     (void *)(uintptr_t)(0x100000 + sent * 4096), 300 + sent, 1, 1, 0);
        groups += umadv__prof_take_faults(prof, 0);
    }
    n = umadv__prof_take_fault_records(prof, rec, UMADV_ARRAY_SIZE(rec));
    ok(groups == sent && n == UMADV_PROF_FAULTS_KEPT && rec[n - 1].address ==
           0x100000 + (UMADV_PROF_FAULTS_KEPT - 1) * 4096,
       "replay faults: every group counted, the first %d records kept", UMADV_PROF_FAULTS_KEPT);
    /* One CUPTI flush a boundary (10-20 ms each while the counters are on) */
    mock.flushes = 0;
    queue_um(CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_GPU_PAGE_FAULT, (void *)0x40000, 100, 10,
             3, 0);
    mock_flush(0); /* a recording's stop */
    groups = umadv__prof_take_faults(prof, 1);
    umadv__prof_count_faults(prof, 0);
    ok(groups == 3 && mock.flushes == 1 && !mock.um_on &&
           umadv__prof_take_faults(prof, 0) == 0 && mock.flushes == 1,
       "replay faults: taken after a recording's flush, the counters turned off, and taken "
       "while they are off: no flush again (%d)", mock.flushes);
    umadv__prof_close(prof);
}

/* ---- attribution ---- */

static umadv_status_t two_step_trace(umadv_trace_t *t)
{
    umadv_status_t status = umadv__trace_init(t, UMADV_SECTION_SIZE_DEFAULT);
    uint32_t id;

    if (status == UMADV_OK)
        status = umadv__trace_add_alloc(t, 0x7f0000000000, 4 << 20, UMADV_ALLOC_WEIGHT, "w",
                                        &id);
    if (status == UMADV_OK)
        status = umadv__trace_add_step(t, "conv", UMADV_STEP_LAYER, 0, 1000, NULL);
    if (status == UMADV_OK)
        status = umadv__trace_add_access(t, 0, 0, 4 << 20, UMADV_ACCESS_READ, 1);
    if (status == UMADV_OK)
        status = umadv__trace_add_step(t, "relu", UMADV_STEP_KERNEL, 0, 1000, NULL);
    return status;
}

static void test_attrib(void)
{
    umadv_prof_launch_t launches[] = {{12, 1}, {11, 0}};
    umadv_prof_kernel_t kernels[] = {{11, 0, 5000000, 5001000, 0},
                                     {12, 0, 5002000, 5003000, UMADV_EVENT_NO_NAME},
                                     {99, 0, 5004000, 5004500, 0}};
    char name[] = "conv_fwd", *names[] = {name};
    umadv_trace_event_t um[] = {fault(5000500, 100, 2), fault(5000000 + UMADV_ACTIVITY_MAX_NS + 1, 1, 1)};
    umadv_prof_activity_t act = {um, 2, 2, 7, names, 1, 1};
    umadv_trace_t t;
    const umadv_trace_event_t *e;
    int good;

    if (two_step_trace(&t) != UMADV_OK) {
        ok(0, "a trace to attribute to");
        return;
    }
    good = umadv__prof_attrib_activity(&t, launches, 2, kernels, 3, &act) == UMADV_OK &&
           umadv__trace_finalize(&t, NULL, 0) == UMADV_OK;
    e = t.activity.events;
    ok(good && t.activity.nevents == 4 && e[0].kind == UMADV_EVENT_KERNEL && e[0].start_ns == 0 &&
       e[0].step == 0 && e[0].name == 0 && strcmp(t.activity.names[0], "conv_fwd") == 0 &&
       e[1].kind == UMADV_EVENT_FAULT && e[1].start_ns == 500 && e[2].step == 1 &&
       e[2].name == UMADV_EVENT_NO_NAME && e[3].step == NONE,
       "kernels go to their launches' steps (none for a launch outside the recording), "
       "times from the window's first record");
    ok(t.activity.dropped == 7 + 1,
       "a record past the format's hour is counted dropped, with the profiler's own");
    umadv__trace_cleanup(&t);
}

/* ---- the file ---- */

static umadv_status_t trace_with_activity(umadv_trace_t *t, int reversed)
{
    umadv_trace_event_t ev[] = {
        {0, 1000, 0, 0, 0, 0, UMADV_EVENT_KERNEL, 0},
        {100, 50, 0x7f0000000000, 4, NONE, UMADV_EVENT_NO_NAME, UMADV_EVENT_FAULT, 0},
        {120, 80, 0x7f0000000000, 2097152, NONE, UMADV_EVENT_NO_NAME, UMADV_EVENT_HTOD,
         UMADV_CAUSE_SPECULATIVE},
        {130, 0, 0x7f0000200000, 0, NONE, UMADV_EVENT_NO_NAME, UMADV_EVENT_THRASH, 0},
        {2000, 500, 0x7f0000000000, 65536, NONE, UMADV_EVENT_NO_NAME, UMADV_EVENT_DTOH,
         UMADV_CAUSE_EVICTION},
        {2000, 700, 0, 0, 1, UMADV_EVENT_NO_NAME, UMADV_EVENT_KERNEL, 0},
    };
    umadv_status_t status = two_step_trace(t);

    if (status == UMADV_OK)
        status = umadv__activity_add_name(&t->activity, "conv \"fwd\"", NULL);
    for (int i = 0; i < 6 && status == UMADV_OK; i++)
        status = umadv__activity_add_event(&t->activity, &ev[reversed ? 5 - i : i]);
    t->activity.dropped = 3;
    if (status == UMADV_OK)
        status = umadv__trace_finalize(t, NULL, 0);
    return status;
}

static char *written(const umadv_trace_t *t, size_t *len)
{
    char *buf = NULL;

    if (umadv__trace_write_buffer(t, &buf, len) != UMADV_OK)
        return NULL;
    return buf;
}

static void test_round_trip(void)
{
    umadv_trace_t a, b, c;
    char *bytes_a = NULL, *bytes_b = NULL, *bytes_c = NULL, why[256];
    size_t la = 0, lb = 0, lc = 0;

    if (trace_with_activity(&a, 0) != UMADV_OK || trace_with_activity(&c, 1) != UMADV_OK) {
        ok(0, "a trace with activity");
        return;
    }
    bytes_a = written(&a, &la);
    bytes_c = written(&c, &lc);
    ok(bytes_a != NULL && bytes_c != NULL && la == lc && memcmp(bytes_a, bytes_c, la) == 0,
       "events written in start order whatever order they came in: the same bytes");
    ok(bytes_a != NULL && strstr(bytes_a, " events=6 kernel_names=1 events_dropped=3") &&
       strstr(bytes_a, "kname id=0 name=\"conv \\\"fwd\\\"\"\n") &&
       strstr(bytes_a, "ev kind=htod start=120 dur=80 addr=0x7f0000000000 bytes=2097152 "
                       "cause=speculative\n") &&
       strstr(bytes_a, "ev kind=kernel start=2000 dur=700 step=1\n"),
       "the header counts them, kernel names are strings, events say what they are");
    if (bytes_a != NULL &&
        umadv__trace_read_buffer("a.umt", bytes_a, la, &b, why, sizeof(why)) == UMADV_OK) {
        bytes_b = written(&b, &lb);
        ok(bytes_b != NULL && la == lb && memcmp(bytes_a, bytes_b, la) == 0 &&
           b.activity.nevents == 6 && b.activity.dropped == 3,
           "read back and written again: the same bytes");
        umadv__trace_cleanup(&b);
    } else {
        ok(0, "the written trace reads back: %s", why);
    }
    free(bytes_a);
    free(bytes_b);
    free(bytes_c);
    umadv__activity_cleanup(&a.activity);
    bytes_a = written(&a, &la);
    ok(bytes_a != NULL && strstr(bytes_a, "events=") == NULL && strstr(bytes_a, "\nev ") == NULL,
       "a trace without activity is written as before (older readers read it)");
    free(bytes_a);
    umadv__trace_cleanup(&a);
    umadv__trace_cleanup(&c);
}

/* @good with its line @from replaced by @to (or @to appended before the
 * end line when @from is NULL), re-sealed, must be refused with @want in
 * the reason. */
static void refused(const char *good, size_t len, const char *from, const char *to,
                    const char *want, const char *what)
{
    char edited[8192], why[512];
    const char *at = from != NULL ? strstr(good, from) : strstr(good, "end crc32=");
    size_t head = at != NULL ? (size_t)(at - good) : 0, skip = from != NULL ? strlen(from) : 0;
    char *sealed = NULL;
    size_t sealed_len = 0;
    umadv_trace_t t;
    umadv_status_t status;
    int refused_ok;

    if (at == NULL || len + strlen(to) >= sizeof(edited)) {
        ok(0, "%s: the edit applies", what);
        return;
    }
    memcpy(edited, good, head);
    strcpy(edited + head, to);
    memcpy(edited + head + strlen(to), at + skip, len - head - skip);
    umadv__trace_reseal_buffer(edited, head + strlen(to) + len - head - skip, &sealed,
                               &sealed_len);
    status = umadv__trace_read_buffer("e.umt", sealed, sealed_len, &t, why, sizeof(why));
    refused_ok = status == UMADV_ERR_CORRUPT && strstr(why, want) != NULL;
    ok(refused_ok, "refused: %s (%s)", what, why);
    if (status == UMADV_OK)
        umadv__trace_cleanup(&t);
    free(sealed);
}

static void test_refusals(void)
{
    umadv_trace_t t;
    char *good;
    size_t len;

    if (trace_with_activity(&t, 0) != UMADV_OK || (good = written(&t, &len)) == NULL) {
        ok(0, "a trace with activity");
        return;
    }
    refused(good, len, "kind=thrash", "kind=thrush", "is not an event kind", "an unknown kind");
    refused(good, len, "dur=0 addr=0x7f0000200000", "dur=0 addr=0x7f0000200000 bytes=1",
            "key 'bytes' is not one of a thrash event", "a key of another kind of event");
    refused(good, len, "start=2000 dur=700 step=1", "start=2000 dur=700 step=2",
            "step 2 is not a step of the trace", "a step the trace does not have");
    refused(good, len, "start=0 dur=1000 step=0 name=0", "start=0 dur=1000 step=0 name=1",
            "name: \"1\" is out of range", "a kernel name the trace does not have");
    refused(good, len, "cause=eviction", "cause=boredom", "is not a migration cause",
            "an unknown cause");
    refused(good, len, "start=120 dur=80", "start=3600000000001 dur=80", "out of range",
            "a start past the hour");
    refused(good, len, "addr=0x7f0000000000 groups=4", "groups=4", "missing key 'addr'",
            "a fault without its address");
    refused(good, len, NULL, "kname id=1 name=\"late\"\n", "kernel names come first",
            "a kernel name after the events");
    refused(good, len, NULL, "step id=2 iter=0 kind=kernel dur_ns=1\n",
            "after the activity records", "a step after the activity records");
    refused(good, len, "events=6", "events=7", "declares 7 events, the file has 6",
            "fewer events than the header says");
    refused(good, len, "events=6", "events=5", "more events than the header declares",
            "more events than the header says");
    free(good);
    umadv__trace_cleanup(&t);
}

int main(void)
{
    plan(5 + 6 + 1 + 3 + 2 + 4 + 12);
    umadv__cupti_ops_install(&mock_ops);
    test_fault_costs();
    test_profiler_keeps();
    test_profiler_bound();
    test_replay_fault_records();
    test_attrib();
    test_round_trip();
    test_refusals();
    umadv__cupti_ops_install(NULL);
    return exit_status();
}
