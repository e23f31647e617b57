// Entering the sandbox: what a process that will run candidate code does first, in fresh
// namespaces (spec.h, namespace_flags()), before the candidate's first line. docs/SECURITY.md says
// what each step stops.
#pragma once

#include <sys/types.h>

#include "kbv/sandbox/spec.h"

namespace kbv::sandbox {

// A sandboxed worker exits with this code, having printed why, when its sandbox could not be set
// up: before any candidate code ran, so the failure is kbv's (or the machine's), not the candidate's.
inline constexpr int kSetupFailedExit = 125;

// Each sandbox runs as its own user, kUserBase + its process id outside the sandbox (so that the
// process limit counts its processes alone), in the group kUserBase that every sandbox shares
// (the extension builds it writes are read and written again by a later sandbox).
inline constexpr uid_t kUserBase = 1u << 30;
// Its user's name, set in the environment (kUserNameVariables) since no passwd entry has one.
inline constexpr char kUserName[] = "kbv-sandbox";
inline constexpr const char* kUserNameVariables[] = {"USER", "LOGNAME"};

// Must be called as root, in PID 1 of the new PID namespace, with one thread. In order: its own
// session (no controlling terminal), the filesystem view (filesystem.h), a host name of its own,
// the limits, every capability and the root user given up (setresuid to its own user),
// no_new_privs, the seccomp filter (seccomp_filter.h). Throws on any failure.
void enter(const Spec& spec);

// enter(), or a line on stderr and _exit(kSetupFailedExit).
void enter_or_exit(const Spec& spec);

// How long this process's enter() took (the record's sandbox.setup_seconds); -1 when it entered none.
double setup_seconds();

}  // namespace kbv::sandbox
