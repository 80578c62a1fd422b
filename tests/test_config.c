/*
 * UMADV_* knobs: every type's parsing, bounds, bad values (which must be
 * errors naming the variable and leave the configuration unchanged), and
 * the `umadv info -c` listing.
 */
#include "common/config.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/util.h"
#include "tap.h"
#include "testutil.h"

/* Load with only @name=@value set. On failure also checks that @config
 * kept its previous bytes. */
static umadv_status_t load_one(const char *name, const char *value, umadv_config_t *config,
                               int *unchanged_p)
{
    umadv_config_t before;
    umadv_status_t status;

    env_clear();
    setenv(name, value, 1);
    memset(config, 0xa5, sizeof(*config));
    before = *config;
    status = umadv__config_load(config);
    *unchanged_p = memcmp(&before, config, sizeof(before)) == 0;
    unsetenv(name);
    return status;
}

static void expect_good(const char *name, const char *value, umadv_config_t *config)
{
    int unchanged;

    is(load_one(name, value, config, &unchanged), UMADV_OK, "%s=\"%s\" accepted", name, value);
}

static void expect_bad(const char *name, const char *value)
{
    umadv_config_t config;
    int unchanged;
    umadv_status_t status = load_one(name, value, &config, &unchanged);

    ok(status == UMADV_ERR_INVALID_PARAM && unchanged,
       "%s=\"%s\" rejected, config unchanged (status %d)", name, value, status);
}

/* The table lists exactly the knobs umadv(7) documents: a knob added
 * without its documentation (or left behind) fails here. */
static void knobs_are_exactly(const umadv_config_field_t *fields, size_t n)
{
    static const char *const expected[] = {
        "UMADV_BUDGET", "UMADV_POLICY", "UMADV_DEVICE", "UMADV_SECTION_SIZE",
        "UMADV_MAX_MANAGED", "UMADV_ARENA_SIZE", "UMADV_LOOKAHEAD", "UMADV_READ_MOSTLY",
        "UMADV_HOST_PLACEMENT", "UMADV_STAGE", "UMADV_STAGE_POISON", "UMADV_LANE_PIECE",
        "UMADV_LOG", "UMADV_LOG_FILE", "UMADV_PROFILER", "UMADV_PROFILE_EVICT",
        "UMADV_PROFILE_PASSES", "UMADV_PROFILE_GUIDED", "UMADV_PROFILE_TAIL",
        "UMADV_CALL_CENSUS", "UMADV_LINK_PROBE", "UMADV_REPROFILE_FAULTS", "UMADV_FAULT_PERIOD", "UMADV_HOST_NUMA",
        "UMADV_PLAN_MAX_TOUCHES", "UMADV_ROUTE_MALLOC", "UMADV_ITERATION_RANGE",
        "UMADV_ITERATION_SOURCE",
        "UMADV_PROFILE_ITERATION", "UMADV_INJECT_LIBRARY", "UMADV_RUN_SUMMARY",
        "UMADV_PROFILE_OUTPUT", "UMADV_PROFILE_SECONDS", "UMADV_TIMELINE",
    };
    size_t found = 0;

    for (size_t e = 0; e < UMADV_ARRAY_SIZE(expected); e++)
        for (size_t i = 0; i < n; i++)
            found += strcmp(fields[i].name, expected[e]) == 0;
    ok(found == UMADV_ARRAY_SIZE(expected) && n == found,
       "the table holds exactly the %zu documented knobs (has %zu, %zu of them expected)",
       UMADV_ARRAY_SIZE(expected), n, found);
}

static void test_defaults(void)
{
    umadv_config_t c;
    size_t n;
    const umadv_config_field_t *fields = umadv__config_fields(&n);
    char why[160];
    int all_valid = 1;

    umadv__config_defaults(&c);
    is_u64(c.budget, 0, "default budget: none");
    is(c.policy, UMADV_POLICY_PLAN, "default policy: plan");
    is(c.device, 0, "default device 0");
    is_u64(c.section_size, 2 * UMADV_MIB, "default section 2 MiB");
    is_u64(c.max_managed, 0, "default max managed: no limit");
    is_u64(c.arena_size, UMADV_GIB, "default arena 1 GiB");
    is(c.lookahead, 0, "default lookahead unlimited");
    is(c.read_mostly, 1, "default read-mostly on");
    is(c.log_level, UMADV_LOG_WARN, "default log level warn");
    is_str(c.log_file, "", "default log file: stderr");
    is_u64(c.lane_piece, 0, "default lane piece: none, one call each");
    for (size_t i = 0; i < n; i++) {
        if (fields[i].dflt[0] != '\0' &&
            umadv__config_check(&fields[i], fields[i].dflt, why, sizeof(why)) != UMADV_OK) {
            diag("%s default \"%s\": %s", fields[i].name, fields[i].dflt, why);
            all_valid = 0;
        }
    }
    ok(all_valid, "every default obeys its own knob's rules");
    knobs_are_exactly(fields, n);
}

