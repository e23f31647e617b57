#!/usr/bin/env python3
"""Checks the suite's CUDA candidates for correctness on a machine without a GPU.

Each candidate's CUDA source is rewritten to include tools/emu/cuda_emu.h (a CPU emulator of
blocks, threads, __syncthreads and warp shuffles) and built as a plain C++ extension (with
AddressSanitizer when --asan is given: out-of-bounds reads and writes of tensors and of
__shared__ arrays abort). ModelNew then runs on CPU tensors at reduced sizes (TEST_SIZES below:
odd sizes, partial tiles) and is compared with the reference Model evaluated in float64, under
input families like the evaluator's hidden ones (standard, normal, shifted, heavy-tailed, sparse).

What this cannot see: timing, occupancy, register spills, memory coalescing, races that the OS
scheduler happens not to expose, and anything about the real compiler (nvcc builds are checked
by tools/compile_all.py).

    python tools/emu_check.py                       # every row of manifest.tsv
    python tools/emu_check.py candidates/1_ReLU/relu_vec4.py ...
"""
import argparse
import copy
import importlib.util
import json
import os
import re
import subprocess
import sys
import time

SUITE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EMU_DIR = os.path.join(SUITE, "tools", "emu")

# Reduced sizes per problem (module-level constants overridden before get_inputs()).
TEST_SIZES = {
    "1_ReLU": [dict(batch_size=3, dim=1001), dict(batch_size=4, dim=4096)],
    "2_SumReduction": [dict(batch_size=5, dim=1000), dict(batch_size=3, dim=4099),
                       dict(batch_size=33, dim=70, reduce_dim=0)],
    "3_Softmax": [dict(batch_size=3, dim=5000), dict(batch_size=2, dim=65536), dict(batch_size=4, dim=37)],
    "4_Matmul": [dict(M=70, K=45, N=33), dict(M=64, K=64, N=96)],
    "5_Conv2dReLUBias": [dict(batch_size=2, in_channels=3, out_channels=5, height=13, width=11,
                              kernel_size=3, bias_shape=(5, 1, 1)),
                         dict(batch_size=1, in_channels=2, out_channels=17, height=20, width=37,
                              kernel_size=5, bias_shape=(17, 1, 1)),
                         dict(batch_size=2, in_channels=6, out_channels=4, height=9, width=10,
                              kernel_size=1, bias_shape=(4, 1, 1))],
    "6_MLPBlock": [dict(batch_size=5, in_features=37, hidden_features=70, out_features=33),
                   dict(batch_size=8, in_features=64, hidden_features=40, out_features=17)],
    "7_LargeMatmul": [dict(N=130), dict(N=256)],
    "8_GELU": [dict(batch_size=3, dim=1001), dict(batch_size=8, dim=4096)],
    "9_LayerNorm": [dict(batch_size=2, seq_len=3, hidden=768), dict(batch_size=3, seq_len=2, hidden=37),
                    dict(batch_size=1, seq_len=2, hidden=5000)],
    "10_MeanDim": [dict(batch_size=3, reduce_size=37, inner=40), dict(batch_size=2, reduce_size=256, inner=64),
                   dict(batch_size=3, reduce_size=5, inner=7, reduce_dim=2),
                   dict(batch_size=20, reduce_size=3, inner=33, reduce_dim=0)],
    "11_MatmulOdd": [dict(M=130, K=61, N=150), dict(M=129, K=16, N=260)],
    "12_LinearGELU": [dict(batch_size=130, in_features=61, out_features=150),
                      dict(batch_size=64, in_features=128, out_features=256)],
    "13_Conv2dLarge": [dict(batch_size=2, in_channels=5, out_channels=6, height=9, width=7,
                            kernel_size=3, padding=1),
                       dict(batch_size=1, in_channels=3, out_channels=130, height=12, width=20,
                            kernel_size=5, padding=2),
                       dict(batch_size=2, in_channels=9, out_channels=17, height=16, width=16,
                            kernel_size=3, padding=0),
                       dict(batch_size=1, in_channels=4, out_channels=8, height=10, width=6,
                            kernel_size=3, padding=1),
                       dict(batch_size=1, in_channels=3, out_channels=5, height=9, width=20,
                            kernel_size=7, padding=3),
                       dict(batch_size=2, in_channels=10, out_channels=3, height=5, width=18,
                            kernel_size=1, padding=0)],
    "14_LayerNormLarge": [dict(batch_size=2, seq_len=2, hidden=8192), dict(batch_size=2, seq_len=3, hidden=1000),
                          dict(batch_size=1, seq_len=2, hidden=10003)],
    "15_SoftmaxLarge": [dict(batch_size=3, dim=16384), dict(batch_size=2, dim=1001), dict(batch_size=2, dim=20000),
                        dict(batch_size=2, dim=1000)],
    "16_SumDimLarge": [dict(batch_size=2, reduce_size=3000, inner=40), dict(batch_size=3, reduce_size=7, inner=256),
                       dict(batch_size=2, reduce_size=9, inner=300, reduce_dim=2)],
    "17_BatchedMatmul": [dict(batch_size=2, M=130, K=33, N=140), dict(batch_size=3, M=64, K=64, N=128)],
    "18_Attention": [dict(batch_size=1, num_heads=2, seq_len=100, head_dim=64),
                     dict(batch_size=2, num_heads=1, seq_len=64, head_dim=64)],
}

