// The static source screen on snippets of candidate kernels: each finding from realistic code,
// and names that must stay clean because they sit in comments, literals or #include lines, or
// only resemble a rule's name.
#include "kbv/hacks/source_screen.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace kbv::hacks {
namespace {

// "line finding token" per match, in the order returned: one readable comparison per test.
std::vector<std::string> screen(std::string_view source) {
  std::vector<std::string> out;
  for (const SourceMatch& m : screen_cxx_source(source)) {
    out.push_back(std::to_string(m.line) + " " + m.finding + " " + m.token);
  }
  return out;
}

using Lines = std::vector<std::string>;

TEST(SourceScreen, SideStreamCreatedAndLaunchedOn) {
  const char* src = R"cu(torch::Tensor forward(torch::Tensor x) {
  auto y = torch::empty_like(x);
  cudaStream_t s;
  cudaStreamCreate(&s);
  relu_kernel<<<grid, block, 0, s>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);
  return y;
})cu";
  const std::vector<SourceMatch> found = screen_cxx_source(src);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].finding, "side_stream");
  EXPECT_EQ(found[0].token, "cudaStreamCreate");
  EXPECT_EQ(found[0].line, 4);
  EXPECT_EQ(found[0].excerpt, "cudaStreamCreate(&s);");
}

TEST(SourceScreen, QualifiedNamesAreJoinedAndMatchOnTheirLastComponent) {
  const char* src = R"cu(auto side = at::cuda::getStreamFromPool();
c10::cuda::CUDAStreamGuard guard(c10::cuda::getStreamFromPool(/*isHighPriority=*/true));
::cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
auto other = at :: cuda ::
    getStreamFromPool();
cudaGraphLaunch(graph_exec, stream);)cu";
  EXPECT_EQ(screen(src),
            (Lines{"1 side_stream at::cuda::getStreamFromPool", "2 side_stream c10::cuda::getStreamFromPool",
                   "3 side_stream ::cudaStreamCreateWithFlags", "3 side_stream cudaStreamNonBlocking",
                   "4 side_stream at::cuda::getStreamFromPool", "6 side_stream cudaGraphLaunch"}));
}

TEST(SourceScreen, RawAllocation) {
  const char* src = R"cu(static float* scratch = nullptr;
if (!scratch) cudaMalloc(&scratch, n * sizeof(float));
cudaMallocManaged((void**)&flags, 64);
CUdeviceptr d; cuMemAlloc_v2(&d, bytes);)cu";
  EXPECT_EQ(screen(src), (Lines{"2 raw_allocation cudaMalloc", "3 raw_allocation cudaMallocManaged",
                                "4 raw_allocation cuMemAlloc_v2"}));
}

TEST(SourceScreen, HostTimingIncludingAnythingUnderChrono) {
  const char* src = R"cu(auto t0 = std::chrono::high_resolution_clock::now();
using namespace std::chrono;
auto t1 = chrono::steady_clock::now();
cudaEventElapsedTime(&ms, start, stop);
clock_gettime(CLOCK_MONOTONIC, &ts);)cu";
  EXPECT_EQ(screen(src), (Lines{"1 host_timing std::chrono::high_resolution_clock::now", "2 host_timing std::chrono",
                                "3 host_timing chrono::steady_clock::now", "4 host_timing cudaEventElapsedTime",
                                "5 host_timing clock_gettime"}));
}

TEST(SourceScreen, GlobalStateTamper) {
  const char* src = R"cu(setenv("X", "1", 1);
at::globalContext().setAllowTF32CuBLAS(true);
auto real = dlsym(RTLD_NEXT, "cudaLaunchKernel");
torch::set_num_threads(1);)cu";
  EXPECT_EQ(screen(src), (Lines{"1 global_state_tamper setenv", "2 global_state_tamper setAllowTF32CuBLAS",
                                "3 global_state_tamper dlsym", "3 global_state_tamper RTLD_NEXT",
                                "4 global_state_tamper torch::set_num_threads"}));
}

TEST(SourceScreen, BackgroundThreadTypesAndCalls) {
  const char* src = R"cu(std::thread worker([] {});
worker.detach();
auto f = std::async(std::launch::async, warm_up);
pid_t pid = fork ();
std::this_thread::sleep_for(ms);
unsigned n = std::thread::hardware_concurrency();
int fork = 2; thread t;)cu";
  // std::launch::async is a policy, not std::async; hardware_concurrency starts nothing; a bare
  // `thread` or an uncalled `fork` is just a name.
  EXPECT_EQ(screen(src),
            (Lines{"1 background_thread std::thread", "3 background_thread std::async", "4 background_thread fork"}));
}

