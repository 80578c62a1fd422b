#!/bin/sh
# TAP: no output path of the umadv command ever destroys a file (issue 9,
# "files destroyed or damaged", items 1-8; umadv(1) OUTPUT FILES). A
# regular file is replaced only after success and is otherwise left
# byte-identical with no temporary file beside it; devices, FIFOs and
# descriptors are streams that stay what they were; an output or a log
# file that is an input is refused before anything is written.
#
# As root, device nodes are made here with mknod, never the system's: a
# bug must not delete /dev/full (nor replace /dev/stdout).
. "${top_srcdir:-.}/tests/tap.sh"
tap_require "$umadv"

trace=$tmp/in.umt
cp "$srcdir/data/traces/vgg16-bs256.umt" "$trace" || exit 1
cp "$trace" "$tmp/in.orig"
good_budget=16G # plans vgg16-bs256
bad_budget=8G   # its largest step does not fit: the run fails after the timeline opened

# run NAME ARGS...: umadv ARGS; stdout, stderr and the exit status land in
# $tmp/NAME.{out,err,rc}.
run() {
    name=$1
    shift
    "$umadv" "$@" >"$tmp/$name.out" 2>"$tmp/$name.err"
    echo $? >"$tmp/$name.rc"
}

# run_env NAME VAR=VALUE... UMADV ARGS...: the same, under an environment.
run_env() {
    name=$1
    shift
    env "$@" >"$tmp/$name.out" 2>"$tmp/$name.err"
    echo $? >"$tmp/$name.rc"
}

skip() { # DESCRIPTION REASON
    n=$((n + 1))
    echo "ok $n - $1 # SKIP $2"
}

# no_temps DIR: no PATH.tmp.XXXXXX left in DIR.
no_temps() {
    ! ls -a "$1" | grep -q '\.tmp\.'
}

# stderr_has NAME TEXT: run NAME's stderr holds TEXT (a fixed string).
stderr_has() {
    grep -q -F -e "$2" "$tmp/$1.err"
}

# died_of_signal NAME: run NAME was killed (exit status above 128).
died_of_signal() {
    [ "$(rc_of "$1")" -gt 128 ]
}

# reap PID: wait up to 5 s for a FIFO reader, then stop it (a writer that
# never came, or replaced the FIFO, would leave it blocked for ever).
reap() {
    i=0
    while kill -0 "$1" 2>/dev/null && [ $i -lt 50 ]; do
        sleep 0.1
        i=$((i + 1))
    done
    kill "$1" 2>/dev/null
    wait "$1" 2>/dev/null
}

# device NAME MAJOR MINOR SYSTEM: a character device to write onto. As
# root, one made here (mknod), never the system's; otherwise the system's
# SYSTEM, which a process that is not root cannot delete. Empty: none
# (a folder on a file system mounted nodev).
device() {
    if [ "$(id -u)" -ne 0 ]; then
        echo "$4"
    elif mknod "$tmp/$1" c "$2" "$3" 2>/dev/null && { : >"$tmp/$1"; } 2>/dev/null; then
        echo "$tmp/$1"
    else
        rm -f "$tmp/$1"
    fi
}
full=$(device full 1 7 /dev/full)
null=$(device null 1 3 /dev/null)

# ---- 1. --timeline onto a full device: an error, the node stays ----------
if [ -n "$full" ]; then
    run tl-full plan "$trace" --budget $good_budget --timeline "$full"
    [ "$(rc_of tl-full)" -eq 1 ] && stderr_has tl-full "$full: No space left on device" &&
        [ -c "$full" ]
    ok $? "1. --timeline onto a full device fails with ENOSPC and keeps the device node" ||
        diag "$tmp/tl-full.err"
else
    skip "1. --timeline onto a full device keeps the device node" "no usable device node here"
fi

