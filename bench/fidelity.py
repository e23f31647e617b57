"""Timing fidelity on the GPU: kbv's candidate times against Nsight Compute's kernel times for the
same calls, and the spread of one candidate's speedup over repeated evaluations (issue 6, item 2).

Usage: fidelity.py OUT_DIR [--kbv KBV] [--ncu NCU] [--repeats N] [--evaluations N] [--only REGEX]

First `kbv eval` of SPREAD_CANDIDATE REPEATS times under `verified`, with the GPU's clocks and
power logged by nvidia-smi: the speedup's spread (max - min over median) and each side's times.
Then, for each candidate of FIDELITY below:
  1. `kbv eval` under `verified` and under `kernelbench`, EVALUATIONS times each (3): the
     candidate's time (the verified median, device-wide and current-stream-only; the kernelbench
     mean), the median over the evaluations and, for the device-wide figure, their range;
  2. ncu_calls.py under `ncu --clock-control none`, once with each preset's pattern of calls
     (input sets, their refresh, the flush size): the same forward on inputs of the same shapes,
     an L2 flush before each call and the NVTX range `kbv timed candidate` around it; the summed
     `gpu__time_duration` of the kernels inside the range, per call. ncu's own cache control is
     off: the flush is the caller's, as in kbv. kbv's workers are not profiled themselves.
Writes OUT_DIR/fidelity.json and prints the tables last.
"""
import argparse
import csv
import glob
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SUITE = os.path.join(ROOT, "bench", "suite")
EXAMPLES = os.path.join(ROOT, "examples")

# (label, problem, candidate): kernels from a few microseconds to several milliseconds.
FIDELITY = [
    ("relu_vec4", "examples/problems/1_ReLU.py", "bench/suite/candidates/1_ReLU/relu_vec4.py"),
    ("sumdim_split", "bench/suite/problems/16_SumDimLarge.py", "bench/suite/candidates/16_SumDimLarge/split_reduce.py"),
    ("layernorm_regs", "bench/suite/problems/14_LayerNormLarge.py", "bench/suite/candidates/14_LayerNormLarge/block_regs.py"),
    ("conv_igemm", "bench/suite/problems/13_Conv2dLarge.py", "bench/suite/candidates/13_Conv2dLarge/implicit_gemm.py"),
    ("sgemm128", "examples/problems/7_LargeMatmul.py", "bench/suite/candidates/7_LargeMatmul/sgemm128.py"),
]
SPREAD_CANDIDATE = ("examples/problems/7_LargeMatmul.py", "examples/candidates/7_LargeMatmul/cuda_honest.py")
TIMED_RANGE = "kbv timed candidate"
NCU_CALLS = 50


def kbv_eval(kbv, problem, candidate, protocol, json_path, device="cuda"):
    """Runs one evaluation; returns its record (None when kbv wrote none) and its wall seconds."""
    command = [kbv, "eval", os.path.join(ROOT, problem), os.path.join(ROOT, candidate), "--device", device,
               "--protocol", protocol, "--quiet", "--json", json_path]
    begun = time.monotonic()
    done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    wall = time.monotonic() - begun
    if not os.path.exists(json_path):
        print(f"  no record from {' '.join(command)} (exit {done.returncode}):\n{done.stdout[-2000:]}", file=sys.stderr)
        return None, wall
    with open(json_path) as f:
        return json.load(f), wall


def ncu_kernel_ns(csv_path):
    """gpu__time_duration of every profiled kernel, in ncu's order: [(kernel name, ns)]."""
    with open(csv_path) as f:
        lines = f.read().splitlines()
    # ncu prints its own lines (==PROF== ...) before the CSV; the header starts with "ID".
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID"')), None)
    if start is None:
        return []
    kernels = []
    for row in csv.DictReader(lines[start:]):
        if row.get("Metric Name") != "gpu__time_duration.sum":
            continue
        value = float(row["Metric Value"].replace(",", ""))
        scale = {"nsecond": 1, "ns": 1, "usecond": 1e3, "us": 1e3, "msecond": 1e6, "ms": 1e6, "second": 1e9, "s": 1e9}.get(row["Metric Unit"])
        if scale is None:
            raise ValueError(f"{csv_path}: gpu__time_duration in unknown unit {row['Metric Unit']!r}")
        kernels.append((row["Kernel Name"], value * scale))
    return kernels


