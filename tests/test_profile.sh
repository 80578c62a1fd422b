#!/bin/sh
# TAP: umadv profile without a GPU (umadv-profile(1)). The program runs
# as under umadv run (arguments as given, exit statuses, 127/126), in
# profile mode: UMADV_PROFILE_OUTPUT names a file beside the output,
# oracle and no budget. Stand-in programs save a shipped trace there, as
# the injection library does after the profiled iteration: the trace is
# put in place and reported; a run that saved none is an error that
# leaves the output alone; an existing output is refused before the
# program runs, and replaced only with --force.
. "${top_srcdir:-.}/tests/tap.sh"
tap_require "$umadv"
inject=$builddir/.libs/libumadv_inject.so
[ -f "$inject" ] || { echo "Bail out! $inject is not built"; exit 1; }
unset UMADV_POLICY UMADV_BUDGET UMADV_MAX_MANAGED UMADV_ROUTE_MALLOC UMADV_RUN_SUMMARY \
    UMADV_INJECT_LIBRARY UMADV_ITERATION_RANGE UMADV_PROFILE_ITERATION UMADV_PROFILE_OUTPUT \
    NVTX_INJECTION64_PATH LD_PRELOAD PYTHONPATH
trace=$srcdir/data/traces/gpt2-bs8.umt

# The library cannot be preloaded into sh under a sanitizer (test_run.sh).
np=""
if nm -D "$inject" 2>/dev/null | grep -q '__asan'; then
    np=--no-preload
fi

# profile NAME ARGS...: umadv profile ARGS in $tmp; NAME.out, .err, .rc
profile() {
    name=$1
    shift
    (cd "$tmp" && "$umadv" profile $np -q "$@") >"$tmp/$name.out" 2>"$tmp/$name.err"
    echo $? >"$tmp/$name.rc"
}

# A program that does what the library does in profile mode.
saver="cp '$trace' \"\$UMADV_PROFILE_OUTPUT\""

# ---- a profile saved ----

profile saved -o out.umt -- sh -c "$saver; printf '[%s]\n' \"\$0\" \"\$@\" >&2; exit 0" \
    prog "a b" "" --budget
[ "$(rc_of saved)" -eq 0 ] && cmp -s "$trace" "$tmp/out.umt" &&
    grep -q '^advice (simulated):' "$tmp/saved.out" &&
    grep -q 'umadv run --budget .* --policy plan -- sh$' "$tmp/saved.out"
ok $? "the saved trace is put at -o and reported, with the command that applies the advice" ||
    diag "$tmp/saved.err"
printf '[%s]\n' prog "a b" "" --budget >"$tmp/args.want"
cmp -s "$tmp/args.want" "$tmp/saved.err"
ok $? "arguments reach the program as given" || diag "$tmp/saved.err"
! ls "$tmp" | grep -q '\.profile\.'
ok $? "no temporary file is left beside the output"

profile env --iteration 3 -o env.umt -- sh -c "$saver; echo \"\$UMADV_PROFILE_OUTPUT \$UMADV_POLICY \$UMADV_BUDGET \$UMADV_PROFILE_ITERATION\" >&2"
case "$(cat "$tmp/env.err")" in
"$tmp/env.umt.profile."*" oracle 0 3") true ;;
*) false ;;
esac
ok $? "profile mode: a file beside the output, oracle, no budget, --iteration" ||
    diag "$tmp/env.err"

record='umadv-run-summary 1
pid 7
policy oracle
budget 0
iterations 4
ms_per_iteration 2.5
plan none
profile saved
end'
(cd "$tmp" && "$umadv" profile $np -o summary.umt -- sh -c "$saver; printf '%s\n' '$record' >>\"\$UMADV_RUN_SUMMARY\"") \
    >"$tmp/summary.out" 2>"$tmp/summary.err"