FAMILIES = ["standard", "normal", "shifted", "heavy", "sparse"]


def rewrite_launches(src):
    """`kern<T><<<cfg>>>(args)` -> `emu::launch(kern<T>, emu::cfg(cfg), args)`."""
    out = []
    pos = 0
    while True:
        i = src.find("<<<", pos)
        if i < 0:
            out.append(src[pos:])
            return "".join(out)
        # Kernel expression: identifier (with ::) optionally followed by balanced <...>.
        j = i
        while j > 0 and src[j - 1].isspace():
            j -= 1
        if src[j - 1] == ">":
            depth = 0
            k = j - 1
            while k >= 0:
                if src[k] == ">":
                    depth += 1
                elif src[k] == "<":
                    depth -= 1
                    if depth == 0:
                        break
                k -= 1
            j = k
        while j > 0 and (src[j - 1].isalnum() or src[j - 1] in "_:"):
            j -= 1
        kern = src[j:i].strip()
        end = src.find(">>>", i)
        cfg = src[i + 3:end]
        k = end + 3
        while src[k].isspace():
            k += 1
        assert src[k] == "(", "launch without argument list"
        k += 1
        rest = src[k:].lstrip()
        sep = "" if rest.startswith(")") else ", "
        out.append(src[pos:j])
        out.append("emu::launch(%s, emu::cfg(%s)%s" % (kern, cfg, sep))
        pos = k


def transform(cuda_src):
    keep = []
    for line in cuda_src.splitlines():
        if re.match(r"\s*#include\s*<(ATen/cuda/|c10/cuda/|cuda_runtime|cuda\.h|cublas)", line):
            continue
        keep.append(line)
    s = "\n".join(keep)
    s = s.replace(".is_cuda()", ".is_cpu()")
    s = s.replace("at::cuda::getCurrentCUDAStream()", "emu::stream()")
    s = rewrite_launches(s)
    return '#include "cuda_emu.h"\n' + s


def patched_load_inline(asan):
    from torch.utils import cpp_extension
    original = cpp_extension.load_inline

    def load_inline(name, cpp_sources, cuda_sources=None, functions=None, **kwargs):
        if isinstance(cuda_sources, (list, tuple)):
            cuda_sources = "\n".join(cuda_sources)
        src = transform(cuda_sources)
        cflags = ["-O1", "-g", "-std=c++17", "-Wno-unknown-pragmas"]
        ldflags = []
        if asan:
            cflags += ["-fsanitize=address", "-fno-omit-frame-pointer"]
            ldflags += ["-fsanitize=address"]
        return original(
            name=name + "_emu", cpp_sources=[src], functions=functions,
            extra_cflags=cflags, extra_ldflags=ldflags,
            extra_include_paths=[EMU_DIR, "/usr/local/cuda/include"], verbose=False)

    return load_inline