def ncu_calls(out, label, problem, candidate, *options):
    """The command and environment that run ncu_calls.py for one candidate, building into a folder
    of its own (kbv's cache is keyed by kbv)."""
    command = [sys.executable, os.path.join(ROOT, "bench", "ncu_calls.py"), os.path.join(ROOT, problem),
               os.path.join(ROOT, candidate), *options]
    return command, dict(os.environ, TORCH_EXTENSIONS_DIR=os.path.join(out, "ext", label))


def fidelity(args, label, problem, candidate):
    out = args.out
    row = {"label": label, "problem": problem, "candidate": candidate, "timed_calls": NCU_CALLS}
    for name in ("verified", "kernelbench"):
        # Each evaluation's worker holds its own level of device-wide excess (docs/performance.md):
        # the median of a few evaluations, and their range.
        times, streams, samples, verdicts = [], [], [], []
        for i in range(args.evaluations):
            record, _ = kbv_eval(args.kbv, problem, candidate, name, os.path.join(out, f"{label}.{name}.{i}.json"))
            verdicts.append(record["verdict"] if record else None)
            timing = (record or {}).get("timing", {}).get("candidate")
            if timing:
                times.append(timing["seconds"] * 1e3)
                streams.append(statistics.median(timing["stream_samples_seconds"]) * 1e3)
                samples.append(len(timing["samples_seconds"]))
        row[f"{name}_verdicts"] = verdicts
        if times:
            row[f"{name}_ms_each"] = times
            row[f"{name}_ms"] = statistics.median(times)
            row[f"{name}_stream_ms"] = statistics.median(streams)
            row[f"{name}_samples_each"] = samples
    begun = time.monotonic()
    for pattern in ("verified", "kernelbench"):
        csv_path = os.path.join(out, f"{label}.{pattern}.ncu.csv")
        command, env = ncu_calls(out, label, problem, candidate, "--calls", str(NCU_CALLS), "--pattern", pattern)
        profiled = subprocess.run(
            [args.ncu, "--clock-control", "none", "--cache-control", "none", "--nvtx", "--nvtx-include", f"{TIMED_RANGE}/",
             "--metrics", "gpu__time_duration.sum", "--csv", "--print-units", "base", "--log-file", csv_path, *command],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if profiled.returncode != 0:
            row.setdefault("ncu_errors", {})[pattern] = profiled.stdout[-2000:]
        kernels = ncu_kernel_ns(csv_path)
        row[f"ncu_{pattern}_kernels"] = len(kernels)
        row["ncu_kernel_names"] = sorted({name[:80] for name, _ in kernels})
        if kernels:
            row[f"ncu_{pattern}_ms"] = sum(ns for _, ns in kernels) / NCU_CALLS / 1e6
    row["ncu_wall_s"] = time.monotonic() - begun
    return row


def spread(args):
    problem, candidate = SPREAD_CANDIDATE
    clocks_path = os.path.join(args.out, "spread-clocks.csv")
    smi = None
    if shutil.which("nvidia-smi"):
        smi = subprocess.Popen(["nvidia-smi", "--query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,"
                                "clocks_event_reasons.active", "--format=csv", "-lms", "100"],
                               stdout=open(clocks_path, "w"), stderr=subprocess.DEVNULL)
    runs = []
    try:
        for i in range(args.repeats):
            record, wall = kbv_eval(args.kbv, problem, candidate, "verified", os.path.join(args.out, f"spread{i}.json"))
            if not record or "timing" not in record:
                runs.append({"wall_s": wall})
                continue
            t = record["timing"]
            runs.append({"wall_s": wall, "speedup": t["speedup"], "baseline_ms": t["baseline_ms"], "candidate_ms": t["candidate_ms"],
                         "baseline_samples": len(t["baseline"]["samples_seconds"]),
                         "candidate_samples": len(t["candidate"]["samples_seconds"]),
                         "baseline_criterion": t["baseline"]["criterion"], "candidate_criterion": t["candidate"]["criterion"]})
    finally:
        if smi:
            smi.terminate()
    return runs


def relative_spread(values):
    return (max(values) - min(values)) / statistics.median(values) if values else float("nan")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--kbv", default=os.path.join(ROOT, "build-gpu", "kbv"))
    installed = sorted(glob.glob("/opt/nvidia/nsight-compute/*/ncu")) + ["/usr/local/cuda/bin/ncu"]
    parser.add_argument("--ncu", default=shutil.which("ncu") or installed[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--evaluations", type=int, default=3, help="kbv evaluations per fidelity candidate and preset")
    parser.add_argument("--only", default="", help="regex on labels of the fidelity candidates")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)

    chosen = [c for c in FIDELITY if not args.only or re.search(args.only, c[0])]
    # Built ahead, in parallel: ncu_calls.py's builds, and kbv's into its cache (KBV_CACHE).
    builds = []
    for label, problem, candidate in chosen:
        command, env = ncu_calls(args.out, label, problem, candidate, "--calls", "0")
        builds.append(subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    subprocess.run([args.kbv, "compile", "--device", "cuda", "-j", str(os.cpu_count()),
                    *[os.path.join(ROOT, c) for _, _, c in chosen], os.path.join(ROOT, SPREAD_CANDIDATE[1])])
    for build in builds:
        build.wait()
    # The spread first: it is one candidate, and the evaluations below must not warm the GPU for it.
    runs = spread(args) if args.repeats > 0 else []
    rows = []
    for label, problem, candidate in chosen:
        begun = time.monotonic()
        try:
            rows.append(fidelity(args, label, problem, candidate))
        except Exception as error:  # one candidate's failure must not lose the others' figures
            print(f"fidelity {label}: {error!r}", file=sys.stderr)
            rows.append({"label": label, "error": repr(error)})
        print(f"fidelity {label}: {time.monotonic() - begun:.0f} s", flush=True)
    with open(os.path.join(args.out, "fidelity.json"), "w") as f:
        json.dump({"fidelity": rows, "spread": {"problem": SPREAD_CANDIDATE[0], "candidate": SPREAD_CANDIDATE[1], "runs": runs}},
                  f, indent=1)
    print_tables(rows, runs)


def print_tables(rows, runs):
    def cell(row, key, ncu_key):
        if key not in row:
            return f"{'-':>9} {'':>7}"
        off = f"{row[key] / row[ncu_key] - 1:+.1%}" if ncu_key in row else "-"
        return f"{row[key]:9.4f} {off:>7}"

    def spread_off(row):
        """The verified evaluations' lowest and highest figure against ncu's."""
        if "verified_ms_each" not in row or "ncu_verified_ms" not in row:
            return "-"
        offs = [ms / row["ncu_verified_ms"] - 1 for ms in row["verified_ms_each"]]
        return f"{min(offs):+.1%}..{max(offs):+.1%}"

    print("\nkbv's candidate time against ncu's summed gpu__time_duration per call, each under its preset's pattern (ms;")
    print("kbv's: the median over its evaluations; range: the lowest and highest verified evaluation's)")
    print(f"{'candidate':15} {'ncu verif.':>10} {'verified':>9} {'off':>7} {'range':>15} {'stream':>9} {'off':>7} "
          f"{'ncu kb':>9} {'kernelbench':>11} {'off':>5}  kernels/call")
    for row in rows:
        per_call = f"{row['ncu_verified_kernels'] / row['timed_calls']:.1f}" if row.get("timed_calls") else "-"
        ncu_v = f"{row['ncu_verified_ms']:10.4f}" if "ncu_verified_ms" in row else f"{'-':>10}"
        ncu_k = f"{row['ncu_kernelbench_ms']:9.4f}" if "ncu_kernelbench_ms" in row else f"{'-':>9}"
        print(f"{row['label']:15} {ncu_v} {cell(row, 'verified_ms', 'ncu_verified_ms')} {spread_off(row):>15} "
              f"{cell(row, 'verified_stream_ms', 'ncu_verified_ms')} {ncu_k} "
              f"{cell(row, 'kernelbench_ms', 'ncu_kernelbench_ms')}  {per_call}")
    speedups = [r["speedup"] for r in runs if "speedup" in r]
    if speedups:
        print(f"\nspeedup of {SPREAD_CANDIDATE[1]} over {len(speedups)} verified evaluations: "
              + ", ".join(f"{s:.4f}" for s in speedups) + f"; spread {relative_spread(speedups):.2%}")
        for side in ("baseline", "candidate"):
            values = [r[f"{side}_ms"] for r in runs if f"{side}_ms" in r]
            print(f"  {side}: " + ", ".join(f"{v:.4f}" for v in values) + f" ms; spread {relative_spread(values):.2%}; samples "
                  + ", ".join(str(r[f"{side}_samples"]) for r in runs if f"{side}_samples" in r))


if __name__ == "__main__":
    main()
