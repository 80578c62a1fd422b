#!/bin/sh
# TAP: bench/evict_channels without a GPU. The benchmark itself runs only
# on the GPU machine, by hand (bench/RESULTS.md); here, with every GPU
# hidden (CUDA_VISIBLE_DEVICES empty, so this holds on a GPU machine too),
# it must skip with 77 and leave no JSON file behind, and every bad option
# must fail with 2 before any GPU work: the one run on the GPU must not
# die of a typo after minutes.
. "${top_srcdir:-.}/tests/tap.sh"
bench=$builddir/bench/evict_channels
tap_require "$bench"

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

tap_done
