# The Python side of a kbv worker: the few steps that must run as Python (importing KernelBench
# files, constructing modules, calling forward). Everything around them is C++.
import fcntl
import glob
import importlib.util
import os
import random
import re
import subprocess
import sys
import traceback

import torch


def load_module(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path} as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


# A failed build that the same content would fail again: a compiler's or linker's own diagnostic,
# and no sign of a compiler killed or starved (those builds are tried again).
_DIAGNOSTIC = re.compile(r":\d+:\d+: error:|\(\d+\): error:|ld returned 1 exit status")
_TRANSIENT = re.compile(r"signal|killed|no space left|cannot allocate memory|out of memory|bad_alloc|"
                        r"internal compiler error", re.IGNORECASE)
FAILED_BUILD_LOG = "kbv-build-failed.log"


def build_ahead(module, path):
    """Builds now the extensions the candidate would build later -- in ModelNew.__init__, on its first
    forward, inside a try -- so that its evaluation finds them built: every call of
    torch.utils.cpp_extension's load_inline or load in its source, the callee and the arguments evaluated
    in the imported module's namespace (a build its import already made is found built at once).
    Returns {"built": [names], "failed": [{"line", "error"}], "missed": [{"line", "why"}]}: a call whose
    arguments name what exists only at run time (self, a local, forward's inputs) cannot be made here."""
    import ast
    import torch.utils.cpp_extension as cpp_extension
    builders = (cpp_extension.load_inline, cpp_extension.load)
    with open(path) as f:
        tree = ast.parse(f.read(), path)
    namespace = vars(module)

    def value(node):
        return eval(compile(ast.Expression(body=node), path, "eval"), namespace)

    done = {"built": [], "failed": [], "missed": []}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        try:
            callee = value(node.func)
        except Exception:
            continue  # not a name the module knows: not a build call
        if not any(callee is builder for builder in builders):
            continue
        try:
            args, kwargs = [], {}
            for arg in node.args:
                if isinstance(arg, ast.Starred):
                    args.extend(value(arg.value))
                else:
                    args.append(value(arg))
            for keyword in node.keywords:
                if keyword.arg is None:
                    kwargs.update(value(keyword.value))
                else:
                    kwargs[keyword.arg] = value(keyword.value)
        except Exception as error:
            done["missed"].append({"line": node.lineno, "why": f"{type(error).__name__}: {error}"})
            continue
        try:
            callee(*args, **kwargs)
            done["built"].append(str(kwargs.get("name", args[0] if args else "?")))
        except BaseException as error:  # a build that fails here fails in the evaluation too
            done["failed"].append({"line": node.lineno, "error": f"{type(error).__name__}: {str(error)[-300:]}"})
    return done


def load_candidate(path, name):
    """Imports a candidate (its kernels compile here). Returns (module, None) or (None, (kind, log)).
    One import at a time per extension directory: torch's own build lock lets a process that waited
    import a build that failed in the process holding it, a compile error then misread as a missing
    module. Under this lock no other build runs here, so a torch lock file found in the directory
    is a killed build's: torch would wait for it forever, and it is removed.
    The directory is the candidate content's own (eval/extension_cache.h): a build that failed
    with a compiler's diagnostic leaves its log there, and the next import of the same content
    returns it instead of spending the build again (kbv run's evaluation after its build ahead)."""
    directory = os.environ.get("TORCH_EXTENSIONS_DIR")
    lock = None
    if directory:
        os.makedirs(directory, exist_ok=True)
        lock = open(os.path.join(directory, "kbv-build.lock"), "w")
        fcntl.flock(lock, fcntl.LOCK_EX)
        for stale in glob.glob(os.path.join(directory, "*", "lock")):
            os.remove(stale)
        failed = os.path.join(directory, FAILED_BUILD_LOG)
        if os.path.exists(failed):
            with open(failed) as f:
                return None, ("compile_error", f"this content's build failed before, not built again "
                                               f"(the log, kept in {failed}: delete it to build again):\n{f.read()}")
    try:
        return load_module(path, name), None
    except BaseException as error:  # SystemExit and KeyboardInterrupt included: the candidate's doing
        log = traceback.format_exc()
        building = isinstance(error, subprocess.CalledProcessError) or "Error building extension" in log
        if building and directory and _DIAGNOSTIC.search(log) and not _TRANSIENT.search(log):
            try:
                with open(os.path.join(directory, FAILED_BUILD_LOG), "w") as f:
                    f.write(log)
            except OSError:
                pass  # not kept: the next import builds again, as it did before
        return None, ("compile_error" if building else "runtime_error", log)
    finally:
        if lock is not None:
            lock.close()


def build(cls, init, seed):
    torch.manual_seed(seed)
    return cls(*init)


def copy_state(dst, src):
    """Copies src's parameters and buffers into dst where names, shapes and dtypes match."""
    source = dict(src.named_parameters())
    source.update(dict(src.named_buffers()))
    copied = []
    with torch.no_grad():
        for name, tensor in list(dst.named_parameters()) + list(dst.named_buffers()):
            value = source.get(name)
            if value is not None and value.shape == tensor.shape and value.dtype == tensor.dtype:
                tensor.copy_(value)
                copied.append(name)
    return copied


def draw_standard(get_inputs, seed, device):
    """The problem's own inputs under `seed`, drawn on `device` (factory calls default to it).
    Python's and numpy's generators are seeded too, so both workers draw the same values."""
    torch.manual_seed(seed)
    random.seed(seed)
    if "numpy" in sys.modules:
        sys.modules["numpy"].random.seed(seed % 2**32)
    with torch.device(device):
        inputs = get_inputs()
    if not isinstance(inputs, (list, tuple)):
        raise TypeError(f"get_inputs() returned {type(inputs).__name__}, expected a list")
    return [x.to(device) if isinstance(x, torch.Tensor) else x for x in inputs]


def forward(model, inputs):
    with torch.no_grad():
        return model(*inputs)


def split_outputs(result):
    """(list of tensors, None) or (None, reason) when the result is not tensors."""
    items = list(result) if isinstance(result, (tuple, list)) else [result]
    for index, item in enumerate(items):
        if type(item) is not torch.Tensor:
            return None, f"output {index} is {type(item).__module__}.{type(item).__name__}, not torch.Tensor"
    return items, None


def versions():
    return {"torch": torch.__version__, "cuda": torch.version.cuda or "", "python": sys.version.split()[0]}
