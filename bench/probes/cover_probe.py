"""Is a sub-millisecond call's timing noise the host's or the GPU's, and which part of kbv's pattern
of timed calls brings it? (docs/performance.md, "Timing stability")

Usage (on the GPU machine): python3 bench/probes/cover_probe.py

Times a 4096^3 TF32 matmul (about 0.34 ms) as kbv's verified timing does (an L2 flush, a spin kernel
that covers the host's launch, start event, call, end event), 400 samples per series, while
nvidia-smi samples the SM clock, the power draw and the clocks' event reasons every 100 ms. Per
sample it also takes the host's launch time (from the start event's record to the call's return):
where the launch outlasts the cover, the GPU idles inside the timed region. The series add kbv's
habits one at a time (two input sets in turn; new content in them before each round; a device-wide
synchronize once the host has seen the end event, its wait past an idle device's counted in), then
all of them, then two ways of spreading the new content:
one set refilled after each call, and a 1 ms pause after each refill. Then the plain series and
kbv's pattern again beside a second process holding an idle CUDA context (kbv's other worker), and
last both once more after one CUDA trace under torch's profiler in this process (kineto leaves
CUPTI attached: until it moved after the timing, kbv's trace preceded each side's timed calls).
Prints per series the median, the fastest, the share of samples more than 5% over the fastest and
how many of those had a launch longer than the cover, the host launch's median, p99 and max, and
nvidia-smi's SM clock, power and event reasons over the series.

`--processes`: the device-wide wait's excess holds one level through an evaluation and takes one
of two levels across evaluations (docs/performance.md, "Left"). This runs kbv's pattern alone in
fresh processes, four pinned to each group of CPUs (the NUMA nodes, else the two halves of the
CPUs this process may use), one at a time, and prints per process the current stream's median,
the excess's median and their sum: whether the level follows where the host thread runs.
"""
import csv
import glob
import os
import statistics
import subprocess
import sys
import tempfile
import time

from cpu_groups import cpu_groups, label, pinned_to


def processes(per_group=4):
    bus = subprocess.run(["nvidia-smi", "--query-gpu=pci.bus_id", "--format=csv,noheader"], capture_output=True,
                         text=True).stdout.strip().lower()
    local = glob.glob(f"/sys/bus/pci/devices/{bus[4:]}/local_cpulist")
    print(f"GPU {bus}, its local CPUs: {open(local[0]).read().strip() if local else 'unknown'}", flush=True)
    for group in cpu_groups():
        for _ in range(per_group):
            out = subprocess.run([sys.executable, __file__, "--child"], capture_output=True, text=True,
                                 preexec_fn=pinned_to(group))
            print(f"CPUs {label(group)}: " + (out.stdout.strip().splitlines() or [out.stderr.strip()[-300:]])[-1], flush=True)


if sys.argv[1:2] == ["--processes"]:
    processes()
    sys.exit(0)

import torch  # noqa: E402 (not in --processes' own process)

torch.backends.cuda.matmul.allow_tf32 = True
N = 4096
COVER = 100e-6
PEAK_HZ = 1.98e9  # the H200's peak SM clock: at a lower clock the cover lasts longer
a, b = torch.randn(N, N, device="cuda"), torch.randn(N, N, device="cuda")
sets = [[torch.randn(N, N, device="cuda") for _ in range(2)] for _ in range(2)]
flush = torch.empty(120 << 20, dtype=torch.uint8, device="cuda")  # twice the H200's L2
start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)


def device_wait():
    """kbv's timer: the host sees the end event happen, then waits for the rest of the device; the
    seconds of that wait."""
    while not end.query():
        pass
    noticed = time.perf_counter()
    torch.cuda.synchronize()
    return time.perf_counter() - noticed


def idle_sync_seconds(calls=21):
    """The host's seconds in a device-wide synchronize with nothing left to wait for (kbv's timer)."""
    waits = []
    for _ in range(calls):
        flush.zero_()
        end.record()
        waits.append(device_wait())
    return statistics.median(waits)


IDLE_SYNC = idle_sync_seconds()


def refill(tensors):
    for t in tensors:
        t.copy_(torch.randn_like(t))


