# The runtime watch of a candidate (PROTOCOL.md, "Findings"), run in the candidate's process under
# the harness's control: torch's global state compared before import, after import and after calls;
# threads; calls into the problem's own code and into the candidate's compiled extensions; exceptions
# swallowed by the candidate; and one traced forward (torch profiler) saying which work was the
# candidate's own and which the library's, on which streams. It reports facts; the parent judges.
import gc
import os
import sys
import threading
import weakref

import torch

FLAG_READERS = {  # global switches a candidate must leave as it found them (TF32 is checked per call)
    "cudnn.benchmark": lambda: torch.backends.cudnn.benchmark,
    "cudnn.deterministic": lambda: torch.backends.cudnn.deterministic,
    "cudnn.enabled": lambda: torch.backends.cudnn.enabled,
    "matmul.allow_fp16_reduced_precision_reduction": lambda: torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction,
    "matmul.allow_bf16_reduced_precision_reduction": lambda: torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction,
    "num_threads": torch.get_num_threads,
    "num_interop_threads": torch.get_num_interop_threads,
    "default_dtype": lambda: str(torch.get_default_dtype()),
    "deterministic_algorithms": torch.are_deterministic_algorithms_enabled,
    # A mode of the candidate's over torch's own ops runs its code inside kbv's steps (the inputs'
    # draw, the copies into the pool), on the main thread, where no timer looks: the mode stacks are
    # compared from C++ with the thread's dispatch key sets (worker/dispatch_routes.h); a kernel of
    # its own registered for one of torch's ops here (aten_kernels).
}
# The dispatch keys whose kernels torch's eager ops run through on the CPU and a GPU.
COMPUTE_KEYS = frozenset(("CPU", "CUDA", "CompositeImplicitAutograd", "CompositeExplicitAutograd",
                          "CompositeExplicitAutogradNonFunctional", "Autograd", "AutogradCPU", "AutogradCUDA",
                          "AutogradOther", "ADInplaceOrView", "BackendSelect"))


def compute_kernels(listing):
    """The lines of a dispatcher listing (torch._C._dispatch_dump) for COMPUTE_KEYS, the active and the
    overridden kernels: a kernel registered over one (TORCH_LIBRARY_IMPL in C++, torch.library in
    Python) adds a line whatever registrant it names, so no name it gives itself hides it."""
    return tuple(line for line in listing.splitlines()
                 if line.split(":", 1)[0].removesuffix(" (inactive)") in COMPUTE_KEYS)


def aten_kernels():
    """Per aten operator, its kernels for COMPUTE_KEYS as the dispatcher lists them. ~60 ms."""
    return {name: compute_kernels(torch._C._dispatch_dump(name))
            for name in torch._C._dispatch_get_all_op_names() if name.startswith("aten::")}


def kernel_change(name, known, kernels):
    """An evidence item if an aten operator's kernels for COMPUTE_KEYS differ from those `known`."""
    if kernels == known:
        return None
    return {"what": "aten kernel", "name": name,
            "added": [k for k in kernels if k not in known][:4], "gone": [k for k in known if k not in kernels][:4]}


def step_kernel_changes(before, seen):
    """Evidence items for the aten operators run in kbv's steps (worker/step_kernels.h: `seen` holds
    (name, listing) pairs, each listing as it was when the operator started) whose kernels for
    COMPUTE_KEYS differed from those before the import."""
    changes = []
    for name, listing in seen:
        change = kernel_change(name, before["aten_kernels"].get(name, ()), compute_kernels(listing))
        if change:
            changes.append(dict(change, what="aten kernel run in kbv's steps"))
    return changes


def backend_fallbacks():
    """The dispatch keys with a backend fallback: a boxed kernel every op without one of its own runs
    through (TORCH_LIBRARY_IMPL(_, Key, m) with m.fallback()), which no operator's dump lists. The
    thread's local key sets that route ops to one are compared from C++ (worker/dispatch_routes.h).
    ~1 ms."""
    named = {int(key): name for name, key in torch._C.DispatchKey.__members__.items()}
    # By value: torch's Python enum leaves some keys unnamed (its testing keys among them).
    return [named.get(value, f"key {value}") for value in range(max(named) + 1)
            if torch._C._dispatch_has_backend_fallback(torch._C.DispatchKey(value))]


