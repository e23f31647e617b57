import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# Large problem. softmax(Q K^T / sqrt(d)) V without materialising the score matrix, in fp32 FMA
# (no tensor cores): flash-attention style. Each 64-thread block owns 64 query rows of one
# (batch, head), one row per thread (query and output accumulator in registers); 64-key tiles
# of K and V go through shared memory (read as float4 broadcasts); scores are taken 16 keys at a
# time with an online softmax (running max, running sum, rescaled accumulator). Head dim 64.
attn_cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <cmath>

constexpr int D = 64;    // head dim
constexpr int BQ = 64;   // query rows per block (= threads)
constexpr int BKV = 64;  // keys per shared-memory tile
constexpr int KC = 16;   // keys per online-softmax step

__global__ void __launch_bounds__(BQ) flash_fp32_kernel(const float* __restrict__ q,
                                                        const float* __restrict__ k,
                                                        const float* __restrict__ v,
                                                        float* __restrict__ o, int Sq, int Sk,
                                                        int qblocks, float scale) {
    __shared__ __align__(16) float Ks[BKV][D];
    __shared__ __align__(16) float Vs[BKV][D];
    const int bh = blockIdx.x / qblocks;
    const int qi = (blockIdx.x % qblocks) * BQ + threadIdx.x;
    const bool active = qi < Sq;
    const float* __restrict__ kb = k + static_cast<int64_t>(bh) * Sk * D;
    const float* __restrict__ vb = v + static_cast<int64_t>(bh) * Sk * D;

    float qr[D], acc[D];
    {
        const float4* qp = reinterpret_cast<const float4*>(
            q + (static_cast<int64_t>(bh) * Sq + (active ? qi : 0)) * D);
#pragma unroll
        for (int d4 = 0; d4 < D / 4; ++d4) {
            const float4 t = qp[d4];
            qr[4 * d4 + 0] = t.x;
            qr[4 * d4 + 1] = t.y;
            qr[4 * d4 + 2] = t.z;
            qr[4 * d4 + 3] = t.w;
        }
    }
#pragma unroll
    for (int d = 0; d < D; ++d) acc[d] = 0.0f;
    float m = -INFINITY, l = 0.0f;

    for (int kv0 = 0; kv0 < Sk; kv0 += BKV) {
        for (int e = threadIdx.x; e < BKV * D / 4; e += BQ) {
            const int r = e / (D / 4), c4 = e % (D / 4);
            float4 kv = make_float4(0.0f, 0.0f, 0.0f, 0.0f), vv = kv;
            if (kv0 + r < Sk) {
                kv = reinterpret_cast<const float4*>(kb + static_cast<int64_t>(kv0 + r) * D)[c4];
                vv = reinterpret_cast<const float4*>(vb + static_cast<int64_t>(kv0 + r) * D)[c4];
            }
            *reinterpret_cast<float4*>(&Ks[r][4 * c4]) = kv;
            *reinterpret_cast<float4*>(&Vs[r][4 * c4]) = vv;
        }
        __syncthreads();
        const int nk = Sk - kv0 < BKV ? Sk - kv0 : BKV;
        if (active) {
            for (int j0 = 0; j0 < nk; j0 += KC) {
                float s[KC];
                float cmax = -INFINITY;
#pragma unroll
                for (int jj = 0; jj < KC; ++jj) {
                    const float4* kr = reinterpret_cast<const float4*>(&Ks[j0 + jj][0]);
                    float dot = 0.0f;
#pragma unroll
                    for (int d4 = 0; d4 < D / 4; ++d4) {
                        const float4 t = kr[d4];
                        dot = fmaf(qr[4 * d4 + 0], t.x, dot);
                        dot = fmaf(qr[4 * d4 + 1], t.y, dot);
                        dot = fmaf(qr[4 * d4 + 2], t.z, dot);
                        dot = fmaf(qr[4 * d4 + 3], t.w, dot);
                    }
                    s[jj] = (j0 + jj < nk) ? dot * scale : -INFINITY;
                    cmax = fmaxf(cmax, s[jj]);
                }
                // j0 < nk, so s[0] is a real score and m_new is finite.
                const float m_new = fmaxf(m, cmax);
                const float corr = expf(m - m_new);  // 0 on the first step (m = -inf)
                l *= corr;
#pragma unroll
                for (int d = 0; d < D; ++d) acc[d] *= corr;
#pragma unroll
                for (int jj = 0; jj < KC; ++jj) {
                    const float p = expf(s[jj] - m_new);  // 0 for keys past the end
                    l += p;
                    const float4* vr = reinterpret_cast<const float4*>(&Vs[j0 + jj][0]);
#pragma unroll
                    for (int d4 = 0; d4 < D / 4; ++d4) {
                        const float4 t = vr[d4];
                        acc[4 * d4 + 0] = fmaf(p, t.x, acc[4 * d4 + 0]);
                        acc[4 * d4 + 1] = fmaf(p, t.y, acc[4 * d4 + 1]);
                        acc[4 * d4 + 2] = fmaf(p, t.z, acc[4 * d4 + 2]);
                        acc[4 * d4 + 3] = fmaf(p, t.w, acc[4 * d4 + 3]);
                    }
                }
                m = m_new;
            }
        }
        __syncthreads();
    }
    if (active) {
        const float inv = 1.0f / l;
        float4* op = reinterpret_cast<float4*>(o + (static_cast<int64_t>(bh) * Sq + qi) * D);
#pragma unroll
        for (int d4 = 0; d4 < D / 4; ++d4)
            op[d4] = make_float4(acc[4 * d4 + 0] * inv, acc[4 * d4 + 1] * inv,
                                 acc[4 * d4 + 2] * inv, acc[4 * d4 + 3] * inv);
    }
}

