// A candidate content's builds as kbv keeps them between processes (docs/SECURITY.md, "Builds"):
// `$KBV_CACHE/builds/<key>/` (the key of extension_cache.h), written by kbv alone, from a build
// worker's private folder (sandbox/build_folder.h) once every process of that worker's sandbox is
// gone: `files/`, what the build left (torch's extension folders, a failed build's log), and
// `manifest.json`, each file's SHA-256 with the build's outcome. A later worker of the same content
// gets a copy, checked file by file against the manifest; no sandbox writes here, so no candidate
// can reach another's builds, and an evaluation cannot leave anything for a later one.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "kbv/sandbox/build_folder.h"

namespace kbv::eval {

struct PublishedBuild {
  std::string outcome;  // ok, compile_error (the compiler's own diagnostic, kept) or runtime_error
  std::string message;  // the log or error when not ok
  nlohmann::json ahead = nlohmann::json::object();  // CompileResult::ahead
  double seconds = 0;                               // the build's
  sandbox::FileDigests files;
};

// The build published in `dir`, or none (never built, or its manifest unreadable).
std::optional<PublishedBuild> find_published(const std::string& dir);

// Publishes what `folder` holds as `build` in `dir`: staged beside it, then renamed into place, so
// that a reader sees all of it or nothing; where another build of the same content got there first,
// that one stays. Throws std::system_error when it cannot be written.
void publish(const sandbox::BuildFolder& folder, const std::string& dir, PublishedBuild build);

// A private build folder of `size_bytes` for a worker of the content published in `dir` as `build`
// (none: an empty folder), holding a copy of its files, each checked against its digest. Where the
// copy fails or a file differs, the published build is removed (renamed aside first, so that no
// reader meets half of it), said on stderr, and the folder given empty: the worker builds afresh.
sandbox::BuildFolder private_copy(const std::string& dir, const std::optional<PublishedBuild>& build,
                                  std::uint64_t size_bytes);

}  // namespace kbv::eval