TEST(SourceScreen, TorchsOwnWaysToStartWorkAndTheGeneratorsSeed) {
  const char* src = R"cu(at::launch(snoop);
at::internal::intraop_launch(task);
auto policy = std::launch::async;
at::Generator g = at::detail::getDefaultCPUGenerator();
uint64_t seed = g.current_seed();
auto mine = at::detail::createCPUGenerator(seed);)cu";
  // A launch policy starts nothing; a generator of its own tells nothing of kbv's draws.
  EXPECT_EQ(screen(src),
            (Lines{"1 background_thread at::launch", "2 background_thread at::internal::intraop_launch",
                   "4 generator_read at::detail::getDefaultCPUGenerator", "5 generator_read current_seed"}));
}

TEST(SourceScreen, PrecisionDowngrade) {
  const char* src = R"cu(__global__ void scale(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  __half a = __float2half(x[i]); __half b = a;
  y[i] = __half2float(__hmul(a, b));
}
nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 16, float> acc;
auto h = x.to(torch::kHalf);
c10::Half v; Half w;)cu";
  EXPECT_EQ(screen(src), (Lines{"3 precision_downgrade __half", "3 precision_downgrade __float2half",
                                "4 precision_downgrade __half2float", "6 precision_downgrade nvcuda::wmma::fragment",
                                "6 precision_downgrade nvcuda::wmma::accumulator", "7 precision_downgrade torch::kHalf",
                                "8 precision_downgrade c10::Half"}));
}

TEST(SourceScreen, CommentsAndLiteralsAreIgnored) {
  const char* src = R"cu(// cudaStreamCreate(&s); would break stream semantics
/* we never call cudaMalloc or
   std::chrono::steady_clock::now() here */
const char* msg = "setenv and std::thread are not used";
const char* doc = R"(fork() __half cudaMallocManaged)";
const char* tag = u8"dlsym"; const wchar_t* w = L"cudaMalloc";
char q = '"'; char e = '\''; int id = 'fork';
int n = 1'000'000;
float* out = y;)cu";
  EXPECT_EQ(screen(src), Lines{});
}

TEST(SourceScreen, CharLiteralDoesNotHideTheCodeAfterIt) {
  // '"' must not open a string and 1'000 must not open a char literal: the call after each counts.
  const char* src = R"cu(char q = '"'; cudaMalloc(&p, 4);
int n = 1'000; cudaMallocHost(&h, n);)cu";
  EXPECT_EQ(screen(src), (Lines{"1 raw_allocation cudaMalloc", "2 raw_allocation cudaMallocHost"}));
}

TEST(SourceScreen, IncludeLinesAreIgnoredButOtherDirectivesAreCode) {
  const char* src = R"cu(#include <thread>
#  include <chrono>
#include "cuda_fp16.h"
#define ALLOC cudaMalloc
#include <cuda_runtime.h>  // for cudaMalloc)cu";
  EXPECT_EQ(screen(src), Lines{"4 raw_allocation cudaMalloc"});
}

TEST(SourceScreen, LineNumbersSurviveMultiLineRawStringsAndComments) {
  const char* src = R"test(const char* kernel = R"cuda(
__global__ void k(float* p) {
  cudaMalloc(&p, 4);  )" is not the end
}
)cuda";
/* block
   comment */ cudaStreamCreate(&s);
// a spliced comment \
cudaMallocAsync(&p, 4, s);
setenv("A", "B", 1);)test";
  EXPECT_EQ(screen(src), (Lines{"7 side_stream cudaStreamCreate", "10 global_state_tamper setenv"}));
}

TEST(SourceScreen, LookAlikeNamesAreClean) {
  const char* src = R"cu(float half = 0.5f * x;
int halfway = n / 2;
void* my_cudaMallocWrapper(size_t n);
auto out = my_cudaMallocWrapper(64);
bool use_half2 = false; int forked = 0; int chrono = 1;)cu";
  EXPECT_EQ(screen(src), Lines{});
}

TEST(SourceScreen, EachFindingTokenLineOnceInLineOrder) {
  const char* src = R"cu(cudaMalloc(&a, 4); cudaMalloc(&b, 4);
setenv("A", "1", 1); cudaMalloc(&c, 4);)cu";
  EXPECT_EQ(screen(src),
            (Lines{"1 raw_allocation cudaMalloc", "2 global_state_tamper setenv", "2 raw_allocation cudaMalloc"}));
}