# Namespaces whose callables a candidate could replace to fool a check or a clock.
WATCHED_NAMESPACES = ("torch", "torch.nn.functional", "torch.Tensor", "torch.nn.Module", "torch.cuda", "torch.testing",
                      "time", "builtins", "kbv_harness", "kbv_monitor")
IGNORED_EXCEPTIONS = (StopIteration, StopAsyncIteration, GeneratorExit)


def read(reader):
    try:
        return reader()
    except Exception as error:  # e.g. the new precision API used where the legacy getter is read
        return f"unreadable: {error}"


def tf32_flags():
    """The TF32 switches as torch reports them; compared before and after every candidate call."""
    return {"cublas": read(lambda: torch.backends.cuda.matmul.allow_tf32),
            "cudnn": read(lambda: torch.backends.cudnn.allow_tf32),
            "matmul_precision": read(torch.get_float32_matmul_precision)}


def namespace(dotted):
    head, *rest = dotted.split(".")
    value = sys.modules.get(head)
    for part in rest:
        value = getattr(value, part, None)
    return value


RECORDING_SWITCHES = []  # calls of torch's Python switches of op recording since arm_tripwires()


def arm_tripwires():
    """Wraps torch's Python switches of op recording (RecordFunction, which kbv's own record of each call's
    ops rides on, as torch's profiler does) so that a call of one is noted: a candidate that switches
    recording off around its timed calls hides the ops it runs there."""
    for owner in (torch._C._autograd, torch.autograd):
        for name in ("_enable_record_function", "_clear_callbacks"):
            original = getattr(owner, name, None)
            if original is None or getattr(original, "kbv_tripwire", False):
                continue

            def noted(*args, _original=original, _name=name, **kwargs):
                RECORDING_SWITCHES.append(_name)
                return _original(*args, **kwargs)
            noted.kbv_tripwire = True
            setattr(owner, name, noted)


def snapshot():
    """What a candidate could change behind the harness's back."""
    patched = {}
    for dotted in WATCHED_NAMESPACES:
        space = namespace(dotted)
        if space is None:
            continue
        for key, value in list(vars(space).items()):
            if callable(value) or isinstance(value, (staticmethod, classmethod, property)):
                patched[f"{dotted}.{key}"] = id(value)
    return {"flags": {name: read(reader) for name, reader in FLAG_READERS.items()},
            "callables": patched,
            "environ": dict(os.environ),
            # gc callbacks run at collections, whenever allocation triggers one: inside kbv's gaps.
            "hooks": {"sys.getprofile": id(sys.getprofile()), "sys.gettrace": id(sys.gettrace()),
                      "gc.callbacks": [id(callback) for callback in gc.callbacks],
                      "op-recording switches called": sorted(set(RECORDING_SWITCHES))},
            "aten_kernels": aten_kernels(),
            "backend_fallbacks": backend_fallbacks(),
            "threads": {t.ident: t.name for t in threading.enumerate()},
            "native_threads": native_threads()}


def state_changes(before, after):
    """Evidence items for every watched global that differs (names added by lazy imports are not changes)."""
    changes = []
    for name, value in before["flags"].items():
        if after["flags"].get(name) != value:
            changes.append({"what": "flag", "name": name, "before": str(value), "after": str(after["flags"].get(name))})
    for name, identity in before["callables"].items():
        now = after["callables"].get(name)
        if now != identity:
            changes.append({"what": "replaced" if now is not None else "removed", "name": name})
    keys = set(before["environ"]) | set(after["environ"])
    for key in sorted(k for k in keys if before["environ"].get(k) != after["environ"].get(k)):
        changes.append({"what": "environment", "name": key, "before": before["environ"].get(key),
                        "after": after["environ"].get(key)})
    for name, identity in before["hooks"].items():
        if after["hooks"][name] != identity:
            changes.append({"what": "hook", "name": name})
    for name, kernels in after["aten_kernels"].items():
        change = kernel_change(name, before["aten_kernels"].get(name, ()), kernels)
        if change:
            changes.append(change)
    known, now = before["backend_fallbacks"], after["backend_fallbacks"]
    if now != known:
        changes.append({"what": "dispatcher", "name": "backend fallbacks",
                        "added": [k for k in now if k not in known], "gone": [k for k in known if k not in now]})
    return changes


