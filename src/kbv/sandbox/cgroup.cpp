#include "kbv/sandbox/cgroup.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <system_error>
#include <thread>

namespace kbv::sandbox {
namespace {

// Where each hierarchy is mounted: "" for cgroup2, else its v1 controller names ("memory", "pids",
// "cpuacct").
std::map<std::string, std::string> mount_points() {
  std::map<std::string, std::string> points;
  std::ifstream mounts("/proc/self/mounts");
  for (std::string line; std::getline(mounts, line);) {
    std::istringstream fields(line);
    std::string device, point, type, options;
    fields >> device >> point >> type >> options;
    if (type == "cgroup2") points.emplace("", point);
    if (type != "cgroup") continue;
    std::istringstream names(options);
    for (std::string option; std::getline(names, option, ',');) {
      if (option == "memory" || option == "pids" || option == "cpuacct") points.emplace(option, point);
    }
  }
  return points;
}

// This process's cgroup path in each hierarchy of /proc/self/cgroup: "" for v2's, else by controller.
std::map<std::string, std::string> own_paths() {
  std::map<std::string, std::string> paths;
  std::ifstream groups("/proc/self/cgroup");
  for (std::string line; std::getline(groups, line);) {
    const auto first = line.find(':'), second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    const std::string controllers = line.substr(first + 1, second - first - 1), path = line.substr(second + 1);
    if (controllers.empty()) paths.emplace("", path);
    std::istringstream names(controllers);
    for (std::string name; std::getline(names, name, ',');) paths.emplace(name, path);
  }
  return paths;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Writes a cgroup file that exists (never makes one: a path outside cgroupfs stays untouched).
bool write_file(const std::string& path, const std::string& text) {
  const int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd == -1) return false;
  const bool written = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  const int error = errno;
  close(fd);
  errno = error;
  return written;
}

bool has_word(const std::string& text, const std::string& word) {
  std::istringstream words(text);
  for (std::string w; words >> w;) {
    if (w == word) return true;
  }
  return false;
}

constexpr char kPrefix[] = "kbv-sandbox-";

std::string fresh_name() {
  static std::atomic<int> count{0};
  return kPrefix + std::to_string(getpid()) + "-" + std::to_string(count++);
}

// Makes `dir`, first removing the empty cgroups beside it that a kbv no longer running left
// (killed before it could remove them; a cgroup with processes in it cannot be removed).
bool make_beside_leftovers(const std::string& dir) {
  const std::string parent = dir.substr(0, dir.rfind('/'));
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(parent, error)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(kPrefix, 0) != 0) continue;
    const pid_t owner = static_cast<pid_t>(std::atol(name.c_str() + sizeof kPrefix - 1));
    if (owner > 0 && kill(owner, 0) == -1 && errno == ESRCH) rmdir(entry.path().c_str());
  }
  return mkdir(dir.c_str(), 0755) == 0;
}

// Where a cgroup v2 that hands controllers to children keeps its own processes ("no internal
// processes": such a cgroup may hold none itself).
const std::string kLeaf = "/kbv-processes";

bool controllers_for_children(const std::string& dir) {
  const std::string enabled = read_file(dir + "/cgroup.subtree_control");
  return has_word(enabled, "memory") && has_word(enabled, "pids");
}

// Makes `dir`'s children get the memory and pids controllers: enabled where `dir` has them (from
// its parent, asked to hand them down where it holds no process), with `dir`'s processes (kbv's,
// and whatever else shares its cgroup) moved into a leaf of their own first where they are in the way.
bool hand_to_children(const std::string& root, const std::string& dir) {
  // A hierarchy whose root lacks them (v1 holds them on this machine) is left as it is.
  const std::string at_root = read_file(root + "/cgroup.controllers");
  if (!has_word(at_root, "memory") || !has_word(at_root, "pids")) return false;
  if (controllers_for_children(dir)) return true;
  const std::string controllers = read_file(dir + "/cgroup.controllers");
  if (dir != root && (!has_word(controllers, "memory") || !has_word(controllers, "pids"))) {
    const std::string above = dir.substr(0, dir.rfind('/'));
    if (!write_file(above + "/cgroup.subtree_control", "+memory +pids")) return false;
  }
  if (write_file(dir + "/cgroup.subtree_control", "+memory +pids") || dir == root) return controllers_for_children(dir);
  const std::string leaf = dir + kLeaf;
  if (mkdir(leaf.c_str(), 0755) != 0 && errno != EEXIST) return false;
  for (int round = 0; round < 5; ++round) {  // a process forked meanwhile is moved in the next round
    std::istringstream pids(read_file(dir + "/cgroup.procs"));
    for (std::string pid; pids >> pid;) write_file(leaf + "/cgroup.procs", pid);
    if (write_file(dir + "/cgroup.subtree_control", "+memory +pids")) return true;
  }
  return false;
}

}  // namespace

