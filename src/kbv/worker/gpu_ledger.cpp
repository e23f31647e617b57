#include "kbv/worker/gpu_ledger.h"

#include <cupti.h>
#include <dlfcn.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdlib>
#include <mutex>
#include <string_view>
#include <type_traits>
#include <vector>

namespace kbv::worker {
namespace {

// CUPTI's entry points in the copy torch loaded: a second copy would keep state of its own.
struct Cupti {
  decltype(&cuptiActivityEnable) enable = nullptr;
  decltype(&cuptiActivityDisable) disable = nullptr;
  decltype(&cuptiActivityRegisterCallbacks) register_callbacks = nullptr;
  decltype(&cuptiActivityFlushAll) flush_all = nullptr;
  decltype(&cuptiActivityGetNextRecord) next_record = nullptr;
  decltype(&cuptiActivityGetNumDroppedRecords) dropped = nullptr;
  decltype(&cuptiGetTimestamp) timestamp = nullptr;
  decltype(&cuptiSetThreadIdType) thread_id_type = nullptr;
  decltype(&cuptiActivityEnableRuntimeApi) runtime_api = nullptr;
  decltype(&cuptiActivityEnableDriverApi) driver_api = nullptr;
  decltype(&cuptiGetCallbackName) callback_name = nullptr;
  decltype(&cuptiGetResultString) result_string = nullptr;
  std::string missing;  // why it cannot be used; empty if it can
};

const Cupti& cupti() {
  static const Cupti loaded = [] {
    Cupti c;
    void* library = nullptr;
    for (const char* name : {"libcupti.so.13", "libcupti.so"}) {
      if ((library = dlopen(name, RTLD_NOW | RTLD_NOLOAD))) break;
    }
    if (!library) {
      c.missing = "libcupti is not loaded in this process";
      return c;
    }
    const auto find = [&](auto& into, const char* symbol) {
      into = reinterpret_cast<std::remove_reference_t<decltype(into)>>(dlsym(library, symbol));
      if (!into && c.missing.empty()) c.missing = std::string("libcupti has no ") + symbol;
    };
    find(c.enable, "cuptiActivityEnable");
    find(c.disable, "cuptiActivityDisable");
    find(c.register_callbacks, "cuptiActivityRegisterCallbacks");
    find(c.flush_all, "cuptiActivityFlushAll");
    find(c.next_record, "cuptiActivityGetNextRecord");
    find(c.dropped, "cuptiActivityGetNumDroppedRecords");
    find(c.timestamp, "cuptiGetTimestamp");
    find(c.thread_id_type, "cuptiSetThreadIdType");
    find(c.runtime_api, "cuptiActivityEnableRuntimeApi");
    find(c.driver_api, "cuptiActivityEnableDriverApi");
    find(c.callback_name, "cuptiGetCallbackName");
    find(c.result_string, "cuptiGetResultString");
    return c;
  }();
  return loaded;
}

std::string words(CUptiResult result) {
  const char* text = nullptr;
  if (cupti().result_string && cupti().result_string(result, &text) == CUPTI_SUCCESS && text) return text;
  return "CUPTI error " + std::to_string(static_cast<int>(result));
}

// Buffers CUPTI fills and hands back (on whichever thread flushes), kept until charged.
constexpr size_t kBufferBytes = size_t{8} << 20;
struct Filled {
  std::uint8_t* data;
  size_t valid;
};
std::mutex filled_mutex;
std::vector<Filled> filled;

void CUPTIAPI buffer_requested(std::uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<std::uint8_t*>(std::aligned_alloc(ACTIVITY_RECORD_ALIGNMENT, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext, std::uint32_t, std::uint8_t* buffer, size_t, size_t valid) {
  const std::lock_guard lock(filled_mutex);
  filled.push_back({buffer, valid});
}

// The launches whose work lands on the device: kernels and graphs, copies and sets, by any API
// of either domain (one not listed leaves its work's launcher unknown: foreign).
bool puts_work_on_device(std::string_view api) {
  return api.find("Launch") != std::string_view::npos || api.find("Memcpy") != std::string_view::npos ||
         api.find("Memset") != std::string_view::npos;
}

// Every API of both domains is recorded once their kinds are enabled; all but the launches are
// switched off again one by one (CUPTI records none of a set switched on alone, H100, 2026-12-07):
// the host's wait for the device polls an event thousands of times a call.
void record_launches_only() {
  const Cupti& c = cupti();
  const auto each = [&](CUpti_CallbackDomain domain, int size, auto enable_api) {
    for (CUpti_CallbackId id = 1; id < static_cast<CUpti_CallbackId>(size); ++id) {
      const char* name = nullptr;
      if (c.callback_name(domain, id, &name) == CUPTI_SUCCESS && name && !puts_work_on_device(name)) enable_api(id, 0);
    }
  };
  each(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_SIZE, c.runtime_api);
  each(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_SIZE, c.driver_api);
}

constexpr CUpti_ActivityKind kRecorded[] = {CUPTI_ACTIVITY_KIND_RUNTIME,           CUPTI_ACTIVITY_KIND_DRIVER,
                                            CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
                                            CUPTI_ACTIVITY_KIND_MEMCPY2,           CUPTI_ACTIVITY_KIND_MEMSET};

void read_records(const Filled& buffer, std::vector<Launch>& launches, std::vector<DeviceWork>& work) {
  CUpti_Activity* record = nullptr;
  while (cupti().next_record(buffer.data, buffer.valid, &record) == CUPTI_SUCCESS) {
    switch (record->kind) {
      case CUPTI_ACTIVITY_KIND_RUNTIME:
      case CUPTI_ACTIVITY_KIND_DRIVER: {
        const auto* api = reinterpret_cast<const CUpti_ActivityAPI*>(record);
        launches.push_back({api->correlationId, api->threadId, api->start});
        break;
      }
      case CUPTI_ACTIVITY_KIND_KERNEL:
      case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
        const auto* kernel = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
        work.push_back({kernel->correlationId, kernel->start, kernel->end});
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMCPY: {
        const auto* copy = reinterpret_cast<const CUpti_ActivityMemcpy6*>(record);
        work.push_back({copy->correlationId, copy->start, copy->end});
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMCPY2: {
        const auto* copy = reinterpret_cast<const CUpti_ActivityMemcpyPtoP4*>(record);
        work.push_back({copy->correlationId, copy->start, copy->end});
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMSET: {
        const auto* set = reinterpret_cast<const CUpti_ActivityMemset4*>(record);
        work.push_back({set->correlationId, set->start, set->end});
        break;
      }
      default: break;
    }
  }
}

std::uint64_t now() {
  std::uint64_t ns = 0;
  cupti().timestamp(&ns);
  return ns;
}

}  // namespace

GpuLedger::GpuLedger() = default;

GpuLedger::~GpuLedger() { close(); }

void GpuLedger::open(bool covered) {
  close();
  unavailable_.reset();
  const Cupti& c = cupti();
  if (!c.missing.empty()) {
    unavailable_ = c.missing;
    return;
  }
  CUptiResult result = c.thread_id_type(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM);
  if (result == CUPTI_SUCCESS) result = c.register_callbacks(buffer_requested, buffer_completed);
  for (const CUpti_ActivityKind kind : kRecorded) {
    if (result == CUPTI_SUCCESS) result = c.enable(kind);
  }
  if (result != CUPTI_SUCCESS) {
    unavailable_ = "CUPTI refused to record: " + words(result);
    for (const CUpti_ActivityKind kind : kRecorded) c.disable(kind);
    return;
  }
  record_launches_only();
  accounts_ = std::make_unique<GpuWorkAccounts>(static_cast<std::uint32_t>(syscall(SYS_gettid)), covered);
  dropped_ = launch_records_ = 0;
  open_ = true;
}

void GpuLedger::close() {
  if (!open_) return;
  charge();
  for (const CUpti_ActivityKind kind : kRecorded) cupti().disable(kind);
  open_ = false;
}

void GpuLedger::enter_call() {
  if (open_) call_ = {now(), 0, std::nullopt};
}

void GpuLedger::leave_call() {
  if (!open_) return;
  call_.end = now();
  accounts_->add_call(call_);
}

void GpuLedger::timed(double seconds) {
  if (open_) accounts_->time_last_call(seconds);
}

void GpuLedger::charge() {
  const Cupti& c = cupti();
  c.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  std::vector<Filled> buffers;
  {
    const std::lock_guard lock(filled_mutex);
    buffers.swap(filled);
  }
  std::vector<Launch> launches;
  std::vector<DeviceWork> work;
  for (const Filled& buffer : buffers) {
    read_records(buffer, launches, work);
    std::free(buffer.data);
  }
  size_t dropped = 0;
  if (c.dropped(nullptr, 0, &dropped) == CUPTI_SUCCESS) dropped_ += dropped;
  launch_records_ += launches.size();
  accounts_->add_launches(launches);
  accounts_->settle(work);
}

nlohmann::json GpuLedger::totals() {
  if (unavailable_) return {{"unavailable", *unavailable_}};
  if (!accounts_) return nullptr;
  if (open_) charge();
  nlohmann::json totals = accounts_->totals();
  totals["dropped"] = dropped_;
  totals["launch_records"] = launch_records_;
  return totals;
}

}  // namespace kbv::worker