def new_threads(before):
    """Python threads alive now that were not before the candidate was imported."""
    return [{"name": t.name, "daemon": t.daemon, "target": getattr(getattr(t, "_target", None), "__qualname__", None)}
            for t in threading.enumerate() if t.ident not in before["threads"] and t.is_alive()]


def native_threads():
    try:
        return set(os.listdir("/proc/self/task"))
    except OSError:
        return set()


def thread_names(ids):
    names = []
    for tid in sorted(ids):
        try:
            with open(f"/proc/self/task/{tid}/comm") as f:
                names.append(f.read().strip())
        except OSError:
            pass  # ended since
    return names


def release_hooks(outputs):
    """Candidate code that would run when kbv lets go of these outputs (between timed calls, outside the
    timer): a weakref callback (weakref.finalize) on a tensor or its storage, or attributes set on a
    tensor (an object whose __del__ goes with it). Outputs are plain torch.Tensor (split_outputs)."""
    found = []
    for index, tensor in enumerate(outputs):
        try:
            storage = tensor.untyped_storage()
        except RuntimeError:  # a layout without storage (sparse): no storage object to hook
            storage = None
        for on, target in (("tensor", tensor), ("storage", storage)):
            if target is not None and any(ref.__callback__ is not None for ref in weakref.getweakrefs(target)):
                found.append({"output": index, "on": on, "hook": "weakref callback"})
        if vars(tensor):
            found.append({"output": index, "on": "tensor", "hook": "attributes", "names": sorted(vars(tensor))[:8]})
    return found


class CallWatch:
    """A sys.setprofile (and optionally sys.settrace) hook over one step: calls into the problem's own code,
    calls into the candidate's compiled extensions (as profiler ranges when `ranges`), and exceptions raised
    in the candidate's own frames (when `exceptions`)."""

    def __init__(self, problem_file, candidate_file, extensions_dir, ranges=False, exceptions=False):
        self.problem_file = os.path.realpath(problem_file) if problem_file else None
        self.candidate_file = os.path.realpath(candidate_file) if candidate_file else None
        self.extensions_dir = os.path.realpath(extensions_dir) + os.sep if extensions_dir else None
        self.ranges, self.exceptions = ranges, exceptions
        self.problem_calls, self.extension_calls, self.raised = [], {}, []
        self.open = []  # (callable, profiler handle) of extension calls in progress
        self.modules = {}  # module name -> whether it is one of the candidate's extensions
        self.files = {}

    def real(self, filename):
        path = self.files.get(filename)
        if path is None:
            path = self.files[filename] = os.path.realpath(filename)
        return path

    def extension_of(self, function):
        """The name of the candidate's extension module `function` belongs to, or None. torch loads built
        extensions without entering them in sys.modules: they are known by the names built in the
        extensions directory (a directory per load_inline name)."""
        module = getattr(function, "__module__", None)
        if not isinstance(module, str) or self.extensions_dir is None:
            return None
        known = self.modules.get(module)
        if known is None:
            loaded = getattr(sys.modules.get(module), "__file__", None)
            built = os.path.isdir(os.path.join(self.extensions_dir, module))
            known = self.modules[module] = built and (loaded is None or self.real(loaded).startswith(self.extensions_dir))
        return module if known else None

    def profile(self, frame, event, arg):
        if event == "call":
            if self.problem_file and len(self.problem_calls) < 8 and self.real(frame.f_code.co_filename) == self.problem_file:
                self.problem_calls.append(f"{frame.f_code.co_qualname} (line {frame.f_code.co_firstlineno})")
        elif event == "c_call":
            module = self.extension_of(arg)
            if module:
                name = f"{module}.{getattr(arg, '__name__', '?')}"
                self.extension_calls[name] = self.extension_calls.get(name, 0) + 1
                if self.ranges:
                    self.open.append((arg, torch.ops.profiler._record_function_enter_new("kbv.ext:" + name, None)))
        elif event in ("c_return", "c_exception") and self.open and self.open[-1][0] is arg:
            torch.ops.profiler._record_function_exit._RecordFunction(self.open.pop()[1])

    def trace(self, frame, event, arg):
        if self.real(frame.f_code.co_filename) != self.candidate_file:
            return None
        frame.f_trace_lines = False
        return self.local

    def local(self, frame, event, arg):
        if event == "exception" and not issubclass(arg[0], IGNORED_EXCEPTIONS) and len(self.raised) < 8:
            self.raised.append(f"{arg[0].__name__} at line {frame.f_lineno}: {str(arg[1])[:200]}")
        return self.local

    def __enter__(self):
        sys.setprofile(self.profile)
        if self.exceptions and self.candidate_file:
            sys.settrace(self.trace)
        return self

    def __exit__(self, *exc):
        sys.setprofile(None)
        sys.settrace(None)
        while self.open:
            torch.ops.profiler._record_function_exit._RecordFunction(self.open.pop()[1])
        return False


