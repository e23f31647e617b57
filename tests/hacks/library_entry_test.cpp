// Which imported functions are library compute below the dispatcher (hacks/library_entry), and the
// ELF reader that lists an object's imports (hacks/elf_symbols) on a real binary: this test's own.
#include "kbv/hacks/library_entry.h"

#include <gtest/gtest.h>

#include "kbv/hacks/elf_symbols.h"

namespace {

using kbv::hacks::library_entry;

bool some_ops(std::string_view name) { return name == "addmm" || name == "gelu" || name == "relu_"; }

TEST(LibraryEntry, AtenBackendOpsAndImplementationsAreEntries) {
  EXPECT_EQ(library_entry("at::cpu::addmm(at::Tensor const&, at::Tensor const&, at::Tensor const&, c10::Scalar const&, "
                          "c10::Scalar const&)",
                          some_ops),
            "ATen below the dispatcher (at::cpu)");
  EXPECT_EQ(library_entry("at::cuda::gelu_out(at::Tensor&, at::Tensor const&, c10::basic_string_view<char>)", some_ops),
            "ATen below the dispatcher (at::cuda)");
  EXPECT_TRUE(library_entry("at::cpu::relu_(at::Tensor&)", some_ops));
  EXPECT_TRUE(library_entry("at::native::gelu_out_cpu(at::Tensor const&)", some_ops));
  EXPECT_TRUE(library_entry("at::cuda::blas::gemm<float>(char, char, long, long)", some_ops));
  EXPECT_TRUE(library_entry("at::_ops::addmm::redispatch(c10::DispatchKeySet, at::Tensor const&)", some_ops));
}

TEST(LibraryEntry, MathLibrariesAreEntries) {
  EXPECT_EQ(library_entry("cublasSgemm_v2", some_ops), "cuBLAS");
  EXPECT_EQ(library_entry("cublasLtMatmul", some_ops), "cuBLASLt");
  EXPECT_EQ(library_entry("cudnnConvolutionForward", some_ops), "cuDNN");
  EXPECT_EQ(library_entry("cblas_sgemm", some_ops), "BLAS");
  EXPECT_EQ(library_entry("sgemm_", some_ops), "BLAS");
}

TEST(LibraryEntry, TheDispatchersEntriesAndUtilitiesAreNot) {
  EXPECT_FALSE(library_entry("at::_ops::addmm::call(at::Tensor const&, at::Tensor const&)", some_ops));
  EXPECT_FALSE(library_entry("at::cuda::getCurrentCUDAStream(signed char)", some_ops));
  EXPECT_FALSE(library_entry("at::cpu::is_avx2_supported()", some_ops));
  EXPECT_FALSE(library_entry("at::Tensor::contiguous(c10::MemoryFormat) const", some_ops));
  EXPECT_FALSE(library_entry("cudaLaunchKernel", some_ops));
  EXPECT_FALSE(library_entry("memcpy", some_ops));
  EXPECT_FALSE(library_entry("sgemm_kernel", some_ops));
}

TEST(ElfSymbols, ReadsThisBinarysImportsAndFunctions) {
  const kbv::hacks::ElfFunctions functions = kbv::hacks::read_elf_functions("/proc/self/exe");
  EXPECT_TRUE(functions.imported.count("memcpy") || functions.imported.count("malloc"));
  EXPECT_TRUE(
      functions.defined.count("kbv::hacks::read_elf_functions(std::__cxx11::basic_string<char, std::char_traits<char>, "
                              "std::allocator<char> > const&)"));
  EXPECT_THROW(kbv::hacks::read_elf_functions("/proc/self/status"), std::runtime_error);
}

}  // namespace
