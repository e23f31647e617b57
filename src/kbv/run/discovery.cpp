#include "kbv/run/discovery.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <stdexcept>
#include <tuple>

#include <nlohmann/json.hpp>

#include "kbv/common/content_key.h"

namespace kbv::run {
namespace {

namespace fs = std::filesystem;

const std::regex kLevelFolder(R"(level(\d+))");
const std::regex kProblemFile(R"((\d+)_(.+)\.py)");
const std::regex kSampleFile(R"(level_(\d+)_problem_(\d+)_sample_(\d+)_kernel\.py)");

std::optional<int> level_of(const fs::path& folder) {
  std::smatch m;
  const std::string name = folder.filename().string();
  if (std::regex_match(name, m, kLevelFolder)) return std::stoi(m[1]);
  return std::nullopt;
}

// A folder's `.py` files are problems but for a package's `__init__.py` and private modules (`_x.py`).
bool problem_file(const fs::path& path) {
  return path.extension() == ".py" && !path.filename().string().starts_with("_");
}

// A candidate's content key, or why it cannot be used.
std::optional<std::string> readable(const fs::path& path, std::string& reason) {
  try {
    return file_content_key(path.string());
  } catch (const std::exception& error) {
    reason = error.what();
    return std::nullopt;
  }
}

void sort_jobs(std::vector<Job>& jobs) {
  auto key = [](const Job& j) {
    return std::make_tuple(j.run_name, j.problem.level.value_or(-1), j.problem.number.value_or(-1), j.problem.path,
                           j.candidate.sample.value_or(-1), j.candidate.path);
  };
  std::stable_sort(jobs.begin(), jobs.end(), [&](const Job& a, const Job& b) { return key(a) < key(b); });
}

// One CSV line split into fields ("..." quoting with "" for a quote, as RFC 4180 has it).
std::vector<std::string> split_csv(const std::string& line, char separator) {
  std::vector<std::string> fields(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        fields.back() += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        fields.back() += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == separator) {
      fields.emplace_back();
    } else if (c != '\r') {
      fields.back() += c;
    }
  }
  return fields;
}

}  // namespace

store::ProblemInfo problem_info(const std::string& file) {
  const fs::path path = file;
  store::ProblemInfo info;
  info.path = fs::absolute(path).lexically_normal().string();
  info.level = level_of(path.parent_path());
  std::smatch m;
  const std::string name = path.filename().string();
  if (std::regex_match(name, m, kProblemFile)) {
    info.number = std::stoi(m[1]);
    info.name = m[2];
  } else {
    info.name = path.stem().string();
  }
  info.content_key = file_content_key(info.path);
  return info;
}

std::vector<store::ProblemInfo> find_problems(const std::string& problems) {
  if (fs::is_regular_file(problems)) {
    if (fs::path(problems).extension() != ".py") throw InputError("--problems: not a Python file: " + problems);
    return {problem_info(problems)};
  }
  if (!fs::is_directory(problems)) throw InputError("--problems: no such file or folder: " + problems);
  std::vector<store::ProblemInfo> found;
  for (const auto& entry : fs::recursive_directory_iterator(problems)) {
    if (entry.is_regular_file() && problem_file(entry.path())) found.push_back(problem_info(entry.path()));
  }
  return found;
}

Discovery discover_samples(const std::string& problems_root, const std::string& samples_dir,
                           const std::string& run_name) {
  if (!fs::is_directory(samples_dir)) throw InputError("--samples: no such folder: " + samples_dir);
  std::map<std::pair<int, int>, store::ProblemInfo> by_id;  // (level, id)
  for (store::ProblemInfo& p : find_problems(problems_root)) {
    if (p.number) by_id.emplace(std::make_pair(p.level.value_or(0), *p.number), std::move(p));  // samples name an id
  }
  Discovery found;
  for (const auto& entry : fs::recursive_directory_iterator(samples_dir)) {
    if (!entry.is_regular_file() || entry.path().extension() != ".py") continue;
    const std::string path = fs::absolute(entry.path()).lexically_normal().string();
    std::smatch m;
    const std::string name = entry.path().filename().string();
    if (!std::regex_match(name, m, kSampleFile)) {
      found.unmatched.push_back({run_name, path, "not named level_{L}_problem_{id}_sample_{s}_kernel.py"});
      continue;
    }
    const int level = std::stoi(m[1]), id = std::stoi(m[2]);
    auto problem = by_id.find({level, id});
    if (problem == by_id.end()) problem = by_id.find({0, id});  // --problems named one level's folder of files
    if (problem == by_id.end()) {
      found.unmatched.push_back(
          {run_name, path,
           "no problem " + std::to_string(id) + " of level " + std::to_string(level) + " under " + problems_root});
      continue;
    }
    std::string reason;
    const auto key = readable(entry.path(), reason);
    if (!key) {
      found.unmatched.push_back({run_name, path, reason});
      continue;
    }
    found.jobs.push_back({run_name, problem->second, {path, std::stoi(m[3]), *key}, ""});
  }
  sort_jobs(found.jobs);
  return found;
}