# ---- 2. a failing plan with a device or FIFO timeline keeps it -----------
if [ -n "$null" ]; then
    run tl-null-fail plan "$trace" --budget $bad_budget --timeline "$null"
    [ "$(rc_of tl-null-fail)" -eq 1 ] && [ -c "$null" ]
    ok $? "2. a failing plan keeps its --timeline device node" || diag "$tmp/tl-null-fail.err"
else
    skip "2. a failing plan keeps its --timeline device node" "no usable device node here"
fi
mkfifo "$tmp/tl.fifo"
cat "$tmp/tl.fifo" >"$tmp/tl.fifo.got" &
reader=$!
run tl-fifo-fail plan "$trace" --budget $bad_budget --timeline "$tmp/tl.fifo"
reap "$reader"
[ "$(rc_of tl-fifo-fail)" -eq 1 ] && [ -p "$tmp/tl.fifo" ]
ok $? "2. a failing plan keeps its --timeline FIFO" || diag "$tmp/tl-fifo-fail.err"

# ---- 3. synth -o onto a device, a descriptor, a FIFO ----------------------
run synth-file synth vgg16 -o "$tmp/want.umt"
if [ -n "$null" ]; then
    run synth-null synth vgg16 -o "$null"
    [ "$(rc_of synth-null)" -eq 0 ] && [ -c "$null" ]
    ok $? "3. synth -o onto a device node writes into it and keeps it" ||
        diag "$tmp/synth-null.err"
else
    skip "3. synth -o onto a device node keeps it" "no usable device node here"
fi
"$umadv" synth vgg16 -o /proc/self/fd/1 2>"$tmp/synth-fd.err" | cat >"$tmp/synth-fd.out"
cmp -s "$tmp/synth-fd.out" "$tmp/want.umt" && [ ! -s "$tmp/synth-fd.err" ]
ok $? "3. synth -o /proc/self/fd/1 onto a pipe writes the trace into the pipe" ||
    diag "$tmp/synth-fd.err"
# Never /dev/stdout itself: code that replaces a link would replace the
# system's (as root). A link of our own to /proc/self/fd/1 is the same.
ln -s /proc/self/fd/1 "$tmp/stdout"
echo "kept line" >"$tmp/appended"
"$umadv" synth vgg16 -o "$tmp/stdout" >>"$tmp/appended" 2>"$tmp/synth-append.err"
{ echo "kept line"; cat "$tmp/want.umt"; } >"$tmp/appended.want"
cmp -s "$tmp/appended" "$tmp/appended.want" && [ -L "$tmp/stdout" ]
ok $? "3. synth -o a link to /proc/self/fd/1 >> FILE appends, like the shell's >>" ||
    diag "$tmp/synth-append.err"
mkfifo "$tmp/synth.fifo"
cat "$tmp/synth.fifo" >"$tmp/synth.fifo.got" &
reader=$!
run synth-fifo synth vgg16 -o "$tmp/synth.fifo"
reap "$reader"
[ "$(rc_of synth-fifo)" -eq 0 ] && [ -p "$tmp/synth.fifo" ] &&
    cmp -s "$tmp/synth.fifo.got" "$tmp/want.umt"
ok $? "3. synth -o onto a FIFO writes the trace through it and keeps the FIFO" ||
    diag "$tmp/synth-fifo.err"

# ---- 4. an earlier good timeline survives a later failing run -------------
run tl-good plan "$trace" --budget $good_budget --timeline "$tmp/tl.json"
cp "$tmp/tl.json" "$tmp/tl.json.orig"
run tl-fail plan "$trace" --budget $bad_budget --timeline "$tmp/tl.json"
[ "$(rc_of tl-good)" -eq 0 ] && [ "$(rc_of tl-fail)" -eq 1 ] &&
    cmp -s "$tmp/tl.json" "$tmp/tl.json.orig" && no_temps "$tmp"
ok $? "4. a failing plan leaves the earlier timeline byte-identical, no temporary file" ||
    diag "$tmp/tl-fail.err"
