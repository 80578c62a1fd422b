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


def bound_ms(compute_ms, fetched, evicted, link):
    """DESIGN.md's lower bound of an iteration under a budget, in ms:
    max(compute, bytes fetched / fetch bw, bytes evicted / evict bw), with
    @link = (fetch_bw, evict_bw) in bytes/s."""
    fetch_bw, evict_bw = link
    return max(compute_ms, fetched / fetch_bw * 1e3, evicted / evict_bw * 1e3)
