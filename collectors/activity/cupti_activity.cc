// The CUPTI side of activity tracing (see cupti_activity.h): CuptiActivityApi, the only code
// that calls CUPTI's activity API, the process's one ActivityController over it (its
// lifecycle is at the top of activity_controller.cc), and the trace clock.
#include "collectors/activity/cupti_activity.h"

#include <cupti.h>
#include <dlfcn.h>
#include <time.h>

#include <atomic>
#include <cstdio>
#include <memory>
#include <string>

#include "collectors/activity/activity_api.h"
#include "collectors/activity/activity_controller.h"
#include "collectors/common/cupti_util.h"

namespace warpscope {
namespace {

constexpr bool Same(ActivityKind ours, CUpti_ActivityKind cupti) {
  return static_cast<int>(ours) == static_cast<int>(cupti);
}
static_assert(Same(ActivityKind::kMemcpy, CUPTI_ACTIVITY_KIND_MEMCPY) &&
                  Same(ActivityKind::kMemset, CUPTI_ACTIVITY_KIND_MEMSET) &&
                  Same(ActivityKind::kDriver, CUPTI_ACTIVITY_KIND_DRIVER) &&
                  Same(ActivityKind::kRuntime, CUPTI_ACTIVITY_KIND_RUNTIME) &&
                  Same(ActivityKind::kDevice, CUPTI_ACTIVITY_KIND_DEVICE) &&
                  Same(ActivityKind::kContext, CUPTI_ACTIVITY_KIND_CONTEXT) &&
                  Same(ActivityKind::kConcurrentKernel, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) &&
                  Same(ActivityKind::kMarker, CUPTI_ACTIVITY_KIND_MARKER) &&
                  Same(ActivityKind::kMarkerData, CUPTI_ACTIVITY_KIND_MARKER_DATA) &&
                  Same(ActivityKind::kOverhead, CUPTI_ACTIVITY_KIND_OVERHEAD) &&
                  Same(ActivityKind::kMemcpy2, CUPTI_ACTIVITY_KIND_MEMCPY2) &&
                  Same(ActivityKind::kSynchronization, CUPTI_ACTIVITY_KIND_SYNCHRONIZATION) &&
                  Same(ActivityKind::kInternalLaunchApi, CUPTI_ACTIVITY_KIND_INTERNAL_LAUNCH_API) &&
                  Same(ActivityKind::kGraphTrace, CUPTI_ACTIVITY_KIND_GRAPH_TRACE) &&
                  Same(ActivityKind::kMemory2, CUPTI_ACTIVITY_KIND_MEMORY2) &&
                  Same(ActivityKind::kMemoryPool, CUPTI_ACTIVITY_KIND_MEMORY_POOL),
              "ActivityKind must number kinds as CUpti_ActivityKind does");

std::atomic<bool> g_monotonic{false};

uint64_t MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

uint64_t CUPTIAPI TimestampCallback() { return MonotonicNs(); }

// CUPTI's buffer callbacks are plain functions: they reach the handler registered last.
std::atomic<ActivityBufferHandler*> g_buffer_handler{nullptr};

void CUPTIAPI BufferRequested(uint8_t** buffer, size_t* size, size_t* max_records) {
  ActivityBufferHandler* handler = g_buffer_handler.load(std::memory_order_acquire);
  if (handler == nullptr) {
    *buffer = nullptr;
    *size = 0;
    *max_records = 0;
    return;
  }
  handler->BufferRequested(buffer, size, max_records);
}

void CUPTIAPI BufferCompleted(CUcontext, uint32_t, uint8_t* buffer, size_t size, size_t valid) {
  ActivityBufferHandler* handler = g_buffer_handler.load(std::memory_order_acquire);
  if (handler != nullptr) handler->BufferCompleted(buffer, size, valid);
}

ActivityResult Result(CUptiResult r) { return ActivityResult{static_cast<int>(r)}; }

class CuptiActivityApi final : public ActivityApi {
 public:
  ActivityResult RegisterMonotonicTimestampCallback() override {
    return Result(cuptiActivityRegisterTimestampCallback(&TimestampCallback));
  }
  ActivityResult SetDeviceBufferSize(size_t bytes) override {
    size_t value_size = sizeof(bytes);
    return Result(
        cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE, &value_size, &bytes));
  }
  ActivityResult SetDeviceBufferPoolLimit(size_t buffers) override {
    size_t value_size = sizeof(buffers);
    return Result(cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_POOL_LIMIT,
                                            &value_size, &buffers));
  }
  ActivityResult UseSystemThreadIds() override {
    return Result(cuptiSetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM));
  }
  ActivityResult EnableAllocationSource(bool enable) override {
    return Result(cuptiActivityEnableAllocationSource(enable ? 1 : 0));
  }
  ActivityResult RegisterCallbacks(ActivityBufferHandler* handler) override {
    g_buffer_handler.store(handler, std::memory_order_release);
    return Result(cuptiActivityRegisterCallbacks(&BufferRequested, &BufferCompleted));
  }
  ActivityResult Enable(ActivityKind kind) override {
    return Result(cuptiActivityEnable(static_cast<CUpti_ActivityKind>(kind)));
  }
  ActivityResult Disable(ActivityKind kind) override {
    return Result(cuptiActivityDisable(static_cast<CUpti_ActivityKind>(kind)));
  }
  ActivityResult EnableRuntimeApi(uint32_t cbid, bool enable) override {
    return Result(cuptiActivityEnableRuntimeApi(cbid, enable ? 1 : 0));
  }
  ActivityResult FlushAll(bool forced) override {
    return Result(cuptiActivityFlushAll(forced ? CUPTI_ACTIVITY_FLAG_FLUSH_FORCED : 0));
  }
  ActivityResult GetNumDroppedRecords(size_t* dropped) override {
    return Result(cuptiActivityGetNumDroppedRecords(nullptr, 0, dropped));
  }
  bool NextRecord(uint8_t* buffer, size_t valid_bytes, const void** record) override {
    auto* next = static_cast<CUpti_Activity*>(const_cast<void*>(*record));
    if (cuptiActivityGetNextRecord(buffer, valid_bytes, &next) != CUPTI_SUCCESS) return false;
    *record = next;
    return true;
  }
  const char* CallbackName(bool runtime, uint32_t cbid) override {
    const char* name = nullptr;
    if (cuptiGetCallbackName(runtime ? CUPTI_CB_DOMAIN_RUNTIME_API : CUPTI_CB_DOMAIN_DRIVER_API,
                             cbid, &name) != CUPTI_SUCCESS) {
      return nullptr;
    }
    return name;
  }
  // Through the driver the process already loaded (no link-time dependency).
  std::optional<SharedMemoryLimits> QuerySharedMemoryLimits(uint32_t device) override {
    using GetAttr = int (*)(int*, int, int);
    static GetAttr get_attr = [] {
      void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
      return cuda ? reinterpret_cast<GetAttr>(dlsym(cuda, "cuDeviceGetAttribute")) : nullptr;
    }();
    if (get_attr == nullptr) return std::nullopt;
    int optin = 0, reserved = 0;
    // CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97,
    // CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK = 111 (cuda.h).
    if (get_attr(&optin, 97, static_cast<int>(device)) != 0) optin = 0;
    if (get_attr(&reserved, 111, static_cast<int>(device)) != 0) reserved = 0;
    return SharedMemoryLimits{static_cast<uint64_t>(optin), static_cast<uint64_t>(reserved)};
  }
  std::string ErrorText(ActivityResult result) override {
    return CuptiErrorText(static_cast<CUptiResult>(result.code));
  }
  uint64_t Now() override { return TraceClockNs(); }
};