def import_watched(load, path, name, problem_file):
    """Imports the candidate through `load`, noting kernel builds that raised (a failure the candidate may
    swallow to fall back to PyTorch) and calls into the problem's code. Returns (load's result, facts)."""
    import torch.utils.cpp_extension as cpp_extension
    failures = []
    originals = {n: getattr(cpp_extension, n) for n in ("load_inline", "load")}

    def watched(original):
        # A failure kept from the build ahead is raised again here, and noted as one.
        once = sys.modules["kbv_harness"].building_once(original)

        def build(*args, **kwargs):
            try:
                return once(*args, **kwargs)
            except BaseException as error:
                failures.append(f"{type(error).__name__}: {str(error)[-300:]}")
                raise
        build.kbv_builds_once = True  # load_candidate wraps it no more
        return build

    for n, original in originals.items():
        setattr(cpp_extension, n, watched(original))
    watch = CallWatch(problem_file, None, None)
    try:
        with watch:
            result = load(path, name)
    finally:
        for n, original in originals.items():
            setattr(cpp_extension, n, original)
    return result, {"failed_builds": failures, "problem_calls": watch.problem_calls}


def outermost(ranges):
    """The ranges not nested in another on the same thread, in one sweep: a model's forward can run
    thousands of ops, too many to compare pairwise."""
    top, outer_end = [], {}
    for e in sorted(ranges, key=lambda e: (e.start_ns(), -e.end_ns())):
        thread = e.start_thread_id()
        if e.end_ns() > outer_end.get(thread, -1):  # ops on a thread nest, so this one is not inside
            top.append(e)
            outer_end[thread] = e.end_ns()
    return top


def triton_kernel_names():
    """The kernel names of the Triton functions alive in this process (written by the candidate or
    generated by torch.compile): a Triton kernel's name is its function's."""
    jit = getattr(sys.modules.get("triton.runtime.jit"), "JITFunction", None)
    if jit is None:
        return set()
    return {getattr(getattr(o, "fn", None), "__name__", None) for o in gc.get_objects() if isinstance(o, jit)} - {None}


