"""Is a sub-millisecond call's timing noise the host's or the GPU's? (docs/performance.md)

Usage (on the GPU machine): python3 bench/cover_probe.py

Times a 4096^3 TF32 matmul (about 0.34 ms) as kbv's verified timing does (flush, a spin kernel that
covers the host's launch, start event, call, end event on the stream), in series of 400 samples
with a 100 us cover (kbv's) and a 500 us one. Per sample it also takes the host's launch time (from
the start event's record to the call's return): where the launch outlasts the cover, the GPU
idles inside the timed region. Prints per series the stream median, the share of samples more
than 5% over the series' fastest, and of those how many had a launch longer than the cover.
"""
import statistics
import time

import torch

torch.backends.cuda.matmul.allow_tf32 = True
a = torch.randn(4096, 4096, device="cuda")
b = torch.randn(4096, 4096, device="cuda")
flush = torch.empty(120 << 20, dtype=torch.uint8, device="cuda")  # twice the H200's L2
start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
peak_hz = 1.98e9  # the H200's peak SM clock: at a lower clock the cover lasts longer


def sample(cover_seconds):
    flush.zero_()
    torch.cuda._sleep(int(cover_seconds * peak_hz))
    start.record()
    begun = time.perf_counter()
    torch.mm(a, b)
    launch = time.perf_counter() - begun
    end.record()
    end.synchronize()
    return start.elapsed_time(end) * 1e-3, launch


def series(cover_seconds, calls=400):
    xs = [sample(cover_seconds) for _ in range(calls)]
    times = [t for t, _ in xs]
    fastest = min(times)
    slow = [(t, launch) for t, launch in xs if t > 1.05 * fastest]
    uncovered = sum(1 for _, launch in slow if launch > cover_seconds)
    launches = sorted(launch for _, launch in xs)
    print(f"cover {cover_seconds * 1e6:.0f} us: median {statistics.median(times) * 1e3:.4f} ms, fastest "
          f"{fastest * 1e3:.4f}; {len(slow)}/{calls} samples >5% over the fastest, {uncovered} of them with a "
          f"launch longer than the cover; host launch median {launches[calls // 2] * 1e6:.1f} us, "
          f"p99 {launches[calls * 99 // 100] * 1e6:.1f}, max {launches[-1] * 1e6:.1f}", flush=True)


for _ in range(20):  # warm: cuBLAS's heuristics, the clocks
    sample(100e-6)
for cover in (100e-6, 500e-6, 100e-6, 500e-6, 100e-6):
    series(cover)
