"""Is a sub-millisecond call's timing noise the host's or the GPU's? (docs/performance.md)

Usage (on the GPU machine): python3 bench/cover_probe.py

Times a 4096^3 TF32 matmul (about 0.34 ms) as kbv's verified timing does (flush, a spin kernel that
covers the host's launch, start event, call, end event on the stream), in series of 400 samples
with a 100 us cover (kbv's) and a 500 us one. Per sample it also takes the host's launch time (from
the start event's record to the call's return): where the launch outlasts the cover, the GPU
idles inside the timed region. Then kbv's pattern (two input sets in turn with new content before
each round, a device-wide synchronize), and both again beside a second process that holds an idle
CUDA context (kbv's other worker). Prints per series the stream median, the share of samples more
than 5% over the series' fastest, and of those how many had a launch longer than the cover.
"""
import statistics
import subprocess
import sys
import time

import torch

torch.backends.cuda.matmul.allow_tf32 = True
a = torch.randn(4096, 4096, device="cuda")
b = torch.randn(4096, 4096, device="cuda")
flush = torch.empty(120 << 20, dtype=torch.uint8, device="cuda")  # twice the H200's L2
start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
peak_hz = 1.98e9  # the H200's peak SM clock: at a lower clock the cover lasts longer


sets = [[torch.randn(4096, 4096, device="cuda") for _ in range(2)] for _ in range(2)]


def sample(cover_seconds, kbv_pattern=False, call=0):
    x, y = a, b
    if kbv_pattern:  # kbv's: two input sets in turn, new content before each round, a device-wide synchronize
        x, y = sets[call % 2]
        if call % 2 == 0:
            for t in sets[0] + sets[1]:
                t.copy_(torch.randn_like(t))
    flush.zero_()
    torch.cuda._sleep(int(cover_seconds * peak_hz))
    start.record()
    begun = time.perf_counter()
    torch.mm(x, y)
    launch = time.perf_counter() - begun
    if kbv_pattern:
        torch.cuda.synchronize()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) * 1e-3, launch


def series(cover_seconds, calls=400, kbv_pattern=False, label=""):
    xs = [sample(cover_seconds, kbv_pattern, i) for i in range(calls)]
    times = [t for t, _ in xs]
    fastest = min(times)
    slow = [(t, launch) for t, launch in xs if t > 1.05 * fastest]
    uncovered = sum(1 for _, launch in slow if launch > cover_seconds)
    launches = sorted(launch for _, launch in xs)
    print(f"{label}cover {cover_seconds * 1e6:.0f} us: median {statistics.median(times) * 1e3:.4f} ms, fastest "
          f"{fastest * 1e3:.4f}; {len(slow)}/{calls} samples >5% over the fastest, {uncovered} of them with a "
          f"launch longer than the cover; host launch median {launches[calls // 2] * 1e6:.1f} us, "
          f"p99 {launches[calls * 99 // 100] * 1e6:.1f}, max {launches[-1] * 1e6:.1f}", flush=True)


for _ in range(20):  # warm: cuBLAS's heuristics, the clocks
    sample(100e-6)
for cover in (100e-6, 500e-6, 100e-6):
    series(cover)
series(100e-6, kbv_pattern=True, label="kbv's pattern, ")
# A second process holding a CUDA context of its own, idle, as kbv's other worker does.
neighbour = subprocess.Popen([sys.executable, "-c", "import torch, time; torch.zeros(1, device='cuda'); "
                              "print('ready', flush=True); time.sleep(60)"], stdout=subprocess.PIPE, text=True)
neighbour.stdout.readline()
series(100e-6, label="beside an idle context, ")
series(100e-6, kbv_pattern=True, label="beside an idle context, kbv's pattern, ")
neighbour.kill()
