#!/bin/sh
# TAP: bench/evict_channels without a GPU. The benchmark itself runs only
# on the GPU machine, by hand (bench/RESULTS.md); here, with every GPU
# hidden (CUDA_VISIBLE_DEVICES empty, so this holds on a GPU machine too),
# it must skip with 77 and leave no JSON file behind, and every bad option
# must fail with 2 before any GPU work: the one run on the GPU must not
# die of a typo after minutes. Then the same source over a CPU stand-in
# for its CUDA calls and kernels (tests/evict_channels_cudart_mock.c),
# run whole: every row measured and checked, the table last, the JSON
# complete; a lost bit makes the rows of its channel FAILED and the exit
# status 1; an unsupported call makes its rows ERROR, and the duplex
# restore falls back to the other restore. No timing is asserted.
. "${top_srcdir:-.}/tests/tap.sh"
bench=$builddir/bench/evict_channels
mock=$builddir/tests/evict_channels_mock
tap_require "$bench"
tap_require "$mock"

# run NAME ARGS...: the benchmark with no GPU visible; stdout, stderr and
# the exit status land in $tmp/NAME.{out,err,rc}.
run() {
    name=$1
    shift
    CUDA_VISIBLE_DEVICES= "$bench" "$@" >"$tmp/$name.out" 2>"$tmp/$name.err"
    echo $? >"$tmp/$name.rc"
}

run skip
[ "$(rc_of skip)" -eq 77 ] && grep -q 'no CUDA device (cudaGetDeviceCount: .*): skipped' "$tmp/skip.err" &&
    [ ! -s "$tmp/skip.out" ]
ok $? "without a GPU it skips with 77" || diag "$tmp/skip.err"

mkdir "$tmp/json" || exit 1
run skip_json --json "$tmp/json/out.json" --call 2M,64M,1G --repeat 2 --size 1G
[ "$(rc_of skip_json)" -eq 77 ] && [ -z "$(ls -A "$tmp/json")" ]
ok $? "a skipped run leaves neither the JSON file nor its temporary" || diag "$tmp/skip_json.err"

run nodir --json "$tmp/missing/out.json"
check_fails nodir 2 "cannot create" "a JSON path that cannot be written"

run page --call 2M,3000
check_fails page 2 "--call 3000 is not a whole number of CPU pages" "a call size not in whole pages"

run many --call 4K,8K,12K,16K,20K,24K,28K,32K,36K
check_fails many 2 "up to 8 sizes" "more than 8 call sizes"

run empty --call 2M,,64M
check_fails empty 2 "invalid --call" "an empty call size"

run size --size lots
check_fails size 2 "invalid size 'lots'" "a malformed --size"

run zero --repeat 0
check_fails zero 2 "invalid --repeat '0'" "--repeat 0"

run word --repeat 3x
check_fails word 2 "invalid --repeat '3x'" "--repeat with trailing junk"

run unknown --threads 4
check_fails unknown 2 "unknown option '--threads'" "an unknown option"

run novalue --size
check_fails novalue 2 "--size takes a value" "an option without its value"

run help --help
[ "$(rc_of help)" -eq 0 ] && grep -q '^usage: evict_channels' "$tmp/help.out"
ok $? "--help prints the usage and exits 0"

# mock NAME VAR=VALUE... -- ARGS...: the program over the stand-in.
mock() {
    name=$1
    shift
    env_args=
    while [ "$1" != "--" ]; do
        env_args="$env_args $1"
        shift
    done
    shift
    # shellcheck disable=SC2086
    env $env_args "$mock" "$@" >"$tmp/$name.out" 2>"$tmp/$name.err"
    echo $? >"$tmp/$name.rc"
}

# table_row NAME CHANNEL CALL: the table's line for CHANNEL at CALL ("2 MiB").
table_row() {
    grep -E "^$2 +$3 " "$tmp/$1.out"
}

small="--size 16M --call 2M,4M --repeat 2"
# shellcheck disable=SC2086
mock clean MOCK_NONE=1 -- $small --json "$tmp/clean.json"
[ "$(rc_of clean)" -eq 0 ] && [ ! -s "$tmp/clean.err" ] &&
    [ "$(grep -c ' ok ' "$tmp/clean.out")" -eq 28 ] &&
    tail -n 1 "$tmp/clean.out" | grep -q '^duplex-uvm-both  *4 MiB .* ok '
ok $? "over the stand-in: 14 channels at 2 call sizes, all ok, the table last" ||
    diag "$tmp/clean.out" 60

