#include "kbv/ipc/shared_region.h"

#include <algorithm>
#include <cerrno>
#include <stdexcept>
#include <string>
#include <system_error>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ATen/ATen.h>
#include <cuda_runtime_api.h>

#include "kbv/common/syscall.h"
#include "kbv/ipc/tensor_codec.h"

namespace kbv::ipc {

namespace {

constexpr int kSeals = F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL;

// Maps (and zero-fills) the pages of [address, address + bytes) in one call instead of one fault
// per page. Best effort: kernels before 5.14 lack it, and the faults then happen one by one.
void populate(const std::byte* address, std::uint64_t bytes, bool write) {
#ifdef MADV_POPULATE_READ
  const auto page = static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));
  const auto start = reinterpret_cast<std::uintptr_t>(address) / page * page;
  const auto end = reinterpret_cast<std::uintptr_t>(address) + bytes;
  madvise(reinterpret_cast<void*>(start), end - start, write ? MADV_POPULATE_WRITE : MADV_POPULATE_READ);
#else
  (void)address, (void)bytes, (void)write;
#endif
}

std::uint64_t unsigned_at(const nlohmann::json& object, const char* key) {
  const nlohmann::json& value = object.at(key);
  if (!value.is_number_unsigned())
    throw std::runtime_error(std::string("region tensor: '") + key + "' is not an unsigned number");
  return value.get<std::uint64_t>();
}

// The region's size when `fd` is a region the parent made (sealed as create() seals it), else 0.
std::uint64_t sealed_size(int fd) {
  struct stat facts {};
  if (fstat(fd, &facts) == -1 || !S_ISREG(facts.st_mode) || facts.st_size <= 0) return 0;
  if (fcntl(fd, F_GET_SEALS) != kSeals) return 0;
  return static_cast<std::uint64_t>(facts.st_size);
}

}  // namespace

SharedRegion::SharedRegion(UniqueFd fd, std::uint64_t size, bool writable)
    : fd_(std::move(fd)), size_(size), writable_(writable) {
  void* base =
      mmap(nullptr, size_, writable ? PROT_READ | PROT_WRITE : PROT_READ, MAP_SHARED | MAP_NORESERVE, fd_.get(), 0);
  if (base == MAP_FAILED) throw std::system_error(errno, std::generic_category(), "mmap of the output region");
  base_ = static_cast<std::byte*>(base);
}

SharedRegion::~SharedRegion() {
  if (base_) KBV_SYSCALL_NOTHROW(munmap(base_, size_));
}

std::shared_ptr<SharedRegion> SharedRegion::create() {
  UniqueFd fd(KBV_SYSCALL(memfd_create("kbv-outputs", MFD_CLOEXEC | MFD_ALLOW_SEALING)));
  KBV_SYSCALL(ftruncate(fd.get(), static_cast<off_t>(kCapacity)));
  KBV_SYSCALL(fcntl(fd.get(), F_ADD_SEALS, kSeals));
  return std::shared_ptr<SharedRegion>(new SharedRegion(std::move(fd), kCapacity, false));
}

std::unique_ptr<SharedRegion> SharedRegion::open_inherited(int fd) {
  const std::uint64_t size = sealed_size(fd);
  if (size == 0) return nullptr;                // not a region the parent made
  KBV_SYSCALL(fcntl(fd, F_SETFD, FD_CLOEXEC));  // the candidate's compilers need not see it
  return std::unique_ptr<SharedRegion>(new SharedRegion(UniqueFd(fd), size, true));
}

std::shared_ptr<const SharedRegion> SharedRegion::open_received(UniqueFd fd) {
  const std::uint64_t size = sealed_size(fd.get());
  if (size == 0) throw std::runtime_error("the file handed over is not an output region");
  return std::shared_ptr<const SharedRegion>(new SharedRegion(std::move(fd), size, false));
}

void SharedRegion::begin_command() { next_ = 0; }

bool SharedRegion::pin_through(std::uint64_t end) {
  if (pin_failed_) return false;
  end = std::min(size_, (end + kPinStep - 1) / kPinStep * kPinStep);
  const std::uint64_t pinned_end = pin_ends_.empty() ? 0 : pin_ends_.back();
  if (end <= pinned_end) return true;
  // Registering faults the pages in as populate() would; the registration outlives the command.
  if (cudaHostRegister(base_ + pinned_end, end - pinned_end, cudaHostRegisterDefault) != cudaSuccess) {
    (void)cudaGetLastError();  // not sticky: later CUDA calls must not see it
    pin_failed_ = true;
    return false;
  }
  pin_ends_.push_back(end);
  return true;
}

// A copy into registered pages is a DMA, which CUDA refuses (cudaErrorInvalidValue) when the
// destination spans two registrations: such a tensor is copied as bytes, a part per registration.
void SharedRegion::copy_pinned(const at::Tensor& tensor, std::uint64_t offset) {
  const auto end = offset + static_cast<std::uint64_t>(tensor.nbytes());
  auto registration = std::upper_bound(pin_ends_.begin(), pin_ends_.end(), offset);  // the one holding `offset`
  const at::TensorOptions host_bytes = at::TensorOptions().dtype(at::kByte).device(at::kCPU);
  if (end <= *registration) {
    at::from_blob(base_ + offset, tensor.sizes(), host_bytes.dtype(tensor.scalar_type())).copy_(tensor.detach());
    return;
  }
  const at::Tensor bytes = tensor.detach().resolve_conj().resolve_neg().contiguous().reshape({-1}).view(at::kByte);
  for (std::uint64_t from = offset; from < end; ++registration) {
    const std::uint64_t to = std::min(end, *registration);
    const auto length = static_cast<std::int64_t>(to - from);
    at::from_blob(base_ + from, {length}, host_bytes)
        .copy_(bytes.narrow(0, static_cast<std::int64_t>(from - offset), length));
    from = to;
  }
}

std::optional<nlohmann::json> SharedRegion::place(const at::Tensor& tensor) {
  const auto bytes = static_cast<std::uint64_t>(tensor.nbytes());
  if (!writable_ || bytes < kMinBytes || bytes > size_ - next_) return std::nullopt;
  const std::uint64_t offset = next_;
  if (tensor.is_cuda() && pin_through(offset + bytes)) {
    copy_pinned(tensor, offset);
  } else {
    populate(base_ + offset, bytes, true);
    at::from_blob(base_ + offset, tensor.sizes(), at::TensorOptions().dtype(tensor.scalar_type()).device(at::kCPU))
        .copy_(tensor.detach());
  }
  next_ = std::min(size_, (offset + bytes + kAlignment - 1) / kAlignment * kAlignment);
  nlohmann::json meta = describe(tensor);
  meta["region"] = {{"offset", offset}, {"bytes", bytes}};
  return meta;
}

at::Tensor SharedRegion::view(const std::shared_ptr<const SharedRegion>& region, const nlohmann::json& meta) {
  const nlohmann::json& where = meta.at("region");
  const std::uint64_t offset = unsigned_at(where, "offset"), bytes = unsigned_at(where, "bytes");
  if (offset % kAlignment != 0 || offset > region->size_ || bytes > region->size_ - offset) {
    throw std::runtime_error("region tensor out of bounds: offset " + std::to_string(offset) + ", " +
                             std::to_string(bytes) + " bytes");
  }
  std::byte* data = region->base_ + offset;
  populate(data, bytes, false);
  return wrap(meta, data, bytes, [region](void*) {});
}

}  // namespace kbv::ipc
