"""Where does the device-wide wait's excess come from, and what idle wait should be taken off?
(docs/performance.md, "The device-wide end")

Usage (on the GPU machine): python3 bench/probes/sync_probe.py [PROCESSES]

kbv's verified timer spins until the current stream's end event has happened, then synchronizes the
whole device and counts whatever that wait outlasts an idle device's (measured once, after an L2
flush, when the timer starts). After a real call that wait is longer by a level that holds through
a process (0.7-5.6 us after a 0.34 ms matmul at ea9eab8, 3-28 us after a 16 ms kernel), though
nothing runs on another stream, and it is larger in the candidate's worker than in the
reference's. This times, in fresh processes (pinned to each group of CPUs in turn: the NUMA nodes, else the two halves),
the wait after calls on the current stream only, interleaved sample by sample: the L2 flush kbv
calibrates with, spin kernels of 0.03, 0.34, 3 and 16 ms, and the 0.34 ms TF32 matmul; and the
wait of a second synchronize right after the first. Each process runs under one of three
conditions, in turn: no copy, one sketch before its samples, or one after every sample (until
93eb5f1 the candidate's worker sketched each timed call's outputs after the call: 4096 positions
drawn on the host and copied to the device, the values there copied back; the reference's worker
copies nothing between its baseline's samples). If the waits rise with the copies, the copies
bring the excess.

Run 2026-12-02 without the copy conditions: the wait after a spin kernel tracked the wait after a
matmul as long, and a length-matched idle wait inside kbv's workers took none of a real call's
excess off (docs/performance.md, "An idle wait as long as the call"). With them (at e7e7983) each
process's own level outweighed the conditions; kbv's records settled it instead ("Sketches
gathered on the device").
"""
import statistics
import subprocess
import sys
import time

from cpu_groups import cpu_groups, label, pinned_to

CONDITIONS = ("no copy", "one copy", "copy each")

if sys.argv[1:2] == ["--child"]:
    import torch

    condition = sys.argv[2]

    torch.backends.cuda.matmul.allow_tf32 = True
    PEAK_HZ = 1.98e9  # the H200's peak SM clock
    COVER = 100e-6
    a, b = torch.randn(4096, 4096, device="cuda"), torch.randn(4096, 4096, device="cuda")
    flush = torch.empty(120 << 20, dtype=torch.uint8, device="cuda")
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)

    def spin(seconds):
        return lambda: torch.cuda._sleep(int(seconds * PEAK_HZ))

    calls = {"flush": lambda: flush.zero_(), "spin 0.03": spin(30e-6), "spin 0.34": spin(340e-6),
             "spin 3": spin(3e-3), "spin 16": spin(16e-3), "matmul": lambda: torch.mm(a, b)}
    waits = {name: [] for name in calls}
    second, stream_ms = [], {name: [] for name in calls}
    def copy_to_host():
        """A sketch as the candidate's worker took it until 93eb5f1: positions drawn on the host,
        copied to the device, the values there gathered and copied back."""
        positions = torch.randint(a.numel(), (4096,), dtype=torch.long)
        return a.view(-1).index_select(0, positions.to("cuda")).cpu().double()

    if condition == "one copy":
        copy_to_host()
    for i in range(60 + 200):
        for name, call in calls.items():
            if name == "spin 16" and i % 10:
                continue  # a sample in ten: 16 ms each
            flush.zero_()
            torch.cuda._sleep(int(COVER * PEAK_HZ))
            start.record()
            call()
            end.record()
            while not end.query():
                pass
            noticed = time.perf_counter()
            torch.cuda.synchronize()
            waited = time.perf_counter() - noticed
            again = time.perf_counter()
            torch.cuda.synchronize()
            if i >= 60:  # after the warm-up
                waits[name].append(waited)
                second.append(time.perf_counter() - again)
                stream_ms[name].append(start.elapsed_time(end))
            if condition == "copy each":
                copy_to_host()
    line = [f"{statistics.median(waits[n]) * 1e6:6.2f} ({statistics.median(stream_ms[n]):.3f})" for n in calls]
    print(" ".join(line) + f"  second {statistics.median(second) * 1e6:5.2f}")
    sys.exit(0)

processes = int(sys.argv[1]) if len(sys.argv) > 1 else 12
groups = cpu_groups()
print("median wait after each call, us (its current-stream ms), one process per line, its CPUs and condition")
print("flush, spin 0.03, spin 0.34, spin 3, spin 16, matmul 0.34; then a second synchronize's wait")
for p in range(processes):
    group, condition = groups[p % len(groups)], CONDITIONS[p % len(CONDITIONS)]
    out = subprocess.run([sys.executable, __file__, "--child", condition], capture_output=True, text=True,
                         preexec_fn=pinned_to(group))
    print(f"CPUs {label(group):6} {condition:9} " + (out.stdout.strip() or out.stderr.strip()[-300:]), flush=True)