static void test_sizes(void)
{
    umadv_config_t c;

    expect_good("UMADV_BUDGET", "8G", &c);
    is_u64(c.budget, 8 * UMADV_GIB, "budget 8G");
    expect_good("UMADV_BUDGET", "1.5GiB", &c);
    is_u64(c.budget, 3 * UMADV_GIB / 2, "budget 1.5GiB");
    expect_good("UMADV_MAX_MANAGED", "512M", &c);
    is_u64(c.max_managed, 512 * UMADV_MIB, "max managed 512M");
    expect_good("UMADV_SECTION_SIZE", "64k", &c);
    is_u64(c.section_size, 64 * UMADV_KIB, "section 64k (lower bound)");
    expect_good("UMADV_SECTION_SIZE", "1G", &c);
    is_u64(c.section_size, UMADV_GIB, "section 1G (upper bound)");
    expect_good("UMADV_ARENA_SIZE", "3M", &c);
    is_u64(c.arena_size, 3 * UMADV_MIB, "arena 3M: need not be a power of two");
    expect_good("UMADV_BUDGET", "4096", &c);
    is_u64(c.budget, 4096, "budget in plain bytes");
    expect_good("UMADV_LANE_PIECE", "8M", &c);
    is_u64(c.lane_piece, 8 * UMADV_MIB, "lane piece 8M");

    expect_bad("UMADV_SECTION_SIZE", "3M");
    expect_bad("UMADV_SECTION_SIZE", "32K");
    expect_bad("UMADV_SECTION_SIZE", "2G");
    expect_bad("UMADV_ARENA_SIZE", "1M");
    expect_bad("UMADV_ARENA_SIZE", "2T");
    expect_bad("UMADV_BUDGET", "abc");
    expect_bad("UMADV_BUDGET", "8X");
    expect_bad("UMADV_BUDGET", "-1");
    expect_bad("UMADV_BUDGET", "99999999999T");
    expect_bad("UMADV_BUDGET", " 8G");
    expect_bad("UMADV_BUDGET", "8G ");
    expect_bad("UMADV_BUDGET", "");
    expect_bad("UMADV_BUDGET", "inf");
    expect_bad("UMADV_MAX_MANAGED", "1.5");
    expect_bad("UMADV_LANE_PIECE", "8X");
}

static void test_uints(void)
{
    umadv_config_t c;

    expect_good("UMADV_DEVICE", "1023", &c);
    is(c.device, 1023, "device 1023 (upper bound)");
    expect_good("UMADV_LOOKAHEAD", "1000000", &c);
    is(c.lookahead, 1000000, "lookahead 1e6 (upper bound)");
    expect_good("UMADV_LOOKAHEAD", "007", &c);
    is(c.lookahead, 7, "leading zeros are decimal, not octal");

    expect_bad("UMADV_DEVICE", "1024");
    expect_bad("UMADV_DEVICE", "-1");
    expect_bad("UMADV_DEVICE", "+1");
    expect_bad("UMADV_DEVICE", " 1");
    expect_bad("UMADV_DEVICE", "1 ");
    expect_bad("UMADV_DEVICE", "abc");
    expect_bad("UMADV_DEVICE", "0x1");
    expect_bad("UMADV_DEVICE", "");
    expect_bad("UMADV_LOOKAHEAD", "1000001");
    expect_bad("UMADV_LOOKAHEAD", "99999999999999999999999");
}

