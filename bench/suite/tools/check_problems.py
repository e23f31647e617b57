#!/usr/bin/env python3
"""Runs every problem of manifest.tsv once on the CPU at its real size:
Model(*get_init_inputs())(*get_inputs()), and reports input bytes, output shape and times.

    python tools/check_problems.py [--threads N]
"""
import argparse
import importlib.util
import os
import sys
import time

SUITE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("problems", nargs="*")
    args = ap.parse_args()
    import torch
    torch.set_num_threads(args.threads)
    probs = []
    with open(os.path.join(SUITE, "manifest.tsv")) as f:
        header = f.readline().rstrip("\n").split("\t")
        for line in f:
            if line.strip():
                p = dict(zip(header, line.rstrip("\n").split("\t")))["problem"]
                if p not in probs:
                    probs.append(p)
    if args.problems:
        probs = [p for p in probs if os.path.basename(p) in args.problems or p in args.problems]
    ok = True
    for p in probs:
        path = os.path.normpath(os.path.join(SUITE, p))
        spec = importlib.util.spec_from_file_location("problem_mod", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        try:
            t0 = time.time()
            torch.manual_seed(42)
            inputs = mod.get_inputs()
            t1 = time.time()
            model = mod.Model(*mod.get_init_inputs())
            with torch.no_grad():
                out = model(*inputs)
            t2 = time.time()
            nbytes = sum(t.numel() * t.element_size() for t in inputs if isinstance(t, torch.Tensor))
            finite = bool(torch.isfinite(out).all())
            print("ok      %-28s inputs %8.1f MiB  draw %5.1fs  forward %6.1fs  out %s %s finite=%s"
                  % (os.path.basename(p), nbytes / 2**20, t1 - t0, t2 - t1, tuple(out.shape),
                     out.dtype, finite), flush=True)
            ok = ok and finite
            del inputs, out, model
        except Exception as e:  # report and go on to the next problem
            ok = False
            print("FAILED  %-28s %r" % (os.path.basename(p), e), flush=True)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
