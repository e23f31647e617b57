"""The static screen (src/kbv/python/screen.py) on candidate texts: names resolved through imports
and aliases, comments, strings and docstrings never counted, each finding with its severity, the
C++/CUDA sources it hands to the parent. The hack corpus runs it end to end through the worker."""
import os
import tempfile
import textwrap
import unittest

import screen


def screened(text, files=None):
    with tempfile.TemporaryDirectory() as folder:
        for name, content in (files or {}).items():
            with open(os.path.join(folder, name), "w") as f:
                f.write(content)
        path = os.path.join(folder, "candidate.py")
        with open(path, "w") as f:
            f.write(textwrap.dedent(text))
        return screen.screen(path)


def ids(result, severity=None):
    return sorted({f["id"] for f in result["findings"] if severity is None or f["severity"] == severity})


class Names(unittest.TestCase):
    def test_aliases_and_from_imports_read_the_same(self):
        for text in ("import torch\ntorch.cuda.Stream()\n", "import torch as t\nt.cuda.Stream()\n",
                     "from torch.cuda import Stream as S\nS()\n", "from torch import cuda\ncuda.Stream()\n"):
            self.assertEqual(ids(screened(text)), ["side_stream"], text)

    def test_comments_strings_and_unimported_names_do_not_count(self):
        result = screened('''
            # threading.Thread(target=work).start()
            note = "time.time() and torch.cuda.Stream()"
            time = None
            time.time()
        ''')
        self.assertEqual(result["findings"], [])

    def test_evidence_names_the_line(self):
        finding = screened("import time\n\nstart = time.perf_counter()\n")["findings"][0]
        self.assertEqual((finding["id"], finding["severity"]), ("host_timing", "warning"))
        self.assertEqual(finding["evidence"]["line"], 3)
        self.assertEqual(finding["evidence"]["code"], "start = time.perf_counter()")


class Tampering(unittest.TestCase):
    def test_replacing_torch_or_the_harness_is_an_error(self):
        for text in ("import torch\ntorch.relu = lambda x: x\n", "import torch\nsetattr(torch, 'relu', abs)\n",
                     "import sys\nsys.modules['kbv_harness'] = None\n", "import sys\nsys.settrace(None)\n",
                     "import torch.nn.functional as F\nF.relu = abs\n"):
            self.assertEqual(ids(screened(text), "error"), ["global_state_tamper"], text)

    def test_backend_flags_and_the_environment_are_warnings(self):
        for text in ("import torch\ntorch.backends.cudnn.benchmark = True\n", "import os\nos.environ['OMP_NUM_THREADS'] = '1'\n",
                     "import torch\ntorch.set_num_threads(1)\n"):
            result = screened(text)
            self.assertEqual(ids(result), ["global_state_tamper"], text)
            self.assertEqual(ids(result, "error"), [], text)

    def test_reading_the_generators_is_a_warning(self):
        self.assertEqual(ids(screened("import torch\nseed = torch.initial_seed()\n")), ["generator_read"])
        self.assertEqual(ids(screened("import torch\nstate = torch.cuda.get_rng_state()\n")), ["generator_read"])

    def test_threads_and_torchs_own_ways_to_start_work(self):
        for text in ("import threading\nthreading.Thread(target=print).start()\n", "import torch\ntorch.jit.fork(print)\n",
                     "import os\nos.fork()\n"):
            self.assertEqual(ids(screened(text)), ["background_thread"], text)


class Shapes(unittest.TestCase):
    def test_the_reference_and_foreign_names(self):
        self.assertIn("reference_reuse", ids(screened("y = Model()(x)\n")))
        self.assertNotIn("reference_reuse", ids(screened("from problem import Model\ny = Model()(x)\n")))
        self.assertIn("reference_reuse", ids(screened("import sys\nm = sys.modules\n")))
        self.assertIn("reference_reuse", ids(screened("g = globals()\n")))

    def test_sixteen_bit_floats(self):
        self.assertEqual(ids(screened("y = x.half()\n")), ["precision_downgrade"])
        self.assertEqual(ids(screened("import torch\nd = torch.bfloat16\n")), ["precision_downgrade"])
        self.assertEqual(ids(screened("y = x.half(3)\n")), [])  # a method of its own with arguments

    def test_a_fallback_in_an_except_branch(self):
        result = screened('''
            import torch
            try:
                y = own(x)
            except Exception:
                y = torch.relu(x)
        ''')
        self.assertEqual(ids(result), ["exception_fallback"])
        self.assertIn("torch.relu", result["findings"][0]["evidence"]["why"])
        build = screened('''
            from torch.utils.cpp_extension import load_inline
            try:
                ext = load_inline(name="k", cpp_sources="")
            except RuntimeError:
                ext = None
        ''')
        self.assertEqual(ids(build), ["exception_fallback"])

    def test_timing_events_and_graph_replays(self):
        self.assertEqual(ids(screened("import torch\ne = torch.cuda.Event(enable_timing=True)\n")), ["host_timing"])
        self.assertEqual(ids(screened("import torch\ng = torch.cuda.CUDAGraph()\n")), ["output_reuse"])


class Sources(unittest.TestCase):
    def test_cxx_strings_and_files_beside_it_are_handed_over(self):
        result = screened('''
            """A docstring that says __global__ is not a source."""
            from torch.utils.cpp_extension import load
            kernel = "#include <torch/extension.h>\\nat::Tensor f(at::Tensor x) { return x; }"
            ext = load(name="k", sources=["k.cu", "missing.cu"])
        ''', files={"k.cu": "__global__ void k() {}\n"})
        origins = [s["origin"] for s in result["sources"]]
        self.assertEqual(len(origins), 2, origins)
        self.assertTrue(origins[0].startswith("string at line"))
        self.assertEqual(origins[1], "k.cu")
        self.assertEqual(result["sources"][1]["text"], "__global__ void k() {}\n")

    def test_a_file_python_cannot_parse_is_said_so(self):
        result = screened("def broken(:\n")
        self.assertIn("unparsed", result)
        self.assertEqual(result["findings"], [])


if __name__ == "__main__":
    unittest.main()
