// The sandbox of one candidate's worker (sandbox/spec.h), as this machine lays it out: what the
// worker must read to run (the system's software folders, the interpreter and its packages, what
// PATH and LD_LIBRARY_PATH name, kbv's compiler wrapper and its precompiled header, the problem and
// candidate files), the one folder it may write beside its scratch (its private build folder,
// attached at its TORCH_EXTENSIONS_DIR), and what it must not see where a shown folder holds it
// (kbv's cache, the store). The rest of the caller's files (other candidates' sources, a run's
// manifest, other runs beside it, $HOME) is not in the view.
#pragma once

#include <string>
#include <vector>

#include "kbv/eval/worker_client.h"
#include "kbv/sandbox/spec.h"

namespace kbv::eval {

// `launch` as add_build_environment left it (its TORCH_EXTENSIONS_DIR is where the build folder goes);
// `files`: the problem and candidate files the worker imports.
sandbox::Spec plan_sandbox(const WorkerLaunch& launch, const std::string& cache_dir,
                           const std::vector<std::string>& files);

}  // namespace kbv::eval
