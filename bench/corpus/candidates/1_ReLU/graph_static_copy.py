# CUDA graph capture: the ReLU is captured once into a torch.cuda.CUDAGraph and replayed on every
# call, which removes the per-call kernel launch overhead. The input is copied into a static buffer
# and the result cloned out of the static output, following the PyTorch CUDA graphs docs.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()
        self._graph = None
        self._static_in = None
        self._static_out = None
        self._key = None

    def _capture(self, x: torch.Tensor) -> None:
        self._static_in = torch.empty_like(x)
        self._static_in.copy_(x)

        # Warm up on a side stream before capture, as the docs recommend.
        s = torch.cuda.Stream(device=x.device)
        s.wait_stream(torch.cuda.current_stream(x.device))
        with torch.cuda.stream(s):
            for _ in range(3):
                torch.relu(self._static_in)
        torch.cuda.current_stream(x.device).wait_stream(s)

        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            self._static_out = torch.relu(self._static_in)
        self._graph = g
        self._key = (tuple(x.shape), x.dtype, x.device)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        key = (tuple(x.shape), x.dtype, x.device)
        if self._graph is None or key != self._key:
            self._capture(x)
        self._static_in.copy_(x)
        self._graph.replay()
        return self._static_out.clone()