ActivityController& Controller() {
  // Never destroyed: CUPTI may still hand back buffers while the process exits.
  static ActivityController* const controller = new ActivityController(*new CuptiActivityApi());
  return *controller;
}

}  // namespace

void SetTraceClock(bool monotonic) { g_monotonic.store(monotonic); }

void SetLaunchCallsFromCallbacks(bool on) { Controller().SetLaunchCallsElsewhere(on); }

void SetRuntimeCallsFromCallbacks(bool on) { Controller().SetRuntimeCallsElsewhere(on); }

void SetSyncCallsFromCallbacks(bool on) { Controller().SetSyncCallsElsewhere(on); }

uint64_t TraceClockNs() {
  if (g_monotonic.load(std::memory_order_relaxed)) return MonotonicNs();
  uint64_t ts = 0;
  if (cuptiGetTimestamp(&ts) != CUPTI_SUCCESS) {
    timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    ts = static_cast<uint64_t>(t.tv_sec) * 1000000000ull + static_cast<uint64_t>(t.tv_nsec);
  }
  return ts;
}

namespace {

// An attach shorter than this goes unmentioned.
constexpr uint64_t kAttachWorthNaming = 1000000;  // 1 ms

std::string Milliseconds(uint64_t ns) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f ms", static_cast<double>(ns) / 1e6);
  return text;
}

