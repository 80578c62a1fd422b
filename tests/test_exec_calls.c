/*
 * A lane's range calls in pieces (exec/stage.c, umadv__exec_in_calls):
 * with no piece size, one call of the ranges as given; with one, the
 * calls' ranges laid end to end are the ranges given, in order, each call
 * at most the piece's bytes and EXEC_CALL_RANGES ranges, every call but
 * the last full; empty ranges make no piece; the first failure stops the
 * calls and is returned. Random cases, then the edges by hand. And the
 * rule that picks the piece (umadv__exec_call_piece): pieces only while
 * the lane is ahead of the application.
 */
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "exec/exec_int.h"
#include "plan_util.h"
#include "tap.h"

#define CASES      2000
#define MAX_RANGES 300
#define MAX_PIECES 40000

/* What the calls were given. */
typedef struct record {
    uintptr_t      ptr[MAX_PIECES];
    size_t         size[MAX_PIECES];
    size_t         npieces;
    size_t         ncalls, fail_at; /* fail_at: the call that fails, 1-based; 0 none */
    umadv_stream_t stream;
    int            bad;             /* a call over its limits, or not full before the last */
    uint64_t       piece;
    uint64_t       last_bytes;      /* of the latest call */
    size_t         last_ranges;
} record_t;

static umadv_status_t record_call(void *arg, void **ptrs, size_t *sizes, size_t n,
                                  umadv_stream_t stream)
{
    record_t *r = arg;
    uint64_t bytes = 0;

    /* the call before this one was not the last: it must have been full */
    if (r->ncalls > 0 && r->piece != 0 && r->last_bytes != r->piece &&
        r->last_ranges != EXEC_CALL_RANGES)
        r->bad = 1;
    if (++r->ncalls == r->fail_at)
        return UMADV_ERR_CUDA;
    for (size_t i = 0; i < n && r->npieces < MAX_PIECES; i++) {
        r->ptr[r->npieces] = (uintptr_t)ptrs[i];
        r->size[r->npieces++] = sizes[i];
        bytes += sizes[i];
        r->bad |= sizes[i] == 0 && r->piece != 0;
    }
    r->bad |= stream != r->stream || n == 0 ||
              (r->piece != 0 && (bytes > r->piece || n > EXEC_CALL_RANGES));
    r->last_bytes = bytes;
    r->last_ranges = n;
    return UMADV_OK;
}

/* Whether the recorded pieces, merged where one ends where the next
 * starts within one given range, are the @n non-empty given ranges. */
static int pieces_are(const record_t *r, void **ptrs, const size_t *sizes, size_t n)
{
    size_t k = 0;

    for (size_t i = 0; i < n; i++) {
        uintptr_t at = (uintptr_t)ptrs[i], end = at + sizes[i];

        while (at < end) {
            if (k >= r->npieces || r->ptr[k] != at || r->size[k] > end - at)
                return 0;
            at += r->size[k++];
        }
    }
    return k == r->npieces;
}

static void test_random(void)
{
    static void *ptrs[MAX_RANGES];
    static size_t sizes[MAX_RANGES];
    static record_t r;
    uint64_t rng = 2026;
    int whole_ok = 1, pieces_ok = 1, limits_ok = 1, split_seen = 0;

    for (int c = 0; c < CASES; c++) {
        size_t n = 1 + tp_below(&rng, MAX_RANGES);
        uint64_t piece = tp_below(&rng, 4) == 0 ? 0 : 4096 + tp_below(&rng, 1 << 16);
        uintptr_t at = 0x7f0000000000ull;

        for (size_t i = 0; i < n; i++) {
            at += tp_below(&rng, 2) * 4096; /* gaps now and then */
            ptrs[i] = (void *)at;
            sizes[i] = tp_below(&rng, 20) == 0 ? 0 : 1 + tp_below(&rng, 3 << 16);
            at += sizes[i];
        }
        memset(&r, 0, sizeof(r));
        r.piece = piece;
        r.stream = (umadv_stream_t)(uintptr_t)(c + 1);
        if (umadv__exec_in_calls(piece, ptrs, sizes, n, record_call, &r, r.stream) != UMADV_OK)
            limits_ok = 0;
        if (piece == 0) {
            whole_ok &= r.ncalls == 1 && r.npieces == n;
            for (size_t i = 0; i < n && whole_ok; i++)
                whole_ok &= r.ptr[i] == (uintptr_t)ptrs[i] && r.size[i] == sizes[i];
        } else {
            pieces_ok &= pieces_are(&r, ptrs, sizes, n);
            split_seen |= r.ncalls > 1;
        }
        limits_ok &= !r.bad;
    }
    ok(whole_ok, "no piece size: one call of the ranges as given");
    ok(pieces_ok && split_seen, "in pieces: the calls' ranges laid end to end are the ranges "
       "given, in order, the empty ones left out");
    ok(limits_ok, "each call at most the piece's bytes and %d ranges, on the stream given, "
       "every call but the last full", EXEC_CALL_RANGES);
}

