// Where kbv keeps what outlives one run: extension builds, the precompiled header, Python's
// bytecode where the environment keeps none.
#pragma once

#include <string>

namespace kbv {

// KBV_CACHE, else $HOME/.cache/kbv (/tmp/.cache/kbv without a HOME). Workers inherit the
// parent's environment, so each process of one kbv command resolves the same directory.
std::string cache_dir();

}  // namespace kbv