const char* ActivityKindName(ActivityKind kind) {
  switch (kind) {
    case ActivityKind::kConcurrentKernel: return "kernel";
    case ActivityKind::kInternalLaunchApi: return "internal launches";
    case ActivityKind::kMemcpy: return "memcpy";
    case ActivityKind::kMemcpy2: return "peer memcpy";
    case ActivityKind::kMemset: return "memset";
    case ActivityKind::kRuntime: return "runtime";
    case ActivityKind::kDriver: return "driver";
    case ActivityKind::kMarker: return "nvtx";
    case ActivityKind::kMarkerData: return "nvtx data";
    case ActivityKind::kSynchronization: return "sync";
    case ActivityKind::kOverhead: return "overhead";
    case ActivityKind::kGraphTrace: return "graph";
    case ActivityKind::kMemory2:
      return "alloc";
    case ActivityKind::kMemoryPool:
      return "memory pools";
    default: return "other";
  }
}

class ActivityCollector final : public SessionListener {
 public:
  std::string_view name() const override { return "activity"; }
  bool OnSessionStart(SessionServices& services) override {
    services_ = &services;
    std::string error;
    if (!Controller().Init(services.activity_options(), &services.writer(), &error)) {
      services.Report(Severity::kError, "activity", error);
      return false;
    }
    if (const uint64_t ns = Controller().early_attach_ns()) {
      services.Report(Severity::kInfo, "activity",
                      "warpscope: CUPTI attached at start in " + Milliseconds(ns) +
                          " (activity kinds on and off once; WARPSCOPE_ATTACH_EARLY)");
    }
    return true;
  }
  void OnCaptureOpening(const CaptureWindowEdgeRecord& edge, uint64_t, uint32_t) override {
    std::string error;
    if (!Controller().SetEnabled(true, &error)) services_->Report(Severity::kError, "activity", error);
    // Attaching can take seconds the first time in a process that loaded many modules, and
    // nothing is recorded meanwhile: say how long it took and where the time went.
    uint64_t total = 0;
    std::string parts;
    for (const KindEnableTime& t : Controller().last_enable_times()) {
      total += t.ns;
      if (t.ns < kAttachWorthNaming) continue;
      parts += (parts.empty() ? "" : ", ") + std::string(ActivityKindName(t.kind)) + " " +
               Milliseconds(t.ns);
    }
    if (total >= kAttachWorthNaming) {
      services_->Report(Severity::kInfo, "activity",
                        "warpscope: capture window " + std::to_string(edge.window_id) +
                            ": CUPTI took " + Milliseconds(total) +
                            " to attach; nothing was recorded meanwhile (" + parts + ")");
    }
  }
  void OnCaptureClosing(const CaptureWindowEdgeRecord&) override {
    std::string error;
    Controller().SetEnabled(false, &error);
  }
  // Called from the session's own thread (never inside a CUPTI callback).
  void OnNewDevice(uint32_t device) override { Controller().QueryDeviceSharedMemoryLimits(device); }
  // cudart's teardown may destroy the context before the session's atexit handler runs: get
  // the context's records out while it still exists.
  void AfterContextDestroying(void*, uint32_t) override { Controller().Flush(true); }
  void OnFlush() override {
    Controller().Flush(false);
    Controller().PublishCounters();
  }
  void OnShutdown() override { Controller().Shutdown(); }  // forced flush, counters
  void OnForkChild() override { Controller().AbandonAfterFork(); }

 private:
  SessionServices* services_ = nullptr;
};

}  // namespace

std::unique_ptr<SessionListener> MakeActivityCollector() {
  return std::make_unique<ActivityCollector>();
}

}  // namespace warpscope
