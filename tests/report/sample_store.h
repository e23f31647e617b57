// Results stores written through kbv::store::Store with records whose numbers the report tests
// know by hand (sample_store.cpp lists every record).
#pragma once

#include <filesystem>
#include <string>

namespace kbv::report::fixtures {

// A fresh, empty folder under the temp directory, unique to this process and `name`.
std::filesystem::path fresh_dir(const std::string& name);

// Three runs: model-a (level 1 and 2 problems, verified and kernelbench records; audits with a
// cured finding, an uncured one and none), model-b (one candidate file whose evaluation failed,
// and one unmatched file) and model-c (one problem outside any level, never audited on its
// device, a single timeout); the lanes of a kbv run over model-a and model-c (two GPUs, busy 80%
// and 50%) and of a kbv serve for model-a (20%).
std::filesystem::path write_sample_store(const std::filesystem::path& dir);

// One run whose only records fail, on a problem that could not be audited: nothing to plot but
// axes and notes.
std::filesystem::path write_failing_store(const std::filesystem::path& dir);

}  // namespace kbv::report::fixtures