TEST(SourceScreen, ExcerptIsTrimmedAndCut) {
  const std::string src = "  \t cudaMalloc(&p, " + std::string(300, '1') + ");   ";
  const std::vector<SourceMatch> found = screen_cxx_source(src);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].excerpt.size(), 160u);
  EXPECT_TRUE(found[0].excerpt.starts_with("cudaMalloc(&p, 111"));
  // A UTF-8 character across the 160-byte cut is dropped whole, never split. The prefix
  // "cudaMalloc(&p, 4); // " is 22 bytes, so with 137 x the 2-byte character is bytes 160-161.
  const auto cut = [](int x_count) {
    const std::string line = "cudaMalloc(&p, 4); // " + std::string(x_count, 'x') + "\xC3\xA9 tail";
    return screen_cxx_source(line).at(0).excerpt.size();
  };
  EXPECT_EQ(cut(137), 159u);
  EXPECT_EQ(cut(136), 160u);
}

TEST(SourceScreen, EveryTruncationOfTrickySourceIsScreened) {
  // Candidate text may end anywhere: inside a raw string's delimiter, an escape, a directive.
  const std::string src = R"cu(#include <x>
auto s = u8R"ab(x)" )ab"; char c = '\''; /* c */ // d
int n = 0x1p+4'0; ::at :: cuda::getStreamFromPool(); "e\"";)cu";
  for (std::size_t n = 0; n <= src.size(); ++n) {
    EXPECT_NO_THROW(screen_cxx_source(std::string_view(src).substr(0, n))) << n;
  }
  EXPECT_EQ(screen(src), Lines{"3 side_stream ::at::cuda::getStreamFromPool"});
}

TEST(SourceScreen, HonestGridStrideRelu) {
  const char* src = R"cu(#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

__global__ void relu_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    y[i] = fmaxf(x[i], 0.0f);
  }
}

torch::Tensor relu(torch::Tensor x) {
  auto y = torch::empty_like(x);
  const int64_t n = x.numel();
  const int threads = 256;
  const int blocks = (int)std::min<int64_t>((n + threads - 1) / threads, 4096);
  relu_kernel<<<blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(
      x.data_ptr<float>(), y.data_ptr<float>(), n);
  return y;
})cu";
  EXPECT_EQ(screen(src), Lines{});
}

TEST(SourceScreen, HonestLoadInlineSoftmaxSourceIsClean) {
  const char* src = R"cu(#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <cuda_runtime.h>
#include <cfloat>

// Row-wise softmax: one block per row, a warp-shuffle reduction for the max and for the sum.
// Unlike a naive version we do not cudaMalloc a scratch buffer; shared memory is enough.

constexpr int kThreads = 256;

__device__ __forceinline__ float warp_max(float v) {
  for (int offset = 16; offset > 0; offset >>= 1) v = fmaxf(v, __shfl_down_sync(0xffffffff, v, offset));
  return v;
}

__device__ __forceinline__ float warp_sum(float v) {
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(0xffffffff, v, offset);
  return v;
}

// Reduces over the block; every thread gets the result. `op` is max or sum.
template <bool kMax>
__device__ float block_reduce(float v, float* shared) {
  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  v = kMax ? warp_max(v) : warp_sum(v);
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  v = threadIdx.x < blockDim.x / 32 ? shared[lane] : (kMax ? -FLT_MAX : 0.0f);
  if (warp == 0) v = kMax ? warp_max(v) : warp_sum(v);
  if (threadIdx.x == 0) shared[0] = v;
  __syncthreads();
  const float result = shared[0];
  __syncthreads();
  return result;
}

__global__ void softmax_kernel(const float* __restrict__ x, float* __restrict__ y, int cols) {
  __shared__ float shared[32];
  const float* row = x + (int64_t)blockIdx.x * cols;
  float* out = y + (int64_t)blockIdx.x * cols;
  float m = -FLT_MAX;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, row[c]);
  m = block_reduce<true>(m, shared);
  float s = 0.0f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) s += __expf(row[c] - m);
  s = block_reduce<false>(s, shared);
  const float inv = 1.0f / s;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) out[c] = __expf(row[c] - m) * inv;
}

torch::Tensor softmax_cuda(torch::Tensor x) {
  TORCH_CHECK(x.is_cuda(), "x must be a CUDA tensor (no std::thread, no cudaStreamCreate)");
  TORCH_CHECK(x.dim() == 2, "x must be 2-D, got ", x.dim(), "-D");
  TORCH_CHECK(x.scalar_type() == torch::kFloat32, "x must be float32");
  auto xc = x.contiguous();
  auto y = torch::empty_like(xc);
  const int rows = (int)xc.size(0);
  const int cols = (int)xc.size(1);
  if (rows == 0 || cols == 0) return y;
  cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  softmax_kernel<<<rows, kThreads, 0, stream>>>(xc.data_ptr<float>(), y.data_ptr<float>(), cols);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return y;
}
)cu";
  EXPECT_EQ(screen(src), Lines{});
}

}  // namespace
}  // namespace kbv::hacks
