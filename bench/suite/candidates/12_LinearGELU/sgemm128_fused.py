import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# Large problem. y = GELU(x @ W^T + b) in one kernel: the register-blocked 128x128 fp32 SGEMM
# (no tensor cores) reading the nn.Linear weight transposed, with the bias add and exact erf GELU
# fused into the epilogue (no intermediate tensor).
linear_cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <vector>

constexpr int BM = 128, BN = 128, BK = 8, NT = 256;

__device__ __forceinline__ float gelu_erf(float v) {
    return 0.5f * v * (1.0f + erff(v * 0.70710678118654752f));
}

// v[0..3] = P[r][c..c+3] of a rows x cols row-major matrix, zero outside. `vec` promises
// cols % 4 == 0 and a 16-byte aligned P (c is always a multiple of 4), so c < cols covers c + 3.
__device__ __forceinline__ void load4(const float* __restrict__ P, int rows, int cols, int r,
                                      int c, bool vec, float* v) {
    if (vec && r < rows && c < cols) {
        const float4 t = *reinterpret_cast<const float4*>(P + static_cast<int64_t>(r) * cols + c);
        v[0] = t.x;
        v[1] = t.y;
        v[2] = t.z;
        v[3] = t.w;
    } else {
#pragma unroll
        for (int i = 0; i < 4; ++i)
            v[i] = (r < rows && c + i < cols) ? P[static_cast<int64_t>(r) * cols + c + i] : 0.0f;
    }
}

