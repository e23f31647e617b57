// Where a candidate's load_inline builds go. torch keys its cache on the extension's name, and
// many candidates reuse one name ("elementwise_add"): kbv gives every candidate content its own
// TORCH_EXTENSIONS_DIR, so two candidates never share (or clash over) a build, and an unchanged
// candidate is never built twice.
#pragma once

#include <string>

namespace kbv::eval {

// `cache_dir`/extensions/<key of the file's content, the device, kbv's version, the interpreter>.
std::string extension_dir(const std::string& cache_dir, const std::string& candidate_path, const std::string& device,
                          const std::string& python);

}  // namespace kbv::eval
