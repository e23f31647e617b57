"""The problem's own inputs, drawn so that nothing else in the process can tell them ahead.

A candidate shares its worker's process: any of its threads can read torch's default generators'
seed or state at any moment, and a seed read while a draw runs tells that draw's values before the
call they are for (PROTOCOL.md, "What a candidate can tell about a call"). So get_inputs() runs
with every random op of torch's given a private generator of its device, seeded with the draw's
seed, that lives only for the draw in this thread's dispatch mode: the default generators never
hold the seed. A fresh generator seeded with s gives what the default one gives after
torch.manual_seed(s), so the values are those of the plain draw, bit for bit, in both workers.

A seeded op without a generator variant (dropout in get_inputs, say) would draw from the default
generators; such a draw is made again the plain way, after torch.manual_seed(seed). Whether a draw
needs that depends on the problem's code alone, the same in both workers. Python's and numpy's
generators (get_inputs may use them) are seeded with a one-way function of the seed, so what a
candidate reads there tells nothing of torch's draws, and given fresh entropy after. Any mode a
candidate left on is off for the draw (_alone)."""
import contextlib
import functools
import hashlib
import random
import sys

import torch
from torch.utils._python_dispatch import TorchDispatchMode


@functools.cache  # an op's overloads are fixed: looked up once, not on every draw
def _generator_variant(op):
    """`op` itself where it takes a generator, else its overload with the same arguments and a
    generator (rand.default -> rand.generator, randint.low -> randint.low_generator), else None."""
    names = [argument.name for argument in op._schema.arguments]
    if "generator" in names:
        return op
    wanted = set(names) | {"generator"}
    packet = op.overloadpacket
    for name in packet.overloads():
        overload = getattr(packet, name)
        if {argument.name for argument in overload._schema.arguments} == wanted:
            return overload
    return None


class PrivateGenerators(TorchDispatchMode):
    """Gives every seeded op that draws from a default generator one of its own instead: one per
    device, seeded with `seed` when first used. `plain_ops` names the seeded ops it could not give one."""

    @classmethod
    def _should_skip_dynamo(cls):
        # Nothing compiled runs under it: torch's guard of __torch_dispatch__ against compilation
        # would import torch._dynamo, and sympy with it, on a worker's first draw (878 modules,
        # 1.1 s on the CPU machine; its bytecode 20 MB in kbv's cache).
        return False

    def __init__(self, seed):
        super().__init__()
        self._seed = seed
        self._generators = {}
        self.plain_ops = []

    def _generator(self, device):
        device = torch.device(device)
        if device.type != "cpu" and device.index is None:
            device = torch.device(device.type, torch.get_device_module(device.type).current_device())
        generator = self._generators.get(device)
        if generator is None:
            generator = self._generators[device] = torch.Generator(device).manual_seed(self._seed)
        return generator

    def __torch_dispatch__(self, op, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if torch.Tag.nondeterministic_seeded not in op.tags:
            return op(*args, **kwargs)
        variant = _generator_variant(op)
        if variant is None:
            self.plain_ops.append(str(op))
            return op(*args, **kwargs)
        named = dict(zip((argument.name for argument in op._schema.arguments), args))
        named.update(kwargs)
        if named.get("generator") is not None:  # the problem's own generator
            return op(*args, **kwargs)
        # Where the op puts its result: its tensors' device, else the device it is given; at the
        # dispatcher a factory given none makes it on the CPU (torch.device(...) as a context adds one).
        tensor = next((value for value in named.values() if isinstance(value, torch.Tensor)), None)
        device = tensor.device if tensor is not None else named.get("device") or "cpu"
        named["generator"] = self._generator(device)
        return variant(**named)


@contextlib.contextmanager
def _alone():
    """get_inputs() with none of the process's modes on: a __torch_function__ or __torch_dispatch__
    mode left on by other code here (the candidate's) would run inside the draw, between the timed
    calls, and could change it. They are popped for the draw and pushed back after it."""
    function_modes = [torch._C._pop_torch_function_stack() for _ in range(torch._C._len_torch_function_stack())]
    dispatch_modes = [torch._C._pop_torch_dispatch_stack(None) for _ in range(torch._C._len_torch_dispatch_stack())]
    try:
        yield
    finally:
        for mode in reversed(dispatch_modes):
            torch._C._push_on_torch_dispatch_stack(mode)
        for mode in reversed(function_modes):
            torch._C._push_on_torch_function_stack(mode)


def python_seed(seed):
    """The seed Python's and numpy's generators get for a draw: a one-way function of the draw's. Both
    can be read by the candidate's threads while get_inputs() runs, and a state seeded with the
    draw's seed itself gives it back (numpy's first word is the seed; Python's seeding inverts), which
    would tell torch's draws as well."""
    digest = hashlib.sha256(b"kbv python generators " + seed.to_bytes(8, "little")).digest()
    return int.from_bytes(digest[:8], "little")


def _seed_python(seed):
    derived = python_seed(seed)
    random.seed(derived)
    if "numpy" in sys.modules:
        sys.modules["numpy"].random.seed(derived % 2**32)


def _called(get_inputs, device):
    with torch.device(device):
        inputs = get_inputs()
    if not isinstance(inputs, (list, tuple)):
        raise TypeError(f"get_inputs() returned {type(inputs).__name__}, expected a list")
    return inputs


def draw_standard(get_inputs, seed, device):
    """The problem's own inputs under `seed`, drawn on `device` (factory calls default to it)."""
    with _alone():
        _seed_python(seed)
        private = PrivateGenerators(seed)
        with private:
            inputs = _called(get_inputs, device)
        if private.plain_ops:
            torch.manual_seed(seed)
            _seed_python(seed)
            inputs = _called(get_inputs, device)
        return [x.to(device) if isinstance(x, torch.Tensor) else x for x in inputs]


def forget_seeds():
    """Fresh entropy into every process-wide generator (torch's on each device, Python's, numpy's): once a
    set is drawn, its seed can no longer be read back from them."""
    torch.seed()
    random.seed()
    if "numpy" in sys.modules:
        sys.modules["numpy"].random.seed()