grep -q '^umadv profile: sh (pid 7): policy oracle, budget none' "$tmp/summary.err" &&
    grep -q 'iterations 4, 2.500 ms/iteration; profile: saved$' "$tmp/summary.err"
ok $? "the run summary, as umadv run prints it, says the profile was saved" ||
    diag "$tmp/summary.err"

window=$(printf '%s\n' "$record" | sed 's/^plan none$/profile_window_ms 1500.25\nplan none/')
(cd "$tmp" && "$umadv" profile $np -o window.umt -- sh -c "$saver; printf '%s\n' '$window' >>\"\$UMADV_RUN_SUMMARY\"") \
    >"$tmp/window.out" 2>"$tmp/window.err"
grep -q '^  profiled a window of 1.500 s (--seconds); profile: saved$' "$tmp/window.err" &&
    ! grep -q 'ms/iteration' "$tmp/window.err"
ok $? "a --seconds window is summarised as its time, not as iterations" ||
    diag "$tmp/window.err"

profile status -o status.umt -- sh -c "$saver; exit 5"
[ "$(rc_of status)" -eq 5 ] && [ -s "$tmp/status.umt" ] && grep -q '^advice' "$tmp/status.out"
ok $? "the program's exit status comes back (5), after the report"

profile json -o json.umt --json report.json --top 2 -- sh -c "$saver"
[ "$(rc_of json)" -eq 0 ] && grep -q '"command": "umadv run --budget .* -- sh"' "$tmp/report.json" &&
    grep -q 'top 2 of' "$tmp/json.out"
ok $? "--json FILE gets the report as JSON, --top shortens the lists"

# ---- no profile ----

profile none -o none.umt -- true
check_fails none 1 "saved no profile" "a program that ends before the profiled iteration"
[ ! -e "$tmp/none.umt" ] && ! ls "$tmp" | grep -q 'none\.umt\.profile'
ok $? "it leaves no output and no temporary file"
profile nonefail -o none.umt -- sh -c 'exit 4'
check_fails nonefail 4 "saved no profile" "no profile from a program that failed: its status"

# ---- existing outputs ----

echo keep >"$tmp/old.umt"
profile exists -o old.umt -- sh -c "touch '$tmp/ran'; $saver"
check_fails exists 1 "old.umt exists" "an existing -o file"
[ "$(cat "$tmp/old.umt")" = keep ] && [ ! -e "$tmp/ran" ]
ok $? "it is refused before the program runs, and left as it was"
cp "$trace" "$tmp/umadv-profile.umt"
profile default -- sh -c "touch '$tmp/ran'; $saver"
check_fails default 1 "umadv-profile.umt exists" "the default output, existing"
profile force -f -o old.umt -- sh -c "$saver"
[ "$(rc_of force)" -eq 0 ] && cmp -s "$trace" "$tmp/old.umt"
ok $? "--force replaces it"
echo keep >"$tmp/target.umt"
ln -s target.umt "$tmp/link.umt"
profile link --force -o link.umt -- sh -c "$saver"
[ "$(rc_of link)" -eq 0 ] && [ -L "$tmp/link.umt" ] && cmp -s "$trace" "$tmp/target.umt"
ok $? "a symbolic link is followed: the file it names is replaced, the link stays"

# ---- errors before the program runs ----

profile dash -o - -- true
check_fails dash 2 "-o needs a file" "-o -"
profile nodir -o no/such/dir.umt -- true
check_fails nodir 1 "cannot create a file beside" "-o in a folder that does not exist"
profile missing -o m.umt -- umadv-no-such-program-here
check_fails missing 127 "umadv profile: umadv-no-such-program-here: command not found" \
    "a program not in PATH"
profile badit --iteration x -- true
check_fails badit 2 "--iteration" "a bad --iteration"
profile noprog
check_fails noprog 2 "needs a program" "no program"
! ls "$tmp" | grep -q '\.profile\.'
ok $? "no temporary file is left by any of them"

tap_done
