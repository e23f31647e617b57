#include "kbv/serve/submission.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>

#include "kbv/common/content_key.h"
#include "kbv/run/discovery.h"

namespace kbv::serve {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::set<std::string> kFields = {"problem",          "problem_source", "problem_name", "level",
                                       "candidate_source", "protocol",       "run",          "sample"};
// A file name of its own folder: KernelBench's `{id}_{Name}.py` gives the problem's id and name.
const std::regex kFileName(R"([A-Za-z0-9_][A-Za-z0-9_.-]*\.py)");

std::string text_field(const json& body, const std::string& name) {
  if (!body.contains(name)) return "";
  if (!body[name].is_string()) throw BadSubmission("`" + name + "` must be a string");
  return body[name].get<std::string>();
}

// Writes `content` to `path` whole or not at all: a concurrent request of the same problem writes
// the same bytes, and a reader never sees half a file.
void write_file(const fs::path& path, const std::string& content, const std::string& id) {
  fs::create_directories(path.parent_path());
  const fs::path partial = path.string() + ".partial-" + id;
  {
    std::ofstream out(partial, std::ios::binary);
    out << content;
    if (!out.flush()) throw std::runtime_error("cannot write " + partial.string());
  }
  fs::rename(partial, path);
}

}  // namespace

Submission read_submission(const json& body, const Intake& intake, const std::string& id) {
  const std::string& files_dir = intake.files_dir;
  if (!body.is_object()) throw BadSubmission("the body must be a JSON object");
  for (const auto& [name, value] : body.items()) {
    if (!kFields.count(name)) throw BadSubmission("unknown field `" + name + "`");
  }
  Submission s;
  s.id = id;
  s.protocol = body.contains("protocol") ? text_field(body, "protocol") : "verified";
  if (s.protocol != "verified" && s.protocol != "kernelbench") {
    throw BadSubmission("`protocol` is verified or kernelbench, not " + s.protocol);
  }
  s.run_name = body.contains("run") ? text_field(body, "run") : "serve";
  if (s.run_name.empty()) throw BadSubmission("`run` must not be empty");

  const std::string problem = text_field(body, "problem"), problem_source = text_field(body, "problem_source");
  if (problem.empty() == problem_source.empty()) {
    throw BadSubmission("name the problem: `problem` (a file on the serving machine) or `problem_source` (its text)");
  }
  if (!problem.empty()) {
    if (body.contains("problem_name") || body.contains("level")) {
      throw BadSubmission("`problem_name` and `level` go with `problem_source`; a `problem` file is named by its path");
    }
    std::error_code error;
    if (!fs::is_regular_file(problem, error))
      throw BadSubmission("no problem file " + problem + " on the serving machine");
    if (!intake.problems_root.empty()) {
      // Where it really is: a link or `..` out of the folder does not count as in it.
      const fs::path real = fs::weakly_canonical(problem, error),
                     root = fs::weakly_canonical(intake.problems_root, error);
      const auto [end, _] = std::mismatch(root.begin(), root.end(), real.begin(), real.end());
      if (end != root.end())
        throw BadSubmission("this kbv serve takes problems under " + intake.problems_root + " only");
    }
    s.problem = run::problem_info(fs::absolute(problem).lexically_normal().string());
  } else {
    if (!intake.problems_root.empty()) {
      throw BadSubmission("this kbv serve takes problems by path, under " + intake.problems_root + ", not as text");
    }
    const std::string name = body.contains("problem_name") ? text_field(body, "problem_name") : "problem.py";
    if (!std::regex_match(name, kFileName))
      throw BadSubmission("`problem_name` must be a file name ending in .py, not " + name);
    fs::path folder = fs::path(files_dir) / "problems" / content_key(problem_source);
    if (body.contains("level")) {
      if (!body["level"].is_number_integer() || body["level"].get<int>() < 0)
        throw BadSubmission("`level` must be an integer");
      folder /= "level" + std::to_string(body["level"].get<int>());
    }
    const fs::path path = folder / name;
    if (!fs::exists(path)) write_file(path, problem_source, id);
    s.problem = run::problem_info(path.string());
  }

  const std::string candidate_source = text_field(body, "candidate_source");
  if (candidate_source.empty())
    throw BadSubmission("`candidate_source` (the candidate's text, with ModelNew) is required");
  if (body.contains("sample")) {
    if (!body["sample"].is_number_integer()) throw BadSubmission("`sample` must be an integer");
    s.candidate.sample = body["sample"].get<int>();
  }
  const fs::path candidate = fs::path(files_dir) / "candidates" / id / "candidate.py";
  write_file(candidate, candidate_source, id);
  s.candidate.path = candidate.string();
  s.candidate.content_key = content_key(candidate_source);
  return s;
}

}  // namespace kbv::serve
