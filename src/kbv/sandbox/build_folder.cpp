#include "kbv/sandbox/build_folder.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <cerrno>
#include <functional>
#include <string>
#include <system_error>

#include "kbv/common/sha256.h"
#include "kbv/sandbox/enter.h"

namespace kbv::sandbox {
namespace {

using ipc::UniqueFd;

[[noreturn]] void fail(const std::string& what, const std::string& path) {
  throw std::system_error(errno, std::generic_category(), "build folder: " + what + " " + path);
}

// The names in the folder `dir` (by descriptor), less "." and "..".
std::vector<std::string> names_in(int dir, const std::string& path) {
  const int own = fcntl(dir, F_DUPFD_CLOEXEC, 0);
  DIR* stream = own == -1 ? nullptr : fdopendir(own);
  if (stream == nullptr) {
    if (own != -1) close(own);
    fail("cannot list", path);
  }
  std::vector<std::string> names;
  for (errno = 0; const dirent* entry = readdir(stream); errno = 0) {
    const std::string name = entry->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  const int error = errno;
  closedir(stream);
  if (error != 0) {
    errno = error;
    fail("cannot list", path);
  }
  return names;
}

// How a copy's files and folders are owned and what mode they get from their source's.
struct Ownership {
  uid_t uid;
  gid_t gid;
  std::function<mode_t(mode_t source, bool directory)> mode;
};

// Copies the file `name` from folder `from` into folder `to`, times kept; returns its digest.
std::string copy_file(int from, int to, const std::string& name, const struct stat& facts, const Ownership& owner,
                      const std::string& path) {
  const UniqueFd in(openat(from, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!in) fail("cannot open", path);
  const UniqueFd out(openat(to, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!out) fail("cannot create", path);
  Sha256 digest;
  char buffer[1 << 16];
  for (;;) {
    const ssize_t n = read(in.get(), buffer, sizeof buffer);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("cannot read", path);
    }
    digest.update(std::string_view(buffer, static_cast<std::size_t>(n)));
    for (ssize_t done = 0; done < n;) {
      const ssize_t w = write(out.get(), buffer + done, static_cast<std::size_t>(n - done));
      if (w < 0 && errno != EINTR) fail("cannot write", path);
      if (w > 0) done += w;
    }
  }
  const timespec times[2] = {facts.st_atim, facts.st_mtim};
  if (fchown(out.get(), owner.uid, owner.gid) == -1 ||
      fchmod(out.get(), owner.mode(facts.st_mode & 07777, false)) == -1 || futimens(out.get(), times) == -1) {
    fail("cannot set the owner, mode or times of", path);
  }
  return digest.hex();
}

// Copies the tree under folder `from` into folder `to` by descriptor, never following a link.
// `strict`: anything but files and folders, or a tree deeper than kMaxDepth, is an error (else it
// is left behind).
void copy_tree(int from, int to, const std::string& prefix, int depth, bool strict, const Ownership& owner,
               FileDigests& digests) {
  for (const std::string& name : names_in(from, prefix.empty() ? "." : prefix)) {
    const std::string path = prefix.empty() ? name : prefix + "/" + name;
    struct stat facts {};
    if (fstatat(from, name.c_str(), &facts, AT_SYMLINK_NOFOLLOW) == -1) fail("cannot stat", path);
    if (S_ISREG(facts.st_mode)) {
      digests[path] = copy_file(from, to, name, facts, owner, path);
    } else if (S_ISDIR(facts.st_mode) && depth < BuildFolder::kMaxDepth) {
      if (mkdirat(to, name.c_str(), 0700) == -1) fail("cannot create", path);
      const UniqueFd source(openat(from, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      const UniqueFd target(openat(to, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (!source || !target) fail("cannot open", path);
      copy_tree(source.get(), target.get(), path, depth + 1, strict, owner, digests);
      if (fchown(target.get(), owner.uid, owner.gid) == -1 ||
          fchmod(target.get(), owner.mode(facts.st_mode & 07777, true)) == -1) {
        fail("cannot set the owner or mode of", path);
      }
    } else if (strict) {
      errno = EINVAL;
      fail("holds what is neither a file nor a folder:", path);
    }
  }
}

UniqueFd open_folder(const std::string& path) {
  UniqueFd fd(open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) fail("cannot open", path);
  return fd;
}

}  // namespace

BuildFolder::BuildFolder(std::uint64_t size_bytes) : size_bytes_(size_bytes) {
  const UniqueFd context(fsopen("tmpfs", FSOPEN_CLOEXEC));
  if (!context) fail("cannot make a tmpfs", "(fsopen)");
  const std::pair<const char*, std::string> options[] = {{"size", std::to_string(size_bytes)},
                                                         {"nr_inodes", std::to_string(kMaxFiles)},
                                                         {"mode", "2775"},
                                                         {"gid", std::to_string(kUserBase)}};
  for (const auto& [key, value] : options) {
    if (fsconfig(context.get(), FSCONFIG_SET_STRING, key, value.c_str(), 0) == -1) fail("cannot set tmpfs option", key);
  }
  if (fsconfig(context.get(), FSCONFIG_CMD_CREATE, nullptr, nullptr, 0) == -1) fail("cannot make a tmpfs", "(create)");
  mount_.reset(fsmount(context.get(), FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV));
  if (!mount_) fail("cannot make a tmpfs", "(fsmount)");
}

FileDigests BuildFolder::copy_in(const std::string& from) const {
  // Root's files, the sandboxes' group's to read and write (its builds' lock files, ninja's log).
  const Ownership owner{0, kUserBase, [](mode_t source, bool directory) -> mode_t {
                          return directory ? 02775 : (source & 0755) | 0660 | ((source & S_IXUSR) ? S_IXGRP : 0);
                        }};
  FileDigests digests;
  const UniqueFd source = open_folder(from);
  copy_tree(source.get(), fd(), "", 0, true, owner, digests);
  return digests;
}

FileDigests BuildFolder::copy_out(const std::string& to) const {
  const Ownership owner{0, 0, [](mode_t source, bool directory) -> mode_t {
                          return directory ? 0755 : ((source & S_IXUSR) ? 0755 : 0644);
                        }};
  std::string made;
  for (std::size_t slash = to.find('/', 1);; slash = to.find('/', slash + 1)) {
    made = to.substr(0, slash);
    if (mkdir(made.c_str(), 0755) == -1 && errno != EEXIST) fail("cannot create", made);
    if (slash == std::string::npos) break;
  }
  FileDigests digests;
  const UniqueFd target = open_folder(to);
  // The mount's own descriptor is a path, not an open folder: it lists nothing.
  const UniqueFd root(openat(fd(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!root) fail("cannot open", "its root");
  copy_tree(root.get(), target.get(), "", 0, false, owner, digests);
  return digests;
}

bool BuildFolder::full() const {
  struct statfs facts {};
  if (fstatfs(fd(), &facts) == -1) return false;
  const std::uint64_t page = static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));
  return static_cast<std::uint64_t>(facts.f_bavail) * static_cast<std::uint64_t>(facts.f_bsize) < page ||
         facts.f_ffree == 0;
}

bool BuildFolder::holds(const std::string& relative) const {
  struct stat facts {};
  return fstatat(fd(), relative.c_str(), &facts, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(facts.st_mode);
}

}  // namespace kbv::sandbox
