// A small CPU emulator of the CUDA execution model, for checking the suite's kernels on a machine
// without a GPU. Every CUDA thread of a block is an OS thread; blocks of a grid run one after the
// other; __syncthreads() is a barrier over the block's live threads; warp shuffles exchange
// values through a per-warp buffer between two warp barriers. __shared__ variables become
// function-local statics (one copy, which is right because blocks run one at a time).
//
// tools/emu_check.py rewrites a candidate's CUDA source to include this header (launches
// `k<<<g, b, s, st>>>(args)` become `emu::launch(k, emu::cfg(g, b, s, st), args)`, `.is_cuda()`
// becomes `.is_cpu()`) and builds it as a plain C++ extension that runs on CPU tensors.
#pragma once

#include <torch/extension.h>

#include <vector_types.h>
#include <vector_functions.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <tuple>
#include <vector>

#undef __global__
#undef __device__
#undef __host__
#undef __shared__
#undef __forceinline__
#undef __launch_bounds__
#undef __align__
#undef __constant__
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __shared__ static
#define __constant__ static
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))

#define C10_CUDA_KERNEL_LAUNCH_CHECK() ((void)0)



thread_local uint3 threadIdx;
thread_local uint3 blockIdx;
inline dim3 blockDim;
inline dim3 gridDim;
constexpr int warpSize = 32;

// ---- math ------------------------------------------------------------------------------------
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline double rsqrt(double x) { return 1.0 / std::sqrt(x); }
inline float __expf(float x) { return std::exp(x); }
inline float __logf(float x) { return std::log(x); }
inline float __fdividef(float a, float b) { return a / b; }
inline float __saturatef(float x) { return x < 0.f ? 0.f : (x > 1.f ? 1.f : x); }
inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }
inline unsigned min(unsigned a, unsigned b) { return a < b ? a : b; }
inline unsigned max(unsigned a, unsigned b) { return a > b ? a : b; }
inline long long min(long long a, long long b) { return a < b ? a : b; }
inline long long max(long long a, long long b) { return a > b ? a : b; }
inline long min(long a, long b) { return a < b ? a : b; }
inline long max(long a, long b) { return a > b ? a : b; }
inline float min(float a, float b) { return std::fmin(a, b); }
inline float max(float a, float b) { return std::fmax(a, b); }
template <class T>
inline T __ldg(const T* p) { return *p; }

namespace emu {

[[noreturn]] inline void fail(const char* what) {
  std::fprintf(stderr, "EMU ERROR: %s (block %u,%u,%u thread %u,%u,%u)\n", what, blockIdx.x,
               blockIdx.y, blockIdx.z, threadIdx.x, threadIdx.y, threadIdx.z);
  std::fflush(stderr);
  std::abort();
}

// Barrier over a changing set of participants: threads that leave the kernel stop counting.
struct Barrier {
  std::mutex mu;
  std::condition_variable cv;
  int expected = 0, arrived = 0;
  uint64_t gen = 0;
  void reset(int n) {
    std::lock_guard<std::mutex> l(mu);
    expected = n;
    arrived = 0;
  }
  void sync() {
    std::unique_lock<std::mutex> l(mu);
    const uint64_t g = gen;
    if (++arrived == expected) {
      arrived = 0;
      ++gen;
      cv.notify_all();
      return;
    }
    if (!cv.wait_for(l, std::chrono::seconds(60), [&] { return gen != g; }))
      fail("barrier timeout (divergent __syncthreads / shuffle?)");
  }
  void drop() {
    std::lock_guard<std::mutex> l(mu);
    --expected;
    if (arrived > 0 && arrived == expected) {
      arrived = 0;
      ++gen;
      cv.notify_all();
    }
  }
};

struct Warp {
  Barrier bar;
  uint64_t buf[32];
  bool live[32];
};

struct BlockState {
  Barrier block;
  std::vector<std::unique_ptr<Warp>> warps;
};

inline BlockState*& state() {
  static BlockState* s = nullptr;
  return s;
}
thread_local int t_lane = 0, t_warp = 0;
inline std::mutex& atomic_mu() {
  static std::mutex m;
  return m;
}

template <class T>
T shfl_from(T v, int src_lane) {
  static_assert(sizeof(T) <= 8, "shuffle of a type wider than 8 bytes");
  Warp& w = *state()->warps[t_warp];
  uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof(T));
  w.buf[t_lane] = bits;
  w.bar.sync();
  if (src_lane < 0 || src_lane >= 32 || !w.live[src_lane]) fail("shuffle from an inactive lane");
  uint64_t got = w.buf[src_lane];
  w.bar.sync();
  T out;
  std::memcpy(&out, &got, sizeof(T));
  return out;
}

