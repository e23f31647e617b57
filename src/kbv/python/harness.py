# The Python side of a kbv worker: the few steps that must run as Python (importing KernelBench
# files, constructing modules, calling forward). Everything around them is C++.
import fcntl
import glob
import importlib.util
import os
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


def _call_key(name, arguments):
    """A digest of a load_inline or load call (`name`), from its arguments by name and the contents
    of the files `load` names as sources. The same digest, the same compiler input. None where an
    argument has no stable text (a repr holding an address) or a source cannot be read."""
    import hashlib
    text = repr(sorted(arguments.items()))
    if " at 0x" in text:
        return None
    digest = hashlib.sha256(f"{name}:{text}".encode())
    if name == "load":
        sources = arguments.get("sources", [])
        for source in [sources] if isinstance(sources, str) else sources:
            try:
                with open(source, "rb") as f:
                    digest.update(f.read())
            except (OSError, TypeError):
                return None
    return digest.hexdigest()[:32]


_SOURCE_FOLDER_LIMITS = (64, 16 << 20)  # files, bytes: a folder of sources, not a data set


def _stable_sources(directory, sources):
    """`load`'s sources when they lie in a temporary folder (tempfile.mkdtemp, a new name in every
    process): the folder's files copied to one named by their contents, under `directory`, and the
    sources' paths there; None to leave them as given. Torch's build file names the sources' paths,
    so the same code under a new path is compiled again (60 s in the lane for a candidate built
    ahead); under a path of its contents, ninja finds it built. Only a flat folder of a few files is
    copied whole (a header the sources include beside them comes along); anything else is left."""
    import hashlib
    import shutil
    import tempfile
    single = isinstance(sources, str)
    try:
        paths = [os.path.abspath(s) for s in ([sources] if single else sources)]
    except TypeError:
        return None
    folders = {os.path.dirname(p) for p in paths}
    if len(folders) != 1:
        return None
    folder = folders.pop()
    if os.path.commonpath([folder, os.path.realpath(tempfile.gettempdir())]) != os.path.realpath(tempfile.gettempdir()):
        return None
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
        if len(entries) > _SOURCE_FOLDER_LIMITS[0] or not all(e.is_file(follow_symlinks=False) for e in entries):
            return None
        if sum(e.stat().st_size for e in entries) > _SOURCE_FOLDER_LIMITS[1]:
            return None
        contents = {}
        for e in entries:
            with open(e.path, "rb") as f:
                contents[e.name] = f.read()
    except OSError:
        return None
    digest = hashlib.sha256()
    for name, data in contents.items():
        digest.update(f"{name}\0{len(data)}\0".encode())
        digest.update(data)
    target = os.path.join(directory, "kbv-sources", digest.hexdigest()[:32])
    if not os.path.isdir(target):
        staging = f"{target}.{os.getpid()}"
        try:
            os.makedirs(staging, exist_ok=True)
            for name, data in contents.items():
                with open(os.path.join(staging, name), "wb") as f:
                    f.write(data)
            os.rename(staging, target)
        except OSError:
            shutil.rmtree(staging, ignore_errors=True)
            if not os.path.isdir(target):
                return None  # another process's copy lands there, or none can: built where given
    moved = [os.path.join(target, os.path.basename(p)) for p in paths]
    return moved[0] if single else moved


def building_once(builder):
    """`builder` (load_inline or load), made to build each call's code once per candidate content
    (its extension directory, TORCH_EXTENSIONS_DIR), whichever process asks:
    - `load` of sources in a temporary folder builds them from a folder named by their contents
      (_stable_sources), which the next process finds built;
    - a call that failed before with the same arguments and sources, with a compiler's own
      diagnostic, raises that failure again instead of building: the compiler would say the same.
      A candidate that catches a failed build and goes on with PyTorch (`try: load_inline(...)
      except: ...`) would otherwise build it again in its evaluation, on the GPU lane, after
      `kbv compile` or kbv run's build ahead tried it."""
    if getattr(builder, "kbv_builds_once", False):
        return builder

    def build(*args, **kwargs):
        directory = os.environ.get("TORCH_EXTENSIONS_DIR")
        if not directory:
            return builder(*args, **kwargs)
        import inspect
        try:
            bound = inspect.signature(builder).bind(*args, **kwargs)
        except TypeError:
            return builder(*args, **kwargs)  # torch says what is wrong with the call
        if builder.__name__ == "load":
            moved = _stable_sources(directory, bound.arguments.get("sources"))
            if moved is not None:
                bound.arguments["sources"] = moved
        args, kwargs = bound.args, bound.kwargs
        key = _call_key(builder.__name__, bound.arguments)
        kept = os.path.join(directory, f"kbv-build-failed-{key}.log") if key else None
        if kept and os.path.exists(kept):
            with open(kept) as f:
                raise RuntimeError(f"{f.read()}\n(this call failed before with the same arguments and sources: "
                                   f"not built again; the log is kept in {kept})")
        try:
            return builder(*args, **kwargs)
        except Exception as error:
            log = str(error)
            if kept and _DIAGNOSTIC.search(log) and not _TRANSIENT.search(log):
                try:
                    with open(kept, "w") as f:
                        f.write(log)
                except OSError:
                    pass  # not kept: the next call builds again
            raise

    build.__wrapped__ = builder
    build.kbv_builds_once = True
    return build


def build_ahead(module, path):
    """Builds now the extensions the candidate would build later -- in ModelNew.__init__, on its first
    forward, inside a try -- so that its evaluation finds them built: every call of
    torch.utils.cpp_extension's load_inline or load in its source, the callee and the arguments evaluated
    in the imported module's namespace (a build its import already made is found built at once).
    Returns {"built": [names], "failed": [{"line", "error"}], "missed": [{"line", "why"}]}: a call whose
    arguments name what exists only at run time (self, a local, forward's inputs) cannot be made here."""
    import ast
    import torch.utils.cpp_extension as cpp_extension
    builders = tuple(getattr(b, "__wrapped__", b) for b in (cpp_extension.load_inline, cpp_extension.load))
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
        callee = getattr(callee, "__wrapped__", callee)  # the import's building_once
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
            building_once(callee)(*args, **kwargs)
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
    The directory is the candidate content's own (eval/extension_cache.h; in a sandbox a private
    copy of the content's published build, eval/published_build.h): a build that failed with a
    compiler's diagnostic leaves its log there, kbv publishes it with the build, and the next import
    of the same content returns it instead of spending the build again (kbv run's evaluation after
    its build ahead); each build call is made once per content, its failure kept (building_once)."""
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
                return None, ("compile_error", f"this content's build failed before, not built again (its log, "
                                               f"{FAILED_BUILD_LOG}, is kept with the content's build in kbv's cache: "
                                               f"delete its folder under builds/, or extensions/ with the sandbox "
                                               f"off, to build again):\n{f.read()}")
    try:
        import torch.utils.cpp_extension as cpp_extension
        builders = {n: getattr(cpp_extension, n) for n in ("load_inline", "load")}
    except Exception:
        builders = {}  # no load_inline works: the candidate's own import says so, where it belongs
    try:
        for n, builder in builders.items():
            setattr(cpp_extension, n, building_once(builder))
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
        for n, builder in builders.items():
            setattr(cpp_extension, n, builder)
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
