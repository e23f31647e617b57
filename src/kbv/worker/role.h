// Which side of an evaluation a worker process serves.
#pragma once

namespace kbv::worker {

enum class Role { reference, candidate };

}  // namespace kbv::worker
