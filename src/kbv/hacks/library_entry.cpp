#include "kbv/hacks/library_entry.h"

#include <array>
#include <utility>

namespace kbv::hacks {
namespace {

// The function's qualified name: `at::cpu::addmm(at::Tensor const&, ...)` -> `at::cpu::addmm`.
std::string_view qualified_name(std::string_view symbol) {
  const std::size_t cut = symbol.find_first_of("(<");
  return cut == std::string_view::npos ? symbol : symbol.substr(0, cut);
}

// `addmm_out` / `addmm_outf` / `addmm_symint` -> `addmm`: the variants ATen generates per op.
std::string_view op_of(std::string_view name) {
  for (std::string_view suffix : {"_symint", "_outf", "_out"}) {
    if (name.ends_with(suffix)) name.remove_suffix(suffix.size());
  }
  return name;
}

// Fortran BLAS as MKL and OpenBLAS export it: sgemm_, dgemv_, ...
bool fortran_blas(std::string_view name) {
  static constexpr std::array kRoutines = {"gemm_", "gemv_", "symm_", "syrk_", "trsm_",
                                           "trmm_", "axpy_", "dot_",  "ger_"};
  if (name.size() < 2 || std::string_view("sdcz").find(name[0]) == std::string_view::npos) return false;
  for (std::string_view routine : kRoutines) {
    if (name.substr(1) == routine) return true;
  }
  return false;
}

}  // namespace

std::optional<std::string> library_entry(std::string_view symbol,
                                         const std::function<bool(std::string_view)>& is_aten_op) {
  const std::string_view name = qualified_name(symbol);
  if (name.find("::") == std::string_view::npos) {  // a C function
    static constexpr std::array<std::pair<std::string_view, std::string_view>, 9> kPrefixes = {
        {{"cublasLt", "cuBLASLt"},
         {"cublas", "cuBLAS"},
         {"cudnn", "cuDNN"},
         {"cufft", "cuFFT"},
         {"cusparse", "cuSPARSE"},
         {"cusolver", "cuSOLVER"},
         {"cblas_", "BLAS"},
         {"mkl_", "MKL"},
         {"dnnl_", "oneDNN"}}};
    for (const auto& [prefix, library] : kPrefixes) {
      if (name.starts_with(prefix)) return std::string(library);
    }
    if (fortran_blas(name)) return "BLAS";
    return std::nullopt;
  }
  // Every function of these namespaces is an op's implementation or a kernel of one.
  for (std::string_view space :
       {"at::native::", "at::meta::", "at::compositeexplicitautograd::", "at::compositeexplicitautogradnonfunctional::",
        "at::compositeimplicitautograd::", "at::cuda::blas::"}) {
    if (name.starts_with(space))
      return "ATen below the dispatcher (" + std::string(space.substr(0, space.size() - 2)) + ")";
  }
  // at::_ops::addmm::call is the dispatcher's own entry (at::addmm inlines to it); redispatch skips
  // what the dispatcher records.
  if (name.starts_with("at::_ops::") && name.ends_with("::redispatch")) return "ATen below the dispatcher (redispatch)";
  // The backends' op functions, generated per op (ATen/ops/*_cpu_dispatch.h, *_cuda_dispatch.h),
  // beside utilities of the same namespaces (at::cuda::getCurrentCUDAStream).
  for (std::string_view space : {"at::cpu::", "at::cuda::"}) {
    if (!name.starts_with(space)) continue;
    const std::string_view rest = name.substr(space.size());
    if (rest.find("::") == std::string_view::npos && is_aten_op(op_of(rest))) {
      return "ATen below the dispatcher (" + std::string(space.substr(0, space.size() - 2)) + ")";
    }
  }
  return std::nullopt;
}

}  // namespace kbv::hacks
