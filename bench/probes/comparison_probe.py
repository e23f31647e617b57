"""What the reference worker's passes over one large output cost on the device, step by step.

Usage (on the GPU machine): python3 bench/probes/comparison_probe.py [GiB]   (default 6: KernelBench's 19_ReLU)

A verified evaluation of a 6 GiB problem makes each of these steps tens of times (per draw, per
check, per timed call's sketch). This times, side by side in one process, on one float32 tensor of
the given size: drawing it (torch.rand into memory the caching allocator holds, and into memory it
must get from the driver again after emptyCache), a ReLU over it, the input checksum (its sums
accumulated in float64, and in the input's dtype), the output's RMS and the scaled error of a
second output against it as src/kbv/check/comparison.cpp computed them on the device before
d08edad (float64 slices of 2^24 elements, a host read per slice) and as it does now (chunks of 2^26
elements in the tensor's own dtype, partial results kept on the device and read once). Prints a
table of milliseconds (median of 5) last.
"""
import math
import statistics
import sys
import time

import torch

SLICE = 1 << 24  # check::kSliceElements
CHUNK = 1 << 26  # comparison.cpp's kChunkElements


def timed(step, repeats=5):
    samples = []
    for _ in range(repeats):
        torch.cuda.synchronize()
        begun = time.perf_counter()
        result = step()
        torch.cuda.synchronize()
        samples.append(time.perf_counter() - begun)
    return statistics.median(samples) * 1e3, result


# comparison.cpp's device path before the chunks: float64 slices, two host reads per slice.
def sliced_rms(r):
    rf = r.reshape(-1)
    total, count = 0.0, 0
    for begin in range(0, rf.numel(), SLICE):
        rd = rf[begin:begin + SLICE].double()
        finite = torch.isfinite(rd)
        count += int(finite.sum().item())
        total += torch.where(finite, rd, 0.0).square().sum().item()
    return math.sqrt(total / count) if count else 0.0


def sliced_error(x, r, rms):
    xf, rf = x.reshape(-1), r.reshape(-1)
    worst = 0.0
    for begin in range(0, rf.numel(), SLICE):
        xd, rd = xf[begin:begin + SLICE].double(), rf[begin:begin + SLICE].double()
        finite = torch.isfinite(rd)
        if not bool(finite.all().item()):
            raise RuntimeError("probe inputs are finite")
        xs, rs = torch.where(finite, xd, 0.0), torch.where(finite, rd, 0.0)
        if not bool(torch.isfinite(xs).all().item()):
            return math.inf
        diff = (xs - rs).abs_()
        scale = rs.abs().add_(rms)
        ratio = torch.where(scale > 0, diff / scale, torch.where(diff > 0, math.inf, 0.0))
        worst = max(worst, ratio.max().item())
    return worst


def checksum(t):
    return t.sum(dtype=torch.float64).item(), t.abs().sum(dtype=torch.float64).item()


# Fewer passes: chunks, partial results on the device, one read at the end.
def chunked_rms(r):
    rf = r.reshape(-1)
    parts = [torch.linalg.vector_norm(rf[b:b + CHUNK], 2, dtype=torch.float64).square()
             for b in range(0, rf.numel(), CHUNK)]
    return math.sqrt(torch.stack(parts).sum().item() / rf.numel())


def chunked_error(x, r, rms):
    xf, rf = x.reshape(-1), r.reshape(-1)
    parts = []
    for b in range(0, rf.numel(), CHUNK):
        xc, rc = xf[b:b + CHUNK], rf[b:b + CHUNK]
        diff = torch.sub(xc, rc).abs_()
        parts.append(diff.div_(rc.abs().add_(rms)).amax())
    return torch.stack(parts).amax().item()


def dtype_checksum(t):
    return torch.stack([t.sum(), torch.linalg.vector_norm(t, 1)]).double().tolist()


def main():
    gib = float(sys.argv[1]) if len(sys.argv) > 1 else 6.0
    count = int(gib * (1 << 30)) // 4
    rows = []
    x = torch.rand(count, device="cuda")
    ms, _ = timed(lambda: x.uniform_())
    rows.append(("draw: torch.rand in place", ms))

    def fresh_draw():
        drawn = torch.rand(count, device="cuda")
        del drawn
        torch.cuda.empty_cache()
    ms, _ = timed(fresh_draw)
    rows.append(("draw: torch.rand after emptyCache (cudaMalloc + free)", ms))
    ms, y = timed(lambda: torch.relu(x))
    rows.append(("forward: relu", ms))
    y2 = torch.relu(x) * (1 + 1e-6)
    ms, c1 = timed(lambda: checksum(x), 3)
    rows.append(("input checksum, float64 sums", ms))
    ms, c2 = timed(lambda: dtype_checksum(x), 3)
    rows.append(("input checksum, in the dtype", ms))
    ms, rms1 = timed(lambda: sliced_rms(y), 3)
    rows.append(("rms, float64 slices", ms))
    ms, rms2 = timed(lambda: chunked_rms(y), 3)
    rows.append(("rms, chunked float64 norm", ms))
    ms, e1 = timed(lambda: sliced_error(y2, y, rms1), 3)
    rows.append(("scaled error, float64 slices", ms))
    ms, e2 = timed(lambda: chunked_error(y2, y, rms1), 3)
    rows.append(("scaled error, chunked in float32", ms))
    print(f"{gib} GiB float32; rms {rms1!r} vs {rms2!r}; error {e1!r} vs {e2!r}; checksum {c1} vs {c2}")
    print(f"{'step':58s} {'ms':>9s}")
    for name, ms in rows:
        print(f"{name:58s} {ms:9.1f}")


if __name__ == "__main__":
    main()