struct Cfg {
  dim3 g, b;
  size_t smem;
  Cfg(dim3 g_, dim3 b_, size_t s = 0, cudaStream_t = nullptr) : g(g_), b(b_), smem(s) {}
};
inline Cfg cfg(dim3 g, dim3 b, size_t s = 0, cudaStream_t st = nullptr) { return Cfg(g, b, s, st); }
inline cudaStream_t stream() { return nullptr; }

template <class... P, class... A>
void launch(void (*kern)(P...), Cfg c, A&&... args) {
  if (c.smem > 0) fail("dynamic shared memory is not emulated");
  const unsigned T = c.b.x * c.b.y * c.b.z;
  if (T == 0 || T > 1024) fail("bad block size");
  if (c.g.x == 0 || c.g.y == 0 || c.g.z == 0) fail("empty grid");
  if (c.g.y > 65535 || c.g.z > 65535) fail("grid y/z over 65535");
  std::tuple<std::decay_t<P>...> params(std::forward<A>(args)...);
  blockDim = c.b;
  gridDim = c.g;
  BlockState st;
  const unsigned nwarps = (T + 31) / 32;
  for (unsigned w = 0; w < nwarps; ++w) st.warps.emplace_back(new Warp());
  state() = &st;
  Barrier end;  // all T threads, between blocks
  end.reset(static_cast<int>(T));
  auto reset_block = [&] {
    st.block.reset(static_cast<int>(T));
    for (unsigned w = 0; w < nwarps; ++w) {
      const int lanes = static_cast<int>(std::min<unsigned>(32, T - w * 32));
      st.warps[w]->bar.reset(lanes);
      for (int l = 0; l < 32; ++l) st.warps[w]->live[l] = l < lanes;
    }
  };
  reset_block();
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < T; ++t) {
    threads.emplace_back([&, t] {
      threadIdx.x = t % c.b.x;
      threadIdx.y = (t / c.b.x) % c.b.y;
      threadIdx.z = t / (c.b.x * c.b.y);
      t_lane = static_cast<int>(t % 32);
      t_warp = static_cast<int>(t / 32);
      for (unsigned bz = 0; bz < c.g.z; ++bz)
        for (unsigned by = 0; by < c.g.y; ++by)
          for (unsigned bx = 0; bx < c.g.x; ++bx) {
            blockIdx.x = bx;
            blockIdx.y = by;
            blockIdx.z = bz;
            std::apply(kern, params);
            {
              Warp& w = *st.warps[t_warp];
              std::lock_guard<std::mutex> l(w.bar.mu);
              w.live[t_lane] = false;
            }
            st.block.drop();
            st.warps[t_warp]->bar.drop();
            end.sync();
            if (t == 0) reset_block();
            end.sync();
          }
    });
  }
  for (auto& th : threads) th.join();
  state() = nullptr;
}

}  // namespace emu

inline void __syncthreads() { emu::state()->block.sync(); }
inline void __syncwarp(unsigned = 0xffffffffu) { emu::state()->warps[emu::t_warp]->bar.sync(); }
inline void __threadfence() {}
inline void __threadfence_block() {}

template <class T>
T __shfl_sync(unsigned, T v, int src, int width = 32) {
  const int base = emu::t_lane - emu::t_lane % width;
  return emu::shfl_from(v, base + ((src % width) + width) % width);
}
template <class T>
T __shfl_xor_sync(unsigned, T v, int mask, int width = 32) {
  const int src = emu::t_lane ^ mask;
  const int base = emu::t_lane - emu::t_lane % width;
  return emu::shfl_from(v, (src >= base + width) ? emu::t_lane : src);
}
template <class T>
T __shfl_down_sync(unsigned, T v, unsigned delta, int width = 32) {
  const int in_seg = emu::t_lane % width;
  const int src = in_seg + static_cast<int>(delta) < width ? emu::t_lane + static_cast<int>(delta)
                                                           : emu::t_lane;
  return emu::shfl_from(v, src);
}
template <class T>
T __shfl_up_sync(unsigned, T v, unsigned delta, int width = 32) {
  const int in_seg = emu::t_lane % width;
  const int src =
      in_seg - static_cast<int>(delta) >= 0 ? emu::t_lane - static_cast<int>(delta) : emu::t_lane;
  return emu::shfl_from(v, src);
}

inline float atomicAdd(float* p, float v) {
  std::lock_guard<std::mutex> l(emu::atomic_mu());
  float old = *p;
  *p = old + v;
  return old;
}
inline double atomicAdd(double* p, double v) {
  std::lock_guard<std::mutex> l(emu::atomic_mu());
  double old = *p;
  *p = old + v;
  return old;
}
inline int atomicAdd(int* p, int v) {
  std::lock_guard<std::mutex> l(emu::atomic_mu());
  int old = *p;
  *p = old + v;
  return old;
}
