// What a run evaluates, found as it lies on disk: KernelBench's problem tree
// (`level{L}/{id}_{Name}.py`) with a folder of generated samples named as KernelBench names them
// (`level_{L}_problem_{id}_sample_{s}_kernel.py`), or a manifest (CSV or JSONL: problem, candidate,
// run) for anything else. A file that cannot be used is listed with the reason, never dropped.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "kbv/store/store.h"

namespace kbv::run {

// What was asked for cannot be used (no such folder, a file of another kind, a manifest without
// its columns): the user's input, named, not kbv's fault.
struct InputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Job {
  std::string run_name;
  store::ProblemInfo problem;
  store::CandidateInfo candidate;
  std::string device;  // a manifest row may be for one device only (its `device` column); empty: any
};

struct Unmatched {
  std::string run_name, path, reason;
};

struct Discovery {
  std::vector<Job> jobs;  // ordered by run, level, problem id, sample
  std::vector<Unmatched> unmatched;
};

// A problem file's identity from its path: the level of a `level{L}` folder, the id and name of a
// `{id}_{Name}.py` file (KernelBench's), else the file's stem as its name. Throws
// std::runtime_error when it cannot be read.
store::ProblemInfo problem_info(const std::string& path);

// `problems` itself when it is a `.py` file, else every `.py` file under that folder (a KernelBench
// checkout's KernelBench/ folder, one level's folder, a problem set of one's own) but `__init__.py`
// and private modules (`_x.py`). KernelBench's names (`level{L}/{id}_{Name}.py`) give the level and
// id; any other file is named by its stem. Throws std::runtime_error for a path that is neither.
std::vector<store::ProblemInfo> find_problems(const std::string& problems);

// The `.py` files under `samples_dir` (recursively) matched to their problems by name.
Discovery discover_samples(const std::string& problems_root, const std::string& samples_dir,
                           const std::string& run_name);

// A manifest: CSV with a header naming `problem` and `candidate` (and optionally `run`), or JSON
// Lines with those keys. Relative paths are taken from the manifest's folder; `run_name` names the
// rows without a run. Throws std::runtime_error when the manifest itself is unusable.
Discovery read_manifest(const std::string& manifest_path, const std::string& run_name);

}  // namespace kbv::run
