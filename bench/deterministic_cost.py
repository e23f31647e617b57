"""What torch.use_deterministic_algorithms(True) would cost the reference, and what it would buy:
per problem file, the reference's forward time (median of CUDA-event samples) with torch's
defaults and in deterministic mode, side by side, and the scaled error between two calls on the
same inputs in each mode (kbv's rounding_reference: float atomics, a summation order that
changes between calls). The baseline's flags as kbv times it: TF32 on for cuBLAS and cuDNN.
cuBLAS needs CUBLAS_WORKSPACE_CONFIG before its first call to be deterministic: set here for
both modes, so they differ only in torch's switch.

Usage: python3 bench/deterministic_cost.py PROBLEM.py... [--calls N] [--out FILE.json]
"""
import argparse
import importlib.util
import json
import os
import statistics
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402  (after the cuBLAS setting)


def load(path):
    spec = importlib.util.spec_from_file_location("problem", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def scaled_error(x, r):
    """kbv's: max |x - r| / (rms(r) + |r|), in float64 (docs/PROTOCOL.md, "Scaled error")."""
    x, r = x.double(), r.double()
    rms = r.square().mean().sqrt()
    return ((x - r).abs() / (rms + r.abs())).max().item()


def outputs(model, inputs):
    out = model(*inputs)
    return [out] if torch.is_tensor(out) else [t for t in out if torch.is_tensor(t)]


def measure(model, inputs, calls):
    with torch.no_grad():
        first = outputs(model, inputs)
        second = outputs(model, inputs)
        spread = max(scaled_error(a, b) for a, b in zip(second, first))
        for _ in range(3):
            model(*inputs)
        samples = []
        for _ in range(calls):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            model(*inputs)
            end.record()
            end.synchronize()
            samples.append(start.elapsed_time(end))
    return statistics.median(samples), spread


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("problems", nargs="+")
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--out")
    args = parser.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    rows = []
    print(f"{'problem':56} {'default ms':>10} {'determ. ms':>10} {'cost':>6} {'spread':>9} {'determ. spread':>14}")
    for path in args.problems:
        row = {"problem": os.path.basename(path)}
        try:
            problem = load(path)
            torch.manual_seed(0)
            model = problem.Model(*problem.get_init_inputs()).cuda().eval()
            inputs = [t.cuda() if torch.is_tensor(t) else t for t in problem.get_inputs()]
            torch.use_deterministic_algorithms(False)
            row["default_ms"], row["default_spread"] = measure(model, inputs, args.calls)
            torch.use_deterministic_algorithms(True)
            try:
                row["deterministic_ms"], row["deterministic_spread"] = measure(model, inputs, args.calls)
            except RuntimeError as error:  # an op torch has no deterministic kernel for
                row["deterministic_error"] = str(error).splitlines()[0]
            finally:
                torch.use_deterministic_algorithms(False)
            del model, inputs
        except Exception as error:  # the problem itself: out of memory, a bad file
            row["error"] = f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"
        torch.cuda.empty_cache()
        rows.append(row)
        name = row["problem"][:56]
        if "error" in row:
            print(f"{name:56} error: {row['error'][:80]}")
        elif "deterministic_error" in row:
            print(f"{name:56} {row['default_ms']:10.3f} {'-':>10} {'-':>6} {row['default_spread']:9.1e}  "
                  f"no deterministic kernel: {row['deterministic_error'][:60]}")
        else:
            print(f"{name:56} {row['default_ms']:10.3f} {row['deterministic_ms']:10.3f} "
                  f"{row['deterministic_ms'] / row['default_ms']:5.2f}x {row['default_spread']:9.1e} "
                  f"{row['deterministic_spread']:14.1e}")
        sys.stdout.flush()
    if args.out:
        with open(args.out, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