torch::Tensor attention_forward(torch::Tensor q, torch::Tensor k, torch::Tensor v) {
    TORCH_CHECK(q.is_cuda() && k.is_cuda() && v.is_cuda(), "expected CUDA tensors");
    TORCH_CHECK(q.scalar_type() == torch::kFloat32 && k.scalar_type() == torch::kFloat32 &&
                    v.scalar_type() == torch::kFloat32,
                "expected float32");
    TORCH_CHECK(q.dim() >= 2 && k.dim() == q.dim() && v.dim() == q.dim(), "rank mismatch");
    TORCH_CHECK(q.size(-1) == D && k.size(-1) == D && v.size(-1) == D, "head dim 64 only");
    TORCH_CHECK(k.sizes() == v.sizes(), "k and v must have the same shape");
    for (int64_t i = 0; i + 2 < q.dim(); ++i)
        TORCH_CHECK(q.size(i) == k.size(i), "batch dimensions must match (no broadcasting)");
    // float4 accesses need 16-byte aligned rows: a contiguous view at an odd storage offset is
    // copied into a fresh (aligned) tensor.
    auto prep = [](const torch::Tensor& t) {
        auto c = t.contiguous();
        if (reinterpret_cast<uintptr_t>(c.data_ptr<float>()) % 16 != 0) c = c.clone();
        return c;
    };
    auto qc = prep(q);
    auto kc = prep(k);
    auto vc = prep(v);
    auto out = torch::empty_like(qc);
    const int64_t Sq = qc.size(-2), Sk = kc.size(-2);
    if (out.numel() == 0) return out;
    TORCH_CHECK(Sk > 0, "no keys");
    const int64_t BH = qc.numel() / (Sq * D);
    const int64_t qblocks = (Sq + BQ - 1) / BQ;
    TORCH_CHECK(Sq < (int64_t(1) << 31) && Sk < (int64_t(1) << 31) &&
                    BH * qblocks < (int64_t(1) << 31),
                "sizes too large");
    TORCH_CHECK(reinterpret_cast<uintptr_t>(out.data_ptr<float>()) % 16 == 0,
                "expected a 16-byte aligned output");
    const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(D)));
    flash_fp32_kernel<<<static_cast<unsigned>(BH * qblocks), BQ, 0,
                        at::cuda::getCurrentCUDAStream()>>>(
        qc.data_ptr<float>(), kc.data_ptr<float>(), vc.data_ptr<float>(), out.data_ptr<float>(),
        static_cast<int>(Sq), static_cast<int>(Sk), static_cast<int>(qblocks), scale);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""

attn_cpp_source = "torch::Tensor attention_forward(torch::Tensor q, torch::Tensor k, torch::Tensor v);"

attn_module = load_inline(
    name="bench_attention_flash_fp32",
    cpp_sources=attn_cpp_source,
    cuda_sources=attn_cuda_source,
    functions=["attention_forward"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return attn_module.attention_forward(q, k, v)
