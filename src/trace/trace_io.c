/*
 * The on-disk trace format, umadv-trace(5): the writer, re-sealing, and
 * file output (through common/outfile.h). The reader is in trace_read.c.
 * Text, one record per line, so traces diff, grep and survive hand
 * editing; a CRC-32 over everything before the 'end' line catches
 * truncation and bit rot.
 */
#include "trace/trace_io.h"
#include "trace/trace_io_int.h"

#include <errno.h>
#include <locale.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/outfile.h"
#include "common/util.h"

/* --- shared with the reader (trace_io_int.h) -------------------------------- */

void umadv__numeric_locale_enter(umadv_numeric_locale_t *nl)
{
    nl->c = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
    nl->saved = nl->c != (locale_t)0 ? uselocale(nl->c) : (locale_t)0;
}

void umadv__numeric_locale_leave(umadv_numeric_locale_t *nl)
{
    if (nl->c == (locale_t)0)
        return;
    uselocale(nl->saved);
    freelocale(nl->c);
}

const char *umadv__access_mode_name(uint32_t mode)
{
    switch (mode) {
    case UMADV_ACCESS_READ:  return "r";
    case UMADV_ACCESS_WRITE: return "w";
    default:                 return "rw";
    }
}

/* --- writer --------------------------------------------------------------- */

/* A growing output buffer whose first failure sticks, so the writer
 * checks for running out of memory once, at the end. */
typedef struct strbuf {
    char  *data;
    size_t len, cap;
    int    failed;
} strbuf_t;

static int sb_reserve(strbuf_t *sb, size_t extra)
{
    if (sb->failed)
        return -1;
    if (umadv__array_reserve((void **)&sb->data, &sb->cap, sb->len + extra + 1, 1) !=
        UMADV_OK) {
        sb->failed = 1;
        return -1;
    }
    return 0;
}

static void sb_append(strbuf_t *sb, const char *s, size_t n)
{
    if (sb_reserve(sb, n) != 0)
        return;
    memcpy(sb->data + sb->len, s, n);
    sb->len += n;
}