std::unique_ptr<Cgroup> Cgroup::create(const Limits& limits, std::string& why_not) {
  const auto points = mount_points();
  const auto paths = own_paths();
  const std::string name = fresh_name();
  const auto limit_text = [](std::uint64_t value) { return value ? std::to_string(value) : std::string("max"); };
  // v2: memory and pids handed to this cgroup's children.
  if (points.count("") && paths.count("")) {
    std::string own = paths.at("");
    if (own.size() > kLeaf.size() && own.compare(own.size() - kLeaf.size(), kLeaf.size(), kLeaf) == 0)
      own.resize(own.size() - kLeaf.size());
    const std::string parent = points.at("") + (own == "/" ? "" : own);
    if (hand_to_children(points.at(""), parent)) {
      const std::string dir = parent + "/" + name;
      if (make_beside_leftovers(dir)) {
        std::unique_ptr<Cgroup> made(new Cgroup({dir}, true, dir));  // cpu.stat is in every v2 cgroup
        // No swap to step around the limit with, where the kernel accounts for swap at all.
        const bool swap =
            access((dir + "/memory.swap.max").c_str(), W_OK) != 0 || write_file(dir + "/memory.swap.max", "0");
        if (swap && write_file(dir + "/memory.max", limit_text(limits.memory_bytes)) &&
            write_file(dir + "/memory.oom.group", "1") && write_file(dir + "/pids.max", limit_text(limits.processes))) {
          return made;
        }
        why_not = "cannot set the limits of " + dir;
        return nullptr;
      }
    }
  }
  // v1: a cgroup in the memory hierarchy and one in the pids hierarchy.
  if (points.count("memory") && points.count("pids") && paths.count("memory") && paths.count("pids")) {
    // The new cgroup's folder in a v1 controller's hierarchy, under this process's own cgroup there.
    const auto v1_dir = [&](const char* controller) {
      return points.at(controller) + (paths.at(controller) == "/" ? "" : paths.at(controller)) + "/" + name;
    };
    std::vector<std::string> dirs;
    for (const char* controller : {"memory", "pids"}) {
      const std::string dir = v1_dir(controller);
      if (!make_beside_leftovers(dir)) break;
      dirs.push_back(dir);
    }
    if (dirs.size() == 2) {
      // Its CPU time where the cpuacct hierarchy is there too (the limits do not need it).
      std::string cpu;
      if (points.count("cpuacct") && paths.count("cpuacct")) {
        if (const std::string dir = v1_dir("cpuacct"); make_beside_leftovers(dir)) dirs.push_back(cpu = dir);
      }
      std::unique_ptr<Cgroup> made(new Cgroup(dirs, false, cpu));
      const bool set = write_file(dirs[0] + "/memory.limit_in_bytes",
                                  limits.memory_bytes ? std::to_string(limits.memory_bytes) : "-1") &&
                       write_file(dirs[1] + "/pids.max", limit_text(limits.processes));
      // With swap accounting, swap counts too (where there is none the file is missing).
      if (set && access((dirs[0] + "/memory.memsw.limit_in_bytes").c_str(), W_OK) == 0 && limits.memory_bytes) {
        write_file(dirs[0] + "/memory.memsw.limit_in_bytes", std::to_string(limits.memory_bytes));
      }
      if (set) return made;
      why_not = "cannot set the limits of " + dirs[0];
      return nullptr;
    }
    for (const std::string& dir : dirs) rmdir(dir.c_str());
  }
  why_not =
      "no cgroup with the memory and pids controllers can be made under kbv's own (v2: they cannot be "
      "handed to its children; v1: no such hierarchies); start kbv in a cgroup delegated to it "
      "(e.g. systemd-run --scope -p Delegate=yes kbv ...)";
  return nullptr;
}

Cgroup::~Cgroup() {
  // Its last processes may still be exiting (a PID namespace's are killed as its first ends).
  for (const std::string& dir : dirs_) {
    for (int attempt = 0; attempt < 100 && rmdir(dir.c_str()) != 0 && errno == EBUSY; ++attempt) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
}

void Cgroup::add(pid_t pid) const {
  for (const std::string& dir : dirs_) {
    if (!write_file(dir + "/cgroup.procs", std::to_string(pid))) {
      throw std::system_error(errno, std::generic_category(),
                              "cannot move process " + std::to_string(pid) + " into " + dir);
    }
  }
}

std::optional<double> Cgroup::cpu_seconds() const {
  if (cpu_dir_.empty()) return std::nullopt;
  if (!v2_) {
    const std::string usage = read_file(cpu_dir_ + "/cpuacct.usage");  // nanoseconds
    if (usage.empty()) return std::nullopt;
    return static_cast<double>(std::stoull(usage)) * 1e-9;
  }
  std::istringstream counters(read_file(cpu_dir_ + "/cpu.stat"));
  for (std::string name; counters >> name;) {
    std::uint64_t value = 0;
    counters >> value;
    if (name == "usage_usec") return static_cast<double>(value) * 1e-6;
  }
  return std::nullopt;
}

std::uint64_t Cgroup::oom_kills() const {
  std::istringstream counters(read_file(dirs_[0] + (v2_ ? "/memory.events" : "/memory.oom_control")));
  for (std::string name; counters >> name;) {
    std::uint64_t value = 0;
    counters >> value;
    if (name == "oom_kill") return value;
  }
  return 0;
}

}  // namespace kbv::sandbox
