"""What a draw from generators of its own costs (src/kbv/python/draws.py) against the plain draw
after torch.manual_seed, per example problem, in turns in one process: each timed call of an
evaluation refills its inputs with one such draw, outside the timed window.

Usage: python3 bench/draw_cost.py [--device cuda] [--rounds 200]"""
import argparse
import glob
import importlib.util
import os
import sys
import time

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "src", "kbv", "python"))
import draws  # noqa: E402


def load(path):
    spec = importlib.util.spec_from_file_location(os.path.basename(path)[:-3], path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def plain(get_inputs, seed, device):
    torch.manual_seed(seed)
    with torch.device(device):
        inputs = get_inputs()
    return [x.to(device) if isinstance(x, torch.Tensor) else x for x in inputs]


def seconds(draw, get_inputs, device, rounds):
    """Median seconds of `rounds` draws, the device's work included."""
    samples = []
    for seed in range(rounds):
        begun = time.perf_counter()
        draw(get_inputs, seed, device)
        if device == "cuda":
            torch.cuda.synchronize()
        samples.append(time.perf_counter() - begun)
    return sorted(samples)[len(samples) // 2]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--rounds", type=int, default=200)
    args = parser.parse_args()
    print(f"{'problem':24} {'plain us':>10} {'private us':>11} {'ratio':>6}")
    for path in sorted(glob.glob(os.path.join(ROOT, "examples", "problems", "*.py"))):
        get_inputs = load(path).get_inputs
        timed = {"plain": [], "private": []}
        for _ in range(3):  # in turns, so that a drift of the machine touches both
            timed["plain"].append(seconds(plain, get_inputs, args.device, args.rounds))
            timed["private"].append(seconds(draws.draw_standard, get_inputs, args.device, args.rounds))
        p, q = min(timed["plain"]), min(timed["private"])
        print(f"{os.path.basename(path)[:-3]:24} {p * 1e6:10.1f} {q * 1e6:11.1f} {q / p:6.2f}")


if __name__ == "__main__":
    main()
