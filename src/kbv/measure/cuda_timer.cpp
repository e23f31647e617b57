// CUDA events on the current stream around the call. Where the protocol asks for work on any
// stream to count (PROTOCOL.md, "Timing"), the end is an event of the whole context, recorded
// while the current stream still runs the call: it happens when the last of the context's work
// has, on the GPU's clock, plus the event's own latency (measured when the timer starts, taken
// off each sample). A sample whose current stream had already ended by then, or a driver
// without context events, takes the host's wait for the whole device instead: the current
// stream's figure plus however long that wait outlasted an idle device's.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <vector>

#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/Sleep.h>
#include <c10/cuda/CUDAFunctions.h>
#include <cuda.h>
#include <nvtx3/nvToolsExt.h>

#include "kbv/measure/timer.h"

namespace kbv::measure {
namespace {

// cuCtxRecordEvent (driver 12.5): captures all the work of a context, every stream, at the call.
using ContextRecordEvent = CUresult (*)(CUcontext, CUevent);
using ContextGetCurrent = CUresult (*)(CUcontext*);

template <typename Function>
Function driver_function(const char* name, int version) {
  void* function = nullptr;
  cudaDriverEntryPointQueryResult found{};
  if (cudaGetDriverEntryPointByVersion(name, &function, version, cudaEnableDefault, &found) != cudaSuccess ||
      found != cudaDriverEntryPointSuccess) {
    (void)cudaGetLastError();
    return nullptr;
  }
  return reinterpret_cast<Function>(function);
}

class CudaEventTimer final : public Timer {
 public:
  CudaEventTimer(const c10::Device& device, const protocol::Timing& timing)
      : device_sync_(timing.device_sync),
        least_cover_seconds_(timing.launch_cover_seconds),
        most_cover_seconds_(std::max(timing.launch_cover_seconds, timing.launch_cover_max_seconds)) {
    C10_CUDA_CHECK(cudaDeviceGetAttribute(&peak_khz_, cudaDevAttrClockRate, device.index()));
    set_cover(least_cover_seconds_);
    std::int64_t bytes = timing.l2_flush_bytes;
    // Twice the L2, as reported by the device: writing it evicts whatever the last call left.
    if (bytes <= 0) bytes = 2 * static_cast<std::int64_t>(at::cuda::getDeviceProperties(device.index())->l2CacheSize);
    flush_ = at::empty({bytes}, at::TensorOptions().dtype(at::kByte).device(device));
    if (device_sync_) {
      idle_sync_seconds_ = measure_idle_sync();
      if (context_events_work()) {
        const double latency = measure_context_latency();
        end_on_device_ = std::isfinite(latency);
        if (end_on_device_) context_latency_seconds_ = latency;
      }
    }
  }

  ~CudaEventTimer() override {
    if (context_end_) (void)cudaEventDestroy(context_end_);
  }

  void flush_cache() override { flush_.zero_(); }

  void cover_host_path(double host_path_seconds) override {
    if (least_cover_seconds_ > 0) set_cover(std::clamp(host_path_seconds, least_cover_seconds_, most_cover_seconds_));
  }

  TimedCall time(const std::function<void()>& call, const char* range) override {
    const auto stream = at::cuda::getCurrentCUDAStream();
    if (cover_cycles_ > 0) at::cuda::sleep(cover_cycles_);  // the call is launched while this spins
    start_.record(stream);
    const auto launched = std::chrono::steady_clock::now();
    nvtxRangePushA(range);  // a no-op unless a profiler is attached
    call();
    nvtxRangePop();
    const double launch_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - launched).count();
    stream_end_.record(stream);
    if (!device_sync_) {
      stream_end_.synchronize();
      TimedCall timed;
      timed.seconds = timed.stream_seconds = start_.elapsed_time(stream_end_) / 1e3;
      timed.launch_seconds = launch_seconds;
      return timed;
    }
    // Recorded while the current stream still runs (queried after: it had not ended), the
    // context's event happens when the call's work on every stream has; recorded later, it would
    // also hold the host's delay.
    const bool on_device =
        end_on_device_ && record_context_event_(context_, context_end_) == CUDA_SUCCESS && !stream_end_.query();
    // Nothing of the host's round trip is in the host wait's figure: only a wait for other streams.
    const double waited = device_wait_after_stream_end();
    const double stream_seconds = start_.elapsed_time(stream_end_) / 1e3;
    const double host_wait_seconds = stream_seconds + std::max(0.0, waited - idle_sync_seconds_);
    // The context event less its latency, never below the current stream's own end.
    const double seconds =
        on_device ? std::max(stream_seconds, elapsed_seconds(start_.event(), context_end_) - context_latency_seconds_)
                  : host_wait_seconds;
    return {.seconds = seconds,
            .stream_seconds = stream_seconds,
            .launch_seconds = launch_seconds,
            .host_wait_seconds = host_wait_seconds,
            .end_on_device = on_device};
  }

