#!/usr/bin/env python3
"""Builds every candidate of manifest.tsv with nvcc (import = load_inline build), one at a time,
each in its own process and TORCH_EXTENSIONS_DIR, and checks that ModelNew(*get_init_inputs())
constructs with the same state_dict keys and shapes as Model. Needs no GPU.

    TORCH_CUDA_ARCH_LIST=9.0 python tools/compile_all.py [--json out.json] [candidate ...]
"""
import argparse
import importlib.util
import json
import os
import re
import subprocess
import sys
import time

SUITE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def load_module(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def check_one(problem, candidate):
    import torch
    t0 = time.time()
    pmod = load_module(problem, "problem_mod")
    cmod = load_module(candidate, "candidate_mod")  # the nvcc build happens here
    build_s = time.time() - t0
    init = pmod.get_init_inputs()
    torch.manual_seed(0)
    ref = pmod.Model(*init)
    torch.manual_seed(0)
    new = cmod.ModelNew(*init)
    rsd, nsd = ref.state_dict(), new.state_dict()
    keys_ok = list(rsd.keys()) == list(nsd.keys())
    shapes_ok = keys_ok and all(rsd[k].shape == nsd[k].shape for k in rsd)
    # Same seed, same construction order: the parameters should even be equal.
    values_equal = shapes_ok and all(torch.equal(rsd[k], nsd[k]) for k in rsd)
    return dict(ok=bool(shapes_ok), build_s=round(build_s, 1),
                state_keys=list(rsd.keys()), keys_ok=keys_ok, shapes_ok=shapes_ok,
                values_equal=bool(values_equal))


def manifest_rows():
    rows = []
    with open(os.path.join(SUITE, "manifest.tsv")) as f:
        header = f.readline().rstrip("\n").split("\t")
        for line in f:
            if line.strip():
                d = dict(zip(header, line.rstrip("\n").split("\t")))
                rows.append((d["problem"], d["candidate"]))
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("candidates", nargs="*")
    ap.add_argument("--one", nargs=2, help=argparse.SUPPRESS)
    ap.add_argument("--json", default=None)
    ap.add_argument("--timeout", type=int, default=1800)
    args = ap.parse_args()
    if args.one:
        print("COMPILE_RESULT " + json.dumps(check_one(*args.one)))
        return
    rows = manifest_rows()
    if args.candidates:
        want = set(os.path.normpath(c) for c in args.candidates)
        rows = [r for r in rows if os.path.normpath(r[1]) in want]
    results = []
    for prob, cand in rows:
        p = os.path.normpath(os.path.join(SUITE, prob))
        c = os.path.normpath(os.path.join(SUITE, cand))
        env = dict(os.environ)
        env.setdefault("TORCH_CUDA_ARCH_LIST", "9.0")
        env.setdefault("MAX_JOBS", "1")
        env["TORCH_EXTENSIONS_DIR"] = "/tmp/kbv_suite_nvcc/" + re.sub(r"[^A-Za-z0-9]+", "_", cand)
        t0 = time.time()
        try:
            proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--one", p, c],
                                  env=env, capture_output=True, text=True, timeout=args.timeout)
            line = [l for l in proc.stdout.splitlines() if l.startswith("COMPILE_RESULT ")]
            if line:
                res = json.loads(line[-1][len("COMPILE_RESULT "):])
            else:
                res = dict(ok=False, error=proc.stdout[-2000:] + proc.stderr[-8000:])
        except subprocess.TimeoutExpired:
            res = dict(ok=False, error="timeout")
        res.update(problem=prob, candidate=cand, wall_s=round(time.time() - t0, 1))
        results.append(res)
        print("%-6s %-55s build %ss  keys %s" % ("ok" if res["ok"] else "FAILED", cand,
                                                res.get("build_s"), res.get("state_keys")), flush=True)
        if not res["ok"]:
            print(res.get("error", res), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    sys.exit(0 if all(r["ok"] for r in results) else 1)


if __name__ == "__main__":
    main()
