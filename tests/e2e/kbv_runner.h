// Runs the real `kbv eval` binary for the end-to-end suites: one evaluation, or many two at a
// time (the CI machine has 2 cores), each with its exit code, output and JSON record.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace kbv::testing {

struct Outcome {
  int exit_code = -1;
  std::string out, err;
  nlohmann::json record;  // when --json was written
};

// `kbv eval ARGS... --json FILE`; `tag` names the run in failure messages.
Outcome kbv_eval(const std::vector<std::string>& args, const std::string& tag);

// Runs every (key, args) job, `parallel` at a time; outcomes by key.
std::map<std::string, Outcome> kbv_eval_all(const std::vector<std::pair<std::string, std::vector<std::string>>>& jobs,
                                            int parallel = 2);

// The rows of a tab-separated manifest (header skipped), each as its cells.
std::vector<std::vector<std::string>> read_tsv(const std::string& path);

}  // namespace kbv::testing
