#!/usr/bin/env python3
"""A stand-in for perf (tests/test_bench_host_split.sh): `script -F time`
prints sample times 1.000 s apart from the first to the last, `report`
three threads' rows (the process's first thread, PyTorch's autograd
thread, a lane) in perf's --sort pid,dso -n --show-total-period layout.
A data file named *missing* fails as perf does; *empty* has no rows."""
import sys

data = sys.argv[sys.argv.index("-i") + 1]
if "missing" in data:
    sys.exit("failed to open %s: No such file or directory" % data)
if sys.argv[1] == "script":
    print("    500.250000: \n    501.000000: \n    501.250000: ")
elif sys.argv[1] == "report":
    print("# Samples: 9K of event 'cpu-clock' (time slices: 60%-100%)\n#")
    if "empty" not in data:
        for row in ("40.00%  400  200000000  4001:python3  libtorch_cpu.so",
                    "20.00%  200  100000000  4001:python3  libcuda.so.580.159.04",
                    "10.00%  100   50000000  4001:python3  [kernel.kallsyms]",
                    "15.00%  150   75000000  4040:pt_autograd_0  libumadv.so.1.0.0",
                    "14.00%  140   70000000  4040:pt_autograd_0  libtorch_cpu.so",
                    " 0.50%    5    2500000  4040:pt_autograd_0  libfoo.so",
                    " 0.50%    5    2500000  4052:python3  libcuda.so.580.159.04"):
            print("    " + row.replace("  ", "     "))
else:
    sys.exit("fake_perf.py: %s?" % sys.argv[1])
