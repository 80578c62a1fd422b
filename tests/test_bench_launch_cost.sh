#!/bin/sh
# TAP: bench/launch_cost refuses bad options with a usage error; on a GPU
# it prints a row per setting with a measured time, the callbacks rows
# counting callbacks (or saying CUPTI refused), then the launches beside
# each call by the call they met; without one it says so and exits 77 (a
# skip here, never a pass).
. "${top_srcdir:-.}/tests/tap.sh"

bench="$builddir/bench/launch_cost"
tap_require "$bench"

"$bench" --repeat 0 >"$tmp/bad" 2>&1
[ $? -eq 2 ] && grep -q "invalid --repeat '0'" "$tmp/bad" && grep -q "usage: launch_cost" "$tmp/bad"
ok $? "--repeat 0: a usage error naming the option" || diag "$tmp/bad"

"$bench" --launches 12x >"$tmp/bad" 2>&1
[ $? -eq 2 ] && grep -q "invalid --launches '12x'" "$tmp/bad"
ok $? "--launches 12x: a usage error naming the option" || diag "$tmp/bad"

"$bench" --settings plain,nope >"$tmp/bad" 2>&1
[ $? -eq 2 ] && grep -q "unknown setting 'nope'" "$tmp/bad"
ok $? "--settings with an unknown key: a usage error naming it" || diag "$tmp/bad"

"$bench" --settings cupti,idle >"$tmp/bad" 2>&1
[ $? -eq 2 ] && grep -q "setting 'idle' comes after a CUPTI one" "$tmp/bad"
ok $? "--settings with a setting after a CUPTI one: a usage error" || diag "$tmp/bad"

"$bench" --settings idle,idle >"$tmp/bad" 2>&1
[ $? -eq 2 ] && grep -q "setting 'idle' given twice" "$tmp/bad"
ok $? "--settings with a key twice: a usage error" || diag "$tmp/bad"

"$bench" --work nope >"$tmp/bad" 2>&1
[ $? -eq 2 ] && grep -q "invalid --work 'nope' (launch, cpu, mmap or api)" "$tmp/bad"
ok $? "--work with an unknown kind: a usage error naming it" || diag "$tmp/bad"

"$bench" --lane-context mine >"$tmp/bad" 2>&1
[ $? -eq 2 ] && grep -q "invalid --lane-context 'mine' (shared or own)" "$tmp/bad"
ok $? "--lane-context mine: a usage error naming it" || diag "$tmp/bad"

"$bench" --size 8M --launches 1024 --repeat 3 >"$tmp/out" 2>"$tmp/err"
status=$?
if tap_bench_ran $status; then
    # 17 settings: a time above 0 each, or CUPTI's refusal for its rows
    awk '/^(plain|\+|beside|CUPTI)/ { n++; t = $(NF-4); if ($0 !~ /CUPTI refused/ && !(t + 0 > 0)) bad = 1 }
         END { exit n != 17 || bad }' "$tmp/out"
    ok $? "a measured row per setting" || diag "$tmp/out"
    # with runtime callbacks on, at least the entry and exit of each launch
    awk '/^\+ runtime launch callbacks/ && !/CUPTI refused/ { if (!($(NF-2) >= 2)) bad = 1 }
         END { exit bad }' "$tmp/out"
    ok $? "the runtime callbacks row counts two or more callbacks a launch" || diag "$tmp/out"
    # per beside setting, its launches by the call they met, with a count each
    awk '/^launches beside the other thread/ { on = 1; next }
         on && /^  beside: / { n++; if ($0 !~ /[0-9]+, [0-9.]+ us;/) bad = 1 }
         END { exit n != 12 || bad }' "$tmp/out"
    ok $? "the launches beside each of the 12 calls, by the call they met" || diag "$tmp/out"
    # settings alone, in the order given
    "$bench" --launches 512 --repeat 1 --settings idle,cupti-runtime >"$tmp/one" 2>"$tmp/err"
    awk '/^(plain|\+|beside|CUPTI)/ { n++; rows = rows $0 "\n" }
         END { exit n != 2 || rows !~ /^beside: a thread that sleeps/ }' "$tmp/one" &&
        grep -q "^+ runtime launch callbacks" "$tmp/one"
    ok $? "--settings runs those settings alone, in its order" || diag "$tmp/one"
    # host work timed in place of the launches, beside the other thread's calls
    for work in cpu mmap api; do
        "$bench" --work $work --launches 512 --repeat 1 --settings plain,copy-out \
            >"$tmp/work" 2>"$tmp/err"
        grep -q "^timed in place of each launch: a unit of $work work" "$tmp/work" &&
            awk '/^(plain|beside)/ { n++; t = $(NF-4); if (!(t + 0 > 0)) bad = 1 }
                 END { exit n != 2 || bad }' "$tmp/work"
        ok $? "--work $work: a unit of $work work timed in each setting" || diag "$tmp/work"
    done
    # the other thread's calls from a context of its own, every kind of call
    "$bench" --launches 512 --repeat 1 --lane-context own \
        --settings plain,copy-out,copy-in,discard-prefetch,evict,pin >"$tmp/own" 2>"$tmp/err"
    grep -q "^the other thread's calls in a CUDA context of their own" "$tmp/own" &&
        awk '/^(plain|beside)/ { n++; t = $(NF-4); if (!(t + 0 > 0)) bad = 1 }
             END { exit n != 6 || bad }' "$tmp/own"
    ok $? "--lane-context own: the calls made from a context of their own" ||
        { diag "$tmp/own"; diag "$tmp/err"; }
fi

tap_done
