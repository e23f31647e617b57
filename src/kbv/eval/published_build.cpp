#include "kbv/eval/published_build.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <stdexcept>
#include <system_error>

#include "kbv/common/remove_tree.h"

namespace kbv::eval {
namespace {

using nlohmann::json;

constexpr const char* kManifest = "manifest.json";
constexpr const char* kFiles = "files";

// A name beside `dir` no other process or thread uses.
std::string beside(const std::string& dir, const char* what) {
  static std::atomic<int> count{0};
  return dir + "." + what + "-" + std::to_string(getpid()) + "-" + std::to_string(count++);
}

}  // namespace

std::optional<PublishedBuild> find_published(const std::string& dir) {
  std::ifstream in(dir + "/" + kManifest);
  if (!in) return std::nullopt;
  const json manifest = json::parse(in, nullptr, false);
  if (manifest.is_discarded() || !manifest.is_object()) return std::nullopt;
  try {
    return PublishedBuild{manifest.at("outcome"), manifest.at("message"), manifest.at("ahead"), manifest.at("seconds"),
                          manifest.at("files").get<sandbox::FileDigests>()};
  } catch (const json::exception&) {
    return std::nullopt;
  }
}

void publish(const sandbox::BuildFolder& folder, const std::string& dir, PublishedBuild build) {
  const std::string staging = beside(dir, "staging");
  try {
    build.files = folder.copy_out(staging + "/" + kFiles);
    const json manifest = {{"outcome", build.outcome},
                           {"message", build.message},
                           {"ahead", build.ahead},
                           {"seconds", build.seconds},
                           {"files", build.files}};
    std::ofstream out(staging + "/" + kManifest);
    out << manifest.dump(1) << "\n";
    out.close();
    if (!out) throw std::system_error(errno, std::generic_category(), "cannot write " + staging + "/" + kManifest);
  } catch (...) {
    remove_tree(staging);
    throw;
  }
  if (rename(staging.c_str(), dir.c_str()) == -1) remove_tree(staging);  // another build of the content is there
}

sandbox::BuildFolder private_copy(const std::string& dir, const std::optional<PublishedBuild>& build,
                                  std::uint64_t size_bytes) {
  sandbox::BuildFolder folder(size_bytes);
  if (!build) return folder;
  std::string wrong;
  try {
    const sandbox::FileDigests copied = folder.copy_in(dir + "/" + kFiles);
    for (const auto& [path, digest] : build->files) {
      if (const auto found = copied.find(path); found == copied.end() || found->second != digest) wrong = path;
    }
    if (wrong.empty() && copied.size() != build->files.size()) wrong = "(a file its manifest does not list)";
  } catch (const std::exception& failed) {
    wrong = failed.what();
  }
  if (wrong.empty()) return folder;
  std::cerr << "kbv: the build published in " << dir << " does not match its manifest (" << wrong
            << "): removed, built again" << std::endl;
  const std::string aside = beside(dir, "discarded");
  if (rename(dir.c_str(), aside.c_str()) == 0) remove_tree(aside);
  return sandbox::BuildFolder(size_bytes);
}

}  // namespace kbv::eval