chmod 600 "$tmp/tl.json"
run tl-mode plan "$trace" --budget $good_budget --timeline "$tmp/tl.json"
[ "$(rc_of tl-mode)" -eq 0 ] && [ "$(stat -c %a "$tmp/tl.json")" = 600 ]
ok $? "4. a replaced timeline keeps its mode (600)"
rm -f "$tmp/new.json"
(umask 027 && "$umadv" plan "$trace" --budget $good_budget --timeline "$tmp/new.json" \
    >/dev/null 2>&1)
[ "$(stat -c %a "$tmp/new.json")" = 640 ]
ok $? "4. a new timeline is created with 0666 less the umask (027: 640)"
(umask 077 && "$umadv" synth vgg16 -o "$tmp/private.umt" 2>/dev/null)
[ "$(stat -c %a "$tmp/private.umt")" = 600 ]
ok $? "a new trace is created with 0666 less the umask (077: 600)"

# ---- 5. --timeline naming the input trace is refused ----------------------
run tl-input plan "$trace" --budget $good_budget --timeline "$trace"
[ "$(rc_of tl-input)" -eq 1 ] && cmp -s "$trace" "$tmp/in.orig" &&
    stderr_has tl-input "refusing to write the timeline $trace: it is the input $trace"
ok $? "5. --timeline naming the input trace is refused, the trace unchanged" ||
    diag "$tmp/tl-input.err"
ln -s "$trace" "$tmp/link-to-input"
run tl-input-link plan "$trace" --budget $good_budget --timeline "$tmp/link-to-input"
[ "$(rc_of tl-input-link)" -eq 1 ] && cmp -s "$trace" "$tmp/in.orig" && [ -L "$tmp/link-to-input" ] &&
    stderr_has tl-input-link "it is the input $trace"
ok $? "5. --timeline through a symbolic link to the input trace is refused" ||
    diag "$tmp/tl-input-link.err"

# A symbolic link to another regular file replaces what it points to.
cp "$tmp/tl.json.orig" "$tmp/pointed.json"
ln -s pointed.json "$tmp/link.json"
run tl-link plan "$trace" --budget $good_budget --policy oracle --timeline "$tmp/link.json"
[ "$(rc_of tl-link)" -eq 0 ] && [ -L "$tmp/link.json" ] &&
    ! cmp -s "$tmp/pointed.json" "$tmp/tl.json.orig" && no_temps "$tmp"
ok $? "a --timeline symbolic link stays; the file it points to is replaced" ||
    diag "$tmp/tl-link.err"
ln -s no-such-file.json "$tmp/dangling.json"
run tl-dangling plan "$trace" --budget $good_budget --timeline "$tmp/dangling.json"
[ "$(rc_of tl-dangling)" -eq 1 ] && [ -L "$tmp/dangling.json" ] &&
    [ ! -e "$tmp/no-such-file.json" ] && stderr_has tl-dangling "symbolic link to a missing file"
ok $? "a --timeline symbolic link to nothing is refused" || diag "$tmp/tl-dangling.err"

# ---- 6. killed mid-write (file size limit): the old timeline stays ---------
# ulimit -f counts 512- or 1024-byte blocks: 40 is far below a timeline.
cp "$tmp/tl.json.orig" "$tmp/tl6.json"
(ulimit -c 0 && ulimit -f 40 && exec "$umadv" plan "$trace" --budget $good_budget --timeline "$tmp/tl6.json") \
    >/dev/null 2>"$tmp/tl-limit.err"
echo $? >"$tmp/tl-limit.rc"
died_of_signal tl-limit && cmp -s "$tmp/tl6.json" "$tmp/tl.json.orig" && no_temps "$tmp"
ok $? "6. plan killed by a file size limit leaves the old timeline intact, no temporary" ||
    { echo "#   exit status $(rc_of tl-limit)"; ls "$tmp" | sed 's/^/# /'; }

