#!/bin/sh
# TAP: bench/overhead.py without a GPU, over tests/bench/fake_overhead_train.py
# (made-up iteration times): the oracle ratio from the steady states, the
# profiling phase as the iterations before umadv's steady state less as
# many native ones, the warm-up (iteration 0) apart, in native
# iterations, the targets met or missed,
# losses compared, a failed model a row and exit status 1; --repeats'
# medians and --variants' runs. Skipped without python3.
. "${top_srcdir:-.}/tests/tap.sh"
if ! command -v python3 >/dev/null 2>&1; then
    echo "1..0 # SKIP no python3"
    exit 0
fi
fake="$srcdir/tests/bench/fake_overhead_train.py"

python3 "$srcdir/bench/overhead.py" --script "$fake" --models fast,slow,differs --iters 10 \
    --out "$tmp/ok" >"$tmp/ok.table" 2>"$tmp/ok.err"
ok $? "overhead.py runs over the stand-in" || diag "$tmp/ok.err"

# field MODEL KEY: from overhead.json
field() {
    python3 -c '
import json, sys
rows = [r for r in json.load(open(sys.argv[1]))["rows"] if r["model"] == sys.argv[2]]
v = rows[0].get(sys.argv[3]) if rows else "missing"
print(round(v, 6) if isinstance(v, float) else v)' "$tmp/ok/overhead.json" "$@"
}

[ "$(field fast native_ms)" = 10.0 ] && [ "$(field fast oracle_ms)" = 10.3 ] &&
    [ "$(field fast x_native)" = 1.03 ]
ok $? "oracle against native: steady states, 10.3 / 10.0 ms"
# before the steady state, iteration 0 left out: 80+60+3*12 = 176 ms
# against 20+4*10 = 60
[ "$(field fast profile_ms)" = 116.0 ] && [ "$(field fast profile_iters)" = 11.6 ]
ok $? "the profiling phase, the warm-up apart: 116 ms more than native, 11.6 native iterations"
grep -q '^  fast .*1\.030 .* 11\.6 .*yes  missed: profiling$' "$tmp/ok.table" &&
    grep -q '^  slow .*1\.200 .*missed: oracle, profiling$' "$tmp/ok.table"
ok $? "the table says which target each model misses" || diag "$tmp/ok.table"
[ "$(field differs identical)" = False ] && grep -q '^  differs .* NO ' "$tmp/ok.table"
ok $? "losses unlike native's are flagged"
# 116 ms of profiling phase: 40 ending the profile, 5 planning, 1 starting
# the replay, 70 the rest
grep -q '^  fast  *116\.0  *40\.0  *5\.0  *1\.0  *70\.0$' "$tmp/ok.table" &&
    [ "$(field fast phases_ms)" = "{'profile_end': 40.0, 'plan': 5.0, 'replay_start': 1.0}" ]
ok $? "the profiling phase split: umadv's own calls in it, and the rest" || diag "$tmp/ok.table"
# the host's share: native 9.0 of 10.0 ms, oracle 10.0 of 10.3; 540 calls, 0.4 ms
grep -q '^  fast  *10\.0  *9\.0  *10\.3  *10\.0  *540  *0\.40$' "$tmp/ok.table" &&
    [ "$(field fast native_cpu_ms)" = 9.0 ] && [ "$(field fast oracle_cpu_ms)" = 10.0 ] &&
    [ "$(field fast alloc_ms)" = 0.4 ]
ok $? "the host's share: each side's CPU time, oracle's allocation calls and their time" ||
    diag "$tmp/ok.table"
grep -q -- '--both --policies oracle --json' "$tmp/ok/fast.log"
ok $? "each model's command line is logged"

# three runs: ratios 1.03, 1.10, 1.00; native 10, 10, 12; oracle 10.3, 11,
# 12; profiling 11.6, 11.6, (176 - 68) / 12 = 9.0
python3 "$srcdir/bench/overhead.py" --script "$fake" --models fast --iters 10 --repeats 3 \
    --out "$tmp/rep" >"$tmp/rep.table" 2>"$tmp/rep.err"