def trace_call(call, device, extensions_dir, problem_file):
    """One forward under torch's profiler (its low-level API: the high-level one imports and patches more
    of torch). Work the candidate's own code did (CPU: time inside its extension calls outside any aten
    op; GPU: kernels launched outside any aten op) against library work (top-level aten ops), and the
    kernels with their streams, for the parent to judge."""
    from torch._C._profiler import _ExperimentalConfig
    from torch.autograd import DeviceType
    from torch.autograd.profiler import (ProfilerActivity, ProfilerConfig, ProfilerState, _disable_profiler,
                                         _enable_profiler, _prepare_profiler, record_function)
    cuda = device.startswith("cuda")
    activities = {ProfilerActivity.CPU} | ({ProfilerActivity.CUDA} if cuda else set())
    config = ProfilerConfig(ProfilerState.KINETO, False, False, False, False, False, _ExperimentalConfig())
    marker = torch.zeros(1, device=device)
    watch = CallWatch(problem_file, None, extensions_dir, ranges=True)
    _prepare_profiler(config, activities)
    _enable_profiler(config, activities)
    try:
        with record_function("kbv.marker"):
            marker.fill_(1.0)  # on the GPU, a kernel on the current stream: names that stream in the trace
        with record_function("kbv.forward"):
            with watch:
                result = call()
        if cuda:
            torch.cuda.synchronize()
    finally:
        events = _disable_profiler().events()
    cpu = [e for e in events if e.device_type() == DeviceType.CPU]
    forward = next(e for e in cpu if e.name() == "kbv.forward")
    marked = next(e for e in cpu if e.name() == "kbv.marker")
    f0, f1 = forward.start_ns(), forward.end_ns()
    inside = [e for e in cpu if f0 <= e.start_ns() and e.end_ns() <= f1 and e is not forward]
    aten = [e for e in inside if e.name().startswith("aten::")]
    extension = [e for e in inside if e.name().startswith("kbv.ext:")]

    def enclosed(e, ranges):
        return any(r is not e and r.start_thread_id() == e.start_thread_id() and r.start_ns() <= e.start_ns()
                   and e.end_ns() <= r.end_ns() for r in ranges)

    top_aten = outermost(aten)
    ops = {}
    for e in top_aten:
        ops[e.name()] = ops.get(e.name(), 0) + e.duration_ns() * 1e-9
    own_ns = sum(e.duration_ns() for e in extension) - sum(e.duration_ns() for e in top_aten if enclosed(e, extension))
    facts = {"extension_calls": watch.extension_calls, "problem_calls": watch.problem_calls,
             "forward_seconds": (f1 - f0) * 1e-9, "library_ops": ops, "own_seconds": max(own_ns, 0) * 1e-9}
    if cuda:
        # A kernel launched inside an op links to it (linked_correlation_id): an aten op means the
        # library launched it. One launched outside any op (the candidate's extension, Triton) links
        # to none; its launch is the runtime call with the kernel's own correlation id.
        frontend = {e.correlation_id(): e for e in cpu if e.linked_correlation_id() == 0 and e.correlation_id() > 0}
        runtime = {e.correlation_id(): e for e in cpu if e.name().startswith("cu")}
        kernels, current, triton = [], None, None
        # GPU-side copies of the profiler's own ranges (kbv.forward, kbv.ext:...) are not kernels.
        for k in (e for e in events if e.device_type() == DeviceType.CUDA and not e.is_user_annotation()):
            parent = frontend.get(k.linked_correlation_id())
            launch = runtime.get(k.correlation_id())
            launched_at = parent.start_ns() if parent else (launch.start_ns() if launch else k.start_ns())
            if marked.start_ns() <= launched_at <= marked.end_ns():
                current = k.device_resource_id()
            elif f0 <= launched_at <= f1:
                library = parent is not None and parent.name().startswith("aten::")
                kernel = {"name": k.name()[:200], "stream": k.device_resource_id(), "seconds": k.duration_ns() * 1e-9,
                          "own": not library, "launched_in": parent.name()[:80] if parent else "no op",
                          "after_return": k.end_ns() > f1}
                # A CUDA graph's replay launches every kernel captured in it, a library's as well,
                # under one runtime call and no op: the parent keeps one as own only when the
                # candidate's code defines it (its extensions, or a Triton kernel it compiled).
                if launch is not None and "GraphLaunch" in launch.name():
                    triton = triton_kernel_names() if triton is None else triton
                    kernel.update({"launched_in": launch.name()[:80], "graph": True, "triton": k.name() in triton})
                kernels.append(kernel)
        facts.update({"current_stream": current, "kernels": kernels})
    return result, facts