static void test_edges(void)
{
    static record_t r;
    void *ptrs[3] = {(void *)0x10000, (void *)0x90000, (void *)0xa0000};
    size_t sizes[3] = {0x80000, 0x10000, 0x8000};
    umadv_status_t status;

    memset(&r, 0, sizeof(r));
    r.piece = 0x20000;
    status = umadv__exec_in_calls(0x20000, ptrs, sizes, 3, record_call, &r, NULL);
    /* 512 KiB, 64 KiB, 32 KiB in 128 KiB pieces: 4 full of the first, then
     * 64 + 32 KiB together */
    ok(status == UMADV_OK && r.ncalls == 5 && r.npieces == 6 && r.ptr[3] == 0x70000 &&
       r.ptr[4] == 0x90000 && r.size[5] == 0x8000 && !r.bad,
       "512, 64 and 32 KiB in 128 KiB pieces: four calls of the first, one of the other two");

    memset(&r, 0, sizeof(r));
    r.piece = 0x20000;
    r.fail_at = 2;
    status = umadv__exec_in_calls(0x20000, ptrs, sizes, 3, record_call, &r, NULL);
    ok(status == UMADV_ERR_CUDA && r.ncalls == 2,
       "the second call fails: no third is made, and its status is returned");

    memset(&r, 0, sizeof(r));
    r.piece = UINT64_C(1) << 40;
    status = umadv__exec_in_calls(r.piece, ptrs, sizes, 3, record_call, &r, NULL);
    ok(status == UMADV_OK && r.ncalls == 1 && r.npieces == 3,
       "a piece larger than every range: one call");

    {
        static void *many[100];
        static size_t ones[100];

        for (size_t i = 0; i < 100; i++) {
            many[i] = (void *)(uintptr_t)(0x10000 + i * 4096);
            ones[i] = 1;
        }
        memset(&r, 0, sizeof(r));
        r.piece = UINT64_C(1) << 20;
        status = umadv__exec_in_calls(r.piece, many, ones, 100, record_call, &r, NULL);
        ok(status == UMADV_OK && r.ncalls == 2 && r.last_ranges == 100 - EXEC_CALL_RANGES &&
           !r.bad, "100 ranges of a byte: a call of %d, then one of the rest", EXEC_CALL_RANGES);
    }
}

/* Pieces while the application runs and the call serves a step past
 * the next one (or none); one call where the lane's time is the
 * application's. */
static void test_rule(void)
{
    umadv_exec_t e;
    exec_lane_t lane;

    memset(&e, 0, sizeof(e));
    memset(&lane, 0, sizeof(lane));
    e.p.call_piece_bytes = 8 * UMADV_MIB;
    e.key = 100;
    lane.busy_need = 100 + EXEC_PIECE_AHEAD_STEPS + 1;
    ok(umadv__exec_call_piece(&e, &lane) == 8 * UMADV_MIB, "a call for a later step: pieces");
    lane.busy_need = EXEC_KEY_NONE;
    ok(umadv__exec_call_piece(&e, &lane) == 8 * UMADV_MIB, "a call no step waits for: pieces");
    lane.busy_need = 100 + EXEC_PIECE_AHEAD_STEPS;
    ok(umadv__exec_call_piece(&e, &lane) == 0, "a call the next step needs: whole");
    lane.busy_need = 99;
    ok(umadv__exec_call_piece(&e, &lane) == 0, "a call a step already open needs: whole");
    lane.busy_need = 200;
    e.waiting = 1;
    ok(umadv__exec_call_piece(&e, &lane) == 0, "the application waits on the executor: whole");
    e.waiting = 0;
    e.p.call_piece_bytes = 0;
    ok(umadv__exec_call_piece(&e, &lane) == 0, "UMADV_LANE_PIECE=0: whole, always");
}

int main(void)
{
    plan(7 + 6);
    test_random();
    test_edges();
    test_rule();
    return exit_status();
}
