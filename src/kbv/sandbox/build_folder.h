// A candidate's private build folder (docs/SECURITY.md, "Builds"): a tmpfs of its own, as large as
// the `build` limit, made by kbv outside every mount table (fsopen, fsmount). kbv fills it with a
// copy of the content's published builds; the worker attaches it inside its sandbox at the path its
// builds name (TORCH_EXTENSIONS_DIR); once every process of that sandbox is gone, kbv reads what
// the build left through the same descriptor. What a candidate writes there reaches the cache only
// where kbv copies it out; no two workers share it; its size is bounded by the kernel; it is gone
// with its last descriptor, whatever happens to kbv.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "kbv/ipc/channel.h"

namespace kbv::sandbox {

// Relative path -> SHA-256 of the file's bytes.
using FileDigests = std::map<std::string, std::string>;

class BuildFolder {
 public:
  // A fresh, empty tmpfs of at most `size_bytes` (and kMaxFiles files and folders), its root
  // writable by the sandboxes' group. Needs root; throws std::system_error.
  explicit BuildFolder(std::uint64_t size_bytes);

  // The mount's descriptor: what a worker attaches (move_mount), what kbv reads through.
  int fd() const { return mount_.get(); }
  std::uint64_t size_bytes() const { return size_bytes_; }

  // Copies the folder `from` in: its files (each with its modification time, so that ninja finds
  // its outputs up to date) and folders, all read- and writable by the sandboxes' group. Anything
  // else in `from` (a link) is an error. Returns the digest of every file copied.
  FileDigests copy_in(const std::string& from) const;
  // Copies out into `to` (created, with its parents; root's and not writable by any sandbox) the
  // regular files and folders the build left, times kept; links, devices and anything deeper than
  // kMaxDepth are left behind. Call once no process of the sandbox is left. Returns the digests.
  FileDigests copy_out(const std::string& to) const;
  // Whether it filled up: less than a page of room, or no file left to make.
  bool full() const;
  // Whether it holds a regular file at `relative` (not followed through a link).
  bool holds(const std::string& relative) const;

  static constexpr std::uint64_t kMaxFiles = 16384;
  static constexpr int kMaxDepth = 16;

 private:
  ipc::UniqueFd mount_;
  std::uint64_t size_bytes_;
};

}  // namespace kbv::sandbox
