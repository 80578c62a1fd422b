"""The profile the stand-ins write for --trace (tests/bench/fake_*.py):
two steps of one iteration, whose fewest bytes per budget are known by
hand, at any section size S. P: 2S of weights in two sections, read one
a step; T: S/2 born at step 0 (written), read at step 1, freed after it.
Fewest bytes per iteration each way: none from 2.5S up; S at 2S (half of
P out for each step); 2S at 1.5S (all of P out and in); below 1.5S a step
alone does not fit."""


def two_step_trace(section):
    """The trace file's text at section size @section (a power of two)."""
    return """umadv-trace 1
trace section_size=%d allocs=2 steps=2 accesses=4 source="fake"
device name="fake" pci_bus_id="" memory=85899345920 cc=9.0 driver=13000
link fetch_bw=5e10 fetch_latency=1e-4 evict_bw=1e10 evict_latency=5e-5 fault_bw=5e9 \
fault_latency=2e-05 remote_bw=4e10
alloc id=0 base=0x0 size=%d kind=weight tag="P"
alloc id=1 base=0x0 size=%d kind=activation alloc_step=0 free_step=1 tag="T"
step id=0 iter=0 kind=kernel dur_ns=1000000 name="forward"
  a alloc=0 first=0 count=1 mode=r faults=0
  a alloc=1 first=0 count=1 mode=w faults=0
step id=1 iter=0 kind=kernel dur_ns=1000000 name="backward"
  a alloc=0 first=1 count=1 mode=r faults=0
  a alloc=1 first=0 count=1 mode=r faults=0
end crc32=00000000
""" % (section, 2 * section, section // 2)