def load_module(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def redraw(t, family, g):
    import torch
    if not t.is_floating_point():
        return t
    if family == "standard":
        return t
    shape = t.shape
    if family == "normal":
        s = float(torch.empty(1).uniform_(0.5, 4, generator=g))
        return torch.randn(shape, generator=g) * s
    if family == "shifted":
        c = float(torch.empty(1).uniform_(-8, 8, generator=g))
        w = float(torch.empty(1).uniform_(0.25, 8, generator=g))
        return c + w * (2 * torch.rand(shape, generator=g) - 1)
    if family == "heavy":
        # Student-t with 4 degrees of freedom, random scale, plus a few large outliers.
        z = torch.randn(shape, generator=g)
        chi = torch.randn((4,) + tuple(shape), generator=g).pow(2).sum(0) / 4
        x = z / chi.sqrt() * float(torch.empty(1).uniform_(0.5, 3, generator=g))
        flat = x.view(-1)
        if flat.numel() > 4:
            idx = torch.randint(0, flat.numel(), (3,), generator=g)
            flat[idx] = 50.0 * torch.sign(torch.randn(3, generator=g))
        return x
    if family == "sparse":
        mag = 10 ** (torch.rand(shape, generator=g) * 4 - 2)
        sign = torch.sign(torch.randn(shape, generator=g))
        keep = torch.rand(shape, generator=g) < 0.1
        return torch.where(keep, mag * sign, torch.zeros(shape))
    raise ValueError(family)


def scaled_error(x, r):
    import torch
    x = x.double()
    fin = torch.isfinite(r)
    rms = r[fin].pow(2).mean().sqrt() if fin.any() else torch.tensor(0.0, dtype=torch.float64)
    both_nan = torch.isnan(x) & torch.isnan(r)
    d = (x - r).abs() / (rms + r.abs())
    d = torch.where(both_nan | (x == r), torch.zeros_like(d), d)
    d = torch.where(torch.isnan(d), torch.full_like(d, float("inf")), d)
    return float(d.max()) if d.numel() else 0.0


def check_one(problem, candidate, asan):
    import torch
    torch.set_num_threads(1)
    from torch.utils import cpp_extension
    cpp_extension.load_inline = patched_load_inline(asan)
    t0 = time.time()
    pmod = load_module(problem, "problem_mod")
    cmod = load_module(candidate, "candidate_mod")
    res = check_loaded(problem, pmod, cmod)
    res.update(problem=problem, candidate=candidate, build_s=round(time.time() - t0 - res["total_s"], 1))
    return res


def check_loaded(problem, pmod, cmod):
    import torch
    t0 = time.time()
    stem = os.path.splitext(os.path.basename(problem))[0]
    results = []
    worst = 0.0
    ok = True
    for sizes in TEST_SIZES[stem]:
        for k, v in sizes.items():
            assert hasattr(pmod, k), (stem, k)
            setattr(pmod, k, v)
        init = pmod.get_init_inputs()
        torch.manual_seed(0)
        ref = pmod.Model(*init)
        torch.manual_seed(0)
        new = cmod.ModelNew(*init)
        rsd, nsd = ref.state_dict(), new.state_dict()
        same_keys = list(rsd.keys()) == list(nsd.keys()) and all(
            rsd[k].shape == nsd[k].shape for k in rsd)
        if not same_keys:
            ok = False
            results.append(dict(sizes=sizes, error="state_dict mismatch"))
            continue
        new.load_state_dict(rsd)
        ref64 = copy.deepcopy(ref).double()
        ref32 = ref  # the evaluator's reference is the fp32 Model (TF32 off); float64 as a second opinion
        g = torch.Generator().manual_seed(1234)
        torch.manual_seed(42)
        base = pmod.get_inputs()
        for fam in FAMILIES:
            inputs = [redraw(t, fam, g) if isinstance(t, torch.Tensor) else t for t in base]
            with torch.no_grad():
                r = ref64(*[t.double() if isinstance(t, torch.Tensor) and t.is_floating_point()
                            else t for t in inputs])
                r32 = ref32(*inputs)
                x = new(*inputs)
                x2 = new(*inputs)
            if x.shape != r.shape or x.dtype != torch.float32:
                ok = False
                results.append(dict(sizes=sizes, family=fam,
                                    error="shape/dtype %s %s vs %s" % (tuple(x.shape), x.dtype, tuple(r.shape))))
                continue
            # Pass: as close to the fp32 reference as the evaluator's floor (1e-4, scaled error),
            # or as close to float64 as 3x the fp32 reference's own error (e.g. GELU far below 0,
            # where every fp32 evaluation rounds 1 + erf(x) to 0).
            e32 = scaled_error(x, r32.double())
            e64 = scaled_error(x, r)
            bound64 = max(1e-4, 3 * scaled_error(r32, r))
            e = min(e32, e64 * 1e-4 / bound64)
            rep = bool(torch.equal(x, x2) or (torch.isnan(x) == torch.isnan(x2)).all()
                       and torch.equal(torch.nan_to_num(x), torch.nan_to_num(x2)))
            worst = max(worst, e)
            if not (e < 1e-4) or not rep:
                ok = False
            results.append(dict(sizes=sizes, family=fam, err=e, err_vs_fp32=e32, err_vs_fp64=e64,
                                bound_fp64=bound64, repeat_equal=rep))
    return dict(ok=ok, worst_err=worst, total_s=round(time.time() - t0, 1), runs=results)


def report(res):
    status = "ok" if res.get("ok") else "FAILED"
    print("%-6s %-50s worst_err=%s  %ss" % (status, res["candidate"], res.get("worst_err"),
                                            res.get("total_s")), flush=True)
    if not res.get("ok"):
        if "error" in res:
            print(res["error"], flush=True)
        for r in res.get("runs", []):
            if "error" in r or not (r.get("err", 1) < 1e-4) or not r.get("repeat_equal", True):
                print("   ", r, flush=True)


class _Collected:
    """What a candidate's load_inline call asked for; attribute access is served by the combined
    extension once it is built."""
    registry = []
    built = None
    original_load_inline = None

    def __init__(self, name, cuda_src, functions):
        self.name = name
        self.cuda_src = cuda_src
        self.functions = list(functions)
        _Collected.registry.append(self)

    def __getattr__(self, fn):
        if fn in ("name", "cuda_src", "functions"):
            raise AttributeError(fn)
        if fn not in self.functions:
            raise AttributeError(fn)
        return getattr(_Collected.built, "%s__%s" % (self.name, fn))


def collecting_load_inline(name, cpp_sources, cuda_sources=None, functions=None, **kwargs):
    if isinstance(cuda_sources, (list, tuple)):
        cuda_sources = "\n".join(cuda_sources)
    return _Collected(name, cuda_sources, functions)


def build_combined(asan):
    """One C++ extension holding every collected candidate, each in namespace emu_<name>."""
    includes, bodies, defs = [], [], []
    for c in _Collected.registry:
        body = transform(c.cuda_src)
        kept = []
        for line in body.splitlines():
            if re.match(r"\s*#include", line):
                if line.strip() not in includes:
                    includes.append(line.strip())
            else:
                kept.append(line)
        bodies.append("namespace emu_%s {\n%s\n}  // namespace emu_%s\n" % (c.name, "\n".join(kept), c.name))
        for fn in c.functions:
            defs.append('  m.def("%s__%s", &emu_%s::%s);' % (c.name, fn, c.name, fn))
    src = "\n".join(includes) + "\n" + "\n".join(bodies) + \
        "\nPYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {\n" + "\n".join(defs) + "\n}\n"
    cflags = ["-O1", "-g", "-std=c++17", "-Wno-unknown-pragmas"]
    ldflags = []
    if asan:
        cflags += ["-fsanitize=address", "-fno-omit-frame-pointer"]
        ldflags += ["-fsanitize=address"]
    _Collected.built = _Collected.original_load_inline(
        name="kbv_suite_emu_combined", cpp_sources=[src], functions=None,
        extra_cflags=cflags, extra_ldflags=ldflags,
        extra_include_paths=[EMU_DIR, "/usr/local/cuda/include"], verbose=False)


def run_combined(rows, asan):
    """Imports every candidate (collecting its source), builds once, then checks each in turn."""
    import torch
    torch.set_num_threads(1)
    from torch.utils import cpp_extension
    _Collected.original_load_inline = cpp_extension.load_inline
    cpp_extension.load_inline = collecting_load_inline
    mods = []
    for i, (prob, cand) in enumerate(rows):
        p = os.path.normpath(os.path.join(SUITE, prob))
        c = os.path.normpath(os.path.join(SUITE, cand))
        mods.append((prob, cand, p, load_module(p, "problem_%d" % i), load_module(c, "cand_%d" % i)))
    t0 = time.time()
    build_combined(asan)
    print("combined build %.0fs" % (time.time() - t0), flush=True)
    results = []
    for prob, cand, p, pmod, cmod in mods:
        res = check_loaded(p, pmod, cmod)
        res.update(problem=prob, candidate=cand)
        results.append(res)
        report(res)
    return results


def manifest_rows():
    rows = []
    with open(os.path.join(SUITE, "manifest.tsv")) as f:
        header = f.readline().rstrip("\n").split("\t")
        for line in f:
            if not line.strip():
                continue
            d = dict(zip(header, line.rstrip("\n").split("\t")))
            rows.append((d["problem"], d["candidate"]))
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("candidates", nargs="*", help="candidate paths relative to bench/suite")
    ap.add_argument("--asan", action="store_true")
    ap.add_argument("--one", nargs=2, metavar=("PROBLEM", "CANDIDATE"), help=argparse.SUPPRESS)
    ap.add_argument("--timeout", type=int, default=1800)
    ap.add_argument("--json", default=None)
    ap.add_argument("--combined", action="store_true",
                    help="one extension for all candidates, one process (run under LD_PRELOAD of "
                         "libasan when --asan)")
    args = ap.parse_args()
    if args.one:
        res = check_one(*args.one, asan=args.asan)
        print("EMU_RESULT " + json.dumps(res))
        return
    rows = manifest_rows()
    if args.candidates:
        want = set(os.path.normpath(c) for c in args.candidates)
        rows = [r for r in rows if os.path.normpath(r[1]) in want]
    if args.combined:
        all_res = run_combined(rows, args.asan)
        if args.json:
            with open(args.json, "w") as f:
                json.dump(all_res, f, indent=1)
        sys.exit(0 if all(r.get("ok") for r in all_res) else 1)
    all_res = []
    for prob, cand in rows:
        p = os.path.normpath(os.path.join(SUITE, prob))
        c = os.path.normpath(os.path.join(SUITE, cand))
        env = dict(os.environ)
        tag = re.sub(r"[^A-Za-z0-9]+", "_", cand)
        env["TORCH_EXTENSIONS_DIR"] = "/tmp/kbv_suite_emu/" + tag
        env.setdefault("MAX_JOBS", "1")
        if args.asan:
            lib = subprocess.run(["gcc", "-print-file-name=libasan.so"], capture_output=True,
                                 text=True).stdout.strip()
            env["LD_PRELOAD"] = lib
            env["ASAN_OPTIONS"] = "detect_leaks=0:abort_on_error=1"
        cmd = [sys.executable, os.path.abspath(__file__), "--one", p, c] + (["--asan"] if args.asan else [])
        try:
            proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=args.timeout)
            line = [l for l in proc.stdout.splitlines() if l.startswith("EMU_RESULT ")]
            if line:
                res = json.loads(line[-1][len("EMU_RESULT "):])
            else:
                res = dict(problem=prob, candidate=cand, ok=False,
                           error=(proc.stdout[-3000:] + proc.stderr[-6000:]))
        except subprocess.TimeoutExpired:
            res = dict(problem=prob, candidate=cand, ok=False, error="timeout")
        res["candidate"] = cand
        all_res.append(res)
        report(res)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(all_res, f, indent=1)
    sys.exit(0 if all(r.get("ok") for r in all_res) else 1)


if __name__ == "__main__":
    main()
