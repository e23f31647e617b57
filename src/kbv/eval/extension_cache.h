// Where a candidate's load_inline builds go. torch keys its cache on the extension's name, and
// many candidates reuse one name ("elementwise_add"): kbv gives every candidate content its own
// TORCH_EXTENSIONS_DIR, so two candidates never share (or clash over) a build, and an unchanged
// candidate is never built twice. What else a build depends on is in the key too, so that a
// changed torch or compiler builds afresh instead of loading (or reporting the failure of) a
// build made with the old one.
#pragma once

#include <string>

#include "kbv/eval/worker_client.h"

namespace kbv::eval {

// The key of a candidate's builds: the SHA-256 of the file's content, the device, kbv's version, the
// interpreter and toolchain_identity(device).
std::string build_key(const std::string& candidate_path, const std::string& device, const std::string& python);

// Where its builds name their folder (TORCH_EXTENSIONS_DIR): `cache_dir`/extensions/<build_key>. In
// a sandbox, the private build folder is attached there (sandbox/build_folder.h), in the hidden
// cache, and nothing is on the disk at that path; with the sandbox off, the builds are made there.
std::string extension_dir(const std::string& cache_dir, const std::string& candidate_path, const std::string& device,
                          const std::string& python);

// Where kbv publishes a sandboxed build of it (published_build.h): `cache_dir`/builds/<build_key>.
std::string published_dir(const std::string& cache_dir, const std::string& candidate_path, const std::string& device,
                          const std::string& python);

// Adds to the environment of a candidate's worker what its builds need: TORCH_EXTENSIONS_DIR
// (extension_dir) and CXX set to kbv's compiler wrapper `kbv-pch-c++` (torch/extension.h
// precompiled under `cache_dir`/pch; the real compiler in KBV_REAL_CXX), as copied from beside the
// kbv executable to `cache_dir`/toolchain/<key of its content>, so that builds name it by one path
// whichever build of kbv runs them. Without the wrapper, with KBV_PCH=off or a $CXX of more than
// one word, CXX is left as it is.
void add_build_environment(WorkerLaunch& launch, const std::string& cache_dir, const std::string& candidate_path,
                           const std::string& device);

// The files a build on `device` runs or links, as load_inline finds them here: the C++ compiler
// ($CXX, else c++), for cuda nvcc ($PYTORCH_NVCC, else under $CUDA_HOME or $CUDA_PATH, else on
// PATH, else /usr/local/cuda), and torch's own library; each by its resolved path, size and
// modification time (a stat each, no process started); and, unless KBV_PCH=off, kbv's compiler
// wrapper by its content (a build made through another wrapper would be built again on every use).
std::string toolchain_identity(const std::string& device);

}  // namespace kbv::eval
