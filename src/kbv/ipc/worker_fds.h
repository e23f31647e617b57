// The file descriptors a worker finds open, set by the parent (process/worker_process.h) or the
// zygote for it and read by the worker's side (ipc/channel.h, worker/): the layout both keep.
#pragma once

namespace kbv::ipc {

inline constexpr int kCommandFd = 3;  // the worker reads commands here
inline constexpr int kResultFd = 4;   // the worker writes results here

// Inherited fds from kInheritedFd on: the first a worker's output region or the zygote's socket, the
// second a worker's socket for open files (kFileSocketFd), the third a sandboxed candidate worker's
// build folder (kBuildFolderFd, sandbox/build_folder.h).
inline constexpr int kInheritedFd = 5;
inline constexpr int kMaxInheritedFds = 3;
inline constexpr int kFileSocketFd = kInheritedFd + 1;
inline constexpr int kBuildFolderFd = kInheritedFd + 2;

}  // namespace kbv::ipc