static void test_enums_bools_strings(void)
{
    umadv_config_t c;
    char long_path[300];
    static const char *const yes[] = {"1", "yes", "TRUE", "on"};
    static const char *const no[]  = {"0", "No", "false", "off"};

    expect_good("UMADV_POLICY", "prefetch-all", &c);
    is(c.policy, UMADV_POLICY_PREFETCH_ALL, "policy prefetch-all");
    expect_good("UMADV_POLICY", "Demand", &c);
    is(c.policy, UMADV_POLICY_DEMAND, "policy names ignore case");
    expect_good("UMADV_LOG", "trace", &c);
    is(c.log_level, UMADV_LOG_TRACE, "log trace");
    expect_bad("UMADV_POLICY", "lru");
    expect_bad("UMADV_POLICY", "plan ");
    expect_bad("UMADV_LOG", "verbose");

    for (size_t i = 0; i < 4; i++) {
        expect_good("UMADV_READ_MOSTLY", no[i], &c);
        is(c.read_mostly, 0, "read-mostly \"%s\" is false", no[i]);
        expect_good("UMADV_READ_MOSTLY", yes[i], &c);
        is(c.read_mostly, 1, "read-mostly \"%s\" is true", yes[i]);
    }
    expect_bad("UMADV_READ_MOSTLY", "2");
    expect_bad("UMADV_READ_MOSTLY", "maybe");

    memset(long_path, 'x', sizeof(long_path));
    long_path[255] = '\0';
    expect_good("UMADV_LOG_FILE", long_path, &c);
    is((int)strlen(c.log_file), 255, "a 255-byte log path is kept whole");
    long_path[255] = 'x';
    long_path[256] = '\0';
    expect_bad("UMADV_LOG_FILE", long_path);
}

static void test_messages(void)
{
    umadv_config_t c;
    int unchanged;
    const char *log;

    log_take();
    load_one("UMADV_SECTION_SIZE", "3M", &c, &unchanged);
    log = log_take();
    ok(strstr(log, "UMADV_SECTION_SIZE=3M: not a power of two between 64K and 1G") != NULL,
       "bad section size names variable, value and rule");
    load_one("UMADV_BUDGET", "", &c, &unchanged);
    log = log_take();
    ok(strstr(log, "UMADV_BUDGET=: empty value") != NULL, "empty value is called empty");
    load_one("UMADV_POLICY", "lru", &c, &unchanged);
    log = log_take();
    ok(strstr(log, "UMADV_POLICY=lru: not one of oracle|demand|prefetch-all|plan") != NULL,
       "bad policy lists the choices");
    load_one("UMADV_DEVICE", "-1", &c, &unchanged);
    log = log_take();
    ok(strstr(log, "UMADV_DEVICE=-1: not an integer between 0 and 1023") != NULL,
       "bad device gives the range");
}

static void test_load_many_and_set(void)
{
    umadv_config_t c, before;

    env_clear();
    setenv("UMADV_BUDGET", "6G", 1);
    setenv("UMADV_POLICY", "oracle", 1);
    setenv("UMADV_SECTION_SIZE", "4M", 1);
    is(umadv__config_load(&c), UMADV_OK, "several knobs load together");
    ok(c.budget == 6 * UMADV_GIB && c.policy == UMADV_POLICY_ORACLE &&
       c.section_size == 4 * UMADV_MIB && c.arena_size == UMADV_GIB,
       "set knobs taken, unset ones default");
    setenv("UMADV_LOOKAHEAD", "x", 1);
    before = c;
    is(umadv__config_load(&c), UMADV_ERR_INVALID_PARAM, "one bad knob fails the load");
    ok(memcmp(&before, &c, sizeof(c)) == 0, "good knobs are not half-applied on failure");
    env_clear();

    is(umadv__config_set(&c, "UMADV_BUDGET", "2G"), UMADV_OK, "config_set by name");
    is_u64(c.budget, 2 * UMADV_GIB, "config_set stored the value");
    before = c;
    is(umadv__config_set(&c, "UMADV_BUDGET", "2Q"), UMADV_ERR_INVALID_PARAM,
       "config_set rejects a bad value");
    ok(memcmp(&before, &c, sizeof(c)) == 0, "config_set leaves config unchanged on error");
    is(umadv__config_set(&c, "UMADV_NOPE", "1"), UMADV_ERR_NOT_FOUND,
       "config_set of an unknown knob is NOT_FOUND");
}

