"""The problem's inputs drawn from generators of the draw's own (src/kbv/python/draws.py): the values
of the plain draw after torch.manual_seed, bit for bit, for every kind of random op a get_inputs()
calls, while torch's default generators never hold the draw's seed, read from the drawing thread or
from another one."""
import random
import sys
import threading
import time
import unittest

import numpy
import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

import draws

SEED = 0x5EED_1234_5678


def plain(get_inputs, seed, device="cpu"):
    """The draw after torch.manual_seed, moved to the device as kbv moves every draw."""
    torch.manual_seed(seed)
    random.seed(draws.python_seed(seed))
    with torch.device(device):
        inputs = get_inputs()
    return [x.to(device) if isinstance(x, torch.Tensor) else x for x in inputs]


def every_random_op():
    x = torch.rand(64, 128)
    y = torch.randn(32, 3)
    return [x, y, torch.randint(0, 10, (5,)), torch.randint(7, (4,)), torch.randperm(9),
            torch.empty(10).uniform_(-2, 3), torch.normal(0.5, 2.0, size=(6,)),
            torch.normal(torch.zeros(6), torch.ones(6)), torch.bernoulli(torch.full((8,), 0.3)),
            torch.rand_like(x), torch.randn_like(y), torch.randint_like(x, 3, 9),
            torch.multinomial(torch.ones(10), 4), torch.empty(5).exponential_(), torch.randn(40).normal_(),
            torch.rand(3, dtype=torch.float64), torch.randn(4, dtype=torch.float16), random.randint(1, 9)]


def equal(a, b):
    return all(torch.equal(x, y) if isinstance(x, torch.Tensor) else x == y for x, y in zip(a, b)) and len(a) == len(b)


class Values(unittest.TestCase):
    def test_every_random_op_draws_the_plain_values(self):
        self.assertTrue(equal(draws.draw_standard(every_random_op, SEED, "cpu"), plain(every_random_op, SEED)))

    def test_a_generator_of_the_problems_own_is_kept(self):
        def get_inputs():
            return [torch.rand(8, generator=torch.Generator().manual_seed(3)), torch.rand(8)]
        self.assertTrue(equal(draws.draw_standard(get_inputs, SEED, "cpu"), plain(get_inputs, SEED)))

    def test_an_op_without_a_generator_variant_draws_the_plain_way(self):
        def get_inputs():
            return [torch.nn.functional.dropout(torch.ones(256), 0.5, training=True), torch.rand(8)]
        self.assertTrue(equal(draws.draw_standard(get_inputs, SEED, "cpu"), plain(get_inputs, SEED)))

    def test_two_seeds_draw_two_sets(self):
        one = draws.draw_standard(lambda: [torch.rand(16)], SEED, "cpu")
        other = draws.draw_standard(lambda: [torch.rand(16)], SEED + 1, "cpu")
        self.assertFalse(torch.equal(one[0], other[0]))

    def test_a_draw_imports_no_compiler(self):
        # torch's guard of a dispatch mode against compilation imports torch._dynamo and sympy (880
        # modules, a second per worker); the draws' mode has none.
        draws.draw_standard(every_random_op, SEED, "cpu")
        self.assertFalse("torch._dynamo" in sys.modules, "a draw imported torch._dynamo")

    def test_a_result_that_is_not_a_list_is_refused(self):
        with self.assertRaisesRegex(TypeError, "expected a list"):
            draws.draw_standard(lambda: torch.rand(3), SEED, "cpu")

    def test_modes_left_on_see_nothing_of_the_draw_and_are_back_after_it(self):
        seen = []

        class Functions(TorchFunctionMode):
            def __torch_function__(self, func, types, args=(), kwargs=None):
                seen.append(func)
                return func(*args, **(kwargs or {}))

        class Ops(TorchDispatchMode):
            @classmethod
            def _should_skip_dynamo(cls):
                return False

            def __torch_dispatch__(self, op, types, args=(), kwargs=None):
                seen.append(op)
                return op(*args, **(kwargs or {}))
        with Functions(), Ops():
            drawn = draws.draw_standard(every_random_op, SEED, "cpu")
            self.assertEqual((torch._C._len_torch_function_stack(), torch._C._len_torch_dispatch_stack()), (1, 1))
            seen.clear()
            torch.ones(1).add_(1)
            self.assertTrue(seen, "the modes are on again after the draw")
            seen.clear()
            draws.draw_standard(every_random_op, SEED, "cpu")
        self.assertEqual(seen, [])
        self.assertTrue(equal(drawn, plain(every_random_op, SEED)))

    @unittest.skipUnless(torch.cuda.is_available(), "no CUDA device")
    def test_on_the_gpu_the_plain_values_too(self):
        self.assertTrue(equal(draws.draw_standard(every_random_op, SEED, "cuda"), plain(every_random_op, SEED, "cuda")))


class Seeds(unittest.TestCase):
    def setUp(self):
        draws.forget_seeds()

    def test_the_default_generators_never_hold_the_seed_during_a_draw(self):
        seen = []

        def get_inputs():
            seen.append(torch.initial_seed())
            x = torch.rand(1000)
            seen.append(torch.initial_seed())
            return [x]
        draws.draw_standard(get_inputs, SEED, "cpu")
        self.assertNotIn(SEED, seen)

    def test_another_thread_polling_the_seed_never_reads_it(self):
        seen, done = set(), threading.Event()

        def poll():
            while not done.is_set():
                seen.add(torch.initial_seed())
                time.sleep(0)

        def get_inputs():
            x = torch.rand(1 << 16)
            time.sleep(0.02)  # the GIL released in the middle of the draw
            return [x, torch.rand(1 << 16)]
        poller = threading.Thread(target=poll)
        poller.start()
        try:
            for _ in range(5):
                draws.draw_standard(get_inputs, SEED, "cpu")
        finally:
            done.set()
            poller.join()
        self.assertNotIn(SEED, seen)
        self.assertNotIn(SEED % 2**64, seen)

    def test_pythons_and_numpys_generators_never_hold_the_seed(self):
        # A state seeded with the seed gives it back (numpy's first word is the seed itself).
        seen = []

        def get_inputs():
            seen.append((random.getstate(), numpy.random.get_state()[1][0]))
            return [torch.rand(4), random.random(), numpy.random.rand()]
        one = draws.draw_standard(get_inputs, SEED, "cpu")
        again = draws.draw_standard(get_inputs, SEED, "cpu")
        random.seed(SEED)
        self.assertNotEqual(seen[0][0], random.getstate())
        self.assertNotEqual(seen[0][1], SEED % 2**32)
        self.assertEqual(one[1:], again[1:])  # the same values in both workers

    def test_forget_seeds_gives_the_generators_fresh_entropy(self):
        torch.manual_seed(SEED)
        random.seed(SEED)
        state = random.getstate()
        draws.forget_seeds()
        self.assertNotEqual(torch.initial_seed(), SEED)
        self.assertNotEqual(random.getstate(), state)


if __name__ == "__main__":
    unittest.main()
