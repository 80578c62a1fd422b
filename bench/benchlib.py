"""What the benchmark scripts of this folder share."""
import sys


def link_model(trace):
    """fetch_bw and evict_bw (bytes/s) from a umadv-trace(5) file's link
    record: the link probe's measurements on the machine that recorded it."""
    with open(trace) as f:
        for line in f:
            if line.startswith("link "):
                fields = dict(kv.split("=", 1) for kv in line.split()[1:])
                return float(fields["fetch_bw"]), float(fields["evict_bw"])
    sys.exit("bench: no link record in " + trace)
