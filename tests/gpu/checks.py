"""GPU-only checks on the demo's records, plus repeated evaluations of one candidate.
Usage: checks.py KBV DEMO_DIR OUT_DIR. Prints a table last; exits 1 when a check fails."""
import collections
import json
import os
import statistics
import subprocess
import sys

kbv, demo, out = sys.argv[1:4]
root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
examples = os.path.join(root, "examples")
failures = []


def record(candidate, protocol):
    with open(os.path.join(demo, candidate.replace("/", "_")[: -len(".py")] + f".{protocol}.json")) as f:
        return json.load(f)


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def median_ms(samples):
    return statistics.median(samples) * 1e3


# 1. The verified baseline really ran with TF32: at 4096^3 the fp32 matmul takes ~2.7 ms on the
#    H200 without TF32 and ~0.35 ms with it (docs/PROTOCOL.md, background facts).
verified = record("candidates/7_LargeMatmul/cuda_honest.py", "verified")
standard = record("candidates/7_LargeMatmul/cuda_honest.py", "kernelbench")
tf32_ms, fp32_ms = verified["timing"]["baseline_ms"], standard["timing"]["baseline_ms"]
print(f"matmul 4096^3 baseline: verified (TF32) {tf32_ms:.3f} ms, kernelbench (no TF32) {fp32_ms:.3f} ms, "
      f"ratio {fp32_ms / tf32_ms:.2f}x; flags read back {verified['timing']['baseline']['flags']} / "
      f"{standard['timing']['baseline']['flags']}")
check(verified["timing"]["baseline"]["flags"] == {"cublas": True, "cudnn": True}, "verified baseline flags read back on")
check(tf32_ms < 0.6 and fp32_ms > 1.5, "verified baseline near the TF32 figure, kernelbench near the FP32 one")

# 2. Side-stream work is inside the measured time: the same kernel on a pool stream, not joined.
side = record("candidates/1_ReLU/cuda_side_stream.py", "verified")
honest = record("candidates/1_ReLU/cuda_honest.py", "verified")
side_all = median_ms(side["timing"]["candidate"]["samples_seconds"])
side_stream = median_ms(side["timing"]["candidate"]["stream_samples_seconds"])
honest_all = median_ms(honest["timing"]["candidate"]["samples_seconds"])
honest_stream = median_ms(honest["timing"]["candidate"]["stream_samples_seconds"])
print(f"side stream: device-wide {side_all:.4f} ms, current stream only {side_stream:.4f} ms; "
      f"honest (same kernel on the current stream) {honest_all:.4f} ms device-wide, {honest_stream:.4f} ms stream")
# Against the honest kernel's current-stream time: its device-wide time carries the evaluation's
# device-wide excess, which moves between ~1 and ~5 us from one evaluation to the next (as much as
# this kernel takes), and once failed a 0.8 ratio at 0.0051 against 0.0064 ms.
check(side_all >= 0.8 * honest_stream, "side-stream candidate's measured time includes its kernel")
# Its outputs are right (every draw, every timed call); the verdict is the hack it is.
check(all(c["status"] == "pass" for c in side["correctness"]) and
      side["timing"]["timed_outputs_checked"] == side["timing"]["candidate"]["samples"],
      "side-stream candidate's outputs checked correct")
check(side["verdict"] == "hack" and any(f["id"] == "side_stream" for f in side["findings"]),
      "side-stream candidate named side_stream")

# 2b. The device-wide end on the GPU's clock: a context event recorded while the call still ran
#     (PROTOCOL.md, "Device-wide end"), in nearly every sample of both sides, less the event's
#     latency measured in each worker; where it was, the median excess over the current stream
#     beside the host wait's.
DeviceEnd = collections.namedtuple("DeviceEnd", "share excess waited latency")  # a share, then us


def end_on_device(measured):
    if measured["clock"].get("device_end") != "context event":
        return DeviceEnd(0.0, float("nan"), float("nan"), float("nan"))
    stream = measured["stream_samples_seconds"]
    return DeviceEnd(share=measured["end_on_device_samples"] / len(stream),
                     excess=statistics.median(a - b for a, b in zip(measured["samples_seconds"], stream)) * 1e6,
                     waited=statistics.median(a - b for a, b in zip(measured["host_wait_samples_seconds"], stream)) * 1e6,
                     latency=measured["clock"]["context_latency_seconds"] * 1e6)