static void test_print(void)
{
    char *text = NULL, line[128];
    size_t len = 0, n;
    const umadv_config_field_t *fields = umadv__config_fields(&n);
    FILE *stream = open_memstream(&text, &len);
    int all_listed = 1;

    env_clear();
    setenv("UMADV_BUDGET", "8G", 1);
    setenv("UMADV_SECTION_SIZE", "3M", 1);
    umadv__config_print(stream);
    fclose(stream);
    for (size_t i = 0; i < n; i++) {
        snprintf(line, sizeof(line), "\n%-20s %-7s", fields[i].name,
                 fields[i].type == UMADV_CONFIG_SIZE ? "size" :
                 fields[i].type == UMADV_CONFIG_UINT ? "uint" :
                 fields[i].type == UMADV_CONFIG_ENUM ? "enum" :
                 fields[i].type == UMADV_CONFIG_BOOL ? "bool" :
                 fields[i].type == UMADV_CONFIG_NODE ? "node" : "string");
        if (strstr(text, line) == NULL) {
            diag("%s not listed as a row", fields[i].name);
            all_listed = 0;
        }
    }
    ok(all_listed, "every knob listed on a row of its own with its type");
    ok(strstr(text, "UMADV_BUDGET         size    0          8G\n") != NULL,
       "current value from the environment shown beside the default");
    ok(strstr(text, "; or one per LOCAL_RANK, separated by commas: 8G,4G") != NULL,
       "the budget's rule shows the per-rank list");
    ok(strstr(text, "\"3M\" (bad value: not a power of two") != NULL,
       "a bad environment value is flagged with the reason");
    ok(strstr(text, "UMADV_LOOKAHEAD      uint    0          (unset)\n") != NULL,
       "unset knobs say so");
    ok(strstr(text, "accepts: oracle|demand|prefetch-all|plan") != NULL,
       "enum choices printed");
    ok(strstr(text, "    Section size: the unit of placement.") != NULL, "doc printed, indented");
    free(text);
    env_clear();
}

/* Load with only the given knob, and LOCAL_RANK (NULL: unset). */
static umadv_status_t load_ranked(const char *rank, const char *name, const char *value,
                                  umadv_config_t *config)
{
    umadv_status_t status;

    env_clear();
    if (rank != NULL)
        setenv("LOCAL_RANK", rank, 1);
    else
        unsetenv("LOCAL_RANK");
    if (name != NULL)
        setenv(name, value, 1);
    status = umadv__config_load(config);
    unsetenv("LOCAL_RANK");
    env_clear();
    return status;
}

/* UMADV_BUDGET=8G,4G: each rank of a job (LOCAL_RANK) takes its entry;
 * a list no rank can use is an error naming the knob and the rank. */
static void test_per_rank_budget(void)
{
    umadv_config_t c;
    const char *log;

    log_take();
    is(load_ranked("1", "UMADV_BUDGET", "8G,4G,512M", &c), UMADV_OK, "per-rank list accepted");
    is_u64(c.budget, 4 * UMADV_GIB, "LOCAL_RANK=1 takes the second entry");
    is(load_ranked("0", "UMADV_BUDGET", "8G,4G", &c), UMADV_OK, "rank 0 too");
    is_u64(c.budget, 8 * UMADV_GIB, "LOCAL_RANK=0 takes the first entry");
    is(load_ranked("3", "UMADV_BUDGET", "6G", &c), UMADV_OK, "a single size is every rank's");
    is_u64(c.budget, 6 * UMADV_GIB, "a single size under LOCAL_RANK=3");

    is(load_ranked("2", "UMADV_BUDGET", "8G,4G", &c), UMADV_ERR_INVALID_PARAM,
       "a rank beyond the list is an error");
    log = log_take();
    ok(strstr(log, "UMADV_BUDGET=8G,4G: no entry for LOCAL_RANK 2 (the list has 2") != NULL,
       "which names the knob, the value and the rank");
    is(load_ranked(NULL, "UMADV_BUDGET", "8G,4G", &c), UMADV_ERR_INVALID_PARAM,
       "a list without LOCAL_RANK is an error, not entry 0");
    ok(strstr(log_take(), "a per-rank list needs LOCAL_RANK") != NULL, "and says so");
    is(load_ranked("0", "UMADV_BUDGET", "8G,4X", &c), UMADV_ERR_INVALID_PARAM,
       "a bad entry of another rank fails every rank");
    ok(strstr(log_take(), "UMADV_BUDGET=8G,4X: entry 1 (\"4X\") of the per-rank list: "
                          "not a size") != NULL, "naming the entry");
    is(load_ranked("0", "UMADV_BUDGET", "8G,,4G", &c), UMADV_ERR_INVALID_PARAM,
       "an empty entry is an error");
    is(load_ranked("0", "UMADV_BUDGET", "8G,", &c), UMADV_ERR_INVALID_PARAM,
       "a trailing comma is an error");
    is(load_ranked("x1", "UMADV_BUDGET", "8G,4G", &c), UMADV_ERR_INVALID_PARAM,
       "a LOCAL_RANK that is not a number is an error");
    ok(strstr(log_take(), "LOCAL_RANK=x1 is not a rank") != NULL, "naming LOCAL_RANK");
    is(load_ranked("0", "UMADV_SECTION_SIZE", "2M,4M", &c), UMADV_ERR_INVALID_PARAM,
       "only per-rank knobs take a list");
}

