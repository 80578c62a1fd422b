/*
 * The trace reader of umadv-trace(5), written for hostile input: the
 * buffer is not NUL-terminated, every index is checked before use, every
 * count taken from the file is capped by the file's size, and the trace is
 * built in a local through the builder API (so every invariant is checked
 * in one place) and handed over only on success.
 *
 * Order of checks: the version line first (a newer format may differ in
 * everything else), then the 'end' line (so a cut file is reported as
 * truncated), then the checksum, then the records one by one.
 */
#include "trace/trace_io.h"
#include "trace/trace_io_int.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/util.h"

#define MAX_FIELDS        16
#define SHOWN_VALUE_BYTES 40

/* --- reader: lines, fields, messages --------------------------------------- */

typedef struct field {
    const char *key, *val;
    size_t      key_len, val_len; /* val excludes the quotes of a string */
    int         quoted;
} field_t;

enum {
    HAVE_TRACE  = 1 << 0,
    HAVE_DEVICE = 1 << 1,
    HAVE_LINK   = 1 << 2,
    HAVE_HEADER = HAVE_TRACE | HAVE_DEVICE | HAVE_LINK
};

typedef struct reader {
    const char   *name;
    const char   *buf;
    size_t        len, pos;     /* pos: start of the next line */
    uint32_t      line;         /* number of the current line, from 1 */
    const char   *text;         /* current line, without "\n" or "\r\n" */
    size_t        text_len;
    const char   *rec;          /* record name of the current line */
    size_t        rec_len;
    field_t       fields[MAX_FIELDS];
    unsigned      nfields;
    unsigned      have;         /* HAVE_* */
    uint32_t      decl_allocs, decl_steps, decl_accesses, access_lines;
    uint32_t      decl_events, decl_names; /* activity.h; 0 when absent */
    int           in_activity;  /* a kname or ev record was read: they come last */
    uint64_t      nsections;
    umadv_trace_t trace;        /* built here, handed over on success */
    char         *why;
    size_t        why_len;
} reader_t;

