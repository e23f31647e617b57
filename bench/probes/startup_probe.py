"""What a worker forked from kbv's zygote pays before it can run a candidate (docs/performance.md).

Usage (on the GPU machine): python3 bench/probes/startup_probe.py [REPEATS]   (default 3)

Like the zygote, this process imports torch once and does not touch CUDA; each child it forks
times, in order: the fork itself (seen from the child's first line), CUDA's initialisation with
its context (`torch.cuda.init()` and a first allocation), a first tiny kernel, then a comparison
of two small float32 outputs (64 Ki elements) as the reference worker judges its later calls on
the device (float64 difference, max, RMS: kernels loaded lazily on their first call) and the same
on the host after `.cpu()`, each its first time and again; then a draw of each of kbv's input
families other than `standard` (src/kbv/inputs/families.cpp's operations, on a 16 x 16384
float32 input like `1_ReLU`'s), its first time and again; then the checksum of the inputs, the
watch's comparison of inputs with their snapshot, a timed output's sketch and a call under the
profiler's low-level API as kbv's trace uses it (the high-level torch.profiler.profile took 7 s
on its first call, H200, 2026-12-01), each its first time and again: the checks of a `verified`
evaluation run in a fresh worker, and each kernel a process uses loads on its first call. Prints
a table of seconds last, the median over REPEATS children.
"""
import json
import os
import statistics
import sys
import time

import torch

FAMILIES = ("normal", "shifted", "heavy", "sparse")
STEPS = ("fork", "cuda_init", "first_kernel", "device_compare_first", "device_compare_again",
         "host_compare_first", "host_compare_again") + tuple(
             f"draw_{family}_{when}" for family in FAMILIES for when in ("first", "again")) + tuple(
             f"{name}_{when}" for name in ("checksum", "watch_compare", "sketch", "profiler")
             for when in ("first", "again"))


def compare(x, r):
    """A scaled error as kbv computes it (max |x - r| over the reference's RMS), one .item()."""
    rd = r.double()
    rms = rd.square().mean().sqrt()
    return ((x.double() - rd).abs() / rms).max().item()


def draw(family, like, gen):
    """One family's values shaped like `like`, with the operations kbv's inputs::redraw uses
    (both heavy-tailed kinds, so that every kernel of the family runs)."""
    empty = lambda: torch.empty_like(like)
    if family == "normal":
        values = empty().normal_(0.0, 2.0, generator=gen)
    elif family == "shifted":
        values = empty().uniform_(-3.0, 5.0, generator=gen)
    elif family == "heavy":
        chi2 = torch.zeros_like(like)
        for _ in range(3):
            chi2.add_(empty().normal_(0.0, 1.0, generator=gen).square_())
        values = empty().normal_(0.0, 1.0, generator=gen).div_(chi2.div_(3).sqrt_())
        sign = empty().bernoulli_(0.5, generator=gen).mul_(2).sub_(1)
        values.add_(empty().exponential_(1.0, generator=gen).mul_(sign))
        outliers = empty().bernoulli_(1e-3, generator=gen)
        values.mul_(outliers.mul_(49.0).add_(1.0))
    else:
        keep = empty().bernoulli_(0.1, generator=gen)
        magnitude = torch.pow(10.0, empty().uniform_(-2.0, 2.0, generator=gen))
        sign = empty().bernoulli_(0.5, generator=gen).mul_(2).sub_(1)
        spikes = empty().bernoulli_(1e-3, generator=gen)
        values = torch.where(spikes.to(torch.bool), sign.mul(1e3), magnitude.mul_(sign).mul_(keep))
    return torch.where(like == 0, torch.zeros((), device=like.device), values).contiguous()


def child(write_fd, forked_at):
    seconds = {"fork": time.perf_counter() - forked_at}

    def step(name, action):
        begun = time.perf_counter()
        result = action()
        torch.cuda.synchronize()
        seconds[name] = time.perf_counter() - begun
        return result

    step("cuda_init", lambda: (torch.cuda.init(), torch.empty(1, device="cuda")))
    x = step("first_kernel", lambda: torch.ones(1 << 16, device="cuda"))
    r = x * 1.0001
    torch.cuda.synchronize()
    step("device_compare_first", lambda: compare(x, r))
    step("device_compare_again", lambda: compare(x, r))
    step("host_compare_first", lambda: compare(x.cpu(), r.cpu()))
    step("host_compare_again", lambda: compare(x.cpu(), r.cpu()))
    like = torch.rand(16, 16384, device="cuda")
    gen = torch.Generator(device="cuda")
    gen.manual_seed(7)
    for family in FAMILIES:
        step(f"draw_{family}_first", lambda: draw(family, like, gen))
        step(f"draw_{family}_again", lambda: draw(family, like, gen))
    # kbv's other steps of a candidate's check and probe: the inputs' checksum, the watch's
    # comparison of the inputs after a call with their snapshot, a timed output's sketch, the
    # profiler's traced call.
    before = like.clone()
    positions = torch.randint(like.numel(), (64,))
    for when in ("first", "again"):
        step(f"checksum_{when}", lambda: (like.sum(dtype=torch.float64).item(),
                                          like.abs().sum(dtype=torch.float64).item()))
        step(f"watch_compare_{when}", lambda: before.ne(like).logical_and(
            before.isnan().logical_and(like.isnan()).logical_not()).sum().item())
        step(f"sketch_{when}", lambda: like.reshape(-1).index_select(0, positions.to("cuda")).cpu().double())
    from torch._C._profiler import _ExperimentalConfig
    from torch.autograd.profiler import (ProfilerActivity, ProfilerConfig, ProfilerState, _disable_profiler,
                                         _enable_profiler, _prepare_profiler)

    def traced():  # as kbv's monitor.trace_call does: the profiler's low-level API
        activities = {ProfilerActivity.CPU, ProfilerActivity.CUDA}
        config = ProfilerConfig(ProfilerState.KINETO, False, False, False, False, False, _ExperimentalConfig())
        _prepare_profiler(config, activities)
        _enable_profiler(config, activities)
        like.mul(2.0)
        torch.cuda.synchronize()
        _disable_profiler().events()

    for when in ("first", "again"):
        step(f"profiler_{when}", traced)
    os.write(write_fd, json.dumps(seconds).encode())
    os._exit(0)


def main():
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    runs = []
    for _ in range(repeats):
        read_fd, write_fd = os.pipe()
        forked_at = time.perf_counter()
        pid = os.fork()
        if pid == 0:
            os.close(read_fd)
            child(write_fd, forked_at)
        os.close(write_fd)
        text = b""
        while chunk := os.read(read_fd, 4096):
            text += chunk
        os.close(read_fd)
        os.waitpid(pid, 0)
        runs.append(json.loads(text))
    print(f"forked children of a process that imported torch {torch.__version__}, {torch.cuda.get_device_name(0)}")
    print(f"{'step':24s} {'median (s)':>10s} {'min':>8s} {'max':>8s}")
    for name in STEPS:
        values = [run[name] for run in runs]
        print(f"{name:24s} {statistics.median(values):10.4f} {min(values):8.4f} {max(values):8.4f}")


if __name__ == "__main__":
    main()
