#!/usr/bin/env python3
"""kbv serve against kbv run on the same candidates, side by side in one run (issue: a service must
cost nothing in throughput): N copies of the examples' honest kernels for two problems, evaluated
once by `kbv run --manifest` and once through `kbv serve` by C concurrent kbv_client clients.
Prints, last, each one's wall and evaluations per minute, and their ratio.

    PYTHONPATH=python python3 bench/serve_vs_run.py OUT_DIR [--device cuda] [--count 64] [--clients 8]

The kernels are built first, untimed, so both sides find them in the content-keyed cache. kbv
run's wall is the whole command (its zygote's start, its cache lookups); kbv serve's is from the
first request sent to the last answer, the service started before. Both under one protocol
(--protocol), audits off.
"""

import argparse
import re
import subprocess
import sys
import time
from pathlib import Path

from kbv_client import Client
from kbv_client.latency import describe

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
PROBLEMS = ["1_ReLU", "2_SumReduction"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--kbv", default=str(ROOT / "build" / "kbv"))
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--gpus", default="0")
    parser.add_argument("--count", type=int, default=64)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--protocol", default="verified", choices=["verified", "kernelbench"])
    args = parser.parse_args()

    args.out.mkdir(parents=True, exist_ok=True)
    kind = "cuda_honest" if args.device == "cuda" else "cpu_honest"
    rows, requests = ["problem,candidate,run,sample"], []
    for i in range(args.count):
        problem = EXAMPLES / "problems" / (PROBLEMS[i % 2] + ".py")
        source = (EXAMPLES / "candidates" / PROBLEMS[i % 2] / (kind + ".py")).read_text()
        candidate = args.out / "candidates" / ("sample_%d.py" % i)
        candidate.parent.mkdir(exist_ok=True)
        candidate.write_text(source)
        rows.append("%s,%s,bench,%d" % (problem, candidate, i))
        requests.append(dict(problem=problem, candidate_source=source, protocol=args.protocol, run="bench", sample=i))
    manifest = args.out / "manifest.csv"
    manifest.write_text("\n".join(rows) + "\n")
    common = ["--device", args.device, "--gpus", args.gpus]

    for db in args.out.glob("*.sqlite*"):
        db.unlink()
    # The kernels built first (untimed): both sides then find them in the content-keyed cache.
    built = subprocess.run([args.kbv, "compile", "--device", args.device] + [str(args.out / "candidates" / ("sample_%d.py" % i))
                                                                             for i in range(min(2, args.count))],
                           capture_output=True, text=True)
    if built.returncode != 0:
        sys.exit("kbv compile failed:\n" + built.stdout + built.stderr[-3000:])
    begun = time.monotonic()
    run = subprocess.run([args.kbv, "run", "--manifest", str(manifest), "--db", str(args.out / "run.sqlite"),
                          "--protocols", args.protocol, "--no-audit"] + common, capture_output=True, text=True)
    run_wall = time.monotonic() - begun
    if run.returncode != 0 or ("%d evaluated" % args.count) not in run.stdout:
        sys.exit("kbv run failed:\n" + run.stdout + run.stderr[-3000:])

    log = open(args.out / "serve.log", "w+")
    serve = subprocess.Popen([args.kbv, "serve", "--port", "0", "--db", str(args.out / "serve.sqlite"),
                              "--queue", str(2 * args.clients)] + common, stdout=log, stderr=subprocess.STDOUT)
    try:
        url = None
        while url is None:
            time.sleep(0.1)
            log.seek(0)
            found = re.search(r"listening on (http://\S+)", log.read())
            url = found and found.group(1)
            if serve.poll() is not None:
                sys.exit("kbv serve did not start:\n" + log.read())
        begun = time.monotonic()
        answers = Client(url).evaluate_many(requests, concurrency=args.clients)
        serve_wall = time.monotonic() - begun
        failed = [a for a in answers if not isinstance(a, dict)]
        if failed:
            sys.exit("kbv serve failed: %s" % failed[:3])
    finally:
        serve.terminate()
        serve.wait()

    print("| %s, %d candidates, %s | wall s | evaluations/min |" % (args.device, args.count, args.protocol))
    print("|---|---|---|")
    print("| kbv run | %.1f | %.1f |" % (run_wall, 60 * args.count / run_wall))
    print("| kbv serve, %d clients | %.1f | %.1f |" % (args.clients, serve_wall, 60 * args.count / serve_wall))
    print("kbv serve / kbv run throughput: %.2fx; kbv serve %s" % (run_wall / serve_wall, describe(answers)))


if __name__ == "__main__":
    main()
