#!/usr/bin/env python3
"""kbv's own cost per evaluation (issue 6, goal: <= 1 s beside compile and kernel time).

For each candidate (built first, so no build is counted), one `kbv eval` per protocol; from its
record: the wall time, the kernel time inside it (each timed side's samples times its median: the
calls kbv had to make), and the rest, kbv's overhead, with the stages that hold most of it. A
single `kbv eval` starts its own reference worker and times the baseline. `kbv run` shares both
per problem, so the cost of one more evaluation in a run is measured too: one `kbv run` over every
candidate twice (two copies of the file), both protocols; the second copy's record is what each
further candidate of a problem costs there. Every stage of every row goes to OUT_DIR/stages.tsv, and
the steps of the candidate worker's load inside `import` as `import.<step>` (the worker's own clock).

Usage: overhead.py OUT_DIR [--kbv KBV] [--device cuda|cpu] [--only REGEX]
"""
import argparse
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys

from fidelity import ROOT, kbv_eval  # this folder is on the path of a script run from it


# (label, problem, candidate): microseconds and milliseconds of kernel time, small and 512 MiB outputs.
CANDIDATES = [
    ("relu_vec4", "examples/problems/1_ReLU.py", "bench/suite/candidates/1_ReLU/relu_vec4.py"),
    ("layernorm_warp", "bench/suite/problems/9_LayerNorm.py", "bench/suite/candidates/9_LayerNorm/welford_warp.py"),
    ("sgemm128", "examples/problems/7_LargeMatmul.py", "bench/suite/candidates/7_LargeMatmul/sgemm128.py"),
    ("layernorm_large", "bench/suite/problems/14_LayerNormLarge.py", "bench/suite/candidates/14_LayerNormLarge/block_regs.py"),
    ("softmax_large", "bench/suite/problems/15_SoftmaxLarge.py", "bench/suite/candidates/15_SoftmaxLarge/regs_block.py"),
]
CPU_CANDIDATES = [
    ("relu_cpu", "examples/problems/1_ReLU.py", "examples/candidates/1_ReLU/cpu_honest.py"),
]


def kernel_seconds(record):
    """Seconds of the timed calls themselves: samples x median, per timed side."""
    total = 0.0
    for side in ("baseline", "candidate"):
        timing = (record.get("timing") or {}).get(side)
        if timing:
            total += timing["samples"] * timing["seconds"]
    return total


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out")
    parser.add_argument("--kbv", default=os.path.join(ROOT, "build-gpu", "kbv"))
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument("--only", default="", help="regex on the candidates' labels")
    args = parser.parse_args()
    chosen = [c for c in (CANDIDATES if args.device == "cuda" else CPU_CANDIDATES) if re.search(args.only, c[0])]
    if not chosen:
        sys.exit(f"overhead: no candidate matches {args.only!r}")
    os.makedirs(args.out, exist_ok=True)
    subprocess.run([args.kbv, "compile", "--device", args.device, "-j", str(os.cpu_count()),
                    *[os.path.join(ROOT, c[2]) for c in chosen]], check=True)
    rows = []
    for label, problem, candidate in chosen:
        for protocol in ("kernelbench", "verified"):
            record, _ = kbv_eval(args.kbv, problem, candidate, protocol,
                                 os.path.join(args.out, f"{label}.{protocol}.json"), args.device)
            if record is not None:
                rows.append(row(label, protocol, record))
    in_run = run_twice(args, chosen)
    with open(os.path.join(args.out, "stages.tsv"), "w") as f:  # every stage of every row
        f.write("where\tcandidate\tprotocol\twall\tstage\tseconds\n")
        for where, listed in (("eval", rows), ("run", in_run)):
            for label, protocol, _, wall, _, _, stages, steps in listed:
                for name, seconds in stages + [("import." + step, seconds) for step, seconds in steps]:
                    f.write(f"{where}\t{label}\t{protocol}\t{wall:.3f}\t{name}\t{seconds:.4f}\n")
    print("one kbv eval each (its reference worker's start and the baseline's timing included)")
    print_rows(rows)
    print("\nthe second of two evaluations of the same problem in one kbv run")
    print_rows(in_run)


def row(label, protocol, record):
    kernel = kernel_seconds(record)
    stages = sorted(record.get("stage_seconds", {}).items(), key=lambda item: -item[1])
    steps = list(record.get("import_steps_seconds", {}).items())
    return (label, protocol, record["verdict"], record["wall_seconds"], kernel, record["wall_seconds"] - kernel, stages,
            steps)


def print_rows(rows):
    print(f"{'candidate':16s} {'protocol':12s} {'verdict':10s} {'wall':>7s} {'kernel':>7s} {'overhead':>8s}  largest stages (s)")
    for label, protocol, verdict, wall, kernel, overhead, stages, _ in rows:
        largest = ", ".join(f"{n} {s:.2f}" for n, s in stages[:3])
        print(f"{label:16s} {protocol:12s} {verdict:10s} {wall:7.2f} {kernel:7.3f} {overhead:8.2f}  {largest}")


def run_twice(args, chosen):
    """One kbv run over two copies of every candidate; the rows of the second copies."""
    folder = os.path.join(args.out, "run")
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    manifest = os.path.join(folder, "manifest.tsv")
    with open(manifest, "w") as f:
        f.write("problem\tcandidate\n")
        for label, problem, candidate in chosen:
            for copy in (1, 2):
                path = os.path.join(folder, f"{label}.{copy}.py")
                shutil.copyfile(os.path.join(ROOT, candidate), path)
                f.write(f"{os.path.join(ROOT, problem)}\t{path}\n")
    db = os.path.join(folder, "run.sqlite")
    with open(os.path.join(folder, "run.log"), "w") as log:
        subprocess.run([args.kbv, "run", "--manifest", manifest, "--db", db, "--device", args.device, "--no-audit"],
                       check=True, stdout=log, stderr=subprocess.STDOUT)
    rows = []
    with sqlite3.connect(db) as store:
        for path, protocol, text in store.execute(
                "SELECT c.path, r.protocol, r.record FROM records r JOIN candidates c ON c.id = r.candidate_id "
                "ORDER BY c.path, r.protocol"):
            label, copy, _ = os.path.basename(path).rsplit(".", 2)
            if copy == "2":
                rows.append(row(label, protocol, json.loads(text)))
    return rows

if __name__ == "__main__":
    main()