def sample(i, alternate, refresh, device_sync, cover=COVER):
    """One timed call; refresh: None, "round" (both sets before each round, kbv's), "each" (the set
    just timed, after its call) or "round+pause" (kbv's, then 1 ms of host sleep)."""
    x, y = sets[i % 2] if alternate else (a, b)
    if refresh in ("round", "round+pause") and i % 2 == 0:
        refill(sets[0] + sets[1])
        if refresh == "round+pause":
            torch.cuda.synchronize()
            time.sleep(1e-3)
    flush.zero_()
    torch.cuda._sleep(int(cover * PEAK_HZ))
    start.record()
    begun = time.perf_counter()
    torch.mm(x, y)
    launch = time.perf_counter() - begun
    end.record()
    extra = max(0.0, device_wait() - IDLE_SYNC) if device_sync else 0.0
    end.synchronize()
    if refresh == "each":
        refill(sets[i % 2])
    return start.elapsed_time(end) * 1e-3, extra, launch


class Smi:
    """nvidia-smi's samples over one series."""

    def __init__(self):
        with tempfile.NamedTemporaryFile(suffix=".csv", delete=False) as f:
            self.path = f.name
        self.process = subprocess.Popen(
            ["nvidia-smi", "--query-gpu=clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active",
             "--format=csv,noheader,nounits", "-lms", "100"], stdout=open(self.path, "w"), stderr=subprocess.DEVNULL)

    def summary(self):
        self.process.terminate()
        self.process.wait()
        rows = [r for r in csv.reader(open(self.path)) if len(r) == 4]
        os.unlink(self.path)
        if not rows:
            return "nvidia-smi: no samples"
        clocks = [float(r[0]) for r in rows]
        power = [float(r[1]) for r in rows]
        reasons = sorted({r[3].strip() for r in rows})
        return (f"SM clock {min(clocks):.0f}-{max(clocks):.0f} MHz, power {statistics.mean(power):.0f} W "
                f"(max {max(power):.0f}), {rows[-1][2].strip()} C, event reasons {' '.join(reasons)}")


def series(label, alternate=False, refresh=None, device_sync=False, calls=400):
    smi = Smi()
    xs = [(stream + extra, launch) for stream, extra, launch in
          (sample(i, alternate, refresh, device_sync) for i in range(calls))]
    clocks = smi.summary()
    times = [t for t, _ in xs]
    fastest = min(times)
    slow = [(t, launch) for t, launch in xs if t > 1.05 * fastest]
    uncovered = sum(1 for _, launch in slow if launch > COVER)
    launches = sorted(launch for _, launch in xs)
    print(f"{label}: median {statistics.median(times) * 1e3:.4f} ms, fastest {fastest * 1e3:.4f}; {len(slow)}/{calls} "
          f">5% over the fastest, {uncovered} of them with a launch longer than the cover; host launch median "
          f"{launches[calls // 2] * 1e6:.0f} us, p99 {launches[calls * 99 // 100] * 1e6:.0f}, max {launches[-1] * 1e6:.0f}; "
          f"{clocks}", flush=True)


for i in range(20):  # warm: cuBLAS's heuristics, the clocks
    sample(i, True, "round", True)
if sys.argv[1:2] == ["--child"]:
    parts = [sample(i, True, "round", True) for i in range(400)]
    stream = statistics.median(p[0] for p in parts)
    excess = statistics.median(p[1] for p in parts)
    total = statistics.median(p[0] + p[1] for p in parts)
    print(f"pid {os.getpid()}: current stream {stream * 1e3:.4f} ms, excess {excess * 1e6:.2f} us, "
          f"device-wide {total * 1e3:.4f} ms (idle synchronize {IDLE_SYNC * 1e6:.2f} us)")
    sys.exit(0)
series("plain (one input set, no refresh)")
series("two sets in turn", alternate=True)
series("two sets, new content before each round", alternate=True, refresh="round")
series("device-wide synchronize", device_sync=True)
series("kbv's pattern", alternate=True, refresh="round", device_sync=True)
series("kbv's, the set just timed refilled after its call", alternate=True, refresh="each", device_sync=True)
series("kbv's, 1 ms pause after each round's refill", alternate=True, refresh="round+pause", device_sync=True)
series("plain again")
neighbour = subprocess.Popen([sys.executable, "-c", "import torch, time; torch.zeros(1, device='cuda'); "
                              "print('ready', flush=True); time.sleep(60)"], stdout=subprocess.PIPE, text=True)
neighbour.stdout.readline()
series("beside an idle context, plain")
series("beside an idle context, kbv's pattern", alternate=True, refresh="round", device_sync=True)
neighbour.kill()
with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]):
    sample(0, False, None, True)
series("after a CUDA trace, plain")
series("after a CUDA trace, kbv's pattern", alternate=True, refresh="round", device_sync=True)
