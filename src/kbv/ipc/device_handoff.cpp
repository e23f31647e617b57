#include "kbv/ipc/device_handoff.h"

#include <cstring>
#include <stdexcept>
#include <string>

#include <ATen/ATen.h>
#include <c10/cuda/CUDAFunctions.h>
#include <cuda.h>
#include <cuda_runtime_api.h>

#include "kbv/ipc/tensor_codec.h"

namespace kbv::ipc {
namespace {

// The driver's virtual memory calls, found through the runtime (kbv links no libcuda of its own).
struct Driver {
  decltype(&cuMemGetAllocationGranularity) granularity = nullptr;
  decltype(&cuMemCreate) create = nullptr;
  decltype(&cuMemRelease) release = nullptr;
  decltype(&cuMemAddressReserve) reserve = nullptr;
  decltype(&cuMemAddressFree) free = nullptr;
  decltype(&cuMemMap) map = nullptr;
  decltype(&cuMemUnmap) unmap = nullptr;
  decltype(&cuMemSetAccess) set_access = nullptr;
  decltype(&cuMemExportToShareableHandle) export_handle = nullptr;
  decltype(&cuMemImportFromShareableHandle) import_handle = nullptr;

  bool complete() const {
    return granularity && create && release && reserve && free && map && unmap && set_access && export_handle &&
           import_handle;
  }
};

template <typename Function>
void find(Function& function, const char* name) {
  void* found = nullptr;
  cudaDriverEntryPointQueryResult result{};
  if (cudaGetDriverEntryPointByVersion(name, &found, 12000, cudaEnableDefault, &result) == cudaSuccess &&
      result == cudaDriverEntryPointSuccess) {
    function = reinterpret_cast<Function>(found);
  }
  (void)cudaGetLastError();
}

const Driver& driver() {
  static const Driver d = [] {
    Driver found;
    find(found.granularity, "cuMemGetAllocationGranularity");
    find(found.create, "cuMemCreate");
    find(found.release, "cuMemRelease");
    find(found.reserve, "cuMemAddressReserve");
    find(found.free, "cuMemAddressFree");
    find(found.map, "cuMemMap");
    find(found.unmap, "cuMemUnmap");
    find(found.set_access, "cuMemSetAccess");
    find(found.export_handle, "cuMemExportToShareableHandle");
    find(found.import_handle, "cuMemImportFromShareableHandle");
    return found;
  }();
  return d;
}

CUmemAllocationProp properties(int device) {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device;
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  return prop;
}

// An allocation mapped into this process, read and written by `device`; unmapped and released
// when destroyed (the memory itself lives on while another process or a file still holds it).
class Mapping {
 public:
  Mapping(CUmemGenericAllocationHandle handle, std::size_t size, int device) : handle_(handle), size_(size) {
    const Driver& d = driver();
    if (d.reserve(&address_, size_, 0, 0, 0) != CUDA_SUCCESS) {
      d.release(handle_);
      throw std::runtime_error("cannot reserve " + std::to_string(size_) + " bytes of device addresses");
    }
    if (d.map(address_, size_, 0, handle_, 0) != CUDA_SUCCESS) {
      d.free(address_, size_);
      d.release(handle_);
      throw std::runtime_error("cannot map the allocation (" + std::to_string(size_) + " bytes)");
    }
    CUmemAccessDesc access{};
    access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    access.location.id = device;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    if (d.set_access(address_, size_, &access, 1) != CUDA_SUCCESS) {
      unmap();
      throw std::runtime_error("cannot give this device access to the allocation");
    }
  }
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  ~Mapping() { unmap(); }

  void* data() const { return reinterpret_cast<void*>(address_); }
  CUmemGenericAllocationHandle handle() const { return handle_; }

 private:
  void unmap() {
    const Driver& d = driver();
    d.unmap(address_, size_);
    d.free(address_, size_);
    d.release(handle_);
  }
  CUmemGenericAllocationHandle handle_;
  std::size_t size_;
  CUdeviceptr address_ = 0;
};

}  // namespace

std::optional<std::pair<nlohmann::json, UniqueFd>> export_to_device_file(const at::Tensor& tensor) {
  const Driver& d = driver();
  if (!d.complete() || !tensor.is_cuda()) return std::nullopt;
  const int device = tensor.get_device();
  const CUmemAllocationProp prop = properties(device);
  std::size_t granularity = 0;
  if (d.granularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM) != CUDA_SUCCESS || granularity == 0) {
    return std::nullopt;
  }
  const std::size_t size = (tensor.nbytes() + granularity - 1) / granularity * granularity;
  CUmemGenericAllocationHandle handle{};
  if (d.create(&handle, size, &prop, 0) != CUDA_SUCCESS) return std::nullopt;
  int fd = -1;
  {
    const Mapping mapping(handle, size, device);
    at::from_blob(mapping.data(), tensor.sizes(), tensor.options()).copy_(tensor.detach());
    c10::cuda::device_synchronize();  // the copy is done before the mapping goes
    if (d.export_handle(&fd, mapping.handle(), CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0) != CUDA_SUCCESS) fd = -1;
  }
  if (fd < 0) return std::nullopt;
  nlohmann::json meta = describe(tensor);
  meta["device"] = {{"bytes", size}};
  return std::make_pair(std::move(meta), UniqueFd(fd));
}

at::Tensor import_device_file(UniqueFd file, const nlohmann::json& meta, int device) {
  const Driver& d = driver();
  if (!d.complete()) throw std::runtime_error("this driver cannot map device memory from another process");
  const nlohmann::json& bytes = meta.at("device").at("bytes");
  if (!bytes.is_number_unsigned()) throw std::runtime_error("a device output's size is not an unsigned number");
  const auto size = bytes.get<std::size_t>();
  const Layout layout = layout_of(meta);
  if (layout.bytes > size) throw std::runtime_error("a device output's allocation does not hold its shape");
  CUmemGenericAllocationHandle handle{};
  if (d.import_handle(&handle, reinterpret_cast<void*>(static_cast<std::intptr_t>(file.get())),
                      CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) != CUDA_SUCCESS) {
    throw std::runtime_error("the file handed over names no device allocation");
  }
  auto mapping = std::make_shared<Mapping>(handle, size, device);
  void* data = mapping->data();
  const auto options =
      at::TensorOptions().dtype(layout.dtype).device(at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(device)));
  return at::from_blob(
      data, layout.shape,
      [mapping](void*) mutable {
        c10::cuda::device_synchronize();  // nothing queued may read it once unmapped
        mapping.reset();
      },
      options);
}

}  // namespace kbv::ipc