  nlohmann::json describe() const override {
    return {{"clock", "cuda events, current stream"},
            {"device_sync", device_sync_},
            {"l2_flush_bytes", flush_.numel()},
            {"idle_sync_seconds", idle_sync_seconds_},
            {"context_latency_seconds", context_latency_seconds_},
            {"launch_cover_cycles", cover_cycles_},
            {"launch_cover_seconds", cover_seconds_},
            {"device_end", !device_sync_    ? "none"
                           : end_on_device_ ? "context event"
                                            : "host wait"}};
  }

 private:
  void set_cover(double seconds) {
    cover_seconds_ = seconds;
    // Cycles at the peak clock: at a lower clock the cover only lasts longer.
    cover_cycles_ = static_cast<std::int64_t>(seconds * peak_khz_ * 1e3);
  }

  static double elapsed_seconds(cudaEvent_t from, cudaEvent_t to) {
    float ms = 0;
    C10_CUDA_CHECK(cudaEventElapsedTime(&ms, from, to));
    return ms / 1e3;
  }

  // Whether this driver records context events that carry a time: one trial after a flush.
  bool context_events_work() {
    record_context_event_ = driver_function<ContextRecordEvent>("cuCtxRecordEvent", 12050);
    const auto get_current = driver_function<ContextGetCurrent>("cuCtxGetCurrent", 4000);
    if (!record_context_event_ || !get_current || get_current(&context_) != CUDA_SUCCESS || !context_) return false;
    C10_CUDA_CHECK(cudaEventCreateWithFlags(&context_end_, cudaEventDefault));
    start_.record(at::cuda::getCurrentCUDAStream());
    flush_.zero_();
    if (record_context_event_(context_, context_end_) != CUDA_SUCCESS) return false;
    float ms = -1;
    const bool timed = cudaEventSynchronize(context_end_) == cudaSuccess &&
                       cudaEventElapsedTime(&ms, start_.event(), context_end_) == cudaSuccess;
    (void)cudaGetLastError();
    return timed && ms >= 0;
  }

  // The median of 21 samples, each taken after a flush (tens of microseconds of work on the
  // current stream) and `stream_end_` recorded behind it.
  template <typename Sample>
  double median_after_flushes(Sample sample) {
    constexpr int kCalls = 21;
    const auto stream = at::cuda::getCurrentCUDAStream();
    std::vector<double> values;
    for (int i = 0; i < kCalls; ++i) {
      flush_.zero_();
      stream_end_.record(stream);
      values.push_back(sample());
    }
    std::nth_element(values.begin(), values.begin() + kCalls / 2, values.end());
    return values[kCalls / 2];
  }

  // The host's seconds in a device-wide synchronize with nothing left to wait for (a few
  // microseconds of driver calls), taken off each sample's wait. Work on another stream that ends
  // within that time after the host noticed the current stream's end is not counted (the trace
  // names side-stream work); any longer wait counts whole, the driver's wake-up included.
  double measure_idle_sync() {
    return median_after_flushes([this] { return device_wait_after_stream_end(); });
  }

  // How long after the current stream's end a context event recorded while that stream still
  // ran happens, with nothing on another stream: the event's own latency (~1.5 us on the H200),
  // taken off each sample's device-wide end. Work on another stream that ends within it is not
  // counted (the trace names side-stream work). A sample recorded after the stream had ended
  // holds the host's delay instead, and counts as infinite: where most are, the latency is not
  // known and the timer takes the host's wait.
  double measure_context_latency() {
    return median_after_flushes([this] {
      if (record_context_event_(context_, context_end_) != CUDA_SUCCESS || stream_end_.query()) {
        return std::numeric_limits<double>::infinity();
      }
      C10_CUDA_CHECK(cudaEventSynchronize(context_end_));
      return std::max(0.0, elapsed_seconds(stream_end_.event(), context_end_));
    });
  }

  // Spins until `stream_end_` has happened (the host knows within one query, where the driver's
  // own wait can take several microseconds, more after a long one), then synchronizes the whole
  // device: the host's seconds in that synchronize, which waits only for work on other streams.
  double device_wait_after_stream_end() {
    while (!stream_end_.query()) {
    }
    const auto noticed = std::chrono::steady_clock::now();
    c10::cuda::device_synchronize();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - noticed).count();
  }

  bool device_sync_;
  bool end_on_device_ = false;  // context events work here and their latency is known
  ContextRecordEvent record_context_event_ = nullptr;
  CUcontext context_ = nullptr;
  cudaEvent_t context_end_ = nullptr;
  double idle_sync_seconds_ = 0;
  double context_latency_seconds_ = 0;
  const double least_cover_seconds_, most_cover_seconds_;
  int peak_khz_ = 0;
  double cover_seconds_ = 0;
  std::int64_t cover_cycles_ = 0;
  at::Tensor flush_;
  at::cuda::CUDAEvent start_{cudaEventDefault}, stream_end_{cudaEventDefault};
};

}  // namespace

void synchronize(const c10::Device& device) {
  if (device.is_cuda()) c10::cuda::device_synchronize();
}

std::string cuda_driver_version() {
  int version = 0;
  C10_CUDA_CHECK(cudaDriverGetVersion(&version));
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

std::unique_ptr<Timer> make_cuda_timer(const c10::Device& device, const protocol::Timing& timing) {
  return std::make_unique<CudaEventTimer>(device, timing);
}

}  // namespace kbv::measure