table_row clean staged-evict "2 MiB" | grep -q 'copy [0-9.]* GB/s, discard [0-9.]* ms$' &&
    table_row clean restore-dp "2 MiB" | grep -q 'discard-prefetch [0-9.]* ms, copy [0-9.]* GB/s, check' &&
    table_row clean duplex-staged-in "4 MiB" | grep -q 'via restore-\(dp\|prefetch\): '
ok $? "the details: staged-evict's copy and discard, a restore's phases, the duplex restore used"

grep -q '^probe: the discarded range still read its old bytes in 0 of 2097152 words' "$tmp/clean.out"
ok $? "the probe sees a discarded range lose its bytes" || diag "$tmp/clean.out"

if command -v python3 >/dev/null 2>&1; then
    python3 - "$tmp/clean.json" >"$tmp/json.err" 2>&1 <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["device"] == 'Mock "GPU"\\1', d["device"]
assert d["size"] == 16 << 20 and d["half"] == 8 << 20 and d["repeat"] == 2
assert d["failed"] is False and d["probe"]["ok"] is True
assert len(d["warm_up"]) == 14 and all(r["call"] == 4 << 20 for r in d["warm_up"])
rows = d["rows"]
assert len(rows) == 28 and [r["call"] for r in rows] == [2 << 20] * 14 + [4 << 20] * 14
for r in rows:
    assert r["status"] == "ok" and r["error"] is None and r["mismatches"] == 0, r
    # staged-evict runs before each of the three restores: 3 samples a repeat
    n = 6 if r["channel"] == "staged-evict" else 2
    assert len(r["samples_s"]) == n and r["best_s"] == min(r["samples_s"]), r
    assert r["gbps"] > 0 and abs(r["gbps"] - r["bytes"] / r["best_s"] / 1e9) < 1e-3 * r["gbps"], r
half = {"duplex-staged-out", "duplex-staged-in", "duplex-uvm-out", "duplex-uvm-in"}
for r in rows:
    assert r["bytes"] == (8 << 20 if r["channel"] in half else 16 << 20), r
    if r["channel"].startswith("duplex-staged"):
        assert r["restore"] in ("restore-dp", "restore-prefetch"), r
    if r["channel"] == "staged-evict":
        assert [p["op"] for p in r["phases"]] == ["copy", "discard"], r
        assert abs(sum(p["s"] for p in r["phases"]) - r["best_s"]) < 1e-9, r
PY
    ok $? "the JSON holds every row, its samples, phases and restore" || diag "$tmp/json.err"
else
    ok 0 "the JSON holds every row # SKIP no python3"
fi

# shellcheck disable=SC2086
mock lose MOCK_LOSE_COPY_IN=1 -- $small
[ "$(rc_of lose)" -eq 1 ] &&
    [ "$(grep -c ' FAILED ' "$tmp/lose.out")" -eq 9 ] &&
    [ "$(grep -c '^warm-up: duplex-staged-.* FAILED' "$tmp/lose.out")" -eq 3 ] &&
    table_row lose duplex-staged-in "2 MiB" | grep -q 'FAILED .*words wrong' &&
    table_row lose restore-copy "2 MiB" | grep -q ' ok '
ok $? "a bit lost in the duplex restore: its rows FAILED (warm-up too), the rest ok, exit 1" ||
    diag "$tmp/lose.out" 60

# shellcheck disable=SC2086
mock unsupported MOCK_NO_DP=1 MOCK_NO_BATCH=1 -- $small
[ "$(rc_of unsupported)" -eq 1 ] &&
    table_row unsupported restore-dp "2 MiB" |
        grep -q 'ERROR .*cudaMemDiscardAndPrefetchBatchAsync: operation not supported' &&
    table_row unsupported uvm-fetch-batch "4 MiB" | grep -q 'ERROR .*not run: uvm-evict-batch failed' &&
    table_row unsupported duplex-staged-in "2 MiB" | grep -q ' ok .*via restore-prefetch: ' &&
    grep -q 'cudaMemPrefetchBatchAsync: operation not supported' "$tmp/unsupported.err"
ok $? "unsupported calls: their rows ERROR with the call named, duplex falls back, exit 1" ||
    diag "$tmp/unsupported.out" 60

mock quarter MOCK_NONE=1 -- --size 1G --call 64M --repeat 1
[ "$(rc_of quarter)" -eq 0 ] &&
    grep -q '^evict_channels: measuring 0.25 GiB (--size 1073741824, a quarter of 1.00 GiB free' \
        "$tmp/quarter.out"
ok $? "never more than a quarter of the free GPU memory" || diag "$tmp/quarter.out"

tap_done