static void sb_printf(strbuf_t *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(strbuf_t *sb, const char *fmt, ...)
{
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || sb_reserve(sb, (size_t)n) != 0) {
        sb->failed = 1;
        return;
    }
    va_start(ap, fmt);
    vsnprintf(sb->data + sb->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    sb->len += (size_t)n;
}

/* Close the buffer with the 'end' line, whose CRC-32 covers everything
 * before it, and hand it over; a failed buffer is freed instead. */
static umadv_status_t sb_seal(strbuf_t *sb, char **buf_p, size_t *len_p)
{
    if (!sb->failed)
        sb_printf(sb, "end crc32=%08x\n", umadv__crc32(0, sb->data, sb->len));
    if (sb->failed) {
        free(sb->data);
        return UMADV_ERR_NO_MEMORY;
    }
    *buf_p = sb->data;
    *len_p = sb->len;
    return UMADV_OK;
}

/* One byte of a quoted string, escaped so that the line stays one line of
 * valid UTF-8 whatever the string holds. */
static size_t sb_string_byte(strbuf_t *sb, const unsigned char *p, size_t avail)
{
    static const char escapes[][3] = {['"'] = "\\\"", ['\\'] = "\\\\", ['\n'] = "\\n",
                                      ['\t'] = "\\t", ['\r'] = "\\r"};
    size_t n;

    if (p[0] < sizeof(escapes) / sizeof(escapes[0]) && escapes[p[0]][0] != '\0') {
        sb_append(sb, escapes[p[0]], 2);
        return 1;
    }
    n = (p[0] < 0x20 || p[0] == 0x7f) ? 0 : umadv__utf8_valid_len(p, avail);
    if (n == 0) {
        sb_printf(sb, "\\x%02x", p[0]);
        return 1;
    }
    sb_append(sb, (const char *)p, n);
    return n;
}

/* " key=\"value\"", or nothing for a NULL string. */
static void sb_string_field(strbuf_t *sb, const char *key, const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t len;

    if (s == NULL)
        return;
    sb_printf(sb, " %s=\"", key);
    len = strlen(s);
    for (size_t i = 0; i < len;)
        i += sb_string_byte(sb, p + i, len - i);
    sb_append(sb, "\"", 1);
}

static void sb_step_ref(strbuf_t *sb, const char *key, uint32_t step)
{
    if (step == UMADV_STEP_NONE)
        sb_printf(sb, " %s=-", key);
    else
        sb_printf(sb, " %s=%u", key, step);
}

/* The figures in the table's order (trace.h); an optional one only when
 * measured, so readers older than it keep reading traces that lack it. */
static void write_link_figures(strbuf_t *sb, const umadv_link_model_t *l)
{
    size_t count;
    const umadv_link_figure_t *figures = umadv__link_figures(&count);

    for (size_t i = 0; i < count; i++) {
        double v = *(const double *)((const char *)l + figures[i].offset);

        if (!umadv__link_figure_unset(&figures[i], v))
            sb_printf(sb, " %s=%.17g", figures[i].key, v);
    }
}

/* The activity's counts, only in a trace that has any, so that readers
 * older than them keep reading traces without. */
static void write_activity_counts(strbuf_t *sb, const umadv_trace_activity_t *act)
{
    if (act->nevents > 0 || act->nnames > 0)
        sb_printf(sb, " events=%u kernel_names=%u", act->nevents, act->nnames);
    if (act->dropped > 0)
        sb_printf(sb, " events_dropped=%llu", (unsigned long long)act->dropped);
}

static void write_header(strbuf_t *sb, const umadv_trace_t *trace)
{
    const umadv_link_model_t *l = &trace->link;
    const umadv_device_desc_t *d = &trace->device;

    sb_printf(sb, "%s %d\n# umadv trace, format described in umadv-trace(5)\n",
              UMADV_TRACE_MAGIC, UMADV_TRACE_FORMAT_VERSION);
    sb_printf(sb, "trace section_size=%llu allocs=%u steps=%u accesses=%u",
              (unsigned long long)trace->section_size, trace->nallocs, trace->nsteps,
              trace->naccesses);
    write_activity_counts(sb, &trace->activity);
    sb_string_field(sb, "source", trace->source);
    sb_append(sb, "\ndevice", 7);
    sb_string_field(sb, "name", d->name);
    sb_string_field(sb, "pci_bus_id", d->pci_bus_id);
    sb_printf(sb, " memory=%llu cc=%d.%d driver=%d\n", (unsigned long long)d->memory,
              d->cc_major, d->cc_minor, d->driver_version);
    sb_append(sb, "link", 4);
    write_link_figures(sb, l);
    sb_append(sb, "\n", 1);
}

static void write_allocs(strbuf_t *sb, const umadv_trace_t *trace)
{
    for (uint32_t i = 0; i < trace->nallocs; i++) {
        const umadv_trace_alloc_t *a = &trace->allocs[i];

        sb_printf(sb, "alloc id=%u base=0x%llx size=%llu kind=%s", i,
                  (unsigned long long)a->base, (unsigned long long)a->size,
                  umadv__alloc_kind_name(a->kind));
        sb_step_ref(sb, "alloc_step", a->alloc_step);
        sb_step_ref(sb, "free_step", a->free_step);
        if (a->stageable) /* absent means not: older readers keep working */
            sb_append(sb, " stageable=1", 12);
        sb_string_field(sb, "tag", a->tag);
        sb_string_field(sb, "site", a->site); /* absent when not known */
        sb_append(sb, "\n", 1);
    }
}

static void write_steps(strbuf_t *sb, const umadv_trace_t *trace)
{
    for (uint32_t i = 0; i < trace->nsteps; i++) {
        const umadv_trace_step_t *s = &trace->steps[i];

        sb_printf(sb, "step id=%u iter=%u kind=%s dur_ns=%llu", i, s->iteration,
                  umadv__step_kind_name(s->kind), (unsigned long long)s->duration_ns);
        if (s->host_ns > 0) /* absent: not known */
            sb_printf(sb, " host_ns=%llu", (unsigned long long)s->host_ns);
        sb_string_field(sb, "name", s->name);
        sb_append(sb, "\n", 1);
        for (uint32_t j = 0; j < s->naccesses; j++) {
            const umadv_trace_access_t *a = &trace->accesses[s->first_access + j];
            sb_printf(sb, "  a alloc=%u first=%u count=%u mode=%s faults=%u\n", a->alloc,
                      a->first, a->count, umadv__access_mode_name(a->mode), a->faults);
        }
    }
}

static void write_event(strbuf_t *sb, const umadv_trace_event_t *e)
{
    sb_printf(sb, "ev kind=%s start=%llu dur=%llu",
              umadv__event_kind_name((umadv_event_kind_t)e->kind),
              (unsigned long long)e->start_ns, (unsigned long long)e->dur_ns);
    if (e->kind == UMADV_EVENT_KERNEL) {
        if (e->step != UMADV_STEP_NONE)
            sb_printf(sb, " step=%u", e->step);
        if (e->name != UMADV_EVENT_NO_NAME)
            sb_printf(sb, " name=%u", e->name);
    } else {
        sb_printf(sb, " addr=0x%llx", (unsigned long long)e->address);
    }
    if (e->kind == UMADV_EVENT_FAULT)
        sb_printf(sb, " groups=%llu", (unsigned long long)e->value);
    if (e->kind == UMADV_EVENT_HTOD || e->kind == UMADV_EVENT_DTOH)
        sb_printf(sb, " bytes=%llu cause=%s", (unsigned long long)e->value,
                  umadv__migration_cause_name((umadv_migration_cause_t)e->cause));
    sb_append(sb, "\n", 1);
}

/* The kernel names, then the events in start order (finalize sorted
 * them). */
static void write_activity(strbuf_t *sb, const umadv_trace_activity_t *act)
{
    for (uint32_t i = 0; i < act->nnames; i++) {
        sb_printf(sb, "kname id=%u", i);
        sb_string_field(sb, "name", act->names[i]);
        sb_append(sb, "\n", 1);
    }
    for (uint32_t i = 0; i < act->nevents; i++)
        write_event(sb, &act->events[i]);
}

/* Refuse what the reader would refuse, so that every written file reads. */
static umadv_status_t write_check(const umadv_trace_t *trace)
{
    const umadv_device_desc_t *d = &trace->device;
    const char *bad;

    if (!trace->finalized) {
        umadv_error("cannot write a trace that is not finalized");
        return UMADV_ERR_INVALID_PARAM;
    }
    bad = umadv__link_model_implausible(&trace->link);
    if (bad != NULL) {
        umadv_error("cannot write trace: link figure %s is out of range (bandwidths %g to %g "
                    "bytes/s, latencies 0 to %g s)", bad, UMADV_LINK_BW_MIN, UMADV_LINK_BW_MAX,
                    UMADV_LINK_LATENCY_MAX);
        return UMADV_ERR_INVALID_PARAM;
    }
    if (memchr(d->name, '\0', sizeof(d->name)) == NULL ||
        memchr(d->pci_bus_id, '\0', sizeof(d->pci_bus_id)) == NULL || d->cc_major < 0 ||
        d->cc_minor < 0 || d->driver_version < 0 || d->memory > UMADV_TRACE_IO_MAX_MEMORY) {
        umadv_error("cannot write trace: malformed device description");
        return UMADV_ERR_INVALID_PARAM;
    }
    for (uint32_t i = 0; i < trace->nsteps; i++) {
        if (trace->steps[i].duration_ns > UMADV_TRACE_IO_MAX_STEP_NS) {
            umadv_error("cannot write trace: step %u lasts %llu ns, more than the format's "
                        "%llu", i, (unsigned long long)trace->steps[i].duration_ns,
                        (unsigned long long)UMADV_TRACE_IO_MAX_STEP_NS);
            return UMADV_ERR_INVALID_PARAM;
        }
    }
    if (trace->nsections > UMADV_TRACE_IO_MAX_SECTIONS) {
        umadv_error("cannot write trace: %u sections, the format allows %u; use a larger "
                    "section size", trace->nsections, UMADV_TRACE_IO_MAX_SECTIONS);
        return UMADV_ERR_INVALID_PARAM;
    }
    return UMADV_OK;
}

/* The reader stops at a line longer than UMADV_TRACE_IO_MAX_LINE (a name
 * or a tag of tens of KiB, escaped): refuse to write what would not read. */
static umadv_status_t check_line_lengths(const strbuf_t *sb)
{
    size_t start = 0, line = 1;

    while (start < sb->len) {
        const char *nl = memchr(sb->data + start, '\n', sb->len - start);
        size_t end = nl != NULL ? (size_t)(nl - sb->data) : sb->len;

        if (end - start > UMADV_TRACE_IO_MAX_LINE) {
            umadv_error("cannot write trace: line %zu would be %zu bytes long, more than the "
                        "format's %llu (a name or tag too long)", line, end - start,
                        (unsigned long long)UMADV_TRACE_IO_MAX_LINE);
            return UMADV_ERR_INVALID_PARAM;
        }
        start = end + 1;
        line++;
    }
    return UMADV_OK;
}

umadv_status_t umadv__trace_write_buffer(const umadv_trace_t *trace, char **buf_p,
                                         size_t *len_p)
{
    strbuf_t sb = {0};
    umadv_numeric_locale_t nl;
    umadv_status_t status = write_check(trace);

    if (status != UMADV_OK)
        return status;
    umadv__numeric_locale_enter(&nl);
    write_header(&sb, trace);
    write_allocs(&sb, trace);
    write_steps(&sb, trace);
    write_activity(&sb, &trace->activity);
    umadv__numeric_locale_leave(&nl);
    if (!sb.failed && check_line_lengths(&sb) != UMADV_OK) {
        free(sb.data);
        return UMADV_ERR_INVALID_PARAM;
    }
    return sb_seal(&sb, buf_p, len_p);
}

umadv_status_t umadv__trace_write_stream(const umadv_trace_t *trace, FILE *stream)
{
    umadv_status_t status;
    size_t len;
    char *buf;

    status = umadv__trace_write_buffer(trace, &buf, &len);
    if (status != UMADV_OK)
        return status;
    if (fwrite(buf, 1, len, stream) != len || fflush(stream) != 0) {
        umadv_error("cannot write trace: %m");
        status = UMADV_ERR_IO;
    }
    free(buf);
    return status;
}

/* --- re-sealing ----------------------------------------------------------- */

/* Offset where the buffer's last line starts (the final newline, if any,
 * belongs to that line). */
static size_t last_line_start(const char *buf, size_t len)
{
    size_t end = len;

    if (end > 0 && buf[end - 1] == '\n')
        end--;
    while (end > 0 && buf[end - 1] != '\n')
        end--;
    return end;
}

int umadv__trace_is_end_line(const char *p, size_t n)
{
    return n >= 3 && memcmp(p, "end", 3) == 0 &&
           (n == 3 || p[3] == ' ' || p[3] == '\t' || p[3] == '\r' || p[3] == '\n');
}

umadv_status_t umadv__trace_reseal_buffer(const char *buf, size_t len, char **out_p,
                                          size_t *out_len_p)
{
    size_t keep = last_line_start(buf, len);
    strbuf_t sb = {0};

    if (!umadv__trace_is_end_line(buf + keep, len - keep))
        keep = len;
    sb_append(&sb, buf, keep);
    if (keep > 0 && buf[keep - 1] != '\n')
        sb_append(&sb, "\n", 1);
    return sb_seal(&sb, out_p, out_len_p);
}

/* --- files ----------------------------------------------------------------- */

umadv_status_t umadv__trace_write_file(const umadv_trace_t *trace, const char *path,
                                       char *why, size_t why_len)
{
    char scratch[1];
    umadv_status_t status;
    size_t len;
    char *buf;

    if (why == NULL || why_len == 0) {
        why = scratch;
        why_len = sizeof(scratch);
    }
    why[0] = '\0';
    status = umadv__trace_write_buffer(trace, &buf, &len);
    if (status != UMADV_OK) {
        snprintf(why, why_len, "cannot write %s: %s", path, umadv_status_string(status));
        return status;
    }
    status = umadv__outfile_write(path, "the trace", buf, len, why, why_len);
    free(buf);
    return status;
}
