/*
 * The trace reader on damaged input: every truncation of a valid trace and
 * thousands of seeded random mutations (bit flips, odd bytes, cuts, line
 * duplications, deletions and swaps, runs of digits). For each, the reader
 * must answer UMADV_OK or UMADV_ERR_CORRUPT with a "name:line: " message,
 * leave the caller's trace alone on failure, and anything it accepts must
 * write and read back to the same trace. Half the runs re-seal the
 * checksum after mutating, so that the parser, not the CRC, meets the
 * damage. UMADV_FUZZ_SEED and UMADV_FUZZ_CASES change the run.
 */
#include "trace/trace_io.h"

#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "tap.h"
#include "trace_io_sample.h"

typedef struct buffer {
    char  *b;
    size_t len, cap;
} buffer_t;

typedef struct stats {
    unsigned cases, accepted, rejected, parser_rejected, bad;
    char     first_bad[512];
} stats_t;

static uint64_t rng_state;

/* splitmix64: tiny, seedable, good enough to pick mutations. */
static uint64_t rng(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static size_t rng_below(size_t n)
{
    return n ? (size_t)(rng() % n) : 0;
}

static void buf_reserve(buffer_t *b, size_t extra)
{
    if (umadv__array_reserve((void **)&b->b, &b->cap, b->len + extra + 1, 1) != UMADV_OK)
        abort();
}

static void buf_insert(buffer_t *b, size_t at, const char *s, size_t n)
{
    buf_reserve(b, n);
    memmove(b->b + at + n, b->b + at, b->len - at);
    memcpy(b->b + at, s, n);
    b->len += n;
}

static void buf_erase(buffer_t *b, size_t at, size_t n)
{
    memmove(b->b + at, b->b + at + n, b->len - at - n);
    b->len -= n;
}

/* Bounds [*start, *end) of the line (newline included) around @pos. */
static void line_at(const buffer_t *b, size_t pos, size_t *start, size_t *end)
{
    const char *nl;

    *start = pos;
    while (*start > 0 && b->b[*start - 1] != '\n')
        (*start)--;
    nl = memchr(b->b + pos, '\n', b->len - pos);
    *end = nl ? (size_t)(nl - b->b) + 1 : b->len;
}

static void mutate_line(buffer_t *b, int op)
{
    size_t s, e, s2, e2;
    char *copy;

    line_at(b, rng_below(b->len), &s, &e);
    copy = malloc(e - s + 1);
    memcpy(copy, b->b + s, e - s);
    if (op == 0) {                      /* duplicate */
        buf_insert(b, e, copy, e - s);
    } else if (op == 1) {               /* delete */
        buf_erase(b, s, e - s);
    } else {                            /* move before another line */
        buf_erase(b, s, e - s);
        if (b->len > 0) {
            line_at(b, rng_below(b->len), &s2, &e2);
            buf_insert(b, s2, copy, e - s);
        } else {
            buf_insert(b, 0, copy, e - s);
        }
    }
    free(copy);
}

/* A run of digits: the parser's number handling, overflow included. */
static void mutate_digits(buffer_t *b)
{
    char digits[32];
    size_t n = 1 + rng_below(24), at = rng_below(b->len + 1);

    for (size_t i = 0; i < n; i++)
        digits[i] = (char)('0' + rng_below(10));
    if (rng() & 1) { /* replace a number already there */
        while (at < b->len && (b->b[at] < '0' || b->b[at] > '9'))
            at++;
        while (at < b->len && b->b[at] >= '0' && b->b[at] <= '9')
            buf_erase(b, at, 1);
    }
    buf_insert(b, UMADV_MIN(at, b->len), digits, n);
}

static void mutate_once(buffer_t *b)
{
    static const char odd[] = {'\0', '\n', '\r', '"', '\\', '=', ' ', '\t', '#', '-', 'x',
                               (char)0x80, (char)0xc3, (char)0xff, '0', '9'};
    size_t at = rng_below(b->len), cut = 1 + rng_below(16);

    if (b->len == 0)
        return;
    switch (rng_below(8)) {
    case 0: b->b[at] ^= (char)(1u << rng_below(8)); break;
    case 1: b->b[at] = odd[rng_below(sizeof(odd))]; break;
    case 2: b->b[at] = (char)rng(); break;
    case 3: buf_erase(b, at, UMADV_MIN(b->len - at, cut)); break;
    case 4: mutate_digits(b); break;
    default: mutate_line(b, (int)rng_below(3)); break;
    }
}

static int message_well_formed(const char *why)
{
    size_t n = strlen("fuzz:");

    if (strncmp(why, "fuzz:", n) != 0 || why[n] < '1' || why[n] > '9')
        return 0;
    while (why[n] >= '0' && why[n] <= '9')
        n++;
    return why[n] == ':' && why[n + 1] == ' ' && why[n + 2] != '\0';
}

/* Anything accepted must be a stable fixed point of write and read. */
static int accepted_round_trips(const umadv_trace_t *t, char *why, size_t why_len)
{
    char *w1 = NULL, *w2 = NULL;
    size_t n1 = 0, n2 = 0;
    umadv_trace_t t2;
    int good = 0;

    if (umadv__trace_write_buffer(t, &w1, &n1) != UMADV_OK) {
        snprintf(why, why_len, "accepted trace cannot be written");
        return 0;
    }
    if (umadv__trace_read_buffer("rewritten", w1, n1, &t2, why, why_len) == UMADV_OK) {
        good = trace_diff(t, &t2) == NULL &&
               umadv__trace_write_buffer(&t2, &w2, &n2) == UMADV_OK && n1 == n2 &&
               memcmp(w1, w2, n1) == 0;
        if (!good)
            snprintf(why, why_len, "accepted trace does not round-trip");
        umadv__trace_cleanup(&t2);
    }
    free(w1);
    free(w2);
    return good;
}

static void record_bad(stats_t *st, const char *what, const char *why)
{
    if (st->bad++ == 0)
        snprintf(st->first_bad, sizeof(st->first_bad), "case %u: %s: %s", st->cases, what,
                 why);
}

static void check_case(const char *buf, size_t len, stats_t *st)
{
    umadv_trace_t t, before;
    char why[512] = "";
    umadv_status_t status;

    memset(&t, 0x5a, sizeof(t));
    before = t;
    st->cases++;
    status = umadv__trace_read_buffer("fuzz", buf, len, &t, why, sizeof(why));
    if (status == UMADV_OK) {
        st->accepted++;
        if (!accepted_round_trips(&t, why, sizeof(why)))
            record_bad(st, "accepted", why);
        umadv__trace_cleanup(&t);
    } else if (status == UMADV_ERR_CORRUPT) {
        st->rejected++;
        st->parser_rejected += strstr(why, "checksum mismatch") == NULL &&
                               strstr(why, "truncated") == NULL;
        if (!message_well_formed(why))
            record_bad(st, "message not 'fuzz:LINE: reason'", why);
        if (memcmp(&t, &before, sizeof(t)) != 0)
            record_bad(st, "caller's trace changed", why);
    } else {
        record_bad(st, umadv_status_string(status), why);
    }
}

static void check_sealed(const char *buf, size_t len, int reseal, stats_t *st)
{
    char *sealed;
    size_t sealed_len;

    if (!reseal) {
        check_case(buf, len, st);
        return;
    }
    if (umadv__trace_reseal_buffer(buf, len, &sealed, &sealed_len) != UMADV_OK)
        abort();
    check_case(sealed, sealed_len, st);
    free(sealed);
}

static void report(const stats_t *st, const char *name)
{
    if (!ok(st->bad == 0, "%s: %u cases, %u accepted, %u rejected (%u past the checksum)",
            name, st->cases, st->accepted, st->rejected, st->parser_rejected))
        diag("%u bad; first: %s", st->bad, st->first_bad);
}

static void fuzz_truncations(const char *buf, size_t len)
{
    stats_t plain = {0}, sealed = {0};
    unsigned early_accepted = 0;

    for (size_t n = 0; n <= len; n++) {
        unsigned before = plain.accepted;
        check_sealed(buf, n, 0, &plain);
        check_sealed(buf, n, 1, &sealed);
        early_accepted += n + 1 < len && plain.accepted != before;
    }
    report(&plain, "every truncation");
    ok(early_accepted == 0 && plain.accepted == 2,
       "only the whole file, or it less its last newline, is accepted");
    report(&sealed, "every truncation, re-sealed");
}

static void fuzz_mutations(const char *buf, size_t len, unsigned ncases, int reseal,
                           stats_t *st)
{
    buffer_t b = {0};

    for (unsigned c = 0; c < ncases; c++) {
        b.len = 0;
        buf_insert(&b, 0, buf, len);
        for (size_t m = 1 + rng_below(3); m > 0; m--)
            mutate_once(&b);
        check_sealed(b.b, b.len, reseal, st);
    }
    free(b.b);
}

int main(void)
{
    const char *seed_env = getenv("UMADV_FUZZ_SEED"), *cases_env = getenv("UMADV_FUZZ_CASES");
    unsigned ncases = cases_env ? (unsigned)strtoul(cases_env, NULL, 0) : 20000;
    stats_t plain = {0}, sealed = {0};
    umadv_trace_t sample;
    char *buf;
    size_t len;

    rng_state = seed_env ? strtoull(seed_env, NULL, 0) : 20261101;
    plan(6);
    diag("seed %llu, %u cases per mode (UMADV_FUZZ_SEED, UMADV_FUZZ_CASES)",
         (unsigned long long)rng_state, ncases);
    if (sample_build(&sample) != 0 || umadv__trace_write_buffer(&sample, &buf, &len) != 0) {
        diag("cannot build the sample trace");
        return 1;
    }
    fuzz_truncations(buf, len);
    fuzz_mutations(buf, len, ncases, 0, &plain);
    report(&plain, "random mutations");
    fuzz_mutations(buf, len, ncases, 1, &sealed);
    report(&sealed, "random mutations, re-sealed");
    /* Without this the test could pass by the CRC alone. */
    ok(sealed.parser_rejected > sealed.cases / 2 && sealed.accepted > 0,
       "re-sealed mutations reach the parser (%u of %u rejected there, %u accepted)",
       sealed.parser_rejected, sealed.cases, sealed.accepted);
    free(buf);
    umadv__trace_cleanup(&sample);
    return exit_status();
}