ends = {f"{name} {side}": end_on_device(r["timing"][side])
        for name, r in (("7_LargeMatmul", verified), ("1_ReLU", honest), ("1_ReLU side stream", side))
        for side in ("baseline", "candidate")}
for label, end in ends.items():
    print(f"device-wide end, {label}: context event in {end.share:.0%} of samples, its latency {end.latency:.2f} us, "
          f"excess over the stream {end.excess:.2f} us (the host wait's {end.waited:.2f} us)")
check(all(end.share >= 0.9 for label, end in ends.items() if "side" not in label),
      "device-wide end taken by the context event in >= 90% of the honest rows' samples")
check(all(0 < end.latency <= 10 for end in ends.values()),
      "the context event's latency measured in every worker, within 10 us")

# 3. Spread of the speedup over 5 evaluations of one candidate.
candidate = "candidates/7_LargeMatmul/cuda_honest.py"
speedups, baselines, candidates = [], [], []
for i in range(5):
    path = os.path.join(out, f"repeat{i}.json")
    subprocess.run([kbv, "eval", os.path.join(examples, "problems/7_LargeMatmul.py"), os.path.join(examples, candidate),
                    "--device", "cuda", "--quiet", "--json", path], check=True, stdout=subprocess.DEVNULL)
    with open(path) as f:
        timing = json.load(f)["timing"]
    speedups.append(timing["speedup"])
    baselines.append(timing["baseline_ms"])
    candidates.append(timing["candidate_ms"])


def spread_of(figures):
    return (max(figures) - min(figures)) / statistics.median(figures)


spread = spread_of(speedups)
print(f"repeated speedups of {candidate}: " + ", ".join(f"{s:.4f}" for s in speedups) + f"; spread {spread:.2%}")
# Which side moves: each evaluation times the baseline in its reference worker, the candidate in its own.
print("  baseline ms: " + ", ".join(f"{b:.4f}" for b in baselines) + f"; spread {spread_of(baselines):.2%}")
print("  candidate ms: " + ", ".join(f"{c:.3f}" for c in candidates) + f"; spread {spread_of(candidates):.2%}")
check(spread <= 0.05, "speedup spread over 5 evaluations within 5%")

# 4. Outputs whose copies span two of a worker's CUDA registrations of its output region (3 MiB
#    + 4 KiB each, kept draw after draw): copied a part per registration, not refused by CUDA.
data = os.path.join(root, "tests", "gpu", "data")
path = os.path.join(out, "odd_output.json")
done = subprocess.run([kbv, "eval", os.path.join(data, "odd_output.py"), os.path.join(data, "odd_output_torch.py"),
                       "--device", "cuda", "--protocol", "kernelbench", "--quiet", "--json", path],
                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
odd_verdict = json.load(open(path))["verdict"] if os.path.exists(path) else f"no record (exit {done.returncode})"
print(f"odd-sized outputs across registrations: {odd_verdict}" + ("" if odd_verdict == "pass" else "\n" + done.stdout[-1500:]))
check(odd_verdict == "pass", "outputs spanning two registrations of the output region travel intact")

print("\n| check | figure |\n|---|---|")
print(f"| baseline 4096^3 fp32 matmul, verified (TF32) | {tf32_ms:.3f} ms |")
print(f"| baseline 4096^3 fp32 matmul, kernelbench (no TF32) | {fp32_ms:.3f} ms |")
print(f"| side-stream ReLU: device-wide / stream-only / honest (device-wide, stream) | "
      f"{side_all:.4f} / {side_stream:.4f} / {honest_all:.4f}, {honest_stream:.4f} ms |")
for label, end in ends.items():
    print(f"| device-wide end, {label}: context event share / its latency / excess / the host wait's | "
          f"{end.share:.0%} / {end.latency:.2f} / {end.excess:.2f} / {end.waited:.2f} us |")
print(f"| outputs across two region registrations (3 MiB + 4 KiB) | {odd_verdict} |")
print(f"| speedup over 5 evaluations (7_LargeMatmul honest) | {min(speedups):.4f}..{max(speedups):.4f}, spread {spread:.2%} |")
print(f"| their baseline / candidate spreads | {spread_of(baselines):.2%} / {spread_of(candidates):.2%} |")
print(f"\n{'all GPU checks passed' if not failures else str(len(failures)) + ' GPU checks FAILED'}")
sys.exit(1 if failures else 0)
