#include "kbv/sandbox/filesystem.h"

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <optional>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "kbv/ipc/channel.h"

namespace kbv::sandbox {
namespace {

using ipc::UniqueFd;

[[noreturn]] void fail(const std::string& what, const std::string& path) {
  throw std::system_error(errno, std::generic_category(), "sandbox: " + what + " " + path);
}

bool under(const std::string& path, const std::string& dir) {
  return dir == "/" || path == dir ||
         (path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 && path[dir.size()] == '/');
}

std::optional<bool> is_directory(const std::string& path) {
  struct stat facts {};
  if (stat(path.c_str(), &facts) == -1) return std::nullopt;
  return S_ISDIR(facts.st_mode);
}

std::size_t depth(const std::string& path) {
  return static_cast<std::size_t>(std::count(path.begin(), path.end(), '/'));
}

void make_directories(const std::string& path, mode_t mode) {
  for (std::size_t slash = path.find('/', 1);; slash = path.find('/', slash + 1)) {
    const std::string prefix = path.substr(0, slash);
    if (mkdir(prefix.c_str(), mode) == -1 && errno != EEXIST) fail("cannot create", prefix);
    if (slash == std::string::npos) return;
  }
}

void make_mount_point(const std::string& path, bool directory) {
  if (is_directory(path)) return;
  make_directories(path.substr(0, path.rfind('/')), 0755);
  if (directory) {
    make_directories(path, 0755);
    return;
  }
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd == -1) fail("cannot create a mount point at", path);
  close(fd);
}

void set_attributes(int dirfd, const std::string& path, std::uint64_t set, unsigned flags) {
  mount_attr attributes{};
  attributes.attr_set = set;
  if (mount_setattr(dirfd, path.c_str(), flags, &attributes, sizeof attributes) == -1)
    fail("cannot set mount attributes of", path);
}

// A detached copy of the mounts at `path` (all beneath it too) with `attributes` set.
UniqueFd clone_tree(const std::string& path, std::uint64_t attributes) {
  UniqueFd tree(open_tree(AT_FDCWD, path.c_str(), OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE));
  if (!tree) fail("cannot copy the mount of", path);
  set_attributes(tree.get(), "", attributes, AT_EMPTY_PATH | AT_RECURSIVE);
  return tree;
}

void attach(const UniqueFd& tree, const std::string& path) {
  if (move_mount(tree.get(), "", AT_FDCWD, path.c_str(), MOVE_MOUNT_F_EMPTY_PATH) == -1) fail("cannot mount at", path);
}

void mount_tmpfs(const std::string& path, const std::string& options) {
  if (mount("tmpfs", path.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, options.c_str()) == -1)
    fail("cannot mount a tmpfs at", path);
}

// One step of the view, applied in order of depth so that a deeper step lands on what a shallower
// one made: a path shown inside a hidden folder, a file hidden inside a shown folder.
struct Step {
  enum Kind { scratch, home, scratch_alias, hide, show } kind;
  std::string path;
  std::string source;  // scratch_alias: its folder in the scratch
  UniqueFd tree;       // show: the detached copy
  bool directory = true;
};

constexpr const char* kScratch = "/tmp";
constexpr const char* kScratchHome = "/tmp/.kbv-home";
constexpr std::pair<const char*, const char*> kScratchAliases[] = {{"/var/tmp", "/tmp/.kbv-tmp"},
                                                                   {"/dev/shm", "/tmp/.kbv-shm"}};
// Where the new root is put together before it becomes "/": a mount point every system has. Its
// own contents are out of sight by then (the copies shown from under it were taken before).
constexpr const char* kAssembly = "/tmp";

// The devices (usable: /dev/nvidia*) and the kernel's view of the hardware, which CUDA and torch read.
UniqueFd device_tree() { return clone_tree("/dev", MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID); }
UniqueFd hardware_tree() {
  return clone_tree("/sys", MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC);
}

}  // namespace