static umadv_status_t fail(reader_t *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static umadv_status_t fail(reader_t *r, const char *fmt, ...)
{
    va_list ap;
    int n;

    n = snprintf(r->why, r->why_len, "%s:%u: ", r->name, r->line);
    if (n >= 0 && (size_t)n < r->why_len) {
        va_start(ap, fmt);
        vsnprintf(r->why + n, r->why_len - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return UMADV_ERR_CORRUPT;
}

/* Show file bytes in a message: printable ASCII as is, the rest as \xHH,
 * cut after SHOWN_VALUE_BYTES, so a message never carries raw garbage. */
static const char *shown(const char *s, size_t n, char *out, size_t out_len)
{
    size_t o = 0;

    for (size_t i = 0; i < n && i < SHOWN_VALUE_BYTES && o + 5 < out_len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c < 0x7f)
            out[o++] = (char)c;
        else
            o += (size_t)snprintf(out + o, out_len - o, "\\x%02x", c);
    }
    if (n > SHOWN_VALUE_BYTES && o + 4 < out_len) {
        memcpy(out + o, "...", 3);
        o += 3;
    }
    out[o] = '\0';
    return out;
}

static umadv_status_t fail_value(reader_t *r, const field_t *f, const char *what)
{
    char key[64], val[SHOWN_VALUE_BYTES * 4 + 8], rec[64];

    return fail(r, "%s: %s: \"%s\" %s", shown(r->rec, r->rec_len, rec, sizeof(rec)),
                shown(f->key, f->key_len, key, sizeof(key)),
                shown(f->val, f->val_len, val, sizeof(val)), what);
}

static umadv_status_t fail_record(reader_t *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static umadv_status_t fail_record(reader_t *r, const char *fmt, ...)
{
    char rec[64], msg[256];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return fail(r, "%s: %s", shown(r->rec, r->rec_len, rec, sizeof(rec)), msg);
}

/* A builder call failed although the reader checked its arguments first:
 * out of memory, or a rule the reader does not know (reported as such). */
static umadv_status_t fail_builder(reader_t *r, umadv_status_t status)
{
    if (status == UMADV_ERR_NO_MEMORY) {
        fail(r, "out of memory");
        return status;
    }
    return fail_record(r, "rejected by the trace builder: %s", umadv_status_string(status));
}

static int next_line(reader_t *r)
{
    const char *start = r->buf + r->pos, *nl;
    size_t avail = r->len - r->pos;

    if (r->pos >= r->len)
        return 0;
    nl = memchr(start, '\n', avail);
    r->text = start;
    r->text_len = nl != NULL ? (size_t)(nl - start) : avail;
    r->pos += r->text_len + (nl != NULL);
    if (r->text_len > 0 && start[r->text_len - 1] == '\r')
        r->text_len--;
    r->line++;
    return 1;
}

/* Control bytes (NUL included) and malformed UTF-8 are refused up front,
 * so that no later step meets them. */
static umadv_status_t line_check_bytes(reader_t *r)
{
    const unsigned char *p = (const unsigned char *)r->text;

    for (size_t i = 0; i < r->text_len;) {
        size_t n = umadv__utf8_valid_len(p + i, r->text_len - i);
        if ((p[i] < 0x20 && p[i] != '\t') || p[i] == 0x7f)
            return fail(r, "control byte 0x%02x at column %zu", p[i], i + 1);
        if (n == 0)
            return fail(r, "invalid UTF-8 at column %zu", i + 1);
        i += n;
    }
    return UMADV_OK;
}

static int is_space(char c)
{
    return c == ' ' || c == '\t';
}

static int is_key_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
}

/* The closing quote of the string opening at @i, or @n when unterminated;
 * a backslash always takes the next byte with it. */
static size_t string_end(const char *t, size_t i, size_t n)
{
    for (i++; i < n; i++) {
        if (t[i] == '\\')
            i++;
        else if (t[i] == '"')
            return i;
    }
    return n;
}

static umadv_status_t split_value(reader_t *r, field_t *f, size_t *i_p)
{
    const char *t = r->text;
    size_t i = *i_p, n = r->text_len, end;

    if (i < n && t[i] == '"') {
        end = string_end(t, i, n);
        if (end >= n)
            return fail(r, "unterminated string at column %zu", i + 1);
        f->val = t + i + 1;
        f->val_len = end - i - 1;
        f->quoted = 1;
        i = end + 1;
        if (i < n && !is_space(t[i]))
            return fail(r, "expected a space after the string at column %zu", i + 1);
    } else {
        f->val = t + i;
        while (i < n && !is_space(t[i]))
            i++;
        f->val_len = (size_t)(t + i - f->val);
        f->quoted = 0;
        if (f->val_len == 0)
            return fail(r, "empty value at column %zu", i + 1);
    }
    *i_p = i;
    return UMADV_OK;
}

/* "record key=value key=\"string\" ...": fills rec and fields. */
static umadv_status_t split_line(reader_t *r)
{
    const char *t = r->text;
    size_t i = 0, n = r->text_len;
    umadv_status_t status;

    while (i < n && is_space(t[i]))
        i++;
    r->rec = t + i;
    while (i < n && !is_space(t[i]))
        i++;
    r->rec_len = (size_t)(t + i - r->rec);
    for (r->nfields = 0;; r->nfields++) {
        field_t *f = &r->fields[r->nfields];
        while (i < n && is_space(t[i]))
            i++;
        if (i == n)
            return UMADV_OK;
        if (r->nfields == MAX_FIELDS)
            return fail(r, "more than %d fields", MAX_FIELDS);
        f->key = t + i;
        while (i < n && is_key_char(t[i]))
            i++;
        f->key_len = (size_t)(t + i - f->key);
        if (f->key_len == 0 || i == n || t[i] != '=')
            return fail(r, "expected key=value at column %zu", (size_t)(f->key - t) + 1);
        i++;
        status = split_value(r, f, &i);
        if (status != UMADV_OK)
            return status;
    }
}

static int token_is(const char *s, size_t n, const char *word)
{
    return strlen(word) == n && memcmp(s, word, n) == 0;
}

/* Every key must be one the record knows, and appear once: version 1 is
 * strict, so a typo is an error rather than a silently missing field. */
static umadv_status_t check_keys(reader_t *r, const char *const *keys)
{
    char key[64];

    for (unsigned i = 0; i < r->nfields; i++) {
        const field_t *f = &r->fields[i];
        size_t k = 0;

        while (keys[k] != NULL && !token_is(f->key, f->key_len, keys[k]))
            k++;
        if (keys[k] == NULL)
            return fail_record(r, "unknown key '%s'", shown(f->key, f->key_len, key,
                                                             sizeof(key)));
        for (unsigned j = 0; j < i; j++)
            if (token_is(f->key, f->key_len, keys[k]) &&
                token_is(r->fields[j].key, r->fields[j].key_len, keys[k]))
                return fail_record(r, "key '%s' given twice", keys[k]);
    }
    return UMADV_OK;
}

static const field_t *field_find(const reader_t *r, const char *key)
{
    for (unsigned i = 0; i < r->nfields; i++)
        if (token_is(r->fields[i].key, r->fields[i].key_len, key))
            return &r->fields[i];
    return NULL;
}

static umadv_status_t field_need(reader_t *r, const char *key, const field_t **f_p)
{
    *f_p = field_find(r, key);
    return *f_p != NULL ? UMADV_OK : fail_record(r, "missing key '%s'", key);
}

/* --- reader: values --------------------------------------------------------- */

static int parse_dec(const char *s, size_t n, uint64_t *v_p)
{
    uint64_t v = 0;

    if (n == 0 || n > 20)
        return -1;
    for (size_t i = 0; i < n; i++) {
        unsigned d = (unsigned char)s[i] - '0';
        if (d > 9 || v > (UINT64_MAX - d) / 10)
            return -1;
        v = v * 10 + d;
    }
    *v_p = v;
    return 0;
}

static int hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

static int parse_hex(const char *s, size_t n, uint64_t *v_p)
{
    uint64_t v = 0;

    if (n < 3 || n > 18 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X'))
        return -1;
    for (size_t i = 2; i < n; i++) {
        int d = hex_digit(s[i]);
        if (d < 0)
            return -1;
        v = v << 4 | (uint64_t)d;
    }
    *v_p = v;
    return 0;
}

static umadv_status_t get_u64(reader_t *r, const char *key, uint64_t max, uint64_t *v_p)
{
    const field_t *f;
    umadv_status_t status = field_need(r, key, &f);

    if (status != UMADV_OK)
        return status;
    if (f->quoted || parse_dec(f->val, f->val_len, v_p) != 0)
        return fail_value(r, f, "is not a number");
    if (*v_p > max) {
        char what[64];
        snprintf(what, sizeof(what), "is out of range (at most %llu)", (unsigned long long)max);
        return fail_value(r, f, what);
    }
    return UMADV_OK;
}

static umadv_status_t get_u32(reader_t *r, const char *key, uint32_t max, uint32_t *v_p)
{
    uint64_t v;
    umadv_status_t status = get_u64(r, key, max, &v);

    if (status == UMADV_OK)
        *v_p = (uint32_t)v;
    return status;
}

static umadv_status_t get_hex(reader_t *r, const char *key, uint64_t *v_p)
{
    const field_t *f;
    umadv_status_t status = field_need(r, key, &f);

    if (status != UMADV_OK)
        return status;
    if (f->quoted || parse_hex(f->val, f->val_len, v_p) != 0)
        return fail_value(r, f, "is not a hexadecimal address (0x...)");
    return UMADV_OK;
}

/* A step index, or '-' (or no key at all) for UMADV_STEP_NONE. */
static umadv_status_t get_step_ref(reader_t *r, const char *key, uint32_t *v_p)
{
    const field_t *f = field_find(r, key);

    if (f == NULL || (!f->quoted && token_is(f->val, f->val_len, "-"))) {
        *v_p = UMADV_STEP_NONE;
        return UMADV_OK;
    }
    return get_u32(r, key, UMADV_STEP_NONE - 1, v_p);
}

/* Only the characters of a decimal floating-point number reach strtod:
 * "inf", "nan" and hexadecimal floats are not part of the format. */
static umadv_status_t get_double(reader_t *r, const char *key, double *v_p)
{
    const field_t *f;
    char text[64], *end;
    umadv_status_t status = field_need(r, key, &f);

    if (status != UMADV_OK)
        return status;
    if (f->quoted || f->val_len >= sizeof(text))
        return fail_value(r, f, "is not a number");
    memcpy(text, f->val, f->val_len);
    text[f->val_len] = '\0';
    if (strspn(text, "0123456789.eE+-") < f->val_len)
        return fail_value(r, f, "is not a number");
    *v_p = strtod(text, &end);
    if (end != text + f->val_len || !isfinite(*v_p))
        return fail_value(r, f, "is not a finite number");
    return UMADV_OK;
}

static umadv_status_t unescape(reader_t *r, const field_t *f, char *out, size_t *i_p,
                               size_t *o_p)
{
    const char *v = f->val;
    size_t i = *i_p + 1;
    int hi, lo;

    switch (v[i]) {
    case '"': out[(*o_p)++] = '"'; break;
    case '\\': out[(*o_p)++] = '\\'; break;
    case 'n': out[(*o_p)++] = '\n'; break;
    case 't': out[(*o_p)++] = '\t'; break;
    case 'r': out[(*o_p)++] = '\r'; break;
    case 'x':
        hi = i + 2 < f->val_len ? hex_digit(v[i + 1]) : -1;
        lo = hi >= 0 ? hex_digit(v[i + 2]) : -1;
        if (lo < 0 || (hi | lo) == 0)
            return fail_value(r, f, "has a bad \\x escape (two hex digits, not 00)");
        out[(*o_p)++] = (char)(hi << 4 | lo);
        i += 2;
        break;
    default:
        return fail_value(r, f, "has an unknown escape (known: \\\" \\\\ \\n \\t \\r \\xHH)");
    }
    *i_p = i + 1;
    return UMADV_OK;
}

/* A quoted string, unescaped into a malloc'ed copy; absent means NULL. */
static umadv_status_t get_string(reader_t *r, const char *key, char **s_p)
{
    const field_t *f = field_find(r, key);
    umadv_status_t status;
    size_t i = 0, o = 0;
    char *out;

    *s_p = NULL;
    if (f == NULL)
        return UMADV_OK;
    if (!f->quoted)
        return fail_value(r, f, "is not a quoted string");
    out = malloc(f->val_len + 1);
    if (out == NULL)
        return fail_builder(r, UMADV_ERR_NO_MEMORY);
    while (i < f->val_len) {
        if (f->val[i] != '\\') {
            out[o++] = f->val[i++];
            continue;
        }
        status = unescape(r, f, out, &i, &o);
        if (status != UMADV_OK) {
            free(out);
            return status;
        }
    }
    out[o] = '\0';
    *s_p = out;
    return UMADV_OK;
}

/* A short word (a kind, a mode) as a C string for the name parsers. */
static umadv_status_t get_word(reader_t *r, const char *key, char *word, size_t word_len,
                               const field_t **f_p)
{
    umadv_status_t status = field_need(r, key, f_p);

    if (status != UMADV_OK)
        return status;
    if ((*f_p)->quoted || (*f_p)->val_len >= word_len) {
        word[0] = '\0';
        return UMADV_OK; /* no name matches: the caller reports it */
    }
    memcpy(word, (*f_p)->val, (*f_p)->val_len);
    word[(*f_p)->val_len] = '\0';
    return UMADV_OK;
}

/* --- reader: header records ------------------------------------------------- */

static umadv_status_t presize(reader_t *r)
{
    /* Declared counts only size the arrays; the file's length bounds them,
     * so a lying header cannot make the reader allocate absurd memory. */
    size_t cap = r->len / 16;
    umadv_trace_t *t = &r->trace;
    umadv_status_t status;

    status = umadv__array_reserve((void **)&t->allocs, &t->allocs_cap,
                                  UMADV_MIN(r->decl_allocs, cap), sizeof(*t->allocs));
    if (status == UMADV_OK)
        status = umadv__array_reserve((void **)&t->steps, &t->steps_cap,
                                      UMADV_MIN(r->decl_steps, cap), sizeof(*t->steps));
    if (status == UMADV_OK)
        status = umadv__array_reserve((void **)&t->accesses, &t->accesses_cap,
                                      UMADV_MIN(r->decl_accesses, cap), sizeof(*t->accesses));
    if (status == UMADV_OK)
        status = umadv__array_reserve((void **)&t->activity.events, &t->activity.events_cap,
                                      UMADV_MIN(r->decl_events, cap),
                                      sizeof(*t->activity.events));
    return status == UMADV_OK ? UMADV_OK : fail_builder(r, status);
}

/* The optional counts of the activity records (absent: none). */
static umadv_status_t get_activity_counts(reader_t *r, uint32_t max)
{
    umadv_status_t status = UMADV_OK;

    if (field_find(r, "events") != NULL || field_find(r, "kernel_names") != NULL) {
        status = get_u32(r, "events", max, &r->decl_events);
        if (status == UMADV_OK)
            status = get_u32(r, "kernel_names", max, &r->decl_names);
    }
    return status;
}

static umadv_status_t parse_trace(reader_t *r)
{
    const uint32_t max = UINT32_MAX - 2; /* the builder's limit */
    uint64_t section_size, dropped = 0;
    umadv_status_t status;
    char *source;

    if (r->have != 0)
        return fail_record(r, "must be the first record");
    status = get_u64(r, "section_size", UMADV_SECTION_SIZE_MAX, &section_size);
    if (status == UMADV_OK)
        status = get_u32(r, "allocs", max, &r->decl_allocs);
    if (status == UMADV_OK)
        status = get_u32(r, "steps", max, &r->decl_steps);
    if (status == UMADV_OK)
        status = get_u32(r, "accesses", max, &r->decl_accesses);
    if (status == UMADV_OK)
        status = get_activity_counts(r, max);
    if (status == UMADV_OK && field_find(r, "events_dropped") != NULL)
        status = get_u64(r, "events_dropped", UINT64_MAX, &dropped);
    if (status != UMADV_OK)
        return status;
    if (umadv__trace_init(&r->trace, section_size) != UMADV_OK)
        return fail_value(r, field_find(r, "section_size"),
                          "is not a power of two between 65536 and 1073741824");
    r->have |= HAVE_TRACE;
    r->trace.activity.dropped = dropped;
    status = get_string(r, "source", &source);
    if (status != UMADV_OK || source == NULL)
        return status == UMADV_OK ? presize(r) : status;
    status = umadv__trace_set_source(&r->trace, source);
    free(source);
    return status == UMADV_OK ? presize(r) : fail_builder(r, status);
}

static umadv_status_t get_fixed_string(reader_t *r, const char *key, char *dst, size_t size)
{
    umadv_status_t status;
    char *s;

    status = get_string(r, key, &s);
    if (status != UMADV_OK)
        return status;
    if (s == NULL)
        return fail_record(r, "missing key '%s'", key);
    if (strlen(s) >= size) {
        free(s);
        return fail_record(r, "%s: longer than %zu bytes", key, size - 1);
    }
    memcpy(dst, s, strlen(s) + 1);
    free(s);
    return UMADV_OK;
}

static umadv_status_t get_cc(reader_t *r, umadv_device_desc_t *d)
{
    const field_t *f;
    const char *dot;
    uint64_t major, minor;
    umadv_status_t status = field_need(r, "cc", &f);

    if (status != UMADV_OK)
        return status;
    dot = f->quoted ? NULL : memchr(f->val, '.', f->val_len);
    if (dot == NULL || parse_dec(f->val, (size_t)(dot - f->val), &major) != 0 ||
        parse_dec(dot + 1, f->val_len - (size_t)(dot - f->val) - 1, &minor) != 0 ||
        major > 1000 || minor > 1000)
        return fail_value(r, f, "is not a compute capability (major.minor)");
    d->cc_major = (int)major;
    d->cc_minor = (int)minor;
    return UMADV_OK;
}

static umadv_status_t parse_device(reader_t *r)
{
    umadv_device_desc_t d;
    uint32_t driver;
    umadv_status_t status;

    if (!(r->have & HAVE_TRACE) || (r->have & HAVE_DEVICE))
        return fail_record(r, "must come once, after the 'trace' record");
    memset(&d, 0, sizeof(d));
    status = get_fixed_string(r, "name", d.name, sizeof(d.name));
    if (status == UMADV_OK)
        status = get_fixed_string(r, "pci_bus_id", d.pci_bus_id, sizeof(d.pci_bus_id));
    if (status == UMADV_OK)
        status = get_u64(r, "memory", UMADV_TRACE_IO_MAX_MEMORY, &d.memory);
    if (status == UMADV_OK)
        status = get_cc(r, &d);
    if (status == UMADV_OK)
        status = get_u32(r, "driver", INT_MAX, &driver);
    if (status != UMADV_OK)
        return status;
    d.driver_version = (int)driver;
    r->trace.device = d;
    r->have |= HAVE_DEVICE;
    return UMADV_OK;
}

/* Each figure within the one plausibility rule of trace.h: a subnormal
 * bandwidth or a latency of 1e308 would make every modelled time
 * infinite. */
static umadv_status_t get_link_value(reader_t *r, const umadv_link_figure_t *fig,
                                     double *v_p)
{
    char what[96];
    umadv_status_t status = get_double(r, fig->key, v_p);

    if (status != UMADV_OK || umadv__link_figure_plausible(fig->is_bw, *v_p))
        return status;
    if (fig->is_bw)
        snprintf(what, sizeof(what), "is out of range (%g to %g bytes/s)", UMADV_LINK_BW_MIN,
                 UMADV_LINK_BW_MAX);
    else
        snprintf(what, sizeof(what), "is out of range (0 to %g seconds)",
                 UMADV_LINK_LATENCY_MAX);
    return fail_value(r, field_find(r, fig->key), what);
}

static umadv_status_t parse_link(reader_t *r)
{
    umadv_link_model_t l;
    size_t count;
    const umadv_link_figure_t *figures = umadv__link_figures(&count);

    if (!(r->have & HAVE_TRACE) || (r->have & HAVE_LINK))
        return fail_record(r, "must come once, after the 'trace' record");
    for (size_t i = 0; i < count; i++) {
        double *v = (double *)((char *)&l + figures[i].offset);
        umadv_status_t status;

        if (figures[i].optional && field_find(r, figures[i].key) == NULL) {
            *v = 0; /* not measured */
            continue;
        }
        status = get_link_value(r, &figures[i], v);
        if (status != UMADV_OK)
            return status;
    }
    r->trace.link = l;
    r->have |= HAVE_LINK;
    return UMADV_OK;
}

/* --- reader: body records ----------------------------------------------------- */

static umadv_status_t check_id(reader_t *r, uint32_t have, uint32_t declared,
                               const char *what)
{
    uint32_t id;
    umadv_status_t status;

    if (r->have != HAVE_HEADER)
        return fail_record(r, "the 'trace', 'device' and 'link' records must come first");
    if (have == declared)
        return fail_record(r, "more %s than the header declares (%u)", what, declared);
    status = get_u32(r, "id", UINT32_MAX, &id);
    if (status == UMADV_OK && id != have)
        return fail_record(r, "id %u out of order (expected %u)", id, have);
    return status;
}

static umadv_status_t check_lifetime(reader_t *r, uint32_t alloc_step, uint32_t free_step)
{
    uint32_t steps = r->decl_steps;

    if ((alloc_step != UMADV_STEP_NONE && alloc_step >= steps) ||
        (free_step != UMADV_STEP_NONE && free_step >= steps))
        return fail_record(r, "lifetime names a step past the last (the header declares %u "
                           "steps)", steps);
    if (alloc_step != UMADV_STEP_NONE && free_step != UMADV_STEP_NONE &&
        free_step < alloc_step)
        return fail_record(r, "free_step %u comes before alloc_step %u", free_step,
                           alloc_step);
    return UMADV_OK;
}

/* Sections of an allocation of @size bytes; unlike UMADV_DIV_ROUND_UP,
 * exact for sizes near 2^64. */
static uint64_t sections_of(const reader_t *r, uint64_t size)
{
    return size / r->trace.section_size + (size % r->trace.section_size != 0);
}

static umadv_status_t check_alloc_range(reader_t *r, uint64_t base, uint64_t size)
{
    uint64_t nsections = sections_of(r, size);

    if (size == 0)
        return fail_record(r, "size must not be 0");
    if (base + size < base)
        return fail_record(r, "base + size wraps around the address space");
    /* Past the first test both terms are at most 2^22: the sum cannot wrap. */
    if (nsections > UMADV_TRACE_IO_MAX_SECTIONS ||
        r->nsections + nsections > UMADV_TRACE_IO_MAX_SECTIONS)
        return fail_record(r, "more than %u sections in all; use a larger section size",
                           UMADV_TRACE_IO_MAX_SECTIONS);
    r->nsections += nsections;
    return UMADV_OK;
}

static umadv_status_t get_alloc_kind(reader_t *r, umadv_alloc_kind_t *kind_p)
{
    const field_t *f;
    char word[32];
    umadv_status_t status = get_word(r, "kind", word, sizeof(word), &f);

    if (status == UMADV_OK && umadv__alloc_kind_parse(word, kind_p) != 0)
        return fail_value(r, f, "is not an allocation kind (other, weight, gradient, "
                          "optimizer, activation, workspace, input)");
    return status;
}

/* The optional stageable flag: 0 or 1, absent 0 (traces made before it). */
static umadv_status_t get_stageable(reader_t *r, uint8_t *v_p)
{
    uint32_t v = 0;
    umadv_status_t status = UMADV_OK;

    if (field_find(r, "stageable") != NULL)
        status = get_u32(r, "stageable", 1, &v);
    if (status == UMADV_OK)
        *v_p = (uint8_t)v;
    return status;
}

static umadv_status_t add_alloc(reader_t *r, uint64_t base, uint64_t size,
                                umadv_alloc_kind_t kind, uint32_t alloc_step,
                                uint32_t free_step)
{
    umadv_status_t status;
    uint8_t stageable = 0;
    uint32_t id;
    char *tag = NULL, *site = NULL;

    status = get_stageable(r, &stageable);
    if (status == UMADV_OK)
        status = get_string(r, "tag", &tag);
    if (status == UMADV_OK)
        status = get_string(r, "site", &site);
    if (status != UMADV_OK) {
        free(tag);
        return status;
    }
    status = umadv__trace_add_alloc(&r->trace, base, size, kind, tag, &id);
    free(tag);
    if (status == UMADV_OK)
        status = umadv__trace_set_site(&r->trace, id, site);
    free(site);
    if (status == UMADV_OK)
        status = umadv__trace_set_lifetime(&r->trace, id, alloc_step, free_step);
    if (status == UMADV_OK)
        r->trace.allocs[id].stageable = stageable;
    return status == UMADV_OK ? UMADV_OK : fail_builder(r, status);
}

static umadv_status_t parse_alloc(reader_t *r)
{
    uint64_t base = 0, size = 0;
    uint32_t alloc_step = 0, free_step = 0;
    umadv_alloc_kind_t kind = UMADV_ALLOC_OTHER;
    umadv_status_t status;

    status = check_id(r, r->trace.nallocs, r->decl_allocs, "allocations");
    if (status == UMADV_OK && r->trace.nsteps > 0)
        return fail_record(r, "allocation records must come before the first step");
    if (status == UMADV_OK)
        status = get_hex(r, "base", &base);
    if (status == UMADV_OK)
        status = get_u64(r, "size", UINT64_MAX, &size);
    if (status == UMADV_OK)
        status = get_alloc_kind(r, &kind);
    if (status == UMADV_OK)
        status = get_step_ref(r, "alloc_step", &alloc_step);
    if (status == UMADV_OK)
        status = get_step_ref(r, "free_step", &free_step);
    if (status == UMADV_OK)
        status = check_lifetime(r, alloc_step, free_step);
    if (status == UMADV_OK)
        status = check_alloc_range(r, base, size);
    if (status != UMADV_OK)
        return status;
    return add_alloc(r, base, size, kind, alloc_step, free_step);
}

static umadv_status_t get_step_kind(reader_t *r, umadv_step_kind_t *kind_p)
{
    const field_t *f;
    char word[32];
    umadv_status_t status = get_word(r, "kind", word, sizeof(word), &f);

    if (status == UMADV_OK && umadv__step_kind_parse(word, kind_p) != 0)
        return fail_value(r, f, "is not a step kind (kernel, layer, copy)");
    return status;
}

static umadv_status_t parse_step(reader_t *r)
{
    umadv_trace_t *t = &r->trace;
    uint32_t iteration = 0;
    uint64_t duration = 0, host = 0;
    umadv_step_kind_t kind = UMADV_STEP_KERNEL;
    umadv_status_t status;
    char *name = NULL;

    status = check_id(r, t->nsteps, r->decl_steps, "steps");
    if (status == UMADV_OK)
        status = get_u32(r, "iter", UINT32_MAX - 1, &iteration);
    if (status == UMADV_OK && t->nsteps > 0 && iteration < t->steps[t->nsteps - 1].iteration)
        return fail_record(r, "iteration %u comes after iteration %u", iteration,
                           t->steps[t->nsteps - 1].iteration);
    if (status == UMADV_OK)
        status = get_step_kind(r, &kind);
    if (status == UMADV_OK)
        status = get_u64(r, "dur_ns", UMADV_TRACE_IO_MAX_STEP_NS, &duration);
    if (status == UMADV_OK && field_find(r, "host_ns") != NULL) /* absent: not known */
        status = get_u64(r, "host_ns", UMADV_TRACE_IO_MAX_STEP_NS, &host);
    if (status == UMADV_OK)
        status = get_string(r, "name", &name);
    if (status != UMADV_OK)
        return status;
    status = umadv__trace_add_step(t, name, kind, iteration, duration, NULL);
    free(name);
    if (status != UMADV_OK)
        return fail_builder(r, status);
    t->steps[t->nsteps - 1].host_ns = host;
    return UMADV_OK;
}

static umadv_status_t get_mode(reader_t *r, uint32_t *mode_p)
{
    const field_t *f;
    umadv_status_t status = field_need(r, "mode", &f);

    if (status != UMADV_OK)
        return status;
    for (uint32_t mode = UMADV_ACCESS_READ; mode <= UMADV_ACCESS_RW; mode++) {
        if (!f->quoted && token_is(f->val, f->val_len, umadv__access_mode_name(mode))) {
            *mode_p = mode;
            return UMADV_OK;
        }
    }
    return fail_value(r, f, "is not an access mode (r, w, rw)");
}

static umadv_status_t check_access(reader_t *r, uint32_t alloc, uint32_t first,
                                   uint32_t count)
{
    const umadv_trace_alloc_t *a = &r->trace.allocs[alloc];
    uint64_t nsections = sections_of(r, a->size);
    uint32_t step = r->trace.nsteps - 1;

    if (count == 0)
        return fail_record(r, "count must not be 0");
    if ((uint64_t)first + count > nsections)
        return fail_record(r, "sections %u..%llu are outside allocation %u (%llu sections)",
                           first, (unsigned long long)first + count - 1, alloc,
                           (unsigned long long)nsections);
    if ((a->alloc_step != UMADV_STEP_NONE && step < a->alloc_step) ||
        (a->free_step != UMADV_STEP_NONE && step > a->free_step))
        return fail_record(r, "step %u touches allocation %u outside its lifetime", step,
                           alloc);
    return UMADV_OK;
}

static umadv_status_t parse_access(reader_t *r)
{
    uint32_t alloc = 0, first = 0, count = 0, mode = 0, faults = 0;
    umadv_status_t status;

    if (r->trace.nsteps == 0)
        return fail_record(r, "access before any step");
    if (r->access_lines == r->decl_accesses)
        return fail_record(r, "more accesses than the header declares (%u)",
                           r->decl_accesses);
    if (r->trace.nallocs == 0)
        return fail_record(r, "access but the trace has no allocation");
    status = get_u32(r, "alloc", r->trace.nallocs - 1, &alloc);
    if (status == UMADV_OK)
        status = get_u32(r, "first", UINT32_MAX, &first);
    if (status == UMADV_OK)
        status = get_u32(r, "count", UINT32_MAX, &count);
    if (status == UMADV_OK)
        status = get_mode(r, &mode);
    if (status == UMADV_OK)
        status = get_u32(r, "faults", UINT32_MAX, &faults);
    if (status == UMADV_OK)
        status = check_access(r, alloc, first, count);
    if (status != UMADV_OK)
        return status;
    status = umadv__trace_add_access_sections(&r->trace, alloc, first, count, mode, faults);
    if (status != UMADV_OK)
        return fail_builder(r, status);
    r->access_lines++;
    return UMADV_OK;
}

/* --- reader: activity records (activity.h) ---------------------------------- */

static umadv_status_t activity_begin(reader_t *r)
{
    if (r->have != HAVE_HEADER)
        return fail_record(r, "before the header records");
    r->in_activity = 1;
    return UMADV_OK;
}

static umadv_status_t parse_kname(reader_t *r)
{
    umadv_trace_activity_t *act = &r->trace.activity;
    umadv_status_t status = activity_begin(r);
    char *name = NULL;

    if (status == UMADV_OK && act->nevents > 0)
        return fail_record(r, "after an 'ev' record: kernel names come first");
    if (status == UMADV_OK)
        status = check_id(r, act->nnames, r->decl_names, "kernel names");
    if (status == UMADV_OK)
        status = get_string(r, "name", &name);
    if (status == UMADV_OK && name == NULL)
        return fail_record(r, "missing key 'name'");
    if (status != UMADV_OK)
        return status;
    status = umadv__activity_add_name(act, name, NULL);
    free(name);
    return status == UMADV_OK ? UMADV_OK : fail_builder(r, status);
}

/* The keys each kind of event has, past kind, start and dur. */
static const char *const event_kind_keys[UMADV_EVENT_KIND_COUNT][4] = {
    [UMADV_EVENT_KERNEL] = {"step", "name", NULL},
    [UMADV_EVENT_FAULT]  = {"addr", "groups", NULL},
    [UMADV_EVENT_HTOD]   = {"addr", "bytes", "cause", NULL},
    [UMADV_EVENT_DTOH]   = {"addr", "bytes", "cause", NULL},
    [UMADV_EVENT_THRASH] = {"addr", NULL},
};

/* A key of the ev record that its kind does not have is an error, as an
 * unknown key is. */
static umadv_status_t check_event_keys(reader_t *r, umadv_event_kind_t kind)
{
    char key[64];

    for (unsigned i = 0; i < r->nfields; i++) {
        const field_t *f = &r->fields[i];
        int known = token_is(f->key, f->key_len, "kind") ||
                    token_is(f->key, f->key_len, "start") ||
                    token_is(f->key, f->key_len, "dur");
        for (const char *const *k = event_kind_keys[kind]; *k != NULL && !known; k++)
            known = token_is(f->key, f->key_len, *k);
        if (!known)
            return fail_record(r, "key '%s' is not one of a %s event",
                               shown(f->key, f->key_len, key, sizeof(key)),
                               umadv__event_kind_name(kind));
    }
    return UMADV_OK;
}

static umadv_status_t get_event_kind(reader_t *r, umadv_event_kind_t *kind_p)
{
    const field_t *f;
    char word[32];
    umadv_status_t status = get_word(r, "kind", word, sizeof(word), &f);

    if (status == UMADV_OK && umadv__event_kind_parse(word, kind_p) != 0)
        return fail_value(r, f, "is not an event kind (kernel, fault, htod, dtoh, thrash)");
    if (status == UMADV_OK)
        status = check_event_keys(r, *kind_p);
    return status;
}

static umadv_status_t get_cause(reader_t *r, uint8_t *cause_p)
{
    const field_t *f;
    char word[32];
    umadv_migration_cause_t cause;
    umadv_status_t status = get_word(r, "cause", word, sizeof(word), &f);

    if (status == UMADV_OK && umadv__migration_cause_parse(word, &cause) != 0)
        return fail_value(r, f, "is not a migration cause (user, fault, speculative, "
                          "eviction, access_counters, unknown)");
    if (status == UMADV_OK)
        *cause_p = (uint8_t)cause;
    return status;
}

/* A kernel's step and name index: each may be absent. */
static umadv_status_t get_kernel_refs(reader_t *r, umadv_trace_event_t *e)
{
    umadv_status_t status = get_step_ref(r, "step", &e->step);

    if (status == UMADV_OK && e->step != UMADV_STEP_NONE && e->step >= r->trace.nsteps)
        return fail_record(r, "step %u is not a step of the trace (%u)", e->step,
                           r->trace.nsteps);
    if (status != UMADV_OK || field_find(r, "name") == NULL)
        return status;
    if (r->trace.activity.nnames == 0)
        return fail_record(r, "a kernel name but the trace has no 'kname' record");
    return get_u32(r, "name", r->trace.activity.nnames - 1, &e->name);
}

static umadv_status_t get_event_fields(reader_t *r, umadv_trace_event_t *e)
{
    umadv_status_t status = UMADV_OK;

    if (e->kind == UMADV_EVENT_KERNEL)
        return get_kernel_refs(r, e);
    status = get_hex(r, "addr", &e->address);
    if (status == UMADV_OK && e->kind == UMADV_EVENT_FAULT)
        status = get_u64(r, "groups", UINT32_MAX, &e->value);
    if (status == UMADV_OK && (e->kind == UMADV_EVENT_HTOD || e->kind == UMADV_EVENT_DTOH))
        status = get_u64(r, "bytes", UMADV_TRACE_IO_MAX_MEMORY, &e->value);
    if (status == UMADV_OK && (e->kind == UMADV_EVENT_HTOD || e->kind == UMADV_EVENT_DTOH))
        status = get_cause(r, &e->cause);
    return status;
}

static umadv_status_t parse_event(reader_t *r)
{
    umadv_trace_event_t e = {.step = UMADV_STEP_NONE, .name = UMADV_EVENT_NO_NAME};
    umadv_event_kind_t kind = UMADV_EVENT_KERNEL;
    umadv_status_t status = activity_begin(r);

    if (status == UMADV_OK && r->trace.activity.nevents == r->decl_events)
        return fail_record(r, "more events than the header declares (%u)", r->decl_events);
    if (status == UMADV_OK)
        status = get_event_kind(r, &kind);
    e.kind = (uint8_t)kind;
    if (status == UMADV_OK)
        status = get_u64(r, "start", UMADV_ACTIVITY_MAX_NS, &e.start_ns);
    if (status == UMADV_OK)
        status = get_u64(r, "dur", UMADV_ACTIVITY_MAX_NS, &e.dur_ns);
    if (status == UMADV_OK)
        status = get_event_fields(r, &e);
    if (status != UMADV_OK)
        return status;
    status = umadv__activity_add_event(&r->trace.activity, &e);
    return status == UMADV_OK ? UMADV_OK : fail_builder(r, status);
}

/* --- reader: the file as a whole -------------------------------------------- */

static const char *const trace_keys[] = {"section_size", "allocs", "steps", "accesses",
                                         "source", "events", "kernel_names",
                                         "events_dropped", NULL};
static const char *const device_keys[] = {"name", "pci_bus_id", "memory", "cc", "driver",
                                          NULL};
static const char *const alloc_keys[] = {"id", "base", "size", "kind", "alloc_step",
                                         "free_step", "stageable", "tag", "site", NULL};
static const char *const step_keys[] = {"id", "iter", "kind", "dur_ns", "host_ns", "name", NULL};
static const char *const access_keys[] = {"alloc", "first", "count", "mode", "faults", NULL};
static const char *const kname_keys[] = {"id", "name", NULL};
static const char *const event_keys[] = {"kind", "start", "dur", "step", "name", "addr",
                                         "groups", "bytes", "cause", NULL};

static const struct record_type {
    const char         *name;
    const char *const  *keys;
    umadv_status_t    (*parse)(reader_t *r);
} record_types[] = {
    {"trace",  trace_keys,  parse_trace},
    {"device", device_keys, parse_device},
    {"link",   umadv__link_keys, parse_link},
    {"alloc",  alloc_keys,  parse_alloc},
    {"step",   step_keys,   parse_step},
    {"a",      access_keys, parse_access},
    {"kname",  kname_keys,  parse_kname},
    {"ev",     event_keys,  parse_event},
};

/* The records that must come before the activity ones. */
static int before_activity(const struct record_type *type)
{
    return type->parse == parse_alloc || type->parse == parse_step ||
           type->parse == parse_access;
}

static umadv_status_t parse_record(reader_t *r)
{
    char rec[64];
    umadv_status_t status;

    for (size_t i = 0; i < UMADV_ARRAY_SIZE(record_types); i++) {
        if (!token_is(r->rec, r->rec_len, record_types[i].name))
            continue;
        if (r->in_activity && before_activity(&record_types[i]))
            return fail(r, "'%s' after the activity records (kname, ev): they come last",
                        record_types[i].name);
        status = check_keys(r, record_types[i].keys);
        return status == UMADV_OK ? record_types[i].parse(r) : status;
    }
    return fail(r, "unknown record '%s'", shown(r->rec, r->rec_len, rec, sizeof(rec)));
}

static int is_blank_or_comment(const reader_t *r)
{
    size_t i = 0;

    while (i < r->text_len && is_space(r->text[i]))
        i++;
    return i == r->text_len || r->text[i] == '#';
}

static umadv_status_t check_version(reader_t *r)
{
    const size_t magic_len = sizeof(UMADV_TRACE_MAGIC) - 1;
    char shown_line[SHOWN_VALUE_BYTES * 4 + 8];
    uint64_t version;

    if (!next_line(r)) {
        r->line = 1;
        return fail(r, "empty file, not a umadv trace");
    }
    if (r->text_len <= magic_len + 1 || memcmp(r->text, UMADV_TRACE_MAGIC " ", magic_len + 1) != 0)
        return fail(r, "not a umadv trace: first line is \"%s\", expected \"%s %d\"",
                    shown(r->text, r->text_len, shown_line, sizeof(shown_line)),
                    UMADV_TRACE_MAGIC, UMADV_TRACE_FORMAT_VERSION);
    if (parse_dec(r->text + magic_len + 1, r->text_len - magic_len - 1, &version) != 0 ||
        version == 0)
        return fail(r, "bad trace format version \"%s\"",
                    shown(r->text + magic_len + 1, r->text_len - magic_len - 1, shown_line,
                          sizeof(shown_line)));
    if (version > UMADV_TRACE_FORMAT_VERSION)
        return fail(r, "trace format version %llu is newer than this umadv supports (%d)",
                    (unsigned long long)version, UMADV_TRACE_FORMAT_VERSION);
    return UMADV_OK;
}

/* Find the 'end' line before parsing anything, so a truncated file is
 * reported as truncated rather than by whatever the cut left behind.
 * Sets *@end_line_p and *@end_off_p (where that line starts). */
static umadv_status_t find_end(reader_t *r, uint32_t *end_line_p, size_t *end_off_p)
{
    reader_t scan = *r;
    size_t start = scan.pos;

    while (next_line(&scan)) {
        if (umadv__trace_is_end_line(scan.text, scan.text_len)) {
            *end_line_p = scan.line;
            *end_off_p = start;
            if (scan.pos < scan.len) {
                r->line = scan.line;
                return fail(r, "the 'end' line must be the last line");
            }
            return UMADV_OK;
        }
        start = scan.pos;
    }
    r->line = scan.line + 1;
    return fail(r, "expected 'end' line, file truncated after %u line%s", scan.line,
                scan.line == 1 ? "" : "s");
}

/* Exactly eight lowercase hex digits, as the writer prints them. */
static int parse_crc(const field_t *f, uint32_t *crc_p)
{
    uint32_t crc = 0;

    if (f->quoted || f->val_len != 8)
        return -1;
    for (size_t i = 0; i < 8; i++) {
        int d = hex_digit(f->val[i]);
        if (d < 0 || (f->val[i] >= 'A' && f->val[i] <= 'F'))
            return -1;
        crc = crc << 4 | (uint32_t)d;
    }
    *crc_p = crc;
    return 0;
}

static umadv_status_t check_crc(reader_t *r, size_t end_off)
{
    const field_t *f;
    uint32_t file_crc, crc;
    umadv_status_t status;

    status = line_check_bytes(r);
    if (status == UMADV_OK)
        status = split_line(r);
    if (status == UMADV_OK)
        status = check_keys(r, (const char *const[]){"crc32", NULL});
    if (status == UMADV_OK)
        status = field_need(r, "crc32", &f);
    if (status != UMADV_OK)
        return status;
    if (parse_crc(f, &file_crc) != 0)
        return fail_value(r, f, "is not 8 lowercase hex digits");
    crc = umadv__crc32(0, r->buf, end_off);
    if (crc != file_crc)
        return fail(r, "checksum mismatch: file says %08x, content gives %08x%s", file_crc, crc,
                    memchr(r->buf, '\r', end_off) != NULL ? " (were line endings changed?)"
                                                          : "");
    return UMADV_OK;
}

/* Parse the 'end' line (number @end_line, starting at @end_off) with a
 * copy of the reader, which stays at line 1 for the records. */
static umadv_status_t check_end_line(reader_t *r, uint32_t end_line, size_t end_off)
{
    reader_t end = *r;

    end.pos = end_off;
    end.line = end_line - 1;
    next_line(&end);
    return check_crc(&end, end_off);
}

/* What only the whole file can tell: every header record present and
 * every declared count met. */
static umadv_status_t check_complete(reader_t *r)
{
    static const char *const names[] = {"trace", "device", "link"};

    for (unsigned i = 0; i < UMADV_ARRAY_SIZE(names); i++)
        if (!(r->have & (1u << i)))
            return fail(r, "missing '%s' record", names[i]);
    if (r->trace.nallocs != r->decl_allocs)
        return fail(r, "the header declares %u allocations, the file has %u",
                    r->decl_allocs, r->trace.nallocs);
    if (r->trace.nsteps != r->decl_steps)
        return fail(r, "the header declares %u steps, the file has %u", r->decl_steps,
                    r->trace.nsteps);
    if (r->access_lines != r->decl_accesses)
        return fail(r, "the header declares %u accesses, the file has %u",
                    r->decl_accesses, r->access_lines);
    if (r->trace.activity.nnames != r->decl_names)
        return fail(r, "the header declares %u kernel names, the file has %u",
                    r->decl_names, r->trace.activity.nnames);
    if (r->trace.activity.nevents != r->decl_events)
        return fail(r, "the header declares %u events, the file has %u", r->decl_events,
                    r->trace.activity.nevents);
    return UMADV_OK;
}

/* The line next_line() found: skipped if blank or a comment, else checked
 * and parsed as a record. */
static umadv_status_t read_line(reader_t *r)
{
    umadv_status_t status;

    if (is_blank_or_comment(r))
        return UMADV_OK;
    status = line_check_bytes(r);
    if (status == UMADV_OK)
        status = split_line(r);
    if (status == UMADV_OK)
        status = parse_record(r);
    return status;
}

static umadv_status_t read_body(reader_t *r, uint32_t end_line)
{
    char reason[256];
    umadv_status_t status;

    while (next_line(r) && r->line < end_line) {
        status = read_line(r);
        if (status != UMADV_OK)
            return status;
    }
    status = check_complete(r);
    if (status != UMADV_OK)
        return status;
    status = umadv__trace_finalize(&r->trace, reason, sizeof(reason));
    if (status == UMADV_ERR_NO_MEMORY)
        return fail_builder(r, status);
    if (status != UMADV_OK)
        return fail(r, "%s", reason);
    return UMADV_OK;
}

static umadv_status_t read_all(reader_t *r)
{
    uint32_t end_line = 0;
    size_t end_off = 0;
    umadv_status_t status;

    status = check_version(r);
    if (status == UMADV_OK)
        status = find_end(r, &end_line, &end_off);
    if (status != UMADV_OK)
        return status;
    /* The end line first: the checksum vouches for the rest. */
    status = check_end_line(r, end_line, end_off);
    if (status != UMADV_OK)
        return status;
    return read_body(r, end_line);
}

umadv_status_t umadv__trace_read_buffer(const char *name, const char *buf, size_t len,
                                        umadv_trace_t *trace, char *why, size_t why_len)
{
    char scratch[1];
    umadv_numeric_locale_t nl;
    reader_t *r;
    umadv_status_t status;

    /* The reader holds a trace and a field table: keep it off the stack. */
    r = calloc(1, sizeof(*r));
    if (r == NULL)
        return UMADV_ERR_NO_MEMORY;
    r->name = name != NULL ? name : "<buffer>";
    r->buf = buf;
    r->len = buf != NULL ? len : 0;
    r->why = (why != NULL && why_len > 0) ? why : scratch;
    r->why_len = (why != NULL && why_len > 0) ? why_len : sizeof(scratch);
    r->why[0] = '\0';
    umadv__numeric_locale_enter(&nl);
    status = read_all(r);
    umadv__numeric_locale_leave(&nl);
    if (status == UMADV_OK)
        *trace = r->trace;
    else
        umadv__trace_cleanup(&r->trace);
    free(r);
    return status;
}

/* --- files ----------------------------------------------------------------- */

/* --- files: reading with a bound ------------------------------------------ */

/*
 * A file is read whole (the checksum covers it), but a device or a pipe
 * may never end, and a big file need not be read to be refused: reading
 * stops at a line longer than UMADV_TRACE_IO_MAX_LINE, at a first line
 * that cannot be the version line, at a header in error, and at more
 * bytes than the header's counts allow (trace_io.h).
 */
typedef struct read_guard {
    const char *name;
    size_t      scanned;     /* bytes whose line ends are counted */
    size_t      line_start;  /* where the current line starts */
    size_t      lines_end;   /* end of the last complete line */
    uint32_t    line;        /* number of the current line */
    uint64_t    limit;       /* most bytes: header limit until the counts are known */
    int         have_counts;
    char       *why;
    size_t      why_len;
} read_guard_t;

/* The header alone: version line, then records up to the 'trace' one,
 * parsed by the reader's own code (so its errors are the reader's).
 * UMADV_OK with *@counts_p set once the 'trace' record is read;
 * UMADV_ERR_NOT_FOUND when more lines are needed; UMADV_ERR_CORRUPT. */
static umadv_status_t peek_header(read_guard_t *g, const char *buf, size_t len,
                                  uint64_t *counts_p)
{
    const size_t magic_len = sizeof(UMADV_TRACE_MAGIC);  /* with its space */
    umadv_status_t status = UMADV_ERR_NOT_FOUND;
    reader_t *r;

    if (g->lines_end == 0 && (len < magic_len || memcmp(buf, UMADV_TRACE_MAGIC " ", magic_len) == 0))
        return UMADV_ERR_NOT_FOUND;
    r = calloc(1, sizeof(*r));
    if (r == NULL)
        return UMADV_ERR_NO_MEMORY;
    r->name = g->name;
    r->buf = buf;
    r->len = g->lines_end > 0 ? g->lines_end : len;
    r->why = g->why;
    r->why_len = g->why_len;
    status = check_version(r);
    while (status == UMADV_OK && !(r->have & HAVE_TRACE) && next_line(r))
        status = read_line(r);
    if (status == UMADV_OK && (r->have & HAVE_TRACE))
        *counts_p = (uint64_t)r->decl_allocs + r->decl_steps + r->decl_accesses +
                    r->decl_events + r->decl_names;
    else if (status == UMADV_OK)
        status = UMADV_ERR_NOT_FOUND;
    umadv__trace_cleanup(&r->trace);
    free(r);
    return status;
}

/* Count the lines of the bytes read since the last call; refuse one
 * that is too long (a file of NUL bytes has no line end at all). */
static umadv_status_t guard_lines(read_guard_t *g, const char *buf, size_t len)
{
    for (; g->scanned < len; g->scanned++) {
        if (buf[g->scanned] != '\n')
            continue;
        if (g->scanned - g->line_start > UMADV_TRACE_IO_MAX_LINE)
            break;
        g->line_start = g->scanned + 1;
        g->lines_end = g->line_start;
        g->line++;
    }
    if (len - g->line_start <= UMADV_TRACE_IO_MAX_LINE)
        return UMADV_OK;
    snprintf(g->why, g->why_len, "%s:%u: line longer than %llu bytes: not a umadv trace",
             g->name, g->line, (unsigned long long)UMADV_TRACE_IO_MAX_LINE);
    return UMADV_ERR_CORRUPT;
}

static umadv_status_t guard(read_guard_t *g, const char *buf, size_t len)
{
    uint64_t counts;
    umadv_status_t status = guard_lines(g, buf, len);

    if (status != UMADV_OK)
        return status;
    if (!g->have_counts) {
        status = peek_header(g, buf, len, &counts);
        if (status == UMADV_OK) {
            g->have_counts = 1;
            /* the records, the 'device', 'link' and 'end' lines */
            g->limit = UMADV_TRACE_IO_MAX_HEADER + (counts + 3) * UMADV_TRACE_IO_MAX_LINE;
        } else if (status != UMADV_ERR_NOT_FOUND) {
            return status;
        }
    }
    if (len <= g->limit)
        return UMADV_OK;
    if (!g->have_counts)
        snprintf(g->why, g->why_len, "%s: no 'trace' record in the first %llu bytes: not a "
                 "umadv trace", g->name, (unsigned long long)g->limit);
    else
        snprintf(g->why, g->why_len, "%s: more than %llu bytes, more than the counts of its "
                 "'trace' record allow (%llu bytes a record): not a umadv trace, or a "
                 "wrong header", g->name, (unsigned long long)g->limit,
                 (unsigned long long)UMADV_TRACE_IO_MAX_LINE);
    return UMADV_ERR_CORRUPT;
}

static umadv_status_t read_fd(int fd, const char *path, char **buf_p, size_t *len_p,
                              char *why, size_t why_len)
{
    read_guard_t g = {.name = path, .line = 1, .limit = UMADV_TRACE_IO_MAX_HEADER,
                      .why = why, .why_len = why_len};
    size_t len = 0, cap = 0;
    char *buf = NULL;
    umadv_status_t status;
    ssize_t n;

    for (;;) {
        if (umadv__array_reserve((void **)&buf, &cap, len + 65536, 1) != UMADV_OK) {
            free(buf);
            snprintf(why, why_len, "cannot read %s: out of memory", path);
            return UMADV_ERR_NO_MEMORY;
        }
        n = read(fd, buf + len, cap - len);
        if (n == 0)
            break;
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            snprintf(why, why_len, "cannot read %s: %s", path, strerror(errno));
            free(buf);
            return UMADV_ERR_IO;
        }
        len += (size_t)n;
        status = guard(&g, buf, len);
        if (status != UMADV_OK) {
            free(buf);
            return status;
        }
    }
    *buf_p = buf;
    *len_p = len;
    return UMADV_OK;
}

umadv_status_t umadv__trace_read_file(const char *path, umadv_trace_t *trace,
                                      char *why, size_t why_len)
{
    int is_stdin = strcmp(path, "-") == 0;
    const char *name = is_stdin ? "<stdin>" : path;
    char scratch[1];
    umadv_status_t status;
    size_t len;
    char *buf;
    int fd;

    if (why == NULL || why_len == 0) {
        why = scratch;
        why_len = sizeof(scratch);
    }
    fd = is_stdin ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(why, why_len, "cannot open %s: %s", path, strerror(errno));
        return UMADV_ERR_IO;
    }
    status = read_fd(fd, name, &buf, &len, why, why_len);
    if (!is_stdin)
        close(fd);
    if (status != UMADV_OK)
        return status;
    status = umadv__trace_read_buffer(name, buf, len, trace, why, why_len);
    free(buf);
    return status;
}
