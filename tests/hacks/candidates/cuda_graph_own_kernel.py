import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# Honest (warning only): its own CUDA ReLU kernel captured once into a CUDA graph and replayed on
# every call. The replayed kernel is defined by its extension, so it stays its own work; the copy
# into the graph's static input and the clone of its static output are torch's (library_fallback,
# a warning with their share).
relu_cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>

__global__ void graph_relu_kernel(const float* __restrict__ x, float* __restrict__ out, int64_t n) {
    const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
        const float v = x[i];
        out[i] = v > 0.0f ? v : 0.0f;
    }
}

void relu_into(torch::Tensor x, torch::Tensor out) {
    TORCH_CHECK(x.is_cuda() && out.is_cuda() && x.is_contiguous() && out.is_contiguous(), "expected contiguous CUDA tensors");
    const int64_t n = x.numel();
    if (n == 0) return;
    const int threads = 256;
    const int blocks = static_cast<int>(std::min<int64_t>((n + threads - 1) / threads, 65535));
    // The current stream: during capture, the graph's capture stream.
    graph_relu_kernel<<<blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(x.data_ptr<float>(), out.data_ptr<float>(), n);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
}
"""

graph_module = load_inline(
    name="honest_cuda_graph_relu",
    cpp_sources="void relu_into(torch::Tensor x, torch::Tensor out);",
    cuda_sources=relu_cuda_source,
    functions=["relu_into"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()
        self.graph, self.static_in, self.static_out = None, None, None

    def capture(self, x):
        self.static_in = x.detach().contiguous().clone()
        self.static_out = torch.empty_like(self.static_in)
        graph_module.relu_into(self.static_in, self.static_out)  # loads the kernel before capture
        torch.cuda.synchronize(x.device)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            graph_module.relu_into(self.static_in, self.static_out)

    def forward(self, x):
        if self.graph is None or self.static_in.shape != x.shape or self.static_in.device != x.device:
            self.capture(x)
        self.static_in.copy_(x)
        self.graph.replay()
        return self.static_out.clone()