// C[z] (M x N) = A[z] (M x K) @ op(B[z]), op(B) = B (K x N) or, with TRANS_B, B^T for B (N x K)
// (an nn.Linear weight). 128x128 tile per 256-thread block, 8x8 outputs per thread in registers
// (two 4-wide row groups and two 4-wide column groups 64 apart: conflict-free float4 reads of
// shared memory), K in steps of 8 through double-buffered shared memory with the next tile
// prefetched into registers. EPI adds bias[n] and applies exact GELU. fp32 FMA throughout.
template <bool TRANS_B, bool EPI>
__global__ void __launch_bounds__(NT) sgemm128_kernel(
    const float* __restrict__ A, const float* __restrict__ B, const float* __restrict__ bias,
    float* __restrict__ C, int M, int N, int K, int64_t sA, int64_t sB, int64_t sC, bool vecA,
    bool vecB, bool vecC) {
    __shared__ __align__(16) float As[2][BK][BM];
    __shared__ __align__(16) float Bs[2][BK][BN];
    const int tid = threadIdx.x;
    A += blockIdx.z * sA;
    B += blockIdx.z * sB;
    C += blockIdx.z * sC;
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    // Loader coordinates: A tile is 128 rows x 8 k (4 consecutive k per thread); the B tile is
    // 8 k x 128 n (4 consecutive n per thread) or, transposed, 128 n x 8 k like A.
    const int a_r = tid >> 1, a_c = (tid & 1) << 2;
    const int b_r = TRANS_B ? (tid >> 1) : (tid >> 5);
    const int b_c = TRANS_B ? ((tid & 1) << 2) : ((tid & 31) << 2);
    float ra[4], rb[4];
    const int ktiles = (K + BK - 1) / BK;

    // First tile.
    load4(A, M, K, m0 + a_r, a_c, vecA, ra);
    if (TRANS_B) load4(B, N, K, n0 + b_r, b_c, vecB, rb);
    else load4(B, K, N, b_r, n0 + b_c, vecB, rb);
#pragma unroll
    for (int i = 0; i < 4; ++i) As[0][a_c + i][a_r] = ra[i];
    if (TRANS_B) {
#pragma unroll
        for (int i = 0; i < 4; ++i) Bs[0][b_c + i][b_r] = rb[i];
    } else {
        *reinterpret_cast<float4*>(&Bs[0][b_r][b_c]) = make_float4(rb[0], rb[1], rb[2], rb[3]);
    }
    __syncthreads();

    const int tx = tid & 15, ty = tid >> 4;
    float acc[8][8];
#pragma unroll
    for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j] = 0.0f;

    for (int t = 0; t < ktiles; ++t) {
        const int cur = t & 1;
        const bool more = t + 1 < ktiles;
        if (more) {
            const int k0 = (t + 1) * BK;
            load4(A, M, K, m0 + a_r, k0 + a_c, vecA, ra);
            if (TRANS_B) load4(B, N, K, n0 + b_r, k0 + b_c, vecB, rb);
            else load4(B, K, N, k0 + b_r, n0 + b_c, vecB, rb);
        }
#pragma unroll
        for (int kk = 0; kk < BK; ++kk) {
            const float4 a0 = *reinterpret_cast<const float4*>(&As[cur][kk][ty * 4]);
            const float4 a1 = *reinterpret_cast<const float4*>(&As[cur][kk][64 + ty * 4]);
            const float4 b0 = *reinterpret_cast<const float4*>(&Bs[cur][kk][tx * 4]);
            const float4 b1 = *reinterpret_cast<const float4*>(&Bs[cur][kk][64 + tx * 4]);
            const float a[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
            const float b[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
            for (int i = 0; i < 8; ++i)
#pragma unroll
                for (int j = 0; j < 8; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
        if (more) {
            // The other buffer was last read in iteration t - 1, which ended with a barrier.
            const int nxt = cur ^ 1;
#pragma unroll
            for (int i = 0; i < 4; ++i) As[nxt][a_c + i][a_r] = ra[i];
            if (TRANS_B) {
#pragma unroll
                for (int i = 0; i < 4; ++i) Bs[nxt][b_c + i][b_r] = rb[i];
            } else {
                *reinterpret_cast<float4*>(&Bs[nxt][b_r][b_c]) =
                    make_float4(rb[0], rb[1], rb[2], rb[3]);
            }
        }
        __syncthreads();
    }

#pragma unroll
    for (int i = 0; i < 8; ++i) {
        const int r = m0 + (i < 4 ? ty * 4 + i : 64 + ty * 4 + (i - 4));
        if (r >= M) continue;
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int c = n0 + h * 64 + tx * 4;
            float v[4];
#pragma unroll
            for (int q = 0; q < 4; ++q) {
                v[q] = acc[i][h * 4 + q];
                if (EPI && c + q < N) v[q] = gelu_erf(v[q] + bias[c + q]);
            }
            float* dst = C + static_cast<int64_t>(r) * N + c;
            if (vecC && c < N) {
                *reinterpret_cast<float4*>(dst) = make_float4(v[0], v[1], v[2], v[3]);
            } else {
#pragma unroll
                for (int q = 0; q < 4; ++q)
                    if (c + q < N) dst[q] = v[q];
            }
        }
    }
}

static bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

torch::Tensor linear_gelu_forward(torch::Tensor x, torch::Tensor w, torch::Tensor bias) {
    TORCH_CHECK(x.is_cuda() && w.is_cuda() && bias.is_cuda(), "expected CUDA tensors");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32 && w.scalar_type() == torch::kFloat32 &&
                    bias.scalar_type() == torch::kFloat32,
                "expected float32");
    TORCH_CHECK(x.dim() >= 1 && w.dim() == 2 && x.size(-1) == w.size(1) &&
                    bias.numel() == w.size(0),
                "shape mismatch");
    auto xc = x.contiguous();
    auto wc = w.contiguous();
    auto bc = bias.contiguous();
    const int64_t K64 = wc.size(1), N64 = wc.size(0);
    TORCH_CHECK(K64 > 0, "in_features must be positive");
    const int64_t M64 = xc.numel() / K64;  // all leading dimensions flattened
    TORCH_CHECK(M64 < (int64_t(1) << 31) && K64 < (int64_t(1) << 31) && N64 < (int64_t(1) << 31),
                "dimension too large");
    std::vector<int64_t> out_shape(xc.sizes().begin(), xc.sizes().end());
    out_shape.back() = N64;
    auto y = torch::empty(out_shape, xc.options());
    if (y.numel() == 0) return y;
    const int M = static_cast<int>(M64), K = static_cast<int>(K64), N = static_cast<int>(N64);
    const dim3 grid((N + BN - 1) / BN, (M + BM - 1) / BM, 1);
    TORCH_CHECK(grid.y <= 65535, "too many rows");
    const bool vecA = K % 4 == 0 && aligned16(xc.data_ptr<float>());
    const bool vecB = K % 4 == 0 && aligned16(wc.data_ptr<float>());
    const bool vecC = N % 4 == 0 && aligned16(y.data_ptr<float>());
    sgemm128_kernel<true, true><<<grid, NT, 0, at::cuda::getCurrentCUDAStream()>>>(
        xc.data_ptr<float>(), wc.data_ptr<float>(), bc.data_ptr<float>(), y.data_ptr<float>(), M,
        N, K, 0, 0, 0, vecA, vecB, vecC);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

linear_cpp_source = (
    "torch::Tensor linear_gelu_forward(torch::Tensor x, torch::Tensor w, torch::Tensor bias);"
)

linear_module = load_inline(
    name="bench_linear_gelu_sgemm128_fused",
    cpp_sources=linear_cpp_source,
    cuda_sources=linear_cuda_source,
    functions=["linear_gelu_forward"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super(ModelNew, self).__init__()
        # Same parameter names and shapes as Model (fc.weight, fc.bias).
        self.fc = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return linear_module.linear_gelu_forward(x, self.fc.weight, self.fc.bias)