# ---- 7. synth killed mid-write leaves no temporary file -------------------
mkdir "$tmp/synth7"
echo "old trace" >"$tmp/synth7/t.umt"
(ulimit -c 0 && ulimit -f 10 && exec "$umadv" synth vgg16 -o "$tmp/synth7/t.umt") \
    >/dev/null 2>"$tmp/synth-limit.err"
echo $? >"$tmp/synth-limit.rc"
died_of_signal synth-limit && [ "$(cat "$tmp/synth7/t.umt")" = "old trace" ] &&
    no_temps "$tmp/synth7"
ok $? "7. synth killed by a file size limit leaves the old file and no temporary" ||
    { echo "#   exit status $(rc_of synth-limit)"; ls "$tmp/synth7" | sed 's/^/# /'; }

# ---- 8. the log file naming the input trace is refused ---------------------
run_env log-input UMADV_LOG=debug "UMADV_LOG_FILE=$trace" "$umadv" plan "$trace" \
    --budget $bad_budget
[ "$(rc_of log-input)" -eq 1 ] && cmp -s "$trace" "$tmp/in.orig" &&
    stderr_has log-input "UMADV_LOG_FILE=$trace is the input $trace"
ok $? "8. UMADV_LOG_FILE naming the input trace is refused, the trace unchanged" ||
    diag "$tmp/log-input.err"
run_env log-input-report UMADV_LOG=debug "UMADV_LOG_FILE=$tmp/link-to-input" "$umadv" \
    report "$trace"
[ "$(rc_of log-input-report)" -eq 1 ] && cmp -s "$trace" "$tmp/in.orig" &&
    stderr_has log-input-report "is the input $trace"
ok $? "8. report: a log file linked to the input is refused" || diag "$tmp/log-input-report.err"
run_env tl-is-log "UMADV_LOG_FILE=$tmp/run.log" "$umadv" plan "$trace" \
    --budget $good_budget --timeline "$tmp/run.log"
[ "$(rc_of tl-is-log)" -eq 1 ] && stderr_has tl-is-log "it is the log file"
ok $? "an output naming the log file is refused" || diag "$tmp/tl-is-log.err"

"$umadv" report "$trace" >>"$trace" 2>"$tmp/report-append.err"
[ $? -eq 1 ] && cmp -s "$trace" "$tmp/in.orig" &&
    stderr_has report-append "standard output is the input $trace"
ok $? "report TRACE >> TRACE is refused, the trace unchanged" || diag "$tmp/report-append.err"

# ---- the log on a full device is not lost without a word ------------------
if [ -n "$full" ]; then
    run_env log-full "UMADV_LOG_FILE=$full" "$umadv" plan "$trace" --budget $bad_budget
    [ "$(rc_of log-full)" -eq 1 ] &&
        stderr_has log-full "cannot write the log file UMADV_LOG_FILE=$full: No space left on device" &&
        stderr_has log-full "touches" && [ -c "$full" ]
    ok $? "UMADV_LOG_FILE onto a full device: the error is reported, the message goes to stderr" ||
        diag "$tmp/log-full.err"
    [ "$(grep -c 'cannot write the log file' "$tmp/log-full.err")" -eq 1 ]
    ok $? "the log file's error is reported once"
else
    skip "UMADV_LOG_FILE onto a full device: the error is reported" "no usable device node here"
    skip "the log file's error is reported once" "no usable device node here"
fi

# Standard output on a full device is an error too.
"$umadv" synth vgg16 -o - >/dev/full 2>"$tmp/synth-stdout-full.err"
[ $? -eq 1 ] && stderr_has synth-stdout-full "standard output: No space left on device"
ok $? "synth -o - onto a full standard output fails with ENOSPC" ||
    diag "$tmp/synth-stdout-full.err"

no_temps "$tmp"
ok $? "no temporary file anywhere"

tap_done
