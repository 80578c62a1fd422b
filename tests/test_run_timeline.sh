#!/bin/sh
# TAP: umadv run --timeline FILE without a GPU: the program gets
# UMADV_TIMELINE as an absolute path (it may change its directory); an
# existing file is refused before the program runs unless --force, as
# umadv profile refuses its outputs; a folder, a path in no folder and
# "-" are refused. What the library writes at exit: test_run_timeline.c.
. "${top_srcdir:-.}/tests/tap.sh"
tap_require "$umadv"
unset UMADV_TIMELINE UMADV_RUN_SUMMARY

cat >"$tmp/show.sh" <<'EOF'
#!/bin/sh
echo "timeline=${UMADV_TIMELINE:-unset}"
EOF
chmod +x "$tmp/show.sh"

run() { # NAME ARGS...: umadv run -q --no-preload ARGS, in $tmp
    name=$1
    shift
    (cd "$tmp" && "$umadv" run -q --no-preload "$@") >"$tmp/$name.out" 2>"$tmp/$name.err"
    echo $? >"$tmp/$name.rc"
}

run relative --timeline t.json -- ./show.sh
[ "$(rc_of relative)" -eq 0 ] && [ "$(cat "$tmp/relative.out")" = "timeline=$tmp/t.json" ]
ok $? "--timeline: the program's UMADV_TIMELINE is the file's absolute path" ||
    { diag "$tmp/relative.out"; diag "$tmp/relative.err"; }

run none -- ./show.sh
[ "$(cat "$tmp/none.out")" = "timeline=unset" ]
ok $? "without --timeline, none" || diag "$tmp/none.out"

echo old >"$tmp/old.json"
run exists --timeline old.json -- ./show.sh
[ "$(rc_of exists)" -eq 1 ] && [ ! -s "$tmp/exists.out" ] && [ "$(cat "$tmp/old.json")" = old ] &&
    grep -q "old.json exists: name another with --timeline, or replace it with --force" "$tmp/exists.err"
ok $? "an existing file is refused (exit 1) before the program runs" ||
    { diag "$tmp/exists.out"; diag "$tmp/exists.err"; }

run forced --force --timeline old.json -- ./show.sh
[ "$(rc_of forced)" -eq 0 ] && [ "$(cat "$tmp/forced.out")" = "timeline=$tmp/old.json" ]
ok $? "...and taken with --force" || { diag "$tmp/forced.out"; diag "$tmp/forced.err"; }

mkdir "$tmp/folder"
run folder --force --timeline folder -- ./show.sh
run nofolder --timeline nowhere/t.json -- ./show.sh
run dash --timeline - -- ./show.sh
[ "$(rc_of folder)" -eq 1 ] && grep -q "folder is a folder: --timeline needs a file" "$tmp/folder.err" &&
    [ "$(rc_of nofolder)" -eq 1 ] && grep -q "nowhere/t.json: no such folder" "$tmp/nofolder.err" &&
    [ "$(rc_of dash)" -eq 2 ] && grep -q "standard output is the program's" "$tmp/dash.err" &&
    [ ! -s "$tmp/folder.out" ] && [ ! -s "$tmp/nofolder.out" ] && [ ! -s "$tmp/dash.out" ]
ok $? "a folder, a path in no folder (exit 1) and - (exit 2) are refused, nothing run" ||
    { diag "$tmp/folder.err"; diag "$tmp/nofolder.err"; diag "$tmp/dash.err"; }

tap_done
