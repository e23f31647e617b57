"""One candidate's forward, called the way kbv times it, for Nsight Compute to measure.

Usage: ncu_calls.py PROBLEM CANDIDATE [--calls N] [--pattern verified|kernelbench]

Loads the problem and the candidate as KernelBench files (load_inline builds into
TORCH_EXTENSIONS_DIR), draws the problem's inputs on the GPU, makes 3 warm-up calls, then N calls,
each after an L2 flush and inside the NVTX range `kbv timed candidate`, the name kbv's worker gives
its timed calls: `ncu --nvtx --nvtx-include "kbv timed candidate/"` profiles those kernels only.
The pattern is that of kbv's preset: `kernelbench` times one input set after a 256 MiB flush;
`verified` two sets in turn, new content in their buffers before each round, a flush of twice
the L2 (the memory a kernel finds, and so its time, differs between the two).
kbv's own workers are not run under ncu: a profiled process's timings are not the ones to check,
and this keeps the profiler away from kbv's process tree. `--calls 0` only builds.
"""
import argparse

import torch


def load(path, name):
    namespace = {"__name__": name, "__file__": path}
    with open(path) as f:
        exec(compile(f.read(), path, "exec"), namespace)
    return namespace


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("problem")
    parser.add_argument("candidate")
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--pattern", choices=["verified", "kernelbench"], default="verified")
    args = parser.parse_args()

    problem = load(args.problem, "kbv_problem")
    candidate = load(args.candidate, "kbv_candidate")
    if args.calls == 0:
        return
    torch.manual_seed(42)
    with torch.device("cuda"):
        model = candidate["ModelNew"](*problem["get_init_inputs"]())
    model = model.cuda()
    verified = args.pattern == "verified"

    def draw():
        with torch.device("cuda"):
            return [x.cuda() if isinstance(x, torch.Tensor) else x for x in problem["get_inputs"]()]

    sets = [draw() for _ in range(2 if verified else 1)]
    flush_bytes = 2 * torch.cuda.get_device_properties(0).L2_cache_size if verified else 256 << 20
    flush = torch.empty(flush_bytes, dtype=torch.uint8, device="cuda")
    with torch.no_grad():
        for i in range(3):
            model(*sets[i % len(sets)])
        torch.cuda.synchronize()
        for i in range(args.calls):
            inputs = sets[i % len(sets)]
            if verified and i >= len(sets) and i % len(sets) == 0:
                for held in sets:  # new content, same buffers
                    for buffer, fresh in zip(held, draw()):
                        if isinstance(buffer, torch.Tensor):
                            buffer.copy_(fresh)
            flush.zero_()
            torch.cuda.nvtx.range_push("kbv timed candidate")
            model(*inputs)
            torch.cuda.nvtx.range_pop()
            torch.cuda.synchronize()


if __name__ == "__main__":
    main()
