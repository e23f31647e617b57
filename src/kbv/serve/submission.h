// What one evaluate request to kbv serve asks for, read from its JSON body and laid out as files:
// a problem given as source under problems/{content key}/ (the same source, the same file, so its
// reference side stays warm across requests), each candidate under candidates/{request id}/, the
// only one of them its sandbox shows it. The API's fields: docs/serve.md.
#pragma once

#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "kbv/store/store.h"

namespace kbv::serve {

// The request cannot be evaluated as sent (a missing field, an unknown protocol, no such problem):
// the client's to fix, answered 400 with this message.
struct BadSubmission : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Submission {
  std::string id;  // the request's, unique across the service's restarts
  store::ProblemInfo problem;
  store::CandidateInfo candidate;
  std::string protocol, run_name;
};

// Where requests' files go, and which problems a request may name.
struct Intake {
  std::string files_dir;      // absolute
  std::string problems_root;  // set (absolute): only problem files under it, by path; no problem_source
};

// Reads `body` and writes its files under intake.files_dir. Throws BadSubmission.
Submission read_submission(const nlohmann::json& body, const Intake& intake, const std::string& id);

}  // namespace kbv::serve
