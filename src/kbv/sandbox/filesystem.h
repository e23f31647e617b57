// The sandbox's view of the filesystem, built inside its own mount namespace (docs/SECURITY.md) from
// an empty root: only what the spec names is in it. The readable paths shown read-only and without
// set-uid at their own paths; /dev (read-only, its devices usable) and /sys (read-only); a private
// tmpfs of `scratch_bytes` at /tmp that also backs /var/tmp, /dev/shm and $HOME; the hidden paths
// emptied where a shown folder holds them; the candidate's build folder (build_folder.h) read-write
// at its path; a /proc of the sandbox's own process table. Nothing else of the caller's filesystem
// is reachable: its root is let go.
#pragma once

#include <sys/types.h>

#include "kbv/sandbox/spec.h"

namespace kbv::sandbox {

// Must run as root of the mount and PID namespaces it changes, in the process that is PID 1 of
// the new PID namespace (its /proc is mounted for that namespace). $HOME is made the user `uid`'s
// (of the group `gid`); root follows no path the sandbox could have changed. Leaves the working directory
// at its own path in the new view, or at /tmp where the view does not hold it. Throws std::system_error
// naming the path it failed on.
void build_view(const Spec& spec, uid_t uid, gid_t gid);

}  // namespace kbv::sandbox
