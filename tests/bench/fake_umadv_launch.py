#!/usr/bin/env python3
"""A stand-in for `umadv profile [-q] [--force] -o FILE -- PROGRAM` and
`umadv run [-q] --budget BYTES --policy P -- PROGRAM` in the test of
bench/unmodified.py: it sets the environment the real commands give the
program (UMADV_PROFILE_OUTPUT; UMADV_BUDGET and UMADV_POLICY) and runs it,
exiting as it did."""
import os
import subprocess
import sys


def main():
    argv = sys.argv[1:]
    if "--" not in argv or argv[:1] not in (["profile"], ["run"]):
        sys.exit("fake_umadv_launch.py: only 'profile ... -- PROGRAM' and 'run ... -- PROGRAM'")
    opts, program = argv[1:argv.index("--")], argv[argv.index("--") + 1:]
    env = dict(os.environ)
    if argv[0] == "profile":
        env["UMADV_PROFILE_OUTPUT"] = opts[opts.index("-o") + 1]
    else:
        env["UMADV_BUDGET"] = opts[opts.index("--budget") + 1]
        env["UMADV_POLICY"] = opts[opts.index("--policy") + 1]
    sys.exit(subprocess.run(program, env=env).returncode)


if __name__ == "__main__":
    main()
