// A candidate's large device outputs handed to the reference's worker on the device, so that a
// check moves no output through the host (issue "checks where the data is"): the candidate's
// worker copies each into memory another process can map (CUDA's virtual memory management, an
// allocation exportable as a POSIX file descriptor), sends the file to the parent over its file
// socket (ipc/fd_passing.h), and the parent hands it to the reference's worker, which maps it
// and compares there. CUDA's older IPC handles do not cross the sandbox's PID namespace; a file
// descriptor does. The copy is made after the call returned, so the candidate cannot write to
// what is compared but through its own process, as with the output region.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>

#include <ATen/core/Tensor.h>
#include <nlohmann/json.hpp>

#include "kbv/ipc/channel.h"

namespace kbv::ipc {

// Outputs from this size up are handed over on the device; smaller ones cost less through the host.
inline constexpr std::int64_t kDeviceHandoffBytes = std::int64_t{4} << 20;

// Candidate side: a copy of the CUDA tensor `tensor` in exportable device memory, its description
// (describe() and "device": {"bytes": the allocation's size}) and the file that names it; nullopt
// when the driver offers no such memory (the output then goes through the output region).
std::optional<std::pair<nlohmann::json, UniqueFd>> export_to_device_file(const at::Tensor& tensor);

// Reference side: the tensor `meta` describes, in the memory `file` names, mapped on `device`
// (this process's CUDA ordinal) for as long as the tensor lives. Throws std::runtime_error when it
// cannot be (not such a file, a size that does not hold the tensor).
at::Tensor import_device_file(UniqueFd file, const nlohmann::json& meta, int device);

}  // namespace kbv::ipc