Discovery read_manifest(const std::string& manifest_path, const std::string& run_name) {
  std::ifstream in(manifest_path);
  if (!in) throw InputError("--manifest: cannot read " + manifest_path);
  const fs::path base = fs::absolute(manifest_path).parent_path();
  const bool jsonl = fs::path(manifest_path).extension() == ".jsonl";
  const char separator = fs::path(manifest_path).extension() == ".tsv" ? '\t' : ',';
  std::vector<std::string> header;
  Discovery found;
  std::map<std::tuple<std::string, std::string, std::string>, std::string>
      listed;  // (run, candidate, device) -> its row
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    std::map<std::string, std::string> row;
    if (jsonl) {
      nlohmann::json object;
      try {
        object = nlohmann::json::parse(line);
      } catch (const nlohmann::json::exception& error) {
        throw InputError(manifest_path + ":" + std::to_string(number) + ": " + error.what());
      }
      for (const auto& [key, value] : object.items()) {
        if (value.is_string()) row[key] = value.get<std::string>();
      }
    } else if (header.empty()) {
      header = split_csv(line, separator);
      for (const char* needed : {"problem", "candidate"}) {
        if (std::find(header.begin(), header.end(), needed) == header.end()) {
          throw InputError(manifest_path + ": the header names no `" + std::string(needed) + "` column");
        }
      }
      continue;
    } else {
      const std::vector<std::string> fields = split_csv(line, separator);
      for (size_t i = 0; i < header.size() && i < fields.size(); ++i) row[header[i]] = fields[i];
    }
    const std::string where = manifest_path + ":" + std::to_string(number);
    const std::string run = row.count("run") && !row["run"].empty() ? row["run"] : run_name;
    if (row["problem"].empty() || row["candidate"].empty()) {
      found.unmatched.push_back({run, where, "the row names no problem or no candidate"});
      continue;
    }
    const fs::path problem_path = (base / row["problem"]).lexically_normal();
    const fs::path candidate_path = (base / row["candidate"]).lexically_normal();
    std::string reason;
    if (!fs::is_regular_file(problem_path)) {
      found.unmatched.push_back(
          {run, candidate_path.string(), "no problem file " + problem_path.string() + " (" + where + ")"});
      continue;
    }
    const auto key = readable(candidate_path, reason);
    if (!key) {
      found.unmatched.push_back({run, candidate_path.string(), reason + " (" + where + ")"});
      continue;
    }
    std::optional<store::ProblemInfo> problem = problem_info(problem_path);
    if (!problem) {  // any file name will do in a manifest
      problem = store::ProblemInfo{problem_path.string(), std::nullopt, std::nullopt, problem_path.stem().string(),
                                   file_content_key(problem_path.string())};
    }
    // A candidate file has one record per protocol and device: a second row for it would be
    // evaluated again and refused by the store.
    const auto [first, added] = listed.emplace(std::make_tuple(run, candidate_path.string(), row["device"]), where);
    if (!added) {
      found.unmatched.push_back(
          {run, candidate_path.string(), "listed again (" + where + "; first at " + first->second + ")"});
      continue;
    }
    std::optional<int> sample;
    if (row.count("sample") && !row["sample"].empty()) sample = std::stoi(row["sample"]);
    found.jobs.push_back({run, *problem, {candidate_path.string(), sample, *key}, row["device"]});
  }
  sort_jobs(found.jobs);
  return found;
}

}  // namespace kbv::run