void build_view(const Spec& spec, uid_t uid, gid_t gid) {
  char cwd[PATH_MAX];
  const bool has_cwd = getcwd(cwd, sizeof cwd) != nullptr;
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) == -1) fail("cannot make private", "/");

  // Every copy taken from the caller's view before the new root covers kAssembly.
  std::vector<Step> steps;
  steps.push_back({Step::scratch, kScratch, "", {}, true});
  if (!spec.home.empty() && spec.home != "/" && !under(spec.home, kScratch) &&
      is_directory(spec.home).value_or(false)) {
    steps.push_back({Step::home, spec.home, kScratchHome, {}, true});
  }
  for (const auto& [alias, source] : kScratchAliases) steps.push_back({Step::scratch_alias, alias, source, {}, true});
  for (const std::string& path : spec.hidden) {
    if (const auto directory = is_directory(path)) steps.push_back({Step::hide, path, "", {}, *directory});
  }
  steps.push_back({Step::show, "/dev", "", device_tree(), true});
  if (is_directory("/sys").value_or(false)) steps.push_back({Step::show, "/sys", "", hardware_tree(), true});
  if (!spec.build_folder.empty()) {  // a mount of its own already (build_folder.h): attached as it is
    steps.push_back({Step::show, spec.build_folder, "", UniqueFd(spec.build_folder_fd), true});
  }
  for (const std::string& path : spec.readable) {
    if (const auto directory = is_directory(path)) {
      steps.push_back({Step::show, path, "", clone_tree(path, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV),
                       *directory});
    }
  }
  std::stable_sort(steps.begin(), steps.end(), [](const Step& a, const Step& b) {
    return depth(a.path) != depth(b.path) ? depth(a.path) < depth(b.path) : a.kind < b.kind;
  });

  // The new root: an empty tmpfs that holds nothing but what the steps put there.
  mount_tmpfs(kAssembly, "mode=755,size=1m");
  const std::string root = kAssembly;
  std::vector<std::string> emptied;  // hidden folders: read-only once the paths inside are mounted
  for (Step& step : steps) {
    const std::string at = root + step.path;
    switch (step.kind) {
      case Step::scratch:
        make_directories(at, 0755);
        mount_tmpfs(
            at, "mode=1777,size=" + std::to_string(spec.limits.scratch_bytes ? spec.limits.scratch_bytes : 1ull << 40));
        if (mkdir((root + kScratchHome).c_str(), 0700) == -1 || chown((root + kScratchHome).c_str(), uid, gid) == -1) {
          fail("cannot create", kScratchHome);
        }
        for (const auto& [alias, source] : kScratchAliases) {
          const std::string folder = root + source;
          if (mkdir(folder.c_str(), 01777) == -1 || chmod(folder.c_str(), 01777) == -1) fail("cannot create", source);
        }
        break;
      case Step::home:
      case Step::scratch_alias:
        make_mount_point(at, true);
        attach(clone_tree(root + (step.kind == Step::home ? kScratchHome : step.source),
                          MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV),
               at);
        break;
      case Step::hide:
        if (!is_directory(at)) break;  // not in the view: inside no folder shown, or in one hidden before it
        if (step.directory) {
          mount_tmpfs(at, "mode=755,size=1m");
          emptied.push_back(step.path);
        } else {
          attach(clone_tree("/dev/null", MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID), at);
        }
        break;
      case Step::show:
        make_mount_point(at, step.directory);
        attach(step.tree, at);
        break;
    }
  }
  make_directories(root + "/proc", 0555);

  // The new root becomes "/" and the caller's is let go (pivot_root(2): new and old root the same path).
  if (chdir(root.c_str()) == -1) fail("cannot change directory to", root);
  if (syscall(SYS_pivot_root, ".", ".") == -1) fail("cannot make the new root of", root);
  if (umount2(".", MNT_DETACH) == -1) fail("cannot let go of the old root under", root);
  if (chdir("/") == -1) fail("cannot change directory to", "/");

  if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) == -1) fail("cannot mount", "/proc");
  for (const std::string& path : emptied) set_attributes(AT_FDCWD, path, MOUNT_ATTR_RDONLY, 0);
  set_attributes(AT_FDCWD, "/", MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, 0);
  // Again by path: the old working directory, where the new view shows it.
  if ((!has_cwd || chdir(cwd) == -1) && chdir(kScratch) == -1) fail("cannot change directory to", kScratch);
}

}  // namespace kbv::sandbox
