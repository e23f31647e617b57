# The static screen of a candidate (PROTOCOL.md, "Findings"): its Python read through Python's own
# parser, names resolved through its imports and aliases, so `nn.Linear`, `import torch as t` and
# `from torch.nn import functional as F` read the same and comments or strings never count. It runs
# before the candidate is imported and never executes it. C++/CUDA source strings it finds are
# handed back to the parent, which screens them (hacks/source_screen).
import ast
import os

# Modules whose attributes a candidate has no business replacing: patching them is unambiguous.
PROTECTED = ("torch", "time", "builtins", "sys", "os", "math", "numpy", "threading", "gc", "importlib",
             "kbv_harness", "kbv_monitor")
LOW_PRECISION_DTYPES = {"torch." + d for d in ("float16", "half", "bfloat16", "float8_e4m3fn", "float8_e5m2",
                                               "float8_e4m3fnuz", "float8_e5m2fnuz")}
CALLS = {
    "side_stream": ("torch.cuda.Stream", "torch.cuda.stream", "torch.cuda.set_stream", "torch.cuda.ExternalStream",
                    "torch.Stream", "torch.cuda.StreamContext"),
    "background_thread": ("threading.Thread", "threading.Timer", "_thread.start_new_thread", "os.fork",
                          "concurrent.futures.ThreadPoolExecutor", "concurrent.futures.ProcessPoolExecutor",
                          "multiprocessing.Process", "multiprocessing.Pool", "torch.jit.fork", "torch.jit._fork"),
    # The default generators' seed or state tells the next inputs kbv draws (PROTOCOL.md, "What a
    # candidate can tell about a call").
    "generator_read": ("torch.initial_seed", "torch.get_rng_state", "torch.random.initial_seed",
                       "torch.random.get_rng_state", "torch.default_generator.initial_seed",
                       "torch.default_generator.get_state", "torch.cuda.initial_seed", "torch.cuda.get_rng_state",
                       "torch.cuda.get_rng_state_all", "torch.cuda.default_generators"),
    "host_timing": ("time.time", "time.perf_counter", "time.perf_counter_ns", "time.monotonic",
                    "time.monotonic_ns", "time.process_time", "time.time_ns"),
    "global_state_tamper": ("torch.set_num_threads", "torch.set_num_interop_threads", "torch.set_default_dtype",
                            "torch.set_default_tensor_type", "torch.set_default_device",
                            "torch.set_float32_matmul_precision", "torch.use_deterministic_algorithms",
                            "torch.set_flush_denormal", "os.putenv", "os.unsetenv", "os.environ.update",
                            "os.environ.setdefault", "os.environ.pop", "os.environ.clear", "importlib.reload"),
    "reference_reuse": ("importlib.import_module", "importlib.util.spec_from_file_location", "__import__",
                        "sys._getframe", "inspect.stack", "inspect.currentframe", "inspect.getouterframes",
                        "gc.get_objects", "gc.get_referrers"),
    "precision_downgrade": ("torch.autocast", "torch.cuda.amp.autocast", "torch.amp.autocast"),
    "output_reuse": ("torch.cuda.CUDAGraph", "torch.cuda.graph", "torch.cuda.make_graphed_callables"),
}
UNAMBIGUOUS_CALLS = {  # disabling the harness's own watch: an error on sight
    "sys.settrace", "sys.setprofile", "threading.settrace", "threading.setprofile", "threading.settrace_all_threads",
    "threading.setprofile_all_threads", "sys.monitoring.set_events", "sys.monitoring.use_tool_id",
}
BUILDS = ("torch.utils.cpp_extension.load_inline", "torch.utils.cpp_extension.load")
CXX_MARKERS = ("#include", "__global__", "torch::", "at::", "TORCH_", "PYBIND11")
CXX_FILES = (".cpp", ".cc", ".cxx", ".cu", ".cuh", ".h", ".hpp")