/* UMADV_DEVICE unset: LOCAL_RANK's GPU; set: UMADV_DEVICE's. */
static void test_device_default(void)
{
    umadv_config_t c;

    is(load_ranked("3", NULL, NULL, &c), UMADV_OK, "LOCAL_RANK alone loads");
    is(c.device, 3, "UMADV_DEVICE unset: the device is LOCAL_RANK's");
    is(load_ranked("3", "UMADV_DEVICE", "1", &c), UMADV_OK, "UMADV_DEVICE with LOCAL_RANK");
    is(c.device, 1, "UMADV_DEVICE set wins over LOCAL_RANK");
    is(load_ranked(NULL, NULL, NULL, &c), UMADV_OK, "neither set");
    is(c.device, 0, "neither set: device 0");
    log_take();
    is(load_ranked("-1", NULL, NULL, &c), UMADV_ERR_INVALID_PARAM,
       "a bad LOCAL_RANK fails the device default");
    ok(strstr(log_take(), "LOCAL_RANK=-1 is not a rank (0 to 65535) (UMADV_DEVICE, unset, "
                          "follows it") != NULL, "naming LOCAL_RANK and UMADV_DEVICE");
    is(load_ranked("-1", "UMADV_DEVICE", "0", &c), UMADV_OK,
       "UMADV_DEVICE set: LOCAL_RANK is not needed");
    is(load_ranked("2000", NULL, NULL, &c), UMADV_ERR_INVALID_PARAM,
       "LOCAL_RANK beyond the last device ordinal is an error");
}

/* A distributed job's process names its rank in every message. */
static void test_log_rank_prefix(void)
{
    umadv_config_t c;

    setenv("RANK", "5", 1);
    setenv("LOCAL_RANK", "1", 1);
    umadv__log_rank_reload();
    log_take();
    load_one("UMADV_POLICY", "lru", &c, &(int){0});
    ok(strncmp(log_take(), "umadv[rank 5]: error: UMADV_POLICY=lru", 38) == 0,
       "RANK set: umadv[rank 5]: error: ...");
    unsetenv("RANK");
    umadv__log_rank_reload();
    load_one("UMADV_POLICY", "lru", &c, &(int){0});
    ok(strncmp(log_take(), "umadv[rank 1]: error: ", 22) == 0, "LOCAL_RANK alone: its number");
    setenv("RANK", "", 1);
    setenv("LOCAL_RANK", "one", 1);
    umadv__log_rank_reload();
    load_one("UMADV_POLICY", "lru", &c, &(int){0});
    ok(strncmp(log_take(), "umadv: error: ", 14) == 0, "no number: no rank in the prefix");
    unsetenv("RANK");
    unsetenv("LOCAL_RANK");
    umadv__log_rank_reload();
    load_one("UMADV_POLICY", "lru", &c, &(int){0});
    ok(strncmp(log_take(), "umadv: error: ", 14) == 0, "neither set: the plain prefix");
}

/* Runs first: the warning about unknown UMADV_* variables comes once
 * per process, at the first load. */
static void test_unknown_variables(void)
{
    umadv_config_t c;
    const char *log;

    env_clear();
    setenv("UMADV_BUDGT", "8G", 1);
    setenv("UMADV_XYZZY", "1", 1);
    log_take();
    is(umadv__config_load(&c), UMADV_OK, "unknown UMADV_* variables are not errors");
    log = log_take();
    ok(strstr(log, "UMADV_BUDGT is not a umadv setting and is ignored; did you mean "
                   "UMADV_BUDGET?") != NULL,
       "a misspelled knob is named with the closest one");
    ok(strstr(log, "UMADV_XYZZY is not a umadv setting and is ignored ('umadv info -c' "
                   "lists them)") != NULL,
       "an unknown variable close to no knob points to the list");
    is(c.budget, 0, "the misspelled budget is not taken");
    umadv__config_load(&c);
    ok(strstr(log_take(), "not a umadv setting") == NULL, "warned once per process");
    unsetenv("UMADV_BUDGT");
    unsetenv("UMADV_XYZZY");
}

int main(void)
{
    log_capture_start();
    plan(110 + 1 + 17 + 10 + 4 + 4);
    test_unknown_variables();
    test_defaults();
    test_sizes();
    test_uints();
    test_enums_bools_strings();
    test_messages();
    test_load_many_and_set();
    test_print();
    test_per_rank_budget();
    test_device_default();
    test_log_rank_prefix();
    log_capture_stop();
    return exit_status();
}