ok $? "overhead.py --repeats runs over the stand-in" || diag "$tmp/rep.err"
# row0 NAME EXPR: a Python expression over NAME/overhead.json's first row (as r)
row0() {
    python3 -c 'import json, sys; r = json.load(open(sys.argv[1]))["rows"][0]; print(eval(sys.argv[2]))' \
        "$tmp/$1/overhead.json" "$2"
}
[ "$(row0 rep 'r["repeats"], round(r["x_native"], 6), [round(x, 6) for x in r["x_native_range"]]')" = \
    "(3, 1.03, [1.0, 1.1])" ] &&
    [ "$(row0 rep 'r["native_ms"], r["oracle_ms"], round(r["profile_iters"], 6)')" = "(10.0, 11.0, 11.6)" ] &&
    [ "$(row0 rep 'len(r["runs"]), len(r["commands"])')" = "(3, 3)" ] &&
    [ "$(row0 rep 'round(r["alloc_ms"], 6), r["native_cpu_ms"]')" = "(0.8, 9.0)" ] &&
    [ -s "$tmp/rep/fast.json" ] && [ -s "$tmp/rep/fast-2.json" ] && [ -s "$tmp/rep/fast-3.json" ] &&
    grep -q '^  fast  *10\.0  *11\.0  *1\.030  *1\.000-1\.100  *11\.6  *yes' "$tmp/rep.table"
ok $? "--repeats 3: the median of the runs' ratios and their range, medians of times and profiling" ||
    diag "$tmp/rep.table"

# --variants: one process each after every --both run, against its native
# (floor: native through the library built beside --lib's, BUILD/bench/.libs);
# calls 10.8, 10.8, 12.8 ms against native 10, 10, 12: median 10.8 ms, 1.08x
python3 "$srcdir/bench/overhead.py" --script "$fake" --models fast --iters 10 --repeats 3 \
    --lib "$tmp/build/.libs/libumadv.so" \
    --variants calls,calls-nocupti,floor,pool,pool-oracle,plan --out "$tmp/var" >"$tmp/var.table" 2>"$tmp/var.err"
ok $? "overhead.py --variants runs over the stand-in" || diag "$tmp/var.err"
[ "$(row0 var '[(v, round(x["ms"], 3), round(x["x_native"], 3)) for v, x in sorted(r["variants"].items())]')" = \
    "[('calls', 10.8, 1.08), ('calls-nocupti', 10.2, 1.02), ('floor', 10.6, 1.06), ('plan', 10.4, 1.04), ('pool', 10.1, 1.01), ('pool-oracle', 10.5, 1.05)]" ] &&
    [ "$(row0 var '[round(x["variants"]["calls"]["x_native"], 4) for x in r["runs"]]')" = "[1.08, 1.08, 1.0667]" ] &&
    grep -q 'UMADV_PROFILER=0 .*--umadv --no-profile --json .*/fast-calls-nocupti-3.json' \
        "$tmp/var/fast-calls-nocupti-3.log" &&
    grep -q -- '--umadv --policies oracle --alloc pool --json' "$tmp/var/fast-pool-oracle.log" &&
    grep -q -- '--umadv --policies plan --json' "$tmp/var/fast-plan.log" &&
    grep -qF -- "--native --native-alloc $tmp/build/bench/.libs/libfloor_alloc.so --json" \
        "$tmp/var/fast-floor.log" &&
    grep -q '^  fast  *10\.0  *11\.0  *10\.8 (1\.080x)  *10\.2 (1\.020x)  *10\.6 (1\.060x)  *10\.1 (1\.010x)  *10\.5 (1\.050x)  *10\.4 (1\.040x)$' \
        "$tmp/var.table"
ok $? "each variant's time and ratio to the same repeat's native, medians over the repeats" ||
    diag "$tmp/var.table"
python3 "$srcdir/bench/overhead.py" --script "$fake" --models fast --variants calls,nosuch \
    --out "$tmp/vbad" >"$tmp/vbad.out" 2>&1
[ $? -eq 2 ] && grep -q -- "--variants: nosuch: not one of calls" "$tmp/vbad.out"
ok $? "an unknown variant is a usage error naming it" || diag "$tmp/vbad.out"

python3 "$srcdir/bench/overhead.py" --script "$fake" --models fast,broken,killed --iters 10 \
    --out "$tmp/bad" >"$tmp/bad.table" 2>"$tmp/bad.err"
rc=$?
[ $rc -eq 1 ] && grep -q '^  broken *failed: exit 1: torch_train: no such model (see ' "$tmp/bad.table" &&
    grep -q '^  fast ' "$tmp/bad.table"
ok $? "a model that fails is a row saying so, with the last line it wrote on standard error; the others still run, exit status 1"
grep -q '^  killed *failed: killed by SIGKILL (see ' "$tmp/bad.table"
ok $? "a model killed by a signal says which" || diag "$tmp/bad.table"

tap_done