class Screen(ast.NodeVisitor):
    def __init__(self, text, directory):
        self.lines = text.splitlines()
        self.directory = directory
        self.aliases = {}  # local name -> dotted name it was imported as
        self.findings = []
        self.sources = []
        self.docstrings = set()

    def add(self, finding, severity, node, why):
        line = getattr(node, "lineno", 0)
        code = self.lines[line - 1].strip()[:160] if 0 < line <= len(self.lines) else ""
        self.findings.append({"id": finding, "severity": severity,
                              "evidence": {"source": "static", "line": line, "code": code, "why": why}})

    def resolve(self, node):
        """The dotted name an expression refers to through the imports, or None."""
        if isinstance(node, ast.Name):
            return self.aliases.get(node.id, node.id if node.id in ("__import__", "setattr", "globals") else None)
        if isinstance(node, ast.Attribute):
            base = self.resolve(node.value)
            return f"{base}.{node.attr}" if base else None
        return None

    # Imports: every form binds a local name to a dotted name.
    def visit_Import(self, node):
        for a in node.names:
            self.aliases[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        self.generic_visit(node)

    def visit_ImportFrom(self, node):
        if node.module and node.level == 0:
            for a in node.names:
                self.aliases[a.asname or a.name] = f"{node.module}.{a.name}"
        self.generic_visit(node)

    def visit_Module(self, node):
        self.note_docstring(node)
        self.generic_visit(node)

    def visit_ClassDef(self, node):
        self.note_docstring(node)
        self.generic_visit(node)

    def visit_FunctionDef(self, node):
        self.note_docstring(node)
        self.generic_visit(node)

    visit_AsyncFunctionDef = visit_FunctionDef

    def note_docstring(self, node):
        body = getattr(node, "body", [])
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            self.docstrings.add(id(body[0].value))

    def visit_Constant(self, node):
        text = node.value
        if isinstance(text, str) and id(node) not in self.docstrings and any(m in text for m in CXX_MARKERS):
            self.sources.append({"origin": f"string at line {node.lineno}", "line": node.lineno, "text": text})

    def visit_Call(self, node):
        name = self.resolve(node.func)
        if name:
            for finding, names in CALLS.items():
                if name in names:
                    self.add(finding, "warning", node, f"calls {name}")
            if name in UNAMBIGUOUS_CALLS:
                self.add("global_state_tamper", "error", node, f"calls {name}: replaces the harness's watch")
            if name == "setattr" and node.args and self.protected(self.resolve(node.args[0])):
                self.add("global_state_tamper", "error", node, f"setattr on {self.resolve(node.args[0])}")
            if name == "torch.cuda.Event" and any(k.arg == "enable_timing" for k in node.keywords):
                self.add("host_timing", "warning", node, "creates timing events")
            if name == "torch.compile" and any(k.arg == "mode" for k in node.keywords):
                self.add("output_reuse", "warning", node, "torch.compile with a mode that may replay CUDA graphs")
            if name in BUILDS:
                self.read_source_files(node)
        if isinstance(node.func, ast.Attribute) and node.func.attr in ("half", "bfloat16") and not node.args:
            self.add("precision_downgrade", "warning", node, f".{node.func.attr}() casts to 16-bit floats")
        if name == "globals":
            self.add("reference_reuse", "warning", node, "calls globals(): reaches names it did not define")
        self.generic_visit(node)

    def visit_Attribute(self, node):
        name = self.resolve(node)
        if name in LOW_PRECISION_DTYPES and isinstance(node.ctx, ast.Load):
            self.add("precision_downgrade", "warning", node, f"uses {name}")
        if name == "sys.modules" and isinstance(node.ctx, ast.Load):
            self.add("reference_reuse", "warning", node, "reads sys.modules: reaches modules it did not import")
        self.generic_visit(node)

    def visit_Name(self, node):
        if node.id == "Model" and isinstance(node.ctx, ast.Load) and "Model" not in self.aliases:
            self.add("reference_reuse", "warning", node, "refers to a class named Model (the reference's name)")

    def protected(self, name):
        return bool(name) and name.split(".")[0] in PROTECTED

    def check_target(self, target, node):
        if isinstance(target, ast.Subscript):
            base = self.resolve(target.value)
            if base == "os.environ":
                self.add("global_state_tamper", "warning", node, "writes os.environ")
            elif base == "sys.modules":
                self.add("global_state_tamper", "error", node, "replaces an entry of sys.modules")
            return
        if not isinstance(target, ast.Attribute):
            for element in getattr(target, "elts", []):
                self.check_target(element, node)
            return
        name = self.resolve(target)
        if not self.protected(name):
            return
        if name.startswith("torch.backends."):
            self.add("global_state_tamper", "warning", node, f"sets {name}")
        else:
            self.add("global_state_tamper", "error", node, f"replaces {name} (monkeypatch)")

    def visit_Assign(self, node):
        for target in node.targets:
            self.check_target(target, node)
        self.generic_visit(node)

    def visit_AugAssign(self, node):
        self.check_target(node.target, node)
        self.generic_visit(node)

    def visit_Delete(self, node):
        for target in node.targets:
            self.check_target(target, node)
        self.generic_visit(node)

    def visit_Try(self, node):
        builds = any(self.resolve(n.func) in BUILDS for n in ast.walk(ast.Module(body=node.body, type_ignores=[]))
                     if isinstance(n, ast.Call))
        for handler in node.handlers:
            torch_calls = sorted({name for n in ast.walk(handler) if isinstance(n, ast.Call)
                                  for name in [self.resolve(n.func)]
                                  if name and name.startswith("torch.") and not name.startswith("torch.utils.cpp_extension")})
            if torch_calls:
                self.add("exception_fallback", "warning", handler, "the except branch computes with " + ", ".join(torch_calls[:4]))
            elif builds:
                self.add("exception_fallback", "warning", handler, "a failed kernel build is caught and the import goes on")
        self.generic_visit(node)

    visit_TryStar = visit_Try

    def read_source_files(self, call):
        """C++/CUDA files named by load(sources=[...]), when they are plain literals beside the candidate."""
        for keyword in call.keywords:
            if keyword.arg != "sources" or not isinstance(keyword.value, (ast.List, ast.Tuple)):
                continue
            for element in keyword.value.elts:
                if isinstance(element, ast.Constant) and isinstance(element.value, str) and element.value.endswith(CXX_FILES):
                    path = os.path.join(self.directory, element.value)
                    if os.path.isfile(path):
                        with open(path, encoding="utf-8", errors="replace") as f:
                            self.sources.append({"origin": element.value, "line": 1, "text": f.read()})


def screen(path):
    """{"findings": [...], "sources": [{"origin", "line", "text"}]} for the candidate file at `path`."""
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    visitor = Screen(text, os.path.dirname(os.path.abspath(path)))
    try:
        tree = ast.parse(text, filename=path)
    except (SyntaxError, ValueError, RecursionError) as error:
        return {"findings": [], "sources": [], "unparsed": str(error)}
    visitor.visit(tree)
    return {"findings": visitor.findings, "sources": visitor.sources}
